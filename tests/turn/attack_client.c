/* hangar-test-attack: the agent's side of the attack suite
 * (tests/turn/test_attacks_pod.sh). Talks to the driver's listener the way a
 * hostile agent would and prints one word saying what the driver did:
 *
 *   hangar-test-attack PORT MODE [ARG]
 *
 *   none           connect, send nothing, close
 *   wrong          the handshake (HELLO, the driver's CHALLENGE, PROOF) with a
 *                  proof made with a random token
 *   token HEX CH   the handshake with the given token for channel io|ctl
 *   garbage        bytes that are no frame (version 7)
 *   oversize       a header announcing 1 MiB
 *   stall SECS     connect and hold the connection, silent
 *   half SECS      half a HELLO, then hold
 *   flood N        N silent connections held for 3 s
 *   bind N         bind N loopback ports from 32768 and hold them (SECS in ARG2)
 *   take HEX SECS  with the token: take io and ctl (a thief that used it
 *                  first), print "both", then hold them, printing "closed"
 *                  when the driver closes them, "held" after SECS
 *   lie HEX        with the token: take io and ctl, then send an oversize frame
 *   flood-record HEX  with the token: take io and ctl, then try to blind the
 *                  record: 200 SIGNAL frames, 40 RUN_RESULTs nobody asked for,
 *                  300 approval requests of 1 KiB (past the driver's 256);
 *                  prints "sent", then holds both connections 30 s (the
 *                  suite reads the record meanwhile, slowly on a loaded machine)
 *   listen PORTFILE SECS  a listener of the agent's own (port written to
 *                  PORTFILE): prints "hello" if a relay connected and said
 *                  HELLO within SECS, else "nothing"
 *   squat SECS [HEX]  the agent on a dead daemon's port: binds PORT itself
 *                  (free once the daemon died, still named by relay.port),
 *                  waits SECS for a relay, answers its HELLO with the best
 *                  forgery it has (a CHALLENGE with a fresh nonce, the
 *                  instance it read from turn.json's copy in ARG3's absence,
 *                  here zeros, and a random proof), then reads everything
 *                  else the relay sends until it closes. Prints
 *                  "hello-only" (one HELLO, nothing after: the relay gave it
 *                  nothing to answer with), "sent N" (N bytes past the
 *                  HELLO), "nothing" (no relay came); with HEX (the turn's
 *                  token, which the suite knows), "token" when the token's
 *                  bytes or hex were in what arrived
 *   thief NAME SECS LOG [forge]  the relay-token race (docs/turn.md "sealed
 *                  start"): makes itself non-dumpable, forks a stopped child
 *                  holding one end of a unix socket pair, then spins over /proc
 *                  for up to SECS seconds (until every relay it saw is gone);
 *                  for every new process called NAME it
 *                  opens /proc/PID/fd/0 and fd/1 at once and again (before the
 *                  relay hardens itself), sends each descriptor it got into the
 *                  socket pair (in flight to the stopped child), with "forge"
 *                  writes a forged ready line into fd 1, and reads what
 *                  arrives on fd 0; a whole token line it uses on PORT (the
 *                  handshake for io). Every step is appended to LOG as it happens (the
 *                  sweep kills the thief: LOG is what it leaves), one line each:
 *                  "start", "opened 0 PID", "opened 1 PID", "forged PID",
 *                  "in-flight N", "stole N", "used WORD", "end"; prints a summary
 *                  line at the end, if it lives to see it.
 *
 * Output: "welcome" (the driver accepted), "taken" (it answered TAKEN: the
 * token was used before), "closed" (it hung up on us),
 * "refused" (nothing listens), "held" (nothing happened before we gave up),
 * "bound N". Exit 0 whatever the outcome: the test judges the word. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "conn.h"
#include "frame.h"
#include "handshake.h"
#include "strparse.h"
#include "token.h"

static int dial(uint16_t port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd < 0)
                return -1;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                (void)close(fd);
                return -1;
        }
        return fd;
}

/* What the driver does next, within ms: a WELCOME, a TAKEN (the token was
 * used before: a replay), a close, or nothing. */
