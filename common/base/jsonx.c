#include "jsonx.h"

#include "jsonparse.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"

int jsonx_load(const char *buf, size_t len, unsigned max_depth, json_t **ret, hg_error_t *err)
{
        return jsonparse_load(buf, len, max_depth, ret, err);
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

/* The text is kept in memory from jansson's allocator, as json_dumps keeps
 * it (the driver's allocator wipes what it frees: a token being written out
 * must not stay behind in a buffer outgrown on the way). */
typedef struct dump_state {
        char *data;
        size_t len, cap;
        bool failed; /* sticky: jansson goes on after a key's failed write */
        json_malloc_t alloc;
        json_free_t release;
} dump_state_t;

static int dump_append(const char *buffer, size_t size, void *data)
{
        dump_state_t *d = data;
        if (d->failed)
                return -1;
        if (size >= d->cap - d->len) { /* and room for the NUL */
                size_t cap = d->cap ? d->cap : 256;
                while (size >= cap - d->len) {
                        if (cap > SIZE_MAX / 2) {
                                d->failed = true;
                                return -1;
                        }
                        cap *= 2;
                }
                char *grown = d->alloc(cap);
                if (!grown) {
                        d->failed = true;
                        return -1;
                }
                if (d->data) {
                        memcpy(grown, d->data, d->len);
                        d->release(d->data);
                }
                d->data = grown;
                d->cap = cap;
        }
        memcpy(d->data + d->len, buffer, size);
        d->len += size;
        d->data[d->len] = '\0';
        return 0;
}

char *jsonx_dumps(const json_t *j, size_t flags)
{
        if (!j)
                return NULL;
        dump_state_t d = {.failed = false};
        json_get_alloc_funcs(&d.alloc, &d.release);
        if (json_dump_callback(j, dump_append, &d, flags) < 0 || d.failed || !d.data) {
                if (d.data)
                        d.release(d.data);
                return NULL;
        }
        return d.data;
}

int jsonx_print_outcome(int status, const char *who, const char *outcome, const char *reason,
                        json_t *extra)
{
        _cleanup_json_ json_t *j = json_pack("{s:s, s:s}", who, outcome, "reason", reason);
        /* Without its extra members it would be another outcome: none. */
        bool whole = j && (!extra || json_object_update(j, extra) == 0);
        _cleanup_free_ char *text = whole ? jsonx_dumps(j, JSON_COMPACT) : NULL;
        if (text)
                puts(text);
        fflush(stdout);
        return status;
}
