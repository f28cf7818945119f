/* hangar pod check NS/POD [--mode off|auto|required]: is the uid split real
 * in this pod? The probe's three steps (docs/probe.md) from hangar's side,
 * through the API alone: the pod's spec read and checked against the shape
 * (shapecheck_pod, what `hangar-probe spec` runs), `hangar-probe check` in
 * the agent's container and in hangar-driver through pods/exec, both at
 * once, the verdict decided (verdict_decide, what `hangar-probe verdict`
 * runs) and delivered into both volumes (hangar-ctl for the driver,
 * hangar-home for the relay) by one exec into hangar-driver. One JSON line
 * per step on stdout (docs/client.md). */
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"
#include "cleanup.h"
#include "cli.h"
#include "config.h"
#include "jsonx.h"
#include "podagent.h"
#include "shape.h"
#include "shapecheck.h"
#include "split.h"
#include "strbuf.h"
#include "verdict.h"

/* A probe report is a few KiB; more is refused. */
#define MAX_REPORT_BYTES (4 * 1024 * 1024)
#define MAX_STDERR_BYTES (16 * 1024)
#define MAX_SETS         32

/* Exit statuses of the verdict, as `hangar-probe verdict` has them. */
#define EXIT_SPLIT_ACTIVE 0
#define EXIT_SINGLE_USER  1
#define EXIT_REFUSED      4

static const char usage_text[] =
    "usage: hangar pod check NS/POD [--mode off|auto|required] [--config FILE] [--set "
    "KEY=VALUE]...\n"
    "                        [--no-deliver] [--kubeconfig FILE] [--context NAME]\n"
    "Reads the pod's spec, runs hangar-probe check in its agent container and in hangar-driver,\n"
    "decides the HANGAR_UID_SPLIT verdict and writes it into hangar-ctl and hangar-home.\n"
    "One JSON line per step on stdout. Exits 0 (split-active), 1 (single-user), 4 (refused),\n"
    "or hangar's own status when a step could not be done (docs/client.md).\n";

/* One exec's output, kept in memory. */
typedef struct capture {
        strbuf_t out, err;
        bool too_big;
} capture_t;

static int to_memory(void *ud, int channel, const uint8_t *data, size_t len)
{
        capture_t *c = ud;
        strbuf_t *b = channel == 1 ? &c->out : &c->err;
        size_t max = channel == 1 ? MAX_REPORT_BYTES : MAX_STDERR_BYTES;
        if (b->len + len > max) {
                c->too_big = channel == 1;
                len = max - b->len;
        }
        return strbuf_append(b, (const char *)data, len);
}

/* One probe check in one container, run on its own thread. */
typedef struct probe_run {
        k8s_client_t *k;
        const char *ns, *pod, *container, *role;
        const char *program; /* hangar-probe, or the bundle's (podagent.h) */
        capture_t cap;
        wsexec_result_t res;
        hg_error_t err;
        int r;
} probe_run_t;

static void *probe_thread(void *arg)
{
        probe_run_t *p = arg;
        char *argv[] = {(char *)p->program, "check", "--role", (char *)p->role, NULL};
        wsexec_request_t req = {
            .ns = p->ns, .pod = p->pod, .container = p->container, .argv = argv};
        wsexec_io_t io = {.in_fd = -1, .output = to_memory, .ud = &p->cap};
        p->r = wsexec_run(p->k, &req, &io, &p->res, &p->err);
        return NULL;
}

/* The check's line, and its report (NULL when there is none). */
static json_t *check_report(probe_run_t *p, int *ret_emit)
{
        json_t *report = NULL;
        json_t *line = json_pack("{s:s, s:s}", "role", p->role, "container", p->container);
        if (!line)
                return NULL;
        const char *why = NULL;
        char buf[ERROR_MESSAGE_MAX + 64];
        hg_error_t perr = {0};
        if (p->r < 0 || p->res.failure != WSEXEC_OK) {
                why = wsexec_failure_name(p->res.failure);
                (void)snprintf(buf, sizeof(buf), "%s", p->err.message);
        } else if (p->cap.too_big) {
                why = "report";
                (void)snprintf(buf, sizeof(buf), "the report is over %d bytes", MAX_REPORT_BYTES);
        } else if (jsonx_load(p->cap.out.data ? p->cap.out.data : "", p->cap.out.len,
                              JSONX_MAX_DEPTH, &report, &perr) < 0 ||
                   !json_is_object(report)) {
                why = "report";
                (void)snprintf(buf, sizeof(buf),
                               "hangar-probe check (exit %d) printed no report: %s",
                               p->res.exit_code, perr.message[0] ? perr.message : "not an object");
                json_decref(report);
                report = NULL;
        }
        if (why) {
                (void)json_object_set_new(line, "result", json_string("error"));
                (void)json_object_set_new(line, "error",
                                          json_pack("{s:s, s:s}", "kind", why, "message", buf));
        } else {
                const char *result = "fail";
                (void)jsonx_string(report, "result", &result);
                (void)json_object_set_new(line, "result", json_string(result));
                (void)json_object_set_new(line, "exit", json_integer(p->res.exit_code));
                (void)json_object_set(line, "report", report);
        }
        *ret_emit = cli_emit("check", line);
        return report;
}

