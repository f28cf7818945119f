/* The turn's traffic with the relay (docs/protocol.md): the listener's
 * verdicts on who connects, then the frames on io (the harness's output)
 * and ctl (its stderr, exit, signals, run results, a terminal's approval
 * requests), and the harness's stdin sent as io has room. Each frame is
 * recorded as it comes; anything the protocol does not allow ends the turn
 * (protocol-error). */
#pragma once

#include <stdint.h>

#include "frame.h"
#include "listener.h"
#include "turnctx.h"

/* A turn in flight, each time round the daemon's loop: the relay's
 * connections taken once both are in, the frames read, stdin sent, and the
 * deadlines checked (turnstate.h). */
void turnrelay_step(turn_t *t, int64_t now);

/* The listener's callbacks (userdata: the turn). */
void turnrelay_on_accept(void *userdata, frame_channel_t channel);
void turnrelay_on_reject(void *userdata, listener_reject_t why, const char *detail);
