/* hangar-grade: the grader side of a sealed grade (docs/graders.md),
 * started by hangar through exec in the agent's container, as the agent,
 * after the turn. Non-dumpable first (a constructor), then it checks
 * hangar-home, sweeps every other process of the container (common/wire/sweep.h),
 * says ready with what it found, and only then reads the grade's token and
 * port on stdin. Over the token-checked connection it sends its findings,
 * gets the go (the tests are now in hangar-home), hashes the workspace,
 * runs the grader in an environment built from nothing, with a timeout
 * (124), forwards its report (descriptor 3, one frame, bounded) and its
 * end, sweeps again and exits with the grader's status. A small binary of
 * its own, not a mode of hangar-relay: it holds no turn, links no session
 * loop, and its whole job fits on one page. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "channel.h"
#include "cleanup.h"
#include "config.h"
#include "conn.h"
#include "fileio.h"
#include "grade_msg.h"
#include "home.h"
#include "jsonx.h"
#include "strparse.h"
#include "sweep.h"
#include "token.h"
#include "treehash.h"

#define EXIT_SIDE_FAIL 125
#define EXIT_TIMEOUT   124
#define PORT_LINE_MAX  (TOKEN_HEX_LEN + 1 + 5 + 1)

static const char usage[] =
    "usage: hangar-grade [--config FILE] [--sweep-ms MS] [--connect-timeout SECONDS]\n"
    "\n"
    "Run by hangar in the agent's container after the turn. Sweeps every other\n"
    "process of the container, prints {\"grade\":\"ready\",...} with what it found,\n"
    "then reads \"<64 hex token> <port>\" on stdin (written by hangar only after\n"
    "that line), gets the grade's plan from hangar-driver, runs the grader and\n"
    "exits with its status (124 past its timeout, 125 the grader side failed).\n";

static int dumpable_at_exec = -1;

static void harden_now(void)
{
        struct rlimit none = {0, 0};
        (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        (void)setrlimit(RLIMIT_CORE, &none);
}

__attribute__((constructor)) static void harden_early(void)
{
        dumpable_at_exec = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        harden_now();
}

/* {"grade": outcome, "reason": ...} on stderr; exit 125. */
static int vfail_as(const char *outcome, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static int vfail_as(const char *outcome, const char *fmt, va_list ap)
{
        char msg[ERROR_MESSAGE_MAX];
        vsnprintf(msg, sizeof(msg), fmt, ap);
        _cleanup_json_ json_t *j = json_pack("{s:s, s:s}", "grade", outcome, "reason", msg);
        _cleanup_free_ char *text = j ? jsonx_dumps(j, JSON_COMPACT) : NULL;
        fprintf(stderr, "%s\n", text ? text : "{\"grade\":\"failed\"}");
        return EXIT_SIDE_FAIL;
}

static int fail_as(const char *outcome, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_as(const char *outcome, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = vfail_as(outcome, fmt, ap);
        va_end(ap);
        return r;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = vfail_as("failed", fmt, ap);
        va_end(ap);
        return r;
}

/* TracerPid in /proc/self/status: 0, or the tracer. -1 if unreadable. */
static long tracer_pid(void)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if (file_read_bounded("/proc/self/status", 64 * 1024, &text, &len) < 0)
                return -1;
        const char *p = strstr(text, "\nTracerPid:");
        if (!p)
                return -1;
        p += strlen("\nTracerPid:");
        while (*p == ' ' || *p == '\t')
                p++;
        char num[24];
        size_t n = strspn(p, "0123456789");
        if (n == 0 || n >= sizeof(num))
                return -1;
        memcpy(num, p, n);
        num[n] = '\0';
        uint64_t v = 0;
        return parse_u64(num, &v) < 0 || v > INT_MAX ? -1 : (long)v;
}

/* Every component of dir's real path is root's and writable by root alone. */
static bool root_only(const char *dir)
{
        char real[PATH_MAX];
        if (!realpath(dir, real))
                return false;
        for (size_t i = 1;; i++) {
                char c = real[i];
                if (c == '/' || c == '\0') {
                        real[i] = '\0';
                        struct stat st;
                        bool ok = lstat(real, &st) == 0 && st.st_uid == 0 && !(st.st_mode & 022);
                        real[i] = c;
                        if (!ok)
                                return false;
                        if (c == '\0')
                                break;
                }
        }
        struct stat st;
        return stat("/", &st) == 0 && st.st_uid == 0 && !(st.st_mode & 022);
}

/* PATH from a fixed list, root's directories only. */
static void clean_path(char *out, size_t cap, uint32_t *reasons)
{
        static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
        out[0] = '\0';
        for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
                if (!root_only(dirs[i])) {
                        *reasons |= GRADE_R_PATH_WRITABLE;
                        continue;
                }
                size_t n = strlen(out);
                snprintf(out + n, cap - n, "%s%s", n ? ":" : "", dirs[i]);
        }
}

