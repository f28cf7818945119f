/* Approvals in a turn (docs/turn.md, step 4): the harness asks (a stdout
 * line, or ASK on a terminal turn's approval channel), hangar or the turn's
 * mode decides, and the decision is recorded before the harness hears it.
 * Only the driver answers: the agent can ask, never decide. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "turnctx.h"

/* Decides a pending request: recorded first (approvals.json, then the
 * approval.decided event), and only then queued for the harness, with room
 * for it checked before anything changes. So a decision that could not be
 * recorded or delivered leaves the request pending for hangar to retry:
 * -EPIPE (the harness's stdin is closed), -ENOBUFS (its input is full),
 * -ENOENT (not pending), or the record's -errno. by: "hangar" or
 * "driver". */
int turnapproval_decide(turn_t *t, const char *id, bool approve, const char *by);

/* approvals_scan's callback (userdata: the turn): a new request recorded;
 * in a deny-risky turn the driver denies it at once. */
void turnapproval_on_request(void *userdata, const char *id, json_t *request);

/* A chunk the harness wrote where approval requests come (a plain turn's
 * stdout, a terminal turn's ASK), scanned for them. A request lost for
 * want of memory would leave the harness waiting for an answer: the turn
 * ends instead (driver-failed). */
void turnapproval_scan(turn_t *t, const void *data, size_t len);
