/* Unit tests for common/k8s/wsexec.c's session, replayed over bytes in
 * memory (wsexec_replay): the server's WebSocket frames through wslay and
 * our callbacks to stdout, stderr and the exit status, read whole and one
 * byte at a time; fragments with a ping between them; and what must fail:
 * a masked server frame, a text frame, an oversize message, no status
 * before the end, a status that is not an exit code, an output that
 * cannot be written. The connection itself is tested on the node
 * (tests/node/test_node_client.sh). */
#include <string.h>

#include "cleanup.h"
#include "strbuf.h"
#include "unit.h"
#include "wsexec.h"

typedef struct out {
        strbuf_t o, e;
        bool fail;
} out_t;

static int collect(void *ud, int ch, const uint8_t *d, size_t n)
{
        out_t *o = ud;
        if (o->fail)
                return -EPIPE;
        return strbuf_append(ch == 1 ? &o->o : &o->e, (const char *)d, n);
}

/* Appends one server frame (unmasked): fin, opcode, payload. */
static void frame(strbuf_t *b, bool fin, int opcode, const void *p, size_t n)
{
        uint8_t h[10];
        size_t hn = 2;
        h[0] = (uint8_t)((fin ? 0x80 : 0) | opcode);
        if (n < 126) {
                h[1] = (uint8_t)n;
        } else if (n < 65536) {
                h[1] = 126, h[2] = (uint8_t)(n >> 8), h[3] = (uint8_t)n, hn = 4;
        } else {
                h[1] = 127, hn = 10;
                for (int i = 0; i < 8; i++)
                        h[2 + i] = (uint8_t)((uint64_t)n >> (56 - 8 * i));
        }
        ck_assert_int_eq(strbuf_append(b, (const char *)h, hn), 0);
        ck_assert_int_eq(strbuf_append(b, p, n), 0);
}

static void msg(strbuf_t *b, int ch, const char *text)
{
        strbuf_t m = {0};
        char c = (char)ch;
        ck_assert_int_eq(strbuf_append(&m, &c, 1), 0);
        ck_assert_int_eq(strbuf_puts(&m, text), 0);
        frame(b, true, 2, m.data, m.len);
        strbuf_free(&m);
}

#define SUCCESS "{\"metadata\":{},\"status\":\"Success\"}"
#define EXIT7                                                                                     \
        "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with non-zero " \
        "exit code\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":"        \
        "\"ExitCode\",\"message\":\"7\"}]}}"

static int replay(const strbuf_t *b, size_t chunk, out_t *o, wsexec_result_t *res, hg_error_t *err)
{
        wsexec_io_t io = {.in_fd = -1, .output = collect, .ud = o};
        return wsexec_replay(EXS_PROTO_V5, (const uint8_t *)b->data, b->len, chunk, &io, res, err);
}

static void free_out(out_t *o)
{
        strbuf_free(&o->o);
        strbuf_free(&o->e);
}

START_TEST(test_session_whole_and_bytewise)
{
        strbuf_t b = {0};
        msg(&b, 1, "");
        msg(&b, 1, "hello ");
        msg(&b, 2, "on stderr");
        msg(&b, 1, "world");
        msg(&b, 3, SUCCESS);
        frame(&b, true, 8, "\x03\xe8", 2); /* close 1000 */
        static const size_t chunks[] = {0, 1, 2, 7};
        for (size_t i = 0; i < ARRAY_SIZE(chunks); i++) {
                out_t o = {0};
                wsexec_result_t res;
                hg_error_t err = {0};
                ck_assert_int_eq(replay(&b, chunks[i], &o, &res, &err), 0);
                ck_assert_int_eq(res.failure, WSEXEC_OK);
                ck_assert_int_eq(res.exit_code, 0);
                ck_assert_str_eq(o.o.data, "hello world");
                ck_assert_str_eq(o.e.data, "on stderr");
                ck_assert_uint_eq(res.bytes_out, 11);
                ck_assert_uint_eq(res.bytes_err, 9);
                free_out(&o);
        }
        strbuf_free(&b);
}
END_TEST

START_TEST(test_exit_code_and_eof_after_status)
{
        strbuf_t b = {0};
        msg(&b, 1, "x");
        msg(&b, 3, EXIT7); /* then EOF, no close frame: an older server */
        out_t o = {0};
        wsexec_result_t res;
        hg_error_t err = {0};
        ck_assert_int_eq(replay(&b, 0, &o, &res, &err), 0);
        ck_assert_int_eq(res.failure, WSEXEC_OK);
        ck_assert_int_eq(res.exit_code, 7);
        free_out(&o);
        strbuf_free(&b);
}
END_TEST

