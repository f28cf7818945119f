/* Unit tests for driver/turn/spec: a full turn spec and its defaults, and every
 * way a spec is refused (missing or unknown members, wrong types, bad turn
 * ids, relative cwd, empty script, out-of-range numbers, duplicate keys,
 * oversize input). A refused spec leaves *ret untouched and says why. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cleanup.h"
#include "spec.h"
#include "unit.h"

#define MINIMAL "\"turn\":\"t-1\",\"mode\":\"ask\",\"cwd\":\"/w\",\"script\":\"run\""

static turn_spec_t parse_ok(const char *text)
{
        turn_spec_t s;
        memset(&s, 0x5a, sizeof(s));
        hg_error_t err = {0};
        int r = spec_parse(text, strlen(text), &s, &err);
        ck_assert_msg(r == 0, "refused (%d: %s): %s", r, err.message, text);
        return s;
}

/* Expects text to be refused with code and a message holding needle. */
static void assert_refused_code(const char *text, int code, const char *needle)
{
        turn_spec_t s;
        memset(&s, 0x5a, sizeof(s));
        turn_spec_t before = s;
        hg_error_t err = {0};
        int r = spec_parse(text, strlen(text), &s, &err);
        ck_assert_msg(r == code, "got %d (%s), want %d: %s", r, err.message, code, text);
        ck_assert_int_eq(err.code, code);
        ck_assert_msg(err.message[0] != '\0', "no message: %s", text);
        if (needle)
                ck_assert_msg(strstr(err.message, needle), "message \"%s\" lacks \"%s\"",
                              err.message, needle);
        ck_assert_msg(memcmp(&s, &before, sizeof(s)) == 0, "ret written on failure: %s", text);
}

static void assert_refused(const char *text, const char *needle)
{
        assert_refused_code(text, -EINVAL, needle);
}

/* {MINIMAL, extra} */
static void assert_refused_with(const char *extra, const char *needle)
{
        char text[1024];
        (void)snprintf(text, sizeof(text), "{" MINIMAL ",%s}", extra);
        assert_refused(text, needle);
}

static void accepted_with(const char *extra, turn_spec_t *ret)
{
        char text[1024];
        (void)snprintf(text, sizeof(text), "{" MINIMAL ",%s}", extra);
        *ret = parse_ok(text);
}

START_TEST(full_spec)
{
        turn_spec_t s = parse_ok("{\"turn\": \"t-42.A_b\", \"mode\": \"deny-risky\", "
                                 "\"cwd\": \"/workspace/repo\", "
                                 "\"script\": \"#!/bin/sh\\nexec claude -p\", "
                                 "\"input\": \"prompt \\u00e9\", \"close_stdin\": false, "
                                 "\"run_key\": \"k-123\", \"settings\": {\"model\": \"x\"}, "
                                 "\"connect_timeout_s\": 30, \"handshake_timeout_ms\": 500, "
                                 "\"linger_s\": 0}");
        ck_assert_str_eq(s.turn, "t-42.A_b");
        ck_assert_int_eq(s.mode, TURN_MODE_DENY_RISKY);
        ck_assert_str_eq(s.cwd, "/workspace/repo");
        ck_assert_str_eq(s.script, "#!/bin/sh\nexec claude -p");
        ck_assert_str_eq(s.input, "prompt \xc3\xa9");
        ck_assert(!s.close_stdin);
        ck_assert_str_eq(s.run_key, "k-123");
        ck_assert_json_eq_text(s.settings, "{\"model\":\"x\"}");
        ck_assert_uint_eq(s.connect_timeout_s, 30);
        ck_assert_uint_eq(s.handshake_timeout_ms, 500);
        ck_assert_uint_eq(s.linger_s, 0);
        spec_free(&s);
        ck_assert_ptr_null(s.turn);
        ck_assert_ptr_null(s.settings);
        spec_free(&s); /* twice is harmless */
}
END_TEST

START_TEST(defaults)
{
        turn_spec_t s = parse_ok("{" MINIMAL "}");
        ck_assert_str_eq(s.turn, "t-1");
        ck_assert_int_eq(s.mode, TURN_MODE_ASK);
        ck_assert_str_eq(s.input, "");
        ck_assert_str_eq(s.run_key, "");
        ck_assert(s.close_stdin);
        ck_assert_ptr_null(s.settings);
        ck_assert_uint_eq(s.connect_timeout_s, 120);
        ck_assert_uint_eq(s.handshake_timeout_ms, 2000);
        ck_assert_uint_eq(s.linger_s, 300);
        ck_assert_uint_eq(s.log_max_mib, 64);
        spec_free(&s);
        /* Whitespace around the object is fine. */
        s = parse_ok("\n  {" MINIMAL "}  \n");
        spec_free(&s);
}
END_TEST

