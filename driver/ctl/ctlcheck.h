/* The checks a control request (ctlreq.h: already well-formed) passes
 * against the daemon's turn before any handler acts on it: whether the op
 * can be served now (a turn named that is here, a turn at all, a turn in
 * flight), and the values only the handlers read (a signal's name, steer
 * text, a terminal's size). Pure: the messages are hangar's replies. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "ctlreq.h"
#include "error.h"

/* What op needs of the daemon's turn: its row in ctlops.c. */
ctlcheck_need_t ctlcheck_need(ctlreq_op_t op);

/* May op (for req_turn, NULL: the daemon's) be served now? turn: the
 * daemon's current or last turn's id (NULL: no turn yet); active: it is in
 * flight. 0, or -ENOENT (no such turn) / -ESRCH (it has ended) with err's
 * message. A handler may refuse still (its own state, its arguments). */
int ctlcheck_turn(ctlreq_op_t op, const char *req_turn, const char *turn, bool active,
                  hg_error_t *err);

/* ctl signal's names: HUP INT QUIT KILL USR1 USR2 TERM CONT STOP TSTP
 * WINCH. The signal's number, or 0 for any other name (and NULL). */
int ctlcheck_signal(const char *name);

/* Steer text is one line for the harness's stdin: a newline (or any other
 * control character but tab) would let it carry a second line, such as a
 * forged approval_response. Refused, not escaped: the harness gets exactly
 * what hangar sent or nothing. len is the JSON string's length (a NUL
 * inside is refused). */
bool ctlcheck_steer_text(const char *text, size_t len);

/* A terminal's size within the frame's bounds (FRAME_TERM_*). */
bool ctlcheck_term_size(long long rows, long long cols);
