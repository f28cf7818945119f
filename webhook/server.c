#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "admission.h"
#include "certstore.h"
#include "cleanup.h"
#include "connguard.h"
#include "jsonarena.h"
#include "jsondump.h"
#include "k8sclient.h"
#include "log.h"
#include "metrics.h"
#include "podlookup.h"
#include "shape.h"
#include "strparse.h"

/* TLS 1.2 and 1.3 only (GnuTLS priority string). */
#define TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE"
/* Above the connection tables (connguard), so that MHD accepts and our
 * policy decides: room for the reserve and for connections shut down and
 * not yet closed. */
#define MHD_LIMIT_SLACK 64
/* The health listener's own table: the kubelet's probes and Prometheus,
 * from the node, a handful of connections at a time; no client of the
 * HTTPS listener can starve it. */
#define HEALTH_MAX_CONNECTIONS     64
#define HEALTH_MAX_PER_CLIENT      8
#define HEALTH_MAX_IDLE_PER_CLIENT 4
#define HEALTH_MAX_IDLE            16
#define HEALTH_HEADER_TIMEOUT_MS   2000
/* How often the reaper shuts down connections past their deadline. */
#define REAPER_PERIOD_NS 250000000L
/* A review's deadline is the API server's ?timeout less this much, so the
 * answer (or the close) reaches it before it gives up. */
#define REVIEW_DEADLINE_MARGIN_MS 250
/* Per-connection memory MHD keeps (and zeroes for every request): headers,
 * the read buffer the body streams through, the response's headers. Its
 * default, 32 KiB, was a measurable share of a review's time; a request's
 * headers here are well under 2 KiB and the body is copied out as it comes. */
#define CONNECTION_MEMORY 16384
/* A request body's first 16 KiB are not counted against the body caps
 * (connguard_hold_body): every connection may hold that much (the table
 * bounds it), and a review that small, most are, takes no lock for it. */
#define BODY_UNCOUNTED 16384
/* Body bytes one client source, and all of them, may hold in memory: two
 * and four times server.maxBodyBytes (6 and 12 MiB with the chart's): far
 * above what the API server's reviews hold at once, far below what a
 * client trickling bodies on a full table made the webhook hold (1.2 GB,
 * bench/webhook-memory.sh). */
#define BODY_PER_CLIENT_FACTOR 2
#define BODY_TOTAL_FACTOR      4
/* The port-forward lookups' lane (podlookup.c): two threads, as the design
 * page says (a lookup waits on the API server, not on CPU), and a queue no
 * deeper than the reviews the API server could have in flight for it;
 * beyond, a port-forward is refused at once rather than waited on. */
#define LOOKUP_THREADS 2
#define LOOKUP_QUEUE   64
/* A lookup ends this long before its review's deadline, so the denial it
 * turns into still reaches the API server in time. */
#define LOOKUP_DEADLINE_MARGIN_MS 250

struct server {
        const webhook_settings_t *cfg;
        shape_values_t *values; /* built once, shared by every review */
        struct MHD_Daemon *tls;
        struct MHD_Daemon *health;
        podlookup_t *lookups;
        atomic_bool stopping;
        pthread_t reaper;
        bool reaper_started;
        atomic_int_fast64_t limited_logged_ms; /* the last "clients limited" warning */
};

/* Which listener a request came in on, and its connection table. */
typedef struct listener {
        server_t *server;
        bool serves_reviews; /* /mutate and /validate */
        bool serves_health;  /* /healthz, /readyz, /metrics */
        bool tls;
        metrics_listener_t metrics;
        pthread_mutex_t lock; /* guards table and scratch */
        connguard_t *table;
        int *scratch; /* connguard_capacity ids, for apply_all_pending */
        size_t nscratch;
} listener_t;

static listener_t tls_listener, health_listener;

/* One connection, from MHD's STARTED notice to its CLOSED one (MHD's
 * socket context). */
typedef struct conn {
        listener_t *l;
        int id; /* the entry in l->table */
        int fd;
        /* The entry's phase as its worker thread last set it. */
        atomic_int phase;
        /* A phase change not yet in the table: (since_ms << 8) | (phase
         * + 1), 0 for none. A request's own transitions (headers, body,
         * idle) are noted here without the lock, which a contended pair
         * of workers would otherwise take several times a review (and a
         * preempted holder would stall the other); the next holder of
         * the lock, the reaper within 250 ms at the latest, applies it
         * with its time, so deadlines run from when it happened. */
        atomic_uint_fast64_t pending;
        char peer[INET6_ADDRSTRLEN];
} conn_t;

/* TLS connections by socket, for GnuTLS's hooks, which get the session or
 * the socket but not MHD's connection. Sized by RLIMIT_NOFILE at start. */
static _Atomic(conn_t *) *conn_by_fd;
static size_t conn_by_fd_len;

/* The entry admitted by this thread's accept policy, until MHD's STARTED
 * notice (same thread, same accept) claims it. Left unclaimed, MHD gave
 * the connection up in between; the next accept on the thread frees it. */
static _Thread_local struct {
        listener_t *l;
        int id;
} pending = {NULL, -1};

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef enum route {
        ROUTE_MUTATE,
        ROUTE_VALIDATE,
        ROUTE_HEALTHZ,
        ROUTE_READYZ,
        ROUTE_METRICS,
        ROUTE_NOT_FOUND,
        ROUTE_BAD_METHOD,
} route_t;

/* Per-request state, from the first callback to the completion notice. */
typedef struct request {
        route_t route;
        unsigned refuse_status; /* non-zero: answer this once the body is done */
        char refuse_message[160];
        char *body;
        size_t len;
        size_t cap;
        size_t drained;  /* body bytes thrown away after a refusal */
        size_t held;     /* body bytes counted in the table (connguard_hold_body) */
        bool answer_now; /* refused with a body too large to drain */
        int corked_fd;   /* >= 0: TCP_CORK set on it for this answer */
        struct timespec started;
        conn_t *conn; /* NULL if the connection is not in a table */
        /* A /validate review whose pod is read on the lookup lane: the
         * connection is suspended while the job runs, and the job leaves
         * the decided answer here before it resumes the connection. */
        podlookup_job_t job;
        struct MHD_Connection *mhd;
        const server_t *server;
        int64_t lookup_deadline_ms; /* CLOCK_MONOTONIC */
        atomic_bool decided;        /* the fields below are set */
        int review_r;               /* admission_validate's result */
        char *response;             /* review_r == 0: the answer, malloc'd */
        char error[256];            /* review_r == -EINVAL: why */
} request_t;

