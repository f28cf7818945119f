/* guard.c: the doors into an injected pod after CREATE. The injected pod is
 * the webhook's own output (mutate_pod on a sandbox pod), so the rules are
 * checked against what the API server would really hold. */
#include <errno.h>
#include <string.h>

#include "admission.h"
#include "cleanup.h"
#include "guard.h"
#include "mutate.h"
#include "settings.h"
#include "unit.h"

static webhook_settings_t cfg;

static void setup(void)
{
        ck_assert_int_eq(settings_init_defaults(&cfg), 0);
        cfg.driver_sidecar = true;
        hg_error_t err = {0};
        ck_assert_int_eq(
            settings_set(&cfg, "guard.driverUsers=[\"system:serviceaccount:hangar:hangar\"]", &err),
            0);
        ck_assert_int_eq(settings_set(&cfg, "guard.driverGroups=[\"hangar-operators\"]", &err), 0);
}

static void teardown(void)
{
        settings_free(&cfg);
}

static const char *sandbox_pod =
    "{\"metadata\": {\"name\": \"p\", \"labels\": {\"hangar.dev/sandbox\": \"true\"}},"
    " \"spec\": {\"securityContext\": {\"runAsUser\": 1000, \"runAsGroup\": 1000},"
    "  \"containers\": [{\"name\": \"sandbox\", \"image\": \"env:1\"}]}}";

/* The sandbox pod as the webhook injects it. */
static json_t *injected_pod(void)
{
        json_t *pod = unit_json(sandbox_pod);
        mutate_result_t r;
        ck_assert_int_eq(mutate_pod(&cfg, pod, &r), 0);
        ck_assert_int_eq(r.decision, DECISION_INJECT);
        mutate_result_free(&r);
        return pod;
}

static mutate_reason_t decide(const char *op, const char *sub, const char *user, json_t *object,
                              json_t *old, json_t *pod)
{
        _unit_json_ json_t *groups = unit_json("[\"system:authenticated\"]");
        guard_request_t req = {.operation = op,
                               .resource = "pods",
                               .subresource = sub,
                               .username = user,
                               .groups = groups,
                               .object = object,
                               .old_object = old,
                               .pod = pod};
        mutate_result_t r;
        guard_decide(&cfg, &req, &r);
        ck_assert_msg(r.patch == NULL, "the guard never patches");
        ck_assert_msg(r.detail[0], "every answer says why");
        ck_assert_int_eq(r.decision, mutate_reason_decision(r.reason));
        return r.reason;
}

START_TEST(exec_into_driver_listed_only)
{
        _unit_json_ json_t *to_driver = unit_json("{\"container\": \"hangar-driver\"}");
        _unit_json_ json_t *to_agent = unit_json("{\"container\": \"sandbox\"}");
        _unit_json_ json_t *unnamed = unit_json("{\"stdin\": true}");
        const char *subs[] = {"exec", "attach"};
        for (size_t i = 0; i < 2; i++) {
                ck_assert_int_eq(decide("CONNECT", subs[i], "alice", to_driver, NULL, NULL),
                                 REASON_DRIVER_EXEC);
                ck_assert_int_eq(decide("CONNECT", subs[i], "system:admin", to_driver, NULL, NULL),
                                 REASON_DRIVER_EXEC);
                ck_assert_int_eq(decide("CONNECT", subs[i], "system:serviceaccount:hangar:hangar",
                                        to_driver, NULL, NULL),
                                 REASON_LISTED_IDENTITY);
                ck_assert_int_eq(decide("CONNECT", subs[i], "alice", to_agent, NULL, NULL),
                                 REASON_NOT_GUARDED);
                /* The API server refuses no container name on a pod of two. */
                ck_assert_int_eq(decide("CONNECT", subs[i], "alice", unnamed, NULL, NULL),
                                 REASON_NOT_GUARDED);
        }
        /* A listed group opens it too; a name that only looks alike does not. */
        _unit_json_ json_t *ops = unit_json("[\"hangar-operators\"]");
        guard_request_t req = {.operation = "CONNECT",
                               .resource = "pods",
                               .subresource = "exec",
                               .username = "bob",
                               .groups = ops,
                               .object = to_driver};
        mutate_result_t r;
        guard_decide(&cfg, &req, &r);
        ck_assert_int_eq(r.reason, REASON_LISTED_IDENTITY);
        ck_assert_int_eq(decide("CONNECT", "exec", "system:serviceaccount:hangar:hangar2",
                                to_driver, NULL, NULL),
                         REASON_DRIVER_EXEC);
        ck_assert_int_eq(decide("CONNECT", "exec", NULL, to_driver, NULL, NULL),
                         REASON_DRIVER_EXEC);
        /* hangar's service account's name in another namespace, or in
         * another case, is someone else; a group spelt like it is a group. */
        ck_assert_int_eq(decide("CONNECT", "exec", "system:serviceaccount:sandboxes:hangar",
                                to_driver, NULL, NULL),
                         REASON_DRIVER_EXEC);
        ck_assert_int_eq(
            decide("CONNECT", "exec", "System:ServiceAccount:hangar:hangar", to_driver, NULL, NULL),
            REASON_DRIVER_EXEC);
        _unit_json_ json_t *lookalike = unit_json("[\"system:serviceaccount:hangar:hangar\"]");
        req.username = "mallory";
        req.groups = lookalike;
        guard_decide(&cfg, &req, &r);
        ck_assert_int_eq(r.reason, REASON_DRIVER_EXEC);
}
END_TEST

/* Options the API server never sends are not guessed at: no options, or a
 * container that is not a name, would have passed as "not the driver". */
START_TEST(exec_options_malformed)
{
        _unit_json_ json_t *numbered = unit_json("{\"container\": 1}");
        _unit_json_ json_t *listed = unit_json("{\"container\": [\"hangar-driver\"]}");
        _unit_json_ json_t *not_options = unit_json("[\"hangar-driver\"]");
        const char *subs[] = {"exec", "attach"};
        for (size_t i = 0; i < 2; i++) {
                ck_assert_int_eq(decide("CONNECT", subs[i], "alice", NULL, NULL, NULL),
                                 REASON_INVALID_POD);
                ck_assert_int_eq(decide("CONNECT", subs[i], "alice", numbered, NULL, NULL),
                                 REASON_INVALID_POD);
                ck_assert_int_eq(decide("CONNECT", subs[i], "alice", listed, NULL, NULL),
                                 REASON_INVALID_POD);
                ck_assert_int_eq(decide("CONNECT", subs[i], "alice", not_options, NULL, NULL),
                                 REASON_INVALID_POD);
        }
        /* A name the API server would not find is not the driver (it refuses
         * the exec: container names are exact). */
        _unit_json_ json_t *spaced = unit_json("{\"container\": \"hangar-driver \"}");
        ck_assert_int_eq(decide("CONNECT", "exec", "alice", spaced, NULL, NULL),
                         REASON_NOT_GUARDED);
}
END_TEST

START_TEST(port_forward_needs_the_pod)
{
        _unit_json_ json_t *opts = unit_json("{\"ports\": [8080]}");
        _unit_json_ json_t *injected = injected_pod();
        _unit_json_ json_t *plain = unit_json(sandbox_pod);
        ck_assert(guard_needs_pod("CONNECT", "portforward"));
        ck_assert(!guard_needs_pod("CONNECT", "exec"));
        ck_assert_int_eq(decide("CONNECT", "portforward", "alice", opts, NULL, NULL),
                         REASON_POD_UNKNOWN);
        ck_assert_int_eq(decide("CONNECT", "portforward", "alice", opts, NULL, injected),
                         REASON_PORT_FORWARD);
        ck_assert_int_eq(decide("CONNECT", "portforward", "system:serviceaccount:hangar:hangar",
                                opts, NULL, injected),
                         REASON_LISTED_IDENTITY);
        ck_assert_int_eq(decide("CONNECT", "portforward", "alice", opts, NULL, plain),
                         REASON_NOT_GUARDED);
        /* Unknown CONNECT subresources fail closed. */
        ck_assert_int_eq(decide("CONNECT", "shell", "alice", opts, NULL, injected),
                         REASON_UNKNOWN_DOOR);
}
END_TEST