START_TEST(test_fragments_with_ping)
{
        strbuf_t b = {0};
        frame(&b, false, 2,
              "\x01"
              "ab",
              3);
        frame(&b, true, 9, "ping", 4);
        frame(&b, true, 0, "cd", 2);
        msg(&b, 3, SUCCESS);
        out_t o = {0};
        wsexec_result_t res;
        hg_error_t err = {0};
        ck_assert_int_eq(replay(&b, 1, &o, &res, &err), 0);
        ck_assert_int_eq(res.failure, WSEXEC_OK);
        ck_assert_str_eq(o.o.data, "abcd");
        free_out(&o);
        strbuf_free(&b);
}
END_TEST

static void expect_failure(const strbuf_t *b, wsexec_failure_t want, const char *words)
{
        out_t o = {0};
        wsexec_result_t res;
        hg_error_t err = {0};
        int r = replay(b, 0, &o, &res, &err);
        ck_assert_msg(res.failure == want, "failure %s, not %s (%s)",
                      wsexec_failure_name(res.failure), wsexec_failure_name(want), err.message);
        if (want != WSEXEC_NO_START)
                ck_assert_int_lt(r, 0);
        ck_assert_msg(strstr(err.message, words), "'%s' lacks '%s'", err.message, words);
        free_out(&o);
}

START_TEST(test_failures)
{
        strbuf_t b = {0};
        /* a masked frame from the server (RFC 6455 5.1) */
        ck_assert_int_eq(strbuf_append(&b, "\x82\x82\x01\x02\x03\x04\x00\x00", 8), 0);
        msg(&b, 3, SUCCESS);
        expect_failure(&b, WSEXEC_PROTOCOL, "malformed (close 1002)");
        strbuf_free(&b);
        /* a text frame */
        frame(&b, true, 1, "\x01hi", 3);
        msg(&b, 3, SUCCESS);
        expect_failure(&b, WSEXEC_PROTOCOL, "text message");
        strbuf_free(&b);
        /* stdin's channel from the server */
        msg(&b, 0, "x");
        msg(&b, 3, SUCCESS);
        expect_failure(&b, WSEXEC_PROTOCOL, "never sends");
        strbuf_free(&b);
        /* an oversize message (over 1 MiB) */
        size_t big = 1024 * 1024 + 2;
        char *p = calloc(1, big);
        ck_assert_ptr_nonnull(p);
        p[0] = 1;
        frame(&b, true, 2, p, big);
        free(p);
        msg(&b, 3, SUCCESS);
        expect_failure(&b, WSEXEC_PROTOCOL, "close 1009");
        strbuf_free(&b);
        /* the end before a status */
        msg(&b, 1, "partial");
        expect_failure(&b, WSEXEC_CONNECT, "before the command's status");
        strbuf_free(&b);
        frame(&b, true, 8, "\x03\xe8", 2);
        expect_failure(&b, WSEXEC_CONNECT, "before the command's status");
        strbuf_free(&b);
        /* a status that is not an exit code: the command did not start */
        msg(&b, 3,
            "{\"status\":\"Failure\",\"reason\":\"InternalError\",\"message\":\"no such file\"}");
        expect_failure(&b, WSEXEC_NO_START, "no such file");
        strbuf_free(&b);
        msg(&b, 3, "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\"}");
        expect_failure(&b, WSEXEC_PROTOCOL, "without details");
        strbuf_free(&b);
}
END_TEST

START_TEST(test_output_unwritable)
{
        strbuf_t b = {0};
        msg(&b, 1, "x");
        msg(&b, 3, SUCCESS);
        out_t o = {.fail = true};
        wsexec_result_t res;
        hg_error_t err = {0};
        ck_assert_int_lt(replay(&b, 0, &o, &res, &err), 0);
        ck_assert_int_eq(res.failure, WSEXEC_LOCAL);
        ck_assert_ptr_nonnull(strstr(err.message, "stdout"));
        free_out(&o);
        strbuf_free(&b);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("wsexec");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_session_whole_and_bytewise);
        tcase_add_test(tc, test_exit_code_and_eof_after_status);
        tcase_add_test(tc, test_fragments_with_ping);
        tcase_add_test(tc, test_failures);
        tcase_add_test(tc, test_output_unwritable);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(suite());
}