static double seconds_since(const struct timespec *t0)
{
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static conn_t *conn_of(struct MHD_Connection *conn)
{
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        return info ? info->socket_context : NULL;
}

/* Notes a phase change for the table, without the lock. */
static void defer_phase(conn_t *c, connguard_phase_t phase)
{
        if (!c)
                return;
        atomic_store(&c->phase, (int)phase);
        atomic_store(&c->pending, ((uint_fast64_t)now_ms() << 8) | ((uint_fast64_t)phase + 1));
}

/* Under the lock: the connection's noted phase change, into the table. */
static void apply_pending(conn_t *c)
{
        uint_fast64_t p = atomic_exchange(&c->pending, 0);
        if (p)
                connguard_phase(c->l->table, c->id, (connguard_phase_t)((p & 0xff) - 1),
                                (int64_t)(p >> 8), 0);
}

/* The entry enters phase now (deadline_ms 0: the phase's own). */
static void enter_phase(conn_t *c, connguard_phase_t phase, int64_t deadline_ms)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->l->lock);
        apply_pending(c);
        connguard_phase(c->l->table, c->id, phase, now_ms(), deadline_ms);
        pthread_mutex_unlock(&c->l->lock);
        atomic_store(&c->phase, (int)phase);
}

/* An answer is queued: it has the answer deadline (a client that never
 * reads is cut), and keeps the connection only where that pays: a source
 * over its idle share gets Connection: close, which the API server's Go
 * client honours without failing anything (an idle connection closed
 * under it would fail the review sent on it: docs/webhook.md). */
static bool answer_keeps_alive(struct MHD_Connection *conn)
{
        conn_t *c = conn_of(conn);
        if (!c)
                return true;
        pthread_mutex_lock(&c->l->lock);
        apply_pending(c);
        connguard_keepalive_t k = connguard_keep_alive(c->l->table, c->id);
        connguard_phase(c->l->table, c->id, CONNGUARD_ANSWER, now_ms(), 0);
        pthread_mutex_unlock(&c->l->lock);
        atomic_store(&c->phase, (int)CONNGUARD_ANSWER);
        if (k != CONNGUARD_KEEP)
                metrics_record_keepalive_declined(c->l->metrics, k);
        return k == CONNGUARD_KEEP;
}

static enum MHD_Result send_buffer(struct MHD_Connection *conn, unsigned status, const char *type,
                                   char *body, bool close)
{
        if (!answer_keeps_alive(conn))
                close = true;
        /* MHD frees body (malloc'd) with the response. */
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
        if (!resp) {
                free(body);
                return MHD_NO;
        }
        (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        if (close)
                (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
        enum MHD_Result ret = MHD_queue_response(conn, status, resp);
        MHD_destroy_response(resp);
        return ret;
}

/* A Kubernetes-style Status object for errors before a decision. */
static enum MHD_Result send_error(struct MHD_Connection *conn, unsigned status, const char *msg)
{
        json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion", "v1",
                              "status", "Failure", "message", msg, "code", (int)status);
        char *text = j ? jsondump(j) : NULL;
        json_decref(j);
        if (!text)
                return MHD_NO;
        return send_buffer(conn, status, "application/json", text, status >= 400);
}

static enum MHD_Result send_text(struct MHD_Connection *conn, unsigned status, const char *text)
{
        char *copy = strdup(text);
        if (!copy)
                return MHD_NO;
        return send_buffer(conn, status, "text/plain; charset=utf-8", copy, false);
}

static route_t route_of(const listener_t *l, const char *method, const char *url)
{
        static const struct {
                const char *path;
                const char *method;
                route_t route;
                bool review; /* else a health route */
        } routes[] = {
            {"/mutate", MHD_HTTP_METHOD_POST, ROUTE_MUTATE, true},
            {"/validate", MHD_HTTP_METHOD_POST, ROUTE_VALIDATE, true},
            {"/healthz", MHD_HTTP_METHOD_GET, ROUTE_HEALTHZ, false},
            {"/readyz", MHD_HTTP_METHOD_GET, ROUTE_READYZ, false},
            {"/metrics", MHD_HTTP_METHOD_GET, ROUTE_METRICS, false},
        };
        for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
                if (strcmp(url, routes[i].path) != 0)
                        continue;
                if (routes[i].review ? !l->serves_reviews : !l->serves_health)
                        return ROUTE_NOT_FOUND;
                return strcmp(method, routes[i].method) == 0 ? routes[i].route : ROUTE_BAD_METHOD;
        }
        return ROUTE_NOT_FOUND;
}

static bool is_json_content_type(const char *ct)
{
        if (!ct)
                return false;
        static const char expected[] = "application/json";
        size_t n = sizeof(expected) - 1;
        if (strncasecmp(ct, expected, n) != 0)
                return false;
        /* Parameters such as "; charset=utf-8" are fine (blanks before the
         * ';' too); "application/jsonx" and "application/json x" are not. */
        const char *rest = ct + n;
        rest += strspn(rest, " \t");
        return *rest == '\0' || *rest == ';';
}

static void refuse(request_t *req, unsigned status, metrics_error_t kind, const char *msg)
{
        if (req->refuse_status)
                return;
        req->refuse_status = status;
        (void)snprintf(req->refuse_message, sizeof(req->refuse_message), "%s", msg);
        metrics_record_error(kind);
}

/* How much of a refused request's body is read and thrown away. */
static uint64_t drain_limit(const server_t *s)
{
        return 2 * s->cfg->max_body_bytes;
}

static bool is_review_route(route_t route)
{
        return route == ROUTE_MUTATE || route == ROUTE_VALIDATE;
}

