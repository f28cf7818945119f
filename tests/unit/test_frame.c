/* Unit tests for common/frame: the header's byte layout, frame_parse's
 * "need more" / reject decisions, a round trip for every payload type, and
 * each way a payload can be malformed. Wire bytes are written out by hand
 * here, not with the encoders, so the tests check the codec against the
 * layout in frame.h rather than against itself. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "cleanup.h"
#include "frame.h"
#include "unit.h"

static void be32(uint8_t *p, uint32_t v)
{
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
}

/* Writes a header and payload into out; returns the frame's size. */
static size_t put_frame(uint8_t *out, uint8_t type, const void *payload, uint32_t len)
{
        out[0] = FRAME_VERSION;
        out[1] = type;
        out[2] = 0;
        out[3] = 0;
        be32(out + 4, len);
        if (len)
                memcpy(out + FRAME_HEADER_SIZE, payload, len);
        return FRAME_HEADER_SIZE + (size_t)len;
}

/* A RUN payload with the given fields and raw argv bytes; returns its length. */
static uint32_t put_run(uint8_t *out, uint32_t id, uint32_t timeout_ms, uint32_t tail_max,
                        uint32_t argc, const char *strings, size_t strings_len)
{
        be32(out, id);
        be32(out + 4, timeout_ms);
        be32(out + 8, tail_max);
        be32(out + 12, argc);
        memcpy(out + 16, strings, strings_len);
        return (uint32_t)(16 + strings_len);
}

static frame_t view(frame_type_t type, const uint8_t *payload, uint32_t len)
{
        return (frame_t){.type = type, .payload = payload, .length = len};
}

/* The error left by a failed call: the expected code and a one-line message. */
static void assert_err(int r, const hg_error_t *err, int code, const char *needle)
{
        ck_assert_msg(r == code, "got %d (%s), want %d", r, err->message, code);
        ck_assert_int_eq(err->code, code);
        ck_assert_msg(err->message[0] != '\0', "empty error message");
        ck_assert_msg(!strchr(err->message, '\n'), "message has a newline: %s", err->message);
        if (needle)
                ck_assert_msg(strstr(err->message, needle), "message \"%s\" lacks \"%s\"",
                              err->message, needle);
}

/* Parses buf and expects an error; the outputs keep their sentinel values. */
static void assert_parse_err(const uint8_t *buf, size_t len, uint32_t max, int code,
                             const char *needle)
{
        frame_t f = {.type = 0x77, .payload = (const uint8_t *)"x", .length = 99};
        size_t used = 4242;
        hg_error_t err = {0};
        int r = frame_parse(buf, len, max, &f, &used, &err);
        assert_err(r, &err, code, needle);
        ck_assert_int_eq(f.type, 0x77);
        ck_assert_uint_eq(f.length, 99);
        ck_assert_uint_eq(used, 4242);
}

static void assert_parse_more(const uint8_t *buf, size_t len, uint32_t max)
{
        frame_t f = {.type = 0x77, .payload = NULL, .length = 99};
        size_t used = 4242;
        hg_error_t err = {0};
        int r = frame_parse(buf, len, max, &f, &used, &err);
        ck_assert_msg(r == 0, "len %zu: got %d (%s), want 0", len, r, err.message);
        ck_assert_int_eq(f.type, 0x77);
        ck_assert_ptr_null(f.payload);
        ck_assert_uint_eq(f.length, 99);
        ck_assert_uint_eq(used, 4242);
        ck_assert_str_eq(err.message, "");
}

static frame_t parse_ok(const uint8_t *buf, size_t len, size_t want_used)
{
        frame_t f;
        size_t used = 0;
        hg_error_t err = {0};
        int r = frame_parse(buf, len, FRAME_MAX_PAYLOAD, &f, &used, &err);
        ck_assert_msg(r == 1, "got %d (%s)", r, err.message);
        ck_assert_uint_eq(used, want_used);
        ck_assert_ptr_eq(f.payload, buf + FRAME_HEADER_SIZE);
        return f;
}

/* ---- header ------------------------------------------------------------ */

START_TEST(type_names)
{
        static const struct {
                int type;
                const char *name;
        } t[] = {
            {0x01, "HELLO"},  {0x02, "WELCOME"}, {0x03, "CHALLENGE"}, {0x04, "PROOF"},
            {0x05, "TAKEN"},  {0x10, "STDIN"},   {0x11, "STDOUT"},    {0x12, "STDERR"},
            {0x13, "EXIT"},   {0x14, "SIGNAL"},  {0x20, "RUN"},       {0x21, "RUN_RESULT"},
            {0x15, "RESIZE"}, {0x16, "ASK"},     {0x17, "ANSWER"},
        };
        size_t named = 0;
        for (size_t i = 0; i < ARRAY_SIZE(t); i++)
                ck_assert_str_eq(frame_type_name(t[i].type), t[i].name);
        for (int v = -1; v <= 0x1ff; v++)
                if (frame_type_name(v))
                        named++;
        ck_assert_uint_eq(named, ARRAY_SIZE(t));
        ck_assert_ptr_null(frame_type_name(0x101)); /* HELLO plus 256 */
        ck_assert_ptr_null(frame_type_name(-255));
}
END_TEST

START_TEST(header_layout)
{
        uint8_t out[FRAME_HEADER_SIZE];
        ck_assert_int_eq(frame_header_encode(FRAME_RUN_RESULT, 0x0000abcd, out), 0);
        static const uint8_t want[] = {0x02, 0x21, 0x00, 0x00, 0x00, 0x00, 0xab, 0xcd};
        ck_assert_int_eq(memcmp(out, want, sizeof(want)), 0);

        ck_assert_int_eq(frame_header_encode(FRAME_STDOUT, FRAME_MAX_PAYLOAD, out), 0);
        static const uint8_t want_max[] = {0x02, 0x11, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00};
        ck_assert_int_eq(memcmp(out, want_max, sizeof(want_max)), 0);

        ck_assert_int_eq(frame_header_encode(FRAME_HELLO, 0, out), 0);
        static const uint8_t want_zero[] = {0x02, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00};
        ck_assert_int_eq(memcmp(out, want_zero, sizeof(want_zero)), 0);

        /* Failures leave out alone. */
        memset(out, 0xee, sizeof(out));
        ck_assert_int_eq(frame_header_encode(FRAME_STDIN, FRAME_MAX_PAYLOAD + 1, out), -EMSGSIZE);
        ck_assert_int_eq(frame_header_encode((frame_type_t)0x06, 1, out), -EINVAL);
        ck_assert_int_eq(frame_header_encode((frame_type_t)0, 1, out), -EINVAL);
        for (size_t i = 0; i < sizeof(out); i++)
                ck_assert_uint_eq(out[i], 0xee);
}
END_TEST

