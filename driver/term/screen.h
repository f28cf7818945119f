/* The driver's own model of a turn's terminal: a rows x cols grid kept from
 * the harness's terminal bytes (the agent's, untrusted) by a VT100/xterm
 * subset parser. Cursor moves, erase, insert/delete, scroll regions, the
 * alternate screen, tabs, autowrap and UTF-8 are interpreted; SGR
 * (colours, attributes), OSC titles, DCS/APC strings and charsets are
 * consumed and ignored. One codepoint per cell: double-width characters
 * take one cell, combining marks are dropped (docs/terminal.md, limits).
 *
 * Memory is fixed at init and resize: two grids (main and alternate) of
 * rows x cols cells, and a small parser state; nothing grows with the input.
 * Any byte sequence is accepted (a malformed one is dropped or shown as
 * U+FFFD), never an error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SCREEN_ROWS_MIN   2u
#define SCREEN_ROWS_MAX   500u
#define SCREEN_COLS_MIN   10u
#define SCREEN_COLS_MAX   1000u
#define SCREEN_PARAMS_MAX 16u
#define SCREEN_REPLY_MAX  64u /* answers to the terminal's queries not yet taken */

typedef enum screen_pstate {
        SCREEN_GROUND,
        SCREEN_ESC,
        SCREEN_ESC_SKIP, /* ESC ( and friends: one more byte, ignored */
        SCREEN_CSI,
        SCREEN_STRING,     /* OSC, DCS, SOS, PM, APC: until BEL or ST */
        SCREEN_STRING_ESC, /* an ESC inside a string: ST if a backslash follows */
} screen_pstate_t;

typedef struct screen_cursor {
        unsigned row, col;
        bool wrap_pending;
        bool origin;
} screen_cursor_t;

typedef struct screen {
        unsigned rows, cols;
        uint32_t *grid; /* the visible one: main or alt */
        uint32_t *main, *alt;
        bool alt_active;
        screen_cursor_t cur, saved_main, saved_alt;
        unsigned top, bottom; /* scroll region, inclusive */
        bool autowrap;
        bool app_cursor;    /* DECCKM: the harness asked for application cursor keys */
        uint32_t last_char; /* for REP */

        /* the parser */
        screen_pstate_t ps;
        uint32_t params[SCREEN_PARAMS_MAX];
        unsigned nparams;
        bool param_started;
        uint8_t private_marker; /* '?', '>', '<', '=' or 0 */
        uint8_t intermediate;   /* the last 0x20-0x2f byte or 0 */
        uint32_t utf8_cp;
        unsigned utf8_need;
        uint32_t utf8_min;

        /* What the terminal answers (DSR, DA): the driver sends it to the
         * harness as keys when no tmux does it. Bounded; excess dropped. */
        uint8_t reply[SCREEN_REPLY_MAX];
        size_t reply_len;
} screen_t;

/* rows and cols within the bounds above; -EINVAL outside, -ENOMEM. */
int screen_init(screen_t *s, unsigned rows, unsigned cols);
void screen_free(screen_t *s);

/* Interprets n bytes of terminal output (any bytes, any chunking). */
void screen_feed(screen_t *s, const uint8_t *p, size_t n);

/* A new size: the top-left of the old grids is kept, the cursor clamped,
 * the scroll region reset. -EINVAL outside the bounds, -ENOMEM (the old
 * screen is then unchanged). */
int screen_resize(screen_t *s, unsigned rows, unsigned cols);

/* The visible grid as text: one line per row, UTF-8, trailing blanks
 * trimmed, each line ended by "\n". Malloc'd, NUL-terminated; NULL on
 * -ENOMEM. */
char *screen_text(const screen_t *s, size_t *ret_len);

/* Whether the harness set application cursor-key mode (DECCKM, CSI ? 1 h,
 * which curses sets with keypad): its cursor keys are then ESC O A, not
 * ESC [ A (tmux_keys_encode_mode). */
bool screen_app_cursor(const screen_t *s);

/* The codepoint at (row, col); 0x20 for a blank. */
uint32_t screen_cell(const screen_t *s, unsigned row, unsigned col);