/* First callback of a /mutate or /validate request: headers only. */
static void check_review_headers(const server_t *s, struct MHD_Connection *conn, request_t *req)
{
        const char *ct =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
        if (!is_json_content_type(ct))
                refuse(req, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, METRICS_ERROR_MEDIA_TYPE,
                       "Content-Type must be application/json");
        const char *cl =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        uint64_t declared;
        /* MHD already rejects a malformed Content-Length. */
        if (cl && parse_u64(cl, &declared) == 0) {
                if (declared > s->cfg->max_body_bytes)
                        refuse(req, MHD_HTTP_CONTENT_TOO_LARGE, METRICS_ERROR_TOO_LARGE,
                               "request body exceeds the configured maximum");
                /* A refused body is drained, so the client can read the answer
                 * (closing on unread data resets the connection under it),
                 * unless it is too large to be worth reading. */
                req->answer_now = declared > drain_limit(s);
        }
}

/* The request's body bytes counted in its connection's table: n more, or
 * all given back (n 0, back). */
static int hold_body(request_t *req, size_t n)
{
        conn_t *c = req->conn;
        if (!c)
                return 0;
        pthread_mutex_lock(&c->l->lock);
        int r = 0;
        if (n)
                r = connguard_hold_body(c->l->table, c->id, n);
        else
                connguard_release_body(c->l->table, c->id, req->held);
        pthread_mutex_unlock(&c->l->lock);
        if (r == 0)
                req->held = n ? req->held + n : 0;
        return r;
}

static void drop_body(request_t *req)
{
        if (req->held)
                (void)hold_body(req, 0);
        free(req->body);
        req->body = NULL;
        req->len = req->cap = 0;
}

static int append_body(const server_t *s, request_t *req, const char *data, size_t n)
{
        if (req->len + n > s->cfg->max_body_bytes) {
                refuse(req, MHD_HTTP_CONTENT_TOO_LARGE, METRICS_ERROR_TOO_LARGE,
                       "request body exceeds the configured maximum");
                drop_body(req);
                return 0;
        }
        if (req->len + n > req->cap) {
                size_t cap = req->cap ? req->cap : BODY_UNCOUNTED;
                while (cap < req->len + n)
                        cap *= 2;
                /* Never more than a body may take (counted as it is). */
                if (cap > s->cfg->max_body_bytes)
                        cap = s->cfg->max_body_bytes;
                size_t counted = cap > BODY_UNCOUNTED ? cap - BODY_UNCOUNTED : 0;
                if (counted > req->held && hold_body(req, counted - req->held) < 0) {
                        /* Answered once the rest is drained (bounded). */
                        refuse(req, MHD_HTTP_SERVICE_UNAVAILABLE, METRICS_ERROR_BODY_BUDGET,
                               "request bodies held in memory from this source, or from all, "
                               "are at their cap; try again");
                        drop_body(req);
                        req->drained += n;
                        return 0;
                }
                char *p = realloc(req->body, cap);
                if (!p)
                        return -ENOMEM;
                req->body = p;
                req->cap = cap;
        }
        memcpy(req->body + req->len, data, n);
        req->len += n;
        return 0;
}

/* peer: the client's address, so an operator can tell the API server's
 * sources (server.trustedClientCIDRs, the NetworkPolicy) from others. */
static void log_review(const admission_outcome_t *o, double seconds, const char *error,
                       const char *peer)
{
        if (!log_enabled(LOG_LEVEL_INFO))
                return;
        json_t *f = json_pack(
            "{s:s*, s:s*, s:s*, s:s*, s:b, s:s, s:s, s:I, s:s}", "uid", o->uid, "namespace",
            o->namespace, "pod", o->name, "operation", o->operation, "dryRun", o->dry_run,
            "decision", error ? "rejected" : mutate_decision_name(o->result.decision), "reason",
            error ? "bad-request" : mutate_reason_name(o->result.reason), "micros",
            (json_int_t)(seconds * 1e6), "peer", peer);
        if (f && (error || o->result.detail[0]))
                json_object_set_new(f, "detail", json_string(error ? error : o->result.detail));
        log_event(LOG_LEVEL_INFO, "review", f);
}

/* MHD sends an answer's headers and body as two TLS records, pushing the
 * headers alone when the two pass 1400 bytes (ours are ~2 KB): two TCP
 * segments, and two wake-ups of the client, for one answer. Corked, the
 * kernel sends them as one; on_completed uncorks once MHD has written the
 * whole answer (and Linux sends corked data after 200 ms in any case). This
 * took a quarter off the CPU time per review under load. */
static void cork(struct MHD_Connection *conn, request_t *req)
{
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        int on = 1;
        if (info && setsockopt(info->connect_fd, IPPROTO_TCP, TCP_CORK, &on, sizeof(on)) == 0)
                req->corked_fd = info->connect_fd;
}

static void uncork(request_t *req)
{
        int off = 0;
        if (req->corked_fd >= 0)
                (void)setsockopt(req->corked_fd, IPPROTO_TCP, TCP_CORK, &off, sizeof(off));
        req->corked_fd = -1;
}

/* Lookups for a review decided on a worker: none is made there. The first
 * pass of a /validate review says whether it needs the pod at all (only a
 * port-forward does); if it does, the review goes to the lookup lane. */
static int deferring_lookup(void *ctx, const char *ns, const char *name, json_t **ret_pod,
                            hg_error_t *err)
{
        (void)ns;
        (void)name;
        (void)ret_pod;
        *(bool *)ctx = true;
        return error_set(err, -EAGAIN, "the pod is read on the lookup lane");
}

/* On the lookup lane: the pod, read before the review's deadline. */
static int lane_lookup(void *ctx, const char *ns, const char *name, json_t **ret_pod,
                       hg_error_t *err)
{
        const request_t *req = ctx;
        int64_t left = req->lookup_deadline_ms - now_ms();
        if (left <= 0)
                return error_set(err, -ETIMEDOUT,
                                 "reading pod %s/%s: no time left before the review's deadline", ns,
                                 name);
        return podlookup_read(req->server->cfg->kubeconfig, ns, name, (long)left, ret_pod, err);
}

