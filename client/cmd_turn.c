/* hangar turn run NS/POD --spec FILE, hangar turn attach NS/POD --turn ID
 * [--from N]: a whole turn under the sidecar through the Kubernetes API,
 * in the order docs/protocol.md gives hangar (docs/client.md):
 *
 *   1. `hangar-driver ctl start --spec -` in hangar-driver and the relay in
 *      the agent's container start together (two execs on two threads);
 *   2. the relay's stdout is read as relaywatch (turnlines.h) has it: the
 *      token goes on the relay's stdin, as `TOKEN INSTANCE`, only once both
 *      the start's reply and the relay's ready line are in; output before
 *      the ready line, a second ready line or any line that is not the
 *      relay's ends the turn (`ctl finish --abort`) and no token goes out
 *      after it;
 *   3. the turn's events are followed with one `ctl events --follow` exec
 *      and each printed as a JSON line with its byte offsets, so `turn
 *      attach --from` resumes a turn without loss or repeat after this
 *      process was killed;
 *   4. approvals, steer, signals, run requests and the end come from JSON
 *      lines on our stdin (or --approvals approve|deny), one ctl exec each;
 *   5. when the harness has exited, `ctl finish` (unless --hold), and the
 *      last line says how the turn ended.
 *
 * The main thread answers; the exec threads only read and note what they
 * saw under the lock, then wake it through a pipe. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "cleanup.h"
#include "cli.h"
#include "fileio.h"
#include "jsonx.h"
#include "podagent.h"
#include "shape.h"
#include "strparse.h"
#include "turnexec.h"
#include "turnlines.h"

#define SPEC_MAX_BYTES    (4 * 1024 * 1024) /* the driver's own bound on a request */
#define INPUT_LINE_MAX    (1024 * 1024)     /* one command on our stdin */
#define RELAY_END_WAIT_MS 10000             /* after the turn's end, for the relay's last line */
#define RELAY_WAIT_PORT_S "60"              /* the relay's wait for the start's files */
#define START_REPLY_MAX   (64 * 1024)

/* Exit statuses of `turn run` and `turn attach` beyond cli.h's. */
enum {
        TURN_EXIT_REFUSED = 74, /* the driver refused the turn (or, attach, the request) */
        TURN_EXIT_ORDER = 75,   /* the relay's stdout broke the order: the turn was aborted */
        TURN_EXIT_RELAY = 76,   /* the relay refused or ended without its done line */
        TURN_EXIT_FAILED = 77,  /* the turn ended other than done */
};

static const char usage_text[] =
    "usage: hangar turn run NS/POD --spec FILE [-c CONTAINER] [--relay PATH]\n"
    "                       [--approvals stdin|approve|deny] [--hold] [--timing]\n"
    "                       [--kubeconfig FILE] [--context NAME]\n"
    "       hangar turn attach NS/POD --turn ID [--from OFFSET] [--approvals stdin|approve|deny]\n"
    "                       [--hold] [--kubeconfig FILE] [--context NAME]\n"
    "run: starts the turn of FILE (a turn spec, docs/turn.md) in hangar-driver and the relay\n"
    "in the agent's container (the pod's hangar.dev/agent-container, else sandbox; -c names\n"
    "one of the pod's containers), hands the relay its token after\n"
    "its ready line, and follows the turn. attach: follows a turn already started, from\n"
    "OFFSET (a line's \"next\"). Each event is a JSON line on stdout; commands come as JSON\n"
    "lines on stdin ({\"approve\":ID}, {\"deny\":ID}, {\"steer\":TEXT}, {\"signal\":NAME},\n"
    "{\"close_stdin\":true}, {\"run\":[ARGV]}, {\"tree\":true}, {\"verify\":[ARGV]},\n"
    "{\"screen\":true}, {\"keys\":[KEY...]}, {\"resize\":[ROWS,COLS]}, {\"finish\":true}).\n"
    "The turn is finished when its harness exits, unless --hold. Exit statuses: docs/client.md.\n";

typedef enum approvals_policy { POLICY_STDIN, POLICY_APPROVE, POLICY_DENY } approvals_policy_t;

/* The steps of a turn's start, timed from the client's start (--timing):
 * where the time to the harness goes (docs/client.md, "Execs and time"). */
typedef enum step {
        STEP_POD_READ,         /* the pod's spec read: the agent's container, the relay's path */
        STEP_START_CONNECTED,  /* ctl start's exec: TCP and TLS up */
        STEP_START_UPGRADED,   /* ... its 101 */
        STEP_RELAY_CONNECTED,  /* the relay's exec: TCP and TLS up */
        STEP_RELAY_UPGRADED,   /* ... its 101 */
        STEP_REPLY,            /* ctl start's reply line in */
        STEP_READY,            /* the relay's ready line in */
        STEP_TOKEN,            /* the token on the relay's stdin */
        STEP_HARNESS_RECORDED, /* harness.started as the driver recorded it (its ts) */
        STEP_HARNESS,          /* harness.started read here */
        STEP_COUNT,
} step_t;

static const char *const step_names[STEP_COUNT] = {
    "pod_read",    "start_connected", "start_upgraded", "relay_connected",  "relay_upgraded",
    "start_reply", "relay_ready",     "token_sent",     "harness_recorded", "harness_started",
};

typedef struct turnrun {
        k8s_client_t *k;
        const char *ns, *pod, *turn;
        /* run: where the relay runs, and which; read from the pod while
         * ctl start's exec opens (agent_known, under the lock, then
         * agent_cond); agent_why when the pod names no agent it can be. */
        const char *agent_container, *relay_path;
        bool agent_known;
        pthread_cond_t agent_cond;
        int agent_status;
        char agent_why[300];
        approvals_policy_t policy;
        bool hold;
        struct timespec t0;
        struct timespec t0_real; /* the same moment on the wall clock (the driver's ts) */
        bool timing;             /* --timing: one "timing" line at harness.started */
        long step_us[STEP_COUNT];

        pthread_mutex_t lock; /* everything below, and our stdout */
        int wake_wr;          /* a byte: the main thread has something to look at */

        /* The relay (run only). */
        relaywatch_t relay;
        tokenline_t relay_in; /* its stdin: the token line (known once the start replied) */
        bool relay_done;      /* its exec ended */
        bool relay_reported;  /* its ready line printed */

        /* The start (run only): its reply line, then the turn's events. */
        strbuf_t start_reply;
        bool reply_seen;   /* the reply line is in */
        bool started;      /* ... and it started the turn */
        bool started_said; /* ... and its turn.started line is out: relay.ready comes after */
        int start_status;
        capture_t start_err;
        capture_t relay_err;

        /* The events. */
        linesplit_t lines;
        uint64_t next;   /* where the next event line begins */
        json_t *pending; /* approval ids the policy answers */
        bool harness_exited;
        json_t *harness; /* harness.exited's end and value */
        json_t *ended;   /* the turn.ended record */
        bool events_done;
        bool events_bad; /* a line that was not an event */
        capture_t events_err;
        char *events_argv[9];
        char events_from[24];
} turnrun_t;

