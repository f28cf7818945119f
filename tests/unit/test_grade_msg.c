/* Unit tests for common/proto/grade_msg: the finish spec's spec report (the
 * pod's spec check, hangar-probe spec's report, as hangar read it after the
 * grader's exec ended) and what it makes of the grade: no other container
 * is nothing; another container, or a pod that could not be read (null), is
 * other-containers; a report that fails is split-not-active; a report that
 * is not one whole (a doctored result, a container's report, no list of the
 * other containers, names that are not names) or none at all refuses the
 * finish; the grader side cannot claim the driver's reasons. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "grade_msg.h"
#include "jsonx.h"
#include "unit.h"

#define CHECKS_PASS "[{\"code\": \"spec.driver\", \"status\": \"pass\", \"detail\": \"d\"}]"
#define CHECKS_FAIL                                                               \
        "[{\"code\": \"spec.driver\", \"status\": \"pass\", \"detail\": \"d\"}, " \
        "{\"code\": \"spec.share-process-namespace\", \"status\": \"fail\", \"detail\": \"d\"}]"

/* A finish spec with REPORT as its spec_report (NULL: none). */
static char *finish_text(const char *report)
{
        static char text[2048];
        snprintf(text, sizeof(text),
                 "{\"grade\": \"g-1\", \"exit_status\": 3, \"output_base64\": \"aGk=\"%s%s}",
                 report ? ", \"spec_report\": " : "", report ? report : "");
        return text;
}

/* The reasons the report makes, as names ("" for none). */
static char *judged(const char *report)
{
        const char *text = finish_text(report);
        grade_finish_t f;
        hg_error_t err = {0};
        int r = grade_finish_parse(text, strlen(text), &f, &err);
        ck_assert_msg(r == 0, "refused (%d: %s): %s", r, err.message, text);
        ck_assert_str_eq(f.id, "g-1");
        ck_assert_int_eq(f.exit_status, 3);
        ck_assert_uint_eq(f.output_len, 2);
        _unit_json_ json_t *names = grade_reasons_json(f.pod_reasons);
        static char out[256];
        out[0] = '\0';
        size_t n = 0, i;
        json_t *v;
        json_array_foreach (names, i, v)
                n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", n ? "," : "",
                                      json_string_value(v));
        grade_finish_free(&f);
        return out;
}

static void refused(const char *report, const char *needle)
{
        const char *text = finish_text(report);
        grade_finish_t f;
        memset(&f, 0x5a, sizeof(f));
        grade_finish_t before = f;
        hg_error_t err = {0};
        int r = grade_finish_parse(text, strlen(text), &f, &err);
        ck_assert_msg(r < 0, "accepted: %s", text);
        ck_assert_msg(strstr(err.message, needle), "message \"%s\" lacks \"%s\"", err.message,
                      needle);
        ck_assert_msg(memcmp(&f, &before, sizeof(f)) == 0, "ret written on failure: %s", text);
}

START_TEST(spec_report_judged)
{
        ck_assert_str_eq(
            judged("{\"result\": \"pass\", \"checks\": " CHECKS_PASS ", \"other_containers\": []}"),
            "");
        ck_assert_str_eq(judged("{\"result\": \"pass\", \"checks\": " CHECKS_PASS
                                ", \"other_containers\": [\"helper\", \"debugger\"]}"),
                         "other-containers");
        ck_assert_str_eq(judged("null"), "other-containers");
        ck_assert_str_eq(
            judged("{\"result\": \"fail\", \"checks\": " CHECKS_FAIL ", \"other_containers\": []}"),
            "split-not-active");
        ck_assert_str_eq(judged("{\"result\": \"fail\", \"checks\": " CHECKS_FAIL
                                ", \"other_containers\": [\"x\"]}"),
                         "split-not-active,other-containers");
}
END_TEST

START_TEST(the_names_kept)
{
        const char *text = finish_text("{\"result\": \"pass\", \"checks\": " CHECKS_PASS
                                       ", \"other_containers\": [\"helper\"]}");
        grade_finish_t f;
        hg_error_t err = {0};
        ck_assert_int_eq(grade_finish_parse(text, strlen(text), &f, &err), 0);
        ck_assert_uint_eq(json_array_size(f.other_containers), 1);
        ck_assert_str_eq(json_string_value(json_array_get(f.other_containers, 0)), "helper");
        grade_finish_free(&f);
        text = finish_text("null");
        ck_assert_int_eq(grade_finish_parse(text, strlen(text), &f, &err), 0);
        ck_assert_ptr_null(f.other_containers);
        grade_finish_free(&f);
}
END_TEST

START_TEST(not_a_spec_report_refused)
{
        refused(NULL, "\"spec_report\" is required");
        refused("{\"result\": \"pass\", \"checks\": " CHECKS_FAIL ", \"other_containers\": []}",
                "says pass but its checks say fail");
        refused("{\"result\": \"fail\", \"checks\": " CHECKS_PASS ", \"other_containers\": []}",
                "says fail but its checks say pass");
        refused("{\"role\": \"agent\", \"result\": \"pass\", \"checks\": " CHECKS_PASS
                ", \"other_containers\": []}",
                "must be hangar-probe spec's report");
        refused("{\"result\": \"pass\", \"checks\": " CHECKS_PASS "}", "no \"other_containers\"");
        refused("{\"result\": \"pass\", \"checks\": [], \"other_containers\": []}", "no checks");
        refused("{\"checks\": " CHECKS_PASS ", \"other_containers\": []}", "no result");
        refused("{\"result\": \"pass\", \"checks\": [{\"status\": \"unknown\"}], "
                "\"other_containers\": []}",
                "neither pass nor fail");
        refused("{\"result\": \"pass\", \"checks\": " CHECKS_PASS
                ", \"other_containers\": [\"Not_A_Name\"]}",
                "must be container names");
        refused("{\"result\": \"pass\", \"checks\": " CHECKS_PASS ", \"other_containers\": [7]}",
                "must be container names");
        refused("{\"result\": \"pass\", \"checks\": " CHECKS_PASS ", \"other_containers\": \"x\"}",
                "no \"other_containers\"");
        refused("[]", "must be hangar-probe spec's report");
        refused("true", "must be hangar-probe spec's report");
}
END_TEST