START_TEST(parse_reads_big_endian_length)
{
        static uint8_t buf[FRAME_HEADER_SIZE + 0x0102];
        memset(buf, 'z', sizeof(buf));
        static const uint8_t hdr[] = {0x02, 0x11, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02};
        memcpy(buf, hdr, sizeof(hdr));
        frame_t f = parse_ok(buf, sizeof(buf), sizeof(buf));
        ck_assert_int_eq(f.type, FRAME_STDOUT);
        ck_assert_uint_eq(f.length, 0x0102);
}
END_TEST

START_TEST(parse_needs_more)
{
        uint8_t buf[64];
        size_t n = put_frame(buf, FRAME_STDIN, "hello world", 11);
        for (size_t len = 0; len < n; len++)
                assert_parse_more(buf, len, FRAME_MAX_PAYLOAD);
        assert_parse_more(NULL, 0, FRAME_MAX_PAYLOAD);
        /* A bad header that is not complete yet is not judged yet. */
        static const uint8_t bad[] = {0x09, 0xff, 0x01, 0x01, 0xff, 0xff, 0xff};
        assert_parse_more(bad, sizeof(bad), FRAME_MAX_PAYLOAD);
        /* The whole frame, and the whole frame with more behind it. */
        parse_ok(buf, n, n);
        parse_ok(buf, n + 5, n);
}
END_TEST

START_TEST(parse_rejects_bad_version)
{
        /* 1: a relay of before (its HELLO carried the token). */
        static const uint8_t versions[] = {0x00, 0x01, 0x03, 0x10, 0xff};
        for (size_t i = 0; i < ARRAY_SIZE(versions); i++) {
                uint8_t buf[FRAME_HEADER_SIZE + 4];
                put_frame(buf, FRAME_STDIN, "abcd", 4);
                buf[0] = versions[i];
                /* Header alone: rejected without waiting for the payload. */
                assert_parse_err(buf, FRAME_HEADER_SIZE, FRAME_MAX_PAYLOAD, -EPROTO, "version");
                assert_parse_err(buf, sizeof(buf), FRAME_MAX_PAYLOAD, -EPROTO, "version");
        }
}
END_TEST

START_TEST(parse_rejects_unknown_type)
{
        for (int t = 0; t <= 0xff; t++) {
                if (frame_type_name(t))
                        continue;
                uint8_t buf[FRAME_HEADER_SIZE];
                put_frame(buf, (uint8_t)t, NULL, 0);
                assert_parse_err(buf, sizeof(buf), FRAME_MAX_PAYLOAD, -EPROTO, "type");
        }
}
END_TEST

START_TEST(parse_rejects_reserved)
{
        uint8_t buf[FRAME_HEADER_SIZE + 2];
        put_frame(buf, FRAME_EXIT, "\0\0", 2);
        buf[2] = 0x01;
        assert_parse_err(buf, FRAME_HEADER_SIZE, FRAME_MAX_PAYLOAD, -EPROTO, "reserved");
        buf[2] = 0;
        buf[3] = 0x80;
        assert_parse_err(buf, sizeof(buf), FRAME_MAX_PAYLOAD, -EPROTO, "reserved");
}
END_TEST

START_TEST(parse_rejects_oversize_from_header)
{
        uint8_t buf[FRAME_HEADER_SIZE];
        static const uint32_t over[] = {FRAME_MAX_PAYLOAD + 1, 0x00ffffff, 0xffffffff};
        for (size_t i = 0; i < ARRAY_SIZE(over); i++) {
                put_frame(buf, FRAME_STDOUT, NULL, 0);
                be32(buf + 4, over[i]);
                assert_parse_err(buf, sizeof(buf), FRAME_MAX_PAYLOAD, -EMSGSIZE, "limit");
                /* Asking for more than the protocol allows does not lift the limit. */
                assert_parse_err(buf, sizeof(buf), UINT32_MAX, -EMSGSIZE, "limit");
        }
        /* A caller's smaller limit, with only the header present. */
        be32(buf + 4, 101);
        assert_parse_err(buf, sizeof(buf), 100, -EMSGSIZE, "101");
        be32(buf + 4, 1);
        assert_parse_err(buf, sizeof(buf), 0, -EMSGSIZE, NULL);
        /* At the limit it is fine, and waits for the payload. */
        be32(buf + 4, 100);
        assert_parse_more(buf, sizeof(buf), 100);
        be32(buf + 4, FRAME_MAX_PAYLOAD);
        assert_parse_more(buf, sizeof(buf), FRAME_MAX_PAYLOAD);
}
END_TEST

START_TEST(parse_err_may_be_null)
{
        uint8_t buf[FRAME_HEADER_SIZE];
        put_frame(buf, 0x99, NULL, 0);
        frame_t f;
        size_t used;
        ck_assert_int_eq(frame_parse(buf, sizeof(buf), FRAME_MAX_PAYLOAD, &f, &used, NULL),
                         -EPROTO);
}
END_TEST

START_TEST(parse_back_to_back)
{
        static uint8_t buf[1024];
        size_t n = 0;
        uint8_t hello[FRAME_HELLO_SIZE] = {FRAME_CHANNEL_CTL};
        memset(hello + 1, 0xa5, FRAME_NONCE_SIZE);
        n += put_frame(buf + n, FRAME_HELLO, hello, sizeof(hello));
        uint8_t challenge[FRAME_CHALLENGE_SIZE];
        memset(challenge, 0x3c, sizeof(challenge));
        n += put_frame(buf + n, FRAME_CHALLENGE, challenge, sizeof(challenge));
        n += put_frame(buf + n, FRAME_PROOF, challenge, FRAME_PROOF_SIZE);
        n += put_frame(buf + n, FRAME_WELCOME, NULL, 0);
        n += put_frame(buf + n, FRAME_STDIN, "abc", 3);
        n += put_frame(buf + n, FRAME_STDIN, NULL, 0);
        n += put_frame(buf + n, FRAME_EXIT, "\x01\x09", 2);
        n += put_frame(buf + n, FRAME_SIGNAL, "\x0f", 1);
        uint8_t run[64];
        uint32_t run_len = put_run(run, 7, 1000, 0, 2, "ls\0-l", 6);
        n += put_frame(buf + n, FRAME_RUN, run, run_len);
        n += put_frame(buf + n, FRAME_RUN_RESULT, "\0\0\0\x07\0\0\0\0tail", 12);
        size_t whole = n;
        /* Half a header of the next frame. */
        buf[n++] = FRAME_VERSION;
        buf[n++] = FRAME_STDOUT;

        static const struct {
                frame_type_t type;
                uint32_t length;
        } want[] = {
            {FRAME_HELLO, FRAME_HELLO_SIZE},
            {FRAME_CHALLENGE, FRAME_CHALLENGE_SIZE},
            {FRAME_PROOF, FRAME_PROOF_SIZE},
            {FRAME_WELCOME, 0},
            {FRAME_STDIN, 3},
            {FRAME_STDIN, 0},
            {FRAME_EXIT, 2},
            {FRAME_SIGNAL, 1},
            {FRAME_RUN, 22},
            {FRAME_RUN_RESULT, 12},
        };
        size_t at = 0;
        for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
                frame_t f;
                size_t used = 0;
                hg_error_t err = {0};
                ck_assert_int_eq(frame_parse(buf + at, n - at, FRAME_MAX_PAYLOAD, &f, &used, &err),
                                 1);
                ck_assert_int_eq(f.type, want[i].type);
                ck_assert_uint_eq(f.length, want[i].length);
                ck_assert_ptr_eq(f.payload, buf + at + FRAME_HEADER_SIZE);
                ck_assert_uint_eq(used, FRAME_HEADER_SIZE + want[i].length);
                at += used;
        }
        ck_assert_uint_eq(at, whole);
        assert_parse_more(buf + at, n - at, FRAME_MAX_PAYLOAD);
}
END_TEST

