/* Unit tests for client/turnlines.c: the line splitter's offsets and its
 * bound (a line past it is told by its length, never held), the relay's
 * stdout read in hangar's order (the ready line first, with the sweep; its
 * outcome last; anything else, a second ready line above all, breaks the
 * order), fed whole and byte by byte, and the events' lines. */
#include <string.h>

#include "cleanup.h"
#include "turnlines.h"
#include "unit.h"

#define READY "{\"relay\":\"ready\",\"window\":true,\"sealed\":true,\"sweep\":{\"killed\":0}}\n"
#define DONE  "{\"relay\":\"done\",\"reason\":\"the harness exited\",\"status\":0}\n"

typedef struct seen {
        char lines[8][64];
        uint64_t offsets[8], lengths[8];
        int n;
} seen_t;

static int record(void *ud, const char *text, size_t len, uint64_t offset, uint64_t length)
{
        seen_t *s = ud;
        ck_assert_int_lt(s->n, 8);
        if (text)
                snprintf(s->lines[s->n], sizeof(s->lines[0]), "%.*s", (int)len, text);
        else
                snprintf(s->lines[s->n], sizeof(s->lines[0]), "<long>");
        s->offsets[s->n] = offset;
        s->lengths[s->n] = length;
        s->n++;
        return 0;
}

START_TEST(test_split_offsets)
{
        const char *in = "one\n\nthree-is-long\nfour";
        for (size_t chunk = 1; chunk <= strlen(in); chunk++) {
                linesplit_t ls;
                linesplit_init(&ls, 8, 100);
                seen_t s = {0};
                for (size_t i = 0; i < strlen(in); i += chunk) {
                        size_t n = strlen(in) - i < chunk ? strlen(in) - i : chunk;
                        ck_assert_int_eq(
                            linesplit_feed(&ls, (const uint8_t *)in + i, n, record, &s), 0);
                }
                ck_assert_int_eq(s.n, 3);
                ck_assert_str_eq(s.lines[0], "one");
                ck_assert_uint_eq(s.offsets[0], 100);
                ck_assert_str_eq(s.lines[1], "");
                ck_assert_uint_eq(s.offsets[1], 104);
                /* 13 bytes, over the bound of 8: told by its length */
                ck_assert_str_eq(s.lines[2], "<long>");
                ck_assert_uint_eq(s.offsets[2], 105);
                ck_assert_uint_eq(s.lengths[2], 13);
                ck_assert_uint_eq(linesplit_pending(&ls), 4);
                ck_assert_uint_le(ls.partial.len, 8);
                linesplit_free(&ls);
        }
}
END_TEST

static relaywatch_state_t feed_all(relaywatch_t *w, const char *bytes, size_t chunk)
{
        size_t len = strlen(bytes);
        for (size_t i = 0; i < len; i += chunk) {
                size_t n = len - i < chunk ? len - i : chunk;
                int r = relaywatch_feed(w, (const uint8_t *)bytes + i, n);
                ck_assert_int_ge(r, 0);
        }
        return w->state;
}

static relaywatch_state_t watch(const char *bytes, size_t chunk, char *why, size_t n)
{
        relaywatch_t w;
        relaywatch_init(&w);
        (void)feed_all(&w, bytes, chunk);
        relaywatch_state_t s = relaywatch_end(&w);
        snprintf(why, n, "%s", w.why);
        relaywatch_free(&w);
        return s;
}

