/* webhook/audit.c's judgement of one stored pod: the webhook's decision on a
 * copy, read as "what would the webhook do with this pod now". Pods made
 * here the way the webhook stores them (mutate_pod applies its patch to the
 * pod it is given). The listing and test-injection run against a real API
 * server in tests/e2e/test_audit.sh and tests/chart. */
#include "audit.h"

#include "cleanup.h"
#include "mutate.h"
#include "unit.h"

static webhook_settings_t cfg;
static shape_values_t *values;

static void setup(void)
{
        ck_assert_int_eq(settings_init_defaults(&cfg), 0);
        cfg.driver_sidecar = true;
        ck_assert_int_eq(shape_values_new(&cfg.sidecar, &values), 0);
}

static void teardown(void)
{
        shape_values_free(values);
        settings_free(&cfg);
}

#define TOKEN_MOUNT                                                             \
        "{\"name\": \"kube-api-access-x\", \"readOnly\": true, \"mountPath\": " \
        "\"/var/run/secrets/kubernetes.io/serviceaccount\"}"

/* A sandbox pod as created; extra_meta and extra_spec are JSON members. */
static json_t *sandbox_pod(const char *annotations, const char *container_extra)
{
        char text[2048];
        (void)snprintf(
            text, sizeof(text),
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\", "
            "\"namespace\": \"sbx\", \"labels\": {\"hangar.dev/sandbox\": \"true\"}%s%s},"
            " \"spec\": {\"containers\": [{\"name\": \"sandbox\", \"image\": \"img:1\", "
            "\"volumeMounts\": [" TOKEN_MOUNT "]%s}]}}",
            annotations ? ", \"annotations\": " : "", annotations ? annotations : "",
            container_extra ? container_extra : "");
        return unit_json(text);
}

/* The pod as the webhook under c would have it stored. */
static void inject_with(const webhook_settings_t *c, json_t *pod)
{
        mutate_result_t r;
        ck_assert_int_eq(mutate_pod(c, pod, &r), 0);
        ck_assert_int_eq(r.decision, DECISION_INJECT);
        mutate_result_free(&r);
}

static audit_verdict_t judge(json_t *pod)
{
        _unit_json_ json_t *before = json_deep_copy(pod);
        audit_verdict_t v;
        ck_assert_int_eq(audit_pod(&cfg, values, pod, &v), 0);
        ck_assert_msg(json_equal(before, pod), "audit_pod changed the pod");
        return v;
}

START_TEST(injected_now_is_current)
{
        _unit_json_ json_t *pod = sandbox_pod(NULL, NULL);
        inject_with(&cfg, pod);
        audit_verdict_t v = judge(pod);
        ck_assert_str_eq(audit_state_name(v.state), "current");
        ck_assert_str_eq(v.code, "already-injected");
        ck_assert(!audit_state_needs_action(v.state));
}
END_TEST

START_TEST(never_reviewed_is_not_injected)
{
        _unit_json_ json_t *pod = sandbox_pod(NULL, NULL);
        audit_verdict_t v = judge(pod);
        ck_assert_int_eq(v.state, AUDIT_NOT_INJECTED);
        ck_assert_str_eq(v.code, "never-reviewed");
        ck_assert(audit_state_needs_action(v.state));
        ck_assert(strstr(v.reason, "recreate it"));
}
END_TEST

START_TEST(skipped_then_injectable_now)
{
        _unit_json_ json_t *pod = sandbox_pod(
            "{\"hangar.dev/driver-sidecar\": \"skipped\", \"hangar.dev/driver-sidecar-reason\": "
            "\"host-network\"}",
            NULL);
        audit_verdict_t v = judge(pod);
        ck_assert_int_eq(v.state, AUDIT_NOT_INJECTED);
        ck_assert_str_eq(v.code, "skipped-at-creation");
        ck_assert(strstr(v.reason, "host-network"));

        _unit_json_ json_t *forged =
            sandbox_pod("{\"hangar.dev/driver-sidecar\": \"injected\"}", NULL);
        v = judge(forged);
        ck_assert_str_eq(v.code, "marked-without-driver");
}
END_TEST