/* ---- HELLO ------------------------------------------------------------- */

START_TEST(hello_round_trip)
{
        static const frame_channel_t channels[] = {FRAME_CHANNEL_IO, FRAME_CHANNEL_CTL};
        for (size_t c = 0; c < ARRAY_SIZE(channels); c++) {
                frame_hello_t h = {.channel = channels[c]};
                for (size_t i = 0; i < FRAME_NONCE_SIZE; i++)
                        h.nonce[i] = (uint8_t)(i * 37 + c);
                uint8_t payload[FRAME_HELLO_SIZE];
                frame_hello_encode(&h, payload);
                ck_assert_uint_eq(payload[0], (unsigned)channels[c]);
                ck_assert_int_eq(memcmp(payload + 1, h.nonce, FRAME_NONCE_SIZE), 0);

                uint8_t buf[FRAME_HEADER_SIZE + FRAME_HELLO_SIZE];
                ck_assert_int_eq(frame_header_encode(FRAME_HELLO, sizeof(payload), buf), 0);
                memcpy(buf + FRAME_HEADER_SIZE, payload, sizeof(payload));
                frame_t f = parse_ok(buf, sizeof(buf), sizeof(buf));
                frame_hello_t back;
                hg_error_t err = {0};
                ck_assert_int_eq(frame_hello_decode(&f, &back, &err), 0);
                ck_assert_int_eq(back.channel, channels[c]);
                ck_assert_int_eq(memcmp(back.nonce, h.nonce, FRAME_NONCE_SIZE), 0);
        }
}
END_TEST

static void assert_hello_refused(const uint8_t *payload, uint32_t len, const char *needle)
{
        frame_t f = view(FRAME_HELLO, payload, len);
        frame_hello_t h;
        memset(&h, 0x5a, sizeof(h));
        frame_hello_t before = h;
        hg_error_t err = {0};
        assert_err(frame_hello_decode(&f, &h, &err), &err, -EPROTO, needle);
        ck_assert_int_eq(memcmp(&h, &before, sizeof(h)), 0);
}

START_TEST(hello_rejects)
{
        uint8_t p[FRAME_HELLO_SIZE + 1] = {FRAME_CHANNEL_IO};
        assert_hello_refused(p, FRAME_HELLO_SIZE - 1, "bytes");
        assert_hello_refused(p, FRAME_HELLO_SIZE + 1, "bytes");
        assert_hello_refused(p, 0, "bytes");
        static const uint8_t bad_channels[] = {0, 3, 0x81, 0xff};
        for (size_t i = 0; i < ARRAY_SIZE(bad_channels); i++) {
                p[0] = bad_channels[i];
                assert_hello_refused(p, FRAME_HELLO_SIZE, "channel");
        }
}
END_TEST

/* ---- CHALLENGE, PROOF -------------------------------------------------- */

START_TEST(challenge_round_trip)
{
        frame_challenge_t ch;
        for (size_t i = 0; i < FRAME_NONCE_SIZE; i++)
                ch.nonce[i] = (uint8_t)(i + 1);
        for (size_t i = 0; i < FRAME_INSTANCE_SIZE; i++)
                ch.instance[i] = (uint8_t)(0x40 + i);
        for (size_t i = 0; i < FRAME_MAC_SIZE; i++)
                ch.mac[i] = (uint8_t)(0x80 + i);
        uint8_t payload[FRAME_CHALLENGE_SIZE];
        frame_challenge_encode(&ch, payload);
        /* The layout: nonce, instance, proof. */
        ck_assert_uint_eq(FRAME_CHALLENGE_SIZE, 80);
        ck_assert_uint_eq(payload[0], 1);
        ck_assert_uint_eq(payload[FRAME_NONCE_SIZE], 0x40);
        ck_assert_uint_eq(payload[FRAME_NONCE_SIZE + FRAME_INSTANCE_SIZE], 0x80);
        ck_assert_uint_eq(payload[FRAME_CHALLENGE_SIZE - 1], 0x80 + FRAME_MAC_SIZE - 1);
        frame_t f = view(FRAME_CHALLENGE, payload, sizeof(payload));
        frame_challenge_t back;
        hg_error_t err = {0};
        ck_assert_int_eq(frame_challenge_decode(&f, &back, &err), 0);
        ck_assert_int_eq(memcmp(&back, &ch, sizeof(ch)), 0);

        frame_proof_t pr;
        memcpy(pr.mac, ch.mac, FRAME_MAC_SIZE);
        uint8_t p2[FRAME_PROOF_SIZE];
        frame_proof_encode(&pr, p2);
        ck_assert_int_eq(memcmp(p2, ch.mac, FRAME_MAC_SIZE), 0);
        f = view(FRAME_PROOF, p2, sizeof(p2));
        frame_proof_t pback;
        ck_assert_int_eq(frame_proof_decode(&f, &pback, &err), 0);
        ck_assert_int_eq(memcmp(pback.mac, pr.mac, FRAME_MAC_SIZE), 0);
}
END_TEST

