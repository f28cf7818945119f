#include "shapecheck.h"

#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "shape.h"

bool shapecheck_subset(json_t *expected, json_t *actual)
{
        if (json_is_object(expected)) {
                if (!json_is_object(actual))
                        return false;
                const char *key;
                json_t *v;
                json_object_foreach (expected, key, v) {
                        if (!shapecheck_subset(v, json_object_get(actual, key)))
                                return false;
                }
                return true;
        }
        if (json_is_array(expected)) {
                if (!json_is_array(actual) || json_array_size(actual) != json_array_size(expected))
                        return false;
                for (size_t i = 0; i < json_array_size(expected); i++)
                        if (!shapecheck_subset(json_array_get(expected, i),
                                               json_array_get(actual, i)))
                                return false;
                return true;
        }
        return json_equal(expected, actual);
}

typedef struct findings {
        json_t *checks;
        bool failed;
} findings_t;

static void add(findings_t *f, const char *code, bool pass, const char *detail)
{
        json_t *c = json_pack("{s:s, s:s, s:s}", "code", code, "status", pass ? "pass" : "fail",
                              "detail", detail);
        if (!c || json_array_append_new(f->checks, c) < 0)
                f->failed = true;
        if (!pass)
                f->failed = true;
}

static json_t *containers(json_t *pod, const char *list)
{
        return json_object_get(json_object_get(pod, "spec"), list);
}

static json_t *find_container(json_t *pod, const char *name)
{
        size_t i;
        json_t *c;
        json_array_foreach (containers(pod, "containers"), i, c) {
                const char *n;
                if (jsonx_string(c, "name", &n) == 0 && strcmp(n, name) == 0)
                        return c;
        }
        return NULL;
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

shape_role_t shapecheck_role(const hg_config_t *cfg, const char *list, const char *name)
{
        if (strcmp(list, "containers") != 0)
                return SHAPE_ROLE_OTHER;
        return strcmp(name, cfg->agent_container) == 0     ? SHAPE_ROLE_AGENT
               : strcmp(name, SHAPE_DRIVER_CONTAINER) == 0 ? SHAPE_ROLE_DRIVER
                                                           : SHAPE_ROLE_OTHER;
}

static void check_mounts(const hg_config_t *cfg, findings_t *f, json_t *pod)
{
        static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
        for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
                size_t i;
                json_t *c;
                json_array_foreach (containers(pod, lists[l]), i, c) {
                        const char *name = "";
                        (void)jsonx_string(c, "name", &name);
                        shape_role_t role = shapecheck_role(cfg, lists[l], name);
                        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                                shape_access_t want = shape_mount_access(role, v);
                                shape_access_t have = shapecheck_mount_access(c, v);
                                if (want == SHAPE_ACCESS_UNCHECKED)
                                        continue;
                                char detail[256];
                                (void)snprintf(detail, sizeof(detail),
                                               "container \"%s\" (%s) mounts %s %s; expected %s",
                                               name, shape_role_name(role), shape_volume_name(v),
                                               shape_access_name(have), shape_access_name(want));
                                add(f, "spec.mount", have == want, detail);
                        }
                }
        }
}

static void check_volumes(const hg_config_t *cfg, findings_t *f, json_t *pod)
{
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                _cleanup_json_ json_t *want = shape_volume_json(cfg, v);
                json_t *have = NULL;
                size_t i;
                json_t *vol;
                json_array_foreach (json_object_get(json_object_get(pod, "spec"), "volumes"), i,
                                    vol) {
                        const char *n;
                        if (jsonx_string(vol, "name", &n) == 0 &&
                            strcmp(n, shape_volume_name(v)) == 0)
                                have = vol;
                }
                char detail[160];
                (void)snprintf(detail, sizeof(detail), "volume %s %s", shape_volume_name(v),
                               !have ? "is missing" : "as the shape says");
                bool ok = have && shapecheck_subset(want, have);
                if (have && !ok)
                        (void)snprintf(detail, sizeof(detail), "volume %s differs from the shape",
                                       shape_volume_name(v));
                add(f, "spec.volume", ok, detail);
        }
}

