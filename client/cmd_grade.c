/* hangar grade NS/POD --spec FILE: one sealed grade through the Kubernetes
 * API, in the order docs/graders.md gives hangar (docs/client.md, "hangar
 * grade"):
 *
 *   1. the pod's spec read and checked against the shape (shapecheck_pod):
 *      a pod out of shape is refused before anything runs in it; the
 *      agent's container and hangar-grade's path come from the same spec
 *      (podagent.h);
 *   2. `hangar-driver ctl grade begin --spec -` in hangar-driver: the
 *      grade's token and port (never printed);
 *   3. hangar-grade in the agent's container: its first stdout line must be
 *      its ready line (gradelines.h); only then does `TOKEN PORT` go on its
 *      stdin, and its stdin is closed; anything else first and no token
 *      goes at all;
 *   4. after its exec ended, the pod's spec read again (a pod's containers
 *      only grow: it names every one that could have run beside the
 *      grader), and `ctl grade finish` with the exec's status and output
 *      as the exec API gave them;
 *   5. the sealed record as the last line.
 *
 * The grader side is not started before begin's reply: it sweeps the
 * agent's container, and a refused begin (a turn in flight) must leave the
 * turn's processes alone. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "cleanup.h"
#include "cli.h"
#include "fileio.h"
#include "gradelines.h"
#include "jsonx.h"
#include "podagent.h"
#include "shape.h"
#include "shapecheck.h"
#include "turnexec.h"

#define GRADE_SPEC_BYTES_MAX (3 * 1024 * 1024) /* the driver's bound on a begin spec */
#define GRADE_OUTPUT_KEPT    (1024 * 1024)     /* the driver's bound on the output passed in */
#define SIDE_STDERR_TAIL     (16 * 1024)       /* the grader side's last line is its outcome */
#define MAX_SETS             32

/* Exit statuses of `hangar grade` beyond cli.h's (docs/client.md). */
enum {
        GRADE_EXIT_FAILED = 78,  /* sealed; the grader's status was not 0 */
        GRADE_EXIT_REFUSED = 79, /* nothing graded: the pod out of shape, begin or finish refused */
        GRADE_EXIT_UNPROVEN = 80, /* sealed, but the grader side did not show a sealed start */
};

static const char usage_text[] =
    "usage: hangar grade NS/POD --spec FILE [-c CONTAINER] [--grader PATH] [--config FILE]\n"
    "                    [--set KEY=VALUE]... [--kubeconfig FILE] [--context NAME]\n"
    "Runs one sealed grade (FILE: a grade's begin spec, docs/graders.md): checks the pod's\n"
    "shape, `ctl grade begin` in hangar-driver, hangar-grade in the agent's container (the\n"
    "pod's hangar.dev/agent-container, else agentContainer; -c names one of the pod's\n"
    "containers) with the grade's token after its ready line, then `ctl grade finish` with\n"
    "the exec's status and output and the pod's spec check. One JSON line per step; the\n"
    "last is the sealed grade. Exits 0 (sealed, the grader passed), 78 (sealed, it failed),\n"
    "79 (refused), 80 (sealed, the sealed start not shown), or hangar's own status\n"
    "(docs/client.md).\n"
    "\n"
    "usage: hangar grade finish NS/POD --grade ID [--config FILE] [--set KEY=VALUE]...\n"
    "                    [--kubeconfig FILE] [--context NAME]\n"
    "Seals a grade whose grader exec hangar lost (no status from the exec API): the pod's\n"
    "spec check, then `ctl grade finish` with no status; the grade is best_effort\n"
    "(exec-lost). Exits 80 when sealed, 79 when the driver refused (no such grade in flight).\n";

typedef struct grade_args {
        cli_api_t api;
        bool finish; /* hangar grade finish: --grade, not --spec */
        const char *target, *spec_path, *container, *grader, *config, *grade_id;
        const char *sets[MAX_SETS];
        size_t n_sets;
} grade_args_t;

/* The grader side's exec: its stdout watched for the ready line and kept
 * (the first MiB) for the record, its stderr's tail for its outcome line. */
