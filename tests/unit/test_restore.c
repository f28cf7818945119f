/* Unit tests for driver/turn/restore (design C1): the restore watch fed through
 * a socketpair standing in for /proc/gvisor/checkpoint. Each "open" makes a
 * new pair and keeps the writing end, so a test writes what gVisor would
 * ("restore\n", "resume\n", "error\n"), or junk, a part of a line, or EOF,
 * and sees the event, the count and whether the file was opened again.
 * Also turnstate_restored: the end a restore gives the turn in flight. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "restore.h"
#include "turnstate.h"
#include "unit.h"

typedef struct fake_file {
        int writer; /* the test's end of the last pair */
        int opens;
        int fail_from; /* the open with this number (1-based) and later fail */
        int fail_errno;
} fake_file_t;

static int fake_open(void *ctx)
{
        fake_file_t *f = ctx;
        f->opens++;
        if (f->fail_from && f->opens >= f->fail_from)
                return -f->fail_errno;
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        if (f->writer >= 0)
                (void)close(f->writer);
        f->writer = sv[1];
        return sv[0];
}

static void put(fake_file_t *f, const char *text)
{
        ck_assert_int_eq(write(f->writer, text, strlen(text)), (ssize_t)strlen(text));
}

static void start(restore_watch_t *w, fake_file_t *f)
{
        *f = (fake_file_t){.writer = -1};
        ck_assert_int_eq(restore_watch_start(w, fake_open, f), 0);
        ck_assert_int_eq(w->state, RESTORE_WATCH_AVAILABLE);
        ck_assert_int_ge(restore_watch_fd(w), 0);
        ck_assert_int_eq(f->opens, 1);
}

static void finish(restore_watch_t *w, fake_file_t *f)
{
        restore_watch_close(w);
        if (f->writer >= 0)
                (void)close(f->writer);
}

START_TEST(nothing_before_a_checkpoint)
{
        restore_watch_t w;
        fake_file_t f;
        start(&w, &f);
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_NONE);
        ck_assert_int_eq(w.state, RESTORE_WATCH_AVAILABLE);
        ck_assert_int_eq(f.opens, 1);
        finish(&w, &f);
}
END_TEST

START_TEST(restore_counts_and_reopens)
{
        restore_watch_t w;
        fake_file_t f;
        start(&w, &f);
        put(&f, "restore\n");
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_RESTORED);
        ck_assert_uint_eq(w.restores, 1);
        ck_assert_int_eq(f.opens, 2); /* opened again for the next checkpoint */
        ck_assert_int_eq(w.state, RESTORE_WATCH_AVAILABLE);
        ck_assert_int_ge(restore_watch_fd(&w), 0);
        /* The new descriptor waits for the next one. */
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_NONE);
        put(&f, "restore\n");
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_RESTORED);
        ck_assert_uint_eq(w.restores, 2);
        ck_assert_int_eq(f.opens, 3);
        finish(&w, &f);
}
END_TEST

START_TEST(resume_and_error_are_not_restores)
{
        restore_watch_t w;
        fake_file_t f;
        start(&w, &f);
        put(&f, "resume\n");
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_RESUMED);
        ck_assert_int_eq(f.opens, 2);
        put(&f, "error\n");
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_FAILED);
        ck_assert_int_eq(f.opens, 3);
        ck_assert_uint_eq(w.restores, 0);
        ck_assert_uint_eq(w.resumes, 2);
        ck_assert_int_eq(w.state, RESTORE_WATCH_AVAILABLE);
        finish(&w, &f);
}
END_TEST

START_TEST(a_line_in_parts)
{
        restore_watch_t w;
        fake_file_t f;
        start(&w, &f);
        put(&f, "rest");
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_NONE);
        put(&f, "ore\n");
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_RESTORED);
        ck_assert_uint_eq(w.restores, 1);
        finish(&w, &f);
}
END_TEST

/* Junk, EOF before a line, a line past the bound: unknown, and the watch
 * is closed (broken), never opened again. */
static void assert_broken_by(const char *text, bool then_eof)
{
        restore_watch_t w;
        fake_file_t f;
        start(&w, &f);
        if (text)
                put(&f, text);
        if (then_eof) {
                (void)close(f.writer);
                f.writer = -1;
        }
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_UNKNOWN);
        ck_assert_int_eq(w.state, RESTORE_WATCH_BROKEN);
        ck_assert_int_eq(restore_watch_fd(&w), -1);
        ck_assert_int_eq(f.opens, 1);
        ck_assert_uint_eq(w.restores, 0);
        ck_assert_str_eq(restore_watch_state_name(w.state), "broken");
        /* A broken watch says nothing more. */
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_NONE);
        finish(&w, &f);
}

START_TEST(junk_breaks_the_watch)
{
        assert_broken_by("restored\n", false);
        assert_broken_by("RESTORE\n", false);
        assert_broken_by("restore\nresume\n", false);
        assert_broken_by("\n", false);
}
END_TEST

