#include "podview.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "pathnorm.h"

static const char *const list_names[PODVIEW_LIST_COUNT] = {
    [PODVIEW_INIT] = "initContainers",
    [PODVIEW_CONTAINERS] = "containers",
    [PODVIEW_EPHEMERAL] = "ephemeralContainers",
};

const char *podview_list_name(podview_list_t list)
{
        return (unsigned)list < PODVIEW_LIST_COUNT ? list_names[list] : "containers";
}

/* What mutate.c reads of a pod (through the view below), with what
 * shapecheck.c reads of a pod marked injected (and metadata.name and
 * generateName, which admission.c reads for its log line): kept in step with the code by the
 * fuzz target, which decides every input both ways and compares.
 *
 * The spec check compares the driver member by member and refuses any
 * member the shape does not set, so of every container each member is
 * there: the ones judged by value whole, the others (env, args, probes,
 * ...: an extra one is refused whatever it holds) as `present`, their
 * objects emptied. */
static const jsonparse_member_t no_members[] = {JSONPARSE_MEMBERS_END};
static const jsonparse_proj_t present;
static const jsonparse_proj_t present = {.members = no_members, .items = &present};
static const jsonparse_member_t volume_members[] = {
    JSONPARSE_MEMBER("name", NULL),
    JSONPARSE_MEMBER("emptyDir", NULL),
    JSONPARSE_MEMBER("image", NULL), /* hangar-bin as an image volume: judged by value */
    JSONPARSE_MEMBERS_END,
};
static const jsonparse_proj_t volume_proj = {.members = volume_members, .others = &present};
static const jsonparse_member_t container_members[] = {
    JSONPARSE_MEMBER("name", NULL),
    JSONPARSE_MEMBER("image", NULL),
    JSONPARSE_MEMBER("imagePullPolicy", NULL),
    JSONPARSE_MEMBER("command", NULL),
    JSONPARSE_MEMBER("env", NULL), /* the driver's: judged by value (driver.uidSplit, ...) */
    JSONPARSE_MEMBER("resources", NULL),
    JSONPARSE_MEMBER("securityContext", NULL),
    JSONPARSE_MEMBER("volumeMounts", NULL),
    JSONPARSE_MEMBER("startupProbe", NULL), /* the driver's: judged by value (driver.probes) */
    JSONPARSE_MEMBER("livenessProbe", NULL),
    JSONPARSE_MEMBER("terminationMessagePath", NULL),
    JSONPARSE_MEMBER("terminationMessagePolicy", NULL),
    JSONPARSE_MEMBER("targetContainerName", NULL),
    JSONPARSE_MEMBERS_END,
};
static const jsonparse_proj_t container_proj = {.members = container_members, .others = &present};
static const jsonparse_proj_t container_list_proj = {.items = &container_proj};
static const jsonparse_member_t spec_members[] = {
    JSONPARSE_MEMBER("volumes", &(const jsonparse_proj_t){.items = &volume_proj}),
    JSONPARSE_MEMBER("initContainers", &container_list_proj),
    JSONPARSE_MEMBER("containers", &container_list_proj),
    JSONPARSE_MEMBER("ephemeralContainers", &container_list_proj),
    JSONPARSE_MEMBER("hostPID", NULL),
    JSONPARSE_MEMBER("hostNetwork", NULL),
    JSONPARSE_MEMBER("hostIPC", NULL),
    JSONPARSE_MEMBER("shareProcessNamespace", NULL),
    JSONPARSE_MEMBER("securityContext", NULL),
    JSONPARSE_MEMBER("runtimeClassName", NULL),
    JSONPARSE_MEMBER("os", NULL),        /* a Windows pod cannot have the driver */
    JSONPARSE_MEMBER("resources", NULL), /* pod-level: the driver's requests are added */
    JSONPARSE_MEMBERS_END,
};
static const jsonparse_member_t metadata_members[] = {
    JSONPARSE_MEMBER("name", NULL),
    JSONPARSE_MEMBER("generateName", NULL),
    JSONPARSE_MEMBER("labels", NULL),
    JSONPARSE_MEMBER("annotations", NULL),
    JSONPARSE_MEMBERS_END,
};
static const jsonparse_member_t pod_members[] = {
    JSONPARSE_MEMBER("metadata", &(const jsonparse_proj_t){.members = metadata_members}),
    JSONPARSE_MEMBER("spec", &(const jsonparse_proj_t){.members = spec_members}),
    JSONPARSE_MEMBERS_END,
};
const jsonparse_proj_t podview_projection = {.members = pod_members};

