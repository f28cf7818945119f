#include "turnrelay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "cleanup.h"
#include "layout.h"
#include "screen.h"
#include "turnapproval.h"

/* Moves queued stdin into io frames as far as io has room. */
static void stdin_pump(turn_t *t)
{
        if (t->ts.state != TURN_STATE_RUNNING || !t->io_open)
                return;
        while (t->stdin_len > 0) {
                size_t n = t->stdin_len < FRAME_MAX_PAYLOAD ? t->stdin_len : FRAME_MAX_PAYLOAD;
                if (!conn_can_queue(&t->io, n))
                        return;
                (void)conn_queue(&t->io, FRAME_STDIN, t->stdin_q, n, NULL, 0);
                memmove(t->stdin_q, t->stdin_q + n, t->stdin_len - n);
                t->stdin_len -= n;
        }
        if (t->stdin_close_pending && !t->stdin_closed && conn_can_queue(&t->io, 0)) {
                (void)conn_queue(&t->io, FRAME_STDIN, NULL, 0, NULL, 0);
                t->stdin_closed = true;
                turnctx_record(t, "harness.stdin-closed", NULL);
        }
}

/* A tree hash's result: the JSON `hangar-driver tree` printed, recorded as
 * the agent's and untrusted (docs/design/trees-and-gate.md: the agent could change what a
 * hash in its own container returns). NULL if the output is not one. */
static json_t *tree_record(turn_t *t, const frame_run_result_t *rr, int *ret_errno)
{
        *ret_errno = 0;
        _cleanup_json_ json_t *tree = runreq_tree_hash(rr);
        if (!tree)
                return NULL;
        json_t *rec = json_pack("{s:s, s:O, s:s, s:b}", "turn", t->spec->turn, "tree", tree, "by",
                                "agent", "trusted", 0);
        int r = rec ? record_append_json(t->cfg->ctl_path, LAYOUT_CTL_TREES, rec) : -ENOMEM;
        if (r < 0) {
                json_decref(rec);
                *ret_errno = r;
                return NULL;
        }
        return rec;
}

/* The reply to the client that asked for run rr (of kind). */
static json_t *run_reply(turn_t *t, runreq_kind_t kind, const frame_run_result_t *rr)
{
        if (kind == RUNREQ_TREE) {
                int r = 0;
                json_t *tr = tree_record(t, rr, &r);
                if (tr && record_event(&t->rec, "tree", json_incref(tr)) == 0) {
                        json_object_set_new(tr, "ok", json_true());
                        return tr;
                }
                if (tr || r < 0) {
                        json_decref(tr);
                        return ctlclient_error("the tree hash could not be recorded: %s",
                                               strerror(r < 0 ? -r : ENOSPC));
                }
                _cleanup_free_ char *out = runreq_failed_tail(rr);
                return ctlclient_error("the tree hash failed (%s %d): %s",
                                       frame_end_name(rr->exit.end), rr->exit.value,
                                       out ? out : "");
        }
        int r = 0;
        if (kind == RUNREQ_VERIFY)
                r = record_event(&t->rec, "verify",
                                 json_pack("{s:s, s:i, s:s, s:b}", "end",
                                           frame_end_name(rr->exit.end), "value", rr->exit.value,
                                           "by", "agent", "trusted", 0));
        if (r < 0)
                return ctlclient_error("the verify round could not be recorded: %s", strerror(-r));
        _cleanup_free_ char *tail = base64_encode(rr->tail, rr->tail_len);
        return json_pack("{s:b, s:i, s:s, s:i, s:b, s:s}", "ok", 1, "id", (int)rr->id, "end",
                         frame_end_name(rr->exit.end), "value", rr->exit.value, "truncated",
                         rr->truncated, "tail_base64", tail ? tail : "");
}

