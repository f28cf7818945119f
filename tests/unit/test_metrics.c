/* Unit tests for webhook/metrics: counters and the latency histogram as
 * rendered in the Prometheus text format. The counters are process-wide, so
 * each test compares values before and after (and check forks per test). */
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "metrics.h"
#include "unit.h"

/* The value on the line "<series> <value>" of a rendering, or -1 if the
 * series is absent (the whole series text must match, labels included). */
static double value_of(const char *text, const char *series)
{
        size_t n = strlen(series);
        for (const char *line = text; line && *line;) {
                if (strncmp(line, series, n) == 0 && line[n] == ' ') {
                        char *end = NULL;
                        double v = strtod(line + n + 1, &end);
                        ck_assert_msg(end && (*end == '\n' || *end == '\0'), "bad value: %s", line);
                        return v;
                }
                line = strchr(line, '\n');
                if (line)
                        line++;
        }
        return -1;
}

static double metric(const char *series)
{
        _cleanup_free_ char *text = metrics_render(true);
        ck_assert_ptr_nonnull(text);
        return value_of(text, series);
}

static void record(mutate_reason_t reason, double seconds)
{
        mutate_result_t r = {0};
        mutate_result_set(&r, reason, "test");
        metrics_record_review(&r, seconds);
}

static const char *const bucket_bounds[] = {
    "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
    "0.1",    "0.25",    "0.5",    "1",     "2.5",    "5",     "10",   "30",    "+Inf"};

static double bucket(const char *le)
{
        char series[128];
        (void)snprintf(series, sizeof(series),
                       "hangar_webhook_review_duration_seconds_bucket{le=\"%s\"}", le);
        return metric(series);
}

START_TEST(render_lists_every_series)
{
        _cleanup_free_ char *text = metrics_render(true);
        ck_assert_ptr_nonnull(text);
        static const char *const lines[] = {
            "# TYPE hangar_webhook_reviews_total counter\n",
            "# TYPE hangar_webhook_injections_total counter\n",
            "# TYPE hangar_webhook_skips_total counter\n",
            "# TYPE hangar_webhook_errors_total counter\n",
            "# TYPE hangar_webhook_review_duration_seconds histogram\n",
            "# TYPE hangar_webhook_cert_not_after_seconds gauge\n",
            "# TYPE hangar_webhook_cert_reloads_total counter\n",
            "# TYPE hangar_webhook_ready gauge\n",
            "hangar_webhook_ready 1\n",
            "hangar_webhook_build_info{version=\"" HANGAR_VERSION "\"} 1\n",
            "hangar_webhook_reviews_total{decision=\"injected\",reason=\"injected\"} ",
            "hangar_webhook_reviews_total{decision=\"denied\",reason=\"conflict\"} ",
            "hangar_webhook_reviews_total{decision=\"skipped\",reason=\"not-selected\"} ",
            "hangar_webhook_skips_total{reason=\"privileged-container\"} ",
            "hangar_webhook_errors_total{kind=\"body_too_large\"} ",
            "hangar_webhook_errors_total{kind=\"cert_reload\"} ",
            "hangar_webhook_review_duration_seconds_sum ",
            "hangar_webhook_review_duration_seconds_count ",
        };
        for (size_t i = 0; i < ARRAY_SIZE(lines); i++)
                ck_assert_msg(strstr(text, lines[i]), "missing: %s", lines[i]);
        for (size_t i = 0; i < ARRAY_SIZE(bucket_bounds); i++)
                ck_assert_msg(bucket(bucket_bounds[i]) >= 0, "no bucket le=%s", bucket_bounds[i]);
        /* Deny reasons are not skips. */
        ck_assert_ptr_null(strstr(text, "hangar_webhook_skips_total{reason=\"conflict\"}"));
        ck_assert(text[strlen(text) - 1] == '\n');
}
END_TEST

START_TEST(counters_after_records)
{
        const char *inj = "hangar_webhook_reviews_total{decision=\"injected\",reason=\"injected\"}";
        const char *priv =
            "hangar_webhook_reviews_total{decision=\"skipped\",reason=\"privileged-container\"}";
        const char *conflict =
            "hangar_webhook_reviews_total{decision=\"denied\",reason=\"conflict\"}";
        const char *skip_priv = "hangar_webhook_skips_total{reason=\"privileged-container\"}";
        const char *total_inj = "hangar_webhook_injections_total";
        double inj0 = metric(inj), priv0 = metric(priv), conflict0 = metric(conflict),
               skip0 = metric(skip_priv), total0 = metric(total_inj);
        record(REASON_INJECTED, 0.0003);
        record(REASON_INJECTED, 0.0003);
        record(REASON_INJECTED, 0.0003);
        record(REASON_PRIVILEGED, 0.001);
        record(REASON_CONFLICT, 0.02);
        record(REASON_CONFLICT, 0.02);
        ck_assert_double_eq(metric(inj), inj0 + 3);
        ck_assert_double_eq(metric(total_inj), total0 + 3);
        ck_assert_double_eq(metric(priv), priv0 + 1);
        ck_assert_double_eq(metric(skip_priv), skip0 + 1);
        ck_assert_double_eq(metric(conflict), conflict0 + 2);
}
END_TEST

START_TEST(out_of_range_reason_counts_as_internal_error)
{
        const char *internal =
            "hangar_webhook_reviews_total{decision=\"denied\",reason=\"internal-error\"}";
        double before = metric(internal);
        mutate_result_t r = {0};
        r.reason = (mutate_reason_t)1000;
        metrics_record_review(&r, 0.001);
        ck_assert_double_eq(metric(internal), before + 1);
}
END_TEST

