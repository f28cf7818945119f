/* Unit tests for common/wire/kernrand: getrandom's bytes, whole requests
 * (longer than one getrandom call returns at once), and nothing asked. */
#include <stdint.h>
#include <string.h>

#include "kernrand.h"
#include "unit.h"

START_TEST(fills_and_differs)
{
        uint8_t a[32], b[32];
        static const uint8_t zero[32];
        ck_assert_int_eq(kernrand_bytes(a, sizeof(a)), 0);
        ck_assert_int_eq(kernrand_bytes(b, sizeof(b)), 0);
        ck_assert(memcmp(a, b, sizeof(a)) != 0);
        ck_assert(memcmp(a, zero, sizeof(a)) != 0);
}
END_TEST

/* getrandom returns at most 32 MiB - 1 per call: a larger request takes
 * several, and every byte is written (its last KiB is not left zero). */
START_TEST(large_request_whole)
{
        size_t n = (32u << 20) + 4096u;
        uint8_t *p = calloc(1, n);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(kernrand_bytes(p, n), 0);
        static const uint8_t zero[1024];
        ck_assert(memcmp(p + n - sizeof(zero), zero, sizeof(zero)) != 0);
        free(p);
}
END_TEST

START_TEST(nothing_asked)
{
        ck_assert_int_eq(kernrand_bytes(NULL, 0), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("kernrand");
        TCase *tc = tcase_create("kernrand");
        tcase_add_test(tc, fills_and_differs);
        tcase_add_test(tc, large_request_whole);
        tcase_add_test(tc, nothing_asked);
        suite_add_tcase(s, tc);
        return unit_run(s);
}
