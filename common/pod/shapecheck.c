#include "shapecheck.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "k8sname.h"
#include "pathnorm.h"
#include "podview.h"
#include "shape.h"
#include "strbuf.h"

/* Members the API server sets on every container it stores (SetDefaults_
 * Container), with the value it sets: the only members a driver may have
 * beyond the shape's. (imagePullPolicy, also defaulted, is the shape's.) */
static const struct {
        const char *key, *value;
} api_defaults[] = {
    {"terminationMessagePath", "/dev/termination-log"},
    {"terminationMessagePolicy", "File"},
};

typedef struct findings {
        json_t *checks; /* every finding (the probe); NULL: only the first failure */
        bool failed;
        bool oom;
        shapecheck_finding_t *first; /* without checks: the first sidecar failure */
        bool found;
} findings_t;

static void add(findings_t *f, const char *code, shapecheck_scope_t scope, bool pass,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void add(findings_t *f, const char *code, shapecheck_scope_t scope, bool pass,
                const char *fmt, ...)
{
        if (!pass)
                f->failed = true;
        if (!f->checks) {
                /* The webhook's reading: only the first sidecar failure is
                 * written out, so passes cost no formatting. */
                if (pass || f->found || scope != SHAPECHECK_SIDECAR)
                        return;
                f->found = true;
                f->first->code = code;
                va_list ap;
                va_start(ap, fmt);
                (void)vsnprintf(f->first->detail, sizeof(f->first->detail), fmt, ap);
                va_end(ap);
                utf8_trim_incomplete(f->first->detail);
                return;
        }
        char detail[ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        utf8_trim_incomplete(detail);
        json_t *c = json_pack("{s:s, s:s, s:s}", "code", code, "status", pass ? "pass" : "fail",
                              "detail", detail);
        if (!c || json_array_append_new(f->checks, c) < 0)
                f->oom = true;
}

static const char *name_of(json_t *c)
{
        const char *name = "";
        (void)jsonx_string(c, "name", &name);
        return name;
}

shape_access_t shapecheck_mount_access(json_t *c, shape_volume_t v)
{
        shape_access_t loosest = SHAPE_ACCESS_ABSENT;
        size_t i;
        json_t *m;
        json_array_foreach (json_object_get(c, "volumeMounts"), i, m) {
                const char *name;
                if (jsonx_string(m, "name", &name) < 0 || strcmp(name, shape_volume_name(v)) != 0)
                        continue;
                if (!json_is_true(json_object_get(m, "readOnly")))
                        return SHAPE_ACCESS_READ_WRITE;
                loosest = SHAPE_ACCESS_READ_ONLY;
        }
        return loosest;
}

/* The role of container name of list in a pod whose agent is agent (NULL:
 * the pod names no agent, and no container is one). */
static shape_role_t role_beside(const hg_config_t *cfg, const char *agent, const char *list,
                                const char *name)
{
        /* The driver in its list (initContainers for a native sidecar). */
        if (strcmp(name, SHAPE_DRIVER_CONTAINER) == 0 && strcmp(list, shape_driver_list(cfg)) == 0)
                return SHAPE_ROLE_DRIVER;
        /* The bundle's copier, where the binaries are delivered. */
        if (shape_copies_binaries(cfg) && strcmp(name, SHAPE_BIN_CONTAINER) == 0 &&
            strcmp(list, "initContainers") == 0)
                return SHAPE_ROLE_BIN_COPIER;
        if (strcmp(list, "containers") != 0)
                return SHAPE_ROLE_INIT_EPHEMERAL;
        return agent && strcmp(name, agent) == 0           ? SHAPE_ROLE_AGENT
               : strcmp(name, SHAPE_DRIVER_CONTAINER) == 0 ? SHAPE_ROLE_DRIVER
                                                           : SHAPE_ROLE_OTHER;
}

shape_role_t shapecheck_role(const hg_config_t *cfg, const char *list, const char *name)
{
        return role_beside(cfg, cfg->agent_container, list, name);
}

/* The role in pod, whose agent its annotation may name (shape_agent_name). */
static shape_role_t role_in(const hg_config_t *cfg, json_t *pod, const char *list, const char *name)
{
        return role_beside(cfg, shape_agent_name(cfg, pod), list, name);
}

bool shapecheck_is_token_mount(json_t *m)
{
        const char *name = "", *path = "";
        (void)jsonx_string(m, "name", &name);
        (void)jsonx_string(m, "mountPath", &path);
        if (strncmp(name, SHAPECHECK_TOKEN_VOLUME_PREFIX, strlen(SHAPECHECK_TOKEN_VOLUME_PREFIX)) ==
            0)
                return true;
        return pathnorm_within(path, SHAPECHECK_TOKEN_PATH) != 0;
}

bool shapecheck_is_plugin_token_mount(json_t *m)
{
        const char *name = "", *path = "";
        (void)jsonx_string(m, "name", &name);
        (void)jsonx_string(m, "mountPath", &path);
        const char *key;
        json_t *v;
        json_object_foreach (m, key, v)
                if (strcmp(key, "name") != 0 && strcmp(key, "mountPath") != 0 &&
                    strcmp(key, "readOnly") != 0)
                        return false;
        return strncmp(name, SHAPECHECK_TOKEN_VOLUME_PREFIX,
                       strlen(SHAPECHECK_TOKEN_VOLUME_PREFIX)) == 0 &&
               strcmp(path, SHAPECHECK_TOKEN_PATH) == 0 &&
               json_is_true(json_object_get(m, "readOnly"));
}

/* want and have equal as the API server stores them: JSON-equal, but a
 * quantity is written in its canonical form ("0.05" is stored as "50m",
 * "65536Ki" as "64Mi"), so two quantities are equal when their values are.
 * For resources and volumes, where the shape writes quantities. */
static bool same_stored(json_t *want, json_t *have)
{
        if (json_is_string(want) && json_is_string(have)) {
                long double a, b;
                if (json_equal(want, have))
                        return true;
                if (k8s_quantity_value(json_string_value(want), &a) < 0 ||
                    k8s_quantity_value(json_string_value(have), &b) < 0)
                        return false;
                long double d = a > b ? a - b : b - a, m = a > b ? a : b;
                return d <= m * 1e-12L;
        }
        if (json_is_object(want) && json_is_object(have)) {
                if (json_object_size(want) != json_object_size(have))
                        return false;
                const char *key;
                json_t *v;
                json_object_foreach (want, key, v)
                        if (!same_stored(v, json_object_get(have, key)))
                                return false;
                return true;
        }
        return json_equal(want, have);
}

/* The driver's resources as the shape writes them, or with what the
 * LimitRanger admission plugin adds in a namespace with a LimitRange: the
 * API server reruns its plugins once the webhook has changed the pod, and
 * LimitRanger then gives hangar-driver the LimitRange's default limit (or
 * request) for each resource the shape leaves unset. Every quantity the
 * shape sets must be there and equal; besides, only requests and limits,
 * holding quantities. A limit bounds the driver itself, never the agent. */
static bool same_resources(json_t *want, json_t *have)
{
        if (!json_is_object(want) || !json_is_object(have))
                return same_stored(want, have);
        const char *kind;
        json_t *amounts;
        json_object_foreach (have, kind, amounts) {
                bool known = strcmp(kind, "requests") == 0 || strcmp(kind, "limits") == 0;
                if (!known || !json_is_object(amounts))
                        return false;
                json_t *wanted = json_object_get(want, kind);
                const char *resource;
                json_t *q;
                json_object_foreach (amounts, resource, q) {
                        json_t *w = json_object_get(wanted, resource);
                        if (w ? !same_stored(w, q)
                              : !json_is_string(q) || !k8s_is_quantity(json_string_value(q)))
                                return false;
                }
        }
        /* And nothing the shape sets is missing. */
        json_object_foreach (want, kind, amounts) {
                const char *resource;
                json_t *q;
                json_object_foreach (amounts, resource, q)
                        if (!json_object_get(json_object_get(have, kind), resource))
                                return false;
        }
        return true;
}

static bool is_api_default(const char *key, json_t *value)
{
        for (size_t i = 0; i < ARRAY_SIZE(api_defaults); i++)
                if (strcmp(key, api_defaults[i].key) == 0)
                        return json_is_string(value) &&
                               strcmp(json_string_value(value), api_defaults[i].value) == 0;
        return false;
}

/* The driver's imagePullPolicy is the shape's (IfNotPresent: the bytes the
 * agent's container has just pulled), or Always where the AlwaysPullImages
 * admission plugin is on: the API server reruns it once the webhook has
 * changed the pod, and it sets every container's policy. Either way the
 * driver runs the agent's image (compared on its own). */
static bool same_pull_policy(json_t *want, json_t *have)
{
        return json_equal(want, have) ||
               (json_is_string(have) && strcmp(json_string_value(have), "Always") == 0);
}

/* How many containers of pod, in any of its lists, are named name. */
static size_t count_named(json_t *pod, const char *name)
{
        size_t named = 0;
        for (podview_list_t l = 0; l < PODVIEW_LIST_COUNT; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(podview_spec(pod), podview_list_name(l)), i, c)
                        named += strcmp(name_of(c), name) == 0;
        }
        return named;
}

/* Container c, one the shape writes whole (hangar-driver, hangar-bin),
 * against want, the shape's: one finding under code per member. Every
 * member of the shape, equal (for the driver: the configured command, the
 * agent's image, the whole securityContext, exactly the two mounts, the
 * startup and liveness probes); resources and imagePullPolicy as the API
 * server may have stored them (same_resources, same_pull_policy). And
 * nothing else but what the API server adds to every container: args, env,
 * probes, lifecycle hooks, a working directory, stdin, ports, a restart
 * policy, ... each runs or changes something in the driver's uid next to
 * hangar-ctl. */
static void check_as_shaped(findings_t *f, const char *code, const char *name, json_t *want,
                            json_t *c)
{
        const char *key;
        json_t *v;
        json_object_foreach (want, key, v) {
                json_t *have = json_object_get(c, key);
                bool ok = strcmp(key, "resources") == 0         ? same_resources(v, have)
                          : strcmp(key, "imagePullPolicy") == 0 ? same_pull_policy(v, have)
                                                                : json_equal(v, have);
                add(f, code, SHAPECHECK_SIDECAR, ok, "%s.%s %s", name, key,
                    ok      ? "as the shape says"
                    : !have ? "is missing"
                            : "differs from the shape");
        }
        json_object_foreach (c, key, v) {
                if (json_object_get(want, key))
                        continue;
                bool ok = is_api_default(key, v);
                add(f, code, SHAPECHECK_SIDECAR, ok, "%s.%s %s", name, key,
                    ok ? "is the API server's default"
                       : "is not part of the shape (only the API server's defaults may be added)");
        }
}

static void check_driver(const hg_config_t *cfg, findings_t *f, json_t *pod, json_t *agent)
{
        size_t named = count_named(pod, SHAPE_DRIVER_CONTAINER);
        json_t *driver = podview_container(pod, shape_driver_list(cfg), SHAPE_DRIVER_CONTAINER);
        if (!driver) {
                add(f, "spec.no-driver", SHAPECHECK_SIDECAR, false,
                    "the pod has no " SHAPE_DRIVER_CONTAINER " container");
                return;
        }
        add(f, "spec.driver", SHAPECHECK_SIDECAR, named == 1,
            "one container is named " SHAPE_DRIVER_CONTAINER " (%zu are)", named);
        const char *image = "";
        (void)jsonx_string(agent, "image", &image);
        _cleanup_json_ json_t *want = shape_driver_container_json(cfg, image);
        if (!want) {
                f->oom = true;
                return;
        }
        check_as_shaped(f, "spec.driver", SHAPE_DRIVER_CONTAINER, want, driver);
}

/* Where the binaries are delivered: one container named hangar-bin, an
 * init container as the shape writes it (the bundle image, its command, the
 * driver's uid, only its mount of hangar-bin), ended before hangar-driver
 * starts (earlier in initContainers where the driver is a native sidecar).
 * Replaced by another image or command it could write anything into what
 * the driver runs. */
static void check_copier(const hg_config_t *cfg, findings_t *f, json_t *pod)
{
        if (!shape_copies_binaries(cfg))
                return;
        size_t named = count_named(pod, SHAPE_BIN_CONTAINER);
        json_t *copier = podview_container(pod, "initContainers", SHAPE_BIN_CONTAINER);
        if (!copier) {
                add(f, "spec.no-bin-copier", SHAPECHECK_SIDECAR, false,
                    "the pod has no init container " SHAPE_BIN_CONTAINER
                    " to deliver the driver's binaries (driver.binaries.from is initContainer)");
                return;
        }
        add(f, "spec.bin-copier", SHAPECHECK_SIDECAR, named == 1,
            "one container is named " SHAPE_BIN_CONTAINER " (%zu are)", named);
        _cleanup_json_ json_t *want = shape_bin_container_json(cfg);
        if (!want) {
                f->oom = true;
                return;
        }
        check_as_shaped(f, "spec.bin-copier", SHAPE_BIN_CONTAINER, want, copier);
        /* Init containers run in their order, a native sidecar's start
         * included: the copy must have ended before the driver runs it. */
        if (strcmp(shape_driver_list(cfg), "initContainers") == 0) {
                size_t i, at_copier = SIZE_MAX, at_driver = SIZE_MAX;
                json_t *c;
                json_array_foreach (json_object_get(podview_spec(pod), "initContainers"), i, c) {
                        if (strcmp(name_of(c), SHAPE_BIN_CONTAINER) == 0 && at_copier == SIZE_MAX)
                                at_copier = i;
                        if (strcmp(name_of(c), SHAPE_DRIVER_CONTAINER) == 0 &&
                            at_driver == SIZE_MAX)
                                at_driver = i;
                }
                add(f, "spec.bin-copier", SHAPECHECK_SIDECAR, at_copier < at_driver,
                    "%s comes before %s in initContainers", SHAPE_BIN_CONTAINER,
                    SHAPE_DRIVER_CONTAINER);
        }
}

static void check_volumes(const hg_config_t *cfg, findings_t *f, json_t *pod)
{
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                if (!shape_volume_used(cfg, v))
                        continue;
                _cleanup_json_ json_t *want = shape_volume_json(cfg, v);
                if (!want) {
                        f->oom = true;
                        return;
                }
                json_t *have = NULL;
                size_t n = 0, i;
                json_t *vol;
                json_array_foreach (json_object_get(podview_spec(pod), "volumes"), i, vol) {
                        if (strcmp(name_of(vol), shape_volume_name(v)) == 0) {
                                have = vol;
                                n++;
                        }
                }
                bool ok = n == 1 && same_stored(want, have);
                add(f, "spec.volume", SHAPECHECK_SIDECAR, ok, "volume %s %s", shape_volume_name(v),
                    ok       ? "as the shape says"
                    : n == 0 ? "is missing"
                    : n > 1  ? "is named twice"
                             : "differs from the shape");
        }
}

