/* Prometheus metrics for the webhook, lock-free (C11 atomics) so the request
 * threads never wait on each other to count. Rendered in the text format. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "connguard.h"
#include "mutate.h"

typedef enum metrics_error {
        METRICS_ERROR_BAD_REQUEST, /* 400: malformed AdmissionReview */
        METRICS_ERROR_TOO_LARGE,   /* 413 */
        METRICS_ERROR_MEDIA_TYPE,  /* 415 */
        METRICS_ERROR_NOT_FOUND,   /* 404 / 405 */
        METRICS_ERROR_TIMEOUT,     /* 408: request took too long */
        METRICS_ERROR_INTERNAL,    /* allocation or encoding failure */
        METRICS_ERROR_CERT_RELOAD, /* a new certificate pair was refused */
        METRICS_ERROR_BODY_BUDGET, /* 503: request bodies in memory at their cap */
        METRICS_ERROR_COUNT,
} metrics_error_t;

void metrics_record_review(const mutate_result_t *result, double seconds);
void metrics_record_error(metrics_error_t kind);
void metrics_record_cert(int64_t not_after_unix, int reloaded_ok);
/* Self-managed certificates (selfcert.c), one call per sync round: the
 * expiry of the CA that signs the serving pair (its series appear with the
 * first call, so other modes expose none), and whether the round ended with
 * every webhook of the configurations trusting the CA (now_unix: when). */
void metrics_record_ca(int64_t not_after_unix);
void metrics_record_ca_bundle(bool in_sync, int64_t now_unix);
/* A caBundle the sync found wrong and patched. */
void metrics_record_ca_bundle_update(void);
/* The connection tables (connguard.h), per listener. */
typedef enum metrics_listener {
        METRICS_LISTENER_HTTPS,
        METRICS_LISTENER_HEALTH,
        METRICS_LISTENER_COUNT,
} metrics_listener_t;
/* A snapshot of a table's live connections (server.c's reaper, 4 a second). */
void metrics_set_connections(metrics_listener_t l,
                             const uint32_t counts[CONNGUARD_CLASS_COUNT][CONNGUARD_PHASE_COUNT]);
void metrics_record_refused(metrics_listener_t l, connguard_refusal_t why);
void metrics_record_evicted(metrics_listener_t l, connguard_phase_t phase);
void metrics_record_expired(metrics_listener_t l, connguard_phase_t phase);
void metrics_record_keepalive_declined(metrics_listener_t l, connguard_keepalive_t why);
/* The text exposition; ready is what /readyz answers now. The caller frees
 * it. NULL on allocation failure. */
char *metrics_render(bool ready);
