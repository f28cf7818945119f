/* Unit tests for driver/turn/reccap: the caps on what the relay can make the
 * driver record. Within the cap every event is recorded, the first past it
 * is noted once, the rest are only counted; the count never stops; a cap of
 * 0 notes the first event; note_once is true exactly once. */
#include <stdint.h>

#include "reccap.h"
#include "unit.h"

START_TEST(record_then_note_then_count)
{
        reccap_t c = {0};
        for (unsigned i = 1; i <= 64; i++) {
                ck_assert_int_eq(reccap_take(&c, 64), RECCAP_RECORD);
                ck_assert_uint_eq(c.count, i);
                ck_assert(!c.noted);
        }
        ck_assert_int_eq(reccap_take(&c, 64), RECCAP_NOTE);
        ck_assert(c.noted);
        for (unsigned i = 0; i < 1000; i++)
                ck_assert_int_eq(reccap_take(&c, 64), RECCAP_COUNTED);
        ck_assert_uint_eq(c.count, 64 + 1 + 1000);
}
END_TEST

START_TEST(cap_zero)
{
        reccap_t c = {0};
        ck_assert_int_eq(reccap_take(&c, 0), RECCAP_NOTE);
        ck_assert_int_eq(reccap_take(&c, 0), RECCAP_COUNTED);
        ck_assert_uint_eq(c.count, 2);
}
END_TEST

START_TEST(note_once)
{
        reccap_t c = {0};
        ck_assert(reccap_note_once(&c));
        for (int i = 0; i < 5; i++)
                ck_assert(!reccap_note_once(&c));
        ck_assert_uint_eq(c.count, 0); /* noting counts nothing */
        /* Noted by another path first (a flag-only cap): take never notes again. */
        reccap_t d = {0};
        ck_assert(reccap_note_once(&d));
        ck_assert_int_eq(reccap_take(&d, 0), RECCAP_COUNTED);
}
END_TEST

START_TEST(caps_are_separate)
{
        reccap_t a = {0}, b = {0};
        ck_assert_int_eq(reccap_take(&a, 1), RECCAP_RECORD);
        ck_assert_int_eq(reccap_take(&a, 1), RECCAP_NOTE);
        ck_assert_int_eq(reccap_take(&b, 1), RECCAP_RECORD);
        ck_assert_int_eq(reccap_take(&b, 1), RECCAP_NOTE);
}
END_TEST

static Suite *reccap_suite(void)
{
        Suite *s = suite_create("reccap");
        TCase *tc = tcase_create("reccap");
        tcase_add_test(tc, record_then_note_then_count);
        tcase_add_test(tc, cap_zero);
        tcase_add_test(tc, note_once);
        tcase_add_test(tc, caps_are_separate);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(reccap_suite());
}