START_TEST(eof_breaks_the_watch)
{
        assert_broken_by(NULL, true);
        assert_broken_by("restore", true);
}
END_TEST

START_TEST(overlong_breaks_the_watch)
{
        assert_broken_by("restorerestorerestore", false);
}
END_TEST

START_TEST(absent_file_is_unavailable)
{
        restore_watch_t w;
        fake_file_t f = {.writer = -1, .fail_from = 1, .fail_errno = ENOENT};
        ck_assert_int_eq(restore_watch_start(&w, fake_open, &f), 0);
        ck_assert_int_eq(w.state, RESTORE_WATCH_UNAVAILABLE);
        ck_assert_str_eq(restore_watch_state_name(w.state), "unavailable");
        ck_assert_int_eq(restore_watch_fd(&w), -1);
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_NONE);
        restore_watch_close(&w);
}
END_TEST

START_TEST(unopenable_file_is_broken)
{
        restore_watch_t w;
        fake_file_t f = {.writer = -1, .fail_from = 1, .fail_errno = EACCES};
        ck_assert_int_eq(restore_watch_start(&w, fake_open, &f), -EACCES);
        ck_assert_int_eq(w.state, RESTORE_WATCH_BROKEN);
        ck_assert_int_eq(w.open_errno, EACCES);
        ck_assert_int_eq(restore_watch_fd(&w), -1);
        restore_watch_close(&w);
}
END_TEST

/* The restore is reported even when the file cannot be opened again. */
START_TEST(restore_then_reopen_fails)
{
        restore_watch_t w;
        fake_file_t f;
        start(&w, &f);
        f.fail_from = 2;
        f.fail_errno = EMFILE;
        put(&f, "restore\n");
        ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_RESTORED);
        ck_assert_uint_eq(w.restores, 1);
        ck_assert_int_eq(w.state, RESTORE_WATCH_BROKEN);
        ck_assert_int_eq(restore_watch_fd(&w), -1);
        finish(&w, &f);
}
END_TEST

/* The real file, where this runs: absent outside gVisor. */
START_TEST(proc_file)
{
        restore_watch_t w;
        int r = restore_watch_start(&w, restore_watch_open_proc, NULL);
        if (access(RESTORE_WATCH_PATH, F_OK) == 0) {
                ck_assert_int_eq(r, 0);
                ck_assert_int_eq(w.state, RESTORE_WATCH_AVAILABLE);
                ck_assert_int_eq(restore_watch_read(&w), RESTORE_EV_NONE);
        } else {
                ck_assert_int_eq(r, 0);
                ck_assert_int_eq(w.state, RESTORE_WATCH_UNAVAILABLE);
        }
        restore_watch_close(&w);
}
END_TEST

START_TEST(turn_ends_restored)
{
        static const turn_state_t active[] = {TURN_STATE_WAITING, TURN_STATE_RUNNING,
                                              TURN_STATE_EXITED};
        for (size_t i = 0; i < sizeof(active) / sizeof(active[0]); i++) {
                turnstate_t ts = {.state = active[i]};
                turnstate_restored(&ts, 1, "0123456789abcdef0123456789abcdef");
                ck_assert_int_eq(ts.state, TURN_STATE_ENDED);
                ck_assert_str_eq(ts.end, "restored");
                ck_assert_ptr_nonnull(strstr(ts.reason, "0123456789abcdef0123456789abcdef"));
        }
        /* First end wins; no turn, no end. */
        turnstate_t ended = {.state = TURN_STATE_RUNNING};
        turnstate_end(&ended, "done", "x");
        turnstate_restored(&ended, 1, "0123456789abcdef0123456789abcdef");
        ck_assert_str_eq(ended.end, "done");
        turnstate_t idle = {.state = TURN_STATE_IDLE};
        turnstate_restored(&idle, 1, "0123456789abcdef0123456789abcdef");
        ck_assert_int_eq(idle.state, TURN_STATE_IDLE);
        ck_assert_str_eq(idle.end, "");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("restore");
        TCase *tc = tcase_create("restore");
        tcase_add_test(tc, nothing_before_a_checkpoint);
        tcase_add_test(tc, restore_counts_and_reopens);
        tcase_add_test(tc, resume_and_error_are_not_restores);
        tcase_add_test(tc, a_line_in_parts);
        tcase_add_test(tc, junk_breaks_the_watch);
        tcase_add_test(tc, eof_breaks_the_watch);
        tcase_add_test(tc, overlong_breaks_the_watch);
        tcase_add_test(tc, absent_file_is_unavailable);
        tcase_add_test(tc, unopenable_file_is_broken);
        tcase_add_test(tc, restore_then_reopen_fails);
        tcase_add_test(tc, proc_file);
        tcase_add_test(tc, turn_ends_restored);
        suite_add_tcase(s, tc);
        return unit_run(s);
}