/* Hands the verdict to both daemons: one exec of `hangar-driver verdict`
 * in hangar-driver, the verdict on its stdin. The driver's own binary
 * checks it and writes it into hangar-home (the relay's) and hangar-ctl
 * (the daemon's), each by rename, 0644, at the places its configuration
 * names; no shell needed in the image. The agent's container mounts
 * hangar-home read-only, so only the driver's can write both. On success
 * *ret_written is [hangar-ctl's file, hangar-home's], as the driver names them. */
static int deliver(k8s_client_t *k, const char *ns, const char *pod, const char *verdict_text,
                   wsexec_result_t *res, json_t **ret_written, hg_error_t *err)
{
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0)
                return error_set(err, -errno, "pipe: %s", strerror(errno));
        _cleanup_close_ int rd = fds[0];
        {
                _cleanup_close_ int wr = fds[1];
                /* A verdict is far below a pipe's 64 KiB: this never blocks. */
                size_t n = strlen(verdict_text);
                if (n >= SPLIT_VERDICT_MAX || write(wr, verdict_text, n) != (ssize_t)n)
                        return error_set(err, -EIO, "the verdict did not fit the pipe");
        }
        char *argv[] = {"hangar-driver", "verdict", NULL};
        capture_t cap = {0};
        wsexec_request_t req = {.ns = ns,
                                .pod = pod,
                                .container = SHAPE_DRIVER_CONTAINER,
                                .argv = argv,
                                .stdin_open = true,
                                /* it reads the verdict to its end: v5's close. */
                                .only = EXS_PROTO_V5};
        wsexec_io_t io = {.in_fd = rd, .output = to_memory, .ud = &cap};
        int r = wsexec_run(k, &req, &io, res, err);
        _cleanup_json_ json_t *reply = NULL;
        hg_error_t perr = {0};
        if (r == 0 && res->failure == WSEXEC_OK && res->exit_code != 0)
                r = error_set(err, -EIO, "hangar-driver verdict exited %d: %.300s", res->exit_code,
                              cap.err.data ? cap.err.data : "");
        const char *ctl = NULL, *home = NULL;
        if (r == 0 && res->failure == WSEXEC_OK &&
            (jsonx_load(cap.out.data ? cap.out.data : "", cap.out.len, 4, &reply, &perr) < 0 ||
             jsonx_string(reply, "ctl", &ctl) < 0 || jsonx_string(reply, "home", &home) < 0))
                r = error_set(err, -EIO, "hangar-driver verdict did not say where it wrote");
        if (r == 0 && res->failure == WSEXEC_OK)
                *ret_written = json_pack("[s, s]", ctl, home);
        strbuf_free(&cap.out);
        strbuf_free(&cap.err);
        return r;
}

static int fatal(int status, const char *kind, const char *message)
{
        cli_error("pod check", "%s", message);
        (void)cli_emit("error", json_pack("{s:s, s:s, s:i}", "kind", kind, "message", message,
                                          "exit", status));
        return status;
}

static const char *exit_kind(int status)
{
        switch (status) {
        case CLI_EXIT_CONNECT:
                return "connect";
        case CLI_EXIT_REFUSED:
                return "refused";
        case CLI_EXIT_NOT_FOUND:
                return "not-found";
        case CLI_EXIT_CONFIG:
                return "config";
        case CLI_EXIT_SERVER:
        default:
                return "server";
        }
}

/* The command line: its options, the target, the shape expected. */
typedef struct check_args {
        cli_api_t api;
        const char *mode_name, *config_path, *target;
        const char *sets[MAX_SETS];
        size_t n_sets;
        bool no_deliver;
        split_mode_t mode;
} check_args_t;

