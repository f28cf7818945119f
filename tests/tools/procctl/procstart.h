/* Starting a process detached: its own session (no terminal, no signal from
 * the caller's process group), its stdio on files of its own, and its name
 * (pid and start time) read while it is still this process's unreaped child,
 * so the name cannot be another process's. */
#pragma once

#include "procid.h"

/* Starts argv[0] (looked up in PATH) with stdin from /dev/null and stdout,
 * stderr appended to out_path, err_path (NULL: /dev/null; the same path:
 * one file). Returns once the exec succeeded (-errno of a failed exec or
 * open otherwise); the child is not waited for. */
int procstart_detached(char *const argv[], const char *out_path, const char *err_path,
                       procid_t *ret);