START_TEST(challenge_proof_reject)
{
        uint8_t p[FRAME_CHALLENGE_SIZE + 1] = {0};
        static const uint32_t bad_challenge[] = {0, 1, FRAME_CHALLENGE_SIZE - 1,
                                                 FRAME_CHALLENGE_SIZE + 1};
        for (size_t i = 0; i < ARRAY_SIZE(bad_challenge); i++) {
                frame_t f = view(FRAME_CHALLENGE, p, bad_challenge[i]);
                frame_challenge_t ch;
                memset(&ch, 0x5a, sizeof(ch));
                frame_challenge_t before = ch;
                hg_error_t err = {0};
                assert_err(frame_challenge_decode(&f, &ch, &err), &err, -EPROTO, "bytes");
                ck_assert_int_eq(memcmp(&ch, &before, sizeof(ch)), 0);
        }
        static const uint32_t bad_proof[] = {0, FRAME_PROOF_SIZE - 1, FRAME_PROOF_SIZE + 1};
        for (size_t i = 0; i < ARRAY_SIZE(bad_proof); i++) {
                frame_t f = view(FRAME_PROOF, p, bad_proof[i]);
                frame_proof_t pr;
                memset(&pr, 0x5a, sizeof(pr));
                hg_error_t err = {0};
                assert_err(frame_proof_decode(&f, &pr, &err), &err, -EPROTO, "bytes");
                ck_assert_uint_eq(pr.mac[0], 0x5a);
        }
        /* Each decoder takes its own type only. */
        frame_t f = view(FRAME_PROOF, p, FRAME_CHALLENGE_SIZE);
        frame_challenge_t ch;
        hg_error_t err = {0};
        assert_err(frame_challenge_decode(&f, &ch, &err), &err, -EINVAL, "PROOF");
        f = view(FRAME_CHALLENGE, p, FRAME_PROOF_SIZE);
        frame_proof_t pr;
        assert_err(frame_proof_decode(&f, &pr, &err), &err, -EINVAL, "CHALLENGE");
}
END_TEST

/* ---- TAKEN ------------------------------------------------------------- */

START_TEST(taken_round_trip)
{
        frame_taken_t t;
        for (size_t i = 0; i < FRAME_MAC_SIZE; i++)
                t.mac[i] = (uint8_t)(0xa0 + i);
        uint8_t payload[FRAME_TAKEN_SIZE];
        frame_taken_encode(&t, payload);
        /* The layout: the driver's proof, nothing else. */
        ck_assert_uint_eq(FRAME_TAKEN_SIZE, 32);
        ck_assert_int_eq(memcmp(payload, t.mac, FRAME_MAC_SIZE), 0);
        frame_t f = view(FRAME_TAKEN, payload, sizeof(payload));
        frame_taken_t back;
        hg_error_t err = {0};
        ck_assert_int_eq(frame_taken_decode(&f, &back, &err), 0);
        ck_assert_int_eq(memcmp(back.mac, t.mac, FRAME_MAC_SIZE), 0);
        /* The whole frame off the wire: type 0x05, 32 bytes. */
        uint8_t buf[FRAME_HEADER_SIZE + FRAME_TAKEN_SIZE];
        ck_assert_uint_eq(put_frame(buf, FRAME_TAKEN, payload, sizeof(payload)), sizeof(buf));
        static const uint8_t want_hdr[] = {0x02, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00, 0x20};
        ck_assert_int_eq(memcmp(buf, want_hdr, sizeof(want_hdr)), 0);
        f = parse_ok(buf, sizeof(buf), sizeof(buf));
        ck_assert_int_eq(f.type, FRAME_TAKEN);
        ck_assert_int_eq(frame_taken_decode(&f, &back, NULL), 0);
}
END_TEST

START_TEST(taken_rejects)
{
        uint8_t p[FRAME_TAKEN_SIZE + 1] = {0};
        static const uint32_t bad[] = {0, 1, FRAME_TAKEN_SIZE - 1, FRAME_TAKEN_SIZE + 1};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                frame_t f = view(FRAME_TAKEN, p, bad[i]);
                frame_taken_t t;
                memset(&t, 0x5a, sizeof(t));
                hg_error_t err = {0};
                assert_err(frame_taken_decode(&f, &t, &err), &err, -EPROTO, "bytes");
                ck_assert_uint_eq(t.mac[0], 0x5a);
                ck_assert_uint_eq(t.mac[FRAME_MAC_SIZE - 1], 0x5a);
        }
        /* A PROOF or a WELCOME is not a TAKEN, nor the other way round. */
        frame_t f = view(FRAME_PROOF, p, FRAME_TAKEN_SIZE);
        frame_taken_t t;
        hg_error_t err = {0};
        assert_err(frame_taken_decode(&f, &t, &err), &err, -EINVAL, "PROOF");
        f = view(FRAME_WELCOME, p, 0);
        assert_err(frame_taken_decode(&f, &t, &err), &err, -EINVAL, "WELCOME");
        f = view(FRAME_TAKEN, p, FRAME_PROOF_SIZE);
        frame_proof_t pr;
        assert_err(frame_proof_decode(&f, &pr, &err), &err, -EINVAL, "TAKEN");
        /* An oversize TAKEN is refused at its header by a receiver that takes
         * no frame longer than a CHALLENGE (the relay, before WELCOME). */
        uint8_t hdr[FRAME_HEADER_SIZE];
        ck_assert_int_eq(frame_header_encode(FRAME_TAKEN, FRAME_CHALLENGE_SIZE + 1, hdr), 0);
        assert_parse_err(hdr, sizeof(hdr), FRAME_CHALLENGE_SIZE, -EMSGSIZE, "limit");
}
END_TEST

/* ---- EXIT -------------------------------------------------------------- */

START_TEST(exit_round_trip)
{
        static const frame_exit_t ok[] = {
            {FRAME_END_EXITED, 0},    {FRAME_END_EXITED, 1},        {FRAME_END_EXITED, 255},
            {FRAME_END_SIGNALED, 1},  {FRAME_END_SIGNALED, 9},      {FRAME_END_SIGNALED, 64},
            {FRAME_END_TIMEOUT, 124}, {FRAME_END_NOT_STARTED, 127},
        };
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                uint8_t payload[FRAME_EXIT_SIZE];
                frame_exit_encode(&ok[i], payload);
                ck_assert_uint_eq(payload[0], (unsigned)ok[i].end);
                ck_assert_uint_eq(payload[1], ok[i].value);
                uint8_t buf[FRAME_HEADER_SIZE + FRAME_EXIT_SIZE];
                put_frame(buf, FRAME_EXIT, payload, sizeof(payload));
                frame_t f = parse_ok(buf, sizeof(buf), sizeof(buf));
                frame_exit_t back;
                hg_error_t err = {0};
                ck_assert_msg(frame_exit_decode(&f, &back, &err) == 0, "%zu: %s", i, err.message);
                ck_assert_int_eq(back.end, ok[i].end);
                ck_assert_uint_eq(back.value, ok[i].value);
        }
}
END_TEST

