/* hangar-probe: checks that the driver sidecar's shape holds, and decides
 * the HANGAR_UID_SPLIT verdict. Subcommands:
 *   check --role agent|driver   one JSON report of this container, from inside
 *   spec                        the pod's spec (from the API or a file) against the shape
 *   verdict                     the spec report and both containers' reports under a mode */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "cleanup.h"
#include "config.h"
#include "fileio.h"
#include "jsonx.h"
#include "k8sclient.h"
#include "observe.h"
#include "shapecheck.h"
#include "verdict.h"
#include "yamldoc.h"

/* Exit statuses scripts can act on. */
#define EXIT_PASS         0
#define EXIT_FAIL         1
#define EXIT_USAGE        2
#define EXIT_INCONCLUSIVE 3
#define EXIT_REFUSED      4 /* verdict: refused under HANGAR_UID_SPLIT=required */
#define MAX_INPUT_BYTES   (4 * 1024 * 1024)

static const char usage_text[] =
    "usage: hangar-probe check --role agent|driver [--config FILE] [--set KEY=VALUE]...\n"
    "       hangar-probe spec (--pod-file FILE | --name POD [--namespace NS] [--kubeconfig F]\n"
    "                         [--context NAME]) [--config FILE] [--set KEY=VALUE]...\n"
    "       hangar-probe verdict --mode off|auto|required --spec FILE --agent FILE\n"
    "                            --driver FILE [--write PATH]\n"
    "       hangar-probe version\n"
    "check and spec print one JSON report and exit 0 (pass), 1 (a required check\n"
    "failed), 3 (inconclusive) or 2 (usage). verdict prints the verdict and exits\n"
    "0 (split active), 1 (single-user) or 4 (refused). The configuration is the\n"
    "webhook's file, its sidecar settings only (--config or HANGAR_CONFIG, then HANGAR_*\n"
    "variables, then each --set with a sidecar key of docs/configuration.md, e.g.\n"
    "--set driver.uid=2001); the mode may\n"
    "come from HANGAR_UID_SPLIT. spec --name finds the API as kubectl does: --kubeconfig,\n"
    "else $KUBECONFIG (a colon-separated list, merged), else ~/.kube/config (not in a\n"
    "cluster), else the pod's service account; --context picks a context (default: the\n"
    "current one). A kubeconfig's exec credential plugin (GKE: gke-gcloud-auth-plugin) is\n"
    "run as kubectl runs it.\n";

static int print_json(json_t *j)
{
        _cleanup_free_ char *text = j ? jsonx_dumps(j, JSON_INDENT(2)) : NULL;
        if (!text) {
                fputs("hangar-probe: out of memory\n", stderr);
                return -1;
        }
        puts(text);
        return 0;
}

/* The sidecar's part of the webhook's configuration file (--config or
 * HANGAR_CONFIG, then HANGAR_* variables; the webhook's own keys are skipped
 * unread), then each --set KEY=VALUE on top: the expected values of the
 * checks. Exit status on failure: usage. */
typedef struct overrides {
        const char *items[32];
        size_t n;
} overrides_t;

static int add_override(overrides_t *o, const char *assignment)
{
        if (o->n == ARRAY_SIZE(o->items))
                return -E2BIG;
        o->items[o->n++] = assignment;
        return 0;
}

static int load_config(const char *cmd, const char *path, const overrides_t *o, hg_config_t *cfg)
{
        hg_error_t err = {0};
        if (config_load(cfg, path, &err) < 0) { /* freed cfg */
                fprintf(stderr, "hangar-probe %s: %s\n", cmd, err.message);
                return -1;
        }
        int r = 0;
        for (size_t i = 0; r == 0 && i < o->n; i++)
                r = config_set(cfg, o->items[i], &err);
        if (r == 0)
                r = config_validate(cfg, &err);
        if (r < 0) {
                config_free(cfg);
                fprintf(stderr, "hangar-probe %s: %s\n", cmd, err.message);
                return -1;
        }
        return 0;
}

