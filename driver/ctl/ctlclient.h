/* One client of the daemon's control socket (hangar's `hangar-driver ctl`,
 * through pods/exec): its request read to EOF into a bounded buffer, then
 * one reply, or a stream (a file up to its size at the request, or the
 * turn's log live). The descriptors are non-blocking; each call does what
 * it can without waiting. What a request means is turnops.c's. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "runreq.h"

#define CTLCLIENT_MAX   16     /* clients at once; one more is closed unanswered */
#define CTLCLIENT_CHUNK 16384u /* bytes of a stream per write round */

typedef enum ctlclient_state {
        CTLCLIENT_READING,   /* the request, until the client's EOF */
        CTLCLIENT_REPLYING,  /* the reply, then close */
        CTLCLIENT_WAIT_RUN,  /* for the relay's RUN_RESULT */
        CTLCLIENT_WATCHING,  /* the log, live, until the turn ends */
        CTLCLIENT_STREAMING, /* a file up to its size at the request (events), then close */
} ctlclient_state_t;

typedef struct ctlclient {
        bool used;
        int fd;
        ctlclient_state_t state;
        uint8_t *in;
        size_t in_len, in_cap;
        char *out;
        size_t out_len, out_off;
        uint32_t run_id;        /* CTLCLIENT_WAIT_RUN: the request awaited */
        runreq_kind_t run_kind; /* and what it is for */
        off_t watch_off;        /* the next byte of the stream */
        uint64_t watch_gen;     /* CTLCLIENT_WATCHING: the turn watched (its generation) */
        int stream_fd;          /* CTLCLIENT_STREAMING: the file; CTLCLIENT_WATCHING: the log */
        off_t stream_end;       /* its size when asked */
} ctlclient_t;

/* An unused slot: no descriptors. */
void ctlclient_init(ctlclient_t *c);
/* Closes what c holds, wipes its buffers (a reply may have held the relay
 * token, a request the run key or steer text) and leaves it unused. */
void ctlclient_close(ctlclient_t *c);
/* A free slot of clients[n], or NULL. */
ctlclient_t *ctlclient_free_slot(ctlclient_t *clients, size_t n);
/* What to poll c's descriptor for: 0 leaves it out of the poll. */
short ctlclient_poll_events(const ctlclient_t *c);

/* Reads what the client sent. 1: the request is complete (the client's EOF,
 * or a read error), in c->in[0..in_len); 0: more to come; -EFBIG past
 * CTLSOCK_REQUEST_MAX, -ENOMEM. */
int ctlclient_read(ctlclient_t *c);

/* The reply: j (taken, may be NULL for want of memory: then an
 * out-of-memory error reply) as one compact JSON line; c is replying. */
void ctlclient_reply(ctlclient_t *c, json_t *j);
/* The reply as text already made (taken: malloc'd, len bytes). */
void ctlclient_reply_text(ctlclient_t *c, char *text, size_t len);
/* An error reply: {"ok": false, "error": "..."}. NULL for want of memory. */
json_t *ctlclient_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes what it can of the reply or stream; a watcher then gets the log
 * from where it is. log_done: the watched log will not grow (another turn
 * or none in flight), so a watcher that has all of it is closed. A client
 * whose reply or stream is all out, or whose peer is gone, is closed. */
void ctlclient_write(ctlclient_t *c, bool log_done);