START_TEST(histogram_cumulative)
{
        double before[ARRAY_SIZE(bucket_bounds)];
        for (size_t i = 0; i < ARRAY_SIZE(bucket_bounds); i++)
                before[i] = bucket(bucket_bounds[i]);
        double count0 = metric("hangar_webhook_review_duration_seconds_count");
        double sum0 = metric("hangar_webhook_review_duration_seconds_sum");
        /* One observation per region: under the first bound, exactly on a
         * bound (le is <=), between bounds, and over the last. */
        record(REASON_INJECTED, 0.00005);
        record(REASON_INJECTED, 0.001);
        record(REASON_INJECTED, 0.03);
        record(REASON_INJECTED, 2.0);
        static const double want[] = {1, 1, 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4};
        double prev = -1;
        for (size_t i = 0; i < ARRAY_SIZE(bucket_bounds); i++) {
                double now = bucket(bucket_bounds[i]);
                ck_assert_msg(now - before[i] == want[i], "le=%s grew by %g, want %g",
                              bucket_bounds[i], now - before[i], want[i]);
                ck_assert_msg(now >= prev, "le=%s (%g) below the previous bucket (%g)",
                              bucket_bounds[i], now, prev);
                prev = now;
        }
        ck_assert_double_eq(metric("hangar_webhook_review_duration_seconds_count"), count0 + 4);
        ck_assert_double_eq_tol(metric("hangar_webhook_review_duration_seconds_sum"),
                                sum0 + 2.03105, 1e-6);
        /* +Inf always equals the count. */
        ck_assert_double_eq(bucket("+Inf"), metric("hangar_webhook_review_duration_seconds_count"));
}
END_TEST

START_TEST(errors_by_kind)
{
        const char *timeout = "hangar_webhook_errors_total{kind=\"timeout\"}";
        const char *bad = "hangar_webhook_errors_total{kind=\"bad_request\"}";
        double t0 = metric(timeout), b0 = metric(bad);
        metrics_record_error(METRICS_ERROR_TIMEOUT);
        metrics_record_error(METRICS_ERROR_TIMEOUT);
        metrics_record_error(METRICS_ERROR_BAD_REQUEST);
        metrics_record_error(METRICS_ERROR_COUNT); /* out of range: ignored */
        metrics_record_error((metrics_error_t)-1);
        ck_assert_double_eq(metric(timeout), t0 + 2);
        ck_assert_double_eq(metric(bad), b0 + 1);
}
END_TEST

START_TEST(cert_gauge_and_reloads)
{
        const char *reloads = "hangar_webhook_cert_reloads_total";
        const char *refused = "hangar_webhook_errors_total{kind=\"cert_reload\"}";
        const char *gauge = "hangar_webhook_cert_not_after_seconds";
        double r0 = metric(reloads), e0 = metric(refused);
        metrics_record_cert(1893456000, 1);
        ck_assert_double_eq(metric(gauge), 1893456000);
        ck_assert_double_eq(metric(reloads), r0 + 1);
        /* A refused pair counts as an error and leaves the gauge alone. */
        metrics_record_cert(12345, 0);
        ck_assert_double_eq(metric(gauge), 1893456000);
        ck_assert_double_eq(metric(reloads), r0 + 1);
        ck_assert_double_eq(metric(refused), e0 + 1);
}
END_TEST

START_TEST(ready_follows_the_argument)
{
        _cleanup_free_ char *yes = metrics_render(true);
        _cleanup_free_ char *no = metrics_render(false);
        ck_assert_ptr_nonnull(yes);
        ck_assert_ptr_nonnull(no);
        ck_assert_double_eq(value_of(yes, "hangar_webhook_ready"), 1);
        ck_assert_double_eq(value_of(no, "hangar_webhook_ready"), 0);
}
END_TEST

START_TEST(self_managed_series_appear_once_recorded)
{
        /* check forks per test: this process has recorded nothing yet. */
        ck_assert_double_eq(metric("hangar_webhook_ca_not_after_seconds"), -1);
        ck_assert_double_eq(metric("hangar_webhook_ca_bundle_in_sync"), -1);
        metrics_record_ca(2000000000);
        metrics_record_ca_bundle(true, 1700000000);
        ck_assert_double_eq(metric("hangar_webhook_ca_not_after_seconds"), 2000000000);
        ck_assert_double_eq(metric("hangar_webhook_ca_bundle_in_sync"), 1);
        ck_assert_double_eq(metric("hangar_webhook_ca_bundle_synced_timestamp_seconds"),
                            1700000000);
        /* A failed round: out of sync, and the last good time stays. */
        metrics_record_ca_bundle(false, 1700000060);
        ck_assert_double_eq(metric("hangar_webhook_ca_bundle_in_sync"), 0);
        ck_assert_double_eq(metric("hangar_webhook_ca_bundle_synced_timestamp_seconds"),
                            1700000000);
        double u0 = metric("hangar_webhook_ca_bundle_updates_total");
        metrics_record_ca_bundle_update();
        ck_assert_double_eq(metric("hangar_webhook_ca_bundle_updates_total"), u0 + 1);
        _cleanup_free_ char *text = metrics_render(true);
        ck_assert_ptr_nonnull(
            strstr(text, "# TYPE hangar_webhook_ca_bundle_updates_total counter\n"));
}
END_TEST

static Suite *metrics_suite(void)
{
        Suite *s = suite_create("metrics");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, render_lists_every_series);
        tcase_add_test(tc, counters_after_records);
        tcase_add_test(tc, out_of_range_reason_counts_as_internal_error);
        tcase_add_test(tc, histogram_cumulative);
        tcase_add_test(tc, errors_by_kind);
        tcase_add_test(tc, cert_gauge_and_reloads);
        tcase_add_test(tc, ready_follows_the_argument);
        tcase_add_test(tc, self_managed_series_appear_once_recorded);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(metrics_suite());
}