static const char *outcome(int fd, int ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, ms) <= 0)
                return "held";
        uint8_t buf[FRAME_HEADER_SIZE];
        ssize_t n = recv(fd, buf, sizeof(buf), MSG_WAITALL);
        if (n == (ssize_t)sizeof(buf) && buf[1] == FRAME_WELCOME)
                return "welcome";
        if (n == (ssize_t)sizeof(buf) && buf[1] == FRAME_TAKEN)
                return "taken";
        return "closed";
}

/* recv with MSG_WAITALL, bounded by ms: the whole n bytes or false. */
static bool recv_all(int fd, void *buf, size_t n, int ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        return poll(&p, 1, ms) > 0 && recv(fd, buf, n, MSG_WAITALL) == (ssize_t)n;
}

/* The relay's side of the handshake with token (docs/protocol.md): HELLO
 * with a fresh nonce, the driver's CHALLENGE (its proof is not checked: the
 * suite attacks the driver, and a driver that did not prove would only be
 * sent a proof for nonces it chose), then our PROOF over them. False when
 * no CHALLENGE came (the driver closed, or held). */
static bool send_hello(int fd, const uint8_t token[FRAME_TOKEN_SIZE], frame_channel_t ch)
{
        handshake_binding_t b = {.channel = ch};
        if (handshake_nonce(b.relay_nonce) < 0 ||
            handshake_endpoints(fd, HANDSHAKE_RELAY, &b.ends) < 0)
                return false;
        uint8_t hdr[FRAME_HEADER_SIZE], payload[FRAME_HELLO_SIZE];
        frame_hello_t h = {.channel = ch};
        memcpy(h.nonce, b.relay_nonce, FRAME_NONCE_SIZE);
        frame_hello_encode(&h, payload);
        (void)frame_header_encode(FRAME_HELLO, sizeof(payload), hdr);
        (void)!write(fd, hdr, sizeof(hdr));
        (void)!write(fd, payload, sizeof(payload));
        uint8_t in[FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE];
        frame_t f;
        size_t used = 0;
        frame_challenge_t c;
        if (!recv_all(fd, in, sizeof(in), 4000) ||
            frame_parse(in, sizeof(in), FRAME_CHALLENGE_SIZE, &f, &used, NULL) != 1 ||
            frame_challenge_decode(&f, &c, NULL) < 0)
                return false;
        memcpy(b.driver_nonce, c.nonce, FRAME_NONCE_SIZE);
        memcpy(b.instance, c.instance, FRAME_INSTANCE_SIZE);
        token_t t;
        memcpy(t.bytes, token, FRAME_TOKEN_SIZE);
        frame_proof_t proof;
        if (handshake_prove(&t, HANDSHAKE_RELAY, &b, proof.mac) < 0)
                return false;
        uint8_t out[FRAME_HEADER_SIZE + FRAME_PROOF_SIZE];
        (void)frame_header_encode(FRAME_PROOF, FRAME_PROOF_SIZE, out);
        frame_proof_encode(&proof, out + FRAME_HEADER_SIZE);
        (void)!write(fd, out, sizeof(out));
        return true;
}

/* With the token, io on fd, then ctl on a new connection to port (in
 * *ret_ctl): "welcome" when both are in, else what the driver did to the
 * one that failed. */
static const char *take_both(int fd, uint16_t port, const uint8_t token[FRAME_TOKEN_SIZE],
                             int *ret_ctl)
{
        *ret_ctl = -1;
        const char *o =
            send_hello(fd, token, FRAME_CHANNEL_IO) ? outcome(fd, 4000) : outcome(fd, 0);
        if (strcmp(o, "welcome") != 0)
                return o;
        int ctl = dial(port);
        if (ctl < 0)
                return "refused";
        *ret_ctl = ctl;
        return send_hello(ctl, token, FRAME_CHANNEL_CTL) ? outcome(ctl, 4000) : outcome(ctl, 0);
}