static void on_run_result(turn_t *t, const frame_t *f)
{
        frame_run_result_t rr;
        hg_error_t err = {0};
        if (frame_run_result_decode(f, &rr, &err) < 0)
                return turnstate_end(&t->ts, "protocol-error", "ctl: %s", err.message);
        /* A result nobody asked for (the relay is the agent's): counted,
         * the first few recorded, never answered to a client. */
        if (!runreq_take(&t->runs, rr.id)) {
                switch (reccap_take(&t->unrequested, TURN_UNREQUESTED_EVENTS_MAX)) {
                case RECCAP_RECORD:
                        turnctx_record(t, "run.unrequested",
                                       json_pack("{s:I}", "id", (json_int_t)rr.id));
                        break;
                case RECCAP_NOTE:
                        turnctx_note_cap(t, "run.unrequested", TURN_UNREQUESTED_EVENTS_MAX);
                        break;
                case RECCAP_COUNTED:
                default:
                        break;
                }
                return;
        }
        turnctx_record(t, "run.finished",
                       json_pack("{s:i, s:s, s:i, s:b}", "id", (int)rr.id, "end",
                                 frame_end_name(rr.exit.end), "value", rr.exit.value, "truncated",
                                 rr.truncated));
        for (size_t i = 0; i < CTLCLIENT_MAX; i++) {
                ctlclient_t *c = &t->clients[i];
                if (c->used && c->state == CTLCLIENT_WAIT_RUN && c->run_id == rr.id)
                        ctlclient_reply(c, run_reply(t, c->run_kind, &rr));
        }
}

/* The run log, bounded on every turn (the spec's log_max_mib, 64 MiB by
 * default): under gVisor hangar-home lives in the pod's memory, and the
 * harness's output is the agent's to make as large as it likes. Past the
 * cap bytes are counted (status: capped.log_dropped), not kept, and the
 * first time one record.capped event says so. The caller still scans the
 * whole stream for approvals: a harness that floods its output is still
 * asked and answered. The n pieces go in one write (iov is cut to the cap). */
static int log_bounded_v(turn_t *t, struct iovec *iov, int n)
{
        uint64_t max = (uint64_t)t->spec->log_max_mib * 1024u * 1024u;
        size_t len = 0;
        for (int i = 0; i < n; i++)
                len += iov[i].iov_len;
        size_t keep = len;
        if (t->log_bytes + keep > max)
                keep = t->log_bytes >= max ? 0 : (size_t)(max - t->log_bytes);
        int k = 0;
        for (size_t left = keep; k < n && left > 0; k++) {
                if (iov[k].iov_len > left)
                        iov[k].iov_len = left;
                left -= iov[k].iov_len;
        }
        int r = keep ? record_logv(&t->rec, iov, k) : 0;
        if (r < 0)
                return r;
        t->log_bytes += keep;
        if (keep < len) {
                t->log_dropped += len - keep;
                if (t->term_open)
                        t->term.log_capped = true;
                if (reccap_note_once(&t->log_cap))
                        turnctx_note_cap(t, t->term_open ? "terminal.log" : "run.log",
                                         (unsigned)max);
        }
        return 0;
}

static int log_bounded(turn_t *t, const void *data, size_t len)
{
        struct iovec one = {.iov_base = (void *)data, .iov_len = len};
        return log_bounded_v(t, &one, 1);
}

/* A terminal turn's STDOUT: its raw terminal stream. Into the log
 * (bounded), into the screen model; never scanned for approvals (those
 * come on ASK). The model's answers to the terminal's queries go back as
 * input when no tmux answers them. */
static void terminal_stream(turn_t *t, const frame_t *f)
{
        int r = log_bounded(t, f->payload, f->length);
        if (r < 0)
                return turnctx_record_failed(t, LAYOUT_HOME_LOG, r);
        terminal_output(&t->term, f->payload, f->length);
        uint8_t reply[SCREEN_REPLY_MAX];
        size_t n = terminal_take_replies(&t->term, reply, sizeof(reply));
        if (n)
                (void)turnctx_stdin_append(t, (const char *)reply, n);
}

/* Output frames of one read from the relay, logged together. */
#define RELAY_IO_BATCH 64

/* The batch's n frames into the log in one write, then scanned for
 * approval requests in order (each request is in the log before its
 * event). false when the log failed: the turn is told, pumping stops. */
