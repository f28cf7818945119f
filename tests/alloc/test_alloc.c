/* Allocation failure, one allocation at a time (docs/coverage.md).
 *
 *   test_alloc TARGET FILE...
 *
 * For each input FILE, runs TARGET once to count the allocations it makes
 * (N) and keep its answer (the reference), then once for every n in 1..N
 * with the n-th allocation failing (failalloc.h). Each of those runs must
 *   - return the error the function documents for it (-ENOMEM), or exactly
 *     the reference answer (the failure was absorbed: a fallback, a retry),
 *     or, for the review path, the answer the webhook gives on an internal
 *     error (a deny with reason internal-error): never a partial result, a
 *     different success or a wrong error (an input called malformed);
 *   - leave the heap as it found it (no leak, also without LeakSanitizer);
 *   - not crash (under ASan, no invalid access either).
 * Every failure names the target, the input and n, the case to add as a
 * regression. Exit status 1 on any failure. */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admission.h"
#include "approvals.h"
#include "cleanup.h"
#include "config.h"
#include "ctlreq.h"
#include "execcred.h"
#include "failalloc.h"
#include "fileio.h"
#include "frame.h"
#include "inject.h"
#include "jsonarena.h"
#include "jsondump.h"
#include "jsonparse.h"
#include "jsonptr.h"
#include "jsonx.h"
#include "mountinfo.h"
#include "patch.h"
#include "procstatus.h"
#include "settings.h"
#include "shape.h"
#include "spec.h"
#include "strbuf.h"
#include "strparse.h"
#include "yamldoc.h"

/* What one run returned: the function's code and its answer (for an error,
 * the message), built after the allocations stopped failing, in one of two
 * static buffers (the reference's and the current run's) so that the heap
 * is measured without it. */
#define OUTCOME_MAX (4u << 20)
typedef struct outcome {
        int r;
        char *text;
        size_t len;
} outcome_t;
static char outcome_space[2][OUTCOME_MAX];

typedef void (*target_fn)(const char *path, const char *buf, size_t len, outcome_t *o);

static void put(outcome_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(outcome_t *o, const char *fmt, ...)
{
        char *s = NULL;
        va_list ap;
        va_start(ap, fmt);
        int n = vasprintf(&s, fmt, ap);
        va_end(ap);
        /* The harness's own allocations: never armed. */
        if (n < 0 || (size_t)n >= OUTCOME_MAX - o->len)
                abort();
        memcpy(o->text + o->len, s, (size_t)n + 1);
        o->len += (size_t)n;
        free(s);
}

/* The webhook's defaults with injection on, as the golden cases run. */
static const webhook_settings_t *config_defaults_for_tests(void)
{
        static webhook_settings_t cfg;
        static bool ready;
        if (!ready) {
                if (settings_init_defaults(&cfg) < 0)
                        abort();
                cfg.driver_sidecar = true;
                ready = true;
        }
        return &cfg;
}

static void put_error(outcome_t *o, int r, const hg_error_t *err)
{
        o->r = r;
        put(o, "error %d: %s", r, err->message);
}

static void put_json(outcome_t *o, json_t *j)
{
        _cleanup_free_ char *s = j ? jsondump(j) : NULL;
        if (j && !s)
                abort();
        put(o, "%s\n", s ? s : "(null)");
}

/* Ends the armed part of a run (allocations stop failing there); a failure
 * r is the outcome. Returns whether it was one: then nothing more is put. */
static bool disarm_failed(outcome_t *o, int r, const hg_error_t *err)
{
        failalloc_disarm();
        if (r >= 0)
                return false;
        put_error(o, r, err);
        return true;
}

/* A configuration loaded (r) and dumped (NULL: out of memory), as its text. */
static void put_dump(outcome_t *o, int r, char *dump, const hg_error_t *err)
{
        if (r == 0 && !dump)
                r = -ENOMEM;
        if (!disarm_failed(o, r, err))
                put(o, "%s", dump);
        free(dump);
}

/* jsonparse_load, whole and through the review's projection. */
static void t_jsonparse(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0}, perr = {0};
        _cleanup_json_ json_t *whole = NULL, *proj = NULL;
        int r = jsonparse_load(buf, len, JSONX_MAX_DEPTH, &whole, &err);
        int rp = jsonparse_load_projected(buf, len, JSONX_MAX_DEPTH, &admission_review_projection,
                                          &proj, &perr);
        if (disarm_failed(o, r, &err))
                return;
        if (rp < 0)
                return put_error(o, rp, &perr);
        put_json(o, whole);
        put_json(o, proj);
}

