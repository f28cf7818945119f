/* libFuzzer target: common/wire/conn's input buffer, differential against
 * frame_parse. The relay's bytes arrive over a socket in pieces of any
 * size; a conn (conn_init, or conn_init_sized with a buffer of several
 * frames, as the driver's io channel has) must hand out exactly the frames
 * frame_parse finds in the whole stream, in order, and refuse where it
 * refuses. Input: byte 0 the max_payload (steps of 16, or the protocol's
 * limit), byte 1 the buffer (0: one frame, conn_init; else that many bytes
 * more than one frame, conn_init_sized), byte 2 a seed for the piece sizes
 * (1-64 bytes each), the rest the stream. Properties, abort() on violation:
 *   - the frames conn_next returns are frame_parse's: type, length, payload;
 *   - every frame returned since a fill is still intact when the fill's
 *     frames are all taken (the driver logs them together);
 *   - conn_next refuses exactly where frame_parse does, with a message;
 *   - once the stream is all sent and the peer closed, what is left in the
 *     buffer is frame_parse's incomplete tail, and eof is set. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn.h"
#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BATCH_MAX 4096

typedef struct seen {
        const uint8_t *payload; /* where conn_next put it */
        const uint8_t *expect;  /* the same frame in the stream */
        uint32_t len;
} seen_t;

typedef struct want {
        const uint8_t *data;
        size_t len, off; /* the stream, and where the next frame starts */
        uint32_t max;
        bool refused; /* frame_parse refused at off */
} want_t;

/* The next frame frame_parse finds at w->off: 1 (and *f), 0 (incomplete),
 * <0 (refused). */
static int want_next(want_t *w, frame_t *f)
{
        size_t used = 0;
        hg_error_t err = {0};
        int r = frame_parse(w->data + w->off, w->len - w->off, w->max, f, &used, &err);
        if (r == 1)
                w->off += used;
        return r;
}

/* Takes every whole frame the conn holds, checked against w; false once
 * the conn refused (as it must have, where w refuses). */
static bool drain(conn_t *c, want_t *w)
{
        static seen_t got[BATCH_MAX];
        size_t n = 0;
        for (;;) {
                frame_t f, e;
                hg_error_t err = {0};
                int r = conn_next(c, &f, &err);
                if (r == 0)
                        break;
                int re = want_next(w, &e);
                if (r < 0) {
                        if (re >= 0 || err.message[0] == '\0')
                                abort();
                        w->refused = true;
                        return false;
                }
                if (re != 1 || f.type != e.type || f.length != e.length ||
                    memcmp(f.payload, e.payload, f.length) != 0)
                        abort();
                if (n < BATCH_MAX)
                        got[n++] = (seen_t){f.payload, e.payload, f.length};
        }
        /* Every frame of this round still as it came. */
        for (size_t i = 0; i < n; i++)
                if (got[i].len && memcmp(got[i].payload, got[i].expect, got[i].len) != 0)
                        abort();
        return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 3)
                return 0;
        uint32_t max = data[0] < 0x80 ? (uint32_t)data[0] * 16u : FRAME_MAX_PAYLOAD;
        size_t extra = data[1];
        uint32_t seed = data[2] | 1u;
        want_t w = {.data = data + 3, .len = size - 3, .max = max};
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return 0;
        conn_t c;
        int r = extra ? conn_init_sized(&c, sv[0], max, FRAME_HEADER_SIZE + (size_t)max + extra)
                      : conn_init(&c, sv[0], max);
        if (r < 0) {
                close(sv[0]);
                close(sv[1]);
                return 0;
        }
        size_t sent = 0;
        bool open = true;
        while (open) {
                if (sent < w.len) {
                        seed = seed * 1103515245u + 12345u;
                        size_t piece = 1 + (seed >> 16) % 64;
                        if (piece > w.len - sent)
                                piece = w.len - sent;
                        ssize_t k = send(sv[1], w.data + sent, piece, MSG_NOSIGNAL | MSG_DONTWAIT);
                        if (k > 0)
                                sent += (size_t)k;
                } else if (sv[1] >= 0) {
                        close(sv[1]);
                        sv[1] = -1;
                }
                /* Fill until the socket is empty (a full buffer fills again
                 * once its frames are taken). */
                do {
                        if (conn_fill(&c) < 0)
                                abort();
                        open = drain(&c, &w);
                } while (open && conn_in_full(&c));
                if (sv[1] < 0 && c.eof)
                        break;
        }
        if (open) {
                /* The peer is gone and every whole frame taken: what is left
                 * is frame_parse's incomplete tail (or a frame the buffer
                 * could never hold: refused by both above). */
                frame_t e;
                if (!c.eof || want_next(&w, &e) != 0 || c.in_len - c.in_used != w.len - w.off)
                        abort();
        }
        if (sv[1] >= 0)
                close(sv[1]);
        conn_close(&c);
        return 0;
}