static long elapsed_ms(const turnrun_t *t)
{
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return (now.tv_sec - t->t0.tv_sec) * 1000L + (now.tv_nsec - t->t0.tv_nsec) / 1000000L;
}

static long elapsed_us(const turnrun_t *t)
{
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return (now.tv_sec - t->t0.tv_sec) * 1000000L + (now.tv_nsec - t->t0.tv_nsec) / 1000L;
}

/* Under the lock (or before the threads): the first time step was reached. */
static void mark(turnrun_t *t, step_t step)
{
        if (t->step_us[step] == 0)
                t->step_us[step] = elapsed_us(t);
}

static void mark_locked(turnrun_t *t, step_t step)
{
        pthread_mutex_lock(&t->lock);
        mark(t, step);
        pthread_mutex_unlock(&t->lock);
}

static void start_phase(void *ud, wsexec_phase_t phase)
{
        mark_locked(ud,
                    phase == WSEXEC_PHASE_CONNECTED ? STEP_START_CONNECTED : STEP_START_UPGRADED);
}

static void relay_phase(void *ud, wsexec_phase_t phase)
{
        mark_locked(ud,
                    phase == WSEXEC_PHASE_CONNECTED ? STEP_RELAY_CONNECTED : STEP_RELAY_UPGRADED);
}

/* Under the lock: the "timing" line, each step's ms from the start (null
 * for a step not reached). */
static void emit_timing(turnrun_t *t)
{
        json_t *steps = json_object();
        for (int i = 0; steps && i < STEP_COUNT; i++)
                (void)json_object_set_new(
                    steps, step_names[i],
                    t->step_us[i] ? json_real((double)(t->step_us[i] / 100) / 10.0) : json_null());
        (void)cli_emit("timing", json_pack("{s:s, s:o}", "turn", t->turn, "ms", steps));
}

static void wake(turnrun_t *t)
{
        char b = 1;
        /* Full pipe: the main thread has wake-ups enough to look. */
        ssize_t n = write(t->wake_wr, &b, 1);
        (void)n;
}

/* A line on our stdout; the lock keeps the threads' lines whole. */
static int emit(turnrun_t *t, const char *event, json_t *obj)
{
        pthread_mutex_lock(&t->lock);
        int r = cli_emit(event, obj);
        pthread_mutex_unlock(&t->lock);
        return r;
}

/* ---- the relay ---- */

/* Under the lock: the token goes once the start's reply and the relay's
 * ready line are both in, never after anything broke the order; then the
 * relay's stdin is closed (it reads one line). */
static void relay_stdin_step(turnrun_t *t)
{
        if (t->relay_in.wr < 0)
                return;
        switch (t->relay.state) {
        case RELAYWATCH_WAITING:
                return; /* no ready line yet: nothing goes, nothing closes */
        case RELAYWATCH_READY:
                if (!t->relay_in.known)
                        return; /* the start's reply is still to come */
                tokenline_send(&t->relay_in);
                mark(t, STEP_TOKEN);
                return;
        case RELAYWATCH_ENDED:
        case RELAYWATCH_REFUSED:
        case RELAYWATCH_BROKEN:
        default:
                break; /* no token, ever */
        }
        tokenline_close(&t->relay_in);
}

static int relay_output(void *ud, int channel, const uint8_t *data, size_t len)
{
        turnrun_t *t = ud;
        if (channel != EXS_CH_STDOUT)
                return capture_output(&t->relay_err, channel, data, len);
        pthread_mutex_lock(&t->lock);
        relaywatch_state_t before = t->relay.state;
        int r = relaywatch_feed(&t->relay, data, len);
        if (r >= 0 && t->relay.state != before) {
                if (t->relay.state == RELAYWATCH_READY)
                        mark(t, STEP_READY);
                relay_stdin_step(t);
                wake(t);
        }
        pthread_mutex_unlock(&t->lock);
        return r < 0 ? r : 0;
}

static void relay_done(void *ud)
{
        turnrun_t *t = ud;
        pthread_mutex_lock(&t->lock);
        (void)relaywatch_end(&t->relay);
        t->relay_done = true;
        tokenline_close(&t->relay_in);
        wake(t);
        pthread_mutex_unlock(&t->lock);
}

/* ---- the events ---- */

static int on_event_line(void *ud, const char *text, size_t len, uint64_t offset, uint64_t length)
{
        turnrun_t *t = ud;
        uint64_t next = offset + length + 1;
        json_t *line =
            json_pack("{s:s, s:I, s:I, s:i}", "turn", t->turn, "offset", (json_int_t)offset, "next",
                      (json_int_t)next, "elapsed_ms", (int)elapsed_ms(t));
        if (!line)
                return -ENOMEM;
        json_t *rec = NULL;
        char why[256] = "";
        if (!text) {
                (void)json_object_set_new(line, "oversize", json_integer((json_int_t)length));
        } else if (!(rec = turnevent_parse(text, len, why, sizeof(why)))) {
                (void)json_object_set_new(line, "error", json_string(why));
        }
        const char *name = rec ? json_string_value(json_object_get(rec, "event")) : NULL;
        if (rec)
                (void)json_object_set(line, "record", rec);
        pthread_mutex_lock(&t->lock);
        int r = cli_emit("turn.event", line);
        t->next = next;
        if (!rec)
                t->events_bad = true;
        if (name && strcmp(name, "approval.requested") == 0 && t->policy != POLICY_STDIN &&
            json_is_string(json_object_get(rec, "id")))
                (void)json_array_append(t->pending, json_object_get(rec, "id"));
        if (name && strcmp(name, "harness.started") == 0 && t->step_us[STEP_HARNESS] == 0) {
                mark(t, STEP_HARNESS);
                /* The driver's wall clock, on this host's: the same clock
                 * for a node on this machine, an estimate elsewhere. */
                double ts = json_number_value(json_object_get(rec, "ts"));
                double t0 = (double)t->t0_real.tv_sec + t->t0_real.tv_nsec / 1e9;
                if (ts > t0)
                        t->step_us[STEP_HARNESS_RECORDED] = (long)((ts - t0) * 1e6);
                if (t->timing)
                        emit_timing(t);
        }
        if (name && strcmp(name, "harness.exited") == 0) {
                t->harness_exited = true;
                json_decref(t->harness);
                t->harness = json_pack("{s:O?, s:O?}", "end", json_object_get(rec, "end"), "value",
                                       json_object_get(rec, "value"));
        }
        if (name && strcmp(name, "turn.ended") == 0) {
                json_decref(t->ended);
                t->ended = json_incref(rec);
        }
        wake(t);
        pthread_mutex_unlock(&t->lock);
        json_decref(rec);
        return r;
}

