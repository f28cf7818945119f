/* The agent side's handshake with the driver (channel.h). */
#include "channel.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "handshake.h"

/* The driver's CHALLENGE, checked: its proof over our nonce first (nothing
 * the peer says is believed before), then the instance it names. */
static int await_challenge(conn_t *c, const token_t *token, const uint8_t *want_instance,
                           handshake_binding_t *b, int64_t deadline, hg_error_t *err)
{
        frame_t f;
        hg_error_t why = {0};
        int r = conn_next_until(c, &f, deadline, &why);
        if (r < 0)
                return error_set(err, RELAY_CHANNEL_UNPROVEN,
                                 "the listener on the port did not prove it holds the token "
                                 "(%s): nothing sent",
                                 r == -ECONNRESET  ? "it closed the connection"
                                 : r == -ETIMEDOUT ? "no CHALLENGE in time"
                                                   : why.message);
        frame_challenge_t ch;
        if (f.type != FRAME_CHALLENGE || frame_challenge_decode(&f, &ch, &why) < 0)
                return error_set(err, RELAY_CHANNEL_UNPROVEN,
                                 "the listener on the port did not prove it holds the token "
                                 "(%s instead of a CHALLENGE): nothing sent",
                                 f.type == FRAME_CHALLENGE ? "a malformed payload"
                                                           : frame_type_name(f.type));
        memcpy(b->driver_nonce, ch.nonce, FRAME_NONCE_SIZE);
        memcpy(b->instance, ch.instance, FRAME_INSTANCE_SIZE);
        bool ok = handshake_verify(token, HANDSHAKE_DRIVER, b, ch.mac);
        if (!ok)
                return error_set(err, RELAY_CHANNEL_UNPROVEN,
                                 "the listener on the port failed the proof (not made with the "
                                 "turn's token): nothing sent");
        /* Driver and relay also agree on it through the proofs; this says
         * which daemon it is when hangar named another. */
        if (want_instance && memcmp(want_instance, ch.instance, FRAME_INSTANCE_SIZE) != 0) {
                char have[HANDSHAKE_INSTANCE_HEX_LEN + 1];
                handshake_instance_to_hex(ch.instance, have);
                return error_set(err, RELAY_CHANNEL_OTHER_INSTANCE,
                                 "the driver holds the token but is daemon %s, not the one that "
                                 "started the turn: not connecting",
                                 have);
        }
        /* Nothing may follow the CHALLENGE before our PROOF: not in the
         * buffer, nor behind it in the socket (the buffer is capped at one
         * CHALLENGE until WELCOME). */
        uint8_t more;
        if (c->in_len > c->in_used || recv(c->fd, &more, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
                return error_set(err, RELAY_CHANNEL_UNPROVEN,
                                 "the driver sent more than its CHALLENGE: not connecting");
        return 0;
}

/* The driver's answer to our PROOF: WELCOME, or TAKEN with its proof over
 * the same binding under the TAKEN label (checked in constant time: only
 * the token's holder, on this connection, can say the token was taken). */
static int await_welcome(conn_t *c, const token_t *token, const handshake_binding_t *b,
                         int64_t deadline, hg_error_t *err)
{
        frame_t f;
        hg_error_t why = {0};
        int r = conn_next_until(c, &f, deadline, &why);
        if (r == -ECONNRESET)
                return error_set(err, -EPIPE,
                                 "the driver closed the connection: it refused the relay's proof");
        if (r < 0)
                return error_set(err, r, "no WELCOME: %s", why.message);
        if (f.type == FRAME_WELCOME && f.length == 0)
                return 0;
        frame_taken_t taken;
        if (f.type != FRAME_TAKEN)
                return error_set(err, -EPROTO, "expected WELCOME, got %s", frame_type_name(f.type));
        if (frame_taken_decode(&f, &taken, &why) < 0)
                return error_set(err, -EPROTO, "a malformed TAKEN: %s", why.message);
        bool ok = handshake_verify(token, HANDSHAKE_TAKEN, b, taken.mac);
        token_wipe(&taken, sizeof(taken));
        if (!ok)
                return error_set(err, -EPROTO,
                                 "a TAKEN whose proof is wrong (not the driver's for this "
                                 "connection)");
        return error_set(err, RELAY_CHANNEL_TAKEN,
                         "the driver says the token was already used (this channel taken, or "
                         "ctl before io): someone else holds it");
}

static int handshake(conn_t *c, const token_t *token, const uint8_t *want_instance,
                     frame_channel_t channel, int64_t deadline, hg_error_t *err)
{
        handshake_binding_t b = {.channel = channel};
        frame_hello_t hello = {.channel = channel};
        if (handshake_nonce(b.relay_nonce) < 0)
                return error_set(err, -EIO, "no random bytes for the nonce");
        /* Our connection's ends: a proxy's listener would see another
         * relay end (its own connection to the driver has its own port). */
        int r = handshake_endpoints(c->fd, HANDSHAKE_RELAY, &b.ends);
        if (r < 0)
                return error_set(err, r, "no address for the connection: %s", strerror(-r));
        memcpy(hello.nonce, b.relay_nonce, FRAME_NONCE_SIZE);
        uint8_t payload[FRAME_HELLO_SIZE];
        frame_hello_encode(&hello, payload);
        r = conn_queue(c, FRAME_HELLO, payload, sizeof(payload), NULL, 0);
        if (r == 0)
                r = conn_flush_until(c, deadline);
        if (r < 0)
                return error_set(err, RELAY_CHANNEL_UNPROVEN,
                                 "the listener on the port did not take the HELLO (%s): nothing "
                                 "sent",
                                 strerror(-r));
        if ((r = await_challenge(c, token, want_instance, &b, deadline, err)) < 0)
                return r;
        frame_proof_t proof;
        if (handshake_prove(token, HANDSHAKE_RELAY, &b, proof.mac) < 0)
                return error_set(err, -EIO, "cannot make the proof (OpenSSL failed)");
        uint8_t out[FRAME_PROOF_SIZE];
        frame_proof_encode(&proof, out);
        r = conn_queue(c, FRAME_PROOF, out, sizeof(out), NULL, 0);
        token_wipe(&proof, sizeof(proof));
        token_wipe(out, sizeof(out));
        if (r == 0)
                r = conn_flush_until(c, deadline);
        /* The queued copy of the proof leaves memory when the queue drains. */
        token_wipe(c->out, CONN_OUT_MAX);
        if (r < 0)
                return error_set(err, r, "cannot send the proof: %s", strerror(-r));
        return await_welcome(c, token, &b, deadline, err);
}

int relay_open_channel(uint16_t port, const token_t *token, const char *instance,
                       frame_channel_t channel, size_t max_payload, int64_t deadline, conn_t *ret,
                       hg_error_t *err)
{
        const char *name = channel == FRAME_CHANNEL_IO ? "io" : "ctl";
        uint8_t want[FRAME_INSTANCE_SIZE];
        if (instance && handshake_instance_from_hex(instance, strlen(instance), want) < 0)
                return error_set(err, -EINVAL, "%s channel: not an instance id", name);
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return error_set(err, -errno, "socket: %s", strerror(errno));
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return error_set(err, -errno, "%s channel: connect to 127.0.0.1:%u: %s", name, port,
                                 strerror(errno));
        /* Frames are batched by conn_flush: Nagle only delays a burst's tail. */
        int one = 1;
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        conn_t c;
        /* Sized for at least a CHALLENGE: the handshake's frames need it. */
        int r = conn_init(
            &c, TAKE_FD(fd),
            (uint32_t)(max_payload > FRAME_CHALLENGE_SIZE ? max_payload : FRAME_CHALLENGE_SIZE));
        if (r < 0)
                return error_set(err, r, "%s channel: connection: %s", name, strerror(-r));
        /* Until WELCOME the largest frame due is a CHALLENGE: a listener
         * that has not proved anything gets no more of our buffer, and a
         * header announcing more fails at once. */
        c.max_payload = FRAME_CHALLENGE_SIZE;
        if (handshake(&c, token, instance ? want : NULL, channel, deadline, err) < 0) {
                conn_close(&c);
                return error_prefix(err, "%s channel: ", name);
        }
        c.max_payload = (uint32_t)max_payload;
        *ret = c;
        return 0;
}
