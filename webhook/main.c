/* hangar-webhook: the mutating admission webhook that gives sandbox pods the
 * hangar-driver sidecar. Subcommands:
 *   serve   run the HTTPS server (the default)
 *   review  answer one AdmissionReview from stdin (the server minus transport)
 *   inject  print manifests (Pods, workloads' pod templates, Lists) as the
 *           webhook would have their pods stored
 *   certs   generate a CA and serving certificate with OpenSSL
 *   config  print the effective configuration, or the error that stops it
 *   audit   list stored sandbox pods whose shape is not the one the webhook
 *           would give them now (audit.c)
 *   test-injection  a dry-run sandbox pod through the API, checked (the
 *           chart's `helm test` hook) */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admission.h"
#include "audit.h"
#include "certgen.h"
#include "certstore.h"
#include "cleanup.h"
#include "fileio.h"
#include "guardmatch.h"
#include "inject.h"
#include "jsonarena.h"
#include "jsondump.h"
#include "jsonx.h"
#include "k8sclient.h"
#include "k8sname.h"
#include "log.h"
#include "metrics.h"
#include "selfcert.h"
#include "server.h"
#include "settings.h"
#include "strparse.h"
#include "yamldoc.h"

#define EXIT_USAGE 2
/* After a failed self-managed sync (API server unreachable, a conflict). */
#define SELFCERT_RETRY_SECONDS 5

static const char usage_text[] =
    "usage: hangar-webhook [serve] [--config FILE]\n"
    "       hangar-webhook review [--config FILE]        < admission-review.json\n"
    "       hangar-webhook review --validate [--pod POD.json] [--config FILE] < review.json\n"
    "       hangar-webhook inject -f MANIFEST.(json|yaml)|- [--config FILE]\n"
    "       hangar-webhook certs --out-dir DIR [--service NAME --namespace NS]\n"
    "                            [--dns NAME]... [--ip ADDR]... [--days N] [--ca-days N]\n"
    "                            [--reuse-ca] [--force]\n"
    "       hangar-webhook config [--config FILE]\n"
    "       hangar-webhook audit [--config FILE] [--kubeconfig FILE] [--context NAME]\n"
    "                            [-n NS | -A] [-o table|json] [--all]\n"
    "                            [--webhook-configuration NAME]\n"
    "                            [--scope KEY=VALUE|all] [--events]\n"
    "       hangar-webhook test-injection --namespace NS --image IMAGE [--config FILE]\n"
    "                            [--kubeconfig FILE] [--context NAME]\n"
    "       hangar-webhook match hangar-pod < review.json\n"
    "       hangar-webhook version\n"
    "The configuration file may also be given as HANGAR_CONFIG; environment\n"
    "variables override it (see docs/configuration.md).\n";

static int fail(const char *cmd, const char *msg)
{
        /* One line: strip anything that could break it. */
        fprintf(stderr, "hangar-webhook %s: ", cmd);
        for (const char *p = msg; *p; p++)
                fputc((*p == '\n' || *p == '\r') ? ' ' : *p, stderr);
        fputc('\n', stderr);
        return EXIT_FAILURE;
}

/* --config FILE, or HANGAR_CONFIG, or defaults alone. */
static int load_config(const char *cmd, const char *path, webhook_settings_t *cfg)
{
        if (!path)
                path = getenv("HANGAR_CONFIG");
        hg_error_t err = {0};
        if (settings_load(cfg, path, &err) < 0)
                return fail(cmd, err.message);
        log_level_t level = LOG_LEVEL_INFO;
        (void)log_parse_level(cfg->log_level, &level);
        log_set_level(level);
        return 0;
}

/* Options shared by the commands that only need a config file. */
static int parse_config_only(int argc, char **argv, const char **ret_path)
{
        static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        int c;
        while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        *ret_path = optarg;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        exit(EXIT_SUCCESS);
                default:
                        fputs(usage_text, stderr);
                        return -EINVAL;
                }
        }
        if (optind != argc) {
                fputs(usage_text, stderr);
                return -EINVAL;
        }
        return 0;
}

