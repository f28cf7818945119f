/* Unit tests for relay/runner: the driver's run requests in the relay,
 * with real commands and a real socket pair for ctl. A command's output
 * and status come back as RUN_RESULT with its id; requests run one at a
 * time in arrival order; the 17th waiting request is answered at once as
 * not started; a run past its timeout is killed and reported as 124; a
 * reaped run waits for its pipe's EOF until the drain deadline; the next
 * deadline is the timeout, then the drain; clear frees what is left. */
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runner.h"
#include "unit.h"

#define WAIT_MS 20000 /* a bound for a result that must come, not a timing */

typedef struct pair {
        conn_t ctl, peer; /* the relay's end, the driver's */
} pair_t;

static void pair_open(pair_t *p)
{
        int fds[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        ck_assert_int_eq(conn_init(&p->ctl, fds[0], FRAME_MAX_PAYLOAD), 0);
        ck_assert_int_eq(conn_init(&p->peer, fds[1], FRAME_MAX_PAYLOAD), 0);
}

static void pair_close(pair_t *p)
{
        conn_close(&p->ctl);
        conn_close(&p->peer);
}

static frame_run_t request(uint32_t id, uint32_t timeout_ms, const char *script)
{
        char *const argv[] = {"/bin/sh", "-c", (char *)script, NULL};
        uint8_t *payload = NULL;
        uint32_t len = 0;
        ck_assert_int_eq(frame_run_encode(id, timeout_ms, 4096, argv, &payload, &len), 0);
        frame_t f = {.type = FRAME_RUN, .payload = payload, .length = len};
        frame_run_t req;
        ck_assert_int_eq(frame_run_decode(&f, &req, NULL), 0);
        free(payload);
        return req;
}

/* The next RUN_RESULT the driver's end reads; its tail copied into tail. */
static frame_run_result_t read_result(pair_t *p, char *tail, size_t tail_size)
{
        ck_assert_int_eq(conn_flush_until(&p->ctl, conn_now_ms() + WAIT_MS), 0);
        frame_t f;
        hg_error_t err = {0};
        int r = conn_next_until(&p->peer, &f, conn_now_ms() + WAIT_MS, &err);
        ck_assert_msg(r > 0, "no frame: %d %s", r, err.message);
        ck_assert_int_eq(f.type, FRAME_RUN_RESULT);
        frame_run_result_t rr;
        ck_assert_int_eq(frame_run_result_decode(&f, &rr, &err), 0);
        ck_assert_uint_lt(rr.tail_len, tail_size);
        memcpy(tail, rr.tail, rr.tail_len);
        tail[rr.tail_len] = '\0';
        return rr;
}

/* Runs the loop's part for the run in progress until its result is out:
 * its pipe read, its child reaped, its timeout checked. */
static void run_to_result(runner_t *r, pair_t *p, int64_t now_offset)
{
        int64_t give_up = conn_now_ms() + WAIT_MS;
        while (r->run.active && conn_now_ms() < give_up) {
                if (r->run.out_open) {
                        struct pollfd pfd = {.fd = r->run.child.out_fd, .events = POLLIN};
                        if (poll(&pfd, 1, 50) > 0)
                                runner_read(r);
                }
                int status = 0;
                pid_t pid = r->run.child.pid > 0 ? waitpid(r->run.child.pid, &status, WNOHANG) : 0;
                int64_t now = conn_now_ms() + now_offset;
                if (pid > 0)
                        (void)reaper_note(pid, status, now, 0, &(reaper_end_t){0}, pid,
                                          &r->run.end);
                runner_check_timeout(r, now);
                hg_error_t err = {0};
                ck_assert_int_eq(runner_finish_if_done(r, &p->ctl, now, &err), 0);
        }
        ck_assert(!r->run.active);
}

START_TEST(runs_in_order_with_output)
{
        pair_t p;
        pair_open(&p);
        runner_t r;
        runner_init(&r);
        ck_assert_int_eq(runner_next_deadline(&r), INT64_MAX);
        frame_run_t a = request(11, 60000, "echo first; exit 3"),
                    b = request(12, 60000, "echo second >&2; kill -TERM $$");
        ck_assert_int_eq(runner_accept(&r, &p.ctl, &a, NULL), 0);
        ck_assert_int_eq(runner_accept(&r, &p.ctl, &b, NULL), 0);
        ck_assert_int_eq(runner_start_next(&r, "/", conn_now_ms(), NULL), 0);
        ck_assert(r.run.active);
        ck_assert_uint_eq(r.run.req.id, 11);
        /* One at a time: the second waits. */
        ck_assert_int_eq(runner_start_next(&r, "/", conn_now_ms(), NULL), 0);
        ck_assert_uint_eq(r.run.req.id, 11);
        ck_assert_uint_eq(runqueue_len(&r.queue), 1);
        run_to_result(&r, &p, 0);
        char tail[256];
        frame_run_result_t rr = read_result(&p, tail, sizeof(tail));
        ck_assert_uint_eq(rr.id, 11);
        ck_assert_int_eq(rr.exit.end, FRAME_END_EXITED);
        ck_assert_int_eq(rr.exit.value, 3);
        ck_assert(!rr.truncated);
        ck_assert_str_eq(tail, "first\n");
        ck_assert_int_eq(runner_start_next(&r, "/", conn_now_ms(), NULL), 0);
        ck_assert_uint_eq(r.run.req.id, 12);
        run_to_result(&r, &p, 0);
        rr = read_result(&p, tail, sizeof(tail));
        ck_assert_uint_eq(rr.id, 12);
        ck_assert_int_eq(rr.exit.end, FRAME_END_SIGNALED);
        ck_assert_int_eq(rr.exit.value, SIGTERM);
        ck_assert_str_eq(tail, "second\n"); /* stderr merged */
        ck_assert_int_eq(runner_start_next(&r, "/", conn_now_ms(), NULL), 0);
        ck_assert(!r.run.active);
        runner_clear(&r);
        pair_close(&p);
}
END_TEST

START_TEST(queue_full_answers_busy)
{
        pair_t p;
        pair_open(&p);
        runner_t r;
        runner_init(&r);
        for (uint32_t id = 1; id <= RUNQUEUE_MAX; id++) {
                frame_run_t q = request(id, 1000, "true");
                ck_assert_int_eq(runner_accept(&r, &p.ctl, &q, NULL), 0);
        }
        ck_assert(!conn_out_pending(&p.ctl)); /* nothing answered yet */
        frame_run_t extra = request(77, 1000, "true");
        ck_assert_int_eq(runner_accept(&r, &p.ctl, &extra, NULL), 0);
        ck_assert_ptr_null(extra.storage); /* taken, freed */
        char tail[256];
        frame_run_result_t rr = read_result(&p, tail, sizeof(tail));
        ck_assert_uint_eq(rr.id, 77);
        ck_assert_int_eq(rr.exit.end, FRAME_END_NOT_STARTED);
        ck_assert_int_eq(rr.exit.value, 127);
        ck_assert_str_eq(tail, "hangar-relay: too many run requests waiting\n");
        ck_assert_uint_eq(runqueue_len(&r.queue), RUNQUEUE_MAX);
        runner_clear(&r);
        ck_assert_uint_eq(runqueue_len(&r.queue), 0);
        pair_close(&p);
}
END_TEST

START_TEST(timeout_kills)
{
        pair_t p;
        pair_open(&p);
        runner_t r;
        runner_init(&r);
        frame_run_t q = request(5, 1000, "echo started; exec sleep 600");
        ck_assert_int_eq(runner_accept(&r, &p.ctl, &q, NULL), 0);
        int64_t start = conn_now_ms();
        ck_assert_int_eq(runner_start_next(&r, "/", start, NULL), 0);
        ck_assert_int_eq(r.run.deadline_ms, start + 1000);
        ck_assert_int_eq(runner_next_deadline(&r), start + 1000);
        /* Before the deadline nothing is killed. */
        runner_check_timeout(&r, start + 999);
        ck_assert(!r.run.timed_out);
        /* Its "started" read before the clock moves on: on a loaded machine
         * the shell may not have printed it yet, and the kill would come
         * first (what is checked is the tail kept, not the shell's speed). */
        int64_t give_up = conn_now_ms() + WAIT_MS;
        while (r.run.tail.len < strlen("started\n") && conn_now_ms() < give_up) {
                struct pollfd pfd = {.fd = r.run.child.out_fd, .events = POLLIN};
                if (poll(&pfd, 1, 50) > 0)
                        runner_read(&r);
        }
        /* Past it (the clock moved on by an offset: no test waits for it). */
        run_to_result(&r, &p, 1000);
        char tail[256];
        frame_run_result_t rr = read_result(&p, tail, sizeof(tail));
        ck_assert_uint_eq(rr.id, 5);
        ck_assert_int_eq(rr.exit.end, FRAME_END_TIMEOUT);
        ck_assert_int_eq(rr.exit.value, 124);
        ck_assert_str_eq(tail, "started\n");
        runner_clear(&r);
        pair_close(&p);
}
END_TEST

START_TEST(drain_then_result)
{
        pair_t p;
        pair_open(&p);
        runner_t r;
        runner_init(&r);
        frame_run_t q = request(9, 60000, "echo x");
        ck_assert_int_eq(runner_accept(&r, &p.ctl, &q, NULL), 0);
        ck_assert_int_eq(runner_start_next(&r, "/", conn_now_ms(), NULL), 0);
        int status = 0;
        ck_assert_int_eq(waitpid(r.run.child.pid, &status, 0), r.run.child.pid);
        (void)reaper_note(r.run.child.pid, status, 1000, 0, &(reaper_end_t){0}, r.run.child.pid,
                          &r.run.end);
        /* Reaped with its pipe still open: the result waits for the pipe's
         * EOF or the drain's end, which is now the next deadline. */
        ck_assert_int_eq(runner_next_deadline(&r), 1000 + REAPER_DRAIN_GRACE_MS);
        ck_assert(r.run.out_open);
        ck_assert_int_eq(runner_finish_if_done(&r, &p.ctl, 1000 + REAPER_DRAIN_GRACE_MS - 1, NULL),
                         0);
        ck_assert(r.run.active);
        ck_assert_int_eq(runner_finish_if_done(&r, &p.ctl, 1000 + REAPER_DRAIN_GRACE_MS, NULL), 0);
        ck_assert(!r.run.active);
        ck_assert_int_eq(runner_next_deadline(&r), INT64_MAX);
        char tail[256];
        frame_run_result_t rr = read_result(&p, tail, sizeof(tail));
        ck_assert_uint_eq(rr.id, 9);
        ck_assert_int_eq(rr.exit.end, FRAME_END_EXITED);
        ck_assert_int_eq(rr.exit.value, 0);
        runner_clear(&r);
        pair_close(&p);
}
END_TEST

START_TEST(clear_a_run_in_progress)
{
        pair_t p;
        pair_open(&p);
        runner_t r;
        runner_init(&r);
        frame_run_t a = request(1, 60000, "exec sleep 600"), b = request(2, 60000, "true");
        ck_assert_int_eq(runner_accept(&r, &p.ctl, &a, NULL), 0);
        ck_assert_int_eq(runner_accept(&r, &p.ctl, &b, NULL), 0);
        ck_assert_int_eq(runner_start_next(&r, "/", conn_now_ms(), NULL), 0);
        pid_t pid = r.run.child.pid;
        ck_assert_int_gt(pid, 0);
        /* The relay stops the group first (session.c), then clears. */
        (void)spawn_signal_group(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
        runner_clear(&r);
        ck_assert(!r.run.active);
        ck_assert_int_eq(r.run.child.out_fd, -1);
        ck_assert_uint_eq(runqueue_len(&r.queue), 0);
        ck_assert(!conn_out_pending(&p.ctl)); /* cleared, not answered */
        pair_close(&p);
}
END_TEST

static Suite *runner_suite(void)
{
        Suite *s = suite_create("runner");
        TCase *tc = tcase_create("runner");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, runs_in_order_with_output);
        tcase_add_test(tc, queue_full_answers_busy);
        tcase_add_test(tc, timeout_kills);
        tcase_add_test(tc, drain_then_result);
        tcase_add_test(tc, clear_a_run_in_progress);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN);
        return unit_run(runner_suite());
}
