#include "ctlclient.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctlsock.h"
#include "error.h"
#include "jsonx.h"
#include "token.h"

void ctlclient_init(ctlclient_t *c)
{
        *c = (ctlclient_t){.fd = -1, .stream_fd = -1};
}

void ctlclient_close(ctlclient_t *c)
{
        if (c->fd >= 0)
                (void)close(c->fd);
        if (c->stream_fd >= 0)
                (void)close(c->stream_fd);
        if (c->in)
                token_wipe(c->in, c->in_cap);
        if (c->out)
                token_wipe(c->out, c->out_len);
        free(c->in);
        free(c->out);
        ctlclient_init(c);
}

ctlclient_t *ctlclient_free_slot(ctlclient_t *clients, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (!clients[i].used)
                        return &clients[i];
        return NULL;
}

short ctlclient_poll_events(const ctlclient_t *c)
{
        if (!c->used)
                return 0;
        return c->state == CTLCLIENT_READING    ? POLLIN
               : c->state == CTLCLIENT_WAIT_RUN ? 0
               : c->out_off < c->out_len        ? POLLOUT
                                                : 0;
}

/* Room for more of a request: the buffer grows (to CTLSOCK_REQUEST_MAX;
 * a start request carries the spec), the old one wiped: it may hold the
 * run key. */
static int grow(ctlclient_t *c)
{
        if (c->in_len < c->in_cap)
                return 0;
        if (c->in_cap >= CTLSOCK_REQUEST_MAX)
                return -EFBIG;
        size_t cap = c->in_cap ? c->in_cap * 4 : CTLSOCK_REQUEST_MIN;
        if (cap > CTLSOCK_REQUEST_MAX)
                cap = CTLSOCK_REQUEST_MAX;
        uint8_t *in = malloc(cap);
        if (!in)
                return -ENOMEM;
        if (c->in) {
                memcpy(in, c->in, c->in_len);
                token_wipe(c->in, c->in_cap);
                free(c->in);
        }
        c->in = in;
        c->in_cap = cap;
        return 0;
}

int ctlclient_read(ctlclient_t *c)
{
        for (;;) {
                int g = grow(c);
                if (g < 0)
                        return g;
                ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
                if (n > 0) {
                        c->in_len += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                return 1; /* EOF (or an error): the request is complete */
        }
}

void ctlclient_reply_text(ctlclient_t *c, char *text, size_t len)
{
        if (c->out)
                token_wipe(c->out, c->out_len);
        free(c->out);
        c->out = text, c->out_len = len;
        c->out_off = 0;
        c->state = CTLCLIENT_REPLYING;
}

void ctlclient_reply(ctlclient_t *c, json_t *j)
{
        _cleanup_json_ json_t *owned = j;
        char *out = owned ? jsonx_dumps(owned, JSON_COMPACT) : NULL;
        size_t len;
        if (!out) {
                out = strdup("{\"ok\":false,\"error\":\"out of memory\"}\n");
                len = out ? strlen(out) : 0;
        } else {
                len = strlen(out);
                out[len++] = '\n';
        }
        ctlclient_reply_text(c, out, len);
}

json_t *ctlclient_error(const char *fmt, ...)
{
        char msg[ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/* The next bytes to send to c: a copy of data (the client's output buffer
 * replaced). */
static int set_out(ctlclient_t *c, const char *data, size_t len)
{
        char *out = malloc(len);
        if (!out)
                return -ENOMEM;
        memcpy(out, data, len);
        free(c->out);
        c->out = out, c->out_len = len;
        return 0;
}

void ctlclient_write(ctlclient_t *c, bool log_done)
{
        while (c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
                if (n > 0) {
                        c->out_off += (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                return ctlclient_close(c);
        }
        if (c->state == CTLCLIENT_WATCHING) {
                char buf[CTLCLIENT_CHUNK];
                ssize_t n = pread(c->stream_fd, buf, sizeof(buf), c->watch_off);
#if defined(__GNUC__) && !defined(__clang__)
/* gcc 12's analyzer loses the buffer set_out stored in c->out (c is an
 * element of the daemon's clients) and reports it leaked here;
 * ctlclient_close and the next set_out free it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
                if (n > 0) {
                        if (set_out(c, buf, (size_t)n) < 0)
                                return ctlclient_close(c);
                        c->out_off = 0;
                        c->watch_off += n;
                        return;
                }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
                /* All of the log is out and nothing more will come. */
                if (log_done)
                        ctlclient_close(c);
                return;
        }
        if (c->state == CTLCLIENT_STREAMING) {
                char buf[CTLCLIENT_CHUNK];
                off_t left = c->stream_end - c->watch_off;
                ssize_t n = left <= 0
                                ? 0
                                : pread(c->stream_fd, buf,
                                        left < (off_t)sizeof(buf) ? (size_t)left : sizeof(buf),
                                        c->watch_off);
                if (n <= 0)
                        return ctlclient_close(c);
                if (set_out(c, buf, (size_t)n) < 0)
                        return ctlclient_close(c);
                c->out_off = 0;
                c->watch_off += n;
                return;
        }
        if (c->state == CTLCLIENT_REPLYING)
                ctlclient_close(c);
}
