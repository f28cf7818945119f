/* Unit tests for driver/ctl/ctlreq: the control socket's requests. Each op
 * with the members it takes; unknown ops, unknown members, wrong types,
 * missing required members, bad turn ids, out-of-range offsets, non-objects
 * and malformed JSON are refused with a message, and *ret is untouched. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "ctlreq.h"
#include "unit.h"

static ctlreq_t parse_ok(const char *text)
{
        ctlreq_t q;
        hg_error_t err = {0};
        int r = ctlreq_parse(text, strlen(text), &q, &err);
        ck_assert_msg(r == 0, "refused (%d: %s): %s", r, err.message, text);
        return q;
}

static void refused(const char *text, const char *needle)
{
        ctlreq_t q;
        memset(&q, 0x5a, sizeof(q));
        ctlreq_t before = q;
        hg_error_t err = {0};
        int r = ctlreq_parse(text, strlen(text), &q, &err);
        ck_assert_msg(r < 0, "accepted: %s", text);
        ck_assert_int_eq(err.code, r);
        ck_assert_msg(err.message[0], "no message: %s", text);
        if (needle)
                ck_assert_msg(strstr(err.message, needle), "message \"%s\" lacks \"%s\"",
                              err.message, needle);
        ck_assert_msg(memcmp(&q, &before, sizeof(q)) == 0, "ret written on failure: %s", text);
}

START_TEST(every_op)
{
        static const char *const texts[] = {
            "{\"op\":\"ping\"}",
            "{\"op\":\"start\",\"spec\":\"{}\"}",
            "{\"op\":\"status\"}",
            "{\"op\":\"token\"}",
            "{\"op\":\"events\",\"from\":3}",
            "{\"op\":\"approvals\"}",
            "{\"op\":\"approve\",\"id\":\"a1\"}",
            "{\"op\":\"deny\",\"id\":\"a1\"}",
            "{\"op\":\"steer\",\"text\":\"go\"}",
            "{\"op\":\"close-stdin\"}",
            "{\"op\":\"signal\",\"signal\":\"INT\"}",
            "{\"op\":\"watch\",\"turn\":\"t-1\",\"from\":0}",
            "{\"op\":\"finish\",\"turn\":\"t-1\"}",
            "{\"op\":\"run\",\"argv\":[\"true\"],\"timeout_s\":3,\"tail_max\":10}",
            "{\"op\":\"tree\",\"timeout_s\":3}",
            "{\"op\":\"verify\",\"argv\":[\"make\",\"check\"]}",
            "{\"op\":\"screen\",\"turn\":\"t-1\"}",
            "{\"op\":\"send-keys\",\"keys\":[\"C-c\",\"ls\",\"Enter\"]}",
            "{\"op\":\"resize\",\"rows\":30,\"cols\":100}",
            "{\"op\":\"type\",\"data_base64\":\"aGk=\"}",
            "{\"op\":\"grade-begin\",\"spec\":\"{}\"}",
            "{\"op\":\"grade-finish\",\"spec\":\"{}\"}",
            "{\"op\":\"grade-show\",\"grade\":\"g-1\"}",
        };
        ck_assert_int_eq(ARRAY_SIZE(texts), CTLREQ_OP_COUNT);
        for (size_t i = 0; i < ARRAY_SIZE(texts); i++) {
                ctlreq_t q = parse_ok(texts[i]);
                ck_assert_int_eq(q.op, (int)i);
                ck_assert_ptr_nonnull(q.root);
                ctlreq_free(&q);
                ck_assert_ptr_null(q.root);
                ctlreq_free(&q); /* twice: a no-op */
        }
}
END_TEST

START_TEST(members_read)
{
        ctlreq_t q = parse_ok("{\"from\":123456789012,\"op\":\"watch\",\"turn\":\"t.42_x-y\"}");
        ck_assert_int_eq(q.op, CTLREQ_WATCH);
        ck_assert_str_eq(q.turn, "t.42_x-y");
        ck_assert_uint_eq(q.from, 123456789012u);
        ck_assert_ptr_null(q.spec);
        ctlreq_free(&q);
        q = parse_ok("{\"op\":\"start\",\"spec\":\"{\\\"turn\\\":1}\"}");
        ck_assert_str_eq(q.spec, "{\"turn\":1}");
        ck_assert_uint_eq(q.spec_len, 10);
        ck_assert_ptr_null(q.turn);
        ck_assert_uint_eq(q.from, 0);
        ctlreq_free(&q);
        q = parse_ok("{\"op\":\"status\"}");
        ck_assert_ptr_null(q.turn);
        ck_assert(!q.follow);
        ctlreq_free(&q);
        q = parse_ok("{\"op\":\"events\",\"from\":7,\"follow\":true}");
        ck_assert(q.follow);
        ck_assert_uint_eq(q.from, 7);
        ctlreq_free(&q);
        q = parse_ok("{\"op\":\"events\",\"follow\":false}");
        ck_assert(!q.follow);
        ctlreq_free(&q);
        q = parse_ok("{\"op\":\"start\",\"spec\":\"{}\",\"follow\":true}");
        ck_assert(q.follow);
        ctlreq_free(&q);
}
END_TEST

