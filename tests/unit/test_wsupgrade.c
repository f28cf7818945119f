/* Unit tests for common/k8s/wsupgrade.c: the upgrade request, the accept
 * value (RFC 6455's own example), the 101's checks (accept, Upgrade,
 * Connection, a subprotocol we offered), error answers and their bodies
 * (Content-Length, chunked, to EOF), and malformed heads. */
#include <string.h>

#include "cleanup.h"
#include "unit.h"
#include "wsupgrade.h"

/* RFC 6455 section 1.3's example. */
#define KEY    "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

START_TEST(test_accept_rfc_example)
{
        char a[WSUP_ACCEPT_LEN + 1];
        wsup_accept_for(KEY, a);
        ck_assert_str_eq(a, ACCEPT);
        char k1[WSUP_KEY_LEN + 1], k2[WSUP_KEY_LEN + 1];
        ck_assert_int_eq(wsup_key_new(k1), 0);
        ck_assert_int_eq(wsup_key_new(k2), 0);
        ck_assert_uint_eq(strlen(k1), WSUP_KEY_LEN);
        ck_assert_str_ne(k1, k2);
}
END_TEST

START_TEST(test_request)
{
        strbuf_t b = {0};
        static const char *const extra[] = {"Impersonate-User: x", NULL};
        ck_assert_int_eq(wsup_request(&b, "10.0.0.1:443",
                                      "/api/v1/namespaces/a/pods/b/exec?command=ls", KEY,
                                      EXS_PROTO_NONE, "TOKEN", extra),
                         0);
        ck_assert(strncmp(b.data, "GET /api/v1/namespaces/a/pods/b/exec?command=ls HTTP/1.1\r\n",
                          58) == 0);
        ck_assert_ptr_nonnull(strstr(b.data, "\r\nHost: 10.0.0.1:443\r\n"));
        ck_assert_ptr_nonnull(
            strstr(b.data, "\r\nSec-WebSocket-Protocol: v5.channel.k8s.io, v4.channel.k8s.io\r\n"));
        ck_assert_ptr_nonnull(strstr(b.data, "\r\nSec-WebSocket-Key: " KEY "\r\n"));
        ck_assert_ptr_nonnull(strstr(b.data, "\r\nAuthorization: Bearer TOKEN\r\n"));
        ck_assert_ptr_nonnull(strstr(b.data, "\r\nImpersonate-User: x\r\n"));
        ck_assert(strcmp(b.data + b.len - 4, "\r\n\r\n") == 0);
        strbuf_free(&b);
        ck_assert_int_eq(wsup_request(&b, "h", "/", KEY, EXS_PROTO_NONE, NULL, NULL), 0);
        ck_assert_ptr_null(strstr(b.data, "Authorization"));
        strbuf_free(&b);
}
END_TEST

static int head(const char *text, wsup_answer_t *a, hg_error_t *err)
{
        return wsup_parse_head(text, strlen(text), KEY, EXS_PROTO_NONE, a, err);
}

#define OK101(proto)                                                  \
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"  \
        "Connection: Upgrade\r\nSec-WebSocket-Accept: " ACCEPT "\r\n" \
        "Sec-WebSocket-Protocol: " proto "\r\n\r\n"

START_TEST(test_101)
{
        wsup_answer_t a;
        hg_error_t err = {0};
        const char *t = OK101("v5.channel.k8s.io") "\x82\x01\x01";
        ck_assert_int_eq(head(t, &a, &err), 0);
        ck_assert_int_eq(a.status, 101);
        ck_assert_int_eq(a.proto, EXS_PROTO_V5);
        ck_assert_uint_eq(a.head_len,
                          strlen(t) - 3); /* the frame after the head is not the head's */
        ck_assert_int_eq(head(OK101("v4.channel.k8s.io"), &a, &err), 0);
        ck_assert_int_eq(a.proto, EXS_PROTO_V4);
        /* case and white space in headers */
        ck_assert_int_eq(
            head("HTTP/1.1 101 OK\r\nupgrade:  WebSocket \r\nconnection: keep-alive, upgrade\r\n"
                 "sec-websocket-accept:" ACCEPT
                 "\r\nSEC-WEBSOCKET-PROTOCOL: v5.channel.k8s.io\r\n\r\n",
                 &a, &err),
            0);
        /* not whole yet */
        ck_assert_int_eq(
            head("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n", &a, &err), -EAGAIN);
}
END_TEST

