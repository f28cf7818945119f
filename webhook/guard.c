#include "guard.h"

#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "shape.h"
#include "shapecheck.h"

/* Every list a container can be in: the driver is in containers (or in
 * initContainers as a native sidecar), ephemeral containers are added later. */
static const char *const container_lists[] = {"containers", "initContainers",
                                              "ephemeralContainers"};

static json_t *pod_spec(json_t *pod)
{
        return json_object_get(pod, "spec");
}

static const char *string_member(json_t *obj, const char *key)
{
        const char *v = NULL;
        return jsonx_string(obj, key, &v) == 0 ? v : NULL;
}

static bool same_string(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The container called name in the pod's regular or init containers. */
static json_t *find_container(json_t *pod, const char *name)
{
        for (size_t l = 0; l < 2; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(pod_spec(pod), container_lists[l]), i, c) {
                        const char *n = string_member(c, "name");
                        if (n && strcmp(n, name) == 0)
                                return c;
                }
        }
        return NULL;
}

/* The volume called name in the pod's spec.volumes, or NULL. */
static json_t *find_volume(json_t *pod, const char *name)
{
        size_t i;
        json_t *v;
        json_array_foreach (json_object_get(pod_spec(pod), "volumes"), i, v) {
                const char *n = string_member(v, "name");
                if (n && strcmp(n, name) == 0)
                        return v;
        }
        return NULL;
}

bool guard_pod_is_injected(json_t *pod)
{
        json_t *annotations = json_object_get(json_object_get(pod, "metadata"), "annotations");
        return same_string(string_member(annotations, SHAPE_ANNOTATION_STATUS),
                           SHAPE_STATUS_INJECTED) ||
               find_container(pod, SHAPE_DRIVER_CONTAINER) != NULL;
}

bool guard_needs_pod(const char *operation, const char *subresource)
{
        return same_string(operation, "CONNECT") && same_string(subresource, "portforward");
}

static bool in_list(const strlist_t *l, const char *s)
{
        for (size_t i = 0; s && i < l->n; i++)
                if (strcmp(l->items[i], s) == 0)
                        return true;
        return false;
}

/* Is the requester one of the identities the admin named (guard.*)? */
static bool is_listed(const webhook_settings_t *cfg, const guard_request_t *req)
{
        if (in_list(&cfg->guard_driver_users, req->username))
                return true;
        size_t i;
        json_t *g;
        json_array_foreach (req->groups, i, g)
                if (in_list(&cfg->guard_driver_groups, json_string_value(g)))
                        return true;
        return false;
}

static const char *who(const guard_request_t *req)
{
        return req->username && req->username[0] ? req->username : "an unnamed user";
}

/* CONNECT exec and attach name their container in the options object. An
 * empty name is left to the API server, which refuses it for any pod with
 * more than one container, as every injected pod is. */
static void decide_exec(const webhook_settings_t *cfg, const guard_request_t *req,
                        mutate_result_t *ret)
{
        /* The options are the API server's own (PodExecOptions,
         * PodAttachOptions): a review without them, or with a container that
         * is not a name, is not one it sends, and is not guessed at. */
        json_t *named = json_object_get(req->object, "container");
        if (!json_is_object(req->object) || (named && !json_is_string(named))) {
                mutate_result_set(ret, REASON_INVALID_POD,
                                  "invalid review: a CONNECT pods/%s needs its options object, "
                                  "with container a string when present",
                                  req->subresource);
                return;
        }
        const char *container = json_string_value(named);
        if (!container || strcmp(container, SHAPE_DRIVER_CONTAINER) != 0) {
                mutate_result_set(ret, REASON_NOT_GUARDED, "%s into container \"%s\"",
                                  req->subresource, container ? container : "");
                return;
        }
        if (is_listed(cfg, req)) {
                mutate_result_set(ret, REASON_LISTED_IDENTITY, "%s into %s by listed identity %s",
                                  req->subresource, SHAPE_DRIVER_CONTAINER, who(req));
                return;
        }
        mutate_result_set(ret, REASON_DRIVER_EXEC,
                          "%s into %s is reserved for the identities in guard.driverUsers and "
                          "guard.driverGroups; %s is not one of them",
                          req->subresource, SHAPE_DRIVER_CONTAINER, who(req));
}

