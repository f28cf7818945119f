#include "yamldoc.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "cleanup.h"
#include "fileio.h"
#include "jsonx.h"
#include "strparse.h"

static void cleanup_parserp(yaml_parser_t **p)
{
        if (*p)
                yaml_parser_delete(*p);
}

static void cleanup_eventp(yaml_event_t *e)
{
        yaml_event_delete(e);
}

void ynode_free(ynode_t *n)
{
        if (!n)
                return;
        for (size_t i = 0; i < n->n; i++)
                ynode_free(n->items[i]);
        free(n->items);
        free(n->scalar);
        free(n);
}

static int ynode_push(ynode_t *parent, ynode_t *child)
{
        ynode_t **items = realloc(parent->items, (parent->n + 1) * sizeof(*items));
        if (!items)
                return -ENOMEM;
        parent->items = items;
        parent->items[parent->n++] = child;
        return 0;
}

typedef struct yreader {
        yaml_parser_t *parser;
        hg_error_t *err;
} yreader_t;

static int next_event(yreader_t *y, yaml_event_t *ev)
{
        if (!yaml_parser_parse(y->parser, ev))
                return error_set(y->err, -EINVAL, "line %zu: YAML error: %s",
                                 y->parser->problem_mark.line + 1,
                                 y->parser->problem ? y->parser->problem : "unknown");
        return 0;
}

static int read_node(yreader_t *y, yaml_event_t *ev, unsigned depth, ynode_t **ret);

static int read_children(yreader_t *y, ynode_t *node, yaml_event_type_t end, unsigned depth)
{
        for (;;) {
                _cleanup_(cleanup_eventp) yaml_event_t ev = {0};
                int r = next_event(y, &ev);
                if (r < 0)
                        return r;
                if (ev.type == end)
                        return 0;
                ynode_t *child = NULL;
                r = read_node(y, &ev, depth + 1, &child);
                if (r < 0)
                        return r;
                if (node->kind == YNODE_MAPPING && node->n % 2 == 0) {
                        if (child->kind != YNODE_SCALAR) {
                                unsigned line = child->line;
                                ynode_free(child);
                                return error_set(y->err, -EINVAL,
                                                 "line %u: mapping keys must be scalars", line);
                        }
                        if (ynode_get(node, child->scalar)) {
                                int e = error_set(y->err, -EINVAL, "line %u: duplicate key '%s'",
                                                  child->line, child->scalar);
                                ynode_free(child);
                                return e;
                        }
                }
                r = ynode_push(node, child);
                if (r < 0) {
                        ynode_free(child);
                        return r;
                }
        }
}

static int read_node(yreader_t *y, yaml_event_t *ev, unsigned depth, ynode_t **ret)
{
        unsigned line = (unsigned)ev->start_mark.line + 1;
        if (depth > YAMLDOC_MAX_DEPTH)
                return error_set(y->err, -EINVAL, "line %u: YAML nested deeper than %d levels",
                                 line, YAMLDOC_MAX_DEPTH);
        _cleanup_(cleanup_ynodep) ynode_t *node = calloc(1, sizeof(*node));
        if (!node)
                return -ENOMEM;
        node->line = line;
        int r;
        switch (ev->type) {
        case YAML_SCALAR_EVENT:
                node->kind = YNODE_SCALAR;
                node->scalar = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
                if (!node->scalar)
                        return -ENOMEM;
                if (strlen(node->scalar) != ev->data.scalar.length)
                        return error_set(y->err, -EINVAL, "line %u: NUL byte in a scalar", line);
                node->tagged_str = ev->data.scalar.tag &&
                                   strcmp((const char *)ev->data.scalar.tag, YAML_STR_TAG) == 0;
                node->plain = ev->data.scalar.plain_implicit && !ev->data.scalar.tag;
                break;
        case YAML_MAPPING_START_EVENT:
                node->kind = YNODE_MAPPING;
                r = read_children(y, node, YAML_MAPPING_END_EVENT, depth);
                if (r < 0)
                        return r;
                break;
        case YAML_SEQUENCE_START_EVENT:
                node->kind = YNODE_SEQUENCE;
                r = read_children(y, node, YAML_SEQUENCE_END_EVENT, depth);
                if (r < 0)
                        return r;
                break;
        case YAML_ALIAS_EVENT:
                return error_set(y->err, -EINVAL, "line %u: YAML aliases are not accepted", line);
        default:
                return error_set(y->err, -EINVAL, "line %u: unexpected YAML event", line);
        }
        *ret = TAKE_PTR(node);
        return 0;
}