static int cmp_name(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Container names are unique across all three lists (the API server
 * insists, after admission): with two "sandbox" containers, which one is
 * the agent would be a guess, so such a pod is invalid here too. Sorted,
 * not compared pairwise: a review may carry many thousands of containers. */
static int check_unique_names(const pod_view_t *view, hg_error_t *err)
{
        size_t n = 0;
        for (size_t l = 0; l < PODVIEW_LIST_COUNT; l++)
                n += json_array_size(view->lists[l]);
        if (n < 2)
                return 0;
        _cleanup_free_ const char **names = malloc(n * sizeof(*names));
        if (!names)
                return -ENOMEM;
        size_t k = 0;
        for (size_t l = 0; l < PODVIEW_LIST_COUNT; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (view->lists[l], i, c)
                        names[k++] = json_string_value(json_object_get(c, "name"));
        }
        qsort(names, n, sizeof(*names), cmp_name);
        for (size_t i = 1; i < n; i++)
                if (strcmp(names[i - 1], names[i]) == 0)
                        return error_set(err, -EINVAL, "container name \"%s\" is used twice",
                                         names[i]);
        return 0;
}

/* What the decision reads of the pod, beside its containers and volumes,
 * with the type each must have where present (null counts as absent, as it
 * does for the API server): a pod that says hostNetwork "true" or names its
 * RuntimeClass with a number is malformed where the webhook must read it,
 * and was injected as if it said nothing (the API server refuses such a
 * pod; hangar-webhook inject printed it injected). */
static const struct {
        const char *key;
        json_type type; /* JSON_TRUE: either boolean */
        const char *expected;
} spec_members_read[] = {
    {"hostPID", JSON_TRUE, "true or false"},
    {"hostNetwork", JSON_TRUE, "true or false"},
    {"hostIPC", JSON_TRUE, "true or false"},
    {"shareProcessNamespace", JSON_TRUE, "true or false"},
    {"securityContext", JSON_OBJECT, "an object"},
    {"runtimeClassName", JSON_STRING, "a string"},
    {"os", JSON_OBJECT, "an object"},
    {"resources", JSON_OBJECT, "an object"},
};

static int check_spec_types(json_t *spec, hg_error_t *err)
{
        json_t *v;
        for (size_t i = 0; i < ARRAY_SIZE(spec_members_read); i++)
                if (jsonx_member(spec, spec_members_read[i].key, spec_members_read[i].type, &v) ==
                    -EINVAL)
                        return error_set(err, -EINVAL, "spec.%s must be %s",
                                         spec_members_read[i].key, spec_members_read[i].expected);
        const char *os;
        if (jsonx_member(spec, "os", JSON_OBJECT, &v) == 0 &&
            jsonx_string(v, "name", &os) == -EINVAL)
                return error_set(err, -EINVAL, "spec.os.name must be a string");
        static const char *const budgets[] = {"requests", "limits"};
        for (size_t i = 0; i < ARRAY_SIZE(budgets); i++) {
                json_t *amounts;
                if (jsonx_member(spec, "resources", JSON_OBJECT, &v) == 0 &&
                    jsonx_member(v, budgets[i], JSON_OBJECT, &amounts) == -EINVAL)
                        return error_set(err, -EINVAL, "spec.resources.%s must be an object",
                                         budgets[i]);
        }
        return 0;
}

int podview_read(json_t *pod, pod_view_t *view, hg_error_t *err)
{
        json_t *metadata = NULL, *v;
        *view = (pod_view_t){0};
        if (!json_is_object(pod))
                return error_set(err, -EINVAL, "object is %s, expected a Pod object",
                                 jsonx_type_name(pod));
        if (jsonx_member(pod, "metadata", JSON_OBJECT, &metadata) == -EINVAL)
                return error_set(err, -EINVAL, "metadata is not an object");
        if (jsonx_member(metadata, "labels", JSON_OBJECT, &v) == -EINVAL ||
            jsonx_member(metadata, "annotations", JSON_OBJECT, &view->annotations) == -EINVAL)
                return error_set(err, -EINVAL, "metadata.labels and annotations must be objects");
        if (jsonx_member(pod, "spec", JSON_OBJECT, &view->spec) < 0)
                return error_set(err, -EINVAL, "spec is missing or not an object");
        int checked = check_spec_types(view->spec, err);
        if (checked < 0)
                return checked;
        if (jsonx_member(view->spec, "volumes", JSON_ARRAY, &view->volumes) == -EINVAL)
                return error_set(err, -EINVAL, "spec.volumes is not an array");
        size_t i;
        json_t *vol;
        json_array_foreach (view->volumes, i, vol) {
                const char *name;
                if (jsonx_string(vol, "name", &name) < 0)
                        return error_set(err, -EINVAL, "spec.volumes[%zu] has no name", i);
        }
        for (size_t l = 0; l < PODVIEW_LIST_COUNT; l++) {
                json_t *list;
                int r = jsonx_member(view->spec, list_names[l], JSON_ARRAY, &list);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        return error_set(err, -EINVAL, "spec.%s is not an array", list_names[l]);
                view->lists[l] = list;
                json_t *c;
                json_array_foreach (list, i, c) {
                        const char *name;
                        json_t *mounts, *sc = NULL;
                        if (jsonx_string(c, "name", &name) < 0)
                                return error_set(err, -EINVAL, "spec.%s[%zu] has no name",
                                                 list_names[l], i);
                        if (jsonx_member(c, "securityContext", JSON_OBJECT, &sc) == -EINVAL)
                                return error_set(
                                    err, -EINVAL,
                                    "container \"%s\": securityContext is not an object", name);
                        bool privileged;
                        if (jsonx_bool(sc, "privileged", &privileged) == -EINVAL)
                                return error_set(err, -EINVAL,
                                                 "container \"%s\": securityContext.privileged "
                                                 "must be true or false",
                                                 name);
                        r = jsonx_member(c, "volumeMounts", JSON_ARRAY, &mounts);
                        if (r == -EINVAL)
                                return error_set(err, -EINVAL,
                                                 "container \"%s\": volumeMounts is not an array",
                                                 name);
                        size_t k;
                        json_t *m;
                        json_array_foreach (r == 0 ? mounts : NULL, k, m) {
                                const char *s, *path;
                                if (jsonx_string(m, "name", &s) < 0 ||
                                    jsonx_string(m, "mountPath", &path) < 0)
                                        return error_set(err, -EINVAL,
                                                         "container \"%s\": volumeMounts[%zu] "
                                                         "needs a name and a mountPath",
                                                         name, k);
                                /* Compared with hangar's paths below: one
                                 * that cannot be normalised could be
                                 * either, so it is refused (no kernel takes
                                 * a path that long either). */
                                if (pathnorm_within(path, "/") < 0)
                                        return error_set(err, -EINVAL,
                                                         "container \"%s\": volumeMounts[%zu]."
                                                         "mountPath is longer than %d bytes "
                                                         "once normalised",
                                                         name, k, PATHNORM_MAX - 1);
                        }
                }
        }
        /* The pod must have containers. */
        if (!view->lists[PODVIEW_CONTAINERS] ||
            json_array_size(view->lists[PODVIEW_CONTAINERS]) == 0)
                return error_set(err, -EINVAL, "spec.containers is missing or empty");
        return check_unique_names(view, err);
}

int podview_for_each_container(const pod_view_t *view, podview_container_fn fn, void *ctx)
{
        for (podview_list_t l = 0; l < PODVIEW_LIST_COUNT; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (view->lists[l], i, c) {
                        int r = fn(c, json_string_value(json_object_get(c, "name")), l, ctx);
                        if (r != 0)
                                return r;
                }
        }
        return 0;
}

static int is_named(json_t *c, const char *name, podview_list_t list, void *ctx)
{
        return strcmp(name, ctx) == 0;
}

bool podview_has_container(const pod_view_t *view, const char *name)
{
        return podview_for_each_container(view, is_named, (void *)name) != 0;
}

json_t *podview_agent(const pod_view_t *view, const char *name, size_t *ret_index)
{
        size_t i;
        json_t *c;
        json_array_foreach (view->lists[PODVIEW_CONTAINERS], i, c) {
                if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0) {
                        *ret_index = i;
                        return c;
                }
        }
        return NULL;
}