typedef struct side {
        const char *grade;
        gradewatch_t watch;
        tokenline_t tok; /* its stdin: "<64 hex> <port>\n" after its ready line, then closed */
        strbuf_t out;
        uint64_t out_bytes;
        strbuf_t err;
} side_t;

/* Keeps the last SIDE_STDERR_TAIL bytes. */
static int keep_tail(strbuf_t *b, const uint8_t *data, size_t len)
{
        if (len >= SIDE_STDERR_TAIL) {
                data += len - SIDE_STDERR_TAIL;
                len = SIDE_STDERR_TAIL;
        }
        if (b->len + len > SIDE_STDERR_TAIL) {
                size_t drop = b->len + len - SIDE_STDERR_TAIL;
                memmove(b->data, b->data + drop, b->len - drop);
                strbuf_truncate(b, b->len - drop);
        }
        return strbuf_append(b, (const char *)data, len);
}

static int side_output(void *ud, int channel, const uint8_t *data, size_t len)
{
        side_t *s = ud;
        if (channel != EXS_CH_STDOUT)
                return keep_tail(&s->err, data, len);
        s->out_bytes += len;
        size_t room = s->out.len < GRADE_OUTPUT_KEPT ? GRADE_OUTPUT_KEPT - s->out.len : 0;
        if (strbuf_append(&s->out, (const char *)data, len < room ? len : room) < 0)
                return -ENOMEM;
        gradewatch_state_t before = s->watch.state;
        int r = gradewatch_feed(&s->watch, data, len);
        if (r < 0)
                return r;
        if (before == GRADEWATCH_WAITING && s->watch.state == GRADEWATCH_READY) {
                tokenline_send(&s->tok);
                (void)cli_emit("grader.ready",
                               json_pack("{s:s, s:O}", "grade", s->grade, "ready", s->watch.ready));
        }
        if (s->watch.state != GRADEWATCH_WAITING)
                tokenline_close(&s->tok); /* the token went, or never will */
        return 0;
}

static long elapsed_ms(const struct timespec *t0)
{
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return (now.tv_sec - t0->tv_sec) * 1000L + (now.tv_nsec - t0->tv_nsec) / 1000000L;
}

static int error_line(const char *grade, int status, const char *kind, const char *msg)
{
        cli_error("grade", "%s: %s", kind, msg);
        json_t *line = json_pack("{s:s, s:s, s:i}", "kind", kind, "message", msg, "exit", status);
        if (line && grade)
                (void)json_object_set_new(line, "grade", json_string(grade));
        (void)cli_emit("error", line);
        return status;
}

/* The pod's spec check, as a "spec" line (stage: before or after), and the
 * report (NULL when the pod could not be read: *ret_status says why). */
static json_t *spec_check(k8s_client_t *k, const hg_config_t *cfg, const char *ns, const char *name,
                          const char *target, const char *stage, bool *ret_pass, json_t **ret_pod,
                          int *ret_status, hg_error_t *err)
{
        json_t *pod = NULL;
        *ret_pass = false;
        if (cli_read_pod(k, ns, name, &pod, ret_status, err) < 0)
                return NULL;
        json_t *report = shapecheck_pod(cfg, pod, ret_pass);
        if (!report) {
                json_decref(pod);
                *ret_status = CLI_EXIT_LOCAL;
                (void)error_set(err, -ENOMEM, "out of memory");
                return NULL;
        }
        (void)cli_emit("spec", json_pack("{s:s, s:s, s:s, s:O}", "pod", target, "stage", stage,
                                         "result", *ret_pass ? "pass" : "fail", "report", report));
        if (ret_pod)
                *ret_pod = pod;
        else
                json_decref(pod);
        return report;
}

/* A ctl exec's reply: its stdout as a JSON object, or NULL. */
static json_t *ctl_reply(const capture_t *cap)
{
        json_t *reply = NULL;
        hg_error_t err = {0};
        if (!cap->out.len ||
            jsonx_load(cap->out.data, cap->out.len, JSONX_MAX_DEPTH, &reply, &err) < 0 ||
            !json_is_object(reply)) {
                json_decref(reply);
                return NULL;
        }
        return reply;
}

