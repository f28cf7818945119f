/* AdmissionReview in and out (admission.k8s.io/v1, and v1beta1 answered in
 * kind). Decoding is strict and bounded; anything malformed is an error for
 * a 400, never a guess. A well-formed review always gets an answer echoing
 * its uid, even when the decision is a deny or an internal error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "config.h"
#include "error.h"
#include "mutate.h"

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

/* Handles one AdmissionReview body: decodes it, decides, and encodes the
 * response into *ret_body (malloc'd JSON). Returns 0 with a response, or
 * -EINVAL (malformed: err says why, for a 400) or -ENOMEM. The outcome is
 * filled as far as decoding got and must be freed either way. */
int admission_handle(const hg_config_t *cfg, const char *body, size_t len, char **ret_body,
                     admission_outcome_t *outcome, hg_error_t *err);
void admission_outcome_free(admission_outcome_t *o);

/* Wraps a pod in a v1 CREATE AdmissionReview (for `inject` and tests). */
json_t *admission_wrap_pod(json_t *pod, const char *uid);