void ynode_free_all(ynode_t **docs, size_t n)
{
        for (size_t i = 0; docs && i < n; i++)
                ynode_free(docs[i]);
        free(docs);
}

/* Each document of the stream in order, at most max of them; "max" names
 * the limit in the error. */
int yamldoc_parse_stream(const char *buf, size_t len, size_t max, ynode_t ***ret, size_t *ret_n,
                         hg_error_t *err)
{
        yaml_parser_t parser_storage;
        if (!yaml_parser_initialize(&parser_storage))
                return -ENOMEM;
        _cleanup_(cleanup_parserp) yaml_parser_t *parser = &parser_storage;
        yaml_parser_set_input_string(parser, (const unsigned char *)buf, len);
        yreader_t y = {.parser = parser, .err = err};

        ynode_t **docs = NULL;
        size_t n = 0;
        int r = 0;
        for (;;) {
                _cleanup_(cleanup_eventp) yaml_event_t ev = {0};
                r = next_event(&y, &ev);
                if (r < 0)
                        break;
                if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_END_EVENT)
                        continue;
                if (ev.type == YAML_STREAM_END_EVENT) {
                        if (n == 0)
                                r = error_set(err, -ENODATA, "empty YAML document");
                        else if (!docs[n - 1]) /* libyaml always gives one: fail closed */
                                r = error_set(err, -EINVAL, "a YAML document without a node");
                        break;
                }
                if (ev.type == YAML_DOCUMENT_START_EVENT) {
                        if (n == max) {
                                r = max == 1 ? error_set(err, -EINVAL,
                                                         "line %zu: more than one YAML document",
                                                         ev.start_mark.line + 1)
                                             : error_set(err, -E2BIG,
                                                         "line %zu: more than %zu YAML documents",
                                                         ev.start_mark.line + 1, max);
                                break;
                        }
                        ynode_t **grown = realloc(docs, (n + 1) * sizeof(*docs));
                        if (!grown) {
                                r = -ENOMEM;
                                break;
                        }
                        docs = grown;
                        docs[n++] = NULL;
                        continue;
                }
                /* A document's one node (libyaml: an empty document is an
                 * empty plain scalar, so every document has one). */
                if (n == 0 || docs[n - 1]) {
                        r = error_set(err, -EINVAL, "line %zu: unexpected YAML event",
                                      ev.start_mark.line + 1);
                        break;
                }
                r = read_node(&y, &ev, 1, &docs[n - 1]);
                if (r < 0)
                        break;
        }
        if (r < 0) {
                ynode_free_all(docs, n);
                return r;
        }
        *ret = docs;
        *ret_n = n;
        return 0;
}

int yamldoc_parse(const char *buf, size_t len, ynode_t **ret, hg_error_t *err)
{
        ynode_t **docs;
        size_t n;
        int r = yamldoc_parse_stream(buf, len, 1, &docs, &n, err);
        if (r < 0)
                return r;
        *ret = docs[0];
        free(docs);
        return 0;
}

const ynode_t *ynode_get(const ynode_t *map, const char *key)
{
        if (!map || map->kind != YNODE_MAPPING)
                return NULL;
        for (size_t i = 0; i + 1 < map->n; i += 2)
                if (strcmp(map->items[i]->scalar, key) == 0)
                        return map->items[i + 1];
        /* An odd last entry (a key whose value is still being read) is not a match. */
        return NULL;
}