START_TEST(test_relay_order)
{
        char why[256];
        for (size_t chunk = 1; chunk < 200; chunk += 37) {
                ck_assert_int_eq(watch(READY DONE, chunk, why, sizeof(why)), RELAYWATCH_ENDED);
                ck_assert_int_eq(watch(READY, chunk, why, sizeof(why)), RELAYWATCH_READY);
                /* the relay's own refusal, instead of its ready line */
                ck_assert_int_eq(
                    watch("{\"relay\":\"refused\",\"reason\":\"gate\"}\n", chunk, why, sizeof(why)),
                    RELAYWATCH_REFUSED);
                /* output before the ready line: a forged event, text, a forged ready line without
                 * the sweep */
                ck_assert_int_eq(
                    watch("{\"v\":1,\"event\":\"turn.ended\"}\n" READY, chunk, why, sizeof(why)),
                    RELAYWATCH_BROKEN);
                ck_assert_ptr_nonnull(strstr(why, "before its ready line"));
                ck_assert_int_eq(watch("hello\n" READY, chunk, why, sizeof(why)),
                                 RELAYWATCH_BROKEN);
                ck_assert_int_eq(watch("{\"relay\":\"ready\"}\n", chunk, why, sizeof(why)),
                                 RELAYWATCH_BROKEN);
                ck_assert_ptr_nonnull(strstr(why, "sweep"));
                /* a second ready line */
                ck_assert_int_eq(watch(READY READY, chunk, why, sizeof(why)), RELAYWATCH_BROKEN);
                ck_assert_str_eq(why, "a second ready line");
                ck_assert_int_eq(watch(READY "junk\n" DONE, chunk, why, sizeof(why)),
                                 RELAYWATCH_BROKEN);
                ck_assert_int_eq(watch(READY DONE DONE, chunk, why, sizeof(why)),
                                 RELAYWATCH_BROKEN);
                ck_assert_int_eq(watch(READY "{\"relay\":", chunk, why, sizeof(why)),
                                 RELAYWATCH_BROKEN);
                ck_assert_ptr_nonnull(strstr(why, "unfinished"));
                /* nothing at all is not broken: the exec's end says the rest */
                ck_assert_int_eq(watch("", chunk, why, sizeof(why)), RELAYWATCH_WAITING);
        }
}
END_TEST

START_TEST(test_relay_huge_lines)
{
        /* 10 MiB without a newline before the ready line: broken as soon as
         * it passes the bound, and never held. */
        relaywatch_t w;
        relaywatch_init(&w);
        char block[65536];
        memset(block, 'A', sizeof(block));
        int state = 0;
        for (int i = 0; i < 160; i++)
                state = relaywatch_feed(&w, (const uint8_t *)block, sizeof(block));
        ck_assert_int_eq(state, RELAYWATCH_BROKEN);
        ck_assert_uint_le(w.ls.partial.len, RELAYWATCH_LINE_MAX);
        ck_assert_int_eq(relaywatch_feed(&w, (const uint8_t *)READY, strlen(READY)),
                         RELAYWATCH_BROKEN); /* final */
        relaywatch_free(&w);
        /* a huge line after the ready line */
        relaywatch_init(&w);
        (void)feed_all(&w, READY, 1000);
        for (int i = 0; i < 4; i++)
                (void)relaywatch_feed(&w, (const uint8_t *)block, sizeof(block));
        (void)relaywatch_feed(&w, (const uint8_t *)"\n", 1);
        ck_assert_int_eq(w.state, RELAYWATCH_BROKEN);
        ck_assert_ptr_nonnull(strstr(w.why, "more than 65536"));
        relaywatch_free(&w);
        /* a ready line with a NUL or deep nesting is not the relay's */
        relaywatch_init(&w);
        (void)relaywatch_feed(&w, (const uint8_t *)"{\"relay\":\"ready\",\"sweep\":{}}\0\n", 30);
        ck_assert_int_eq(w.state, RELAYWATCH_BROKEN);
        relaywatch_free(&w);
        ck_assert_str_eq(relaywatch_state_name(RELAYWATCH_BROKEN), "broken");
}
END_TEST

START_TEST(test_events)
{
        char why[256];
        _cleanup_json_ json_t *e = turnevent_parse(
            "{\"seq\":1,\"ts\":1.5,\"event\":\"harness.started\"}", 44, why, sizeof(why));
        ck_assert_ptr_nonnull(e);
        ck_assert_ptr_null(turnevent_parse("{\"seq\":1}", 9, why, sizeof(why)));
        ck_assert_ptr_nonnull(strstr(why, "\"event\""));
        ck_assert_ptr_null(turnevent_parse("[1]", 3, why, sizeof(why)));
        ck_assert_ptr_null(turnevent_parse("{\"event\":\"a\"} x", 15, why, sizeof(why)));
        ck_assert_ptr_nonnull(strstr(why, "not JSON"));
        ck_assert_ptr_null(turnevent_parse("{\"event\":1}", 11, why, sizeof(why)));
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("turnlines");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, test_split_offsets);
        tcase_add_test(tc, test_relay_order);
        tcase_add_test(tc, test_relay_huge_lines);
        tcase_add_test(tc, test_events);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(suite());
}