static void reload_certificates(char *last_error, size_t last_error_size)
{
        hg_error_t err = {0};
        int r = certstore_reload(&err);
        if (r == 1) {
                last_error[0] = '\0';
                metrics_record_cert(certstore_not_after(), 1);
                log_event(LOG_LEVEL_INFO, "serving certificate loaded",
                          json_pack("{s:I}", "notAfter", (json_int_t)certstore_not_after()));
        } else if (r < 0 && strcmp(err.message, last_error) != 0) {
                /* Reported once per distinct problem, not every poll. */
                (void)snprintf(last_error, last_error_size, "%s", err.message);
                metrics_record_cert(0, 0);
                log_event(
                    LOG_LEVEL_ERROR, "serving certificate refused; keeping the one in use",
                    json_pack("{s:s, s:b}", "detail", err.message, "ready", certstore_ready()));
        }
}

/* Self-managed certificates: one sync round, retried sooner after a failure. */
static time_t sync_certificates(selfcert_t *sc, const webhook_settings_t *cfg, char *last_error,
                                size_t last_error_size)
{
        hg_error_t err = {0};
        int r = selfcert_sync(sc, &err);
        if (r < 0) {
                if (strcmp(err.message, last_error) != 0)
                        log_event(LOG_LEVEL_ERROR, "self-managed certificate sync failed",
                                  json_pack("{s:s}", "detail", err.message));
                (void)snprintf(last_error, last_error_size, "%s", err.message);
                return SELFCERT_RETRY_SECONDS;
        }
        last_error[0] = '\0';
        return (time_t)cfg->tls_sync_seconds;
}

static time_t monotonic_now(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec;
}

static int cmd_serve(int argc, char **argv)
{
        const char *config_path = NULL;
        if (parse_config_only(argc, argv, &config_path) < 0)
                return EXIT_USAGE;
        webhook_settings_t cfg;
        if (load_config("serve", config_path, &cfg) != 0)
                return EXIT_FAILURE;
        /* Before the server's threads exist (see jsonarena.h). */
        jsonarena_install();

        /* Signals arrive through sigtimedwait below, never as handlers; the
         * server's threads inherit the mask. */
        sigset_t mask;
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &mask, NULL);
        signal(SIGPIPE, SIG_IGN);

        /* Replaced credentials outlive any handshake that could still use them. */
        unsigned grace = 2 * cfg.request_timeout_seconds + 60;
        if (certstore_init(cfg.cert_file, cfg.key_file, grace) < 0) {
                settings_free(&cfg);
                return fail("serve", "out of memory");
        }
        char last_error[ERROR_MESSAGE_MAX] = "";
        char last_sync_error[ERROR_MESSAGE_MAX] = "";
        hg_error_t err = {0};
        selfcert_t *selfcert = NULL;
        time_t next_sync = 0;
        if (strcmp(cfg.tls_mode, SETTINGS_TLS_SELF_MANAGED) == 0) {
                if (selfcert_new(&cfg, &selfcert, &err) < 0) {
                        certstore_shutdown();
                        settings_free(&cfg);
                        return fail("serve", err.message);
                }
                next_sync = monotonic_now() + sync_certificates(selfcert, &cfg, last_sync_error,
                                                                sizeof(last_sync_error));
        }
        reload_certificates(last_error, sizeof(last_error));

        server_t *server = NULL;
        if (server_start(&cfg, &server, &err) < 0) {
                selfcert_free(selfcert);
                certstore_shutdown();
                settings_free(&cfg);
                return fail("serve", err.message);
        }
        log_event(LOG_LEVEL_INFO, "listening",
                  json_pack("{s:s, s:i, s:i, s:b, s:s, s:s}", "address", cfg.listen_address, "port",
                            (int)server_port(server), "healthPort", (int)server_health_port(server),
                            "driverSidecar", cfg.driver_sidecar, "selector", cfg.selector_key,
                            "version", HANGAR_VERSION));

        for (;;) {
                struct timespec poll = {.tv_sec = cfg.cert_poll_seconds};
                if (selfcert) {
                        time_t until = next_sync - monotonic_now();
                        if (until < poll.tv_sec)
                                poll.tv_sec = until > 0 ? until : 0;
                }
                int sig = sigtimedwait(&mask, NULL, &poll);
                if (sig == SIGTERM || sig == SIGINT) {
                        log_event(LOG_LEVEL_INFO, "shutting down",
                                  json_pack("{s:s}", "signal", strsignal(sig)));
                        break;
                }
                /* A timeout, SIGHUP (reload now) or EINTR: look at the files. */
                if (selfcert && monotonic_now() >= next_sync)
                        next_sync =
                            monotonic_now() + sync_certificates(selfcert, &cfg, last_sync_error,
                                                                sizeof(last_sync_error));
                reload_certificates(last_error, sizeof(last_error));
        }
        server_stop(server);
        selfcert_free(selfcert);
        certstore_shutdown();
        settings_free(&cfg);
        return EXIT_SUCCESS;
}