static bool io_batch_flush(turn_t *t, const struct iovec *batch, int *n)
{
        if (*n == 0)
                return true;
        struct iovec w[RELAY_IO_BATCH];
        memcpy(w, batch, sizeof(*w) * (size_t)*n);
        int count = *n, r = log_bounded_v(t, w, count);
        *n = 0;
        if (r < 0) {
                turnctx_record_failed(t, LAYOUT_HOME_LOG, r);
                return false;
        }
        for (int i = 0; i < count && t->ts.state != TURN_STATE_ENDED; i++)
                turnapproval_scan(t, batch[i].iov_base, batch[i].iov_len);
        return true;
}

/* The frames conn_fill read stay valid until the next fill (conn.h), so a
 * read's STDOUT frames are gathered and written to the log at once: one
 * write per read, not per frame. */
static void pump_relay_io(turn_t *t)
{
        struct iovec batch[RELAY_IO_BATCH];
        int n = 0;
        while (t->io_open && t->ts.state != TURN_STATE_ENDED) {
                frame_t f;
                hg_error_t err = {0};
                int r = conn_next(&t->io, &f, &err);
                if (r == 0)
                        break;
                if (r == 1 && f.type == FRAME_STDOUT && f.length > 0 && !t->term_open) {
                        batch[n++] =
                            (struct iovec){.iov_base = (void *)f.payload, .iov_len = f.length};
                        if (n == RELAY_IO_BATCH && !io_batch_flush(t, batch, &n))
                                return;
                        continue;
                }
                /* Anything else after what came before it. */
                if (!io_batch_flush(t, batch, &n))
                        return;
                if (r < 0)
                        return turnstate_end(&t->ts, "protocol-error", "io: %s", err.message);
                if (f.type != FRAME_STDOUT)
                        return turnstate_end(&t->ts, "protocol-error",
                                             "io: %s is not allowed from the relay",
                                             frame_type_name(f.type));
                if (f.length == 0) {
                        t->ts.io_eof_seen = true;
                        continue;
                }
                terminal_stream(t, &f); /* a terminal turn's */
        }
        (void)io_batch_flush(t, batch, &n);
}

static void on_exit_frame(turn_t *t, const frame_t *f)
{
        hg_error_t err = {0};
        if (t->have_exit || frame_exit_decode(f, &t->exit, &err) < 0)
                return turnstate_end(&t->ts, "protocol-error", "ctl: %s",
                                     t->have_exit ? "a second EXIT" : err.message);
        t->have_exit = true;
        turnctx_record(
            t, "harness.exited",
            json_pack("{s:s, s:i}", "end", frame_end_name(t->exit.end), "value", t->exit.value));
        (void)turnstate_exited(&t->ts, conn_now_ms(), t->spec->linger_s);
        turnctx_save_status(t);
}

static void on_signal_frame(turn_t *t, const frame_t *f)
{
        int signo = 0;
        hg_error_t err = {0};
        if (frame_signal_decode(f, &signo, &err) < 0)
                return turnstate_end(&t->ts, "protocol-error", "ctl: %s", err.message);
        switch (reccap_take(&t->signals, TURN_RELAY_SIGNAL_EVENTS_MAX)) {
        case RECCAP_RECORD:
                turnctx_record(t, "harness.signal",
                               json_pack("{s:i, s:s}", "signal", signo, "from", "relay"));
                break;
        case RECCAP_NOTE:
                turnctx_note_cap(t, "harness.signal", TURN_RELAY_SIGNAL_EVENTS_MAX);
                break;
        case RECCAP_COUNTED:
        default:
                break;
        }
}

static void pump_relay_ctl(turn_t *t)
{
        while (t->ctl_open && t->ts.state != TURN_STATE_ENDED) {
                frame_t f;
                hg_error_t err = {0};
                int r = conn_next(&t->ctl, &f, &err);
                if (r == 0)
                        return;
                if (r < 0)
                        return turnstate_end(&t->ts, "protocol-error", "ctl: %s", err.message);
                switch (f.type) {
                case FRAME_STDERR:
                        if ((r = log_bounded(t, f.payload, f.length)) < 0)
                                return turnctx_record_failed(t, LAYOUT_HOME_LOG, r);
                        break;
                case FRAME_EXIT:
                        on_exit_frame(t, &f);
                        break;
                case FRAME_SIGNAL:
                        on_signal_frame(t, &f);
                        break;
                case FRAME_RUN_RESULT:
                        on_run_result(t, &f);
                        break;
                case FRAME_ASK:
                        /* The approval channel: only a terminal turn has one. */
                        if (!t->spec->terminal.on)
                                return turnstate_end(&t->ts, "protocol-error",
                                                     "ctl: ASK on a turn without a terminal");
                        turnapproval_scan(t, f.payload, f.length);
                        break;
                default:
                        return turnstate_end(&t->ts, "protocol-error",
                                             "ctl: %s is not allowed from the relay",
                                             frame_type_name(f.type));
                }
        }
}