/* Holds io and ctl, reading (and dropping) what the driver sends, until
 * the driver closes one ("closed") or ms pass ("held"). */
static const char *hold_both(int io, int ctl, int64_t ms)
{
        for (int64_t end = conn_now_ms() + ms; conn_now_ms() < end;) {
                char b[4096];
                struct pollfd p[2] = {{.fd = io, .events = POLLIN}, {.fd = ctl, .events = POLLIN}};
                if (poll(p, 2, 100) <= 0)
                        continue;
                for (int i = 0; i < 2; i++)
                        if (p[i].revents && recv(p[i].fd, b, sizeof(b), 0) <= 0)
                                return "closed";
        }
        return "held";
}

/* Binds 127.0.0.1:port (0: the kernel picks) and listens; -1 on failure. */
static int listen_on(uint16_t port, uint16_t *ret_port)
{
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int one = 1;
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t sl = sizeof(sa);
        if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
            bind(l, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(l, 4) < 0 ||
            getsockname(l, (struct sockaddr *)&sa, &sl) < 0) {
                if (l >= 0)
                        (void)close(l);
                return -1;
        }
        *ret_port = ntohs(sa.sin_port);
        return l;
}

/* squat: the agent's listener on a dead daemon's port (see the top). */
static int squat(uint16_t port, uint32_t secs, const char *token_hex)
{
        uint16_t bound = 0;
        int l = listen_on(port, &bound);
        if (l < 0) {
                printf("cannot-bind %s\n", strerror(errno));
                return 0;
        }
        printf("bound %u\n", bound);
        fflush(stdout);
        struct pollfd p = {.fd = l, .events = POLLIN};
        int c = poll(&p, 1, (int)secs * 1000) > 0 ? accept4(l, NULL, NULL, SOCK_CLOEXEC) : -1;
        if (c < 0) {
                puts("nothing");
                return 0;
        }
        static uint8_t got[65536];
        size_t n = 0;
        bool hello =
            recv_all(c, got, FRAME_HEADER_SIZE + FRAME_HELLO_SIZE, 3000) && got[1] == FRAME_HELLO;
        if (hello) {
                n = FRAME_HEADER_SIZE + FRAME_HELLO_SIZE;
                frame_challenge_t ch;
                memset(&ch, 0, sizeof(ch));
                if (handshake_nonce(ch.nonce) < 0 || handshake_nonce(ch.mac) < 0)
                        return 1;
                uint8_t out[FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE];
                (void)frame_header_encode(FRAME_CHALLENGE, FRAME_CHALLENGE_SIZE, out);
                frame_challenge_encode(&ch, out + FRAME_HEADER_SIZE);
                (void)!write(c, out, sizeof(out));
        }
        /* Everything else, until the relay closes (3 s of silence at most). */
        for (;;) {
                p = (struct pollfd){.fd = c, .events = POLLIN};
                if (n == sizeof(got) || poll(&p, 1, 3000) <= 0)
                        break;
                ssize_t r = recv(c, got + n, sizeof(got) - n, 0);
                if (r <= 0)
                        break;
                n += (size_t)r;
        }
        token_t t;
        if (token_hex && token_from_hex(token_hex, strlen(token_hex), &t, NULL) == 0) {
                char hex[TOKEN_HEX_LEN + 1];
                token_to_hex(&t, hex);
                if (memmem(got, n, t.bytes, sizeof(t.bytes)) ||
                    memmem(got, n, hex, TOKEN_HEX_LEN)) {
                        puts("token");
                        return 0;
                }
        }
        if (!hello)
                printf("sent %zu (no HELLO)\n", n);
        else if (n == FRAME_HEADER_SIZE + FRAME_HELLO_SIZE)
                puts("hello-only");
        else
                printf("sent %zu\n", n - (FRAME_HEADER_SIZE + FRAME_HELLO_SIZE));
        return 0;
}