/* The agent's mounts at or under hangar's paths: only hangar-home (and
 * hangar-bin where the binaries are delivered), as the shape mounts them
 * (read-only, at their paths, nothing more); anything else there would
 * hide part of what the relay reads, or the relay itself, behind the
 * agent's own files. Compared in canonical form; a path too long for that
 * fails. */
static void check_agent_paths(const hg_config_t *cfg, findings_t *f, json_t *agent)
{
        json_t *own[SHAPE_VOLUME_COUNT] = {0};
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                if (!shape_volume_used(cfg, v) ||
                    shape_mount_access(SHAPE_ROLE_AGENT, v) != SHAPE_ACCESS_READ_ONLY)
                        continue;
                own[v] = shape_mount_json(cfg, SHAPE_ROLE_AGENT, v);
                if (!own[v])
                        f->oom = true;
        }
        const char *agent_name = name_of(agent);
        size_t i;
        json_t *m;
        bool clean = !f->oom;
        json_array_foreach (f->oom ? NULL : json_object_get(agent, "volumeMounts"), i, m) {
                const char *name = name_of(m), *path = "";
                (void)jsonx_string(m, "mountPath", &path);
                int mine = -1;
                for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                        if (own[v] && strcmp(name, shape_volume_name(v)) == 0)
                                mine = (int)v;
                if (mine >= 0) {
                        bool ok = json_equal(m, own[mine]);
                        clean &= ok;
                        if (!ok)
                                add(f, "spec.mount", SHAPECHECK_SIDECAR, false,
                                    "container \"%s\" (agent) mounts %s otherwise than the shape "
                                    "(read-only at %s, nothing more)",
                                    agent_name, name, shape_volume_path(cfg, mine));
                        continue;
                }
                for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                        if (!shape_volume_used(cfg, v))
                                continue;
                        int within = pathnorm_within(path, shape_volume_path(cfg, v));
                        if (within == 0)
                                continue;
                        clean = false;
                        if (within < 0)
                                add(f, "spec.mount", SHAPECHECK_SIDECAR, false,
                                    "container \"%s\" (agent) mounts \"%s\" at a path longer than "
                                    "%d bytes once normalised, which cannot be told apart from "
                                    "%s",
                                    agent_name, name, PATHNORM_MAX - 1, shape_volume_path(cfg, v));
                        else
                                add(f, "spec.mount", SHAPECHECK_SIDECAR, false,
                                    "container \"%s\" (agent) mounts \"%s\" at %s, which hangar "
                                    "reserves for %s",
                                    agent_name, name, path, shape_volume_name(v));
                        break;
                }
        }
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                json_decref(own[v]);
        if (clean)
                add(f, "spec.mount", SHAPECHECK_SIDECAR, true,
                    "container \"%s\" (agent) mounts nothing else at or under hangar's paths",
                    agent_name);
}

