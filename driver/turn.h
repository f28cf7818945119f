/* One turn under the sidecar, run by `hangar-driver relay`: the gate, the
 * turn's files, the relay listener, the control socket, and the loop that
 * relays the harness until the turn ends (docs/turn.md). */
#pragma once

#include "config.h"
#include "spec.h"

/* Exit statuses of `hangar-driver relay`. */
#define TURN_EXIT_RAN         0 /* the turn ran; run/exit.json says how the harness ended */
#define TURN_EXIT_FAILED      1 /* the driver could not run it (JSON says why) */
#define TURN_EXIT_USAGE       2
#define TURN_EXIT_SINGLE_USER 3 /* run this turn in the agent's container, single-user */
#define TURN_EXIT_REFUSED     4 /* HANGAR_UID_SPLIT=required and the pod did not pass */

/* Runs the turn; prints one JSON line on stdout and returns an exit status. */
int turn_run(const hg_config_t *cfg, turn_spec_t *spec);