static void assert_exit_refused(uint8_t end, uint8_t value, uint32_t len, const char *needle)
{
        const uint8_t p[3] = {end, value, 0};
        frame_t f = view(FRAME_EXIT, p, len);
        frame_exit_t e = {.end = (frame_end_t)9, .value = 99};
        hg_error_t err = {0};
        assert_err(frame_exit_decode(&f, &e, &err), &err, -EPROTO, needle);
        ck_assert_int_eq(e.end, 9);
        ck_assert_uint_eq(e.value, 99);
}

START_TEST(exit_rejects)
{
        assert_exit_refused(0, 0, 0, "bytes");
        assert_exit_refused(0, 0, 1, "bytes");
        assert_exit_refused(0, 0, 3, "bytes");
        assert_exit_refused(4, 0, 2, "end kind");
        assert_exit_refused(0xff, 0, 2, "end kind");
        assert_exit_refused(FRAME_END_SIGNALED, 0, 2, "signal");
        assert_exit_refused(FRAME_END_SIGNALED, 65, 2, "signal");
        assert_exit_refused(FRAME_END_SIGNALED, 255, 2, "signal");
        assert_exit_refused(FRAME_END_TIMEOUT, 0, 2, "124");
        assert_exit_refused(FRAME_END_TIMEOUT, 123, 2, "124");
        assert_exit_refused(FRAME_END_TIMEOUT, 125, 2, "124");
        assert_exit_refused(FRAME_END_NOT_STARTED, 0, 2, "127");
        assert_exit_refused(FRAME_END_NOT_STARTED, 126, 2, "127");
        assert_exit_refused(FRAME_END_NOT_STARTED, 128, 2, "127");
}
END_TEST

/* ---- SIGNAL ------------------------------------------------------------ */

START_TEST(resize_round_trip_and_bounds)
{
        uint8_t p[FRAME_RESIZE_SIZE];
        frame_resize_encode(&(frame_resize_t){.rows = 40, .cols = 300}, p);
        ck_assert_mem_eq(p, "\x00\x28\x01\x2c", 4);
        frame_resize_t r = {0};
        frame_t f = view(FRAME_RESIZE, p, sizeof(p));
        ck_assert_int_eq(frame_resize_decode(&f, &r, NULL), 0);
        ck_assert_uint_eq(r.rows, 40);
        ck_assert_uint_eq(r.cols, 300);
        static const struct {
                unsigned rows, cols;
        } bad[] = {{1, 80}, {24, 9}, {501, 80}, {24, 1001}, {0, 0}, {65535, 65535}};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                frame_resize_encode(
                    &(frame_resize_t){.rows = (uint16_t)bad[i].rows, .cols = (uint16_t)bad[i].cols},
                    p);
                hg_error_t err = {0};
                r = (frame_resize_t){.rows = 7, .cols = 7};
                ck_assert_int_eq(frame_resize_decode(&f, &r, &err), -EPROTO);
                ck_assert_ptr_nonnull(strstr(err.message, "out of bounds"));
                ck_assert_uint_eq(r.rows, 7);
        }
        f.length = 3;
        ck_assert_int_lt(frame_resize_decode(&f, &r, NULL), 0);
        f = view(FRAME_SIGNAL, p, sizeof(p));
        ck_assert_int_eq(frame_resize_decode(&f, &r, NULL), -EINVAL);
}
END_TEST

START_TEST(signal_allowed_set)
{
        static const int allowed[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGKILL, SIGUSR1, SIGUSR2,
                                      SIGTERM, SIGCONT, SIGSTOP, SIGTSTP, SIGWINCH};
        for (int s = -2; s <= 300; s++) {
                bool want = false;
                for (size_t i = 0; i < ARRAY_SIZE(allowed); i++)
                        want = want || allowed[i] == s;
                ck_assert_msg(frame_signal_allowed(s) == want, "signal %d", s);
        }
}
END_TEST

START_TEST(signal_round_trip)
{
        for (int s = 0; s <= 0xff; s++) {
                if (!frame_signal_allowed(s))
                        continue;
                uint8_t buf[FRAME_HEADER_SIZE + 1];
                uint8_t b = (uint8_t)s;
                put_frame(buf, FRAME_SIGNAL, &b, 1);
                frame_t f = parse_ok(buf, sizeof(buf), sizeof(buf));
                int signo = -1;
                hg_error_t err = {0};
                ck_assert_int_eq(frame_signal_decode(&f, &signo, &err), 0);
                ck_assert_int_eq(signo, s);
        }
}
END_TEST

START_TEST(signal_rejects)
{
        static const uint8_t bad[] = {0, SIGSEGV, SIGCHLD, SIGPIPE, SIGALRM, 34, 64, 0xff};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                frame_t f = view(FRAME_SIGNAL, &bad[i], 1);
                int signo = -7;
                hg_error_t err = {0};
                assert_err(frame_signal_decode(&f, &signo, &err), &err, -EPROTO, "not allowed");
                ck_assert_int_eq(signo, -7);
        }
        static const uint8_t two[] = {SIGTERM, SIGTERM};
        frame_t f = view(FRAME_SIGNAL, two, 2);
        int signo = -7;
        hg_error_t err = {0};
        assert_err(frame_signal_decode(&f, &signo, &err), &err, -EPROTO, "bytes");
        f = view(FRAME_SIGNAL, NULL, 0);
        assert_err(frame_signal_decode(&f, &signo, &err), &err, -EPROTO, "bytes");
        ck_assert_int_eq(signo, -7);
}
END_TEST

/* ---- RUN --------------------------------------------------------------- */

START_TEST(run_byte_layout)
{
        char *argv[] = {"sh", "-c", "", "echo hi", NULL};
        _cleanup_free_ uint8_t *payload = NULL;
        uint32_t len = 0;
        ck_assert_int_eq(frame_run_encode(0x01020304, 0x05060708, 0x0000090a, argv, &payload, &len),
                         0);
        static const uint8_t want[] = {
            0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x00, 0x00, 0x09,
            0x0a, 0x00, 0x00, 0x00, 0x04, 's',  'h',  0,    '-',  'c',  0,
            0,    'e',  'c',  'h',  'o',  ' ',  'h',  'i',  0,
        };
        ck_assert_uint_eq(len, sizeof(want));
        ck_assert_int_eq(memcmp(payload, want, sizeof(want)), 0);
}
END_TEST

