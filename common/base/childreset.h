/* The first steps of a forked child, before it sets up its stdio and
 * execs: shared by every place that starts a command (the relay's harness
 * and runs, tmux, kubeconfig credential plugins), so that each gets the
 * same guarantees. */
#pragma once

#include <sys/types.h>

/* In the child, right after fork: its own process group (a signal or a
 * timeout then reaches everything it starts), PR_SET_PDEATHSIG SIGKILL (it
 * dies with its parent), _exit(127) if PARENT already died before that was
 * armed, every signal's disposition back to default and an empty signal
 * mask (the parent blocks what it reads from a signalfd; a command must not
 * inherit that). Async-signal-safe calls only. */
void child_reset(pid_t parent);

/* fork(2) with every signal blocked around it, so that none of the
 * parent's handlers runs in the child before child_reset; the parent's
 * mask is restored in the parent only (the child keeps everything blocked
 * until child_reset empties it). *PARENT: the caller's pid, for the
 * child's child_reset. A failed fork returns -1 with errno kept. */
pid_t fork_blocked(pid_t *parent);
