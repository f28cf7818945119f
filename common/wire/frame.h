/* The relay wire protocol's frames (docs/protocol.md is the reference).
 *
 * Every frame is an 8-byte header followed by its payload:
 *
 *   byte 0     version   FRAME_VERSION (2); any other value is an error
 *   byte 1     type      one of frame_type_t; anything else is an error
 *   bytes 2-3  reserved  zero; anything else is an error
 *   bytes 4-7  length    payload length, unsigned 32-bit big-endian,
 *                        at most FRAME_MAX_PAYLOAD (checked before reading)
 *
 * Payloads are fixed binary layouts, big-endian, never raw structs. This
 * module only encodes and decodes bytes: which frame may arrive on which
 * connection, and when, is the driver's and the relay's state machine. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* 2: the mutual proof on connect (HELLO, CHALLENGE, PROOF, WELCOME); a
 * version 1 relay sent its token in HELLO and fails at byte 0 here. TAKEN
 * came later within version 2: it is only ever sent where a peer without it
 * saw the connection close, and such a peer closes on its unknown type
 * instead (docs/protocol.md, "Versioning"). */
#define FRAME_VERSION       2
#define FRAME_HEADER_SIZE   8
#define FRAME_MAX_PAYLOAD   65536u
#define FRAME_TOKEN_SIZE    32u  /* raw bytes of the relay token (never on the wire) */
#define FRAME_NONCE_SIZE    32u  /* a handshake nonce, fresh from the CSPRNG */
#define FRAME_MAC_SIZE      32u  /* a handshake proof: HMAC-SHA256 */
#define FRAME_INSTANCE_SIZE 16u  /* the driver daemon's instance id, raw */
#define FRAME_RUN_MAX_ARGS  256u /* argv entries in one run request */

typedef enum frame_type {
        FRAME_HELLO = 0x01,      /* relay -> driver, first frame on each connection */
        FRAME_WELCOME = 0x02,    /* driver -> relay, the connection is accepted */
        FRAME_CHALLENGE = 0x03,  /* driver -> relay, answers HELLO: its nonce and proof */
        FRAME_PROOF = 0x04,      /* relay -> driver, answers CHALLENGE: its proof */
        FRAME_TAKEN = 0x05,      /* driver -> relay, answers a right PROOF: the token was taken */
        FRAME_STDIN = 0x10,      /* driver -> relay (io): harness stdin; empty = EOF */
        FRAME_STDOUT = 0x11,     /* relay -> driver (io): harness stdout; empty = EOF */
        FRAME_STDERR = 0x12,     /* relay -> driver (ctl): harness stderr; empty = EOF */
        FRAME_EXIT = 0x13,       /* relay -> driver (ctl): how the harness ended */
        FRAME_SIGNAL = 0x14,     /* either way (ctl): a signal for / seen by the harness */
        FRAME_RESIZE = 0x15,     /* driver -> relay (ctl): the terminal's new size */
        FRAME_ASK = 0x16,        /* relay -> driver (ctl): the harness's approval channel */
        FRAME_ANSWER = 0x17,     /* driver -> relay (ctl): bytes for that channel */
        FRAME_RUN = 0x20,        /* driver -> relay (ctl): run a command as the agent */
        FRAME_RUN_RESULT = 0x21, /* relay -> driver (ctl): how that command ended */
} frame_type_t;

/* Which connection a HELLO opens. */
typedef enum frame_channel {
        FRAME_CHANNEL_IO = 1,
        FRAME_CHANNEL_CTL = 2,
} frame_channel_t;

/* How a process ended, in EXIT and RUN_RESULT. */
typedef enum frame_end {
        FRAME_END_EXITED = 0,      /* value: exit status 0-255 */
        FRAME_END_SIGNALED = 1,    /* value: signal number */
        FRAME_END_TIMEOUT = 2,     /* killed past its timeout; value 124 */
        FRAME_END_NOT_STARTED = 3, /* could not be started; value 127 */
} frame_end_t;

/* A decoded header plus a view of its payload inside the caller's buffer. */
typedef struct frame {
        frame_type_t type;
        const uint8_t *payload; /* not NUL-terminated; valid while the buffer is */
        uint32_t length;
} frame_t;

