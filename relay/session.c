#include "session.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "harness.h"
#include "procspawn.h"
#include "reaper.h"
#include "runner.h"

#define CHUNK         65536u /* bytes read from a pipe per frame */
#define STOP_GRACE_MS 2000   /* between SIGTERM and SIGKILL when stopping */

typedef struct session {
        conn_t *io, *ctl;
        int sigfd;

        harness_t h;     /* the harness */
        runner_t runner; /* the driver's run requests */

        bool finished;
        session_end_t end;
        char detail[256];
} session_t;

const char *session_end_name(session_end_t e)
{
        switch (e) {
        case SESSION_END_DONE:
                return "done";
        case SESSION_END_DRIVER_GONE:
                return "driver-gone";
        case SESSION_END_PROTOCOL:
                return "protocol-error";
        case SESSION_END_INTERNAL:
        default:
                return "internal-error";
        }
}

static void finish(session_t *s, session_end_t end, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void finish(session_t *s, session_end_t end, const char *fmt, ...)
{
        if (s->finished)
                return;
        s->finished = true;
        s->end = end;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->detail, sizeof(s->detail), fmt, ap);
        va_end(ap);
}

static void close_fd(int *fd)
{
        if (*fd >= 0)
                (void)close(*fd);
        *fd = -1;
}

/* ---- the driver's frames ---- */

/* io from the driver carries STDIN only. Stops while the stdin buffer holds
 * bytes, so a harness that does not read its stdin holds the driver back
 * instead of growing a buffer. */
static void pump_io(session_t *s)
{
        while (!s->finished && s->h.stdin_len == 0) {
                frame_t f;
                hg_error_t err = {0};
                int r = conn_next(s->io, &f, &err);
                if (r == 0)
                        return;
                if (r < 0)
                        return finish(s, SESSION_END_PROTOCOL, "io: %s", err.message);
                if (f.type != FRAME_STDIN)
                        return finish(s, SESSION_END_PROTOCOL,
                                      "io: %s is not allowed from the driver",
                                      frame_type_name(f.type));
                if (s->h.stdin_eof)
                        return finish(s, SESSION_END_PROTOCOL, "io: STDIN after its EOF");
                harness_stdin(&s->h, f.payload, f.length);
        }
}

/* ctl from the driver carries SIGNAL and RUN, and on a terminal RESIZE and
 * ANSWER. */
static void pump_ctl(session_t *s)
{
        while (!s->finished) {
                frame_t f;
                hg_error_t err = {0};
                int r = conn_next(s->ctl, &f, &err);
                if (r == 0)
                        return;
                if (r < 0)
                        return finish(s, SESSION_END_PROTOCOL, "ctl: %s", err.message);
                switch (f.type) {
                case FRAME_SIGNAL: {
                        int signo = 0;
                        if (frame_signal_decode(&f, &signo, &err) < 0)
                                return finish(s, SESSION_END_PROTOCOL, "ctl: %s", err.message);
                        harness_signal(&s->h, signo);
                        break;
                }
                case FRAME_RESIZE: {
                        frame_resize_t rs;
                        if (!s->h.term)
                                return finish(s, SESSION_END_PROTOCOL,
                                              "ctl: RESIZE on a turn without a terminal");
                        if (frame_resize_decode(&f, &rs, &err) < 0)
                                return finish(s, SESSION_END_PROTOCOL, "ctl: %s", err.message);
                        harness_resize(&s->h, rs.rows, rs.cols);
                        break;
                }
                case FRAME_ANSWER:
                        if (!s->h.term)
                                return finish(s, SESSION_END_PROTOCOL,
                                              "ctl: ANSWER on a turn without a terminal");
                        harness_answer(&s->h, f.payload, f.length);
                        break;
                case FRAME_RUN: {
                        frame_run_t req = {0};
                        if (frame_run_decode(&f, &req, &err) < 0)
                                return finish(s, SESSION_END_PROTOCOL, "ctl: %s", err.message);
                        if (runner_accept(&s->runner, s->ctl, &req, &err) < 0)
                                return finish(s, SESSION_END_PROTOCOL, "%s", err.message);
                        break;
                }
                default:
                        return finish(s, SESSION_END_PROTOCOL,
                                      "ctl: %s is not allowed from the driver",
                                      frame_type_name(f.type));
                }
        }
}

/* ---- the harness's and the run's output ---- */

/* Reads one chunk from a pipe into a frame on c. Returns false at EOF. */
static bool pipe_to_conn(int fd, conn_t *c, frame_type_t type)
{
        uint8_t buf[CHUNK];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
                /* Fits: the loop polls this pipe only while c has room for CHUNK. */
                (void)conn_queue(c, type, buf, (size_t)n, NULL, 0);
                return true;
        }
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
                return true;
        return false;
}

/* ---- signals ---- */