START_TEST(refusals)
{
        refused("", NULL);
        refused("[]", "object");
        refused("\"ping\"", "object");
        refused("{}", "op");
        refused("{\"op\":1}", "op");
        refused("{\"op\":\"PING\"}", "unknown op");
        refused("{\"op\":\"ping\",\"op\":\"ping\"}", NULL);       /* duplicate key */
        refused("{\"op\":\"ping\"} {\"op\":\"ping\"}", NULL);     /* two documents */
        refused("{\"op\":\"ping\",\"turn\":\"t\"}", "no member"); /* ping takes nothing */
        refused("{\"op\":\"status\",\"from\":1}", "no member");
        refused("{\"op\":\"start\"}", "needs \"spec\"");
        refused("{\"op\":\"start\",\"spec\":{}}", "string");
        refused("{\"op\":\"start\",\"spec\":\"a\\u0000b\"}", "u0000");
        refused("{\"op\":\"watch\",\"from\":-1}", "non-negative");
        refused("{\"op\":\"watch\",\"from\":1.5}", "non-negative");
        refused("{\"op\":\"watch\",\"from\":\"1\"}", "non-negative");
        refused("{\"op\":\"watch\",\"from\":9007199254740993}", "non-negative");
        refused("{\"op\":\"watch\",\"turn\":\"\"}", "turn");
        refused("{\"op\":\"watch\",\"turn\":\"a/b\"}", "turn");
        refused("{\"op\":\"watch\",\"turn\":\"../x\"}", "turn");
        refused("{\"op\":\"watch\",\"turn\":7}", "string");
        refused("{\"op\":\"finish\",\"abort\":7}", "string");
        refused("{\"op\":\"events\",\"follow\":1}", "true or false");
        refused("{\"op\":\"events\",\"follow\":\"yes\"}", "true or false");
        refused("{\"op\":\"watch\",\"follow\":true}", "no member");
        refused("{\"op\":\"approve\"}", "needs \"id\"");
        refused("{\"op\":\"run\",\"argv\":[]}", "non-empty");
        refused("{\"op\":\"run\",\"argv\":[1]}", "strings");
        refused("{\"op\":\"run\",\"argv\":\"ls\"}", "array");
        refused("{\"op\":\"run\",\"argv\":[\"ls\"],\"timeout_s\":true}", "non-negative");
        refused("{\"op\":\"tree\",\"argv\":[\"ls\"]}", "no member");
        refused("{\"op\":\"steer\",\"text\":\"a\",\"text2\":\"b\"}", "no member");
        refused("{\"op\":\"ping\",\"x\":{\"a\":{\"b\":{\"c\":{}}}}}", NULL); /* too deep */
        char a65[66];
        memset(a65, 'a', 65);
        a65[65] = '\0';
        char turn65[128];
        snprintf(turn65, sizeof(turn65), "{\"op\":\"status\",\"turn\":\"%s\"}", a65);
        refused(turn65, "turn");
}
END_TEST

START_TEST(names)
{
        ck_assert_str_eq(ctlreq_op_name(CTLREQ_CLOSE_STDIN), "close-stdin");
        ck_assert_str_eq(ctlreq_op_name(CTLREQ_OP_COUNT), "?");
        ck_assert(ctlreq_turn_id_ok("t-1"));
        ck_assert(!ctlreq_turn_id_ok(NULL));
        ck_assert(!ctlreq_turn_id_ok("a b"));
}
END_TEST

static Suite *ctlreq_suite(void)
{
        Suite *s = suite_create("ctlreq");
        TCase *tc = tcase_create("ctlreq");
        tcase_add_test(tc, every_op);
        tcase_add_test(tc, members_read);
        tcase_add_test(tc, refusals);
        tcase_add_test(tc, names);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(ctlreq_suite());
}