/* Returns the name of a frame type ("HELLO", ...) or NULL for a value outside
 * the closed set. */
const char *frame_type_name(int type);
/* "exited", "signaled", "timeout", "not-started" ("?" for a value no decoder accepts). */
const char *frame_end_name(frame_end_t end);

/* Looks for one complete frame at the start of buf[0..len).
 * Returns 1 and fills *ret_frame and *ret_used (header + payload bytes) when
 * a whole frame is there; 0 when more bytes are needed (nothing written);
 * -EPROTO for a bad version, type or reserved field, and -EMSGSIZE for a
 * length over max_payload (<= FRAME_MAX_PAYLOAD) -- both as soon as the
 * header is complete, before any payload is awaited. err says why. */
int frame_parse(const uint8_t *buf, size_t len, uint32_t max_payload, frame_t *ret_frame,
                size_t *ret_used, hg_error_t *err);

/* Writes a header for type and length into out (FRAME_HEADER_SIZE bytes).
 * -EMSGSIZE when length exceeds FRAME_MAX_PAYLOAD, -EINVAL for a type outside
 * the set. */
int frame_header_encode(frame_type_t type, uint32_t length, uint8_t out[FRAME_HEADER_SIZE]);

/* The handshake's payloads (docs/protocol.md; the proofs are handshake.h's).
 * HELLO: channel (1 byte) and the relay's nonce; exactly 33 bytes. */
typedef struct frame_hello {
        frame_channel_t channel;
        uint8_t nonce[FRAME_NONCE_SIZE];
} frame_hello_t;
#define FRAME_HELLO_SIZE (1u + FRAME_NONCE_SIZE)
int frame_hello_decode(const frame_t *f, frame_hello_t *ret, hg_error_t *err);
void frame_hello_encode(const frame_hello_t *h, uint8_t out[FRAME_HELLO_SIZE]);

/* CHALLENGE: the driver's nonce, its instance id and its proof; exactly 80
 * bytes. Any bytes are a valid layout: the proof is what is checked. */
typedef struct frame_challenge {
        uint8_t nonce[FRAME_NONCE_SIZE];
        uint8_t instance[FRAME_INSTANCE_SIZE];
        uint8_t mac[FRAME_MAC_SIZE];
} frame_challenge_t;
#define FRAME_CHALLENGE_SIZE (FRAME_NONCE_SIZE + FRAME_INSTANCE_SIZE + FRAME_MAC_SIZE)
int frame_challenge_decode(const frame_t *f, frame_challenge_t *ret, hg_error_t *err);
void frame_challenge_encode(const frame_challenge_t *c, uint8_t out[FRAME_CHALLENGE_SIZE]);

/* PROOF: the relay's proof; exactly 32 bytes. */
typedef struct frame_proof {
        uint8_t mac[FRAME_MAC_SIZE];
} frame_proof_t;
#define FRAME_PROOF_SIZE FRAME_MAC_SIZE
int frame_proof_decode(const frame_t *f, frame_proof_t *ret, hg_error_t *err);
void frame_proof_encode(const frame_proof_t *p, uint8_t out[FRAME_PROOF_SIZE]);

/* TAKEN: the driver's refusal of a right PROOF (the channel was already
 * taken with the token, or ctl came before io), with its proof that it holds
 * the token and means this connection (handshake.h, HANDSHAKE_TAKEN);
 * exactly 32 bytes. */
typedef struct frame_taken {
        uint8_t mac[FRAME_MAC_SIZE];
} frame_taken_t;
#define FRAME_TAKEN_SIZE FRAME_MAC_SIZE
int frame_taken_decode(const frame_t *f, frame_taken_t *ret, hg_error_t *err);
void frame_taken_encode(const frame_taken_t *t, uint8_t out[FRAME_TAKEN_SIZE]);

/* EXIT payload: end kind (1 byte) and value (1 byte); exactly 2 bytes.
 * EXITED: any value; SIGNALED: 1-64; TIMEOUT: 124; NOT_STARTED: 127. */
