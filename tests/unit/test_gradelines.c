/* Unit tests for client/gradelines.c: the grader side's stdout as `hangar
 * grade` reads it (its ready line first, whole, with its findings, else no
 * token: a forged or foreign first line, a first line past 64 KiB, the end
 * before a whole line), fed whole and byte by byte; what follows the ready
 * line is the grader's and never judged; and the grader side's outcome
 * line, the last of its stderr. */
#include <string.h>

#include "cleanup.h"
#include "gradelines.h"
#include "unit.h"

#define READY                                                                                      \
        "{\"grade\":\"ready\",\"window\":true,\"findings\":{\"reasons\":[],\"sweep\":{\"killed\":" \
        "1}}}\n"

/* Feeds in in chunks of chunk bytes; the state after each feed must never
 * go back to WAITING once it left it. */
static gradewatch_state_t feed(gradewatch_t *w, const char *in, size_t len, size_t chunk)
{
        gradewatch_state_t s = GRADEWATCH_WAITING;
        for (size_t i = 0; i < len; i += chunk) {
                size_t n = len - i < chunk ? len - i : chunk;
                int r = gradewatch_feed(w, (const uint8_t *)in + i, n);
                ck_assert_int_ge(r, 0);
                if (s != GRADEWATCH_WAITING)
                        ck_assert_int_eq(r, s);
                s = (gradewatch_state_t)r;
        }
        return s;
}

START_TEST(test_ready_first)
{
        const char *in = READY "the grader's own output\n{\"grade\":\"ready\"}\nno newline";
        for (size_t chunk = 1; chunk <= strlen(in); chunk += (chunk < 8 ? 1 : 17)) {
                gradewatch_t w;
                gradewatch_init(&w);
                ck_assert_int_eq(feed(&w, in, strlen(in), chunk), GRADEWATCH_READY);
                ck_assert_int_eq(gradewatch_end(&w), GRADEWATCH_READY);
                ck_assert_int_eq(
                    json_integer_value(json_object_get(
                        json_object_get(json_object_get(w.ready, "findings"), "sweep"), "killed")),
                    1);
                gradewatch_free(&w);
        }
}
END_TEST

START_TEST(test_not_ready)
{
        static const char *const cases[] = {
            "{\"v\":1,\"event\":\"grade.sealed\"}\n" READY, /* a forged line first */
            "hello\n" READY,                                /* not JSON */
            "{\"grade\":\"ready\"}\n",                      /* no findings */
            "{\"grade\":\"ready\",\"findings\":[]}\n",      /* findings not an object */
            "{\"grade\":\"done\",\"findings\":{}}\n",       /* not ready */
            "[" READY,                                      /* an array */
            "\n" READY,                                     /* an empty first line */
            "{\"grade\":\"ready\",\"findings\":{}} x\n",    /* trailing bytes */
        };
        for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
                for (size_t chunk = 1; chunk <= 3; chunk++) {
                        gradewatch_t w;
                        gradewatch_init(&w);
                        ck_assert_int_eq(feed(&w, cases[c], strlen(cases[c]), chunk),
                                         GRADEWATCH_BROKEN);
                        ck_assert_ptr_null(w.ready);
                        ck_assert_ptr_nonnull(strstr(w.why, "first line"));
                        gradewatch_free(&w);
                }
        }
}
END_TEST

START_TEST(test_bounds_and_end)
{
        /* A first line past 64 KiB: broken before its end, nothing held. */
        size_t n = GRADEWATCH_LINE_MAX + 2;
        _cleanup_free_ char *big = malloc(n);
        ck_assert_ptr_nonnull(big);
        memset(big, 'A', n);
        gradewatch_t w;
        gradewatch_init(&w);
        ck_assert_int_eq(feed(&w, big, n, 4096), GRADEWATCH_BROKEN);
        ck_assert_uint_eq(w.first.len, 0);
        ck_assert_ptr_nonnull(strstr(w.why, "65536"));
        gradewatch_free(&w);
        /* The end inside the first line, or before any byte. */
        gradewatch_init(&w);
        ck_assert_int_eq(feed(&w, "{\"grade\":\"ready\"", 16, 1), GRADEWATCH_WAITING);
        ck_assert_int_eq(gradewatch_end(&w), GRADEWATCH_BROKEN);
        ck_assert_ptr_nonnull(strstr(w.why, "inside its first line"));
        gradewatch_free(&w);
        gradewatch_init(&w);
        ck_assert_int_eq(gradewatch_end(&w), GRADEWATCH_BROKEN);
        ck_assert_ptr_nonnull(strstr(w.why, "without a ready line"));
        gradewatch_free(&w);
}
END_TEST

START_TEST(test_outcome)
{
        const char *done = "grader noise\n{\"grade\":\"done\",\"status\":0,\"sent\":true}\n";
        _cleanup_json_ json_t *o = gradeside_outcome(done, strlen(done));
        ck_assert_ptr_nonnull(o);
        ck_assert_str_eq(json_string_value(json_object_get(o, "grade")), "done");
        const char *failed = "{\"grade\":\"driver-unproven\",\"reason\":\"x\"}";
        _cleanup_json_ json_t *f = gradeside_outcome(failed, strlen(failed));
        ck_assert_str_eq(json_string_value(json_object_get(f, "grade")), "driver-unproven");
        /* The outcome must be the last line. */
        const char *after = "{\"grade\":\"done\"}\nnoise after\n";
        ck_assert_ptr_null(gradeside_outcome(after, strlen(after)));
        ck_assert_ptr_null(gradeside_outcome("", 0));
        ck_assert_ptr_null(gradeside_outcome(NULL, 0));
        ck_assert_ptr_null(gradeside_outcome("{\"grade\":1}", 11));
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("gradelines");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_ready_first);
        tcase_add_test(tc, test_not_ready);
        tcase_add_test(tc, test_bounds_and_end);
        tcase_add_test(tc, test_outcome);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(suite());
}
