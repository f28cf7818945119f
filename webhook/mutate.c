#include "mutate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "k8sname.h"
#include "patch.h"
#include "pathnorm.h"
#include "podview.h"
#include "shape.h"
#include "shapecheck.h"
#include "strbuf.h"

static const struct {
        const char *name;
        mutate_decision_t decision;
        bool warns; /* answered with an admission warning */
} reasons[REASON_COUNT] = {
    [REASON_INTERNAL_ERROR] = {"internal-error", DECISION_DENY, false},
    [REASON_INJECTED] = {"injected", DECISION_INJECT, false},
    [REASON_NOT_POD] = {"not-pod", DECISION_SKIP, false},
    [REASON_NOT_CREATE] = {"not-create", DECISION_SKIP, false},
    [REASON_SUBRESOURCE] = {"subresource", DECISION_SKIP, false},
    [REASON_INJECTION_DISABLED] = {"injection-disabled", DECISION_SKIP, false},
    [REASON_NOT_SELECTED] = {"not-selected", DECISION_SKIP, false},
    [REASON_ALREADY_INJECTED] = {"already-injected", DECISION_SKIP, false},
    [REASON_PRIVILEGED] = {"privileged-container", DECISION_SKIP, true},
    [REASON_HOST_PID] = {"host-pid", DECISION_SKIP, true},
    [REASON_HOST_NETWORK] = {"host-network", DECISION_SKIP, true},
    [REASON_HOST_IPC] = {"host-ipc", DECISION_SKIP, true},
    [REASON_CONFLICT] = {"conflict", DECISION_DENY, false},
    [REASON_NO_AGENT_CONTAINER] = {"no-agent-container", DECISION_DENY, false},
    [REASON_INVALID_POD] = {"invalid-pod", DECISION_DENY, false},
    [REASON_NOT_GUARDED] = {"not-guarded", DECISION_ALLOW, false},
    [REASON_LISTED_IDENTITY] = {"listed-identity", DECISION_ALLOW, false},
    [REASON_DRIVER_EXEC] = {"driver-exec", DECISION_DENY, false},
    [REASON_PORT_FORWARD] = {"port-forward", DECISION_DENY, false},
    [REASON_POD_UNKNOWN] = {"pod-unknown", DECISION_DENY, false},
    [REASON_EPHEMERAL_CONTAINER] = {"ephemeral-container", DECISION_DENY, false},
    [REASON_DRIVER_CHANGED] = {"driver-changed", DECISION_DENY, false},
    [REASON_HANGAR_METADATA] = {"hangar-metadata", DECISION_DENY, false},
    [REASON_UNKNOWN_DOOR] = {"unknown-door", DECISION_DENY, false},
};

const char *mutate_reason_name(mutate_reason_t reason)
{
        return (unsigned)reason < REASON_COUNT ? reasons[reason].name : "internal-error";
}

bool mutate_reason_warns(mutate_reason_t reason)
{
        return (unsigned)reason < REASON_COUNT && reasons[reason].warns;
}

mutate_decision_t mutate_reason_decision(mutate_reason_t reason)
{
        return (unsigned)reason < REASON_COUNT ? reasons[reason].decision : DECISION_DENY;
}

const char *mutate_decision_name(mutate_decision_t decision)
{
        switch (decision) {
        case DECISION_INJECT:
                return "injected";
        case DECISION_SKIP:
                return "skipped";
        case DECISION_ALLOW:
                return "allowed";
        case DECISION_DENY:
                return "denied";
        case DECISION_WARNED:
                return "warned";
        case DECISION_AUDITED:
                return "audited";
        default:
                return "denied";
        }
}

void mutate_result_set(mutate_result_t *ret, mutate_reason_t reason, const char *fmt, ...)
{
        ret->reason = reason;
        ret->decision = mutate_reason_decision(reason);
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(ret->detail, sizeof(ret->detail), fmt, ap);
        va_end(ap);
        /* A long name cut mid-character would make the answer invalid JSON. */
        utf8_trim_incomplete(ret->detail);
}