typedef struct frame_exit {
        frame_end_t end;
        uint8_t value;
} frame_exit_t;
#define FRAME_EXIT_SIZE 2u
int frame_exit_decode(const frame_t *f, frame_exit_t *ret, hg_error_t *err);
void frame_exit_encode(const frame_exit_t *e, uint8_t out[FRAME_EXIT_SIZE]);

/* SIGNAL payload: one byte, a signal from the closed set frame_signal_allowed
 * accepts (HUP, INT, QUIT, KILL, USR1, USR2, TERM, CONT, STOP, TSTP,
 * WINCH); anything else is an error. */
#define FRAME_SIGNAL_SIZE 1u
bool frame_signal_allowed(int signo);
int frame_signal_decode(const frame_t *f, int *ret_signo, hg_error_t *err);

/* RESIZE payload: rows (u16) and cols (u16), exactly 4 bytes, within
 * FRAME_TERM_ROWS_MIN..MAX and FRAME_TERM_COLS_MIN..MAX. Only on a terminal
 * turn (docs/terminal.md). */
#define FRAME_RESIZE_SIZE   4u
#define FRAME_TERM_ROWS_MIN 2u
#define FRAME_TERM_ROWS_MAX 500u
#define FRAME_TERM_COLS_MIN 10u
#define FRAME_TERM_COLS_MAX 1000u
/* A terminal's TERM value, as the spec gives it and the relay sets it:
 * 1..FRAME_TERM_NAME_MAX bytes of [A-Za-z0-9._+-], not starting with '-' or
 * '.' (never an option, never a path). One rule for driver and relay. */
#define FRAME_TERM_NAME_MAX 64u
bool frame_term_name_ok(const char *term);
typedef struct frame_resize {
        uint16_t rows, cols;
} frame_resize_t;
int frame_resize_decode(const frame_t *f, frame_resize_t *ret, hg_error_t *err);
void frame_resize_encode(const frame_resize_t *r, uint8_t out[FRAME_RESIZE_SIZE]);

/* RUN payload:
 *   id          u32  chosen by the driver, echoed in the result
 *   timeout_ms  u32  1 .. 86400000
 *   tail_max    u32  bytes of output to return, <= FRAME_RUN_TAIL_MAX
 *   argc        u32  1 .. FRAME_RUN_MAX_ARGS
 *   argv        argc NUL-terminated strings, the first non-empty, filling
 *               the rest of the payload exactly
 * ret->argv points into a buffer the decoder allocates (ret->storage); free
 * it with frame_run_free. */
#define FRAME_RUN_TAIL_MAX       (FRAME_MAX_PAYLOAD - 16u)
#define FRAME_RUN_TIMEOUT_MAX_MS 86400000u
typedef struct frame_run {
        uint32_t id;
        uint32_t timeout_ms;
        uint32_t tail_max;
        uint32_t argc;
        char **argv; /* argc entries then NULL */
        void *storage;
} frame_run_t;
int frame_run_decode(const frame_t *f, frame_run_t *ret, hg_error_t *err);
void frame_run_free(frame_run_t *r);
/* Encodes into a newly allocated payload; -E2BIG when it would not fit in
 * FRAME_MAX_PAYLOAD, -EINVAL for a field out of range. */
int frame_run_encode(uint32_t id, uint32_t timeout_ms, uint32_t tail_max, char *const argv[],
                     uint8_t **ret_payload, uint32_t *ret_length);

/* RUN_RESULT payload:
 *   id         u32
 *   end        u8   frame_end_t
 *   value      u8   as for EXIT
 *   truncated  u8   0 or 1: output before the tail was dropped
 *   reserved   u8   0
 *   tail       the rest: the last bytes of the command's stdout and stderr,
 *              interleaved as they arrived
 * ret->tail points into the frame. */
#define FRAME_RUN_RESULT_FIXED 8u
typedef struct frame_run_result {
        uint32_t id;
        frame_exit_t exit;
        bool truncated;
        const uint8_t *tail;
        uint32_t tail_len;
} frame_run_result_t;
int frame_run_result_decode(const frame_t *f, frame_run_result_t *ret, hg_error_t *err);
/* Writes the fixed part into out; the caller sends tail after it. */
void frame_run_result_encode_fixed(const frame_run_result_t *r,
                                   uint8_t out[FRAME_RUN_RESULT_FIXED]);