static int cmd_check(int argc, char **argv)
{
        static const struct option opts[] = {{"role", required_argument, NULL, 'r'},
                                             {"config", required_argument, NULL, 'c'},
                                             {"set", required_argument, NULL, 'S'},
                                             {NULL, 0, NULL, 0}};
        const char *role_name = NULL, *config_path = getenv("HANGAR_CONFIG");
        overrides_t sets = {0};
        int c;
        while ((c = getopt_long(argc, argv, "r:c:", opts, NULL)) != -1) {
                switch (c) {
                case 'r':
                        role_name = optarg;
                        break;
                case 'c':
                        config_path = optarg;
                        break;
                case 'S':
                        if (add_override(&sets, optarg) < 0) {
                                fputs("hangar-probe check: too many --set\n", stderr);
                                return EXIT_USAGE;
                        }
                        break;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
        }
        shape_role_t role;
        if (role_name && strcmp(role_name, "agent") == 0)
                role = SHAPE_ROLE_AGENT;
        else if (role_name && strcmp(role_name, "driver") == 0)
                role = SHAPE_ROLE_DRIVER;
        else {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        if (optind != argc) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        hg_config_t cfg;
        if (load_config("check", config_path, &sets, &cfg) < 0)
                return EXIT_USAGE;
        observation_t o;
        observe_all(&o);
        /* The agent's credentials: the only check that asks the API server. */
        if (role == SHAPE_ROLE_AGENT)
                creds_observe(o.mounts_known ? &o.mounts : NULL, &o.creds);
        report_result_t result = REPORT_FAIL;
        _cleanup_json_ json_t *report = checks_run(&cfg, role, &o, &result);
        observe_free(&o);
        config_free(&cfg);
        _cleanup_free_ char *text = report ? jsonx_dumps(report, JSON_INDENT(2)) : NULL;
        if (!text) {
                fputs("hangar-probe check: out of memory\n", stderr);
                return EXIT_FAIL;
        }
        puts(text);
        switch (result) {
        case REPORT_PASS:
                return EXIT_PASS;
        case REPORT_INCONCLUSIVE:
                return EXIT_INCONCLUSIVE;
        case REPORT_FAIL:
        default:
                return EXIT_FAIL;
        }
}

static int cmd_spec(int argc, char **argv)
{
        static const struct option opts[] = {{"pod-file", required_argument, NULL, 'f'},
                                             {"name", required_argument, NULL, 'n'},
                                             {"namespace", required_argument, NULL, 's'},
                                             {"kubeconfig", required_argument, NULL, 'k'},
                                             {"context", required_argument, NULL, 'x'},
                                             {"config", required_argument, NULL, 'c'},
                                             {"set", required_argument, NULL, 'S'},
                                             {NULL, 0, NULL, 0}};
        const char *file = NULL, *name = NULL, *ns = NULL, *kubeconfig = NULL, *context = NULL;
        const char *config_path = getenv("HANGAR_CONFIG");
        overrides_t sets = {0};
        int c;
        while ((c = getopt_long(argc, argv, "f:n:s:k:c:", opts, NULL)) != -1) {
                switch (c) {
                case 'f':
                        file = optarg;
                        break;
                case 'n':
                        name = optarg;
                        break;
                case 's':
                        ns = optarg;
                        break;
                case 'k':
                        kubeconfig = optarg;
                        break;
                case 'x':
                        context = optarg;
                        break;
                case 'c':
                        config_path = optarg;
                        break;
                case 'S':
                        if (add_override(&sets, optarg) < 0) {
                                fputs("hangar-probe spec: too many --set\n", stderr);
                                return EXIT_USAGE;
                        }
                        break;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
        }
        /* The API's flags only go with --name. */
        if (optind != argc || (!file == !name) || (file && (kubeconfig || context || ns))) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        hg_config_t cfg;
        hg_error_t err = {0};
        if (load_config("spec", config_path, &sets, &cfg) < 0)
                return EXIT_USAGE;
        _cleanup_json_ json_t *pod = NULL;
        if (file) {
                (void)yamldoc_load_manifest(file, MAX_INPUT_BYTES, &pod, &err);
        } else {
                /* Through the API: a kubeconfig found as kubectl finds it, or
                 * the pod's own service account in a cluster. */
                k8s_client_t *k = NULL;
                if (k8s_client_new_kubectl(kubeconfig, context, &k, &err) == 0) {
                        char path[512];
                        (void)snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s",
                                       ns ? ns : k8s_client_namespace(k), name);
                        long status = 0;
                        if (k8s_request(k, "GET", path, NULL, NULL, &status, &pod, &err) == 0 &&
                            status != 200) {
                                char buf[32];
                                error_set(&err, -EIO, "GET %s: %s", path,
                                          k8s_status_message(pod, status, buf, sizeof(buf)));
                                json_decref(pod);
                                pod = NULL;
                        }
                        k8s_client_free(k);
                }
        }
        if (!pod) {
                config_free(&cfg);
                fprintf(stderr, "hangar-probe spec: %s\n", err.message);
                return EXIT_INCONCLUSIVE;
        }
        bool pass = false;
        _cleanup_json_ json_t *report = shapecheck_pod(&cfg, pod, &pass);
        config_free(&cfg);
        if (print_json(report) < 0)
                return EXIT_FAIL;
        return pass ? EXIT_PASS : EXIT_FAIL;
}

static int cmd_verdict(int argc, char **argv)
{
        static const struct option opts[] = {
            {"mode", required_argument, NULL, 'm'},  {"spec", required_argument, NULL, 's'},
            {"agent", required_argument, NULL, 'a'}, {"driver", required_argument, NULL, 'd'},
            {"write", required_argument, NULL, 'w'}, {NULL, 0, NULL, 0}};
        const char *mode_name = getenv("HANGAR_UID_SPLIT"), *write_path = NULL;
        const char *paths[3] = {NULL, NULL, NULL}; /* spec, agent, driver */
        int c;
        while ((c = getopt_long(argc, argv, "m:s:a:d:w:", opts, NULL)) != -1) {
                switch (c) {
                case 'm':
                        mode_name = optarg;
                        break;
                case 's':
                        paths[0] = optarg;
                        break;
                case 'a':
                        paths[1] = optarg;
                        break;
                case 'd':
                        paths[2] = optarg;
                        break;
                case 'w':
                        write_path = optarg;
                        break;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
        }
        split_mode_t mode;
        if (optind != argc || split_mode_parse(mode_name, &mode) < 0) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        /* A report that is missing or unreadable is a reason, not a crash:
         * the verdict then says so (fail closed). */
        json_t *reports[3] = {NULL, NULL, NULL};
        for (size_t i = 0; i < 3; i++) {
                hg_error_t err = {0};
                if (paths[i] &&
                    yamldoc_load_manifest(paths[i], MAX_INPUT_BYTES, &reports[i], &err) < 0)
                        fprintf(stderr, "hangar-probe verdict: %s\n", err.message);
        }
        verdict_t v = VERDICT_REFUSED;
        _cleanup_json_ json_t *out = verdict_decide(mode, reports[0], reports[1], reports[2], &v);
        for (size_t i = 0; i < 3; i++)
                json_decref(reports[i]);
        if (!out || print_json(out) < 0)
                return EXIT_FAIL;
        if (write_path) {
                _cleanup_free_ char *text = jsonx_dumps(out, JSON_COMPACT);
                int r = text ? file_write_atomic(write_path, text, strlen(text), 0644, 0) : -ENOMEM;
                if (r < 0) {
                        fprintf(stderr, "hangar-probe verdict: cannot write %s: %s\n", write_path,
                                strerror(-r));
                        return EXIT_FAIL;
                }
        }
        switch (v) {
        case VERDICT_SPLIT_ACTIVE:
                return EXIT_PASS;
        case VERDICT_SINGLE_USER:
                return EXIT_FAIL;
        case VERDICT_REFUSED:
        default:
                return EXIT_REFUSED;
        }
}

int main(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "version") == 0) {
                printf("hangar-probe %s\n", HANGAR_VERSION);
                return EXIT_PASS;
        }
        if (argc >= 2 && strcmp(argv[1], "check") == 0)
                return cmd_check(argc - 1, argv + 1);
        if (argc >= 2 && strcmp(argv[1], "spec") == 0)
                return cmd_spec(argc - 1, argv + 1);
        if (argc >= 2 && strcmp(argv[1], "verdict") == 0)
                return cmd_verdict(argc - 1, argv + 1);
        fputs(usage_text, stderr);
        return EXIT_USAGE;
}
