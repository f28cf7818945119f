/* Unit tests for relay/tail: the ring keeps the last cap bytes of everything
 * appended, oldest first, and "truncated" says whether anything was dropped
 * (more than cap bytes were appended in all). Checked case by case and
 * against a plain model: the whole output kept in a flat buffer. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "tail.h"
#include "unit.h"

static void append_str(tail_t *t, const char *s)
{
        tail_append(t, (const uint8_t *)s, strlen(s));
}

/* The kept bytes as a string (static buffer). */
static const char *kept(const tail_t *t)
{
        static char buf[4096];
        ck_assert_uint_lt(t->len, sizeof(buf));
        memset(buf, '#', sizeof(buf));
        tail_copy(t, (uint8_t *)buf);
        ck_assert_int_eq(buf[t->len], '#'); /* copies exactly len bytes */
        buf[t->len] = '\0';
        return buf;
}

START_TEST(init_and_free)
{
        tail_t t;
        memset(&t, 0x5a, sizeof(t));
        ck_assert_int_eq(tail_init(&t, 16), 0);
        ck_assert_ptr_nonnull(t.buf);
        ck_assert_uint_eq(t.cap, 16);
        ck_assert_uint_eq(t.len, 0);
        ck_assert_uint_eq(t.start, 0);
        ck_assert(!t.truncated);
        ck_assert_str_eq(kept(&t), "");
        tail_free(&t);
        ck_assert_ptr_null(t.buf);
        ck_assert_uint_eq(t.len, 0);
        tail_free(&t);
}
END_TEST

START_TEST(cap_zero)
{
        tail_t t;
        ck_assert_int_eq(tail_init(&t, 0), 0);
        ck_assert_ptr_null(t.buf);
        tail_append(&t, (const uint8_t *)"", 0);
        ck_assert(!t.truncated); /* nothing appended, nothing dropped */
        append_str(&t, "x");
        ck_assert_uint_eq(t.len, 0);
        ck_assert(t.truncated);
        append_str(&t, "more output");
        ck_assert_uint_eq(t.len, 0);
        ck_assert(t.truncated);
        uint8_t out[1] = {0x77};
        tail_copy(&t, out);
        ck_assert_uint_eq(out[0], 0x77);
        tail_free(&t);
}
END_TEST

START_TEST(fill_under_cap)
{
        tail_t t;
        ck_assert_int_eq(tail_init(&t, 10), 0);
        append_str(&t, "abc");
        append_str(&t, "");
        append_str(&t, "def");
        ck_assert_uint_eq(t.len, 6);
        ck_assert(!t.truncated);
        ck_assert_str_eq(kept(&t), "abcdef");
        /* Exactly full is not truncated. */
        append_str(&t, "ghij");
        ck_assert_uint_eq(t.len, 10);
        ck_assert(!t.truncated);
        ck_assert_str_eq(kept(&t), "abcdefghij");
        /* One more byte is. */
        append_str(&t, "k");
        ck_assert(t.truncated);
        ck_assert_str_eq(kept(&t), "bcdefghijk");
        tail_free(&t);
}
END_TEST

START_TEST(one_chunk_of_exactly_cap)
{
        tail_t t;
        ck_assert_int_eq(tail_init(&t, 5), 0);
        append_str(&t, "12345");
        ck_assert(!t.truncated);
        ck_assert_str_eq(kept(&t), "12345");
        append_str(&t, "67890");
        ck_assert(t.truncated);
        ck_assert_str_eq(kept(&t), "67890");
        tail_free(&t);
}
END_TEST

START_TEST(wrap_around)
{
        tail_t t;
        ck_assert_int_eq(tail_init(&t, 8), 0);
        append_str(&t, "abcdef"); /* start 0, len 6 */
        append_str(&t, "ghij");   /* wraps: two bytes at the end, two at the front */
        ck_assert(t.truncated);
        ck_assert_uint_eq(t.len, 8);
        ck_assert_uint_eq(t.start, 2);
        ck_assert_str_eq(kept(&t), "cdefghij");
        append_str(&t, "k");
        ck_assert_str_eq(kept(&t), "defghijk");
        append_str(&t, "lmnopqr"); /* wraps again past the physical end */
        ck_assert_str_eq(kept(&t), "klmnopqr");
        tail_free(&t);
}
END_TEST

