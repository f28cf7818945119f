#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "admission.h"
#include "certstore.h"
#include "cleanup.h"
#include "jsonarena.h"
#include "jsondump.h"
#include "k8sclient.h"
#include "log.h"
#include "metrics.h"
#include "shape.h"
#include "strparse.h"

/* TLS 1.2 and 1.3 only (GnuTLS priority string). */
#define TLS_PRIORITIES  "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:%SERVER_PRECEDENCE"
#define MAX_CONNECTIONS 1024
/* Per-connection memory MHD keeps (and zeroes for every request): headers,
 * the read buffer the body streams through, the response's headers. Its
 * default, 32 KiB, was a measurable share of a review's time; a request's
 * headers here are well under 2 KiB and the body is copied out as it comes. */
#define CONNECTION_MEMORY 16384

struct server {
        const webhook_settings_t *cfg;
        shape_values_t *values; /* built once, shared by every review */
        struct MHD_Daemon *tls;
        struct MHD_Daemon *health;
        atomic_bool stopping;
};

/* Which listener a request came in on. */
typedef struct listener {
        server_t *server;
        bool serves_mutate;
} listener_t;

static listener_t tls_listener, health_listener;

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
        bool answer_now; /* refused with a body too large to drain */
        int corked_fd;   /* >= 0: TCP_CORK set on it for this answer */
        struct timespec started;
} request_t;