const char *podview_annotation(const pod_view_t *view, const char *key)
{
        const char *v = NULL;
        return jsonx_string(view->annotations, key, &v) == 0 ? v : NULL;
}

json_t *podview_spec(json_t *pod)
{
        return json_object_get(pod, "spec");
}

json_t *podview_annotations(json_t *pod)
{
        return json_object_get(json_object_get(pod, "metadata"), "annotations");
}

const char *podview_string(json_t *obj, const char *key)
{
        const char *v = NULL;
        return jsonx_string(obj, key, &v) == 0 ? v : NULL;
}

json_t *podview_container(json_t *pod, const char *list, const char *name)
{
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(podview_spec(pod), list), i, c) {
                const char *n = podview_string(c, "name");
                if (n && strcmp(n, name) == 0)
                        return c;
        }
        return NULL;
}

json_t *podview_volume(json_t *pod, const char *name)
{
        size_t i;
        json_t *v;
        json_array_foreach (json_object_get(podview_spec(pod), "volumes"), i, v) {
                const char *n = podview_string(v, "name");
                if (n && strcmp(n, name) == 0)
                        return v;
        }
        return NULL;
}

bool podview_runs_under_gvisor(const hg_config_t *cfg, json_t *spec)
{
        const char *rc = NULL;
        if (jsonx_string(spec, "runtimeClassName", &rc) < 0)
                return false;
        for (size_t i = 0; i < cfg->gvisor_runtime_classes.n; i++)
                if (strcmp(cfg->gvisor_runtime_classes.items[i], rc) == 0)
                        return true;
        return false;
}
