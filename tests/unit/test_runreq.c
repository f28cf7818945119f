/* Unit tests for driver/ctl/runreq: the driver's run requests. Ids count on
 * and are matched once; no more than RUNREQ_OUTSTANDING_MAX await an
 * answer; a new turn forgets them but keeps counting. Arguments: argv's
 * count and types, the timeout's and the tail's ranges and defaults, every
 * refusal with hangar's message and *ret untouched. verify's and tree's
 * commands. A tree result accepted only from a clean exit with one object
 * naming a tree; a failed run's output bounded and made printable. */
#include <string.h>

#include "cleanup.h"
#include "runreq.h"
#include "unit.h"

START_TEST(ids_count_on)
{
        runreq_pending_t p = {0};
        ck_assert_uint_eq(runreq_next_id(&p), 1);
        ck_assert_uint_eq(runreq_next_id(&p), 2);
        runreq_forget_all(&p);
        ck_assert_uint_eq(runreq_next_id(&p), 3); /* a new turn: no id again */
}
END_TEST

START_TEST(taken_once)
{
        runreq_pending_t p = {0};
        ck_assert_int_eq(runreq_add(&p, 7), 0);
        ck_assert_int_eq(runreq_add(&p, 9), 0);
        ck_assert(!runreq_take(&p, 8)); /* never asked for */
        ck_assert(runreq_take(&p, 9));
        ck_assert(!runreq_take(&p, 9)); /* a replayed result */
        ck_assert(runreq_take(&p, 7));
        ck_assert_uint_eq(p.n, 0);
        ck_assert(!runreq_take(&p, 0));
}
END_TEST

START_TEST(bounded)
{
        runreq_pending_t p = {0};
        for (uint32_t i = 0; i < RUNREQ_OUTSTANDING_MAX; i++) {
                ck_assert(!runreq_full(&p));
                ck_assert_int_eq(runreq_add(&p, runreq_next_id(&p)), 0);
        }
        ck_assert(runreq_full(&p));
        ck_assert_int_eq(runreq_add(&p, 1000), -EBUSY);
        ck_assert_uint_eq(p.n, RUNREQ_OUTSTANDING_MAX);
        ck_assert(!runreq_take(&p, 1000));
        /* Answered in any order, each once. */
        for (uint32_t id = RUNREQ_OUTSTANDING_MAX; id >= 1; id -= 2)
                ck_assert(runreq_take(&p, id));
        for (uint32_t id = 1; id <= RUNREQ_OUTSTANDING_MAX; id += 2)
                ck_assert(runreq_take(&p, id));
        ck_assert_uint_eq(p.n, 0);
        ck_assert_int_eq(runreq_add(&p, 5), 0);
        runreq_forget_all(&p);
        ck_assert(!runreq_take(&p, 5));
}
END_TEST

/* The checked arguments of argv (and the optional timeout and tail, JSON
 * text); *ret_argv_j keeps the strings they point into alive. */
static runreq_args_t args_ok(const char *argv, const char *timeout, const char *tail,
                             json_t **ret_argv_j)
{
        json_t *a = unit_json(argv);
        _unit_json_ json_t *t = timeout ? unit_json(timeout) : NULL;
        _unit_json_ json_t *l = tail ? unit_json(tail) : NULL;
        runreq_args_t r;
        hg_error_t err = {0};
        ck_assert_msg(runreq_args_parse(a, t, l, &r, &err) == 0, "%s: %s", argv, err.message);
        *ret_argv_j = a;
        return r;
}

static void args_refused(const char *argv, const char *timeout, const char *tail, const char *want)
{
        _unit_json_ json_t *a = argv ? unit_json(argv) : NULL;
        _unit_json_ json_t *t = timeout ? unit_json(timeout) : NULL;
        _unit_json_ json_t *l = tail ? unit_json(tail) : NULL;
        runreq_args_t r;
        memset(&r, 0x5a, sizeof(r));
        runreq_args_t before = r;
        hg_error_t err = {0};
        int rc = runreq_args_parse(a, t, l, &r, &err);
        ck_assert_msg(rc == -EINVAL, "%s %s %s: %d", argv, timeout, tail, rc);
        ck_assert_str_eq(err.message, want);
        ck_assert(memcmp(&r, &before, sizeof(r)) == 0);
}

START_TEST(args_defaults)
{
        _unit_json_ json_t *a = NULL;
        runreq_args_t r = args_ok("[\"make\", \"check\"]", NULL, NULL, &a);
        ck_assert_uint_eq(r.argc, 2);
        ck_assert_str_eq(r.argv[0], "make");
        ck_assert_str_eq(r.argv[1], "check");
        ck_assert_ptr_null(r.argv[2]);
        ck_assert_uint_eq(r.timeout_s, RUNREQ_TIMEOUT_DEFAULT_S);
        ck_assert_uint_eq(r.tail_max, RUNREQ_TAIL_DEFAULT);
        runreq_args_free(&r);
}
END_TEST

