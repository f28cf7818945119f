/* hangar-bench-relayrtt: the driver's side of the relay protocol
 * (docs/protocol.md), reduced to timing round trips through a real
 * hangar-relay and an echoing harness (`cat`) for bench/relay.sh.
 *
 *   hangar-bench-relayrtt HOME CWD SCRIPT N SIZE
 *
 * Writes HOME/run/script (SCRIPT), HOME/run/turn.json (naming the bench's own
 * daemon instance) and, once listening, HOME/relay.port; prints the token
 * and that instance as stdout's first line, as hangar writes them to the
 * relay (`TOKEN INSTANCE`, so the relay's instance check runs too); accepts
 * io then ctl, each through the v2 handshake; sends N STDIN
 * frames of SIZE bytes one at a time, each timed until its bytes are back in
 * STDOUT frames; closes stdin, waits for EXIT, closes ctl; prints
 * latency.h's line. Blocking and single-threaded: one message in flight. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "cleanup.h"
#include "conn.h"
#include "fileio.h"
#include "frame.h"
#include "handshake.h"
#include "latency.h"
#include "strparse.h"
#include "token.h"

#define TIMEOUT_MS 30000 /* for any one step: the relay connecting, an echo, the EXIT */

/* The bench's daemon instance: named in turn.json, given to the relay with
 * the token, and sent in each CHALLENGE, where the relay compares it. */
static uint8_t bench_instance[FRAME_INSTANCE_SIZE];

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fputs("hangar-bench-relayrtt: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        return 1;
}

static int write_file(const char *dir, const char *name, const char *text)
{
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        return file_write_atomic(path, text, strlen(text), 0644, 0);
}

/* The run's files, then the listener; the port file goes last. */
static int prepare(const char *home, const char *cwd, const char *script, const char *instance,
                   int *ret_lfd)
{
        _cleanup_free_ char *run = NULL;
        _cleanup_json_ json_t *turn =
            json_pack("{s:s, s:s, s:s}", "turn", "rtt", "cwd", cwd, "instance", instance);
        _cleanup_free_ char *turn_text = turn ? json_dumps(turn, JSON_COMPACT) : NULL;
        if (!turn_text || asprintf(&run, "%s/run", home) < 0)
                return -ENOMEM;
        if (mkdir(run, 0755) < 0 && errno != EEXIST)
                return -errno;
        int r = write_file(home, "run/script", script);
        if (r == 0)
                r = write_file(home, "run/turn.json", turn_text);
        if (r < 0)
                return r;

        _cleanup_close_ int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(sa);
        if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 2) < 0 ||
            getsockname(lfd, (struct sockaddr *)&sa, &len) < 0)
                return -errno;
        char port[16];
        snprintf(port, sizeof(port), "%u\n", ntohs(sa.sin_port));
        if ((r = write_file(home, "relay.port", port)) < 0)
                return r;
        *ret_lfd = TAKE_FD(lfd);
        return 0;
}

/* The driver's side of the handshake (docs/protocol.md): HELLO in,
 * CHALLENGE (nonce, instance, proof over the connection's ends) out, the
 * relay's PROOF checked, WELCOME. */
static int handshake(conn_t *c, const token_t *token, frame_channel_t channel, int64_t deadline,
                     hg_error_t *err)
{
        frame_t f;
        frame_hello_t hello;
        int r = conn_next_until(c, &f, deadline, err);
        if (r >= 0 && f.type != FRAME_HELLO)
                r = error_set(err, -EPROTO, "expected HELLO, got %s", frame_type_name(f.type));
        if (r >= 0 && (r = frame_hello_decode(&f, &hello, err)) >= 0 && hello.channel != channel)
                r = error_set(err, -EACCES, "wrong channel");
        if (r < 0)
                return r;
        handshake_binding_t b = {.channel = channel};
        /* The proofs are bound to this connection's two ends. */
        if (handshake_endpoints(c->fd, HANDSHAKE_DRIVER, &b.ends) < 0)
                return error_set(err, -EIO, "no address for the connection");
        memcpy(b.relay_nonce, hello.nonce, FRAME_NONCE_SIZE);
        memcpy(b.instance, bench_instance, FRAME_INSTANCE_SIZE);
        frame_challenge_t ch;
        if (handshake_nonce(b.driver_nonce) < 0 ||
            handshake_prove(token, HANDSHAKE_DRIVER, &b, ch.mac) < 0)
                return error_set(err, -EIO, "no proof");
        memcpy(ch.nonce, b.driver_nonce, FRAME_NONCE_SIZE);
        memcpy(ch.instance, b.instance, FRAME_INSTANCE_SIZE);
        uint8_t payload[FRAME_CHALLENGE_SIZE];
        frame_challenge_encode(&ch, payload);
        frame_proof_t proof;
        if ((r = conn_queue(c, FRAME_CHALLENGE, payload, sizeof(payload), NULL, 0)) < 0 ||
            (r = conn_flush_until(c, deadline)) < 0 ||
            (r = conn_next_until(c, &f, deadline, err)) < 0)
                return r;
        if (f.type != FRAME_PROOF || frame_proof_decode(&f, &proof, err) < 0 ||
            !handshake_verify(token, HANDSHAKE_RELAY, &b, proof.mac))
                return error_set(err, -EACCES, "no valid PROOF");
        if ((r = conn_queue(c, FRAME_WELCOME, NULL, 0, NULL, 0)) >= 0)
                r = conn_flush_until(c, deadline);
        return r;
}