static int events_output(void *ud, int channel, const uint8_t *data, size_t len)
{
        turnrun_t *t = ud;
        if (channel != EXS_CH_STDOUT)
                return capture_output(&t->events_err, channel, data, len);
        return linesplit_feed(&t->lines, data, len, on_event_line, t);
}

static void events_done(void *ud)
{
        turnrun_t *t = ud;
        pthread_mutex_lock(&t->lock);
        t->events_done = true;
        wake(t);
        pthread_mutex_unlock(&t->lock);
}

/* ---- ctl calls ---- */

/* The driver's words from ctl's stderr ("hangar-driver ctl: ..."), or what
 * failed. */
static void ctl_error_text(const capture_t *cap, const hg_error_t *err, char *buf, size_t n)
{
        const char *e = cap->err.data ? cap->err.data : "";
        const char *p = strstr(e, "ctl: ");
        (void)snprintf(buf, n, "%s", p ? p + 5 : e[0] ? e : err->message);
        char *nl = strchr(buf, '\n');
        if (nl)
                *nl = '\0';
}

/* One ctl op, reported as a "ctl" line: ok, and the reply, the output or
 * the driver's error. Returns the line's ok. */
static bool ctl_op(turnrun_t *t, const char *op, char *const *argv, json_t *extra)
{
        _cleanup_json_ json_t *more = extra;
        capture_t cap = {0};
        wsexec_result_t res = {0};
        hg_error_t err = {0};
        int r = turnexec_ctl(t->k, t->ns, t->pod, argv, -1, &cap, &res, &err);
        json_t *line = json_pack("{s:s, s:s}", "turn", t->turn, "op", op);
        if (line && more)
                (void)json_object_update(line, more);
        bool is_run = strcmp(op, "run") == 0 || strcmp(op, "verify") == 0;
        bool ok = r == 0 && (res.exit_code == 0 || is_run);
        if (!line) {
                capture_free(&cap);
                return false;
        }
        if (r < 0) {
                (void)json_object_set_new(line, "error",
                                          json_pack("{s:s, s:s}", "kind",
                                                    wsexec_failure_name(res.failure), "message",
                                                    err.message));
        } else if (!ok || (is_run && cap.err.len && strstr(cap.err.data, "hangar-driver ctl"))) {
                char msg[512];
                ctl_error_text(&cap, &err, msg, sizeof(msg));
                ok = false;
                (void)json_object_set_new(line, "error",
                                          json_pack("{s:s, s:s, s:i}", "kind", "driver", "message",
                                                    msg, "exit", res.exit_code));
        } else if (is_run) {
                /* ctl run prints the output's tail and exits with the
                 * command's status. */
                _cleanup_free_ char *b64 =
                    base64_encode(cap.out.data ? cap.out.data : "", cap.out.len);
                if (b64)
                        (void)json_object_set_new(line, "output_base64", json_string(b64));
                (void)json_object_set_new(line, "exit", json_integer(res.exit_code));
        } else if (strcmp(op, "screen") == 0) {
                (void)json_object_set_new(
                    line, "screen", json_stringn(cap.out.data ? cap.out.data : "", cap.out.len));
        } else {
                json_t *reply = NULL;
                hg_error_t perr = {0};
                if (cap.out.len && jsonx_load(cap.out.data, cap.out.len, 16, &reply, &perr) == 0)
                        (void)json_object_set_new(line, "reply", reply);
        }
        (void)json_object_set_new(line, "ok", json_boolean(ok));
        capture_free(&cap);
        (void)emit(t, "ctl", line);
        return ok;
}

static void ctl_simple(turnrun_t *t, const char *op, const char *arg)
{
        char *argv[] = {"hangar-driver", "ctl", (char *)op, (char *)arg, NULL};
        json_t *extra = NULL;
        if (arg && (strcmp(op, "approve") == 0 || strcmp(op, "deny") == 0))
                extra = json_pack("{s:s}", "id", arg);
        (void)ctl_op(t, op, argv, extra);
}

static void ctl_finish(turnrun_t *t, const char *abort_reason)
{
        char *argv[] = {"hangar-driver",
                        "ctl",
                        "finish",
                        "--turn",
                        (char *)t->turn,
                        abort_reason ? "--abort" : NULL,
                        (char *)abort_reason,
                        NULL};
        (void)ctl_op(t, abort_reason ? "abort" : "finish", argv,
                     abort_reason ? json_pack("{s:s}", "reason", abort_reason) : NULL);
}

/* {"run": [ARGV]} and {"verify": [ARGV]}: `ctl OP -- ARGV...`. */
static int ctl_argv_op(turnrun_t *t, const char *op, const char *pre, json_t *arr, size_t max)
{
        size_t n = json_array_size(arr);
        if (n == 0 || n > max)
                return -EINVAL;
        _cleanup_free_ char **argv = calloc(n + 6, sizeof(char *));
        if (!argv)
                return -ENOMEM;
        size_t i = 0;
        argv[i++] = "hangar-driver";
        argv[i++] = "ctl";
        argv[i++] = (char *)op;
        if (pre)
                argv[i++] = (char *)pre;
        for (size_t a = 0; a < n; a++) {
                const char *s = json_string_value(json_array_get(arr, a));
                if (!s)
                        return -EINVAL;
                argv[i++] = (char *)s;
        }
        argv[i] = NULL;
        (void)ctl_op(t, op, argv, NULL);
        return 0;
}

