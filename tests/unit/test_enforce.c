/* Unit tests for webhook/enforce: the staged rollout's warn and audit modes,
 * on results and end to end through admission_review and
 * admission_validate. */
#include <errno.h>
#include <string.h>

#include "admission.h"
#include "cleanup.h"
#include "enforce.h"
#include "unit.h"
#include "webhook_fixture.h"

START_TEST(parses_the_three_names_only)
{
        enforcement_t m = ENFORCEMENT_AUDIT;
        ck_assert_int_eq(enforcement_parse("enforce", &m), 0);
        ck_assert_int_eq(m, ENFORCEMENT_ENFORCE);
        ck_assert_int_eq(enforcement_parse("warn", &m), 0);
        ck_assert_int_eq(m, ENFORCEMENT_WARN);
        ck_assert_int_eq(enforcement_parse("audit", &m), 0);
        ck_assert_int_eq(m, ENFORCEMENT_AUDIT);
        const char *bad[] = {"", "Enforce", "warn ", "dryrun", "off", NULL};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                ck_assert_msg(enforcement_parse(bad[i], &m) == -EINVAL, "accepted '%s'",
                              bad[i] ? bad[i] : "(null)");
}
END_TEST

/* Every reason under every mode: only a relaxable deny changes, and then
 * to the mode's decision, reason and detail kept, no patch. */
START_TEST(every_reason_under_every_mode)
{
        for (unsigned m = ENFORCEMENT_ENFORCE; m <= ENFORCEMENT_AUDIT; m++) {
                for (unsigned i = 0; i < REASON_COUNT; i++) {
                        mutate_result_t res = {0};
                        mutate_result_set(&res, (mutate_reason_t)i, "detail %u", i);
                        mutate_decision_t before = res.decision;
                        enforcement_apply((enforcement_t)m, &res);
                        bool relaxed = m != ENFORCEMENT_ENFORCE && before == DECISION_DENY &&
                                       enforcement_relaxable((mutate_reason_t)i);
                        mutate_decision_t want =
                            !relaxed ? before
                                     : (m == ENFORCEMENT_WARN ? DECISION_WARNED : DECISION_AUDITED);
                        ck_assert_msg(res.decision == want, "%s under mode %u: %s",
                                      mutate_reason_name(i), m, mutate_decision_name(res.decision));
                        ck_assert_int_eq(res.reason, i);
                        ck_assert_ptr_null(res.patch);
                        mutate_result_free(&res);
                }
        }
}
END_TEST

/* Failures to decide stay closed in every mode. */
START_TEST(failures_to_decide_are_never_relaxed)
{
        mutate_reason_t closed[] = {REASON_INTERNAL_ERROR, REASON_INVALID_POD, REASON_POD_UNKNOWN};
        for (size_t i = 0; i < ARRAY_SIZE(closed); i++) {
                ck_assert(!enforcement_relaxable(closed[i]));
                mutate_result_t res = {0};
                mutate_result_set(&res, closed[i], "x");
                enforcement_apply(ENFORCEMENT_AUDIT, &res);
                ck_assert_int_eq(res.decision, DECISION_DENY);
                mutate_result_free(&res);
        }
        mutate_reason_t open[] = {REASON_CONFLICT,       REASON_DRIVER_EXEC,
                                  REASON_PORT_FORWARD,   REASON_EPHEMERAL_CONTAINER,
                                  REASON_DRIVER_CHANGED, REASON_HANGAR_METADATA};
        for (size_t i = 0; i < ARRAY_SIZE(open); i++)
                ck_assert(enforcement_relaxable(open[i]));
}
END_TEST

static bool valid_utf8(const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        while (*p) {
                int n = *p < 0x80 ? 0 : (*p & 0xE0) == 0xC0 ? 1 : (*p & 0xF0) == 0xE0 ? 2 : 3;
                p++;
                for (int k = 0; k < n; k++, p++)
                        if ((*p & 0xC0) != 0x80)
                                return false;
        }
        return true;
}