/* Accepts one connection that proves the token for channel. */
static int accept_channel(int lfd, const token_t *token, frame_channel_t channel, conn_t *ret,
                          hg_error_t *err)
{
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        if (poll(&p, 1, TIMEOUT_MS) != 1)
                return error_set(err, -ETIMEDOUT, "no connection from the relay");
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
                return error_set(err, -errno, "accept: %s", strerror(errno));
        conn_t c;
        int r = conn_init(&c, fd, FRAME_MAX_PAYLOAD);
        if (r < 0) {
                (void)close(fd);
                return error_set(err, r, "connection: %s", strerror(-r));
        }
        r = handshake(&c, token, channel, conn_now_ms() + TIMEOUT_MS, err);
        if (r < 0) {
                conn_close(&c);
                return err->message[0] ? r : error_set(err, r, "%s", strerror(-r));
        }
        *ret = c;
        return 0;
}

/* Waits until size bytes came back on io as STDOUT. */
static int await_echo(conn_t *io, size_t size, hg_error_t *err)
{
        int64_t deadline = conn_now_ms() + TIMEOUT_MS;
        for (size_t got = 0; got < size;) {
                frame_t f;
                int r = conn_next_until(io, &f, deadline, err);
                if (r < 0)
                        return r;
                if (f.type != FRAME_STDOUT || f.length == 0)
                        return error_set(err, -EPROTO, "io: unexpected %s (%u bytes)",
                                         frame_type_name(f.type), f.length);
                got += f.length;
        }
        return 0;
}

/* Closes the harness's stdin and waits for its EXIT on ctl. */
static int await_exit(conn_t *io, conn_t *ctl, frame_exit_t *ret, hg_error_t *err)
{
        int64_t deadline = conn_now_ms() + TIMEOUT_MS;
        int r = conn_queue(io, FRAME_STDIN, NULL, 0, NULL, 0);
        if (r == 0)
                r = conn_flush_until(io, deadline);
        while (r >= 0) {
                frame_t f;
                if ((r = conn_next_until(ctl, &f, deadline, err)) < 0)
                        break;
                if (f.type == FRAME_EXIT)
                        return frame_exit_decode(&f, ret, err);
                if (f.type != FRAME_STDERR)
                        return error_set(err, -EPROTO, "ctl: unexpected %s",
                                         frame_type_name(f.type));
        }
        return err->message[0] ? r : error_set(err, r, "%s", strerror(-r));
}

int main(int argc, char **argv)
{
        uint32_t n = 0, size = 0;
        if (argc != 6 || parse_u32(argv[4], &n) < 0 || n == 0 || parse_u32(argv[5], &size) < 0 ||
            size == 0 || size > FRAME_MAX_PAYLOAD) {
                fputs("usage: hangar-bench-relayrtt HOME CWD SCRIPT N SIZE (SIZE <= 65536)\n",
                      stderr);
                return 2;
        }
        (void)signal(SIGPIPE, SIG_IGN);
        token_t token;
        char hex[TOKEN_HEX_LEN + 1], instance[HANDSHAKE_INSTANCE_HEX_LEN + 1];
        _cleanup_close_ int lfd = -1;
        memset(bench_instance, 0xbe, sizeof(bench_instance));
        handshake_instance_to_hex(bench_instance, instance);
        if (token_generate(&token) < 0)
                return fail("no random bytes for the token");
        int r = prepare(argv[1], argv[2], argv[3], instance, &lfd);
        if (r < 0)
                return fail("%s: %s", argv[1], strerror(-r));
        token_to_hex(&token, hex);
        printf("%s %s\n", hex, instance);
        fflush(stdout);

        hg_error_t err = {0};
        conn_t io = {.fd = -1}, ctl = {.fd = -1};
        if (accept_channel(lfd, &token, FRAME_CHANNEL_IO, &io, &err) < 0 ||
            accept_channel(lfd, &token, FRAME_CHANNEL_CTL, &ctl, &err) < 0) {
                conn_close(&io);
                return fail("handshake: %s", err.message);
        }

        _cleanup_free_ uint64_t *samples = calloc(n, sizeof(*samples));
        _cleanup_free_ uint8_t *msg = malloc(size);
        if (!samples || !msg)
                return fail("out of memory");
        memset(msg, 'x', size);
        for (uint32_t i = 0; i < n && r >= 0; i++) {
                uint64_t t0 = latency_now_ns();
                r = conn_queue(&io, FRAME_STDIN, msg, size, NULL, 0);
                if (r == 0)
                        r = conn_flush_until(&io, conn_now_ms() + TIMEOUT_MS);
                if (r == 0)
                        r = await_echo(&io, size, &err);
                samples[i] = latency_now_ns() - t0;
        }
        frame_exit_t ex = {0};
        if (r >= 0)
                r = await_exit(&io, &ctl, &ex, &err);
        conn_close(&ctl); /* the driver's "done": the relay exits */
        conn_close(&io);
        if (r < 0)
                return fail("%s", err.message[0] ? err.message : strerror(-r));
        if (ex.end != FRAME_END_EXITED || ex.value != 0)
                return fail("the harness ended %d/%d", ex.end, ex.value);
        latency_report(samples, n);
        return 0;
}