/* One command line from our stdin. Unknown or malformed commands are said
 * on a "input-error" line; the turn goes on. */
static void command(turnrun_t *t, const char *text, size_t len, bool *finish_sent)
{
        _cleanup_json_ json_t *c = NULL;
        hg_error_t err = {0};
        const char *why = NULL;
        char buf[320];
        if (jsonx_load(text, len, 4, &c, &err) < 0 || !json_is_object(c) ||
            json_object_size(c) != 1) {
                (void)snprintf(buf, sizeof(buf), "a command is one JSON object of one member: %s",
                               err.message[0] ? err.message : "not that");
                why = buf;
        } else {
                const char *key = json_object_iter_key(json_object_iter(c));
                json_t *v = json_object_iter_value(json_object_iter(c));
                const char *s = json_string_value(v);
                if ((strcmp(key, "approve") == 0 || strcmp(key, "deny") == 0 ||
                     strcmp(key, "steer") == 0 || strcmp(key, "signal") == 0) &&
                    s && strlen(s) == json_string_length(v))
                        ctl_simple(t, key, s);
                else if (strcmp(key, "close_stdin") == 0 && json_is_true(v))
                        ctl_simple(t, "close-stdin", NULL);
                else if (strcmp(key, "tree") == 0 && json_is_true(v))
                        ctl_simple(t, "tree", NULL);
                else if (strcmp(key, "screen") == 0 && json_is_true(v))
                        ctl_simple(t, "screen", NULL);
                else if (strcmp(key, "finish") == 0 && json_is_true(v)) {
                        ctl_finish(t, NULL);
                        *finish_sent = true;
                } else if ((strcmp(key, "run") == 0 || strcmp(key, "verify") == 0) &&
                           json_is_array(v)) {
                        if (ctl_argv_op(t, key, "--", v, 256) < 0)
                                why =
                                    "run and verify take a non-empty array of at most 256 strings";
                } else if (strcmp(key, "keys") == 0 && json_is_array(v)) {
                        if (ctl_argv_op(t, "send-keys", NULL, v, 256) < 0)
                                why = "keys takes a non-empty array of at most 256 strings";
                } else if (strcmp(key, "resize") == 0 && json_array_size(v) == 2 &&
                           json_is_integer(json_array_get(v, 0)) &&
                           json_is_integer(json_array_get(v, 1))) {
                        char rows[24], cols[24];
                        (void)snprintf(rows, sizeof(rows), "%lld",
                                       (long long)json_integer_value(json_array_get(v, 0)));
                        (void)snprintf(cols, sizeof(cols), "%lld",
                                       (long long)json_integer_value(json_array_get(v, 1)));
                        char *argv[] = {"hangar-driver", "ctl", "resize", rows, cols, NULL};
                        (void)ctl_op(t, "resize", argv, NULL);
                } else {
                        (void)snprintf(buf, sizeof(buf), "unknown command \"%.40s\" (or its value)",
                                       key);
                        why = buf;
                }
        }
        if (why)
                (void)emit(t, "input-error", json_pack("{s:s}", "message", why));
}

/* Our stdin, read as it comes: whole lines go to command(). */
typedef struct input {
        linesplit_t ls;
        turnrun_t *t;
        bool *finish_sent;
} input_t;

static int on_input_line(void *ud, const char *text, size_t len, uint64_t offset, uint64_t length)
{
        input_t *in = ud;
        (void)offset;
        if (!text) {
                (void)emit(in->t, "input-error",
                           json_pack("{s:s, s:I}", "message", "a command line over 1 MiB", "length",
                                     (json_int_t)length));
                return 0;
        }
        if (len > 0)
                command(in->t, text, len, in->finish_sent);
        return 0;
}

/* ---- the end ---- */

static int turn_exit(const turnrun_t *t)
{
        const char *end = json_string_value(json_object_get(t->ended, "end"));
        return end && strcmp(end, "done") == 0 ? 0 : TURN_EXIT_FAILED;
}

static int error_line(turnrun_t *t, int status, const char *kind, const char *msg)
{
        cli_error("turn", "%s: %s", kind, msg);
        (void)emit(t, "error",
                   json_pack("{s:s, s:s, s:s, s:I, s:i}", "kind", kind, "message", msg, "turn",
                             t->turn, "from", (json_int_t)t->next, "exit", status));
        return status;
}

/* ---- the loop both commands share ---- */

typedef struct loop_state {
        bool finish_sent, aborted;
        int order_status; /* 75 or 76 once the relay broke the order, else 0 */
} loop_state_t;

static void abort_turn(turnrun_t *t, loop_state_t *ls, int status, const char *reason)
{
        if (ls->aborted)
                return;
        ls->aborted = true;
        ls->order_status = status;
        cli_error("turn", "%s: the turn is ended", reason);
        ctl_finish(t, reason);
}

