#include "turn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "approvals.h"
#include "base64.h"
#include "cleanup.h"
#include "conn.h"
#include "ctlreq.h"
#include "ctlsock.h"
#include "fileio.h"
#include "grade.h"
#include "jsonx.h"
#include "layout.h"
#include "listener.h"
#include "record.h"
#include "split.h"
#include "terminal.h"
#include "tmux.h"
#include "token.h"

#define CLIENTS_MAX           16
#define STDIN_Q_MAX           (4u * 1024u * 1024u) /* input plus steer commands not yet sent */
#define WATCH_CHUNK           16384u
#define RUN_TIMEOUT_DEFAULT_S 600u
#define DRAIN_GRACE_MS        2000 /* after EXIT, for the rest of stdout */
/* What the relay (the agent's side) can make the driver record is capped:
 * past a cap it is counted (status "capped") and one record.capped event
 * says so, so the record can neither be flooded nor silently thinned. */
#define RELAY_SIGNAL_EVENTS_MAX 64u  /* harness.signal events from the relay */
#define UNREQUESTED_EVENTS_MAX  16u  /* run.unrequested events */
#define REJECTED_EVENTS_MAX     256u /* relay.rejected events */
#define RUN_OUTSTANDING_MAX     64u  /* run requests sent and not yet answered */
#define FAILED_TAIL_MAX         300u /* bytes of a failed tree's output in its reply */
/* A terminal turn's log: a full-screen program redraws without end, so its
 * raw stream is kept up to this much; past it the bytes are counted
 * (status capped.terminal_log_dropped) and the screen is the driver's own. */
#define TERMINAL_LOG_MAX (64u * 1024u * 1024u)
#define TYPE_BASE64_MAX  8192u /* ctl type: one chunk of the pane's keys */

typedef enum turn_state {
        STATE_IDLE,    /* the daemon has run no turn yet */
        STATE_WAITING, /* for the relay's two connections */
        STATE_RUNNING, /* the harness runs */
        STATE_EXITED,  /* the harness ended; runs still served until finish */
        STATE_ENDED,   /* the last turn ended; its record is kept until the next start */
} turn_state_t;

typedef enum client_state {
        CLIENT_READING,   /* the request, until the client's EOF */
        CLIENT_REPLYING,  /* the reply, then close */
        CLIENT_WAIT_RUN,  /* for the relay's RUN_RESULT */
        CLIENT_WATCHING,  /* the log, live, until the turn ends */
        CLIENT_STREAMING, /* a file up to its size at the request (events), then close */
} client_state_t;

/* What a run request is for: how its result is recorded. */
typedef enum run_kind {
        RUN_PLAIN,  /* hangar's own command */
        RUN_TREE,   /* hangar-driver tree: a tree hash by the agent */
        RUN_VERIFY, /* the verify gate's check */
} run_kind_t;

typedef struct client {
        bool used;
        int fd;
        client_state_t state;
        uint8_t *in;
        size_t in_len, in_cap;
        char *out;
        size_t out_len, out_off;
        uint32_t run_id;
        run_kind_t run_kind;
        off_t watch_off;
        uint64_t watch_gen; /* CLIENT_WATCHING: the turn watched (turn_t.gen) */
        int stream_fd;      /* CLIENT_STREAMING: the file; CLIENT_WATCHING: the log */
        off_t stream_end;   /* its size when asked */
} client_t;

typedef struct turn {
        const hg_config_t *cfg;
        turn_spec_t *spec;    /* the current or last turn; NULL while STATE_IDLE */
        turn_spec_t own_spec; /* serve: the spec from the start request */
        bool once;            /* hangar-driver relay: one turn, then exit */
        bool stop;            /* SIGTERM: end the turn, then exit */
        uint64_t gen;         /* turns started by this process */
        char instance[33];    /* this daemon's id, fresh at each start of serve */
        record_t rec;
        token_t token;
        listener_t lis;
        conn_t io, ctl; /* valid from STATE_RUNNING */
        bool io_open, ctl_open, io_eof_seen;
        int ctl_lfd;
        int sigfd;
        turn_state_t state;
        int64_t connect_deadline, linger_deadline;
        int64_t drain_deadline; /* after EXIT: the latest wait for io's STDOUT EOF */
        bool finish_requested;
        bool end_recorded; /* finish_turn has run for this turn */

        uint8_t *stdin_q;
        size_t stdin_len;
        bool stdin_close_pending, stdin_closed;

        frame_exit_t exit;
        bool have_exit;
        char end[32];
        char reason[256];

        approvals_t approvals;
        uint32_t next_run_id;
        uint32_t outstanding[RUN_OUTSTANDING_MAX]; /* run ids sent, not answered */
        size_t n_outstanding;
        client_t clients[CLIENTS_MAX];

        /* Relay-originated events past their caps (reported in status). */
        uint64_t relay_signals, unrequested_results, rejections;
        bool signals_capped, unrequested_capped, approvals_capped, duplicates_noted;
        bool rejections_capped;

        /* A terminal turn (spec->terminal.on): its screen and tmux session. */
        terminal_t term;
        bool term_open;
        uint64_t typed_bytes; /* ctl type: the pane's keys, counted, not recorded */
        uint64_t log_bytes;   /* of the terminal stream, kept in the log */
        uint64_t log_dropped; /* past TERMINAL_LOG_MAX */
        bool log_capped_noted;

        grade_ctx_t *grade; /* serve: sealed grades (docs/graders.md) */
} turn_t;

static const char *state_name(turn_state_t s)
{
        switch (s) {
        case STATE_IDLE:
                return "idle";
        case STATE_WAITING:
                return "waiting-for-relay";
        case STATE_RUNNING:
                return "running";
        case STATE_EXITED:
                return "harness-exited";
        case STATE_ENDED:
        default:
                return "ended";
        }
}

static json_t *status_json(const turn_t *t)
{
        if (!t->spec)
                return json_pack("{s:s, s:s}", "state", state_name(t->state), "instance",
                                 t->instance);
        json_t *j = json_pack("{s:s, s:s, s:s, s:i, s:b, s:b, s:I, s:i}", "turn", t->spec->turn,
                              "mode", spec_mode_name(t->spec->mode), "state", state_name(t->state),
                              "port", t->lis.port, "io", t->io_open, "ctl", t->ctl_open, "rejected",
                              (json_int_t)(t->lis.rejected[LISTENER_REJECT_BAD_TOKEN] +
                                           t->lis.rejected[LISTENER_REJECT_MALFORMED] +
                                           t->lis.rejected[LISTENER_REJECT_REPLAYED] +
                                           t->lis.rejected[LISTENER_REJECT_SLOW] +
                                           t->lis.rejected[LISTENER_REJECT_CLOSED] +
                                           t->lis.rejected[LISTENER_REJECT_FLOOD] +
                                           t->lis.rejected[LISTENER_REJECT_LATE]),
                              "pending_approvals", (int)approvals_pending(&t->approvals));
        if (j)
                json_object_set_new(
                    j, "capped",
                    json_pack("{s:I, s:I, s:I, s:I}", "relay_signals", (json_int_t)t->relay_signals,
                              "unrequested_run_results", (json_int_t)t->unrequested_results,
                              "approvals_over_limit", (json_int_t)t->approvals.over_limit,
                              "approvals_duplicate", (json_int_t)t->approvals.duplicates));
        if (j && t->have_exit)
                json_object_set_new(j, "harness",
                                    json_pack("{s:s, s:i}", "end", frame_end_name(t->exit.end),
                                              "value", t->exit.value));
        if (j && t->state == STATE_ENDED)
                json_object_set_new(j, "end",
                                    json_pack("{s:s, s:s}", "end", t->end, "reason", t->reason));
        if (j && t->term_open) {
                json_t *term = terminal_status(&t->term);
                json_object_set_new(term, "typed_bytes", json_integer((json_int_t)t->typed_bytes));
                json_object_set_new(term, "log_dropped", json_integer((json_int_t)t->log_dropped));
                json_object_set_new(j, "terminal", term);
        }
        if (j)
                json_object_set_new(j, "instance", json_string(t->instance));
        return j;
}

static void end_turn(turn_t *t, const char *end, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A turn is in flight: from its start until it ends. */
static bool turn_active(const turn_t *t)
{
        return t->state == STATE_WAITING || t->state == STATE_RUNNING || t->state == STATE_EXITED;
}

static void end_turn(turn_t *t, const char *end, const char *fmt, ...)
{
        if (!turn_active(t))
                return;
        snprintf(t->end, sizeof(t->end), "%s", end);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(t->reason, sizeof(t->reason), fmt, ap);
        va_end(ap);
        t->state = STATE_ENDED;
}

/* The record could not be written (hangar-ctl or hangar-home full, an I/O
 * error): a turn that goes on unrecorded would be a blind one, so it ends,
 * loudly, as record-failed. */
static void record_failed(turn_t *t, const char *what, int r)
{
        end_turn(t, "record-failed", "cannot record %s: %s", what, strerror(-r));
}

/* An event the turn or the relay caused. */
static void rec(turn_t *t, const char *event, json_t *fields)
{
        if (t->rec.events_fd < 0) { /* no turn: nothing to record it in */
                json_decref(fields);
                return;
        }
        int r = record_event(&t->rec, event, fields);
        if (r < 0)
                record_failed(t, event, r);
}

static void save_status(turn_t *t)
{
        if (!t->spec)
                return;
        _cleanup_json_ json_t *j = status_json(t);
        int r = record_write_json(t->cfg->ctl_path, LAYOUT_CTL_STATUS, j, 0600);
        if (r < 0)
                record_failed(t, LAYOUT_CTL_STATUS, r);
}

static void set_state(turn_t *t, turn_state_t s)
{
        t->state = s;
        save_status(t);
}

/* A cap reached for the first time: one event says so; the count goes on
 * in status. */
static void note_cap(turn_t *t, bool *noted, const char *what, unsigned limit)
{
        if (*noted)
                return;
        *noted = true;
        rec(t, "record.capped", json_pack("{s:s, s:i}", "what", what, "limit", (int)limit));
        save_status(t);
}

/* ---- stdin for the harness ---- */

static int stdin_append(turn_t *t, const char *data, size_t n)
{
        if (t->stdin_closed || t->stdin_close_pending)
                return -EPIPE;
        if (n > STDIN_Q_MAX - t->stdin_len)
                return -ENOBUFS;
        memcpy(t->stdin_q + t->stdin_len, data, n);
        t->stdin_len += n;
        return 0;
}

/* Moves queued stdin into io frames as far as io has room. */
static void stdin_pump(turn_t *t)
{
        if (t->state != STATE_RUNNING || !t->io_open)
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
                rec(t, "harness.stdin-closed", NULL);
        }
}