static void check_mounts(const hg_config_t *cfg, findings_t *f, json_t *pod, json_t *agent)
{
        for (podview_list_t l = 0; l < PODVIEW_LIST_COUNT; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(podview_spec(pod), podview_list_name(l)), i,
                                    c) {
                        const char *name = name_of(c);
                        shape_role_t role = role_in(cfg, pod, podview_list_name(l), name);
                        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                                if (!shape_volume_used(cfg, v))
                                        continue;
                                shape_access_t want = shape_mount_access(role, v);
                                shape_access_t have = shapecheck_mount_access(c, v);
                                add(f, "spec.mount", SHAPECHECK_SIDECAR,
                                    shape_access_allows(want, have),
                                    "container \"%s\" (%s) mounts %s %s; expected %s", name,
                                    shape_role_name(role), shape_volume_name(v),
                                    shape_access_name(have), shape_access_name(want));
                        }
                }
        }
        check_agent_paths(cfg, f, agent);
}

static void check_pod_level(findings_t *f, json_t *pod)
{
        json_t *spec = podview_spec(pod);
        static const struct {
                const char *member, *code, *why;
        } shared[] = {
            {"shareProcessNamespace", "spec.share-process-namespace",
             "one PID namespace for all containers"},
            {"hostPID", "spec.host-pid", "the node's PID namespace"},
            {"hostNetwork", "spec.host-network",
             "the node's network namespace: the driver's loopback listener is the node's"},
            {"hostIPC", "spec.host-ipc", "the node's IPC namespace"},
        };
        for (size_t k = 0; k < ARRAY_SIZE(shared); k++)
                add(f, shared[k].code, SHAPECHECK_SIDECAR,
                    !json_is_true(json_object_get(spec, shared[k].member)),
                    "%s must not be true (%s)", shared[k].member, shared[k].why);
        for (podview_list_t l = 0; l < PODVIEW_LIST_COUNT; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(spec, podview_list_name(l)), i, c) {
                        json_t *sc = json_object_get(c, "securityContext");
                        add(f, "spec.privileged", SHAPECHECK_SIDECAR,
                            !json_is_true(json_object_get(sc, "privileged")),
                            "container \"%s\" must not be privileged", name_of(c));
                }
        }
        /* No ephemeral container may join the driver's PID namespace. */
        bool targeted = false;
        for (podview_list_t l = 0; l < PODVIEW_LIST_COUNT; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(spec, podview_list_name(l)), i, c) {
                        const char *target = NULL;
                        if (jsonx_string(c, "targetContainerName", &target) == 0 &&
                            strcmp(target, SHAPE_DRIVER_CONTAINER) == 0) {
                                targeted = true;
                                add(f, "spec.target-driver", SHAPECHECK_SIDECAR, false,
                                    "container \"%s\" targets %s (it would share its PID "
                                    "namespace)",
                                    name_of(c), SHAPE_DRIVER_CONTAINER);
                        }
                }
        }
        if (!targeted)
                add(f, "spec.target-driver", SHAPECHECK_SIDECAR, true,
                    "no container targets " SHAPE_DRIVER_CONTAINER);
}

