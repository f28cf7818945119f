/* Unit tests for common/agent/channel: the relay's side of the handshake, over real
 * loopback sockets, against the real driver listener (driver/core/listener.c,
 * pumped in a thread) and against fake listeners that play the agent on a
 * dead daemon's port: they close, stall, send junk or an oversize frame, a
 * CHALLENGE with a random proof, a proof made with another token, for the
 * other channel or another instance, a recorded CHALLENGE played again.
 * Each must fail as RELAY_CHANNEL_UNPROVEN, and the fake must have received
 * one HELLO (a channel and a random nonce) and nothing after it: nothing
 * made with the token reaches a listener that did not prove it holds it.
 * And the driver's TAKEN after the relay's PROOF: believed only with the
 * driver's proof for it (RELAY_CHANNEL_TAKEN), from a fake and from the real
 * listener kept open after a thief took both channels. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "cleanup.h"
#include "handshake.h"
#include "listener.h"
#include "unit.h"

static const char instance_hex[] = "0123456789abcdef0123456789abcdef";
static const char other_hex[] = "fedcba9876543210fedcba9876543210";

typedef enum fake_mode {
        FAKE_RIGHT,            /* the driver's answer, then WELCOME */
        FAKE_RIGHT_NO_WELCOME, /* the driver's answer, then it closes */
        FAKE_CLOSE,            /* closes after the HELLO */
        FAKE_STALL,            /* says nothing */
        FAKE_JUNK,             /* bytes that are no frame */
        FAKE_OVERSIZE,         /* a header announcing 1 MiB */
        FAKE_WELCOME_ONLY,     /* WELCOME without a CHALLENGE (a driver of before) */
        FAKE_RANDOM_PROOF,     /* a CHALLENGE with random bytes as its proof */
        FAKE_OTHER_TOKEN,      /* a CHALLENGE proved with another token */
        FAKE_OTHER_CHANNEL,    /* proved for the other channel */
        FAKE_LIE_INSTANCE,     /* names one instance, proved for another */
        FAKE_OTHER_INSTANCE,   /* names and proves another instance than expected */
        FAKE_RELAY_LABEL,      /* proved with the relay's label */
        FAKE_SHORT,            /* a CHALLENGE one byte short */
        FAKE_TRAILING,         /* the right CHALLENGE with a WELCOME glued behind */
        FAKE_REPLAY,           /* a CHALLENGE recorded from an earlier handshake */
        FAKE_BIG_CHALLENGE,    /* a CHALLENGE header announcing 64 KiB, then nothing */
        FAKE_OTHER_ENDS,       /* proved for another connection's ends (a proxy's) */
        FAKE_TAKEN,            /* the driver's answer, then TAKEN, proved */
        FAKE_TAKEN_FORGED,     /* the driver's answer, then TAKEN with random bytes */
        FAKE_TAKEN_CHALLENGE,  /* then TAKEN carrying a CHALLENGE's proof (the wrong label) */
        FAKE_TAKEN_SHORT,      /* then a TAKEN one byte short */
} fake_mode_t;

/* A token for one test, as the driver makes one for a turn. */
static token_t fresh_token(void)
{
        token_t tok;
        ck_assert_int_eq(token_generate(&tok), 0);
        return tok;
}

typedef struct fake {
        fake_mode_t mode;
        token_t token;
        frame_channel_t channel;
        int lfd;
        uint16_t port;
        uint8_t replay[FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE]; /* FAKE_REPLAY's, and what a
                                                                     RIGHT fake sent */
        uint8_t got[4096];                                        /* everything the relay sent */
        size_t got_len;
        bool proof_ok; /* the relay's PROOF verified */
        pthread_t thread;
} fake_t;

/* Reads what arrives until n bytes are in or the peer closes (5 s at most). */
static void read_some(int fd, fake_t *f, size_t n)
{
        int64_t end = conn_now_ms() + 5000;
        while (f->got_len < n && conn_now_ms() < end) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                if (poll(&p, 1, 100) <= 0)
                        continue;
                ssize_t r = recv(fd, f->got + f->got_len, sizeof(f->got) - f->got_len, 0);
                if (r <= 0)
                        return;
                f->got_len += (size_t)r;
        }
}

