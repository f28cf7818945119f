/* Ending pinned processes: each one's pidfd polled for its exit against one
 * deadline, so a wait never signals and never mistakes a newcomer for the
 * process waited on. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "procid.h"

/* One process to end: its name and, once pinned, its pidfd (-1: not pinned,
 * because it had ended or because its pid is another process's now). */
typedef struct {
        procid_t id;
        int pidfd;
        bool ended;
} procpin_t;

/* Pins each of pins[0..n) (pidfd set, or ended set). Returns how many were
 * refused because their pid is another process's now (those are ended for
 * the caller: the process recorded is gone). Says so on stderr, with prog. */
size_t procstop_pin(const char *prog, procpin_t *pins, size_t n);

/* Waits until every pinned process has ended or timeout_ms has passed.
 * Returns how many still run. */
size_t procstop_wait(procpin_t *pins, size_t n, long timeout_ms);

/* The whole stop: SIGTERM to each (unless term is false), grace_ms for them
 * to end, SIGKILL to the ones still running, kill_wait_ms for those. Returns
 * how many still run after all that (0: every one ended). */
size_t procstop_run(const char *prog, procpin_t *pins, size_t n, bool term, long grace_ms,
                    long kill_wait_ms);

/* Closes the pidfds. */
void procstop_release(procpin_t *pins, size_t n);
