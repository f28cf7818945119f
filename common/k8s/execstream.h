/* The exec stream's channels: what the Kubernetes remote-command subprotocols
 * v5.channel.k8s.io and v4.channel.k8s.io put inside each binary WebSocket
 * message (docs/research/exec-websocket.md, section 1.2). A pure module: no
 * I/O, so the fuzz target and the unit tests drive exactly what the client
 * runs.
 *
 * Every message starts with one channel byte: 0 stdin (client to server),
 * 1 stdout, 2 stderr, 3 the command's status as a metav1.Status JSON (server
 * to client), 4 a terminal resize (client to server), and, in v5 only, 255
 * CLOSE: exactly [255, ch], which half-closes channel ch (stdin's EOF). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "strbuf.h"

typedef enum exs_proto {
        EXS_PROTO_NONE, /* first: a zeroed stream speaks no protocol and demuxes nothing */
        EXS_PROTO_V4,
        EXS_PROTO_V5,
} exs_proto_t;

enum {
        EXS_CH_STDIN = 0,
        EXS_CH_STDOUT = 1,
        EXS_CH_STDERR = 2,
        EXS_CH_STATUS = 3,
        EXS_CH_RESIZE = 4,
        EXS_CH_CLOSE = 255,
};

/* The status is one small JSON object; a server sending more is refused. */
#define EXS_MAX_STATUS_BYTES (64 * 1024)

/* The subprotocol's name as in Sec-WebSocket-Protocol, and back: only the
 * two we offer (never base64 or v1-v3). Unknown names are -EPROTONOSUPPORT. */
const char *exs_proto_name(exs_proto_t p);
int exs_proto_parse(const char *name, size_t len, exs_proto_t *ret);

/* The CLOSE message for channel ch: [255, ch]. v4 has no CLOSE:
 * -EPROTONOSUPPORT (the server would drop it, or with it the session). */
int exs_encode_close(exs_proto_t p, uint8_t ch, uint8_t ret_msg[2]);
/* A resize message: channel 4 and one JSON object {"Width":W,"Height":H}
 * (the server decodes channel 4 as a stream of JSON values, so exactly one
 * object per message). out must hold EXS_RESIZE_MAX bytes. */
#define EXS_RESIZE_MAX 48
size_t exs_encode_resize(uint16_t width, uint16_t height, uint8_t out[EXS_RESIZE_MAX]);

/* The demultiplexer of what the server sends. */
typedef struct exs_demux {
        exs_proto_t proto;
        strbuf_t status;   /* channel 3's message */
        bool status_done;  /* the status message came */
        uint64_t bytes[3]; /* stdin (always 0), stdout, stderr payload bytes seen */
        uint64_t messages; /* messages demuxed */
} exs_demux_t;

void exs_demux_init(exs_demux_t *d, exs_proto_t p);
void exs_demux_free(exs_demux_t *d);

/* One binary message from the server. On success *ret_channel is
 * EXS_CH_STDOUT or EXS_CH_STDERR with *ret_data and *ret_len the bytes to pass
 * on (may be empty: the "ready" message right after the upgrade is a
 * channel byte alone), or EXS_CH_STATUS when the bytes went into the status
 * (nothing to pass on). The status is one message (the server writes it
 * with one write, after stdout and stderr); an empty one is the "ready"
 * signal of a session without stdout and stderr. Refused (-EPROTO, err says
 * why): an empty message (no channel byte), a channel the server never
 * sends (stdin, resize, close, any other), a status over
 * EXS_MAX_STATUS_BYTES, a second status. */
int exs_demux_message(exs_demux_t *d, const uint8_t *msg, size_t len, int *ret_channel,
                      const uint8_t **ret_data, size_t *ret_len, hg_error_t *err);

/* How the command ended, from the status JSON (v4 and v5):
 *   {"status":"Success"}                                   exit 0
 *   {"status":"Failure","reason":"NonZeroExitCode",
 *    "details":{"causes":[{"reason":"ExitCode","message":"N"}]}}  exit N
 * Returns 0 with *ret_exit set; anything else is -EPROTO (a status that is
 * not JSON, not an object, without a known "status", an exit code missing,
 * not a number or over 255) or -ECANCELED: the server's Failure that is not
 * an exit code (the command could not start: its message in err). */
int exs_status_exit(const char *json, size_t len, int *ret_exit, hg_error_t *err);