/* Who a container beside the driver runs as, and what it may do. The uid
 * is the container's runAsUser, else the pod's; with neither, the image's
 * USER decides, which no spec shows: that fails too (set runAsUser). */
static void check_identity(const hg_config_t *cfg, findings_t *f, json_t *pod, json_t *c,
                           bool is_agent)
{
        const char *name = name_of(c);
        const char *uid_code = is_agent ? "spec.agent-uid" : "spec.uid";
        const char *cap_code = is_agent ? "spec.agent-capabilities" : "spec.capabilities";
        json_t *sc = json_object_get(c, "securityContext");
        json_t *uid = json_object_get(sc, "runAsUser");
        if (!uid || json_is_null(uid))
                uid = json_object_get(json_object_get(podview_spec(pod), "securityContext"),
                                      "runAsUser");
        if (!uid || json_is_null(uid))
                add(f, uid_code, SHAPECHECK_POD, false,
                    "container \"%s\" sets no runAsUser, nor does the pod: its image's USER "
                    "decides, which the spec cannot show (it could be root or the driver's "
                    "uid); set runAsUser",
                    name);
        else if (!json_is_integer(uid))
                add(f, uid_code, SHAPECHECK_POD, false, "container \"%s\": runAsUser is %s", name,
                    jsonx_type_name(uid));
        else if (json_integer_value(uid) == 0)
                add(f, uid_code, SHAPECHECK_POD, false, "container \"%s\" runs as root", name);
        else if (json_integer_value(uid) == (json_int_t)cfg->driver_uid)
                add(f, uid_code, SHAPECHECK_POD, false,
                    "container \"%s\" runs as the driver's uid %u", name, cfg->driver_uid);
        else
                add(f, uid_code, SHAPECHECK_POD, true,
                    "container \"%s\" runs as uid %" JSON_INTEGER_FORMAT
                    ", neither root nor the driver's",
                    name, json_integer_value(uid));

        /* Nor in the driver's group (group-owned files of the driver). */
        json_t *gid = json_object_get(sc, "runAsGroup");
        if (!gid || json_is_null(gid))
                gid = json_object_get(json_object_get(podview_spec(pod), "securityContext"),
                                      "runAsGroup");
        bool driver_gid =
            json_is_integer(gid) && json_integer_value(gid) == (json_int_t)cfg->driver_gid;
        add(f, uid_code, SHAPECHECK_POD,
            !driver_gid && (!gid || json_is_null(gid) || json_is_integer(gid)),
            "container \"%s\" %s", name,
            driver_gid ? "runs in the driver's group" : "runs in a group of its own (runAsGroup)");

        json_t *caps = json_object_get(json_object_get(sc, "capabilities"), "add");
        if (!caps || json_is_null(caps) || (json_is_array(caps) && json_array_size(caps) == 0)) {
                add(f, cap_code, SHAPECHECK_POD, true, "container \"%s\" adds no capabilities",
                    name);
                return;
        }
        const char *first = json_string_value(json_array_get(caps, 0));
        add(f, cap_code, SHAPECHECK_POD, false,
            "container \"%s\" adds capabilities (%s%s): nothing beside the driver may", name,
            first ? first : "not a list of names", json_array_size(caps) > 1 ? ", ..." : "");
}