static int parse_token(const char *hex, token_t *t)
{
        return token_from_hex(hex, strlen(hex), t, NULL);
}

/* ---- thief ---- */
#define THIEF_MAX 64

static int thief_log_fd = -1;

static void thief_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void thief_log(const char *fmt, ...)
{
        char line[160];
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        if ((size_t)n > sizeof(line) - 2)
                n = (int)sizeof(line) - 2;
        line[n++] = '\n';
        (void)!write(thief_log_fd, line, (size_t)n); /* O_APPEND: one line, at once */
}

static bool proc_comm_is(pid_t pid, const char *name)
{
        char path[64], comm[64];
        (void)snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        ssize_t n = read(fd, comm, sizeof(comm) - 1);
        (void)close(fd);
        if (n <= 0)
                return false;
        comm[n] = '\0';
        comm[strcspn(comm, "\n")] = '\0';
        return strcmp(comm, name) == 0;
}

/* Opens /proc/PID/fd/FD with flags, as fast and as often as it takes. */
static int grab(pid_t pid, int fdno, int flags)
{
        char path[64];
        (void)snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fdno);
        for (int tries = 0; tries < 2000; tries++) {
                int fd = open(path, flags | O_NONBLOCK | O_CLOEXEC);
                if (fd >= 0 || errno == ENOENT || errno == ESRCH)
                        return fd;
        }
        return -1;
}

/* The descriptor into the socket pair: in flight until the stopped child
 * reads it, which it never does. */
static void send_in_flight(int sock, int fd)
{
        char c = 'x';
        struct iovec iov = {.iov_base = &c, .iov_len = 1};
        union {
                char buf[CMSG_SPACE(sizeof(int))];
                struct cmsghdr align;
        } u;
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = u.buf,
                           .msg_controllen = sizeof(u.buf)};
        struct cmsghdr *c0 = CMSG_FIRSTHDR(&m);
        c0->cmsg_level = SOL_SOCKET;
        c0->cmsg_type = SCM_RIGHTS;
        c0->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c0), &fd, sizeof(int));
        static unsigned in_flight;
        if (sendmsg(sock, &m, MSG_NOSIGNAL) == 1)
                thief_log("in-flight %u", ++in_flight);
}

