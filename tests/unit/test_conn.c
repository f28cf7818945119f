/* Unit tests for common/conn over a socketpair: frames queued on one end come
 * out whole on the other, the output queue's bounds, a malformed or
 * oversize header, the peer's EOF, and the deadline-bounded helpers. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "conn.h"
#include "unit.h"

/* Two connected conns, a and b, each with max_payload max. */
static void pair(conn_t *a, conn_t *b, uint32_t max)
{
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        ck_assert_int_eq(conn_init(a, sv[0], max), 0);
        ck_assert_int_eq(conn_init(b, sv[1], max), 0);
}

/* One conn c on sv[0] and the raw peer descriptor, blocking, returned. */
static int half_pair(conn_t *c, uint32_t max)
{
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        ck_assert_int_eq(conn_init(c, sv[0], max), 0);
        return sv[1];
}

static void put_header(uint8_t *out, uint8_t type, uint32_t len)
{
        out[0] = FRAME_VERSION;
        out[1] = type;
        out[2] = 0;
        out[3] = 0;
        out[4] = (uint8_t)(len >> 24);
        out[5] = (uint8_t)(len >> 16);
        out[6] = (uint8_t)(len >> 8);
        out[7] = (uint8_t)len;
}

static void write_raw(int fd, const void *p, size_t n)
{
        ck_assert_int_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Fills b and waits (bounded) for its next frame. */
static frame_t next_frame(conn_t *b)
{
        frame_t f;
        hg_error_t err = {0};
        int r = conn_next_until(b, &f, conn_now_ms() + 5000, &err);
        ck_assert_msg(r == 1, "conn_next_until: %d (%s)", r, err.message);
        return f;
}

START_TEST(init_rejects_big_limit)
{
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        conn_t c = {.fd = -1};
        ck_assert_int_eq(conn_init(&c, sv[0], FRAME_MAX_PAYLOAD + 1), -EINVAL);
        ck_assert_int_eq(c.fd, -1);
        ck_assert_ptr_null(c.in);
        ck_assert_int_eq(conn_init(&c, sv[0], FRAME_MAX_PAYLOAD), 0);
        ck_assert_int_eq(c.fd, sv[0]);
        /* Made non-blocking. */
        ck_assert(fcntl(sv[0], F_GETFL) & O_NONBLOCK);
        ck_assert(!c.eof);
        ck_assert(!conn_out_pending(&c));
        conn_close(&c);
        ck_assert_int_eq(c.fd, -1);
        ck_assert_int_eq(fcntl(sv[0], F_GETFD), -1); /* closed by conn_close */
        ck_assert_int_eq(errno, EBADF);
        close(sv[1]);
}
END_TEST

START_TEST(round_trip_several_frames)
{
        conn_t a, b;
        pair(&a, &b, FRAME_MAX_PAYLOAD);
        uint8_t hello[FRAME_HELLO_SIZE];
        for (size_t i = 0; i < sizeof(hello); i++)
                hello[i] = (uint8_t)(i * 7);
        hello[0] = FRAME_CHANNEL_IO;
        static const char part1[] = "hello, ", part2[] = "world";
        ck_assert_int_eq(conn_queue(&a, FRAME_HELLO, hello, sizeof(hello), NULL, 0), 0);
        ck_assert_int_eq(conn_queue(&a, FRAME_WELCOME, NULL, 0, NULL, 0), 0);
        ck_assert_int_eq(conn_queue(&a, FRAME_STDOUT, part1, 7, part2, 5), 0);
        ck_assert_int_eq(conn_queue(&a, FRAME_STDIN, NULL, 0, part2, 5), 0);
        ck_assert_int_eq(conn_queue(&a, FRAME_STDIN, NULL, 0, NULL, 0), 0);
        ck_assert(conn_out_pending(&a));
        ck_assert_uint_eq(a.out_len, 5 * FRAME_HEADER_SIZE + sizeof(hello) + 12 + 5);
        ck_assert_int_eq(conn_flush(&a), 0);
        ck_assert(!conn_out_pending(&a));

        ck_assert_int_eq(conn_fill(&b), 0);
        frame_t f;
        hg_error_t err = {0};
        ck_assert_int_eq(conn_next(&b, &f, &err), 1);
        ck_assert_int_eq(f.type, FRAME_HELLO);
        ck_assert_uint_eq(f.length, sizeof(hello));
        ck_assert_int_eq(memcmp(f.payload, hello, sizeof(hello)), 0);
        ck_assert_int_eq(conn_next(&b, &f, &err), 1);
        ck_assert_int_eq(f.type, FRAME_WELCOME);
        ck_assert_uint_eq(f.length, 0);
        ck_assert_int_eq(conn_next(&b, &f, &err), 1);
        ck_assert_int_eq(f.type, FRAME_STDOUT);
        ck_assert_uint_eq(f.length, 12);
        ck_assert_int_eq(memcmp(f.payload, "hello, world", 12), 0);
        ck_assert_int_eq(conn_next(&b, &f, &err), 1);
        ck_assert_int_eq(f.type, FRAME_STDIN);
        ck_assert_int_eq(memcmp(f.payload, "world", 5), 0);
        ck_assert_int_eq(conn_next(&b, &f, &err), 1);
        ck_assert_int_eq(f.type, FRAME_STDIN);
        ck_assert_uint_eq(f.length, 0);
        ck_assert_int_eq(conn_next(&b, &f, &err), 0);
        ck_assert_int_eq(conn_next(&b, &f, &err), 0);
        ck_assert_str_eq(err.message, "");
        ck_assert(!b.eof);

        /* And back the other way. */
        ck_assert_int_eq(conn_queue(&b, FRAME_EXIT, "\0\3", 2, NULL, 0), 0);
        ck_assert_int_eq(conn_flush_until(&b, conn_now_ms() + 5000), 0);
        f = next_frame(&a);
        ck_assert_int_eq(f.type, FRAME_EXIT);
        ck_assert_uint_eq(f.length, 2);
        ck_assert_int_eq(f.payload[1], 3);
        conn_close(&a);
        conn_close(&b);
}
END_TEST

START_TEST(frames_split_across_reads)
{
        conn_t c;
        int peer = half_pair(&c, 64);
        uint8_t buf[2 * FRAME_HEADER_SIZE + 10];
        put_header(buf, FRAME_STDOUT, 6);
        memcpy(buf + FRAME_HEADER_SIZE, "abcdef", 6);
        put_header(buf + FRAME_HEADER_SIZE + 6, FRAME_STDERR, 4);
        memcpy(buf + 2 * FRAME_HEADER_SIZE + 6, "wxyz", 4);
        frame_t f;
        hg_error_t err = {0};
        /* One byte at a time: "need more" until each frame is whole. */
        size_t frames = 0;
        for (size_t i = 0; i < sizeof(buf); i++) {
                write_raw(peer, buf + i, 1);
                ck_assert_int_eq(conn_fill(&c), 0);
                int r = conn_next(&c, &f, &err);
                if (i == FRAME_HEADER_SIZE + 5 || i == sizeof(buf) - 1) {
                        ck_assert_msg(r == 1, "byte %zu: %d", i, r);
                        frames++;
                } else {
                        ck_assert_msg(r == 0, "byte %zu: %d (%s)", i, r, err.message);
                }
        }
        ck_assert_uint_eq(frames, 2);
        ck_assert_int_eq(f.type, FRAME_STDERR);
        ck_assert_int_eq(memcmp(f.payload, "wxyz", 4), 0);
        ck_assert_int_eq(conn_next(&c, &f, &err), 0);
        ck_assert_uint_eq(c.in_len, 0);
        conn_close(&c);
        close(peer);
}
END_TEST

START_TEST(fill_stops_at_one_frame_of_room)
{
        /* The buffer holds header + max_payload; the rest waits in the socket
         * until frames are taken out. */
        conn_t c;
        int peer = half_pair(&c, 16);
        uint8_t buf[10 * (FRAME_HEADER_SIZE + 16)];
        for (size_t i = 0; i < 10; i++) {
                uint8_t *p = buf + i * (FRAME_HEADER_SIZE + 16);
                put_header(p, FRAME_STDOUT, 16);
                memset(p + FRAME_HEADER_SIZE, 'a' + (int)i, 16);
        }
        write_raw(peer, buf, sizeof(buf));
        close(peer);
        for (size_t i = 0; i < 10; i++) {
                ck_assert_int_eq(conn_fill(&c), 0);
                ck_assert_uint_le(c.in_len, FRAME_HEADER_SIZE + 16);
                frame_t f;
                ck_assert_int_eq(conn_next(&c, &f, NULL), 1);
                ck_assert_uint_eq(f.length, 16);
                ck_assert_int_eq(f.payload[0], 'a' + (int)i);
                ck_assert_int_eq(f.payload[15], 'a' + (int)i);
        }
        ck_assert_int_eq(conn_fill(&c), 0);
        ck_assert(c.eof);
        frame_t f;
        ck_assert_int_eq(conn_next(&c, &f, NULL), 0);
        conn_close(&c);
}
END_TEST

/* A sized buffer takes many frames in one fill; every frame of that fill
 * stays where it was until the next fill (the driver logs them together),
 * a frame cut at the buffer's end is finished by the next fill, and a
 * buffer smaller than one frame is refused. */
START_TEST(sized_fill_takes_many_frames)
{
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        conn_t c;
        ck_assert_int_eq(conn_init_sized(&c, sv[0], 16, FRAME_HEADER_SIZE + 15), -EINVAL);
        size_t cap = 3 * (FRAME_HEADER_SIZE + 16) + FRAME_HEADER_SIZE + 5;
        ck_assert_int_eq(conn_init_sized(&c, sv[0], 16, cap), 0);
        uint8_t buf[10 * (FRAME_HEADER_SIZE + 16)];
        for (size_t i = 0; i < 10; i++) {
                uint8_t *p = buf + i * (FRAME_HEADER_SIZE + 16);
                put_header(p, FRAME_STDOUT, 16);
                memset(p + FRAME_HEADER_SIZE, 'a' + (int)i, 16);
        }
        write_raw(sv[1], buf, sizeof(buf));
        close(sv[1]);
        ck_assert_int_eq(conn_fill(&c), 0);
        ck_assert(conn_in_full(&c));
        const uint8_t *got[4];
        frame_t f;
        for (size_t i = 0; i < 3; i++) {
                ck_assert_int_eq(conn_next(&c, &f, NULL), 1);
                got[i] = f.payload;
        }
        ck_assert_int_eq(conn_next(&c, &f, NULL), 0); /* the fourth is cut */
        for (size_t i = 0; i < 3; i++) {
                ck_assert_int_eq(got[i][0], 'a' + (int)i);
                ck_assert_int_eq(got[i][15], 'a' + (int)i);
        }
        size_t seen = 3;
        while (!c.eof || c.in_len > c.in_used) {
                ck_assert_int_eq(conn_fill(&c), 0);
                while (conn_next(&c, &f, NULL) == 1) {
                        ck_assert_uint_eq(f.length, 16);
                        ck_assert_int_eq(f.payload[0], 'a' + (int)seen);
                        ck_assert_int_eq(f.payload[15], 'a' + (int)seen);
                        seen++;
                }
                if (c.eof && conn_next(&c, &f, NULL) == 0)
                        break;
        }
        ck_assert_uint_eq(seen, 10);
        ck_assert(!conn_in_full(&c));
        conn_close(&c);
}
END_TEST

START_TEST(can_queue_limits)
{
        conn_t a, b;
        pair(&a, &b, FRAME_MAX_PAYLOAD);
        ck_assert(conn_can_queue(&a, 0));
        ck_assert(conn_can_queue(&a, FRAME_MAX_PAYLOAD));
        ck_assert(!conn_can_queue(&a, FRAME_MAX_PAYLOAD + 1));
        ck_assert(!conn_can_queue(&a, SIZE_MAX));
        _cleanup_free_ uint8_t *big = calloc(1, FRAME_MAX_PAYLOAD);
        ck_assert_ptr_nonnull(big);
        /* CONN_OUT_MAX is four full frames; a fifth frame of any size fails. */
        for (int i = 0; i < 4; i++) {
                ck_assert(conn_can_queue(&a, FRAME_MAX_PAYLOAD));
                ck_assert_int_eq(conn_queue(&a, FRAME_STDOUT, big, FRAME_MAX_PAYLOAD, NULL, 0), 0);
        }
        ck_assert_uint_eq(a.out_len, CONN_OUT_MAX);
        ck_assert(!conn_can_queue(&a, 0));
        size_t before = a.out_len;
        ck_assert_int_eq(conn_queue(&a, FRAME_STDIN, NULL, 0, NULL, 0), -ENOBUFS);
        ck_assert_uint_eq(a.out_len, before);
        conn_close(&a);
        conn_close(&b);

        /* A smaller limit applies to payload plus payload2. */
        pair(&a, &b, 100);
        ck_assert(conn_can_queue(&a, 100));
        ck_assert(!conn_can_queue(&a, 101));
        ck_assert_int_eq(conn_queue(&a, FRAME_STDOUT, big, 60, big, 41), -ENOBUFS);
        ck_assert_int_eq(conn_queue(&a, FRAME_STDOUT, big, 60, big, SIZE_MAX), -ENOBUFS);
        ck_assert_uint_eq(a.out_len, 0);
        ck_assert_int_eq(conn_queue(&a, FRAME_STDOUT, big, 60, big, 40), 0);
        ck_assert_uint_eq(a.out_len, FRAME_HEADER_SIZE + 100);
        /* A type outside the set is refused, nothing queued. */
        ck_assert_int_eq(conn_queue(&a, (frame_type_t)0x06, NULL, 0, NULL, 0), -EINVAL);
        ck_assert_uint_eq(a.out_len, FRAME_HEADER_SIZE + 100);
        conn_close(&a);
        conn_close(&b);
}
END_TEST

START_TEST(flush_partial_then_rest)
{
        /* More than the socket buffer takes at once: flush leaves the rest
         * queued (EAGAIN is not an error) and the byte order survives. */
        conn_t a, b;
        pair(&a, &b, FRAME_MAX_PAYLOAD);
        int small = 4096;
        (void)setsockopt(a.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
        (void)setsockopt(b.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        _cleanup_free_ uint8_t *big = malloc(FRAME_MAX_PAYLOAD);
        ck_assert_ptr_nonnull(big);
        for (int i = 0; i < 4; i++) {
                memset(big, 'A' + i, FRAME_MAX_PAYLOAD);
                ck_assert_int_eq(conn_queue(&a, FRAME_STDOUT, big, FRAME_MAX_PAYLOAD, NULL, 0), 0);
        }
        ck_assert_int_eq(conn_flush(&a), 0);
        ck_assert(conn_out_pending(&a));
        int got = 0;
        int64_t deadline = conn_now_ms() + 10000;
        while (got < 4) {
                ck_assert_int_eq(conn_flush(&a), 0);
                ck_assert_int_eq(conn_fill(&b), 0);
                frame_t f;
                hg_error_t err = {0};
                int r = conn_next(&b, &f, &err);
                ck_assert_int_ge(r, 0);
                if (r == 1) {
                        ck_assert_uint_eq(f.length, FRAME_MAX_PAYLOAD);
                        ck_assert_int_eq(f.payload[0], 'A' + got);
                        ck_assert_int_eq(f.payload[FRAME_MAX_PAYLOAD - 1], 'A' + got);
                        got++;
                }
                ck_assert_msg(conn_now_ms() < deadline, "stuck after %d frames", got);
        }
        ck_assert(!conn_out_pending(&a));
        conn_close(&a);
        conn_close(&b);
}
END_TEST

START_TEST(flush_until_times_out)
{
        /* A peer that never reads: the deadline ends the wait. */
        conn_t a, b;
        pair(&a, &b, FRAME_MAX_PAYLOAD);
        int small = 4096;
        (void)setsockopt(a.fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
        _cleanup_free_ uint8_t *big = calloc(1, FRAME_MAX_PAYLOAD);
        ck_assert_ptr_nonnull(big);
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(conn_queue(&a, FRAME_STDOUT, big, FRAME_MAX_PAYLOAD, NULL, 0), 0);
        int64_t t0 = conn_now_ms();
        ck_assert_int_eq(conn_flush_until(&a, t0 + 100), -ETIMEDOUT);
        int64_t took = conn_now_ms() - t0;
        ck_assert_int_ge(took, 99);
        ck_assert_int_lt(took, 3000);
        ck_assert(conn_out_pending(&a));
        conn_close(&a);
        conn_close(&b);
}
END_TEST

START_TEST(flush_to_closed_peer)
{
        /* MSG_NOSIGNAL: -EPIPE, not a SIGPIPE that kills the process. */
        conn_t c;
        int peer = half_pair(&c, 64);
        close(peer);
        ck_assert_int_eq(conn_queue(&c, FRAME_STDIN, "x", 1, NULL, 0), 0);
        ck_assert_int_eq(conn_flush(&c), -EPIPE);
        ck_assert(conn_out_pending(&c));
        conn_close(&c);
}
END_TEST

START_TEST(oversize_header_is_an_error)
{
        conn_t c;
        int peer = half_pair(&c, FRAME_MAX_PAYLOAD);
        uint8_t hdr[FRAME_HEADER_SIZE];
        put_header(hdr, FRAME_STDOUT, 100000);
        write_raw(peer, hdr, sizeof(hdr));
        ck_assert_int_eq(conn_fill(&c), 0);
        frame_t f = {.type = (frame_type_t)0x77};
        hg_error_t err = {0};
        ck_assert_int_eq(conn_next(&c, &f, &err), -EMSGSIZE);
        ck_assert_int_eq(err.code, -EMSGSIZE);
        ck_assert(err.message[0] != '\0');
        ck_assert_int_eq(f.type, 0x77);
        conn_close(&c);
        close(peer);

        /* With a small limit, one byte over it is enough, before the payload. */
        peer = half_pair(&c, 16);
        put_header(hdr, FRAME_STDOUT, 17);
        write_raw(peer, hdr, sizeof(hdr));
        ck_assert_int_eq(conn_fill(&c), 0);
        ck_assert_int_eq(conn_next(&c, &f, &err), -EMSGSIZE);
        /* The blocking helper passes the error on too. */
        ck_assert_int_eq(conn_next_until(&c, &f, conn_now_ms() + 1000, &err), -EMSGSIZE);
        conn_close(&c);
        close(peer);
}
END_TEST

START_TEST(malformed_header_is_an_error)
{
        conn_t c;
        int peer = half_pair(&c, 64);
        uint8_t hdr[FRAME_HEADER_SIZE];
        put_header(hdr, 0x55, 0);
        write_raw(peer, hdr, sizeof(hdr));
        ck_assert_int_eq(conn_fill(&c), 0);
        frame_t f;
        hg_error_t err = {0};
        ck_assert_int_eq(conn_next(&c, &f, &err), -EPROTO);
        ck_assert(err.message[0] != '\0');
        conn_close(&c);
        close(peer);
}
END_TEST

START_TEST(eof_flag)
{
        conn_t c;
        int peer = half_pair(&c, 64);
        /* A whole frame, then half a header, then the peer leaves. */
        uint8_t buf[2 * FRAME_HEADER_SIZE + 3];
        put_header(buf, FRAME_STDOUT, 3);
        memcpy(buf + FRAME_HEADER_SIZE, "abc", 3);
        put_header(buf + FRAME_HEADER_SIZE + 3, FRAME_STDOUT, 0);
        write_raw(peer, buf, sizeof(buf) - 4);
        close(peer);
        ck_assert_int_eq(conn_fill(&c), 0);
        ck_assert(c.eof);
        frame_t f;
        hg_error_t err = {0};
        /* What arrived before EOF still comes out. */
        ck_assert_int_eq(conn_next_until(&c, &f, conn_now_ms() + 1000, &err), 1);
        ck_assert_int_eq(memcmp(f.payload, "abc", 3), 0);
        ck_assert_int_eq(conn_next(&c, &f, &err), 0);
        ck_assert_int_eq(conn_fill(&c), 0);
        ck_assert(c.eof);
        ck_assert_int_eq(conn_next_until(&c, &f, conn_now_ms() + 1000, &err), -ECONNRESET);
        ck_assert_int_eq(err.code, -ECONNRESET);
        conn_close(&c);
}
END_TEST

START_TEST(eof_seen_by_next_until)
{
        conn_t c;
        int peer = half_pair(&c, 64);
        close(peer);
        frame_t f;
        hg_error_t err = {0};
        int64_t t0 = conn_now_ms();
        ck_assert_int_eq(conn_next_until(&c, &f, t0 + 5000, &err), -ECONNRESET);
        ck_assert_int_lt(conn_now_ms() - t0, 2000);
        ck_assert(c.eof);
        conn_close(&c);
}
END_TEST

START_TEST(next_until_timeout)
{
        conn_t c;
        int peer = half_pair(&c, 64);
        /* Half a frame, then silence. */
        uint8_t hdr[FRAME_HEADER_SIZE];
        put_header(hdr, FRAME_STDOUT, 10);
        write_raw(peer, hdr, sizeof(hdr));
        frame_t f = {.type = (frame_type_t)0x77};
        hg_error_t err = {0};
        int64_t t0 = conn_now_ms();
        ck_assert_int_eq(conn_next_until(&c, &f, t0 + 100, &err), -ETIMEDOUT);
        int64_t took = conn_now_ms() - t0;
        ck_assert_msg(took >= 99 && took < 3000, "took %lld ms", (long long)took);
        ck_assert_int_eq(err.code, -ETIMEDOUT);
        ck_assert_msg(strstr(err.message, "in time"), "message: %s", err.message);
        ck_assert_int_eq(f.type, 0x77);
        /* A deadline already past fails at once. */
        t0 = conn_now_ms();
        ck_assert_int_eq(conn_next_until(&c, &f, t0 - 1, &err), -ETIMEDOUT);
        ck_assert_int_lt(conn_now_ms() - t0, 50);
        /* The rest arrives: the same call now succeeds. */
        write_raw(peer, "0123456789", 10);
        ck_assert_int_eq(conn_next_until(&c, &f, conn_now_ms() + 1000, &err), 1);
        ck_assert_int_eq(f.type, FRAME_STDOUT);
        ck_assert_int_eq(memcmp(f.payload, "0123456789", 10), 0);
        conn_close(&c);
        close(peer);
}
END_TEST

START_TEST(close_is_safe)
{
        conn_t c = {.fd = -1};
        conn_close(&c);
        conn_close(&c);
        ck_assert_int_eq(c.fd, -1);
        /* A zeroed conn owns no descriptor: fd 0 stays open. */
        int before = fcntl(0, F_GETFD);
        conn_t z;
        memset(&z, 0, sizeof(z));
        conn_close(&z);
        ck_assert_int_eq(fcntl(0, F_GETFD), before);
        ck_assert_int_eq(z.fd, -1);
        /* Closing an initialized conn twice closes its fd once. */
        conn_t a, b;
        pair(&a, &b, 64);
        conn_close(&a);
        conn_close(&a);
        conn_close(&b);
        ck_assert_ptr_null(b.in);
        ck_assert_ptr_null(b.out);
}
END_TEST

START_TEST(now_is_monotonic_ms)
{
        int64_t a = conn_now_ms();
        usleep(20000);
        int64_t b = conn_now_ms();
        ck_assert_int_ge(b - a, 19);
        ck_assert_int_lt(b - a, 2000);
}
END_TEST

static Suite *conn_suite(void)
{
        Suite *s = suite_create("conn");
        TCase *tc = tcase_create("conn");
        tcase_add_test(tc, init_rejects_big_limit);
        tcase_add_test(tc, round_trip_several_frames);
        tcase_add_test(tc, frames_split_across_reads);
        tcase_add_test(tc, fill_stops_at_one_frame_of_room);
        tcase_add_test(tc, sized_fill_takes_many_frames);
        tcase_add_test(tc, can_queue_limits);
        tcase_add_test(tc, flush_partial_then_rest);
        tcase_add_test(tc, flush_until_times_out);
        tcase_add_test(tc, flush_to_closed_peer);
        tcase_add_test(tc, oversize_header_is_an_error);
        tcase_add_test(tc, malformed_header_is_an_error);
        tcase_add_test(tc, eof_flag);
        tcase_add_test(tc, eof_seen_by_next_until);
        tcase_add_test(tc, next_until_timeout);
        tcase_add_test(tc, close_is_safe);
        tcase_add_test(tc, now_is_monotonic_ms);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(conn_suite());
}
