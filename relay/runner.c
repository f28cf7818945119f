#include "runner.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"

static const runner_run_t idle_run = {.child = {.in_fd = -1, .out_fd = -1, .err_fd = -1}};

static void close_fd(int *fd)
{
        if (*fd >= 0)
                (void)close(*fd);
        *fd = -1;
}

void runner_init(runner_t *r)
{
        *r = (runner_t){.run = idle_run};
}

int runner_accept(runner_t *r, conn_t *ctl, frame_run_t *req, hg_error_t *err)
{
        if (runqueue_push(&r->queue, req) == 0)
                return 0;
        static const char msg[] = "hangar-relay: too many run requests waiting\n";
        frame_run_result_t rr = {.id = req->id,
                                 .exit = {.end = FRAME_END_NOT_STARTED, .value = 127}};
        frame_run_free(req);
        uint8_t fixed[FRAME_RUN_RESULT_FIXED];
        frame_run_result_encode_fixed(&rr, fixed);
        if (conn_queue(ctl, FRAME_RUN_RESULT, fixed, sizeof(fixed), msg, sizeof(msg) - 1) < 0)
                return error_set(err, -EPIPE, "ctl: the driver does not read its replies");
        return 0;
}

int runner_start_next(runner_t *r, const char *cwd, int64_t now, hg_error_t *err)
{
        frame_run_t req;
        if (r->run.active || !runqueue_pop(&r->queue, &req))
                return 0;
        runner_run_t run = idle_run;
        run.active = true;
        run.req = req;
        if (tail_init(&run.tail, req.tail_max) < 0) {
                frame_run_free(&req);
                return error_set(err, -ENOMEM, "out of memory for a run's output");
        }
        spawn_opts_t o = {.argv = req.argv, .cwd = cwd, .merge_stderr = true, .stdin_null = true};
        hg_error_t serr = {0};
        if (spawn_start(&o, &run.child, &serr) < 0) {
                /* Reported to the driver as not started, with the reason as output. */
                run.end.reaped = true;
                run.end.status = 127 << 8;
                tail_append(&run.tail, (const uint8_t *)serr.message, strlen(serr.message));
        } else {
                run.out_open = true;
                run.deadline_ms = now + req.timeout_ms;
        }
        r->run = run;
        return 0;
}

void runner_read(runner_t *r)
{
        uint8_t buf[RUNNER_CHUNK];
        for (;;) {
                ssize_t n = read(r->run.child.out_fd, buf, sizeof(buf));
                if (n > 0) {
                        tail_append(&r->run.tail, buf, (size_t)n);
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                r->run.out_open = false;
                close_fd(&r->run.child.out_fd);
                return;
        }
}

void runner_check_timeout(runner_t *r, int64_t now)
{
        runner_run_t *run = &r->run;
        if (run->active && !run->end.reaped && now >= run->deadline_ms && !run->timed_out) {
                run->timed_out = true;
                (void)spawn_signal_group(run->child.pid, SIGKILL);
        }
}

int runner_finish_if_done(runner_t *r, conn_t *ctl, int64_t now, hg_error_t *err)
{
        runner_run_t *run = &r->run;
        if (!run->active || !run->end.reaped)
                return 0;
        if (run->out_open && now < run->end.drain_ms)
                return 0;
        if (!conn_can_queue(ctl, FRAME_RUN_RESULT_FIXED + run->tail.len))
                return 0; /* the driver is slow; try again when ctl drains */
        frame_run_result_t rr = {.id = run->req.id,
                                 .exit = reaper_exit(run->end.status, run->timed_out),
                                 .truncated = run->tail.truncated};
        if (run->child.pid == 0)
                rr.exit = (frame_exit_t){.end = FRAME_END_NOT_STARTED, .value = 127};
        uint8_t fixed[FRAME_RUN_RESULT_FIXED];
        frame_run_result_encode_fixed(&rr, fixed);
        _cleanup_free_ uint8_t *tail = malloc(run->tail.len ? run->tail.len : 1);
        if (!tail)
                return error_set(err, -ENOMEM, "out of memory for a run's result");
        tail_copy(&run->tail, tail);
        (void)conn_queue(ctl, FRAME_RUN_RESULT, fixed, sizeof(fixed), tail, run->tail.len);
        close_fd(&run->child.out_fd);
        tail_free(&run->tail);
        frame_run_free(&run->req);
        *run = idle_run;
        return 0;
}

int64_t runner_next_deadline(const runner_t *r)
{
        const runner_run_t *run = &r->run;
        if (!run->active)
                return INT64_MAX;
        return run->end.reaped ? run->end.drain_ms : run->deadline_ms;
}

void runner_clear(runner_t *r)
{
        if (r->run.active) {
                close_fd(&r->run.child.out_fd);
                tail_free(&r->run.tail);
                frame_run_free(&r->run.req);
                r->run = idle_run;
        }
        runqueue_clear(&r->queue);
}