/* old with one ephemeral container added (JSON text of its members). */
static json_t *with_ephemeral(json_t *old, const char *container)
{
        json_t *pod = json_deep_copy(old);
        json_t *spec = json_object_get(pod, "spec");
        json_t *list = json_object_get(spec, "ephemeralContainers");
        if (!list) {
                list = json_array();
                json_object_set_new(spec, "ephemeralContainers", list);
        }
        json_array_append_new(list, unit_json(container));
        return pod;
}

START_TEST(ephemeral_containers)
{
        _unit_json_ json_t *old = injected_pod();
        static const struct {
                const char *container;
                mutate_reason_t want;
        } cases[] = {
            /* kubectl debug --profile=restricted, as a uid of its own */
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"runAsUser\": 2000}}",
             REASON_NOT_GUARDED},
            /* the pod's runAsUser (1000) counts */
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false}}",
             REASON_NOT_GUARDED},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"targetContainerName\": "
             "\"hangar-driver\", "
             "\"securityContext\": {\"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"volumeMounts\": [{\"name\": "
             "\"hangar-ctl\", \"mountPath\": \"/x\"}], \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"volumeMounts\": [{\"name\": "
             "\"hangar-home\", \"mountPath\": \"/x\", \"readOnly\": true}], \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"runAsUser\": 1001}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"runAsUser\": 0}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"runAsGroup\": 1001}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"capabilities\": {\"add\": "
             "[\"SYS_PTRACE\"]}}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"privileged\": true}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"procMount\": \"Unmasked\"}}",
             REASON_EPHEMERAL_CONTAINER},
            /* no no_new_privs: a setuid binary in the image is root */
            {"{\"name\": \"d\", \"image\": \"busybox\"}", REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": true, \"runAsUser\": 2000}}",
             REASON_EPHEMERAL_CONTAINER},
            /* hangar-ctl as a block device: the API server refuses an
             * emptyDir there, the guard does not count on it */
            {"{\"name\": \"d\", \"image\": \"busybox\", \"volumeDevices\": [{\"name\": "
             "\"hangar-ctl\", \"devicePath\": \"/dev/x\"}], \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"volumeDevices\": [{\"name\": "
             "\"hangar-home\", \"devicePath\": \"/dev/x\"}], \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            /* runAsNonRoot false says nothing of the uid: the pod's counts */
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"runAsNonRoot\": false}}",
             REASON_NOT_GUARDED},
            /* a runAsUser that is not a number is no uid: malformed */
            {"{\"name\": \"d\", \"image\": \"busybox\", \"securityContext\": "
             "{\"allowPrivilegeEscalation\": false, \"runAsUser\": \"2000\"}}",
             REASON_INVALID_POD},
            {"{\"name\": \"d\", \"image\": \"busybox\", \"targetContainerName\": "
             "\"sandbox\", \"securityContext\": {\"allowPrivilegeEscalation\": false}}",
             REASON_NOT_GUARDED},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _unit_json_ json_t *new = with_ephemeral(old, cases[i].container);
                mutate_reason_t got =
                    decide("UPDATE", "ephemeralcontainers", "alice", new, old, NULL);
                ck_assert_msg(got == cases[i].want, "case %zu: got %s, want %s", i,
                              mutate_reason_name(got), mutate_reason_name(cases[i].want));
        }
        /* A pod without a runAsUser anywhere: the image decides, refused. */
        _unit_json_ json_t *no_uid = json_deep_copy(old);
        json_object_del(json_object_get(no_uid, "spec"), "securityContext");
        _unit_json_ json_t *added = with_ephemeral(
            no_uid,
            "{\"name\": \"d\", \"securityContext\": {\"allowPrivilegeEscalation\": false}}");
        ck_assert_int_eq(decide("UPDATE", "ephemeralcontainers", "alice", added, no_uid, NULL),
                         REASON_EPHEMERAL_CONTAINER);
        /* One already there was judged when added: only new ones count. */
        _unit_json_ json_t *had = with_ephemeral(old, "{\"name\": \"old\"}");
        _unit_json_ json_t *more = with_ephemeral(
            had, "{\"name\": \"d\", \"securityContext\": {\"allowPrivilegeEscalation\": false}}");
        ck_assert_int_eq(decide("UPDATE", "ephemeralcontainers", "alice", more, had, NULL),
                         REASON_NOT_GUARDED);
        /* One already there but changed (the API server refuses that too) is
         * judged as new: it once passed as "already there" by its name. */
        _unit_json_ json_t *retargeted = json_deep_copy(had);
        json_object_set_new(
            json_array_get(
                json_object_get(json_object_get(retargeted, "spec"), "ephemeralContainers"), 0),
            "targetContainerName", json_string("hangar-driver"));
        ck_assert_int_eq(decide("UPDATE", "ephemeralcontainers", "alice", retargeted, had, NULL),
                         REASON_EPHEMERAL_CONTAINER);
        /* Several added at once: the second one's fault is found. */
        _unit_json_ json_t *good = with_ephemeral(
            old, "{\"name\": \"a\", \"securityContext\": {\"allowPrivilegeEscalation\": false}}");
        _unit_json_ json_t *good_bad = with_ephemeral(
            good, "{\"name\": \"b\", \"securityContext\": {\"allowPrivilegeEscalation\": false, "
                  "\"runAsUser\": 0}}");
        ck_assert_int_eq(decide("UPDATE", "ephemeralcontainers", "alice", good_bad, old, NULL),
                         REASON_EPHEMERAL_CONTAINER);
        /* The pod's own uid being the driver's makes every container the driver. */
        _unit_json_ json_t *pod_1001 = json_deep_copy(old);
        json_object_set_new(json_object_get(json_object_get(pod_1001, "spec"), "securityContext"),
                            "runAsUser", json_integer(1001));
        _unit_json_ json_t *as_pod = with_ephemeral(
            pod_1001,
            "{\"name\": \"d\", \"securityContext\": {\"allowPrivilegeEscalation\": false}}");
        ck_assert_int_eq(decide("UPDATE", "ephemeralcontainers", "alice", as_pod, pod_1001, NULL),
                         REASON_EPHEMERAL_CONTAINER);
        /* The pod's extra groups are every container's: the driver's gid
         * there puts a new container in the driver's group. */
        static const char *const groups[][2] = {{"supplementalGroups", "[5, 1001]"},
                                                {"fsGroup", "1001"}};
        for (size_t g = 0; g < ARRAY_SIZE(groups); g++) {
                _unit_json_ json_t *grouped = json_deep_copy(old);
                json_object_set_new(
                    json_object_get(json_object_get(grouped, "spec"), "securityContext"),
                    groups[g][0], unit_json(groups[g][1]));
                _unit_json_ json_t *in_group =
                    with_ephemeral(grouped, "{\"name\": \"d\", \"securityContext\": "
                                            "{\"allowPrivilegeEscalation\": false}}");
                ck_assert_int_eq(
                    decide("UPDATE", "ephemeralcontainers", "alice", in_group, grouped, NULL),
                    REASON_EPHEMERAL_CONTAINER);
        }
        _unit_json_ json_t *other_groups = json_deep_copy(old);
        json_object_set_new(
            json_object_get(json_object_get(other_groups, "spec"), "securityContext"),
            "supplementalGroups", unit_json("[5, 1000]"));
        _unit_json_ json_t *outside = with_ephemeral(
            other_groups,
            "{\"name\": \"d\", \"securityContext\": {\"allowPrivilegeEscalation\": false}}");
        ck_assert_int_eq(
            decide("UPDATE", "ephemeralcontainers", "alice", outside, other_groups, NULL),
            REASON_NOT_GUARDED);
        /* A pod without the sidecar is not hangar's business. */
        _unit_json_ json_t *plain = unit_json(sandbox_pod);
        _unit_json_ json_t *plain_new =
            with_ephemeral(plain, "{\"name\": \"d\", \"targetContainerName\": \"sandbox\"}");
        ck_assert_int_eq(decide("UPDATE", "ephemeralcontainers", "alice", plain_new, plain, NULL),
                         REASON_NOT_GUARDED);
}
END_TEST

