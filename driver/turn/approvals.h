/* Approval requests: the harness asks on its stdout with one JSON line
 *   {"type": "approval_request", "id": "...", ...}
 * and gets the decision on its stdin as
 *   {"type": "approval_response", "id": "...", "decision": "approve"|"deny"}
 * Decisions come from hangar (`hangar-driver ctl approve|deny ID`) or, in a
 * deny-risky turn, from the driver itself. The record lives in hangar-ctl,
 * out of the agent's reach: the agent can ask, never answer. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define APPROVALS_MAX      256u
#define APPROVALS_LINE_MAX (64u * 1024u) /* longer stdout lines are not requests */
#define APPROVALS_ID_MAX   128u

typedef enum approval_state {
        APPROVAL_PENDING,
        APPROVAL_APPROVED,
        APPROVAL_DENIED,
} approval_state_t;

typedef struct approval {
        char id[APPROVALS_ID_MAX + 1];
        json_t *request;
        approval_state_t state;
        char by[16];
} approval_t;

typedef struct approvals {
        approval_t *items;
        size_t n;
        uint8_t *line; /* the stdout line being assembled */
        size_t line_len;
        bool line_overflow;
        uint64_t over_limit; /* well-formed requests past APPROVALS_MAX, not kept */
        uint64_t duplicates; /* requests repeating a known id, ignored */
        uint64_t lost;       /* lines not read for want of memory (approvals_scan) */
} approvals_t;

typedef void (*approvals_request_fn)(void *userdata, const char *id, json_t *request);

int approvals_init(approvals_t *a);
void approvals_free(approvals_t *a);

/* Feeds harness stdout; calls fn for each new well-formed request (ids are
 * unique: a repeated id is ignored, never re-opened). Returns 0, or -ENOMEM
 * when a line that may have been a request could not be read for want of
 * memory (counted in lost; the rest of data is still scanned): the harness
 * may then wait for an answer that will not come, so the caller must not
 * carry on as if nothing was asked. */
int approvals_scan(approvals_t *a, const uint8_t *data, size_t n, approvals_request_fn fn,
                   void *userdata);
/* The line for the harness's stdin deciding a pending id (caller frees), or
 * NULL if id is not pending (or out of memory). Changes nothing: the driver
 * records the decision and makes room for the line first, and only then
 * marks it (approvals_set_state), so a decision it could not deliver or
 * record leaves the request pending for hangar to retry. */
char *approvals_response_line(const approvals_t *a, const char *id, bool approve);
/* Sets id's state (PENDING again undoes a decision); -ENOENT if unknown. */
int approvals_set_state(approvals_t *a, const char *id, approval_state_t state, const char *by);
/* approvals_response_line, then the state set: for callers with nothing
 * that can fail in between (tests, fuzzing). */
char *approvals_decide(approvals_t *a, const char *id, bool approve, const char *by);
bool approvals_is_pending(const approvals_t *a, const char *id);
size_t approvals_pending(const approvals_t *a);
/* [{"id", "state", "by", "request"}...] */
json_t *approvals_json(const approvals_t *a);
