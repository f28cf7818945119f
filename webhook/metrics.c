#include "metrics.h"

#include <stdatomic.h>
#include <stdlib.h>

#include "cleanup.h"
#include "enforce.h"
#include "strbuf.h"

/* Review latency buckets in seconds: a hand-built patch is microseconds, the
 * API server's timeout is seconds (webhook.timeoutSeconds, 1 to 30); both
 * ends must be visible, and a p99 near any timeout must be measurable (a
 * quantile cannot come out above the last finite bound). */
static const double buckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                 0.1,    0.25,    0.5,    1.0,   2.5,    5.0,   10.0, 30.0};
#define NBUCKETS ARRAY_SIZE(buckets)

static struct {
        atomic_uint_fast64_t reviews[REASON_COUNT];
        /* Denies not enforced (enforce.h): [0] warned, [1] audited. */
        atomic_uint_fast64_t relaxed[2][REASON_COUNT];
        atomic_uint_fast64_t errors[METRICS_ERROR_COUNT];
        atomic_uint_fast64_t latency_buckets[NBUCKETS]; /* each review in one (not cumulative) */
        atomic_uint_fast64_t latency_count;
        atomic_uint_fast64_t latency_sum_ns;
        atomic_int_fast64_t cert_not_after;
        atomic_uint_fast64_t cert_reloads_ok;
        /* Self-managed mode only; its series are rendered once set. */
        atomic_bool self_managed;
        atomic_int_fast64_t ca_not_after;
        atomic_bool ca_bundle_in_sync;
        atomic_int_fast64_t ca_bundle_synced_at;
        atomic_uint_fast64_t ca_bundle_updates;
        /* The connection tables, per listener. */
        atomic_uint_fast32_t connections[METRICS_LISTENER_COUNT][CONNGUARD_CLASS_COUNT]
                                        [CONNGUARD_PHASE_COUNT];
        atomic_uint_fast64_t refused[METRICS_LISTENER_COUNT][CONNGUARD_REFUSED_COUNT];
        atomic_uint_fast64_t evicted[METRICS_LISTENER_COUNT][CONNGUARD_PHASE_COUNT];
        atomic_uint_fast64_t expired[METRICS_LISTENER_COUNT][CONNGUARD_PHASE_COUNT];
        atomic_uint_fast64_t keepalive_declined[METRICS_LISTENER_COUNT][CONNGUARD_KEEPALIVE_COUNT];
} m;

static const char *const listener_names[METRICS_LISTENER_COUNT] = {
    [METRICS_LISTENER_HTTPS] = "https",
    [METRICS_LISTENER_HEALTH] = "health",
};

static const char *const error_names[METRICS_ERROR_COUNT] = {
    [METRICS_ERROR_BAD_REQUEST] = "bad_request",
    [METRICS_ERROR_TOO_LARGE] = "body_too_large",
    [METRICS_ERROR_MEDIA_TYPE] = "unsupported_media_type",
    [METRICS_ERROR_NOT_FOUND] = "not_found",
    [METRICS_ERROR_TIMEOUT] = "timeout",
    [METRICS_ERROR_INTERNAL] = "internal",
    [METRICS_ERROR_CERT_RELOAD] = "cert_reload",
    [METRICS_ERROR_BODY_BUDGET] = "body_budget",
};

void metrics_record_review(const mutate_result_t *result, double seconds)
{
        unsigned reason = (unsigned)result->reason < REASON_COUNT ? result->reason : 0;
        /* Counters only: relaxed is enough, and every review's threads share
         * these cache lines. One bucket per review; metrics_render adds them
         * up into Prometheus' cumulative buckets. */
        if (result->decision == DECISION_WARNED || result->decision == DECISION_AUDITED)
                atomic_fetch_add_explicit(&m.relaxed[result->decision == DECISION_AUDITED][reason],
                                          1, memory_order_relaxed);
        else
                atomic_fetch_add_explicit(&m.reviews[reason], 1, memory_order_relaxed);
        for (size_t i = 0; i < NBUCKETS; i++) {
                if (seconds <= buckets[i]) {
                        atomic_fetch_add_explicit(&m.latency_buckets[i], 1, memory_order_relaxed);
                        break;
                }
        }
        atomic_fetch_add_explicit(&m.latency_count, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&m.latency_sum_ns, (uint_fast64_t)(seconds * 1e9),
                                  memory_order_relaxed);
}

void metrics_record_error(metrics_error_t kind)
{
        if ((unsigned)kind < METRICS_ERROR_COUNT)
                atomic_fetch_add(&m.errors[kind], 1);
}