/* Encodes argv, frames it, parses and decodes it, and checks every field. */
static void run_round_trip(uint32_t id, uint32_t timeout_ms, uint32_t tail_max, char *const argv[])
{
        size_t argc = 0;
        while (argv[argc])
                argc++;
        _cleanup_free_ uint8_t *payload = NULL;
        uint32_t len = 0;
        ck_assert_int_eq(frame_run_encode(id, timeout_ms, tail_max, argv, &payload, &len), 0);
        _cleanup_free_ uint8_t *buf = malloc(FRAME_HEADER_SIZE + (size_t)len);
        ck_assert_ptr_nonnull(buf);
        ck_assert_int_eq(frame_header_encode(FRAME_RUN, len, buf), 0);
        memcpy(buf + FRAME_HEADER_SIZE, payload, len);
        frame_t f = parse_ok(buf, FRAME_HEADER_SIZE + (size_t)len, FRAME_HEADER_SIZE + (size_t)len);

        frame_run_t run = {0};
        hg_error_t err = {0};
        ck_assert_msg(frame_run_decode(&f, &run, &err) == 0, "%s", err.message);
        ck_assert_uint_eq(run.id, id);
        ck_assert_uint_eq(run.timeout_ms, timeout_ms);
        ck_assert_uint_eq(run.tail_max, tail_max);
        ck_assert_uint_eq(run.argc, argc);
        ck_assert_ptr_nonnull(run.storage);
        for (size_t i = 0; i < argc; i++) {
                ck_assert_str_eq(run.argv[i], argv[i]);
                /* A copy, not a view into the frame. */
                ck_assert_msg((const uint8_t *)run.argv[i] < f.payload ||
                                  (const uint8_t *)run.argv[i] >= f.payload + f.length,
                              "argv[%zu] points into the frame", i);
        }
        ck_assert_ptr_null(run.argv[argc]);

        _cleanup_free_ uint8_t *again = NULL;
        uint32_t again_len = 0;
        ck_assert_int_eq(
            frame_run_encode(run.id, run.timeout_ms, run.tail_max, run.argv, &again, &again_len),
            0);
        ck_assert_uint_eq(again_len, len);
        ck_assert_int_eq(memcmp(again, payload, len), 0);
        frame_run_free(&run);
        ck_assert_ptr_null(run.storage);
        ck_assert_ptr_null(run.argv);
}

START_TEST(run_round_trips)
{
        char *simple[] = {"/bin/true", NULL};
        run_round_trip(0, 1, 0, simple);
        char *empties[] = {"printf", "", "%s\n", "", "", NULL};
        run_round_trip(0xffffffff, FRAME_RUN_TIMEOUT_MAX_MS, FRAME_RUN_TAIL_MAX, empties);
        char *utf8[] = {"echo", "gr\xc3\xbc\xc3\x9f", "\x01\x7f\xff", NULL};
        run_round_trip(42, 30000, 4096, utf8);

        /* The most arguments allowed. */
        char *many[FRAME_RUN_MAX_ARGS + 1];
        char names[FRAME_RUN_MAX_ARGS][8];
        for (size_t i = 0; i < FRAME_RUN_MAX_ARGS; i++) {
                (void)snprintf(names[i], sizeof(names[i]), "a%zu", i);
                many[i] = names[i];
        }
        many[FRAME_RUN_MAX_ARGS] = NULL;
        run_round_trip(9, 5000, 100, many);

        /* One argument filling the largest payload exactly. */
        size_t big_len = FRAME_MAX_PAYLOAD - 16 - 1;
        _cleanup_free_ char *big = malloc(big_len + 1);
        ck_assert_ptr_nonnull(big);
        memset(big, 'x', big_len);
        big[big_len] = '\0';
        char *one[] = {big, NULL};
        run_round_trip(1, 1, 1, one);
}
END_TEST

static void assert_run_refused(const uint8_t *payload, uint32_t len, const char *needle)
{
        frame_t f = view(FRAME_RUN, payload, len);
        frame_run_t run = {.id = 77, .argc = 88};
        hg_error_t err = {0};
        assert_err(frame_run_decode(&f, &run, &err), &err, -EPROTO, needle);
        ck_assert_uint_eq(run.id, 77);
        ck_assert_uint_eq(run.argc, 88);
        ck_assert_ptr_null(run.argv);
        ck_assert_ptr_null(run.storage);
}

START_TEST(run_rejects)
{
        static uint8_t p[FRAME_MAX_PAYLOAD];
        uint32_t n;

        /* Too short for the fixed part (only the bytes matter, not the length). */
        (void)put_run(p, 1, 1000, 0, 1, "ls", 3);
        for (uint32_t len = 0; len < 16; len++)
                assert_run_refused(p, len, "at least 16");

        /* Field ranges. */
        n = put_run(p, 1, 0, 0, 1, "ls", 3);
        assert_run_refused(p, n, "timeout");
        n = put_run(p, 1, FRAME_RUN_TIMEOUT_MAX_MS + 1, 0, 1, "ls", 3);
        assert_run_refused(p, n, "timeout");
        n = put_run(p, 1, 0xffffffff, 0, 1, "ls", 3);
        assert_run_refused(p, n, "timeout");
        n = put_run(p, 1, 1000, FRAME_RUN_TAIL_MAX + 1, 1, "ls", 3);
        assert_run_refused(p, n, "tail_max");
        n = put_run(p, 1, 1000, 0, 0, "ls", 3);
        assert_run_refused(p, n, "argc");
        n = put_run(p, 1, 1000, 0, FRAME_RUN_MAX_ARGS + 1, "ls", 3);
        assert_run_refused(p, n, "argc");
        n = put_run(p, 1, 1000, 0, 0xffffffff, "ls", 3);
        assert_run_refused(p, n, "argc");

        /* Too many arguments, each well-formed. */
        char strings[2 * (FRAME_RUN_MAX_ARGS + 1)];
        for (size_t i = 0; i < FRAME_RUN_MAX_ARGS + 1; i++) {
                strings[2 * i] = 'a';
                strings[2 * i + 1] = '\0';
        }
        n = put_run(p, 1, 1000, 0, FRAME_RUN_MAX_ARGS + 1, strings, sizeof(strings));
        assert_run_refused(p, n, "argc");

        /* argc and the strings disagree. */
        n = put_run(p, 1, 1000, 0, 3, "ls\0-l", 6);
        assert_run_refused(p, n, "argc is 3 but argv holds 2");
        n = put_run(p, 1, 1000, 0, 1, "", 0);
        assert_run_refused(p, n, "argc is 1 but argv holds 0");
        n = put_run(p, 1, 1000, 0, 1, "ls\0-l", 6);
        assert_run_refused(p, n, "trailing");
        n = put_run(p, 1, 1000, 0, 1, "ls\0\0", 4);
        assert_run_refused(p, n, "trailing");

        /* Missing NULs. */
        n = put_run(p, 1, 1000, 0, 1, "ls", 2);
        assert_run_refused(p, n, "argv[0] has no NUL");
        n = put_run(p, 1, 1000, 0, 2, "ls\0-l", 5);
        assert_run_refused(p, n, "argv[1] has no NUL");

        /* Empty first argument. */
        n = put_run(p, 1, 1000, 0, 1, "", 1);
        assert_run_refused(p, n, "empty");
        n = put_run(p, 1, 1000, 0, 2, "\0ls", 4);
        assert_run_refused(p, n, "empty");
}
END_TEST