/* /etc/ld.so.preload: absent, or root's file that only root may write. */
static bool preload_safe(void)
{
        struct stat st;
        if (lstat("/etc/ld.so.preload", &st) < 0)
                return errno == ENOENT;
        return S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022) &&
               access("/etc/ld.so.preload", W_OK) < 0 && root_only("/etc");
}

static int stdin_is_empty(void)
{
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        int n;
        do
                n = poll(&p, 1, 0);
        while (n < 0 && errno == EINTR);
        return n == 0 ? 0 : -EPROTO;
}

/* "<64 hex> <port>\n" from stdin, byte by byte (nothing past the line is
 * read), within the deadline; the buffer wiped. */
static int read_token_port(int64_t deadline, token_t *ret_token, uint16_t *ret_port,
                           hg_error_t *err)
{
        char buf[PORT_LINE_MAX + 1];
        size_t len = 0;
        int r = -ETIMEDOUT;
        while (len < sizeof(buf) - 1) {
                struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
                int64_t left = deadline - conn_now_ms();
                if (left <= 0)
                        break;
                int pr = poll(&p, 1, left > 60000 ? 60000 : (int)left);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr <= 0)
                        continue;
                ssize_t n = read(STDIN_FILENO, buf + len, 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = -EPIPE;
                        break;
                }
                if (buf[len++] == '\n') {
                        r = 0;
                        break;
                }
        }
        uint32_t port = 0;
        if (r == 0) {
                buf[len - 1] = '\0';
                if (len < TOKEN_HEX_LEN + 3 || buf[TOKEN_HEX_LEN] != ' ' ||
                    token_from_hex(buf, TOKEN_HEX_LEN, ret_token, err) < 0 ||
                    parse_u32(buf + TOKEN_HEX_LEN + 1, &port) < 0 || port == 0 || port > 65535)
                        r = -EINVAL;
        }
        token_wipe(buf, sizeof(buf));
        if (r < 0)
                return error_set(err, r, "stdin: %s",
                                 r == -ETIMEDOUT ? "no token within the connect timeout"
                                 : r == -EPIPE   ? "closed before the token line"
                                                 : "not \"<64 hex token> <port>\"");
        *ret_port = (uint16_t)port;
        return 0;
}

static int send_json(conn_t *c, frame_type_t type, json_t *j, int64_t deadline)
{
        _cleanup_free_ char *text = j ? jsonx_dumps(j, JSON_COMPACT) : NULL;
        if (!text)
                return -ENOMEM;
        int r = conn_queue(c, type, text, strlen(text), NULL, 0);
        return r < 0 ? r : conn_flush_until(c, deadline);
}

/* argv[0] as execve needs it: with a slash as given, else found in PATH. */
static char *resolve(const char *prog, const char *path)
{
        if (strchr(prog, '/'))
                return strdup(prog);
        _cleanup_free_ char *copy = strdup(path);
        for (char *save = NULL, *d = copy ? strtok_r(copy, ":", &save) : NULL; d;
             d = strtok_r(NULL, ":", &save)) {
                char *cand = NULL;
                if (asprintf(&cand, "%s/%s", d, prog) < 0)
                        return NULL;
                if (access(cand, X_OK) == 0)
                        return cand;
                free(cand);
        }
        return NULL;
}