/* Why a ctl exec did not do it: the reply's error, else the driver's
 * words on stderr ("hangar-driver ctl: ..."), else the exec's failure. */
static void ctl_why(json_t *reply, const capture_t *cap, const hg_error_t *err, char *buf, size_t n)
{
        const char *e = json_string_value(json_object_get(reply, "error"));
        const char *text = cap->err.data ? cap->err.data : "";
        const char *p = strstr(text, "ctl: ");
        (void)snprintf(buf, n, "%s", e ? e : p ? p + 5 : text[0] ? text : err->message);
        char *nl = strchr(buf, '\n');
        if (nl)
                *nl = '\0';
}

/* `ctl grade ARGV...` with stdin from text; the reply when it is ok, else
 * NULL with the status and why (said on a grade.refused or error line). */
static json_t *grade_ctl(k8s_client_t *k, const char *ns, const char *pod, const char *grade,
                         const char *op, const char *text, size_t len, int *ret_status)
{
        char *argv[] = {"hangar-driver", "ctl", "grade", (char *)op, "--spec", "-", NULL};
        int fd = cli_memfd_with(op, text, len);
        if (fd < 0) {
                *ret_status = error_line(grade, CLI_EXIT_LOCAL, "local", "memfd");
                return NULL;
        }
        capture_t cap = {0};
        wsexec_result_t res = {0};
        hg_error_t err = {0};
        int r = turnexec_ctl(k, ns, pod, argv, fd, &cap, &res, &err);
        (void)close(fd);
        json_t *reply = r == 0 ? ctl_reply(&cap) : NULL;
        char msg[ERROR_MESSAGE_MAX + 64];
        if (r < 0) {
                (void)snprintf(msg, sizeof(msg), "ctl grade %s: %s", op, err.message);
                *ret_status = error_line(grade, cli_exit_for(res.failure),
                                         wsexec_failure_name(res.failure), msg);
        } else if (res.exit_code != 0 || !json_is_true(json_object_get(reply, "ok"))) {
                char why[ERROR_MESSAGE_MAX];
                ctl_why(reply, &cap, &err, why, sizeof(why));
                if (reply)
                        (void)json_object_del(reply, "token");
                (void)cli_emit("grade.refused",
                               json_pack("{s:s, s:s, s:o, s:i}", "grade", grade, "op", op, "reply",
                                         reply ? json_incref(reply) : json_null(), "driver_exit",
                                         res.exit_code));
                (void)snprintf(msg, sizeof(msg), "ctl grade %s: %s", op,
                               why[0] ? why : "refused without a reason");
                *ret_status = error_line(grade, GRADE_EXIT_REFUSED, "refused", msg);
                json_decref(reply);
                reply = NULL;
        }
        capture_free(&cap); /* begin's reply held the token: wiped */
        return reply;
}

/* The finish spec: the exec's status and output as hangar got them (-1:
 * no status, the exec lost: null), and the pod's spec report after it
 * (null: the pod could not be read). */
static char *finish_text(const char *grade, int exit_status, const strbuf_t *out,
                         json_t *spec_report)
{
        _cleanup_free_ char *b64 = base64_encode(out->data ? out->data : "", out->len);
        if (!b64)
                return NULL;
        _cleanup_json_ json_t *f =
            json_pack("{s:s, s:o, s:s, s:O?}", "grade", grade, "exit_status",
                      exit_status >= 0 ? json_integer(exit_status) : json_null(), "output_base64",
                      b64, "spec_report", spec_report);
        if (f && !spec_report)
                (void)json_object_set_new(f, "spec_report", json_null());
        return f ? jsonx_dumps(f, JSON_COMPACT) : NULL;
}