/* The relay's state, seen from the main thread: what to do about it. */
static void check_relay(turnrun_t *t, loop_state_t *ls, bool with_relay)
{
        if (!with_relay)
                return;
        pthread_mutex_lock(&t->lock);
        bool started = t->started;
        relaywatch_state_t s = t->relay.state;
        bool done = t->relay_done;
        bool report = s != RELAYWATCH_WAITING && s != RELAYWATCH_BROKEN && !t->relay_reported &&
                      t->relay.ready && t->started_said;
        json_t *ready = report ? json_incref(t->relay.ready) : NULL;
        if (report)
                t->relay_reported = true;
        const char *outcome = json_string_value(json_object_get(t->relay.outcome, "relay"));
        bool turn_over = t->ended != NULL;
        char why[300];
        (void)snprintf(why, sizeof(why), "%s", t->relay.why);
        char outcome_s[64];
        (void)snprintf(outcome_s, sizeof(outcome_s), "%s", outcome ? outcome : "");
        pthread_mutex_unlock(&t->lock);
        if (ready)
                (void)emit(t, "relay.ready",
                           json_pack("{s:s, s:o}", "turn", t->turn, "ready", ready));
        /* Before the start's reply there is no turn to end (and no token
         * goes to a relay that broke the order: relay_stdin_step). */
        if (!started)
                return;
        pthread_mutex_lock(&t->lock);
        int agent_status = t->agent_status;
        char agent_why[sizeof(t->agent_why)];
        (void)snprintf(agent_why, sizeof(agent_why), "%s", t->agent_why);
        pthread_mutex_unlock(&t->lock);
        if (agent_status) {
                /* No relay was started: the turn it began is ended. */
                abort_turn(t, ls, agent_status, agent_why);
                return;
        }
        if (s == RELAYWATCH_BROKEN) {
                if (!ls->aborted)
                        (void)emit(t, "relay.broken",
                                   json_pack("{s:s, s:s}", "turn", t->turn, "reason", why));
                abort_turn(t, ls, TURN_EXIT_ORDER, why);
                return;
        }
        if (!done || turn_over)
                return;
        /* The relay's exec ended while the turn is in flight: without its
         * done line, it may have left the token to someone else. */
        if (s == RELAYWATCH_REFUSED)
                abort_turn(t, ls, TURN_EXIT_RELAY, "the relay refused to start the turn");
        else if (s != RELAYWATCH_ENDED || strcmp(outcome_s, "done") != 0)
                abort_turn(t, ls, TURN_EXIT_RELAY, "the relay ended without its done line");
}

static void answer_pending(turnrun_t *t)
{
        for (;;) {
                pthread_mutex_lock(&t->lock);
                json_t *id =
                    json_array_size(t->pending) ? json_incref(json_array_get(t->pending, 0)) : NULL;
                if (id)
                        (void)json_array_remove(t->pending, 0);
                pthread_mutex_unlock(&t->lock);
                if (!id)
                        return;
                ctl_simple(t, t->policy == POLICY_APPROVE ? "approve" : "deny",
                           json_string_value(id));
                json_decref(id);
        }
}

/* Follows until the events stream ended (and, with a relay, its exec, for
 * at most RELAY_END_WAIT_MS after the turn's end). */
static void follow(turnrun_t *t, loop_state_t *ls, int wake_rd, bool with_relay)
{
        input_t in = {.t = t, .finish_sent = &ls->finish_sent};
        linesplit_init(&in.ls, INPUT_LINE_MAX, 0);
        bool stdin_open = true;
        long end_seen_ms = -1;
        for (;;) {
                check_relay(t, ls, with_relay);
                answer_pending(t);
                pthread_mutex_lock(&t->lock);
                bool exited = t->harness_exited, events_over = t->events_done;
                bool relay_over = !with_relay || t->relay_done;
                pthread_mutex_unlock(&t->lock);
                if (exited && !t->hold && !ls->finish_sent && !ls->aborted) {
                        ls->finish_sent = true;
                        ctl_finish(t, NULL);
                }
                if (events_over && relay_over)
                        break;
                if (events_over && end_seen_ms < 0)
                        end_seen_ms = elapsed_ms(t);
                if (end_seen_ms >= 0 && elapsed_ms(t) - end_seen_ms > RELAY_END_WAIT_MS)
                        break; /* the relay's exec outlives the turn: not waited for */
                struct pollfd p[2] = {{.fd = wake_rd, .events = POLLIN},
                                      {.fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN}};
                int n = poll(p, 2, end_seen_ms >= 0 ? 500 : -1);
                if (n < 0 && errno != EINTR)
                        break;
                if (n <= 0)
                        continue;
                if (p[0].revents) {
                        char buf[256];
                        ssize_t r = read(wake_rd, buf, sizeof(buf));
                        (void)r;
                }
                if (p[1].revents) {
                        char buf[16384];
                        ssize_t r = read(STDIN_FILENO, buf, sizeof(buf));
                        if (r < 0 && errno == EINTR)
                                continue;
                        if (r <= 0) {
                                stdin_open = false;
                                /* Held: the end of hangar's input is its finish. */
                                if (t->hold && !ls->finish_sent && !ls->aborted) {
                                        ls->finish_sent = true;
                                        ctl_finish(t, NULL);
                                }
                                continue;
                        }
                        (void)linesplit_feed(&in.ls, (const uint8_t *)buf, (size_t)r, on_input_line,
                                             &in);
                }
        }
        linesplit_free(&in.ls);
}

/* The last line: how the turn ended (its record), the harness, the relay. */
static int finish_line(turnrun_t *t, loop_state_t *ls, execjob_t *events, bool with_relay,
                       const execjob_t *relay)
{
        pthread_mutex_lock(&t->lock);
        json_t *ended = json_incref(t->ended);
        json_t *harness = json_incref(t->harness);
        json_t *outcome = json_incref(t->relay.outcome);
        bool relay_over = t->relay_done;
        pthread_mutex_unlock(&t->lock);
        if (!ended) {
                /* The events stream ended before the turn's end: the turn
                 * goes on in the pod; attach picks it up from "next". */
                char msg[ERROR_MESSAGE_MAX + 64];
                int status = CLI_EXIT_CONNECT;
                const char *kind = "connect";
                if (execjob_status(events) < 0) {
                        status = cli_exit_for(events->res.failure);
                        kind = wsexec_failure_name(events->res.failure);
                        (void)snprintf(msg, sizeof(msg), "following the events: %s",
                                       events->err.message);
                } else if (events->res.exit_code != 0) {
                        status = TURN_EXIT_REFUSED;
                        kind = "refused";
                        ctl_error_text(&t->events_err, &events->err, msg, sizeof(msg));
                } else {
                        (void)snprintf(msg, sizeof(msg),
                                       "the events ended before the turn's end (attach --turn %s "
                                       "--from %llu)",
                                       t->turn, (unsigned long long)t->next);
                }
                json_decref(harness);
                json_decref(outcome);
                return error_line(t, ls->order_status ? ls->order_status : status, kind, msg);
        }
        json_t *line =
            json_pack("{s:s, s:O?, s:O?, s:o?, s:I, s:i, s:i}", "turn", t->turn, "end",
                      json_object_get(ended, "end"), "reason", json_object_get(ended, "reason"),
                      "harness", harness, "next", (json_int_t)t->next, "execs",
                      (int)turnexec_count(), "elapsed_ms", (int)elapsed_ms(t));
        if (line && with_relay) {
                (void)json_object_set_new(line, "relay", outcome ? outcome : json_null());
                (void)json_object_set_new(line, "relay_exit",
                                          relay_over && execjob_status(relay) == 0
                                              ? json_integer(relay->res.exit_code)
                                              : json_null());
        } else {
                json_decref(outcome);
        }
        int status = ls->order_status ? ls->order_status : turn_exit(t);
        if (line)
                (void)json_object_set_new(line, "exit", json_integer(status));
        json_decref(ended);
        (void)emit(t, "turn.ended", line);
        return status;
}

