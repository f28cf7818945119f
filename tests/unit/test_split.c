/* Unit tests for common/split: the HANGAR_UID_SPLIT mode and verdict names,
 * reading the mode from the environment, and split_gate_decide against
 * verdict files written into a temporary directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "fileio.h"
#include "split.h"
#include "strbuf.h"
#include "unit.h"

static char dir[4096];

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
}

static void teardown(void)
{
        unit_rmtree(dir);
}

/* Writes text as dir/name and returns the path (static buffer). */
static const char *verdict_file(const char *name, const char *text)
{
        static char path[4200];
        (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
        ck_assert_int_eq(file_write_atomic(path, text, strlen(text), 0644, 0), 0);
        return path;
}

static void assert_starts(const char *s, const char *prefix)
{
        ck_assert_msg(strncmp(s, prefix, strlen(prefix)) == 0, "\"%s\" does not start with \"%s\"",
                      s, prefix);
}

/* Decides with a poisoned output so a field left unwritten shows. */
static split_decision_t decide(split_mode_t mode, const char *path)
{
        split_decision_t d;
        memset(&d, 0x5a, sizeof(d));
        split_gate_decide(mode, path, &d);
        ck_assert_msg(memchr(d.reason, '\0', sizeof(d.reason)), "reason not terminated");
        ck_assert_msg(d.reason[0] != '\0', "empty reason");
        return d;
}

/* auto -> single-user and required -> refuse, both with the same reason. */
static void assert_not_split(const char *path, const char *reason_prefix)
{
        split_decision_t a = decide(SPLIT_AUTO, path);
        ck_assert_int_eq(a.gate, SPLIT_GATE_SINGLE_USER);
        assert_starts(a.reason, reason_prefix);
        split_decision_t r = decide(SPLIT_REQUIRED, path);
        ck_assert_int_eq(r.gate, SPLIT_GATE_REFUSE);
        ck_assert_str_eq(r.reason, a.reason);
}

/* ---- names ------------------------------------------------------------- */

START_TEST(mode_names)
{
        static const struct {
                const char *name;
                split_mode_t mode;
        } t[] = {{"off", SPLIT_OFF}, {"auto", SPLIT_AUTO}, {"required", SPLIT_REQUIRED}};
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                split_mode_t m = (split_mode_t)99;
                ck_assert_int_eq(split_mode_parse(t[i].name, &m), 0);
                ck_assert_int_eq(m, t[i].mode);
                ck_assert_str_eq(split_mode_name(t[i].mode), t[i].name);
        }
        static const char *const bad[] = {"",     "Off", "AUTO",       "on",        "auto ",
                                          " off", "1",   "required\n", "requiredx", "of"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                split_mode_t m = (split_mode_t)99;
                ck_assert_msg(split_mode_parse(bad[i], &m) == -EINVAL, "\"%s\" accepted", bad[i]);
                ck_assert_int_eq(m, 99);
        }
        split_mode_t m = (split_mode_t)99;
        ck_assert_int_eq(split_mode_parse(NULL, &m), -EINVAL);
        ck_assert_int_eq(m, 99);
        ck_assert_str_eq(split_mode_name((split_mode_t)3), "?");
        ck_assert_str_eq(split_mode_name((split_mode_t)-1), "?");
        ck_assert_int_eq(SPLIT_MODE_DEFAULT, SPLIT_AUTO);
}
END_TEST

START_TEST(verdict_names)
{
        static const struct {
                const char *name;
                verdict_t v;
        } t[] = {{"refused", VERDICT_REFUSED},
                 {"single-user", VERDICT_SINGLE_USER},
                 {"split-active", VERDICT_SPLIT_ACTIVE}};
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                verdict_t v = (verdict_t)99;
                ck_assert_int_eq(split_verdict_parse(t[i].name, &v), 0);
                ck_assert_int_eq(v, t[i].v);
                ck_assert_str_eq(split_verdict_name(t[i].v), t[i].name);
        }
        verdict_t v = (verdict_t)99;
        ck_assert_int_eq(split_verdict_parse("split", &v), -EINVAL);
        ck_assert_int_eq(split_verdict_parse("Split-Active", &v), -EINVAL);
        ck_assert_int_eq(split_verdict_parse(NULL, &v), -EINVAL);
        ck_assert_int_eq(v, 99);
        /* Out of range reads as the failing value; a zeroed verdict fails closed. */
        ck_assert_str_eq(split_verdict_name((verdict_t)7), "refused");
        ck_assert_str_eq(split_verdict_name((verdict_t)-1), "refused");
        ck_assert_int_eq(VERDICT_REFUSED, 0);
        ck_assert_int_eq(SPLIT_GATE_REFUSE, 0);
}
END_TEST