void metrics_record_cert(int64_t not_after_unix, int reloaded_ok)
{
        if (reloaded_ok) {
                atomic_store(&m.cert_not_after, not_after_unix);
                atomic_fetch_add(&m.cert_reloads_ok, 1);
        } else {
                metrics_record_error(METRICS_ERROR_CERT_RELOAD);
        }
}

void metrics_record_ca(int64_t not_after_unix)
{
        atomic_store(&m.ca_not_after, not_after_unix);
        atomic_store(&m.self_managed, true);
}

void metrics_record_ca_bundle(bool in_sync, int64_t now_unix)
{
        atomic_store(&m.ca_bundle_in_sync, in_sync);
        if (in_sync)
                atomic_store(&m.ca_bundle_synced_at, now_unix);
        atomic_store(&m.self_managed, true);
}

void metrics_record_ca_bundle_update(void)
{
        atomic_fetch_add(&m.ca_bundle_updates, 1);
}

void metrics_set_connections(metrics_listener_t l,
                             const uint32_t counts[CONNGUARD_CLASS_COUNT][CONNGUARD_PHASE_COUNT])
{
        if ((unsigned)l >= METRICS_LISTENER_COUNT)
                return;
        for (unsigned c = 0; c < CONNGUARD_CLASS_COUNT; c++)
                for (unsigned p = 0; p < CONNGUARD_PHASE_COUNT; p++)
                        atomic_store(&m.connections[l][c][p], counts[c][p]);
}

void metrics_record_refused(metrics_listener_t l, connguard_refusal_t why)
{
        if ((unsigned)l < METRICS_LISTENER_COUNT && (unsigned)why < CONNGUARD_REFUSED_COUNT)
                atomic_fetch_add(&m.refused[l][why], 1);
}

void metrics_record_evicted(metrics_listener_t l, connguard_phase_t phase)
{
        if ((unsigned)l < METRICS_LISTENER_COUNT && (unsigned)phase < CONNGUARD_PHASE_COUNT)
                atomic_fetch_add(&m.evicted[l][phase], 1);
}

void metrics_record_expired(metrics_listener_t l, connguard_phase_t phase)
{
        if ((unsigned)l < METRICS_LISTENER_COUNT && (unsigned)phase < CONNGUARD_PHASE_COUNT)
                atomic_fetch_add(&m.expired[l][phase], 1);
}

void metrics_record_keepalive_declined(metrics_listener_t l, connguard_keepalive_t why)
{
        if ((unsigned)l < METRICS_LISTENER_COUNT && (unsigned)why < CONNGUARD_KEEPALIVE_COUNT)
                atomic_fetch_add(&m.keepalive_declined[l][why], 1);
}

/* One counter family by listener and one other label. */
static int render_by(strbuf_t *sb, const char *name, const char *label, atomic_uint_fast64_t *v,
                     size_t n, unsigned first, const char *(*label_name)(unsigned))
{
        int r = 0;
        for (unsigned l = 0; l < METRICS_LISTENER_COUNT; l++)
                for (unsigned i = first; i < n; i++)
                        r |= strbuf_printf(sb, "%s{listener=\"%s\",%s=\"%s\"} %llu\n", name,
                                           listener_names[l], label, label_name(i),
                                           (unsigned long long)atomic_load(&v[l * n + i]));
        return r;
}

static const char *refusal_label(unsigned i)
{
        return connguard_refusal_name((connguard_refusal_t)i);
}

static const char *phase_label(unsigned i)
{
        return connguard_phase_name((connguard_phase_t)i);
}

static const char *keepalive_label(unsigned i)
{
        return connguard_keepalive_name((connguard_keepalive_t)i);
}

