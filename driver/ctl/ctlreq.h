/* A request on the driver's control socket (driver/ctl/ctlsock.h), checked
 * before anything acts on it: one JSON object, an "op" from a closed list,
 * and for that op only the members it takes, each of the right type.
 * Unknown ops and unknown members are refused, so a typo never silently
 * turns into another request. The requests come from uid 1001 only
 * (SO_PEERCRED), and are still parsed as untrusted bytes.
 *
 *   {"op": "ping"}                                   the daemon answers (the probe)
 *   {"op": "start", "spec": "<turn spec text>"}      a turn (driver/turn/spec.h)
 *   {"op": "status", "turn": "t-42"}                 "turn" optional: the daemon's turn
 *   {"op": "watch", "turn": "t-42", "from": 1234}    the log from byte 1234
 *   {"op": "events", "turn": "t-42", "from": 0}      events.jsonl from byte 0
 *   ... "follow": true                               and on, live, until the turn ends
 *   {"op": "finish", "abort": "why"}                 end the turn now, in any state
 *   {"op": "start", ..., "follow": true}             the reply, then the turn's events live
 *   ... and the turn's ops (docs/turn.md): token, approvals, approve, deny,
 *   steer, close-stdin, signal, finish, run, tree, verify, and a terminal
 *   turn's screen, send-keys, resize, type (docs/terminal.md), and the
 *   sealed grades' grade-begin, grade-finish (a spec each) and grade-show
 *   (docs/graders.md). The ops and their members are ctlops.c's table. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctlops.h"
#include "error.h"

#define CTLREQ_DEPTH_MAX 4
#define CTLREQ_FROM_MAX  (UINT64_C(1) << 53) /* exact in a JSON number */

typedef struct ctlreq {
        ctlreq_op_t op;
        json_t *root;     /* the whole request (owned); the op's members as checked */
        const char *turn; /* "turn", or NULL: the daemon's current (or last) turn */
        uint64_t from;    /* "from" (watch, events), 0 if absent */
        bool follow;      /* events, start: the events live until the turn ends */
        const char *spec; /* start: the spec's text (in root) */
        size_t spec_len;
} ctlreq_t;

/* Parses and checks one request. 0, or -EINVAL with err saying why. */
int ctlreq_parse(const char *text, size_t len, ctlreq_t *ret, hg_error_t *err);
void ctlreq_free(ctlreq_t *r);
const char *ctlreq_op_name(ctlreq_op_t op);
/* A turn id as the spec allows it: [A-Za-z0-9._-]{1,64}. */
bool ctlreq_turn_id_ok(const char *id);