/* Digits of base in s (no sign, no prefix) into *ret; false on anything else
 * or on overflow. */
static bool parse_digits(const char *s, unsigned base, uint64_t *ret)
{
        uint64_t v = 0;
        if (!*s)
                return false;
        for (; *s; s++) {
                unsigned d;
                if (*s >= '0' && *s <= '9')
                        d = (unsigned)(*s - '0');
                else if ((*s | 0x20) >= 'a' && (*s | 0x20) <= 'f')
                        d = (unsigned)((*s | 0x20) - 'a' + 10);
                else
                        return false;
                if (d >= base || v > (UINT64_MAX - d) / base)
                        return false;
                v = v * base + d;
        }
        *ret = v;
        return true;
}

/* go-yaml v2's float syntax: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static bool is_yaml_float(const char *s)
{
        if (*s == '-' || *s == '+')
                s++;
        size_t lead = strspn(s, "0123456789");
        s += lead;
        if (*s == '.') {
                size_t frac = strspn(s + 1, "0123456789");
                if (lead == 0 && frac == 0)
                        return false;
                s += 1 + frac;
        } else if (lead == 0) {
                return false;
        }
        if (*s == 'e' || *s == 'E') {
                s++;
                if (*s == '-' || *s == '+')
                        s++;
                size_t exp = strspn(s, "0123456789");
                if (exp == 0)
                        return false;
                s += exp;
        }
        return *s == '\0';
}

static bool in_list(const char *s, const char *const *list)
{
        for (; *list; list++)
                if (strcmp(s, *list) == 0)
                        return true;
        return false;
}

/* A plain scalar typed as YAML 1.1 resolves it, as sigs.k8s.io/yaml (go-yaml
 * v2) does: null, booleans including yes/no/on/off, integers with 0x, 0b and
 * leading-zero octal and '_' separators, then floats; else a string. */
static json_t *plain_scalar_to_json(const char *s)
{
        static const char *const nulls[] = {"", "~", "null", "Null", "NULL", NULL};
        static const char *const trues[] = {"true", "True", "TRUE", "yes", "Yes", "YES",
                                            "on",   "On",   "ON",   "y",   "Y",   NULL};
        static const char *const falses[] = {"false", "False", "FALSE", "no", "No", "NO",
                                             "off",   "Off",   "OFF",   "n",  "N",  NULL};
        if (in_list(s, nulls))
                return json_null();
        if (in_list(s, trues))
                return json_true();
        if (in_list(s, falses))
                return json_false();

        /* Numbers are read with the '_' separators removed. */
        _cleanup_free_ char *plain = malloc(strlen(s) + 1);
        if (!plain)
                return NULL;
        char *o = plain;
        for (const char *p = s; *p; p++)
                if (*p != '_')
                        *o++ = *p;
        *o = '\0';

        const char *digits = (*plain == '-' || *plain == '+') ? plain + 1 : plain;
        bool negative = *plain == '-';
        uint64_t u;
        bool is_int = false;
        /* Compared a byte at a time (not strncmp): clang's analyzer then
         * sees that an empty scalar has no "0x" to skip. */
        if (digits[0] == '0' && digits[1] == 'x')
                is_int = parse_digits(digits + 2, 16, &u);
        else if (digits[0] == '0' && digits[1] == 'b')
                is_int = parse_digits(digits + 2, 2, &u);
        else if (digits[0] == '0' && digits[1])
                is_int = parse_digits(digits + 1, 8, &u);
        else
                is_int =
                    parse_digits(digits, 10, &u) && strspn(digits, "0123456789") == strlen(digits);
        if (is_int && u <= (uint64_t)INT64_MAX + (negative ? 1 : 0))
                return json_integer(negative ? (json_int_t)(0 - u) : (json_int_t)u);
        if (is_yaml_float(plain)) {
                char *end = NULL;
                double d = strtod(plain, &end);
                if (end && *end == '\0' && isfinite(d))
                        return json_real(d);
        }
        return json_string(s);
}