START_TEST(older_configuration_is_stale)
{
        webhook_settings_t old;
        ck_assert_int_eq(settings_init_defaults(&old), 0);
        old.driver_sidecar = true;
        old.sidecar.driver_uid = 1005;
        _unit_json_ json_t *pod = sandbox_pod(NULL, NULL);
        inject_with(&old, pod);
        settings_free(&old);
        audit_verdict_t v = judge(pod);
        ck_assert_int_eq(v.state, AUDIT_STALE);
        ck_assert_str_eq(v.code, "shape");
        ck_assert_msg(strstr(v.reason, "another configuration") && strstr(v.reason, "spec.driver"),
                      "%s", v.reason);
}
END_TEST

START_TEST(token_removed_now_is_stale)
{
        /* Injected while the agent kept its token; now the configuration
         * takes it out: the reinvocation path would still change the pod. */
        _unit_json_ json_t *pod = sandbox_pod(NULL, NULL);
        inject_with(&cfg, pod);
        hg_error_t err = {0};
        ck_assert_int_eq(settings_set(&cfg, "agentServiceAccountToken=remove", &err), 0);
        audit_verdict_t v = judge(pod);
        ck_assert_int_eq(v.state, AUDIT_STALE);
        ck_assert_str_eq(v.code, "reinvocation-changes");
        ck_assert_msg(strstr(v.reason, "service-account token"), "%s", v.reason);
}
END_TEST

START_TEST(skipped_and_denied)
{
        _unit_json_ json_t *heavy =
            sandbox_pod(NULL, ", \"securityContext\": {\"privileged\": true}");
        audit_verdict_t v = judge(heavy);
        ck_assert_int_eq(v.state, AUDIT_SKIPPED);
        ck_assert_str_eq(v.code, "privileged-container");
        ck_assert(!audit_state_needs_action(v.state));

        _unit_json_ json_t *noagent =
            unit_json("{\"metadata\": {\"labels\": {\"hangar.dev/sandbox\": \"true\"}}, \"spec\": "
                      "{\"containers\": [{\"name\": \"worker\", \"image\": \"img:1\"}]}}");
        v = judge(noagent);
        ck_assert_int_eq(v.state, AUDIT_DENIED);
        ck_assert_str_eq(v.code, "no-agent-container");

        /* Odd input: no containers at all, a spec that is not an object,
         * not an object. Judged (denied), never a crash. */
        const char *odd[] = {
            "{\"metadata\": {\"labels\": {\"hangar.dev/sandbox\": \"true\"}}, \"spec\": {}}",
            "{\"metadata\": {\"labels\": {\"hangar.dev/sandbox\": \"true\"}}, \"spec\": 3}",
            "{\"metadata\": {\"labels\": {\"hangar.dev/sandbox\": \"true\"}, \"annotations\": 1}}",
            "[]",
        };
        for (size_t i = 0; i < ARRAY_SIZE(odd); i++) {
                _unit_json_ json_t *pod = unit_json(odd[i]);
                v = judge(pod);
                ck_assert_msg(v.state == AUDIT_DENIED, "case %zu: %s", i,
                              audit_state_name(v.state));
                ck_assert(audit_state_needs_action(v.state));
        }

        _unit_json_ json_t *plain = unit_json(
            "{\"metadata\": {\"labels\": {}}, \"spec\": {\"containers\": [{\"name\": \"sandbox\", "
            "\"image\": \"img:1\"}]}}");
        v = judge(plain);
        ck_assert_int_eq(v.state, AUDIT_EXCLUDED);
}
END_TEST

/* status.containerStatuses as the kubelet writes them for hangar-driver
 * (the waiting message is gVisor's, as the node saw it for an image without
 * hangar's binaries). */
static void set_driver_status(json_t *pod, const char *list, const char *status_json)
{
        json_t *st = unit_json(status_json);
        ck_assert_int_eq(json_object_set_new(st, "name", json_string("hangar-driver")), 0);
        json_t *status = json_pack("{s:[o]}", list, st);
        ck_assert_ptr_nonnull(status);
        ck_assert_int_eq(json_object_set_new(pod, "status", status), 0);
}

