#include "conftable.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fileio.h"
#include "jsondump.h"
#include "jsonx.h"
#include "strparse.h"
#include "yamldoc.h"

/* gcc 12's analyzer does not follow a heap pointer stored into an array
 * element (l->items[i]): it reports the strdup'd items leaked at the free
 * loop and at the append, where every item up to l->n is freed. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
static void strlist_free(strlist_t *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i]);
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

static void *field(const conf_part_t *p, const conf_setting_t *s)
{
        return (char *)p->obj + s->offset;
}

/* Stores a string list from a JSON array (the environment's form). */
static int parse_strlist_json(const char *text, strlist_t *ret)
{
        hg_error_t ignored;
        _cleanup_json_ json_t *arr = NULL;
        int r = jsonx_load(text, strlen(text), 4, &arr, &ignored);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || !json_is_array(arr))
                return -EINVAL;
        strlist_t l = {0};
        l.items = calloc(json_array_size(arr) + 1, sizeof(char *));
        if (!l.items)
                return -ENOMEM;
        size_t i;
        json_t *v;
        json_array_foreach (arr, i, v) {
                if (!json_is_string(v) || !(l.items[l.n] = strdup(json_string_value(v)))) {
                        strlist_free(&l);
                        return json_is_string(v) ? -ENOMEM : -EINVAL;
                }
                l.n++;
        }
        *ret = l;
        return 0;
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/* Parses text into the setting's field, checking its range or syntax.
 * On error the field is unchanged and err says why (without location). */
