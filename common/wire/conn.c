#include "conn.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t conn_now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int conn_init(conn_t *c, int fd, uint32_t max_payload)
{
        /* in_cap 0: one frame of the max_payload of the moment (a handshake
         * lowers it while it waits for a small frame). */
        int r = conn_init_sized(c, fd, max_payload, FRAME_HEADER_SIZE + (size_t)max_payload);
        if (r == 0)
                c->in_cap = 0;
        return r;
}

int conn_init_sized(conn_t *c, int fd, uint32_t max_payload, size_t in_cap)
{
        if (max_payload > FRAME_MAX_PAYLOAD || in_cap < FRAME_HEADER_SIZE + (size_t)max_payload)
                return -EINVAL;
        int flags = fcntl(fd, F_GETFL);
        if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                return -errno;
        conn_t n = {.fd = fd, .max_payload = max_payload, .in_cap = in_cap};
        n.in = malloc(in_cap);
        n.out = malloc(CONN_OUT_MAX);
        if (!n.in || !n.out) {
                free(n.in);
                free(n.out);
                return -ENOMEM;
        }
        *c = n;
        return 0;
}

void conn_close(conn_t *c)
{
        if (c->in && c->fd >= 0) /* initialized: a zeroed conn owns no fd */
                (void)close(c->fd);
        free(c->in);
        free(c->out);
        *c = (conn_t){.fd = -1};
}

/* Drops the frames returned so far: what is left (a frame in part, or
 * frames not yet taken) moves to the front. */
static void conn_compact(conn_t *c)
{
        if (c->in_used == 0)
                return;
        memmove(c->in, c->in + c->in_used, c->in_len - c->in_used);
        c->in_len -= c->in_used;
        c->in_used = 0;
}

int conn_fill(conn_t *c)
{
        conn_compact(c);
        size_t cap = c->in_cap ? c->in_cap : FRAME_HEADER_SIZE + (size_t)c->max_payload;
        while (c->in_len < cap && !c->eof) {
                ssize_t n = recv(c->fd, c->in + c->in_len, cap - c->in_len, 0);
                if (n > 0) {
                        c->in_len += (size_t)n;
                        continue;
                }
                if (n == 0) {
                        c->eof = true;
                        break;
                }
                if (errno == EINTR)
                        continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                        break;
                return -errno;
        }
        return 0;
}

int conn_next(conn_t *c, frame_t *ret, hg_error_t *err)
{
        if (c->in_used == c->in_len) /* all taken: the buffer starts again */
                c->in_used = c->in_len = 0;
        size_t used = 0;
        int r = frame_parse(c->in + c->in_used, c->in_len - c->in_used, c->max_payload, ret, &used,
                            err);
        if (r == 1)
                c->in_used += used;
        return r;
}

bool conn_can_queue(const conn_t *c, size_t n)
{
        return n <= c->max_payload && c->out_len + FRAME_HEADER_SIZE + n <= CONN_OUT_MAX;
}

int conn_queue(conn_t *c, frame_type_t type, const void *payload, size_t n, const void *payload2,
               size_t n2)
{
        if (n2 > SIZE_MAX - n || !conn_can_queue(c, n + n2))
                return -ENOBUFS;
        int r = frame_header_encode(type, (uint32_t)(n + n2), c->out + c->out_len);
        if (r < 0)
                return r;
        c->out_len += FRAME_HEADER_SIZE;
        if (n)
                memcpy(c->out + c->out_len, payload, n);
        c->out_len += n;
        if (n2)
                memcpy(c->out + c->out_len, payload2, n2);
        c->out_len += n2;
        return 0;
}

int conn_flush(conn_t *c)
{
        size_t done = 0;
        int r = 0;
        while (done < c->out_len) {
                ssize_t n = send(c->fd, c->out + done, c->out_len - done, MSG_NOSIGNAL);
                if (n >= 0) {
                        done += (size_t)n;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        r = -errno;
                break;
        }
        memmove(c->out, c->out + done, c->out_len - done);
        c->out_len -= done;
        return r;
}

static int wait_fd(int fd, short events, int64_t deadline_ms)
{
        for (;;) {
                int64_t left = deadline_ms - conn_now_ms();
                if (left <= 0)
                        return -ETIMEDOUT;
                struct pollfd p = {.fd = fd, .events = events};
                int n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
                if (n > 0)
                        return 0;
                if (n < 0 && errno != EINTR)
                        return -errno;
        }
}

int conn_flush_until(conn_t *c, int64_t deadline_ms)
{
        while (conn_out_pending(c)) {
                int r = conn_flush(c);
                if (r < 0)
                        return r;
                if (conn_out_pending(c) && (r = wait_fd(c->fd, POLLOUT, deadline_ms)) < 0)
                        return r;
        }
        return 0;
}

int conn_next_until(conn_t *c, frame_t *ret, int64_t deadline_ms, hg_error_t *err)
{
        for (;;) {
                int r = conn_next(c, ret, err);
                if (r != 0)
                        return r;
                if (c->eof)
                        return error_set(err, -ECONNRESET, "the peer closed the connection");
                if ((r = wait_fd(c->fd, POLLIN, deadline_ms)) < 0)
                        return error_set(err, r, "no whole frame in time");
                if ((r = conn_fill(c)) < 0)
                        return error_set(err, r, "read failed: %s", strerror(-r));
        }
}
