/* Unit tests for common/error: codes, formatting, prefixes, truncation. */
#include <errno.h>
#include <string.h>

#include "error.h"
#include "unit.h"

START_TEST(set_returns_code_and_formats)
{
        hg_error_t err = {0};
        ck_assert_int_eq(error_set(&err, -ENOENT, "cannot read %s: %d", "a.yaml", 7), -ENOENT);
        ck_assert_int_eq(err.code, -ENOENT);
        ck_assert_str_eq(err.message, "cannot read a.yaml: 7");
        /* A second error replaces the first entirely. */
        ck_assert_int_eq(error_set(&err, -EIO, "short"), -EIO);
        ck_assert_int_eq(err.code, -EIO);
        ck_assert_str_eq(err.message, "short");
}
END_TEST

START_TEST(non_negative_code_becomes_einval)
{
        static const int codes[] = {0, 1, ENOENT, 2147483647};
        for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
                hg_error_t err = {0};
                ck_assert_int_eq(error_set(&err, codes[i], "oops %d", codes[i]), -EINVAL);
                ck_assert_int_eq(err.code, -EINVAL);
                ck_assert_str_ne(err.message, "");
                /* Without a struct, too. */
                ck_assert_int_eq(error_set(NULL, codes[i], "oops"), -EINVAL);
        }
}
END_TEST

START_TEST(null_error_is_fine)
{
        ck_assert_int_eq(error_set(NULL, -EACCES, "denied %s", "x"), -EACCES);
        ck_assert_int_eq(error_set(NULL, -ENOMEM, "no memory"), -ENOMEM);
        ck_assert_int_eq(error_prefix(NULL, "ctx: "), -EINVAL);
        error_clear(NULL);
}
END_TEST

START_TEST(prefix_keeps_code)
{
        hg_error_t err = {0};
        (void)error_set(&err, -ERANGE, "expected an integer");
        ck_assert_int_eq(error_prefix(&err, "%s:%u: ", "file.yaml", 3u), -ERANGE);
        ck_assert_int_eq(err.code, -ERANGE);
        ck_assert_str_eq(err.message, "file.yaml:3: expected an integer");
        /* Prefixes stack, outermost last. */
        ck_assert_int_eq(error_prefix(&err, "config: "), -ERANGE);
        ck_assert_str_eq(err.message, "config: file.yaml:3: expected an integer");
}
END_TEST

START_TEST(prefix_takes_message_literally)
{
        /* A '%' in the message already there is text, not a directive. */
        hg_error_t err = {0};
        (void)error_set(&err, -EINVAL, "%s", "100%s %d done");
        ck_assert_int_eq(error_prefix(&err, "job %d: ", 4), -EINVAL);
        ck_assert_str_eq(err.message, "job 4: 100%s %d done");
}
END_TEST

START_TEST(prefix_on_unset_error_is_einval)
{
        /* A prefix on a struct nobody set must not read as success. */
        hg_error_t err = {0};
        ck_assert_int_eq(error_prefix(&err, "ctx: "), -EINVAL);
        ck_assert_int_eq(err.code, -EINVAL);
        ck_assert_str_eq(err.message, "ctx: ");
}
END_TEST

START_TEST(clear_resets)
{
        hg_error_t err = {0};
        (void)error_set(&err, -EIO, "broken");
        error_clear(&err);
        ck_assert_int_eq(err.code, 0);
        ck_assert_str_eq(err.message, "");
}
END_TEST

/* A string of n copies of c (n < sizeof buf). */
static const char *repeat(char *buf, size_t size, char c, size_t n)
{
        ck_assert_uint_lt(n, size);
        memset(buf, c, n);
        buf[n] = '\0';
        return buf;
}

START_TEST(set_truncates_at_max)
{
        char long_text[2 * ERROR_MESSAGE_MAX];
        /* Exactly fits: ERROR_MESSAGE_MAX - 1 characters and the NUL. */
        hg_error_t err;
        memset(&err, 'Z', sizeof(err));
        (void)error_set(&err, -EINVAL, "%s",
                        repeat(long_text, sizeof(long_text), 'a', ERROR_MESSAGE_MAX - 1));
        ck_assert_uint_eq(strlen(err.message), ERROR_MESSAGE_MAX - 1);
        ck_assert_str_eq(err.message, long_text);
        /* One more, and far more: cut to fit, still terminated. */
        const size_t over[] = {ERROR_MESSAGE_MAX, ERROR_MESSAGE_MAX + 1, sizeof(long_text) - 1};
        for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++) {
                memset(&err, 'Z', sizeof(err));
                (void)error_set(&err, -E2BIG, "%s",
                                repeat(long_text, sizeof(long_text), 'b', over[i]));
                ck_assert_int_eq(err.code, -E2BIG);
                ck_assert_int_eq(err.message[ERROR_MESSAGE_MAX - 1], '\0');
                ck_assert_uint_eq(strlen(err.message), ERROR_MESSAGE_MAX - 1);
                ck_assert_int_eq(strncmp(err.message, long_text, ERROR_MESSAGE_MAX - 1), 0);
        }
}
END_TEST

START_TEST(prefix_truncates_at_max)
{
        char long_text[2 * ERROR_MESSAGE_MAX];
        hg_error_t err;
        memset(&err, 'Z', sizeof(err));
        (void)error_set(&err, -EIO, "%s",
                        repeat(long_text, sizeof(long_text), 'm', ERROR_MESSAGE_MAX - 1));
        ck_assert_int_eq(error_prefix(&err, "prefix: "), -EIO);
        ck_assert_int_eq(err.message[ERROR_MESSAGE_MAX - 1], '\0');
        ck_assert_uint_eq(strlen(err.message), ERROR_MESSAGE_MAX - 1);
        /* The prefix comes first; the message's tail is what is lost. */
        ck_assert_int_eq(strncmp(err.message, "prefix: mmm", 11), 0);
        ck_assert_int_eq(err.message[ERROR_MESSAGE_MAX - 2], 'm');

        /* A prefix longer than the buffer on its own. */
        (void)error_set(&err, -EIO, "tail");
        char huge[2 * ERROR_MESSAGE_MAX];
        ck_assert_int_eq(
            error_prefix(&err, "%s", repeat(huge, sizeof(huge), 'p', sizeof(huge) - 1)), -EIO);
        ck_assert_uint_eq(strlen(err.message), ERROR_MESSAGE_MAX - 1);
        ck_assert_ptr_null(strchr(err.message, 't'));
}
END_TEST

static Suite *error_suite(void)
{
        Suite *s = suite_create("error");
        TCase *tc = tcase_create("codes");
        tcase_add_test(tc, set_returns_code_and_formats);
        tcase_add_test(tc, non_negative_code_becomes_einval);
        tcase_add_test(tc, null_error_is_fine);
        tcase_add_test(tc, prefix_keeps_code);
        tcase_add_test(tc, prefix_takes_message_literally);
        tcase_add_test(tc, prefix_on_unset_error_is_einval);
        tcase_add_test(tc, clear_resets);
        suite_add_tcase(s, tc);
        tc = tcase_create("truncation");
        tcase_add_test(tc, set_truncates_at_max);
        tcase_add_test(tc, prefix_truncates_at_max);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(error_suite());
}
