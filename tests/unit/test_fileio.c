/* Unit tests for common/fileio: bounded reads and atomic writes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
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

/* A file under dir holding n bytes of a known pattern, opened for reading. */
static int pattern_fd(const char *name, size_t n)
{
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
        _cleanup_free_ char *buf = malloc(n ? n : 1);
        ck_assert_ptr_nonnull(buf);
        for (size_t i = 0; i < n; i++)
                buf[i] = (char)('a' + i % 26);
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fd_write_all(fd, buf, n), 0);
        ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
        return fd;
}

static void check_pattern(const char *data, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (data[i] != (char)('a' + i % 26))
                        ck_abort_msg("byte %zu is %d", i, data[i]);
        ck_assert_int_eq(data[n], '\0');
}

/* Sizes around the reader's 4096-byte first buffer and its doublings. */
static const size_t sizes[] = {0, 1, 10, 4094, 4095, 4096, 4097, 8191, 8192, 100000};

START_TEST(read_exactly_max_is_accepted)
{
        size_t n = sizes[_i];
        _cleanup_close_ int fd = pattern_fd("f", n);
        _cleanup_free_ char *data = NULL;
        size_t len = 12345;
        ck_assert_int_eq(fd_read_bounded(fd, n, &data, &len), 0);
        ck_assert_uint_eq(len, n);
        check_pattern(data, n);
}
END_TEST

START_TEST(read_one_over_max_is_efbig)
{
        size_t n = sizes[_i];
        if (n == 0)
                return;
        _cleanup_close_ int fd = pattern_fd("f", n);
        char *data = (char *)"untouched";
        size_t len = 12345;
        ck_assert_int_eq(fd_read_bounded(fd, n - 1, &data, &len), -EFBIG);
        ck_assert_str_eq(data, "untouched");
        ck_assert_uint_eq(len, 12345);
}
END_TEST

START_TEST(read_far_under_max)
{
        _cleanup_close_ int fd = pattern_fd("f", 5000);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(fd_read_bounded(fd, 1 << 20, &data, &len), 0);
        ck_assert_uint_eq(len, 5000);
        check_pattern(data, 5000);
}
END_TEST

/* Regression test (this was a bug, now fixed): SIZE_MAX as the bound ("no limit") overflows max + 1
 * in fileio.c and refuses anything that fills the first 4 KiB buffer. */
START_TEST(read_with_size_max_bound)
{
        _cleanup_close_ int fd = pattern_fd("f", 5000);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(fd_read_bounded(fd, SIZE_MAX, &data, &len), 0);
        ck_assert_uint_eq(len, 5000);
        check_pattern(data, 5000);
}
END_TEST

START_TEST(read_from_pipe)
{
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_eq(fd_write_all(p[1], "hello\nworld", 11), 0);
        close(p[1]);
        _cleanup_close_ int rfd = p[0];
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(fd_read_bounded(rfd, 11, &data, &len), 0);
        ck_assert_uint_eq(len, 11);
        ck_assert_str_eq(data, "hello\nworld");
}
END_TEST

START_TEST(read_bad_fd_and_missing_file)
{
        char *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(fd_read_bounded(-1, 10, &data, &len), -EBADF);
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/missing", dir);
        ck_assert_int_eq(file_read_bounded(path, 10, &data, &len), -ENOENT);
        ck_assert_ptr_null(data);
}
END_TEST

START_TEST(file_read_bounded_reads_and_bounds)
{
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/f", dir);
        close(pattern_fd("f", 300));
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(file_read_bounded(path, 300, &data, &len), 0);
        ck_assert_uint_eq(len, 300);
        check_pattern(data, 300);
        char *none = NULL;
        ck_assert_int_eq(file_read_bounded(path, 299, &none, &len), -EFBIG);
        ck_assert_ptr_null(none);
}
END_TEST

static mode_t mode_of(const char *path)
{
        struct stat st;
        ck_assert_int_eq(stat(path, &st), 0);
        return st.st_mode & 07777;
}

static char *slurp(const char *path)
{
        char *data = NULL;
        size_t len;
        ck_assert_int_eq(file_read_bounded(path, 1 << 20, &data, &len), 0);
        return data;
}

/* Names in dir other than the expected ones (temporaries left behind). */
static int count_entries(void)
{
        DIR *d = opendir(dir);
        ck_assert_ptr_nonnull(d);
        int n = 0;
        struct dirent *e;
        while ((e = readdir(d)))
                if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                        n++;
        closedir(d);
        return n;
}

START_TEST(atomic_write_creates_with_mode)
{
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/tls.key", dir);
        /* The mode is applied with fchmod, so the umask does not narrow or widen it. */
        mode_t old = umask(077);
        ck_assert_int_eq(file_write_atomic(path, "secret", 6, 0640, 0), 0);
        umask(old);
        ck_assert_uint_eq(mode_of(path), 0640);
        _cleanup_free_ char *got = slurp(path);
        ck_assert_str_eq(got, "secret");
        ck_assert_int_eq(count_entries(), 1);
}
END_TEST

