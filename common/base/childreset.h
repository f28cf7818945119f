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