/* ---- approvals: the harness asks on stdout, hangar (or the mode) decides ---- */

/* Decides a pending request: recorded first (approvals.json, then the
 * approval.decided event), and only then queued for the harness, with room
 * for it checked before anything changes. So a decision that could not be
 * recorded or delivered leaves the request pending for hangar to retry:
 * -EPIPE (the harness's stdin is closed), -ENOBUFS (its input is full),
 * -ENOENT (not pending), or the record's -errno. */
static int decide(turn_t *t, const char *id, bool approve, const char *by)
{
        /* A terminal turn's answers go on its approval channel (ANSWER on
         * ctl, the harness's descriptor 3), never into its terminal. */
        bool term = t->spec->terminal.on;
        if (!term && (t->stdin_closed || t->stdin_close_pending))
                return -EPIPE;
        _cleanup_free_ char *line = approvals_response_line(&t->approvals, id, approve);
        if (!line)
                return approvals_is_pending(&t->approvals, id) ? -ENOMEM : -ENOENT;
        size_t len = strlen(line);
        if (term ? !t->ctl_open || !conn_can_queue(&t->ctl, len) : len > STDIN_Q_MAX - t->stdin_len)
                return -ENOBUFS;
        (void)approvals_set_state(&t->approvals, id, approve ? APPROVAL_APPROVED : APPROVAL_DENIED,
                                  by);
        _cleanup_json_ json_t *j = approvals_json(&t->approvals);
        int r = record_write_json(t->cfg->ctl_path, LAYOUT_CTL_APPROVALS, j, 0600);
        if (r == 0)
                r = record_event(&t->rec, "approval.decided",
                                 json_pack("{s:s, s:s, s:s}", "id", id, "decision",
                                           approve ? "approve" : "deny", "by", by));
        if (r < 0) {
                (void)approvals_set_state(&t->approvals, id, APPROVAL_PENDING, "");
                _cleanup_json_ json_t *back = approvals_json(&t->approvals);
                (void)record_write_json(t->cfg->ctl_path, LAYOUT_CTL_APPROVALS, back, 0600);
                return r == -ENOBUFS || r == -EPIPE || r == -ENOENT ? -EIO : r;
        }
        if (term)
                (void)conn_queue(&t->ctl, FRAME_ANSWER, line, len, NULL, 0); /* fits: checked */
        else
                (void)stdin_append(t, line, len); /* fits: checked above */
        return 0;
}

static void on_approval_request(void *userdata, const char *id, json_t *request)
{
        turn_t *t = userdata;
        rec(t, "approval.requested", json_pack("{s:s, s:O}", "id", id, "request", request));
        _cleanup_json_ json_t *j = approvals_json(&t->approvals);
        int r = record_write_json(t->cfg->ctl_path, LAYOUT_CTL_APPROVALS, j, 0600);
        if (r < 0)
                record_failed(t, LAYOUT_CTL_APPROVALS, r);
        /* deny-risky: the driver itself denies whatever the harness asks. */
        if (t->spec->mode == TURN_MODE_DENY_RISKY && t->state != STATE_ENDED &&
            (r = decide(t, id, false, "driver")) < 0 && r != -EPIPE && r != -ENOBUFS)
                record_failed(t, "a deny-risky decision", r);
        save_status(t);
}

static void client_reply(client_t *c, json_t *j);
static json_t *reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- frames from the relay ---- */

static void relay_lost(turn_t *t, const char *what)
{
        if (t->state == STATE_RUNNING)
                end_turn(t, "relay-lost", "%s before the harness's exit status", what);
}

/* A tree hash's result: the JSON `hangar-driver tree` printed, recorded as
 * the agent's and untrusted (design page 001: the agent could change what a
 * hash in its own container returns). NULL if the output is not one. */
static json_t *tree_record(turn_t *t, const frame_run_result_t *rr, int *ret_errno)
{
        *ret_errno = 0;
        _cleanup_json_ json_t *tree = NULL;
        if (rr->exit.end != FRAME_END_EXITED || rr->exit.value != 0 || rr->truncated ||
            jsonx_load((const char *)rr->tail, rr->tail_len, 4, &tree, NULL) < 0 ||
            !json_is_object(tree) || !json_is_string(json_object_get(tree, "tree")))
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

/* A failed run's output for a reply: at most FAILED_TAIL_MAX bytes of the
 * tail the relay sent (tail_len of them, never more: the frame is not
 * NUL-terminated), printable ASCII only. */
static char *failed_tail_text(const frame_run_result_t *rr)
{
        size_t n = rr->tail_len < FAILED_TAIL_MAX ? rr->tail_len : FAILED_TAIL_MAX;
        char *text = malloc(n + 1);
        if (!text)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                uint8_t b = rr->tail[i];
                text[i] = b >= 0x20 && b < 0x7f ? (char)b : b == '\n' ? ' ' : '?';
        }
        text[n] = '\0';
        return text;
}

static bool take_outstanding(turn_t *t, uint32_t id)
{
        for (size_t i = 0; i < t->n_outstanding; i++)
                if (t->outstanding[i] == id) {
                        t->outstanding[i] = t->outstanding[--t->n_outstanding];
                        return true;
                }
        return false;
}

static void on_run_result(turn_t *t, const frame_t *f)
{
        frame_run_result_t rr;
        hg_error_t err = {0};
        if (frame_run_result_decode(f, &rr, &err) < 0)
                return end_turn(t, "protocol-error", "ctl: %s", err.message);
        /* A result nobody asked for (the relay is the agent's): counted,
         * the first few recorded, never answered to a client. */
        if (!take_outstanding(t, rr.id)) {
                if (++t->unrequested_results <= UNREQUESTED_EVENTS_MAX)
                        rec(t, "run.unrequested", json_pack("{s:I}", "id", (json_int_t)rr.id));
                else
                        note_cap(t, &t->unrequested_capped, "run.unrequested",
                                 UNREQUESTED_EVENTS_MAX);
                return;
        }
        rec(t, "run.finished",
            json_pack("{s:i, s:s, s:i, s:b}", "id", (int)rr.id, "end", frame_end_name(rr.exit.end),
                      "value", rr.exit.value, "truncated", rr.truncated));
        for (size_t i = 0; i < CLIENTS_MAX; i++) {
                client_t *c = &t->clients[i];
                if (!c->used || c->state != CLIENT_WAIT_RUN || c->run_id != rr.id)
                        continue;
                json_t *reply = NULL;
                if (c->run_kind == RUN_TREE) {
                        int r = 0;
                        json_t *tr = tree_record(t, &rr, &r);
                        if (tr && record_event(&t->rec, "tree", json_incref(tr)) == 0) {
                                json_object_set_new(tr, "ok", json_true());
                                reply = tr;
                        } else if (tr || r < 0) {
                                json_decref(tr);
                                reply = reply_error("the tree hash could not be recorded: %s",
                                                    strerror(r < 0 ? -r : ENOSPC));
                        } else {
                                _cleanup_free_ char *out = failed_tail_text(&rr);
                                reply = reply_error("the tree hash failed (%s %d): %s",
                                                    frame_end_name(rr.exit.end), rr.exit.value,
                                                    out ? out : "");
                        }
                } else {
                        int r = 0;
                        if (c->run_kind == RUN_VERIFY)
                                r = record_event(&t->rec, "verify",
                                                 json_pack("{s:s, s:i, s:s, s:b}", "end",
                                                           frame_end_name(rr.exit.end), "value",
                                                           rr.exit.value, "by", "agent", "trusted",
                                                           0));
                        _cleanup_free_ char *tail = base64_encode(rr.tail, rr.tail_len);
                        reply = r < 0 ? reply_error("the verify round could not be recorded: %s",
                                                    strerror(-r))
                                      : json_pack("{s:b, s:i, s:s, s:i, s:b, s:s}", "ok", 1, "id",
                                                  (int)rr.id, "end", frame_end_name(rr.exit.end),
                                                  "value", rr.exit.value, "truncated", rr.truncated,
                                                  "tail_base64", tail ? tail : "");
                }
                client_reply(c, reply);
        }
}

/* A terminal turn's STDOUT: its raw terminal stream. Into the log
 * (bounded), into the screen model; never scanned for approvals (those
 * come on ASK). The model's answers to the terminal's queries go back as
 * input when no tmux answers them. */
