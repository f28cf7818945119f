/* The harness on a terminal (docs/terminal.md): a pseudo-terminal whose
 * slave is the harness's stdin, stdout, stderr and controlling terminal (its
 * own session: setsid, TIOCSCTTY), and a socket pair on its descriptor 3 for
 * approvals (HANGAR_APPROVAL_FD=3), a channel its screen output cannot reach.
 * Started the way procspawn.c starts a child (signals blocked around fork,
 * PR_SET_PDEATHSIG, dispositions and mask restored, every other descriptor
 * closed, _exit(127) on failure). */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"
#include "frame.h"

#define PTY_TERM_MAX    FRAME_TERM_NAME_MAX /* bytes of a TERM value */
#define PTY_APPROVAL_FD 3

typedef struct pty_opts {
        char *const *argv;
        const char *cwd;
        unsigned rows, cols;
        const char *term; /* TERM for the harness: pty_term_ok */
} pty_opts_t;

typedef struct pty_child {
        pid_t pid;          /* the session's leader: also its process group id */
        int master;         /* read/write, non-blocking, CLOEXEC */
        int side;           /* our end of descriptor 3: read/write, non-blocking, CLOEXEC */
        bool isig_emulated; /* the kernel's line discipline does not signal (gVisor) */
} pty_child_t;

int pty_start(const pty_opts_t *o, pty_child_t *ret, hg_error_t *err);

/* The terminal's new size (TIOCSWINSZ); the kernel signals SIGWINCH to the
 * foreground process group, and so does this (gVisor may not). */
int pty_resize(int master, pid_t leader, unsigned rows, unsigned cols);

/* Where the kernel does not (isig_emulated): the signal characters in
 * buf[0..*len) that the terminal's settings make signals (ISIG: VINTR,
 * VQUIT, VSUSP) are taken out and their signals sent to the foreground
 * process group, as a Linux terminal does. */
void pty_input_signals(int master, pid_t leader, unsigned char *buf, size_t *len);

/* sig to the terminal's foreground process group (tcgetpgrp on the
 * master), or to the leader's group when there is none. */
int pty_signal_foreground(int master, pid_t leader, int sig);