static int parse_args(int argc, char **argv, bool finish, grade_args_t *a)
{
        static const struct option opts[] = {{"spec", required_argument, NULL, 's'},
                                             {"container", required_argument, NULL, 'c'},
                                             {"grader", required_argument, NULL, 'g'},
                                             {"config", required_argument, NULL, 'C'},
                                             {"set", required_argument, NULL, 'S'},
                                             {"kubeconfig", required_argument, NULL, 'k'},
                                             {"context", required_argument, NULL, 'x'},
                                             {"grade", required_argument, NULL, 'G'},
                                             {NULL, 0, NULL, 0}};
        *a = (grade_args_t){.finish = finish};
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "c:", opts, NULL)) != -1) {
                switch (c) {
                case 's':
                        a->spec_path = optarg;
                        break;
                case 'c':
                        a->container = optarg;
                        break;
                case 'g':
                        a->grader = optarg;
                        break;
                case 'C':
                        a->config = optarg;
                        break;
                case 'S':
                        if (a->n_sets == MAX_SETS)
                                return -EINVAL;
                        a->sets[a->n_sets++] = optarg;
                        break;
                case 'k':
                        a->api.kubeconfig = optarg;
                        break;
                case 'x':
                        a->api.context = optarg;
                        break;
                case 'G':
                        a->grade_id = optarg;
                        break;
                default:
                        return -EINVAL;
                }
        }
        if (optind + 1 != argc)
                return -EINVAL;
        /* run: --spec (and not --grade); finish: --grade alone. */
        if (finish ? !a->grade_id || !cli_id_ok(a->grade_id) || a->spec_path || a->container ||
                         a->grader
                   : !a->spec_path || a->grade_id)
                return -EINVAL;
        /* Never the driver's container, whatever the pod says. */
        if (a->container && strcmp(a->container, SHAPE_DRIVER_CONTAINER) == 0)
                return -EINVAL;
        a->target = argv[optind];
        return 0;
}

/* Begin's reply: the token and port for the grader side (kept in s only),
 * the rest on a "grade.begun" line. */
static int begun(side_t *s, json_t *reply, const podagent_t *agent, const char *grader)
{
        const char *token = json_string_value(json_object_get(reply, "token"));
        json_int_t port = json_integer_value(json_object_get(reply, "port"));
        if (!token || strlen(token) != 64 || strspn(token, "0123456789abcdef") != 64 || port < 1 ||
            port > 65535)
                return error_line(s->grade, CLI_EXIT_PROTOCOL, "protocol",
                                  "ctl grade begin's reply has no token and port");
        (void)snprintf(s->tok.line, sizeof(s->tok.line), "%s %d\n", token, (int)port);
        s->tok.known = true;
        (void)json_object_del(reply, "token");
        (void)json_object_del(reply, "ok");
        (void)json_object_set_new(reply, "container", json_string(agent->container));
        (void)json_object_set_new(reply, "grader", json_string(grader));
        (void)cli_emit("grade.begun", json_incref(reply));
        return 0;
}

static int grade_exit(json_t *record, bool unproven)
{
        if (unproven)
                return GRADE_EXIT_UNPROVEN;
        return json_integer_value(json_object_get(record, "exit_status")) == 0 ? 0
                                                                               : GRADE_EXIT_FAILED;
}

/* The last line: the sealed grade, and the exit status it makes. */
static int sealed_line(const char *grade, json_t *sealed, bool unproven, const struct timespec *t0)
{
        json_t *record = json_object_get(sealed, "grade");
        int exit = grade_exit(record, unproven);
        json_t *line = json_pack(
            "{s:s, s:O?, s:O?, s:O?, s:b, s:O, s:i, s:i, s:i}", "grade", grade, "trust",
            json_object_get(record, "trust"), "reasons", json_object_get(record, "reasons"),
            "exit_status", json_object_get(record, "exit_status"), "proven", !unproven, "record",
            record ? record : json_null(), "execs", (int)turnexec_count(), "elapsed_ms",
            (int)elapsed_ms(t0), "exit", exit);
        if (cli_emit("grade.sealed", line) < 0)
                return CLI_EXIT_LOCAL;
        return exit;
}