/* When the lane cannot take the review: ctx says why; the guard denies. */
static int refused_lookup(void *ctx, const char *ns, const char *name, json_t **ret_pod,
                          hg_error_t *err)
{
        (void)ret_pod;
        return error_set(err, -EAGAIN, "reading pod %s/%s: %s", ns, name, (const char *)ctx);
}

/* Decides the review into req (review_r, response, error), logged and
 * counted, unless *ret_deferred (may be NULL) comes back true: then the
 * review needs a lookup that this pass did not make, and nothing is kept. */
static void decide_review(const server_t *s, request_t *req, admission_pod_lookup_fn lookup,
                          void *lookup_ctx, bool *ret_deferred)
{
        admission_outcome_t o;
        hg_error_t err = {0};
        char *response = NULL;
        /* Every jansson value of this review lives in the thread's arena and
         * is gone at jsonarena_end(); only the malloc'd answer leaves. */
        jsonarena_begin();
        const char *body = req->body ? req->body : "";
        int r = req->route == ROUTE_VALIDATE
                    ? admission_validate(s->cfg, body, req->len, lookup, lookup_ctx, &response, &o,
                                         &err)
                    : admission_review(s->cfg, s->values, ADMISSION_READ_PROJECTED, body, req->len,
                                       &response, &o, &err);
        if (ret_deferred && *ret_deferred) {
                free(response);
                admission_outcome_free(&o);
                jsonarena_end();
                return;
        }
        double secs = seconds_since(&req->started);
        const char *peer = req->conn ? req->conn->peer : "";
        if (r == -EINVAL) {
                metrics_record_error(METRICS_ERROR_BAD_REQUEST);
                log_review(&o, secs, err.message, peer);
                (void)snprintf(req->error, sizeof(req->error), "%s", err.message);
        } else if (r < 0) {
                metrics_record_error(METRICS_ERROR_INTERNAL);
                log_review(&o, secs, "internal error", peer);
        } else {
                metrics_record_review(&o.result, secs);
                log_review(&o, secs, NULL, peer);
        }
        req->review_r = r;
        req->response = r == 0 ? response : NULL;
        if (r != 0)
                free(response);
        admission_outcome_free(&o);
        jsonarena_end();
        atomic_store(&req->decided, true);
}

/* Sends what decide_review left in req. */
static enum MHD_Result send_review(struct MHD_Connection *conn, request_t *req)
{
        if (req->review_r == -EINVAL)
                return send_error(conn, MHD_HTTP_BAD_REQUEST, req->error);
        if (req->review_r < 0)
                return send_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error");
        char *response = req->response;
        req->response = NULL; /* MHD frees it with the answer */
        cork(conn, req);
        return send_buffer(conn, MHD_HTTP_OK, "application/json", response, false);
}

/* A lookup lane job: the review decided with the pod read there (or, with
 * the lane stopping, refused), then the connection resumed to send it. */
static void run_lookup_job(podlookup_job_t *job, bool cancelled)
{
        request_t *req = (request_t *)((char *)job - offsetof(request_t, job));
        if (cancelled)
                decide_review(req->server, req, refused_lookup, (void *)"the webhook is stopping",
                              NULL);
        else
                decide_review(req->server, req, lane_lookup, req, NULL);
        MHD_resume_connection(req->mhd);
}

/* The review needs its pod: its connection waits, suspended, while the
 * lane reads it; the worker goes on with other connections. A lane that
 * cannot take it gets the review refused now (fail closed, not waited on). */
static enum MHD_Result defer_review(const server_t *s, struct MHD_Connection *conn, request_t *req)
{
        req->mhd = conn;
        req->server = s;
        req->job.run = run_lookup_job;
        MHD_suspend_connection(conn);
        int r = podlookup_submit(s->lookups, &req->job);
        if (r < 0) {
                decide_review(s, req, refused_lookup,
                              (void *)(r == -EAGAIN ? "too many port-forward lookups in flight"
                                                    : "the webhook is stopping"),
                              NULL);
                MHD_resume_connection(conn);
        }
        return MHD_YES;
}

static enum MHD_Result answer_review(const server_t *s, struct MHD_Connection *conn, request_t *req)
{
        bool deferred = false;
        decide_review(s, req, deferring_lookup, &deferred, &deferred);
        if (deferred)
                return defer_review(s, conn, req);
        return send_review(conn, req);
}

