/* Unit tests for common/strparse: strict text to number and flag parsing. */
#include <errno.h>
#include <stdint.h>

#include "strparse.h"
#include "unit.h"

/* Inputs every number parser rejects as not a number at all. */
static const char *const junk[] = {
    "",      " ",   "1 ",  " 1",  "1a",  "a1", "0x10", "1.0", "1e3",
    "1,000", "\t1", "1\n", "++1", "--1", "1-", "-",    "+",   "0b1",
};

START_TEST(u32_accepts)
{
        uint32_t v = 7;
        ck_assert_int_eq(parse_u32("0", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(parse_u32("1001", &v), 0);
        ck_assert_uint_eq(v, 1001);
        ck_assert_int_eq(parse_u32("4294967295", &v), 0);
        ck_assert_uint_eq(v, UINT32_MAX);
        /* Leading zeros are still a decimal number (no octal surprise). */
        ck_assert_int_eq(parse_u32("0755", &v), 0);
        ck_assert_uint_eq(v, 755);
}
END_TEST

START_TEST(u32_overflow)
{
        uint32_t v = 7;
        ck_assert_int_eq(parse_u32("4294967296", &v), -ERANGE);
        ck_assert_int_eq(parse_u32("99999999999", &v), -ERANGE);
        /* Beyond 64 bits too: the inner u64 parse must not wrap. */
        ck_assert_int_eq(parse_u32("18446744073709551616", &v), -ERANGE);
        ck_assert_int_eq(parse_u32("36893488147419103232", &v), -ERANGE);
        ck_assert_uint_eq(v, 7); /* untouched on failure */
}
END_TEST

START_TEST(u32_rejects_signs_and_junk)
{
        uint32_t v = 7;
        ck_assert_int_eq(parse_u32(NULL, &v), -EINVAL);
        ck_assert_int_eq(parse_u32("-1", &v), -EINVAL);
        ck_assert_int_eq(parse_u32("+1", &v), -EINVAL);
        ck_assert_int_eq(parse_u32("-0", &v), -EINVAL);
        for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
                ck_assert_msg(parse_u32(junk[i], &v) == -EINVAL, "parse_u32 accepted '%s'",
                              junk[i]);
        ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(u64_boundaries)
{
        uint64_t v = 7;
        ck_assert_int_eq(parse_u64("0", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(parse_u64("4294967296", &v), 0);
        ck_assert_uint_eq(v, 4294967296ULL);
        ck_assert_int_eq(parse_u64("18446744073709551615", &v), 0);
        ck_assert_uint_eq(v, UINT64_MAX);
        v = 7;
        ck_assert_int_eq(parse_u64("18446744073709551616", &v), -ERANGE);
        ck_assert_int_eq(parse_u64("18446744073709551620", &v), -ERANGE);
        ck_assert_int_eq(parse_u64("184467440737095516150", &v), -ERANGE);
        ck_assert_int_eq(parse_u64("-1", &v), -EINVAL);
        ck_assert_int_eq(parse_u64("+1", &v), -EINVAL);
        ck_assert_int_eq(parse_u64(NULL, &v), -EINVAL);
        for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
                ck_assert_msg(parse_u64(junk[i], &v) == -EINVAL, "parse_u64 accepted '%s'",
                              junk[i]);
        ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(i64_boundaries)
{
        int64_t v = 7;
        ck_assert_int_eq(parse_i64("0", &v), 0);
        ck_assert_int_eq(v, 0);
        ck_assert_int_eq(parse_i64("-0", &v), 0);
        ck_assert_int_eq(v, 0);
        ck_assert_int_eq(parse_i64("-42", &v), 0);
        ck_assert_int_eq(v, -42);
        ck_assert_int_eq(parse_i64("9223372036854775807", &v), 0);
        ck_assert_int_eq(v, INT64_MAX);
        ck_assert_int_eq(parse_i64("-9223372036854775807", &v), 0);
        ck_assert_int_eq(v, -INT64_MAX);
        ck_assert_int_eq(parse_i64("-9223372036854775808", &v), 0);
        ck_assert_int_eq(v, INT64_MIN);
        v = 7;
        ck_assert_int_eq(parse_i64("9223372036854775808", &v), -ERANGE);
        ck_assert_int_eq(parse_i64("-9223372036854775809", &v), -ERANGE);
        ck_assert_int_eq(parse_i64("18446744073709551616", &v), -ERANGE);
        ck_assert_int_eq(parse_i64("-18446744073709551616", &v), -ERANGE);
        ck_assert_int_eq(v, 7);
}
END_TEST

START_TEST(i64_rejects_signs_and_junk)
{
        int64_t v = 7;
        ck_assert_int_eq(parse_i64(NULL, &v), -EINVAL);
        ck_assert_int_eq(parse_i64("+5", &v), -EINVAL);
        ck_assert_int_eq(parse_i64("- 5", &v), -EINVAL);
        ck_assert_int_eq(parse_i64("-+5", &v), -EINVAL);
        ck_assert_int_eq(parse_i64("5-", &v), -EINVAL);
        for (size_t i = 0; i < sizeof(junk) / sizeof(junk[0]); i++)
                ck_assert_msg(parse_i64(junk[i], &v) == -EINVAL, "parse_i64 accepted '%s'",
                              junk[i]);
        ck_assert_int_eq(v, 7);
}
END_TEST

START_TEST(bool_words)
{
        static const char *const yes[] = {"1", "true", "TRUE", "True", "yes", "YES", "on", "On"};
        static const char *const no[] = {"0", "false", "FALSE", "no", "No", "off", "OFF"};
        for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
                bool b = false;
                ck_assert_msg(parse_bool(yes[i], &b) == 0 && b, "'%s' is not true", yes[i]);
        }
        for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
                bool b = true;
                ck_assert_msg(parse_bool(no[i], &b) == 0 && !b, "'%s' is not false", no[i]);
        }
}
END_TEST

START_TEST(bool_rejects)
{
        static const char *const bad[] = {"",  " true", "true ", "2",   "-1", "t",    "f",
                                          "y", "n",     "truee", "onn", "01", "yes\n"};
        bool b = true;
        ck_assert_int_eq(parse_bool(NULL, &b), -EINVAL);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(parse_bool(bad[i], &b) == -EINVAL, "parse_bool accepted '%s'",
                              bad[i]);
        ck_assert(b); /* untouched on failure */
}
END_TEST

static Suite *strparse_suite(void)
{
        Suite *s = suite_create("strparse");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, u32_accepts);
        tcase_add_test(tc, u32_overflow);
        tcase_add_test(tc, u32_rejects_signs_and_junk);
        tcase_add_test(tc, u64_boundaries);
        tcase_add_test(tc, i64_boundaries);
        tcase_add_test(tc, i64_rejects_signs_and_junk);
        tcase_add_test(tc, bool_words);
        tcase_add_test(tc, bool_rejects);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(strparse_suite());
}