START_TEST(gate_names)
{
        ck_assert_str_eq(split_gate_name(SPLIT_GATE_SPLIT), "split");
        ck_assert_str_eq(split_gate_name(SPLIT_GATE_SINGLE_USER), "single-user");
        ck_assert_str_eq(split_gate_name(SPLIT_GATE_REFUSE), "refused");
        ck_assert_str_eq(split_gate_name((split_gate_t)42), "refused");
}
END_TEST

/* ---- environment ------------------------------------------------------- */

START_TEST(env_unset_or_empty_is_auto)
{
        ck_assert_int_eq(unsetenv(SPLIT_MODE_ENV), 0);
        split_mode_t m = SPLIT_OFF;
        hg_error_t err = {0};
        ck_assert_int_eq(split_mode_from_env(&m, &err), 0);
        ck_assert_int_eq(m, SPLIT_AUTO);
        ck_assert_int_eq(setenv(SPLIT_MODE_ENV, "", 1), 0);
        m = SPLIT_REQUIRED;
        ck_assert_int_eq(split_mode_from_env(&m, &err), 0);
        ck_assert_int_eq(m, SPLIT_AUTO);
        ck_assert_str_eq(err.message, "");
}
END_TEST

START_TEST(env_values)
{
        static const struct {
                const char *text;
                split_mode_t mode;
        } t[] = {{"off", SPLIT_OFF}, {"auto", SPLIT_AUTO}, {"required", SPLIT_REQUIRED}};
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                ck_assert_int_eq(setenv(SPLIT_MODE_ENV, t[i].text, 1), 0);
                split_mode_t m = (split_mode_t)99;
                ck_assert_int_eq(split_mode_from_env(&m, NULL), 0);
                ck_assert_int_eq(m, t[i].mode);
        }
}
END_TEST