/* `review --validate --pod FILE`: the stored pod a port-forward names comes
 * from a file instead of the API. */
static int lookup_pod_file(void *ctx, const char *ns, const char *name, json_t **ret_pod,
                           hg_error_t *err)
{
        const char *path = ctx;
        if (!path)
                return error_set(err, -ENOENT, "no --pod file given to read pod %s/%s", ns, name);
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = file_read_bounded(path, K8S_MAX_RESPONSE_BYTES, &text, &len);
        if (r < 0)
                return error_set(err, r, "cannot read %s: %s", path, strerror(-r));
        return jsonx_load(text, len, JSONX_MAX_DEPTH, ret_pod, err);
}

/* The C twin of the chart's hangar-pod matchCondition on a review read
 * from stdin (its request's object and oldObject): "true" when the API
 * server would send it to the guard, "false" when not. For comparing the
 * twin with the API server's own evaluation of the CEL
 * (tests/e2e/test_matchcondition.sh). */
static int cmd_match(int argc, char **argv)
{
        if (argc != 2 || strcmp(argv[1], "hangar-pod") != 0) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        _cleanup_free_ char *body = NULL;
        size_t len;
        /* A review holds two pods, each at most the API server's 3 MiB. */
        int r = fd_read_bounded(STDIN_FILENO, 8u << 20, &body, &len);
        if (r < 0)
                return fail("match", strerror(-r));
        hg_error_t err = {0};
        _cleanup_json_ json_t *review = NULL;
        if (jsonx_load(body, len, JSONX_MAX_DEPTH, &review, &err) < 0)
                return fail("match", err.message);
        json_t *req = json_object_get(review, "request");
        json_t *old = json_object_get(req, "oldObject"), *new = json_object_get(req, "object");
        if (!json_is_object(old) || !json_is_object(new))
                return fail("match", "the review's request needs object and oldObject pods");
        puts(guardmatch_hangar_pod(old, new) ? "true" : "false");
        return EXIT_SUCCESS;
}

static int cmd_review(int argc, char **argv)
{
        const char *config_path = NULL, *pod_path = NULL;
        bool validate = false;
        static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                             {"validate", no_argument, NULL, 'V'},
                                             {"pod", required_argument, NULL, 'p'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        int c;
        while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case 'V':
                        validate = true;
                        break;
                case 'p':
                        pod_path = optarg;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return EXIT_SUCCESS;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
        }
        if (optind != argc || (pod_path && !validate)) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        webhook_settings_t cfg;
        if (load_config("review", config_path, &cfg) != 0)
                return EXIT_FAILURE;
        _cleanup_free_ char *body = NULL, *response = NULL;
        size_t len;
        int r = fd_read_bounded(STDIN_FILENO, cfg.max_body_bytes, &body, &len);
        if (r < 0) {
                settings_free(&cfg);
                return fail("review",
                            r == -EFBIG ? "input exceeds server.maxBodyBytes" : strerror(-r));
        }
        admission_outcome_t o;
        hg_error_t err = {0};
        /* The server's paths: /validate, or /mutate where only what the
         * decision reads is built. */
        if (validate)
                r = admission_validate(&cfg, body, len, lookup_pod_file, (void *)pod_path,
                                       &response, &o, &err);
        else
                r = admission_review(&cfg, NULL, ADMISSION_READ_PROJECTED, body, len, &response, &o,
                                     &err);
        admission_outcome_free(&o);
        settings_free(&cfg);
        if (r < 0)
                return fail("review", r == -EINVAL ? err.message : strerror(-r));
        puts(response);
        return EXIT_SUCCESS;
}