static enum MHD_Result answer_simple(server_t *s, struct MHD_Connection *conn, route_t route)
{
        switch (route) {
        case ROUTE_HEALTHZ:
                return send_text(conn, MHD_HTTP_OK, "ok\n");
        case ROUTE_READYZ:
                if (!atomic_load(&s->stopping) && certstore_ready())
                        return send_text(conn, MHD_HTTP_OK, "ok\n");
                return send_text(conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                                 atomic_load(&s->stopping) ? "shutting down\n"
                                                           : "no valid serving certificate\n");
        case ROUTE_METRICS: {
                char *text = metrics_render(!atomic_load(&s->stopping) && certstore_ready());
                if (!text)
                        return MHD_NO;
                return send_buffer(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", text, false);
        }
        case ROUTE_NOT_FOUND:
                metrics_record_error(METRICS_ERROR_NOT_FOUND);
                return send_error(conn, MHD_HTTP_NOT_FOUND, "no such path");
        case ROUTE_BAD_METHOD:
                metrics_record_error(METRICS_ERROR_NOT_FOUND);
                return send_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed");
        case ROUTE_MUTATE:
        default:
                return MHD_NO;
        }
}

/* The API server gives up on a review at its ?timeout=Ns: the review's
 * deadline is a little before (0: none given, the phase's own). */
static int64_t review_deadline(struct MHD_Connection *conn, const server_t *s)
{
        const char *t = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "timeout");
        size_t n = t ? strlen(t) : 0;
        char digits[16];
        uint32_t secs;
        if (n < 2 || n > sizeof(digits) || t[n - 1] != 's')
                return 0;
        memcpy(digits, t, n - 1);
        digits[n - 1] = '\0';
        if (parse_u32(digits, &secs) < 0 || secs == 0 || secs > s->cfg->request_timeout_seconds)
                return 0;
        return now_ms() + (int64_t)secs * 1000 - REVIEW_DEADLINE_MARGIN_MS;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
        listener_t *l = cls;
        server_t *s = l->server;
        request_t *req = *con_cls;
        if (!req) {
                req = calloc(1, sizeof(*req));
                if (!req)
                        return MHD_NO;
                req->corked_fd = -1;
                clock_gettime(CLOCK_MONOTONIC, &req->started);
                req->conn = conn_of(conn);
                /* Headers complete: the body's deadline from here. */
                defer_phase(req->conn, CONNGUARD_BODY);
                /* A request in progress has the request deadline (the
                 * table's, absolute, kept by the reaper); MHD's inactivity
                 * timeout a second later is the backstop. Before the first
                 * request and between requests the longer idle timeout
                 * holds (start_daemon, on_completed). */
                (void)MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                                s->cfg->request_timeout_seconds + 1);
                req->route = route_of(l, method, url);
                if (is_review_route(req->route))
                        check_review_headers(s, conn, req);
                *con_cls = req;
                /* Unknown paths, and a refusal whose body is too large to
                 * drain, are answered now: MHD then closes the connection
                 * instead of reading a body nobody wants. Anything else is
                 * answered once the request is complete, which keeps the
                 * connection alive (an answer on this first call would not). */
                if (req->route == ROUTE_NOT_FOUND || req->route == ROUTE_BAD_METHOD)
                        return answer_simple(s, conn, req->route);
                if (req->refuse_status && req->answer_now)
                        return send_error(conn, req->refuse_status, req->refuse_message);
                return MHD_YES;
        }
        if (!is_review_route(req->route)) {
                *upload_data_size = 0; /* a body on GET is ignored */
                return answer_simple(s, conn, req->route);
        }
        if (*upload_data_size > 0) {
                /* The idle timeout catches a silent client; this catches one
                 * that trickles bytes to hold a connection open. */
                if (seconds_since(&req->started) > (double)s->cfg->request_timeout_seconds) {
                        refuse(req, MHD_HTTP_REQUEST_TIMEOUT, METRICS_ERROR_TIMEOUT,
                               "request body took too long");
                        return send_error(conn, req->refuse_status, req->refuse_message);
                }
                if (req->refuse_status) {
                        /* Refused on its headers, or grown past the maximum
                         * without a Content-Length: drain it, bounded. */
                        req->drained += *upload_data_size;
                        if (req->drained > drain_limit(s))
                                return send_error(conn, req->refuse_status, req->refuse_message);
                } else if (append_body(s, req, upload_data, *upload_data_size) < 0) {
                        return MHD_NO;
                }
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (req->refuse_status)
                return send_error(conn, req->refuse_status, req->refuse_message);
        /* Back from the lookup lane: the answer is ready. */
        if (atomic_load(&req->decided))
                return send_review(conn, req);
        /* Only /validate may wait (a port-forward's pod is read from the
         * API, on the lookup lane); a /mutate review is microseconds of
         * CPU, which no deadline could cut, and stays under the body's
         * deadline. */
        if (req->route == ROUTE_VALIDATE) {
                int64_t deadline = review_deadline(conn, s);
                enter_phase(req->conn, CONNGUARD_REVIEW, deadline);
                if (!deadline)
                        deadline = now_ms() + (int64_t)s->cfg->request_timeout_seconds * 1000 -
                                   REVIEW_DEADLINE_MARGIN_MS;
                req->lookup_deadline_ms = deadline - LOOKUP_DEADLINE_MARGIN_MS;
        }
        return answer_review(s, conn, req);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
        listener_t *l = cls;
        request_t *req = *con_cls;
        if (!req)
                return;
        /* Kept alive for the next review: the API server reuses an idle
         * connection for up to 90 s and does not resend a POST that meets
         * one we closed (seen as "failed calling webhook: EOF"). */
        if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
                (void)MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                                l->server->cfg->idle_timeout_seconds);
                defer_phase(req->conn, CONNGUARD_IDLE);
        }
        /* The answer is all written (or the request is over): send it now. */
        uncork(req);
        free(req->response);
        drop_body(req);
        free(req);
        *con_cls = NULL;
}

__attribute__((format(printf, 2, 0))) static void log_mhd(void *cls, const char *fmt, va_list ap)
{
        char msg[512];
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        size_t n = strlen(msg);
        while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
                msg[--n] = '\0';
        log_event(LOG_LEVEL_DEBUG, "libmicrohttpd", json_pack("{s:s}", "detail", msg));
}

/* A "clients limited" warning at most once a minute: a hostile client
 * must not flood the log either. */
static void warn_limited(server_t *s, const listener_t *l, const char *what, const char *reason)
{
        int64_t now = now_ms();
        int64_t last = atomic_load(&s->limited_logged_ms);
        if (last != 0 && now - last < 60000)
                return;
        if (!atomic_compare_exchange_strong(&s->limited_logged_ms, &last, now))
                return;
        log_event(LOG_LEVEL_WARN, "clients limited",
                  json_pack("{s:s, s:s, s:s, s:s}", "listener", l->tls ? "https" : "health",
                            "action", what, "reason", reason, "detail",
                            "see hangar_webhook_connections_refused_total and "
                            "hangar_webhook_connections_evicted_total; at most one such line "
                            "a minute"));
}

static conn_t *conn_by_socket(int fd);

static void collect_id(int id, intptr_t handle, void *data)
{
        listener_t *l = data;
        (void)handle;
        if (l->nscratch < connguard_capacity(l->table))
                l->scratch[l->nscratch++] = id;
}

/* Under the lock: every connection's noted phase change, into the table.
 * A connection listed is not closed yet (CLOSED takes the lock first), so
 * its conn_t is alive. */
static void apply_all_pending(listener_t *l)
{
        l->nscratch = 0;
        connguard_foreach(l->table, CONNGUARD_PHASE_COUNT, collect_id, l);
        for (size_t i = 0; i < l->nscratch; i++) {
                intptr_t fd = connguard_handle(l->table, l->scratch[i]);
                conn_t *c = fd >= 0 ? conn_by_socket((int)fd) : NULL;
                if (c && c->l == l && c->id == l->scratch[i])
                        apply_pending(c);
        }
}

