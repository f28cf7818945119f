/* libFuzzer target: the relay's frame stream. The first byte picks the
 * caller's max_payload; the rest is consumed frame by frame with frame_parse
 * until it needs more bytes or refuses, and every payload goes through each
 * type-specific decoder (as its own type, and as the frame's real type).
 * Properties checked, abort() on violation:
 *   - frame_parse: used <= len, used == header + length, the payload is a
 *     view right after the header, length within the limit, the header
 *     re-encodes to the same 8 bytes, one byte less is "need more"; "need
 *     more" and errors write no output; every error has a message.
 *   - decoders: a decoded HELLO, CHALLENGE, PROOF, TAKEN, EXIT, RUN or RUN_RESULT
 *     re-encodes to the identical payload bytes; a failed decode leaves
 *     *ret untouched and a non-empty message; a frame of another type is
 *     refused.
 *   - the handshake: a CHALLENGE, PROOF or TAKEN off the wire never verifies as a
 *     proof made with a token the input cannot know (one drawn here at
 *     start), for a binding built from the input's own bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "handshake.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(int r, const hg_error_t *err)
{
        if (r < 0 && (err->message[0] == '\0' || err->code != r))
                abort();
}

static void check_hello(const frame_t *f)
{
        frame_hello_t h, before;
        memset(&h, 0x5a, sizeof(h));
        before = h;
        hg_error_t err = {0};
        int r = frame_hello_decode(f, &h, &err);
        check_err(r, &err);
        if (r < 0) {
                if (memcmp(&h, &before, sizeof(h)) != 0)
                        abort();
                return;
        }
        uint8_t out[FRAME_HELLO_SIZE];
        frame_hello_encode(&h, out);
        if (r != 0 || f->length != FRAME_HELLO_SIZE || memcmp(out, f->payload, sizeof(out)) != 0)
                abort();
}

/* A token the input cannot contain: fresh per process. */
static token_t secret;
static bool have_secret;

static void check_challenge(const frame_t *f)
{
        frame_challenge_t c, before;
        memset(&c, 0x5a, sizeof(c));
        before = c;
        hg_error_t err = {0};
        int r = frame_challenge_decode(f, &c, &err);
        check_err(r, &err);
        if (r < 0) {
                if (memcmp(&c, &before, sizeof(c)) != 0)
                        abort();
                return;
        }
        uint8_t out[FRAME_CHALLENGE_SIZE];
        frame_challenge_encode(&c, out);
        if (r != 0 || f->length != FRAME_CHALLENGE_SIZE ||
            memcmp(out, f->payload, sizeof(out)) != 0)
                abort();
        /* Whatever nonce the relay had, a forged proof is wrong. */
        handshake_binding_t b = {.channel = FRAME_CHANNEL_IO};
        memcpy(b.driver_nonce, c.nonce, FRAME_NONCE_SIZE);
        memcpy(b.instance, c.instance, FRAME_INSTANCE_SIZE);
        memcpy(b.relay_nonce, c.mac, FRAME_NONCE_SIZE);
        if (have_secret && handshake_verify(&secret, HANDSHAKE_DRIVER, &b, c.mac))
                abort();
}

static void check_proof(const frame_t *f)
{
        frame_proof_t p, before;
        memset(&p, 0x5a, sizeof(p));
        before = p;
        hg_error_t err = {0};
        int r = frame_proof_decode(f, &p, &err);
        check_err(r, &err);
        if (r < 0) {
                if (memcmp(&p, &before, sizeof(p)) != 0)
                        abort();
                return;
        }
        uint8_t out[FRAME_PROOF_SIZE];
        frame_proof_encode(&p, out);
        if (r != 0 || f->length != FRAME_PROOF_SIZE || memcmp(out, f->payload, sizeof(out)) != 0)
                abort();
        handshake_binding_t b = {.channel = FRAME_CHANNEL_CTL};
        if (have_secret && handshake_verify(&secret, HANDSHAKE_RELAY, &b, p.mac))
                abort();
}

/* TAKEN: the layout round-trips, and its proof never verifies with a
 * token the input cannot know, under the TAKEN label or any other. */