static void check_identities(const hg_config_t *cfg, findings_t *f, json_t *pod)
{
        for (podview_list_t l = 0; l < PODVIEW_LIST_COUNT; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(podview_spec(pod), podview_list_name(l)), i,
                                    c) {
                        shape_role_t role = role_in(cfg, pod, podview_list_name(l), name_of(c));
                        if (role != SHAPE_ROLE_DRIVER && role != SHAPE_ROLE_BIN_COPIER)
                                check_identity(cfg, f, pod, c, role == SHAPE_ROLE_AGENT);
                }
        }
}

/* How the annotations are read: before the webhook injects (the six keys
 * it writes are about to be replaced, so only their names matter), or as
 * stored (after every mutating admission step: their values are what
 * gVisor will read, whoever wrote them last). */
typedef enum hint_reading {
        HINTS_BEFORE_INJECTION,
        HINTS_AS_STORED,
} hint_reading_t;

static void check_annotations(const hg_config_t *cfg, findings_t *f, json_t *pod,
                              hint_reading_t reading);

static void check(const hg_config_t *cfg, findings_t *f, json_t *pod)
{
        char why[ERROR_MESSAGE_MAX];
        const char *problem = shape_agent_problem(cfg, pod, why, sizeof(why));
        json_t *agent =
            problem ? NULL : podview_container(pod, "containers", shape_agent_name(cfg, pod));
        if (!agent) {
                add(f, "spec.no-agent", SHAPECHECK_SIDECAR, false, "%s",
                    problem ? problem : "the pod has no agent container");
                return;
        }
        check_driver(cfg, f, pod, agent);
        check_copier(cfg, f, pod);
        check_volumes(cfg, f, pod);
        check_mounts(cfg, f, pod, agent);
        check_pod_level(f, pod);
        check_identities(cfg, f, pod);
        check_annotations(cfg, f, pod, HINTS_AS_STORED);
}