/* A port-forward reaches the pod's loopback, where the driver listens. */
static void decide_port_forward(const webhook_settings_t *cfg, const guard_request_t *req,
                                mutate_result_t *ret)
{
        if (!req->pod) {
                mutate_result_set(ret, REASON_POD_UNKNOWN,
                                  "port-forward refused: cannot tell whether the pod carries "
                                  "hangar's sidecar (%s)",
                                  req->pod_error ? req->pod_error : "the pod was not read");
                return;
        }
        if (!guard_pod_is_injected(req->pod)) {
                mutate_result_set(ret, REASON_NOT_GUARDED, "port-forward to a pod without %s",
                                  SHAPE_DRIVER_CONTAINER);
                return;
        }
        if (is_listed(cfg, req)) {
                mutate_result_set(ret, REASON_LISTED_IDENTITY,
                                  "port-forward to an injected pod by listed identity %s",
                                  who(req));
                return;
        }
        mutate_result_set(ret, REASON_PORT_FORWARD,
                          "port-forward to a pod with %s reaches its loopback, where the driver "
                          "listens; it is reserved for the identities in guard.driverUsers and "
                          "guard.driverGroups, and %s is not one of them",
                          SHAPE_DRIVER_CONTAINER, who(req));
}

/* Whether pod already holds exactly c (same name, every member equal). */
static bool had_ephemeral(json_t *pod, json_t *c)
{
        const char *name = string_member(c, "name");
        size_t i;
        json_t *o;
        json_array_foreach (json_object_get(pod_spec(pod), "ephemeralContainers"), i, o)
                if (name && same_string(string_member(o, "name"), name))
                        return json_equal(o, c);
        return false;
}

/* The uid a container runs as when the spec says it: its own runAsUser,
 * else the pod's. -1 when neither says (the image's USER decides, which the
 * API server cannot see). */
static json_int_t effective_id(json_t *pod, json_t *c, const char *key)
{
        json_t *v = json_object_get(json_object_get(c, "securityContext"), key);
        if (!v)
                v = json_object_get(json_object_get(pod_spec(pod), "securityContext"), key);
        return json_is_integer(v) ? json_integer_value(v) : -1;
}

/* Whether id is the uid (key runAsUser) or gid (runAsGroup) the driver runs
 * as: the configured one, or the one the pod's own hangar-driver sets. They
 * differ for a pod injected before driver.uid or driver.gid changed, and
 * that pod's driver still runs as the old one. */
static bool is_driver_id(const webhook_settings_t *cfg, json_t *pod, const char *key, json_int_t id)
{
        json_int_t configured = strcmp(key, "runAsUser") == 0 ? (json_int_t)cfg->sidecar.driver_uid
                                                              : (json_int_t)cfg->sidecar.driver_gid;
        json_t *driver = find_container(pod, SHAPE_DRIVER_CONTAINER);
        return id == configured || (driver && id == effective_id(pod, driver, key));
}

/* Why ephemeral container c would break the split, written into why; false
 * when it keeps to the rules. */