/* The detail of the guard's answer to an ephemeral container added to pod. */
static mutate_reason_t decide_ephemeral_detail(json_t *pod, const char *container, char *detail,
                                               size_t size)
{
        _unit_json_ json_t *new = with_ephemeral(pod, container);
        guard_request_t req = {.operation = "UPDATE",
                               .resource = "pods",
                               .subresource = "ephemeralcontainers",
                               .username = "alice",
                               .object = new,
                               .old_object = pod};
        mutate_result_t r;
        guard_decide(&cfg, &req, &r);
        (void)snprintf(detail, size, "%s", r.detail);
        return r.reason;
}

/* Every member the ephemeral rules read, of the wrong type, is a malformed
 * pod: read as "not said" each of these passed (the API server would refuse
 * them first; this does not count on it). null stays "not said". */
START_TEST(ephemeral_wrong_types)
{
        _unit_json_ json_t *old = injected_pod();
        static const struct {
                const char *security_context; /* the container's, beside no escalation */
                const char *member;           /* named in the refusal */
        } cases[] = {
            {"\"capabilities\": {\"add\": \"SYS_PTRACE\"}", "capabilities"},
            {"\"capabilities\": {\"add\": {\"x\": \"SYS_PTRACE\"}}", "capabilities"},
            {"\"capabilities\": {\"add\": [1]}", "capabilities"},
            {"\"capabilities\": [\"SYS_PTRACE\"]", "capabilities"},
            {"\"privileged\": \"true\"", "privileged"},
            {"\"procMount\": 1", "procMount"},
            {"\"runAsGroup\": 1001.0", "runAsGroup"},
            {"\"runAsUser\": 1001.0", "runAsUser"},
            {"\"runAsUser\": 4294968297", "runAsUser"}, /* 2^32 + 1001 */
            {"\"runAsUser\": 2147483648", "runAsUser"},
            {"\"runAsUser\": -1", "runAsUser"},
            {"\"runAsGroup\": -1", "runAsGroup"},
        };
        char detail[512];
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                char c[256];
                (void)snprintf(c, sizeof(c),
                               "{\"name\": \"d\", \"securityContext\": "
                               "{\"allowPrivilegeEscalation\": false, %s}}",
                               cases[i].security_context);
                mutate_reason_t got = decide_ephemeral_detail(old, c, detail, sizeof(detail));
                ck_assert_msg(got == REASON_INVALID_POD && strstr(detail, cases[i].member),
                              "case %zu: got %s (%s)", i, mutate_reason_name(got), detail);
        }
        static const char *const containers[] = {
            "{\"name\": \"d\", \"targetContainerName\": 5, \"securityContext\": "
            "{\"allowPrivilegeEscalation\": false}}",
            "{\"name\": \"d\", \"volumeMounts\": {\"name\": \"hangar-ctl\", \"mountPath\": "
            "\"/x\"}, \"securityContext\": {\"allowPrivilegeEscalation\": false}}",
            "{\"name\": \"d\", \"volumeMounts\": [{\"name\": 1, \"mountPath\": \"/x\"}], "
            "\"securityContext\": {\"allowPrivilegeEscalation\": false}}",
            "{\"name\": \"d\", \"volumeDevices\": {\"name\": \"hangar-ctl\"}, "
            "\"securityContext\": {\"allowPrivilegeEscalation\": false}}",
            "{\"name\": \"d\", \"volumeDevices\": [{\"name\": [\"hangar-ctl\"]}], "
            "\"securityContext\": {\"allowPrivilegeEscalation\": false}}",
            "{\"name\": \"d\", \"securityContext\": {\"allowPrivilegeEscalation\": \"false\"}}",
            "{\"name\": \"d\", \"securityContext\": \"restricted\"}",
            "{\"name\": 7, \"securityContext\": {\"allowPrivilegeEscalation\": false}}",
            "\"d\"",
        };
        for (size_t i = 0; i < ARRAY_SIZE(containers); i++) {
                mutate_reason_t got =
                    decide_ephemeral_detail(old, containers[i], detail, sizeof(detail));
                ck_assert_msg(got == REASON_INVALID_POD, "container %zu: got %s (%s)", i,
                              mutate_reason_name(got), detail);
                ck_assert_msg(strstr(detail, "hangar invalid-pod: invalid pod"), "%s", detail);
        }
        /* The pod's ids (every container's defaults and groups) too. */
        static const char *const pod_members[][2] = {
            {"fsGroup", "1001.0"},
            {"fsGroup", "\"1001\""},
            {"supplementalGroups", "\"1001\""},
            {"supplementalGroups", "[\"1001\"]"},
            {"supplementalGroups", "[1001.0]"},
            {"supplementalGroups", "[4294968297]"},
            {"runAsUser", "4294969297"},
            {"runAsGroup", "1001.5"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(pod_members); i++) {
                _unit_json_ json_t *pod = json_deep_copy(old);
                json_object_set_new(
                    json_object_get(json_object_get(pod, "spec"), "securityContext"),
                    pod_members[i][0], unit_json(pod_members[i][1]));
                mutate_reason_t got = decide_ephemeral_detail(
                    pod,
                    "{\"name\": \"d\", \"securityContext\": {\"allowPrivilegeEscalation\": false, "
                    "\"runAsUser\": 2000, \"runAsGroup\": 2000}}",
                    detail, sizeof(detail));
                ck_assert_msg(got == REASON_INVALID_POD && strstr(detail, pod_members[i][0]),
                              "pod %s %s: got %s (%s)", pod_members[i][0], pod_members[i][1],
                              mutate_reason_name(got), detail);
        }
        /* The pod's securityContext not an object, the ephemeral list not an
         * array: podview_read's refusals. */
        _unit_json_ json_t *bad_sc = json_deep_copy(old);
        json_object_set_new(json_object_get(bad_sc, "spec"), "securityContext", json_string("x"));
        ck_assert_int_eq(
            decide_ephemeral_detail(bad_sc, "{\"name\": \"d\"}", detail, sizeof(detail)),
            REASON_INVALID_POD);
        _unit_json_ json_t *bad_list = json_deep_copy(old);
        json_object_set_new(json_object_get(bad_list, "spec"), "ephemeralContainers",
                            unit_json("{\"name\": \"d\"}"));
        ck_assert_int_eq(decide("UPDATE", "ephemeralcontainers", "alice", bad_list, old, NULL),
                         REASON_INVALID_POD);
        /* No oldObject: not a review the API server sends. */
        _unit_json_ json_t *fine = with_ephemeral(
            old, "{\"name\": \"d\", \"securityContext\": {\"allowPrivilegeEscalation\": false}}");
        ck_assert_int_eq(decide("UPDATE", "ephemeralcontainers", "alice", fine, NULL, NULL),
                         REASON_INVALID_POD);
        /* null is absent, for the guard as for the API server; in range is fine. */
        ck_assert_int_eq(
            decide_ephemeral_detail(old,
                                    "{\"name\": \"d\", \"targetContainerName\": null, "
                                    "\"volumeMounts\": null, \"securityContext\": "
                                    "{\"allowPrivilegeEscalation\": false, \"capabilities\": "
                                    "{\"add\": null, \"drop\": [\"ALL\"]}, \"procMount\": null, "
                                    "\"runAsUser\": 2147483647, \"runAsGroup\": null}}",
                                    detail, sizeof(detail)),
            REASON_NOT_GUARDED);
}
END_TEST

/* Operations are the API server's four as it spells them; subresources the
 * ones each is reviewed for. Anything else is refused, not allowed as
 * "nothing hangar guards". */