void mutate_result_free(mutate_result_t *r)
{
        free(r->patch);
        r->patch = NULL;
}

/* The label that selects the pod: its value (selector.operator In), or
 * its presence with any value (Exists: agent-sandbox marks every pod it
 * makes with agents.x-k8s.io/sandbox-name-hash, one value per Sandbox). */
static bool is_selected(const webhook_settings_t *cfg, json_t *pod)
{
        const char *value;
        json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
        if (jsonx_string(labels, cfg->selector_key, &value) < 0)
                return false;
        return settings_selects_any_value(cfg) || strcmp(value, cfg->selector_value) == 0;
}

static int find_privileged(json_t *c, const char *name, podview_list_t list, void *ctx)
{
        bool privileged = false;
        if (jsonx_bool(json_object_get(c, "securityContext"), "privileged", &privileged) == 0 &&
            privileged) {
                *(const char **)ctx = name;
                return 1;
        }
        return 0;
}

typedef struct conflict_ctx {
        const webhook_settings_t *cfg;
        const char *agent; /* the agent's container name */
        hg_error_t *err;
} conflict_ctx_t;

static int find_conflicting_mount(json_t *c, const char *cname, podview_list_t list, void *ctx)
{
        conflict_ctx_t *cc = ctx;
        bool is_agent = list == PODVIEW_CONTAINERS && strcmp(cname, cc->agent) == 0;
        size_t i;
        json_t *m;
        json_array_foreach (json_object_get(c, "volumeMounts"), i, m) {
                const char *name = json_string_value(json_object_get(m, "name"));
                const char *path = json_string_value(json_object_get(m, "mountPath"));
                for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                        if (!shape_volume_used(&cc->cfg->sidecar, v))
                                continue;
                        if (strcmp(name, shape_volume_name(v)) == 0)
                                return error_set(cc->err, -EEXIST,
                                                 "container \"%s\" already mounts volume \"%s\", "
                                                 "which hangar reserves for the driver sidecar",
                                                 cname, name);
                        /* Fits: podview_read refused any path that does not. */
                        if (is_agent &&
                            pathnorm_within(path, shape_volume_path(&cc->cfg->sidecar, v)) != 0)
                                return error_set(cc->err, -EEXIST,
                                                 "agent container \"%s\" already mounts \"%s\" at "
                                                 "%s, which hangar reserves for %s",
                                                 cname, name, path, shape_volume_name(v));
                }
        }
        return 0;
}

static int find_targeting_driver(json_t *c, const char *name, podview_list_t list, void *ctx)
{
        const char *target;
        return jsonx_string(c, "targetContainerName", &target) == 0 &&
               strcmp(target, SHAPE_DRIVER_CONTAINER) == 0;
}

/* Anything of ours in a pod we did not inject is a clash: denied, with what. */
static int check_conflicts(const webhook_settings_t *cfg, const pod_view_t *view, const char *agent,
                           hg_error_t *err)
{
        size_t i;
        json_t *vol;
        json_array_foreach (view->volumes, i, vol) {
                const char *name = json_string_value(json_object_get(vol, "name"));
                for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                        if (shape_volume_used(&cfg->sidecar, v) &&
                            strcmp(name, shape_volume_name(v)) == 0)
                                return error_set(err, -EEXIST,
                                                 "the pod already has a volume named \"%s\", "
                                                 "which hangar reserves for the driver sidecar",
                                                 name);
        }
        if (podview_has_container(view, SHAPE_DRIVER_CONTAINER))
                return error_set(err, -EEXIST,
                                 "the pod already has a container named \"%s\" that hangar did not "
                                 "inject",
                                 SHAPE_DRIVER_CONTAINER);
        if (shape_delivers_binaries(&cfg->sidecar) &&
            podview_has_container(view, SHAPE_BIN_CONTAINER))
                return error_set(err, -EEXIST,
                                 "the pod already has a container named \"%s\", which hangar "
                                 "reserves for the init container that delivers its binaries",
                                 SHAPE_BIN_CONTAINER);
        if (podview_for_each_container(view, find_targeting_driver, NULL))
                return error_set(err, -EEXIST,
                                 "a container of the pod targets \"%s\", which hangar reserves "
                                 "for the driver sidecar",
                                 SHAPE_DRIVER_CONTAINER);
        conflict_ctx_t ctx = {cfg, agent, err};
        return podview_for_each_container(view, find_conflicting_mount, &ctx) ? -EEXIST : 0;
}