START_TEST(the_driver_reasons_are_the_drivers)
{
        ck_assert_str_eq(grade_reason_name(GRADE_R_OTHER_CONTAINERS), "other-containers");
        ck_assert_uint_eq(grade_reason_bit("other-containers"), GRADE_R_OTHER_CONTAINERS);
        ck_assert(!(GRADE_SIDE_REASONS & GRADE_R_OTHER_CONTAINERS));
        static const char findings[] = "{\"reasons\": [\"other-containers\"], \"sweep\": {}}";
        grade_findings_t fi;
        hg_error_t err = {0};
        ck_assert_int_lt(grade_findings_parse(findings, sizeof(findings) - 1, &fi, &err), 0);
}
END_TEST

/* A begin spec whose argv is N arguments of LEN bytes each. */
static char *argv_spec(size_t n, size_t len)
{
        static char text[GRADE_ARGV_MAX * (GRADE_ARG_MAX + 8) + 256];
        size_t o = (size_t)snprintf(
            text, sizeof(text), "{\"grade\": \"g-1\", \"tests\": [], \"cwd\": \"/\", \"argv\": [");
        for (size_t i = 0; i < n; i++) {
                o += (size_t)snprintf(text + o, sizeof(text) - o, "%s\"", i ? ", " : "");
                memset(text + o, 'a', len);
                o += len;
                o += (size_t)snprintf(text + o, sizeof(text) - o, "\"");
        }
        snprintf(text + o, sizeof(text) - o, "]}");
        return text;
}

/* The grader side gets argv and cwd in one go message of GRADE_MSG_MAX
 * bytes: a spec whose go would not fit (each argument within its own
 * limit) is refused at the start, not accepted and never started (fuzz
 * found it); one that fits gives a go the grader side reads back. */
START_TEST(argv_must_fit_the_go_message)
{
        grade_spec_t s;
        hg_error_t err = {0};
        const char *big = argv_spec(4, 4000);
        ck_assert_int_eq(grade_spec_parse(big, strlen(big), &s, &err), -E2BIG);
        ck_assert_msg(strstr(err.message, "start message"), "message: %s", err.message);
        const char *fits = argv_spec(4, 1500);
        ck_assert_int_eq(grade_spec_parse(fits, strlen(fits), &s, &err), 0);
        char longest[GRADE_TESTS_DIR_MAX + 1];
        memset(longest, 'x', GRADE_TESTS_DIR_MAX);
        longest[0] = '/';
        longest[GRADE_TESTS_DIR_MAX] = '\0';
        _unit_json_ json_t *go = grade_go_json(&s, longest);
        _cleanup_free_ char *text = jsonx_dumps(go, JSON_COMPACT);
        ck_assert_uint_le(strlen(text), GRADE_MSG_MAX);
        grade_go_t g;
        ck_assert_int_eq(grade_go_parse(text, strlen(text), &g, &err), 0);
        ck_assert_uint_eq(g.argc, 4);
        grade_go_free(&g);
        grade_spec_free(&s);
}
END_TEST

START_TEST(exit_status_lost_or_given)
{
        /* null: hangar lost the exec (hangar grade finish); otherwise 0-255. */
        static const char lost[] = "{\"grade\": \"g-1\", \"exit_status\": null, "
                                   "\"output_base64\": \"\", \"spec_report\": null}";
        grade_finish_t f;
        hg_error_t err = {0};
        ck_assert_int_eq(grade_finish_parse(lost, strlen(lost), &f, &err), 0);
        ck_assert(f.exec_lost);
        ck_assert_int_eq(f.exit_status, -1);
        grade_finish_free(&f);
        static const char given[] = "{\"grade\": \"g-1\", \"exit_status\": 7, "
                                    "\"output_base64\": \"\", \"spec_report\": null}";
        ck_assert_int_eq(grade_finish_parse(given, strlen(given), &f, &err), 0);
        ck_assert(!f.exec_lost);
        ck_assert_int_eq(f.exit_status, 7);
        grade_finish_free(&f);
        static const char *const bad[] = {"256", "-1", "\"0\"", "false", "1.5"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char text[256];
                (void)snprintf(text, sizeof(text),
                               "{\"grade\": \"g-1\", \"exit_status\": %s, \"output_base64\": "
                               "\"\", \"spec_report\": null}",
                               bad[i]);
                ck_assert_int_eq(grade_finish_parse(text, strlen(text), &f, &err), -EINVAL);
                ck_assert_ptr_nonnull(strstr(err.message, "or null (the exec lost)"));
        }
        ck_assert_str_eq(grade_reason_name(GRADE_R_EXEC_LOST), "exec-lost");
        ck_assert(!(GRADE_SIDE_REASONS & GRADE_R_EXEC_LOST));
}
END_TEST

static Suite *grade_msg_suite(void)
{
        Suite *s = suite_create("grade_msg");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, spec_report_judged);
        tcase_add_test(tc, the_names_kept);
        tcase_add_test(tc, exit_status_lost_or_given);
        tcase_add_test(tc, not_a_spec_report_refused);
        tcase_add_test(tc, the_driver_reasons_are_the_drivers);
        tcase_add_test(tc, argv_must_fit_the_go_message);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(grade_msg_suite());
}