static void forget_pending(void)
{
        if (!pending.l)
                return;
        pthread_mutex_lock(&pending.l->lock);
        connguard_closed(pending.l->table, pending.id);
        pthread_mutex_unlock(&pending.l->lock);
        pending.l = NULL;
        pending.id = -1;
}

/* MHD's accept policy: the table decides, before MHD spends anything on
 * the connection. A refused connection is closed at once. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
        listener_t *l = cls;
        forget_pending();
        connguard_decision_t d;
        pthread_mutex_lock(&l->lock);
        /* Who is busy and who idle decides a victim: the table up to date. */
        apply_all_pending(l);
        int r = connguard_admit(l->table, addr, addrlen, now_ms(), &d);
        /* Under the lock: the victim's socket is open until its CLOSED
         * notice, which takes the lock first. */
        if (r == 0 && d.verdict == CONNGUARD_EVICT && d.victim_handle >= 0)
                (void)shutdown((int)d.victim_handle, SHUT_RDWR);
        pthread_mutex_unlock(&l->lock);
        if (r < 0)
                return MHD_NO;
        if (d.verdict == CONNGUARD_REFUSE) {
                metrics_record_refused(l->metrics, d.refusal);
                warn_limited(l->server, l, "refused", connguard_refusal_name(d.refusal));
                return MHD_NO;
        }
        if (d.verdict == CONNGUARD_EVICT) {
                metrics_record_evicted(l->metrics, d.victim_phase);
                warn_limited(l->server, l, "evicted", connguard_phase_name(d.victim_phase));
        }
        pending.l = l;
        pending.id = d.id;
        return MHD_YES;
}

static conn_t *conn_by_socket(int fd)
{
        if (fd < 0 || (size_t)fd >= conn_by_fd_len)
                return NULL;
        return atomic_load(&conn_by_fd[fd]);
}

/* GnuTLS reads the socket through this (MHD gave it the bare socket):
 * the first bytes after an idle spell begin a request, whose headers
 * then have headerTimeoutSeconds however slowly they trickle. */
static ssize_t tls_pull(gnutls_transport_ptr_t ptr, void *buf, size_t n)
{
        int fd = (int)(intptr_t)ptr;
        ssize_t r = recv(fd, buf, n, 0);
        if (r > 0) {
                conn_t *c = conn_by_socket(fd);
                if (c && atomic_load(&c->phase) == CONNGUARD_IDLE)
                        defer_phase(c, CONNGUARD_HEADERS);
        }
        return r;
}

/* The client's Finished: the handshake is done, within the header
 * deadline; the connection is idle until its first request. The API
 * server's client pools connections it dialed and did not need, so a
 * handshaken connection waits like an idle one (docs/webhook.md). */
static int on_handshake_message(gnutls_session_t session, unsigned htype, unsigned when,
                                unsigned incoming, const gnutls_datum_t *msg)
{
        (void)msg;
        if (htype != GNUTLS_HANDSHAKE_FINISHED || when != GNUTLS_HOOK_POST || !incoming)
                return 0;
        conn_t *c = conn_by_socket(gnutls_transport_get_int(session));
        if (c && atomic_load(&c->phase) == CONNGUARD_HEADERS)
                enter_phase(c, CONNGUARD_IDLE, 0);
        return 0;
}

static void describe_peer(struct MHD_Connection *mc, conn_t *c)
{
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        const struct sockaddr *sa = info ? info->client_addr : NULL;
        if (sa && sa->sa_family == AF_INET)
                (void)inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, c->peer,
                                sizeof(c->peer));
        else if (sa && sa->sa_family == AF_INET6)
                (void)inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, c->peer,
                                sizeof(c->peer));
}

static void connection_started(listener_t *l, struct MHD_Connection *mc, void **socket_context)
{
        const union MHD_ConnectionInfo *fdi =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        int fd = fdi ? fdi->connect_fd : -1;
        conn_t *c = calloc(1, sizeof(*c));
        if (!c || fd < 0 || pending.l != l) {
                /* Not admitted by on_accept, or no memory to track it: a
                 * connection outside the table is not served. */
                free(c);
                forget_pending();
                if (fd >= 0)
                        (void)shutdown(fd, SHUT_RDWR);
                return;
        }
        c->l = l;
        c->id = pending.id;
        c->fd = fd;
        atomic_init(&c->phase, (int)CONNGUARD_HEADERS);
        atomic_init(&c->pending, 0);
        pending.l = NULL;
        pending.id = -1;
        describe_peer(mc, c);
        pthread_mutex_lock(&l->lock);
        connguard_attach(l->table, c->id, fd);
        /* Evicted between its accept and now: it had no socket to shut. */
        bool live = connguard_live(l->table, c->id);
        pthread_mutex_unlock(&l->lock);
        *socket_context = c;
        if (!live)
                (void)shutdown(fd, SHUT_RDWR);
        if ((size_t)fd >= conn_by_fd_len)
                return;
        atomic_store(&conn_by_fd[fd], c);
        if (!l->tls)
                return;
        const union MHD_ConnectionInfo *ti =
            MHD_get_connection_info(mc, MHD_CONNECTION_INFO_GNUTLS_SESSION);
        if (!ti || !ti->tls_session)
                return;
        gnutls_session_t session = ti->tls_session;
        gnutls_transport_set_pull_function(session, tls_pull);
        gnutls_handshake_set_hook_function(session, GNUTLS_HANDSHAKE_FINISHED, GNUTLS_HOOK_POST,
                                           on_handshake_message);
}

/* MHD's connection notices: STARTED after accept (same thread as
 * on_accept), CLOSED before the socket is closed. */