/* A warning fits 256 bytes, has no control character and is never cut
 * inside a UTF-8 sequence, whatever the detail holds. */
START_TEST(warning_is_bounded_clean_utf8)
{
        mutate_result_t res = {0};
        mutate_result_set(&res, REASON_DRIVER_EXEC, "line\none\ttab\x7f");
        char w[ENFORCEMENT_WARNING_MAX + 1];
        enforcement_warning(&res, w);
        ck_assert_str_eq(w, "hangar would deny (driver-exec): line one tab ");
        /* Multi-byte characters straddling the cut at every offset. */
        for (size_t pad = 0; pad < 4; pad++) {
                char detail[ERROR_MESSAGE_MAX];
                size_t n = 0;
                for (; n < pad; n++)
                        detail[n] = 'x';
                while (n + 4 < sizeof(detail)) {
                        memcpy(detail + n, "\xe2\x82\xac", 3); /* the euro sign */
                        n += 3;
                }
                detail[n] = '\0';
                mutate_result_set(&res, REASON_CONFLICT, "%s", detail);
                enforcement_warning(&res, w);
                ck_assert_uint_le(strlen(w), ENFORCEMENT_WARNING_MAX);
                ck_assert_uint_ge(strlen(w), ENFORCEMENT_WARNING_MAX - 3);
                ck_assert_msg(valid_utf8(w), "cut inside a character at pad %zu", pad);
                for (const char *c = w; *c; c++)
                        ck_assert((unsigned char)*c >= 0x20 && *c != 0x7f);
        }
        mutate_result_free(&res);
}
END_TEST