START_TEST(run_rejects_length_over_protocol)
{
        /* A frame_t made by hand is held to the protocol's limit too. */
        static uint8_t p[FRAME_MAX_PAYLOAD + 1];
        frame_t f = view(FRAME_RUN, p, FRAME_MAX_PAYLOAD + 1);
        frame_run_t run = {0};
        hg_error_t err = {0};
        assert_err(frame_run_decode(&f, &run, &err), &err, -EMSGSIZE, "limit");
        ck_assert_ptr_null(run.storage);
}
END_TEST

START_TEST(run_free_is_safe)
{
        frame_run_t zero = {0};
        frame_run_free(&zero);
        frame_run_free(&zero);
        frame_run_free(NULL);

        uint8_t p[64];
        uint32_t n = put_run(p, 1, 1000, 0, 2, "ls\0-l", 6);
        frame_t f = view(FRAME_RUN, p, n);
        frame_run_t run = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(frame_run_decode(&f, &run, &err), 0);
        frame_run_free(&run);
        frame_run_free(&run);
        ck_assert_ptr_null(run.storage);
        ck_assert_uint_eq(run.argc, 0);
}
END_TEST

/* frame_run_encode fails with code and leaves its outputs alone. */
static void assert_encode_refused(uint32_t timeout_ms, uint32_t tail_max, char *const argv[],
                                  int code)
{
        uint8_t *payload = (uint8_t *)"untouched";
        uint32_t len = 777;
        ck_assert_int_eq(frame_run_encode(1, timeout_ms, tail_max, argv, &payload, &len), code);
        ck_assert_str_eq((const char *)payload, "untouched");
        ck_assert_uint_eq(len, 777);
}

START_TEST(run_encode_rejects)
{
        char *ls[] = {"ls", NULL};
        assert_encode_refused(0, 0, ls, -EINVAL);
        assert_encode_refused(FRAME_RUN_TIMEOUT_MAX_MS + 1, 0, ls, -EINVAL);
        assert_encode_refused(1000, FRAME_RUN_TAIL_MAX + 1, ls, -EINVAL);
        assert_encode_refused(1000, 0, NULL, -EINVAL);
        char *none[] = {NULL};
        assert_encode_refused(1000, 0, none, -EINVAL);
        char *empty_first[] = {"", "ls", NULL};
        assert_encode_refused(1000, 0, empty_first, -EINVAL);

        char *many[FRAME_RUN_MAX_ARGS + 2];
        for (size_t i = 0; i < FRAME_RUN_MAX_ARGS + 1; i++)
                many[i] = "a";
        many[FRAME_RUN_MAX_ARGS + 1] = NULL;
        assert_encode_refused(1000, 0, many, -EINVAL);

        /* One byte over the largest payload: -E2BIG. */
        size_t big_len = FRAME_MAX_PAYLOAD - 16;
        _cleanup_free_ char *big = malloc(big_len + 1);
        ck_assert_ptr_nonnull(big);
        memset(big, 'x', big_len);
        big[big_len] = '\0';
        char *one[] = {big, NULL};
        assert_encode_refused(1000, 0, one, -E2BIG);

        /* Far over, spread across arguments. */
        char *spread[] = {big, big, big, NULL};
        assert_encode_refused(1000, 0, spread, -E2BIG);
        char *split[] = {big + 10, "12345678", NULL}; /* 16 + 65511 + 9 = 65536 */
        _cleanup_free_ uint8_t *payload = NULL;
        uint32_t len = 0;
        ck_assert_int_eq(frame_run_encode(1, 1, 0, split, &payload, &len), 0);
        ck_assert_uint_eq(len, FRAME_MAX_PAYLOAD);
        char *split_over[] = {big + 10, "123456789", NULL};
        assert_encode_refused(1000, 0, split_over, -E2BIG);
}
END_TEST

/* ---- RUN_RESULT -------------------------------------------------------- */

