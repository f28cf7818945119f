/* hangar-relay: started by hangar in the agent's container, as the agent,
 * through pods/exec. Makes itself non-dumpable, checks hangar-home, sweeps
 * the container (the sealed start: every other process of the agent's but
 * PID 1 killed), says ready, reads the run's token from stdin, connects twice to the driver (io,
 * then ctl) on the port the driver wrote into hangar-home, and relays the harness (docs/turn.md).
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "channel.h"
#include "cleanup.h"
#include "config.h"
#include "conn.h"
#include "fileio.h"
#include "home.h"
#include "jsonx.h"
#include "layout.h"
#include "pty.h"
#include "scratch.h"
#include "session.h"
#include "split.h"
#include "strparse.h"
#include "sweep.h"
#include "token.h"
#include "turnfiles.h"

/* Exit statuses of the relay itself; otherwise it exits as the harness did. */
#define EXIT_SINGLE_USER 3   /* the gate says: run this turn single-user */
#define EXIT_REFUSED     4   /* the gate says: refuse this turn */
#define EXIT_RELAY_FAIL  125 /* the relay could not do its job (JSON says why) */

static const char usage[] =
    "usage: hangar-relay [--config FILE] [--connect-timeout SECONDS] [--turn ID]\n"
    "                    [--wait-port SECONDS]\n"
    "\n"
    "Run by hangar in the agent's container, as the agent. Checks that hangar-home\n"
    "is the driver's read-only mount, kills every other process of the container but\n"
    "PID 1 (unless the turn keeps them), prints {\"relay\":\"ready\",...} once sealed,\n"
    "then reads the run's relay token (64 hex digits; then a space and the daemon's\n"
    "instance id, which must be the one named in hangar-home) on stdin (written by\n"
    "hangar only after that line), connects to hangar-driver on the port in hangar-home,\n"
    "starts the run's script with /bin/sh from the turn's directory, and relays\n"
    "it. Prints one JSON line on stdout when done. Exit status: the\n"
    "harness's (128+N for a signal), 3 single-user, 4 refused (HANGAR_UID_SPLIT),\n"
    "125 the relay failed, 2 usage. --turn ID --wait-port S: wait up to S seconds for\n"
    "the port file and a turn file naming ID (hangar started the relay together with\n"
    "ctl start); the end of stdin ends the wait.\n";

/* The one line hangar reads from the relay's stdout. */
static int report(int status, const char *outcome, const char *reason, json_t *extra)
{
        return jsonx_print_outcome(status, "relay", outcome, reason, extra);
}

/* Once the sealed start has run: {"sealed", "sweep"} for every outcome line
 * after it, so hangar sees the sweep's report however the relay ends. */
static json_t *seal_report;

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
        char msg[ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "hangar-relay: %s\n", msg);
        return report(EXIT_RELAY_FAIL, "failed", msg, seal_report);
}

/* Before any secret is in memory: no ptrace, /proc/PID/mem or
 * /proc/PID/fd by the agent's other processes (same uid, no
 * CAP_SYS_PTRACE), no core dumps. Done in a constructor as well as first in
 * main, so the window after execve in which the relay is still dumpable is
 * only the dynamic loader's; an agent process that opened its stdin or
 * stdout in it is killed by the sweep before the relay says "ready", and
 * the token is only written after that line (see seal and main). Checked
 * in main. */