START_TEST(test_101_refused)
{
        static const char *const bad[] = {
            /* a protocol we did not offer, or none */
            OK101("v4.base64.channel.k8s.io"),
            OK101("channel.k8s.io"),
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: " ACCEPT "\r\n\r\n",
            /* a wrong accept */
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOX=\r\nSec-WebSocket-Protocol: "
            "v5.channel.k8s.io\r\n\r\n",
            /* no Upgrade, no Connection */
            "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: " ACCEPT "\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            "Sec-WebSocket-Accept: " ACCEPT "\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n\r\n",
            /* repeated */
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: " ACCEPT "\r\nSec-WebSocket-Protocol: v5.channel.k8s.io\r\n"
            "Sec-WebSocket-Protocol: v4.channel.k8s.io\r\n\r\n",
            /* malformed heads */
            "HTTP/2 101\r\n\r\n",
            "HTTP/1.1 1O1 x\r\n\r\n",
            "HTTP/1.1 101x\r\n\r\n",
            "HTTP/1.1 200 OK\r\n folded: header\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            "HTTP/1.1 200 OK\r\nX: a\x01b\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                wsup_answer_t a = {0};
                hg_error_t err = {0};
                ck_assert_msg(head(bad[i], &a, &err) == -EPROTO, "accepted #%zu", i);
                ck_assert(err.message[0]);
        }
        /* a head with a NUL, and one over the bound */
        wsup_answer_t a;
        hg_error_t err = {0};
        ck_assert_int_eq(
            wsup_parse_head("HTTP/1.1 200 OK\r\nX: \0\r\n\r\n", 25, KEY, EXS_PROTO_NONE, &a, &err),
            -EPROTO);
        char *big = malloc(WSUP_MAX_HEAD + 10);
        ck_assert_ptr_nonnull(big);
        memset(big, 'a', WSUP_MAX_HEAD + 10);
        ck_assert_int_eq(wsup_parse_head(big, WSUP_MAX_HEAD + 10, KEY, EXS_PROTO_NONE, &a, &err),
                         -EPROTO);
        ck_assert_int_eq(wsup_parse_head(big, WSUP_MAX_HEAD - 1, KEY, EXS_PROTO_NONE, &a, &err),
                         -EAGAIN);
        free(big);
}
END_TEST

/* An error answer's head and body: the body as wsup_body gives it, or NULL. */
static char *error_body(const char *text, bool eof, int *ret_status, int *ret_r)
{
        wsup_answer_t a;
        hg_error_t err = {0};
        ck_assert_int_eq(head(text, &a, &err), 0);
        *ret_status = a.status;
        strbuf_t b = {0};
        *ret_r = wsup_body(text + a.head_len, strlen(text) - a.head_len, eof, &a, &b, &err);
        return *ret_r == 0 ? strbuf_take(&b) : (strbuf_free(&b), NULL);
}

START_TEST(test_error_bodies)
{
        int st, r;
        char *b = error_body(
            "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n"
            "{\"kind\":\"x\"}\n",
            false, &st, &r);
        ck_assert_int_eq(st, 403);
        ck_assert_str_eq(b, "{\"kind\":\"x\"}\n");
        free(b);
        b = error_body("HTTP/1.1 404 Not Found\r\nContent-Length: 13\r\n\r\n{\"kind\"", false, &st,
                       &r);
        ck_assert_int_eq(r, -EAGAIN);
        free(b); /* what it holds on an error, if anything */
        b = error_body("HTTP/1.1 404 Not Found\r\nContent-Length: 13\r\n\r\n{\"kind\"", true, &st,
                       &r);
        ck_assert_int_eq(r, -EPROTO);
        free(b); /* what it holds on an error, if anything */
        b = error_body("HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "5\r\nhello\r\n1;ext=1\r\n!\r\n0\r\n\r\n",
                       false, &st, &r);
        ck_assert_int_eq(st, 400);
        ck_assert_str_eq(b, "hello!");
        free(b);
        b = error_body("HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                       false, &st, &r);
        ck_assert_int_eq(r, -EAGAIN);
        free(b); /* what it holds on an error, if anything */
        b = error_body("HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
                       true, &st, &r);
        ck_assert_int_eq(r, -EPROTO);
        free(b); /* what it holds on an error, if anything */
        b = error_body("HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                       false, &st, &r);
        ck_assert_int_eq(r, -EPROTO);
        free(b); /* what it holds on an error, if anything */
        b = error_body(
            "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n0\r\n\r\n",
            false, &st, &r);
        ck_assert_int_eq(r, -EPROTO);
        free(b); /* what it holds on an error, if anything */
        b = error_body("HTTP/1.1 500 x\r\n\r\nto the end", false, &st, &r);
        ck_assert_int_eq(r, -EAGAIN);
        free(b); /* what it holds on an error, if anything */
        b = error_body("HTTP/1.1 500 x\r\n\r\nto the end", true, &st, &r);
        ck_assert_str_eq(b, "to the end");
        free(b);
        b = error_body("HTTP/1.1 500 x\r\nContent-Length: 0\r\n\r\n", false, &st, &r);
        ck_assert_str_eq(b, "");
        free(b);
}
END_TEST

START_TEST(test_only_one_protocol)
{
        strbuf_t b = {0};
        ck_assert_int_eq(wsup_request(&b, "h", "/", KEY, EXS_PROTO_V4, NULL, NULL), 0);
        ck_assert_ptr_nonnull(strstr(b.data, "\r\nSec-WebSocket-Protocol: v4.channel.k8s.io\r\n"));
        strbuf_free(&b);
        wsup_answer_t a;
        hg_error_t err = {0};
        const char *v5 = OK101("v5.channel.k8s.io");
        const char *v4 = OK101("v4.channel.k8s.io");
        ck_assert_int_eq(wsup_parse_head(v4, strlen(v4), KEY, EXS_PROTO_V4, &a, &err), 0);
        ck_assert_int_eq(a.proto, EXS_PROTO_V4);
        /* a protocol we did not offer this time */
        ck_assert_int_eq(wsup_parse_head(v5, strlen(v5), KEY, EXS_PROTO_V4, &a, &err), -EPROTO);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("wsupgrade");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_accept_rfc_example);
        tcase_add_test(tc, test_request);
        tcase_add_test(tc, test_101);
        tcase_add_test(tc, test_101_refused);
        tcase_add_test(tc, test_error_bodies);
        tcase_add_test(tc, test_only_one_protocol);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(suite());
}
