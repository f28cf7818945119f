#include "mutate.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "patch.h"
#include "pathnorm.h"
#include "podview.h"
#include "shape.h"
#include "shapecheck.h"
#include "sidecarpatch.h"

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
                        r = sidecarpatch_remove_token_mounts(p, view, driver_list, i, true, &err);
                if (r < 0)
                        return r;
        }
        /* The bundle's copier, an init container, gets the plugin's mount
         * as well; it needs no API access either. */
        if (shape_copies_binaries(&cfg->sidecar))
                json_array_foreach (view->lists[PODVIEW_INIT], i, c) {
                        const char *name = json_string_value(json_object_get(c, "name"));
                        if (strcmp(name, SHAPE_BIN_CONTAINER) == 0)
                                r = sidecarpatch_remove_token_mounts(p, view, PODVIEW_INIT, i, true,
                                                                     &err);
                        if (r < 0)
                                return r;
                }
        /* NULL: the pod names no agent (the spec check below denies it). */
        const char *agent = shape_agent_name(&cfg->sidecar, p->doc);
        json_array_foreach (view->lists[PODVIEW_CONTAINERS], i, c) {
                const char *name = json_string_value(json_object_get(c, "name"));
                if (agent && strcmp(name, agent) == 0 && sidecarpatch_removes_agent_token(cfg))
                        r = sidecarpatch_remove_token_mounts(p, view, PODVIEW_CONTAINERS, i, false,
                                                             &err);
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
                return sidecarpatch_annotate(p, ret, &err);

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
        r = sidecarpatch_inject(cfg, values, p, &view, agent_name, agent, agent_index, ret, &err);
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