START_TEST(unknown_operations_fail_closed)
{
        _unit_json_ json_t *old = injected_pod();
        static const struct {
                const char *op, *sub;
                mutate_reason_t want;
        } cases[] = {
            {"connect", "exec", REASON_UNKNOWN_DOOR},  {"PATCH", "", REASON_UNKNOWN_DOOR},
            {"update", "", REASON_UNKNOWN_DOOR},       {"", "", REASON_UNKNOWN_DOOR},
            {NULL, "", REASON_UNKNOWN_DOOR},           {"DELETE", "status", REASON_UNKNOWN_DOOR},
            {"CREATE", "exec", REASON_UNKNOWN_DOOR},   {"DELETE", "", REASON_NOT_GUARDED},
            {"CREATE", "binding", REASON_NOT_GUARDED}, {"CREATE", "eviction", REASON_NOT_GUARDED},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                mutate_reason_t got = decide(cases[i].op, cases[i].sub, "alice", old, old, old);
                ck_assert_msg(got == cases[i].want, "%s %s: got %s", cases[i].op, cases[i].sub,
                              mutate_reason_name(got));
        }
}
END_TEST

/* A copy of old whose container i runs image. */
static json_t *with_image(json_t *old, size_t i, const char *image)
{
        json_t *pod = json_deep_copy(old);
        json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), i);
        ck_assert_ptr_nonnull(c);
        json_object_set_new(c, "image", json_string(image));
        return pod;
}

/* A copy of old with metadata.<map>.<key> set to value (NULL: removed). */
static json_t *with_meta(json_t *old, const char *map, const char *key, const char *value)
{
        json_t *pod = json_deep_copy(old);
        json_t *meta = json_object_get(pod, "metadata");
        json_t *m = json_object_get(meta, map);
        if (!m) {
                m = json_object();
                json_object_set_new(meta, map, m);
        }
        if (value)
                json_object_set_new(m, key, json_string(value));
        else
                json_object_del(m, key);
        return pod;
}

/* pod's container named name, for changing in place. */
static json_t *container_named(json_t *pod, const char *name)
{
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(json_object_get(pod, "spec"), "containers"), i, c)
                if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
                        return c;
        ck_abort_msg("no container %s", name);
        return NULL;
}

START_TEST(updates)
{
        _unit_json_ json_t *old = injected_pod();
        ck_assert(guard_pod_is_injected(old));
        /* An update that leaves hangar's part alone. */
        _unit_json_ json_t *relabel = with_meta(old, "labels", "team", "x");
        ck_assert_int_eq(decide("UPDATE", "", "alice", relabel, old, NULL), REASON_NOT_GUARDED);
        _unit_json_ json_t *agent_image = with_image(old, 0, "env:2");
        ck_assert_int_eq(decide("UPDATE", "", "alice", agent_image, old, NULL),
                         REASON_DRIVER_CHANGED);
        _unit_json_ json_t *driver_image = with_image(old, 1, "evil:1");
        ck_assert_int_eq(decide("UPDATE", "", "alice", driver_image, old, NULL),
                         REASON_DRIVER_CHANGED);
        ck_assert_int_eq(decide("UPDATE", "resize", "alice", driver_image, old, NULL),
                         REASON_DRIVER_CHANGED);
        _unit_json_ json_t *unmarked =
            with_meta(old, "annotations", "hangar.dev/driver-sidecar", NULL);
        ck_assert_int_eq(decide("UPDATE", "", "alice", unmarked, old, NULL),
                         REASON_HANGAR_METADATA);
        _unit_json_ json_t *reason =
            with_meta(old, "annotations", "hangar.dev/driver-sidecar-reason", "x");
        ck_assert_int_eq(decide("UPDATE", "", "alice", reason, old, NULL), REASON_HANGAR_METADATA);
        _unit_json_ json_t *unlabelled = with_meta(old, "labels", "hangar.dev/sandbox", NULL);
        ck_assert_int_eq(decide("UPDATE", "", "alice", unlabelled, old, NULL),
                         REASON_HANGAR_METADATA);
        /* Forging the record on a pod without the sidecar is refused too. */
        _unit_json_ json_t *plain = unit_json(sandbox_pod);
        _unit_json_ json_t *forged =
            with_meta(plain, "annotations", "hangar.dev/driver-sidecar", "injected");
        ck_assert_int_eq(decide("UPDATE", "", "alice", forged, plain, NULL),
                         REASON_HANGAR_METADATA);
        _unit_json_ json_t *plain_image = with_image(plain, 0, "env:2");
        ck_assert_int_eq(decide("UPDATE", "", "alice", plain_image, plain, NULL),
                         REASON_NOT_GUARDED);
        /* Listed identities do not get to change the shape either. */
        ck_assert_int_eq(
            decide("UPDATE", "", "system:serviceaccount:hangar:hangar", driver_image, old, NULL),
            REASON_DRIVER_CHANGED);
        /* No old object: malformed, refused. */
        ck_assert_int_eq(decide("UPDATE", "", "alice", old, NULL, NULL), REASON_INVALID_POD);
        /* A toleration added (scheduling only) passes; the driver's env or
         * resources changed do not, whichever subresource carries them. */
        _unit_json_ json_t *tolerant = json_deep_copy(old);
        json_object_set_new(json_object_get(tolerant, "spec"), "tolerations",
                            unit_json("[{\"key\": \"k\", \"operator\": \"Exists\"}]"));
        ck_assert_int_eq(decide("UPDATE", "", "alice", tolerant, old, NULL), REASON_NOT_GUARDED);
        _unit_json_ json_t *env = json_deep_copy(old);
        json_object_set_new(container_named(env, "hangar-driver"), "env",
                            unit_json("[{\"name\": \"LD_PRELOAD\", \"value\": \"/x.so\"}]"));
        ck_assert_int_eq(decide("UPDATE", "", "alice", env, old, NULL), REASON_DRIVER_CHANGED);
        _unit_json_ json_t *starved = json_deep_copy(old);
        json_object_set_new(container_named(starved, "hangar-driver"), "resources",
                            unit_json("{\"limits\": {\"memory\": \"1Mi\"}}"));
        ck_assert_int_eq(decide("UPDATE", "resize", "alice", starved, old, NULL),
                         REASON_DRIVER_CHANGED);
        /* Resizing the driver is refused to hangar's own identity too: its
         * resources are the shape's, which the spec check compares. */
        ck_assert_int_eq(
            decide("UPDATE", "resize", "system:serviceaccount:hangar:hangar", starved, old, NULL),
            REASON_DRIVER_CHANGED);
        /* hangar's volumes are the shape's: a resize may change a memory
         * emptyDir's sizeLimit (hangar-ctl's), and hangar-home is the
         * driver's record. */
        _unit_json_ json_t *ctl_shrunk = json_deep_copy(old);
        json_t *vols = json_object_get(json_object_get(ctl_shrunk, "spec"), "volumes");
        for (size_t v = 0; v < json_array_size(vols); v++) {
                json_t *vol = json_array_get(vols, v);
                if (strcmp(json_string_value(json_object_get(vol, "name")), "hangar-ctl") == 0)
                        json_object_set_new(json_object_get(vol, "emptyDir"), "sizeLimit",
                                            json_string("1Ki"));
        }
        ck_assert_int_eq(decide("UPDATE", "resize", "alice", ctl_shrunk, old, NULL),
                         REASON_DRIVER_CHANGED);
        ck_assert_int_eq(decide("UPDATE", "", "alice", ctl_shrunk, old, NULL),
                         REASON_DRIVER_CHANGED);
        _unit_json_ json_t *home_gone = json_deep_copy(old);
        json_t *home_vols = json_object_get(json_object_get(home_gone, "spec"), "volumes");
        for (size_t v = json_array_size(home_vols); v-- > 0;)
                if (strcmp(json_string_value(json_object_get(json_array_get(home_vols, v), "name")),
                           "hangar-home") == 0)
                        json_array_remove(home_vols, v);
        ck_assert_int_eq(decide("UPDATE", "resize", "alice", home_gone, old, NULL),
                         REASON_DRIVER_CHANGED);
        /* Pod-level resources are the pod's budget (the driver's own
         * request and limit inside it are checked above). */
        _unit_json_ json_t *pod_level = json_deep_copy(old);
        json_object_set_new(json_object_get(pod_level, "spec"), "resources",
                            unit_json("{\"limits\": {\"memory\": \"2Gi\"}}"));
        ck_assert_int_eq(decide("UPDATE", "resize", "alice", pod_level, old, NULL),
                         REASON_NOT_GUARDED);
        _unit_json_ json_t *agent_resized = json_deep_copy(old);
        json_object_set_new(container_named(agent_resized, "sandbox"), "resources",
                            unit_json("{\"limits\": {\"memory\": \"1Gi\"}}"));
        ck_assert_int_eq(decide("UPDATE", "resize", "alice", agent_resized, old, NULL),
                         REASON_NOT_GUARDED);
        /* DELETE passes; an UPDATE subresource hangar does not know fails closed. */
        ck_assert_int_eq(decide("DELETE", "", "alice", NULL, old, NULL), REASON_NOT_GUARDED);
        ck_assert_int_eq(decide("UPDATE", "scale", "alice", relabel, old, NULL),
                         REASON_UNKNOWN_DOOR);
}
END_TEST