typedef struct run_result {
        frame_exit_t end;
        char *report;
        size_t report_len;
} run_result_t;

/* The grader's environment, built here: nothing of the exec's. */
typedef struct grader_env {
        char *path, *home, *tests;
        char *envp[9];
} grader_env_t;

static void grader_env_free(grader_env_t *e)
{
        free(e->path);
        free(e->home);
        free(e->tests);
        *e = (grader_env_t){0};
}

static int grader_env_init(grader_env_t *e, const char *path, const char *home, const char *tests)
{
        *e = (grader_env_t){0};
        if (asprintf(&e->path, "PATH=%s", path) < 0 || asprintf(&e->home, "HOME=%s", home) < 0 ||
            asprintf(&e->tests, "HANGAR_GRADE_TESTS=%s", tests) < 0)
                return -ENOMEM;
        char *envp[] = {e->path,
                        e->home,
                        "LANG=C.UTF-8",
                        "LC_ALL=C.UTF-8",
                        "TERM=dumb",
                        e->tests,
                        "HANGAR_GRADE_REPORT=/dev/fd/3",
                        "PYTHONNOUSERSITE=1",
                        NULL};
        memcpy(e->envp, envp, sizeof(envp));
        return 0;
}

/* The grader: its own process group, stdin /dev/null, the report on
 * descriptor 3 (the pipe's write end), stdout and stderr the exec's. */