/* ---- setup ---- */

typedef struct turn_args {
        cli_api_t api;
        const char *target, *spec_path, *turn, *container, *relay;
        uint64_t from;
        approvals_policy_t policy;
        bool hold, timing;
} turn_args_t;

static int parse_args(int argc, char **argv, bool run, turn_args_t *a)
{
        static const struct option opts[] = {{"spec", required_argument, NULL, 's'},
                                             {"turn", required_argument, NULL, 't'},
                                             {"from", required_argument, NULL, 'f'},
                                             {"container", required_argument, NULL, 'c'},
                                             {"relay", required_argument, NULL, 'r'},
                                             {"approvals", required_argument, NULL, 'a'},
                                             {"hold", no_argument, NULL, 'H'},
                                             {"kubeconfig", required_argument, NULL, 'k'},
                                             {"context", required_argument, NULL, 'x'},
                                             {"timing", no_argument, NULL, 'T'},
                                             {NULL, 0, NULL, 0}};
        *a = (turn_args_t){0};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
                switch (c) {
                case 's':
                        a->spec_path = optarg;
                        break;
                case 't':
                        a->turn = optarg;
                        break;
                case 'f':
                        /* The driver's bound on an offset: exact in JSON. */
                        if (parse_u64(optarg, &a->from) < 0 || a->from > (UINT64_C(1) << 53))
                                return -EINVAL;
                        break;
                case 'c':
                        a->container = optarg;
                        break;
                case 'r':
                        a->relay = optarg;
                        break;
                case 'a':
                        if (strcmp(optarg, "stdin") == 0)
                                a->policy = POLICY_STDIN;
                        else if (strcmp(optarg, "approve") == 0)
                                a->policy = POLICY_APPROVE;
                        else if (strcmp(optarg, "deny") == 0)
                                a->policy = POLICY_DENY;
                        else
                                return -EINVAL;
                        break;
                case 'H':
                        a->hold = true;
                        break;
                case 'T':
                        a->timing = true;
                        break;
                case 'k':
                        a->api.kubeconfig = optarg;
                        break;
                case 'x':
                        a->api.context = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        }
        if (optind + 1 != argc)
                return -EINVAL;
        a->target = argv[optind];
        if (run ? !a->spec_path || a->turn || a->from
                : !a->turn || a->spec_path || a->container || a->relay || a->timing)
                return -EINVAL;
        /* Never the driver's container, whatever the pod says. */
        if (a->container && strcmp(a->container, SHAPE_DRIVER_CONTAINER) == 0)
                return -EINVAL;
        if (!run && !cli_id_ok(a->turn))
                return -EINVAL; /* before any credential is read */
        return 0;
}

/* The spec from FILE, checked enough to know its turn id; in a memfd for
 * the start's stdin. */
static int load_spec(const char *path, int *ret_fd, char **ret_turn, char *msg, size_t n)
{
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = cli_load_spec(path, SPEC_MAX_BYTES, "turn", &data, &len, ret_turn, msg, n);
        if (r < 0)
                return r;
        int fd = cli_memfd_with("hangar-turn-spec", data, len);
        explicit_bzero(data, len); /* the run key */
        if (fd < 0) {
                (void)snprintf(msg, n, "memfd: %s", strerror(-fd));
                free(*ret_turn);
                *ret_turn = NULL;
                return -EIO;
        }
        *ret_fd = fd;
        return 0;
}

static int turn_init(turnrun_t *t, int *wake_rd)
{
        int p[2];
        if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
                return -errno;
        *wake_rd = p[0];
        t->wake_wr = p[1];
        t->relay_in = (tokenline_t){.wr = -1};
        t->pending = json_array();
        (void)pthread_mutex_init(&t->lock, NULL);
        (void)pthread_cond_init(&t->agent_cond, NULL);
        relaywatch_init(&t->relay);
        clock_gettime(CLOCK_MONOTONIC, &t->t0);
        clock_gettime(CLOCK_REALTIME, &t->t0_real);
        return t->pending ? 0 : -ENOMEM;
}

static void turn_free(turnrun_t *t, int wake_rd)
{
        (void)close(wake_rd);
        (void)close(t->wake_wr);
        tokenline_close(&t->relay_in);
        relaywatch_free(&t->relay);
        linesplit_free(&t->lines);
        json_decref(t->pending);
        json_decref(t->harness);
        json_decref(t->ended);
        capture_free(&t->relay_err);
        capture_free(&t->events_err);
        capture_free(&t->start_err);
        if (t->start_reply.data)
                explicit_bzero(t->start_reply.data, t->start_reply.len);
        strbuf_free(&t->start_reply);
}

static void events_start(turnrun_t *t, execjob_t *job, uint64_t from)
{
        (void)snprintf(t->events_from, sizeof(t->events_from), "%llu", (unsigned long long)from);
        linesplit_init(&t->lines, TURNEVENT_LINE_MAX, from);
        t->next = from;
        char **argv = t->events_argv;
        argv[0] = "hangar-driver", argv[1] = "ctl", argv[2] = "events", argv[3] = "--turn";
        argv[4] = (char *)t->turn, argv[5] = "--from", argv[6] = t->events_from;
        argv[7] = "--follow", argv[8] = NULL;
        *job = (execjob_t){
            .k = t->k,
            .req = {.ns = t->ns, .pod = t->pod, .container = SHAPE_DRIVER_CONTAINER, .argv = argv},
            .io = {.in_fd = -1, .output = events_output, .ud = t},
            .done = events_done,
            .done_ud = t};
        execjob_start(job);
}

/* Under the lock: no token will come (the start failed or was refused):
 * the relay sees its stdin end and stops, having swept nothing. */
static void relay_no_token(turnrun_t *t)
{
        tokenline_close(&t->relay_in);
}