START_TEST(atomic_write_replaces)
{
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/tls.crt", dir);
        ck_assert_int_eq(file_write_atomic(path, "old", 3, 0644, 0), 0);
        struct stat before, after;
        ck_assert_int_eq(stat(path, &before), 0);
        ck_assert_int_eq(file_write_atomic(path, "new content", 11, 0600, 0), 0);
        ck_assert_int_eq(stat(path, &after), 0);
        _cleanup_free_ char *got = slurp(path);
        ck_assert_str_eq(got, "new content");
        ck_assert_uint_eq(mode_of(path), 0600);
        /* Renamed into place: a new inode, never the old file rewritten. */
        ck_assert_uint_ne(before.st_ino, after.st_ino);
        ck_assert_int_eq(count_entries(), 1);
}
END_TEST

START_TEST(atomic_write_exclusive)
{
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/ca.key", dir);
        ck_assert_int_eq(file_write_atomic(path, "first", 5, 0600, 1), 0);
        ck_assert_uint_eq(mode_of(path), 0600);
        ck_assert_int_eq(file_write_atomic(path, "second", 6, 0644, 1), -EEXIST);
        _cleanup_free_ char *got = slurp(path);
        ck_assert_str_eq(got, "first");
        ck_assert_uint_eq(mode_of(path), 0600);
        /* No temporary left behind by either call. */
        ck_assert_int_eq(count_entries(), 1);
}
END_TEST

START_TEST(atomic_write_empty_and_missing_dir)
{
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/empty", dir);
        ck_assert_int_eq(file_write_atomic(path, "", 0, 0600, 1), 0);
        _cleanup_free_ char *got = slurp(path);
        ck_assert_str_eq(got, "");
        (void)snprintf(path, sizeof(path), "%s/no/such/dir/f", dir);
        ck_assert_int_eq(file_write_atomic(path, "x", 1, 0600, 0), -ENOENT);
}
END_TEST

START_TEST(replace_renames_into_place)
{
        /* file_replace: the same rename into place (no fsync), over a file
         * and over a planted symlink, which is replaced, never followed. */
        char path[4200], target[4200];
        (void)snprintf(path, sizeof(path), "%s/turn.json", dir);
        (void)snprintf(target, sizeof(target), "%s/elsewhere", dir);
        ck_assert_int_eq(file_replace(path, "old", 3, 0600), 0);
        struct stat before, after;
        ck_assert_int_eq(stat(path, &before), 0);
        ck_assert_int_eq(file_replace(path, "{\"turn\":1}", 10, 0644), 0);
        ck_assert_int_eq(stat(path, &after), 0);
        _cleanup_free_ char *got = slurp(path);
        ck_assert_str_eq(got, "{\"turn\":1}");
        ck_assert_uint_eq(mode_of(path), 0644);
        ck_assert_uint_ne(before.st_ino, after.st_ino);
        ck_assert_int_eq(count_entries(), 1);
        ck_assert_int_eq(file_replace(target, "kept", 4, 0600), 0);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(symlink(target, path), 0);
        ck_assert_int_eq(file_replace(path, "new", 3, 0644), 0);
        struct stat l;
        ck_assert_int_eq(lstat(path, &l), 0);
        ck_assert(S_ISREG(l.st_mode));
        _cleanup_free_ char *kept = slurp(target);
        ck_assert_str_eq(kept, "kept");
        (void)snprintf(path, sizeof(path), "%s/no/such/dir/f", dir);
        ck_assert_int_eq(file_replace(path, "x", 1, 0600), -ENOENT);
        ck_assert_int_eq(count_entries(), 2);
}
END_TEST

START_TEST(write_all_writes_everything)
{
        _cleanup_close_ int fd = pattern_fd("w", 0);
        static char big[200000];
        for (size_t i = 0; i < sizeof(big); i++)
                big[i] = (char)('a' + i % 26);
        ck_assert_int_eq(fd_write_all(fd, big, sizeof(big)), 0);
        ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(fd_read_bounded(fd, sizeof(big), &data, &len), 0);
        ck_assert_uint_eq(len, sizeof(big));
        check_pattern(data, len);
        ck_assert_int_eq(fd_write_all(-1, "x", 1), -EBADF);
}
END_TEST

static Suite *fileio_suite(void)
{
        Suite *s = suite_create("fileio");
        TCase *tc = tcase_create("read");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_loop_test(tc, read_exactly_max_is_accepted, 0, (int)ARRAY_SIZE(sizes));
        tcase_add_loop_test(tc, read_one_over_max_is_efbig, 0, (int)ARRAY_SIZE(sizes));
        tcase_add_test(tc, read_far_under_max);
        tcase_add_test(tc, read_with_size_max_bound);
        tcase_add_test(tc, read_from_pipe);
        tcase_add_test(tc, read_bad_fd_and_missing_file);
        tcase_add_test(tc, file_read_bounded_reads_and_bounds);
        suite_add_tcase(s, tc);
        tc = tcase_create("write");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, atomic_write_creates_with_mode);
        tcase_add_test(tc, atomic_write_replaces);
        tcase_add_test(tc, atomic_write_exclusive);
        tcase_add_test(tc, atomic_write_empty_and_missing_dir);
        tcase_add_test(tc, replace_renames_into_place);
        tcase_add_test(tc, write_all_writes_everything);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(fileio_suite());
}
