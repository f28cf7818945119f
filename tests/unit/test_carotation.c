/* webhook/certs/carotation.c: the CA rotation's steps with the clock driven by the
 * test: nothing to do for a young CA; stage, switch and retire one overlap
 * apart for an expiring one; an expired CA replaced at once; the bundle
 * always trusting what signs and what is about to or just did. */
#include <time.h>

#include "carotation.h"
#include "cleanup.h"
#include "unit.h"

static webhook_settings_t cfg;

static void setup(void)
{
        ck_assert_int_eq(settings_init_defaults(&cfg), 0);
        cfg.tls_ca_overlap_seconds = 600;
        cfg.tls_renew_before_days = 30;
}

static void teardown(void)
{
        settings_free(&cfg);
}

static void make_ca(ca_set_t *set, unsigned days)
{
        hg_error_t err = {0};
        ck_assert_int_eq(certgen_ca("test CA", days, &set->ca, &err), 0);
}

static int count_certs(const char *pem)
{
        int n = 0;
        for (const char *p = pem; (p = strstr(p, "BEGIN CERTIFICATE")); p++)
                n++;
        return n;
}

static int step(ca_set_t *set, int64_t now)
{
        hg_error_t err = {0};
        int r = carotation_step(&cfg, set, now, &err);
        ck_assert_msg(r >= 0, "step failed (%d): %s", r, err.message);
        return r;
}

START_TEST(young_ca_left_alone)
{
        ca_set_t set = {0};
        make_ca(&set, 3650);
        char *before = strdup(set.ca.cert);
        ck_assert_int_eq(step(&set, time(NULL)), CA_STEP_NONE);
        ck_assert_str_eq(set.ca.cert, before);
        ck_assert_ptr_null(set.next.cert);
        ck_assert_ptr_null(set.previous);
        _cleanup_free_ char *bundle = carotation_bundle(&set);
        ck_assert_str_eq(bundle, set.ca.cert);
        free(before);
        ca_set_free(&set);
}
END_TEST

START_TEST(stage_switch_retire)
{
        ca_set_t set = {0};
        make_ca(&set, 10); /* inside the 30-day window */
        char *old = strdup(set.ca.cert);
        int64_t t0 = time(NULL);

        ck_assert_int_eq(step(&set, t0), CA_STEP_STAGED);
        ck_assert_str_eq(set.ca.cert, old); /* the old CA still signs */
        ck_assert_ptr_nonnull(set.next.cert);
        ck_assert_ptr_nonnull(set.next.key);
        ck_assert_int_eq(set.next_since, t0);
        char *next = strdup(set.next.cert);
        _cleanup_free_ char *staged = carotation_bundle(&set);
        ck_assert_int_eq(count_certs(staged), 2);

        /* Nothing happens within the overlap, however often replicas look. */
        ck_assert_int_eq(step(&set, t0 + 1), CA_STEP_NONE);
        ck_assert_int_eq(step(&set, t0 + 599), CA_STEP_NONE);
        ck_assert_str_eq(set.ca.cert, old);

        ck_assert_int_eq(step(&set, t0 + 600), CA_STEP_SWITCHED);
        ck_assert_str_eq(set.ca.cert, next);
        ck_assert_ptr_nonnull(set.ca.key);
        ck_assert_ptr_null(set.next.cert);
        ck_assert_str_eq(set.previous, old);
        ck_assert_int_eq(set.previous_since, t0 + 600);
        _cleanup_free_ char *switched = carotation_bundle(&set);
        ck_assert_int_eq(count_certs(switched), 2);
        ck_assert_ptr_nonnull(strstr(switched, next));
        ck_assert_ptr_nonnull(strstr(switched, old));

        /* The new CA (3650 days by default) is not due itself. */
        ck_assert_int_eq(step(&set, t0 + 1199), CA_STEP_NONE);
        ck_assert_int_eq(step(&set, t0 + 1200), CA_STEP_RETIRED);
        ck_assert_ptr_null(set.previous);
        _cleanup_free_ char *retired = carotation_bundle(&set);
        ck_assert_str_eq(retired, next);
        ck_assert_int_eq(step(&set, t0 + 5000), CA_STEP_NONE);
        free(old);
        free(next);
        ca_set_free(&set);
}
END_TEST

START_TEST(expired_ca_replaced_at_once)
{
        ca_set_t set = {0};
        make_ca(&set, 0); /* notAfter = now */
        char *old = strdup(set.ca.cert);
        ck_assert_int_eq(step(&set, time(NULL) + 5), CA_STEP_REPLACED);
        ck_assert_str_ne(set.ca.cert, old);
        ck_assert_ptr_null(set.next.cert);
        ck_assert_ptr_null(set.previous); /* an expired CA is trusted by no one */
        hg_error_t err = {0};
        ck_assert_int_eq(certgen_check_ca(&set.ca, &err), 0);
        free(old);
        ca_set_free(&set);
}
END_TEST

START_TEST(unreadable_ca_is_an_error)
{
        ca_set_t set = {0};
        set.ca.cert = strdup("not a certificate");
        set.ca.key = strdup("nor a key");
        hg_error_t err = {0};
        ck_assert_int_lt(carotation_step(&cfg, &set, time(NULL), &err), 0);
        ck_assert_ptr_nonnull(strstr(err.message, "the CA"));
        ca_set_free(&set);
}
END_TEST

static Suite *carotation_suite(void)
{
        Suite *s = suite_create("carotation");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, young_ca_left_alone);
        tcase_add_test(tc, stage_switch_retire);
        tcase_add_test(tc, expired_ca_replaced_at_once);
        tcase_add_test(tc, unreadable_ca_is_an_error);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(carotation_suite());
}