static bool ephemeral_breaks_split(const webhook_settings_t *cfg, json_t *pod, json_t *c, char *why,
                                   size_t size)
{
        if (!json_is_object(c)) {
                (void)snprintf(why, size, "is not an object");
                return true;
        }
        if (same_string(string_member(c, "targetContainerName"), SHAPE_DRIVER_CONTAINER)) {
                (void)snprintf(why, size, "targets %s (it would join its PID namespace)",
                               SHAPE_DRIVER_CONTAINER);
                return true;
        }
        /* A volume by name, as a mount or as a block device (the API server
         * refuses an emptyDir as a device; that is its check, this is ours). */
        static const char *const uses[] = {"volumeMounts", "volumeDevices"};
        for (size_t u = 0; u < ARRAY_SIZE(uses); u++) {
                size_t i;
                json_t *m;
                json_array_foreach (json_object_get(c, uses[u]), i, m) {
                        const char *name = string_member(m, "name");
                        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                                if (same_string(name, shape_volume_name(v))) {
                                        (void)snprintf(why, size, "%s %s, which only %s may",
                                                       u == 0 ? "mounts" : "uses as a device",
                                                       shape_volume_name(v),
                                                       SHAPE_DRIVER_CONTAINER);
                                        return true;
                                }
                }
        }
        json_t *sc = json_object_get(c, "securityContext");
        if (json_is_true(json_object_get(sc, "privileged"))) {
                (void)snprintf(why, size, "is privileged");
                return true;
        }
        if (json_array_size(json_object_get(json_object_get(sc, "capabilities"), "add")) > 0) {
                (void)snprintf(why, size, "adds capabilities");
                return true;
        }
        const char *proc_mount = string_member(sc, "procMount");
        if (proc_mount && strcmp(proc_mount, "Default") != 0) {
                (void)snprintf(why, size, "asks for procMount %s", proc_mount);
                return true;
        }
        /* Without no_new_privs a setuid binary in the image makes it root,
         * with the runtime's default capabilities (NET_RAW among them: the
         * pod's loopback, where the relay's token travels, can be read). */
        if (!json_is_false(json_object_get(sc, "allowPrivilegeEscalation"))) {
                (void)snprintf(why, size,
                               "does not set securityContext.allowPrivilegeEscalation: false");
                return true;
        }
        json_int_t uid = effective_id(pod, c, "runAsUser");
        if (uid < 0) {
                (void)snprintf(why, size,
                               "sets no runAsUser (neither it nor the pod), so the image "
                               "decides, and it may be root or the driver's uid");
                return true;
        }
        if (uid == 0 || is_driver_id(cfg, pod, "runAsUser", uid)) {
                (void)snprintf(why, size, "runs as uid %lld (%s)", (long long)uid,
                               uid == 0 ? "root" : "the driver's");
                return true;
        }
        json_int_t gid = effective_id(pod, c, "runAsGroup");
        if (gid >= 0 && is_driver_id(cfg, pod, "runAsGroup", gid)) {
                (void)snprintf(why, size, "runs as the driver's gid %lld", (long long)gid);
                return true;
        }
        /* The pod's extra groups are every container's, an ephemeral one's
         * too: the driver's gid there is the driver's gid. */
        json_t *pod_sc = json_object_get(pod_spec(pod), "securityContext");
        json_t *fs_group = json_object_get(pod_sc, "fsGroup");
        bool in_group = json_is_integer(fs_group) &&
                        is_driver_id(cfg, pod, "runAsGroup", json_integer_value(fs_group));
        size_t k;
        json_t *g;
        json_array_foreach (json_object_get(pod_sc, "supplementalGroups"), k, g)
                in_group |= json_is_integer(g) &&
                            is_driver_id(cfg, pod, "runAsGroup", json_integer_value(g));
        if (in_group) {
                (void)snprintf(why, size,
                               "would be in the driver's group (the pod's fsGroup or "
                               "supplementalGroups)");
                return true;
        }
        return false;
}

/* UPDATE pods/ephemeralcontainers: each container the update adds or
 * changes. One already there, unchanged, was judged when added; the API
 * server refuses changing or removing one, and a changed one is judged
 * here as if new all the same, so that refusal is not all that holds. */
static void decide_ephemeral(const webhook_settings_t *cfg, const guard_request_t *req,
                             mutate_result_t *ret)
{
        if (!guard_pod_is_injected(req->old_object) && !guard_pod_is_injected(req->object)) {
                mutate_result_set(ret, REASON_NOT_GUARDED,
                                  "ephemeral containers of a pod without %s",
                                  SHAPE_DRIVER_CONTAINER);
                return;
        }
        json_t *list = json_object_get(pod_spec(req->object), "ephemeralContainers");
        if (list && !json_is_array(list)) {
                mutate_result_set(ret, REASON_INVALID_POD,
                                  "invalid pod: spec.ephemeralContainers is not an array");
                return;
        }
        size_t i;
        json_t *c;
        json_array_foreach (list, i, c) {
                const char *name = string_member(c, "name");
                if (had_ephemeral(req->old_object, c))
                        continue;
                char why[256];
                if (ephemeral_breaks_split(cfg, req->object, c, why, sizeof(why))) {
                        mutate_result_set(ret, REASON_EPHEMERAL_CONTAINER,
                                          "ephemeral container \"%s\" %s; a pod with %s takes "
                                          "only ephemeral containers that keep out of its split",
                                          name ? name : "", why, SHAPE_DRIVER_CONTAINER);
                        return;
                }
        }
        mutate_result_set(ret, REASON_NOT_GUARDED,
                          "ephemeral containers keep out of %s's uid, volumes and PID namespace",
                          SHAPE_DRIVER_CONTAINER);
}

static const char *annotation_of(json_t *pod, const char *key)
{
        return string_member(json_object_get(json_object_get(pod, "metadata"), "annotations"), key);
}

static const char *label_of(json_t *pod, const char *key)
{
        return string_member(json_object_get(json_object_get(pod, "metadata"), "labels"), key);
}

