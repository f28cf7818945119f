/* Prometheus metrics for the webhook, lock-free (C11 atomics) so the request
 * threads never wait on each other to count. Rendered in the text format. */
#pragma once

#include <stdint.h>

#include "mutate.h"

typedef enum metrics_error {
        METRICS_ERROR_BAD_REQUEST, /* 400: malformed AdmissionReview */
        METRICS_ERROR_TOO_LARGE,   /* 413 */
        METRICS_ERROR_MEDIA_TYPE,  /* 415 */
        METRICS_ERROR_NOT_FOUND,   /* 404 / 405 */
        METRICS_ERROR_TIMEOUT,     /* 408: request took too long */
        METRICS_ERROR_INTERNAL,    /* allocation or encoding failure */
        METRICS_ERROR_CERT_RELOAD, /* a new certificate pair was refused */
        METRICS_ERROR_COUNT,
} metrics_error_t;

void metrics_record_review(const mutate_result_t *result, double seconds);
void metrics_record_error(metrics_error_t kind);
void metrics_record_cert(int64_t not_after_unix, int reloaded_ok);
/* The text exposition; the caller frees it. NULL on allocation failure. */
char *metrics_render(void);
