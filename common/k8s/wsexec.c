#include "wsexec.h"

#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/rand.h>
#include <wslay/wslay.h>

#include "cleanup.h"
#include "jsonx.h"
#include "strbuf.h"
#include "wsupgrade.h"

/* stdin messages: one frame each, as client-go sends them. */
#define STDIN_CHUNK (32 * 1024)
/* Messages from the server: stdout and stderr come in 32 KiB reads. */
#define MAX_RECV_MSG (1024 * 1024)
/* Stop reading stdin while this many messages wait to be sent. */
#define MAX_QUEUED        8
#define CONNECT_TIMEOUT_S 30L
/* The upgrade's answer, and each send, must make progress within this. */
#define IO_TIMEOUT_MS (60 * 1000)
/* A ping after this much silence; the session is lost after PING_DEAD_MS. */
#define PING_IDLE_MS (10 * 1000)
#define PING_DEAD_MS (60 * 1000)

const char *wsexec_failure_name(wsexec_failure_t f)
{
        switch (f) {
        case WSEXEC_OK:
                return "ok";
        case WSEXEC_CONNECT:
                return "connect";
        case WSEXEC_REFUSED:
                return "refused";
        case WSEXEC_NOT_FOUND:
                return "not-found";
        case WSEXEC_NOT_RUNNABLE:
                return "not-runnable";
        case WSEXEC_SERVER:
                return "server";
        case WSEXEC_PROTOCOL:
                return "protocol";
        case WSEXEC_NO_START:
                return "no-start";
        case WSEXEC_LOCAL:
                return "local";
        default:
                return "unknown";
        }
}

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void cleanup_curlp(CURL **h)
{
        if (*h)
                curl_easy_cleanup(*h);
}

static void wipe_freep(char **s)
{
        if (*s) {
                explicit_bzero(*s, strlen(*s));
                free(*s);
        }
}

static void wipe_strbufp(strbuf_t *b)
{
        if (b->data)
                explicit_bzero(b->data, b->len);
        strbuf_free(b);
}

/* One session's state, shared with wslay's callbacks. */
typedef struct session {
        CURL *h;
        int sock;
        const char *pending; /* bytes read with the 101's head: the first frames */
        size_t pending_len;
        size_t chunk_max; /* replay: at most this many bytes a read (0: any) */
        exs_demux_t demux;
        const wsexec_io_t *io;
        bool eof;              /* the server closed the connection */
        bool io_failed;        /* a transport error (not EOF) */
        bool would_block;      /* the last read found nothing waiting */
        uint64_t bytes_read;   /* counts what the recv callback gave wslay */
        wsexec_failure_t fail; /* set by a callback that stopped the session */
        hg_error_t err;
        int64_t last_rx;
} session_t;

/* Waits until sock is readable (events POLLIN) or writable, at most ms. */
static int wait_sock(int sock, short events, int ms)
{
        struct pollfd p = {.fd = sock, .events = events};
        int r;
        do
                r = poll(&p, 1, ms);
        while (r < 0 && errno == EINTR);
        return r < 0 ? -errno : r == 0 ? -ETIMEDOUT : 0;
}

static int send_all(CURL *h, int sock, const char *buf, size_t n, hg_error_t *err)
{
        while (n > 0) {
                size_t sent = 0;
                CURLcode cc = curl_easy_send(h, buf, n, &sent);
                if (cc == CURLE_AGAIN) {
                        if (wait_sock(sock, POLLOUT, IO_TIMEOUT_MS) < 0)
                                return error_set(err, -ETIMEDOUT, "sending the upgrade timed out");
                        continue;
                }
                if (cc != CURLE_OK)
                        return error_set(err, -EIO, "sending the upgrade: %s",
                                         curl_easy_strerror(cc));
                buf += sent, n -= sent;
        }
        return 0;
}

