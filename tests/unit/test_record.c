/* Unit tests for driver/core/record: events are whole JSON lines with a sequence
 * number, and a write that fails (the volume full, here a file size limit)
 * is reported and leaves no torn line and no gap in the sequence; the log
 * and one-line appends report failures too. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "layout.h"
#include "record.h"
#include "unit.h"

static char dir[256];

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
        char run[300];
        (void)snprintf(run, sizeof(run), "%s/%s", dir, LAYOUT_HOME_RUN);
        ck_assert_int_eq(mkdir(run, 0755), 0);
}

static void teardown(void)
{
        unit_rmtree(dir);
}

/* The events file's text, into the caller's *ret_text. Not returned from a
 * local whose address file_read_bounded was handed: at -O3 (Release) gcc 12
 * inlines this, cannot see that the callee stores a heap buffer there (not
 * the local's own address), and took strchr(text, ...) in the caller for a
 * use of a dangling pointer to the dead local (-Werror=dangling-pointer).
 * The caller's variable outlives every use, so nothing can dangle. */
static void read_events(char **ret_text)
{
        _cleanup_free_ char *path = record_path(dir, LAYOUT_CTL_EVENTS);
        size_t len = 0;
        ck_assert_int_eq(file_read_bounded(path, 1 << 20, ret_text, &len), 0);
}

START_TEST(events_are_lines)
{
        record_t r;
        ck_assert_int_eq(record_open(&r, dir, dir), 0);
        ck_assert_int_eq(record_event(&r, "one", NULL), 0);
        ck_assert_int_eq(record_event(&r, "two", json_pack("{s:i}", "n", 2)), 0);
        ck_assert_uint_eq(r.seq, 2);
        record_close(&r);
        _cleanup_free_ char *text = NULL;
        read_events(&text);
        ck_assert_ptr_nonnull(strstr(text, "{\"seq\":1,"));
        ck_assert_ptr_nonnull(strstr(text, "\"event\":\"two\",\"n\":2}\n"));
        ck_assert_ptr_null(strstr(strchr(text, '\n') + 1, "\"seq\":1,"));
}
END_TEST

/* Past the limit a write fails part-way: the line is cut back, the error
 * returned, the sequence not advanced (a record write that fails
 * must fail the operation loudly, never be silently lost). */
START_TEST(full_volume_reported_whole_lines)
{
        signal(SIGXFSZ, SIG_IGN);
        record_t r;
        ck_assert_int_eq(record_open(&r, dir, dir), 0);
        ck_assert_int_eq(record_event(&r, "first", NULL), 0);
        _cleanup_free_ char *one = NULL;
        read_events(&one);
        size_t first_len = strlen(one);
        /* Nothing of check's (it writes its own messages to a file) runs
         * while the limit is on. */
        struct rlimit lim = {.rlim_cur = first_len + 20, .rlim_max = RLIM_INFINITY};
        int set = setrlimit(RLIMIT_FSIZE, &lim);
        int e = record_event(&r, "second", json_pack("{s:s}", "pad", "0123456789012345678901234"));
        char big[512];
        memset(big, 'x', sizeof(big));
        int le = record_log(&r, big, sizeof(big));
        lim.rlim_cur = RLIM_INFINITY;
        int unset = setrlimit(RLIMIT_FSIZE, &lim);
        ck_assert_int_eq(set, 0);
        ck_assert_int_eq(unset, 0);
        ck_assert_int_eq(e, -EFBIG);
        ck_assert_int_eq(le, -EFBIG);
        ck_assert_uint_eq(r.seq, 1);
        _cleanup_free_ char *after = NULL;
        read_events(&after);
        ck_assert_str_eq(after, one); /* no torn line */
        ck_assert_int_eq(record_event(&r, "third", NULL), 0);
        ck_assert_uint_eq(r.seq, 2);
        record_close(&r);
        _cleanup_free_ char *last = NULL;
        read_events(&last);
        ck_assert_ptr_nonnull(strstr(last, "{\"seq\":2,"));
        ck_assert_ptr_nonnull(strstr(last, "\"event\":\"third\"}\n"));
}
END_TEST

/* Pieces go to the log in order, in one call, and each append (an event,
 * a log write) is counted: followers wake on that count. */
START_TEST(logv_writes_pieces_in_order)
{
        record_t r;
        ck_assert_int_eq(record_open(&r, dir, dir), 0);
        ck_assert_uint_eq(r.appends, 0);
        struct iovec v[3] = {{.iov_base = "one ", .iov_len = 4},
                             {.iov_base = "", .iov_len = 0},
                             {.iov_base = "two\n", .iov_len = 4}};
        ck_assert_int_eq(record_logv(&r, v, 3), 0);
        ck_assert_str_eq(v[0].iov_base, "one "); /* left as it was */
        ck_assert_uint_eq(r.appends, 1);
        ck_assert_int_eq(record_log(&r, "three", 5), 0);
        ck_assert_int_eq(record_event(&r, "e", NULL), 0);
        ck_assert_uint_eq(r.appends, 3);
        ck_assert_int_eq(record_log(&r, "", 0), 0);
        ck_assert_uint_eq(r.appends, 3); /* nothing written, nothing to read */
        record_close(&r);
        _cleanup_free_ char *path = record_path(dir, LAYOUT_HOME_LOG);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        ck_assert_int_eq(file_read_bounded(path, 1 << 20, &text, &len), 0);
        ck_assert_uint_eq(len, 13);
        ck_assert(memcmp(text, "one two\nthree", 13) == 0);
        ck_assert_int_eq(record_logv(&r, v, 3), -EBADF);
}
END_TEST

START_TEST(closed_record_refuses)
{
        record_t r = {.events_fd = -1, .log_fd = -1};
        ck_assert_int_eq(record_event(&r, "x", NULL), -EBADF);
        ck_assert_int_eq(record_log(&r, "x", 1), -EBADF);
        ck_assert_int_eq(record_log(&r, "", 0), -EBADF);
}
END_TEST

START_TEST(append_json_line)
{
        _cleanup_json_ json_t *j = json_pack("{s:s}", "tree", "abc");
        ck_assert_int_eq(record_append_json(dir, LAYOUT_CTL_TREES, j), 0);
        ck_assert_int_eq(record_append_json(dir, LAYOUT_CTL_TREES, j), 0);
        _cleanup_free_ char *path = record_path(dir, LAYOUT_CTL_TREES), *text = NULL;
        size_t len = 0;
        ck_assert_int_eq(file_read_bounded(path, 4096, &text, &len), 0);
        ck_assert_str_eq(text, "{\"tree\":\"abc\"}\n{\"tree\":\"abc\"}\n");
        ck_assert_int_eq(record_append_json("/nonexistent-dir", LAYOUT_CTL_TREES, j), -ENOENT);
}
END_TEST

static Suite *record_suite(void)
{
        Suite *s = suite_create("record");
        TCase *tc = tcase_create("record");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, events_are_lines);
        tcase_add_test(tc, full_volume_reported_whole_lines);
        tcase_add_test(tc, logv_writes_pieces_in_order);
        tcase_add_test(tc, closed_record_refuses);
        tcase_add_test(tc, append_json_line);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(record_suite());
}
