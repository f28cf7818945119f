/* Unit tests for common/k8s/execstream.c: the exec subprotocols' names, the
 * CLOSE and resize messages, the demux of what a server sends (ready
 * messages, stdout and stderr apart, one status, channels a server never
 * sends refused) and the status JSON's exit code. */
#include <string.h>

#include "cleanup.h"
#include "execstream.h"
#include "unit.h"

START_TEST(test_proto_names)
{
        exs_proto_t p = EXS_PROTO_NONE;
        ck_assert_int_eq(exs_proto_parse("v5.channel.k8s.io", 17, &p), 0);
        ck_assert_int_eq(p, EXS_PROTO_V5);
        ck_assert_int_eq(exs_proto_parse("v4.channel.k8s.io", 17, &p), 0);
        ck_assert_int_eq(p, EXS_PROTO_V4);
        ck_assert_int_eq(exs_proto_parse("v4.base64.channel.k8s.io", 24, &p), -EPROTONOSUPPORT);
        ck_assert_int_eq(exs_proto_parse("channel.k8s.io", 14, &p), -EPROTONOSUPPORT);
        ck_assert_int_eq(exs_proto_parse("v5.channel.k8s.iox", 17, &p), 0); /* length given */
        ck_assert_int_eq(exs_proto_parse("", 0, &p), -EPROTONOSUPPORT);
}
END_TEST

START_TEST(test_close_and_resize)
{
        uint8_t m[2] = {0, 0};
        ck_assert_int_eq(exs_encode_close(EXS_PROTO_V5, EXS_CH_STDIN, m), 0);
        ck_assert_int_eq(m[0], 255);
        ck_assert_int_eq(m[1], 0);
        ck_assert_int_eq(exs_encode_close(EXS_PROTO_V4, EXS_CH_STDIN, m), -EPROTONOSUPPORT);
        uint8_t r[EXS_RESIZE_MAX];
        size_t n = exs_encode_resize(65535, 24, r);
        ck_assert_int_eq(r[0], 4);
        ck_assert_int_eq(n, 1 + strlen("{\"Width\":65535,\"Height\":24}"));
        ck_assert(memcmp(r + 1, "{\"Width\":65535,\"Height\":24}", n - 1) == 0);
}
END_TEST

static int demux(exs_demux_t *d, const char *msg, size_t len, int *ch, const uint8_t **data,
                 size_t *n)
{
        hg_error_t err = {0};
        return exs_demux_message(d, (const uint8_t *)msg, len, ch, data, n, &err);
}

START_TEST(test_demux_channels)
{
        exs_demux_t d;
        exs_demux_init(&d, EXS_PROTO_V5);
        int ch = -1;
        const uint8_t *data = NULL;
        size_t n = 99;
        /* ready: the channel byte alone */
        ck_assert_int_eq(demux(&d, "\x01", 1, &ch, &data, &n), 0);
        ck_assert_int_eq(ch, 1);
        ck_assert_uint_eq(n, 0);
        ck_assert_int_eq(demux(&d, "\x01out", 4, &ch, &data, &n), 0);
        ck_assert_int_eq(ch, EXS_CH_STDOUT);
        ck_assert_uint_eq(n, 3);
        ck_assert(memcmp(data, "out", 3) == 0);
        ck_assert_int_eq(demux(&d,
                               "\x02"
                               "e\0r",
                               4, &ch, &data, &n),
                         0);
        ck_assert_int_eq(ch, EXS_CH_STDERR);
        ck_assert_uint_eq(n, 3);
        ck_assert_int_eq(demux(&d, "\x03", 1, &ch, &data, &n), 0); /* empty status: ready */
        ck_assert(!d.status_done);
        ck_assert_int_eq(demux(&d, "\x03{\"status\":\"Success\"}", 21, &ch, &data, &n), 0);
        ck_assert_int_eq(ch, EXS_CH_STATUS);
        ck_assert_uint_eq(n, 0);
        ck_assert(d.status_done);
        ck_assert_int_eq(demux(&d, "\x03{}", 3, &ch, &data, &n), -EPROTO); /* a second status */
        ck_assert_uint_eq(d.bytes[1], 3);
        ck_assert_uint_eq(d.bytes[2], 3);
        exs_demux_free(&d);
}
END_TEST