/* Removes container index's mounts of the service-account token (every
 * one shapecheck_is_token_mount names, or for plugin_only only the mount
 * the ServiceAccount admission plugin adds), from the last to the first so
 * each op's index is the element as the array is then. */
static int remove_token_mounts(patch_t *p, const pod_view_t *view, podview_list_t list,
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

static bool remove_agent_token(const webhook_settings_t *cfg)
{
        return strcmp(cfg->sidecar.agent_service_account_token, CONFIG_TOKEN_REMOVE) == 0;
}

/* A pod marked injected (a reinvocation, or a pod made from an injected
 * template) keeps its sidecar only while the spec check finds it in shape:
 * a forged annotation, or another webhook run since, must not have changed
 * the driver, given any container a way into hangar-ctl or a writable
 * hangar-home, or turned on what the webhook skips pods for. Before
 * judging, it puts back what the API server's own plugins redo on a
 * reinvocation: a shared PID namespace turned on by another webhook is
 * turned off, the ServiceAccount plugin's token mount is taken out of the
 * driver (which needs no API access: hangar execs into it), and out of the
 * agent when agentServiceAccountToken is remove. */
static int decide_already_injected(const webhook_settings_t *cfg, const pod_view_t *view,
                                   patch_t *p, mutate_result_t *ret)
{
        hg_error_t err = {0};
        size_t i;
        json_t *c;
        int r = 0;
        podview_list_t driver_list =
            cfg->sidecar.driver_native_sidecar ? PODVIEW_INIT : PODVIEW_CONTAINERS;
        json_array_foreach (view->lists[driver_list], i, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                if (strcmp(name, SHAPE_DRIVER_CONTAINER) == 0)
                        r = remove_token_mounts(p, view, driver_list, i, true, &err);
                if (r < 0)
                        return r;
        }
        /* The bundle's copier, an init container, gets the plugin's mount
         * as well; it needs no API access either. */
        if (shape_copies_binaries(&cfg->sidecar))
                json_array_foreach (view->lists[PODVIEW_INIT], i, c) {
                        const char *name = json_string_value(json_object_get(c, "name"));
                        if (strcmp(name, SHAPE_BIN_CONTAINER) == 0)
                                r = remove_token_mounts(p, view, PODVIEW_INIT, i, true, &err);
                        if (r < 0)
                                return r;
                }
        /* NULL: the pod names no agent (the spec check below denies it). */
        const char *agent = shape_agent_name(&cfg->sidecar, p->doc);
        json_array_foreach (view->lists[PODVIEW_CONTAINERS], i, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                if (agent && strcmp(name, agent) == 0 && remove_agent_token(cfg))
                        r = remove_token_mounts(p, view, PODVIEW_CONTAINERS, i, false, &err);
                if (r < 0)
                        return r;
        }
        size_t token_ops = p->n_ops;
        /* Another webhook may have shared the PID namespace since: undone. */
        if (json_is_true(json_object_get(view->spec, "shareProcessNamespace"))) {
                r = patch_add(p, "/spec/shareProcessNamespace", json_false(), &err);
                if (r < 0)
                        return r;
        }
        shapecheck_finding_t finding;
        r = shapecheck_sidecar(&cfg->sidecar, p->doc, &finding);
        if (r < 0)
                return r;
        if (r > 0) {
                mutate_result_set(ret, REASON_CONFLICT, "the pod is marked %s: %s, but %s (%s)",
                                  SHAPE_ANNOTATION_STATUS, SHAPE_STATUS_INJECTED, finding.detail,
                                  finding.code);
                return 0;
        }
        mutate_result_set(ret, REASON_ALREADY_INJECTED, "the pod already has %s%s%s",
                          SHAPE_DRIVER_CONTAINER,
                          token_ops ? "; the service-account token's mounts taken out again" : "",
                          p->n_ops > token_ops ? "; shareProcessNamespace set back to false" : "");
        return 0;
}

/* Records the decision on the pod, leaving annotations that already say it
 * alone, so a reinvocation of a skipped pod emits no operation at all. */
static int annotate(patch_t *p, mutate_result_t *ret, hg_error_t *err)
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
        if (remove_agent_token(cfg)) {
                r = remove_token_mounts(p, view, PODVIEW_CONTAINERS, agent_index, false, err);
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

/* Runs the decision; on success the patch (if any) is in p. */
static int decide(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
                  patch_t *p, mutate_result_t *ret)
{
        hg_error_t err = {0};
        if (!cfg->driver_sidecar) {
                mutate_result_set(ret, REASON_INJECTION_DISABLED,
                                  "driver sidecar injection is off (HANGAR_K8S_DRIVER_SIDECAR)");
                return 0;
        }
        if (!is_selected(cfg, pod)) {
                if (settings_selects_any_value(cfg))
                        mutate_result_set(ret, REASON_NOT_SELECTED, "pod lacks label %s",
                                          cfg->selector_key);
                else
                        mutate_result_set(ret, REASON_NOT_SELECTED, "pod lacks label %s=%s",
                                          cfg->selector_key, cfg->selector_value);
                return 0;
        }
        pod_view_t view;
        int r = podview_read(pod, &view, &err);
        if (r == -ENOMEM)
                return r; /* not the pod's fault: an internal error */
        if (r < 0) {
                mutate_result_set(ret, REASON_INVALID_POD, "invalid pod: %s", err.message);
                return 0;
        }
        const char *status = podview_annotation(&view, SHAPE_ANNOTATION_STATUS);
        if (status && strcmp(status, SHAPE_STATUS_INJECTED) == 0 &&
            podview_has_container(&view, SHAPE_DRIVER_CONTAINER))
                return decide_already_injected(cfg, &view, p, ret);

        const char *os = NULL;
        if (jsonx_string(json_object_get(view.spec, "os"), "name", &os) == 0 &&
            strcmp(os, "linux") != 0) {
                mutate_result_set(ret, REASON_INVALID_POD,
                                  "invalid pod: spec.os.name is \"%s\", and the driver sidecar "
                                  "runs only in Linux pods (the API server refuses its security "
                                  "context in any other)",
                                  os);
                return 0;
        }
        const char *privileged = NULL;
        if (podview_for_each_container(&view, find_privileged, &privileged))
                mutate_result_set(ret, REASON_PRIVILEGED,
                                  "container \"%s\" is privileged: a heavy pod gains nothing from "
                                  "the uid split",
                                  privileged);
        else if (json_is_true(json_object_get(view.spec, "hostPID")))
                mutate_result_set(ret, REASON_HOST_PID,
                                  "the pod shares the node's PID namespace (hostPID), so no "
                                  "container's processes are private");
        else if (json_is_true(json_object_get(view.spec, "hostNetwork")))
                mutate_result_set(ret, REASON_HOST_NETWORK,
                                  "the pod shares the node's network namespace (hostNetwork), so "
                                  "the driver's loopback listener would be the node's");
        else if (json_is_true(json_object_get(view.spec, "hostIPC")))
                mutate_result_set(ret, REASON_HOST_IPC,
                                  "the pod shares the node's IPC namespace (hostIPC), so its "
                                  "shared memory and message queues are the node's");
        if (ret->decision == DECISION_SKIP)
                return annotate(p, ret, &err);

        char why[ERROR_MESSAGE_MAX];
        const char *problem = shape_agent_problem(&cfg->sidecar, pod, why, sizeof(why));
        if (problem) {
                mutate_result_set(ret, REASON_NO_AGENT_CONTAINER, "%s", problem);
                return 0;
        }
        const char *agent_name = shape_agent_name(&cfg->sidecar, pod);
        size_t agent_index = 0;
        json_t *agent = podview_agent(&view, agent_name, &agent_index);
        const char *image;
        if (!agent)
                return -EINVAL; /* shape_agent_problem found it */
        if (jsonx_string(agent, "image", &image) < 0 || !image[0]) {
                mutate_result_set(ret, REASON_INVALID_POD,
                                  "invalid pod: agent container \"%s\" has no image", agent_name);
                return 0;
        }
        /* Such a pod would send a plain kubectl exec to the driver, which
         * the guard refuses to everyone but hangar. */
        const char *dflt = podview_annotation(&view, SHAPE_ANNOTATION_DEFAULT_CONTAINER);
        if (dflt && strcmp(dflt, SHAPE_DRIVER_CONTAINER) == 0) {
                mutate_result_set(ret, REASON_CONFLICT,
                                  "annotation %s names \"%s\", the driver sidecar only hangar "
                                  "may exec into; name the agent's container or leave it out",
                                  SHAPE_ANNOTATION_DEFAULT_CONTAINER, SHAPE_DRIVER_CONTAINER);
                return 0;
        }
        if (check_conflicts(cfg, &view, agent_name, &err) < 0) {
                mutate_result_set(ret, REASON_CONFLICT, "%s", err.message);
                return 0;
        }
        /* What the pod brings for hangar's volumes, the driver's sandbox or
         * its AppArmor profile would hold for the pod's life (the guard
         * fixes dev.gvisor.* after CREATE): refused, as a volume of ours is. */
        shapecheck_finding_t finding;
        if (shapecheck_annotations(&cfg->sidecar, pod, &finding) > 0) {
                mutate_result_set(ret, REASON_CONFLICT, "%s", finding.detail);
                return 0;
        }

        mutate_result_set(ret, REASON_INJECTED, "injected %s", SHAPE_DRIVER_CONTAINER);
        r = annotate(p, ret, &err);
        if (r == 0)
                r = default_to_agent(p, &view, agent_name, &err);
        if (r == 0)
                r = inject(cfg, values, p, &view, agent, agent_index, &err);
        /* 1: the pod's budget is no quantity, ret says so (a deny: no patch). */
        if (r == 0)
                r = make_room_for_driver(cfg, p, &view, ret, &err);
        if (r == 0)
                r = limit_driver(cfg, p, &view, &err);
        return r < 0 ? r : 0;
}

int mutate_pod_with(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
                    mutate_result_t *ret)
{
        memset(ret, 0, sizeof(*ret));
        patch_t p;
        if (patch_init(&p, pod) < 0)
                goto fail;
        int r = decide(cfg, values, pod, &p, ret);
        if (r < 0) {
                patch_free(&p);
                goto fail;
        }
        /* A deny carries no patch, whatever was emitted before deciding. */
        ret->patch = ret->decision == DECISION_DENY ? NULL : patch_take_ops(&p);
        patch_free(&p);
        return 0;
fail:
        /* Never a partial patch: an internal failure is a deny with no ops. */
        mutate_result_set(ret, REASON_INTERNAL_ERROR, "internal error while building the patch");
        return -ENOMEM;
}

int mutate_pod(const webhook_settings_t *cfg, json_t *pod, mutate_result_t *ret)
{
        shape_values_t *values = NULL;
        if (shape_values_new(&cfg->sidecar, &values) < 0) {
                memset(ret, 0, sizeof(*ret));
                mutate_result_set(ret, REASON_INTERNAL_ERROR,
                                  "internal error while building the patch");
                return -ENOMEM;
        }
        int r = mutate_pod_with(cfg, values, pod, ret);
        shape_values_free(values);
        return r;
}