static void challenge_bytes(const fake_t *f, fake_mode_t mode,
                            uint8_t out[FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE],
                            handshake_binding_t *b)
{
        frame_challenge_t ch;
        ck_assert_int_eq(handshake_nonce(b->driver_nonce), 0);
        ck_assert_int_eq(handshake_instance_from_hex(instance_hex, 32, b->instance), 0);
        handshake_binding_t proved = *b;
        token_t tok = f->token;
        handshake_side_t side = HANDSHAKE_DRIVER;
        switch (mode) {
        case FAKE_OTHER_TOKEN:
                ck_assert_int_eq(token_generate(&tok), 0);
                break;
        case FAKE_OTHER_CHANNEL:
                proved.channel =
                    b->channel == FRAME_CHANNEL_IO ? FRAME_CHANNEL_CTL : FRAME_CHANNEL_IO;
                break;
        case FAKE_LIE_INSTANCE:
                ck_assert_int_eq(handshake_instance_from_hex(other_hex, 32, proved.instance), 0);
                break;
        case FAKE_OTHER_INSTANCE:
                ck_assert_int_eq(handshake_instance_from_hex(other_hex, 32, b->instance), 0);
                proved = *b;
                break;
        case FAKE_RELAY_LABEL:
                side = HANDSHAKE_RELAY;
                break;
        case FAKE_OTHER_ENDS:
                proved.ends.relay[HANDSHAKE_ENDPOINT_SIZE - 1] ^= 1;
                break;
        default:
                break;
        }
        ck_assert_int_eq(handshake_prove(&tok, side, &proved, ch.mac), 0);
        if (mode == FAKE_RANDOM_PROOF)
                ck_assert_int_eq(handshake_nonce(ch.mac), 0);
        memcpy(ch.nonce, b->driver_nonce, FRAME_NONCE_SIZE);
        memcpy(ch.instance, b->instance, FRAME_INSTANCE_SIZE);
        ck_assert_int_eq(frame_header_encode(FRAME_CHALLENGE, FRAME_CHALLENGE_SIZE, out), 0);
        frame_challenge_encode(&ch, out + FRAME_HEADER_SIZE);
}

/* The driver's refusal of a right PROOF (listener.c's send_taken), or the
 * fake's broken version of it. */
static void send_taken_as(int fd, const fake_t *f, const handshake_binding_t *b)
{
        frame_taken_t t;
        handshake_side_t label =
            f->mode == FAKE_TAKEN_CHALLENGE ? HANDSHAKE_DRIVER : HANDSHAKE_TAKEN;
        ck_assert_int_eq(handshake_prove(&f->token, label, b, t.mac), 0);
        if (f->mode == FAKE_TAKEN_FORGED)
                ck_assert_int_eq(handshake_nonce(t.mac), 0);
        uint32_t len = f->mode == FAKE_TAKEN_SHORT ? FRAME_TAKEN_SIZE - 1 : FRAME_TAKEN_SIZE;
        uint8_t out[FRAME_HEADER_SIZE + FRAME_TAKEN_SIZE];
        ck_assert_int_eq(frame_header_encode(FRAME_TAKEN, len, out), 0);
        frame_taken_encode(&t, out + FRAME_HEADER_SIZE);
        unit_send_all(fd, out, FRAME_HEADER_SIZE + len);
        (void)shutdown(fd, SHUT_WR);
}

