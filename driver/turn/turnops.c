#include "turnops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "cleanup.h"
#include "ctlcheck.h"
#include "ctlsock.h"
#include "jsonx.h"
#include "layout.h"
#include "tmux.h"
#include "turn.h"
#include "turnapproval.h"
#include "turnsetup.h"

#define TYPE_BASE64_MAX 8192u /* ctl type: one chunk of the pane's keys */

#define reply_error     ctlclient_error

static json_t *start_run(turn_t *t, ctlclient_t *c, json_t *req, json_t *argv_j, runreq_kind_t kind)
{
        if (t->ts.state != TURN_STATE_RUNNING && t->ts.state != TURN_STATE_EXITED)
                return reply_error("no relay: the turn is %s", turnstate_name(t->ts.state));
        runreq_args_t a;
        hg_error_t err = {0};
        if (runreq_args_parse(argv_j, json_object_get(req, "timeout_s"),
                              json_object_get(req, "tail_max"), &a, &err) < 0)
                return reply_error("%s", err.message);
        _cleanup_free_ char **argv = a.argv;
        _cleanup_free_ uint8_t *payload = NULL;
        uint32_t len = 0, id = runreq_next_id(&t->runs);
        if (frame_run_encode(id, a.timeout_s * 1000, a.tail_max, argv, &payload, &len) < 0)
                return reply_error("the command does not fit in a run request");
        if (!conn_can_queue(&t->ctl, len))
                return reply_error("the relay is not reading; try again");
        if (runreq_full(&t->runs))
                return reply_error("%u run requests are waiting for the relay; try again",
                                   RUNREQ_OUTSTANDING_MAX);
        /* Recorded before it is sent: a run hangar cannot see in the record
         * does not run. */
        int r = record_event(&t->rec, "run.requested",
                             json_pack("{s:i, s:O, s:i}", "id", (int)id, "argv", argv_j,
                                       "timeout_s", (int)a.timeout_s));
        if (r < 0)
                return reply_error("the run request could not be recorded: %s", strerror(-r));
        (void)conn_queue(&t->ctl, FRAME_RUN, payload, len, NULL, 0);
        (void)runreq_add(&t->runs, id); /* room: checked above */
        c->run_id = id;
        c->run_kind = kind;
        c->state = CTLCLIENT_WAIT_RUN;
        return NULL;
}

/* tree: `hangar-driver tree --turn ID CWD` in the agent's container. */
static json_t *op_tree(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        _cleanup_json_ json_t *argv_j = runreq_tree_argv(t->spec->turn, t->spec->cwd);
        return start_run(t, c, req, argv_j, RUNREQ_TREE);
}

/* verify: the job's check, through `hangar-driver gate` (the agent's rounds file). */
static json_t *op_verify(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        _cleanup_json_ json_t *argv_j = NULL;
        hg_error_t err = {0};
        if (runreq_verify_argv(t->spec->turn, json_object_get(req, "argv"), &argv_j, &err) < 0)
                return reply_error("%s", err.message);
        return start_run(t, c, req, argv_j, RUNREQ_VERIFY);
}