/* Whether a container of the list can run while the agent's does: every
 * regular container, an init container that restarts (a native sidecar:
 * it keeps running beside the others), every ephemeral container (it is
 * added to a running pod and is never removed). A plain init container
 * ended before any regular container started. */
static bool runs_beside_agent(const char *list, json_t *c)
{
        if (strcmp(list, "initContainers") != 0)
                return true;
        const char *policy = NULL;
        return jsonx_string(c, "restartPolicy", &policy) == 0 && strcmp(policy, "Always") == 0;
}

json_t *shapecheck_other_containers(const hg_config_t *cfg, json_t *pod)
{
        json_t *names = json_array();
        for (podview_list_t l = 0; names && l < PODVIEW_LIST_COUNT; l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(podview_spec(pod), podview_list_name(l)), i,
                                    c) {
                        shape_role_t role = role_in(cfg, pod, podview_list_name(l), name_of(c));
                        if (role == SHAPE_ROLE_AGENT || role == SHAPE_ROLE_DRIVER ||
                            !runs_beside_agent(podview_list_name(l), c))
                                continue;
                        if (json_array_append_new(names, json_string(name_of(c))) < 0) {
                                json_decref(names);
                                return NULL;
                        }
                }
        }
        return names;
}

json_t *shapecheck_pod(const hg_config_t *cfg, json_t *pod, bool *ret_pass)
{
        findings_t f = {.checks = json_array()};
        if (!f.checks)
                return NULL;
        check(cfg, &f, pod);
        json_t *others = shapecheck_other_containers(cfg, pod);
        if (f.oom || !others) {
                json_decref(f.checks);
                json_decref(others);
                return NULL;
        }
        *ret_pass = !f.failed;
        return json_pack("{s:s, s:o, s:o}", "result", f.failed ? "fail" : "pass", "checks",
                         f.checks, "other_containers", others);
}

#define GVISOR_MOUNT_PREFIX     "dev.gvisor.spec.mount."
#define GVISOR_EMPTY_DIR_PREFIX "dev.gvisor.empty-dir."
#define GVISOR_FLAG_PREFIX      "dev.gvisor.flag."
#define DRIVER_APPARMOR_KEY     "container.apparmor.security.beta.kubernetes.io/" SHAPE_DRIVER_CONTAINER