START_TEST(modes)
{
        static const struct {
                const char *name;
                turn_mode_t mode;
        } t[] = {{"auto", TURN_MODE_AUTO},
                 {"ask", TURN_MODE_ASK},
                 {"deny-risky", TURN_MODE_DENY_RISKY},
                 {"governed", TURN_MODE_GOVERNED}};
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                char text[256];
                (void)snprintf(text, sizeof(text),
                               "{\"turn\":\"t\",\"mode\":\"%s\",\"cwd\":\"/\",\"script\":\"x\"}",
                               t[i].name);
                turn_spec_t s = parse_ok(text);
                ck_assert_int_eq(s.mode, t[i].mode);
                ck_assert_str_eq(spec_mode_name(s.mode), t[i].name);
                spec_free(&s);
        }
        ck_assert_str_eq(spec_mode_name((turn_mode_t)4), "?");
        ck_assert_str_eq(spec_mode_name((turn_mode_t)-1), "?");
        static const char *const bad[] = {"Ask", "deny_risky", "", "ask ", "manual"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char text[256];
                (void)snprintf(text, sizeof(text),
                               "{\"turn\":\"t\",\"mode\":\"%s\",\"cwd\":\"/\",\"script\":\"x\"}",
                               bad[i]);
                assert_refused(text, "\"mode\" must be");
        }
        assert_refused("{\"turn\":\"t\",\"mode\":1,\"cwd\":\"/\",\"script\":\"x\"}", "\"mode\"");
}
END_TEST

START_TEST(required_members)
{
        static const char *const texts[][2] = {
            {"{\"mode\":\"ask\",\"cwd\":\"/w\",\"script\":\"run\"}", "\"turn\" is required"},
            {"{\"turn\":\"t\",\"cwd\":\"/w\",\"script\":\"run\"}", "\"mode\" is required"},
            {"{\"turn\":\"t\",\"mode\":\"ask\",\"script\":\"run\"}", "\"cwd\" is required"},
            {"{\"turn\":\"t\",\"mode\":\"ask\",\"cwd\":\"/w\"}", "\"script\" is required"},
            {"{}", "is required"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(texts); i++)
                assert_refused(texts[i][0], texts[i][1]);
        /* Present but null or of another type is not "missing": refused too. */
        assert_refused("{\"turn\":null,\"mode\":\"ask\",\"cwd\":\"/w\",\"script\":\"run\"}",
                       "\"turn\" must be a string");
        assert_refused("{\"turn\":\"t\",\"mode\":\"ask\",\"cwd\":[\"/w\"],\"script\":\"run\"}",
                       "\"cwd\" must be a string");
        assert_refused("{\"turn\":\"t\",\"mode\":\"ask\",\"cwd\":\"/w\",\"script\":7}",
                       "\"script\" must be a string");
        assert_refused_with("\"input\":false", "\"input\" must be a string");
        assert_refused_with("\"run_key\":{}", "\"run_key\" must be a string");
}
END_TEST

START_TEST(unknown_member)
{
        assert_refused_with("\"cwdd\":\"/x\"", "unknown member \"cwdd\"");
        assert_refused_with("\"Turn\":\"t\"", "unknown member");
        assert_refused_with("\"\":1", "unknown member");
        /* Long names are cut in the message. */
        char extra[400];
        char name[300];
        memset(name, 'n', sizeof(name) - 1);
        name[sizeof(name) - 1] = '\0';
        (void)snprintf(extra, sizeof(extra), "\"%s\":1", name);
        char text[1024];
        (void)snprintf(text, sizeof(text), "{" MINIMAL ",%s}", extra);
        turn_spec_t s;
        hg_error_t err = {0};
        ck_assert_int_eq(spec_parse(text, strlen(text), &s, &err), -EINVAL);
        ck_assert_ptr_null(strstr(err.message, name + 200));
}
END_TEST

START_TEST(relative_cwd)
{
        static const char *const bad[] = {"workspace", "./w", "", " /w", "~/w"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char text[256];
                (void)snprintf(text, sizeof(text),
                               "{\"turn\":\"t\",\"mode\":\"ask\",\"cwd\":\"%s\",\"script\":\"x\"}",
                               bad[i]);
                assert_refused(text, "\"cwd\" must be an absolute path");
        }
}
END_TEST

START_TEST(empty_script)
{
        assert_refused("{\"turn\":\"t\",\"mode\":\"ask\",\"cwd\":\"/w\",\"script\":\"\"}",
                       "\"script\" must not be empty");
        /* Whitespace is a (useless) script, not an empty one. */
        turn_spec_t s =
            parse_ok("{\"turn\":\"t\",\"mode\":\"ask\",\"cwd\":\"/w\",\"script\":\" \"}");
        spec_free(&s);
}
END_TEST

START_TEST(turn_ids)
{
        static const char *const good[] = {"a", "Z", "0", "t-42", "a.b_c-D", "...", "-"};
        for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
                char text[256];
                (void)snprintf(text, sizeof(text),
                               "{\"turn\":\"%s\",\"mode\":\"ask\",\"cwd\":\"/\",\"script\":\"x\"}",
                               good[i]);
                turn_spec_t s = parse_ok(text);
                ck_assert_str_eq(s.turn, good[i]);
                spec_free(&s);
        }
        static const char *const bad[] = {"",     "a b", "a/b", "t\\n", "t:1", "t\\u00e9",
                                          "t\\t", "t@x", "t+1", "t*",   "(t)"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char text[256];
                (void)snprintf(text, sizeof(text),
                               "{\"turn\":\"%s\",\"mode\":\"ask\",\"cwd\":\"/\",\"script\":\"x\"}",
                               bad[i]);
                assert_refused(text, "\"turn\" must be 1-64");
        }
        /* 64 characters are fine, 65 are not. */
        char id[66];
        memset(id, 'k', sizeof(id) - 1);
        id[64] = '\0';
        char text[256];
        (void)snprintf(text, sizeof(text),
                       "{\"turn\":\"%s\",\"mode\":\"ask\",\"cwd\":\"/\",\"script\":\"x\"}", id);
        turn_spec_t s = parse_ok(text);
        ck_assert_uint_eq(strlen(s.turn), 64);
        spec_free(&s);
        id[64] = 'k';
        id[65] = '\0';
        (void)snprintf(text, sizeof(text),
                       "{\"turn\":\"%s\",\"mode\":\"ask\",\"cwd\":\"/\",\"script\":\"x\"}", id);
        assert_refused(text, "\"turn\" must be 1-64");
}
END_TEST