#define GVISOR_NOT_FOUND                                                                      \
        "failed to start containerd task \\\"hangar-driver\\\": OCI runtime start failed: "   \
        "starting container: starting sub-container [hangar-driver serve]: error finding "    \
        "executable \\\"hangar-driver\\\" in PATH [/usr/local/sbin /usr/local/bin]: no such " \
        "file or directory"

START_TEST(driver_that_cannot_start)
{
        _unit_json_ json_t *pod = sandbox_pod(NULL, NULL);
        inject_with(&cfg, pod);
        set_driver_status(pod, "containerStatuses",
                          "{\"ready\": false, \"restartCount\": 3, \"state\": {\"waiting\": "
                          "{\"reason\": \"RunContainerError\", \"message\": \"" GVISOR_NOT_FOUND
                          "\"}}}");
        audit_verdict_t v = judge(pod);
        ck_assert_int_eq(v.state, AUDIT_DRIVER_FAILED);
        ck_assert_str_eq(audit_state_name(v.state), "driver-failed");
        ck_assert_str_eq(v.code, "RunContainerError");
        ck_assert_msg(strstr(v.reason, "error finding executable \"hangar-driver\""), "%s",
                      v.reason);
        ck_assert_msg(strstr(v.reason, "lacks hangar's binaries"), "%s", v.reason);
        ck_assert(audit_state_needs_action(v.state));
        ck_assert(audit_state_broken(v.state));

        /* Started and exited: the termination message and the exit, on one
         * line, while the kubelet backs off. */
        set_driver_status(pod, "containerStatuses",
                          "{\"state\": {\"waiting\": {\"reason\": \"CrashLoopBackOff\", "
                          "\"message\": \"back-off 20s restarting failed container\"}}, "
                          "\"lastState\": {\"terminated\": {\"exitCode\": 2, \"reason\": "
                          "\"Error\", \"message\": \"hangar-driver serve: hangar-ctl\\nis "
                          "missing\"}}}");
        v = judge(pod);
        ck_assert_str_eq(v.code, "CrashLoopBackOff");
        ck_assert_msg(strstr(v.reason, "(CrashLoopBackOff): last exit 2 (Error): hangar-driver "
                                       "serve: hangar-ctl is missing"),
                      "%s", v.reason);
        ck_assert_msg(strstr(v.reason, "termination message"), "%s", v.reason);

        /* The back-off after a start that never ran (the runtime's
         * StartError as the last state): still the image's binaries. */
        set_driver_status(pod, "containerStatuses",
                          "{\"state\": {\"waiting\": {\"reason\": \"CrashLoopBackOff\"}}, "
                          "\"lastState\": {\"terminated\": {\"exitCode\": 128, \"reason\": "
                          "\"StartError\", \"message\": \"" GVISOR_NOT_FOUND "\"}}}");
        v = judge(pod);
        ck_assert_str_eq(v.code, "CrashLoopBackOff");
        ck_assert_msg(strstr(v.reason, "last exit 128 (StartError): failed to start") &&
                          strstr(v.reason, "lacks hangar's binaries"),
                      "%s", v.reason);

        /* The image cannot be pulled. */
        set_driver_status(pod, "containerStatuses",
                          "{\"state\": {\"waiting\": {\"reason\": \"ImagePullBackOff\", "
                          "\"message\": \"Back-off pulling image\"}}}");
        v = judge(pod);
        ck_assert_str_eq(v.code, "ImagePullBackOff");
        ck_assert_msg(strstr(v.reason, "cannot be pulled"), "%s", v.reason);

        /* Stopped for good with a message (restartPolicy Never). */
        set_driver_status(pod, "containerStatuses",
                          "{\"state\": {\"terminated\": {\"exitCode\": 0, \"reason\": "
                          "\"Completed\", \"message\": \"hangar-home is not writable\"}}}");
        v = judge(pod);
        ck_assert_int_eq(v.state, AUDIT_DRIVER_FAILED);
        ck_assert_str_eq(v.code, "Completed");

        /* A native sidecar's status is among the init containers'. */
        set_driver_status(pod, "initContainerStatuses",
                          "{\"state\": {\"waiting\": {\"reason\": \"CreateContainerError\"}}}");
        v = judge(pod);
        ck_assert_str_eq(v.code, "CreateContainerError");
        ck_assert_msg(strstr(v.reason, "no message from the kubelet"), "%s", v.reason);

        /* hangar-bin, which copies the bundle before the driver starts,
         * failing to pull or to copy: named first, with its own advice. */
        json_t *status =
            json_pack("{s:[{s:s, s:{s:{s:s, s:s}}}, {s:s, s:{s:{s:s}}}]}", "initContainerStatuses",
                      "name", "hangar-bin", "state", "waiting", "reason", "ImagePullBackOff",
                      "message", "Back-off pulling image \"localhost/hangar-bin:dev\"", "name",
                      "hangar-driver", "state", "waiting", "reason", "PodInitializing");
        ck_assert_ptr_nonnull(status);
        ck_assert_int_eq(json_object_set_new(pod, "status", status), 0);
        v = judge(pod);
        ck_assert_str_eq(v.code, "ImagePullBackOff");
        ck_assert_msg(strstr(v.reason, "hangar-bin cannot start") &&
                          strstr(v.reason, "driver.binaries.bundleImage"),
                      "%s", v.reason);
        set_driver_status(pod, "initContainerStatuses",
                          "{\"state\": {\"terminated\": {\"exitCode\": 0, \"reason\": "
                          "\"Completed\"}}}");
        json_t *bin = json_array_get(
            json_object_get(json_object_get(pod, "status"), "initContainerStatuses"), 0);
        ck_assert_int_eq(json_object_set_new(bin, "name", json_string("hangar-bin")), 0);
        ck_assert_int_eq(judge(pod).state, AUDIT_CURRENT);
        ck_assert_int_eq(json_object_set_new(json_object_get(bin, "state"), "terminated",
                                             json_pack("{s:i, s:s, s:s}", "exitCode", 1, "reason",
                                                       "Error", "message", "cp: out of space")),
                         0);
        v = judge(pod);
        ck_assert_str_eq(v.code, "Error");
        ck_assert_msg(strstr(v.reason, "exit 1 (Error): cp: out of space") &&
                          strstr(v.reason, "hangar-bin's copy"),
                      "%s", v.reason);
}
END_TEST

