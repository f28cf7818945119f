/* AdmissionReview in and out (admission.k8s.io/v1, and v1beta1 answered in
 * kind). Decoding is strict and bounded; anything malformed is an error for
 * a 400, never a guess. A well-formed review always gets an answer echoing
 * its uid, even when the decision is a deny or an internal error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "jsonparse.h"
#include "mutate.h"
#include "settings.h"

typedef struct admission_outcome {
        mutate_result_t result;
        /* For logs, borrowed from the review (valid until admission_outcome_free). */
        const char *uid;
        const char *namespace;
        const char *name;
        const char *operation;
        bool dry_run;
        json_t *review; /* owned: the decoded request */
        json_t *pod;    /* borrowed from review: the pod as patched (inject) */
} admission_outcome_t;

/* How much of a review is built before deciding. Both give the same answer
 * bytes, the same error and the same outcome for every input (the fuzz
 * target checks it); they differ in what o->review and o->pod hold. */
typedef enum admission_read {
        /* The whole review: o->pod is the whole pod as patched (inject, and
         * the reference the projected read is checked against). */
        ADMISSION_READ_WHOLE,
        /* Only what the decision reads is built (podview_projection);
         * the rest (managedFields, env, status, ...) is checked, not kept.
         * o->pod then holds only those parts. The server and `review`. */
        ADMISSION_READ_PROJECTED,
} admission_read_t;

/* What ADMISSION_READ_PROJECTED builds of a review (see jsonparse.h). */
extern const jsonparse_proj_t admission_review_projection;

/* Handles one AdmissionReview body: decodes it, decides, and encodes the
 * response into *ret_body (malloc'd JSON). Returns 0 with a response, or
 * -EINVAL (malformed: err says why, for a 400) or -ENOMEM. The outcome is
 * filled as far as decoding got and must be freed either way. values are
 * the sidecar's values for cfg (shape_values_new), or NULL to build them
 * for this review. */
int admission_review(const webhook_settings_t *cfg, const shape_values_t *values,
                     admission_read_t read, const char *body, size_t len, char **ret_body,
                     admission_outcome_t *outcome, hg_error_t *err);
/* admission_review of the whole review, values built for it. */
int admission_handle(const webhook_settings_t *cfg, const char *body, size_t len, char **ret_body,
                     admission_outcome_t *outcome, hg_error_t *err);
void admission_outcome_free(admission_outcome_t *o);

/* Reads the pod namespace/name as stored (for a port-forward's decision):
 * 0 with *ret_pod (owned), or <0 with err saying why. */
typedef int (*admission_pod_lookup_fn)(void *ctx, const char *ns, const char *name,
                                       json_t **ret_pod, hg_error_t *err);

/* The validating side (/validate): the doors after CREATE, decided by
 * guard.c on the whole review. lookup (may be NULL: then a port-forward is
 * refused as undecidable) reads the pod a CONNECT names. Never a patch.
 * Returns as admission_review does. */
int admission_validate(const webhook_settings_t *cfg, const char *body, size_t len,
                       admission_pod_lookup_fn lookup, void *lookup_ctx, char **ret_body,
                       admission_outcome_t *outcome, hg_error_t *err);

/* The decision a v1 CREATE review of pod gets, without the review: pod is
 * checked as the review's reader would check it as request.object (an
 * object, nesting within the review's bound, no NUL in a string: -EINVAL
 * with err saying why), then decided and patched in place by mutate_pod
 * (values as for admission_review). Returns 0 with *ret filled (any
 * decision), -EINVAL, or -ENOMEM (then *ret is the internal-error deny).
 * For `inject`: the pods of a manifest decided as the server decides. */
int admission_decide_pod(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
                         mutate_result_t *ret, hg_error_t *err);

/* Wraps a pod in a v1 CREATE AdmissionReview (for tests). */
json_t *admission_wrap_pod(json_t *pod, const char *uid);