START_TEST(chunk_larger_than_cap)
{
        tail_t t;
        ck_assert_int_eq(tail_init(&t, 4), 0);
        append_str(&t, "ab");
        append_str(&t, "0123456789");
        ck_assert(t.truncated);
        ck_assert_uint_eq(t.len, 4);
        ck_assert_str_eq(kept(&t), "6789");
        tail_free(&t);
        /* Into an empty ring: still truncated, the front fell off. */
        ck_assert_int_eq(tail_init(&t, 4), 0);
        append_str(&t, "0123456789");
        ck_assert(t.truncated);
        ck_assert_str_eq(kept(&t), "6789");
        /* Then small appends continue after it. */
        append_str(&t, "x");
        ck_assert_str_eq(kept(&t), "789x");
        tail_free(&t);
}
END_TEST

START_TEST(truncated_stays_set)
{
        tail_t t;
        ck_assert_int_eq(tail_init(&t, 4), 0);
        append_str(&t, "abcde");
        ck_assert(t.truncated);
        append_str(&t, "");
        ck_assert(t.truncated);
        append_str(&t, "wxyz");
        ck_assert(t.truncated);
        ck_assert_str_eq(kept(&t), "wxyz");
        tail_free(&t);
}
END_TEST

/* A small deterministic generator for the model test. */
static uint32_t rng_next(uint32_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 17;
        *s ^= *s << 5;
        return *s;
}

START_TEST(matches_model)
{
        static const size_t caps[] = {0, 1, 2, 3, 7, 8, 64, 1000};
        for (size_t ci = 0; ci < ARRAY_SIZE(caps); ci++) {
                size_t cap = caps[ci];
                for (uint32_t seed = 1; seed <= 40; seed++) {
                        uint32_t s = seed * 2654435761u;
                        tail_t t;
                        ck_assert_int_eq(tail_init(&t, cap), 0);
                        _cleanup_free_ uint8_t *all = malloc(60 * (2 * 1000 + 3));
                        _cleanup_free_ uint8_t *out = malloc(cap ? cap : 1);
                        ck_assert_ptr_nonnull(all);
                        ck_assert_ptr_nonnull(out);
                        size_t total = 0;
                        for (int step = 0; step < 60; step++) {
                                /* Mostly small chunks, sometimes around or over cap. */
                                uint32_t r = rng_next(&s);
                                size_t n = r % 4 == 0 ? (size_t)(rng_next(&s) % (2 * cap + 3))
                                                      : (size_t)(rng_next(&s) % 5);
                                uint8_t chunk[2 * 1000 + 3];
                                for (size_t i = 0; i < n; i++)
                                        chunk[i] = (uint8_t)rng_next(&s);
                                tail_append(&t, chunk, n);
                                memcpy(all + total, chunk, n);
                                total += n;
                                size_t want_len = total < cap ? total : cap;
                                ck_assert_uint_eq(t.len, want_len);
                                ck_assert_uint_lt(t.start, cap ? cap : 1);
                                ck_assert_msg(t.truncated == (total > cap),
                                              "cap %zu seed %u step %d: truncated %d, total %zu",
                                              cap, seed, step, t.truncated, total);
                                tail_copy(&t, out);
                                ck_assert_msg(memcmp(out, all + total - want_len, want_len) == 0,
                                              "cap %zu seed %u step %d: wrong bytes", cap, seed,
                                              step);
                        }
                        tail_free(&t);
                }
        }
}
END_TEST

static Suite *tail_suite(void)
{
        Suite *s = suite_create("tail");
        TCase *tc = tcase_create("tail");
        tcase_add_test(tc, init_and_free);
        tcase_add_test(tc, cap_zero);
        tcase_add_test(tc, fill_under_cap);
        tcase_add_test(tc, one_chunk_of_exactly_cap);
        tcase_add_test(tc, wrap_around);
        tcase_add_test(tc, chunk_larger_than_cap);
        tcase_add_test(tc, truncated_stays_set);
        tcase_add_test(tc, matches_model);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(tail_suite());
}