/* A document written out as the CLIs write theirs (jsonx_dumps: jansson's
 * json_dumps returns a text without a key when a write fails). */
static void t_dumps(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        _cleanup_json_ json_t *doc = NULL;
        int r = jsonparse_load(buf, len, JSONX_MAX_DEPTH, &doc, &err);
        _cleanup_free_ char *pretty = r == 0 ? jsonx_dumps(doc, JSON_INDENT(2)) : NULL;
        _cleanup_free_ char *compact = pretty ? jsonx_dumps(doc, JSON_COMPACT) : NULL;
        if (r == 0 && !compact)
                r = -ENOMEM;
        if (disarm_failed(o, r, &err))
                return;
        put(o, "%s\n%s\n", pretty, compact);
}

/* A review's pod edited through JSON pointers and a patch, as mutate does. */
static void t_patch(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        _cleanup_json_ json_t *doc = NULL;
        patch_t p;
        int r = jsonparse_load(buf, len, JSONX_MAX_DEPTH, &doc, &err);
        json_t *pod = NULL, *got = NULL;
        if (r == 0)
                r = jsonptr_get(doc, "/request/object", &pod, &err);
        if (r == 0)
                r = patch_init(&p, pod);
        if (r < 0 && disarm_failed(o, r, &err))
                return; /* no patch to free */
        r = patch_set_member(&p, "/metadata", "annotations", "a~b/c", json_string("x"), &err);
        if (r == 0)
                r = patch_append(&p, "/spec", "volumes",
                                 json_pack("{s:s, s:{}}", "name", "v", "emptyDir"), &err);
        if (r == 0)
                r = patch_add(&p, "/spec/shareProcessNamespace", json_false(), &err);
        if (r == 0)
                r = patch_remove(&p, "/spec/containers/0/name", &err);
        if (r == 0) {
                _cleanup_json_ json_t *again = json_string("again");
                r = again ? jsonptr_add(pod, "/spec/containers/0/name", again, &err) : -ENOMEM;
        }
        if (r == 0)
                r = jsonptr_get(pod, "/metadata/annotations/a~0b~1c", &got, &err);
        if (r == 0)
                r = jsonptr_remove(pod, "/metadata/annotations/a~0b~1c", &err);
        _cleanup_free_ char *ops = r == 0 ? patch_take_ops(&p) : NULL;
        if (r == 0 && !ops)
                r = -ENOMEM;
        patch_free(&p);
        if (disarm_failed(o, r, &err))
                return;
        put(o, "%s\n", ops);
        put_json(o, pod);
}

static void put_review(outcome_t *o, int r, const char *answer, const admission_outcome_t *ao,
                       const hg_error_t *err)
{
        if (r < 0)
                return put_error(o, r, err);
        put(o, "%s\n%s %s %s\n", answer, mutate_decision_name(ao->result.decision),
            mutate_reason_name(ao->result.reason), ao->result.detail);
        put_json(o, ao->pod);
}

static void review(const char *buf, size_t len, admission_read_t read, const shape_values_t *values,
                   bool arena, outcome_t *o)
{
        hg_error_t err = {0};
        admission_outcome_t ao;
        _cleanup_free_ char *answer = NULL;
        if (arena)
                jsonarena_begin();
        int r = admission_review(config_defaults_for_tests(), values, read, buf, len, &answer, &ao,
                                 &err);
        failalloc_disarm();
        put_review(o, r, answer, &ao, &err);
        admission_outcome_free(&ao);
        if (arena)
                jsonarena_end();
}

/* The review path as `review` and the reference read it (values built for
 * the review), and as the server does (values built once, the projection,
 * jansson's values in the per-request arena). */
static void t_admission(const char *path, const char *buf, size_t len, outcome_t *o)
{
        review(buf, len, ADMISSION_READ_WHOLE, NULL, false, o);
}

static const shape_values_t *server_values(void)
{
        static shape_values_t *sv;
        if (!sv && shape_values_new(&config_defaults_for_tests()->sidecar, &sv) < 0)
                abort();
        return sv;
}

static void t_server(const char *path, const char *buf, size_t len, outcome_t *o)
{
        review(buf, len, ADMISSION_READ_PROJECTED, server_values(), true, o);
}

/* The pod a port-forward names, as the server's lookup would read it: an
 * injected pod (its allocations count too). */
