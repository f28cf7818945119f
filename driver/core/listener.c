#include "listener.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"

const char *listener_reject_name(listener_reject_t why)
{
        switch (why) {
        case LISTENER_REJECT_BAD_TOKEN:
                return "bad-token";
        case LISTENER_REJECT_MALFORMED:
                return "malformed";
        case LISTENER_REJECT_REPLAYED:
                return "replayed";
        case LISTENER_REJECT_SLOW:
                return "slow-handshake";
        case LISTENER_REJECT_CLOSED:
                return "closed";
        case LISTENER_REJECT_FLOOD:
                return "flood";
        case LISTENER_REJECT_LATE:
                return "late";
        case LISTENER_REJECT_COUNT:
        default:
                return "?";
        }
}

int listener_open(listener_t *l, const token_t *token, const char *instance, uint32_t handshake_ms,
                  hg_error_t *err)
{
        uint8_t id[FRAME_INSTANCE_SIZE];
        if (handshake_instance_from_hex(instance, instance ? strlen(instance) : 0, id) < 0)
                return error_set(err, -EINVAL, "listener: not an instance id");
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return error_set(err, -errno, "socket: %s", strerror(errno));
        /* Port 0: the kernel picks, so an agent that binds likely ports first
         * gains nothing; the port reaches the relay through hangar-home. */
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t sl = sizeof(sa);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &sl) < 0)
                return error_set(err, -errno, "listen on 127.0.0.1: %s", strerror(errno));
        listener_t n = {.fd = TAKE_FD(fd),
                        .port = ntohs(sa.sin_port),
                        .token = *token,
                        .handshake_ms = handshake_ms,
                        .io = {.fd = -1},
                        .ctl = {.fd = -1}};
        memcpy(n.instance, id, sizeof(id));
        *l = n;
        token_wipe(&n.token, sizeof(n.token));
        return 0;
}

/* Frees a pending slot; its binding (nonces, instance) goes with it. */
static void forget(listener_pending_t *p)
{
        conn_close(&p->c);
        token_wipe(&p->bind, sizeof(p->bind));
        p->used = p->challenged = false;
}

static void drop(listener_t *l, listener_pending_t *p, listener_reject_t why, const char *detail,
                 listener_reject_fn on_reject, void *userdata)
{
        forget(p);
        l->rejected[why]++;
        if (on_reject)
                on_reject(userdata, why, detail);
}

/* Why a right proof for channel is refused, or NULL when it is the one due:
 * io first, then ctl, each once; the same token again is a replay. */
static const char *out_of_order(const listener_t *l, frame_channel_t channel)
{
        if (channel == FRAME_CHANNEL_IO)
                return l->io_taken ? "io already taken" : NULL;
        if (!l->io_taken)
                return "ctl before io";
        return l->ctl_taken ? "ctl already taken" : NULL;
}

/* Tells a connection whose right PROOF is refused (a replay) why, with the
 * driver's proof over its binding under the TAKEN label: the relay then
 * knows, from the token's holder on this very connection, that its token
 * was used before, and says so instead of "failed". Sent as it is, like the
 * CHALLENGE: 40 bytes fit a fresh connection's send buffer, and one that
 * cannot take them is not a relay waiting for them. */