static void check_driver(const hg_config_t *cfg, findings_t *f, json_t *pod, json_t *agent)
{
        json_t *driver = find_container(pod, SHAPE_DRIVER_CONTAINER);
        if (!driver) {
                add(f, "spec.no-driver", false,
                    "the pod has no " SHAPE_DRIVER_CONTAINER " container");
                return;
        }
        const char *image = "";
        (void)jsonx_string(agent, "image", &image);
        _cleanup_json_ json_t *want = shape_driver_container_json(cfg, image);
        /* The command is the operator's to change; everything else is the shape. */
        if (want)
                (void)json_object_del(want, "command");
        const char *key;
        json_t *v;
        /* Extra members are API defaults, except ones that loosen the
         * driver's securityContext: added capabilities, an unmasked /proc. */
        json_t *sc = json_object_get(driver, "securityContext");
        json_t *added = json_object_get(json_object_get(sc, "capabilities"), "add");
        add(f, "spec.driver", json_array_size(added) == 0,
            SHAPE_DRIVER_CONTAINER ".securityContext.capabilities.add must be empty");
        const char *proc_mount = "Default";
        (void)jsonx_string(sc, "procMount", &proc_mount);
        add(f, "spec.driver", strcmp(proc_mount, "Default") == 0,
            SHAPE_DRIVER_CONTAINER ".securityContext.procMount must be Default");
        json_object_foreach (want, key, v) {
                bool ok = shapecheck_subset(v, json_object_get(driver, key));
                char detail[160];
                (void)snprintf(detail, sizeof(detail), "%s.%s %s", SHAPE_DRIVER_CONTAINER, key,
                               ok ? "as the shape says" : "differs from the shape");
                add(f, "spec.driver", ok, detail);
        }
}

static void check_pod_level(const hg_config_t *cfg, findings_t *f, json_t *pod, json_t *agent)
{
        json_t *spec = json_object_get(pod, "spec");
        add(f, "spec.share-process-namespace",
            !json_is_true(json_object_get(spec, "shareProcessNamespace")),
            "shareProcessNamespace must not be true");
        add(f, "spec.host-pid", !json_is_true(json_object_get(spec, "hostPID")),
            "hostPID must not be true");
        static const char *const lists[] = {"initContainers", "containers", "ephemeralContainers"};
        for (size_t l = 0; l < ARRAY_SIZE(lists); l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(spec, lists[l]), i, c) {
                        json_t *sc = json_object_get(c, "securityContext");
                        const char *name = "";
                        (void)jsonx_string(c, "name", &name);
                        char detail[160];
                        (void)snprintf(detail, sizeof(detail),
                                       "container \"%s\" must not be privileged", name);
                        add(f, "spec.privileged", !json_is_true(json_object_get(sc, "privileged")),
                            detail);
                }
        }
        /* Capabilities that would reach across the split (the in-container
         * check sees the effective sets; this is what the spec asks for). */
        static const char *const forbidden[] = {"SYS_PTRACE",      "SYS_ADMIN", "DAC_OVERRIDE",
                                                "DAC_READ_SEARCH", "FOWNER",    "KILL",
                                                "SETUID",          "SETGID",    "ALL"};
        json_t *add_caps = json_object_get(
            json_object_get(json_object_get(agent, "securityContext"), "capabilities"), "add");
        const char *bad = NULL;
        size_t k;
        json_t *cap;
        json_array_foreach (add_caps, k, cap) {
                const char *name = json_string_value(cap);
                if (!name)
                        continue;
                if (strncmp(name, "CAP_", 4) == 0)
                        name += 4;
                for (size_t j = 0; j < ARRAY_SIZE(forbidden) && !bad; j++)
                        if (strcmp(name, forbidden[j]) == 0)
                                bad = json_string_value(cap);
        }
        char cap_detail[160];
        (void)snprintf(cap_detail, sizeof(cap_detail), "the agent must not add %s",
                       bad ? bad : "SYS_PTRACE, SYS_ADMIN, DAC_*, FOWNER, KILL or SET[UG]ID");
        add(f, "spec.agent-capabilities", !bad, cap_detail);
        /* The agent must not run as the driver's uid. */
        json_t *uid = json_object_get(json_object_get(agent, "securityContext"), "runAsUser");
        if (!uid)
                uid = json_object_get(json_object_get(spec, "securityContext"), "runAsUser");
        bool same = json_is_integer(uid) && json_integer_value(uid) == (json_int_t)cfg->driver_uid;
        add(f, "spec.agent-uid", !same, "the agent must not run as the driver's uid");
}

json_t *shapecheck_pod(const hg_config_t *cfg, json_t *pod, bool *ret_pass)
{
        findings_t f = {.checks = json_array()};
        if (!f.checks)
                return NULL;
        json_t *agent = find_container(pod, cfg->agent_container);
        if (!agent) {
                char detail[160];
                (void)snprintf(detail, sizeof(detail), "the pod has no container named \"%s\"",
                               cfg->agent_container);
                add(&f, "spec.no-agent", false, detail);
        } else {
                check_driver(cfg, &f, pod, agent);
                check_volumes(cfg, &f, pod);
                check_mounts(cfg, &f, pod);
                check_pod_level(cfg, &f, pod, agent);
        }
        *ret_pass = !f.failed;
        return json_pack("{s:s, s:o}", "result", f.failed ? "fail" : "pass", "checks", f.checks);
}
