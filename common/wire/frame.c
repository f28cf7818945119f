#include "frame.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Byte order by hand, never by casting: the payload is not aligned. */
static uint32_t get_be32(const uint8_t *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

const char *frame_end_name(frame_end_t end)
{
        switch (end) {
        case FRAME_END_EXITED:
                return "exited";
        case FRAME_END_SIGNALED:
                return "signaled";
        case FRAME_END_TIMEOUT:
                return "timeout";
        case FRAME_END_NOT_STARTED:
                return "not-started";
        default:
                return "?";
        }
}

const char *frame_type_name(int type)
{
        switch (type) {
        case FRAME_HELLO:
                return "HELLO";
        case FRAME_WELCOME:
                return "WELCOME";
        case FRAME_CHALLENGE:
                return "CHALLENGE";
        case FRAME_PROOF:
                return "PROOF";
        case FRAME_TAKEN:
                return "TAKEN";
        case FRAME_STDIN:
                return "STDIN";
        case FRAME_STDOUT:
                return "STDOUT";
        case FRAME_STDERR:
                return "STDERR";
        case FRAME_EXIT:
                return "EXIT";
        case FRAME_SIGNAL:
                return "SIGNAL";
        case FRAME_RESIZE:
                return "RESIZE";
        case FRAME_ASK:
                return "ASK";
        case FRAME_ANSWER:
                return "ANSWER";
        case FRAME_RUN:
                return "RUN";
        case FRAME_RUN_RESULT:
                return "RUN_RESULT";
        default:
                return NULL;
        }
}

int frame_parse(const uint8_t *buf, size_t len, uint32_t max_payload, frame_t *ret_frame,
                size_t *ret_used, hg_error_t *err)
{
        /* A caller asking for more than the protocol allows gets the protocol's limit. */
        if (max_payload > FRAME_MAX_PAYLOAD)
                max_payload = FRAME_MAX_PAYLOAD;
        if (len < FRAME_HEADER_SIZE)
                return 0;
        if (buf[0] != FRAME_VERSION)
                return error_set(err, -EPROTO, "frame: unsupported version %u (want %u)",
                                 (unsigned)buf[0], (unsigned)FRAME_VERSION);
        const char *name = frame_type_name(buf[1]);
        if (!name)
                return error_set(err, -EPROTO, "frame: unknown type 0x%02x", (unsigned)buf[1]);
        if (buf[2] != 0 || buf[3] != 0)
                return error_set(err, -EPROTO, "frame: %s header has reserved bytes 0x%02x%02x",
                                 name, (unsigned)buf[2], (unsigned)buf[3]);
        uint32_t length = get_be32(buf + 4);
        if (length > max_payload)
                return error_set(err, -EMSGSIZE,
                                 "frame: %s payload of %u bytes is over the %u limit", name,
                                 (unsigned)length, (unsigned)max_payload);
        if (len - FRAME_HEADER_SIZE < length)
                return 0;
        ret_frame->type = (frame_type_t)buf[1];
        ret_frame->payload = buf + FRAME_HEADER_SIZE;
        ret_frame->length = length;
        *ret_used = FRAME_HEADER_SIZE + (size_t)length;
        return 1;
}

int frame_header_encode(frame_type_t type, uint32_t length, uint8_t out[FRAME_HEADER_SIZE])
{
        if (!frame_type_name((int)type))
                return -EINVAL;
        if (length > FRAME_MAX_PAYLOAD)
                return -EMSGSIZE;
        out[0] = FRAME_VERSION;
        out[1] = (uint8_t)type;
        out[2] = 0;
        out[3] = 0;
        put_be32(out + 4, length);
        return 0;
}

/* The checks every type-specific decoder starts with: the frame is of the
 * type the caller meant and within the protocol's bounds (a frame_t built by
 * hand rather than by frame_parse gets the same scrutiny). */
static int frame_check(const frame_t *f, frame_type_t type, hg_error_t *err)
{
        const char *want = frame_type_name((int)type);
        if (f->type != type) {
                const char *got = frame_type_name((int)f->type);
                return error_set(err, -EINVAL, "frame: %s decoder given a %s frame", want,
                                 got ? got : "unknown");
        }
        if (f->length > FRAME_MAX_PAYLOAD)
                return error_set(err, -EMSGSIZE,
                                 "frame: %s payload of %u bytes is over the %u limit", want,
                                 (unsigned)f->length, (unsigned)FRAME_MAX_PAYLOAD);
        if (f->length > 0 && !f->payload)
                return error_set(err, -EINVAL, "frame: %s has %u bytes but no payload", want,
                                 (unsigned)f->length);
        return 0;
}

static int frame_check_size(const frame_t *f, uint32_t size, hg_error_t *err)
{
        if (f->length != size)
                return error_set(err, -EPROTO, "frame: %s payload is %u bytes, want %u",
                                 frame_type_name((int)f->type), (unsigned)f->length,
                                 (unsigned)size);
        return 0;
}

/* The end kind and value of EXIT and RUN_RESULT. */
static int end_decode(const char *what, uint8_t end, uint8_t value, frame_exit_t *ret,
                      hg_error_t *err)
{
        switch (end) {
        case FRAME_END_EXITED:
                break; /* any exit status 0-255 */
        case FRAME_END_SIGNALED:
                if (value < 1 || value > 64)
                        return error_set(err, -EPROTO, "frame: %s: signal %u out of range 1-64",
                                         what, (unsigned)value);
                break;
        case FRAME_END_TIMEOUT:
                if (value != 124)
                        return error_set(err, -EPROTO,
                                         "frame: %s: timeout with value %u (want 124)", what,
                                         (unsigned)value);
                break;
        case FRAME_END_NOT_STARTED:
                if (value != 127)
                        return error_set(err, -EPROTO,
                                         "frame: %s: not started with value %u (want 127)", what,
                                         (unsigned)value);
                break;
        default:
                return error_set(err, -EPROTO, "frame: %s: unknown end kind %u", what,
                                 (unsigned)end);
        }
        ret->end = (frame_end_t)end;
        ret->value = value;
        return 0;
}

int frame_hello_decode(const frame_t *f, frame_hello_t *ret, hg_error_t *err)
{
        int r = frame_check(f, FRAME_HELLO, err);
        if (r < 0)
                return r;
        r = frame_check_size(f, FRAME_HELLO_SIZE, err);
        if (r < 0)
                return r;
        frame_hello_t h;
        switch (f->payload[0]) {
        case FRAME_CHANNEL_IO:
                h.channel = FRAME_CHANNEL_IO;
                break;
        case FRAME_CHANNEL_CTL:
                h.channel = FRAME_CHANNEL_CTL;
                break;
        default:
                return error_set(err, -EPROTO, "frame: HELLO: unknown channel %u",
                                 (unsigned)f->payload[0]);
        }
        memcpy(h.nonce, f->payload + 1, FRAME_NONCE_SIZE);
        *ret = h;
        return 0;
}

void frame_hello_encode(const frame_hello_t *h, uint8_t out[FRAME_HELLO_SIZE])
{
        out[0] = (uint8_t)h->channel;
        memcpy(out + 1, h->nonce, FRAME_NONCE_SIZE);
}

int frame_challenge_decode(const frame_t *f, frame_challenge_t *ret, hg_error_t *err)
{
        int r = frame_check(f, FRAME_CHALLENGE, err);
        if (r < 0)
                return r;
        r = frame_check_size(f, FRAME_CHALLENGE_SIZE, err);
        if (r < 0)
                return r;
        const uint8_t *p = f->payload;
        memcpy(ret->nonce, p, FRAME_NONCE_SIZE);
        memcpy(ret->instance, p + FRAME_NONCE_SIZE, FRAME_INSTANCE_SIZE);
        memcpy(ret->mac, p + FRAME_NONCE_SIZE + FRAME_INSTANCE_SIZE, FRAME_MAC_SIZE);
        return 0;
}

void frame_challenge_encode(const frame_challenge_t *c, uint8_t out[FRAME_CHALLENGE_SIZE])
{
        memcpy(out, c->nonce, FRAME_NONCE_SIZE);
        memcpy(out + FRAME_NONCE_SIZE, c->instance, FRAME_INSTANCE_SIZE);
        memcpy(out + FRAME_NONCE_SIZE + FRAME_INSTANCE_SIZE, c->mac, FRAME_MAC_SIZE);
}

/* PROOF and TAKEN: a frame of type that holds one MAC and nothing else. */
static int mac_only_decode(const frame_t *f, frame_type_t type, uint8_t mac[FRAME_MAC_SIZE],
                           hg_error_t *err)
{
        int r = frame_check(f, type, err);
        if (r < 0)
                return r;
        r = frame_check_size(f, FRAME_MAC_SIZE, err);
        if (r < 0)
                return r;
        memcpy(mac, f->payload, FRAME_MAC_SIZE);
        return 0;
}

int frame_proof_decode(const frame_t *f, frame_proof_t *ret, hg_error_t *err)
{
        return mac_only_decode(f, FRAME_PROOF, ret->mac, err);
}

void frame_proof_encode(const frame_proof_t *p, uint8_t out[FRAME_PROOF_SIZE])
{
        memcpy(out, p->mac, FRAME_MAC_SIZE);
}

int frame_taken_decode(const frame_t *f, frame_taken_t *ret, hg_error_t *err)
{
        return mac_only_decode(f, FRAME_TAKEN, ret->mac, err);
}

void frame_taken_encode(const frame_taken_t *t, uint8_t out[FRAME_TAKEN_SIZE])
{
        memcpy(out, t->mac, FRAME_MAC_SIZE);
}

int frame_exit_decode(const frame_t *f, frame_exit_t *ret, hg_error_t *err)
{
        int r = frame_check(f, FRAME_EXIT, err);
        if (r < 0)
                return r;
        r = frame_check_size(f, FRAME_EXIT_SIZE, err);
        if (r < 0)
                return r;
        frame_exit_t e;
        r = end_decode("EXIT", f->payload[0], f->payload[1], &e, err);
        if (r < 0)
                return r;
        *ret = e;
        return 0;
}

void frame_exit_encode(const frame_exit_t *e, uint8_t out[FRAME_EXIT_SIZE])
{
        out[0] = (uint8_t)e->end;
        out[1] = e->value;
}

bool frame_signal_allowed(int signo)
{
        switch (signo) {
        case SIGHUP:
        case SIGINT:
        case SIGQUIT:
        case SIGKILL:
        case SIGUSR1:
        case SIGUSR2:
        case SIGTERM:
        case SIGCONT:
        case SIGSTOP:
        case SIGTSTP:
        case SIGWINCH:
                return true;
        default:
                return false;
        }
}

int frame_signal_decode(const frame_t *f, int *ret_signo, hg_error_t *err)
{
        int r = frame_check(f, FRAME_SIGNAL, err);
        if (r < 0)
                return r;
        r = frame_check_size(f, FRAME_SIGNAL_SIZE, err);
        if (r < 0)
                return r;
        int signo = f->payload[0];
        if (!frame_signal_allowed(signo))
                return error_set(err, -EPROTO, "frame: SIGNAL: signal %d is not allowed", signo);
        *ret_signo = signo;
        return 0;
}

int frame_resize_decode(const frame_t *f, frame_resize_t *ret, hg_error_t *err)
{
        int r = frame_check(f, FRAME_RESIZE, err);
        if (r < 0)
                return r;
        r = frame_check_size(f, FRAME_RESIZE_SIZE, err);
        if (r < 0)
                return r;
        unsigned rows = (unsigned)f->payload[0] << 8 | f->payload[1];
        unsigned cols = (unsigned)f->payload[2] << 8 | f->payload[3];
        if (rows < FRAME_TERM_ROWS_MIN || rows > FRAME_TERM_ROWS_MAX ||
            cols < FRAME_TERM_COLS_MIN || cols > FRAME_TERM_COLS_MAX)
                return error_set(err, -EPROTO, "frame: RESIZE: %ux%u is out of bounds", rows, cols);
        *ret = (frame_resize_t){.rows = (uint16_t)rows, .cols = (uint16_t)cols};
        return 0;
}

void frame_resize_encode(const frame_resize_t *r, uint8_t out[FRAME_RESIZE_SIZE])
{
        out[0] = (uint8_t)(r->rows >> 8);
        out[1] = (uint8_t)r->rows;
        out[2] = (uint8_t)(r->cols >> 8);
        out[3] = (uint8_t)r->cols;
}

#define RUN_FIXED 16u /* id, timeout_ms, tail_max, argc */

int frame_run_decode(const frame_t *f, frame_run_t *ret, hg_error_t *err)
{
        int r = frame_check(f, FRAME_RUN, err);
        if (r < 0)
                return r;
        if (f->length < RUN_FIXED)
                return error_set(err, -EPROTO, "frame: RUN payload is %u bytes, want at least %u",
                                 (unsigned)f->length, RUN_FIXED);
        const uint8_t *p = f->payload;
        uint32_t id = get_be32(p);
        uint32_t timeout_ms = get_be32(p + 4);
        uint32_t tail_max = get_be32(p + 8);
        uint32_t argc = get_be32(p + 12);
        if (timeout_ms < 1 || timeout_ms > FRAME_RUN_TIMEOUT_MAX_MS)
                return error_set(err, -EPROTO, "frame: RUN: timeout %u ms out of range 1-%u",
                                 (unsigned)timeout_ms, (unsigned)FRAME_RUN_TIMEOUT_MAX_MS);
        if (tail_max > FRAME_RUN_TAIL_MAX)
                return error_set(err, -EPROTO, "frame: RUN: tail_max %u over %u",
                                 (unsigned)tail_max, (unsigned)FRAME_RUN_TAIL_MAX);
        if (argc < 1 || argc > FRAME_RUN_MAX_ARGS)
                return error_set(err, -EPROTO, "frame: RUN: argc %u out of range 1-%u",
                                 (unsigned)argc, (unsigned)FRAME_RUN_MAX_ARGS);

        /* The strings: exactly argc of them, each ending in NUL, nothing after. */
        const char *strings = (const char *)(p + RUN_FIXED);
        size_t strings_len = f->length - RUN_FIXED;
        size_t at = 0, n = 0;
        while (n < argc && at < strings_len) {
                const char *nul = memchr(strings + at, '\0', strings_len - at);
                if (!nul)
                        return error_set(err, -EPROTO, "frame: RUN: argv[%zu] has no NUL", n);
                at = (size_t)(nul - strings) + 1;
                n++;
        }
        if (n < argc)
                return error_set(err, -EPROTO, "frame: RUN: argc is %u but argv holds %zu strings",
                                 (unsigned)argc, n);
        if (at < strings_len)
                return error_set(err, -EPROTO, "frame: RUN: %zu trailing bytes after argv",
                                 strings_len - at);
        if (strings[0] == '\0')
                return error_set(err, -EPROTO, "frame: RUN: argv[0] is empty");

        /* One block: argc + 1 pointers, then a copy of the strings. Bounded
         * above: argc <= FRAME_RUN_MAX_ARGS, strings_len < FRAME_MAX_PAYLOAD. */
        size_t ptrs = ((size_t)argc + 1) * sizeof(char *);
        void *storage = malloc(ptrs + strings_len);
        if (!storage)
                return error_set(err, -ENOMEM, "frame: RUN: out of memory");
        char **argv = storage;
        char *copy = (char *)storage + ptrs;
        memcpy(copy, strings, strings_len);
        size_t off = 0;
        for (size_t i = 0; i < argc; i++) {
                argv[i] = copy + off;
                off += strlen(copy + off) + 1;
        }
        argv[argc] = NULL;

        *ret = (frame_run_t){
            .id = id,
            .timeout_ms = timeout_ms,
            .tail_max = tail_max,
            .argc = argc,
            .argv = argv,
            .storage = storage,
        };
        return 0;
}

void frame_run_free(frame_run_t *r)
{
        if (!r)
                return;
        free(r->storage);
        *r = (frame_run_t){0};
}

int frame_run_encode(uint32_t id, uint32_t timeout_ms, uint32_t tail_max, char *const argv[],
                     uint8_t **ret_payload, uint32_t *ret_length)
{
        if (timeout_ms < 1 || timeout_ms > FRAME_RUN_TIMEOUT_MAX_MS)
                return -EINVAL;
        if (tail_max > FRAME_RUN_TAIL_MAX)
                return -EINVAL;
        if (!argv || !argv[0] || argv[0][0] == '\0')
                return -EINVAL;
        /* Count and measure without walking past what could ever fit. */
        size_t argc = 0, total = RUN_FIXED;
        for (; argv[argc]; argc++) {
                if (argc >= FRAME_RUN_MAX_ARGS)
                        return -EINVAL;
                if (total <= FRAME_MAX_PAYLOAD)
                        total += strnlen(argv[argc], FRAME_MAX_PAYLOAD) + 1;
        }
        if (total > FRAME_MAX_PAYLOAD)
                return -E2BIG;

        uint8_t *out = malloc(total);
        if (!out)
                return -ENOMEM;
        put_be32(out, id);
        put_be32(out + 4, timeout_ms);
        put_be32(out + 8, tail_max);
        put_be32(out + 12, (uint32_t)argc);
        size_t at = RUN_FIXED;
        for (size_t i = 0; i < argc; i++) {
                size_t n = strlen(argv[i]) + 1;
                memcpy(out + at, argv[i], n);
                at += n;
        }
        *ret_payload = out;
        *ret_length = (uint32_t)total;
        return 0;
}

int frame_run_result_decode(const frame_t *f, frame_run_result_t *ret, hg_error_t *err)
{
        int r = frame_check(f, FRAME_RUN_RESULT, err);
        if (r < 0)
                return r;
        if (f->length < FRAME_RUN_RESULT_FIXED)
                return error_set(err, -EPROTO,
                                 "frame: RUN_RESULT payload is %u bytes, want at least %u",
                                 (unsigned)f->length, FRAME_RUN_RESULT_FIXED);
        const uint8_t *p = f->payload;
        frame_run_result_t rr = {.id = get_be32(p)};
        r = end_decode("RUN_RESULT", p[4], p[5], &rr.exit, err);
        if (r < 0)
                return r;
        switch (p[6]) {
        case 0:
                rr.truncated = false;
                break;
        case 1:
                rr.truncated = true;
                break;
        default:
                return error_set(err, -EPROTO, "frame: RUN_RESULT: truncated flag %u (want 0 or 1)",
                                 (unsigned)p[6]);
        }
        if (p[7] != 0)
                return error_set(err, -EPROTO, "frame: RUN_RESULT: reserved byte 0x%02x",
                                 (unsigned)p[7]);
        rr.tail = p + FRAME_RUN_RESULT_FIXED;
        rr.tail_len = f->length - FRAME_RUN_RESULT_FIXED;
        *ret = rr;
        return 0;
}

void frame_run_result_encode_fixed(const frame_run_result_t *r, uint8_t out[FRAME_RUN_RESULT_FIXED])
{
        put_be32(out, r->id);
        out[4] = (uint8_t)r->exit.end;
        out[5] = r->exit.value;
        out[6] = r->truncated ? 1 : 0;
        out[7] = 0;
}

bool frame_term_name_ok(const char *term)
{
        if (!term)
                return false;
        size_t n = strlen(term);
        if (n == 0 || n > FRAME_TERM_NAME_MAX || term[0] == '-' || term[0] == '.')
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = term[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '+' || c == '-'))
                        return false;
        }
        return true;
}