static void *fake_main(void *arg)
{
        fake_t *f = arg;
        int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        read_some(fd, f, FRAME_HEADER_SIZE + FRAME_HELLO_SIZE);
        ck_assert_uint_eq(f->got_len, FRAME_HEADER_SIZE + FRAME_HELLO_SIZE);
        frame_t fr;
        size_t used = 0;
        ck_assert_int_eq(frame_parse(f->got, f->got_len, FRAME_MAX_PAYLOAD, &fr, &used, NULL), 1);
        frame_hello_t hello;
        ck_assert_int_eq(frame_hello_decode(&fr, &hello, NULL), 0);
        handshake_binding_t b = {.channel = hello.channel};
        memcpy(b.relay_nonce, hello.nonce, FRAME_NONCE_SIZE);
        ck_assert_int_eq(handshake_endpoints(fd, HANDSHAKE_DRIVER, &b.ends), 0);
        uint8_t out[FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE + FRAME_HEADER_SIZE];
        switch (f->mode) {
        case FAKE_CLOSE:
                break;
        case FAKE_STALL:
                read_some(fd, f, sizeof(f->got)); /* until the relay gives up */
                break;
        case FAKE_JUNK:
                unit_send_all(fd, "GET / HTTP/1.0\r\n\r\n", 18);
                break;
        case FAKE_OVERSIZE:
                ck_assert_int_eq(frame_header_encode(FRAME_CHALLENGE, 0, out), 0);
                out[5] = 0x10;
                unit_send_all(fd, out, FRAME_HEADER_SIZE);
                break;
        case FAKE_BIG_CHALLENGE:
                ck_assert_int_eq(frame_header_encode(FRAME_CHALLENGE, FRAME_MAX_PAYLOAD, out), 0);
                unit_send_all(fd, out, FRAME_HEADER_SIZE);
                read_some(fd, f, sizeof(f->got)); /* until the relay gives up */
                break;
        case FAKE_WELCOME_ONLY:
                ck_assert_int_eq(frame_header_encode(FRAME_WELCOME, 0, out), 0);
                unit_send_all(fd, out, FRAME_HEADER_SIZE);
                break;
        case FAKE_REPLAY:
                unit_send_all(fd, f->replay, sizeof(f->replay));
                break;
        case FAKE_SHORT:
                challenge_bytes(f, f->mode, out, &b);
                out[7]--;
                unit_send_all(fd, out, FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE - 1);
                break;
        case FAKE_TRAILING:
                challenge_bytes(f, FAKE_RIGHT, out, &b);
                ck_assert_int_eq(
                    frame_header_encode(FRAME_WELCOME, 0,
                                        out + FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE),
                    0);
                unit_send_all(fd, out, sizeof(out));
                break;
        default:
                challenge_bytes(f, f->mode, out, &b);
                memcpy(f->replay, out, sizeof(f->replay));
                unit_send_all(fd, out, FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE);
                break;
        }
        if (f->mode == FAKE_CLOSE)
                (void)shutdown(fd, SHUT_WR);
        /* A relay that took the CHALLENGE sends its PROOF; one that did not
         * closes. */
        size_t hello_len = used;
        read_some(fd, f, hello_len + FRAME_HEADER_SIZE + FRAME_PROOF_SIZE);
        if (f->got_len == hello_len + FRAME_HEADER_SIZE + FRAME_PROOF_SIZE) {
                ck_assert_int_eq(frame_parse(f->got + hello_len, f->got_len - hello_len,
                                             FRAME_MAX_PAYLOAD, &fr, &used, NULL),
                                 1);
                frame_proof_t proof;
                ck_assert_int_eq(frame_proof_decode(&fr, &proof, NULL), 0);
                f->proof_ok = handshake_verify(&f->token, HANDSHAKE_RELAY, &b, proof.mac);
                if (f->mode == FAKE_RIGHT_NO_WELCOME) {
                        (void)shutdown(fd, SHUT_WR);
                } else if (f->mode >= FAKE_TAKEN) {
                        send_taken_as(fd, f, &b);
                } else {
                        ck_assert_int_eq(frame_header_encode(FRAME_WELCOME, 0, out), 0);
                        unit_send_all(fd, out, FRAME_HEADER_SIZE);
                }
        }
        /* Whatever else the relay sends, until it closes. */
        read_some(fd, f, sizeof(f->got));
        close(fd);
        return NULL;
}