/* A pod that names its agent (hangar.dev/agent-container, agent-sandbox's
 * templates): the guard keeps that container's image, and the annotation
 * is hangar's part once the pod is injected. */
START_TEST(updates_of_a_pod_naming_its_agent)
{
        _unit_json_ json_t *old =
            unit_json("{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\","
                      " \"namespace\": \"ns\", \"labels\": {\"hangar.dev/sandbox\": \"true\"},"
                      " \"annotations\": {\"hangar.dev/agent-container\": \"agent\"}},"
                      " \"spec\": {\"containers\": [{\"name\": \"tools\", \"image\": \"tools:1\"},"
                      " {\"name\": \"agent\", \"image\": \"env:1\"}]}}");
        mutate_result_t r;
        ck_assert_int_eq(mutate_pod(&cfg, old, &r), 0);
        ck_assert_int_eq(r.decision, DECISION_INJECT);
        mutate_result_free(&r);
        ck_assert(guard_pod_is_injected(old));
        /* The named agent's image is the driver's: fixed. The other
         * container's is the pod's own. */
        _unit_json_ json_t *agent_image = with_image(old, 1, "env:2");
        ck_assert_int_eq(decide("UPDATE", "", "alice", agent_image, old, NULL),
                         REASON_DRIVER_CHANGED);
        _unit_json_ json_t *tools_image = with_image(old, 0, "tools:2");
        ck_assert_int_eq(decide("UPDATE", "", "alice", tools_image, old, NULL), REASON_NOT_GUARDED);
        /* Renaming, removing or adding the annotation: hangar's part. */
        _unit_json_ json_t *renamed =
            with_meta(old, "annotations", "hangar.dev/agent-container", "tools");
        ck_assert_int_eq(decide("UPDATE", "", "alice", renamed, old, NULL), REASON_HANGAR_METADATA);
        _unit_json_ json_t *dropped =
            with_meta(old, "annotations", "hangar.dev/agent-container", NULL);
        ck_assert_int_eq(decide("UPDATE", "", "alice", dropped, old, NULL), REASON_HANGAR_METADATA);
        _unit_json_ json_t *plain = injected_pod();
        _unit_json_ json_t *added =
            with_meta(plain, "annotations", "hangar.dev/agent-container", "sandbox");
        ck_assert_int_eq(decide("UPDATE", "", "alice", added, plain, NULL), REASON_HANGAR_METADATA);
        /* kubectl's default container is the pod's own, even naming the driver
         * (a plain exec then reaches the guard's exec door and is refused). */
        _unit_json_ json_t *dflt =
            with_meta(old, "annotations", "kubectl.kubernetes.io/default-container", "tools");
        ck_assert_int_eq(decide("UPDATE", "", "alice", dflt, old, NULL), REASON_NOT_GUARDED);
        /* An adoption as agent-sandbox writes it (labels and annotations of
         * its own domain) passes. */
        _unit_json_ json_t *adopted = with_meta(old, "labels", "agents.x-k8s.io/claim-uid", "u-1");
        json_t *adopted2 =
            with_meta(adopted, "annotations", "agents.x-k8s.io/sandbox-template-ref", "agent");
        ck_assert_int_eq(
            decide("UPDATE", "",
                   "system:serviceaccount:agent-sandbox-system:agent-sandbox-controller", adopted2,
                   old, NULL),
            REASON_NOT_GUARDED);
        json_decref(adopted2);
}
END_TEST

/* pods/status: the API server puts the old spec back, but keeps the labels
 * and annotations the update carries (kubectl patch --subresource=status
 * -p '{"metadata":{"annotations":{"hangar.dev/driver-sidecar":null}}}'
 * cleared hangar's record, which every other UPDATE is refused). */
START_TEST(status_updates_keep_hangars_record)
{
        _unit_json_ json_t *old = injected_pod();
        _unit_json_ json_t *unmarked =
            with_meta(old, "annotations", "hangar.dev/driver-sidecar", NULL);
        ck_assert_int_eq(decide("UPDATE", "status", "alice", unmarked, old, NULL),
                         REASON_HANGAR_METADATA);
        _unit_json_ json_t *reason =
            with_meta(old, "annotations", "hangar.dev/driver-sidecar-reason", "x");
        ck_assert_int_eq(decide("UPDATE", "status", "alice", reason, old, NULL),
                         REASON_HANGAR_METADATA);
        _unit_json_ json_t *unlabelled = with_meta(old, "labels", "hangar.dev/sandbox", NULL);
        ck_assert_int_eq(decide("UPDATE", "status", "alice", unlabelled, old, NULL),
                         REASON_HANGAR_METADATA);
        _unit_json_ json_t *plain = unit_json(sandbox_pod);
        _unit_json_ json_t *forged =
            with_meta(plain, "annotations", "hangar.dev/driver-sidecar", "injected");
        ck_assert_int_eq(decide("UPDATE", "status", "alice", forged, plain, NULL),
                         REASON_HANGAR_METADATA);
        /* What the kubelet writes: status only. */
        _unit_json_ json_t *running = json_deep_copy(old);
        json_object_set_new(running, "status", unit_json("{\"phase\": \"Running\"}"));
        ck_assert_int_eq(decide("UPDATE", "status", "system:node:n1", running, old, NULL),
                         REASON_NOT_GUARDED);
        _unit_json_ json_t *team = with_meta(old, "labels", "team", "x");
        ck_assert_int_eq(decide("UPDATE", "status", "alice", team, old, NULL), REASON_NOT_GUARDED);
}
END_TEST

/* old with spec member key set to value (JSON text). */
static json_t *with_spec(json_t *old, const char *key, const char *value)
{
        json_t *pod = json_deep_copy(old);
        json_object_set_new(json_object_get(pod, "spec"), key, unit_json(value));
        return pod;
}

/* CREATE: a pod carrying hangar-driver, as it will be stored. kubectl debug
 * --copy-to=x --share-processes makes a copy of an injected pod without its
 * labels and annotations, with a shared PID namespace and a debug container
 * beside the driver: the mutating webhook never sees it (no sandbox label),
 * and it was created as it came. */
