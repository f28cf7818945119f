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
        for (const char *p = segment; r == 0 && *p; p++) {
                switch (*p) {
                case '~':
                        r = strbuf_append(sb, "~0", 2);
                        break;
                case '/':
                        r = strbuf_append(sb, "~1", 2);
                        break;
                default:
                        r = strbuf_append(sb, p, 1);
                        break;
                }
        }
        return r;
}

int jsonptr_append_index(strbuf_t *sb, size_t index)
{
        return strbuf_printf(sb, "/%zu", index);
}

/* Decodes one reference token [start, end) into a fresh string. */
static int decode_token(const char *start, const char *end, char **ret, hg_error_t *err)
{
        _cleanup_free_ char *out = malloc((size_t)(end - start) + 1);
        if (!out)
                return -ENOMEM;
        char *o = out;
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
        *ret = TAKE_PTR(out);
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

/* Walks path, stopping before the last token when ret_last is set: then it
 * returns the parent and hands back the decoded last token. */
static int walk(json_t *doc, const char *path, json_t **ret, char **ret_last, hg_error_t *err)
{
        if (*path && *path != '/')
                return error_set(err, -EINVAL, "malformed JSON pointer: must start with '/'");
        json_t *cur = doc;
        const char *p = path;
        while (*p) {
                const char *start = p + 1;
                const char *end = strchr(start, '/');
                if (!end)
                        end = start + strlen(start);
                _cleanup_free_ char *tok = NULL;
                int r = decode_token(start, end, &tok, err);
                if (r < 0)
                        return r;
                if (ret_last && !*end) {
                        *ret_last = TAKE_PTR(tok);
                        *ret = cur;
                        return 0;
                }
                if (json_is_object(cur)) {
                        cur = json_object_get(cur, tok);
                } else if (json_is_array(cur)) {
                        size_t idx;
                        if (parse_index(tok, &idx) < 0)
                                return error_set(err, -EINVAL,
                                                 "JSON pointer: '%s' is not an array index", tok);
                        cur = json_array_get(cur, idx);
                } else {
                        cur = NULL;
                }
                if (!cur)
                        return error_set(err, -ENOENT, "JSON pointer: no member '%s'", tok);
                p = end;
        }
        if (ret_last)
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
        _cleanup_free_ char *last = NULL;
        int r = walk(doc, path, &parent, &last, err);
        if (r < 0)
                return r;
        if (json_is_object(parent))
                return json_object_set(parent, last, value) == 0 ? 0 : -ENOMEM;
        if (!json_is_array(parent))
                return error_set(err, -ENOENT, "JSON patch add: parent of '%s' is %s", path,
                                 jsonx_type_name(parent));
        size_t size = json_array_size(parent), idx;
        if (strcmp(last, "-") == 0)
                idx = size;
        else if (parse_index(last, &idx) < 0 || idx > size)
                return error_set(err, -EINVAL, "JSON patch add: bad array index '%s'", last);
        return json_array_insert(parent, idx, value) == 0 ? 0 : -ENOMEM;
}