START_TEST(run_result_round_trip)
{
        static const struct {
                frame_exit_t exit;
                bool truncated;
                const char *tail;
        } t[] = {
            {{FRAME_END_EXITED, 0}, false, ""},
            {{FRAME_END_EXITED, 3}, true, "...last lines\nof output\n"},
            {{FRAME_END_SIGNALED, 15}, false, "x"},
            {{FRAME_END_TIMEOUT, 124}, true, "slow"},
            {{FRAME_END_NOT_STARTED, 127}, false, "exec: no such file"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                frame_run_result_t rr = {
                    .id = 0xdeadbeef - (uint32_t)i, .exit = t[i].exit, .truncated = t[i].truncated};
                uint8_t buf[128];
                uint32_t tail_len = (uint32_t)strlen(t[i].tail);
                uint32_t len = FRAME_RUN_RESULT_FIXED + tail_len;
                ck_assert_int_eq(frame_header_encode(FRAME_RUN_RESULT, len, buf), 0);
                frame_run_result_encode_fixed(&rr, buf + FRAME_HEADER_SIZE);
                const uint8_t want_fixed[] = {(uint8_t)(rr.id >> 24), (uint8_t)(rr.id >> 16),
                                              (uint8_t)(rr.id >> 8),  (uint8_t)rr.id,
                                              (uint8_t)t[i].exit.end, t[i].exit.value,
                                              t[i].truncated,         0};
                ck_assert_int_eq(memcmp(buf + FRAME_HEADER_SIZE, want_fixed, sizeof(want_fixed)),
                                 0);
                memcpy(buf + FRAME_HEADER_SIZE + FRAME_RUN_RESULT_FIXED, t[i].tail, tail_len);
                frame_t f = parse_ok(buf, FRAME_HEADER_SIZE + len, FRAME_HEADER_SIZE + len);

                frame_run_result_t back;
                hg_error_t err = {0};
                ck_assert_msg(frame_run_result_decode(&f, &back, &err) == 0, "%s", err.message);
                ck_assert_uint_eq(back.id, rr.id);
                ck_assert_int_eq(back.exit.end, t[i].exit.end);
                ck_assert_uint_eq(back.exit.value, t[i].exit.value);
                ck_assert_int_eq(back.truncated, t[i].truncated);
                ck_assert_uint_eq(back.tail_len, tail_len);
                ck_assert_ptr_eq(back.tail, f.payload + FRAME_RUN_RESULT_FIXED);
                ck_assert_int_eq(memcmp(back.tail, t[i].tail, tail_len), 0);
        }
}
END_TEST

static void assert_result_refused(const uint8_t *payload, uint32_t len, const char *needle)
{
        frame_t f = view(FRAME_RUN_RESULT, payload, len);
        frame_run_result_t rr = {.id = 55, .tail_len = 66};
        hg_error_t err = {0};
        assert_err(frame_run_result_decode(&f, &rr, &err), &err, -EPROTO, needle);
        ck_assert_uint_eq(rr.id, 55);
        ck_assert_uint_eq(rr.tail_len, 66);
        ck_assert_ptr_null(rr.tail);
}

START_TEST(run_result_rejects)
{
        uint8_t p[16] = {0, 0, 0, 1, FRAME_END_EXITED, 0, 0, 0};
        for (uint32_t len = 0; len < FRAME_RUN_RESULT_FIXED; len++)
                assert_result_refused(p, len, "at least 8");
        p[4] = 4;
        assert_result_refused(p, 8, "end kind");
        p[4] = FRAME_END_SIGNALED;
        p[5] = 0;
        assert_result_refused(p, 8, "signal");
        p[5] = 65;
        assert_result_refused(p, 8, "signal");
        p[4] = FRAME_END_TIMEOUT;
        p[5] = 9;
        assert_result_refused(p, 8, "124");
        p[4] = FRAME_END_NOT_STARTED;
        p[5] = 1;
        assert_result_refused(p, 8, "127");
        p[4] = FRAME_END_EXITED;
        p[5] = 0;
        p[6] = 2;
        assert_result_refused(p, 8, "truncated");
        p[6] = 0xff;
        assert_result_refused(p, 10, "truncated");
        p[6] = 1;
        p[7] = 1;
        assert_result_refused(p, 8, "reserved");
}
END_TEST

/* ---- every decoder ----------------------------------------------------- */

START_TEST(decoders_check_type)
{
        static const uint8_t p[64] = {FRAME_CHANNEL_IO};
        frame_t f = view(FRAME_STDOUT, p, FRAME_HELLO_SIZE);
        hg_error_t err = {0};
        frame_hello_t h;
        assert_err(frame_hello_decode(&f, &h, &err), &err, -EINVAL, "STDOUT");
        f.length = FRAME_EXIT_SIZE;
        frame_exit_t e;
        assert_err(frame_exit_decode(&f, &e, &err), &err, -EINVAL, "EXIT decoder");
        f = view(FRAME_HELLO, p, 1);
        int signo;
        assert_err(frame_signal_decode(&f, &signo, &err), &err, -EINVAL, "HELLO");
        f = view((frame_type_t)0x55, p, 20);
        frame_run_t run = {0};
        assert_err(frame_run_decode(&f, &run, &err), &err, -EINVAL, "unknown");
        ck_assert_ptr_null(run.storage);
        frame_run_result_t rr;
        f = view(FRAME_RUN, p, 8);
        assert_err(frame_run_result_decode(&f, &rr, &err), &err, -EINVAL, "RUN frame");
}
END_TEST

START_TEST(decoders_err_may_be_null)
{
        static const uint8_t p[64] = {0};
        frame_t f = view(FRAME_HELLO, p, FRAME_HELLO_SIZE);
        frame_hello_t h;
        ck_assert_int_eq(frame_hello_decode(&f, &h, NULL), -EPROTO);
        f = view(FRAME_EXIT, p, 1);
        frame_exit_t e;
        ck_assert_int_eq(frame_exit_decode(&f, &e, NULL), -EPROTO);
        f = view(FRAME_SIGNAL, p, 1);
        int signo;
        ck_assert_int_eq(frame_signal_decode(&f, &signo, NULL), -EPROTO);
        f = view(FRAME_RUN, p, 20);
        frame_run_t run = {0};
        ck_assert_int_eq(frame_run_decode(&f, &run, NULL), -EPROTO);
        f = view(FRAME_RUN_RESULT, p, 3);
        frame_run_result_t rr;
        ck_assert_int_eq(frame_run_result_decode(&f, &rr, NULL), -EPROTO);
}
END_TEST

static Suite *frame_suite(void)
{
        Suite *s = suite_create("frame");
        TCase *tc = tcase_create("header");
        tcase_add_test(tc, type_names);
        tcase_add_test(tc, header_layout);
        tcase_add_test(tc, parse_reads_big_endian_length);
        tcase_add_test(tc, parse_needs_more);
        tcase_add_test(tc, parse_rejects_bad_version);
        tcase_add_test(tc, parse_rejects_unknown_type);
        tcase_add_test(tc, parse_rejects_reserved);
        tcase_add_test(tc, parse_rejects_oversize_from_header);
        tcase_add_test(tc, parse_err_may_be_null);
        tcase_add_test(tc, parse_back_to_back);
        suite_add_tcase(s, tc);
        tc = tcase_create("payloads");
        tcase_add_test(tc, hello_round_trip);
        tcase_add_test(tc, hello_rejects);
        tcase_add_test(tc, challenge_round_trip);
        tcase_add_test(tc, challenge_proof_reject);
        tcase_add_test(tc, taken_round_trip);
        tcase_add_test(tc, taken_rejects);
        tcase_add_test(tc, exit_round_trip);
        tcase_add_test(tc, exit_rejects);
        tcase_add_test(tc, signal_allowed_set);
        tcase_add_test(tc, signal_round_trip);
        tcase_add_test(tc, signal_rejects);
        tcase_add_test(tc, run_byte_layout);
        tcase_add_test(tc, run_round_trips);
        tcase_add_test(tc, run_rejects);
        tcase_add_test(tc, run_rejects_length_over_protocol);
        tcase_add_test(tc, run_free_is_safe);
        tcase_add_test(tc, run_encode_rejects);
        tcase_add_test(tc, run_result_round_trip);
        tcase_add_test(tc, run_result_rejects);
        tcase_add_test(tc, decoders_check_type);
        tcase_add_test(tc, resize_round_trip_and_bounds);
        tcase_add_test(tc, decoders_err_may_be_null);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(frame_suite());
}