static void harden_now(void)
{
        struct rlimit none = {0, 0};
        (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        (void)setrlimit(RLIMIT_CORE, &none);
}

/* Whether execve already made the relay non-dumpable: the kernel does so
 * when the binary is not readable by the user running it (mode 0711,
 * owned by another uid), and then there is no window at all. */
static int dumpable_at_exec = -1;

__attribute__((constructor)) static void harden_early(void)
{
        dumpable_at_exec = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        harden_now();
}

static int harden(void)
{
        harden_now();
        struct rlimit core;
        if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0)
                return -EPERM;
        if (getrlimit(RLIMIT_CORE, &core) < 0 || core.rlim_cur != 0)
                return -EPERM;
        /* Orphans of the harness come back to the relay, which reaps them. */
        (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        return 0;
}

/* The sweep's bound: a fork storm that outlives it fails the turn. */
#define SWEEP_DEADLINE_MS 10000

/* hangar writes the token only after this line (docs/protocol.md):
 * {"relay":"ready","window":W,"sealed":S,"sweep":{...}}. */
static int say_ready(bool window, bool sealed, json_t *sweep)
{
        _cleanup_json_ json_t *line = json_pack("{s:s, s:b, s:b, s:O}", "relay", "ready", "window",
                                                window, "sealed", sealed, "sweep", sweep);
        _cleanup_free_ char *text = line ? jsonx_dumps(line, JSON_COMPACT) : NULL;
        if (!text)
                return -ENOMEM;
        size_t len = strlen(text);
        text[len] = '\n'; /* json_dumps's NUL, replaced: one write, one line */
        return fd_write_all(STDOUT_FILENO, text, len + 1);
}

/* The sealed start (docs/turn.md): before the token exists anywhere the
 * agent could reach, every other process of this PID namespace that the
 * relay may signal is killed, except PID 1 (the container's own command).
 * One that opened /proc/RELAY/fd/0 or fd/1 in the moment after execve, before
 * the relay was non-dumpable, dies with its descriptors, and so does any
 * process it could have handed them to over a unix socket. The relay is
 * non-dumpable by now, so no process started after the sweep can open them.
 * Returns 0 with *ret_sweep set (the report, or {"skipped": why}) and
 * *ret_sealed, or -errno with err set (the sweep's report in *ret_sweep). */
static int seal(bool keep_processes, bool window, bool *ret_sealed, json_t **ret_sweep,
                hg_error_t *err)
{
        *ret_sealed = false;
        if (keep_processes) {
                *ret_sweep = json_pack("{s:s}", "skipped", "keep-processes");
                return *ret_sweep ? 0 : -ENOMEM;
        }
        sweep_report_t rep;
        int r = sweep_others(SWEEP_DEADLINE_MS, &rep);
        json_t *j = sweep_report_json(&rep);
        if (!j)
                return -ENOMEM;
        if (r == -ENOTSUP && strcmp(rep.code, "host-pid-namespace") == 0) {
                /* Only a test gets here: a split turn needs the probe's
                 * split-active verdict, which a pod sharing the host's PID
                 * namespace is never given (docs/turn.md). kill(-1) here would
                 * reach every process of this uid on the machine. */
                json_decref(j);
                fprintf(stderr, "hangar-relay: %s: the token race is detected only\n", rep.reason);
                *ret_sweep = json_pack("{s:s}", "skipped", "host-pid-namespace");
                return *ret_sweep ? 0 : -ENOMEM;
        }
        *ret_sweep = j;
        if (r < 0)
                return error_set(err, r, "the sealed start failed: %s", rep.reason);
        /* PID 1 survives the sweep: with a window after execve, sealed only
         * if no process of the agent's could ever have taken PID 1 over
         * (ptrace) to open the relay's stdin for it. Otherwise detected only. */
        *ret_sealed = !window || sweep_pid1_proven(rep.pid1);
        return 0;
}

/* Before the ready line, stdin must hold nothing: bytes already there were
 * written before the relay was hardened, when any process of the agent's
 * could have opened /proc/RELAY/fd/0 and read them too. Refused. */
static int stdin_is_empty(hg_error_t *err)
{
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int n;
        do
                n = poll(&p, 1, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return error_set(err, -errno, "poll: %s", strerror(errno));
        if (n > 0 && (p.revents & POLLIN))
                return error_set(err, -EPROTO,
                                 "the token was on stdin before the relay said it was ready "
                                 "(hangar must wait for {\"relay\":\"ready\"}): refusing it");
        return 0;
}

/* One line from stdin: the token's 64 hex digits, or those, one space and
 * the instance id of the daemon that started the turn (ctl start's or ctl
 * token's "instance"), then "\n"; nothing else. At most that many bytes:
 * no allocation, and the buffer is wiped once parsed. ret_instance is ""
 * when hangar gave none. */
static int read_token(int64_t deadline, token_t *ret, char ret_instance[INSTANCE_HEX_LEN + 1],
                      hg_error_t *err)
{
        char buf[TOKEN_HEX_LEN + 1 + INSTANCE_HEX_LEN + 1];
        size_t len = 0;
        while (len < sizeof(buf)) {
                struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
                int64_t left = deadline - conn_now_ms();
                int pr = poll(&p, 1, left <= 0 ? 0 : left > 60000 ? 60000 : (int)left);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr == 0 && conn_now_ms() < deadline)
                        continue;
                if (pr <= 0) {
                        token_wipe(buf, sizeof(buf));
                        return error_set(err, -ETIMEDOUT, "no token within the connect timeout");
                }
                ssize_t n = read(STDIN_FILENO, buf + len, 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (buf[len++] == '\n')
                        break;
        }
        ret_instance[0] = '\0';
        if (len == sizeof(buf) || (len > TOKEN_HEX_LEN + 1 && buf[TOKEN_HEX_LEN] == ' ')) {
                if (len != sizeof(buf) || buf[TOKEN_HEX_LEN] != ' ' || buf[len - 1] != '\n' ||
                    !turnfiles_instance_ok(buf + TOKEN_HEX_LEN + 1, INSTANCE_HEX_LEN)) {
                        token_wipe(buf, sizeof(buf));
                        return error_set(err, -EINVAL,
                                         "expected the token (64 hex digits), optionally a space "
                                         "and the daemon's instance id (32 hex digits), and a "
                                         "newline");
                }
                memcpy(ret_instance, buf + TOKEN_HEX_LEN + 1, INSTANCE_HEX_LEN);
                ret_instance[INSTANCE_HEX_LEN] = '\0';
                len = TOKEN_HEX_LEN;
        }
        int r = token_from_hex(buf, len, ret, err);
        token_wipe(buf, sizeof(buf));
        return r;
}

/* The command line. Returns -1 to go on, or the status to exit with. */
typedef struct relay_args {
        const char *config_path;
        uint32_t connect_timeout_s, wait_port_s;
        const char *want_turn;
} relay_args_t;

static int parse_args(int argc, char **argv, relay_args_t *a)
{
        static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                             {"connect-timeout", required_argument, NULL, 't'},
                                             {"wait-port", required_argument, NULL, 'w'},
                                             {"turn", required_argument, NULL, 'T'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        *a = (relay_args_t){.config_path = getenv("HANGAR_CONFIG"), .connect_timeout_s = 10};
        int c;
        while ((c = getopt_long(argc, argv, "c:t:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        a->config_path = optarg;
                        break;
                case 't':
                        if (parse_u32(optarg, &a->connect_timeout_s) < 0 ||
                            a->connect_timeout_s == 0 || a->connect_timeout_s > 3600) {
                                fputs("hangar-relay: --connect-timeout takes 1-3600 seconds\n",
                                      stderr);
                                return 2;
                        }
                        break;
                case 'w':
                        if (parse_u32(optarg, &a->wait_port_s) < 0 || a->wait_port_s > 3600) {
                                fputs("hangar-relay: --wait-port takes 0-3600 seconds\n", stderr);
                                return 2;
                        }
                        break;
                case 'T':
                        if (!scratch_turn_id_valid(optarg)) {
                                fputs("hangar-relay: --turn takes a turn id\n", stderr);
                                return 2;
                        }
                        a->want_turn = optarg;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return 0;
                default:
                        fputs(usage, stderr);
                        return 2;
                }
        }
        if (optind != argc) {
                fputs(usage, stderr);
                return 2;
        }
        return -1;
}

/* HANGAR_UID_SPLIT against the probe's verdict in hangar-home. Returns -1
 * when the turn may run split, or the status to exit with (its line said). */
static int split_gate(split_mode_t mode, int home_fd)
{
        _cleanup_free_ char *verdict_path = NULL;
        if (asprintf(&verdict_path, "/proc/self/fd/%d/%s", home_fd, LAYOUT_HOME_VERDICT) < 0)
                return fail("out of memory");
        split_decision_t gate;
        split_gate_decide(mode, verdict_path, &gate);
        if (gate.gate == SPLIT_GATE_SPLIT)
                return -1;
        bool single = gate.gate == SPLIT_GATE_SINGLE_USER;
        fprintf(stderr, "hangar-relay: %s: %s\n", split_gate_name(gate.gate), gate.reason);
        return report(single ? EXIT_SINGLE_USER : EXIT_REFUSED, split_gate_name(gate.gate),
                      gate.reason, NULL);
}

/* The token from stdin, then both channels to the driver (io, then ctl).
 * The driver proves it holds the token before the relay sends anything made
 * with it (common/agent/channel.h): a listener that is not the turn's
 * driver (the agent's, on a dead daemon's port) learns nothing. Returns -1
 * with io and ctl open, or the status to exit with. */
static int connect_driver(int home_fd, const turn_files_t *f, int64_t deadline, conn_t *io,
                          conn_t *ctl)
{
        hg_error_t err = {0};
        token_t token;
        char instance[INSTANCE_HEX_LEN + 1];
        if (read_token(deadline, &token, instance, &err) < 0)
                return fail("stdin: %s", err.message);
        if (instance[0] && turnfiles_check_instance(home_fd, instance, f, &err) < 0) {
                token_wipe(&token, sizeof(token));
                fprintf(stderr, "hangar-relay: %s\n", err.message);
                return report(EXIT_RELAY_FAIL, "driver-instance", err.message, NULL);
        }
        const char *want = instance[0] ? instance : NULL;
        int r = relay_open_channel(f->port, &token, want, FRAME_CHANNEL_IO, FRAME_MAX_PAYLOAD,
                                   deadline, io, &err);
        if (r == 0)
                r = relay_open_channel(f->port, &token, want, FRAME_CHANNEL_CTL, FRAME_MAX_PAYLOAD,
                                       deadline, ctl, &err);
        token_wipe(&token, sizeof(token));
        if (r == 0)
                return -1;
        conn_close(io);
        const char *outcome = r == RELAY_CHANNEL_UNPROVEN         ? "driver-unproven"
                              : r == RELAY_CHANNEL_OTHER_INSTANCE ? "driver-instance"
                              : r == RELAY_CHANNEL_TAKEN          ? "token-taken"
                                                                  : NULL;
        if (!outcome)
                return fail("%s", err.message);
        fprintf(stderr, "hangar-relay: %s\n", err.message);
        return report(EXIT_RELAY_FAIL, outcome, err.message, seal_report);
}

/* The run's script with /bin/sh from the turn's directory, relayed until it
 * ends; the outcome line and the status (the harness's). */
static int relay_harness(const char *home, const turn_files_t *f, conn_t *io, conn_t *ctl,
                         bool sealed, json_t *sweep)
{
        _cleanup_free_ char *script = NULL;
        if (asprintf(&script, "%s/%s", home, LAYOUT_HOME_SCRIPT) < 0)
                return fail("out of memory");
        char *harness_argv[] = {"/bin/sh", script, NULL};
        session_result_t res;
        session_run(io, ctl, harness_argv, f->cwd, f->term_on ? &f->term : NULL, &res);
        /* The turn's scratch (tree manifests, the gate's rounds) goes with it. */
        (void)scratch_remove(f->turn);
        conn_close(io);
        conn_close(ctl);
        _cleanup_json_ json_t *extra =
            json_pack("{s:s, s:i, s:b, s:O}", "end", session_end_name(res.end), "harness_value",
                      res.harness.value, "sealed", sealed, "sweep", sweep);
        if (res.end != SESSION_END_DONE) {
                fprintf(stderr, "hangar-relay: %s: %s\n", session_end_name(res.end), res.detail);
                return report(EXIT_RELAY_FAIL, session_end_name(res.end), res.detail, extra);
        }
        int status =
            res.harness.end == FRAME_END_SIGNALED ? 128 + res.harness.value : res.harness.value;
        return report(status, "done", res.detail, extra);
}

static void turnfiles_freep(turn_files_t *f)
{
        turnfiles_free(f);
}

/* The order hangar keeps (docs/protocol.md), step by step: hardened, the
 * gate, the turn's files, the sweep, stdin still empty, ready, and only
 * then the token (written by hangar after the ready line), the driver. */
int main(int argc, char **argv)
{
        relay_args_t a;
        int st = parse_args(argc, argv, &a);
        if (st >= 0)
                return st;
        if (harden() < 0)
                return fail("cannot make the relay non-dumpable; refusing to read the token");

        hg_error_t err = {0};
        _cleanup_config_ hg_config_t cfg = {0};
        if (config_load(&cfg, a.config_path, &err) < 0)
                return fail("%s", err.message);
        split_mode_t mode;
        if (split_mode_from_env(&mode, &err) < 0)
                return fail("%s", err.message);
        /* Nothing in hangar-home is believed before it is known to be the
         * driver's read-only mount; then it is read through that directory. */
        _cleanup_close_ int home_fd = -1;
        if (home_open(cfg.home_path, &home_fd, &err) < 0)
                return fail("%s", err.message);
        if ((st = split_gate(mode, home_fd)) >= 0)
                return st;
        _cleanup_(turnfiles_freep) turn_files_t files = {0};
        if (turnfiles_wait(home_fd, a.want_turn, a.wait_port_s, &files, &err) < 0)
                return fail("%s", err.message);

        bool sealed = false;
        _cleanup_json_ json_t *sweep = NULL;
        bool window = dumpable_at_exec != 0;
        int sr = seal(files.keep_processes, window, &sealed, &sweep, &err);
        if (sr == -ENOMEM)
                return fail("out of memory");
        if (sr < 0) {
                fprintf(stderr, "hangar-relay: %s\n", err.message);
                _cleanup_json_ json_t *extra = json_pack("{s:O}", "sweep", sweep);
                return report(EXIT_RELAY_FAIL, "failed", err.message, extra);
        }
        _cleanup_json_ json_t *sealed_extra =
            json_pack("{s:b, s:O}", "sealed", sealed, "sweep", sweep);
        seal_report = sealed_extra;
        int64_t deadline = conn_now_ms() + (int64_t)a.connect_timeout_s * 1000;
        if (stdin_is_empty(&err) < 0)
                return fail("%s", err.message);
        /* "window": whether the relay was dumpable for a moment after execve
         * (a readable binary), when another process of the agent's could have
         * opened its stdin (docs/security-model.md); "sealed": whether every
         * process that could have done so is dead now. */
        if (say_ready(window, sealed, sweep) < 0)
                return fail("cannot say ready on stdout");

        conn_t io = {.fd = -1}, ctl = {.fd = -1};
        if ((st = connect_driver(home_fd, &files, deadline, &io, &ctl)) >= 0)
                return st;
        return relay_harness(cfg.home_path, &files, &io, &ctl, sealed, sweep);
}