/* The pod members an UPDATE (or resize) must leave alone: NULL when none
 * changed, else what did, for the message. */
static const char *changed_member(const webhook_settings_t *cfg, json_t *old, json_t *new,
                                  mutate_reason_t *ret_reason)
{
        static const char *const annotations[] = {SHAPE_ANNOTATION_STATUS, SHAPE_ANNOTATION_REASON};
        *ret_reason = REASON_HANGAR_METADATA;
        /* Forging or clearing the record is refused on every pod. */
        for (size_t i = 0; i < sizeof(annotations) / sizeof(annotations[0]); i++)
                if (!same_string(annotation_of(old, annotations[i]),
                                 annotation_of(new, annotations[i])))
                        return annotations[i];
        if (!guard_pod_is_injected(old))
                return NULL;
        if (!same_string(label_of(old, cfg->selector_key), label_of(new, cfg->selector_key)))
                return cfg->selector_key;
        *ret_reason = REASON_DRIVER_CHANGED;
        json_t *driver_old = find_container(old, SHAPE_DRIVER_CONTAINER);
        json_t *driver_new = find_container(new, SHAPE_DRIVER_CONTAINER);
        if (!driver_old || !driver_new || !json_equal(driver_old, driver_new))
                return "container " SHAPE_DRIVER_CONTAINER;
        /* Its volumes too: a resize may change a memory-backed emptyDir's
         * sizeLimit (InPlacePodVerticalScalingMemoryBackedVolumes), and
         * hangar-ctl is one. */
        static const char *const volumes[SHAPE_VOLUME_COUNT] = {
            [SHAPE_VOLUME_HOME] = "volume " SHAPE_HOME_VOLUME,
            [SHAPE_VOLUME_CTL] = "volume " SHAPE_CTL_VOLUME,
        };
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                json_t *vol_old = find_volume(old, shape_volume_name(v));
                json_t *vol_new = find_volume(new, shape_volume_name(v));
                if (!vol_old || !vol_new || !json_equal(vol_old, vol_new))
                        return volumes[v];
        }
        /* The driver runs the agent's image: a new one would split them. */
        if (!same_string(string_member(find_container(old, cfg->sidecar.agent_container), "image"),
                         string_member(find_container(new, cfg->sidecar.agent_container), "image")))
                return "the agent container's image";
        return NULL;
}

static void decide_update(const webhook_settings_t *cfg, const guard_request_t *req,
                          mutate_result_t *ret)
{
        if (!json_is_object(req->old_object) || !json_is_object(req->object)) {
                mutate_result_set(ret, REASON_INVALID_POD,
                                  "invalid review: an UPDATE needs object and oldObject pods");
                return;
        }
        mutate_reason_t reason;
        const char *what = changed_member(cfg, req->old_object, req->object, &reason);
        if (!what) {
                mutate_result_set(ret, REASON_NOT_GUARDED, "%s%s%s leaves hangar's part alone",
                                  req->operation, req->subresource[0] ? " pods/" : "",
                                  req->subresource);
                return;
        }
        mutate_result_set(ret, reason,
                          "%s may not change %s of a pod hangar manages (%s's shape is fixed at "
                          "creation; create a new pod instead)",
                          who(req), what, SHAPE_DRIVER_CONTAINER);
}

/* CREATE pods: the pod as the API server will store it (a validating
 * webhook sees it after every mutating one, reinvocations included). A pod
 * carrying hangar's sidecar must carry it in shape, whoever made it: the
 * mutating webhook judges only the pods its objectSelector sends, and a
 * copy of an injected pod without the sandbox label (kubectl debug
 * --copy-to, which drops labels and annotations and shares the PID
 * namespace) never reaches it. */
