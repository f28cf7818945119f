/* Starting a child the way conmon and crun do: signals blocked around fork,
 * the child in its own process group (so a signal or a timeout reaches
 * everything it started), PR_SET_PDEATHSIG so it dies with its parent, the
 * signal mask and dispositions restored, stdio on one-way AF_UNIX socket
 * pairs (not pipes: a socket cannot be reopened through /proc/PID/fd, so
 * no other process of the child's uid can write into its stdin or read its
 * stdout), every other descriptor closed, exec, _exit(127) on failure. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "error.h"

typedef struct spawn_opts {
        char *const *argv; /* argv[0] is the program (PATH is searched) */
        const char *cwd;   /* NULL: inherit */
        bool merge_stderr; /* stderr on the stdout pipe (ret->err_fd stays -1) */
        bool stdin_null;   /* stdin from /dev/null (ret->in_fd stays -1) */
} spawn_opts_t;

typedef struct spawn_child {
        pid_t pid;  /* also its process group id */
        int in_fd;  /* our end of its stdin (write only), non-blocking, CLOEXEC; -1 if none */
        int out_fd; /* our end of its stdout (read only), non-blocking, CLOEXEC */
        int err_fd; /* our end of its stderr (read only), non-blocking, CLOEXEC; -1 if merged */
} spawn_child_t;

/* Starts the child. A failure before fork is -errno with err set; an exec
 * failure shows as the child exiting 127 with a line on its stderr. */
int spawn_start(const spawn_opts_t *o, spawn_child_t *ret, hg_error_t *err);

/* Sends sig to the child's whole process group; ESRCH (already gone) is 0. */
int spawn_signal_group(pid_t pid, int sig);