static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
        listener_t *l = cls;
        if (code == MHD_CONNECTION_NOTIFY_STARTED) {
                connection_started(l, mc, socket_context);
                return;
        }
        conn_t *c = *socket_context;
        if (code != MHD_CONNECTION_NOTIFY_CLOSED || !c)
                return;
        if ((size_t)c->fd < conn_by_fd_len) {
                conn_t *expected = c;
                (void)atomic_compare_exchange_strong(&conn_by_fd[c->fd], &expected, NULL);
        }
        pthread_mutex_lock(&l->lock);
        connguard_closed(l->table, c->id);
        pthread_mutex_unlock(&l->lock);
        free(c);
        *socket_context = NULL;
}

/* Shuts down the listener's connections past their phase's deadline and
 * publishes its counts. */
static void reap(listener_t *l)
{
        int ids[256];
        connguard_phase_t phases[256];
        uint32_t counts[CONNGUARD_CLASS_COUNT][CONNGUARD_PHASE_COUNT];
        size_t n;
        pthread_mutex_lock(&l->lock);
        apply_all_pending(l);
        int64_t now = now_ms();
        do {
                n = connguard_expired(l->table, now, ids, phases, ARRAY_SIZE(ids));
                for (size_t i = 0; i < n; i++) {
                        intptr_t fd = connguard_handle(l->table, ids[i]);
                        /* MHD sees the end of the stream and closes it. */
                        if (fd >= 0)
                                (void)shutdown((int)fd, SHUT_RDWR);
                        metrics_record_expired(l->metrics, phases[i]);
                }
        } while (n == ARRAY_SIZE(ids));
        connguard_counts(l->table, counts);
        pthread_mutex_unlock(&l->lock);
        metrics_set_connections(l->metrics, counts);
}

static void *reaper_main(void *arg)
{
        server_t *s = arg;
        const struct timespec period = {0, REAPER_PERIOD_NS};
        while (!atomic_load(&s->stopping)) {
                reap(&tls_listener);
                if (s->health)
                        reap(&health_listener);
                (void)nanosleep(&period, NULL);
        }
        return NULL;
}

static int listener_init(listener_t *l, server_t *s, bool tls, hg_error_t *err)
{
        const webhook_settings_t *cfg = s->cfg;
        l->server = s;
        l->tls = tls;
        /* With a health port, the HTTPS listener serves reviews only and
         * the health one the rest; without, HTTPS serves everything. */
        l->serves_reviews = tls;
        l->serves_health = !tls || cfg->health_port == 0;
        l->metrics = tls ? METRICS_LISTENER_HTTPS : METRICS_LISTENER_HEALTH;
        connguard_limits_t lim = {
            .max_connections = cfg->max_connections,
            .reserved_connections = cfg->reserved_connections,
            .max_per_client = cfg->max_connections_per_client,
            .max_idle_per_client = cfg->max_idle_per_client,
            .max_idle = cfg->max_idle_connections,
            .connect_rate = cfg->client_connect_rate,
            /* Headers never get longer than a whole request may take. */
            .header_ms = (cfg->header_timeout_seconds < cfg->request_timeout_seconds
                              ? cfg->header_timeout_seconds
                              : cfg->request_timeout_seconds) *
                         1000,
            .request_ms = cfg->request_timeout_seconds * 1000,
            .idle_ms = cfg->idle_timeout_seconds * 1000,
            .body_per_client = BODY_PER_CLIENT_FACTOR * cfg->max_body_bytes,
            .body_total = BODY_TOTAL_FACTOR * cfg->max_body_bytes,
        };
        if (!tls)
                lim = (connguard_limits_t){
                    .max_connections = HEALTH_MAX_CONNECTIONS,
                    .max_per_client = HEALTH_MAX_PER_CLIENT,
                    .max_idle_per_client = HEALTH_MAX_IDLE_PER_CLIENT,
                    .max_idle = HEALTH_MAX_IDLE,
                    .connect_rate = cfg->client_connect_rate,
                    .header_ms = HEALTH_HEADER_TIMEOUT_MS,
                    .request_ms = cfg->request_timeout_seconds * 1000,
                    .idle_ms = cfg->request_timeout_seconds * 1000,
                };
        size_t n = cfg->trusted_client_cidrs.n;
        _cleanup_free_ cidr_t *cidrs = n ? calloc(n, sizeof(*cidrs)) : NULL;
        if (n && !cidrs)
                return error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++)
                if (cidr_parse(cfg->trusted_client_cidrs.items[i], &cidrs[i]) < 0)
                        return error_set(err, -EINVAL, "server.trustedClientCIDRs: bad '%s'",
                                         cfg->trusted_client_cidrs.items[i]);
        /* The health listener's callers are the kubelet and Prometheus:
         * trusted CIDRs are the API server's, not theirs. */
        int r = connguard_new(&lim, cidrs, tls ? n : 0, &l->table);
        if (r < 0)
                return error_set(err, r, "out of memory");
        l->scratch = calloc(connguard_capacity(l->table), sizeof(*l->scratch));
        if (!l->scratch) {
                connguard_free(l->table);
                l->table = NULL;
                return error_set(err, -ENOMEM, "out of memory");
        }
        pthread_mutex_init(&l->lock, NULL);
        return 0;
}

static void listener_fini(listener_t *l)
{
        if (!l->table)
                return;
        connguard_free(l->table);
        l->table = NULL;
        free(l->scratch);
        l->scratch = NULL;
        pthread_mutex_destroy(&l->lock);
}

static int make_addr(const char *address, uint16_t port, struct sockaddr_storage *ss,
                     bool *ret_ipv6)
{
        memset(ss, 0, sizeof(*ss));
        struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
        if (inet_pton(AF_INET, address, &in4->sin_addr) == 1) {
                in4->sin_family = AF_INET;
                in4->sin_port = htons(port);
                *ret_ipv6 = false;
                return 0;
        }
        if (inet_pton(AF_INET6, address, &in6->sin6_addr) == 1) {
                in6->sin6_family = AF_INET6;
                in6->sin6_port = htons(port);
                *ret_ipv6 = true;
                return 0;
        }
        return -EINVAL;
}

