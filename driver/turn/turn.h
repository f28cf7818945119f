/* The driver's daemon (`hangar-driver serve`, the sidecar's PID 1) and the
 * turns it runs: the control socket, the gate, the turn's files, the relay
 * listener, and the loop that relays the harness until the turn ends
 * (docs/turn.md). `hangar-driver relay` is the same daemon, started with
 * one turn and ending with it. */
#pragma once

#include "config.h"
#include "spec.h"

/* Exit statuses of `hangar-driver relay`. */
#define TURN_EXIT_RAN         0 /* the turn ran; run/exit.json says how the harness ended */
#define TURN_EXIT_FAILED      1 /* the driver could not run it (JSON says why) */
#define TURN_EXIT_USAGE       2
#define TURN_EXIT_SINGLE_USER 3 /* run this turn in the agent's container, single-user */
#define TURN_EXIT_REFUSED     4 /* HANGAR_UID_SPLIT=required and the pod did not pass */

/* first == NULL: serve turns on request (ctl start) until SIGTERM; 0, or 1
 * if it could not start. first: run that one turn (hangar-driver relay),
 * print one JSON line on stdout and return its exit status. */
int turn_serve(const hg_config_t *cfg, turn_spec_t *first);
