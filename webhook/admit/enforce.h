/* Staged rollout: whether a deny is enforced. An admin turning hangar on in
 * a running cluster first sets the guard (and injection conflicts) to warn
 * or audit: every deny the webhook would answer is then allowed, logged,
 * counted and marked in the audit annotations (and, in warn mode, returned
 * to the client as an admission warning), so the admin sees what would be
 * refused before anything is. Internal errors and malformed reviews are
 * never relaxed: they are not decisions, and fail closed in every mode. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "mutate.h"
#include "settings.h"

typedef enum enforcement {
        ENFORCEMENT_ENFORCE, /* first: a zeroed setting enforces */
        ENFORCEMENT_WARN,
        ENFORCEMENT_AUDIT,
} enforcement_t;

#define ENFORCEMENT_NAMES "enforce, warn or audit"

/* Parses "enforce", "warn" or "audit": 0, or -EINVAL. */
int enforcement_parse(const char *s, enforcement_t *ret);
bool enforcement_is_name(const char *s);

/* The modes the settings name (validated at load; anything else enforces). */
enforcement_t settings_guard_enforcement(const webhook_settings_t *s);
enforcement_t settings_conflict_enforcement(const webhook_settings_t *s);

/* Whether a deny for this reason is a decision the mode may relax: the
 * guard's refusals and injection conflicts, not internal errors or pods the
 * webhook cannot read. */
bool enforcement_relaxable(mutate_reason_t reason);

/* Applies mode to a decided result: a relaxable deny under warn or audit
 * becomes DECISION_WARNED or DECISION_AUDITED (allowed, no patch: a
 * conflict is answered like a skip), its reason and detail kept. Anything
 * else is left as it is. */
void enforcement_apply(enforcement_t mode, mutate_result_t *res);

/* The warning a warned decision returns: "hangar would deny (REASON):
 * DETAIL", control characters replaced by spaces, cut at a UTF-8 boundary
 * to fit the API server's advice (warnings over 256 bytes may be cut). */
#define ENFORCEMENT_WARNING_MAX 256
void enforcement_warning(const mutate_result_t *res, char out[ENFORCEMENT_WARNING_MAX + 1]);
