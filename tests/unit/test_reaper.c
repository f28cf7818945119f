/* Unit tests for relay/reaper: whose a reaped child is (the harness, the
 * run, or an adopted orphan), each matched once and only while expected;
 * the drain grace from the moment of reaping; wait statuses as EXIT (real
 * statuses from real children: an exit, a signal, a timeout); the parent
 * pid read from /proc/PID/stat text whatever comm holds; and the sweep of
 * adopted children, which must kill a real grandchild left behind. */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "reaper.h"
#include "unit.h"

START_TEST(note_harness_then_run)
{
        reaper_end_t h = {0}, r = {0};
        ck_assert_int_eq(reaper_note(100, 7 << 8, 5000, 100, &h, 200, &r), REAPER_HARNESS);
        ck_assert(h.reaped);
        ck_assert_int_eq(h.status, 7 << 8);
        ck_assert_int_eq(h.drain_ms, 5000 + REAPER_DRAIN_GRACE_MS);
        ck_assert(!r.reaped);
        /* The same pid again (a recycled pid, a second report): not the
         * harness's any more. */
        ck_assert_int_eq(reaper_note(100, 0, 6000, 100, &h, 200, &r), REAPER_ORPHAN);
        ck_assert_int_eq(h.status, 7 << 8);
        ck_assert_int_eq(h.drain_ms, 5000 + REAPER_DRAIN_GRACE_MS);
        ck_assert_int_eq(reaper_note(200, SIGKILL, 7000, 100, &h, 200, &r), REAPER_RUN);
        ck_assert(r.reaped);
        ck_assert_int_eq(r.status, SIGKILL);
        ck_assert_int_eq(r.drain_ms, 7000 + REAPER_DRAIN_GRACE_MS);
        ck_assert_int_eq(reaper_note(200, 0, 8000, 100, &h, 200, &r), REAPER_ORPHAN);
}
END_TEST

START_TEST(note_orphans)
{
        reaper_end_t h = {0}, r = {0};
        ck_assert_int_eq(reaper_note(300, 0, 1, 100, &h, 200, &r), REAPER_ORPHAN);
        /* No harness started, no run in progress (pid 0): everything is an
         * orphan, even a pid that was once theirs. */
        ck_assert_int_eq(reaper_note(100, 0, 1, 0, &h, 0, &r), REAPER_ORPHAN);
        ck_assert(!h.reaped && !r.reaped);
        /* A run that could not start (pid 0) never matches. */
        ck_assert_int_eq(reaper_note(0, 0, 1, 0, &h, 0, &r), REAPER_ORPHAN);
}
END_TEST

static int status_of(void (*child)(void))
{
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                child();
                _exit(99);
        }
        int status = 0;
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        return status;
}

static void exit3(void)
{
        _exit(3);
}

/* A shell that signals itself: a process of its own, whatever this one's
 * signal handling (check's). */
static void killed(void)
{
        execl("/bin/sh", "sh", "-c", "kill -TERM $$", (char *)NULL);
}

START_TEST(exit_statuses)
{
        frame_exit_t e = reaper_exit(status_of(exit3), false);
        ck_assert_int_eq(e.end, FRAME_END_EXITED);
        ck_assert_int_eq(e.value, 3);
        e = reaper_exit(status_of(killed), false);
        ck_assert_int_eq(e.end, FRAME_END_SIGNALED);
        ck_assert_int_eq(e.value, SIGTERM);
        /* Past its timeout, whatever the status says. */
        e = reaper_exit(status_of(killed), true);
        ck_assert_int_eq(e.end, FRAME_END_TIMEOUT);
        ck_assert_int_eq(e.value, 124);
        e = reaper_exit(0, true);
        ck_assert_int_eq(e.end, FRAME_END_TIMEOUT);
        e = reaper_exit(127 << 8, false);
        ck_assert_int_eq(e.end, FRAME_END_EXITED);
        ck_assert_int_eq(e.value, 127);
}
END_TEST

START_TEST(stat_ppid)
{
        pid_t ppid = -1;
        ck_assert_int_eq(reaper_stat_ppid("42 (sh) S 1 42 42 0 -1", &ppid), 0);
        ck_assert_int_eq(ppid, 1);
        /* comm with spaces and parentheses: read after the last ')'. */
        ck_assert_int_eq(reaper_stat_ppid("43 (a) S 9 (b)) R 77 43 43 0", &ppid), 0);
        ck_assert_int_eq(ppid, 77);
        ck_assert_int_eq(reaper_stat_ppid("44 ( ) Z 4000000 1", &ppid), 0);
        ck_assert_int_eq(ppid, 4000000);
        static const char *const bad[] = {"",
                                          "42 sh S 1 2",
                                          "42 (sh)",
                                          "42 (sh) S",
                                          "42 (sh) S 1",
                                          "42 (sh)S 1 2",
                                          "42 (sh) SS 1 2",
                                          "42 (sh) S  1 2",
                                          "42 (sh) S x1 2",
                                          "42 (sh) S 1x 2",
                                          "42 (sh) S -1 2",
                                          "42 (sh) S 99999999999 2",
                                          "42 (sh) S 12345678901234567890 2"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ppid = -5;
                ck_assert_msg(reaper_stat_ppid(bad[i], &ppid) == -EINVAL, "accepted: \"%s\"",
                              bad[i]);
                ck_assert_int_eq(ppid, -5);
        }
        /* This process's own line, as the kernel writes it. */
        char buf[512];
        FILE *f = fopen("/proc/self/stat", "re");
        ck_assert_ptr_nonnull(f);
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        ck_assert_int_eq(reaper_stat_ppid(buf, &ppid), 0);
        ck_assert_int_eq(ppid, getppid());
}
END_TEST

/* A child that forks a grandchild and exits: as a subreaper this process
 * adopts the grandchild, which the sweep must kill and reap. */
START_TEST(kill_adopted)
{
        ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        int fds[2];
        ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
        pid_t child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                pid_t grandchild = fork();
                if (grandchild == 0) {
                        close(fds[0]);
                        for (;;)
                                pause();
                }
                _exit(write(fds[1], &grandchild, sizeof(grandchild)) == sizeof(grandchild) ? 0 : 1);
        }
        close(fds[1]);
        pid_t grandchild = 0;
        ck_assert_int_eq(read(fds[0], &grandchild, sizeof(grandchild)), sizeof(grandchild));
        ck_assert_int_eq(waitpid(child, NULL, 0), child);
        /* Adopted now (its parent is gone): alive until the sweep. */
        ck_assert_int_eq(kill(grandchild, 0), 0);
        reaper_kill_adopted();
        ck_assert_int_eq(kill(grandchild, 0), -1);
        ck_assert_int_eq(errno, ESRCH); /* killed and reaped: no zombie left */
        close(fds[0]);
        reaper_kill_adopted(); /* nothing left: returns at once */
}
END_TEST

static Suite *reaper_suite(void)
{
        Suite *s = suite_create("reaper");
        TCase *tc = tcase_create("reaper");
        tcase_add_test(tc, note_harness_then_run);
        tcase_add_test(tc, note_orphans);
        tcase_add_test(tc, exit_statuses);
        tcase_add_test(tc, stat_ppid);
        tcase_add_test(tc, kill_adopted);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(reaper_suite());
}
