/* The harness as the relay runs it (docs/turn.md, "Who runs where"):
 * started from the turn's directory in a process group of its own, its
 * stdio on one-way socket pairs or, for a terminal turn, on a pty with the
 * approval socket as its descriptor 3; fed from the driver's frames
 * through bounded buffers (its stdin; a terminal turn's approval answers);
 * and, once reaped and its output drained, its end as the EXIT the driver
 * gets. The relay's loop (session.c) polls the descriptors and calls in. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "error.h"
#include "frame.h"
#include "procspawn.h"
#include "reaper.h"

/* A terminal turn's terminal (docs/terminal.md), from the driver's turn file. */
typedef struct harness_term {
        unsigned rows, cols;
        char term[65];
} harness_term_t;

typedef struct harness {
        spawn_child_t child;        /* on a terminal: out_fd the pty's master, in_fd a copy of
                                     * it, err_fd the approval socket (ASK) */
        const harness_term_t *term; /* NULL: stdio on socket pairs */
        int side_wfd;               /* terminal: the approval socket, for ANSWER */
        bool isig_emulated;         /* terminal: the relay turns ^C into SIGINT (gVisor) */
        uint8_t side_buf[2 * FRAME_MAX_PAYLOAD];
        size_t side_len;
        bool started, out_open, err_open;
        reaper_end_t end;
        bool exit_sent; /* the EXIT (and the streams' EOFs) are queued for the driver */
        frame_exit_t exit;

        uint8_t stdin_buf[FRAME_MAX_PAYLOAD]; /* one STDIN frame at a time */
        size_t stdin_len;
        bool stdin_eof; /* the driver sent STDIN EOF */
} harness_t;

/* Not started; term (NULL: no terminal) is kept. */
void harness_init(harness_t *h, const harness_term_t *term);

/* Starts argv from cwd (on a pty if the turn has a terminal). */
int harness_start(harness_t *h, char *const argv[], const char *cwd, hg_error_t *err);

/* Started and not yet reaped. */
bool harness_running(const harness_t *h);

/* One STDIN frame's payload (n 0: its EOF) for the harness; only while
 * stdin_len is 0 (the loop reads io no further until the buffer is out, so
 * a harness that does not read holds the driver back). */
void harness_stdin(harness_t *h, const uint8_t *data, size_t n);
/* Writes what the harness's stdin takes now. */
void harness_write_stdin(harness_t *h);

/* ANSWER: approval responses for a terminal turn's descriptor 3. A harness
 * that leaves 128 KiB of answers unread loses the rest (it stops getting
 * any). */
void harness_answer(harness_t *h, const uint8_t *data, size_t n);
/* Writes what the approval socket takes now. */
void harness_write_side(harness_t *h);

/* The driver's SIGNAL: on a terminal to its foreground process group, as a
 * key (Ctrl-C) would; else to the harness's group. Nothing once reaped. */
void harness_signal(harness_t *h, int signo);
/* The driver's RESIZE (a terminal turn). */
void harness_resize(harness_t *h, unsigned rows, unsigned cols);

/* Reaped, and its streams at EOF or past the drain: what is left of its
 * group is killed, its descriptors closed, and (once io and ctl have room)
 * the streams' EOFs and EXIT queued for the driver (exit_sent). */
void harness_end_if_done(harness_t *h, conn_t *io, conn_t *ctl, int64_t now);

/* Closes every descriptor the harness's end of things still holds. */
void harness_close(harness_t *h);