static void terminal_stream(turn_t *t, const frame_t *f)
{
        size_t keep = f->length;
        if (t->log_bytes + keep > TERMINAL_LOG_MAX)
                keep = t->log_bytes >= TERMINAL_LOG_MAX ? 0 : TERMINAL_LOG_MAX - t->log_bytes;
        int r = record_log(&t->rec, f->payload, keep);
        if (r < 0)
                return record_failed(t, LAYOUT_HOME_LOG, r);
        t->log_bytes += keep;
        if (keep < f->length) {
                t->log_dropped += f->length - keep;
                t->term.log_capped = true;
                note_cap(t, &t->log_capped_noted, "terminal.log", TERMINAL_LOG_MAX);
        }
        terminal_output(&t->term, f->payload, f->length);
        uint8_t reply[SCREEN_REPLY_MAX];
        size_t n = terminal_take_replies(&t->term, reply, sizeof(reply));
        if (n)
                (void)stdin_append(t, (const char *)reply, n);
}

static void pump_relay_io(turn_t *t)
{
        while (t->io_open && t->state != STATE_ENDED) {
                frame_t f;
                hg_error_t err = {0};
                int r = conn_next(&t->io, &f, &err);
                if (r == 0)
                        return;
                if (r < 0)
                        return end_turn(t, "protocol-error", "io: %s", err.message);
                if (f.type != FRAME_STDOUT)
                        return end_turn(t, "protocol-error", "io: %s is not allowed from the relay",
                                        frame_type_name(f.type));
                if (f.length == 0) {
                        t->io_eof_seen = true;
                        continue;
                }
                if (t->term_open) {
                        terminal_stream(t, &f);
                        continue;
                }
                if ((r = record_log(&t->rec, f.payload, f.length)) < 0)
                        return record_failed(t, LAYOUT_HOME_LOG, r);
                /* A request lost for want of memory would leave the harness
                 * waiting for an answer: the turn ends instead. */
                if (approvals_scan(&t->approvals, f.payload, f.length, on_approval_request, t) < 0)
                        return end_turn(t, "driver-failed",
                                        "out of memory reading an approval request");
                if (t->approvals.over_limit)
                        note_cap(t, &t->approvals_capped, "approval.requested", APPROVALS_MAX);
                if (t->approvals.duplicates)
                        note_cap(t, &t->duplicates_noted, "approval.duplicate", 0);
        }
}

static void pump_relay_ctl(turn_t *t)
{
        while (t->ctl_open && t->state != STATE_ENDED) {
                frame_t f;
                hg_error_t err = {0};
                int r = conn_next(&t->ctl, &f, &err);
                if (r == 0)
                        return;
                if (r < 0)
                        return end_turn(t, "protocol-error", "ctl: %s", err.message);
                switch (f.type) {
                case FRAME_STDERR:
                        if ((r = record_log(&t->rec, f.payload, f.length)) < 0)
                                return record_failed(t, LAYOUT_HOME_LOG, r);
                        break;
                case FRAME_EXIT:
                        if (t->have_exit || frame_exit_decode(&f, &t->exit, &err) < 0)
                                return end_turn(t, "protocol-error", "ctl: %s",
                                                t->have_exit ? "a second EXIT" : err.message);
                        t->have_exit = true;
                        rec(t, "harness.exited",
                            json_pack("{s:s, s:i}", "end", frame_end_name(t->exit.end), "value",
                                      t->exit.value));
                        t->linger_deadline = conn_now_ms() + (int64_t)t->spec->linger_s * 1000;
                        t->drain_deadline = t->linger_deadline > conn_now_ms() + DRAIN_GRACE_MS
                                                ? t->linger_deadline
                                                : conn_now_ms() + DRAIN_GRACE_MS;
                        set_state(t, STATE_EXITED);
                        break;
                case FRAME_SIGNAL: {
                        int signo = 0;
                        if (frame_signal_decode(&f, &signo, &err) < 0)
                                return end_turn(t, "protocol-error", "ctl: %s", err.message);
                        if (++t->relay_signals <= RELAY_SIGNAL_EVENTS_MAX)
                                rec(t, "harness.signal",
                                    json_pack("{s:i, s:s}", "signal", signo, "from", "relay"));
                        else
                                note_cap(t, &t->signals_capped, "harness.signal",
                                         RELAY_SIGNAL_EVENTS_MAX);
                        break;
                }
                case FRAME_RUN_RESULT:
                        on_run_result(t, &f);
                        break;
                case FRAME_ASK:
                        /* The approval channel: only a terminal turn has one. */
                        if (!t->spec->terminal.on)
                                return end_turn(t, "protocol-error",
                                                "ctl: ASK on a turn without a terminal");
                        if (approvals_scan(&t->approvals, f.payload, f.length, on_approval_request,
                                           t) < 0)
                                return end_turn(t, "driver-failed",
                                                "out of memory reading an approval request");
                        if (t->approvals.over_limit)
                                note_cap(t, &t->approvals_capped, "approval.requested",
                                         APPROVALS_MAX);
                        if (t->approvals.duplicates)
                                note_cap(t, &t->duplicates_noted, "approval.duplicate", 0);
                        break;
                default:
                        return end_turn(t, "protocol-error",
                                        "ctl: %s is not allowed from the relay",
                                        frame_type_name(f.type));
                }
        }
}

/* ---- the listener's callbacks ---- */

static void on_reject(void *userdata, listener_reject_t why, const char *detail)
{
        turn_t *t = userdata;
        /* Anyone on the pod's loopback can connect: past the cap the
         * rejections are only counted (status "rejected"), so connecting in a
         * loop cannot fill hangar-ctl. */
        if (++t->rejections <= REJECTED_EVENTS_MAX)
                rec(t, "relay.rejected",
                    json_pack("{s:s, s:s}", "reason", listener_reject_name(why), "detail", detail));
        else
                note_cap(t, &t->rejections_capped, "relay.rejected", REJECTED_EVENTS_MAX);
        /* The right token out of order (a channel taken twice, ctl before
         * io): the real relay never does that, so the token has leaked to
         * someone else (for instance read from the relay's stdin in the
         * moment before it hardened itself). Whoever holds the other
         * connection, the turn is not trusted on: it ends. */
        if (why == LISTENER_REJECT_REPLAYED)
                end_turn(t, "token-misused", "the relay token was presented out of order (%s)",
                         detail);
}

static void on_accept(void *userdata, frame_channel_t channel)
{
        turn_t *t = userdata;
        rec(t, "relay.connected",
            json_pack("{s:s}", "channel", channel == FRAME_CHANNEL_IO ? "io" : "ctl"));
}

/* ---- control clients (hangar, through pods/exec into hangar-driver) ---- */

static void client_close(client_t *c)
{
        if (c->fd >= 0)
                (void)close(c->fd);
        if (c->stream_fd >= 0)
                (void)close(c->stream_fd);
        /* A reply may have held the token (ctl token), a request steer text. */
        if (c->in)
                token_wipe(c->in, c->in_cap);
        if (c->out)
                token_wipe(c->out, c->out_len);
        free(c->in);
        free(c->out);
        *c = (client_t){.fd = -1, .stream_fd = -1};
}

/* The next bytes to send to c: a copy of data (the client's output buffer
 * replaced). */
static int client_set_out(client_t *c, const char *data, size_t len)
{
        char *out = malloc(len);
        if (!out)
                return -ENOMEM;
        memcpy(out, data, len);
        free(c->out);
        c->out = out, c->out_len = len;
        return 0;
}

static void client_reply(client_t *c, json_t *j)
{
        _cleanup_json_ json_t *owned = j;
        if (c->out)
                token_wipe(c->out, c->out_len);
        free(c->out);
        char *out = owned ? jsonx_dumps(owned, JSON_COMPACT) : NULL;
        size_t len;
        if (!out) {
                out = strdup("{\"ok\":false,\"error\":\"out of memory\"}\n");
                len = out ? strlen(out) : 0;
        } else {
                len = strlen(out);
                out[len++] = '\n';
        }
        c->out = out, c->out_len = len;
        c->out_off = 0;
        c->state = CLIENT_REPLYING;
}