static int thief(uint16_t port, const char *name, uint32_t secs, const char *log, bool forge)
{
        thief_log_fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (thief_log_fd < 0)
                return 1;
        (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return 1;
        pid_t child = fork();
        if (child == 0) {
                (void)close(sv[0]);
                for (;;)
                        raise(SIGSTOP);
        }
        (void)close(sv[1]);
        thief_log("start %d child %d", (int)getpid(), (int)child);
        pid_t seen[THIEF_MAX];
        int in[THIEF_MAX];
        size_t n_seen = 0, n_in = 0;
        char got[TOKEN_HEX_LEN + 2];
        size_t got_len = 0;
        uint64_t stolen = 0;
        bool used = false;
        int64_t end = conn_now_ms() + (int64_t)secs * 1000;
        while (conn_now_ms() < end) {
                DIR *d = opendir("/proc");
                struct dirent *e;
                while (d && (e = readdir(d))) {
                        uint32_t v = 0;
                        if (parse_u32(e->d_name, &v) < 0 || (pid_t)v == getpid() ||
                            (pid_t)v == child)
                                continue;
                        pid_t pid = (pid_t)v;
                        bool known = false;
                        for (size_t i = 0; i < n_seen; i++)
                                known = known || seen[i] == pid;
                        if (known || n_seen >= THIEF_MAX || !proc_comm_is(pid, name))
                                continue;
                        seen[n_seen++] = pid;
                        int r0 = grab(pid, 0, O_RDONLY);
                        int w1 = grab(pid, 1, O_WRONLY);
                        if (r0 >= 0) {
                                thief_log("opened 0 %d", (int)pid);
                                send_in_flight(sv[0], r0);
                                if (n_in < THIEF_MAX)
                                        in[n_in++] = r0;
                        }
                        if (w1 >= 0) {
                                thief_log("opened 1 %d", (int)pid);
                                send_in_flight(sv[0], w1);
                                static const char forged[] =
                                    "{\"relay\":\"ready\",\"window\":false,\"sealed\":true,"
                                    "\"sweep\":{\"killed\":0}}\n";
                                if (forge && write(w1, forged, sizeof(forged) - 1) > 0)
                                        thief_log("forged %d", (int)pid);
                        }
                }
                if (d)
                        closedir(d);
                for (size_t i = 0; i < n_in; i++) {
                        char buf[256];
                        ssize_t r = read(in[i], buf, sizeof(buf));
                        if (r <= 0)
                                continue;
                        stolen += (uint64_t)r;
                        thief_log("stole %zd", r);
                        for (ssize_t k = 0; k < r && got_len < sizeof(got); k++)
                                got[got_len++] = buf[k];
                }
                token_t t;
                if (!used && port && got_len >= TOKEN_HEX_LEN &&
                    token_from_hex(got, TOKEN_HEX_LEN, &t, NULL) == 0) {
                        used = true;
                        int fd = dial(port);
                        if (fd >= 0) {
                                thief_log("used %s", send_hello(fd, t.bytes, FRAME_CHANNEL_IO)
                                                         ? outcome(fd, 3000)
                                                         : "closed");
                        } else {
                                thief_log("used refused");
                        }
                }
                /* Every relay it saw is gone: the turn is over, nothing more
                 * to steal. SECS is only the bound for a relay that never
                 * comes (on a loaded machine the relay's exec can start long
                 * after the thief's). */
                bool any_alive = false;
                for (size_t i = 0; i < n_seen; i++)
                        any_alive = any_alive || kill(seen[i], 0) == 0 || errno != ESRCH;
                if (n_seen > 0 && !any_alive)
                        break;
        }
        thief_log("end");
        printf("{\"seen\": %zu, \"opened\": %zu, \"stolen\": %llu, \"used\": %s}\n", n_seen, n_in,
               (unsigned long long)stolen, used ? "true" : "false");
        (void)kill(child, SIGKILL);
        return 0;
}

int main(int argc, char **argv)
{
        uint32_t port = 0, n = 0;
        if (argc < 3 || parse_u32(argv[1], &port) < 0 || port > 65535) {
                fputs("usage: hangar-test-attack PORT MODE [ARG]\n", stderr);
                return 2;
        }
        const char *mode = argv[2];
        if (strcmp(mode, "thief") == 0 && (argc == 6 || argc == 7)) {
                uint32_t secs = 0;
                if (parse_u32(argv[4], &secs) < 0 || secs == 0 || secs > 600 ||
                    (argc == 7 && strcmp(argv[6], "forge") != 0))
                        return 2;
                return thief((uint16_t)port, argv[3], secs, argv[5], argc == 7);
        }
        if (strcmp(mode, "bind") == 0) {
                uint32_t secs = 0;
                if (argc != 5 || parse_u32(argv[3], &n) < 0 || parse_u32(argv[4], &secs) < 0)
                        return 2;
                uint32_t bound = 0;
                for (uint32_t p = 32768; p < 32768 + n; p++) {
                        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
                        struct sockaddr_in sa = {.sin_family = AF_INET,
                                                 .sin_port = htons((uint16_t)p),
                                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
                        if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
                            listen(fd, 1) == 0)
                                bound++;
                }
                printf("bound %u\n", bound);
                fflush(stdout);
                sleep(secs);
                return 0;
        }
        if (strcmp(mode, "flood") == 0) {
                if (argc != 4 || parse_u32(argv[3], &n) < 0 || n > 1000)
                        return 2;
                uint32_t opened = 0;
                for (uint32_t i = 0; i < n; i++)
                        opened += dial((uint16_t)port) >= 0;
                printf("flooded %u\n", opened);
                fflush(stdout);
                sleep(3);
                return 0;
        }
        if (strcmp(mode, "squat") == 0 && (argc == 4 || argc == 5)) {
                uint32_t secs = 0;
                if (parse_u32(argv[3], &secs) < 0 || secs == 0 || secs > 600)
                        return 2;
                return squat((uint16_t)port, secs, argc == 5 ? argv[4] : NULL);
        }
        if (strcmp(mode, "listen") == 0 && argc == 5) {
                uint32_t secs = 0;
                uint16_t bound = 0;
                if (parse_u32(argv[4], &secs) < 0)
                        return 2;
                int l = listen_on(0, &bound);
                if (l < 0)
                        return 1;
                FILE *f = fopen(argv[3], "we");
                if (!f || fprintf(f, "%u\n", bound) < 0 || fclose(f) != 0)
                        return 1;
                struct pollfd p = {.fd = l, .events = POLLIN};
                int c =
                    poll(&p, 1, (int)secs * 1000) > 0 ? accept4(l, NULL, NULL, SOCK_CLOEXEC) : -1;
                uint8_t hdr[FRAME_HEADER_SIZE];
                p = (struct pollfd){.fd = c, .events = POLLIN};
                bool hello = c >= 0 && poll(&p, 1, 3000) > 0 &&
                             recv(c, hdr, sizeof(hdr), MSG_WAITALL) == (ssize_t)sizeof(hdr) &&
                             hdr[1] == FRAME_HELLO;
                puts(hello ? "hello" : "nothing");
                return 0;
        }
        int fd = dial((uint16_t)port);
        if (fd < 0) {
                puts("refused");
                return 0;
        }
        int wait_ms = 4000;
        if (strcmp(mode, "none") == 0) {
                (void)shutdown(fd, SHUT_WR);
        } else if (strcmp(mode, "wrong") == 0) {
                uint8_t t[FRAME_TOKEN_SIZE];
                if (RAND_bytes(t, sizeof(t)) != 1)
                        return 1;
                if (!send_hello(fd, t, FRAME_CHANNEL_IO)) {
                        puts(outcome(fd, 0)); /* no CHALLENGE: closed or held */
                        return 0;
                }
        } else if (strcmp(mode, "token") == 0 && argc == 5) {
                token_t t;
                if (parse_token(argv[3], &t) < 0)
                        return 2;
                if (!send_hello(fd, t.bytes,
                                strcmp(argv[4], "ctl") == 0 ? FRAME_CHANNEL_CTL
                                                            : FRAME_CHANNEL_IO)) {
                        puts(outcome(fd, 0));
                        return 0;
                }
        } else if (strcmp(mode, "garbage") == 0) {
                static const uint8_t junk[] = {7, 1, 0, 0, 0, 0, 0, 33, 'G', 'E', 'T', ' ', '/'};
                (void)!write(fd, junk, sizeof(junk));
        } else if (strcmp(mode, "oversize") == 0) {
                uint8_t hdr[FRAME_HEADER_SIZE] = {FRAME_VERSION, FRAME_HELLO, 0, 0, 0, 0x10, 0, 0};
                (void)!write(fd, hdr, sizeof(hdr));
        } else if ((strcmp(mode, "stall") == 0 || strcmp(mode, "half") == 0) && argc == 4) {
                uint32_t secs = 0;
                if (parse_u32(argv[3], &secs) < 0)
                        return 2;
                if (mode[0] == 'h') {
                        uint8_t hdr[FRAME_HEADER_SIZE];
                        (void)frame_header_encode(FRAME_HELLO, FRAME_HELLO_SIZE, hdr);
                        (void)!write(fd, hdr, sizeof(hdr));
                }
                wait_ms = (int)secs * 1000;
        } else if (strcmp(mode, "lie") == 0 && argc == 4) {
                token_t t;
                int ctl = -1;
                if (parse_token(argv[3], &t) < 0)
                        return 2;
                const char *o = take_both(fd, (uint16_t)port, t.bytes, &ctl);
                if (strcmp(o, "welcome") != 0) {
                        puts(o);
                        return 0;
                }
                uint8_t hdr[FRAME_HEADER_SIZE] = {FRAME_VERSION, FRAME_STDOUT, 0, 0, 0x7f, 0, 0, 0};
                (void)!write(fd, hdr, sizeof(hdr));
                /* The driver must hang up, not wait for 2 GiB (what it sends
                 * before that, such as the STDIN EOF, is read and dropped). */
                for (int i = 0; i < 40; i++) {
                        char b[4096];
                        struct pollfd p = {.fd = fd, .events = POLLIN};
                        if (poll(&p, 1, 100) > 0 && recv(fd, b, sizeof(b), 0) <= 0) {
                                puts("closed");
                                return 0;
                        }
                }
                puts("held");
                return 0;
        } else if (strcmp(mode, "flood-record") == 0 && argc == 4) {
                token_t t;
                int ctl = -1;
                if (parse_token(argv[3], &t) < 0)
                        return 2;
                const char *o = take_both(fd, (uint16_t)port, t.bytes, &ctl);
                if (strcmp(o, "welcome") != 0) {
                        puts(o);
                        return 0;
                }
                uint8_t hdr[FRAME_HEADER_SIZE];
                for (int i = 0; i < 200; i++) {
                        uint8_t sig = 1; /* SIGHUP */
                        (void)frame_header_encode(FRAME_SIGNAL, 1, hdr);
                        (void)!write(ctl, hdr, sizeof(hdr));
                        (void)!write(ctl, &sig, 1);
                }
                for (uint32_t i = 0; i < 40; i++) {
                        frame_run_result_t rr = {.id = 1000 + i,
                                                 .exit = {.end = FRAME_END_EXITED, .value = 0}};
                        uint8_t fixed[FRAME_RUN_RESULT_FIXED];
                        frame_run_result_encode_fixed(&rr, fixed);
                        (void)frame_header_encode(FRAME_RUN_RESULT, sizeof(fixed), hdr);
                        (void)!write(ctl, hdr, sizeof(hdr));
                        (void)!write(ctl, fixed, sizeof(fixed));
                }
                static char line[1200];
                for (int i = 0; i < 300; i++) {
                        int len = snprintf(line, sizeof(line),
                                           "{\"type\":\"approval_request\",\"id\":\"f%d\","
                                           "\"pad\":\"%01000d\"}\n",
                                           i, 0);
                        (void)frame_header_encode(FRAME_STDOUT, (uint32_t)len, hdr);
                        (void)!write(fd, hdr, sizeof(hdr));
                        (void)!write(fd, line, (size_t)len);
                }
                puts("sent");
                fflush(stdout);
                /* Hold, reading (and dropping) what the driver sends. */
                (void)hold_both(fd, ctl, 30000);
                return 0;
        } else if (strcmp(mode, "take") == 0 && argc == 5) {
                token_t t;
                uint32_t secs = 0;
                int ctl = -1;
                if (parse_token(argv[3], &t) < 0 || parse_u32(argv[4], &secs) < 0 || secs > 600)
                        return 2;
                const char *o = take_both(fd, (uint16_t)port, t.bytes, &ctl);
                if (strcmp(o, "welcome") != 0) {
                        puts(o);
                        return 0;
                }
                puts("both");
                fflush(stdout);
                puts(hold_both(fd, ctl, (int64_t)secs * 1000));
                return 0;
        } else {
                fputs("hangar-test-attack: unknown mode\n", stderr);
                return 2;
        }
        puts(outcome(fd, wait_ms));
        return 0;
}