static void fake_start(fake_t *f, fake_mode_t mode, const token_t *token, frame_channel_t channel)
{
        f->mode = mode;
        f->token = *token;
        f->channel = channel;
        f->got_len = 0;
        f->proof_ok = false;
        f->lfd = unit_loopback_listen(4, &f->port);
        ck_assert_int_eq(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void fake_join(fake_t *f)
{
        ck_assert_int_eq(pthread_join(f->thread, NULL), 0);
        close(f->lfd);
}

/* The fake got one HELLO for the channel, a nonce that is not the token,
 * and nothing after it. */
static void assert_only_hello(const fake_t *f, const token_t *tok)
{
        ck_assert_uint_eq(f->got_len, FRAME_HEADER_SIZE + FRAME_HELLO_SIZE);
        ck_assert_uint_eq(f->got[1], FRAME_HELLO);
        ck_assert_uint_eq(f->got[FRAME_HEADER_SIZE], (unsigned)f->channel);
        ck_assert(memmem(f->got, f->got_len, tok->bytes, FRAME_TOKEN_SIZE) == NULL);
}

/* relay_open_channel against a fake in mode; returns its result. */
static int open_against(fake_t *f, fake_mode_t mode, const token_t *tok, const char *instance,
                        frame_channel_t channel, int64_t ms, hg_error_t *err)
{
        fake_start(f, mode, tok, channel);
        conn_t c = {.fd = -1};
        int r = relay_open_channel(f->port, tok, instance, channel, FRAME_MAX_PAYLOAD,
                                   conn_now_ms() + ms, &c, err);
        if (r == 0)
                conn_close(&c);
        fake_join(f);
        return r;
}

START_TEST(right_driver_accepted)
{
        token_t tok = fresh_token();
        static fake_t f;
        hg_error_t err = {0};
        for (int ch = FRAME_CHANNEL_IO; ch <= FRAME_CHANNEL_CTL; ch++) {
                ck_assert_msg(open_against(&f, FAKE_RIGHT, &tok, instance_hex, (frame_channel_t)ch,
                                           5000, &err) == 0,
                              "%s", err.message);
                ck_assert(f.proof_ok);
                ck_assert(memmem(f.got, f.got_len, tok.bytes, FRAME_TOKEN_SIZE) == NULL);
                /* Without an instance to expect: the one the driver names. */
                ck_assert_int_eq(
                    open_against(&f, FAKE_RIGHT, &tok, NULL, (frame_channel_t)ch, 5000, &err), 0);
                ck_assert(f.proof_ok);
        }
}
END_TEST

/* Every listener that does not prove the token: unproven, sent one HELLO. */
START_TEST(unproven_listeners_refused)
{
        token_t tok = fresh_token();
        static const fake_mode_t modes[] = {
            FAKE_CLOSE,         FAKE_STALL,        FAKE_JUNK,        FAKE_OVERSIZE,
            FAKE_WELCOME_ONLY,  FAKE_RANDOM_PROOF, FAKE_OTHER_TOKEN, FAKE_OTHER_CHANNEL,
            FAKE_LIE_INSTANCE,  FAKE_RELAY_LABEL,  FAKE_SHORT,       FAKE_TRAILING,
            FAKE_BIG_CHALLENGE, FAKE_OTHER_ENDS,
        };
        static fake_t f;
        for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
                for (int ch = FRAME_CHANNEL_IO; ch <= FRAME_CHANNEL_CTL; ch++) {
                        hg_error_t err = {0};
                        int64_t ms = modes[i] == FAKE_STALL || modes[i] == FAKE_SHORT ? 300 : 5000;
                        int r = open_against(&f, modes[i], &tok, instance_hex, (frame_channel_t)ch,
                                             ms, &err);
                        ck_assert_msg(r == RELAY_CHANNEL_UNPROVEN, "mode %zu: %d (%s)", i, r,
                                      err.message);
                        ck_assert_msg(strstr(err.message,
                                             ch == FRAME_CHANNEL_IO ? "io channel" : "ctl channel"),
                                      "%s", err.message);
                        ck_assert_msg(strstr(err.message, "nothing sent") ||
                                          strstr(err.message, "not connecting"),
                                      "%s", err.message);
                        assert_only_hello(&f, &tok);
                }
        }
}
END_TEST

/* Until WELCOME the relay takes no frame larger than a CHALLENGE: a header
 * announcing 64 KiB fails at once, as oversize, without the relay waiting
 * for (and buffering) the payload. Regression test (this was a bug, now
 * fixed): the handshake's frames were read with the caller's limit, and the
 * relay waited for the whole 64 KiB until its deadline. */
START_TEST(oversize_challenge_refused_at_header)
{
        token_t tok = fresh_token();
        static fake_t f;
        hg_error_t err = {0};
        int r =
            open_against(&f, FAKE_BIG_CHALLENGE, &tok, instance_hex, FRAME_CHANNEL_IO, 2000, &err);
        ck_assert_msg(r == RELAY_CHANNEL_UNPROVEN, "%d %s", r, err.message);
        char want[64];
        (void)snprintf(want, sizeof(want), "over the %u limit", (unsigned)FRAME_CHALLENGE_SIZE);
        ck_assert_msg(strstr(err.message, want), "%s", err.message);
        assert_only_hello(&f, &tok);
}
END_TEST

/* A CHALLENGE recorded from a good handshake, played to a new connection
 * (the agent cannot sniff the loopback; this is what it would do with one
 * if it could): the relay's nonce is new, the old proof is wrong. */
START_TEST(replayed_challenge_refused)
{
        token_t tok = fresh_token();
        static fake_t f;
        hg_error_t err = {0};
        ck_assert_int_eq(
            open_against(&f, FAKE_RIGHT, &tok, instance_hex, FRAME_CHANNEL_IO, 5000, &err), 0);
        ck_assert(f.proof_ok);
        /* f.replay holds the CHALLENGE the good handshake used. */
        fake_start(&f, FAKE_REPLAY, &tok, FRAME_CHANNEL_IO);
        conn_t c = {.fd = -1};
        int r = relay_open_channel(f.port, &tok, instance_hex, FRAME_CHANNEL_IO, FRAME_MAX_PAYLOAD,
                                   conn_now_ms() + 5000, &c, &err);
        fake_join(&f);
        ck_assert_msg(r == RELAY_CHANNEL_UNPROVEN, "%d %s", r, err.message);
        assert_only_hello(&f, &tok);
}
END_TEST

START_TEST(other_instance_refused)
{
        token_t tok = fresh_token();
        static fake_t f;
        hg_error_t err = {0};
        int r =
            open_against(&f, FAKE_OTHER_INSTANCE, &tok, instance_hex, FRAME_CHANNEL_IO, 5000, &err);
        ck_assert_msg(r == RELAY_CHANNEL_OTHER_INSTANCE, "%d %s", r, err.message);
        ck_assert_msg(strstr(err.message, other_hex), "%s", err.message);
        assert_only_hello(&f, &tok);
        /* Proved, and hangar named no instance: taken. */
        ck_assert_int_eq(
            open_against(&f, FAKE_OTHER_INSTANCE, &tok, NULL, FRAME_CHANNEL_IO, 5000, &err), 0);
        /* A malformed expectation is the caller's error, before any connection. */
        conn_t c;
        ck_assert_int_eq(relay_open_channel(f.port, &tok, "xyz", FRAME_CHANNEL_IO,
                                            FRAME_MAX_PAYLOAD, conn_now_ms() + 100, &c, &err),
                         -EINVAL);
}
END_TEST

/* The driver proved itself but refused the relay's proof: -EPIPE, said so. */
START_TEST(refused_after_proof)
{
        token_t tok = fresh_token();
        static fake_t f;
        hg_error_t err = {0};
        int r = open_against(&f, FAKE_RIGHT_NO_WELCOME, &tok, instance_hex, FRAME_CHANNEL_CTL, 5000,
                             &err);
        ck_assert_msg(r == -EPIPE, "%d %s", r, err.message);
        ck_assert_msg(strstr(err.message, "refused the relay's proof"), "%s", err.message);
        ck_assert(f.proof_ok);
}
END_TEST

/* The driver proved itself, checked our proof and said TAKEN with its proof
 * under the TAKEN label: RELAY_CHANNEL_TAKEN (the relay's token-taken). A
 * TAKEN whose proof is not that (random, a CHALLENGE's) or that is malformed
 * is not believed: -EPROTO (the relay's failed). */
START_TEST(taken_after_proof)
{
        token_t tok = fresh_token();
        static fake_t f;
        for (int ch = FRAME_CHANNEL_IO; ch <= FRAME_CHANNEL_CTL; ch++) {
                hg_error_t err = {0};
                int r = open_against(&f, FAKE_TAKEN, &tok, instance_hex, (frame_channel_t)ch, 5000,
                                     &err);
                ck_assert_msg(r == RELAY_CHANNEL_TAKEN, "%d %s", r, err.message);
                ck_assert_msg(strstr(err.message, "already used"), "%s", err.message);
                ck_assert_msg(
                    strstr(err.message, ch == FRAME_CHANNEL_IO ? "io channel" : "ctl channel"),
                    "%s", err.message);
                ck_assert(f.proof_ok);
        }
        static const struct {
                fake_mode_t mode;
                const char *why;
        } bad[] = {
            {FAKE_TAKEN_FORGED, "proof is wrong"},
            {FAKE_TAKEN_CHALLENGE, "proof is wrong"},
            {FAKE_TAKEN_SHORT, "malformed TAKEN"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                hg_error_t err = {0};
                int r =
                    open_against(&f, bad[i].mode, &tok, instance_hex, FRAME_CHANNEL_IO, 5000, &err);
                ck_assert_msg(r == -EPROTO, "mode %d: %d %s", bad[i].mode, r, err.message);
                ck_assert_msg(strstr(err.message, bad[i].why), "%s", err.message);
        }
}
END_TEST

/* ---- against the real listener ---- */

typedef struct pumped {
        listener_t l;
        atomic_bool stop;
        atomic_int rejected[LISTENER_REJECT_COUNT];
        pthread_t thread;
} pumped_t;

static void on_reject(void *userdata, listener_reject_t why, const char *detail)
{
        (void)detail;
        pumped_t *p = userdata;
        atomic_fetch_add(&p->rejected[why], 1);
}

static void *pump_main(void *arg)
{
        pumped_t *p = arg;
        while (!atomic_load(&p->stop) && p->l.fd >= 0) {
                struct pollfd fds[LISTENER_PENDING_MAX + 1];
                size_t n = listener_pollfds(&p->l, fds);
                (void)poll(fds, n, 20);
                listener_process(&p->l, fds, n, NULL, on_reject, p);
        }
        return NULL;
}

static void pump_start_kept(pumped_t *p, const token_t *tok, bool keep_open)
{
        hg_error_t err = {0};
        ck_assert_msg(listener_open(&p->l, tok, instance_hex, 5000, &err) == 0, "%s", err.message);
        p->l.keep_open = keep_open;
        atomic_store(&p->stop, false);
        for (int i = 0; i < LISTENER_REJECT_COUNT; i++)
                atomic_store(&p->rejected[i], 0);
        ck_assert_int_eq(pthread_create(&p->thread, NULL, pump_main, p), 0);
}

static void pump_start(pumped_t *p, const token_t *tok)
{
        pump_start_kept(p, tok, false);
}

/* Stops the pump (or, with stop false, waits for it to end by itself: the
 * listener stops listening once ctl is in) and joins it. */
static void pump_join(pumped_t *p, bool stop)
{
        if (stop)
                atomic_store(&p->stop, true);
        ck_assert_int_eq(pthread_join(p->thread, NULL), 0);
}

START_TEST(real_listener_both_channels)
{
        token_t tok = fresh_token();
        static pumped_t p;
        pump_start(&p, &tok);
        hg_error_t err = {0};
        conn_t io = {.fd = -1}, ctl = {.fd = -1};
        int64_t deadline = conn_now_ms() + 5000;
        ck_assert_msg(relay_open_channel(p.l.port, &tok, instance_hex, FRAME_CHANNEL_IO,
                                         FRAME_MAX_PAYLOAD, deadline, &io, &err) == 0,
                      "%s", err.message);
        ck_assert_msg(relay_open_channel(p.l.port, &tok, instance_hex, FRAME_CHANNEL_CTL,
                                         FRAME_MAX_PAYLOAD, deadline, &ctl, &err) == 0,
                      "%s", err.message);
        pump_join(&p, false);
        ck_assert(p.l.have_io && p.l.have_ctl);
        for (int i = 0; i < LISTENER_REJECT_COUNT; i++)
                ck_assert_int_eq(atomic_load(&p.rejected[i]), 0);
        listener_close(&p.l);
        conn_close(&io);
        conn_close(&ctl);
}
END_TEST

/* keep_processes' gap (docs/security-model.md): a thief with the token
 * takes io and ctl first. On a turn's listener (kept open) the real relay
 * that comes next is told TAKEN, on io, and the driver counts a replay;
 * once the listener is closed (the turn over), a relay finds nothing there:
 * connection refused, which stays a plain failure. */
START_TEST(real_listener_thief_first)
{
        token_t tok = fresh_token();
        static pumped_t p;
        pump_start_kept(&p, &tok, true);
        uint16_t port = p.l.port;
        hg_error_t err = {0};
        conn_t tio = {.fd = -1}, tctl = {.fd = -1}, io = {.fd = -1};
        int64_t deadline = conn_now_ms() + 5000;
        ck_assert_msg(relay_open_channel(port, &tok, instance_hex, FRAME_CHANNEL_IO,
                                         FRAME_MAX_PAYLOAD, deadline, &tio, &err) == 0,
                      "%s", err.message);
        ck_assert_msg(relay_open_channel(port, &tok, instance_hex, FRAME_CHANNEL_CTL,
                                         FRAME_MAX_PAYLOAD, deadline, &tctl, &err) == 0,
                      "%s", err.message);
        int r = relay_open_channel(port, &tok, instance_hex, FRAME_CHANNEL_IO, FRAME_MAX_PAYLOAD,
                                   deadline, &io, &err);
        ck_assert_msg(r == RELAY_CHANNEL_TAKEN, "%d %s", r, err.message);
        ck_assert_msg(strstr(err.message, "io channel"), "%s", err.message);
        /* TAKEN is sent before the drop is counted: wait for the count. */
        int64_t end = conn_now_ms() + 5000;
        while (atomic_load(&p.rejected[LISTENER_REJECT_REPLAYED]) < 1 && conn_now_ms() < end)
                usleep(10000);
        pump_join(&p, true);
        ck_assert_int_eq(atomic_load(&p.rejected[LISTENER_REJECT_REPLAYED]), 1);
        ck_assert_int_eq(p.l.rejected[LISTENER_REJECT_LATE], 0);
        listener_close(&p.l);
        r = relay_open_channel(port, &tok, instance_hex, FRAME_CHANNEL_IO, FRAME_MAX_PAYLOAD,
                               conn_now_ms() + 5000, &io, &err);
        ck_assert_msg(r == -ECONNREFUSED, "%d %s", r, err.message);
        ck_assert_msg(strstr(err.message, "Connection refused"), "%s", err.message);
        conn_close(&tio);
        conn_close(&tctl);
}
END_TEST

/* Not kept open (a grade's listener): after both channels the port is
 * closed at once, and a third connection is refused by the kernel. */
START_TEST(real_listener_closes_when_not_kept)
{
        token_t tok = fresh_token();
        static pumped_t p;
        pump_start(&p, &tok);
        uint16_t port = p.l.port;
        hg_error_t err = {0};
        conn_t io = {.fd = -1}, ctl = {.fd = -1}, third = {.fd = -1};
        int64_t deadline = conn_now_ms() + 5000;
        ck_assert_int_eq(relay_open_channel(port, &tok, instance_hex, FRAME_CHANNEL_IO,
                                            FRAME_MAX_PAYLOAD, deadline, &io, &err),
                         0);
        ck_assert_int_eq(relay_open_channel(port, &tok, instance_hex, FRAME_CHANNEL_CTL,
                                            FRAME_MAX_PAYLOAD, deadline, &ctl, &err),
                         0);
        pump_join(&p, false);
        int r = relay_open_channel(port, &tok, instance_hex, FRAME_CHANNEL_IO, FRAME_MAX_PAYLOAD,
                                   deadline, &third, &err);
        ck_assert_msg(r == -ECONNREFUSED, "%d %s", r, err.message);
        listener_close(&p.l);
        conn_close(&io);
        conn_close(&ctl);
}
END_TEST

/* Both directions fail on a wrong token: the relay finds the driver's proof
 * wrong (unproven, no PROOF sent); the driver sees the relay leave. */
START_TEST(real_listener_wrong_token)
{
        token_t tok = fresh_token(), wrong = fresh_token();
        static pumped_t p;
        pump_start(&p, &tok);
        hg_error_t err = {0};
        conn_t io = {.fd = -1};
        int r = relay_open_channel(p.l.port, &wrong, instance_hex, FRAME_CHANNEL_IO,
                                   FRAME_MAX_PAYLOAD, conn_now_ms() + 5000, &io, &err);
        ck_assert_msg(r == RELAY_CHANNEL_UNPROVEN, "%d %s", r, err.message);
        /* Another instance expected: the relay leaves before its PROOF too. */
        r = relay_open_channel(p.l.port, &tok, other_hex, FRAME_CHANNEL_IO, FRAME_MAX_PAYLOAD,
                               conn_now_ms() + 5000, &io, &err);
        ck_assert_msg(r == RELAY_CHANNEL_OTHER_INSTANCE, "%d %s", r, err.message);
        int64_t end = conn_now_ms() + 5000;
        while (atomic_load(&p.rejected[LISTENER_REJECT_CLOSED]) < 2 && conn_now_ms() < end)
                usleep(10000);
        pump_join(&p, true);
        ck_assert_int_eq(atomic_load(&p.rejected[LISTENER_REJECT_CLOSED]), 2);
        ck_assert_int_eq(atomic_load(&p.rejected[LISTENER_REJECT_BAD_TOKEN]), 0);
        ck_assert(!p.l.have_io);
        listener_close(&p.l);
}
END_TEST

/* A live proxy between relay and listener (what an agent that could
 * rewrite relay.port would run): it copies every byte both ways, so each
 * side sees the other's real frames. */
typedef struct proxy {
        int lfd;
        uint16_t port, target;
        pthread_t thread;
} proxy_t;

static void *proxy_main(void *arg)
{
        proxy_t *x = arg;
        int a = accept4(x->lfd, NULL, NULL, SOCK_CLOEXEC);
        ck_assert_int_ge(a, 0);
        int b = unit_loopback_connect(x->target);
        for (bool open = true; open;) {
                struct pollfd p[2] = {{.fd = a, .events = POLLIN}, {.fd = b, .events = POLLIN}};
                if (poll(p, 2, 5000) <= 0)
                        break;
                for (int i = 0; i < 2 && open; i++) {
                        if (!p[i].revents)
                                continue;
                        uint8_t buf[4096];
                        ssize_t n = recv(p[i].fd, buf, sizeof(buf), 0);
                        open = n > 0 && send(p[1 - i].fd, buf, (size_t)n, MSG_NOSIGNAL) == n;
                }
        }
        close(a);
        close(b);
        return NULL;
}

static void proxy_start(proxy_t *x, uint16_t target)
{
        x->target = target;
        x->lfd = unit_loopback_listen(4, &x->port);
        ck_assert_int_eq(pthread_create(&x->thread, NULL, proxy_main, x), 0);
}

/* The proofs are bound to the TCP connection's ends: through a proxy, the
 * driver's proof is for the proxy's connection, so the relay finds it wrong
 * and sends no PROOF; the driver sees the relay leave (closed) and takes no
 * channel. Regression test (this was a bug, now fixed): without the ends in
 * the proofs, the handshake passed through the proxy, which could then
 * rewrite every STDIN and STDOUT frame. */
START_TEST(real_listener_through_proxy)
{
        token_t tok = fresh_token();
        static pumped_t p;
        pump_start(&p, &tok);
        static proxy_t x;
        proxy_start(&x, p.l.port);
        hg_error_t err = {0};
        conn_t io = {.fd = -1};
        int r = relay_open_channel(x.port, &tok, instance_hex, FRAME_CHANNEL_IO, FRAME_MAX_PAYLOAD,
                                   conn_now_ms() + 5000, &io, &err);
        ck_assert_msg(r == RELAY_CHANNEL_UNPROVEN, "%d %s", r, err.message);
        ck_assert_msg(strstr(err.message, "failed the proof"), "%s", err.message);
        ck_assert_int_eq(pthread_join(x.thread, NULL), 0);
        close(x.lfd);
        int64_t end = conn_now_ms() + 5000;
        while (atomic_load(&p.rejected[LISTENER_REJECT_CLOSED]) < 1 && conn_now_ms() < end)
                usleep(10000);
        pump_join(&p, true);
        ck_assert_int_eq(atomic_load(&p.rejected[LISTENER_REJECT_CLOSED]), 1);
        ck_assert(!p.l.have_io);
        listener_close(&p.l);
}
END_TEST

static Suite *channel_suite(void)
{
        Suite *s = suite_create("channel");
        TCase *tc = tcase_create("fake");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, right_driver_accepted);
        tcase_add_test(tc, unproven_listeners_refused);
        tcase_add_test(tc, replayed_challenge_refused);
        tcase_add_test(tc, other_instance_refused);
        tcase_add_test(tc, refused_after_proof);
        tcase_add_test(tc, oversize_challenge_refused_at_header);
        tcase_add_test(tc, taken_after_proof);
        suite_add_tcase(s, tc);
        tc = tcase_create("listener");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, real_listener_both_channels);
        tcase_add_test(tc, real_listener_wrong_token);
        tcase_add_test(tc, real_listener_through_proxy);
        tcase_add_test(tc, real_listener_thief_first);
        tcase_add_test(tc, real_listener_closes_when_not_kept);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(channel_suite());
}