/* Reads what is there into b (up to max bytes in all); *ret_eof at EOF. */
static int recv_some(CURL *h, int sock, strbuf_t *b, size_t max, bool *ret_eof, hg_error_t *err)
{
        char buf[16 * 1024];
        for (;;) {
                size_t want = max - b->len < sizeof(buf) ? max - b->len : sizeof(buf);
                size_t got = 0;
                if (want == 0)
                        return 0;
                CURLcode cc = curl_easy_recv(h, buf, want, &got);
                if (cc == CURLE_AGAIN) {
                        if (wait_sock(sock, POLLIN, IO_TIMEOUT_MS) < 0)
                                return error_set(err, -ETIMEDOUT,
                                                 "no answer to the upgrade within %d s",
                                                 IO_TIMEOUT_MS / 1000);
                        continue;
                }
                if (cc != CURLE_OK)
                        return error_set(err, -EIO, "reading the answer: %s",
                                         curl_easy_strerror(cc));
                if (got == 0) {
                        *ret_eof = true;
                        return 0;
                }
                return strbuf_append(b, buf, got);
        }
}

/* The path and query of the exec request, each argv word escaped. */
static int exec_target(CURL *h, const wsexec_request_t *req, strbuf_t *out)
{
        int r = strbuf_printf(out, "/api/v1/namespaces/%s/pods/%s/exec?", req->ns, req->pod);
        for (size_t i = 0; r == 0 && req->argv[i]; i++) {
                char *e = curl_easy_escape(h, req->argv[i], 0);
                if (!e)
                        return -ENOMEM;
                r = strbuf_printf(out, "command=%s&", e);
                curl_free(e);
        }
        if (r == 0 && req->container) {
                char *e = curl_easy_escape(h, req->container, 0);
                if (!e)
                        return -ENOMEM;
                r = strbuf_printf(out, "container=%s&", e);
                curl_free(e);
        }
        if (r == 0)
                r = strbuf_printf(out, "stdin=%s&stdout=true&stderr=true&tty=false",
                                  req->stdin_open ? "true" : "false");
        return r;
}

/* A refused upgrade: its kind from the HTTP status, its reason from the
 * metav1.Status body (the guard's and RBAC's words), else the body's start. */
static int refused(long status, const strbuf_t *body, wsexec_result_t *ret, hg_error_t *err)
{
        switch (status) {
        case 401:
        case 403:
                ret->failure = WSEXEC_REFUSED;
                break;
        case 404:
                ret->failure = WSEXEC_NOT_FOUND;
                break;
        case 400:
                ret->failure = WSEXEC_NOT_RUNNABLE;
                break;
        default:
                ret->failure = WSEXEC_SERVER;
                break;
        }
        _cleanup_json_ json_t *j = NULL;
        hg_error_t ignored;
        const char *msg = NULL;
        if (body->len > 0 && jsonx_load(body->data, body->len, JSONX_MAX_DEPTH, &j, &ignored) == 0)
                (void)jsonx_string(j, "message", &msg);
        if (!msg)
                msg = body->len > 0 ? body->data : "(no message)";
        return error_set(err, -EACCES, "HTTP %ld: %.400s", status, msg);
}

/* Connects and upgrades; on success the session is ready for wslay and
 * head holds the bytes read so far (the first frames after head_len). */
