/* The agent side's HELLO/WELCOME connections to the driver (channel.h). */
#include "channel.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "cleanup.h"

int relay_open_channel(uint16_t port, const token_t *token, frame_channel_t channel,
                       size_t max_payload, int64_t deadline, conn_t *ret, hg_error_t *err)
{
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return error_set(err, -errno, "socket: %s", strerror(errno));
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return error_set(err, -errno, "connect to 127.0.0.1:%u: %s", port, strerror(errno));
        /* Frames are batched by conn_flush: Nagle only delays a burst's tail. */
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        conn_t c;
        int r = conn_init(&c, TAKE_FD(fd), max_payload);
        if (r < 0)
                return error_set(err, r, "connection: %s", strerror(-r));
        frame_hello_t hello = {.channel = channel};
        memcpy(hello.token, token->bytes, FRAME_TOKEN_SIZE);
        uint8_t payload[FRAME_HELLO_SIZE];
        frame_hello_encode(&hello, payload);
        r = conn_queue(&c, FRAME_HELLO, payload, sizeof(payload), NULL, 0);
        token_wipe(&hello, sizeof(hello));
        token_wipe(payload, sizeof(payload));
        /* The queued copy of the token leaves memory when the queue drains. */
        if (r == 0)
                r = conn_flush_until(&c, deadline);
        token_wipe(c.out, CONN_OUT_MAX);
        frame_t f;
        if (r == 0 && (r = conn_next_until(&c, &f, deadline, err)) == 1 && f.type != FRAME_WELCOME)
                r = error_set(err, -EPROTO, "expected WELCOME, got %s", frame_type_name(f.type));
        if (r == 0)
                r = error_set(err, -EPIPE, "the driver closed the connection");
        if (r < 0) {
                conn_close(&c);
                if (!err || !err->message[0])
                        error_set(err, r, "%s", strerror(-r));
                return error_prefix(err,
                                    "%s channel: ", channel == FRAME_CHANNEL_IO ? "io" : "ctl");
        }
        *ret = c;
        return 0;
}