static void decide_create(const webhook_settings_t *cfg, const guard_request_t *req,
                          mutate_result_t *ret)
{
        if (!json_is_object(req->object)) {
                mutate_result_set(ret, REASON_INVALID_POD,
                                  "invalid review: a CREATE needs the pod as its object");
                return;
        }
        if (!guard_pod_is_injected(req->object)) {
                mutate_result_set(ret, REASON_NOT_GUARDED, "a pod without %s",
                                  SHAPE_DRIVER_CONTAINER);
                return;
        }
        if (!same_string(annotation_of(req->object, SHAPE_ANNOTATION_STATUS),
                         SHAPE_STATUS_INJECTED)) {
                mutate_result_set(ret, REASON_CONFLICT,
                                  "the pod has a container named %s that hangar did not inject "
                                  "(it is not marked %s: %s; a copy of an injected pod, as "
                                  "kubectl debug --copy-to makes, is one); create it with the "
                                  "sandbox label and without %s, and the webhook injects it",
                                  SHAPE_DRIVER_CONTAINER, SHAPE_ANNOTATION_STATUS,
                                  SHAPE_STATUS_INJECTED, SHAPE_DRIVER_CONTAINER);
                return;
        }
        shapecheck_finding_t finding;
        int r = shapecheck_sidecar(&cfg->sidecar, req->object, &finding);
        if (r < 0) {
                mutate_result_set(ret, REASON_INTERNAL_ERROR,
                                  "internal error while checking the pod's shape");
                return;
        }
        if (r > 0) {
                mutate_result_set(ret, REASON_CONFLICT,
                                  "the pod is marked %s: %s, but as it would be stored %s (%s)",
                                  SHAPE_ANNOTATION_STATUS, SHAPE_STATUS_INJECTED, finding.detail,
                                  finding.code);
                return;
        }
        mutate_result_set(ret, REASON_NOT_GUARDED, "the pod's %s is as the shape says",
                          SHAPE_DRIVER_CONTAINER);
}

static void decide(const webhook_settings_t *cfg, const guard_request_t *req, mutate_result_t *ret);

void guard_decide(const webhook_settings_t *cfg, const guard_request_t *req, mutate_result_t *ret)
{
        memset(ret, 0, sizeof(*ret));
        decide(cfg, req, ret);
        /* A refusal reaches a person as kubectl's "denied the request: ...":
         * it leads with its reason code, the one metrics and logs carry. */
        if (ret->decision == DECISION_DENY) {
                char detail[sizeof(ret->detail)];
                (void)snprintf(detail, sizeof(detail), "%s", ret->detail);
                mutate_result_set(ret, ret->reason, "hangar %s: %s",
                                  mutate_reason_name(ret->reason), detail);
        }
}

static void decide(const webhook_settings_t *cfg, const guard_request_t *req, mutate_result_t *ret)
{
        const char *op = req->operation ? req->operation : "";
        const char *sub = req->subresource ? req->subresource : "";
        guard_request_t r = *req;
        r.subresource = sub;
        if (!req->resource) {
                mutate_result_set(ret, REASON_INVALID_POD, "invalid review: no request.resource");
                return;
        }
        if (strcmp(req->resource, "pods") != 0) {
                mutate_result_set(ret, REASON_NOT_GUARDED, "not a pod");
                return;
        }
        if (strcmp(op, "CONNECT") == 0) {
                if (strcmp(sub, "exec") == 0 || strcmp(sub, "attach") == 0)
                        decide_exec(cfg, &r, ret);
                else if (strcmp(sub, "portforward") == 0)
                        decide_port_forward(cfg, &r, ret);
                else if (strcmp(sub, "proxy") == 0)
                        /* The API server's proxy reaches the pod's IP, not its
                         * loopback: no more than any pod in the cluster can. */
                        mutate_result_set(ret, REASON_NOT_GUARDED, "CONNECT pods/proxy");
                else
                        mutate_result_set(ret, REASON_UNKNOWN_DOOR,
                                          "CONNECT pods/%s is not a door hangar knows; refused",
                                          sub);
                return;
        }
        if (strcmp(op, "UPDATE") == 0) {
                if (strcmp(sub, "ephemeralcontainers") == 0)
                        decide_ephemeral(cfg, &r, ret);
                /* pods/status keeps the spec (the API server puts the old
                 * one back first) but takes labels and annotations: hangar's
                 * record and the selector label are checked as on any UPDATE. */
                else if (sub[0] == '\0' || strcmp(sub, "resize") == 0 || strcmp(sub, "status") == 0)
                        decide_update(cfg, &r, ret);
                else
                        mutate_result_set(ret, REASON_UNKNOWN_DOOR,
                                          "UPDATE pods/%s is not a door hangar knows; refused",
                                          sub);
                return;
        }
        if (strcmp(op, "CREATE") == 0 && sub[0] == '\0') {
                decide_create(cfg, &r, ret);
                return;
        }
        /* DELETE ends the pod (the turn records it as lost); CREATE of a
         * subresource (binding, eviction) changes nothing of its shape. */
        mutate_result_set(ret, REASON_NOT_GUARDED, "operation %s%s%s", op, sub[0] ? " pods/" : "",
                          sub);
}