static int upgrade(k8s_client_t *c, const wsexec_request_t *req, session_t *s, strbuf_t *head,
                   size_t *ret_head_len, wsexec_result_t *ret, hg_error_t *err)
{
        unsigned long gen = 0;
        for (int attempt = 0;; attempt++) {
                _cleanup_(cleanup_curlp) CURL *h = curl_easy_init();
                _cleanup_strbuf_ strbuf_t target = {0};
                _cleanup_(wipe_strbufp) strbuf_t request = {0};
                _cleanup_(wipe_freep) char *bearer = NULL;
                char key[WSUP_KEY_LEN + 1];
                if (!h || exec_target(h, req, &target) < 0)
                        return -ENOMEM;
                unsigned long used = gen;
                int r = k8s_client_setup_raw(c, h, target.data, attempt > 0, &gen, &bearer, err);
                if (r < 0)
                        return r;
                CURLcode cc = curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
                if (cc == CURLE_OK)
                        cc = curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
                if (cc == CURLE_OK)
                        cc = curl_easy_perform(h);
                if (cc != CURLE_OK)
                        return error_set(err, -EIO, "connecting to %s: %s", k8s_client_server(c),
                                         curl_easy_strerror(cc));
                if (s->io && s->io->phase)
                        s->io->phase(s->io->ud, WSEXEC_PHASE_CONNECTED);
                curl_socket_t sock = CURL_SOCKET_BAD;
                if (curl_easy_getinfo(h, CURLINFO_ACTIVESOCKET, &sock) != CURLE_OK ||
                    sock == CURL_SOCKET_BAD)
                        return error_set(err, -EIO, "no socket after connecting");
                const char *server = k8s_client_server(c);
                const char *host = strncmp(server, "https://", 8) == 0 ? server + 8 : server;
                if (wsup_key_new(key) < 0)
                        return error_set(err, -EIO, "no random bytes for the WebSocket key");
                if (wsup_request(&request, host, target.data, key, req->only, bearer, NULL) < 0)
                        return -ENOMEM;
                r = send_all(h, sock, request.data, request.len, err);
                if (r < 0)
                        return r;
                strbuf_truncate(head, 0);
                wsup_answer_t a = {0};
                bool eof = false;
                for (;;) {
                        r = recv_some(h, sock, head, WSUP_MAX_HEAD + MAX_RECV_MSG, &eof, err);
                        if (r < 0)
                                return r;
                        r = wsup_parse_head(head->data ? head->data : "", head->len, key, req->only,
                                            &a, err);
                        if (r != -EAGAIN)
                                break;
                        if (eof)
                                return error_set(err, -EIO,
                                                 "the connection ended before the answer");
                }
                if (r < 0) {
                        ret->failure = WSEXEC_PROTOCOL;
                        return r;
                }
                ret->http_status = a.status;
                if (a.status == 101) {
                        if (s->io && s->io->phase)
                                s->io->phase(s->io->ud, WSEXEC_PHASE_UPGRADED);
                        ret->proto = a.proto;
                        s->h = TAKE_PTR(h);
                        s->sock = sock;
                        *ret_head_len = a.head_len;
                        return 0;
                }
                /* A 401 with a plugin's credential: once more with a new one. */
                if (a.status == 401 && attempt == 0 && gen != used)
                        continue;
                _cleanup_strbuf_ strbuf_t body = {0};
                for (;;) {
                        r = wsup_body(head->data + a.head_len, head->len - a.head_len, eof, &a,
                                      &body, err);
                        if (r != -EAGAIN)
                                break;
                        r = recv_some(h, sock, head, a.head_len + WSUP_MAX_BODY + 4096, &eof, err);
                        if (r < 0)
                                break;
                }
                if (r < 0 && r != -ENOMEM)
                        strbuf_truncate(&body, 0); /* no reason to give but the status */
                return refused(a.status, &body, ret, err);
        }
}