static void print_skip(const char *where, const char *reason, const char *detail, void *ctx)
{
        (void)ctx;
        fprintf(stderr, "hangar-webhook inject: %s: not injected (%s): %s\n", where, reason,
                detail);
}

static int cmd_inject(int argc, char **argv)
{
        static const struct option opts[] = {{"filename", required_argument, NULL, 'f'},
                                             {"config", required_argument, NULL, 'c'},
                                             {NULL, 0, NULL, 0}};
        const char *file = NULL, *config_path = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "f:c:", opts, NULL)) != -1) {
                switch (c) {
                case 'f':
                        file = optarg;
                        break;
                case 'c':
                        config_path = optarg;
                        break;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
        }
        if (!file || optind != argc) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        _cleanup_settings_ webhook_settings_t cfg = {0};
        if (load_config("inject", config_path, &cfg) != 0)
                return EXIT_FAILURE;
        /* Asking for an injection is the point of this command, as with
         * `istioctl kube-inject`: the on/off switch is the cluster's. */
        cfg.driver_sidecar = true;

        hg_error_t err = {0};
        _cleanup_json_ json_t *docs = NULL;
        int r = yamldoc_load_manifests(file, cfg.max_body_bytes, &docs, &err);
        if (r == 0)
                r = inject_manifests(&cfg, docs, print_skip, NULL, &err);
        if (r < 0)
                return fail("inject", r == -ENOMEM ? strerror(ENOMEM) : err.message);
        /* One manifest in, one out; several come out as one v1 List, which
         * kubectl applies like the stream it was. */
        _cleanup_json_ json_t *out =
            json_array_size(docs) == 1
                ? json_incref(json_array_get(docs, 0))
                : json_pack("{s:s, s:s, s:O}", "apiVersion", "v1", "kind", "List", "items", docs);
        _cleanup_free_ char *text = out ? jsonx_dumps(out, JSON_INDENT(2)) : NULL;
        if (!text)
                return fail("inject", strerror(ENOMEM));
        puts(text);
        return EXIT_SUCCESS;
}

typedef struct string_list {
        const char *items[65];
        size_t n;
} string_list_t;

static int push(string_list_t *l, const char *s)
{
        if (l->n + 1 >= ARRAY_SIZE(l->items))
                return -E2BIG;
        l->items[l->n++] = s;
        l->items[l->n] = NULL;
        return 0;
}

static int write_pem(const char *dir, const char *name, const char *data, mode_t mode, bool force)
{
        char path[4096];
        int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
        if (n < 0 || (size_t)n >= sizeof(path))
                return -ENAMETOOLONG;
        return file_write_atomic(path, data, strlen(data), mode, !force);
}

static int read_pem_pair(const char *dir, certgen_pem_t *ret)
{
        char cert[4096], key[4096];
        size_t len;
        (void)snprintf(cert, sizeof(cert), "%s/ca.crt", dir);
        (void)snprintf(key, sizeof(key), "%s/ca.key", dir);
        int r = file_read_bounded(cert, 1 << 20, &ret->cert, &len);
        if (r == 0)
                r = file_read_bounded(key, 1 << 20, &ret->key, &len);
        if (r < 0)
                certgen_pem_free(ret);
        return r;
}