/* 0, 1 when --help was printed, or CLI_EXIT_USAGE (said). */
static int parse_check_args(int argc, char **argv, check_args_t *a)
{
        static const struct option opts[] = {{"mode", required_argument, NULL, 'm'},
                                             {"config", required_argument, NULL, 'c'},
                                             {"set", required_argument, NULL, 'S'},
                                             {"no-deliver", no_argument, NULL, 'n'},
                                             {"kubeconfig", required_argument, NULL, 'k'},
                                             {"context", required_argument, NULL, 'x'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        *a = (check_args_t){.mode_name = getenv(SPLIT_MODE_ENV),
                            .config_path = getenv("HANGAR_CONFIG"),
                            .mode = SPLIT_MODE_DEFAULT};
        int c;
        while ((c = getopt_long(argc, argv, "m:c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'm':
                        a->mode_name = optarg;
                        break;
                case 'c':
                        a->config_path = optarg;
                        break;
                case 'S':
                        if (a->n_sets == MAX_SETS) {
                                cli_error("pod check", "too many --set");
                                return CLI_EXIT_USAGE;
                        }
                        a->sets[a->n_sets++] = optarg;
                        break;
                case 'n':
                        a->no_deliver = true;
                        break;
                case 'k':
                        a->api.kubeconfig = optarg;
                        break;
                case 'x':
                        a->api.context = optarg;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return 1;
                default:
                        fputs(usage_text, stderr);
                        return CLI_EXIT_USAGE;
                }
        }
        if (optind + 1 != argc ||
            (a->mode_name && a->mode_name[0] && split_mode_parse(a->mode_name, &a->mode) < 0)) {
                fputs(usage_text, stderr);
                return CLI_EXIT_USAGE;
        }
        a->target = argv[optind];
        return 0;
}

/* The expected shape: the webhook's sidecar settings, as the probe reads
 * them. 0, or CLI_EXIT_USAGE (said). */
static int load_shape(const check_args_t *a, hg_config_t *cfg)
{
        hg_error_t err = {0};
        if (config_load(cfg, a->config_path, &err) < 0) {
                *cfg = (hg_config_t){0};
                cli_error("pod check", "%s", err.message);
                return CLI_EXIT_USAGE;
        }
        int r = 0;
        for (size_t i = 0; r == 0 && i < a->n_sets; i++)
                r = config_set(cfg, a->sets[i], &err);
        if (r == 0)
                r = config_validate(cfg, &err);
        if (r < 0) {
                cli_error("pod check", "%s", err.message);
                return CLI_EXIT_USAGE;
        }
        return 0;
}

/* The two checks: the agent's (runs[0], in the setting's container until
 * the spec names one) and the driver's (runs[1]). The driver's PATH has
 * the bundle's bin first when the webhook delivers it: the name is enough
 * there. */
static void probe_runs_init(probe_run_t runs[2], k8s_client_t *k, const char *ns, const char *pod,
                            const hg_config_t *cfg)
{
        runs[0] = (probe_run_t){.k = k,
                                .ns = ns,
                                .pod = pod,
                                .container = cfg->agent_container,
                                .role = "agent",
                                .program = "hangar-probe"};
        runs[1] = (probe_run_t){.k = k,
                                .ns = ns,
                                .pod = pod,
                                .container = SHAPE_DRIVER_CONTAINER,
                                .role = "driver",
                                .program = "hangar-probe"};
}

/* Step 1: the driver's probe at once, while the spec is read; the agent's
 * as soon as the spec names it (a pod may name its agent container,
 * shape_agent_name; a name that is none falls back to the setting's and
 * the spec check says why the pod is out of shape). runs[0] is the agent's,
 * runs[1] the driver's (agent_probe holds the bundle's probe's path when
 * the agent's is that one). The pod's read: 0 and *ret_pod, or <0 with
 * *ret_status and err (both probes then ended or never started). */
static int read_and_probe(const hg_config_t *cfg, probe_run_t runs[2], char *agent_probe,
                          size_t probe_size, json_t **ret_pod, int *ret_status, hg_error_t *err)
{
        pthread_t threads[2];
        bool started[2] = {false, false};
        started[1] = pthread_create(&threads[1], NULL, probe_thread, &runs[1]) == 0;
        int read = cli_read_pod(runs[1].k, runs[1].ns, runs[1].pod, ret_pod, ret_status, err);
        if (read >= 0) {
                const char *agent = shape_agent_name(cfg, *ret_pod);
                if (agent)
                        runs[0].container = agent;
                /* In an image without hangar's binaries, the probe is the
                 * bundle's where the agent's container mounts it. */
                podagent_t pa;
                char why[160];
                if (podagent_resolve(cfg, *ret_pod, NULL, &pa, why, sizeof(why)) == 0)
                        runs[0].program =
                            podagent_program(&pa, "hangar-probe", NULL, agent_probe, probe_size);
                started[0] = pthread_create(&threads[0], NULL, probe_thread, &runs[0]) == 0;
        }
        for (size_t i = 0; i < 2; i++) {
                if (started[i])
                        (void)pthread_join(threads[i], NULL);
                else if (read >= 0)
                        probe_thread(&runs[i]); /* no thread: in turn */
        }
        return read;
}

/* Step 3: the verdict delivered into line ("delivered" or
 * "delivery_error"); the exit status, changed when it could not be. */
static int deliver_into(k8s_client_t *k, const char *ns, const char *pod, const char *text,
                        json_t *line, int exit_status)
{
        wsexec_result_t res = {0};
        hg_error_t derr = {0};
        json_t *written = NULL;
        if (deliver(k, ns, pod, text, &res, &written, &derr) == 0 && res.failure == WSEXEC_OK) {
                (void)json_object_set_new(line, "delivered", written);
                return exit_status;
        }
        (void)json_object_set_new(
            line, "delivery_error",
            json_pack("{s:s, s:s}", "kind",
                      res.failure == WSEXEC_OK ? "write" : wsexec_failure_name(res.failure),
                      "message", derr.message));
        cli_error("pod check", "the verdict was not delivered: %s", derr.message);
        return res.failure == WSEXEC_OK ? CLI_EXIT_NO_START : cli_exit_for(res.failure);
}

static int pod_check(int argc, char **argv)
{
        check_args_t a;
        int r = parse_check_args(argc, argv, &a);
        if (r != 0)
                return r == 1 ? 0 : r;
        _cleanup_free_ char *ns = NULL, *pod = NULL;
        if (cli_parse_target(a.target, &ns, &pod) < 0) {
                cli_error("pod check", "target must be NS/POD (Kubernetes names): '%s'", a.target);
                return CLI_EXIT_USAGE;
        }
        _cleanup_config_ hg_config_t cfg;
        if ((r = load_shape(&a, &cfg)) != 0)
                return r;
        hg_error_t err = {0};
        k8s_client_t *k = NULL;
        if (cli_client(&a.api, &k, &err) < 0)
                return fatal(CLI_EXIT_CONFIG, "config", err.message);
        signal(SIGPIPE, SIG_IGN);

        /* 1. The spec and both probes. */
        probe_run_t runs[2];
        probe_runs_init(runs, k, ns, pod, &cfg);
        char agent_probe[sizeof(PODAGENT_BIN_PATH) + 32];
        int status = 0;
        _cleanup_json_ json_t *pod_json = NULL;
        if (read_and_probe(&cfg, runs, agent_probe, sizeof(agent_probe), &pod_json, &status, &err) <
            0) {
                for (size_t i = 0; i < 2; i++) {
                        strbuf_free(&runs[i].cap.out);
                        strbuf_free(&runs[i].cap.err);
                }
                k8s_client_free(k);
                return fatal(status, exit_kind(status), err.message);
        }
        bool pass = false;
        _cleanup_json_ json_t *spec = shapecheck_pod(&cfg, pod_json, &pass);
        int emit = spec ? cli_emit("spec", json_pack("{s:s, s:s, s:O}", "pod", a.target, "result",
                                                     pass ? "pass" : "fail", "report", spec))
                        : -ENOMEM;
        json_t *reports[2] = {NULL, NULL};
        for (size_t i = 0; i < 2; i++) {
                int e = 0;
                reports[i] = check_report(&runs[i], &e);
                if (e < 0)
                        emit = e;
                strbuf_free(&runs[i].cap.out);
                strbuf_free(&runs[i].cap.err);
        }

        /* 2. The verdict. */
        verdict_t v = VERDICT_REFUSED;
        _cleanup_json_ json_t *verdict = verdict_decide(a.mode, spec, reports[0], reports[1], &v);
        json_decref(reports[0]);
        json_decref(reports[1]);
        _cleanup_free_ char *text = verdict ? jsonx_dumps(verdict, JSON_COMPACT) : NULL;
        if (!text) {
                k8s_client_free(k);
                return fatal(CLI_EXIT_LOCAL, "local", "out of memory");
        }
        int exit_status = v == VERDICT_SPLIT_ACTIVE  ? EXIT_SPLIT_ACTIVE
                          : v == VERDICT_SINGLE_USER ? EXIT_SINGLE_USER
                                                     : EXIT_REFUSED;

        /* 3. Delivered. */
        json_t *line = json_deep_copy(verdict);
        if (line && !a.no_deliver)
                exit_status = deliver_into(k, ns, pod, text, line, exit_status);
        k8s_client_free(k);
        if (cli_emit("verdict", line) < 0 || emit < 0)
                return CLI_EXIT_LOCAL;
        return exit_status;
}

int cmd_pod(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "check") == 0)
                return pod_check(argc - 1, argv + 1);
        fputs(usage_text, stderr);
        return CLI_EXIT_USAGE;
}
