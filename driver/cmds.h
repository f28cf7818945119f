/* hangar-driver's subcommands, one file each where they are more than a
 * few lines (cmd_ctl.c); main.c dispatches. */
#pragma once

#include "config.h"

/* The config from path (NULL: the built-in defaults); -1 after saying why
 * on stderr. */
int driver_load_config(const char *path, hg_config_t *cfg);

/* hangar-driver ctl [--config FILE] OP [ARGS] (argv[0] is "ctl"). */
int cmd_ctl(int argc, char **argv);

/* hangar-driver verdict [--config FILE]: the probe's verdict on stdin,
 * stored into hangar-home and hangar-ctl (cmd_verdict.c). */
int cmd_verdict(int argc, char **argv);