/* The connection tables' series. */
static int render_connections(strbuf_t *sb)
{
        int r = strbuf_puts(sb, "# HELP hangar_webhook_connections Open connections by listener, "
                                "class (trusted: in server.trustedClientCIDRs) and phase.\n"
                                "# TYPE hangar_webhook_connections gauge\n");
        for (unsigned l = 0; l < METRICS_LISTENER_COUNT; l++)
                for (unsigned c = 0; c < CONNGUARD_CLASS_COUNT; c++)
                        for (unsigned p = 0; p < CONNGUARD_PHASE_COUNT; p++)
                                r |= strbuf_printf(
                                    sb,
                                    "hangar_webhook_connections{listener=\"%s\",class=\"%s\","
                                    "phase=\"%s\"} %llu\n",
                                    listener_names[l], connguard_class_name(c),
                                    connguard_phase_name(p),
                                    (unsigned long long)atomic_load(&m.connections[l][c][p]));
        r |= strbuf_puts(sb, "# HELP hangar_webhook_connections_refused_total Connections closed "
                             "at accept, by reason.\n"
                             "# TYPE hangar_webhook_connections_refused_total counter\n");
        r |= render_by(sb, "hangar_webhook_connections_refused_total", "reason", &m.refused[0][0],
                       CONNGUARD_REFUSED_COUNT, 0, refusal_label);
        r |= strbuf_puts(sb, "# HELP hangar_webhook_connections_evicted_total Connections shut "
                             "down to make room in a full table, by the phase they were in.\n"
                             "# TYPE hangar_webhook_connections_evicted_total counter\n");
        r |= render_by(sb, "hangar_webhook_connections_evicted_total", "phase", &m.evicted[0][0],
                       CONNGUARD_PHASE_COUNT, 0, phase_label);
        r |= strbuf_puts(sb, "# HELP hangar_webhook_connections_expired_total Connections shut "
                             "down at their phase's deadline, by phase.\n"
                             "# TYPE hangar_webhook_connections_expired_total counter\n");
        r |= render_by(sb, "hangar_webhook_connections_expired_total", "phase", &m.expired[0][0],
                       CONNGUARD_PHASE_COUNT, 0, phase_label);
        r |= strbuf_puts(sb, "# HELP hangar_webhook_keepalive_declined_total Answers sent with "
                             "Connection: close instead of keeping the connection, by reason.\n"
                             "# TYPE hangar_webhook_keepalive_declined_total counter\n");
        /* From 1: CONNGUARD_KEEP is not a reason to decline. */
        r |= render_by(sb, "hangar_webhook_keepalive_declined_total", "reason",
                       &m.keepalive_declined[0][0], CONNGUARD_KEEPALIVE_COUNT, 1, keepalive_label);
        return r;
}

/* The self-managed certificate's series. */
static int render_self_managed(strbuf_t *sb)
{
        return strbuf_printf(
            sb,
            "# HELP hangar_webhook_ca_not_after_seconds Expiry of the CA that signs the serving "
            "certificate (Unix time; 0 before the first sync reads it).\n"
            "# TYPE hangar_webhook_ca_not_after_seconds gauge\n"
            "hangar_webhook_ca_not_after_seconds %lld\n"
            "# HELP hangar_webhook_ca_bundle_in_sync Whether the last certificate sync ended with "
            "every webhook of the configurations trusting the CA (1) or failed (0).\n"
            "# TYPE hangar_webhook_ca_bundle_in_sync gauge\n"
            "hangar_webhook_ca_bundle_in_sync %d\n"
            "# HELP hangar_webhook_ca_bundle_synced_timestamp_seconds When a certificate sync "
            "last ended with the caBundle trusting the CA (Unix time; 0 before one).\n"
            "# TYPE hangar_webhook_ca_bundle_synced_timestamp_seconds gauge\n"
            "hangar_webhook_ca_bundle_synced_timestamp_seconds %lld\n"
            "# HELP hangar_webhook_ca_bundle_updates_total caBundles found not trusting the CA "
            "and patched.\n"
            "# TYPE hangar_webhook_ca_bundle_updates_total counter\n"
            "hangar_webhook_ca_bundle_updates_total %llu\n",
            (long long)atomic_load(&m.ca_not_after), atomic_load(&m.ca_bundle_in_sync) ? 1 : 0,
            (long long)atomic_load(&m.ca_bundle_synced_at),
            (unsigned long long)atomic_load(&m.ca_bundle_updates));
}

