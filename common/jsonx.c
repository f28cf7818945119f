#include "jsonx.h"

#include <errno.h>
#include <string.h>

/* jansson has a fixed compile-time depth limit (2048); ours is much lower,
 * so a single pass over the bytes checks it before jansson allocates. */
static int check_depth(const char *buf, size_t len, unsigned max_depth, hg_error_t *err)
{
        unsigned depth = 0;
        bool in_string = false, escaped = false;
        for (size_t i = 0; i < len; i++) {
                char c = buf[i];
                if (in_string) {
                        if (escaped)
                                escaped = false;
                        else if (c == '\\')
                                escaped = true;
                        else if (c == '"')
                                in_string = false;
                        continue;
                }
                switch (c) {
                case '"':
                        in_string = true;
                        break;
                case '[':
                case '{':
                        if (++depth > max_depth)
                                return error_set(err, -EINVAL,
                                                 "JSON nested deeper than %u levels (at byte %zu)",
                                                 max_depth, i);
                        break;
                case ']':
                case '}':
                        if (depth > 0)
                                depth--;
                        break;
                default:
                        break;
                }
        }
        return 0;
}

int jsonx_load(const char *buf, size_t len, unsigned max_depth, json_t **ret, hg_error_t *err)
{
        if (len == 0)
                return error_set(err, -EINVAL, "empty body: expected a JSON object");
        int r = check_depth(buf, len, max_depth, err);
        if (r < 0)
                return r;
        json_error_t jerr;
        json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!j)
                return error_set(err, -EINVAL, "malformed JSON at line %d, column %d: %s",
                                 jerr.line, jerr.column, jerr.text);
        *ret = j;
        return 0;
}

int jsonx_member(json_t *obj, const char *key, json_type type, json_t **ret)
{
        if (!json_is_object(obj))
                return -ENOENT;
        json_t *v = json_object_get(obj, key);
        if (!v || json_is_null(v))
                return -ENOENT;
        bool ok = json_typeof(v) == type || (type == JSON_TRUE && json_is_boolean(v));
        if (!ok)
                return -EINVAL;
        *ret = v;
        return 0;
}

int jsonx_string(json_t *obj, const char *key, const char **ret)
{
        json_t *v;
        int r = jsonx_member(obj, key, JSON_STRING, &v);
        if (r < 0)
                return r;
        *ret = json_string_value(v);
        return 0;
}

int jsonx_bool(json_t *obj, const char *key, bool *ret)
{
        json_t *v;
        int r = jsonx_member(obj, key, JSON_TRUE, &v);
        if (r < 0)
                return r;
        *ret = json_is_true(v);
        return 0;
}

const char *jsonx_type_name(const json_t *j)
{
        switch (j ? json_typeof(j) : JSON_NULL) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        case JSON_NULL:
                return "null";
        default:
                return "an unknown type";
        }
}