START_TEST(driver_starting_or_running_is_not_a_failure)
{
        _unit_json_ json_t *pod = sandbox_pod(NULL, NULL);
        inject_with(&cfg, pod);
        const char *fine[] = {
            "{\"state\": {\"waiting\": {\"reason\": \"ContainerCreating\"}}}",
            "{\"state\": {\"waiting\": {\"reason\": \"PodInitializing\"}}}",
            /* one element, two literals (parenthesized: clang's -Wstring-concatenation) */
            ("{\"state\": {\"running\": {\"startedAt\": \"2026-12-07T15:00:00Z\"}}, \"lastState\": "
             "{\"terminated\": {\"exitCode\": 1, \"message\": \"an earlier start\"}}}"),
            "{\"state\": {\"terminated\": {\"exitCode\": 0, \"reason\": \"Completed\"}}}",
            "{\"state\": 7}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(fine); i++) {
                set_driver_status(pod, "containerStatuses", fine[i]);
                audit_verdict_t v = judge(pod);
                ck_assert_msg(v.state == AUDIT_CURRENT, "case %zu: %s %s", i,
                              audit_state_name(v.state), v.reason);
        }
        /* A pod on its way out stops its driver: not a failed start. */
        set_driver_status(pod, "containerStatuses",
                          "{\"state\": {\"waiting\": {\"reason\": \"RunContainerError\"}}}");
        json_t *meta = json_object_get(pod, "metadata");
        ck_assert_int_eq(
            json_object_set_new(meta, "deletionTimestamp", json_string("2026-12-07T15:00:00Z")), 0);
        ck_assert_int_eq(judge(pod).state, AUDIT_CURRENT);
}
END_TEST

