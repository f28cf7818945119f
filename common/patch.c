#include "patch.h"

#include <errno.h>

#include "cleanup.h"
#include "jsonptr.h"
#include "jsonx.h"
#include "strbuf.h"

int patch_init(patch_t *p, json_t *doc)
{
        p->doc = doc;
        p->ops = json_array();
        return p->ops ? 0 : -ENOMEM;
}

void patch_free(patch_t *p)
{
        json_decref(p->ops);
        p->ops = NULL;
}

int patch_add(patch_t *p, const char *path, json_t *value, hg_error_t *err)
{
        _cleanup_json_ json_t *owned = value;
        if (!owned)
                return -ENOMEM;
        /* The op gets its own copy: later operations change the document's
         * value (an append to an array this op created) but never the op. */
        _cleanup_json_ json_t *op = json_object();
        if (!op || json_object_set_new_nocheck(op, "op", json_string_nocheck("add")) < 0 ||
            json_object_set_new(op, "path", json_string(path)) < 0 ||
            json_object_set_new_nocheck(op, "value", json_deep_copy(owned)) < 0)
                return -ENOMEM;
        int r = jsonptr_add(p->doc, path, owned, err);
        if (r < 0)
                return r;
        return json_array_append(p->ops, op) == 0 ? 0 : -ENOMEM;
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

/* Adds value into the container (array or map) at parent_path/key: at
 * segment ("-" or a member name) when the container exists, or by creating
 * the container around it (holding value) when it does not. */
static int add_into(patch_t *p, const char *parent_path, const char *key, json_type type,
                    const char *segment, json_t *value, hg_error_t *err)
{
        _cleanup_json_ json_t *owned = value;
        if (!owned)
                return -ENOMEM;
        _cleanup_strbuf_ strbuf_t path = {0};
        int r = strbuf_puts(&path, parent_path);
        if (r == 0)
                r = jsonptr_append(&path, key);
        if (r < 0)
                return r;
        json_t *container;
        r = lookup_container(p, parent_path, key, type, &container, err);
        if (r == -ENOENT) {
                json_t *created = type == JSON_ARRAY ? json_pack("[O]", owned)
                                                     : json_pack("{s:O}", segment, owned);
                return patch_add(p, path.data, created, err);
        }
        if (r < 0)
                return r;
        r = jsonptr_append(&path, segment);
        if (r < 0)
                return r;
        return patch_add(p, path.data, TAKE_PTR(owned), err);
}

int patch_append(patch_t *p, const char *parent_path, const char *key, json_t *value,
                 hg_error_t *err)
{
        return add_into(p, parent_path, key, JSON_ARRAY, "-", value, err);
}

int patch_set_member(patch_t *p, const char *parent_path, const char *key, const char *name,
                     json_t *value, hg_error_t *err)
{
        return add_into(p, parent_path, key, JSON_OBJECT, name, value, err);
}