START_TEST(args_bounds)
{
        _unit_json_ json_t *a1 = NULL, *a2 = NULL;
        runreq_args_t r = args_ok("[\"x\"]", "1", "0", &a1);
        ck_assert_uint_eq(r.timeout_s, 1);
        ck_assert_uint_eq(r.tail_max, 0);
        runreq_args_free(&r);
        char timeout_max[32], tail_max[32];
        snprintf(timeout_max, sizeof(timeout_max), "%u", FRAME_RUN_TIMEOUT_MAX_MS / 1000);
        snprintf(tail_max, sizeof(tail_max), "%u", FRAME_RUN_TAIL_MAX);
        r = args_ok("[\"x\"]", timeout_max, tail_max, &a2);
        ck_assert_uint_eq(r.timeout_s, FRAME_RUN_TIMEOUT_MAX_MS / 1000);
        ck_assert_uint_eq(r.tail_max, FRAME_RUN_TAIL_MAX);
        runreq_args_free(&r);
        /* FRAME_RUN_MAX_ARGS strings. */
        _unit_json_ json_t *many = json_array();
        for (unsigned i = 0; i < FRAME_RUN_MAX_ARGS; i++)
                json_array_append_new(many, json_string("a"));
        runreq_args_t m;
        ck_assert_int_eq(runreq_args_parse(many, NULL, NULL, &m, NULL), 0);
        ck_assert_uint_eq(m.argc, FRAME_RUN_MAX_ARGS);
        runreq_args_free(&m);
        ck_assert_ptr_null(m.argv);
        json_array_append_new(many, json_string("a"));
        ck_assert_int_eq(runreq_args_parse(many, NULL, NULL, &m, NULL), -EINVAL);
}
END_TEST

START_TEST(args_refusals)
{
        char argc_msg[64], timeout_msg[64], tail_msg[64], over_timeout[32], over_tail[32];
        snprintf(argc_msg, sizeof(argc_msg), "\"argv\" must be 1-%u strings", FRAME_RUN_MAX_ARGS);
        snprintf(timeout_msg, sizeof(timeout_msg), "\"timeout_s\" must be 1-%u",
                 FRAME_RUN_TIMEOUT_MAX_MS / 1000);
        snprintf(tail_msg, sizeof(tail_msg), "\"tail_max\" must be 0-%u", FRAME_RUN_TAIL_MAX);
        snprintf(over_timeout, sizeof(over_timeout), "%u", FRAME_RUN_TIMEOUT_MAX_MS / 1000 + 1);
        snprintf(over_tail, sizeof(over_tail), "%u", FRAME_RUN_TAIL_MAX + 1);
        args_refused(NULL, NULL, NULL, argc_msg);
        args_refused("[]", NULL, NULL, argc_msg);
        args_refused("\"make\"", NULL, NULL, argc_msg);
        args_refused("{\"0\": \"make\"}", NULL, NULL, argc_msg);
        args_refused("[\"make\", 3]", NULL, NULL, "\"argv\" must be strings");
        args_refused("[null]", NULL, NULL, "\"argv\" must be strings");
        args_refused("[\"x\"]", "0", NULL, timeout_msg);
        args_refused("[\"x\"]", "-1", NULL, timeout_msg);
        args_refused("[\"x\"]", over_timeout, NULL, timeout_msg);
        args_refused("[\"x\"]", "\"60\"", NULL, timeout_msg);
        args_refused("[\"x\"]", "1.5", NULL, timeout_msg);
        args_refused("[\"x\"]", "null", NULL, timeout_msg);
        args_refused("[\"x\"]", NULL, "-1", tail_msg);
        args_refused("[\"x\"]", NULL, over_tail, tail_msg);
        args_refused("[\"x\"]", NULL, "\"10\"", tail_msg);
        args_refused("[\"x\"]", NULL, "true", tail_msg);
}
END_TEST

START_TEST(tree_argv)
{
        _unit_json_ json_t *a = runreq_tree_argv("t-42", "/workspace");
        ck_assert_json_eq_text(
            a, "[\"hangar-driver\", \"tree\", \"--turn\", \"t-42\", \"/workspace\"]");
}
END_TEST

