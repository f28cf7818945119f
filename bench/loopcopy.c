/* hangar-bench-loopcopy: the raw reference for bench/relay.sh. Plain
 * blocking loopback TCP with 64 KiB reads and writes, no framing, no event
 * loop: what moving the same bytes costs without the relay.
 *   recv PORT_FILE OUT_FILE  accept one connection, append it to OUT_FILE,
 *                            print the byte count
 *   send PORT                copy stdin to 127.0.0.1:PORT
 *   echo PORT_FILE           accept one connection, echo it back
 *   ping PORT N SIZE         N messages of SIZE bytes, one at a time, each
 *                            awaited back; prints latency.h's line
 * A listener binds 127.0.0.1:0 and writes its port, decimal and "\n", to
 * PORT_FILE (atomically) once it listens. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "latency.h"
#include "strparse.h"

#define CHUNK    (64u * 1024u)
#define PING_MAX (1024u * 1024u)

static const char usage[] = "usage: hangar-bench-loopcopy recv PORT_FILE OUT_FILE\n"
                            "       hangar-bench-loopcopy send PORT\n"
                            "       hangar-bench-loopcopy echo PORT_FILE\n"
                            "       hangar-bench-loopcopy ping PORT N SIZE\n";

/* code: a positive errno. */
static int fail(const char *what, int code)
{
        fprintf(stderr, "hangar-bench-loopcopy: %s: %s\n", what, strerror(code));
        return 1;
}

/* Listens on 127.0.0.1:0, publishes the port, returns the accepted socket. */
static int accept_one(const char *port_file)
{
        _cleanup_close_ int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sa);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 1) < 0 ||
            getsockname(lfd, (struct sockaddr *)&sa, &len) < 0)
                return -errno;
        char text[16];
        int n = snprintf(text, sizeof(text), "%u\n", ntohs(sa.sin_port));
        int r = file_write_atomic(port_file, text, (size_t)n, 0644, 0);
        if (r < 0)
                return r;
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static int connect_port(const char *port_text)
{
        uint32_t port = 0;
        if (parse_u32(port_text, &port) < 0 || port == 0 || port > 65535)
                return -EINVAL;
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons((uint16_t)port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return -errno;
        return TAKE_FD(fd);
}

/* Copies in to out until in's EOF; the bytes copied, or -errno. */
static int64_t copy(int in, int out, uint8_t *buf)
{
        int64_t total = 0;
        for (;;) {
                ssize_t n = read(in, buf, CHUNK);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : total;
                int r = fd_write_all(out, buf, (size_t)n);
                if (r < 0)
                        return r;
                total += n;
        }
}

static int read_exact(int fd, uint8_t *buf, size_t n)
{
        size_t got = 0;
        while (got < n) {
                ssize_t r = read(fd, buf + got, n - got);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        return r < 0 ? -errno : -ECONNRESET;
                got += (size_t)r;
        }
        return 0;
}

static int cmd_ping(const char *port, const char *n_text, const char *size_text, uint8_t *buf)
{
        uint32_t n = 0, size = 0;
        if (parse_u32(n_text, &n) < 0 || n == 0 || parse_u32(size_text, &size) < 0 || size == 0 ||
            size > PING_MAX / 2) {
                fputs(usage, stderr);
                return 2;
        }
        _cleanup_free_ uint64_t *samples = calloc(n, sizeof(*samples));
        _cleanup_close_ int fd = connect_port(port);
        if (!samples || fd < 0)
                return fail("ping", fd < 0 ? -fd : ENOMEM);
        memset(buf, 'x', size);
        for (uint32_t i = 0; i < n; i++) {
                uint64_t t0 = latency_now_ns();
                int r = fd_write_all(fd, buf, size);
                if (r == 0)
                        r = read_exact(fd, buf + size, size);
                if (r < 0)
                        return fail("ping", -r);
                samples[i] = latency_now_ns() - t0;
        }
        latency_report(samples, n);
        return 0;
}

int main(int argc, char **argv)
{
        (void)signal(SIGPIPE, SIG_IGN);
        _cleanup_free_ uint8_t *buf = malloc(PING_MAX > CHUNK ? PING_MAX : CHUNK);
        if (!buf)
                return fail("buffer", ENOMEM);
        const char *cmd = argc > 1 ? argv[1] : "";
        if (strcmp(cmd, "recv") == 0 && argc == 4) {
                _cleanup_close_ int out =
                    open(argv[3], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
                if (out < 0)
                        return fail(argv[3], errno);
                _cleanup_close_ int fd = accept_one(argv[2]);
                int64_t total = fd < 0 ? fd : copy(fd, out, buf);
                if (total < 0)
                        return fail("recv", (int)-total);
                printf("%lld\n", (long long)total);
                return 0;
        }
        if (strcmp(cmd, "send") == 0 && argc == 3) {
                _cleanup_close_ int fd = connect_port(argv[2]);
                int64_t total = fd < 0 ? fd : copy(STDIN_FILENO, fd, buf);
                if (total < 0)
                        return fail("send", (int)-total);
                return 0;
        }
        if (strcmp(cmd, "echo") == 0 && argc == 3) {
                _cleanup_close_ int fd = accept_one(argv[2]);
                int64_t total = fd < 0 ? fd : copy(fd, fd, buf);
                if (total < 0)
                        return fail("echo", (int)-total);
                return 0;
        }
        if (strcmp(cmd, "ping") == 0 && argc == 5)
                return cmd_ping(argv[2], argv[3], argv[4], buf);
        fputs(usage, stderr);
        return 2;
}