/* hangar grade finish: a grade whose grader exec hangar lost (the API
 * server or the WebSocket gone before its status, the client killed) stays
 * in flight in the driver. This seals it honestly: the pod's spec check
 * now, and `ctl grade finish` with no status (exit_status null), which the
 * driver records as exec-lost, best_effort, keeping the grader side's own
 * word on its status where it has it. */
static int finish_lost(k8s_client_t *k, const grade_args_t *a, const hg_config_t *cfg,
                       const char *ns, const char *pod)
{
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        bool pass = false;
        int status = 0;
        hg_error_t err = {0};
        _cleanup_json_ json_t *after =
            spec_check(k, cfg, ns, pod, a->target, "after", &pass, NULL, &status, &err);
        if (!after && status == CLI_EXIT_NOT_FOUND)
                return error_line(a->grade_id, status, "pod", err.message);
        if (!after)
                cli_error("grade finish", "the pod: %s (its spec report is null)", err.message);
        strbuf_t none = {0};
        _cleanup_free_ char *fin = finish_text(a->grade_id, -1, &none, after);
        if (!fin)
                return error_line(a->grade_id, CLI_EXIT_LOCAL, "local", "out of memory");
        _cleanup_json_ json_t *sealed =
            grade_ctl(k, ns, pod, a->grade_id, "finish", fin, strlen(fin), &status);
        if (!sealed)
                return status;
        return sealed_line(a->grade_id, sealed, true, &t0);
}

static int run_grade(k8s_client_t *k, const grade_args_t *a, const hg_config_t *cfg, const char *ns,
                     const char *pod, const char *spec_text, size_t spec_len, side_t *s)
{
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        /* 1. The pod: in shape, and where the grader side runs. */
        bool pass = false;
        int status = 0;
        hg_error_t err = {0};
        _cleanup_json_ json_t *pod_json = NULL;
        _cleanup_json_ json_t *before =
            spec_check(k, cfg, ns, pod, a->target, "before", &pass, &pod_json, &status, &err);
        if (!before)
                return error_line(s->grade, status, "pod", err.message);
        if (!pass)
                return error_line(s->grade, GRADE_EXIT_REFUSED, "out-of-shape",
                                  "the pod is out of the sidecar's shape (the spec line says "
                                  "why): nothing was graded");
        podagent_t agent;
        char why[256];
        if (podagent_resolve(cfg, pod_json, a->container, &agent, why, sizeof(why)) < 0)
                return error_line(s->grade, CLI_EXIT_NOT_RUNNABLE, "agent-container", why);
        char grader[512];
        (void)podagent_program(&agent, "hangar-grade", a->grader, grader, sizeof(grader));

        /* 2. Begin. */
        _cleanup_json_ json_t *reply =
            grade_ctl(k, ns, pod, s->grade, "begin", spec_text, spec_len, &status);
        if (!reply)
                return status;
        if ((status = begun(s, reply, &agent, grader)) != 0)
                return status;
        int rd = -1;
        if (tokenline_open(&s->tok, &rd) < 0)
                return error_line(s->grade, CLI_EXIT_LOCAL, "local", "pipe");
        _cleanup_close_ int in_rd = rd;

        /* 3. The grader side, the token after its ready line. */
        char *argv[] = {grader, NULL};
        execjob_t side;
        execjob_side(&side, k, ns, pod, agent.container, argv, in_rd, side_output, s);
        execjob_start(&side);
        execjob_join(&side);
        tokenline_close(&s->tok);
        (void)gradewatch_end(&s->watch);
        if (execjob_status(&side) < 0) {
                /* No status from the exec API: nothing honest to finish
                 * with. The grade stays in flight, unsealed. */
                char msg[ERROR_MESSAGE_MAX + 128];
                (void)snprintf(msg, sizeof(msg),
                               "the grader side's exec: %s (the grade is not sealed: hangar "
                               "grade finish %s --grade %s seals it)",
                               side.err.message, a->target, s->grade);
                return error_line(s->grade, cli_exit_for(side.res.failure),
                                  wsexec_failure_name(side.res.failure), msg);
        }
        int exit_status = side.res.exit_code;
        _cleanup_json_ json_t *outcome = gradeside_outcome(s->err.data, s->err.len);
        const char *said = json_string_value(json_object_get(outcome, "grade"));
        bool broken = s->watch.state != GRADEWATCH_READY;
        /* hangar-grade's own failures (125) end with an outcome other than
         * "done": driver-unproven, failed. */
        bool side_failed = !said || strcmp(said, "done") != 0;
        json_t *ended =
            json_pack("{s:s, s:i, s:I, s:b, s:b, s:O?}", "grade", s->grade, "exit_status",
                      exit_status, "output_bytes", (json_int_t)s->out_bytes, "output_cut",
                      s->out_bytes > s->out.len, "token_sent", s->tok.sent, "side", outcome);
        if (ended && broken)
                (void)json_object_set_new(ended, "broken", json_string(s->watch.why));
        (void)cli_emit("grader.ended", ended);
        if (broken)
                cli_error("grade", "%s: no token went to it", s->watch.why);

        /* 4. The pod again, after the grader's exec, and the finish. */
        _cleanup_json_ json_t *after =
            spec_check(k, cfg, ns, pod, a->target, "after", &pass, NULL, &status, &err);
        if (!after)
                cli_error("grade", "the pod after the grade: %s (its spec report is null)",
                          err.message);
        _cleanup_free_ char *fin = finish_text(s->grade, exit_status, &s->out, after);
        if (!fin)
                return error_line(s->grade, CLI_EXIT_LOCAL, "local", "out of memory");
        _cleanup_json_ json_t *sealed =
            grade_ctl(k, ns, pod, s->grade, "finish", fin, strlen(fin), &status);
        if (!sealed)
                return status;

        /* 5. The sealed grade. */
        return sealed_line(s->grade, sealed, broken || (side_failed && exit_status == 125), &t0);
}

