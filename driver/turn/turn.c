/* The daemon itself: its setup (signals, the control socket, a fresh
 * instance id, the restore watch), the one poll loop that drives the turn,
 * the control clients and the grades, what a restore from a checkpoint
 * changes, and its teardown. What the loop wakes for is
 * handled in the turn's modules (turnctx.h lists them). */
#include "turn.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctlsock.h"
#include "handshake.h"
#include "jsonx.h"
#include "kernrand.h"
#include "layout.h"
#include "reseed.h"
#include "turnctx.h"
#include "turnops.h"
#include "turnrelay.h"
#include "turnsetup.h"

#define TEARDOWN_FLUSH_MS 2000 /* for watchers and replies, before the socket goes */

static void accept_clients(turn_t *t)
{
        for (;;) {
                int fd = -1;
                uid_t peer = 0;
                int r = ctlsock_accept(t->ctl_lfd, geteuid(), &fd, &peer);
                if (r == -EAGAIN)
                        return;
                if (r == -EPERM) {
                        turnctx_record(t, "ctl.refused", json_pack("{s:i}", "uid", (int)peer));
                        continue;
                }
                if (r < 0)
                        return;
                ctlclient_t *c = ctlclient_free_slot(t->clients, CTLCLIENT_MAX);
                if (!c) {
                        (void)close(fd);
                        continue;
                }
                c->used = true;
                c->fd = fd;
                c->stream_fd = -1;
                c->state = CTLCLIENT_READING;
        }
}

/* A watcher's log will not grow: another turn started, or none is in
 * flight and its end is recorded (a turn that an op ended in this round
 * writes its turn.ended event at the top of the next: an events follower
 * closed before it would miss the last line). */
static bool log_done(const turn_t *t, const ctlclient_t *c)
{
        return c->watch_gen != t->gen || (!turnstate_active(&t->ts) && t->end_recorded);
}

/* Followers (`ctl watch`, `ctl events --follow`) wake on change, not on a
 * timer: the daemon is the one writer of the log and the events, so when
 * its record has grown (or another turn started), each follower that had
 * read everything reads on now; one with bytes still to send is woken by
 * its socket. Called before every poll, after whatever wrote this round. */
static void wake_followers(turn_t *t)
{
        if (t->rec.appends == t->followed_appends && t->gen == t->followed_gen)
                return;
        t->followed_appends = t->rec.appends;
        t->followed_gen = t->gen;
        for (size_t i = 0; i < CTLCLIENT_MAX; i++) {
                ctlclient_t *c = &t->clients[i];
                if (c->used && c->state == CTLCLIENT_WATCHING && c->out_off == c->out_len)
                        ctlclient_write(c, log_done(t, c));
        }
}

/* A new instance id: 16 bytes of the kernel's, as 32 hex digits. */
static int new_instance(turn_t *t)
{
        uint8_t id[FRAME_INSTANCE_SIZE];
        int r = kernrand_bytes(id, sizeof(id));
        if (r < 0)
                return r;
        _Static_assert(sizeof(t->instance) == HANDSHAKE_INSTANCE_HEX_LEN + 1, "instance is hex");
        handshake_instance_to_hex(id, t->instance);
        token_wipe(id, sizeof(id));
        return 0;
}

/* ---- a restore from a checkpoint (docs/turn.md, "Clones") ---- */

/* This sandbox is one of perhaps many clones of one checkpoint: nothing
 * secret or unique it holds may stay as the checkpoint had it. In order:
 * OpenSSL's DRBGs reseeded (the driver's own secrets are the kernel's
 * already), a new instance id, the turn in flight ended `restored` and let
 * go (token wiped, listener closed, port and token files gone), the turn
 * file unlinked (it names the old instance), the control clients closed
 * (their hangar-driver ctl processes were exec'd, and runsc kills those at
 * a restore), the grade in flight ended `restored`. */