START_TEST(test_demux_refuses)
{
        static const char *const bad[] = {"\x00stdin", "\x04{}", "\xff\x00", "\x05x", "\x80"};
        static const size_t lens[] = {6, 3, 2, 2, 1};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                exs_demux_t d;
                exs_demux_init(&d, EXS_PROTO_V4);
                int ch = -1;
                const uint8_t *data = NULL;
                size_t n = 0;
                hg_error_t err = {0};
                ck_assert_int_eq(
                    exs_demux_message(&d, (const uint8_t *)bad[i], lens[i], &ch, &data, &n, &err),
                    -EPROTO);
                ck_assert_msg(strstr(err.message, "never sends"), "%s", err.message);
                exs_demux_free(&d);
        }
        exs_demux_t d;
        exs_demux_init(&d, EXS_PROTO_V5);
        int ch;
        const uint8_t *data;
        size_t n;
        ck_assert_int_eq(demux(&d, "", 0, &ch, &data, &n), -EPROTO);
        /* a status over the bound */
        size_t big = EXS_MAX_STATUS_BYTES + 2;
        char *m = calloc(1, big);
        ck_assert_ptr_nonnull(m);
        m[0] = 3;
        ck_assert_int_eq(demux(&d, m, big, &ch, &data, &n), -EPROTO);
        free(m);
        exs_demux_free(&d);
        /* no protocol agreed: nothing is demuxed */
        exs_demux_init(&d, EXS_PROTO_NONE);
        ck_assert_int_eq(demux(&d, "\x01x", 2, &ch, &data, &n), -EPROTO);
        exs_demux_free(&d);
}
END_TEST

static int status_exit(const char *json, int *code, hg_error_t *err)
{
        return exs_status_exit(json, strlen(json), code, err);
}

START_TEST(test_status_exit)
{
        int code = -1;
        hg_error_t err = {0};
        ck_assert_int_eq(status_exit("{\"metadata\":{},\"status\":\"Success\"}", &code, &err), 0);
        ck_assert_int_eq(code, 0);
        ck_assert_int_eq(
            status_exit(
                "{\"metadata\":{},\"status\":\"Failure\",\"message\":\"command terminated with "
                "non-zero exit code: error executing command [sh -c exit 7], exit code 7\","
                "\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[{\"reason\":"
                "\"ExitCode\",\"message\":\"7\"}]}}",
                &code, &err),
            0);
        ck_assert_int_eq(code, 7);
        ck_assert_int_eq(
            status_exit("{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\","
                        "\"details\":{\"causes\":[{\"reason\":\"Other\",\"message\":\"x\"},"
                        "{\"reason\":\"ExitCode\",\"message\":\"255\"}]}}",
                        &code, &err),
            0);
        ck_assert_int_eq(code, 255);
}
END_TEST

START_TEST(test_status_refused)
{
        static const char *const bad[] = {
            "",
            "not json",
            "[]",
            "{\"status\":7}",
            "{\"status\":\"Maybe\"}",
            "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\"}",
            "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":[]}}",
            "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":"
            "[{\"reason\":\"ExitCode\",\"message\":\"256\"}]}}",
            "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":"
            "[{\"reason\":\"ExitCode\",\"message\":\"-1\"}]}}",
            "{\"status\":\"Failure\",\"reason\":\"NonZeroExitCode\",\"details\":{\"causes\":"
            "[{\"reason\":\"ExitCode\",\"message\":\" 3\"}]}}",
            "{\"status\":\"Success\",\"status\":\"Success\"}",
            "{\"a\":[[[[[[[[[[[[1]]]]]]]]]]]],\"status\":\"Success\"}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                int code = -7;
                hg_error_t err = {0};
                ck_assert_msg(status_exit(bad[i], &code, &err) == -EPROTO, "accepted: %s", bad[i]);
                ck_assert_int_eq(code, -7);
                ck_assert(err.message[0]);
        }
        int code = -7;
        hg_error_t err = {0};
        ck_assert_int_eq(
            status_exit("{\"status\":\"Failure\",\"reason\":\"InternalError\",\"message\":"
                        "\"container not found (\\\"nope\\\")\"}",
                        &code, &err),
            -ECANCELED);
        ck_assert_ptr_nonnull(strstr(err.message, "container not found"));
        ck_assert_int_eq(code, -7);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("execstream");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_proto_names);
        tcase_add_test(tc, test_close_and_resize);
        tcase_add_test(tc, test_demux_channels);
        tcase_add_test(tc, test_demux_refuses);
        tcase_add_test(tc, test_status_exit);
        tcase_add_test(tc, test_status_refused);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(suite());
}