/* The start's reply line: the token line for the relay, and a
 * "turn.started" line without the token. 0, or the exit status of a
 * refusal (said on its lines). Runs on the start's exec thread. */
static int start_reply(turnrun_t *t, const char *text, size_t len)
{
        json_t *reply = NULL;
        hg_error_t err = {0};
        if (jsonx_load(text, len, 16, &reply, &err) < 0 || !json_is_object(reply)) {
                json_decref(reply);
                char msg[ERROR_MESSAGE_MAX + 64];
                (void)snprintf(msg, sizeof(msg), "ctl start's reply is not a JSON object: %s",
                               err.message);
                return error_line(t, CLI_EXIT_PROTOCOL, "protocol", msg);
        }
        const char *token = json_string_value(json_object_get(reply, "token"));
        const char *instance = json_string_value(json_object_get(reply, "instance"));
        bool ok = json_is_true(json_object_get(reply, "ok"));
        if (!ok || !token || !instance || strlen(token) != 64 || strlen(instance) != 32 ||
            strspn(token, "0123456789abcdef") != 64 || strspn(instance, "0123456789abcdef") != 32) {
                (void)json_object_del(reply, "token");
                (void)emit(t, "turn.refused",
                           json_pack("{s:s, s:o}", "turn", t->turn, "reply", json_incref(reply)));
                const char *e = json_string_value(json_object_get(reply, "error"));
                char msg[ERROR_MESSAGE_MAX];
                (void)snprintf(msg, sizeof(msg), "ctl start: %s",
                               e ? e : "no token and instance in the reply");
                json_decref(reply);
                return error_line(t, ok ? CLI_EXIT_PROTOCOL : TURN_EXIT_REFUSED,
                                  ok ? "protocol" : "refused", msg);
        }
        pthread_mutex_lock(&t->lock);
        mark(t, STEP_REPLY);
        /* The pod's read is a round trip, the start an exec: it is in. */
        while (!t->agent_known)
                pthread_cond_wait(&t->agent_cond, &t->lock);
        json_t *agent = t->agent_why[0] ? json_null()
                                        : json_pack("{s:s, s:s}", "container", t->agent_container,
                                                    "relay", t->relay_path);
        (void)snprintf(t->relay_in.line, sizeof(t->relay_in.line), "%s %s\n", token, instance);
        t->relay_in.known = true;
        t->started = true;
        relay_stdin_step(t);
        pthread_mutex_unlock(&t->lock);
        (void)json_object_del(reply, "token");
        (void)json_object_del(reply, "ok");
        (void)json_object_set_new(reply, "agent", agent);
        (void)emit(t, "turn.started", reply);
        /* The relay's ready line may be in first (the driver writes the
         * files it waits for before it replies): it is told after this. */
        pthread_mutex_lock(&t->lock);
        t->started_said = true;
        wake(t);
        pthread_mutex_unlock(&t->lock);
        return 0;
}

/* `ctl start --follow`'s stdout: the reply line, then events.jsonl from 0,
 * live, until the turn ends (one exec starts and follows the turn). */
static int start_output(void *ud, int channel, const uint8_t *data, size_t len)
{
        turnrun_t *t = ud;
        if (channel != EXS_CH_STDOUT)
                return capture_output(&t->start_err, channel, data, len);
        if (!t->reply_seen) {
                const uint8_t *nl = memchr(data, '\n', len);
                size_t take = nl ? (size_t)(nl - data) : len;
                if (t->start_reply.len + take > START_REPLY_MAX) {
                        t->reply_seen = true;
                        t->start_status = error_line(t, CLI_EXIT_PROTOCOL, "protocol",
                                                     "ctl start's reply is over 64 KiB");
                        return -EPROTO;
                }
                if (strbuf_append(&t->start_reply, (const char *)data, take) < 0)
                        return -ENOMEM;
                if (!nl)
                        return 0;
                t->reply_seen = true;
                t->start_status = start_reply(t, t->start_reply.data, t->start_reply.len);
                /* The reply held the token. */
                explicit_bzero(t->start_reply.data, t->start_reply.len);
                strbuf_free(&t->start_reply);
                if (t->start_status != 0)
                        return 0;
                data = nl + 1;
                len -= take + 1;
        }
        return len ? linesplit_feed(&t->lines, data, len, on_event_line, t) : 0;
}

static void start_done(void *ud)
{
        turnrun_t *t = ud;
        pthread_mutex_lock(&t->lock);
        if (!t->started)
                relay_no_token(t);
        t->events_done = true;
        wake(t);
        pthread_mutex_unlock(&t->lock);
}

/* From the pod's spec, before any exec into the agent's container: the
 * agent's container and the relay's path (the relay waits for the start's
 * files anyway: this read is off the way to the token), told to the
 * start's thread (agent_known). A pod that names no agent the relay may
 * run in gets no relay, so no token: the turn the start began is ended
 * (check_relay). 0, or the exit status for why (said). */
static int run_agent(turnrun_t *t, const turn_args_t *a, const hg_config_t *cfg, podagent_t *agent,
                     char *relay_path, size_t path_size)
{
        _cleanup_json_ json_t *pod = NULL;
        hg_error_t perr = {0};
        int agent_status = 0;
        char why[sizeof(t->agent_why)] = "";
        if (cli_read_pod(t->k, t->ns, t->pod, &pod, &agent_status, &perr) < 0)
                (void)snprintf(why, sizeof(why), "the pod's spec: %s", perr.message);
        else if (podagent_resolve(cfg, pod, a->container, agent, why, sizeof(why)) < 0)
                agent_status = CLI_EXIT_NOT_RUNNABLE;
        else
                (void)podagent_program(agent, "hangar-relay", a->relay, relay_path, path_size);
        pthread_mutex_lock(&t->lock);
        mark(t, STEP_POD_READ);
        t->agent_container = agent->container;
        t->relay_path = relay_path;
        t->agent_status = agent_status;
        (void)snprintf(t->agent_why, sizeof(t->agent_why), "%s", why);
        t->agent_known = true;
        if (agent_status) {
                t->relay_done = true; /* there is none */
                relay_no_token(t);
        }
        pthread_cond_broadcast(&t->agent_cond);
        pthread_mutex_unlock(&t->lock);
        if (agent_status)
                cli_error("turn run", "%s", why);
        return agent_status;
}