static int lookup_pod(void *ctx, const char *ns, const char *name, json_t **ret_pod,
                      hg_error_t *err)
{
        static const char pod[] =
            "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"hangar.dev/driver-sidecar\":"
            "\"injected\"}},\"spec\":{\"containers\":[{\"name\":\"sandbox\"},"
            "{\"name\":\"hangar-driver\"}]}}";
        return jsonparse_load(pod, strlen(pod), JSONX_MAX_DEPTH, ret_pod, err);
}

/* The validating side, the pod a port-forward names read by lookup_pod. */
static void t_validate(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        admission_outcome_t ao;
        _cleanup_free_ char *answer = NULL;
        int r = admission_validate(config_defaults_for_tests(), buf, len, lookup_pod, NULL, &answer,
                                   &ao, &err);
        failalloc_disarm();
        put_review(o, r, answer, &ao, &err);
        admission_outcome_free(&ao);
}

/* A manifest stream: YAML reader, JSON conversion, `inject`. */
static void t_inject(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        ynode_t **docs = NULL;
        size_t n = 0;
        int r = yamldoc_parse_stream(buf, len, YAMLDOC_MAX_DOCUMENTS, &docs, &n, &err);
        _cleanup_json_ json_t *list = r == 0 ? json_array() : NULL;
        if (r == 0 && !list)
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < n; i++) {
                json_t *doc = NULL;
                r = ynode_to_json(docs[i], &doc, &err);
                if (r == 0 && json_array_append_new(list, doc) < 0)
                        r = -ENOMEM;
        }
        ynode_free_all(docs, n);
        if (r == 0)
                r = inject_manifests(config_defaults_for_tests(), list, NULL, NULL, &err);
        if (disarm_failed(o, r, &err))
                return;
        put_json(o, list);
}

/* The webhook's configuration file, read as the binary reads it. */
static void t_config(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        webhook_settings_t cfg;
        int r = settings_load(&cfg, path, &err);
        char *dump = NULL;
        if (r == 0) {
                dump = settings_dump(&cfg);
                settings_free(&cfg);
        }
        put_dump(o, r, dump, &err);
}

/* The same file as hangar-driver, hangar-relay and hangar-probe read it: the
 * sidecar's settings, the webhook's keys skipped. */
static void t_sidecar_config(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        hg_config_t cfg;
        int r = config_load(&cfg, path, &err);
        char *dump = NULL;
        if (r == 0) {
                dump = config_dump(&cfg);
                config_free(&cfg);
        }
        put_dump(o, r, dump, &err);
}

static void t_spec(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        turn_spec_t s;
        int r = spec_parse(buf, len, &s, &err);
        if (disarm_failed(o, r, &err))
                return;
        put(o, "%s %s %s\n%s\n%s\n%d %s %u %u %u\n", s.turn, spec_mode_name(s.mode), s.cwd,
            s.script, s.input, s.close_stdin, s.run_key, s.connect_timeout_s,
            s.handshake_timeout_ms, s.linger_s);
        put_json(o, s.settings);
        spec_free(&s);
}

static void t_ctlreq(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        ctlreq_t q;
        int r = ctlreq_parse(buf, len, &q, &err);
        if (disarm_failed(o, r, &err))
                return;
        put(o, "%d %s %llu %.*s\n", (int)q.op, q.turn ? q.turn : "-", (unsigned long long)q.from,
            (int)q.spec_len, q.spec ? q.spec : "");
        put_json(o, q.root);
        ctlreq_free(&q);
}

/* Every frame of a stream; a RUN's payload decoded, and encoded again.
 * The fuzz corpus's first byte is its limit selector: skipped. */
static void t_frame(const char *path, const char *buf, size_t len, outcome_t *o)
{
        const uint8_t *p = (const uint8_t *)buf + (len > 0);
        len -= len > 0;
        int r = 0;
        hg_error_t err = {0};
        strbuf_t got = {0};
        while (r >= 0 && len > 0) {
                frame_t f;
                size_t used;
                r = frame_parse(p, len, FRAME_MAX_PAYLOAD, &f, &used, &err);
                if (r <= 0)
                        break;
                p += used;
                len -= used;
                if (f.type != FRAME_RUN)
                        continue;
                frame_run_t run;
                r = frame_run_decode(&f, &run, &err);
                if (r < 0)
                        break;
                uint8_t *again = NULL;
                uint32_t again_len = 0;
                r = frame_run_encode(run.id, run.timeout_ms, run.tail_max, run.argv, &again,
                                     &again_len);
                if (r == 0 && (again_len != f.length || memcmp(again, f.payload, f.length) != 0))
                        r = error_set(&err, -EILSEQ, "RUN encoded again differs");
                free(again);
                for (uint32_t i = 0; r == 0 && i < run.argc; i++)
                        r = strbuf_printf(&got, "%s ", run.argv[i]);
                frame_run_free(&run);
        }
        if (!disarm_failed(o, r, &err))
                put(o, "%s", got.data ? got.data : "");
        strbuf_free(&got);
}