static void reap(session_t *s)
{
        for (;;) {
                int status = 0;
                pid_t pid = waitpid(-1, &status, WNOHANG);
                if (pid <= 0)
                        return;
                runner_run_t *run = &s->runner.run;
                /* Anything but the harness and the run is an orphan we
                 * adopted as subreaper: reaped, done. */
                if (reaper_note(pid, status, conn_now_ms(), s->h.started ? s->h.child.pid : 0,
                                &s->h.end, run->active ? run->child.pid : 0,
                                &run->end) == REAPER_RUN)
                        /* Whatever the command left behind goes with it. */
                        (void)spawn_signal_group(pid, SIGKILL);
        }
}

static void read_signals(session_t *s)
{
        struct signalfd_siginfo si;
        while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                int signo = (int)si.ssi_signo;
                if (signo == SIGCHLD) {
                        reap(s);
                        continue;
                }
                /* Someone (the agent, the kubelet) signalled the relay: pass it to
                 * the harness and tell the driver, which records it. */
                if (harness_running(&s->h)) {
                        (void)spawn_signal_group(s->h.child.pid, signo);
                        uint8_t b = (uint8_t)signo;
                        (void)conn_queue(s->ctl, FRAME_SIGNAL, &b, 1, NULL, 0);
                } else if (s->h.exit_sent) {
                        finish(s, SESSION_END_DONE, "stopped by signal %d after the harness ended",
                               signo);
                }
        }
}

/* ---- the loop ---- */

enum { P_SIG, P_IO, P_CTL, P_HOUT, P_HERR, P_HIN, P_RUN, P_SIDE, P_COUNT };

/* The next time something the loop waits for runs out: the harness's
 * pipes' drain, the run's timeout or drain. */
static int64_t min_deadline(const session_t *s)
{
        int64_t d = INT64_MAX;
        if (s->h.end.reaped && !s->h.exit_sent)
                d = s->h.end.drain_ms;
        int64_t rd = runner_next_deadline(&s->runner);
        return rd < d ? rd : d;
}

static void conn_event(session_t *s, conn_t *c, short revents, const char *name)
{
        if (revents & (POLLIN | POLLHUP | POLLERR)) {
                int r = conn_fill(c);
                if (r < 0)
                        return finish(s,
                                      s->h.exit_sent ? SESSION_END_DONE : SESSION_END_DRIVER_GONE,
                                      "%s: %s", name, strerror(-r));
        }
        if (revents & POLLOUT) {
                int r = conn_flush(c);
                if (r < 0)
                        return finish(s,
                                      s->h.exit_sent ? SESSION_END_DONE : SESSION_END_DRIVER_GONE,
                                      "%s: %s", name, strerror(-r));
        }
}

static void loop(session_t *s, const char *cwd)
{
        while (!s->finished) {
                pump_io(s);
                pump_ctl(s);
                hg_error_t err = {0};
                if (runner_start_next(&s->runner, cwd, conn_now_ms(), &err) < 0 ||
                    runner_finish_if_done(&s->runner, s->ctl, conn_now_ms(), &err) < 0)
                        finish(s, SESSION_END_INTERNAL, "%s", err.message);
                harness_end_if_done(&s->h, s->io, s->ctl, conn_now_ms());
                if (s->finished)
                        break;
                /* A closed ctl after the harness's end is the driver's "done". */
                if (s->ctl->eof)
                        finish(s, s->h.exit_sent ? SESSION_END_DONE : SESSION_END_DRIVER_GONE,
                               "the driver closed ctl");
                else if (s->io->eof && !s->h.exit_sent)
                        finish(s, SESSION_END_DRIVER_GONE, "the driver closed io");
                if (s->finished)
                        break;

                struct pollfd p[P_COUNT];
                for (int i = 0; i < P_COUNT; i++)
                        p[i] = (struct pollfd){.fd = -1};
                p[P_SIG] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
                /* A descriptor with no events is left out: poll reports POLLHUP
                 * whatever the events, and a closed peer would spin the loop. */
                p[P_IO].events = (s->io->eof || s->h.stdin_len ? 0 : POLLIN) |
                                 (conn_out_pending(s->io) ? POLLOUT : 0);
                p[P_IO].fd = p[P_IO].events ? s->io->fd : -1;
                p[P_CTL].events =
                    (s->ctl->eof ? 0 : POLLIN) | (conn_out_pending(s->ctl) ? POLLOUT : 0);
                p[P_CTL].fd = p[P_CTL].events ? s->ctl->fd : -1;
                if (s->h.out_open && conn_can_queue(s->io, CHUNK))
                        p[P_HOUT] = (struct pollfd){.fd = s->h.child.out_fd, .events = POLLIN};
                if (s->h.err_open && conn_can_queue(s->ctl, CHUNK))
                        p[P_HERR] = (struct pollfd){.fd = s->h.child.err_fd, .events = POLLIN};
                if (s->h.child.in_fd >= 0 && s->h.stdin_len)
                        p[P_HIN] = (struct pollfd){.fd = s->h.child.in_fd, .events = POLLOUT};
                if (s->runner.run.active && s->runner.run.out_open)
                        p[P_RUN] =
                            (struct pollfd){.fd = s->runner.run.child.out_fd, .events = POLLIN};
                if (s->h.side_wfd >= 0 && s->h.side_len)
                        p[P_SIDE] = (struct pollfd){.fd = s->h.side_wfd, .events = POLLOUT};

                int64_t deadline = min_deadline(s), timeout = -1;
                if (deadline != INT64_MAX) {
                        int64_t left = deadline - conn_now_ms();
                        timeout = left < 0 ? 0 : (left > 60000 ? 60000 : left);
                }
                int n = poll(p, P_COUNT, (int)timeout);
                if (n < 0 && errno != EINTR)
                        return finish(s, SESSION_END_INTERNAL, "poll: %s", strerror(errno));

                if (p[P_SIG].revents)
                        read_signals(s);
                if (p[P_IO].revents)
                        conn_event(s, s->io, p[P_IO].revents, "io");
                if (p[P_CTL].revents && !s->finished)
                        conn_event(s, s->ctl, p[P_CTL].revents, "ctl");
                if (p[P_HOUT].revents && !pipe_to_conn(s->h.child.out_fd, s->io, FRAME_STDOUT)) {
                        s->h.out_open = false;
                        close_fd(&s->h.child.out_fd);
                }
                if (p[P_HERR].revents && !pipe_to_conn(s->h.child.err_fd, s->ctl,
                                                       s->h.term ? FRAME_ASK : FRAME_STDERR)) {
                        s->h.err_open = false;
                        close_fd(&s->h.child.err_fd);
                }
                if (p[P_HIN].revents)
                        harness_write_stdin(&s->h);
                if (p[P_RUN].revents)
                        runner_read(&s->runner);
                if (p[P_SIDE].revents)
                        harness_write_side(&s->h);
                runner_check_timeout(&s->runner, conn_now_ms());
                /* Flush eagerly: most writes complete without a POLLOUT round. */
                if (!s->finished && conn_out_pending(s->io) && conn_flush(s->io) < 0 &&
                    !s->h.exit_sent)
                        finish(s, SESSION_END_DRIVER_GONE, "io: the driver went away");
                if (!s->finished && conn_out_pending(s->ctl) && conn_flush(s->ctl) < 0)
                        finish(s, s->h.exit_sent ? SESSION_END_DONE : SESSION_END_DRIVER_GONE,
                               "ctl: the driver went away");
        }
}