static void on_restore(turn_t *t)
{
        uint64_t n = t->restore.restores;
        char old[sizeof(t->instance)];
        memcpy(old, t->instance, sizeof(old));
        int r = hg_rand_reseed(n);
        if (r == 0)
                r = new_instance(t);
        if (r < 0) {
                /* A clone that cannot make its own secrets must not serve. */
                turnstate_end(&t->ts, "driver-failed",
                              "restored from a checkpoint, and could not reseed: %s", strerror(-r));
                t->stop = true;
        }
        turnctx_record(t, "driver.restored",
                       json_pack("{s:s, s:s, s:I}", "old_instance", old, "instance", t->instance,
                                 "restores", (json_int_t)n));
        turnstate_restored(&t->ts, n, old);
        if (t->ts.state == TURN_STATE_ENDED && !t->end_recorded)
                turnsetup_finish(t);
        token_wipe(&t->token, sizeof(t->token));
        turnsetup_unlink(t->cfg->home_path, LAYOUT_HOME_PORT);
        turnsetup_unlink(t->cfg->home_path, LAYOUT_HOME_TURN);
        turnsetup_unlink(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
        for (size_t i = 0; i < CTLCLIENT_MAX; i++)
                if (t->clients[i].used)
                        ctlclient_close(&t->clients[i]);
        if (t->grade)
                grade_ctx_restored(t->grade, t->instance);
        turnctx_save_status(t);
        fprintf(stderr,
                "hangar-driver serve: restored from a checkpoint (restore %llu): instance %s, "
                "was %s\n",
                (unsigned long long)n, t->instance, old);
        fflush(stderr);
}

static void watch_restores(turn_t *t)
{
        switch (restore_watch_read(&t->restore)) {
        case RESTORE_EV_RESTORED:
                return on_restore(t);
        case RESTORE_EV_UNKNOWN:
                /* Unreadable: as if restored (restore.h). restores counts
                 * only what gVisor said, so count this one here. */
                t->restore.restores++;
                return on_restore(t);
        case RESTORE_EV_NONE:
        case RESTORE_EV_RESUMED: /* the checkpointed sandbox itself: it goes on */
        case RESTORE_EV_FAILED:
                return;
        default:
                return on_restore(t);
        }
}

/* ---- the loop ---- */

enum {
        P_SIG,
        P_CTLSOCK,
        P_IO,
        P_CTL,
        P_RESTORE,
        P_CLIENTS,
        P_LISTENER = P_CLIENTS + CTLCLIENT_MAX
};
#define P_GRADE (P_LISTENER + LISTENER_PENDING_MAX + 1)
#define P_COUNT (P_GRADE + GRADE_POLLFDS)

/* A socket error reads as the relay closing: the turn loop decides. */
static void conn_events(conn_t *c, short revents)
{
        if ((revents & (POLLIN | POLLHUP | POLLERR)) && conn_fill(c) < 0)
                c->eof = true;
        if ((revents & POLLOUT) && conn_flush(c) < 0)
                c->eof = true;
}

/* The io channel: after a read that left the socket empty and the buffer
 * not full, io rests TURN_IO_REST_MS. A harness writing in small pieces
 * (8 KiB for `head`, a line for many) would otherwise wake the loop, and
 * cost a poll, a read and a log write, for every frame; under gVisor each
 * of those is a trip through the sandbox's kernel. Resting, the next read
 * takes what came meanwhile in one go. A full buffer means more is waiting:
 * no rest. */
static void io_events(turn_t *t, short revents)
{
        size_t before = t->io.in_len - t->io.in_used;
        conn_events(&t->io, revents);
        size_t after = t->io.in_len - t->io.in_used;
        if (after > before && !conn_in_full(&t->io) && !t->io.eof)
                t->io_rest_until = conn_now_ms() + TURN_IO_REST_MS;
}

/* PID 1 in the sidecar: whatever an exec left behind comes back to it. */
static void reap_children(void)
{
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

static void read_signals(turn_t *t)
{
        struct signalfd_siginfo si;
        while (read(t->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
                if (si.ssi_signo == SIGCHLD) {
                        reap_children();
                        continue;
                }
                /* SIGTERM (the kubelet, within the grace period), SIGINT,
                 * SIGHUP: the turn in flight ends, recorded, and the daemon
                 * exits. */
                t->stop = true;
                turnstate_end(&t->ts, "driver-stopped", "signal %u", si.ssi_signo);
        }
}

/* The poll timeout towards deadline, at most timeout ms. */
static int timeout_towards(int timeout, int64_t deadline, int64_t now)
{
        if (deadline != INT64_MAX && deadline - now < timeout)
                timeout = deadline - now < 0 ? 0 : (int)(deadline - now);
        return timeout;
}

static void loop(turn_t *t)
{
        for (;;) {
                int64_t now = conn_now_ms();
                if (turnstate_active(&t->ts))
                        turnrelay_step(t, now);
                if (t->ts.state == TURN_STATE_ENDED && !t->end_recorded)
                        turnsetup_finish(t);
                if (t->stop || (t->once && t->ts.state == TURN_STATE_ENDED))
                        break;
                wake_followers(t);

                struct pollfd p[P_COUNT];
                for (size_t i = 0; i < P_COUNT; i++)
                        p[i] = (struct pollfd){.fd = -1};
                p[P_SIG] = (struct pollfd){.fd = t->sigfd, .events = POLLIN};
                p[P_CTLSOCK] = (struct pollfd){.fd = t->ctl_lfd, .events = POLLIN};
                p[P_RESTORE] =
                    (struct pollfd){.fd = restore_watch_fd(&t->restore), .events = POLLIN};
                bool io_rests = t->io_open && now < t->io_rest_until;
                if (t->io_open) {
                        short ev = (t->io.eof || io_rests ? 0 : POLLIN) |
                                   (conn_out_pending(&t->io) ? POLLOUT : 0);
                        p[P_IO] = (struct pollfd){.fd = ev ? t->io.fd : -1, .events = ev};
                }
                if (t->ctl_open) {
                        short ev =
                            (t->ctl.eof ? 0 : POLLIN) | (conn_out_pending(&t->ctl) ? POLLOUT : 0);
                        p[P_CTL] = (struct pollfd){.fd = ev ? t->ctl.fd : -1, .events = ev};
                }
                for (size_t i = 0; i < CTLCLIENT_MAX; i++) {
                        short ev = ctlclient_poll_events(&t->clients[i]);
                        p[P_CLIENTS + i] =
                            (struct pollfd){.fd = ev ? t->clients[i].fd : -1, .events = ev};
                }
                /* The listener stays for the whole turn (replays after the
                 * relay got in are recorded), so its handshake deadlines
                 * count in every state; it is closed when the turn ends. */
                size_t nl = listener_pollfds(&t->lis, &p[P_LISTENER]);
                int64_t deadline = turnstate_next_deadline(&t->ts, INT64_MAX);
                if (listener_next_deadline(&t->lis) < deadline)
                        deadline = listener_next_deadline(&t->lis);
                int timeout = timeout_towards(1000, deadline, now);
                if (t->grade) {
                        grade_pollfds(t->grade, &p[P_GRADE]);
                        timeout = timeout_towards(timeout, grade_next_deadline(t->grade), now);
                }
                if (io_rests)
                        timeout = timeout_towards(timeout, t->io_rest_until, now);
                int n = poll(p, t->grade ? P_COUNT : P_LISTENER + nl, timeout);
                if (n < 0 && errno != EINTR) {
                        turnstate_end(&t->ts, "driver-failed", "poll: %s", strerror(errno));
                        t->stop = true;
                        continue;
                }
                if (p[P_SIG].revents)
                        read_signals(t);
                /* Before anything else is served: a clone answers nothing
                 * with what the checkpoint held. */
                if (p[P_RESTORE].revents) {
                        watch_restores(t);
                        continue;
                }
                if (nl)
                        listener_process(&t->lis, &p[P_LISTENER], nl, turnrelay_on_accept,
                                         turnrelay_on_reject, t);
                if (p[P_IO].revents)
                        io_events(t, p[P_IO].revents);
                if (p[P_CTL].revents)
                        conn_events(&t->ctl, p[P_CTL].revents);
                if (p[P_CTLSOCK].revents)
                        accept_clients(t);
                grade_process(t->grade, &p[P_GRADE]);
                for (size_t i = 0; i < CTLCLIENT_MAX; i++) {
                        ctlclient_t *c = &t->clients[i];
                        if (!c->used)
                                continue;
                        if (c->state == CTLCLIENT_READING && p[P_CLIENTS + i].revents)
                                turnops_client_read(t, c);
                        /* A follower with nothing to send waits for its
                         * file to grow (wake_followers), not for any wake. */
                        else if (c->state == CTLCLIENT_WATCHING && !p[P_CLIENTS + i].revents)
                                continue;
                        else if (c->used && (c->state == CTLCLIENT_REPLYING ||
                                             c->state == CTLCLIENT_WATCHING ||
                                             c->state == CTLCLIENT_STREAMING))
                                ctlclient_write(c, log_done(t, c));
                }
                if (t->io_open && conn_out_pending(&t->io) && conn_flush(&t->io) < 0)
                        t->io.eof = true;
                if (t->ctl_open && conn_out_pending(&t->ctl) && conn_flush(&t->ctl) < 0)
                        t->ctl.eof = true;
        }
}

/* ---- the daemon's start and end ---- */

static int print_result(int status, const char *outcome, const char *reason, json_t *extra)
{
        return jsonx_print_outcome(status, "driver", outcome, reason, extra);
}

/* No-op handlers: the signals are read from the signalfd. A handler (not
 * SIG_DFL) also keeps them from being dropped on the floor for PID 1. */
static void on_signal(int signo)
{
        (void)signo;
}

/* The daemon's setup: signals, the control socket, a fresh instance id,
 * and no file an earlier daemon left behind (a port, a token) is kept. */
static int daemon_setup(turn_t *t, hg_error_t *err)
{
        umask(022);
        (void)signal(SIGPIPE, SIG_IGN);
        sigset_t mask;
        sigemptyset(&mask);
        int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD};
        struct sigaction sa = {.sa_handler = on_signal};
        for (size_t i = 0; i < ARRAY_SIZE(sigs); i++) {
                sigaddset(&mask, sigs[i]);
                (void)sigaction(sigs[i], &sa, NULL);
        }
        _cleanup_free_ char *sock = record_path(t->cfg->ctl_path, LAYOUT_CTL_SOCKET);
        int r = 0;
        if (!sock || !(t->stdin_q = malloc(TURN_STDIN_Q_MAX)))
                return error_set(err, -ENOMEM, "out of memory");
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
            (t->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
                return error_set(err, -errno, "signalfd: %s", strerror(errno));
        if ((r = new_instance(t)) < 0)
                return error_set(err, r, "no random bytes for the instance id");
        /* Absent outside gVisor (unavailable); an error opening it is the
         * status's "broken". With driver.cloneSafety required, a daemon
         * that could not tell a clone of itself from itself does not run. */
        (void)restore_watch_start(&t->restore, restore_watch_open_proc, NULL);
        if (strcmp(t->cfg->driver_clone_safety, CONFIG_CLONE_SAFETY_REQUIRED) == 0 &&
            t->restore.state != RESTORE_WATCH_AVAILABLE)
                return error_set(err, -ENOTSUP,
                                 "no-restore-signal: driver.cloneSafety is required and %s is %s "
                                 "(%s): a restored clone would not know it is one",
                                 RESTORE_WATCH_PATH, restore_watch_state_name(t->restore.state),
                                 t->restore.open_errno ? strerror(t->restore.open_errno)
                                                       : "no reason");
        if ((r = ctlsock_listen(sock, &t->ctl_lfd, err)) < 0)
                return r;
        /* The socket is ours: whatever an earlier daemon left is not (its
         * turn file too: a relay checks the instance named there). */
        turnsetup_unlink(t->cfg->home_path, LAYOUT_HOME_PORT);
        turnsetup_unlink(t->cfg->home_path, LAYOUT_HOME_TURN);
        turnsetup_unlink(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
        turnsetup_unlink(t->cfg->ctl_path, LAYOUT_CTL_STATUS);
        if (!t->once &&
            grade_ctx_new(t->cfg->home_path, t->cfg->ctl_path, t->instance, &t->grade) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        return 0;
}

static void daemon_teardown(turn_t *t)
{
        /* Watchers and replies get what is left before the socket goes. */
        int64_t deadline = conn_now_ms() + TEARDOWN_FLUSH_MS;
        for (bool busy = true; busy && conn_now_ms() < deadline;) {
                busy = false;
                for (size_t i = 0; i < CTLCLIENT_MAX; i++) {
                        ctlclient_t *c = &t->clients[i];
                        if (c->used && c->state != CTLCLIENT_READING &&
                            c->state != CTLCLIENT_WAIT_RUN) {
                                ctlclient_write(c, log_done(t, c));
                                busy = busy || c->used;
                        }
                }
                if (busy)
                        (void)poll(NULL, 0, 10);
        }
        for (size_t i = 0; i < CTLCLIENT_MAX; i++) {
                ctlclient_t *c = &t->clients[i];
                if (!c->used)
                        continue;
                if (c->state == CTLCLIENT_WAIT_RUN || c->state == CTLCLIENT_READING) {
                        ctlclient_reply(c, ctlclient_error("the driver is stopping"));
                        ctlclient_write(c, log_done(t, c));
                }
                ctlclient_close(c);
        }
        conn_close(&t->io);
        conn_close(&t->ctl);
        listener_close(&t->lis);
        if (t->ctl_lfd >= 0) {
                (void)close(t->ctl_lfd);
                turnsetup_unlink(t->cfg->ctl_path, LAYOUT_CTL_SOCKET);
        }
        if (t->sigfd >= 0)
                (void)close(t->sigfd);
        restore_watch_close(&t->restore);
        record_close(&t->rec);
        token_wipe(&t->token, sizeof(t->token));
        approvals_free(&t->approvals);
        if (t->term_open)
                terminal_close(&t->term);
        t->term_open = false;
        free(t->stdin_q);
        grade_ctx_free(t->grade);
        t->grade = NULL;
        if (t->spec == &t->own_spec)
                spec_free(&t->own_spec);
}

int turn_serve(const hg_config_t *cfg, turn_spec_t *first)
{
        const char *outcome = NULL;
        char reason[ERROR_MESSAGE_MAX];
        int status;
        if (first && (status = turnsetup_gate(cfg, first, &outcome, reason, sizeof(reason))) >= 0)
                return print_result(status, outcome, reason, NULL);

        static turn_t t; /* large; one per process */
        t = (turn_t){.cfg = cfg,
                     .once = first != NULL,
                     .ctl_lfd = -1,
                     .sigfd = -1,
                     .rec = {.events_fd = -1, .log_fd = -1},
                     .io = {.fd = -1},
                     .ctl = {.fd = -1},
                     .lis = {.fd = -1},
                     .restore = {.fd = -1}};
        for (size_t i = 0; i < CTLCLIENT_MAX; i++)
                ctlclient_init(&t.clients[i]);
        hg_error_t err = {0};
        int r = daemon_setup(&t, &err);
        if (r == 0 && first) {
                t.spec = first;
                r = turnsetup_start(&t, &err);
        }
        if (r < 0) {
                status = print_result(TURN_EXIT_FAILED, "failed", err.message, NULL);
                daemon_teardown(&t);
                return status;
        }
        if (!first) {
                /* The daemon's one line on stderr: the container's log. */
                fprintf(stderr, "hangar-driver serve: instance %s, pid %d, control socket in %s\n",
                        t.instance, (int)getpid(), cfg->ctl_path);
                fflush(stderr);
        }
        loop(&t);
        if (first) {
                daemon_teardown(&t);
                _cleanup_json_ json_t *exit_j = turnsetup_exit_json(&t);
                return print_result(strcmp(t.ts.end, "done") == 0 ? TURN_EXIT_RAN
                                                                  : TURN_EXIT_FAILED,
                                    t.ts.end, t.ts.reason, exit_j);
        }
        /* Say which turn the stop ended, if it ended one. */
        char stopped[96] = "";
        if (strcmp(t.ts.end, "driver-stopped") == 0 && t.spec)
                snprintf(stopped, sizeof(stopped), "; turn %s ended as driver-stopped",
                         t.spec->turn);
        daemon_teardown(&t);
        fprintf(stderr, "hangar-driver serve: stopped%s\n", stopped);
        return 0;
}