static ssize_t on_recv(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, int flags, void *ud)
{
        session_t *s = ud;
        if (s->pending_len > 0) {
                size_t n = s->pending_len < len ? s->pending_len : len;
                if (s->chunk_max && n > s->chunk_max)
                        n = s->chunk_max;
                memcpy(buf, s->pending, n);
                s->pending += n, s->pending_len -= n;
                s->bytes_read += n;
                return (ssize_t)n;
        }
        size_t got = 0;
        CURLcode cc = s->h ? curl_easy_recv(s->h, buf, len, &got) : CURLE_OK; /* replay: EOF */
        if (cc == CURLE_AGAIN) {
                s->would_block = true;
                wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        s->bytes_read += got;
        if (cc != CURLE_OK || got == 0) {
                if (cc != CURLE_OK) {
                        s->io_failed = true;
                        (void)error_set(&s->err, -EIO, "reading: %s", curl_easy_strerror(cc));
                }
                s->eof = true;
                wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return (ssize_t)got;
}

static ssize_t on_send(wslay_event_context_ptr ctx, const uint8_t *data, size_t len, int flags,
                       void *ud)
{
        session_t *s = ud;
        size_t sent = len; /* replay: what we send goes nowhere */
        CURLcode cc = s->h ? curl_easy_send(s->h, data, len, &sent) : CURLE_OK;
        if (cc == CURLE_AGAIN) {
                wslay_event_set_error(ctx, WSLAY_ERR_WOULDBLOCK);
                return -1;
        }
        if (cc != CURLE_OK) {
                s->io_failed = true;
                (void)error_set(&s->err, -EIO, "sending: %s", curl_easy_strerror(cc));
                wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return (ssize_t)sent;
}

/* Every frame a client sends is masked with a fresh key (RFC 6455 5.3). */
static int on_genmask(wslay_event_context_ptr ctx, uint8_t *buf, size_t len, void *ud)
{
        if (RAND_bytes(buf, (int)len) != 1) {
                wslay_event_set_error(ctx, WSLAY_ERR_CALLBACK_FAILURE);
                return -1;
        }
        return 0;
}

static void stop(wslay_event_context_ptr ctx, session_t *s, wsexec_failure_t f)
{
        if (s->fail == WSEXEC_OK)
                s->fail = f;
        wslay_event_shutdown_read(ctx);
}

static void on_msg(wslay_event_context_ptr ctx, const struct wslay_event_on_msg_recv_arg *arg,
                   void *ud)
{
        session_t *s = ud;
        s->last_rx = now_ms();
        if (s->fail != WSEXEC_OK)
                return;
        switch (arg->opcode) {
        case WSLAY_BINARY_FRAME: {
                int ch = -1;
                const uint8_t *data = NULL;
                size_t n = 0;
                if (exs_demux_message(&s->demux, arg->msg, arg->msg_length, &ch, &data, &n,
                                      &s->err) < 0) {
                        stop(ctx, s, WSEXEC_PROTOCOL);
                        return;
                }
                if ((ch == EXS_CH_STDOUT || ch == EXS_CH_STDERR) && n > 0 &&
                    s->io->output(s->io->ud, ch, data, n) < 0) {
                        (void)error_set(&s->err, -EIO, "writing the command's %s failed",
                                        ch == EXS_CH_STDOUT ? "stdout" : "stderr");
                        stop(ctx, s, WSEXEC_LOCAL);
                }
                return;
        }
        case WSLAY_TEXT_FRAME:
                (void)error_set(&s->err, -EPROTO,
                                "a text message (the channel protocols are binary)");
                stop(ctx, s, WSEXEC_PROTOCOL);
                return;
        case WSLAY_CONNECTION_CLOSE: /* wslay answers it */
        case WSLAY_PING:             /* wslay answers it */
        case WSLAY_PONG:
        default:
                return;
        }
}

static int queue(wslay_event_context_ptr ctx, const uint8_t *msg, size_t len)
{
        struct wslay_event_msg m = {.opcode = WSLAY_BINARY_FRAME, .msg = msg, .msg_length = len};
        return wslay_event_queue_msg(ctx, &m) == 0 ? 0 : -ENOMEM;
}

static void free_ctxp(wslay_event_context_ptr *ctx)
{
        if (*ctx)
                wslay_event_context_free(*ctx);
}

/* The session after the upgrade: frames both ways until the status and
 * the close (or EOF). */
static int session_loop(session_t *s, const wsexec_request_t *req, wsexec_result_t *ret,
                        hg_error_t *err)
{
        static const struct wslay_event_callbacks cbs = {
            .recv_callback = on_recv,
            .send_callback = on_send,
            .genmask_callback = on_genmask,
            .on_msg_recv_callback = on_msg,
        };
        _cleanup_(free_ctxp) wslay_event_context_ptr ctx = NULL;
        if (wslay_event_context_client_init(&ctx, &cbs, s) != 0)
                return -ENOMEM;
        wslay_event_config_set_max_recv_msg_length(ctx, MAX_RECV_MSG);
        bool stdin_open = req->stdin_open, closing = false;
        int64_t last_ping = 0;
        s->last_rx = now_ms();
        _cleanup_free_ uint8_t *chunk = malloc(STDIN_CHUNK);
        if (!chunk)
                return -ENOMEM;
        while (s->fail == WSEXEC_OK) {
                /* The status came: the command is over; close our side. */
                if (s->demux.status_done && !closing) {
                        closing = true;
                        stdin_open = false;
                        (void)wslay_event_queue_close(ctx, WSLAY_CODE_NORMAL_CLOSURE, NULL, 0);
                }
                /* Read until the socket would block: wslay returns after a
                 * short read, and what OpenSSL already decrypted would not
                 * wake poll. A call that read nothing ends the round. */
                bool ended = false;
                while (wslay_event_want_read(ctx) && s->fail == WSEXEC_OK) {
                        uint64_t before = s->bytes_read;
                        s->would_block = false;
                        if (wslay_event_recv(ctx) != 0 || s->eof) {
                                ended = true;
                                break;
                        }
                        if (s->would_block || s->bytes_read == before)
                                break;
                }
                if (ended || s->fail != WSEXEC_OK)
                        break;
                if (wslay_event_want_write(ctx) && wslay_event_send(ctx) != 0)
                        break;
                if (wslay_event_get_close_sent(ctx) && !closing &&
                    !wslay_event_get_close_received(ctx)) {
                        /* wslay refused a frame (masked, oversize, bad
                         * control frame) and closed with this code. */
                        s->fail = WSEXEC_PROTOCOL;
                        (void)error_set(&s->err, -EPROTO,
                                        "the server's WebSocket frames were malformed (close %u)",
                                        (unsigned)wslay_event_get_status_code_sent(ctx));
                        break;
                }
                if (!wslay_event_want_read(ctx) && !wslay_event_want_write(ctx))
                        break;
                if (!s->h)
                        break; /* replay: all read, nothing to wait for */
                struct pollfd p[2] = {{.fd = s->sock, .events = 0}, {.fd = -1}};
                if (wslay_event_want_read(ctx))
                        p[0].events |= POLLIN;
                if (wslay_event_want_write(ctx))
                        p[0].events |= POLLOUT;
                bool read_stdin = stdin_open && wslay_event_get_queued_msg_count(ctx) < MAX_QUEUED;
                if (read_stdin)
                        p[1] = (struct pollfd){.fd = s->io->in_fd, .events = POLLIN};
                int64_t now = now_ms();
                if (now - s->last_rx >= PING_DEAD_MS) {
                        s->fail = WSEXEC_CONNECT;
                        (void)error_set(&s->err, -ETIMEDOUT, "no word from the API server for %d s",
                                        PING_DEAD_MS / 1000);
                        break;
                }
                if (now - s->last_rx >= PING_IDLE_MS && now - last_ping >= PING_IDLE_MS) {
                        struct wslay_event_msg ping = {.opcode = WSLAY_PING};
                        (void)wslay_event_queue_msg(ctx, &ping);
                        last_ping = now;
                        continue;
                }
                int r = poll(p, 2, PING_IDLE_MS);
                if (r < 0 && errno != EINTR) {
                        s->fail = WSEXEC_LOCAL;
                        (void)error_set(&s->err, -errno, "poll: %s", strerror(errno));
                        break;
                }
                if (r <= 0 || !(p[1].revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                ssize_t n = read(s->io->in_fd, chunk + 1, STDIN_CHUNK - 1);
                if (n < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (n < 0) {
                        s->fail = WSEXEC_LOCAL;
                        (void)error_set(&s->err, -errno, "reading stdin: %s", strerror(errno));
                        break;
                }
                if (n > 0) {
                        chunk[0] = EXS_CH_STDIN;
                        if (queue(ctx, chunk, (size_t)n + 1) < 0)
                                return -ENOMEM;
                        continue;
                }
                /* stdin's EOF: v5 half-closes the command's stdin. */
                stdin_open = false;
                uint8_t close_msg[2];
                if (exs_encode_close(s->demux.proto, EXS_CH_STDIN, close_msg) == 0) {
                        if (queue(ctx, close_msg, sizeof(close_msg)) < 0)
                                return -ENOMEM;
                } else {
                        ret->stdin_unclosed = true;
                }
        }
        (void)err;
        return 0;
}

/* The session after the upgrade, and what it comes to. */
static int session(session_t *s, const wsexec_request_t *req, wsexec_result_t *ret, hg_error_t *err)
{
        wsexec_result_t res = *ret;
        exs_demux_init(&s->demux, res.proto);
        int r = session_loop(s, req, &res, err);
        res.bytes_out = s->demux.bytes[EXS_CH_STDOUT];
        res.bytes_err = s->demux.bytes[EXS_CH_STDERR];
        if (r < 0) {
                res.failure = WSEXEC_LOCAL;
                r = error_set(err, r, "out of memory");
        } else if (s->fail != WSEXEC_OK) {
                res.failure = s->fail;
                if (err)
                        *err = s->err;
                r = s->err.code < 0 ? s->err.code : -EIO;
        } else if (!s->demux.status_done) {
                res.failure = WSEXEC_CONNECT;
                r = error_set(err, -ECONNRESET,
                              "the connection ended before the command's status%s%s",
                              s->io_failed ? ": " : "", s->io_failed ? s->err.message : "");
        } else {
                int code = -1;
                r = exs_status_exit(s->demux.status.data, s->demux.status.len, &code, err);
                if (r == 0) {
                        res.failure = WSEXEC_OK;
                        res.exit_code = code;
                } else if (r == -ECANCELED) {
                        res.failure = WSEXEC_NO_START;
                        r = 0;
                } else {
                        res.failure = WSEXEC_PROTOCOL;
                }
        }
        exs_demux_free(&s->demux);
        *ret = res;
        return r;
}

int wsexec_replay(exs_proto_t proto, const uint8_t *bytes, size_t n, size_t chunk,
                  const wsexec_io_t *io, wsexec_result_t *ret, hg_error_t *err)
{
        static char *const argv[] = {"replay", NULL};
        wsexec_request_t req = {.ns = "replay", .pod = "replay", .argv = argv};
        wsexec_result_t res = {
            .failure = WSEXEC_CONNECT, .exit_code = -1, .http_status = 101, .proto = proto};
        session_t s = {.sock = -1,
                       .io = io,
                       .pending = (const char *)bytes,
                       .pending_len = n,
                       .chunk_max = chunk};
        int r = session(&s, &req, &res, err);
        *ret = res;
        return r;
}

int wsexec_run(k8s_client_t *c, const wsexec_request_t *req, const wsexec_io_t *io,
               wsexec_result_t *ret, hg_error_t *err)
{
        wsexec_result_t res = {.failure = WSEXEC_CONNECT, .exit_code = -1};
        session_t s = {.sock = -1, .io = io};
        _cleanup_strbuf_ strbuf_t head = {0};
        size_t head_len = 0;
        if (!req->argv || !req->argv[0]) {
                res.failure = WSEXEC_LOCAL;
                *ret = res;
                return error_set(err, -EINVAL, "no command to run");
        }
        int r = upgrade(c, req, &s, &head, &head_len, &res, err);
        if (r < 0) {
                if (r == -ENOMEM)
                        res.failure = WSEXEC_LOCAL;
                *ret = res;
                return r;
        }
        s.pending = head.data + head_len;
        s.pending_len = head.len - head_len;
        r = session(&s, req, &res, err);
        curl_easy_cleanup(s.h);
        *ret = res;
        return r;
}
