/* Unit tests for common/strbuf: the growable NUL-terminated buffer. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "strbuf.h"
#include "unit.h"

START_TEST(empty_take_is_empty_string)
{
        strbuf_t sb = {0};
        _cleanup_free_ char *s = strbuf_take(&sb);
        ck_assert_ptr_nonnull(s);
        ck_assert_str_eq(s, "");
        ck_assert_ptr_null(sb.data);
        ck_assert_uint_eq(sb.len, 0);
        ck_assert_uint_eq(sb.cap, 0);
}
END_TEST

START_TEST(append_puts_printf)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_append(&sb, "abcdef", 2), 0);
        ck_assert_str_eq(sb.data, "ab");
        ck_assert_uint_eq(sb.len, 2);
        ck_assert_int_eq(strbuf_puts(&sb, "/c"), 0);
        ck_assert_int_eq(strbuf_printf(&sb, "/%d-%s/%zu", 42, "x", (size_t)7), 0);
        ck_assert_str_eq(sb.data, "ab/c/42-x/7");
        ck_assert_uint_eq(sb.len, strlen("ab/c/42-x/7"));
        ck_assert_uint_ge(sb.cap, sb.len + 1);
}
END_TEST

START_TEST(append_zero_bytes_gives_empty_string)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_append(&sb, NULL, 0), 0);
        ck_assert_ptr_nonnull(sb.data);
        ck_assert_str_eq(sb.data, "");
        ck_assert_uint_eq(sb.len, 0);
}
END_TEST

START_TEST(embedded_nul_counted)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_append(&sb, "a\0b", 3), 0);
        ck_assert_uint_eq(sb.len, 3);
        ck_assert_int_eq(memcmp(sb.data, "a\0b\0", 4), 0);
}
END_TEST

START_TEST(grows_past_initial_capacity)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        for (int i = 0; i < 10000; i++)
                ck_assert_int_eq(strbuf_append(&sb, &"0123456789"[i % 10], 1), 0);
        ck_assert_uint_eq(sb.len, 10000);
        ck_assert_uint_ge(sb.cap, 10001);
        ck_assert_uint_eq(strlen(sb.data), 10000);
        for (int i = 0; i < 10000; i++)
                ck_assert_int_eq(sb.data[i], '0' + i % 10);
        /* printf bigger than everything so far in one go */
        char big[5000];
        memset(big, 'z', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        ck_assert_int_eq(strbuf_printf(&sb, "<%s>", big), 0);
        ck_assert_uint_eq(sb.len, 10000 + 2 + 4999);
        ck_assert_int_eq(sb.data[10000], '<');
        ck_assert_int_eq(sb.data[sb.len - 1], '>');
        ck_assert_int_eq(sb.data[sb.len], '\0');
}
END_TEST

START_TEST(truncate_shortens)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        strbuf_truncate(&sb, 0); /* on an empty buffer: nothing to do */
        ck_assert_ptr_null(sb.data);
        ck_assert_uint_eq(sb.len, 0);
        ck_assert_int_eq(strbuf_puts(&sb, "/spec/volumes"), 0);
        strbuf_truncate(&sb, 100); /* longer than the content: unchanged */
        ck_assert_str_eq(sb.data, "/spec/volumes");
        strbuf_truncate(&sb, sb.len + 1);
        ck_assert_uint_eq(sb.len, 13);
        strbuf_truncate(&sb, sb.len);
        ck_assert_uint_eq(sb.len, 13);
        ck_assert_str_eq(sb.data, "/spec/volumes");
        strbuf_truncate(&sb, 5);
        ck_assert_str_eq(sb.data, "/spec");
        ck_assert_uint_eq(sb.len, 5);
        ck_assert_int_eq(strbuf_puts(&sb, "/containers"), 0);
        ck_assert_str_eq(sb.data, "/spec/containers");
        strbuf_truncate(&sb, 0);
        ck_assert_str_eq(sb.data, "");
        ck_assert_uint_eq(sb.len, 0);
}
END_TEST

START_TEST(take_hands_over_and_resets)
{
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "hello"), 0);
        char *data = sb.data;
        _cleanup_free_ char *s = strbuf_take(&sb);
        ck_assert_ptr_eq(s, data);
        ck_assert_str_eq(s, "hello");
        ck_assert_ptr_null(sb.data);
        ck_assert_uint_eq(sb.len, 0);
        ck_assert_uint_eq(sb.cap, 0);
        /* The buffer is usable again after a take. */
        ck_assert_int_eq(strbuf_puts(&sb, "again"), 0);
        ck_assert_str_eq(sb.data, "again");
        strbuf_free(&sb);
        ck_assert_ptr_null(sb.data);
        ck_assert_uint_eq(sb.len, 0);
        strbuf_free(&sb); /* twice is fine */
}
END_TEST

static Suite *strbuf_suite(void)
{
        Suite *s = suite_create("strbuf");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, empty_take_is_empty_string);
        tcase_add_test(tc, append_puts_printf);
        tcase_add_test(tc, append_zero_bytes_gives_empty_string);
        tcase_add_test(tc, embedded_nul_counted);
        tcase_add_test(tc, grows_past_initial_capacity);
        tcase_add_test(tc, truncate_shortens);
        tcase_add_test(tc, take_hands_over_and_resets);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(strbuf_suite());
}