START_TEST(env_bad_value)
{
        static const char *const bad[] = {"yes", "Auto", "off ", "0", "required,auto"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                ck_assert_int_eq(setenv(SPLIT_MODE_ENV, bad[i], 1), 0);
                split_mode_t m = (split_mode_t)99;
                hg_error_t err = {0};
                ck_assert_int_eq(split_mode_from_env(&m, &err), -EINVAL);
                ck_assert_int_eq(m, 99); /* never a silent default */
                ck_assert_int_eq(err.code, -EINVAL);
                ck_assert_msg(strstr(err.message, SPLIT_MODE_ENV), "message: %s", err.message);
                ck_assert_msg(strstr(err.message, bad[i]), "message: %s", err.message);
                ck_assert_msg(strstr(err.message, "off, auto or required"), "message: %s",
                              err.message);
        }
        /* A long value is cut in the message, not copied whole. */
        char big[300];
        memset(big, 'q', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        ck_assert_int_eq(setenv(SPLIT_MODE_ENV, big, 1), 0);
        split_mode_t m;
        hg_error_t err = {0};
        ck_assert_int_eq(split_mode_from_env(&m, &err), -EINVAL);
        ck_assert_ptr_null(strstr(err.message, big + 200));
        ck_assert_int_eq(split_mode_from_env(&m, NULL), -EINVAL);
}
END_TEST

/* ---- the gate ---------------------------------------------------------- */

START_TEST(gate_mode_off)
{
        /* Off never reads the file: missing, garbage or split-active alike. */
        char missing[4200];
        (void)snprintf(missing, sizeof(missing), "%s/none.json", dir);
        const char *paths[] = {
            missing,
            verdict_file("garbage.json", "{{{"),
            verdict_file("split.json", "{\"verdict\":\"split-active\",\"reasons\":[]}"),
        };
        for (size_t i = 0; i < ARRAY_SIZE(paths); i++) {
                split_decision_t d = decide(SPLIT_OFF, paths[i]);
                ck_assert_int_eq(d.gate, SPLIT_GATE_SINGLE_USER);
                assert_starts(d.reason, "mode-off");
        }
}
END_TEST

START_TEST(gate_split_active)
{
        const char *path = verdict_file(
            "v.json", "{\"mode\":\"auto\",\"verdict\":\"split-active\",\"reasons\":[]}\n");
        split_decision_t d = decide(SPLIT_AUTO, path);
        ck_assert_int_eq(d.gate, SPLIT_GATE_SPLIT);
        ck_assert_str_eq(d.reason, "split-active");
        d = decide(SPLIT_REQUIRED, path);
        ck_assert_int_eq(d.gate, SPLIT_GATE_SPLIT);
        ck_assert_str_eq(d.reason, "split-active");
}
END_TEST

START_TEST(gate_missing_file)
{
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/absent/verdict.json", dir);
        assert_not_split(path, "verdict-missing: ");
        split_decision_t d = decide(SPLIT_AUTO, path);
        ck_assert_msg(strstr(d.reason, path), "reason lacks the path: %s", d.reason);
        ck_assert_msg(strstr(d.reason, strerror(ENOENT)), "reason: %s", d.reason);
        /* A directory in its place is unreadable, the same outcome. */
        assert_not_split(dir, "verdict-missing: ");
}
END_TEST

START_TEST(gate_oversize_file)
{
        size_t n = SPLIT_VERDICT_MAX + 10;
        _cleanup_free_ char *big = malloc(n + 1);
        ck_assert_ptr_nonnull(big);
        memset(big, ' ', n);
        memcpy(big, "{\"verdict\":\"split-active\"}", 26);
        big[n] = '\0';
        const char *path = verdict_file("big.json", big);
        /* Never split on a file it did not read whole. */
        split_decision_t d = decide(SPLIT_AUTO, path);
        ck_assert_int_eq(d.gate, SPLIT_GATE_SINGLE_USER);
        d = decide(SPLIT_REQUIRED, path);
        ck_assert_int_eq(d.gate, SPLIT_GATE_REFUSE);
}
END_TEST

START_TEST(gate_malformed)
{
        static const char *const bad[] = {
            "",
            "{",
            "not json",
            "{\"verdict\":\"split-active\"} trailing",
            "{\"verdict\":\"split-active\",\"verdict\":\"split-active\"}", /* duplicate key */
            "[\"split-active\"]",
            "\"split-active\"",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char name[32];
                (void)snprintf(name, sizeof(name), "bad%zu.json", i);
                assert_not_split(verdict_file(name, bad[i]), "verdict-malformed: ");
        }
}
END_TEST

START_TEST(gate_unknown_verdict)
{
        static const char *const bad[] = {
            "{\"verdict\":\"split\"}",
            "{\"verdict\":\"SPLIT-ACTIVE\"}",
            "{\"verdict\":\"\"}",
            "{\"verdict\":true}",
            "{\"verdict\":[\"split-active\"]}",
            "{\"verdict\":null}",
            "{\"reasons\":[]}",
            "{}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char name[32];
                (void)snprintf(name, sizeof(name), "unknown%zu.json", i);
                const char *path = verdict_file(name, bad[i]);
                assert_not_split(path, "verdict-malformed: ");
                split_decision_t d = decide(SPLIT_AUTO, path);
                ck_assert_msg(strstr(d.reason, "no known \"verdict\""), "%s: %s", bad[i], d.reason);
        }
}
END_TEST

START_TEST(gate_single_user_carries_reason)
{
        const char *path = verdict_file(
            "v.json", "{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":["
                      "{\"code\":\"agent-failed\",\"detail\":\"agent out of shape: uid\"},"
                      "{\"code\":\"driver-failed\",\"detail\":\"second\"}]}");
        assert_not_split(path, "agent-failed: agent out of shape: uid");
        split_decision_t d = decide(SPLIT_AUTO, path);
        ck_assert_str_eq(d.reason, "agent-failed: agent out of shape: uid");
        ck_assert_ptr_null(strstr(d.reason, "second"));

        /* A code without a detail stands alone. */
        path = verdict_file(
            "code.json", "{\"verdict\":\"single-user\",\"reasons\":[{\"code\":\"spec-failed\"}]}");
        d = decide(SPLIT_AUTO, path);
        ck_assert_int_eq(d.gate, SPLIT_GATE_SINGLE_USER);
        ck_assert_str_eq(d.reason, "spec-failed");
}
END_TEST

START_TEST(gate_single_user_without_reason)
{
        static const char *const texts[] = {
            "{\"verdict\":\"single-user\"}",
            "{\"verdict\":\"single-user\",\"reasons\":[]}",
            "{\"verdict\":\"single-user\",\"reasons\":{}}",
            "{\"verdict\":\"single-user\",\"reasons\":[{\"detail\":\"no code\"}]}",
            "{\"verdict\":\"single-user\",\"reasons\":[{\"code\":7}]}",
            "{\"verdict\":\"single-user\",\"reasons\":[\"agent-failed\"]}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
                char name[32];
                (void)snprintf(name, sizeof(name), "noreason%zu.json", i);
                assert_not_split(verdict_file(name, texts[i]), "verdict-not-split: ");
        }
}
END_TEST

START_TEST(gate_refused_verdict)
{
        const char *path = verdict_file(
            "v.json",
            "{\"mode\":\"required\",\"verdict\":\"refused\",\"reasons\":["
            "{\"code\":\"spec-report-missing\",\"detail\":\"no readable spec report\"}]}");
        assert_not_split(path, "spec-report-missing: no readable spec report");
}
END_TEST

START_TEST(gate_long_reason_is_cut)
{
        /* A detail longer than the reason buffer is truncated, still terminated. */
        size_t n = 2 * ERROR_MESSAGE_MAX;
        _cleanup_free_ char *detail = malloc(n + 1);
        ck_assert_ptr_nonnull(detail);
        memset(detail, 'd', n);
        detail[n] = '\0';
        char text[3 * ERROR_MESSAGE_MAX];
        (void)snprintf(
            text, sizeof(text),
            "{\"verdict\":\"single-user\",\"reasons\":[{\"code\":\"c\",\"detail\":\"%s\"}]}",
            detail);
        split_decision_t d = decide(SPLIT_AUTO, verdict_file("long.json", text));
        ck_assert_int_eq(d.gate, SPLIT_GATE_SINGLE_USER);
        ck_assert_uint_eq(strlen(d.reason), sizeof(d.reason) - 1);
        assert_starts(d.reason, "c: ddd");
}
END_TEST

/* ---- a verdict to store (split_verdict_load) --------------------------- */

static int load(const char *text, verdict_t *v, hg_error_t *err)
{
        json_t *j = NULL;
        int r = split_verdict_load(text, strlen(text), &j, v, err);
        ck_assert_msg((r == 0) == (j != NULL), "a result without success, or none with it");
        json_decref(j);
        return r;
}

START_TEST(load_what_the_probe_makes)
{
        static const struct {
                const char *text;
                verdict_t v;
        } t[] = {
            {"{\"mode\":\"required\",\"verdict\":\"split-active\",\"reasons\":[]}",
             VERDICT_SPLIT_ACTIVE},
            {"{\"reasons\":[],\"verdict\":\"split-active\",\"mode\":\"auto\"}",
             VERDICT_SPLIT_ACTIVE},
            {"{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":[{\"code\":"
             "\"agent-failed\",\"detail\":\"agent out of shape\"}]}",
             VERDICT_SINGLE_USER},
            {"{\"mode\":\"off\",\"verdict\":\"single-user\",\"reasons\":[{\"code\":"
             "\"mode-off\"}]}",
             VERDICT_SINGLE_USER},
            {"{\"mode\":\"required\",\"verdict\":\"refused\",\"reasons\":[{\"code\":"
             "\"spec-failed\",\"detail\":\"\"},{\"code\":\"driver-report-missing\"}]}",
             VERDICT_REFUSED},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                verdict_t v = (verdict_t)99;
                hg_error_t err = {0};
                ck_assert_msg(load(t[i].text, &v, &err) == 0, "%s: %s", t[i].text, err.message);
                ck_assert_int_eq(v, t[i].v);
        }
}
END_TEST

START_TEST(load_refuses_what_is_not_a_verdict)
{
        static const struct {
                const char *text, *why;
        } t[] = {
            {"", "JSON"},
            {"split-active", "JSON"},
            {"[]", "not a verdict"},
            {"{\"mode\":\"auto\",\"verdict\":\"split-active\"}", "not a verdict"},
            {"{\"mode\":\"auto\",\"verdict\":\"split-active\",\"reasons\":[],\"x\":1}",
             "not a verdict"},
            {"{\"mode\":\"Auto\",\"verdict\":\"split-active\",\"reasons\":[]}", "\"mode\""},
            {"{\"mode\":\"auto\",\"verdict\":1,\"reasons\":[]}", "\"verdict\""},
            {"{\"mode\":\"auto\",\"verdict\":\"split-active\",\"reasons\":{}}", "\"reasons\""},
            {"{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":[\"x\"]}", "reason 0"},
            {"{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":[{\"code\":\"\"}]}",
             "reason 0"},
            {"{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":[{\"code\":\"A\"}]}",
             "reason 0"},
            {"{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":[{\"code\":\"a\","
             "\"detail\":null}]}",
             "reason 0"},
            {"{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":[{\"code\":\"a\","
             "\"why\":\"b\"}]}",
             "reason 0"},
            {"{\"mode\":\"auto\",\"verdict\":\"split-active\",\"reasons\":[{\"code\":\"a\"}]}",
             "with some reasons"},
            {"{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":[]}", "with no reasons"},
            {"{\"mode\":\"auto\",\"verdict\":\"refused\",\"reasons\":[{\"code\":\"a\"}]}",
             "cannot come of mode auto"},
            {"{\"mode\":\"required\",\"verdict\":\"single-user\",\"reasons\":[{\"code\":\"a\"}]}",
             "cannot come of mode required"},
            {"{\"mode\":\"off\",\"verdict\":\"split-active\",\"reasons\":[]}",
             "cannot come of mode off"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                verdict_t v = VERDICT_SPLIT_ACTIVE;
                hg_error_t err = {0};
                ck_assert_msg(load(t[i].text, &v, &err) < 0, "accepted: %s", t[i].text);
                ck_assert_msg(strstr(err.message, t[i].why), "%s: \"%s\" does not say \"%s\"",
                              t[i].text, err.message, t[i].why);
                ck_assert_int_eq(v, VERDICT_SPLIT_ACTIVE); /* untouched */
        }
}
END_TEST

START_TEST(load_bounds)
{
        /* 65 reasons, one over the cap; a text over 64 KiB. */
        strbuf_t b = {0};
        ck_assert_int_eq(strbuf_printf(&b, "{\"mode\":\"auto\",\"verdict\":\"single-user\","
                                           "\"reasons\":["),
                         0);
        for (unsigned i = 0; i <= SPLIT_REASONS_MAX; i++)
                ck_assert_int_eq(strbuf_printf(&b, "%s{\"code\":\"c\"}", i ? "," : ""), 0);
        ck_assert_int_eq(strbuf_printf(&b, "]}"), 0);
        verdict_t v;
        hg_error_t err = {0};
        ck_assert_int_eq(load(b.data, &v, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "at most 64"));
        strbuf_free(&b);
        char *big = malloc(SPLIT_VERDICT_MAX + 2);
        ck_assert_ptr_nonnull(big);
        memset(big, ' ', SPLIT_VERDICT_MAX + 1);
        big[SPLIT_VERDICT_MAX + 1] = '\0';
        ck_assert_int_eq(load(big, &v, &err), -EFBIG);
        free(big);
}
END_TEST

static Suite *split_suite(void)
{
        Suite *s = suite_create("split");
        TCase *tc = tcase_create("names");
        tcase_add_test(tc, mode_names);
        tcase_add_test(tc, verdict_names);
        tcase_add_test(tc, gate_names);
        tcase_add_test(tc, env_unset_or_empty_is_auto);
        tcase_add_test(tc, env_values);
        tcase_add_test(tc, env_bad_value);
        suite_add_tcase(s, tc);
        tc = tcase_create("gate");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, gate_mode_off);
        tcase_add_test(tc, gate_split_active);
        tcase_add_test(tc, gate_missing_file);
        tcase_add_test(tc, gate_oversize_file);
        tcase_add_test(tc, gate_malformed);
        tcase_add_test(tc, gate_unknown_verdict);
        tcase_add_test(tc, gate_single_user_carries_reason);
        tcase_add_test(tc, gate_single_user_without_reason);
        tcase_add_test(tc, gate_refused_verdict);
        tcase_add_test(tc, gate_long_reason_is_cut);
        suite_add_tcase(s, tc);
        tc = tcase_create("load");
        tcase_add_test(tc, load_what_the_probe_makes);
        tcase_add_test(tc, load_refuses_what_is_not_a_verdict);
        tcase_add_test(tc, load_bounds);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(split_suite());
}
