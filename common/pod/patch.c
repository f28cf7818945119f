#include "patch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsondump.h"
#include "jsonptr.h"
#include "jsonx.h"

/* The text a typical injection writes, so the ops buffer is allocated once
 * rather than grown from strbuf's 64 bytes by doubling. */
#define OPS_TEXT_USUAL 2048

int patch_init(patch_t *p, json_t *doc)
{
        p->doc = doc;
        p->path = (strbuf_t){0};
        p->n_ops = 0;
        /* strbuf has no reserve: an empty buffer of the usual size is what
         * strbuf_append would have grown (data malloc'd, NUL-terminated). */
        p->ops = (strbuf_t){.data = malloc(OPS_TEXT_USUAL), .cap = OPS_TEXT_USUAL};
        if (!p->ops.data)
                return -ENOMEM;
        p->ops.data[0] = '\0';
        return strbuf_append(&p->ops, "[]", 2);
}

void patch_free(patch_t *p)
{
        strbuf_free(&p->ops);
        strbuf_free(&p->path);
        p->n_ops = 0;
}

char *patch_take_ops(patch_t *p)
{
        if (p->n_ops == 0)
                return NULL;
        /* Never NULL: ops holds at least "[]" since patch_init. */
        p->n_ops = 0;
        return strbuf_take(&p->ops);
}

/* Writes the operation over the closing ']' of the ops text and closes it
 * again: an add, whose value's text is known (what jsondump writes for
 * value) or written out here, or with neither value nor text a remove. On
 * failure the text is left as it was. */
static int emit(patch_t *p, const char *path, const json_t *value, const char *known)
{
        size_t closed = p->ops.len;
        strbuf_truncate(&p->ops, closed - 1);
        static const char add[] = "{\"op\":\"add\",\"path\":";
        static const char remove[] = "{\"op\":\"remove\",\"path\":";
        bool is_add = value || known;
        int r = p->n_ops ? strbuf_append(&p->ops, ",", 1) : 0;
        if (r == 0)
                r = is_add ? strbuf_append(&p->ops, add, sizeof(add) - 1)
                           : strbuf_append(&p->ops, remove, sizeof(remove) - 1);
        if (r == 0)
                r = jsondump_append_string(&p->ops, path, strlen(path));
        if (r == 0 && is_add)
                r = strbuf_append(&p->ops, ",\"value\":", 9);
        if (r == 0 && is_add)
                r = known ? strbuf_puts(&p->ops, known) : jsondump_append(&p->ops, value);
        if (r == 0)
                r = strbuf_append(&p->ops, "}]", 2);
        if (r < 0) {
                /* Back to the text before this op (it had room for its ']'). */
                strbuf_truncate(&p->ops, closed - 1);
                (void)strbuf_append(&p->ops, "]", 1);
                return r;
        }
        p->n_ops++;
        return 0;
}

static int add_known(patch_t *p, const char *path, json_t *value, const char *known,
                     hg_error_t *err)
{
        _cleanup_json_ json_t *owned = value;
        if (!owned)
                return -ENOMEM;
        int r = jsonptr_add(p->doc, path, owned, err);
        if (r < 0)
                return r;
        /* Written out now: later operations may change owned in the document. */
        return emit(p, path, owned, known);
}

int patch_add(patch_t *p, const char *path, json_t *value, hg_error_t *err)
{
        return add_known(p, path, value, NULL, err);
}

int patch_remove(patch_t *p, const char *path, hg_error_t *err)
{
        int r = jsonptr_remove(p->doc, path, err);
        return r < 0 ? r : emit(p, path, NULL, NULL);
}

/* The container at parent_path/key: 0 and *ret if present with the wanted
 * type, -ENOENT if absent or null, -EINVAL (with a message) otherwise. */
static int lookup_container(patch_t *p, const char *parent_path, const char *key, json_type type,
                            json_t **ret, hg_error_t *err)
{
        json_t *parent;
        int r = jsonptr_get(p->doc, parent_path, &parent, err);
        if (r < 0)
                return r;
        r = jsonx_member(parent, key, type, ret);
        if (r == -EINVAL)
                return error_set(err, r, "%s/%s is %s, expected %s", parent_path, key,
                                 jsonx_type_name(json_object_get(parent, key)),
                                 type == JSON_ARRAY ? "an array" : "an object");
        return r;
}

/* A new container of the given type holding value (at segment in a map). */
static json_t *container_around(json_type type, const char *segment, json_t *value)
{
        json_t *c = type == JSON_ARRAY ? json_array() : json_object();
        if (!c)
                return NULL;
        int r =
            type == JSON_ARRAY ? json_array_append(c, value) : json_object_set(c, segment, value);
        if (r < 0) {
                json_decref(c);
                return NULL;
        }
        return c;
}

/* Adds value into the container (array or map) at parent_path/key: at
 * segment ("-" or a member name) when the container exists, or by creating
 * the container around it (holding value) when it does not. known, if set,
 * is value's text. */
static int add_into(patch_t *p, const char *parent_path, const char *key, json_type type,
                    const char *segment, json_t *value, const char *known, hg_error_t *err)
{
        _cleanup_json_ json_t *owned = value;
        if (!owned)
                return -ENOMEM;
        strbuf_t *path = &p->path;
        strbuf_truncate(path, 0);
        int r = strbuf_puts(path, parent_path);
        if (r == 0)
                r = jsonptr_append(path, key);
        if (r < 0)
                return r;
        json_t *container;
        r = lookup_container(p, parent_path, key, type, &container, err);
        if (r == -ENOENT)
                return patch_add(p, path->data, container_around(type, segment, owned), err);
        if (r < 0)
                return r;
        r = jsonptr_append(path, segment);
        if (r < 0)
                return r;
        /* What jsonptr_add would do at path, on the container found above. */
        r = type == JSON_ARRAY ? json_array_append(container, owned)
                               : json_object_set(container, segment, owned);
        if (r < 0)
                return -ENOMEM;
        return emit(p, path->data, owned, known);
}

int patch_append(patch_t *p, const char *parent_path, const char *key, json_t *value,
                 hg_error_t *err)
{
        return add_into(p, parent_path, key, JSON_ARRAY, "-", value, NULL, err);
}

int patch_append_known(patch_t *p, const char *parent_path, const char *key, json_t *value,
                       const char *text, hg_error_t *err)
{
        return add_into(p, parent_path, key, JSON_ARRAY, "-", value, text, err);
}

int patch_set_member(patch_t *p, const char *parent_path, const char *key, const char *name,
                     json_t *value, hg_error_t *err)
{
        return add_into(p, parent_path, key, JSON_OBJECT, name, value, NULL, err);
}