static void check_taken(const frame_t *f)
{
        frame_taken_t t, before;
        memset(&t, 0x5a, sizeof(t));
        before = t;
        hg_error_t err = {0};
        int r = frame_taken_decode(f, &t, &err);
        check_err(r, &err);
        if (r < 0) {
                if (memcmp(&t, &before, sizeof(t)) != 0)
                        abort();
                return;
        }
        uint8_t out[FRAME_TAKEN_SIZE];
        frame_taken_encode(&t, out);
        if (r != 0 || f->length != FRAME_TAKEN_SIZE || memcmp(out, f->payload, sizeof(out)) != 0)
                abort();
        handshake_binding_t b = {.channel = FRAME_CHANNEL_IO};
        memcpy(b.relay_nonce, t.mac, FRAME_NONCE_SIZE);
        if (have_secret && (handshake_verify(&secret, HANDSHAKE_TAKEN, &b, t.mac) ||
                            handshake_verify(&secret, HANDSHAKE_DRIVER, &b, t.mac)))
                abort();
}

static void check_exit(const frame_t *f)
{
        frame_exit_t e = {.end = (frame_end_t)0x55, .value = 0x66};
        hg_error_t err = {0};
        int r = frame_exit_decode(f, &e, &err);
        check_err(r, &err);
        if (r < 0) {
                if (e.end != (frame_end_t)0x55 || e.value != 0x66)
                        abort();
                return;
        }
        uint8_t out[FRAME_EXIT_SIZE];
        frame_exit_encode(&e, out);
        if (r != 0 || f->length != FRAME_EXIT_SIZE || memcmp(out, f->payload, sizeof(out)) != 0)
                abort();
}

static void check_signal(const frame_t *f)
{
        int signo = -1;
        hg_error_t err = {0};
        int r = frame_signal_decode(f, &signo, &err);
        check_err(r, &err);
        if (r < 0) {
                if (signo != -1)
                        abort();
                return;
        }
        if (r != 0 || f->length != FRAME_SIGNAL_SIZE || signo != f->payload[0] ||
            !frame_signal_allowed(signo))
                abort();
}

static void check_resize(const frame_t *f)
{
        frame_resize_t rs = {.rows = 7, .cols = 7};
        hg_error_t err = {0};
        int r = frame_resize_decode(f, &rs, &err);
        check_err(r, &err);
        if (r < 0) {
                if (rs.rows != 7 || rs.cols != 7)
                        abort();
                return;
        }
        uint8_t out[FRAME_RESIZE_SIZE];
        frame_resize_encode(&rs, out);
        if (r != 0 || f->length != FRAME_RESIZE_SIZE || memcmp(out, f->payload, sizeof(out)) != 0 ||
            rs.rows < FRAME_TERM_ROWS_MIN || rs.rows > FRAME_TERM_ROWS_MAX ||
            rs.cols < FRAME_TERM_COLS_MIN || rs.cols > FRAME_TERM_COLS_MAX)
                abort();
}

static void check_run(const frame_t *f)
{
        frame_run_t run = {0};
        hg_error_t err = {0};
        int r = frame_run_decode(f, &run, &err);
        check_err(r, &err);
        if (r < 0) {
                if (run.storage || run.argv || run.argc || run.id)
                        abort();
                return;
        }
        if (r != 0 || run.argc < 1 || run.argc > FRAME_RUN_MAX_ARGS || !run.argv ||
            run.argv[run.argc] != NULL || run.argv[0][0] == '\0')
                abort();
        uint8_t *again = NULL;
        uint32_t again_len = 0;
        if (frame_run_encode(run.id, run.timeout_ms, run.tail_max, run.argv, &again, &again_len) !=
            0)
                abort();
        if (again_len != f->length || memcmp(again, f->payload, again_len) != 0)
                abort();
        free(again);
        frame_run_free(&run);
        frame_run_free(&run);
        if (run.storage || run.argv)
                abort();
}

