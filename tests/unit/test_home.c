/* Unit tests for common/agent/home: hangar-home is believed only as the driver's
 * read-only mount, opened without following a symlink anywhere; a writable
 * directory, a symlink in the path, a relative or dotted path, and a path
 * with no read-only mount at it are each refused with the reason; files are
 * read through the opened directory, regular files only, no symlinks. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "home.h"
#include "unit.h"

static char dir[256];

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
}

static void teardown(void)
{
        unit_rmtree(dir);
}

static void refused(const char *path, const char *needle)
{
        int fd = -7;
        hg_error_t err = {0};
        ck_assert_int_lt(home_open(path, &fd, &err), 0);
        ck_assert_int_eq(fd, -7);
        ck_assert_msg(strstr(err.message, needle), "\"%s\" lacks \"%s\"", err.message, needle);
}

START_TEST(writable_refused)
{
        refused(dir, "writable");
}
END_TEST

START_TEST(paths_refused)
{
        char p[512];
        refused("relative/home", "not an absolute path");
        (void)snprintf(p, sizeof(p), "%s/../%s", dir, strrchr(dir, '/') + 1);
        refused(p, "\"..\"");
        (void)snprintf(p, sizeof(p), "%s/missing", dir);
        refused(p, "No such file");
        /* A symlink anywhere in the path: never followed. */
        char link[512];
        (void)snprintf(link, sizeof(link), "%s/link", dir);
        ck_assert_int_eq(symlink("/", link), 0);
        (void)snprintf(p, sizeof(p), "%s/link/proc", dir);
        refused(p, "symlink");
        refused(link, "symlink");
}
END_TEST

/* A read-only file system but no mount at exactly that path (what an
 * ancestor renamed aside leaves): refused, and a table saying it is
 * mounted read-write is refused too. */
START_TEST(mount_table_checked)
{
        struct statvfs v;
        const char *ro = NULL;
        static const char *const candidates[] = {"/proc/sys", "/sys", "/usr", "/"};
        for (size_t i = 0; i < ARRAY_SIZE(candidates) && !ro; i++)
                if (statvfs(candidates[i], &v) == 0 && (v.f_flag & ST_RDONLY))
                        ro = candidates[i];
        if (!ro)
                return; /* no read-only file system here to test against */
        char table[512];
        (void)snprintf(table, sizeof(table), "%s/mountinfo", dir);
        FILE *f = fopen(table, "we");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(f);
        fprintf(f, "1 0 0:1 / /elsewhere ro - tmpfs none ro\n");
        fclose(f);
        int fd = -7;
        hg_error_t err = {0};
        ck_assert_int_lt(home_open_with(ro, table, &fd, &err), 0);
        ck_assert_msg(strstr(err.message, "not a mount point"), "%s", err.message);
        f = fopen(table, "we");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "1 0 0:1 / %s rw - tmpfs none rw\n", ro);
        fclose(f);
        err = (hg_error_t){0};
        ck_assert_int_lt(home_open_with(ro, table, &fd, &err), 0);
        ck_assert_msg(strstr(err.message, "not mounted read-only"), "%s", err.message);
        f = fopen(table, "we");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "1 0 0:1 / %s ro - tmpfs none ro\n", ro);
        fclose(f);
        err = (hg_error_t){0};
        ck_assert_int_eq(home_open_with(ro, table, &fd, &err), 0);
        ck_assert_int_ge(fd, 0);
        close(fd);
}
END_TEST

START_TEST(read_through_the_directory)
{
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        char p[512];
        (void)snprintf(p, sizeof(p), "%s/run", dir);
        ck_assert_int_eq(mkdir(p, 0755), 0);
        (void)snprintf(p, sizeof(p), "%s/run/turn.json", dir);
        FILE *f = fopen(p, "we");
        ck_assert_ptr_nonnull(f);
        fputs("{}", f);
        fclose(f);
        (void)snprintf(p, sizeof(p), "%s/relay.port", dir);
        ck_assert_int_eq(symlink("/etc/passwd", p), 0);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        hg_error_t err = {0};
        ck_assert_int_eq(home_read(dfd, "run/turn.json", 64, &text, &len, &err), 0);
        ck_assert_str_eq(text, "{}");
        err = (hg_error_t){0};
        ck_assert_int_lt(home_read(dfd, "relay.port", 64, &text, &len, &err), 0); /* a symlink */
        err = (hg_error_t){0};
        ck_assert_int_lt(home_read(dfd, "run", 64, &text, &len, &err), 0); /* not a file */
        ck_assert_msg(strstr(err.message, "not a regular file"), "%s", err.message);
        err = (hg_error_t){0};
        ck_assert_int_eq(home_read(dfd, "a/b/c", 64, &text, &len, &err), -EINVAL);
        err = (hg_error_t){0};
        ck_assert_int_eq(home_read(dfd, "run/turn.json", 1, &text, &len, &err), -EFBIG);
}
END_TEST

static Suite *home_suite(void)
{
        Suite *s = suite_create("home");
        TCase *tc = tcase_create("home");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, writable_refused);
        tcase_add_test(tc, paths_refused);
        tcase_add_test(tc, mount_table_checked);
        tcase_add_test(tc, read_through_the_directory);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(home_suite());
}
