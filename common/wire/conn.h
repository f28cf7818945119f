/* A framed connection over a non-blocking socket: a bounded input buffer
 * that yields whole frames (frame.h) and a bounded output queue. Used by the
 * driver and the relay event loops; neither ever blocks on a peer.
 *
 * Flow control is the caller's: conn_can_queue says whether another frame of
 * a given size fits, and a loop stops reading its source while it does not
 * (conmon's rule: a bounded buffer per direction). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "frame.h"

#define CONN_OUT_MAX (4u * (FRAME_HEADER_SIZE + FRAME_MAX_PAYLOAD))

typedef struct conn {
        int fd;
        uint32_t max_payload;
        uint8_t *in;
        size_t in_cap;  /* conn_init_sized: the input buffer's size */
        size_t in_len;  /* bytes read into it */
        size_t in_used; /* of those, the frames already returned (dropped on the next fill) */
        uint8_t *out;
        size_t out_len;
        bool eof; /* the peer closed its side */
} conn_t;

/* Takes over fd (made non-blocking); max_payload <= FRAME_MAX_PAYLOAD. The
 * input buffer holds one whole frame: a handshake relies on it (what follows
 * a frame stays in the socket, where a peek finds it). */
int conn_init(conn_t *c, int fd, uint32_t max_payload);
/* The same with an input buffer of in_cap bytes (at least one whole frame):
 * one read takes many frames off a busy connection (conn_next then returns
 * them one by one), so a bulk stream costs fewer syscalls and wake-ups. */
int conn_init_sized(conn_t *c, int fd, uint32_t max_payload, size_t in_cap);
/* Closes the fd and frees the buffers; safe on a zeroed or closed conn. */
void conn_close(conn_t *c);

/* Reads what the socket has (until EAGAIN or the buffer is full). Returns
 * 0, or -errno for a socket error. Sets c->eof on EOF. The frames conn_next
 * returned before are dropped. */
int conn_fill(conn_t *c);
/* The next whole frame in the input buffer: 1 with *ret (its payload valid
 * until the next conn_fill: the frames of one fill can be used together), 0
 * when none is complete, <0 for a malformed or oversize frame (the
 * connection must be closed; err says why). */
int conn_next(conn_t *c, frame_t *ret, hg_error_t *err);

/* Whether a frame with a payload of n bytes fits in the output queue now. */
bool conn_can_queue(const conn_t *c, size_t n);
/* Queues one frame: header + payload (payload2 follows payload, may be
 * NULL). -ENOBUFS when it does not fit (the caller should have asked). */
int conn_queue(conn_t *c, frame_type_t type, const void *payload, size_t n, const void *payload2,
               size_t n2);
/* Writes queued bytes until EAGAIN. 0, or -errno (-EPIPE: the peer is gone). */
int conn_flush(conn_t *c);
/* Whether the input buffer is full: the socket may hold more. */
static inline bool conn_in_full(const conn_t *c)
{
        return c->in_len >= (c->in_cap ? c->in_cap : FRAME_HEADER_SIZE + (size_t)c->max_payload);
}
static inline bool conn_out_pending(const conn_t *c)
{
        return c->out_len > 0;
}

/* Blocking helpers for handshakes, bounded by deadline_ms (CLOCK_MONOTONIC
 * milliseconds, see conn_now_ms): write everything queued, or wait for one
 * whole frame. -ETIMEDOUT past the deadline; -ECONNRESET on EOF. */
int conn_flush_until(conn_t *c, int64_t deadline_ms);
int conn_next_until(conn_t *c, frame_t *ret, int64_t deadline_ms, hg_error_t *err);

int64_t conn_now_ms(void);
