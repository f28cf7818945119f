/* A terminal turn's terminal on the driver's side (docs/terminal.md): the
 * spec's "terminal" member, the driver's own screen model (driver/term/screen),
 * and, when tmux is in the image, a tmux session on a socket in hangar-ctl
 * whose one pane runs `hangar-driver term-pane`: that pane shows the
 * harness's terminal stream (the turn's log, through ctl watch) and types
 * the pane's keys back into the harness (ctl type). hangar attaches to it,
 * sends keys and captures the screen with tmux itself, or uses ctl screen,
 * ctl send-keys (driver/term/tmux.h's key names, typed straight into the
 * harness on io) and ctl resize, which work with or without tmux. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "frame.h"
#include "screen.h"

#define TERMINAL_TERM_MAX  FRAME_TERM_NAME_MAX
#define TERMINAL_SESSION   "hangar"
#define TERMINAL_TMUX_SOCK "tmux.sock"

typedef struct terminal_spec {
        bool on;
        unsigned rows, cols;
        char term[TERMINAL_TERM_MAX + 1];
} terminal_spec_t;

/* The spec's "terminal": exactly {"rows": 2-500, "cols": 10-1000, "term":
 * 1-64 bytes of [A-Za-z0-9._+-], not starting with '-' or '.'}; j NULL or
 * absent is a turn without one. -EINVAL with err saying why. */
int terminal_spec_parse(const json_t *j, terminal_spec_t *ret, hg_error_t *err);
/* {"rows", "cols", "term"} for run/turn.json (the relay's copy). */
json_t *terminal_spec_json(const terminal_spec_t *s);

typedef struct terminal {
        terminal_spec_t spec; /* rows and cols follow resizes */
        screen_t screen;
        const char *tmux; /* the binary, NULL when not in the image */
        bool tmux_up;
        char *sock; /* hangar-ctl/tmux.sock */
        char tmux_error[256];
        bool log_capped; /* the turn's log stopped: tmux (fed from it) is behind */
} terminal_t;

/* The screen, and the tmux session if tmux is there (its failure is not
 * the turn's: the screen model stays, status says why). pane_argv is the
 * pane's command (hangar-driver term-pane ...). */
int terminal_open(terminal_t *t, const terminal_spec_t *spec, const char *ctl_dir,
                  char *const pane_argv[], hg_error_t *err);
void terminal_close(terminal_t *t);

/* The harness's terminal bytes (the agent's, untrusted). */
void terminal_output(terminal_t *t, const uint8_t *p, size_t n);
/* The model's answers to terminal queries, to type into the harness; none
 * while tmux answers them itself (through the pane). Returns the count. */
size_t terminal_take_replies(terminal_t *t, uint8_t *out, size_t cap);

/* The visible screen as text rows: tmux's capture-pane when tmux is up
 * (and the log it is fed from is not capped), else the model. NULL on
 * -ENOMEM. */
char *terminal_screen(terminal_t *t, bool *ret_from_tmux, size_t *ret_len);

/* A new size for the model and the tmux window (the caller tells the relay). */
int terminal_resize(terminal_t *t, unsigned rows, unsigned cols, hg_error_t *err);

/* {"rows", "cols", "term", "tmux": bool, "tmux_socket", "tmux_error"}. */
json_t *terminal_status(const terminal_t *t);

/* The pane's program: streams the turn's terminal to stdout (ctl watch) and
 * types stdin's bytes into the harness (ctl type), until the turn ends.
 * turn may be NULL (the daemon's current turn). Returns an exit status. */
int terminal_pane_main(const char *ctl_sock, const char *turn);