/* A pod whose volume takes hangar-home's name: an injection conflict. */
#define CONFLICT_REVIEW                                                                        \
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{"   \
        "\"uid\":\"u-1\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"       \
        "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"              \
        "\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"a\"}," \
        "\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\","     \
        "\"labels\":{\"hangar.dev/sandbox\":\"true\"}},\"spec\":{\"containers\":[{\"name\":"   \
        "\"sandbox\",\"image\":\"agent:1\"}],\"volumes\":[{\"name\":\"hangar-home\","          \
        "\"emptyDir\":{}}]}}}}"

/* An exec into hangar-driver by someone not listed. */
#define EXEC_REVIEW                                                                          \
        "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{" \
        "\"uid\":\"u-2\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":"              \
        "\"PodExecOptions\"},\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":"  \
        "\"pods\"},\"subResource\":\"exec\",\"name\":\"p\",\"namespace\":\"team-a\","        \
        "\"operation\":\"CONNECT\",\"userInfo\":{\"username\":\"mallory\"},\"object\":{"     \
        "\"kind\":\"PodExecOptions\",\"apiVersion\":\"v1\",\"container\":\"hangar-driver\"," \
        "\"command\":[\"sh\"]}}}"

static json_t *answer_of(bool validate, const char *review, admission_outcome_t *o)
{
        _cleanup_free_ char *out = NULL;
        hg_error_t err = {0};
        int r = validate
                    ? admission_validate(&cfg, review, strlen(review), NULL, NULL, &out, o, &err)
                    : admission_handle(&cfg, review, strlen(review), &out, o, &err);
        ck_assert_msg(r == 0, "%d %s", r, err.message);
        return unit_json(out);
}

static void assert_answer(json_t *answer, bool allowed, const char *decision, const char *reason,
                          const char *warning_prefix)
{
        json_t *resp = json_object_get(answer, "response");
        ck_assert(json_is_boolean(json_object_get(resp, "allowed")));
        ck_assert_int_eq(json_is_true(json_object_get(resp, "allowed")), allowed);
        json_t *notes = json_object_get(resp, "auditAnnotations");
        ck_assert_str_eq(json_string_value(json_object_get(notes, "decision")), decision);
        ck_assert_str_eq(json_string_value(json_object_get(notes, "reason")), reason);
        ck_assert_ptr_null(json_object_get(resp, "patch"));
        json_t *warnings = json_object_get(resp, "warnings");
        if (!warning_prefix) {
                ck_assert_ptr_null(warnings);
                return;
        }
        const char *w = json_string_value(json_array_get(warnings, 0));
        ck_assert_msg(w && strncmp(w, warning_prefix, strlen(warning_prefix)) == 0, "warning: %s",
                      w ? w : "(none)");
}

START_TEST(guard_modes_end_to_end)
{
        {
                _outcome_ admission_outcome_t o = {0};
                _unit_json_ json_t *a = answer_of(true, EXEC_REVIEW, &o);
                assert_answer(a, false, "denied", "driver-exec", NULL);
        }
        free(cfg.guard_enforcement);
        cfg.guard_enforcement = strdup("warn");
        {
                _outcome_ admission_outcome_t o = {0};
                _unit_json_ json_t *a = answer_of(true, EXEC_REVIEW, &o);
                assert_answer(a, true, "warned", "driver-exec",
                              "hangar would deny (driver-exec): ");
        }
        free(cfg.guard_enforcement);
        cfg.guard_enforcement = strdup("audit");
        {
                _outcome_ admission_outcome_t o = {0};
                _unit_json_ json_t *a = answer_of(true, EXEC_REVIEW, &o);
                assert_answer(a, true, "audited", "driver-exec", NULL);
                /* The conflict setting is not the guard's. */
                _outcome_ admission_outcome_t c = {0};
                _unit_json_ json_t *b = answer_of(false, CONFLICT_REVIEW, &c);
                assert_answer(b, false, "denied", "conflict", NULL);
        }
}
END_TEST

START_TEST(conflict_modes_end_to_end)
{
        free(cfg.conflict_enforcement);
        cfg.conflict_enforcement = strdup("warn");
        {
                _outcome_ admission_outcome_t o = {0};
                _unit_json_ json_t *a = answer_of(false, CONFLICT_REVIEW, &o);
                assert_answer(a, true, "warned", "conflict", "hangar would deny (conflict): ");
                /* The guard setting is not the conflicts'. */
                _outcome_ admission_outcome_t e = {0};
                _unit_json_ json_t *b = answer_of(true, EXEC_REVIEW, &e);
                assert_answer(b, false, "denied", "driver-exec", NULL);
        }
        free(cfg.conflict_enforcement);
        cfg.conflict_enforcement = strdup("audit");
        {
                _outcome_ admission_outcome_t o = {0};
                _unit_json_ json_t *a = answer_of(false, CONFLICT_REVIEW, &o);
                assert_answer(a, true, "audited", "conflict", NULL);
        }
}
END_TEST

/* The settings refuse any other name, from the file and the environment. */
START_TEST(settings_refuse_unknown_modes)
{
        hg_error_t err = {0};
        ck_assert_int_eq(settings_set(&cfg, "guard.enforcement=warn", &err), 0);
        ck_assert_int_eq(settings_guard_enforcement(&cfg), ENFORCEMENT_WARN);
        ck_assert_int_eq(settings_set(&cfg, "conflictEnforcement=audit", &err), 0);
        ck_assert_int_eq(settings_conflict_enforcement(&cfg), ENFORCEMENT_AUDIT);
        ck_assert_int_eq(settings_set(&cfg, "guard.enforcement=dryRun", &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "enforce, warn or audit"), "%s", err.message);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("enforce");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, sidecar_cfg_setup, sidecar_cfg_teardown);
        tcase_add_test(tc, parses_the_three_names_only);
        tcase_add_test(tc, every_reason_under_every_mode);
        tcase_add_test(tc, failures_to_decide_are_never_relaxed);
        tcase_add_test(tc, warning_is_bounded_clean_utf8);
        tcase_add_test(tc, guard_modes_end_to_end);
        tcase_add_test(tc, conflict_modes_end_to_end);
        tcase_add_test(tc, settings_refuse_unknown_modes);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(suite());
}