void turnrelay_on_reject(void *userdata, listener_reject_t why, const char *detail)
{
        turn_t *t = userdata;
        /* Anyone on the pod's loopback can connect: past the cap the
         * rejections are only counted (status "rejected"), so connecting in a
         * loop cannot fill hangar-ctl. */
        switch (reccap_take(&t->rejections, TURN_REJECTED_EVENTS_MAX)) {
        case RECCAP_RECORD:
                turnctx_record(
                    t, "relay.rejected",
                    json_pack("{s:s, s:s}", "reason", listener_reject_name(why), "detail", detail));
                break;
        case RECCAP_NOTE:
                turnctx_note_cap(t, "relay.rejected", TURN_REJECTED_EVENTS_MAX);
                break;
        case RECCAP_COUNTED:
        default:
                break;
        }
        /* The right token out of order (a channel taken twice, ctl before
         * io): the real relay never does that, so the token has leaked to
         * someone else (for instance read from the relay's stdin in the
         * moment before it hardened itself). Whoever holds the other
         * connection, the turn is not trusted on: it ends. */
        if (why == LISTENER_REJECT_REPLAYED)
                turnstate_end(&t->ts, "token-misused",
                              "the relay token was presented out of order (%s)", detail);
}

void turnrelay_on_accept(void *userdata, frame_channel_t channel)
{
        turn_t *t = userdata;
        turnctx_record(t, "relay.connected",
                       json_pack("{s:s}", "channel", channel == FRAME_CHANNEL_IO ? "io" : "ctl"));
}

static void after_relay_connected(turn_t *t)
{
        t->io = t->lis.io;
        t->ctl = t->lis.ctl;
        t->lis.have_io = t->lis.have_ctl = false; /* handed over */
        t->io_open = t->ctl_open = true;
        /* The token is spent: out of hangar-ctl, and out of memory but for
         * the listener's copy, which stays until the turn ends to prove
         * itself to (and check) whoever comes with it next: a replay. */
        token_wipe(&t->token, sizeof(t->token));
        _cleanup_free_ char *token_path = record_path(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
        if (!token_path || (unlink(token_path) < 0 && errno != ENOENT))
                turnctx_record_failed(t, "the removal of " LAYOUT_CTL_TOKEN,
                                      token_path ? -errno : -ENOMEM);
        turnctx_record(t, "harness.started", NULL);
        if (t->spec->input[0])
                (void)turnctx_stdin_append(t, t->spec->input, strlen(t->spec->input));
        if (t->spec->close_stdin)
                t->stdin_close_pending = true;
        (void)turnstate_connected(&t->ts);
        turnctx_save_status(t);
}

void turnrelay_step(turn_t *t, int64_t now)
{
        if (t->ts.state == TURN_STATE_WAITING && t->lis.have_ctl)
                after_relay_connected(t);
        turnstate_check_connect(&t->ts, now, t->spec->connect_timeout_s);
        if (!turnstate_active(&t->ts))
                return;
        if (t->io_open) {
                pump_relay_io(t);
                if (t->io.eof && t->io_open) {
                        turnstate_channel_closed(&t->ts, false);
                        t->io_open = false;
                }
        }
        if (t->ctl_open) {
                pump_relay_ctl(t);
                if (t->ctl.eof && t->ctl_open) {
                        turnstate_channel_closed(&t->ts, true);
                        t->ctl_open = false;
                }
        }
        stdin_pump(t);
        turnstate_check_linger(&t->ts, now, t->io_open);
}