static json_t *op_signal(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        int signo = ctlcheck_signal(json_string_value(json_object_get(req, "signal")));
        if (!signo)
                return reply_error(
                    "\"signal\" must be one of HUP INT QUIT KILL USR1 USR2 TERM CONT "
                    "STOP TSTP WINCH");
        if (t->ts.state != TURN_STATE_RUNNING)
                return reply_error("the harness is not running (%s)", turnstate_name(t->ts.state));
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

/* events.jsonl from "from" on, live, until the turn ends (as watch
 * streams the log), after the reply already queued for c. */
static json_t *follow_events(turn_t *t, ctlclient_t *c, uint64_t from)
{
        _cleanup_free_ char *path = record_path(t->cfg->ctl_path, LAYOUT_CTL_EVENTS);
        int fd = path ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
        if (fd < 0) {
                /* The reply is out already: the stream just ends. */
                c->state = CTLCLIENT_REPLYING;
                return NULL;
        }
        c->stream_fd = fd;
        c->watch_off = (off_t)from;
        c->watch_gen = t->gen;
        c->state = CTLCLIENT_WATCHING;
        return NULL;
}

/* ctl events: a header line, then events.jsonl as it is now, streamed in
 * chunks (never one reply in memory: the file has no size bound but the
 * volume's). With "follow", the file from "from" on, live, until the turn
 * ends, as watch streams the log: hangar follows a turn with one exec
 * instead of asking again and again, and one that dropped comes back with
 * the offset it had got to (`hangar turn attach --from`). */
static json_t *op_events(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
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
        if (q->follow) {
                ctlclient_reply(c, json_pack("{s:b, s:s, s:s, s:I, s:b}", "ok", 1, "stream",
                                             "events", "turn", t->spec->turn, "from",
                                             (json_int_t)q->from, "follow", 1));
                return follow_events(t, c, q->from);
        }
        ctlclient_reply(c, json_pack("{s:b, s:s, s:s, s:I, s:I}", "ok", 1, "stream", "events",
                                     "turn", t->spec->turn, "from", (json_int_t)q->from, "bytes",
                                     (json_int_t)st.st_size));
        c->stream_fd = TAKE_FD(fd);
        c->stream_end = st.st_size;
        c->watch_off = (off_t)q->from;
        c->state = CTLCLIENT_STREAMING;
        return NULL;
}

/* ctl approvals: a header line, then the document (it can be large: 256
 * requests of up to 64 KiB each), written out as the client reads it. */
static json_t *op_approvals(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
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
        ctlclient_reply_text(c, out, sizeof(header) - 1 + blen + 1);
        return NULL;
}

/* ctl watch: a header line, then the turn's log from byte "from" on, live
 * until the turn ends. The log is the record (hangar-home/run/log): a
 * watcher that dropped comes back with the offset it had got to and loses
 * nothing. Each watcher reads its own descriptor of the turn's log, so a
 * watcher of a turn that has ended still gets the rest of it. */
static json_t *op_watch(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
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
        ctlclient_reply(c, json_pack("{s:b, s:s, s:s, s:I}", "ok", 1, "stream", "log", "turn",
                                     t->spec->turn, "from", (json_int_t)q->from));
        c->stream_fd = TAKE_FD(fd);
        c->watch_off = (off_t)q->from;
        c->watch_gen = t->gen;
        c->state = CTLCLIENT_WATCHING; /* the header line first, then the log */
        return NULL;
}

/* ctl start: a turn is a request to the daemon. The reply carries what
 * hangar needs to start the relay: the turn, the token, the port. One turn
 * at a time: a second is refused while the first is in flight. With
 * "follow", the same connection then streams the turn's events, live, until
 * it ends: `hangar turn run` starts and follows a turn with one exec. */
static json_t *op_start(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        if (t->once)
                return reply_error("this driver runs one turn (hangar-driver relay): no start");
        if (t->stop)
                return reply_error("the daemon is stopping");
        /* (A turn in flight always has its spec; the analyzer cannot see it.) */
        if (turnstate_active(&t->ts))
                return reply_error("turn \"%s\" is in flight: one turn at a time",
                                   t->spec ? t->spec->turn : "?");
        if (grade_busy(t->grade))
                return reply_error("a grade is in flight: no turn until it is finished");
        turn_spec_t spec;
        hg_error_t err = {0};
        if (spec_parse(q->spec, q->spec_len, &spec, &err) < 0)
                return json_pack("{s:b, s:s, s:s, s:i}", "ok", 0, "error", err.message, "driver",
                                 "usage", "status", TURN_EXIT_USAGE);
        const char *outcome = NULL;
        char reason[ERROR_MESSAGE_MAX];
        int status = turnsetup_gate(t->cfg, &spec, &outcome, reason, sizeof(reason));
        if (status >= 0) {
                spec_free(&spec);
                return json_pack("{s:b, s:s, s:s, s:s, s:i}", "ok", 0, "error", reason, "driver",
                                 outcome, "reason", reason, "status", status);
        }
        if (t->spec == &t->own_spec)
                spec_free(&t->own_spec);
        t->own_spec = spec;
        t->spec = &t->own_spec;
        if (turnsetup_start(t, &err) < 0)
                return json_pack("{s:b, s:s, s:s, s:i}", "ok", 0, "error", err.message, "driver",
                                 "failed", "status", TURN_EXIT_FAILED);
        char hex[TOKEN_HEX_LEN + 1];
        token_to_hex(&t->token, hex);
        json_t *j =
            json_pack("{s:b, s:s, s:s, s:i, s:s, s:I}", "ok", 1, "turn", t->spec->turn, "token",
                      hex, "port", t->lis.port, "instance", t->instance, "gen", (json_int_t)t->gen);
        token_wipe(hex, sizeof(hex));
        if (!q->follow || !j)
                return j;
        ctlclient_reply(c, j);
        return follow_events(t, c, 0);
}

static json_t *op_ping(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *j =
            json_pack("{s:b, s:s, s:s?, s:i}", "ok", 1, "state", turnstate_name(t->ts.state),
                      "turn", t->spec ? t->spec->turn : NULL, "pid", (int)getpid());
        turnctx_add_clone_fields(t, j);
        return j;
}

static json_t *op_status(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *s = turnctx_status_json(t);
        json_object_set_new(s, "ok", json_true());
        return s;
}

/* ctl token (the older way, hangar-driver relay): only while the relay is
 * awaited; once it is in, the token is spent. */
static json_t *op_token(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        if (t->ts.state != TURN_STATE_WAITING)
                return reply_error("the relay has connected; the token is spent");
        char hex[TOKEN_HEX_LEN + 1];
        token_to_hex(&t->token, hex);
        json_t *j = json_pack("{s:b, s:s, s:i, s:s, s:I}", "ok", 1, "token", hex, "port",
                              t->lis.port, "instance", t->instance, "gen", (json_int_t)t->gen);
        token_wipe(hex, sizeof(hex));
        return j;
}

static json_t *decide(turn_t *t, json_t *req, bool approve)
{
        const char *id = json_string_value(json_object_get(req, "id"));
        if (!id || !approvals_is_pending(&t->approvals, id))
                return reply_error("no pending approval with that id");
        int r = turnapproval_decide(t, id, approve, "hangar");
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

static json_t *op_approve(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        return decide(t, q->root, true);
}

static json_t *op_deny(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        return decide(t, q->root, false);
}

static json_t *op_steer(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        json_t *text_j = json_object_get(req, "text");
        const char *text = json_string_value(text_j);
        if (!text)
                return reply_error("\"text\" is required");
        size_t len = json_string_length(text_j);
        if (!ctlcheck_steer_text(text, len))
                return reply_error("steer text is one line: no newline or other control "
                                   "character");
        if (t->stdin_closed || t->stdin_close_pending)
                return reply_error("the harness's stdin is closed");
        if (len + 1 > TURN_STDIN_Q_MAX - t->stdin_len)
                return reply_error("too much input waiting");
        /* hangar's commands are kept in hangar-ctl, with the events:
         * recorded first, sent only if recorded. */
        int r = record_event(&t->rec, "harness.steer", json_pack("{s:s}", "text", text));
        if (r < 0)
                return reply_error("the steer command could not be recorded: %s", strerror(-r));
        (void)turnctx_stdin_append(t, text, len);
        /* On a terminal the end of a line is the Enter key. */
        (void)turnctx_stdin_append(t, t->spec->terminal.on ? "\r" : "\n", 1);
        return json_pack("{s:b}", "ok", 1);
}

static json_t *op_close_stdin(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        if (!t->stdin_closed)
                t->stdin_close_pending = true;
        return json_pack("{s:b}", "ok", 1);
}

/* finish with "abort": hangar saw the turn's order broken (output on the
 * relay's stdout before its ready line, a second ready line, a relay that
 * ended without its done line) and ends the turn now, whatever its state:
 * before the relay connected (no token went out) as after (the relay's
 * connections are closed, so it stops the harness: driver-gone). */
#define ABORT_REASON_MAX 200

static json_t *op_abort(turn_t *t, const char *why)
{
        if (!turnstate_active(&t->ts))
                return reply_error("turn \"%s\" has ended (%s)", t->spec->turn, t->ts.end);
        if (strlen(why) > ABORT_REASON_MAX)
                return reply_error("\"abort\": at most %d bytes", ABORT_REASON_MAX);
        turnstate_end(&t->ts, "aborted", "hangar: %s", why);
        return json_pack("{s:b}", "ok", 1);
}

static json_t *op_finish(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        const char *why = json_string_value(json_object_get(req, "abort"));
        if (why)
                return op_abort(t, why);
        if (t->ts.state == TURN_STATE_RUNNING)
                return reply_error("the harness is still running; signal it first");
        t->ts.finish_requested = true;
        return json_pack("{s:b}", "ok", 1);
}

/* ---- a terminal turn's ops (docs/terminal.md) ---- */

static json_t *op_screen(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
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
static json_t *op_send_keys(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        if (!t->term_open)
                return reply_error("turn \"%s\" has no terminal", t->spec->turn);
        if (t->ts.state != TURN_STATE_RUNNING && t->ts.state != TURN_STATE_WAITING)
                return reply_error("the harness is not running (%s)", turnstate_name(t->ts.state));
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
        /* Cursor keys as the program asked for them: a curses program in
         * keypad mode (DECCKM) ignores ESC [ A and reads ESC O A. */
        if (tmux_keys_encode_mode(keys, n, screen_app_cursor(&t->term.screen), bytes, sizeof(bytes),
                                  &len, &err) < 0)
                return reply_error("%s", err.message);
        if (len > TURN_STDIN_Q_MAX - t->stdin_len)
                return reply_error("too much input waiting");
        int r = record_event(&t->rec, "terminal.keys", json_pack("{s:O}", "keys", keys_j));
        if (r < 0)
                return reply_error("the keys could not be recorded: %s", strerror(-r));
        /* Straight to the harness on io, with or without tmux: one path for
         * hangar's keys, whatever tmux's pane does with its own. */
        (void)turnctx_stdin_append(t, (const char *)bytes, len); /* fits: checked above */
        return json_pack("{s:b, s:I}", "ok", 1, "bytes", (json_int_t)len);
}

static json_t *op_resize(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        if (!t->term_open)
                return reply_error("turn \"%s\" has no terminal", t->spec->turn);
        json_int_t rows = json_integer_value(json_object_get(req, "rows"));
        json_int_t cols = json_integer_value(json_object_get(req, "cols"));
        if (!ctlcheck_term_size(rows, cols))
                return reply_error("resize: rows %u-%u, cols %u-%u", FRAME_TERM_ROWS_MIN,
                                   FRAME_TERM_ROWS_MAX, FRAME_TERM_COLS_MIN, FRAME_TERM_COLS_MAX);
        if (t->ts.state != TURN_STATE_RUNNING)
                return reply_error("the harness is not running (%s)", turnstate_name(t->ts.state));
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
        turnctx_save_status(t);
        return json_pack("{s:b}", "ok", 1);
}

/* ctl type: the tmux pane's keys (hangar typing in an attached tmux), as
 * they came; counted in status, not recorded one by one. */
static json_t *op_type(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        json_t *req = q->root;
        if (!t->term_open)
                return reply_error("turn \"%s\" has no terminal", t->spec->turn);
        if (t->ts.state != TURN_STATE_RUNNING && t->ts.state != TURN_STATE_WAITING)
                return reply_error("the harness is not running (%s)", turnstate_name(t->ts.state));
        json_t *data_j = json_object_get(req, "data_base64");
        if (json_string_length(data_j) > TYPE_BASE64_MAX)
                return reply_error("type: at most %u base64 characters", TYPE_BASE64_MAX);
        _cleanup_free_ char *bytes = NULL;
        size_t n = 0;
        hg_error_t err = {0};
        if (base64_decode(json_string_value(data_j), &bytes, &n, &err) < 0)
                return reply_error("type: %s", err.message);
        int r = turnctx_stdin_append(t, bytes, n);
        if (r < 0)
                return reply_error("%s", r == -EPIPE ? "the terminal's input is closed"
                                                     : "too much input waiting");
        t->typed_bytes += n;
        return json_pack("{s:b}", "ok", 1);
}

static json_t *op_run(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        return start_run(t, c, q->root, json_object_get(q->root, "argv"), RUNREQ_PLAIN);
}

static json_t *op_grade(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        return t->grade ? grade_ctl(t->grade, q, turnstate_active(&t->ts))
                        : reply_error("grades are the daemon's (hangar-driver serve)");
}

/* What each op does: one handler per row of ctlops.c (unit_ctlops checks
 * that none is missing). */
typedef json_t *handler_fn(turn_t *t, ctlclient_t *c, const ctlreq_t *q);
// clang-format off
static handler_fn *const handlers[CTLREQ_OP_COUNT] = {
    [CTLREQ_PING] = op_ping,
    [CTLREQ_START] = op_start,
    [CTLREQ_STATUS] = op_status,
    [CTLREQ_TOKEN] = op_token,
    [CTLREQ_EVENTS] = op_events,
    [CTLREQ_APPROVALS] = op_approvals,
    [CTLREQ_APPROVE] = op_approve,
    [CTLREQ_DENY] = op_deny,
    [CTLREQ_STEER] = op_steer,
    [CTLREQ_CLOSE_STDIN] = op_close_stdin,
    [CTLREQ_SIGNAL] = op_signal,
    [CTLREQ_WATCH] = op_watch,
    [CTLREQ_FINISH] = op_finish,
    [CTLREQ_RUN] = op_run,
    [CTLREQ_TREE] = op_tree,
    [CTLREQ_VERIFY] = op_verify,
    [CTLREQ_SCREEN] = op_screen,
    [CTLREQ_SEND_KEYS] = op_send_keys,
    [CTLREQ_RESIZE] = op_resize,
    [CTLREQ_TYPE] = op_type,
    [CTLREQ_GRADE_BEGIN] = op_grade,
    [CTLREQ_GRADE_FINISH] = op_grade,
    [CTLREQ_GRADE_SHOW] = op_grade,
};
// clang-format on

bool turnops_handles(ctlreq_op_t op)
{
        return (unsigned)op < CTLREQ_OP_COUNT && handlers[op] != NULL;
}

json_t *turnops_dispatch(turn_t *t, ctlclient_t *c, const ctlreq_t *q)
{
        hg_error_t err = {0};
        if (ctlcheck_turn(q->op, q->turn, t->spec ? t->spec->turn : NULL, turnstate_active(&t->ts),
                          &err) < 0)
                return reply_error("%s", err.message);
        if (!turnops_handles(q->op))
                return reply_error("unknown op \"%.40s\"", ctlreq_op_name(q->op));
        /* An op that needs a turn has been refused without one by
         * ctlcheck_turn already; said again here so that no handler of
         * those is reached with a NULL spec, whatever the table says. */
        ctlcheck_need_t need = ctlcheck_need(q->op);
        if (!t->spec && need != CTLCHECK_NOTHING && need != CTLCHECK_NAMED)
                return reply_error("no turn yet: %s needs one (ctl start)", ctlreq_op_name(q->op));
        return handlers[q->op](t, c, q);
}

void turnops_client_read(turn_t *t, ctlclient_t *c)
{
        int r = ctlclient_read(c);
        if (r == 0)
                return;
        if (r < 0)
                return ctlclient_reply(
                    c, r == -EFBIG ? reply_error("request over %u bytes", CTLSOCK_REQUEST_MAX)
                                   : reply_error("out of memory"));
        ctlreq_t q;
        hg_error_t err = {0};
        if (ctlreq_parse((const char *)c->in, c->in_len, &q, &err) < 0)
                return ctlclient_reply(c, reply_error("bad request: %s", err.message));
        json_t *reply = turnops_dispatch(t, c, &q);
        ctlreq_free(&q);
        if (reply)
                ctlclient_reply(c, reply);
}
