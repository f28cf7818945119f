#include "inject.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "admission.h"
#include "cleanup.h"
#include "jsonx.h"

/* Lists inside Lists are read this deep; kubectl never nests them. */
#define MAX_LIST_DEPTH 4

/* Where a kind keeps its pod template, as JSON member names from the
 * manifest's root. */
static const struct {
        const char *kind;
        const char *path[5]; /* NULL-terminated */
} templates[] = {
    {"Deployment", {"spec", "template"}},
    {"StatefulSet", {"spec", "template"}},
    {"DaemonSet", {"spec", "template"}},
    {"ReplicaSet", {"spec", "template"}},
    {"ReplicationController", {"spec", "template"}},
    {"Job", {"spec", "template"}},
    {"CronJob", {"spec", "jobTemplate", "spec", "template"}},
};

/* The pod as the API server would receive it, decided as the server
 * decides a CREATE of it (admission_decide_pod); on inject or skip, pod is
 * left as it would be stored. */
static int decide(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
                  const char *where, inject_skip_fn skipped, void *ctx, hg_error_t *err)
{
        mutate_result_t res;
        int r = admission_decide_pod(cfg, values, pod, &res, err);
        if (r == -ENOMEM)
                r = error_set(err, -ENOMEM, "%s: %s", where, res.detail);
        else if (r < 0)
                r = error_prefix(err, "%s: ", where);
        else if (res.decision == DECISION_DENY)
                r = error_set(err, -EPERM, "%s: %s", where, res.detail);
        else if (res.decision == DECISION_SKIP && skipped)
                skipped(where, mutate_reason_name(res.reason), res.detail, ctx);
        mutate_result_free(&res);
        return r;
}

static void describe(json_t *doc, const char *prefix, char *out, size_t size)
{
        const char *kind = "", *name = "";
        (void)jsonx_string(doc, "kind", &kind);
        json_t *meta = json_object_get(doc, "metadata");
        if (jsonx_string(meta, "name", &name) < 0 || !name[0])
                (void)jsonx_string(meta, "generateName", &name);
        (void)snprintf(out, size, "%s%s%s%s", prefix, kind[0] ? kind : "(no kind)",
                       name[0] ? " " : "", name);
}

/* A workload's template as a Pod: its metadata and spec, nothing else. */
static int inject_template(const webhook_settings_t *cfg, const shape_values_t *values,
                           json_t *parent, const char *member, const char *where,
                           inject_skip_fn skipped, void *ctx, hg_error_t *err)
{
        json_t *tmpl = json_object_get(parent, member);
        if (!json_is_object(tmpl) || !json_is_object(json_object_get(tmpl, "spec")))
                return error_set(err, -EINVAL, "%s: no pod template with a spec", where);
        json_t *meta = json_object_get(tmpl, "metadata");
        if (meta && !json_is_object(meta))
                return error_set(err, -EINVAL, "%s: the pod template's metadata is not an object",
                                 where);
        json_t *pod = json_pack("{s:s, s:s, s:o, s:O}", "apiVersion", "v1", "kind", "Pod",
                                "metadata", meta ? json_incref(meta) : json_object(), "spec",
                                json_object_get(tmpl, "spec"));
        if (!pod)
                return -ENOMEM;
        int r = decide(cfg, values, pod, where, skipped, ctx, err);
        if (r == 0 && (json_object_set(tmpl, "metadata", json_object_get(pod, "metadata")) < 0 ||
                       json_object_set(tmpl, "spec", json_object_get(pod, "spec")) < 0))
                r = -ENOMEM;
        json_decref(pod);
        return r;
}

static int inject_one(const webhook_settings_t *cfg, const shape_values_t *values, json_t *docs,
                      size_t index, const char *prefix, unsigned depth, inject_skip_fn skipped,
                      void *ctx, hg_error_t *err);

/* A List, or a typed list (PodList, DeploymentList, ... as the API serves
 * them), whose items carry no kind: they get the list's. */
