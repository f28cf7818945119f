/* common/wire/scratch.c: the turn's scratch directory in the agent's home: turn
 * ids that are safe file names only, HOME required and absolute, created
 * 0700, removed without following a symlink out. */
#include "scratch.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include "cleanup.h"
#include "unit.h"

static char home[PATH_MAX];

static void setup(void)
{
        unit_mkdtemp(home, sizeof(home));
        ck_assert_int_eq(setenv("HOME", home, 1), 0);
}

static void teardown(void)
{
        unit_rmtree(home);
}

START_TEST(turn_ids)
{
        static const char *const good[] = {"t1", "turn-42", "a.b_c", "...", "x"};
        static const char *const bad[] = {"",
                                          ".",
                                          "..",
                                          "a/b",
                                          "a b",
                                          "../x",
                                          "é",
                                          ("0123456789012345678901234567890123456789"
                                           "01234567890123456789012345")}; /* one long id */
        for (size_t i = 0; i < ARRAY_SIZE(good); i++)
                ck_assert_msg(scratch_turn_id_valid(good[i]), "refused %s", good[i]);
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                ck_assert_msg(!scratch_turn_id_valid(bad[i]), "accepted %s", bad[i]);
        hg_error_t err = {0};
        char *path = NULL;
        ck_assert_int_eq(scratch_path("../etc", &path, &err), -EINVAL);
        ck_assert_ptr_null(path);
}
END_TEST

START_TEST(home_must_be_absolute)
{
        hg_error_t err = {0};
        char *path = NULL;
        ck_assert_int_eq(setenv("HOME", "relative/home", 1), 0);
        ck_assert_int_eq(scratch_path("t", &path, &err), -EINVAL);
        ck_assert_int_eq(unsetenv("HOME"), 0);
        ck_assert_int_eq(scratch_path("t", &path, &err), -EINVAL);
        ck_assert_ptr_null(path);
}
END_TEST

START_TEST(create_and_remove)
{
        hg_error_t err = {0};
        _cleanup_free_ char *path = NULL;
        ck_assert_int_eq(scratch_create("turn-1", &path, &err), 0);
        char want[PATH_MAX + 64];
        (void)snprintf(want, sizeof(want), "%s/.hangar-scratch/turn-1", home);
        ck_assert_str_eq(path, want);
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
        /* Again: already there is fine. */
        _cleanup_free_ char *again = NULL;
        ck_assert_int_eq(scratch_create("turn-1", &again, &err), 0);

        /* Contents, and a symlink pointing out: removed, the target kept. */
        char outside[PATH_MAX + 64], inner[PATH_MAX + 64];
        (void)snprintf(outside, sizeof(outside), "%s/keep-me", home);
        int fd = open(outside, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        close(fd);
        (void)snprintf(inner, sizeof(inner), "%s/link", path);
        ck_assert_int_eq(symlink(home, inner), 0);
        (void)snprintf(inner, sizeof(inner), "%s/sub", path);
        ck_assert_int_eq(mkdir(inner, 0700), 0);
        (void)snprintf(inner, sizeof(inner), "%s/sub/f", path);
        fd = open(inner, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        close(fd);
        ck_assert_int_eq(scratch_remove("turn-1"), 0);
        ck_assert_int_lt(stat(path, &st), 0);
        ck_assert_int_eq(stat(outside, &st), 0);
        /* Removing what is not there is not an error. */
        ck_assert_int_eq(scratch_remove("turn-1"), 0);
}
END_TEST

static Suite *scratch_suite(void)
{
        Suite *s = suite_create("scratch");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, turn_ids);
        tcase_add_test(tc, home_must_be_absolute);
        tcase_add_test(tc, create_and_remove);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(scratch_suite());
}
