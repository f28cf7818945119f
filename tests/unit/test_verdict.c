/* probe/verdict.c: the verdict table (mode x reports), reasons in a stable
 * order, and reports that must not be believed (missing, swapped, doctored,
 * empty). The native suite runs it on real reports too. */
#include "verdict.h"

#include "unit.h"

static json_t *report(const char *role, const char *result, const char *status)
{
        /* One required check whose status adds up to result (or not). */
        json_t *r = json_pack("{s:s, s:[{s:s, s:b, s:s}]}", "result", result, "checks", "name",
                              "identity.x", "required", 1, "status", status);
        if (role)
                json_object_set_new(r, "role", json_string(role));
        return r;
}

static json_t *spec_report(const char *result)
{
        return json_pack("{s:s, s:[{s:s, s:s}]}", "result", result, "checks", "code", "spec.mount",
                         "status", strcmp(result, "pass") == 0 ? "pass" : "fail");
}

/* The verdict's name and its reason codes, comma-joined: "split-active:". */
static char *decide(split_mode_t mode, json_t *spec, json_t *agent, json_t *driver)
{
        verdict_t v;
        _unit_json_ json_t *j = verdict_decide(mode, spec, agent, driver, &v);
        ck_assert_ptr_nonnull(j);
        ck_assert_str_eq(json_string_value(json_object_get(j, "verdict")), split_verdict_name(v));
        static char out[512];
        int n = snprintf(out, sizeof(out), "%s:", split_verdict_name(v));
        size_t i;
        json_t *r;
        json_array_foreach (json_object_get(j, "reasons"), i, r)
                n += snprintf(out + n, sizeof(out) - (size_t)n, "%s%s", i ? "," : "",
                              json_string_value(json_object_get(r, "code")));
        return out;
}

START_TEST(the_table)
{
        _unit_json_ json_t *spec = spec_report("pass");
        _unit_json_ json_t *agent = report("agent", "pass", "pass");
        _unit_json_ json_t *driver = report("driver", "pass", "pass");
        _unit_json_ json_t *bad_driver = report("driver", "fail", "fail");
        _unit_json_ json_t *unknown_agent = report("agent", "inconclusive", "unknown");
        ck_assert_str_eq(decide(SPLIT_AUTO, spec, agent, driver), "split-active:");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, agent, driver), "split-active:");
        ck_assert_str_eq(decide(SPLIT_OFF, spec, agent, driver), "single-user:mode-off");
        ck_assert_str_eq(decide(SPLIT_AUTO, spec, agent, bad_driver), "single-user:driver-failed");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, agent, bad_driver), "refused:driver-failed");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, unknown_agent, driver),
                         "refused:agent-inconclusive");
        /* Every reason, spec first, then agent, then driver. */
        _unit_json_ json_t *bad_spec = spec_report("fail");
        ck_assert_str_eq(decide(SPLIT_AUTO, bad_spec, unknown_agent, bad_driver),
                         "single-user:spec-failed,agent-inconclusive,driver-failed");
}
END_TEST

START_TEST(reports_not_believed)
{
        _unit_json_ json_t *spec = spec_report("pass");
        _unit_json_ json_t *agent = report("agent", "pass", "pass");
        _unit_json_ json_t *driver = report("driver", "pass", "pass");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, NULL, agent, driver),
                         "refused:spec-report-missing");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, driver, agent),
                         "refused:agent-report-invalid,driver-report-invalid");
        _unit_json_ json_t *doctored = report("driver", "pass", "fail");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, agent, doctored),
                         "refused:driver-report-invalid");
        _unit_json_ json_t *roleless = report(NULL, "pass", "pass");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, roleless, driver),
                         "refused:agent-report-invalid");
        _unit_json_ json_t *empty =
            json_pack("{s:s, s:s, s:[]}", "role", "agent", "result", "pass", "checks");
        ck_assert_str_eq(decide(SPLIT_AUTO, spec, empty, driver),
                         "single-user:agent-report-invalid");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, agent, agent, driver),
                         "refused:spec-report-invalid");
        /* A non-required failing check does not make a pass a lie. */
        _unit_json_ json_t *informative =
            json_pack("{s:s, s:s, s:[{s:s, s:b, s:s}, {s:s, s:b, s:s}]}", "role", "agent", "result",
                      "pass", "checks", "name", "a", "required", 1, "status", "pass", "name", "b",
                      "required", 0, "status", "fail");
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, informative, driver), "split-active:");
}
END_TEST

static Suite *verdict_suite(void)
{
        Suite *s = suite_create("verdict");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, the_table);
        tcase_add_test(tc, reports_not_believed);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(verdict_suite());
}