static void check_run_result(const frame_t *f)
{
        frame_run_result_t rr = {.id = 0x12345678, .tail_len = 0x9abc};
        hg_error_t err = {0};
        int r = frame_run_result_decode(f, &rr, &err);
        check_err(r, &err);
        if (r < 0) {
                if (rr.id != 0x12345678 || rr.tail_len != 0x9abc || rr.tail)
                        abort();
                return;
        }
        uint8_t out[FRAME_RUN_RESULT_FIXED];
        frame_run_result_encode_fixed(&rr, out);
        if (r != 0 || f->length < FRAME_RUN_RESULT_FIXED ||
            memcmp(out, f->payload, sizeof(out)) != 0 ||
            rr.tail != f->payload + FRAME_RUN_RESULT_FIXED ||
            rr.tail_len != f->length - FRAME_RUN_RESULT_FIXED)
                abort();
}

static const struct {
        frame_type_t type;
        void (*check)(const frame_t *f);
} decoders[] = {
    {FRAME_HELLO, check_hello},           {FRAME_CHALLENGE, check_challenge},
    {FRAME_PROOF, check_proof},           {FRAME_EXIT, check_exit},
    {FRAME_SIGNAL, check_signal},         {FRAME_RUN, check_run},
    {FRAME_RUN_RESULT, check_run_result}, {FRAME_RESIZE, check_resize},
    {FRAME_TAKEN, check_taken},
};

static void check_decoders(const frame_t *f)
{
        for (size_t i = 0; i < sizeof(decoders) / sizeof(decoders[0]); i++) {
                /* As the frame's own type (only decodes when it matches)... */
                decoders[i].check(f);
                /* ...and the payload read as this decoder's type. */
                frame_t as = *f;
                as.type = decoders[i].type;
                decoders[i].check(&as);
        }
        /* A frame handed to the wrong decoder is refused outright. */
        if (f->type != FRAME_EXIT) {
                frame_exit_t e;
                if (frame_exit_decode(f, &e, NULL) != -EINVAL)
                        abort();
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        if (!have_secret)
                have_secret = token_generate(&secret) == 0;
        /* 0x00-0x7f: small limits in steps of 16; 0x80-0xfe: the protocol's
         * limit; 0xff: more than the protocol allows (must be clamped). */
        uint32_t max = data[0] == 0xff   ? UINT32_MAX
                       : data[0] >= 0x80 ? FRAME_MAX_PAYLOAD
                                         : (uint32_t)data[0] * 16u;
        uint32_t limit = max > FRAME_MAX_PAYLOAD ? FRAME_MAX_PAYLOAD : max;
        const uint8_t *p = data + 1;
        size_t len = size - 1;

        for (;;) {
                static const uint8_t sentinel_payload[1];
                frame_t f = {.type = (frame_type_t)0x77, .payload = sentinel_payload, .length = 7};
                size_t used = SIZE_MAX;
                hg_error_t err = {0};
                int r = frame_parse(p, len, max, &f, &used, &err);
                bool untouched = f.type == (frame_type_t)0x77 && f.payload == sentinel_payload &&
                                 f.length == 7 && used == SIZE_MAX;
                if (r < 0) {
                        check_err(r, &err);
                        if ((r != -EPROTO && r != -EMSGSIZE) || !untouched ||
                            len < FRAME_HEADER_SIZE)
                                abort();
                        break;
                }
                if (r == 0) {
                        if (!untouched || err.message[0] != '\0')
                                abort();
                        if (len >= FRAME_HEADER_SIZE) {
                                uint32_t want = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 |
                                                (uint32_t)p[6] << 8 | p[7];
                                if (len - FRAME_HEADER_SIZE >= want)
                                        abort();
                        }
                        break;
                }
                if (r != 1 || used > len || used != FRAME_HEADER_SIZE + (size_t)f.length ||
                    f.payload != p + FRAME_HEADER_SIZE || f.length > limit ||
                    !frame_type_name((int)f.type))
                        abort();
                uint8_t hdr[FRAME_HEADER_SIZE];
                if (frame_header_encode(f.type, f.length, hdr) != 0 ||
                    memcmp(hdr, p, sizeof(hdr)) != 0)
                        abort();
                frame_t g;
                size_t g_used;
                if (frame_parse(p, used - 1, max, &g, &g_used, NULL) != 0)
                        abort();

                check_decoders(&f);
                p += used;
                len -= used;
        }
        return 0;
}