/* Stops a process group: SIGTERM, a grace period, SIGKILL, reaped. */
static void stop_group(session_t *s, pid_t pid, reaper_end_t *end)
{
        if (pid <= 0 || end->reaped)
                return;
        (void)spawn_signal_group(pid, SIGTERM);
        int64_t deadline = conn_now_ms() + STOP_GRACE_MS;
        while (!end->reaped && conn_now_ms() < deadline) {
                struct pollfd p = {.fd = s->sigfd, .events = POLLIN};
                (void)poll(&p, 1, 50);
                read_signals(s);
        }
        if (!end->reaped) {
                (void)spawn_signal_group(pid, SIGKILL);
                if (waitpid(pid, &end->status, 0) == pid)
                        end->reaped = true;
        }
}

void session_run(conn_t *io, conn_t *ctl, char *const harness_argv[], const char *cwd,
                 const session_term_t *term, session_result_t *ret)
{
        static session_t s; /* large (the harness's buffers); one per process */
        s = (session_t){.io = io, .ctl = ctl, .sigfd = -1};
        harness_init(&s.h, term);
        runner_init(&s.runner);
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        sigaddset(&mask, SIGQUIT);
        (void)signal(SIGPIPE, SIG_IGN);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
            (s.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
                finish(&s, SESSION_END_INTERNAL, "signalfd: %s", strerror(errno));
        } else {
                hg_error_t err = {0};
                if (harness_start(&s.h, harness_argv, cwd, &err) < 0)
                        finish(&s, SESSION_END_INTERNAL, "cannot start the harness: %s",
                               err.message);
                else
                        loop(&s, cwd);
        }

        /* Nothing of the agent's outlives the relay's turn. */
        stop_group(&s, s.h.started ? s.h.child.pid : 0, &s.h.end);
        /* The run's own end itself: read_signals() reaps into it while
         * stop_group waits (a copy would never change: a stall of the whole
         * grace, then a waitpid on a pid already reaped). */
        if (s.runner.run.active && s.runner.run.child.pid > 0)
                stop_group(&s, s.runner.run.child.pid, &s.runner.run.end);
        runner_clear(&s.runner);
        if (s.h.started)
                (void)spawn_signal_group(s.h.child.pid, SIGKILL);
        reaper_kill_adopted();
        if (s.end == SESSION_END_DONE) {
                int64_t deadline = conn_now_ms() + STOP_GRACE_MS;
                (void)conn_flush_until(io, deadline);
                (void)conn_flush_until(ctl, deadline);
        }
        harness_close(&s.h);
        close_fd(&s.sigfd);
        session_result_t r = {.end = s.end};
        r.harness = s.h.end.reaped ? reaper_exit(s.h.end.status, false)
                                   : (frame_exit_t){.end = FRAME_END_NOT_STARTED, .value = 127};
        snprintf(r.detail, sizeof(r.detail), "%s", s.detail);
        *ret = r;
}
