#include "jsonptr.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"

int jsonptr_append(strbuf_t *sb, const char *segment)
{
        int r = strbuf_append(sb, "/", 1);
        while (r == 0 && *segment) {
                size_t run = strcspn(segment, "~/");
                r = strbuf_append(sb, segment, run);
                segment += run;
                if (r == 0 && *segment) {
                        r = strbuf_append(sb, *segment == '~' ? "~0" : "~1", 2);
                        segment++;
                }
        }
        return r;
}

int jsonptr_append_index(strbuf_t *sb, size_t index)
{
        char buf[24];
        char *o = buf + sizeof(buf);
        do {
                *--o = (char)('0' + index % 10);
                index /= 10;
        } while (index);
        *--o = '/';
        return strbuf_append(sb, o, (size_t)(buf + sizeof(buf) - o));
}

/* One decoded reference token: in a small buffer held by the caller, or on
 * the heap when longer (pointers are short; this is called per token). */
typedef struct token {
        char *s;
        size_t len;
        char small[64];
        char *heap;
} token_t;

static void token_free(token_t *t)
{
        free(t->heap);
        t->heap = NULL;
}

/* Decodes the reference token [start, end) into t. */
static int decode_token(const char *start, const char *end, token_t *t, hg_error_t *err)
{
        size_t n = (size_t)(end - start);
        token_free(t);
        if (n < sizeof(t->small)) {
                t->s = t->small;
        } else {
                t->heap = malloc(n + 1);
                if (!t->heap)
                        return -ENOMEM;
                t->s = t->heap;
        }
        char *o = t->s;
        for (const char *p = start; p < end; p++) {
                if (*p != '~') {
                        *o++ = *p;
                        continue;
                }
                if (p + 1 >= end || (p[1] != '0' && p[1] != '1'))
                        return error_set(err, -EINVAL, "malformed JSON pointer: bad '~' escape");
                *o++ = p[1] == '0' ? '~' : '/';
                p++;
        }
        *o = '\0';
        t->len = (size_t)(o - t->s);
        return 0;
}

/* An array index per RFC 6901: "0" or digits without a leading zero. */
static int parse_index(const char *tok, size_t *ret)
{
        if (!*tok || (tok[0] == '0' && tok[1]))
                return -EINVAL;
        size_t v = 0;
        for (const char *p = tok; *p; p++) {
                if (*p < '0' || *p > '9' || v > (SIZE_MAX - 9) / 10)
                        return -EINVAL;
                v = v * 10 + (size_t)(*p - '0');
        }
        *ret = v;
        return 0;
}

/* Walks path, stopping before the last token when last is set: then it
 * returns the parent and leaves the decoded last token in *last. */
static int walk(json_t *doc, const char *path, json_t **ret, token_t *last, hg_error_t *err)
{
        if (*path && *path != '/')
                return error_set(err, -EINVAL, "malformed JSON pointer: must start with '/'");
        json_t *cur = doc;
        const char *p = path;
        _cleanup_(token_free) token_t tok = {.heap = NULL};
        while (*p) {
                const char *start = p + 1;
                const char *end = strchr(start, '/');
                if (!end)
                        end = start + strlen(start);
                if (last && !*end) {
                        int r = decode_token(start, end, last, err);
                        if (r < 0)
                                return r;
                        *ret = cur;
                        return 0;
                }
                int r = decode_token(start, end, &tok, err);
                if (r < 0)
                        return r;
                if (json_is_object(cur)) {
                        cur = json_object_getn(cur, tok.s, tok.len);
                } else if (json_is_array(cur)) {
                        size_t idx;
                        if (parse_index(tok.s, &idx) < 0)
                                return error_set(err, -EINVAL,
                                                 "JSON pointer: '%s' is not an array index", tok.s);
                        cur = json_array_get(cur, idx);
                } else {
                        cur = NULL;
                }
                if (!cur)
                        return error_set(err, -ENOENT, "JSON pointer: no member '%s'", tok.s);
                p = end;
        }
        if (last)
                return error_set(err, -EINVAL, "JSON pointer: cannot add at the document root");
        *ret = cur;
        return 0;
}

int jsonptr_get(json_t *doc, const char *path, json_t **ret, hg_error_t *err)
{
        return walk(doc, path, ret, NULL, err);
}

int jsonptr_add(json_t *doc, const char *path, json_t *value, hg_error_t *err)
{
        json_t *parent;
        _cleanup_(token_free) token_t last = {.heap = NULL};
        int r = walk(doc, path, &parent, &last, err);
        if (r < 0)
                return r;
        if (json_is_object(parent))
                return json_object_setn(parent, last.s, last.len, value) == 0 ? 0 : -ENOMEM;
        if (!json_is_array(parent))
                return error_set(err, -ENOENT, "JSON patch add: parent of '%s' is %s", path,
                                 jsonx_type_name(parent));
        size_t size = json_array_size(parent), idx;
        if (strcmp(last.s, "-") == 0)
                idx = size;
        else if (parse_index(last.s, &idx) < 0 || idx > size)
                return error_set(err, -EINVAL, "JSON patch add: bad array index '%s'", last.s);
        return json_array_insert(parent, idx, value) == 0 ? 0 : -ENOMEM;
}

int jsonptr_remove(json_t *doc, const char *path, hg_error_t *err)
{
        json_t *parent;
        _cleanup_(token_free) token_t last = {.heap = NULL};
        int r = walk(doc, path, &parent, &last, err);
        if (r < 0)
                return r;
        if (json_is_object(parent)) {
                if (!json_object_getn(parent, last.s, last.len))
                        return error_set(err, -ENOENT, "JSON patch remove: no member '%s'", last.s);
                return json_object_deln(parent, last.s, last.len) == 0 ? 0 : -ENOENT;
        }
        size_t idx;
        if (!json_is_array(parent))
                return error_set(err, -ENOENT, "JSON patch remove: parent of '%s' is %s", path,
                                 jsonx_type_name(parent));
        if (parse_index(last.s, &idx) < 0 || idx >= json_array_size(parent))
                return error_set(err, -EINVAL, "JSON patch remove: bad array index '%s'", last.s);
        return json_array_remove(parent, idx) == 0 ? 0 : -ENOMEM;
}
