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
        tcase_add_test(tc, state_names);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(audit_suite());
}