static void t_mountinfo(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        mount_table_t t;
        int r = mountinfo_parse(buf, len, &t, &err);
        if (disarm_failed(o, r, &err))
                return;
        for (size_t i = 0; i < t.n; i++) {
                const mount_entry_t *e = &t.entries[i];
                put(o, "%u %u %s %s %s %s %s %s %d\n", e->id, e->parent_id, e->root, e->mount_point,
                    e->mount_options, e->fstype, e->source, e->super_options, e->read_only);
        }
        mountinfo_free(&t);
}

static void t_procstatus(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        proc_status_t s;
        int r = procstatus_parse(buf, len, &s, &err);
        if (disarm_failed(o, r, &err))
                return;
        put(o, "%u %u %zu %llx %u %u\n", s.uid[1], s.gid[1], s.ngroups,
            (unsigned long long)s.cap[CAP_SET_EFFECTIVE], s.no_new_privs, s.seccomp);
}

/* A credential plugin's stdout (the first byte picks the apiVersion, as in
 * the fuzz corpus: 'b' v1beta1, else v1). */
static void t_execcred(const char *path, const char *buf, size_t len, outcome_t *o)
{
        hg_error_t err = {0};
        execcred_t c = {0};
        const char *version = len > 0 && buf[0] == 'b' ? EXECCRED_API_V1BETA1 : EXECCRED_API_V1;
        int r = len > 0 ? execcred_parse(buf + 1, len - 1, version, 1764633600, &c, &err)
                        : error_set(&err, -EINVAL, "empty input");
        if (disarm_failed(o, r, &err))
                return;
        put(o, "%s\n%s\n%s\n%lld\n", c.token ? c.token : "-", c.cert_pem ? c.cert_pem : "-",
            c.key_pem ? c.key_pem : "-", (long long)c.expiry);
        execcred_clear(&c);
}

/* The harness's stdout as the driver scans it for approval requests, fed
 * in pieces of 7 bytes (lines split across reads). */
static void t_approvals(const char *path, const char *buf, size_t len, outcome_t *o)
{
        approvals_t a;
        int r = approvals_init(&a);
        if (r < 0) {
                failalloc_disarm();
                o->r = r;
                return;
        }
        for (size_t off = 0; off < len; off += 7)
                if (approvals_scan(&a, (const uint8_t *)buf + off, len - off < 7 ? len - off : 7,
                                   NULL, NULL) < 0)
                        r = -ENOMEM;
        failalloc_disarm();
        o->r = r;
        for (size_t i = 0; i < a.n; i++) {
                put(o, "%s ", a.items[i].id);
                put_json(o, a.items[i].request);
        }
        put(o, "over %llu dup %llu lost %llu\n", (unsigned long long)a.over_limit,
            (unsigned long long)a.duplicates, (unsigned long long)a.lost);
        approvals_free(&a);
}

static const struct {
        const char *name;
        target_fn fn;
        bool review; /* an internal error is answered as a deny */
} targets[] = {
    {"jsonparse", t_jsonparse, false},
    {"patch", t_patch, false},
    {"dumps", t_dumps, false},
    {"admission", t_admission, true},
    {"server", t_server, true},
    {"validate", t_validate, true},
    {"inject", t_inject, false},
    {"config", t_config, false},
    {"sidecar_config", t_sidecar_config, false},
    {"spec", t_spec, false},
    {"ctlreq", t_ctlreq, false},
    {"frame", t_frame, false},
    {"mountinfo", t_mountinfo, false},
    {"procstatus", t_procstatus, false},
    {"execcred", t_execcred, false},
    {"approvals", t_approvals, false},
};

static void run(target_fn fn, unsigned long fail_at, const char *path, const char *buf, size_t len,
                outcome_t *o)
{
        *o = (outcome_t){.r = 0, .text = outcome_space[fail_at == 0 ? 0 : 1]};
        o->text[0] = '\0';
        failalloc_arm(fail_at);
        fn(path, buf, len, o);
        failalloc_disarm(); /* each target stops it first; this is in case */
}

/* The review path's answer to an internal error: a deny saying so; on the
 * validating side, a port-forward whose pod could not be read is refused
 * as pod-unknown, with the reason. */