int cmd_grade(int argc, char **argv)
{
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
                fputs(usage_text, stdout);
                return 0;
        }
        bool finish = argc >= 2 && strcmp(argv[1], "finish") == 0;
        grade_args_t a;
        if (parse_args(argc - finish, argv + finish, finish, &a) < 0) {
                fputs(usage_text, stderr);
                return CLI_EXIT_USAGE;
        }
        _cleanup_free_ char *ns = NULL, *pod = NULL;
        if (cli_parse_target(a.target, &ns, &pod) < 0) {
                cli_error("grade", "target must be NS/POD (Kubernetes names): '%s'", a.target);
                return CLI_EXIT_USAGE;
        }
        char msg[ERROR_MESSAGE_MAX + 64];
        _cleanup_free_ char *spec = NULL, *id = NULL;
        size_t spec_len = 0;
        if (!finish && cli_load_spec(a.spec_path, GRADE_SPEC_BYTES_MAX, "grade", &spec, &spec_len,
                                     &id, msg, sizeof(msg)) < 0) {
                cli_error("grade", "%s", msg);
                return CLI_EXIT_USAGE;
        }
        hg_error_t err = {0};
        _cleanup_config_ hg_config_t cfg = {0};
        if (cli_config(&cfg, a.config, a.sets, a.n_sets, &err) < 0) {
                cli_error("grade", "%s", err.message);
                return CLI_EXIT_USAGE;
        }
        k8s_client_t *k = NULL;
        if (cli_client(&a.api, &k, &err) < 0)
                return error_line(finish ? a.grade_id : id, CLI_EXIT_CONFIG, "config", err.message);
        signal(SIGPIPE, SIG_IGN);
        if (finish) {
                int status = finish_lost(k, &a, &cfg, ns, pod);
                k8s_client_free(k);
                return status;
        }
        side_t s = {.grade = id, .tok = {.wr = -1}};
        gradewatch_init(&s.watch);
        int status = run_grade(k, &a, &cfg, ns, pod, spec, spec_len, &s);
        tokenline_close(&s.tok);
        gradewatch_free(&s.watch);
        strbuf_free(&s.out);
        strbuf_free(&s.err);
        explicit_bzero(spec, spec_len);
        k8s_client_free(k);
        return status;
}
