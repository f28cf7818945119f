/* The relay's turn: the harness and the driver's run requests, relayed over
 * the two authenticated connections until the driver closes ctl. The loop
 * and the driver's frames are here; the harness is harness.h's, the run
 * requests runner.h's, the children's ends reaper.h's. */
#pragma once

#include "conn.h"
#include "frame.h"
#include "harness.h"

typedef enum session_end {
        SESSION_END_DONE,        /* the harness ended and the driver closed ctl */
        SESSION_END_DRIVER_GONE, /* io or ctl failed or closed while the harness ran */
        SESSION_END_PROTOCOL,    /* the driver sent a frame the protocol does not allow */
        SESSION_END_INTERNAL,    /* the relay itself failed (fork, memory) */
} session_end_t;

typedef struct session_result {
        session_end_t end;
        frame_exit_t harness; /* how the harness ended (NOT_STARTED if it never ran) */
        char detail[256];
} session_result_t;

/* A terminal turn's terminal (docs/terminal.md), from the driver's turn file. */
typedef harness_term_t session_term_t;

/* io and ctl are connected and welcomed; harness_argv runs from cwd, on a
 * pty when term is not NULL. Takes over both connections. Always returns
 * with the harness and every run request's process group gone. */
void session_run(conn_t *io, conn_t *ctl, char *const harness_argv[], const char *cwd,
                 const session_term_t *term, session_result_t *ret);

const char *session_end_name(session_end_t e);