static json_t *reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *reply_error(const char *fmt, ...)
{
        char msg[ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static json_t *start_run(turn_t *t, client_t *c, json_t *req, json_t *argv_j, run_kind_t kind);

/* tree: `hangar-driver tree --turn ID CWD` in the agent's container. */
static json_t *op_tree(turn_t *t, client_t *c, json_t *req)
{
        _cleanup_json_ json_t *argv_j = json_pack("[s, s, s, s, s]", "hangar-driver", "tree",
                                                  "--turn", t->spec->turn, t->spec->cwd);
        return start_run(t, c, req, argv_j, RUN_TREE);
}

/* verify: the job's check, through `hangar-driver gate` (the agent's rounds file). */
static json_t *op_verify(turn_t *t, client_t *c, json_t *req)
{
        json_t *user = json_object_get(req, "argv");
        if (!json_is_array(user) || json_array_size(user) == 0 ||
            json_array_size(user) > FRAME_RUN_MAX_ARGS - 5)
                return reply_error("\"argv\" must be 1-%u strings", FRAME_RUN_MAX_ARGS - 5);
        _cleanup_json_ json_t *argv_j =
            json_pack("[s, s, s, s, s]", "hangar-driver", "gate", "--turn", t->spec->turn, "--");
        if (!argv_j || json_array_extend(argv_j, user) < 0)
                return reply_error("out of memory");
        return start_run(t, c, req, argv_j, RUN_VERIFY);
}

static json_t *op_run(turn_t *t, client_t *c, json_t *req)
{
        return start_run(t, c, req, json_object_get(req, "argv"), RUN_PLAIN);
}

static json_t *start_run(turn_t *t, client_t *c, json_t *req, json_t *argv_j, run_kind_t kind)
{
        if (t->state != STATE_RUNNING && t->state != STATE_EXITED)
                return reply_error("no relay: the turn is %s", state_name(t->state));
        json_t *timeout_j = json_object_get(req, "timeout_s");
        json_t *tail_j = json_object_get(req, "tail_max");
        size_t argc = json_array_size(argv_j);
        if (!json_is_array(argv_j) || argc == 0 || argc > FRAME_RUN_MAX_ARGS)
                return reply_error("\"argv\" must be 1-%u strings", FRAME_RUN_MAX_ARGS);
        _cleanup_free_ char **argv = calloc(argc + 1, sizeof(char *));
        if (!argv)
                return reply_error("out of memory");
        for (size_t i = 0; i < argc; i++)
                if (!(argv[i] = (char *)json_string_value(json_array_get(argv_j, i))))
                        return reply_error("\"argv\" must be strings");
        json_int_t timeout_s = timeout_j ? json_integer_value(timeout_j) : RUN_TIMEOUT_DEFAULT_S;
        json_int_t tail_max = tail_j ? json_integer_value(tail_j) : 16384;
        if ((timeout_j && !json_is_integer(timeout_j)) || timeout_s < 1 ||
            timeout_s > FRAME_RUN_TIMEOUT_MAX_MS / 1000)
                return reply_error("\"timeout_s\" must be 1-%u", FRAME_RUN_TIMEOUT_MAX_MS / 1000);
        if ((tail_j && !json_is_integer(tail_j)) || tail_max < 0 || tail_max > FRAME_RUN_TAIL_MAX)
                return reply_error("\"tail_max\" must be 0-%u", FRAME_RUN_TAIL_MAX);
        _cleanup_free_ uint8_t *payload = NULL;
        uint32_t len = 0, id = ++t->next_run_id;
        if (frame_run_encode(id, (uint32_t)timeout_s * 1000, (uint32_t)tail_max, argv, &payload,
                             &len) < 0)
                return reply_error("the command does not fit in a run request");
        if (!conn_can_queue(&t->ctl, len))
                return reply_error("the relay is not reading; try again");
        if (t->n_outstanding == RUN_OUTSTANDING_MAX)
                return reply_error("%u run requests are waiting for the relay; try again",
                                   RUN_OUTSTANDING_MAX);
        /* Recorded before it is sent: a run hangar cannot see in the record
         * does not run. */
        int r = record_event(&t->rec, "run.requested",
                             json_pack("{s:i, s:O, s:i}", "id", (int)id, "argv", argv_j,
                                       "timeout_s", (int)timeout_s));
        if (r < 0)
                return reply_error("the run request could not be recorded: %s", strerror(-r));
        (void)conn_queue(&t->ctl, FRAME_RUN, payload, len, NULL, 0);
        t->outstanding[t->n_outstanding++] = id;
        c->run_id = id;
        c->run_kind = kind;
        c->state = CLIENT_WAIT_RUN;
        return NULL;
}

static json_t *op_signal(turn_t *t, json_t *req)
{
        static const struct {
                const char *name;
                int signo;
        } names[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},  {"KILL", SIGKILL},
                     {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},  {"CONT", SIGCONT},
                     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"WINCH", SIGWINCH}};
        const char *name = json_string_value(json_object_get(req, "signal"));
        int signo = 0;
        for (size_t i = 0; name && i < ARRAY_SIZE(names); i++)
                if (strcmp(name, names[i].name) == 0)
                        signo = names[i].signo;
        if (!signo)
                return reply_error(
                    "\"signal\" must be one of HUP INT QUIT KILL USR1 USR2 TERM CONT "
                    "STOP TSTP WINCH");
        if (t->state != STATE_RUNNING)
                return reply_error("the harness is not running (%s)", state_name(t->state));
        uint8_t b = (uint8_t)signo;
        if (!conn_can_queue(&t->ctl, 1))
                return reply_error("the relay is not reading; try again");
        int r = record_event(&t->rec, "harness.signal",
                             json_pack("{s:i, s:s}", "signal", signo, "from", "hangar"));
        if (r < 0)
                return reply_error("the signal could not be recorded: %s", strerror(-r));
        (void)conn_queue(&t->ctl, FRAME_SIGNAL, &b, 1, NULL, 0);
        return json_pack("{s:b}", "ok", 1);
}

/* ctl events: a header line, then events.jsonl as it is now, streamed in
 * chunks (never one reply in memory: the file has no size bound but the
 * volume's). */
static json_t *op_events(turn_t *t, client_t *c, const ctlreq_t *q)
{
        if (!t->spec)
                return reply_error("no turn yet: no events");
        _cleanup_free_ char *path = record_path(t->cfg->ctl_path, LAYOUT_CTL_EVENTS);
        _cleanup_close_ int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return reply_error("cannot read %s", LAYOUT_CTL_EVENTS);
        if (q->from > (uint64_t)st.st_size)
                return reply_error("\"from\" %llu is past the events' end (%lld bytes)",
                                   (unsigned long long)q->from, (long long)st.st_size);
        client_reply(c, json_pack("{s:b, s:s, s:s, s:I, s:I}", "ok", 1, "stream", "events", "turn",
                                  t->spec->turn, "from", (json_int_t)q->from, "bytes",
                                  (json_int_t)st.st_size));
        c->stream_fd = TAKE_FD(fd);
        c->stream_end = st.st_size;
        c->watch_off = (off_t)q->from;
        c->state = CLIENT_STREAMING;
        return NULL;
}

/* ctl approvals: a header line, then the document (it can be large: 256
 * requests of up to 64 KiB each), written out as the client reads it. */
static json_t *op_approvals(turn_t *t, client_t *c)
{
        _cleanup_json_ json_t *doc =
            json_pack("{s:b, s:o}", "ok", 1, "approvals", approvals_json(&t->approvals));
        _cleanup_free_ char *body = doc ? jsonx_dumps(doc, JSON_COMPACT) : NULL;
        static const char header[] = "{\"ok\":true,\"stream\":\"approvals\"}\n";
        size_t blen = body ? strlen(body) : 0;
        char *out = body ? malloc(sizeof(header) - 1 + blen + 1) : NULL;
        if (!out)
                return reply_error("out of memory");
        memcpy(out, header, sizeof(header) - 1);
        memcpy(out + sizeof(header) - 1, body, blen);
        out[sizeof(header) - 1 + blen] = '\n';
        free(c->out);
        c->out = out;
        c->out_len = sizeof(header) - 1 + blen + 1;
        c->out_off = 0;
        c->state = CLIENT_REPLYING;
        return NULL;
}

/* ctl watch: a header line, then the turn's log from byte "from" on, live
 * until the turn ends. The log is the record (hangar-home/run/log): a
 * watcher that dropped comes back with the offset it had got to and loses
 * nothing. Each watcher reads its own descriptor of the turn's log, so a
 * watcher of a turn that has ended still gets the rest of it. */
static json_t *op_watch(turn_t *t, client_t *c, const ctlreq_t *q)
{
        if (!t->spec)
                return reply_error("no turn yet: nothing to watch");
        _cleanup_free_ char *path = record_path(t->cfg->home_path, LAYOUT_HOME_LOG);
        _cleanup_close_ int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0)
                return reply_error("cannot read the turn's log");
        if (q->from > (uint64_t)st.st_size)
                return reply_error("\"from\" %llu is past the log's end (%lld bytes)",
                                   (unsigned long long)q->from, (long long)st.st_size);
        client_reply(c, json_pack("{s:b, s:s, s:s, s:I}", "ok", 1, "stream", "log", "turn",
                                  t->spec->turn, "from", (json_int_t)q->from));
        c->stream_fd = TAKE_FD(fd);
        c->watch_off = (off_t)q->from;
        c->watch_gen = t->gen;
        c->state = CLIENT_WATCHING; /* the header line first, then the log */
        return NULL;
}

static int start_turn(turn_t *t, hg_error_t *err);
static int gate(const hg_config_t *cfg, const turn_spec_t *spec, const char **ret_outcome,
                char *reason, size_t reason_size);

/* ctl start: a turn is a request to the daemon. The reply carries what
 * hangar needs to start the relay: the turn, the token, the port. One turn
 * at a time: a second is refused while the first is in flight. */
static json_t *op_start(turn_t *t, client_t *c, const ctlreq_t *q)
{
        (void)c;
        if (t->once)
                return reply_error("this driver runs one turn (hangar-driver relay): no start");
        if (t->stop)
                return reply_error("the daemon is stopping");
        if (turn_active(t))
                return reply_error("turn \"%s\" is in flight: one turn at a time", t->spec->turn);
        if (grade_busy(t->grade))
                return reply_error("a grade is in flight: no turn until it is finished");
        turn_spec_t spec;
        hg_error_t err = {0};
        if (spec_parse(q->spec, q->spec_len, &spec, &err) < 0)
                return json_pack("{s:b, s:s, s:s, s:i}", "ok", 0, "error", err.message, "driver",
                                 "usage", "status", TURN_EXIT_USAGE);
        const char *outcome = NULL;
        char reason[ERROR_MESSAGE_MAX];
        int status = gate(t->cfg, &spec, &outcome, reason, sizeof(reason));
        if (status >= 0) {
                spec_free(&spec);
                return json_pack("{s:b, s:s, s:s, s:s, s:i}", "ok", 0, "error", reason, "driver",
                                 outcome, "reason", reason, "status", status);
        }
        if (t->spec == &t->own_spec)
                spec_free(&t->own_spec);
        t->own_spec = spec;
        t->spec = &t->own_spec;
        if (start_turn(t, &err) < 0)
                return json_pack("{s:b, s:s, s:s, s:i}", "ok", 0, "error", err.message, "driver",
                                 "failed", "status", TURN_EXIT_FAILED);
        char hex[TOKEN_HEX_LEN + 1];
        token_to_hex(&t->token, hex);
        json_t *j =
            json_pack("{s:b, s:s, s:s, s:i, s:s, s:I}", "ok", 1, "turn", t->spec->turn, "token",
                      hex, "port", t->lis.port, "instance", t->instance, "gen", (json_int_t)t->gen);
        token_wipe(hex, sizeof(hex));
        return j;
}

