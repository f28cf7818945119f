#include "ctlreq.h"

#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "scratch.h"

const char *ctlreq_op_name(ctlreq_op_t op)
{
        const ctlop_t *o = ctlop_get(op);
        return o ? o->name : "?";
}

bool ctlreq_turn_id_ok(const char *id)
{
        return id && scratch_turn_id_valid(id);
}

static int check_member(const ctlop_member_t *m, json_t *v, hg_error_t *err)
{
        switch (m->type) {
        case CTLOP_STRING:
                if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
                        return error_set(err, -EINVAL, "\"%s\" must be a string without NUL",
                                         m->name);
                return 0;
        case CTLOP_UINT:
                if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                    (uint64_t)json_integer_value(v) > CTLREQ_FROM_MAX)
                        return error_set(err, -EINVAL, "\"%s\" must be a non-negative integer",
                                         m->name);
                return 0;
        case CTLOP_BOOL:
                if (!json_is_boolean(v))
                        return error_set(err, -EINVAL, "\"%s\" must be true or false", m->name);
                return 0;
        case CTLOP_ARGV: {
                size_t i;
                json_t *a;
                if (!json_is_array(v) || json_array_size(v) == 0)
                        return error_set(err, -EINVAL,
                                         "\"%s\" must be a non-empty array of strings", m->name);
                json_array_foreach (v, i, a)
                        if (!json_is_string(a) ||
                            strlen(json_string_value(a)) != json_string_length(a))
                                return error_set(err, -EINVAL, "\"%s\" must be strings without NUL",
                                                 m->name);
                return 0;
        }
        default:
                return error_set(err, -EINVAL, "internal: member type");
        }
}

int ctlreq_parse(const char *text, size_t len, ctlreq_t *ret, hg_error_t *err)
{
        _cleanup_json_ json_t *root = NULL;
        int r = jsonx_load(text, len, CTLREQ_DEPTH_MAX, &root, err);
        if (r < 0)
                return r;
        if (!json_is_object(root))
                return error_set(err, -EINVAL, "a request is a JSON object {\"op\": ...}");
        const char *op_name = json_string_value(json_object_get(root, "op"));
        if (!op_name)
                return error_set(err, -EINVAL, "a request is {\"op\": ...}");
        ctlreq_t q = {.op = ctlop_by_name(op_name)};
        if (q.op == CTLREQ_OP_COUNT)
                return error_set(err, -EINVAL, "unknown op \"%.40s\"", op_name);
        const ctlop_member_t *members = ctlop_get(q.op)->members;
        const char *key;
        json_t *v;
        json_object_foreach (root, key, v) {
                if (strcmp(key, "op") == 0)
                        continue;
                const ctlop_member_t *m = NULL;
                for (size_t i = 0; i < CTLOP_MEMBERS_MAX && members[i].name && !m; i++)
                        if (strcmp(key, members[i].name) == 0)
                                m = &members[i];
                if (!m)
                        return error_set(err, -EINVAL, "%s takes no member \"%.40s\"", op_name,
                                         key);
                if ((r = check_member(m, v, err)) < 0)
                        return r;
        }
        for (size_t i = 0; i < CTLOP_MEMBERS_MAX && members[i].name; i++)
                if (members[i].required && !json_object_get(root, members[i].name))
                        return error_set(err, -EINVAL, "%s needs \"%s\"", op_name, members[i].name);
        json_t *turn = json_object_get(root, "turn");
        if (turn && !ctlreq_turn_id_ok(json_string_value(turn)))
                return error_set(err, -EINVAL, "\"turn\" must be 1-64 of [A-Za-z0-9._-]");
        q.turn = json_string_value(turn);
        json_t *from = json_object_get(root, "from");
        q.from = from ? (uint64_t)json_integer_value(from) : 0;
        q.follow = json_is_true(json_object_get(root, "follow"));
        json_t *spec = json_object_get(root, "spec");
        q.spec = json_string_value(spec);
        q.spec_len = spec ? json_string_length(spec) : 0;
        q.root = TAKE_PTR(root);
        *ret = q;
        return 0;
}

void ctlreq_free(ctlreq_t *r)
{
        if (!r)
                return;
        json_decref(r->root);
        *r = (ctlreq_t){.op = CTLREQ_OP_COUNT};
}