char *metrics_render(bool ready)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        int r = 0;
        r |=
            strbuf_puts(&sb, "# HELP hangar_webhook_reviews_total AdmissionReviews answered, by "
                             "decision and reason.\n# TYPE hangar_webhook_reviews_total counter\n");
        uint64_t injections = 0;
        for (unsigned i = 0; i < REASON_COUNT; i++) {
                uint64_t v = atomic_load(&m.reviews[i]);
                mutate_decision_t d = mutate_reason_decision(i);
                r |= strbuf_printf(&sb,
                                   "hangar_webhook_reviews_total{decision=\"%s\",reason=\"%s\"} "
                                   "%llu\n",
                                   mutate_decision_name(d), mutate_reason_name(i),
                                   (unsigned long long)v);
                if (d == DECISION_INJECT)
                        injections += v;
        }
        /* What warn and audit mode let through, under the deny's reason. */
        for (unsigned k = 0; k < 2; k++)
                for (unsigned i = 0; i < REASON_COUNT; i++)
                        if (enforcement_relaxable(i))
                                r |= strbuf_printf(
                                    &sb,
                                    "hangar_webhook_reviews_total{decision=\"%s\",reason=\"%s\"} "
                                    "%llu\n",
                                    mutate_decision_name(k ? DECISION_AUDITED : DECISION_WARNED),
                                    mutate_reason_name(i),
                                    (unsigned long long)atomic_load(&m.relaxed[k][i]));
        r |= strbuf_printf(&sb,
                           "# HELP hangar_webhook_injections_total Pods given the driver sidecar.\n"
                           "# TYPE hangar_webhook_injections_total counter\n"
                           "hangar_webhook_injections_total %llu\n",
                           (unsigned long long)injections);
        r |= strbuf_puts(&sb, "# HELP hangar_webhook_skips_total Reviews allowed without the "
                              "sidecar, by reason.\n# TYPE hangar_webhook_skips_total counter\n");
        for (unsigned i = 0; i < REASON_COUNT; i++)
                if (mutate_reason_decision(i) == DECISION_SKIP)
                        r |= strbuf_printf(&sb, "hangar_webhook_skips_total{reason=\"%s\"} %llu\n",
                                           mutate_reason_name(i),
                                           (unsigned long long)atomic_load(&m.reviews[i]));
        r |= strbuf_puts(&sb, "# HELP hangar_webhook_errors_total Requests refused before a "
                              "decision, and other errors, by kind.\n"
                              "# TYPE hangar_webhook_errors_total counter\n");
        for (unsigned i = 0; i < METRICS_ERROR_COUNT; i++)
                r |= strbuf_printf(&sb, "hangar_webhook_errors_total{kind=\"%s\"} %llu\n",
                                   error_names[i], (unsigned long long)atomic_load(&m.errors[i]));
        r |= strbuf_puts(&sb, "# HELP hangar_webhook_review_duration_seconds Time from a request's "
                              "headers to its answer.\n"
                              "# TYPE hangar_webhook_review_duration_seconds histogram\n");
        uint64_t cumulative = 0;
        for (size_t i = 0; i < NBUCKETS; i++) {
                cumulative += atomic_load(&m.latency_buckets[i]);
                r |= strbuf_printf(
                    &sb, "hangar_webhook_review_duration_seconds_bucket{le=\"%g\"} %llu\n",
                    buckets[i], (unsigned long long)cumulative);
        }
        /* Loaded after the buckets; a review recorded in between could
         * still leave it behind them, and +Inf must not be below them. */
        uint64_t count = atomic_load(&m.latency_count);
        if (count < cumulative)
                count = cumulative;
        r |= strbuf_printf(&sb,
                           "hangar_webhook_review_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
                           "hangar_webhook_review_duration_seconds_sum %.9f\n"
                           "hangar_webhook_review_duration_seconds_count %llu\n",
                           (unsigned long long)count, (double)atomic_load(&m.latency_sum_ns) / 1e9,
                           (unsigned long long)count);
        r |= strbuf_printf(&sb,
                           "# HELP hangar_webhook_cert_not_after_seconds Expiry of the serving "
                           "certificate in use (Unix time; 0 before one is loaded).\n"
                           "# TYPE hangar_webhook_cert_not_after_seconds gauge\n"
                           "hangar_webhook_cert_not_after_seconds %lld\n"
                           "# HELP hangar_webhook_cert_reloads_total Serving certificate pairs "
                           "loaded.\n# TYPE hangar_webhook_cert_reloads_total counter\n"
                           "hangar_webhook_cert_reloads_total %llu\n",
                           (long long)atomic_load(&m.cert_not_after),
                           (unsigned long long)atomic_load(&m.cert_reloads_ok));
        r |= strbuf_printf(&sb,
                           "# HELP hangar_webhook_ready Whether /readyz answers 200 (1: a valid "
                           "serving certificate, not shutting down) or 503 (0).\n"
                           "# TYPE hangar_webhook_ready gauge\n"
                           "hangar_webhook_ready %d\n"
                           "# HELP hangar_webhook_build_info The webhook's version (always 1).\n"
                           "# TYPE hangar_webhook_build_info gauge\n"
                           "hangar_webhook_build_info{version=\"%s\"} 1\n",
                           ready ? 1 : 0, HANGAR_VERSION);
        r |= render_connections(&sb);
        if (atomic_load(&m.self_managed))
                r |= render_self_managed(&sb);
        if (r != 0)
                return NULL;
        return strbuf_take(&sb);
}