static double seconds_since(const struct timespec *t0)
{
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static enum MHD_Result send_buffer(struct MHD_Connection *conn, unsigned status, const char *type,
                                   char *body, bool close)
{
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
                bool needs_mutate_listener;
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
                if (routes[i].needs_mutate_listener && !l->serves_mutate)
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

static int append_body(const server_t *s, request_t *req, const char *data, size_t n)
{
        if (req->len + n > s->cfg->max_body_bytes) {
                refuse(req, MHD_HTTP_CONTENT_TOO_LARGE, METRICS_ERROR_TOO_LARGE,
                       "request body exceeds the configured maximum");
                free(req->body);
                req->body = NULL;
                req->len = req->cap = 0;
                return 0;
        }
        if (req->len + n > req->cap) {
                size_t cap = req->cap ? req->cap : 16384;
                while (cap < req->len + n)
                        cap *= 2;
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

static void log_review(const admission_outcome_t *o, double seconds, const char *error)
{
        if (!log_enabled(LOG_LEVEL_INFO))
                return;
        json_t *f =
            json_pack("{s:s*, s:s*, s:s*, s:s*, s:b, s:s, s:s, s:I}", "uid", o->uid, "namespace",
                      o->namespace, "pod", o->name, "operation", o->operation, "dryRun", o->dry_run,
                      "decision", error ? "rejected" : mutate_decision_name(o->result.decision),
                      "reason", error ? "bad-request" : mutate_reason_name(o->result.reason),
                      "micros", (json_int_t)(seconds * 1e6));
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

/* The pod a port-forward names, read through the API with the webhook's
 * own credentials (a client per lookup: port-forwards are rare, and the
 * client is one request at a time). */
static int lookup_pod(void *ctx, const char *ns, const char *name, json_t **ret_pod,
                      hg_error_t *err)
{
        const webhook_settings_t *cfg = ctx;
        /* ns and name are a namespace's and a pod's (admission_validate
         * checked): they go into the path as they are. */
        k8s_client_t *k8s = NULL;
        int r = k8s_client_new(cfg->kubeconfig, &k8s, err);
        if (r < 0)
                return r;
        char path[400];
        int w = snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
        long status = 0;
        json_t *pod = NULL;
        if (w < 0 || (size_t)w >= sizeof(path))
                r = error_set(err, -ENAMETOOLONG, "pod name too long");
        else
                r = k8s_request(k8s, "GET", path, NULL, NULL, &status, &pod, err);
        k8s_client_free(k8s);
        if (r < 0)
                return r;
        if (status != 200 || !json_is_object(pod)) {
                char buf[32];
                r = error_set(err, -EIO, "reading pod %s/%s: %s", ns, name,
                              k8s_status_message(pod, status, buf, sizeof(buf)));
                json_decref(pod);
                return r;
        }
        *ret_pod = pod;
        return 0;
}

static enum MHD_Result answer_review(const server_t *s, struct MHD_Connection *conn, request_t *req)
{
        admission_outcome_t o;
        hg_error_t err = {0};
        char *response = NULL;
        /* Every jansson value of this review lives in the thread's arena and
         * is gone at jsonarena_end(); only the malloc'd answer leaves. */
        jsonarena_begin();
        const char *body = req->body ? req->body : "";
        int r = req->route == ROUTE_VALIDATE
                    ? admission_validate(s->cfg, body, req->len, lookup_pod, (void *)s->cfg,
                                         &response, &o, &err)
                    : admission_review(s->cfg, s->values, ADMISSION_READ_PROJECTED, body, req->len,
                                       &response, &o, &err);
        double secs = seconds_since(&req->started);
        enum MHD_Result ret;
        if (r == -EINVAL) {
                metrics_record_error(METRICS_ERROR_BAD_REQUEST);
                log_review(&o, secs, err.message);
                ret = send_error(conn, MHD_HTTP_BAD_REQUEST, err.message);
        } else if (r < 0) {
                metrics_record_error(METRICS_ERROR_INTERNAL);
                log_review(&o, secs, "internal error");
                ret = send_error(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "internal error");
        } else {
                metrics_record_review(&o.result, secs);
                log_review(&o, secs, NULL);
                cork(conn, req);
                ret = send_buffer(conn, MHD_HTTP_OK, "application/json", response, false);
        }
        admission_outcome_free(&o);
        jsonarena_end();
        return ret;
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
                /* A request in progress gets the request deadline; before
                 * the first request and between requests the longer idle
                 * timeout holds (start_daemon, on_completed). */
                (void)MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                                s->cfg->request_timeout_seconds);
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
        if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
                (void)MHD_set_connection_option(conn, MHD_CONNECTION_OPTION_TIMEOUT,
                                                l->server->cfg->idle_timeout_seconds);
        /* The answer is all written (or the request is over): send it now. */
        uncork(req);
        free(req->body);
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
            {MHD_OPTION_CONNECTION_LIMIT, MAX_CONNECTIONS, NULL},
            {MHD_OPTION_CONNECTION_MEMORY_LIMIT, CONNECTION_MEMORY, NULL},
            {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, l},
            /* Plain listeners end the list here; TLS ones go on. */
            {tls ? MHD_OPTION_HTTPS_CERT_CALLBACK : MHD_OPTION_END, 0, (void *)certstore_retrieve},
            {tls ? MHD_OPTION_HTTPS_PRIORITIES : MHD_OPTION_END, 0, (void *)TLS_PRIORITIES},
            {MHD_OPTION_END, 0, NULL},
        };
        struct MHD_Daemon *d = MHD_start_daemon(flags, port, NULL, NULL, on_request, l,
                                                MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
        if (!d)
                error_set(err, -EADDRINUSE, "cannot listen on %s port %u (%s)",
                          s->cfg->listen_address, port, tls ? "HTTPS" : "health");
        return d;
}

int server_start(const webhook_settings_t *cfg, server_t **ret, hg_error_t *err)
{
        server_t *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->cfg = cfg;
        /* Before any request thread, outside any arena: they outlive requests. */
        if (shape_values_new(&cfg->sidecar, &s->values) < 0) {
                free(s);
                return error_set(err, -ENOMEM, "out of memory");
        }
        tls_listener = (listener_t){s, true};
        health_listener = (listener_t){s, false};
        s->tls = start_daemon(s, &tls_listener, (uint16_t)cfg->port, true, err);
        if (!s->tls) {
                shape_values_free(s->values);
                free(s);
                return err ? err->code : -EADDRINUSE;
        }
        if (cfg->health_port) {
                s->health =
                    start_daemon(s, &health_listener, (uint16_t)cfg->health_port, false, err);
                if (!s->health) {
                        MHD_stop_daemon(s->tls);
                        shape_values_free(s->values);
                        free(s);
                        return err ? err->code : -EADDRINUSE;
                }
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
        atomic_store(&s->stopping, true);
        /* Stop accepting; connections already open finish their requests. */
        MHD_socket fd = MHD_quiesce_daemon(s->tls);
        if (fd != MHD_INVALID_SOCKET)
                close(fd);
        MHD_stop_daemon(s->tls);
        if (s->health)
                MHD_stop_daemon(s->health);
        shape_values_free(s->values);
        free(s);
}