static int inject_list(const webhook_settings_t *cfg, const shape_values_t *values, json_t *list,
                       const char *kind, const char *where, unsigned depth, inject_skip_fn skipped,
                       void *ctx, hg_error_t *err)
{
        json_t *items = json_object_get(list, "items");
        if (!json_is_array(items))
                return error_set(err, -EINVAL, "%s: items is not a list", where);
        size_t kind_len = strlen(kind) - strlen("List");
        json_t *api = json_object_get(list, "apiVersion");
        if (kind_len > 0) {
                size_t i;
                json_t *item;
                json_array_foreach (items, i, item) {
                        if (!json_is_object(item) || json_object_get(item, "kind"))
                                continue;
                        if (json_object_set_new(item, "kind", json_stringn(kind, kind_len)) < 0 ||
                            (api && json_object_set(item, "apiVersion", api) < 0))
                                return -ENOMEM;
                }
        }
        if (depth >= MAX_LIST_DEPTH)
                return error_set(err, -EINVAL, "%s: Lists nested more than %d deep", where,
                                 MAX_LIST_DEPTH);
        for (size_t i = 0; i < json_array_size(items); i++) {
                char prefix[256];
                (void)snprintf(prefix, sizeof(prefix), "%s, item %zu: ", where, i + 1);
                int r = inject_one(cfg, values, items, i, prefix, depth + 1, skipped, ctx, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int inject_one(const webhook_settings_t *cfg, const shape_values_t *values, json_t *docs,
                      size_t index, const char *prefix, unsigned depth, inject_skip_fn skipped,
                      void *ctx, hg_error_t *err)
{
        json_t *doc = json_array_get(docs, index);
        char where[512];
        describe(doc, prefix, where, sizeof(where));
        if (!json_is_object(doc))
                return error_set(err, -EINVAL, "%s: not a Kubernetes object", where);
        const char *kind = "", *api = "";
        (void)jsonx_string(doc, "kind", &kind);
        (void)jsonx_string(doc, "apiVersion", &api);

        if (strcmp(kind, "Pod") == 0) {
                if (strcmp(api, "v1") != 0)
                        return error_set(err, -EINVAL, "%s: apiVersion \"%s\", expected v1", where,
                                         api);
                return decide(cfg, values, doc, where, skipped, ctx, err);
        }
        size_t len = strlen(kind);
        if (len >= 4 && strcmp(kind + len - 4, "List") == 0)
                return inject_list(cfg, values, doc, kind, where, depth, skipped, ctx, err);
        for (size_t t = 0; t < ARRAY_SIZE(templates); t++) {
                if (strcmp(kind, templates[t].kind) != 0)
                        continue;
                json_t *parent = doc;
                size_t last = 0;
                while (templates[t].path[last + 1])
                        last++;
                for (size_t i = 0; i < last && parent; i++)
                        parent = json_object_get(parent, templates[t].path[i]);
                return inject_template(cfg, values, parent, templates[t].path[last], where, skipped,
                                       ctx, err);
        }
        return 0; /* a Service, a ConfigMap, ...: nothing of ours */
}

int inject_manifests(const webhook_settings_t *cfg, json_t *docs, inject_skip_fn skipped, void *ctx,
                     hg_error_t *err)
{
        /* The sidecar's values once for every pod, as the server has them. */
        shape_values_t *values = NULL;
        if (shape_values_new(&cfg->sidecar, &values) < 0)
                return error_set(err, -ENOMEM, "internal error while building the patch");
        size_t n = json_array_size(docs);
        int r = 0;
        for (size_t i = 0; r == 0 && i < n; i++) {
                char prefix[32] = "";
                if (n > 1)
                        (void)snprintf(prefix, sizeof(prefix), "document %zu: ", i + 1);
                r = inject_one(cfg, values, docs, i, prefix, 0, skipped, ctx, err);
        }
        shape_values_free(values);
        return r;
}
