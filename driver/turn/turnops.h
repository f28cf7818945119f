/* The control requests (docs/turn.md, "Command reference"): a parsed
 * request (ctlreq.h) checked against the turn (ctlcheck.h) and handled:
 * the turn's start, its state, its record streamed, hangar's commands to
 * the harness (steer, signals, approvals, a terminal's keys), and run
 * requests through the relay. hangar's commands are recorded first and
 * sent only if recorded. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "ctlclient.h"
#include "ctlreq.h"
#include "turnctx.h"

/* One request from c: the reply, or NULL when it comes later (a run's
 * result, a stream: c's state says which). */
json_t *turnops_dispatch(turn_t *t, ctlclient_t *c, const ctlreq_t *q);

/* Has op a handler? (Every op of ctlops.c must: unit_ctlops.) */
bool turnops_handles(ctlreq_op_t op);

/* c is readable: its request read, and once whole parsed and dispatched. */
void turnops_client_read(turn_t *t, ctlclient_t *c);