int ynode_to_json(const ynode_t *n, json_t **ret, hg_error_t *err)
{
        _cleanup_json_ json_t *out = NULL;
        switch (n->kind) {
        case YNODE_SCALAR:
                out = (n->plain && !n->tagged_str) ? plain_scalar_to_json(n->scalar)
                                                   : json_string(n->scalar);
                break;
        case YNODE_SEQUENCE:
                out = json_array();
                for (size_t i = 0; out && i < n->n; i++) {
                        json_t *item;
                        int r = ynode_to_json(n->items[i], &item, err);
                        if (r < 0)
                                return r;
                        if (json_array_append_new(out, item) < 0)
                                return -ENOMEM;
                }
                break;
        case YNODE_MAPPING:
                out = json_object();
                for (size_t i = 0; out && i + 1 < n->n; i += 2) {
                        json_t *value;
                        int r = ynode_to_json(n->items[i + 1], &value, err);
                        if (r < 0)
                                return r;
                        /* libyaml hands over valid UTF-8 only (it refuses
                         * invalid input and escapes), as json_string below
                         * relies on too: a failure is out of memory. */
                        if (json_object_set_new(out, n->items[i]->scalar, value) < 0)
                                return -ENOMEM;
                }
                break;
        default:
                return error_set(err, -EINVAL, "line %u: unknown YAML node", n->line);
        }
        if (!out)
                return -ENOMEM;
        *ret = TAKE_PTR(out);
        return 0;
}

int yamldoc_load_manifests(const char *path, size_t max, json_t **ret, hg_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r = strcmp(path, "-") == 0 ? fd_read_bounded(STDIN_FILENO, max, &buf, &len)
                                       : file_read_bounded(path, max, &buf, &len);
        if (r < 0)
                return error_set(err, r, "%s: %s", path,
                                 r == -EFBIG ? "file too large" : strerror(-r));
        _cleanup_json_ json_t *list = json_array();
        if (!list)
                return -ENOMEM;
        size_t i = strspn(buf, " \t\r\n");
        if (buf[i] == '{') {
                json_t *doc;
                r = jsonx_load(buf, len, JSONX_MAX_DEPTH, &doc, err);
                if (r == 0 && json_array_append_new(list, doc) < 0)
                        r = -ENOMEM;
        } else {
                ynode_t **docs = NULL;
                size_t n = 0;
                r = yamldoc_parse_stream(buf, len, YAMLDOC_MAX_DOCUMENTS, &docs, &n, err);
                for (size_t d = 0; r == 0 && d < n; d++) {
                        json_t *doc;
                        r = ynode_to_json(docs[d], &doc, err);
                        /* Empty documents (a leading or doubled "---") are not manifests. */
                        if (r == 0 && json_is_null(doc))
                                continue;
                        if (r == 0 && json_array_append_new(list, doc) < 0)
                                r = -ENOMEM;
                }
                ynode_free_all(docs, n);
        }
        if (r == 0 && json_array_size(list) == 0)
                r = error_set(err, -ENODATA, "no manifest in the input");
        if (r < 0)
                return error_prefix(err, "%s: ", path);
        *ret = TAKE_PTR(list);
        return 0;
}

int yamldoc_load_manifest(const char *path, size_t max, json_t **ret, hg_error_t *err)
{
        _cleanup_json_ json_t *list = NULL;
        int r = yamldoc_load_manifests(path, max, &list, err);
        if (r < 0)
                return r;
        if (json_array_size(list) != 1)
                return error_set(err, -EINVAL, "%s: %zu manifests, expected one", path,
                                 json_array_size(list));
        *ret = json_incref(json_array_get(list, 0));
        return 0;
}