START_TEST(verify_argv)
{
        _unit_json_ json_t *user = unit_json("[\"make\", \"check\"]");
        _unit_json_ json_t *a = NULL;
        ck_assert_int_eq(runreq_verify_argv("t-42", user, &a, NULL), 0);
        ck_assert_json_eq_text(
            a, "[\"hangar-driver\", \"gate\", \"--turn\", \"t-42\", \"--\", \"make\", \"check\"]");
        char msg[64];
        snprintf(msg, sizeof(msg), "\"argv\" must be 1-%u strings",
                 FRAME_RUN_MAX_ARGS - RUNREQ_VERIFY_PREFIX);
        _unit_json_ json_t *empty = unit_json("[]");
        _unit_json_ json_t *obj = unit_json("{}");
        _unit_json_ json_t *most = json_array();
        json_t *b = NULL;
        for (unsigned i = 0; i < FRAME_RUN_MAX_ARGS - RUNREQ_VERIFY_PREFIX; i++)
                json_array_append_new(most, json_string("a"));
        ck_assert_int_eq(runreq_verify_argv("t", most, &b, NULL), 0);
        ck_assert_uint_eq(json_array_size(b), FRAME_RUN_MAX_ARGS);
        json_decref(b);
        json_array_append_new(most, json_string("a"));
        json_t *const refused[] = {NULL, empty, obj, most};
        for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
                json_t *r = (json_t *)0x1;
                hg_error_t err = {0};
                ck_assert_int_eq(runreq_verify_argv("t", refused[i], &r, &err), -EINVAL);
                ck_assert_str_eq(err.message, msg);
                ck_assert_ptr_eq(r, (json_t *)0x1);
        }
}
END_TEST

static frame_run_result_t result(frame_end_t end, int value, bool truncated, const char *tail)
{
        return (frame_run_result_t){.id = 1,
                                    .exit = {.end = end, .value = (uint8_t)value},
                                    .truncated = truncated,
                                    .tail = (const uint8_t *)tail,
                                    .tail_len = (uint32_t)strlen(tail)};
}

START_TEST(tree_hash)
{
        const char *good = "{\"tree\":\"sha256:ab\",\"files\":3}\n";
        frame_run_result_t rr = result(FRAME_END_EXITED, 0, false, good);
        _unit_json_ json_t *t = runreq_tree_hash(&rr);
        ck_assert_json_eq_text(t, "{\"tree\":\"sha256:ab\",\"files\":3}");
        static const frame_run_result_t refused_base[] = {
            {.exit = {.end = FRAME_END_EXITED, .value = 1}},
            {.exit = {.end = FRAME_END_SIGNALED, .value = 0}},
            {.exit = {.end = FRAME_END_TIMEOUT, .value = 124}},
            {.exit = {.end = FRAME_END_NOT_STARTED, .value = 127}},
            {.exit = {.end = FRAME_END_EXITED, .value = 0}, .truncated = true},
        };
        for (size_t i = 0; i < ARRAY_SIZE(refused_base); i++) {
                frame_run_result_t r = refused_base[i];
                r.tail = (const uint8_t *)good;
                r.tail_len = (uint32_t)strlen(good);
                ck_assert_ptr_null(runreq_tree_hash(&r));
        }
        static const char *const bad[] = {
            "",
            "not json",
            "[\"tree\"]",
            "{\"tree\": 3}",
            "{}",
            "{\"tree\":\"a\",\"tree\":\"b\"}",
            "{\"tree\":\"a\"} {\"tree\":\"b\"}",
            "{\"a\":{\"b\":{\"c\":{\"d\":{\"e\":1}}}},\"tree\":\"x\"}"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                frame_run_result_t r = result(FRAME_END_EXITED, 0, false, bad[i]);
                ck_assert_msg(runreq_tree_hash(&r) == NULL, "accepted: %s", bad[i]);
        }
}
END_TEST

START_TEST(failed_tail)
{
        frame_run_result_t rr =
            result(FRAME_END_EXITED, 2, false, "line one\nline\ttwo\x1b[0m\xff");
        _cleanup_free_ char *t = runreq_failed_tail(&rr);
        ck_assert_str_eq(t, "line one line?two?[0m?");
        /* Bounded, and never past tail_len (no NUL in the frame). */
        char big[1000];
        memset(big, 'x', sizeof(big));
        frame_run_result_t b = {.tail = (const uint8_t *)big, .tail_len = sizeof(big)};
        _cleanup_free_ char *bt = runreq_failed_tail(&b);
        ck_assert_uint_eq(strlen(bt), RUNREQ_FAILED_TAIL_MAX);
        frame_run_result_t few = {.tail = (const uint8_t *)big, .tail_len = 3};
        _cleanup_free_ char *ft = runreq_failed_tail(&few);
        ck_assert_str_eq(ft, "xxx");
        frame_run_result_t none = {.tail = NULL, .tail_len = 0};
        _cleanup_free_ char *nt = runreq_failed_tail(&none);
        ck_assert_str_eq(nt, "");
}
END_TEST

static Suite *runreq_suite(void)
{
        Suite *s = suite_create("runreq");
        TCase *tc = tcase_create("runreq");
        tcase_add_test(tc, ids_count_on);
        tcase_add_test(tc, taken_once);
        tcase_add_test(tc, bounded);
        tcase_add_test(tc, args_defaults);
        tcase_add_test(tc, args_bounds);
        tcase_add_test(tc, args_refusals);
        tcase_add_test(tc, tree_argv);
        tcase_add_test(tc, verify_argv);
        tcase_add_test(tc, tree_hash);
        tcase_add_test(tc, failed_tail);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(runreq_suite());
}