/* Steer text is one line for the harness's stdin: a newline (or any other
 * control character but tab) would let it carry a second line, such as a
 * forged approval_response. Refused, not escaped: the harness gets exactly
 * what hangar sent or nothing. */
static bool steer_text_ok(const char *text, size_t len)
{
        if (strlen(text) != len)
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char b = (unsigned char)text[i];
                if ((b < 0x20 && b != '\t') || b == 0x7f)
                        return false;
        }
        return true;
}

/* ---- a terminal turn's ops (docs/terminal.md) ---- */

static json_t *op_screen(turn_t *t)
{
        if (!t->term_open)
                return reply_error("turn \"%s\" has no terminal", t->spec->turn);
        bool from_tmux = false;
        size_t len = 0;
        _cleanup_free_ char *text = terminal_screen(&t->term, &from_tmux, &len);
        if (!text)
                return reply_error("out of memory");
        return json_pack("{s:b, s:s%, s:s, s:I, s:I}", "ok", 1, "screen", text, len, "source",
                         from_tmux ? "tmux" : "driver", "rows", (json_int_t)t->term.spec.rows,
                         "cols", (json_int_t)t->term.spec.cols);
}

/* Keys are hangar's commands, like steer: recorded first, typed only if
 * recorded. */
static json_t *op_send_keys(turn_t *t, json_t *req)
{
        if (!t->term_open)
                return reply_error("turn \"%s\" has no terminal", t->spec->turn);
        if (t->state != STATE_RUNNING && t->state != STATE_WAITING)
                return reply_error("the harness is not running (%s)", state_name(t->state));
        if (t->stdin_closed || t->stdin_close_pending)
                return reply_error("the terminal's input is closed");
        json_t *keys_j = json_object_get(req, "keys");
        size_t n = json_array_size(keys_j);
        if (n > TMUX_KEY_ARGS_MAX)
                return reply_error("send-keys takes at most %u keys", TMUX_KEY_ARGS_MAX);
        char *keys[TMUX_KEY_ARGS_MAX];
        for (size_t i = 0; i < n; i++)
                keys[i] = (char *)json_string_value(json_array_get(keys_j, i));
        uint8_t bytes[TMUX_KEYS_MAX];
        size_t len = 0;
        hg_error_t err = {0};
        if (tmux_keys_encode(keys, n, bytes, sizeof(bytes), &len, &err) < 0)
                return reply_error("%s", err.message);
        if (len > STDIN_Q_MAX - t->stdin_len)
                return reply_error("too much input waiting");
        int r = record_event(&t->rec, "terminal.keys", json_pack("{s:O}", "keys", keys_j));
        if (r < 0)
                return reply_error("the keys could not be recorded: %s", strerror(-r));
        /* Straight to the harness on io, with or without tmux: one path for
         * hangar's keys, whatever tmux's pane does with its own. */
        (void)stdin_append(t, (const char *)bytes, len); /* fits: checked above */
        return json_pack("{s:b, s:I}", "ok", 1, "bytes", (json_int_t)len);
}

static json_t *op_resize(turn_t *t, json_t *req)
{
        if (!t->term_open)
                return reply_error("turn \"%s\" has no terminal", t->spec->turn);
        json_int_t rows = json_integer_value(json_object_get(req, "rows"));
        json_int_t cols = json_integer_value(json_object_get(req, "cols"));
        if (rows < FRAME_TERM_ROWS_MIN || rows > FRAME_TERM_ROWS_MAX ||
            cols < FRAME_TERM_COLS_MIN || cols > FRAME_TERM_COLS_MAX)
                return reply_error("resize: rows %u-%u, cols %u-%u", FRAME_TERM_ROWS_MIN,
                                   FRAME_TERM_ROWS_MAX, FRAME_TERM_COLS_MIN, FRAME_TERM_COLS_MAX);
        if (t->state != STATE_RUNNING)
                return reply_error("the harness is not running (%s)", state_name(t->state));
        if (!conn_can_queue(&t->ctl, FRAME_RESIZE_SIZE))
                return reply_error("the relay is not reading; try again");
        int r = record_event(&t->rec, "terminal.resize",
                             json_pack("{s:I, s:I}", "rows", rows, "cols", cols));
        if (r < 0)
                return reply_error("the resize could not be recorded: %s", strerror(-r));
        hg_error_t err = {0};
        if (terminal_resize(&t->term, (unsigned)rows, (unsigned)cols, &err) < 0)
                return reply_error("%s", err.message);
        uint8_t p[FRAME_RESIZE_SIZE];
        frame_resize_encode(&(frame_resize_t){.rows = (uint16_t)rows, .cols = (uint16_t)cols}, p);
        (void)conn_queue(&t->ctl, FRAME_RESIZE, p, sizeof(p), NULL, 0);
        save_status(t);
        return json_pack("{s:b}", "ok", 1);
}

/* ctl type: the tmux pane's keys (hangar typing in an attached tmux), as
 * they came; counted in status, not recorded one by one. */
static json_t *op_type(turn_t *t, json_t *req)
{
        if (!t->term_open)
                return reply_error("turn \"%s\" has no terminal", t->spec->turn);
        if (t->state != STATE_RUNNING && t->state != STATE_WAITING)
                return reply_error("the harness is not running (%s)", state_name(t->state));
        json_t *data_j = json_object_get(req, "data_base64");
        if (json_string_length(data_j) > TYPE_BASE64_MAX)
                return reply_error("type: at most %u base64 characters", TYPE_BASE64_MAX);
        _cleanup_free_ char *bytes = NULL;
        size_t n = 0;
        hg_error_t err = {0};
        if (base64_decode(json_string_value(data_j), &bytes, &n, &err) < 0)
                return reply_error("type: %s", err.message);
        int r = stdin_append(t, bytes, n);
        if (r < 0)
                return reply_error("%s", r == -EPIPE ? "the terminal's input is closed"
                                                     : "too much input waiting");
        t->typed_bytes += n;
        return json_pack("{s:b}", "ok", 1);
}

/* One request: a JSON object {"op": ..., ...}. NULL: the reply comes later. */
static json_t *dispatch(turn_t *t, client_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        const char *op = ctlreq_op_name(q->op);
        if (q->op == CTLREQ_PING)
                return json_pack("{s:b, s:s, s:s, s:s?, s:i}", "ok", 1, "instance", t->instance,
                                 "state", state_name(t->state), "turn",
                                 t->spec ? t->spec->turn : NULL, "pid", (int)getpid());
        if (q->op == CTLREQ_START)
                return op_start(t, c, q);
        if (q->op == CTLREQ_GRADE_BEGIN || q->op == CTLREQ_GRADE_FINISH ||
            q->op == CTLREQ_GRADE_SHOW)
                return t->grade ? grade_ctl(t->grade, q, turn_active(t))
                                : reply_error("grades are the daemon's (hangar-driver serve)");
        /* --turn ID: this request is for that turn, and no other. */
        if (q->turn && (!t->spec || strcmp(q->turn, t->spec->turn) != 0))
                return reply_error("no turn \"%s\" here (%s%s)", q->turn,
                                   t->spec ? "the daemon's turn is " : "no turn yet",
                                   t->spec ? t->spec->turn : "");
        if (q->op == CTLREQ_STATUS) {
                json_t *s = status_json(t);
                json_object_set_new(s, "ok", json_true());
                return s;
        }
        if (q->op == CTLREQ_WATCH)
                return op_watch(t, c, q);
        if (q->op == CTLREQ_EVENTS)
                return op_events(t, c, q);
        if (!t->spec)
                return reply_error("no turn yet: %s needs one (ctl start)", op);
        if (q->op == CTLREQ_APPROVALS)
                return op_approvals(t, c);
        if (q->op == CTLREQ_SCREEN)
                return op_screen(t);
        if (!turn_active(t))
                return reply_error("turn \"%s\" has ended: %s needs a turn in flight",
                                   t->spec->turn, op);
        if (q->op == CTLREQ_SEND_KEYS)
                return op_send_keys(t, req);
        if (q->op == CTLREQ_RESIZE)
                return op_resize(t, req);
        if (q->op == CTLREQ_TYPE)
                return op_type(t, req);
        if (strcmp(op, "token") == 0) {
                if (t->state != STATE_WAITING)
                        return reply_error("the relay has connected; the token is spent");
                char hex[TOKEN_HEX_LEN + 1];
                token_to_hex(&t->token, hex);
                json_t *j =
                    json_pack("{s:b, s:s, s:i, s:s, s:I}", "ok", 1, "token", hex, "port",
                              t->lis.port, "instance", t->instance, "gen", (json_int_t)t->gen);
                token_wipe(hex, sizeof(hex));
                return j;
        }
        if (strcmp(op, "approve") == 0 || strcmp(op, "deny") == 0) {
                const char *id = json_string_value(json_object_get(req, "id"));
                if (!id || !approvals_is_pending(&t->approvals, id))
                        return reply_error("no pending approval with that id");
                int r = decide(t, id, op[0] == 'a', "hangar");
                if (r == -EPIPE)
                        return reply_error("the harness's stdin is closed: it cannot receive a "
                                           "decision (the request stays pending)");
                if (r == -ENOBUFS)
                        return reply_error("the harness's input is full: the decision could not "
                                           "be queued (the request stays pending; try again)");
                if (r < 0)
                        return reply_error("the decision could not be recorded: %s (the request "
                                           "stays pending)",
                                           strerror(-r));
                return json_pack("{s:b}", "ok", 1);
        }
        if (strcmp(op, "steer") == 0) {
                json_t *text_j = json_object_get(req, "text");
                const char *text = json_string_value(text_j);
                if (!text)
                        return reply_error("\"text\" is required");
                size_t len = json_string_length(text_j);
                if (!steer_text_ok(text, len))
                        return reply_error("steer text is one line: no newline or other control "
                                           "character");
                if (t->stdin_closed || t->stdin_close_pending)
                        return reply_error("the harness's stdin is closed");
                if (len + 1 > STDIN_Q_MAX - t->stdin_len)
                        return reply_error("too much input waiting");
                /* hangar's commands are kept in hangar-ctl, with the events:
                 * recorded first, sent only if recorded. */
                int r = record_event(&t->rec, "harness.steer", json_pack("{s:s}", "text", text));
                if (r < 0)
                        return reply_error("the steer command could not be recorded: %s",
                                           strerror(-r));
                (void)stdin_append(t, text, len);
                /* On a terminal the end of a line is the Enter key. */
                (void)stdin_append(t, t->spec->terminal.on ? "\r" : "\n", 1);
                return json_pack("{s:b}", "ok", 1);
        }
        if (strcmp(op, "close-stdin") == 0) {
                if (!t->stdin_closed)
                        t->stdin_close_pending = true;
                return json_pack("{s:b}", "ok", 1);
        }
        if (strcmp(op, "signal") == 0)
                return op_signal(t, req);
        if (strcmp(op, "run") == 0)
                return op_run(t, c, req);
        if (strcmp(op, "tree") == 0)
                return op_tree(t, c, req);
        if (strcmp(op, "verify") == 0)
                return op_verify(t, c, req);
        if (strcmp(op, "finish") == 0) {
                if (t->state == STATE_RUNNING)
                        return reply_error("the harness is still running; signal it first");
                t->finish_requested = true;
                return json_pack("{s:b}", "ok", 1);
        }
        return reply_error("unknown op \"%.40s\"", op);
}