static int spawn_grader(const grade_go_t *go, const char *prog, char *const envp[], int report_w,
                        pid_t *ret_pid, hg_error_t *err)
{
        int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
        pid_t pid = devnull < 0 ? -1 : fork();
        if (pid < 0) {
                int e = errno;
                if (devnull >= 0)
                        (void)close(devnull);
                return error_set(err, -e, "fork: %s", strerror(e));
        }
        if (pid == 0) {
                (void)setpgid(0, 0);
                (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                umask(022);
                if (chdir(go->cwd) < 0 || dup2(devnull, STDIN_FILENO) < 0 || dup2(report_w, 3) < 0)
                        _exit(127);
                for (int fd = 4; fd < 1024; fd++)
                        (void)close(fd);
                if (prog)
                        execve(prog, (char *const *)go->argv, envp);
                static const char msg[] = "hangar-grade: cannot start the grader\n";
                (void)!write(STDERR_FILENO, msg, sizeof(msg) - 1);
                _exit(127);
        }
        (void)setpgid(pid, pid);
        (void)close(devnull);
        *ret_pid = pid;
        return 0;
}

/* The report as it comes, at most cap bytes kept (the rest read and
 * dropped). */
static void report_take(run_result_t *res, size_t cap, const char *buf, size_t k)
{
        if (!res->report)
                return;
        size_t take = k < cap - res->report_len ? k : cap - res->report_len;
        memcpy(res->report + res->report_len, buf, take);
        res->report_len += take;
}

/* Until the grader exits or the timeout: its report read as it comes.
 * *ret_status: its wait status; true if it ran out of time (killed). */
static bool await_grader(pid_t pid, int *rfd, int64_t deadline, run_result_t *res, size_t cap,
                         int *ret_status)
{
        for (;;) {
                struct pollfd p = {.fd = *rfd, .events = POLLIN};
                int64_t left = deadline - conn_now_ms();
                if (left <= 0) {
                        (void)kill(-pid, SIGKILL);
                        (void)kill(pid, SIGKILL);
                        (void)waitpid(pid, ret_status, 0);
                        return true;
                }
                int n = poll(*rfd >= 0 ? &p : NULL, *rfd >= 0 ? 1 : 0, left > 50 ? 50 : (int)left);
                if (n > 0 && *rfd >= 0) {
                        char buf[4096];
                        ssize_t k = read(*rfd, buf, sizeof(buf));
                        if (k > 0)
                                report_take(res, cap, buf, (size_t)k);
                        else if (k == 0 || (k < 0 && errno != EINTR && errno != EAGAIN)) {
                                (void)close(*rfd);
                                *rfd = -1;
                        }
                }
                if (waitpid(pid, ret_status, WNOHANG) == pid)
                        return false;
        }
}

/* The grader run: its end and its report (descriptor 3; a pipe that
 * HANGAR_GRADE_REPORT=/dev/fd/3 opens), in a HOME of its own, within
 * the go's timeout. */
static int run_grader(const grade_go_t *go, const char *path, run_result_t *ret, hg_error_t *err)
{
        char home[] = "/tmp/hangar-grade-XXXXXX";
        if (!mkdtemp(home))
                return error_set(err, -errno, "mkdtemp: %s", strerror(errno));
        _cleanup_free_ char *prog = resolve(go->argv[0], path);
        grader_env_t env;
        int pfd[2];
        if (grader_env_init(&env, path, home, go->tests) < 0) {
                grader_env_free(&env);
                return error_set(err, -ENOMEM, "out of memory");
        }
        if (pipe2(pfd, O_CLOEXEC) < 0) {
                grader_env_free(&env);
                return error_set(err, -errno, "pipe: %s", strerror(errno));
        }
        pid_t pid = -1;
        int r = spawn_grader(go, prog, env.envp, pfd[1], &pid, err);
        (void)close(pfd[1]);
        grader_env_free(&env);
        if (r < 0) {
                (void)close(pfd[0]);
                return r;
        }
        size_t cap = (size_t)go->report_max + 1;
        run_result_t res = {.report = malloc(cap)};
        int rfd = pfd[0], status = 0;
        int64_t deadline = conn_now_ms() + (int64_t)go->timeout_s * 1000;
        bool timed_out = await_grader(pid, &rfd, deadline, &res, cap, &status);
        /* What the grader wrote before it ended, if its descendants keep
         * the pipe open: what is there now, no more waiting. */
        if (rfd >= 0) {
                (void)fcntl(rfd, F_SETFL, O_NONBLOCK);
                char buf[4096];
                ssize_t k;
                while (res.report && (k = read(rfd, buf, sizeof(buf))) > 0)
                        report_take(&res, cap, buf, (size_t)k);
                (void)close(rfd);
        }
        (void)kill(-pid, SIGKILL); /* what the grader left in its group */
        (void)rmdir(home);
        if (timed_out)
                res.end = (frame_exit_t){FRAME_END_TIMEOUT, EXIT_TIMEOUT};
        else if (WIFSIGNALED(status))
                res.end = (frame_exit_t){FRAME_END_SIGNALED, (uint8_t)WTERMSIG(status)};
        else if (WEXITSTATUS(status) == 127 && !prog)
                res.end = (frame_exit_t){FRAME_END_NOT_STARTED, 127};
        else
                res.end = (frame_exit_t){FRAME_END_EXITED, (uint8_t)WEXITSTATUS(status)};
        *ret = res;
        return 0;
}

typedef struct grade_args {
        const char *config_path;
        uint32_t sweep_ms, connect_timeout_s;
} grade_args_t;

/* 0, or 2 after the usage. */
static int parse_args(int argc, char **argv, grade_args_t *a)
{
        static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                             {"sweep-ms", required_argument, NULL, 's'},
                                             {"connect-timeout", required_argument, NULL, 't'},
                                             {NULL, 0, NULL, 0}};
        *a = (grade_args_t){
            .config_path = getenv("HANGAR_CONFIG"), .sweep_ms = 10000, .connect_timeout_s = 120};
        int c;
        bool ok = true;
        while (ok && (c = getopt_long(argc, argv, "c:s:t:", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        a->config_path = optarg;
                        break;
                case 's':
                        ok = parse_u32(optarg, &a->sweep_ms) == 0 && a->sweep_ms > 0 &&
                             a->sweep_ms <= SWEEP_DEADLINE_MAX_MS;
                        break;
                case 't':
                        ok = parse_u32(optarg, &a->connect_timeout_s) == 0 &&
                             a->connect_timeout_s > 0 && a->connect_timeout_s <= 3600;
                        break;
                default:
                        ok = false;
                        break;
                }
        }
        if (!ok || optind != argc) {
                fputs(usage, stderr);
                return 2;
        }
        return 0;
}

/* What the grader side finds before the ready line: the sweep (every
 * other process of the agent's killed), PID 1, a tracer, the PATH it will
 * give the grader (path, cap bytes), the preload. The findings, or NULL. */
static json_t *gather_findings(uint32_t sweep_ms, char *path, size_t cap)
{
        uint32_t reasons = 0;
        if (tracer_pid() != 0)
                reasons |= GRADE_R_GRADER_TRACED;
        sweep_report_t sw;
        int sr = sweep_others((int)sweep_ms, &sw);
        if (sr == -EPERM)
                reasons |= GRADE_R_FOREIGN_PROCESS;
        else if (sr == -ETIMEDOUT)
                reasons |= GRADE_R_TRIAL_RUNNING;
        else if (sr < 0)
                reasons |= GRADE_R_SWEEP_FAILED;
        if (!sweep_pid1_proven(sw.pid1))
                reasons |= GRADE_R_PID1_OPEN;
        clean_path(path, cap, &reasons);
        if (!preload_safe())
                reasons |= GRADE_R_PRELOAD_WRITABLE;
        if (tracer_pid() != 0)
                reasons |= GRADE_R_GRADER_TRACED;
        return json_pack("{s:o, s:o}", "reasons", grade_reasons_json(reasons), "sweep",
                         sweep_report_json(&sw));
}

/* The driver's go (or no) for the findings sent on ctl. */
static int await_go(conn_t *ctl, json_t *findings, int64_t deadline, grade_go_t *go,
                    hg_error_t *err)
{
        if (send_json(ctl, FRAME_ASK, findings, deadline) < 0)
                return error_set(err, -EIO, "cannot send the findings");
        frame_t f;
        int r = conn_next_until(ctl, &f, conn_now_ms() + 60000, err);
        if (r < 0) {
                (void)error_prefix(err, "no go from the driver: ");
                return r;
        }
        if (r == 0 || f.type != FRAME_ANSWER)
                return error_set(err, -EPROTO, "no go from the driver");
        if ((r = grade_go_parse(f.payload, f.length, go, err)) < 0) {
                (void)error_prefix(err, "the driver's go: ");
                return r;
        }
        if (!go->go) {
                r = error_set(err, -EPERM, "the driver said no: %s", go->reason);
                grade_go_free(go);
                return r;
        }
        return 0;
}

/* The grader's end and report to the driver; waits for its close. 0 if
 * all was sent. */
static int send_result(conn_t *ctl, const run_result_t *res)
{
        uint8_t ex[FRAME_EXIT_SIZE];
        frame_exit_encode(&res->end, ex);
        int64_t deadline = conn_now_ms() + 10000;
        int r = conn_queue(ctl, FRAME_STDOUT, res->report, res->report_len, NULL, 0);
        if (r == 0)
                r = conn_queue(ctl, FRAME_EXIT, ex, sizeof(ex), NULL, 0);
        if (r == 0)
                r = conn_flush_until(ctl, deadline);
        /* The driver closes once it has the end. */
        frame_t f;
        while (r == 0 && conn_next_until(ctl, &f, deadline, NULL) == 1)
                ;
        return r;
}

/* The order hangar keeps (docs/graders.md): hardened, swept, stdin still
 * empty, ready, then the token; the driver's go, the tree, the grader,
 * its result. */
int main(int argc, char **argv)
{
        grade_args_t a;
        if (parse_args(argc, argv, &a) != 0)
                return 2;
        struct rlimit core;
        harden_now();
        if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0 || getrlimit(RLIMIT_CORE, &core) < 0 ||
            core.rlim_cur != 0)
                return fail("cannot make itself non-dumpable");
        (void)signal(SIGPIPE, SIG_IGN);
        hg_error_t err = {0};
        _cleanup_config_ hg_config_t cfg = {0};
        if (config_load(&cfg, a.config_path, &err) < 0)
                return fail("%s", err.message);
        /* The tests will be in hangar-home: it must be the driver's
         * read-only mount (common/agent/home.h), not a directory of the agent's. */
        _cleanup_close_ int home_fd = -1;
        if (home_open(cfg.home_path, &home_fd, &err) < 0)
                return fail("%s", err.message);

        char path[256];
        _cleanup_json_ json_t *findings = gather_findings(a.sweep_ms, path, sizeof(path));
        if (!findings)
                return fail("out of memory");
        if (stdin_is_empty() < 0)
                return fail("bytes on stdin before the ready line: refusing them");
        _cleanup_json_ json_t *ready = json_pack("{s:s, s:b, s:O}", "grade", "ready", "window",
                                                 dumpable_at_exec != 0, "findings", findings);
        _cleanup_free_ char *ready_text = ready ? jsonx_dumps(ready, JSON_COMPACT) : NULL;
        if (!ready_text || printf("%s\n", ready_text) < 0 || fflush(stdout) != 0)
                return fail("cannot say ready on stdout");
        int64_t deadline = conn_now_ms() + (int64_t)a.connect_timeout_s * 1000;
        token_t token;
        uint16_t port = 0;
        if (read_token_port(deadline, &token, &port, &err) < 0)
                return fail("%s", err.message);
        /* The driver proves it holds the grade's token first (common/agent/channel.h):
         * hangar names no instance here, the driver's is bound all the same. */
        conn_t io = {.fd = -1}, ctl = {.fd = -1};
        int r = relay_open_channel(port, &token, NULL, FRAME_CHANNEL_IO, GRADE_MSG_MAX, deadline,
                                   &io, &err);
        if (r == 0)
                r = relay_open_channel(port, &token, NULL, FRAME_CHANNEL_CTL, GRADE_MSG_MAX,
                                       deadline, &ctl, &err);
        token_wipe(&token, sizeof(token));
        if (r < 0) {
                conn_close(&io);
                return r == RELAY_CHANNEL_UNPROVEN ? fail_as("driver-unproven", "%s", err.message)
                                                   : fail("%s", err.message);
        }
        grade_go_t go = {0};
        if (await_go(&ctl, findings, deadline, &go, &err) < 0)
                return fail("%s", err.message);
        /* The workspace as it is now: nothing of the trial runs any more. */
        char tree[TREEHASH_HEX_LEN + 1];
        treehash_stats_t ts;
        if (treehash_compute(go.cwd, NULL, tree, &ts, &err) < 0) {
                grade_go_free(&go);
                return fail("the workspace's tree: %s", err.message);
        }
        _cleanup_json_ json_t *tj = json_pack("{s:s}", "tree", tree);
        if (send_json(&ctl, FRAME_ASK, tj, conn_now_ms() + 10000) < 0) {
                grade_go_free(&go);
                return fail("cannot send the tree");
        }
        run_result_t res = {0};
        r = run_grader(&go, path, &res, &err);
        grade_go_free(&go);
        if (r < 0)
                return fail("%s", err.message);
        /* Whatever the grader left behind (it ran the trial's code, maybe). */
        sweep_report_t after;
        (void)sweep_others(5000, &after);
        r = send_result(&ctl, &res);
        free(res.report);
        conn_close(&io);
        conn_close(&ctl);
        int status = res.end.end == FRAME_END_SIGNALED ? 128 + res.end.value : res.end.value;
        fprintf(stderr, "{\"grade\":\"done\",\"status\":%d,\"sent\":%s}\n", status,
                r == 0 ? "true" : "false");
        return status;
}
