/* probe/verdict.c: the verdict table (mode x reports), reasons in a stable
 * order, and reports that must not be believed (missing, swapped, doctored,
 * empty, an agent report without its credentials check). The native suite
 * runs it on real reports too. */
#include "verdict.h"

#include "unit.h"

#define CREDS "credentials.service_account_token"

/* The agent's credentials check with status, and one token as observed. */
static json_t *creds_check(const char *status, json_t *token)
{
        return json_pack("{s:s, s:b, s:s, s:{s:[o*]}}", "name", CREDS, "required", 1, "status",
                         status, "observed", "tokens", token);
}

static json_t *report(const char *role, const char *result, const char *status)
{
        /* One required check whose status adds up to result (or not); an
         * agent's report also carries its passing credentials check. */
        json_t *r = json_pack("{s:s, s:[{s:s, s:b, s:s}]}", "result", result, "checks", "name",
                              "identity.x", "required", 1, "status", status);
        if (role)
                json_object_set_new(r, "role", json_string(role));
        if (role && strcmp(role, "agent") == 0)
                json_array_append_new(json_object_get(r, "checks"), creds_check("pass", NULL));
        return r;
}

/* An agent report whose only non-pass is the credentials check. */
static json_t *agent_with_creds(const char *result, json_t *check)
{
        json_t *r = report("agent", result, "pass");
        json_array_remove(json_object_get(r, "checks"), 1);
        json_array_append_new(json_object_get(r, "checks"), check);
        return r;
}

/* The detail of the reason with code. */
static const char *detail_of(json_t *verdict, const char *code)
{
        size_t i;
        json_t *r;
        json_array_foreach (json_object_get(verdict, "reasons"), i, r)
                if (strcmp(json_string_value(json_object_get(r, "code")), code) == 0)
                        return json_string_value(json_object_get(r, "detail"));
        ck_abort_msg("no reason %s", code);
        return NULL;
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
        json_array_append_new(json_object_get(informative, "checks"), creds_check("pass", NULL));
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, informative, driver), "split-active:");
}
END_TEST

START_TEST(agent_credentials)
{
        _unit_json_ json_t *spec = spec_report("pass");
        _unit_json_ json_t *driver = report("driver", "pass", "pass");
        /* A token that may exec: its own reason, naming the token and the permissions. */
        _unit_json_ json_t *granted = agent_with_creds(
            "fail",
            creds_check("fail", json_pack("{s:s, s:s, s:s, s:[s, s]}", "source", "/sa/token",
                                          "user", "system:serviceaccount:ns:a", "status", "fail",
                                          "granted", "create pods/exec", "impersonate users")));
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, granted, driver),
                         "refused:agent-credentials-failed");
        ck_assert_str_eq(decide(SPLIT_AUTO, spec, granted, driver),
                         "single-user:agent-credentials-failed");
        verdict_t v;
        _unit_json_ json_t *j = verdict_decide(SPLIT_AUTO, spec, granted, driver, &v);
        ck_assert_str_eq(detail_of(j, "agent-credentials-failed"),
                         "/sa/token (system:serviceaccount:ns:a) may: create pods/exec, "
                         "impersonate users");
        /* The API server unreachable: inconclusive, with the reason. */
        _unit_json_ json_t *unreachable = agent_with_creds(
            "inconclusive",
            creds_check("unknown",
                        json_pack("{s:s, s:s, s:s}", "source", "/sa/token", "status", "unknown",
                                  "reason", "the API server cannot be reached: refused")));
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, unreachable, driver),
                         "refused:agent-credentials-inconclusive");
        _unit_json_ json_t *j2 = verdict_decide(SPLIT_AUTO, spec, unreachable, driver, &v);
        ck_assert_str_eq(detail_of(j2, "agent-credentials-inconclusive"),
                         "/sa/token: the API server cannot be reached: refused");
        /* Another failure beside it keeps its own reason. */
        _unit_json_ json_t *both = agent_with_creds("fail", creds_check("unknown", NULL));
        json_object_set_new(json_array_get(json_object_get(both, "checks"), 0), "status",
                            json_string("fail"));
        ck_assert_str_eq(decide(SPLIT_AUTO, spec, both, driver),
                         "single-user:agent-failed,agent-credentials-inconclusive");
        /* No credentials check, a second one, or one made informative: not believed. */
        _unit_json_ json_t *without = report("agent", "pass", "pass");
        json_array_remove(json_object_get(without, "checks"), 1);
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, without, driver),
                         "refused:agent-report-invalid");
        _unit_json_ json_t *twice = report("agent", "pass", "pass");
        json_array_append_new(json_object_get(twice, "checks"), creds_check("pass", NULL));
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, twice, driver),
                         "refused:agent-report-invalid");
        _unit_json_ json_t *informative = agent_with_creds("pass", creds_check("fail", NULL));
        json_object_set_new(json_array_get(json_object_get(informative, "checks"), 1), "required",
                            json_false());
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, informative, driver),
                         "refused:agent-report-invalid");
        /* A doctored pass over a failing credentials check. */
        _unit_json_ json_t *doctored = agent_with_creds("pass", creds_check("fail", NULL));
        ck_assert_str_eq(decide(SPLIT_REQUIRED, spec, doctored, driver),
                         "refused:agent-report-invalid");
}
END_TEST

static Suite *verdict_suite(void)
{
        Suite *s = suite_create("verdict");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, the_table);
        tcase_add_test(tc, reports_not_believed);
        tcase_add_test(tc, agent_credentials);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(verdict_suite());
}