START_TEST(close_stdin_bool)
{
        turn_spec_t s;
        accepted_with("\"close_stdin\":true", &s);
        ck_assert(s.close_stdin);
        spec_free(&s);
        accepted_with("\"close_stdin\":false", &s);
        ck_assert(!s.close_stdin);
        spec_free(&s);
        static const char *const bad[] = {"\"close_stdin\":1", "\"close_stdin\":\"true\"",
                                          "\"close_stdin\":null", "\"close_stdin\":[]"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused_with(bad[i], "\"close_stdin\" must be true or false");
}
END_TEST

/* The sealed start is the default; only an explicit boolean opts out. */
START_TEST(keep_processes_bool)
{
        turn_spec_t s;
        accepted_with("\"close_stdin\":true", &s);
        ck_assert(!s.keep_processes);
        spec_free(&s);
        accepted_with("\"keep_processes\":true", &s);
        ck_assert(s.keep_processes);
        spec_free(&s);
        accepted_with("\"keep_processes\":false", &s);
        ck_assert(!s.keep_processes);
        spec_free(&s);
        static const char *const bad[] = {"\"keep_processes\":1", "\"keep_processes\":\"true\"",
                                          "\"keep_processes\":null", "\"keep_processes\":{}"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused_with(bad[i], "\"keep_processes\" must be true or false");
        assert_refused_with("\"keep_process\":true", "unknown member");
}
END_TEST

START_TEST(settings_object)
{
        turn_spec_t s;
        accepted_with("\"settings\":{}", &s);
        ck_assert(json_is_object(s.settings));
        ck_assert_uint_eq(json_object_size(s.settings), 0);
        spec_free(&s);
        accepted_with("\"settings\":{\"a\":{\"b\":[1,2,{\"c\":null}]}}", &s);
        ck_assert_json_eq_text(s.settings, "{\"a\":{\"b\":[1,2,{\"c\":null}]}}");
        /* Owned by the spec, not borrowed from the parse. */
        ck_assert_int_eq(s.settings->refcount, 1);
        spec_free(&s);
        static const char *const bad[] = {"\"settings\":[]", "\"settings\":\"{}\"",
                                          "\"settings\":null", "\"settings\":0",
                                          "\"settings\":true"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused_with(bad[i], "\"settings\" must be an object");
}
END_TEST

START_TEST(terminal_member)
{
        turn_spec_t s;
        accepted_with("\"close_stdin\":false", &s);
        ck_assert(!s.terminal.on);
        spec_free(&s);
        accepted_with("\"terminal\":{\"rows\":24,\"cols\":80,\"term\":\"xterm-256color\"}", &s);
        ck_assert(s.terminal.on);
        ck_assert_uint_eq(s.terminal.rows, 24);
        ck_assert_uint_eq(s.terminal.cols, 80);
        ck_assert_str_eq(s.terminal.term, "xterm-256color");
        spec_free(&s);
        accepted_with("\"terminal\":{\"rows\":500,\"cols\":1000,\"term\":\"vt100\"}", &s);
        ck_assert_uint_eq(s.terminal.rows, 500);
        spec_free(&s);
        static const struct {
                const char *extra, *needle;
        } bad[] = {
            {"\"terminal\":null", "must be an object"},
            {"\"terminal\":[24,80]", "must be an object"},
            {"\"terminal\":{\"rows\":1,\"cols\":80,\"term\":\"xterm\"}", "rows must be"},
            {"\"terminal\":{\"rows\":501,\"cols\":80,\"term\":\"xterm\"}", "rows must be"},
            {"\"terminal\":{\"rows\":24,\"cols\":9,\"term\":\"xterm\"}", "cols must be"},
            {"\"terminal\":{\"rows\":24,\"cols\":1001,\"term\":\"xterm\"}", "cols must be"},
            {"\"terminal\":{\"rows\":24.5,\"cols\":80,\"term\":\"xterm\"}", "integers"},
            {"\"terminal\":{\"rows\":\"24\",\"cols\":80,\"term\":\"xterm\"}", "integers"},
            {"\"terminal\":{\"rows\":24,\"cols\":80}", "integers"},
            {"\"terminal\":{\"rows\":24,\"cols\":80,\"term\":\"\"}", "term must be"},
            {"\"terminal\":{\"rows\":24,\"cols\":80,\"term\":\"xterm;id\"}", "term must be"},
            {"\"terminal\":{\"rows\":24,\"cols\":80,\"term\":\"-xterm\"}", "term must be"},

            {"\"terminal\":{\"rows\":24,\"cols\":80,\"term\":"
             "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
             "term must be"},
            {"\"terminal\":{\"rows\":24,\"cols\":80,\"term\":\"xterm\",\"x\":1}", "unknown member"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused_with(bad[i].extra, bad[i].needle);
}
END_TEST

START_TEST(integer_ranges)
{
        static const char *const good[] = {
            "\"connect_timeout_s\":1",
            "\"connect_timeout_s\":86400",
            "\"handshake_timeout_ms\":50",
            "\"handshake_timeout_ms\":60000",
            "\"linger_s\":0",
            "\"linger_s\":86400",
            "\"log_max_mib\":1",
            "\"log_max_mib\":2047",
        };
        for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
                turn_spec_t s;
                accepted_with(good[i], &s);
                spec_free(&s);
        }
        static const char *const bad[][2] = {
            {"\"connect_timeout_s\":0", "\"connect_timeout_s\" must be an integer from 1 to 86400"},
            {"\"connect_timeout_s\":86401", "\"connect_timeout_s\""},
            {"\"connect_timeout_s\":-1", "\"connect_timeout_s\""},
            {"\"connect_timeout_s\":4294967297", "\"connect_timeout_s\""},
            {"\"connect_timeout_s\":-4294967295", "\"connect_timeout_s\""},
            {"\"connect_timeout_s\":9223372036854775807", "\"connect_timeout_s\""},
            {"\"connect_timeout_s\":12.0", "\"connect_timeout_s\""},
            {"\"connect_timeout_s\":\"12\"", "\"connect_timeout_s\""},
            {"\"connect_timeout_s\":null", "\"connect_timeout_s\""},
            {"\"handshake_timeout_ms\":49", "from 50 to 60000"},
            {"\"handshake_timeout_ms\":60001", "\"handshake_timeout_ms\""},
            {"\"linger_s\":-1", "\"linger_s\" must be an integer from 0 to 86400"},
            {"\"linger_s\":86401", "\"linger_s\""},
            {"\"linger_s\":true", "\"linger_s\""},
            {"\"log_max_mib\":0", "\"log_max_mib\" must be an integer from 1 to 2047"},
            {"\"log_max_mib\":2048", "\"log_max_mib\""},
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused_with(bad[i][0], bad[i][1]);
}
END_TEST

START_TEST(duplicate_keys)
{
        assert_refused("{\"turn\":\"a\",\"turn\":\"b\",\"mode\":\"ask\",\"cwd\":\"/w\","
                       "\"script\":\"run\"}",
                       NULL);
        assert_refused_with("\"settings\":{\"k\":1,\"k\":2}", NULL);
        assert_refused_with("\"linger_s\":1,\"linger_s\":2", NULL);
}
END_TEST

START_TEST(not_a_spec)
{
        assert_refused("[]", "JSON object");
        assert_refused("[{" MINIMAL "}]", "JSON object");
        assert_refused("\"turn\"", NULL);
        assert_refused("", NULL);
        assert_refused("{" MINIMAL "} {}", NULL);
        assert_refused("{" MINIMAL, NULL);
        /* NUL bytes: inside a string, and raw. */
        assert_refused("{\"turn\":\"t\",\"mode\":\"ask\",\"cwd\":\"/w\",\"script\":\"a\\u0000b\"}",
                       NULL);
        static const char raw[] =
            "{\"turn\":\"t\",\"mode\":\"ask\",\"cwd\":\"/w\",\"script\":\"a\0b\"}";
        turn_spec_t s;
        hg_error_t err = {0};
        ck_assert_int_eq(spec_parse(raw, sizeof(raw) - 1, &s, &err), -EINVAL);
        ck_assert_int_eq(spec_parse("{\"x\":1}", 7, &s, NULL), -EINVAL);
}
END_TEST

START_TEST(size_limit)
{
        /* A valid spec padded with whitespace to SPEC_MAX_BYTES is taken;
         * one byte more is refused before parsing. */
        size_t n = SPEC_MAX_BYTES;
        _cleanup_free_ char *text = malloc(n + 2);
        ck_assert_ptr_nonnull(text);
        memset(text, ' ', n + 1);
        static const char body[] = "{" MINIMAL "}";
        memcpy(text, body, strlen(body));
        text[n] = '\0';
        turn_spec_t s;
        hg_error_t err = {0};
        ck_assert_msg(spec_parse(text, n, &s, &err) == 0, "%s", err.message);
        spec_free(&s);
        text[n] = ' ';
        text[n + 1] = '\0';
        assert_refused_code(text, -EFBIG, "over");
}
END_TEST

START_TEST(free_zeroed)
{
        turn_spec_t s = {0};
        spec_free(&s);
        ck_assert_ptr_null(s.turn);
}
END_TEST

/* spec_parse_wipe wipes the text (it holds the run key) whether or not the
 * spec parses (a spec that once failed to parse kept the key). */
static void assert_wiped(const char *text, int want)
{
        size_t len = strlen(text);
        char *buf = strdup(text);
        ck_assert_ptr_nonnull(buf);
        turn_spec_t s;
        hg_error_t err = {0};
        int r = spec_parse_wipe(buf, len, &s, &err);
        ck_assert_int_eq(r, want);
        for (size_t i = 0; i < len; i++)
                ck_assert_msg(buf[i] == 0, "byte %zu not wiped (%s)", i, text);
        if (r == 0) {
                ck_assert_str_eq(s.run_key, "KEY-SECRET");
                spec_free(&s);
        }
        free(buf);
}

START_TEST(wiped_on_every_path)
{
        assert_wiped("{" MINIMAL ",\"run_key\":\"KEY-SECRET\"}", 0);
        assert_wiped("{" MINIMAL ",\"run_key\":\"KEY-SECRET\",\"bogus\":1}", -EINVAL);
        assert_wiped("{" MINIMAL ",\"run_key\":\"KEY-SECRET\",\"linger_s\":-1}", -EINVAL);
        assert_wiped("{\"run_key\":\"KEY-SECRET\"", -EINVAL);
}
END_TEST

static Suite *spec_suite(void)
{
        Suite *s = suite_create("spec");
        TCase *tc = tcase_create("spec");
        tcase_add_test(tc, full_spec);
        tcase_add_test(tc, defaults);
        tcase_add_test(tc, modes);
        tcase_add_test(tc, required_members);
        tcase_add_test(tc, unknown_member);
        tcase_add_test(tc, relative_cwd);
        tcase_add_test(tc, empty_script);
        tcase_add_test(tc, turn_ids);
        tcase_add_test(tc, close_stdin_bool);
        tcase_add_test(tc, settings_object);
        tcase_add_test(tc, integer_ranges);
        tcase_add_test(tc, terminal_member);
        tcase_add_test(tc, duplicate_keys);
        tcase_add_test(tc, not_a_spec);
        tcase_add_test(tc, keep_processes_bool);
        tcase_add_test(tc, size_limit);
        tcase_add_test(tc, free_zeroed);
        tcase_add_test(tc, wiped_on_every_path);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(spec_suite());
}