static int cmd_certs(int argc, char **argv)
{
        enum {
                OPT_SERVICE = 256,
                OPT_NAMESPACE,
                OPT_DNS,
                OPT_IP,
                OPT_DAYS,
                OPT_CA_DAYS,
                OPT_REUSE_CA,
                OPT_FORCE,
                OPT_OUT
        };
        static const struct option opts[] = {{"out-dir", required_argument, NULL, OPT_OUT},
                                             {"service", required_argument, NULL, OPT_SERVICE},
                                             {"namespace", required_argument, NULL, OPT_NAMESPACE},
                                             {"dns", required_argument, NULL, OPT_DNS},
                                             {"ip", required_argument, NULL, OPT_IP},
                                             {"days", required_argument, NULL, OPT_DAYS},
                                             {"ca-days", required_argument, NULL, OPT_CA_DAYS},
                                             {"reuse-ca", no_argument, NULL, OPT_REUSE_CA},
                                             {"force", no_argument, NULL, OPT_FORCE},
                                             {NULL, 0, NULL, 0}};
        const char *out = NULL, *service = NULL, *ns = NULL;
        string_list_t dns = {0}, ips = {0};
        uint32_t days = 365, ca_days = 3650;
        bool reuse_ca = false, force = false;
        int c;
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                int r = 0;
                switch (c) {
                case OPT_OUT:
                        out = optarg;
                        break;
                case OPT_SERVICE:
                        service = optarg;
                        break;
                case OPT_NAMESPACE:
                        ns = optarg;
                        break;
                case OPT_DNS:
                        r = push(&dns, optarg);
                        break;
                case OPT_IP:
                        r = push(&ips, optarg);
                        break;
                case OPT_DAYS:
                        r = parse_u32(optarg, &days) < 0 || days == 0 || days > 3650 ? -EINVAL : 0;
                        break;
                case OPT_CA_DAYS:
                        r = parse_u32(optarg, &ca_days) < 0 || ca_days == 0 || ca_days > 36500
                                ? -EINVAL
                                : 0;
                        break;
                case OPT_REUSE_CA:
                        reuse_ca = true;
                        break;
                case OPT_FORCE:
                        force = true;
                        break;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
                if (r < 0)
                        return fail("certs", "bad value for an option (too many names, or days "
                                             "out of range)");
        }
        if (!out || optind != argc || (!service != !ns)) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        /* The names the API server uses to reach a Service. */
        char svc_names[4][512];
        if (service) {
                static const char *const suffixes[] = {"", ".svc", ".svc.cluster.local"};
                (void)snprintf(svc_names[0], sizeof(svc_names[0]), "%s", service);
                for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++)
                        (void)snprintf(svc_names[i + 1], sizeof(svc_names[i + 1]), "%s.%s%s",
                                       service, ns, suffixes[i]);
                for (size_t i = 0; i < ARRAY_SIZE(svc_names); i++)
                        if (push(&dns, svc_names[i]) < 0)
                                return fail("certs", "too many names");
        }
        if (mkdir(out, 0755) < 0 && errno != EEXIST)
                return fail("certs", strerror(errno));

        hg_error_t err = {0};
        certgen_pem_t ca = {0}, leaf = {0};
        int r;
        if (reuse_ca) {
                r = read_pem_pair(out, &ca);
                if (r < 0)
                        return fail("certs", "--reuse-ca: cannot read ca.crt and ca.key in the "
                                             "output directory");
        } else {
                r = certgen_ca("hangar-webhook CA", ca_days, &ca, &err);
                if (r < 0)
                        return fail("certs", err.message);
        }
        certgen_request_t req = {
            .common_name = dns.n          ? dns.items[0]
                           : ips.items[0] ? ips.items[0]
                                          : "hangar-webhook",
            .dns_names = dns.items,
            .ip_addresses = ips.items,
            .days = days,
        };
        r = certgen_serving(&ca, &req, &leaf, &err);
        /* All or nothing: a file in the way is found before any is written,
         * so a refusal never leaves a new CA beside an old serving pair. */
        bool replace_leaf = force || reuse_ca;
        const struct {
                const char *name;
                bool written, replace;
        } outputs[] = {{"ca.crt", !reuse_ca, force},
                       {"ca.key", !reuse_ca, force},
                       {"tls.key", true, replace_leaf},
                       {"tls.crt", true, replace_leaf}};
        for (size_t i = 0; r == 0 && i < ARRAY_SIZE(outputs); i++) {
                char path[4096];
                (void)snprintf(path, sizeof(path), "%s/%s", out, outputs[i].name);
                if (outputs[i].written && !outputs[i].replace && access(path, F_OK) == 0)
                        r = -EEXIST;
        }
        if (r == 0 && !reuse_ca) {
                r = write_pem(out, "ca.crt", ca.cert, 0644, force);
                if (r == 0)
                        r = write_pem(out, "ca.key", ca.key, 0600, force);
        }
        /* A reused CA means a rotation: the new leaf replaces the old one. */
        if (r == 0)
                r = write_pem(out, "tls.key", leaf.key, 0600, replace_leaf);
        if (r == 0)
                r = write_pem(out, "tls.crt", leaf.cert, 0644, replace_leaf);
        certgen_pem_free(&ca);
        certgen_pem_free(&leaf);
        if (r == -EEXIST)
                return fail("certs", "output files exist; pass --force to overwrite");
        if (r < 0)
                return fail("certs", err.code ? err.message : strerror(-r));
        printf("wrote %s/{ca.crt,ca.key,tls.crt,tls.key}\n", out);
        return EXIT_SUCCESS;
}