START_TEST(copies_of_injected_pods)
{
        _unit_json_ json_t *injected = injected_pod();
        ck_assert_int_eq(decide("CREATE", "", "alice", injected, NULL, NULL), REASON_NOT_GUARDED);
        _unit_json_ json_t *plain = unit_json(sandbox_pod);
        ck_assert_int_eq(decide("CREATE", "", "alice", plain, NULL, NULL), REASON_NOT_GUARDED);

        /* The copy as kubectl debug makes it. */
        _unit_json_ json_t *copy = with_spec(injected, "shareProcessNamespace", "true");
        json_object_set_new(copy, "metadata", unit_json("{\"name\": \"x\"}"));
        json_array_append_new(json_object_get(json_object_get(copy, "spec"), "containers"),
                              unit_json("{\"name\": \"debugger-abcde\", \"image\": \"busybox\", "
                                        "\"stdin\": true, \"tty\": true}"));
        ck_assert_int_eq(decide("CREATE", "", "alice", copy, NULL, NULL), REASON_CONFLICT);
        /* Marked injected (an older kubectl kept annotations) and shared. */
        _unit_json_ json_t *shared = with_spec(injected, "shareProcessNamespace", "true");
        ck_assert_int_eq(decide("CREATE", "", "alice", shared, NULL, NULL), REASON_CONFLICT);
        /* hangar-ctl re-pointed at the node's disk, or on disk, not in memory. */
        _unit_json_ json_t *host = json_deep_copy(injected);
        json_t *vol;
        size_t i;
        json_array_foreach (json_object_get(json_object_get(host, "spec"), "volumes"), i, vol)
                if (strcmp(json_string_value(json_object_get(vol, "name")), "hangar-ctl") == 0) {
                        json_object_del(vol, "emptyDir");
                        json_object_set_new(vol, "hostPath", unit_json("{\"path\": \"/tmp/x\"}"));
                }
        ck_assert_int_eq(decide("CREATE", "", "alice", host, NULL, NULL), REASON_CONFLICT);
        _unit_json_ json_t *disk = json_deep_copy(injected);
        json_array_foreach (json_object_get(json_object_get(disk, "spec"), "volumes"), i, vol)
                if (strcmp(json_string_value(json_object_get(vol, "name")), "hangar-ctl") == 0)
                        json_object_set_new(vol, "emptyDir", unit_json("{}"));
        ck_assert_int_eq(decide("CREATE", "", "alice", disk, NULL, NULL), REASON_CONFLICT);
        /* The driver's securityContext or command changed. */
        _unit_json_ json_t *as_agent = json_deep_copy(injected);
        json_object_set_new(
            json_object_get(container_named(as_agent, "hangar-driver"), "securityContext"),
            "runAsUser", json_integer(1000));
        ck_assert_int_eq(decide("CREATE", "", "alice", as_agent, NULL, NULL), REASON_CONFLICT);
        _unit_json_ json_t *shell = json_deep_copy(injected);
        json_object_set_new(container_named(shell, "hangar-driver"), "command",
                            unit_json("[\"sh\", \"-c\", \"cat /var/lib/hangar-ctl/*\"]"));
        ck_assert_int_eq(decide("CREATE", "", "alice", shell, NULL, NULL), REASON_CONFLICT);
        /* The record without the driver is a forged record. */
        _unit_json_ json_t *marked =
            with_meta(plain, "annotations", "hangar.dev/driver-sidecar", "injected");
        ck_assert_int_eq(decide("CREATE", "", "alice", marked, NULL, NULL), REASON_CONFLICT);
        /* Malformed, and CREATEs of subresources. */
        ck_assert_int_eq(decide("CREATE", "", "alice", NULL, NULL, NULL), REASON_INVALID_POD);
        _unit_json_ json_t *binding = unit_json("{\"target\": {\"name\": \"n1\"}}");
        ck_assert_int_eq(decide("CREATE", "binding", "alice", binding, NULL, NULL),
                         REASON_NOT_GUARDED);
}
END_TEST

static int lookup_calls;
static int lookup(void *ctx, const char *ns, const char *name, json_t **ret, hg_error_t *err)
{
        lookup_calls++;
        ck_assert_str_eq(ns, "sandboxes");
        ck_assert_str_eq(name, "p");
        if (!ctx)
                return error_set(err, -EIO, "reading pod sandboxes/p: HTTP 403");
        *ret = json_incref(ctx);
        return 0;
}

static void outcome_freep(admission_outcome_t *o)
{
        admission_outcome_free(o);
}

static const char *port_forward_review =
    "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\": "
    "{\"uid\": \"u\", \"kind\": {\"group\": \"\", \"version\": \"v1\", \"kind\": "
    "\"PodPortForwardOptions\"}, \"resource\": {\"group\": \"\", \"version\": \"v1\", "
    "\"resource\": \"pods\"}, \"subResource\": \"portforward\", \"namespace\": \"sandboxes\", "
    "\"name\": \"p\", \"operation\": \"CONNECT\", \"userInfo\": {\"username\": \"alice\", "
    "\"groups\": [\"system:authenticated\"]}, \"object\": {\"ports\": [1]}}}";

START_TEST(validate_reads_the_pod_when_needed)
{
        _unit_json_ json_t *pod = injected_pod();
        __attribute__((cleanup(outcome_freep))) admission_outcome_t o;
        hg_error_t err = {0};
        char *out = NULL;
        lookup_calls = 0;
        ck_assert_int_eq(admission_validate(&cfg, port_forward_review, strlen(port_forward_review),
                                            lookup, pod, &out, &o, &err),
                         0);
        ck_assert_int_eq(lookup_calls, 1);
        ck_assert_int_eq(o.result.reason, REASON_PORT_FORWARD);
        _unit_json_ json_t *answer = unit_json(out);
        free(out);
        json_t *resp = json_object_get(answer, "response");
        ck_assert(json_is_false(json_object_get(resp, "allowed")));
        ck_assert_str_eq(
            json_string_value(json_object_get(json_object_get(resp, "auditAnnotations"), "reason")),
            "port-forward");
        ck_assert_int_eq(
            json_integer_value(json_object_get(json_object_get(resp, "status"), "code")), 403);
        ck_assert_ptr_null(json_object_get(resp, "patch"));

        /* A lookup that fails is a refusal naming why. */
        __attribute__((cleanup(outcome_freep))) admission_outcome_t o2;
        ck_assert_int_eq(admission_validate(&cfg, port_forward_review, strlen(port_forward_review),
                                            lookup, NULL, &out, &o2, &err),
                         0);
        ck_assert_int_eq(o2.result.reason, REASON_POD_UNKNOWN);
        ck_assert_ptr_nonnull(strstr(o2.result.detail, "HTTP 403"));
        free(out);
}
END_TEST

START_TEST(validate_rejects_malformed)
{
        static const char *bad[] = {
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\": "
            "{\"uid\": \"u\", \"kind\": {\"kind\": \"Pod\"}, \"operation\": \"CONNECT\", "
            "\"userInfo\": {\"username\": 5}}}",
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\": "
            "{\"uid\": \"u\", \"kind\": {\"kind\": \"Pod\"}, \"operation\": \"CONNECT\", "
            "\"userInfo\": {\"groups\": [\"a\", 1]}}}",
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\": "
            "{\"uid\": \"u\", \"kind\": {\"kind\": \"Pod\"}, \"operation\": \"CONNECT\", "
            "\"resource\": \"pods\"}}",
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\"}",
            "[1]",
            /* no resource: nothing says it is about pods (was allowed as
             * "not a pod", an exec into hangar-driver among them) */
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\": "
            "{\"uid\": \"u\", \"kind\": {\"kind\": \"PodExecOptions\"}, \"operation\": "
            "\"CONNECT\", \"subResource\": \"exec\", \"object\": {\"container\": "
            "\"hangar-driver\"}}}",
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\": "
            "{\"uid\": \"u\", \"kind\": {\"kind\": \"PodExecOptions\"}, \"operation\": "
            "\"CONNECT\", \"resource\": {\"group\": \"\"}, \"subResource\": \"exec\", "
            "\"object\": {\"container\": \"hangar-driver\"}}}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                __attribute__((cleanup(outcome_freep))) admission_outcome_t o;
                hg_error_t err = {0};
                char *out = NULL;
                ck_assert_msg(admission_validate(&cfg, bad[i], strlen(bad[i]), lookup, NULL, &out,
                                                 &o, &err) == -EINVAL,
                              "case %zu accepted", i);
                ck_assert_ptr_null(out);
                ck_assert(err.message[0]);
        }
}
END_TEST

/* The sandbox pod as the webhook injects it under gVisor: with the
 * dev.gvisor.spec.mount.hangar-{ctl,home}.* annotations. */