/* Room for more of a request: the buffer grows (to CTLSOCK_REQUEST_MAX;
 * a start request carries the spec), the old one wiped: it may hold the
 * run key. */
static int client_grow(client_t *c)
{
        if (c->in_len < c->in_cap)
                return 0;
        if (c->in_cap >= CTLSOCK_REQUEST_MAX)
                return -EFBIG;
        size_t cap = c->in_cap ? c->in_cap * 4 : CTLSOCK_REQUEST_MIN;
        if (cap > CTLSOCK_REQUEST_MAX)
                cap = CTLSOCK_REQUEST_MAX;
        uint8_t *in = malloc(cap);
        if (!in)
                return -ENOMEM;
        if (c->in) {
                memcpy(in, c->in, c->in_len);
                token_wipe(c->in, c->in_cap);
                free(c->in);
        }
        c->in = in;
        c->in_cap = cap;
        return 0;
}

static void client_read(turn_t *t, client_t *c)
{
        for (;;) {
                int g = client_grow(c);
                if (g < 0) {
                        client_reply(c, g == -EFBIG ? reply_error("request over %u bytes",
                                                                  CTLSOCK_REQUEST_MAX)
                                                    : reply_error("out of memory"));
                        return;
                }
                ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
                if (n > 0) {
                        c->in_len += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                break; /* EOF (or an error): the request is complete */
        }
        ctlreq_t q;
        hg_error_t err = {0};
        if (ctlreq_parse((const char *)c->in, c->in_len, &q, &err) < 0) {
                client_reply(c, reply_error("bad request: %s", err.message));
                return;
        }
        json_t *reply = dispatch(t, c, &q);
        ctlreq_free(&q);
        if (reply)
                client_reply(c, reply);
}

/* Writes what it can; a watcher then gets the log from where it is. */
static void client_write(turn_t *t, client_t *c)
{
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
                if (n > 0) {
                        c->out_off += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                return client_close(c);
        }
        if (c->state == CLIENT_WATCHING) {
                char buf[WATCH_CHUNK];
                ssize_t n = pread(c->stream_fd, buf, sizeof(buf), c->watch_off);
#if defined(__GNUC__) && !defined(__clang__)
/* gcc 12's analyzer loses the buffer client_set_out stored in c->out (c is
 * an element of t->clients) and reports it leaked here; client_close and the
 * next client_set_out free it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
                if (n > 0) {
                        if (client_set_out(c, buf, (size_t)n) < 0)
                                return client_close(c);
                        c->out_off = 0;
                        c->watch_off += n;
                        return;
                }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
                /* All of the log is out and nothing more will come. */
                if (c->watch_gen != t->gen || !turn_active(t))
                        client_close(c);
                return;
        }
        if (c->state == CLIENT_STREAMING) {
                char buf[WATCH_CHUNK];
                off_t left = c->stream_end - c->watch_off;
                ssize_t n = left <= 0
                                ? 0
                                : pread(c->stream_fd, buf,
                                        left < (off_t)sizeof(buf) ? (size_t)left : sizeof(buf),
                                        c->watch_off);
                if (n <= 0)
                        return client_close(c);
                if (client_set_out(c, buf, (size_t)n) < 0)
                        return client_close(c);
                c->out_off = 0;
                c->watch_off += n;
                return;
        }
        if (c->state == CLIENT_REPLYING)
                client_close(c);
}

static void accept_clients(turn_t *t)
{
        for (;;) {
                int fd = -1;
                uid_t peer = 0;
                int r = ctlsock_accept(t->ctl_lfd, geteuid(), &fd, &peer);
                if (r == -EAGAIN)
                        return;
                if (r == -EPERM) {
                        rec(t, "ctl.refused", json_pack("{s:i}", "uid", (int)peer));
                        continue;
                }
                if (r < 0)
                        return;
                client_t *c = NULL;
                for (size_t i = 0; i < CLIENTS_MAX && !c; i++)
                        if (!t->clients[i].used)
                                c = &t->clients[i];
                if (!c) {
                        (void)close(fd);
                        continue;
                }
                c->used = true;
                c->fd = fd;
                c->stream_fd = -1;
                c->state = CLIENT_READING;
        }
}

/* ---- the loop ---- */

enum { P_SIG, P_CTLSOCK, P_IO, P_CTL, P_CLIENTS, P_LISTENER = P_CLIENTS + CLIENTS_MAX };
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

static void after_relay_connected(turn_t *t)
{
        t->io = t->lis.io;
        t->ctl = t->lis.ctl;
        t->lis.have_io = t->lis.have_ctl = false; /* handed over */
        t->io_open = t->ctl_open = true;
        /* The token is spent: out of memory and out of hangar-ctl. */
        token_wipe(&t->token, sizeof(t->token));
        token_wipe(&t->lis.token, sizeof(t->lis.token));
        _cleanup_free_ char *token_path = record_path(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
        if (!token_path || (unlink(token_path) < 0 && errno != ENOENT))
                record_failed(t, "the removal of " LAYOUT_CTL_TOKEN, token_path ? -errno : -ENOMEM);
        rec(t, "harness.started", NULL);
        if (t->spec->input[0])
                (void)stdin_append(t, t->spec->input, strlen(t->spec->input));
        if (t->spec->close_stdin)
                t->stdin_close_pending = true;
        set_state(t, STATE_RUNNING);
}

/* The checks of a turn in flight, each time round the loop. */
static void turn_step(turn_t *t, int64_t now)
{
        if (t->state == STATE_WAITING && t->lis.have_ctl)
                after_relay_connected(t);
        if (t->state == STATE_WAITING && now >= t->connect_deadline)
                return end_turn(t, "relay-never-connected", "no relay within %u s",
                                t->spec->connect_timeout_s);
        if (t->io_open) {
                pump_relay_io(t);
                if (t->io.eof && t->io_open) {
                        relay_lost(t, "io closed");
                        t->io_open = false;
                }
        }
        if (t->ctl_open) {
                pump_relay_ctl(t);
                if (t->ctl.eof && t->ctl_open) {
                        relay_lost(t, "ctl closed");
                        t->ctl_open = false;
                        if (t->state == STATE_EXITED)
                                end_turn(t, "done", "the relay closed ctl");
                }
        }
        stdin_pump(t);
        if (t->state == STATE_EXITED && (t->finish_requested || now >= t->linger_deadline)) {
                /* io and ctl are not ordered: the STDOUT EOF the relay sent
                 * before EXIT may still be on its way. Wait for it (bounded)
                 * so the log is whole. */
                if (t->io_eof_seen || !t->io_open || now >= t->drain_deadline)
                        end_turn(t, "done", "%s",
                                 t->finish_requested ? "finished by hangar" : "linger elapsed");
        }
}

static json_t *exit_json(const turn_t *t)
{
        json_t *j =
            json_pack("{s:s, s:s, s:s}", "turn", t->spec->turn, "end", t->end, "reason", t->reason);
        if (j && t->have_exit)
                json_object_set_new(j, "harness",
                                    json_pack("{s:s, s:i}", "end", frame_end_name(t->exit.end),
                                              "value", t->exit.value));
        return j;
}

static void unlink_in(const char *dir, const char *name)
{
        _cleanup_free_ char *path = record_path(dir, name);
        if (path)
                (void)unlink(path);
}

/* The end of a turn: its record (run/exit.json, the last event, status),
 * then what it held goes: the relay's connections (the relay sees ctl close
 * and ends), the listener, the token, the port file. Watchers keep their
 * own descriptor of the log and get the rest of it. */
static void finish_turn(turn_t *t)
{
        _cleanup_json_ json_t *exit_j = exit_json(t);
        (void)record_write_json(t->cfg->home_path, LAYOUT_HOME_EXIT, exit_j, 0644);
        (void)record_event(&t->rec, "turn.ended",
                           json_pack("{s:s, s:s}", "end", t->end, "reason", t->reason));
        save_status(t);
        t->end_recorded = true;
        for (size_t i = 0; i < CLIENTS_MAX; i++)
                if (t->clients[i].used && t->clients[i].state == CLIENT_WAIT_RUN)
                        client_reply(&t->clients[i], reply_error("the turn ended"));
        conn_close(&t->io);
        conn_close(&t->ctl);
        t->io_open = t->ctl_open = false;
        listener_close(&t->lis);
        record_close(&t->rec);
        token_wipe(&t->token, sizeof(t->token));
        unlink_in(t->cfg->home_path, LAYOUT_HOME_PORT);
        unlink_in(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
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
                end_turn(t, "driver-stopped", "signal %u", si.ssi_signo);
        }
}

static bool any_watcher(const turn_t *t)
{
        for (size_t i = 0; i < CLIENTS_MAX; i++)
                if (t->clients[i].used && t->clients[i].state == CLIENT_WATCHING)
                        return true;
        return false;
}

static void loop(turn_t *t)
{
        for (;;) {
                int64_t now = conn_now_ms();
                if (turn_active(t))
                        turn_step(t, now);
                if (t->state == STATE_ENDED && !t->end_recorded)
                        finish_turn(t);
                if (t->stop || (t->once && t->state == STATE_ENDED))
                        break;

                struct pollfd p[P_COUNT];
                for (size_t i = 0; i < P_COUNT; i++)
                        p[i] = (struct pollfd){.fd = -1};
                p[P_SIG] = (struct pollfd){.fd = t->sigfd, .events = POLLIN};
                p[P_CTLSOCK] = (struct pollfd){.fd = t->ctl_lfd, .events = POLLIN};
                if (t->io_open) {
                        short ev =
                            (t->io.eof ? 0 : POLLIN) | (conn_out_pending(&t->io) ? POLLOUT : 0);
                        p[P_IO] = (struct pollfd){.fd = ev ? t->io.fd : -1, .events = ev};
                }
                if (t->ctl_open) {
                        short ev =
                            (t->ctl.eof ? 0 : POLLIN) | (conn_out_pending(&t->ctl) ? POLLOUT : 0);
                        p[P_CTL] = (struct pollfd){.fd = ev ? t->ctl.fd : -1, .events = ev};
                }
                for (size_t i = 0; i < CLIENTS_MAX; i++) {
                        client_t *c = &t->clients[i];
                        if (!c->used)
                                continue;
                        short ev = c->state == CLIENT_READING    ? POLLIN
                                   : c->state == CLIENT_WAIT_RUN ? 0
                                   : c->out_off < c->out_len     ? POLLOUT
                                                                 : 0;
                        p[P_CLIENTS + i] = (struct pollfd){.fd = ev ? c->fd : -1, .events = ev};
                }
                size_t nl =
                    t->state == STATE_WAITING ? listener_pollfds(&t->lis, &p[P_LISTENER]) : 0;
                int64_t deadline = INT64_MAX;
                if (t->state == STATE_WAITING) {
                        deadline = t->connect_deadline;
                        int64_t ld = listener_next_deadline(&t->lis);
                        if (ld < deadline)
                                deadline = ld;
                }
                if (t->state == STATE_EXITED && t->linger_deadline < deadline)
                        deadline = t->linger_deadline;
                if (t->state == STATE_EXITED && !t->io_eof_seen && t->drain_deadline < deadline)
                        deadline = t->drain_deadline;
                int timeout = 1000; /* watchers poll the log at least once a second */
                if (deadline != INT64_MAX && deadline - now < timeout)
                        timeout = deadline - now < 0 ? 0 : (int)(deadline - now);
                if (t->grade) {
                        grade_pollfds(t->grade, &p[P_GRADE]);
                        int64_t gd = grade_next_deadline(t->grade);
                        if (gd != INT64_MAX && gd - now < timeout)
                                timeout = gd - now < 0 ? 0 : (int)(gd - now);
                }
                if (any_watcher(t) && timeout > 100)
                        timeout = 100;
                int n = poll(p, t->grade ? P_COUNT : P_LISTENER + nl, timeout);
                if (n < 0 && errno != EINTR) {
                        end_turn(t, "driver-failed", "poll: %s", strerror(errno));
                        t->stop = true;
                        continue;
                }
                if (p[P_SIG].revents)
                        read_signals(t);
                if (nl)
                        listener_process(&t->lis, &p[P_LISTENER], nl, on_accept, on_reject, t);
                if (p[P_IO].revents)
                        conn_events(&t->io, p[P_IO].revents);
                if (p[P_CTL].revents)
                        conn_events(&t->ctl, p[P_CTL].revents);
                if (p[P_CTLSOCK].revents)
                        accept_clients(t);
                grade_process(t->grade, &p[P_GRADE]);
                for (size_t i = 0; i < CLIENTS_MAX; i++) {
                        client_t *c = &t->clients[i];
                        if (!c->used)
                                continue;
                        if (c->state == CLIENT_READING && p[P_CLIENTS + i].revents)
                                client_read(t, c);
                        else if (c->used &&
                                 (c->state == CLIENT_REPLYING || c->state == CLIENT_WATCHING ||
                                  c->state == CLIENT_STREAMING))
                                client_write(t, c);
                }
                if (t->io_open && conn_out_pending(&t->io) && conn_flush(&t->io) < 0)
                        t->io.eof = true;
                if (t->ctl_open && conn_out_pending(&t->ctl) && conn_flush(&t->ctl) < 0)
                        t->ctl.eof = true;
        }
}

/* ---- setup and the end ---- */

static int write_text(const char *dir, const char *name, const char *text, mode_t mode)
{
        _cleanup_free_ char *path = record_path(dir, name);
        return path ? file_write_atomic(path, text, strlen(text), mode, 0) : -ENOMEM;
}

/* The turn's files: secrets in hangar-ctl (0600), what the agent reads in
 * hangar-home (0644, a volume mounted read-only in the agent). */
static int prepare_files(turn_t *t, hg_error_t *err)
{
        const char *home = t->cfg->home_path, *ctl = t->cfg->ctl_path;
        _cleanup_free_ char *run_dir = record_path(home, LAYOUT_HOME_RUN);
        _cleanup_free_ char *exit_path = record_path(home, LAYOUT_HOME_EXIT);
        _cleanup_free_ char *port_path = record_path(home, LAYOUT_HOME_PORT);
        if (!run_dir || !exit_path || !port_path)
                return -ENOMEM;
        if (mkdir(run_dir, 0755) < 0 && errno != EEXIST)
                return error_set(err, -errno, "%s: %s", run_dir, strerror(errno));
        (void)unlink(exit_path);
        (void)unlink(port_path);
        char hex[TOKEN_HEX_LEN + 2];
        token_to_hex(&t->token, hex);
        hex[TOKEN_HEX_LEN] = '\n';
        hex[TOKEN_HEX_LEN + 1] = '\0';
        int r = write_text(ctl, LAYOUT_CTL_TOKEN, hex, 0600);
        token_wipe(hex, sizeof(hex));
        if (r < 0 || (r = write_text(ctl, LAYOUT_CTL_RUN_KEY, t->spec->run_key, 0600)) < 0)
                return error_set(err, r, "%s: cannot write the turn's secrets: %s", ctl,
                                 strerror(-r));
        _cleanup_json_ json_t *turn =
            json_pack("{s:s, s:s, s:s, s:s, s:b}", "turn", t->spec->turn, "mode",
                      spec_mode_name(t->spec->mode), "cwd", t->spec->cwd, "instance", t->instance,
                      "keep_processes", t->spec->keep_processes);
        /* The relay's copy of the terminal: it opens the pty to that size. */
        if (turn && t->spec->terminal.on &&
            json_object_set_new(turn, "terminal", terminal_spec_json(&t->spec->terminal)) < 0)
                return -ENOMEM;
        if ((r = write_text(home, LAYOUT_HOME_SCRIPT, t->spec->script, 0644)) < 0 ||
            (r = record_write_json(home, LAYOUT_HOME_TURN, turn, 0644)) < 0 ||
            (t->spec->settings &&
             (r = record_write_json(home, LAYOUT_HOME_SETTINGS, t->spec->settings, 0644)) < 0))
                return error_set(err, r, "%s: cannot write the run's files: %s", home,
                                 strerror(-r));
        if ((r = record_open(&t->rec, home, ctl)) < 0)
                return error_set(err, r, "cannot open the turn's log and events: %s", strerror(-r));
        return 0;
}

static int print_result(int status, const char *outcome, const char *reason, json_t *extra)
{
        return jsonx_print_outcome(status, "driver", outcome, reason, extra);
}

/* HANGAR_UID_SPLIT against the verdict: -1 to go on, or the exit status
 * with its outcome and reason. */
static int gate(const hg_config_t *cfg, const turn_spec_t *spec, const char **ret_outcome,
                char *reason, size_t reason_size)
{
        hg_error_t err = {0};
        if (spec->mode == TURN_MODE_AUTO) {
                *ret_outcome = "single-user";
                snprintf(reason, reason_size, "auto-turn: auto turns run in the agent's container");
                return TURN_EXIT_SINGLE_USER;
        }
        split_mode_t mode;
        if (split_mode_from_env(&mode, &err) < 0) {
                *ret_outcome = "failed";
                snprintf(reason, reason_size, "%s", err.message);
                return TURN_EXIT_FAILED;
        }
        _cleanup_free_ char *path = record_path(cfg->ctl_path, LAYOUT_CTL_VERDICT);
        if (!path) {
                *ret_outcome = "failed";
                snprintf(reason, reason_size, "out of memory");
                return TURN_EXIT_FAILED;
        }
        split_decision_t d;
        split_gate_decide(mode, path, &d);
        snprintf(reason, reason_size, "%s", d.reason);
        switch (d.gate) {
        case SPLIT_GATE_SPLIT:
                return -1; /* go on */
        case SPLIT_GATE_SINGLE_USER:
                *ret_outcome = "single-user";
                return TURN_EXIT_SINGLE_USER;
        case SPLIT_GATE_REFUSE:
        default:
                *ret_outcome = "refused";
                return TURN_EXIT_REFUSED;
        }
}

/* A terminal turn's screen and tmux session; the pane runs this binary's
 * term-pane against the control socket. */
static int open_terminal(turn_t *t, hg_error_t *err)
{
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return error_set(err, -EIO, "cannot find the driver's own binary");
        exe[n] = '\0';
        _cleanup_free_ char *sock = record_path(t->cfg->ctl_path, LAYOUT_CTL_SOCKET);
        if (!sock)
                return error_set(err, -ENOMEM, "out of memory");
        char *argv[] = {exe, "term-pane", "--socket", sock, "--turn", t->spec->turn, NULL};
        int r = terminal_open(&t->term, &t->spec->terminal, t->cfg->ctl_path, argv, err);
        if (r == 0)
                t->term_open = true;
        return r;
}

/* A turn starts: a fresh record, token, listener and port. Whatever the
 * last turn left in the daemon's memory is reset first. */
static int start_turn(turn_t *t, hg_error_t *err)
{
        if (t->term_open)
                terminal_close(&t->term);
        t->term_open = t->log_capped_noted = false;
        t->typed_bytes = t->log_bytes = t->log_dropped = 0;
        approvals_free(&t->approvals);
        t->io = (conn_t){.fd = -1};
        t->ctl = (conn_t){.fd = -1};
        t->lis = (listener_t){.fd = -1};
        t->rec = (record_t){.events_fd = -1, .log_fd = -1};
        t->io_open = t->ctl_open = t->io_eof_seen = false;
        t->connect_deadline = t->linger_deadline = t->drain_deadline = 0;
        t->finish_requested = t->end_recorded = false;
        t->stdin_len = 0;
        t->stdin_close_pending = t->stdin_closed = false;
        t->exit = (frame_exit_t){0};
        t->have_exit = false;
        t->end[0] = t->reason[0] = '\0';
        t->n_outstanding = 0;
        t->relay_signals = t->unrequested_results = t->rejections = 0;
        t->signals_capped = t->unrequested_capped = t->approvals_capped = false;
        t->duplicates_noted = t->rejections_capped = false;
        t->gen++;
        t->state = STATE_WAITING;

        int r = approvals_init(&t->approvals);
        if (r < 0)
                error_set(err, r, "out of memory");
        else if ((r = token_generate(&t->token)) < 0)
                error_set(err, r, "no random bytes for the relay token");
        if (r == 0)
                r = prepare_files(t, err);
        if (r == 0 && t->spec->terminal.on)
                r = open_terminal(t, err);
        if (r == 0)
                r = listener_open(&t->lis, &t->token, t->instance, t->spec->handshake_timeout_ms,
                                  err);
        if (r == 0) {
                char port[16];
                snprintf(port, sizeof(port), "%u\n", t->lis.port);
                /* The port goes last: its presence says the listener is up. */
                if ((r = write_text(t->cfg->home_path, LAYOUT_HOME_PORT, port, 0644)) < 0)
                        error_set(err, r, "cannot write the port file: %s", strerror(-r));
        }
        if (r < 0) {
                if (t->rec.events_fd >= 0)
                        (void)record_event(&t->rec, "turn.failed",
                                           json_pack("{s:s}", "reason", err->message));
                end_turn(t, "failed", "%s", err->message);
                save_status(t);
                t->end_recorded = true;
                listener_close(&t->lis);
                record_close(&t->rec);
                token_wipe(&t->token, sizeof(t->token));
                unlink_in(t->cfg->home_path, LAYOUT_HOME_PORT);
                unlink_in(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
                return r;
        }
        rec(t, "relay.listening",
            json_pack("{s:i, s:s, s:s, s:s, s:b}", "port", t->lis.port, "turn", t->spec->turn,
                      "mode", spec_mode_name(t->spec->mode), "instance", t->instance,
                      "keep_processes", t->spec->keep_processes));
        t->connect_deadline = conn_now_ms() + (int64_t)t->spec->connect_timeout_s * 1000;
        save_status(t);
        return 0;
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
        token_t id;
        int r = 0;
        if (!sock || !(t->stdin_q = malloc(STDIN_Q_MAX)))
                return error_set(err, -ENOMEM, "out of memory");
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
            (t->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
                return error_set(err, -errno, "signalfd: %s", strerror(errno));
        if ((r = token_generate(&id)) < 0)
                return error_set(err, r, "no random bytes for the instance id");
        char hex[TOKEN_HEX_LEN + 1];
        token_to_hex(&id, hex);
        memcpy(t->instance, hex, sizeof(t->instance) - 1);
        t->instance[sizeof(t->instance) - 1] = '\0';
        token_wipe(&id, sizeof(id));
        if ((r = ctlsock_listen(sock, &t->ctl_lfd, err)) < 0)
                return r;
        /* The socket is ours: whatever an earlier daemon left is not (its
         * turn file too: a relay checks the instance named there). */
        unlink_in(t->cfg->home_path, LAYOUT_HOME_PORT);
        unlink_in(t->cfg->home_path, LAYOUT_HOME_TURN);
        unlink_in(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
        unlink_in(t->cfg->ctl_path, LAYOUT_CTL_STATUS);
        if (!t->once &&
            grade_ctx_new(t->cfg->home_path, t->cfg->ctl_path, t->instance, &t->grade) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        return 0;
}

static void daemon_teardown(turn_t *t)
{
        /* Watchers and replies get what is left before the socket goes. */
        int64_t deadline = conn_now_ms() + 2000;
        for (bool busy = true; busy && conn_now_ms() < deadline;) {
                busy = false;
                for (size_t i = 0; i < CLIENTS_MAX; i++)
                        if (t->clients[i].used && t->clients[i].state != CLIENT_READING &&
                            t->clients[i].state != CLIENT_WAIT_RUN) {
                                client_write(t, &t->clients[i]);
                                busy = busy || t->clients[i].used;
                        }
                if (busy)
                        (void)poll(NULL, 0, 10);
        }
        for (size_t i = 0; i < CLIENTS_MAX; i++)
                if (t->clients[i].used) {
                        if (t->clients[i].state == CLIENT_WAIT_RUN ||
                            t->clients[i].state == CLIENT_READING) {
                                client_reply(&t->clients[i], reply_error("the driver is stopping"));
                                client_write(t, &t->clients[i]);
                        }
                        client_close(&t->clients[i]);
                }
        conn_close(&t->io);
        conn_close(&t->ctl);
        listener_close(&t->lis);
        if (t->ctl_lfd >= 0) {
                (void)close(t->ctl_lfd);
                unlink_in(t->cfg->ctl_path, LAYOUT_CTL_SOCKET);
        }
        if (t->sigfd >= 0)
                (void)close(t->sigfd);
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
        if (first && (status = gate(cfg, first, &outcome, reason, sizeof(reason))) >= 0)
                return print_result(status, outcome, reason, NULL);

        static turn_t t; /* large; one per process */
        t = (turn_t){.cfg = cfg,
                     .once = first != NULL,
                     .ctl_lfd = -1,
                     .sigfd = -1,
                     .rec = {.events_fd = -1, .log_fd = -1},
                     .io = {.fd = -1},
                     .ctl = {.fd = -1},
                     .lis = {.fd = -1}};
        for (size_t i = 0; i < CLIENTS_MAX; i++)
                t.clients[i] = (client_t){.fd = -1, .stream_fd = -1};
        hg_error_t err = {0};
        int r = daemon_setup(&t, &err);
        if (r == 0 && first) {
                t.spec = first;
                r = start_turn(&t, &err);
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
                _cleanup_json_ json_t *exit_j = exit_json(&t);
                return print_result(strcmp(t.end, "done") == 0 ? TURN_EXIT_RAN : TURN_EXIT_FAILED,
                                    t.end, t.reason, exit_j);
        }
        /* Say which turn the stop ended, if it ended one. */
        char stopped[96] = "";
        if (strcmp(t.end, "driver-stopped") == 0 && t.spec)
                snprintf(stopped, sizeof(stopped), "; turn %s ended as driver-stopped",
                         t.spec->turn);
        daemon_teardown(&t);
        fprintf(stderr, "hangar-driver serve: stopped%s\n", stopped);
        return 0;
}
