#include "guard.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "podview.h"
#include "shape.h"
#include "shapecheck.h"

/* Every list a container can be in: the driver is in containers (or in
 * initContainers as a native sidecar), ephemeral containers are added later. */
static const char *const container_lists[] = {"containers", "initContainers",
                                              "ephemeralContainers"};

static bool same_string(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Two members the same, whatever their type (both absent counts): a record
 * annotation turned into a number is changed, not "absent both times". */
static bool same_value(json_t *a, json_t *b)
{
        return (!a && !b) || (a && b && json_equal(a, b));
}

/* The container called name in the pod's regular or init containers. */
static json_t *find_container(json_t *pod, const char *name)
{
        for (size_t l = 0; l < 2; l++) {
                json_t *c = podview_container(pod, container_lists[l], name);
                if (c)
                        return c;
        }
        return NULL;
}

bool guard_pod_is_injected(json_t *pod)
{
        return same_string(podview_string(podview_annotations(pod), SHAPE_ANNOTATION_STATUS),
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

/* Whether an UPDATE's object and oldObject are both pods as podview_read
 * reads one (the container lists arrays, every container and volume named,
 * securityContext objects, privileged a boolean, every mount with a name and
 * a path, annotations an object, ...); else the refusal is in *ret. */
static bool pods_readable(const guard_request_t *req, mutate_result_t *ret)
{
        json_t *pods[] = {req->object, req->old_object};
        static const char *const which[] = {"object", "oldObject"};
        for (size_t i = 0; i < ARRAY_SIZE(pods); i++) {
                pod_view_t view;
                hg_error_t err = {0};
                int r = podview_read(pods[i], &view, &err);
                if (r == -EINVAL) {
                        mutate_result_set(ret, REASON_INVALID_POD,
                                          "invalid pod (the review's %s): %s", which[i],
                                          err.message);
                        return false;
                }
                if (r < 0) {
                        mutate_result_set(ret, REASON_INTERNAL_ERROR,
                                          "internal error while reading the pod");
                        return false;
                }
        }
        return true;
}

/* Whether pod already holds exactly c (same name, every member equal). */
static bool had_ephemeral(json_t *pod, json_t *c)
{
        const char *name = podview_string(c, "name");
        size_t i;
        json_t *o;
        json_array_foreach (json_object_get(podview_spec(pod), "ephemeralContainers"), i, o)
                if (name && same_string(podview_string(o, "name"), name))
                        return json_equal(o, c);
        return false;
}

/* Whether v is a uid or gid as the API server takes one: an integer from 0
 * to 2^31-1 (IsValidUserID, IsValidGroupID). 1001.0 is none, and 2^32+1001
 * would be 1001 to a runtime that keeps 32 bits of it. */
static bool is_id(json_t *v)
{
        return json_is_integer(v) && json_integer_value(v) >= 0 &&
               json_integer_value(v) <= INT32_MAX;
}

/* A member of obj that must be a uid or gid where present: false (and the
 * member named in why) when it is present and is not one. */
static bool id_member_valid(json_t *obj, const char *where, const char *key, char *why, size_t size)
{
        json_t *v = NULL;
        int r = jsonx_member(obj, key, JSON_INTEGER, &v);
        if (r == -ENOENT || (r == 0 && is_id(v)))
                return true;
        (void)snprintf(why, size, "%s%s is not a uid or gid (an integer from 0 to %d)", where, key,
                       INT32_MAX);
        return false;
}

/* The uid a container runs as when the spec says it: its own runAsUser,
 * else the pod's. -1 when neither says (the image's USER decides, which the
 * API server cannot see). Read only once pod_ids_valid and
 * ephemeral_valid have passed: every id read here is one. */
static json_int_t effective_id(json_t *pod, json_t *c, const char *key)
{
        json_t *v = json_object_get(json_object_get(c, "securityContext"), key);
        if (!v)
                v = json_object_get(json_object_get(podview_spec(pod), "securityContext"), key);
        return is_id(v) ? json_integer_value(v) : -1;
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

/* The ids the ephemeral rules read beside the container's own: the pod's
 * (its runAsUser and runAsGroup are every container's default, its fsGroup
 * and supplementalGroups every container's groups) and its hangar-driver's.
 * False, with the member in why, when one is there and is not an id. */
static bool pod_ids_valid(json_t *pod, char *why, size_t size)
{
        static const char *const keys[] = {"runAsUser", "runAsGroup", "fsGroup"};
        json_t *sc = json_object_get(podview_spec(pod), "securityContext");
        for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
                if (!id_member_valid(sc, "spec.securityContext.", keys[i], why, size))
                        return false;
        json_t *groups = NULL;
        int r = jsonx_member(sc, "supplementalGroups", JSON_ARRAY, &groups);
        size_t i;
        json_t *g;
        json_array_foreach (r == 0 ? groups : NULL, i, g)
                if (!is_id(g))
                        r = -EINVAL;
        if (r == -EINVAL) {
                (void)snprintf(why, size,
                               "spec.securityContext.supplementalGroups is not an array of gids");
                return false;
        }
        json_t *driver_sc =
            json_object_get(find_container(pod, SHAPE_DRIVER_CONTAINER), "securityContext");
        return id_member_valid(driver_sc, SHAPE_DRIVER_CONTAINER " securityContext.", "runAsUser",
                               why, size) &&
               id_member_valid(driver_sc, SHAPE_DRIVER_CONTAINER " securityContext.", "runAsGroup",
                               why, size);
}

/* Every member of ephemeral container c the rules below read, beyond what
 * podview_read checked (its name, securityContext an object, privileged a
 * boolean, volumeMounts with names): the right type where present. A member
 * of the wrong type read as "says nothing" would pass (capabilities.add as
 * a string adds nothing, targetContainerName 5 targets nothing), so it is
 * refused as malformed instead. False, with the member in why. */
static bool ephemeral_valid(json_t *c, char *why, size_t size)
{
        const char *s;
        json_t *v = NULL;
        if (jsonx_string(c, "targetContainerName", &s) == -EINVAL) {
                (void)snprintf(why, size, "targetContainerName is not a string");
                return false;
        }
        int r = jsonx_member(c, "volumeDevices", JSON_ARRAY, &v);
        size_t i;
        json_t *m;
        json_array_foreach (r == 0 ? v : NULL, i, m)
                if (jsonx_string(m, "name", &s) < 0)
                        r = -EINVAL;
        if (r == -EINVAL) {
                (void)snprintf(why, size, "volumeDevices is not an array of devices with names");
                return false;
        }
        json_t *sc = json_object_get(c, "securityContext");
        json_t *caps = NULL, *add = NULL;
        r = jsonx_member(sc, "capabilities", JSON_OBJECT, &caps);
        if (r == 0)
                r = jsonx_member(caps, "add", JSON_ARRAY, &add);
        json_array_foreach (r == 0 ? add : NULL, i, v)
                if (!json_is_string(v))
                        r = -EINVAL;
        if (r == -EINVAL) {
                (void)snprintf(why, size,
                               "securityContext.capabilities is not an object whose add is an "
                               "array of names");
                return false;
        }
        if (jsonx_string(sc, "procMount", &s) == -EINVAL) {
                (void)snprintf(why, size, "securityContext.procMount is not a string");
                return false;
        }
        bool b;
        if (jsonx_bool(sc, "allowPrivilegeEscalation", &b) == -EINVAL) {
                (void)snprintf(why, size,
                               "securityContext.allowPrivilegeEscalation is not true or false");
                return false;
        }
        return id_member_valid(sc, "securityContext.", "runAsUser", why, size) &&
               id_member_valid(sc, "securityContext.", "runAsGroup", why, size);
}

/* Why ephemeral container c would break the split, written into why; false
 * when it keeps to the rules. c is an object of the types ephemeral_valid
 * checks, in a pod podview_read and pod_ids_valid passed. */
static bool ephemeral_breaks_split(const webhook_settings_t *cfg, json_t *pod, json_t *c, char *why,
                                   size_t size)
{
        if (same_string(podview_string(c, "targetContainerName"), SHAPE_DRIVER_CONTAINER)) {
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
                        const char *name = podview_string(m, "name");
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
        const char *proc_mount = podview_string(sc, "procMount");
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
        json_t *pod_sc = json_object_get(podview_spec(pod), "securityContext");
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
        /* Wrong-typed is refused, not read as "not said": the pods as
         * podview_read reads one, then the ids and members only these rules
         * read. */
        if (!pods_readable(req, ret))
                return;
        char why[256];
        if (!pod_ids_valid(req->object, why, sizeof(why))) {
                mutate_result_set(ret, REASON_INVALID_POD, "invalid pod: %s", why);
                return;
        }
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(podview_spec(req->object), "ephemeralContainers"), i,
                            c) {
                const char *name = podview_string(c, "name");
                if (had_ephemeral(req->old_object, c))
                        continue;
                if (!ephemeral_valid(c, why, sizeof(why))) {
                        mutate_result_set(ret, REASON_INVALID_POD,
                                          "invalid pod: ephemeral container \"%s\": %s", name, why);
                        return;
                }
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

static json_t *metadata_member(json_t *pod, const char *map, const char *key)
{
        return json_object_get(json_object_get(json_object_get(pod, "metadata"), map), key);
}

/* The annotations gVisor reads (pkg/shim/v1/utils/volumes.go, runsc's mount
 * hints and annotation flags): containerd hands a pod's dev.gvisor.* to the
 * shim (pod_annotations) every time the kubelet creates the pod's sandbox,
 * and the sandbox dies and is made again (an OOM of the sentry, a node
 * restart) with the pod's annotations as they are then. The webhook's
 * dev.gvisor.spec.mount.hangar-{ctl,home}.* keep both volumes inside the
 * sandbox; a type: bind or a mount hint naming hangar-ctl's host directory
 * would have the next sandbox serve it from the node through the gofer, and
 * a flag (dev.gvisor.flag.*, where the node allows overrides) changes how
 * the sandbox runs the driver. The pod's author set them at creation, where
 * the probe's verdict judges them; after that none may change. */
#define GVISOR_ANNOTATION_PREFIX "dev.gvisor."

static bool is_runtime_annotation(const char *key)
{
        return strncmp(key, GVISOR_ANNOTATION_PREFIX, strlen(GVISOR_ANNOTATION_PREFIX)) == 0;
}

/* The first dev.gvisor.* annotation an UPDATE adds, changes or removes, or
 * NULL. Both maps are objects (podview_read). */
static const char *changed_runtime_annotation(json_t *old, json_t *new)
{
        json_t *was = json_object_get(json_object_get(old, "metadata"), "annotations");
        json_t *is = json_object_get(json_object_get(new, "metadata"), "annotations");
        const char *key;
        json_t *v;
        json_object_foreach (was, key, v)
                if (is_runtime_annotation(key) && !same_value(v, json_object_get(is, key)))
                        return key;
        json_object_foreach (is, key, v)
                if (is_runtime_annotation(key) && !json_object_get(was, key))
                        return key;
        return NULL;
}

/* What an UPDATE (or resize) changed of the pod members it must leave
 * alone, for the message: its name, the reason code and why it is fixed;
 * what is NULL when none changed. */
typedef struct changed {
        const char *what;
        mutate_reason_t reason;
        const char *why;
} changed_t;

static const char *const fixed_shape =
    SHAPE_DRIVER_CONTAINER "'s shape is fixed at creation; create a new pod instead";

static changed_t changed_member(const webhook_settings_t *cfg, json_t *old, json_t *new)
{
        static const char *const annotations[] = {SHAPE_ANNOTATION_STATUS, SHAPE_ANNOTATION_REASON};
        /* Forging or clearing the record is refused on every pod. */
        for (size_t i = 0; i < ARRAY_SIZE(annotations); i++)
                if (!same_value(metadata_member(old, "annotations", annotations[i]),
                                metadata_member(new, "annotations", annotations[i])))
                        return (changed_t){annotations[i], REASON_HANGAR_METADATA, fixed_shape};
        if (!guard_pod_is_injected(old))
                return (changed_t){NULL, REASON_NOT_GUARDED, NULL};
        if (!same_value(metadata_member(old, "labels", cfg->selector_key),
                        metadata_member(new, "labels", cfg->selector_key)))
                return (changed_t){cfg->selector_key, REASON_HANGAR_METADATA, fixed_shape};
        /* Which container is the agent's: the probe's and the guard's
         * reading of the pod follow it. */
        if (!same_value(metadata_member(old, "annotations", SHAPE_ANNOTATION_AGENT),
                        metadata_member(new, "annotations", SHAPE_ANNOTATION_AGENT)))
                return (changed_t){SHAPE_ANNOTATION_AGENT, REASON_HANGAR_METADATA, fixed_shape};
        const char *runtime = changed_runtime_annotation(old, new);
        if (runtime)
                return (changed_t){runtime, REASON_HANGAR_METADATA,
                                   "gVisor reads the pod's " GVISOR_ANNOTATION_PREFIX
                                   "* annotations each time it makes the pod's sandbox, "
                                   "hangar's keep " SHAPE_CTL_VOLUME " and " SHAPE_HOME_VOLUME
                                   " inside it, and all are fixed at creation; create a new pod "
                                   "instead"};
        json_t *driver_old = find_container(old, SHAPE_DRIVER_CONTAINER);
        json_t *driver_new = find_container(new, SHAPE_DRIVER_CONTAINER);
        if (!driver_old || !driver_new || !json_equal(driver_old, driver_new))
                return (changed_t){"container " SHAPE_DRIVER_CONTAINER, REASON_DRIVER_CHANGED,
                                   fixed_shape};
        /* Its volumes too: a resize may change a memory-backed emptyDir's
         * sizeLimit (InPlacePodVerticalScalingMemoryBackedVolumes), and
         * hangar-ctl is one. */
        static const char *const volumes[SHAPE_VOLUME_COUNT] = {
            [SHAPE_VOLUME_HOME] = "volume " SHAPE_HOME_VOLUME,
            [SHAPE_VOLUME_CTL] = "volume " SHAPE_CTL_VOLUME,
            [SHAPE_VOLUME_BIN] = "volume " SHAPE_BIN_VOLUME,
        };
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                json_t *vol_old = podview_volume(old, shape_volume_name(v));
                json_t *vol_new = podview_volume(new, shape_volume_name(v));
                /* hangar-bin is there only where the binaries were delivered;
                 * either way it stays as it was. */
                if (v == SHAPE_VOLUME_BIN && !vol_old && !vol_new)
                        continue;
                if (!vol_old || !vol_new || !json_equal(vol_old, vol_new))
                        return (changed_t){volumes[v], REASON_DRIVER_CHANGED, fixed_shape};
        }
        /* The bundle's copier likewise: an update may change an init
         * container's image, and another image would write what the driver
         * runs in the next sandbox. */
        json_t *copier_old = find_container(old, SHAPE_BIN_CONTAINER);
        json_t *copier_new = find_container(new, SHAPE_BIN_CONTAINER);
        if ((copier_old || copier_new) &&
            (!copier_old || !copier_new || !json_equal(copier_old, copier_new)))
                return (changed_t){"container " SHAPE_BIN_CONTAINER, REASON_DRIVER_CHANGED,
                                   fixed_shape};
        /* The driver runs the agent's image: a new one would split them.
         * The agent is the one the pod names (its annotation is unchanged,
         * above); a pod that names none has no image to keep. */
        const char *agent = shape_agent_name(&cfg->sidecar, old);
        if (agent && !same_value(json_object_get(find_container(old, agent), "image"),
                                 json_object_get(find_container(new, agent), "image")))
                return (changed_t){"the agent container's image", REASON_DRIVER_CHANGED,
                                   fixed_shape};
        return (changed_t){NULL, REASON_NOT_GUARDED, NULL};
}

static void decide_update(const webhook_settings_t *cfg, const guard_request_t *req,
                          mutate_result_t *ret)
{
        if (!json_is_object(req->old_object) || !json_is_object(req->object)) {
                mutate_result_set(ret, REASON_INVALID_POD,
                                  "invalid review: an UPDATE needs object and oldObject pods");
                return;
        }
        /* An injected pod's members are compared only once both pods read
         * as pods: a container or annotation map of the wrong type is
         * refused, not skipped. */
        if ((guard_pod_is_injected(req->old_object) || guard_pod_is_injected(req->object)) &&
            !pods_readable(req, ret))
                return;
        changed_t changed = changed_member(cfg, req->old_object, req->object);
        if (!changed.what) {
                mutate_result_set(ret, REASON_NOT_GUARDED, "%s%s%s leaves hangar's part alone",
                                  req->operation, req->subresource[0] ? " pods/" : "",
                                  req->subresource);
                return;
        }
        mutate_result_set(ret, changed.reason, "%s may not change %s of a pod hangar manages (%s)",
                          who(req), changed.what, changed.why);
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
        if (!same_string(podview_string(podview_annotations(req->object), SHAPE_ANNOTATION_STATUS),
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
        /* DELETE ends the pod (the turn records it as lost); CREATE of
         * pods/binding or pods/eviction changes nothing of its shape. */
        if ((strcmp(op, "DELETE") == 0 && sub[0] == '\0') ||
            (strcmp(op, "CREATE") == 0 &&
             (strcmp(sub, "binding") == 0 || strcmp(sub, "eviction") == 0))) {
                mutate_result_set(ret, REASON_NOT_GUARDED, "%s%s%s", op, sub[0] ? " pods/" : "",
                                  sub);
                return;
        }
        /* Operations are the API server's four, spelt as it spells them:
         * "connect" or "PATCH" is no review it sends, and is not guessed at. */
        mutate_result_set(ret, REASON_UNKNOWN_DOOR,
                          "operation \"%s\"%s%s is not a door hangar knows; refused", op,
                          sub[0] ? " of pods/" : "", sub);
}