static json_t *injected_gvisor_pod(void)
{
        json_t *pod = unit_json(sandbox_pod);
        json_object_set_new(json_object_get(pod, "spec"), "runtimeClassName",
                            json_string("gvisor"));
        mutate_result_t r;
        ck_assert_int_eq(mutate_pod(&cfg, pod, &r), 0);
        ck_assert_int_eq(r.decision, DECISION_INJECT);
        mutate_result_free(&r);
        json_t *a = json_object_get(json_object_get(pod, "metadata"), "annotations");
        ck_assert_str_eq(
            json_string_value(json_object_get(a, "dev.gvisor.spec.mount.hangar-ctl.type")),
            "tmpfs");
        return pod;
}

/* The kubelet hands the pod's annotations as they are to each new sandbox
 * (the old one died: an OOM of the sentry, a node restart), so hangar's
 * mount annotations, and every other dev.gvisor.* one, are fixed once the
 * pod exists: kubectl annotate --overwrite dev.gvisor.spec.mount.hangar-ctl.type=bind
 * had the next sandbox serve hangar-ctl from the node's disk. */
START_TEST(gvisor_annotations_fixed)
{
        _unit_json_ json_t *old = injected_gvisor_pod();
        static const struct {
                const char *key, *value; /* value NULL: removed */
        } cases[] = {
            {"dev.gvisor.spec.mount.hangar-ctl.type", "bind"},
            {"dev.gvisor.spec.mount.hangar-ctl.share", "container"},
            {"dev.gvisor.spec.mount.hangar-ctl.options", "rw,rprivate,size=1"},
            {"dev.gvisor.spec.mount.hangar-ctl.type", NULL},
            {"dev.gvisor.spec.mount.hangar-home.share", NULL},
            {"dev.gvisor.spec.mount.hangar-home.type", "tmpfs"},
            /* new keys: a hint naming hangar-ctl, one naming hangar-ctl's
             * host directory under another name, a runsc flag */
            {"dev.gvisor.spec.mount.hangar-ctl.source", "/var/lib/kubelet/pods/u/volumes/x"},
            {"dev.gvisor.spec.mount.hangar-ctl.x.type", "bind"},
            {"dev.gvisor.spec.mount.evil.source",
             "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/hangar-ctl"},
            {"dev.gvisor.flag.directfs", "false"},
            {"dev.gvisor.internal.x", "y"},
        };
        const char *users[] = {"alice", "system:serviceaccount:hangar:hangar"};
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _unit_json_ json_t *new =
                    with_meta(old, "annotations", cases[i].key, cases[i].value);
                for (size_t u = 0; u < ARRAY_SIZE(users); u++) {
                        mutate_reason_t got = decide("UPDATE", "", users[u], new, old, NULL);
                        ck_assert_msg(got == REASON_HANGAR_METADATA, "%s=%s by %s: got %s",
                                      cases[i].key, cases[i].value ? cases[i].value : "(removed)",
                                      users[u], mutate_reason_name(got));
                }
                ck_assert_int_eq(decide("UPDATE", "status", "alice", new, old, NULL),
                                 REASON_HANGAR_METADATA);
        }
        /* The key names what changed. */
        _unit_json_ json_t *bind =
            with_meta(old, "annotations", "dev.gvisor.spec.mount.hangar-ctl.type", "bind");
        guard_request_t req = {.operation = "UPDATE",
                               .resource = "pods",
                               .subresource = "",
                               .username = "alice",
                               .object = bind,
                               .old_object = old};
        mutate_result_t r;
        guard_decide(&cfg, &req, &r);
        ck_assert_msg(strstr(r.detail, "hangar hangar-metadata: alice may not change "
                                       "dev.gvisor.spec.mount.hangar-ctl.type"),
                      "%s", r.detail);
        /* A value of another type is a change too. */
        _unit_json_ json_t *numbered = json_deep_copy(old);
        json_object_set_new(json_object_get(json_object_get(numbered, "metadata"), "annotations"),
                            "dev.gvisor.spec.mount.hangar-ctl.type", json_integer(1));
        ck_assert_int_eq(decide("UPDATE", "", "alice", numbered, old, NULL),
                         REASON_HANGAR_METADATA);
        /* Annotations that are not a map: malformed, refused. */
        _unit_json_ json_t *listed = json_deep_copy(old);
        json_object_set_new(json_object_get(listed, "metadata"), "annotations", json_array());
        ck_assert_int_eq(decide("UPDATE", "", "alice", listed, old, NULL), REASON_INVALID_POD);
        /* Other annotations stay the pod's; so do dev.gvisor.* on a pod
         * without the sidecar (nothing of hangar's runs there). */
        _unit_json_ json_t *noted = with_meta(old, "annotations", "team.example/owner", "x");
        ck_assert_int_eq(decide("UPDATE", "", "alice", noted, old, NULL), REASON_NOT_GUARDED);
        _unit_json_ json_t *lookalike = with_meta(old, "annotations", "dev.gvisor", "x");
        ck_assert_int_eq(decide("UPDATE", "", "alice", lookalike, old, NULL), REASON_NOT_GUARDED);
        _unit_json_ json_t *plain = unit_json(sandbox_pod);
        _unit_json_ json_t *plain_bind =
            with_meta(plain, "annotations", "dev.gvisor.spec.mount.hangar-ctl.type", "bind");
        ck_assert_int_eq(decide("UPDATE", "", "alice", plain_bind, plain, NULL),
                         REASON_NOT_GUARDED);
        /* An injected pod not under gVisor takes none either (runtimeClassName
         * is fixed, but the rule is the same for every injected pod). */
        _unit_json_ json_t *runc = injected_pod();
        _unit_json_ json_t *runc_bind =
            with_meta(runc, "annotations", "dev.gvisor.spec.mount.hangar-ctl.type", "bind");
        ck_assert_int_eq(decide("UPDATE", "", "alice", runc_bind, runc, NULL),
                         REASON_HANGAR_METADATA);
        /* The pod's own values are compared, not the configuration's: after
         * volumes.ctl.sizeLimit changed, an old pod keeps its size= and
         * still takes other updates. */
        hg_error_t err = {0};
        ck_assert_int_eq(settings_set(&cfg, "volumes.ctl.sizeLimit=128Mi", &err), 0);
        _unit_json_ json_t *relabel = with_meta(old, "labels", "team", "x");
        ck_assert_int_eq(decide("UPDATE", "", "alice", relabel, old, NULL), REASON_NOT_GUARDED);
}
END_TEST

/* The detail of a CREATE of pod, as kubectl shows it. */
static void create_detail(json_t *pod, mutate_result_t *ret)
{
        guard_request_t req = {.operation = "CREATE",
                               .resource = "pods",
                               .subresource = "",
                               .username =
                                   "system:serviceaccount:kube-system:replicaset-controller",
                               .object = pod};
        guard_decide(&cfg, &req, ret);
}

/* GKE Sandbox's admission writes gVisor mount hints for a pod's emptyDirs
 * (docs/research/gke-sandbox-annotations.md): share pod, or container where
 * one container mounts the volume, type tmpfs (Memory) or bind (disk),
 * options rw. Run after hangar's webhook it rewrites hangar's own keys;
 * what agrees with the shape is admitted at CREATE, what would change how
 * gVisor mounts hangar-home or hangar-ctl is refused, naming the key. */