static bool internal_error_answer(const outcome_t *o)
{
        return o->r == 0 && strstr(o->text, "\"allowed\":false") &&
               (strstr(o->text, "\"reason\":\"internal-error\"") ||
                strstr(o->text, "cannot tell whether the pod carries hangar's sidecar (Cannot "
                                "allocate memory)"));
}

static int one_input(size_t t, const char *path)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        if (file_read_bounded(path, 16 * 1024 * 1024, &buf, &len) < 0) {
                fprintf(stderr, "%s: cannot read it\n", path);
                return 1;
        }
        outcome_t ref;
        /* Twice: the first run may fill caches kept for the process. */
        run(targets[t].fn, 0, path, buf, len, &ref);
        size_t heap = failalloc_heap_bytes();
        run(targets[t].fn, 0, path, buf, len, &ref);
        unsigned long total = failalloc_disarm();
        if (failalloc_heap_bytes() != heap) {
                fprintf(stderr, "FAIL %s %s: the run without failures leaks\n", targets[t].name,
                        path);
                return 1;
        }
        int failures = 0;
        unsigned long enomem = 0, absorbed = 0, denied = 0;
        /* ALLOC_N=n: only that n (a regression case); ALLOC_PRINT=1 prints
         * both answers whole, ALLOC_STACK=1 where the allocation was. */
        const char *only = getenv("ALLOC_N");
        bool print = getenv("ALLOC_PRINT") != NULL;
        unsigned long first = 1;
        if (only) {
                uint64_t want = 0;
                if (parse_u64(only, &want) < 0 || want == 0 || want > total) {
                        fprintf(stderr, "FAIL %s %s: ALLOC_N=%s is not in 1..%lu\n",
                                targets[t].name, path, only, total);
                        return 1;
                }
                first = total = (unsigned long)want;
        }
        if (print)
                printf("reference %d:\n%s\n", ref.r, ref.text);
        for (unsigned long n = first; n <= total; n++) {
                outcome_t o;
                heap = failalloc_heap_bytes();
                run(targets[t].fn, n, path, buf, len, &o);
                bool failed = failalloc_failed();
                size_t after = failalloc_heap_bytes();
                if (after != heap) {
                        /* A cache filled late (after its first attempt
                         * failed) grows the heap once; a leak every time. */
                        heap = failalloc_heap_bytes();
                        run(targets[t].fn, n, path, buf, len, &o);
                        after = failalloc_heap_bytes();
                }
                const char *verdict = NULL;
                if (after != heap)
                        verdict = "leaks";
                else if (!failed)
                        verdict = "made fewer allocations than the reference run";
                else if (o.r == -ENOMEM)
                        enomem++;
                else if (o.r == ref.r && strcmp(o.text, ref.text) == 0)
                        absorbed++;
                else if (targets[t].review && internal_error_answer(&o))
                        denied++;
                else
                        verdict = o.r == 0 ? "reports success with another answer"
                                           : "reports another error than -ENOMEM";
                if (print)
                        printf("n=%lu %d:\n%s\n", n, o.r, o.text);
                if (verdict) {
                        failures++;
                        fprintf(stderr,
                                "FAIL %s %s n=%lu/%lu: %s (%ld bytes); returned %d: %.300s\n",
                                targets[t].name, path, n, total, verdict, (long)after - (long)heap,
                                o.r, o.text);
                        if (after != heap)
                                failalloc_report_leaks();
                }
        }
        printf("%s %s: %lu allocations; each failed in turn: %lu -ENOMEM, %lu internal-error "
               "answers, %lu absorbed (the reference answer), %d wrong\n",
               targets[t].name, path, total, enomem, denied, absorbed, failures);
        return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
        if (argc < 3) {
                fprintf(stderr, "usage: %s TARGET FILE...\n", argv[0]);
                return 2;
        }
        failalloc_init();
        /* The server's arena allocates through malloc (wrapped) while
         * active, and through jansson's default otherwise: installed as the
         * server installs it, over the hook, only for that target. */
        if (strcmp(argv[1], "server") == 0)
                jsonarena_install();
        for (size_t t = 0; t < ARRAY_SIZE(targets); t++) {
                if (strcmp(targets[t].name, argv[1]) != 0)
                        continue;
                int rc = 0;
                for (int i = 2; i < argc; i++)
                        rc |= one_input(t, argv[i]);
                return rc;
        }
        fprintf(stderr, "unknown target %s\n", argv[1]);
        return 2;
}