static void send_taken(const listener_t *l, const listener_pending_t *p)
{
        frame_taken_t t;
        uint8_t out[FRAME_HEADER_SIZE + FRAME_TAKEN_SIZE];
        if (handshake_prove(&l->token, HANDSHAKE_TAKEN, &p->bind, t.mac) < 0)
                return; /* then only the close: the relay says "failed" */
        (void)frame_header_encode(FRAME_TAKEN, FRAME_TAKEN_SIZE, out);
        frame_taken_encode(&t, out + FRAME_HEADER_SIZE);
        ssize_t n;
        do
                n = send(p->c.fd, out, sizeof(out), MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        token_wipe(&t, sizeof(t));
}

/* Whether a challenged connection has a PROOF waiting that is right for
 * it: the token's holder was still handshaking when the listener stopped
 * (both channels taken by someone else holding the token too, or the turn
 * over). Read before the token is wiped, so that a relay that lost the race
 * is told and recorded as a replay. */
static bool right_proof_waiting(listener_t *l, listener_pending_t *p)
{
        frame_t f;
        frame_proof_t proof;
        if (!p->challenged || conn_fill(&p->c) < 0 || conn_next(&p->c, &f, NULL) != 1 ||
            f.type != FRAME_PROOF || frame_proof_decode(&f, &proof, NULL) < 0)
                return false;
        bool ok = handshake_verify(&l->token, HANDSHAKE_RELAY, &p->bind, proof.mac);
        token_wipe(&proof, sizeof(proof));
        return ok;
}

static void stop_listening(listener_t *l, listener_reject_fn on_reject, void *userdata)
{
        if (l->fd >= 0)
                (void)close(l->fd);
        l->fd = -1;
        for (size_t i = 0; i < LISTENER_PENDING_MAX; i++) {
                listener_pending_t *p = &l->pending[i];
                if (!p->used)
                        continue;
                /* Right, and for a channel taken already: a replay. Right
                 * and due (the turn ended before the relay got in): late. */
                const char *replay =
                    right_proof_waiting(l, p) ? out_of_order(l, p->bind.channel) : NULL;
                if (replay) {
                        send_taken(l, p);
                        drop(l, p, LISTENER_REJECT_REPLAYED, replay, on_reject, userdata);
                } else {
                        drop(l, p, LISTENER_REJECT_LATE, "the listener stopped", on_reject,
                             userdata);
                }
        }
        token_wipe(&l->token, sizeof(l->token));
}

void listener_close(listener_t *l)
{
        stop_listening(l, NULL, NULL);
        if (l->have_io)
                conn_close(&l->io);
        if (l->have_ctl)
                conn_close(&l->ctl);
        l->have_io = l->have_ctl = false;
}

size_t listener_pollfds(const listener_t *l, struct pollfd *p)
{
        size_t n = 0;
        if (l->fd < 0)
                return 0;
        p[n++] = (struct pollfd){.fd = l->fd, .events = POLLIN};
        for (size_t i = 0; i < LISTENER_PENDING_MAX; i++)
                if (l->pending[i].used)
                        p[n++] = (struct pollfd){.fd = l->pending[i].c.fd, .events = POLLIN};
        return n;
}

int64_t listener_next_deadline(const listener_t *l)
{
        int64_t d = INT64_MAX;
        for (size_t i = 0; l->fd >= 0 && i < LISTENER_PENDING_MAX; i++)
                if (l->pending[i].used && l->pending[i].deadline_ms < d)
                        d = l->pending[i].deadline_ms;
        return d;
}

static void handshake(listener_t *l, listener_pending_t *p, listener_accept_fn on_accept,
                      listener_reject_fn on_reject, void *userdata);

/* The slot to evict when all are taken: the oldest that has not sent a
 * HELLO, or, when every one is mid-handshake, the oldest. By accept order,
 * not deadline: deadlines tie within a millisecond, and a tie would evict
 * the newest connection instead. */
static listener_pending_t *eviction_victim(listener_t *l)
{
        listener_pending_t *silent = NULL, *oldest = NULL;
        for (size_t i = 0; i < LISTENER_PENDING_MAX; i++) {
                listener_pending_t *p = &l->pending[i];
                if (!oldest || p->seq < oldest->seq)
                        oldest = p;
                if (!p->challenged && (!silent || p->seq < silent->seq))
                        silent = p;
        }
        return silent ? silent : oldest;
}

/* Accepts as many connections as there are free slots, and one (evicting)
 * when there are none; the rest wait in the kernel's backlog until the next
 * round. Draining the whole backlog at once let a flood that arrived after
 * the relay's connection evict it before its HELLO was read. */
static void accept_new(listener_t *l, listener_accept_fn on_accept, listener_reject_fn on_reject,
                       void *userdata)
{
        size_t free_slots = 0;
        for (size_t i = 0; i < LISTENER_PENDING_MAX; i++)
                free_slots += !l->pending[i].used;
        size_t budget = free_slots ? free_slots : 1;
        while (budget-- > 0 && l->fd >= 0) {
                int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
                if (fd < 0)
                        return; /* EAGAIN, or a connection that died in the queue */
                listener_pending_t *slot = NULL;
                for (size_t i = 0; i < LISTENER_PENDING_MAX && !slot; i++)
                        if (!l->pending[i].used)
                                slot = &l->pending[i];
                if (!slot) {
                        slot = eviction_victim(l);
                        drop(l, slot, LISTENER_REJECT_FLOOD, "too many pending connections",
                             on_reject, userdata);
                }
                /* A HELLO is all a pending connection may send: its buffer is
                 * sized for that, so an oversize frame fails at its header. */
                if (conn_init(&slot->c, fd, FRAME_HELLO_SIZE) < 0) {
                        (void)close(fd);
                        continue;
                }
                /* Frames are batched by conn_flush: Nagle would only hold
                 * back the tail of a burst (a 44 ms delayed-ACK stall). */
                int one = 1;
                (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                slot->used = true;
                slot->challenged = false;
                slot->seq = l->next_seq++;
                slot->deadline_ms = conn_now_ms() + l->handshake_ms;
                /* A relay sends its HELLO right after connecting: it is
                 * usually here already, and answering it now makes this
                 * connection one a flood evicts last. */
                handshake(l, slot, on_accept, on_reject, userdata);
        }
}

/* A HELLO: the relay's nonce and channel. Answered with a CHALLENGE that
 * carries the driver's nonce, its instance and its proof, before the peer
 * has shown anything: a fake relay learns a proof good for this
 * connection's nonces only, which no relay accepts on another. */
static void challenge(listener_t *l, listener_pending_t *p, const frame_t *f,
                      listener_reject_fn on_reject, void *userdata)
{
        hg_error_t err = {0};
        frame_hello_t hello;
        if (f->type != FRAME_HELLO)
                return drop(l, p, LISTENER_REJECT_MALFORMED, "first frame is not HELLO", on_reject,
                            userdata);
        if (frame_hello_decode(f, &hello, &err) < 0)
                return drop(l, p, LISTENER_REJECT_MALFORMED, err.message, on_reject, userdata);
        /* The relay says nothing more before our CHALLENGE. The buffer
         * holds one HELLO, so what follows it is still in the socket: a
         * peek finds it (a PROOF sent before it could know our nonce, or
         * any other frame). */
        uint8_t more;
        if (p->c.in_len > p->c.in_used || recv(p->c.fd, &more, 1, MSG_PEEK | MSG_DONTWAIT) > 0)
                return drop(l, p, LISTENER_REJECT_MALFORMED, "bytes after HELLO before CHALLENGE",
                            on_reject, userdata);
        handshake_binding_t b = {.channel = hello.channel};
        /* The connection's ends as this socket sees them: a proxy's
         * connection to us has other ends than its relay's to it. */
        if (handshake_endpoints(p->c.fd, HANDSHAKE_DRIVER, &b.ends) < 0)
                return drop(l, p, LISTENER_REJECT_CLOSED, "no address for the connection",
                            on_reject, userdata);
        memcpy(b.relay_nonce, hello.nonce, FRAME_NONCE_SIZE);
        memcpy(b.instance, l->instance, FRAME_INSTANCE_SIZE);
        frame_challenge_t ch;
        int r = handshake_nonce(b.driver_nonce);
        if (r == 0)
                r = handshake_prove(&l->token, HANDSHAKE_DRIVER, &b, ch.mac);
        if (r < 0)
                return drop(l, p, LISTENER_REJECT_CLOSED, "no proof (OpenSSL failed)", on_reject,
                            userdata);
        memcpy(ch.nonce, b.driver_nonce, FRAME_NONCE_SIZE);
        memcpy(ch.instance, b.instance, FRAME_INSTANCE_SIZE);
        /* Sent as it is, not through the connection's queue (sized for what
         * a pending connection may receive). 88 bytes on a fresh connection
         * fit its send buffer; a peer whose buffer is full is not a relay
         * waiting for them. */
        uint8_t out[FRAME_HEADER_SIZE + FRAME_CHALLENGE_SIZE];
        (void)frame_header_encode(FRAME_CHALLENGE, FRAME_CHALLENGE_SIZE, out);
        frame_challenge_encode(&ch, out + FRAME_HEADER_SIZE);
        ssize_t n;
        do
                n = send(p->c.fd, out, sizeof(out), MSG_NOSIGNAL | MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(out))
                return drop(l, p, LISTENER_REJECT_CLOSED, "cannot send the CHALLENGE", on_reject,
                            userdata);
        p->bind = b;
        p->challenged = true;
        /* From now on a PROOF is all it may send: the buffer holds exactly
         * one, so whatever follows it stays in the socket for the accepted
         * connection. */
        p->c.max_payload = FRAME_PROOF_SIZE;
}

/* A PROOF: the relay's HMAC over the same binding. Checked in constant
 * time; only then the channel's order (a right proof out of order is the
 * token used twice: replayed, and told so with TAKEN). */
static void check_proof(listener_t *l, listener_pending_t *p, const frame_t *f,
                        listener_accept_fn on_accept, listener_reject_fn on_reject, void *userdata)
{
        hg_error_t err = {0};
        frame_proof_t proof;
        if (f->type != FRAME_PROOF)
                return drop(l, p, LISTENER_REJECT_MALFORMED, "second frame is not PROOF", on_reject,
                            userdata);
        if (frame_proof_decode(f, &proof, &err) < 0)
                return drop(l, p, LISTENER_REJECT_MALFORMED, err.message, on_reject, userdata);
        bool ok = handshake_verify(&l->token, HANDSHAKE_RELAY, &p->bind, proof.mac);
        token_wipe(&proof, sizeof(proof));
        frame_channel_t channel = p->bind.channel;
        if (!ok)
                return drop(l, p, LISTENER_REJECT_BAD_TOKEN, "wrong proof", on_reject, userdata);
        const char *replay = out_of_order(l, channel);
        if (replay) {
                send_taken(l, p);
                return drop(l, p, LISTENER_REJECT_REPLAYED, replay, on_reject, userdata);
        }
        /* Hand over: the accepted connection gets full-size frames. */
        int fd = TAKE_FD(p->c.fd);
        forget(p);
        conn_t *c = channel == FRAME_CHANNEL_IO ? &l->io : &l->ctl;
        size_t in_cap = channel == FRAME_CHANNEL_IO ? LISTENER_IO_IN_MAX
                                                    : FRAME_HEADER_SIZE + FRAME_MAX_PAYLOAD;
        if (conn_init_sized(c, fd, FRAME_MAX_PAYLOAD, in_cap) < 0 ||
            conn_queue(c, FRAME_WELCOME, NULL, 0, NULL, 0) < 0) {
                (void)close(fd);
                l->rejected[LISTENER_REJECT_CLOSED]++;
                if (on_reject)
                        on_reject(userdata, LISTENER_REJECT_CLOSED, "out of memory");
                return;
        }
        (void)conn_flush(c);
        if (channel == FRAME_CHANNEL_IO)
                l->have_io = l->io_taken = true;
        else
                l->have_ctl = l->ctl_taken = true;
        if (on_accept)
                on_accept(userdata, channel);
        /* A turn's listener stays: whoever comes with the token now is told
         * it was taken, and recorded, instead of finding the port closed. */
        if (l->ctl_taken && !l->keep_open)
                stop_listening(l, on_reject, userdata);
}

static void handshake(listener_t *l, listener_pending_t *p, listener_accept_fn on_accept,
                      listener_reject_fn on_reject, void *userdata)
{
        hg_error_t err = {0};
        if (conn_fill(&p->c) < 0)
                return drop(l, p, LISTENER_REJECT_CLOSED, "read error", on_reject, userdata);
        frame_t f;
        int r = conn_next(&p->c, &f, &err);
        if (r < 0)
                return drop(l, p, LISTENER_REJECT_MALFORMED, err.message, on_reject, userdata);
        if (r == 0) {
                if (p->c.eof)
                        drop(l, p, LISTENER_REJECT_CLOSED,
                             p->challenged ? "closed before PROOF" : "closed before HELLO",
                             on_reject, userdata);
                return;
        }
        if (!p->challenged)
                return challenge(l, p, &f, on_reject, userdata);
        check_proof(l, p, &f, on_accept, on_reject, userdata);
}

void listener_process(listener_t *l, const struct pollfd *p, size_t n, listener_accept_fn on_accept,
                      listener_reject_fn on_reject, void *userdata)
{
        if (l->fd < 0)
                return;
        for (size_t k = 1; k < n && l->fd >= 0; k++) {
                if (!p[k].revents)
                        continue;
                for (size_t i = 0; i < LISTENER_PENDING_MAX; i++)
                        if (l->pending[i].used && l->pending[i].c.fd == p[k].fd) {
                                handshake(l, &l->pending[i], on_accept, on_reject, userdata);
                                break;
                        }
        }
        int64_t now = conn_now_ms();
        for (size_t i = 0; l->fd >= 0 && i < LISTENER_PENDING_MAX; i++)
                if (l->pending[i].used && now >= l->pending[i].deadline_ms)
                        drop(l, &l->pending[i], LISTENER_REJECT_SLOW, "no whole handshake in time",
                             on_reject, userdata);
        if (l->fd >= 0 && n > 0 && p[0].revents)
                accept_new(l, on_accept, on_reject, userdata);
}