START_TEST(gke_sandbox_hints_at_create)
{
        _unit_json_ json_t *ours = injected_gvisor_pod();
        ck_assert_int_eq(decide("CREATE", "", "alice", ours, NULL, NULL), REASON_NOT_GUARDED);
        static const struct {
                const char *key, *value; /* value NULL: removed */
        } agree[] = {
            /* GKE's values for hangar's volumes */
            {"dev.gvisor.spec.mount.hangar-ctl.share", "container"},
            {"dev.gvisor.spec.mount.hangar-ctl.options", "rw"},
            {"dev.gvisor.spec.mount.hangar-ctl.options", "rw,rprivate"},
            {"dev.gvisor.spec.mount.hangar-ctl.options", NULL},
            {"dev.gvisor.spec.mount.hangar-home.options", "rw"},
            {"dev.gvisor.spec.mount.hangar-home.options", NULL},
            {"dev.gvisor.spec.mount.hangar-home.share", "pod"},
            /* container: GKE's count may leave out a native-sidecar driver;
             * runsc mounts it as it does pod */
            {"dev.gvisor.spec.mount.hangar-home.share", "container"},
            /* and for the pod's own emptyDirs, whatever they say */
            {"dev.gvisor.spec.mount.scratch.share", "container"},
            {"dev.gvisor.spec.mount.scratch.type", "bind"},
            {"dev.gvisor.spec.mount.scratch.options", "ro"},
            {"dev.gvisor.empty-dir.scratch.force-shared", "true"},
            {"dev.gvisor.empty-dir.hangar-ctl.force-shared", "false"},
            {"dev.gvisor.empty-dir.hangar-home.force-shared", "0"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(agree); i++) {
                _unit_json_ json_t *pod =
                    with_meta(ours, "annotations", agree[i].key, agree[i].value);
                mutate_result_t r;
                create_detail(pod, &r);
                ck_assert_msg(r.reason == REASON_NOT_GUARDED, "%s=%s: %s", agree[i].key,
                              agree[i].value ? agree[i].value : "(removed)", r.detail);
        }
        /* All of GKE's at once, as it would store them. */
        _unit_json_ json_t *gke =
            with_meta(ours, "annotations", "dev.gvisor.spec.mount.hangar-ctl.share", "container");
        static const char *const gke_keys[][2] = {
            {"dev.gvisor.spec.mount.hangar-ctl.options", "rw"},
            {"dev.gvisor.spec.mount.hangar-home.options", "rw"},
        };
        json_t *a = json_object_get(json_object_get(gke, "metadata"), "annotations");
        for (size_t i = 0; i < ARRAY_SIZE(gke_keys); i++)
                json_object_set_new(a, gke_keys[i][0], json_string(gke_keys[i][1]));
        ck_assert_int_eq(decide("CREATE", "", "alice", gke, NULL, NULL), REASON_NOT_GUARDED);

        static const struct {
                const char *key, *value;
        } change[] = {
            {"dev.gvisor.spec.mount.hangar-ctl.type", "bind"},
            {"dev.gvisor.spec.mount.hangar-ctl.share", "shared"},
            {"dev.gvisor.spec.mount.hangar-ctl.share", "Pod"},
            {"dev.gvisor.spec.mount.hangar-home.share", "shared"},
            {"dev.gvisor.spec.mount.hangar-home.share", ""},
            {"dev.gvisor.spec.mount.hangar-home.type", "tmpfs"},
            {"dev.gvisor.spec.mount.hangar-ctl.options", "ro"},
            {"dev.gvisor.spec.mount.hangar-ctl.options", "rw,size=1"},
            {"dev.gvisor.spec.mount.hangar-ctl.options", "rw,"},
            {"dev.gvisor.spec.mount.hangar-home.options", "rw,noexec"},
            {"dev.gvisor.spec.mount.hangar-home.options", "rw,rprivate,size=67108864"},
            {"dev.gvisor.spec.mount.hangar-ctl.share", NULL},
            {"dev.gvisor.spec.mount.hangar-home.type", NULL},
            {"dev.gvisor.spec.mount.hangar-ctl.directfs", "off"},
            {"dev.gvisor.empty-dir.hangar-ctl.force-shared", "true"},
            {"dev.gvisor.empty-dir.hangar-home.force-shared", "yes"},
            {"dev.gvisor.empty-dir.hangar-ctl.other", "false"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(change); i++) {
                _unit_json_ json_t *pod =
                    with_meta(ours, "annotations", change[i].key, change[i].value);
                mutate_result_t r;
                create_detail(pod, &r);
                ck_assert_msg(r.reason == REASON_CONFLICT, "%s=%s: %s", change[i].key,
                              change[i].value ? change[i].value : "(removed)", r.detail);
                ck_assert_msg(strstr(r.detail, change[i].key), "%s", r.detail);
        }
        /* A hint's value that is no string is no value gVisor reads. */
        _unit_json_ json_t *numbered = json_deep_copy(ours);
        json_object_set_new(json_object_get(json_object_get(numbered, "metadata"), "annotations"),
                            "dev.gvisor.spec.mount.hangar-ctl.type", json_integer(1));
        ck_assert_int_eq(decide("CREATE", "", "alice", numbered, NULL, NULL), REASON_CONFLICT);
        /* The message says what the value would change. */
        _unit_json_ json_t *bind =
            with_meta(ours, "annotations", "dev.gvisor.spec.mount.hangar-ctl.type", "bind");
        mutate_result_t r;
        create_detail(bind, &r);
        ck_assert_msg(strstr(r.detail, "\"dev.gvisor.spec.mount.hangar-ctl.type\" is \"bind\", "
                                       "which changes how gVisor mounts hangar-ctl: only "
                                       "type=tmpfs keeps it in the sandbox's memory"),
                      "%s", r.detail);
        /* After volumes.ctl.sizeLimit changed, a copy carrying the old size
         * is out of shape (its volume's sizeLimit is too). */
        hg_error_t err = {0};
        ck_assert_int_eq(settings_set(&cfg, "volumes.ctl.sizeLimit=128Mi", &err), 0);
        ck_assert_int_eq(decide("CREATE", "", "alice", ours, NULL, NULL), REASON_CONFLICT);
}
END_TEST

/* The record and the selector label compared as values: forged as another
 * type they are changed, not "not a string both times"; an injected pod's
 * containers of the wrong type are malformed. */
START_TEST(update_wrong_types)
{
        _unit_json_ json_t *plain = unit_json(sandbox_pod);
        _unit_json_ json_t *was_number = json_deep_copy(plain);
        json_object_set_new(json_object_get(was_number, "metadata"), "annotations",
                            unit_json("{\"hangar.dev/driver-sidecar\": 5}"));
        ck_assert_int_eq(decide("UPDATE", "", "alice", plain, was_number, NULL),
                         REASON_HANGAR_METADATA);
        _unit_json_ json_t *old = injected_pod();
        _unit_json_ json_t *label_number = json_deep_copy(old);
        json_object_set_new(json_object_get(json_object_get(label_number, "metadata"), "labels"),
                            "hangar.dev/sandbox", json_true());
        ck_assert_int_eq(decide("UPDATE", "", "alice", label_number, old, NULL),
                         REASON_HANGAR_METADATA);
        static const char *const specs[][2] = {
            {"containers", "{\"name\": \"sandbox\"}"},
            {"volumes", "[{\"name\": 1}]"},
            {"initContainers", "[{\"image\": \"x\"}]"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(specs); i++) {
                _unit_json_ json_t *bad = json_deep_copy(old);
                json_object_set_new(json_object_get(bad, "spec"), specs[i][0],
                                    unit_json(specs[i][1]));
                ck_assert_msg(decide("UPDATE", "", "alice", bad, old, NULL) == REASON_INVALID_POD,
                              "spec.%s", specs[i][0]);
                ck_assert_msg(decide("UPDATE", "", "alice", old, bad, NULL) == REASON_INVALID_POD,
                              "oldObject spec.%s", specs[i][0]);
        }
}
END_TEST

static Suite *guard_suite(void)
{
        Suite *s = suite_create("guard");
        TCase *tc = tcase_create("doors");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, exec_into_driver_listed_only);
        tcase_add_test(tc, exec_options_malformed);
        tcase_add_test(tc, status_updates_keep_hangars_record);
        tcase_add_test(tc, copies_of_injected_pods);
        tcase_add_test(tc, port_forward_needs_the_pod);
        tcase_add_test(tc, ephemeral_containers);
        tcase_add_test(tc, updates);
        tcase_add_test(tc, updates_of_a_pod_naming_its_agent);
        tcase_add_test(tc, gvisor_annotations_fixed);
        tcase_add_test(tc, gke_sandbox_hints_at_create);
        tcase_add_test(tc, update_wrong_types);
        tcase_add_test(tc, ephemeral_wrong_types);
        tcase_add_test(tc, unknown_operations_fail_closed);
        tcase_add_test(tc, validate_reads_the_pod_when_needed);
        tcase_add_test(tc, validate_rejects_malformed);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(guard_suite());
}
