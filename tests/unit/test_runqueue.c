/* Unit tests for relay/runqueue: the run requests waiting in the relay.
 * First in, first out through the ring's wrap; full at RUNQUEUE_MAX (the
 * request refused stays the caller's, the queue unchanged); empty pops
 * nothing; clear frees what waits (the ASan build checks for leaks). */
#include <stdlib.h>
#include <string.h>

#include "runqueue.h"
#include "unit.h"

/* A request as frame_run_decode leaves it: storage owned, argv inside. */
static frame_run_t request(uint32_t id)
{
        char *const argv[] = {"true", NULL};
        uint8_t *payload = NULL;
        uint32_t len = 0;
        ck_assert_int_eq(frame_run_encode(id, 1000, 64, argv, &payload, &len), 0);
        frame_t f = {.type = FRAME_RUN, .payload = payload, .length = len};
        frame_run_t req;
        ck_assert_int_eq(frame_run_decode(&f, &req, NULL), 0);
        free(payload);
        return req;
}

START_TEST(fifo)
{
        runqueue_t q = {0};
        frame_run_t out;
        ck_assert(!runqueue_pop(&q, &out));
        for (uint32_t id = 1; id <= 3; id++) {
                frame_run_t r = request(id);
                ck_assert_int_eq(runqueue_push(&q, &r), 0);
        }
        ck_assert_uint_eq(runqueue_len(&q), 3);
        for (uint32_t id = 1; id <= 3; id++) {
                ck_assert(runqueue_pop(&q, &out));
                ck_assert_uint_eq(out.id, id);
                ck_assert_str_eq(out.argv[0], "true");
                frame_run_free(&out);
        }
        ck_assert(!runqueue_pop(&q, &out));
        ck_assert_uint_eq(runqueue_len(&q), 0);
}
END_TEST

START_TEST(full_refuses_and_keeps_order)
{
        runqueue_t q = {0};
        for (uint32_t id = 1; id <= RUNQUEUE_MAX; id++) {
                frame_run_t r = request(id);
                ck_assert_int_eq(runqueue_push(&q, &r), 0);
        }
        frame_run_t extra = request(99);
        ck_assert_int_eq(runqueue_push(&q, &extra), -ENOBUFS);
        ck_assert_uint_eq(runqueue_len(&q), RUNQUEUE_MAX);
        ck_assert_uint_eq(extra.id, 99); /* still the caller's */
        frame_run_free(&extra);
        /* One out, one more in: the ring wraps, the order holds. */
        frame_run_t out;
        ck_assert(runqueue_pop(&q, &out));
        ck_assert_uint_eq(out.id, 1);
        frame_run_free(&out);
        frame_run_t r = request(RUNQUEUE_MAX + 1);
        ck_assert_int_eq(runqueue_push(&q, &r), 0);
        for (uint32_t id = 2; id <= RUNQUEUE_MAX + 1; id++) {
                ck_assert(runqueue_pop(&q, &out));
                ck_assert_uint_eq(out.id, id);
                frame_run_free(&out);
        }
        ck_assert(!runqueue_pop(&q, &out));
}
END_TEST

START_TEST(wraps_many_times)
{
        runqueue_t q = {0};
        uint32_t next_in = 1, next_out = 1;
        for (int round = 0; round < 100; round++) {
                size_t n = (size_t)round % RUNQUEUE_MAX + 1;
                for (size_t i = 0; i < n && runqueue_len(&q) < RUNQUEUE_MAX; i++) {
                        frame_run_t r = request(next_in++);
                        ck_assert_int_eq(runqueue_push(&q, &r), 0);
                }
                for (size_t i = 0; i < n / 2 + 1; i++) {
                        frame_run_t out;
                        if (!runqueue_pop(&q, &out))
                                break;
                        ck_assert_uint_eq(out.id, next_out++);
                        frame_run_free(&out);
                }
        }
        ck_assert_uint_eq(runqueue_len(&q), next_in - next_out);
        runqueue_clear(&q);
}
END_TEST

START_TEST(clear_frees_all)
{
        runqueue_t q = {0};
        for (uint32_t id = 1; id <= 5; id++) {
                frame_run_t r = request(id);
                ck_assert_int_eq(runqueue_push(&q, &r), 0);
        }
        runqueue_clear(&q);
        ck_assert_uint_eq(runqueue_len(&q), 0);
        runqueue_clear(&q); /* twice: a no-op */
        frame_run_t r = request(6);
        ck_assert_int_eq(runqueue_push(&q, &r), 0);
        frame_run_t out;
        ck_assert(runqueue_pop(&q, &out));
        ck_assert_uint_eq(out.id, 6);
        frame_run_free(&out);
}
END_TEST

static Suite *runqueue_suite(void)
{
        Suite *s = suite_create("runqueue");
        TCase *tc = tcase_create("runqueue");
        tcase_add_test(tc, fifo);
        tcase_add_test(tc, full_refuses_and_keeps_order);
        tcase_add_test(tc, wraps_many_times);
        tcase_add_test(tc, clear_frees_all);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(runqueue_suite());
}