static bool starts_with(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The hangar volume a key of the form PREFIX NAME.FIELD is for (NAME as the
 * shim splits it, up to the first dot), else -1; *ret_field is the rest
 * after that dot ("" when there is none), which may hold more dots. */
static int hinted_hangar_volume(const hg_config_t *cfg, const char *key, const char *prefix,
                                const char **ret_field)
{
        const char *name = key + strlen(prefix);
        size_t len = strcspn(name, ".");
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                if (shape_volume_used(cfg, v) && strlen(shape_volume_name(v)) == len &&
                    strncmp(name, shape_volume_name(v), len) == 0) {
                        *ret_field = name[len] == '.' ? name + len + 1 : name + len;
                        return (int)v;
                }
        return -1;
}

/* Whether key is one of the six the webhook writes for v on a gVisor pod. */
static bool written_by_webhook(const hg_config_t *cfg, shape_volume_t v, const char *key)
{
        if (!shape_volume_hinted(cfg, v))
                return false; /* an image volume: the shim's to mount, no hint */
        for (unsigned i = 0; i < SHAPE_GVISOR_ANNOTATIONS; i++) {
                const char *ours;
                char value[96];
                if (shape_gvisor_annotation(cfg, v, i, &ours, value, sizeof(value)) == 0 &&
                    strcmp(ours, key) == 0)
                        return true;
        }
        return false;
}

/* Whether one element of a hint's options (comma-separated) keeps v's
 * shape: rw (gVisor's default) and rprivate (no mount inside the sandbox
 * propagates anywhere) change nothing; hangar-ctl's size= must be the one
 * the webhook writes (volumes.ctl.sizeLimit). Anything else is refused,
 * known or not: ro makes the shared master read-only (the driver could not
 * write it, and runsc refuses its writable mount), noexec, nosuid and the
 * like bind every mount of the volume to them. */
static bool option_keeps_shape(const hg_config_t *cfg, shape_volume_t v, const char *opt,
                               size_t len)
{
        if ((len == 2 && strncmp(opt, "rw", len) == 0) ||
            (len == 8 && strncmp(opt, "rprivate", len) == 0))
                return true;
        if (v == SHAPE_VOLUME_HOME)
                return false;
        const char *key;
        char ours[96];
        if (shape_gvisor_annotation(cfg, v, 2, &key, ours, sizeof(ours)) < 0)
                return false;
        const char *size = strstr(ours, ",size=");
        return size && strlen(size + 1) == len && strncmp(opt, size + 1, len) == 0;
}

/* Whether value, stored for field of hangar volume v's gVisor mount hint
 * on a gVisor pod, mounts v as hangar's shape says (inside the sandbox,
 * shared by the driver with whoever the shape lets mount it; hangar-ctl in
 * the sandbox's memory). What GKE Sandbox's admission writes for an
 * emptyDir agrees (docs/research/gke-sandbox-annotations.md): share pod,
 * or container where one container mounts it (runsc makes the same
 * sandbox-owned mount for both), type tmpfs for a Memory emptyDir and bind
 * for a disk one, options rw. Else *ret_why says what it would change. */
static bool hint_keeps_shape(const hg_config_t *cfg, shape_volume_t v, const char *field,
                             const char *value, const char **ret_why)
{
        bool ctl = v != SHAPE_VOLUME_HOME; /* a memory volume: hangar-ctl, hangar-bin */
        if (strcmp(field, "share") == 0) {
                /* container or pod: at this runsc one sentry-owned mount
                 * either way, shared by every container that mounts the
                 * volume and kept across restarts (ShouldShareMount); GKE
                 * writes container where it counts one container, which
                 * for hangar-home depends on whether it counts init
                 * containers (a native-sidecar driver). Seen on a node:
                 * the agent reads the driver's writes under both. */
                if (strcmp(value, "pod") == 0 || strcmp(value, "container") == 0)
                        return true;
                *ret_why = strcmp(value, "shared") == 0
                               ? "share=shared has gVisor serve it from the node through the "
                                 "gofer, as a volume shared outside the pod"
                               : "gVisor drops a hint with a share it does not know and mounts the "
                                 "volume from the node through the gofer";
                return false;
        }
        if (strcmp(field, "type") == 0) {
                if (strcmp(value, ctl ? "tmpfs" : "bind") == 0)
                        return true;
                *ret_why = ctl ? "only type=tmpfs keeps it in the sandbox's memory (bind backs it "
                                 "with a file in the node's copy of the volume)"
                               : "only type=bind (a disk emptyDir's) keeps it the sandbox's own "
                                 "disk-backed mount (tmpfs moves it into memory)";
                return false;
        }
        if (strcmp(field, "options") == 0) {
                for (const char *opt = value;;) {
                        size_t len = strcspn(opt, ",");
                        if (!option_keeps_shape(cfg, v, opt, len)) {
                                *ret_why =
                                    "its options may hold only rw, rprivate and "
                                    "(for " SHAPE_CTL_VOLUME
                                    ") the size= the webhook writes (volumes.ctl.sizeLimit): "
                                    "ro would stop the driver writing it, other options bind "
                                    "every mount of it";
                                return false;
                        }
                        if (!opt[len])
                                return true;
                        opt += len + 1;
                }
        }
        *ret_why =
            "it is no field hangar's shape has (source, directfs or a key the shim and runsc "
            "read differently would move the volume out of the sandbox or fail it)";
        return false;
}

/* Whether value turns the shim's emptyDir optimisation off for the volume
 * (dev.gvisor.empty-dir.NAME.force-shared): the shim reads it with Go's
 * ParseBool and counts anything unparsable as false. Only a spelling of
 * false is taken as one. */
static bool is_false(const char *value)
{
        static const char *const spellings[] = {"false", "False", "FALSE", "f", "F", "0"};
        for (size_t i = 0; i < ARRAY_SIZE(spellings); i++)
                if (strcmp(value, spellings[i]) == 0)
                        return true;
        return false;
}

/* Whether path has a component that is a hangar volume's name: the
 * kubelet's directory of one (.../volumes/kubernetes.io~empty-dir/hangar-ctl)
 * or anything under it. */
static bool names_hangar_volume_path(const hg_config_t *cfg, const char *path)
{
        while (*path) {
                path += strspn(path, "/");
                size_t len = strcspn(path, "/");
                for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                        if (len && shape_volume_used(cfg, v) &&
                            strlen(shape_volume_name(v)) == len &&
                            strncmp(path, shape_volume_name(v), len) == 0)
                                return true;
                path += len;
        }
        return false;
}

/* One annotation of the pod; a failure is added to f. */
static void check_annotation(const hg_config_t *cfg, findings_t *f, hint_reading_t reading,
                             bool gvisor, bool pod_default, const char *key, json_t *value)
{
        const char *text = json_string_value(value);
        const char *field = "";
        if (starts_with(key, GVISOR_MOUNT_PREFIX)) {
                int v = hinted_hangar_volume(cfg, key, GVISOR_MOUNT_PREFIX, &field);
                size_t len = strlen(key);
                const char *why = NULL;
                if (v >= 0 && !(gvisor && written_by_webhook(cfg, v, key)))
                        add(f, "spec.annotations", SHAPECHECK_SIDECAR, false,
                            "annotation \"%s\" is a gVisor mount hint for %s, whose hints are "
                            "share, type and options, on pods of a gVisor RuntimeClass only",
                            key, shape_volume_name(v));
                else if (v >= 0 && reading == HINTS_AS_STORED &&
                         (!text || !hint_keeps_shape(cfg, v, field, text, &why)))
                        add(f, "spec.annotations", SHAPECHECK_SIDECAR, false,
                            "annotation \"%s\" is \"%s\", which changes how gVisor mounts %s: %s",
                            key, text ? text : "not a string", shape_volume_name(v),
                            why ? why : "a hint's value is a string");
                else if (v < 0 && len > 7 && strcmp(key + len - 7, ".source") == 0 &&
                         (!text || names_hangar_volume_path(cfg, text)))
                        add(f, "spec.annotations", SHAPECHECK_SIDECAR, false,
                            "annotation \"%s\" points a gVisor mount hint at a hangar "
                            "volume's directory",
                            key);
        } else if (starts_with(key, GVISOR_EMPTY_DIR_PREFIX)) {
                int v = hinted_hangar_volume(cfg, key, GVISOR_EMPTY_DIR_PREFIX, &field);
                if (v >= 0 && !(strcmp(field, "force-shared") == 0 && text && is_false(text)))
                        add(f, "spec.annotations", SHAPECHECK_SIDECAR, false,
                            "annotation \"%s\" turns the shim's emptyDir handling of %s off "
                            "(force-shared serves it from the node through the gofer); only "
                            "false keeps hangar's shape",
                            key, shape_volume_name(v));
        } else if (starts_with(key, GVISOR_FLAG_PREFIX)) {
                add(f, "spec.annotations", SHAPECHECK_SIDECAR, false,
                    "annotation \"%s\" overrides a runsc flag for the sandbox the "
                    "driver runs in; set runsc's flags on the node instead",
                    key);
        } else if (strcmp(key, DRIVER_APPARMOR_KEY) == 0 &&
                   !(pod_default && text && strcmp(text, "runtime/default") == 0)) {
                /* The API server copies it onto the driver's
                 * securityContext (the shape's, which sets none)
                 * unless it equals the pod-level profile: only the
                 * one it writes itself from a RuntimeDefault there. */
                add(f, "spec.annotations", SHAPECHECK_SIDECAR, false,
                    "annotation \"%s\" gives %s an AppArmor profile of its own (only "
                    "runtime/default beside a pod-level RuntimeDefault is the driver's)",
                    key, SHAPE_DRIVER_CONTAINER);
        }
}

/* As stored, a gVisor pod needs share and type for both hangar volumes:
 * runsc drops a hint that lacks either, and the shim a volume without a
 * type, and the volume is then mounted from the node through the gofer
 * (hangar-ctl's secrets in the node's tmpfs). Options may be missing: the
 * mount is then rw, without hangar-ctl's size= (its pages still count
 * against the pod's memory). */
static void check_hints_present(const hg_config_t *cfg, findings_t *f, json_t *annotations)
{
        static const char *const needed[] = {"share", "type"};
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                for (size_t i = 0; shape_volume_hinted(cfg, v) && i < ARRAY_SIZE(needed); i++) {
                        char key[96];
                        (void)snprintf(key, sizeof(key), GVISOR_MOUNT_PREFIX "%s.%s",
                                       shape_volume_name(v), needed[i]);
                        if (!json_object_get(annotations, key))
                                add(f, "spec.annotations", SHAPECHECK_SIDECAR, false,
                                    "annotation \"%s\" is missing on a pod of a gVisor "
                                    "RuntimeClass: without it gVisor mounts %s from the node "
                                    "through the gofer",
                                    key, shape_volume_name(v));
                }
}

/* The pod's annotations against the shape (shapecheck_annotations says
 * which); adds one passing finding when none fails. */
static void check_annotations(const hg_config_t *cfg, findings_t *f, json_t *pod,
                              hint_reading_t reading)
{
        bool failed_before = f->failed;
        f->failed = false;
        bool gvisor = podview_runs_under_gvisor(cfg, podview_spec(pod));
        json_t *profile = json_object_get(json_object_get(podview_spec(pod), "securityContext"),
                                          "appArmorProfile");
        const char *type = NULL;
        bool pod_default =
            jsonx_string(profile, "type", &type) == 0 && strcmp(type, "RuntimeDefault") == 0;
        json_t *annotations = json_object_get(json_object_get(pod, "metadata"), "annotations");
        const char *key;
        json_t *value;
        json_object_foreach (annotations, key, value) {
                check_annotation(cfg, f, reading, gvisor, pod_default, key, value);
                if (f->found)
                        break;
        }
        if (!f->found && gvisor && reading == HINTS_AS_STORED)
                check_hints_present(cfg, f, annotations);
        /* A pod-level profile is every container's without one of its own,
         * the driver's included (the kubelet applies it). */
        if (!f->found && profile && !json_is_null(profile) && !pod_default)
                add(f, "spec.annotations", SHAPECHECK_SIDECAR, false,
                    "spec.securityContext.appArmorProfile applies to %s too and is not "
                    "RuntimeDefault; set it per container",
                    SHAPE_DRIVER_CONTAINER);
        if (!f->failed)
                add(f, "spec.annotations", SHAPECHECK_SIDECAR, true,
                    "the pod's gVisor and AppArmor annotations keep %s's shape",
                    SHAPE_DRIVER_CONTAINER);
        f->failed = f->failed || failed_before;
}

int shapecheck_annotations(const hg_config_t *cfg, json_t *pod, shapecheck_finding_t *ret)
{
        findings_t f = {.first = ret};
        check_annotations(cfg, &f, pod, HINTS_BEFORE_INJECTION);
        return f.found ? 1 : 0;
}

int shapecheck_sidecar(const hg_config_t *cfg, json_t *pod, shapecheck_finding_t *ret)
{
        findings_t f = {.first = ret};
        check(cfg, &f, pod);
        if (f.oom)
                return -ENOMEM;
        return f.found ? 1 : 0;
}
