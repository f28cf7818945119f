/* common/pathnorm: canonical paths, "within", and no shortened path ever:
 * what does not fit is an error (the webhook once dropped segments past
 * 4 KiB, so a long path that resolves to hangar-home compared as another). */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "pathnorm.h"
#include "unit.h"

static const char *canon(const char *path)
{
        static char out[PATHNORM_MAX];
        ck_assert_int_eq(pathnorm_canonical(path, out, sizeof(out)), 0);
        return out;
}

START_TEST(canonical_forms)
{
        static const struct {
                const char *in, *out;
        } t[] = {
            {"/", "/"},
            {"", "/"},
            {"//", "/"},
            {"/a/b", "/a/b"},
            {"a/b", "/a/b"},
            {"//a/./b/../c/", "/a/c"},
            {"/var/lib//hangar/", "/var/lib/hangar"},
            {"/..", "/"},
            {"/../../x", "/x"},
            {"/a/..b/.c/...", "/a/..b/.c/..."},
            {"/a/b/../../..", "/"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++)
                ck_assert_msg(strcmp(canon(t[i].in), t[i].out) == 0, "%s -> %s, want %s", t[i].in,
                              canon(t[i].in), t[i].out);
}
END_TEST

START_TEST(within)
{
        ck_assert_int_eq(pathnorm_within("/var/lib/hangar", "/var/lib/hangar"), 1);
        ck_assert_int_eq(pathnorm_within("/var/lib//hangar/x/", "/var/lib/hangar/"), 1);
        ck_assert_int_eq(pathnorm_within("/var/lib/x/../hangar", "/var/lib/hangar"), 1);
        ck_assert_int_eq(pathnorm_within("/var/lib/hangarx", "/var/lib/hangar"), 0);
        ck_assert_int_eq(pathnorm_within("/var/lib", "/var/lib/hangar"), 0);
        ck_assert_int_eq(pathnorm_within("/anything", "/"), 1);
        ck_assert_int_eq(pathnorm_within("/", "/"), 1);
}
END_TEST

/* "/var/lib/" + "y/" * k + "../" * k + "hangar": canonically /var/lib/hangar. */
static char *long_path(size_t k)
{
        static char buf[4 * 8192];
        size_t n = 0;
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "/var/lib/");
        for (size_t i = 0; i < k; i++)
                n += (size_t)snprintf(buf + n, sizeof(buf) - n, "y/");
        for (size_t i = 0; i < k; i++)
                n += (size_t)snprintf(buf + n, sizeof(buf) - n, "../");
        (void)snprintf(buf + n, sizeof(buf) - n, "hangar");
        return buf;
}

START_TEST(overflow_is_an_error_never_a_shorter_path)
{
        char out[PATHNORM_MAX];
        /* Short enough on the way: fine, and it is hangar-home's path. */
        ck_assert_int_eq(pathnorm_canonical(long_path(100), out, sizeof(out)), 0);
        ck_assert_str_eq(out, "/var/lib/hangar");
        /* 2100 "y" segments do not fit on the way: an error, and "" in out.
         * (Dropping the segments that did not fit made it "/hangar".) */
        ck_assert_int_eq(pathnorm_canonical(long_path(2100), out, sizeof(out)), -ENAMETOOLONG);
        ck_assert_str_eq(out, "");
        ck_assert_int_eq(pathnorm_within(long_path(2100), "/var/lib/hangar"), -ENAMETOOLONG);
        ck_assert_int_eq(pathnorm_within("/var/lib/hangar", long_path(2100)), -ENAMETOOLONG);
        /* Exactly at the bound: PATHNORM_MAX - 1 bytes fit, one more does not. */
        char p[PATHNORM_MAX + 2];
        memset(p, 'a', sizeof(p));
        p[0] = '/';
        p[PATHNORM_MAX - 1] = '\0';
        ck_assert_int_eq(pathnorm_canonical(p, out, sizeof(out)), 0);
        ck_assert_uint_eq(strlen(out), PATHNORM_MAX - 1);
        p[PATHNORM_MAX - 1] = 'a';
        p[PATHNORM_MAX] = '\0';
        ck_assert_int_eq(pathnorm_canonical(p, out, sizeof(out)), -ENAMETOOLONG);
        /* No room at all. */
        ck_assert_int_eq(pathnorm_canonical("/", out, 1), -ENAMETOOLONG);
        ck_assert_int_eq(pathnorm_canonical("/", out, 0), -ENAMETOOLONG);
}
END_TEST

START_TEST(is_canonical)
{
        ck_assert(pathnorm_is_canonical("/"));
        ck_assert(pathnorm_is_canonical("/var/lib/hangar"));
        static const char *const no[] = {"",        "var/lib", "/a/",  "/a//b", "/a/./b",
                                         "/a/../b", "/a/..",   "/a/.", "//"};
        for (size_t i = 0; i < ARRAY_SIZE(no); i++)
                ck_assert_msg(!pathnorm_is_canonical(no[i]), "%s", no[i]);
        ck_assert(!pathnorm_is_canonical(long_path(2100)));
}
END_TEST

static Suite *pathnorm_suite(void)
{
        Suite *s = suite_create("pathnorm");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, canonical_forms);
        tcase_add_test(tc, within);
        tcase_add_test(tc, overflow_is_an_error_never_a_shorter_path);
        tcase_add_test(tc, is_canonical);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(pathnorm_suite());
}