/* ctl start ended without its reply line: why, as an error line; its status. */
static int no_reply(turnrun_t *t, const execjob_t *start)
{
        if (execjob_status(start) < 0)
                return error_line(t, cli_exit_for(start->res.failure),
                                  wsexec_failure_name(start->res.failure), start->err.message);
        char m[ERROR_MESSAGE_MAX + 64];
        ctl_error_text(&t->start_err, &start->err, m, sizeof(m));
        return error_line(t, CLI_EXIT_PROTOCOL, "protocol", m[0] ? m : "ctl start gave no reply");
}

static int turn_run(turn_args_t *a, turnrun_t *t, int wake_rd)
{
        char msg[ERROR_MESSAGE_MAX + 64];
        _cleanup_free_ char *turn_id = NULL;
        _cleanup_close_ int spec_fd = -1;
        if (load_spec(a->spec_path, &spec_fd, &turn_id, msg, sizeof(msg)) < 0) {
                cli_error("turn run", "%s", msg);
                return CLI_EXIT_USAGE;
        }
        t->turn = turn_id;
        _cleanup_config_ hg_config_t cfg = {0};
        hg_error_t perr = {0};
        if (cli_config(&cfg, NULL, NULL, 0, &perr) < 0) {
                cli_error("turn run", "%s", perr.message);
                return CLI_EXIT_USAGE;
        }
        int rd = -1;
        if (tokenline_open(&t->relay_in, &rd) < 0)
                return error_line(t, CLI_EXIT_LOCAL, "local", "pipe");
        _cleanup_close_ int relay_in_rd = rd;
        /* One exec starts the turn and follows its events: at once, as it
         * goes to hangar-driver whatever the pod's agent is. */
        char *start_argv[] = {"hangar-driver", "ctl", "start", "--spec", "-", "--follow", NULL};
        linesplit_init(&t->lines, TURNEVENT_LINE_MAX, 0);
        execjob_t start = {
            .k = t->k,
            .req = {.ns = t->ns,
                    .pod = t->pod,
                    .container = SHAPE_DRIVER_CONTAINER,
                    .argv = start_argv,
                    .stdin_open = true,
                    /* The spec is read to its end: v5's close. */
                    .only = EXS_PROTO_V5},
            .io = {.in_fd = spec_fd, .output = start_output, .ud = t, .phase = start_phase},
            .done = start_done,
            .done_ud = t};
        execjob_start(&start);
        /* Meanwhile the agent's container and the relay's path (run_agent). */
        podagent_t agent = {0};
        char relay_path[512] = "";
        int agent_status = run_agent(t, a, &cfg, &agent, relay_path, sizeof(relay_path));
        /* The relay waits for this turn's files (the start may not have
         * written them yet; a turn in flight may hold them), never sweeping
         * for another turn; the end of its stdin ends the wait. */
        char *relay_argv[] = {relay_path,    "--turn",          (char *)t->turn,
                              "--wait-port", RELAY_WAIT_PORT_S, NULL};
        execjob_t relay;
        execjob_side(&relay, t->k, t->ns, t->pod, agent.container, relay_argv, relay_in_rd,
                     relay_output, t);
        relay.io.phase = relay_phase;
        relay.done = relay_done;
        relay.done_ud = t;
        if (agent_status == 0)
                execjob_start(&relay);
        loop_state_t ls = {0};
        follow(t, &ls, wake_rd, true);
        execjob_join(&start);
        pthread_mutex_lock(&t->lock);
        bool relay_over = t->relay_done, reply_seen = t->reply_seen;
        pthread_mutex_unlock(&t->lock);
        if (relay_over)
                execjob_join(&relay);
        int status = reply_seen ? t->start_status : no_reply(t, &start);
        if (status == 0) {
                check_relay(t, &ls, true);
                status = finish_line(t, &ls, &start, true, &relay);
        }
        if (!relay_over) {
                cli_error("turn run", "the relay's exec outlived the turn: not waited for");
                fflush(NULL);
                _exit(status); /* its thread is still in the exec */
        }
        return status;
}

static int turn_attach(turn_args_t *a, turnrun_t *t, int wake_rd)
{
        if (!cli_id_ok(a->turn)) {
                cli_error("turn attach", "--turn must be 1-64 of [A-Za-z0-9._-]");
                return CLI_EXIT_USAGE;
        }
        t->turn = a->turn;
        execjob_t events;
        events_start(t, &events, a->from);
        loop_state_t ls = {0};
        follow(t, &ls, wake_rd, false);
        execjob_join(&events);
        return finish_line(t, &ls, &events, false, NULL);
}

int cmd_turn(int argc, char **argv)
{
        if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
                fputs(usage_text, argc < 2 ? stderr : stdout);
                return argc < 2 ? CLI_EXIT_USAGE : 0;
        }
        bool run = strcmp(argv[1], "run") == 0;
        if (!run && strcmp(argv[1], "attach") != 0) {
                fputs(usage_text, stderr);
                return CLI_EXIT_USAGE;
        }
        turn_args_t a;
        if (parse_args(argc - 1, argv + 1, run, &a) < 0) {
                fputs(usage_text, stderr);
                return CLI_EXIT_USAGE;
        }
        _cleanup_free_ char *ns = NULL, *pod = NULL;
        if (cli_parse_target(a.target, &ns, &pod) < 0) {
                cli_error("turn", "target must be NS/POD (Kubernetes names): '%s'", a.target);
                return CLI_EXIT_USAGE;
        }
        hg_error_t err = {0};
        k8s_client_t *k = NULL;
        if (cli_client(&a.api, &k, &err) < 0) {
                cli_error("turn", "%s", err.message);
                return CLI_EXIT_CONFIG;
        }
        signal(SIGPIPE, SIG_IGN);
        turnrun_t t = {
            .k = k, .ns = ns, .pod = pod, .policy = a.policy, .hold = a.hold, .timing = a.timing};
        int wake_rd = -1;
        int status;
        if (turn_init(&t, &wake_rd) < 0)
                status = CLI_EXIT_LOCAL;
        else
                status = run ? turn_run(&a, &t, wake_rd) : turn_attach(&a, &t, wake_rd);
        turn_free(&t, wake_rd);
        k8s_client_free(k);
        return status;
}