static int set_from_text(const conf_part_t *p, const conf_setting_t *s, const char *text,
                         hg_error_t *err)
{
        switch (s->type) {
        case CONF_BOOL: {
                bool b;
                if (parse_bool(text, &b) < 0)
                        return error_set(err, -EINVAL, "expected %s, got '%s'", s->expected, text);
                *(bool *)field(p, s) = b;
                return 0;
        }
        case CONF_U32:
        case CONF_U64: {
                uint64_t v;
                if (parse_u64(text, &v) < 0 || v < s->min || v > s->max)
                        return error_set(err, -EINVAL, "expected %s, got '%s'", s->expected, text);
                if (s->type == CONF_U32)
                        *(uint32_t *)field(p, s) = (uint32_t)v;
                else
                        *(uint64_t *)field(p, s) = v;
                return 0;
        }
        case CONF_STRING: {
                bool ok = s->check ? s->check(text) : text[0] != '\0';
                if (!ok)
                        return error_set(err, -EINVAL, "expected %s, got '%s'", s->expected, text);
                char *copy = strdup(text);
                if (!copy)
                        return -ENOMEM;
                char **slot = field(p, s);
                free(*slot);
                *slot = copy;
#if defined(__GNUC__) && !defined(__clang__)
/* gcc 12's analyzer loses track of a pointer stored at a run-time offset
 * into the part's struct and reports it leaked here; conftable_free frees it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
                return 0;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
        }
        case CONF_STRLIST: {
                strlist_t l;
                int r = parse_strlist_json(text, &l);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || l.n < s->min || l.n > s->max) {
                        if (r == 0)
                                strlist_free(&l);
                        return error_set(err, -EINVAL, "expected %s as a JSON array, got '%s'",
                                         s->expected, text);
                }
                strlist_t *slot = field(p, s);
                strlist_free(slot);
                *slot = l;
                return 0;
        }
        default:
                return error_set(err, -EINVAL, "unknown setting type");
        }
}

int conftable_init_defaults(const conftable_t *t)
{
        /* Every part zeroed first, so a failure below frees only what was set. */
        for (size_t p = 0; p < t->n; p++)
                memset(t->parts[p].obj, 0, t->parts[p].size);
        for (size_t p = 0; p < t->n; p++) {
                for (size_t i = 0; i < t->parts[p].n; i++) {
                        hg_error_t err;
                        const conf_setting_t *s = &t->parts[p].rows[i];
                        int r = set_from_text(&t->parts[p], s, s->default_value, &err);
                        if (r < 0) {
                                conftable_free(t);
                                return r;
                        }
                }
        }
        return 0;
}

void conftable_free(const conftable_t *t)
{
        for (size_t p = 0; p < t->n; p++) {
                for (size_t i = 0; i < t->parts[p].n; i++) {
                        const conf_setting_t *s = &t->parts[p].rows[i];
                        if (s->type == CONF_STRING) {
                                char **slot = field(&t->parts[p], s);
                                free(*slot);
                                *slot = NULL;
                        } else if (s->type == CONF_STRLIST) {
                                strlist_free(field(&t->parts[p], s));
                        }
                }
        }
}

static bool is_foreign(const conftable_t *t, const char *key)
{
        for (const char *const *f = t->foreign; f && *f; f++)
                if (strcmp(*f, key) == 0)
                        return true;
        return false;
}

/* YAML: walks the mapping, matching dotted paths against the tables; any key
 * that is neither a setting, nor a prefix of one, nor another reader's is an
 * error (typos must not pass silently). */
static int apply_node(const conftable_t *t, const char *name, const ynode_t *map,
                      const char *prefix, hg_error_t *err)
{
        if (map->kind != YNODE_MAPPING)
                return error_set(err, -EINVAL, "%s:%u: '%s' must be a mapping", name, map->line,
                                 prefix[0] ? prefix : "the document");
        for (size_t i = 0; i + 1 < map->n; i += 2) {
                const ynode_t *key = map->items[i], *value = map->items[i + 1];
                /* "driver.uid: 5" would be a second way to write driver: {uid: 5}. */
                if (strchr(key->scalar, '.') || !key->scalar[0])
                        return error_set(err, -EINVAL, "%s:%u: unknown key '%s%s%s'", name,
                                         key->line, prefix, prefix[0] ? "." : "", key->scalar);
                /* Another binary's settings in the shared file: not read here. */
                if (!prefix[0] && is_foreign(t, key->scalar))
                        continue;
                char path[256];
                int w = snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "",
                                 key->scalar);
                if (w < 0 || (size_t)w >= sizeof(path))
                        return error_set(err, -EINVAL, "%s:%u: key too long", name, key->line);

                const conf_setting_t *match = NULL;
                const conf_part_t *part = NULL;
                bool is_prefix = false;
                size_t plen = strlen(path);
                for (size_t p = 0; p < t->n; p++) {
                        for (size_t k = 0; k < t->parts[p].n; k++) {
                                const char *sp = t->parts[p].rows[k].path;
                                if (strcmp(sp, path) == 0) {
                                        match = &t->parts[p].rows[k];
                                        part = &t->parts[p];
                                } else if (strncmp(sp, path, plen) == 0 && sp[plen] == '.') {
                                        is_prefix = true;
                                }
                        }
                }
                int r;
                if (match) {
                        if (match->type == CONF_STRLIST) {
                                _cleanup_json_ json_t *j = NULL;
                                _cleanup_free_ char *text = NULL;
                                if (value->kind != YNODE_SEQUENCE)
                                        return error_set(err, -EINVAL,
                                                         "%s:%u: key '%s': expected %s", name,
                                                         value->line, path, match->expected);
                                r = ynode_to_json(value, &j, err);
                                if (r == -ENOMEM) /* not the file's fault */
                                        return r;
                                if (r < 0)
                                        return error_prefix(err, "%s: key '%s': ", name, path);
                                text = jsondump(j);
                                if (!text)
                                        return -ENOMEM;
                                r = set_from_text(part, match, text, err);
                        } else if (value->kind != YNODE_SCALAR) {
                                return error_set(err, -EINVAL, "%s:%u: key '%s': expected %s", name,
                                                 value->line, path, match->expected);
                        } else {
                                r = set_from_text(part, match, value->scalar, err);
                        }
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return error_prefix(err, "%s:%u: key '%s': ", name, value->line,
                                                    path);
                } else if (is_prefix) {
                        r = apply_node(t, name, value, path, err);
                        if (r < 0)
                                return r;
                } else {
                        return error_set(err, -EINVAL, "%s:%u: unknown key '%s'", name, key->line,
                                         path);
                }
        }
        return 0;
}

int conftable_apply_yaml(const conftable_t *t, const char *name, const char *buf, size_t len,
                         hg_error_t *err)
{
        _cleanup_ynode_ ynode_t *root = NULL;
        int r = yamldoc_parse(buf, len, &root, err);
        if (r == -ENODATA) {
                /* An empty or comment-only file means all defaults. */
                error_clear(err);
                return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_prefix(err, "%s: ", name);
        /* So does an empty document ("---") or "{}". */
        if (root->kind == YNODE_SCALAR && root->scalar[0] == '\0')
                return 0;
        return apply_node(t, name, root, "", err);
}

int conftable_apply_env(const conftable_t *t, hg_error_t *err)
{
        for (size_t p = 0; p < t->n; p++) {
                for (size_t i = 0; i < t->parts[p].n; i++) {
                        const conf_setting_t *s = &t->parts[p].rows[i];
                        const char *v = getenv(s->env);
                        if (!v)
                                continue;
                        int r = set_from_text(&t->parts[p], s, v, err);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return error_prefix(err, "environment %s: ", s->env);
                }
        }
        return 0;
}

int conftable_set(const conftable_t *t, const char *assignment, hg_error_t *err)
{
        const char *eq = strchr(assignment, '=');
        if (!eq || eq == assignment)
                return error_set(err, -EINVAL, "'%s': expected KEY=VALUE", assignment);
        size_t klen = (size_t)(eq - assignment);
        for (size_t p = 0; p < t->n; p++) {
                for (size_t i = 0; i < t->parts[p].n; i++) {
                        const conf_setting_t *s = &t->parts[p].rows[i];
                        if (strlen(s->path) != klen || strncmp(s->path, assignment, klen) != 0)
                                continue;
                        int r = set_from_text(&t->parts[p], s, eq + 1, err);
                        return r < 0 ? error_prefix(err, "--set %s: ", s->path) : 0;
                }
        }
        return error_set(err, -EINVAL, "--set: unknown key '%.*s' (see docs/configuration.md)",
                         (int)klen, assignment);
}

int conftable_load(const conftable_t *t, const char *path, hg_error_t *err)
{
        int r = conftable_init_defaults(t);
        if (r < 0)
                return error_set(err, r, "cannot set configuration defaults");
        if (path) {
                _cleanup_free_ char *buf = NULL;
                size_t len;
                r = file_read_bounded(path, CONF_MAX_FILE_BYTES, &buf, &len);
                if (r < 0) {
                        conftable_free(t);
                        return error_set(err, r, "%s: cannot read: %s", path,
                                         r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
                }
                r = conftable_apply_yaml(t, path, buf, len, err);
        }
        if (r == 0)
                r = conftable_apply_env(t, err);
        if (r < 0)
                conftable_free(t);
        return r;
}

static json_t *setting_json(const conf_part_t *p, const conf_setting_t *s)
{
        const void *f = (const char *)p->obj + s->offset;
        switch (s->type) {
        case CONF_BOOL:
                return json_boolean(*(const bool *)f);
        case CONF_U32:
                return json_integer(*(const uint32_t *)f);
        case CONF_U64:
                return json_integer((json_int_t) * (const uint64_t *)f);
        case CONF_STRING:
                return json_string(*(char *const *)f);
        case CONF_STRLIST: {
                const strlist_t *l = f;
                json_t *v = json_array();
                for (size_t k = 0; v && k < l->n; k++) {
                        /* A list cut short would be another setting. */
                        if (json_array_append_new(v, json_string(l->items[k])) < 0) {
                                json_decref(v);
                                v = NULL;
                        }
                }
                return v;
        }
        default:
                return NULL;
        }
}

char *conftable_dump(const conftable_t *t)
{
        _cleanup_json_ json_t *out = json_object();
        if (!out)
                return NULL;
        for (size_t p = 0; p < t->n; p++) {
                for (size_t i = 0; i < t->parts[p].n; i++) {
                        const conf_setting_t *s = &t->parts[p].rows[i];
                        json_t *v = setting_json(&t->parts[p], s);
                        if (!v || json_object_set_new(out, s->path, v) < 0)
                                return NULL;
                }
        }
        return jsonx_dumps(out, JSON_INDENT(2));
}
