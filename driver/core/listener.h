/* The relay listener: on the pod's loopback, a port the kernel picks. It
 * accepts exactly two connections whose peer proves it holds the turn's
 * token, io first, then ctl. The proof is mutual and the token never
 * crosses the wire (common/wire/handshake.h): HELLO (the relay's nonce),
 * CHALLENGE (the driver's nonce, its instance and its proof), PROOF (the
 * relay's), WELCOME. Everything else is dropped without touching the turn:
 * a missing or wrong proof, a malformed or oversize frame, a handshake
 * slower than the deadline, a flood (when the pending slots are full, the
 * oldest connection that has not sent a HELLO makes room, or else the
 * oldest; only one connection is accepted per round then, the rest wait in
 * the kernel's backlog). A right proof for a channel already taken, or ctl
 * before io, is a replay: answered with TAKEN (the driver's proof that it
 * refuses this connection because the token was used before), then dropped.
 *
 * Once both channels are taken it stops listening, unless keep_open is set
 * (a turn's listener): then it listens, with the token, until
 * listener_close, so that a relay that comes after a thief took both
 * channels is told so and recorded as a replay instead of finding the port
 * closed. */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "handshake.h"
#include "token.h"

#define LISTENER_PENDING_MAX 16
/* The io channel's input buffer once accepted: the harness's output comes
 * there, and one read of many frames costs far less than a read per frame
 * (under gVisor every syscall is a trip through the sandbox's kernel). */
#define LISTENER_IO_IN_MAX (512u * 1024u)

typedef enum listener_reject {
        LISTENER_REJECT_BAD_TOKEN, /* its PROOF was not made with the turn's token */
        LISTENER_REJECT_MALFORMED, /* not a well-formed HELLO then PROOF */
        LISTENER_REJECT_REPLAYED,  /* right proof, channel already taken or out of order */
        LISTENER_REJECT_SLOW,      /* no whole handshake before the deadline */
        LISTENER_REJECT_CLOSED,    /* the peer left before its PROOF */
        LISTENER_REJECT_FLOOD,     /* evicted to make room for a newer connection */
        LISTENER_REJECT_LATE,      /* still pending when the listener stopped */
        LISTENER_REJECT_COUNT,
} listener_reject_t;

typedef struct listener_pending {
        conn_t c;
        int64_t deadline_ms;
        uint64_t seq; /* accept order: the oldest has the smallest */
        bool used;
        bool challenged;          /* HELLO answered: a PROOF is due */
        handshake_binding_t bind; /* once challenged: what the relay's proof must cover */
} listener_pending_t;

typedef struct listener {
        int fd; /* -1 once it stopped listening */
        /* Set by the caller after listener_open: keep listening (and the
         * token) once both channels are taken, until listener_close. */
        bool keep_open;
        uint16_t port;
        token_t token;
        uint8_t instance[FRAME_INSTANCE_SIZE]; /* the daemon's, bound into every proof */
        uint32_t handshake_ms;
        listener_pending_t pending[LISTENER_PENDING_MAX];
        uint64_t next_seq;        /* seq of the next accepted connection */
        conn_t io, ctl;           /* valid once have_io / have_ctl */
        bool have_io, have_ctl;   /* accepted, not yet handed over (the caller clears them) */
        bool io_taken, ctl_taken; /* accepted once: every right proof for it after is a replay */
        uint64_t rejected[LISTENER_REJECT_COUNT];
} listener_t;

/* Called for every dropped connection, with the reason (for events). */
typedef void (*listener_reject_fn)(void *userdata, listener_reject_t why, const char *detail);
/* Called when a channel is accepted. */
typedef void (*listener_accept_fn)(void *userdata, frame_channel_t channel);

/* Binds 127.0.0.1:0 and listens. Takes a copy of the token; instance is the
 * daemon's id (32 lowercase hex digits), sent in every CHALLENGE and bound
 * into both proofs. handshake_ms bounds a connection's whole handshake. */
int listener_open(listener_t *l, const token_t *token, const char *instance, uint32_t handshake_ms,
                  hg_error_t *err);
/* Stops listening and closes everything it still owns (not io/ctl once
 * handed over: have_io/have_ctl cleared). A pending connection whose right
 * PROOF is already waiting gets TAKEN. Wipes the token. */
void listener_close(listener_t *l);

/* Adds the descriptors it waits on to p (at most LISTENER_PENDING_MAX + 1);
 * returns how many it added. */
size_t listener_pollfds(const listener_t *l, struct pollfd *p);
/* Handles what poll reported for those entries, and deadlines. */
void listener_process(listener_t *l, const struct pollfd *p, size_t n, listener_accept_fn on_accept,
                      listener_reject_fn on_reject, void *userdata);
/* The earliest handshake deadline, or INT64_MAX. */
int64_t listener_next_deadline(const listener_t *l);

const char *listener_reject_name(listener_reject_t why);