START_TEST(copies_without_the_label)
{
        /* An injected pod copied without the selector's label. */
        _unit_json_ json_t *pod = sandbox_pod(NULL, NULL);
        inject_with(&cfg, pod);
        json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
        ck_assert_int_eq(json_object_del(labels, "hangar.dev/sandbox"), 0);
        audit_verdict_t v = judge(pod);
        ck_assert_int_eq(v.state, AUDIT_UNLABELLED);
        ck_assert_str_eq(audit_state_name(v.state), "unlabelled");
        ck_assert_str_eq(v.code, "driver-without-label");
        ck_assert_msg(strstr(v.reason, "hangar.dev/sandbox=true"), "%s", v.reason);
        ck_assert(audit_state_broken(v.state));

        /* Another value than the selector's is no selection either. */
        ck_assert_int_eq(json_object_set_new(labels, "hangar.dev/sandbox", json_string("no")), 0);
        ck_assert_int_eq(judge(pod).state, AUDIT_UNLABELLED);

        /* Only the record (the driver dropped too). */
        _unit_json_ json_t *record =
            sandbox_pod("{\"hangar.dev/driver-sidecar\": \"injected\"}", NULL);
        ck_assert_int_eq(
            json_object_del(json_object_get(json_object_get(record, "metadata"), "labels"),
                            "hangar.dev/sandbox"),
            0);
        v = judge(record);
        ck_assert_int_eq(v.state, AUDIT_UNLABELLED);
        ck_assert_str_eq(v.code, "record-without-label");

        /* The driver as an init container (a native sidecar's copy). */
        _unit_json_ json_t *init = unit_json(
            "{\"metadata\": {}, \"spec\": {\"initContainers\": [{\"name\": \"hangar-driver\", "
            "\"image\": \"img:1\"}], \"containers\": [{\"name\": \"sandbox\", \"image\": "
            "\"img:1\"}]}}");
        ck_assert_str_eq(judge(init).code, "driver-without-label");

        /* With selector.operator Exists any value selects. */
        ck_assert_int_eq(json_object_set_new(labels, "hangar.dev/sandbox", json_string("x")), 0);
        free(cfg.selector_operator);
        cfg.selector_operator = strdup("Exists");
        ck_assert_ptr_nonnull(cfg.selector_operator);
        ck_assert_int_ne(judge(pod).state, AUDIT_UNLABELLED);

        /* A skipped record is no copy of a sandbox pod. */
        _unit_json_ json_t *skipped = unit_json(
            "{\"metadata\": {\"annotations\": {\"hangar.dev/driver-sidecar\": \"skipped\"}}, "
            "\"spec\": {\"containers\": [{\"name\": \"sandbox\", \"image\": \"img:1\"}]}}");
        ck_assert_int_eq(judge(skipped).state, AUDIT_EXCLUDED);
}
END_TEST

START_TEST(state_names)
{
        for (audit_state_t s = 0; s < AUDIT_STATE_COUNT; s++)
                ck_assert(audit_state_name(s)[0]);
        ck_assert_str_eq(audit_state_name(AUDIT_STATE_COUNT), "not-injected");
        ck_assert(audit_state_needs_action(AUDIT_STATE_COUNT));
        /* A pod no webhook sees needs an admin, whatever its shape. */
        ck_assert_str_eq(audit_state_name(AUDIT_UNGUARDED), "unguarded");
        ck_assert(audit_state_needs_action(AUDIT_UNGUARDED));
        /* A zeroed verdict is a problem, not a pass. */
        audit_verdict_t zero = {0};
        ck_assert(audit_state_needs_action(zero.state));
}
END_TEST

static Suite *audit_suite(void)
{
        Suite *s = suite_create("audit");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, injected_now_is_current);
        tcase_add_test(tc, never_reviewed_is_not_injected);
        tcase_add_test(tc, skipped_then_injectable_now);
        tcase_add_test(tc, older_configuration_is_stale);
        tcase_add_test(tc, token_removed_now_is_stale);
        tcase_add_test(tc, skipped_and_denied);
        tcase_add_test(tc, driver_that_cannot_start);
        tcase_add_test(tc, driver_starting_or_running_is_not_a_failure);
        tcase_add_test(tc, copies_without_the_label);
        tcase_add_test(tc, state_names);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(audit_suite());
}
