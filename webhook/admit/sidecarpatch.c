#include "sidecarpatch.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "k8sname.h"
#include "shapecheck.h"
#include "strbuf.h"

/* Removes container index's mounts of the service-account token (every
 * one shapecheck_is_token_mount names, or for plugin_only only the mount
 * the ServiceAccount admission plugin adds), from the last to the first so
 * each op's index is the element as the array is then. */
int sidecarpatch_remove_token_mounts(patch_t *p, const pod_view_t *view, podview_list_t list,
                                     size_t index, bool plugin_only, hg_error_t *err)
{
        json_t *mounts = json_object_get(json_array_get(view->lists[list], index), "volumeMounts");
        for (size_t k = json_array_size(mounts); k-- > 0;) {
                json_t *m = json_array_get(mounts, k);
                if (plugin_only ? !shapecheck_is_plugin_token_mount(m)
                                : !shapecheck_is_token_mount(m))
                        continue;
                char path[96];
                (void)snprintf(path, sizeof(path), "/spec/%s/%zu/volumeMounts/%zu",
                               podview_list_name(list), index, k);
                int r = patch_remove(p, path, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

bool sidecarpatch_removes_agent_token(const webhook_settings_t *cfg)
{
        return strcmp(cfg->sidecar.agent_service_account_token, CONFIG_TOKEN_REMOVE) == 0;
}

/* Records the decision on the pod, leaving annotations that already say it
 * alone, so a reinvocation of a skipped pod emits no operation at all. */
int sidecarpatch_annotate(patch_t *p, mutate_result_t *ret, hg_error_t *err)
{
        const char *status =
            ret->decision == DECISION_INJECT ? SHAPE_STATUS_INJECTED : SHAPE_STATUS_SKIPPED;
        const struct {
                const char *key;
                const char *value;
        } wanted[] = {
            {SHAPE_ANNOTATION_STATUS, status},
            {SHAPE_ANNOTATION_REASON, mutate_reason_name(ret->reason)},
        };
        for (size_t i = 0; i < ARRAY_SIZE(wanted); i++) {
                /* From the document: the first op may have just created the map. */
                json_t *annotations =
                    json_object_get(json_object_get(p->doc, "metadata"), "annotations");
                const char *have = podview_string(annotations, wanted[i].key);
                if (have && strcmp(have, wanted[i].value) == 0)
                        continue;
                int r = patch_set_member(p, "/metadata", "annotations", wanted[i].key,
                                         json_string(wanted[i].value), err);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* kubectl exec, logs and attach without -c take the default container,
 * else containers[0] with a note on stderr: the agent's is made the
 * default when the pod names none. A pod's own choice is kept (a
 * template's value, which agent-sandbox would put back on every
 * reconcile); one naming hangar-driver was refused before. */
static int default_to_agent(patch_t *p, const pod_view_t *view, const char *agent, hg_error_t *err)
{
        if (podview_annotation(view, SHAPE_ANNOTATION_DEFAULT_CONTAINER))
                return 0;
        return patch_set_member(p, "/metadata", "annotations", SHAPE_ANNOTATION_DEFAULT_CONTAINER,
                                json_string(agent), err);
}

/* Under gVisor, the shim mounts hangar's volumes as GKE Sandbox does: inside
 * the sandbox, shared at pod level (hangar-ctl in the sandbox's memory, never
 * a host file the gofer serves). A pod's own values for these keys are
 * replaced: the volumes are hangar's. */
static int annotate_gvisor_mounts(const webhook_settings_t *cfg, patch_t *p, hg_error_t *err)
{
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                if (!shape_volume_hinted(&cfg->sidecar, v))
                        continue;
                for (unsigned i = 0; i < SHAPE_GVISOR_ANNOTATIONS; i++) {
                        const char *key;
                        char value[96];
                        if (shape_gvisor_annotation(&cfg->sidecar, v, i, &key, value,
                                                    sizeof(value)) < 0)
                                return error_set(err, -EINVAL,
                                                 "volumes.ctl.sizeLimit '%s' has no "
                                                 "size in bytes",
                                                 cfg->sidecar.ctl_size_limit);
                        json_t *annotations =
                            json_object_get(json_object_get(p->doc, "metadata"), "annotations");
                        const char *have = podview_string(annotations, key);
                        if (have && strcmp(have, value) == 0)
                                continue;
                        int r = patch_set_member(p, "/metadata", "annotations", key,
                                                 json_string(value), err);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* q as the API server would write it: CPU in whole millicores, anything
 * else in whole units, rounded up; a sum a few ulps off a whole number
 * (0.1 + 0.05 CPU) is that number. */
static int quantity_text(long double q, bool cpu, char *out, size_t size)
{
        long double units = cpu ? q * 1000.0L : q;
        if (!(units >= 0 && units < 1e18L))
                return -ERANGE;
        unsigned long long whole = (unsigned long long)(units + 0.5L);
        long double off = units - (long double)whole;
        long double tolerance = units > 1 ? units * 1e-15L : 1e-15L;
        if (off > tolerance)
                whole++; /* a real fraction above: the ceiling */
        int w = snprintf(out, size, cpu ? "%llum" : "%llu", whole);
        return w < 0 || (size_t)w >= size ? -ERANGE : 0;
}

/* The driver's request and limit ("" for none) of cpu and memory, as
 * configured (driver.resources). */
typedef struct driver_amount {
        const char *resource, *request, *limit;
} driver_amount_t;

static void driver_amounts(const hg_config_t *sc, driver_amount_t ret[2])
{
        ret[0] = (driver_amount_t){"cpu", sc->driver_cpu_request, sc->driver_cpu_limit};
        ret[1] = (driver_amount_t){"memory", sc->driver_memory_request, sc->driver_memory_limit};
}

/* A pod with pod-level resources (spec.resources) budgets its containers:
 * the API server refuses it if their requests add up to more than the
 * pod's. The driver's requests (and limits, or requests where it has none:
 * limit_driver then holds it to them) are added to each amount the pod
 * sets for that resource, so the user's containers keep the budget they
 * had. */
static int make_room_for_driver(const webhook_settings_t *cfg, patch_t *p, const pod_view_t *view,
                                mutate_result_t *ret, hg_error_t *err)
{
        json_t *resources = json_object_get(view->spec, "resources");
        if (!json_is_object(resources))
                return 0;
        driver_amount_t amounts[2];
        driver_amounts(&cfg->sidecar, amounts);
        const struct {
                const char *kind, *resource, *amount;
        } driver[] = {
            {"requests", "cpu", amounts[0].request},
            {"requests", "memory", amounts[1].request},
            {"limits", "cpu", amounts[0].limit[0] ? amounts[0].limit : amounts[0].request},
            {"limits", "memory", amounts[1].limit[0] ? amounts[1].limit : amounts[1].request},
        };
        for (size_t i = 0; i < ARRAY_SIZE(driver); i++) {
                json_t *have =
                    json_object_get(json_object_get(resources, driver[i].kind), driver[i].resource);
                long double pod_amount, driver_amount;
                if (!have || json_is_null(have) || !driver[i].amount[0])
                        continue;
                /* A number is a quantity too (`cpu: 2` in YAML; the API
                 * server reads it and writes it back as a string). */
                if (json_is_number(have) && json_number_value(have) >= 0)
                        pod_amount = json_number_value(have);
                else if (!json_is_string(have) ||
                         k8s_quantity_value(json_string_value(have), &pod_amount) < 0) {
                        mutate_result_set(ret, REASON_INVALID_POD,
                                          "invalid pod: spec.resources.%s.%s is not a quantity",
                                          driver[i].kind, driver[i].resource);
                        return 1;
                }
                if (k8s_quantity_value(driver[i].amount, &driver_amount) < 0)
                        return error_set(err, -EINVAL, "driver quantity '%s' has no value",
                                         driver[i].amount);
                char text[32];
                if (quantity_text(pod_amount + driver_amount,
                                  strcmp(driver[i].resource, "cpu") == 0, text, sizeof(text)) < 0) {
                        mutate_result_set(ret, REASON_INVALID_POD,
                                          "invalid pod: spec.resources.%s.%s is out of range",
                                          driver[i].kind, driver[i].resource);
                        return 1;
                }
                int r = patch_set_member(p, "/spec/resources", driver[i].kind, driver[i].resource,
                                         json_string(text), err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static bool has_amount(json_t *resources, const char *kind, const char *resource)
{
        json_t *q = json_object_get(json_object_get(resources, kind), resource);
        return q && !json_is_null(q);
}

/* Whether the pod limits resource in each of its containers and init
 * containers (the driver, already appended to its list, aside). */
static bool every_container_limits(const pod_view_t *view, const char *resource)
{
        static const podview_list_t lists[] = {PODVIEW_INIT, PODVIEW_CONTAINERS};
        for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
                size_t i;
                json_t *c;
                json_array_foreach (view->lists[lists[l]], i, c) {
                        const char *name = json_string_value(json_object_get(c, "name"));
                        if (strcmp(name, SHAPE_DRIVER_CONTAINER) != 0 &&
                            !has_amount(json_object_get(c, "resources"), "limits", resource))
                                return false;
                }
        }
        return true;
}

/* A driver with no limit for a resource the pod limits everywhere is what
 * a namespace's policies refuse or fill in against the pod: the API server
 * reruns LimitRanger after the webhook, which gives an unlimited driver the
 * LimitRange's default limit (above a pod-level limit, the API server then
 * refuses the pod; against the driver's small request, a
 * maxLimitRequestRatio refuses it), and a ResourceQuota on limits.cpu or
 * limits.memory refuses a pod with any container unlimited (a namespace
 * whose pods all set limits because of one). So for cpu and memory where
 * driver.resources.limits sets nothing and the pod has a pod-level limit,
 * or a limit on each of its containers, the driver is held to its request
 * (the amount make_room_for_driver added to a pod-level limit): ratio 1,
 * within any maximum its request is, and a pod whose containers all have
 * requests equal to limits keeps its Guaranteed QoS class. */
static int limit_driver(const webhook_settings_t *cfg, patch_t *p, const pod_view_t *view,
                        hg_error_t *err)
{
        const char *list = shape_driver_list(&cfg->sidecar);
        json_t *containers = json_object_get(json_object_get(p->doc, "spec"), list);
        size_t n = json_array_size(containers);
        if (n == 0)
                return error_set(err, -EINVAL, "no %s in spec.%s", SHAPE_DRIVER_CONTAINER, list);
        driver_amount_t amounts[2];
        driver_amounts(&cfg->sidecar, amounts);
        json_t *pod_level = json_object_get(view->spec, "resources");
        /* The driver's resources object is the shape's, shared by every
         * pod the server injects (shape_values_t): never changed in place.
         * A copy with the limits replaces it, in one op. */
        _cleanup_json_ json_t *resources = NULL;
        for (size_t i = 0; i < ARRAY_SIZE(amounts); i++) {
                long double request;
                if (amounts[i].limit[0] || k8s_quantity_value(amounts[i].request, &request) < 0 ||
                    request <= 0)
                        continue; /* limited already, or no request to hold it to */
                if (!has_amount(pod_level, "limits", amounts[i].resource) &&
                    !every_container_limits(view, amounts[i].resource))
                        continue;
                if (!resources) {
                        json_t *shape =
                            json_object_get(json_array_get(containers, n - 1), "resources");
                        resources = json_deep_copy(shape);
                        if (!resources)
                                return -ENOMEM;
                }
                json_t *limits = json_object_get(resources, "limits");
                if (!limits && json_object_set_new(resources, "limits", limits = json_object()) < 0)
                        return -ENOMEM;
                if (json_object_set_new(limits, amounts[i].resource,
                                        json_string(amounts[i].request)) < 0)
                        return -ENOMEM;
        }
        if (!resources)
                return 0;
        char path[64];
        (void)snprintf(path, sizeof(path), "/spec/%s/%zu/resources", list, n - 1);
        return patch_add(p, path, TAKE_PTR(resources), err);
}

static int inject(const webhook_settings_t *cfg, const shape_values_t *values, patch_t *p,
                  const pod_view_t *view, json_t *agent, size_t agent_index, hg_error_t *err)
{
        int r;
        /* The ServiceAccount plugin ran before us: its token mount in the
         * agent goes when the admin asks (the driver gets none). */
        if (sidecarpatch_removes_agent_token(cfg)) {
                r = sidecarpatch_remove_token_mounts(p, view, PODVIEW_CONTAINERS, agent_index,
                                                     false, err);
                if (r < 0)
                        return r;
        }
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                if (!values->volume[v])
                        continue; /* not used (hangar-bin where nothing is delivered) */
                r = patch_append_known(p, "/spec", "volumes", json_incref(values->volume[v]),
                                       values->volume_text[v], err);
                if (r < 0)
                        return r;
        }
        char agent_path[64];
        (void)snprintf(agent_path, sizeof(agent_path), "/spec/containers/%zu", agent_index);
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                if (!values->agent_mount[v])
                        continue;
                r = patch_append_known(p, agent_path, "volumeMounts",
                                       json_incref(values->agent_mount[v]),
                                       values->agent_mount_text[v], err);
                if (r < 0)
                        return r;
        }
        const char *image = json_string_value(json_object_get(agent, "image"));
        /* Allocated at about its final size (strbuf has no reserve; this is
         * the empty buffer it would grow to), not grown from 64 bytes. */
        size_t usual = strlen(values->driver_rest_text) + 2 * strlen(image) + 64;
        _cleanup_strbuf_ strbuf_t driver_text = {.data = malloc(usual), .cap = usual};
        if (!driver_text.data)
                return -ENOMEM;
        driver_text.data[0] = '\0';
        /* The bundle's copy first: an init container, it has ended before
         * the driver starts, a native sidecar (later in the same list)
         * included. */
        if (values->bin_container) {
                r = patch_append_known(p, "/spec", "initContainers",
                                       json_incref(values->bin_container),
                                       values->bin_container_text, err);
                if (r < 0)
                        return r;
        }
        json_t *driver = shape_values_driver(values, image, &driver_text);
        r = patch_append_known(p, "/spec", shape_driver_list(&cfg->sidecar), driver,
                               driver_text.data, err);
        if (r < 0)
                return r;
        if (podview_runs_under_gvisor(&cfg->sidecar, view->spec)) {
                r = annotate_gvisor_mounts(cfg, p, err);
                if (r < 0)
                        return r;
        }
        /* Each container keeps its own PID namespace: the agent can't see,
         * signal or trace the driver. Overrides whatever the pod asked for. */
        json_t *share = json_object_get(view->spec, "shareProcessNamespace");
        if (!json_is_false(share))
                r = patch_add(p, "/spec/shareProcessNamespace", json_false(), err);
        return r;
}

int sidecarpatch_inject(const webhook_settings_t *cfg, const shape_values_t *values, patch_t *p,
                        const pod_view_t *view, const char *agent_name, json_t *agent,
                        size_t agent_index, mutate_result_t *ret, hg_error_t *err)
{
        int r = sidecarpatch_annotate(p, ret, err);
        if (r == 0)
                r = default_to_agent(p, view, agent_name, err);
        if (r == 0)
                r = inject(cfg, values, p, view, agent, agent_index, err);
        /* 1: the pod's budget is no quantity, ret says so (a deny: no patch). */
        if (r == 0)
                r = make_room_for_driver(cfg, p, view, ret, err);
        if (r == 0)
                r = limit_driver(cfg, p, view, err);
        return r;
}