static struct MHD_Daemon *start_daemon(server_t *s, listener_t *l, uint16_t port, bool tls,
                                       hg_error_t *err)
{
        struct sockaddr_storage ss;
        bool ipv6;
        if (make_addr(s->cfg->listen_address, port, &ss, &ipv6) < 0) {
                error_set(err, -EINVAL, "bad listen address %s", s->cfg->listen_address);
                return NULL;
        }
        unsigned threads = s->cfg->threads;
        if (threads == 0) {
                long n = sysconf(_SC_NPROCESSORS_ONLN);
                threads = n > 0 ? (unsigned)n : 1;
        }
        /* ITC: lets server_stop quiesce the listener while requests finish. */
        unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_ITC;
        /* A port-forward review's connection waits suspended for the
         * lookup lane. */
        if (tls)
                flags |= MHD_ALLOW_SUSPEND_RESUME;
        if (ipv6)
                flags |= MHD_USE_IPv6;
        if (tls)
                flags |= MHD_USE_TLS;
        /* The logger first, so warnings about later options reach it. Plain
         * listeners (health) get one thread: pool size 0 means no pool. */
        struct MHD_OptionItem opts[] = {
            {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)log_mhd, NULL},
            {MHD_OPTION_SOCK_ADDR, 0, &ss},
            {MHD_OPTION_THREAD_POOL_SIZE, tls && threads > 1 ? threads : 0, NULL},
            /* A new HTTPS connection may wait as long as one between
             * reviews: the API server's Go client dials a connection for a
             * review, sends that review on another that fell idle first,
             * and pools the new one unused for up to 90 s; closing it after
             * the request deadline made a review sent on it in that moment
             * fail with EOF (node_availability, 1 create in 200, session
             * 10). A request in progress gets the request deadline
             * (on_request). */
            {MHD_OPTION_CONNECTION_TIMEOUT,
             tls ? s->cfg->idle_timeout_seconds : s->cfg->request_timeout_seconds, NULL},
            {MHD_OPTION_CONNECTION_LIMIT,
             tls ? s->cfg->max_connections + s->cfg->reserved_connections + MHD_LIMIT_SLACK
                 : HEALTH_MAX_CONNECTIONS + MHD_LIMIT_SLACK,
             NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONNECTION_MEMORY, NULL},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, l},
            {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, l},
            /* Plain listeners end the list here; TLS ones go on. */
            {tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, 0, (void *)certstore_retrieve},
            {tls ? MHD_OPTION_HTTPS_PRIORITIES : MHD_OPTION_END, 0, (void *)TLS_PRIORITIES},
            {MHD_OPTION_END, 0, NULL},
        };
        struct MHD_Daemon *d = MHD_start_daemon(flags, port, on_accept, l, on_request, l,
                                                MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
        if (!d)
                error_set(err, -EADDRINUSE, "cannot listen on %s port %u (%s)",
                          s->cfg->listen_address, port, tls ? "HTTPS" : "health");
        return d;
}

/* The socket-to-connection map for GnuTLS's hooks, once per process:
 * one slot per descriptor the process may open (bounded). */
static void conn_registry_init(void)
{
        if (conn_by_fd)
                return;
        size_t n = 65536;
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
                n = rl.rlim_cur < (1u << 20) ? (size_t)rl.rlim_cur : (1u << 20);
        conn_by_fd = calloc(n, sizeof(*conn_by_fd));
        /* Without it, TLS connections keep MHD's own timeouts only. */
        conn_by_fd_len = conn_by_fd ? n : 0;
}

/* Stops what server_start started, in reverse; each part may be absent. */
static void server_free(server_t *s)
{
        atomic_store(&s->stopping, true);
        if (s->reaper_started)
                pthread_join(s->reaper, NULL);
        if (s->tls) {
                /* Stop accepting; connections already open finish their requests. */
                MHD_socket fd = MHD_quiesce_daemon(s->tls);
                if (fd != MHD_INVALID_SOCKET)
                        close(fd);
                /* MHD stops only with no connection suspended: every
                 * lookup ends (queued ones refused) and resumes its own. */
                podlookup_stop(s->lookups);
                MHD_stop_daemon(s->tls);
        }
        podlookup_free(s->lookups);
        if (s->health)
                MHD_stop_daemon(s->health);
        listener_fini(&tls_listener);
        listener_fini(&health_listener);
        shape_values_free(s->values);
        free(s);
}

int server_start(const webhook_settings_t *cfg, server_t **ret, hg_error_t *err)
{
        server_t *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->cfg = cfg;
        conn_registry_init();
        tls_listener = (listener_t){0};
        health_listener = (listener_t){0};
        /* Before any request thread, outside any arena: they outlive requests. */
        int r = shape_values_new(&cfg->sidecar, &s->values) < 0
                    ? error_set(err, -ENOMEM, "out of memory")
                    : listener_init(&tls_listener, s, true, err);
        if (r == 0 && podlookup_new(LOOKUP_THREADS, LOOKUP_QUEUE, &s->lookups) < 0)
                r = error_set(err, -ENOMEM, "cannot start the port-forward lookup threads");
        if (r == 0 && cfg->health_port)
                r = listener_init(&health_listener, s, false, err);
        if (r == 0) {
                s->tls = start_daemon(s, &tls_listener, (uint16_t)cfg->port, true, err);
                if (!s->tls)
                        r = err ? err->code : -EADDRINUSE;
        }
        if (r == 0 && cfg->health_port) {
                s->health =
                    start_daemon(s, &health_listener, (uint16_t)cfg->health_port, false, err);
                if (!s->health)
                        r = err ? err->code : -EADDRINUSE;
        }
        if (r == 0) {
                r = -pthread_create(&s->reaper, NULL, reaper_main, s);
                if (r < 0)
                        error_set(err, r, "cannot start the connection reaper");
                s->reaper_started = r == 0;
        }
        if (r < 0) {
                server_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

static uint16_t daemon_port(struct MHD_Daemon *d)
{
        if (!d)
                return 0;
        const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        return info ? info->port : 0;
}

uint16_t server_port(const server_t *s)
{
        return daemon_port(s->tls);
}

uint16_t server_health_port(const server_t *s)
{
        return daemon_port(s->health);
}

void server_stop(server_t *s)
{
        if (!s)
                return;
        server_free(s);
}