static int cmd_config(int argc, char **argv)
{
        const char *config_path = NULL;
        if (parse_config_only(argc, argv, &config_path) < 0)
                return EXIT_USAGE;
        webhook_settings_t cfg;
        if (load_config("config", config_path, &cfg) != 0)
                return EXIT_FAILURE;
        _cleanup_free_ char *text = settings_dump(&cfg);
        settings_free(&cfg);
        if (!text)
                return fail("config", "out of memory");
        puts(text);
        return EXIT_SUCCESS;
}

/* audit's exit status when it could not finish (1 is "pods need action"). */
#define EXIT_AUDIT_ERROR 3
/* audit's exit status when a pod is broken now: its hangar-driver cannot
 * start, or a copy carries hangar's parts without the selector's label. */
#define EXIT_AUDIT_BROKEN 4

static int cmd_audit(int argc, char **argv)
{
        enum { OPT_KUBECONFIG = 256, OPT_CONTEXT, OPT_ALL, OPT_WEBHOOK, OPT_SCOPE, OPT_EVENTS };
        static const struct option opts[] = {
            {"config", required_argument, NULL, 'c'},
            {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
            {"context", required_argument, NULL, OPT_CONTEXT},
            {"namespace", required_argument, NULL, 'n'},
            {"all-namespaces", no_argument, NULL, 'A'},
            {"output", required_argument, NULL, 'o'},
            {"all", no_argument, NULL, OPT_ALL},
            {"webhook-configuration", required_argument, NULL, OPT_WEBHOOK},
            {"scope", required_argument, NULL, OPT_SCOPE},
            {"events", no_argument, NULL, OPT_EVENTS},
            {"help", no_argument, NULL, 'h'},
            {NULL, 0, NULL, 0}};
        const char *config_path = NULL, *output = "table";
        /* The chart's default scope (scope.mode optIn, scope.namespaceLabel):
         * pods of a namespace without the label are unguarded. */
        const char *scope = "hangar.dev/injection=enabled";
        audit_options_t o = {0};
        int c;
        while ((c = getopt_long(argc, argv, "c:n:Ao:h", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case OPT_KUBECONFIG:
                        o.kubeconfig = optarg;
                        break;
                case OPT_CONTEXT:
                        o.context = optarg;
                        break;
                case 'n':
                        o.namespace = optarg;
                        break;
                case 'A':
                        o.all_namespaces = true;
                        break;
                case 'o':
                        output = optarg;
                        break;
                case OPT_ALL:
                        o.show_all = true;
                        break;
                case OPT_WEBHOOK:
                        o.webhook_configuration = optarg;
                        break;
                case OPT_SCOPE:
                        scope = optarg;
                        break;
                case OPT_EVENTS:
                        o.events = true;
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return EXIT_SUCCESS;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
        }
        /* --scope all: every namespace is in scope (the chart's scope.mode
         * all); else KEY=VALUE, a label key and value the API server would
         * take (a namespace's label; nothing else is compared). */
        _cleanup_free_ char *scope_copy = strcmp(scope, "all") == 0 ? NULL : strdup(scope);
        if (scope_copy) {
                char *eq = strchr(scope_copy, '=');
                if (eq)
                        *eq = '\0';
                if (!eq || !k8s_is_qualified_name(scope_copy) || !k8s_is_label_value(eq + 1)) {
                        (void)fail("audit", "--scope must be all or KEY=VALUE, a label key and "
                                            "value (the chart's scope.namespaceLabel)");
                        return EXIT_USAGE;
                }
                o.scope_key = scope_copy;
                o.scope_value = eq + 1;
        } else if (strcmp(scope, "all") != 0) {
                return fail("audit", strerror(ENOMEM));
        }
        /* output is never NULL: getopt gives a required_argument's optarg. */
        if (optind != argc || (o.namespace && o.all_namespaces) ||
            /* NOLINTNEXTLINE(clang-analyzer-core.NonNullParamChecker) */
            (strcmp(output, "table") != 0 && strcmp(output, "json") != 0) ||
            (o.namespace && !o.namespace[0])) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        o.json = strcmp(output, "json") == 0;
        _cleanup_settings_ webhook_settings_t cfg = {0};
        if (load_config("audit", config_path, &cfg) != 0)
                return EXIT_AUDIT_ERROR;
        /* The question is which pods lack the shape injection gives, so it
         * is asked with injection on (as `inject` does). */
        if (!cfg.driver_sidecar)
                fputs("hangar-webhook audit: driverSidecar is off in this configuration; "
                      "judging pods as if it were on\n",
                      stderr);
        cfg.driver_sidecar = true;
        hg_error_t err = {0};
        int r = audit_run(&cfg, &o, stdout, &err);
        if (r < 0) {
                (void)fail("audit", r == -ENOMEM && !err.code ? strerror(ENOMEM) : err.message);
                return EXIT_AUDIT_ERROR;
        }
        return r == AUDIT_FOUND_BROKEN ? EXIT_AUDIT_BROKEN : r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static int cmd_test_injection(int argc, char **argv)
{
        enum { OPT_KUBECONFIG = 256, OPT_CONTEXT, OPT_IMAGE };
        static const struct option opts[] = {
            {"config", required_argument, NULL, 'c'},
            {"kubeconfig", required_argument, NULL, OPT_KUBECONFIG},
            {"context", required_argument, NULL, OPT_CONTEXT},
            {"namespace", required_argument, NULL, 'n'},
            {"image", required_argument, NULL, OPT_IMAGE},
            {NULL, 0, NULL, 0}};
        const char *config_path = NULL, *kubeconfig = NULL, *context = NULL, *ns = NULL,
                   *image = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "c:n:", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case OPT_KUBECONFIG:
                        kubeconfig = optarg;
                        break;
                case OPT_CONTEXT:
                        context = optarg;
                        break;
                case 'n':
                        ns = optarg;
                        break;
                case OPT_IMAGE:
                        image = optarg;
                        break;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
        }
        if (optind != argc || !ns || !ns[0] || !image || !image[0]) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        _cleanup_settings_ webhook_settings_t cfg = {0};
        if (load_config("test-injection", config_path, &cfg) != 0)
                return EXIT_FAILURE;
        hg_error_t err = {0};
        int r = audit_test_injection(&cfg, kubeconfig, context, ns, image, stdout, &err);
        if (r < 0)
                return fail("test-injection", err.code ? err.message : strerror(-r));
        return r == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int main(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*fn)(int, char **);
        } commands[] = {
            {"serve", cmd_serve},   {"review", cmd_review},
            {"inject", cmd_inject}, {"certs", cmd_certs},
            {"config", cmd_config}, {"audit", cmd_audit},
            {"match", cmd_match},   {"test-injection", cmd_test_injection},
        };
        if (argc >= 2 && strcmp(argv[1], "version") == 0) {
                printf("hangar-webhook %s\n", HANGAR_VERSION);
                return EXIT_SUCCESS;
        }
        if (argc >= 2 && argv[1][0] != '-') {
                for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
                        if (strcmp(argv[1], commands[i].name) == 0)
                                return commands[i].fn(argc - 1, argv + 1);
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        return cmd_serve(argc, argv);
}
