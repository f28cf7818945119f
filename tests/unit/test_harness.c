/* Unit tests for relay/harness: the harness as the relay runs it, with
 * real children and socket pairs. Its stdin: a frame in, written through,
 * EOF closing it once written (a terminal's EOF is ^D), a stdin the
 * harness closed dropping what is left. A terminal turn's answers: queued
 * up to their bound, past it the channel closed. Its end: nothing before
 * it is reaped, the drain waited for while its streams are open, then EOFs
 * and EXIT queued once io and ctl have room. A signal or resize once
 * reaped does nothing. */
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "unit.h"

#define WAIT_MS 20000 /* a bound for what must happen, not a timing */

static void pair(int fds[2])
{
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds),
                         0);
}

/* Everything readable on fd within the bound, until EOF. */
static size_t read_all_of(int fd, char *buf, size_t cap)
{
        size_t len = 0;
        int64_t give_up = conn_now_ms() + WAIT_MS;
        while (conn_now_ms() < give_up) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                (void)poll(&p, 1, 100);
                ssize_t n = read(fd, buf + len, cap - 1 - len);
                if (n == 0)
                        break;
                if (n > 0)
                        len += (size_t)n;
        }
        buf[len] = '\0';
        return len;
}

START_TEST(stdin_through_a_real_harness)
{
        harness_t *h = calloc(1, sizeof(*h));
        harness_init(h, NULL);
        ck_assert(!harness_running(h));
        char *const argv[] = {"/bin/sh", "-c", "read a; read b; echo \"$a+$b\"; cat", NULL};
        ck_assert_int_eq(harness_start(h, argv, "/", NULL), 0);
        ck_assert(harness_running(h) && h->out_open && h->err_open);
        harness_stdin(h, (const uint8_t *)"one\n", 4);
        harness_stdin(h, (const uint8_t *)"two\nrest", 8);
        ck_assert_uint_eq(h->stdin_len, 0); /* written through */
        harness_stdin(h, NULL, 0);          /* EOF: stdin closed once written */
        ck_assert(h->stdin_eof);
        ck_assert_int_eq(h->child.in_fd, -1);
        char out[256];
        read_all_of(h->child.out_fd, out, sizeof(out));
        ck_assert_str_eq(out, "one+two\nrest");
        int status = 0;
        ck_assert_int_eq(waitpid(h->child.pid, &status, 0), h->child.pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        harness_close(h);
        free(h);
}
END_TEST

START_TEST(stdin_closed_by_the_harness)
{
        harness_t *h = calloc(1, sizeof(*h));
        harness_init(h, NULL);
        int fds[2];
        pair(fds);
        h->child.in_fd = fds[0];
        close(fds[1]); /* the harness closed its stdin */
        harness_stdin(h, (const uint8_t *)"lost", 4);
        ck_assert_int_eq(h->child.in_fd, -1);
        ck_assert_uint_eq(h->stdin_len, 0); /* nowhere to go: dropped */
        /* More input finds no stdin: dropped, nothing buffered. */
        harness_stdin(h, (const uint8_t *)"more", 4);
        ck_assert_uint_eq(h->stdin_len, 0);
        free(h);
}
END_TEST

START_TEST(stdin_held_while_full)
{
        harness_t *h = calloc(1, sizeof(*h));
        harness_init(h, NULL);
        int fds[2];
        pair(fds);
        h->child.in_fd = fds[0];
        /* Fill the socket: what it does not take stays buffered. */
        static uint8_t chunk[FRAME_MAX_PAYLOAD];
        memset(chunk, 'k', sizeof(chunk));
        for (int i = 0; i < 64 && h->stdin_len == 0; i++)
                harness_stdin(h, chunk, sizeof(chunk));
        ck_assert_uint_gt(h->stdin_len, 0);
        size_t held = h->stdin_len;
        harness_write_stdin(h);
        ck_assert_uint_eq(h->stdin_len, held);
        /* The reader drains: the rest goes. */
        char sink[65536];
        while (h->stdin_len > 0) {
                while (read(fds[1], sink, sizeof(sink)) > 0)
                        ;
                harness_write_stdin(h);
        }
        close(fds[1]);
        close(fds[0]);
        free(h);
}
END_TEST

START_TEST(terminal_eof_is_ctrl_d)
{
        harness_term_t term = {.rows = 24, .cols = 80};
        harness_t *h = calloc(1, sizeof(*h));
        harness_init(h, &term);
        int fds[2];
        pair(fds);
        h->child.in_fd = fds[0];
        harness_stdin(h, NULL, 0);
        char b[4] = {0};
        ck_assert_int_eq(read(fds[1], b, sizeof(b)), 1);
        ck_assert_int_eq(b[0], 0x04);
        /* Then the input copy is closed like any stdin (a pty's master
         * stays open through out_fd: its EOF is a key, not a hang-up). */
        ck_assert_int_eq(h->child.in_fd, -1);
        close(fds[1]);
        free(h);
}
END_TEST

START_TEST(answers_bounded)
{
        harness_t *h = calloc(1, sizeof(*h));
        harness_init(h, NULL);
        harness_answer(h, (const uint8_t *)"x", 1); /* no channel: nothing */
        ck_assert_uint_eq(h->side_len, 0);
        int fds[2];
        pair(fds);
        h->side_wfd = fds[0];
        harness_answer(h, (const uint8_t *)"{\"decision\":\"approve\"}\n", 23);
        char buf[64];
        ck_assert_int_eq(read(fds[1], buf, sizeof(buf)), 23);
        /* A reader that never reads: answers pile up to the bound, then
         * the channel is closed and the rest lost. */
        static uint8_t chunk[FRAME_MAX_PAYLOAD];
        memset(chunk, 'a', sizeof(chunk));
        for (int i = 0; i < 64 && h->side_wfd >= 0; i++)
                harness_answer(h, chunk, sizeof(chunk));
        ck_assert_int_eq(h->side_wfd, -1);
        ck_assert_uint_eq(h->side_len, 0);
        close(fds[1]);
        free(h);
}
END_TEST

START_TEST(end_waits_for_reap_and_drain)
{
        harness_t *h = calloc(1, sizeof(*h));
        harness_init(h, NULL);
        char *const argv[] = {"/bin/sh", "-c", "exit 5", NULL};
        ck_assert_int_eq(harness_start(h, argv, "/", NULL), 0);
        int io_fds[2], ctl_fds[2];
        pair(io_fds);
        pair(ctl_fds);
        conn_t io, ctl, io_peer, ctl_peer;
        ck_assert_int_eq(conn_init(&io, io_fds[0], FRAME_MAX_PAYLOAD), 0);
        ck_assert_int_eq(conn_init(&ctl, ctl_fds[0], FRAME_MAX_PAYLOAD), 0);
        ck_assert_int_eq(conn_init(&io_peer, io_fds[1], FRAME_MAX_PAYLOAD), 0);
        ck_assert_int_eq(conn_init(&ctl_peer, ctl_fds[1], FRAME_MAX_PAYLOAD), 0);
        /* Not reaped: nothing. */
        harness_end_if_done(h, &io, &ctl, 0);
        ck_assert(!h->exit_sent);
        int status = 0;
        ck_assert_int_eq(waitpid(h->child.pid, &status, 0), h->child.pid);
        ck_assert_int_eq(
            reaper_note(h->child.pid, status, 1000, h->child.pid, &h->end, 0, &(reaper_end_t){0}),
            REAPER_HARNESS);
        ck_assert(!harness_running(h));
        /* Reaped, streams still open, before the drain: nothing yet. */
        harness_end_if_done(h, &io, &ctl, 1000 + REAPER_DRAIN_GRACE_MS - 1);
        ck_assert(!h->exit_sent);
        ck_assert_int_ge(h->child.out_fd, 0);
        harness_end_if_done(h, &io, &ctl, 1000 + REAPER_DRAIN_GRACE_MS);
        ck_assert(h->exit_sent);
        ck_assert_int_eq(h->child.out_fd, -1);
        ck_assert_int_eq(h->child.err_fd, -1);
        ck_assert_int_eq(h->exit.end, FRAME_END_EXITED);
        ck_assert_int_eq(h->exit.value, 5);
        /* On the wire: io's STDOUT EOF; ctl's STDERR EOF, then EXIT. */
        ck_assert_int_eq(conn_flush_until(&io, conn_now_ms() + WAIT_MS), 0);
        ck_assert_int_eq(conn_flush_until(&ctl, conn_now_ms() + WAIT_MS), 0);
        frame_t f;
        ck_assert_int_gt(conn_next_until(&io_peer, &f, conn_now_ms() + WAIT_MS, NULL), 0);
        ck_assert_int_eq(f.type, FRAME_STDOUT);
        ck_assert_uint_eq(f.length, 0);
        ck_assert_int_gt(conn_next_until(&ctl_peer, &f, conn_now_ms() + WAIT_MS, NULL), 0);
        ck_assert_int_eq(f.type, FRAME_STDERR);
        ck_assert_uint_eq(f.length, 0);
        ck_assert_int_gt(conn_next_until(&ctl_peer, &f, conn_now_ms() + WAIT_MS, NULL), 0);
        ck_assert_int_eq(f.type, FRAME_EXIT);
        frame_exit_t e;
        ck_assert_int_eq(frame_exit_decode(&f, &e, NULL), 0);
        ck_assert_int_eq(e.end, FRAME_END_EXITED);
        ck_assert_int_eq(e.value, 5);
        /* Once: a second call queues nothing more. */
        harness_end_if_done(h, &io, &ctl, INT64_MAX);
        ck_assert(!conn_out_pending(&io) && !conn_out_pending(&ctl));
        /* Reaped: signals and resizes reach nobody. */
        harness_signal(h, SIGTERM);
        harness_resize(h, 30, 100);
        conn_close(&io);
        conn_close(&ctl);
        conn_close(&io_peer);
        conn_close(&ctl_peer);
        harness_close(h);
        free(h);
}
END_TEST

START_TEST(signal_reaches_the_group)
{
        harness_t *h = calloc(1, sizeof(*h));
        harness_init(h, NULL);
        char *const argv[] = {"/bin/sh", "-c", "exec sleep 600", NULL};
        harness_signal(h, SIGTERM); /* not started: nothing */
        ck_assert_int_eq(harness_start(h, argv, "/", NULL), 0);
        harness_signal(h, SIGTERM);
        int status = 0;
        ck_assert_int_eq(waitpid(h->child.pid, &status, 0), h->child.pid);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
        harness_close(h);
        free(h);
}
END_TEST

START_TEST(start_failure)
{
        harness_t *h = calloc(1, sizeof(*h));
        harness_init(h, NULL);
        char *const argv[] = {"/bin/true", NULL};
        hg_error_t err = {0};
        int r = harness_start(h, argv, "/nonexistent/dir", &err);
        if (r < 0) {
                ck_assert(!h->started);
                ck_assert_str_ne(err.message, "");
        } else {
                /* The spawner reports a bad directory as the child's 127. */
                int status = 0;
                ck_assert_int_eq(waitpid(h->child.pid, &status, 0), h->child.pid);
                ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 127);
        }
        harness_close(h);
        free(h);
}
END_TEST

static Suite *harness_suite(void)
{
        Suite *s = suite_create("harness");
        TCase *tc = tcase_create("harness");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, stdin_through_a_real_harness);
        tcase_add_test(tc, stdin_closed_by_the_harness);
        tcase_add_test(tc, stdin_held_while_full);
        tcase_add_test(tc, terminal_eof_is_ctrl_d);
        tcase_add_test(tc, answers_bounded);
        tcase_add_test(tc, end_waits_for_reap_and_drain);
        tcase_add_test(tc, signal_reaches_the_group);
        tcase_add_test(tc, start_failure);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN);
        return unit_run(harness_suite());
}
