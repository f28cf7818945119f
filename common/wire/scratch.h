/* The turn's scratch directory in the agent's home: $HOME/.hangar-scratch/
 * <turn>, where `hangar-driver tree` keeps its manifests and the verify
 * gate its rounds file (docs/design/trees-and-gate.md). The agent's own files: created
 * and removed by the agent's processes (the tree command, the relay at the
 * end of the turn), never read by the driver except through a run request. */
#pragma once

#include <stdbool.h>

#include "error.h"

#define SCRATCH_DIR_NAME ".hangar-scratch"

/* A turn id: [A-Za-z0-9._-]{1,64}, not "." or "..": safe as a file name. */
bool scratch_turn_id_valid(const char *turn);
/* $HOME/.hangar-scratch/<turn>; -EINVAL for a turn id that is not
 * [A-Za-z0-9._-]{1,64} or "."/"..", or HOME unset or relative. */
int scratch_path(const char *turn, char **ret, hg_error_t *err);
/* Creates it (and its parent), mode 0700. */
int scratch_create(const char *turn, char **ret_path, hg_error_t *err);
/* Removes it and everything in it, never following a symlink. */
int scratch_remove(const char *turn);
