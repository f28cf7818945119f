/* A turn's start and its end (docs/turn.md, steps 2 and 6): the gate
 * (HANGAR_UID_SPLIT against the verdict), the turn's files in hangar-ctl
 * and hangar-home, a fresh token and listener, the port written last; and
 * at the end the record's last lines (run/exit.json, turn.ended, status)
 * before what the turn held is let go. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "error.h"
#include "spec.h"
#include "turnctx.h"

/* HANGAR_UID_SPLIT against the verdict: -1 to go on, or the exit status
 * (TURN_EXIT_*, turn.h) with its outcome ("single-user", "refused",
 * "failed") and reason. */
int turnsetup_gate(const hg_config_t *cfg, const turn_spec_t *spec, const char **ret_outcome,
                   char *reason, size_t reason_size);

/* Starts t->spec's turn: a fresh record, token, listener and port; what the
 * last turn left in memory is reset first. On failure the turn has ended
 * ("failed", recorded as far as it could be) and err says why. */
int turnsetup_start(turn_t *t, hg_error_t *err);

/* The end of a turn: its record (run/exit.json, the last event, status),
 * then what it held goes: the relay's connections (the relay sees ctl close
 * and ends), the listener, the token, the port file. Clients waiting for a
 * run get an error; watchers keep their own descriptor of the log and get
 * the rest of it. */
void turnsetup_finish(turn_t *t);

/* run/exit.json's object, also `hangar-driver relay`'s line. */
json_t *turnsetup_exit_json(const turn_t *t);

/* Removes dir/name if it is there. */
void turnsetup_unlink(const char *dir, const char *name);
