/* The turn's terminal as hangar sees it: tmux key names turned into the
 * bytes a terminal sends (ctl send-keys, with or without tmux), and the
 * driver's tmux server (a socket in hangar-ctl, 0600): started, asked
 * for its screen, given keys and a size, stopped. Every tmux command runs
 * as `tmux -S SOCKET -f /dev/null ...` with a deadline; its output is
 * bounded. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define TMUX_KEYS_MAX     4096u /* bytes one send-keys may type */
#define TMUX_KEY_ARGS_MAX 64u   /* arguments of one send-keys */
#define TMUX_OUTPUT_MAX   (1u << 20)
#define TMUX_TIMEOUT_MS   3000

/* Encodes send-keys arguments as tmux reads them: an argument that names a
 * key (Enter, Tab, BTab, Escape, Space, BSpace, Up, Down, Left, Right, Home,
 * End, PageUp/PgUp/PPage, PageDown/PgDn/NPage, IC/Insert, DC/Delete,
 * F1-F12, C-x, M-x, C-M-x) is that key's bytes (xterm's), anything else is
 * its literal text. -E2BIG past TMUX_KEYS_MAX bytes or TMUX_KEY_ARGS_MAX
 * arguments, -EINVAL for an empty argument or invalid UTF-8; err says why. */
int tmux_keys_encode(char *const keys[], size_t n, uint8_t *out, size_t cap, size_t *ret_len,
                     hg_error_t *err);
/* The same, in the harness's cursor-key mode: with app_cursor (the
 * screen's DECCKM, screen_app_cursor) Up, Down, Right, Left, Home and End
 * are ESC O A...F, as xterm and tmux send them then. */
int tmux_keys_encode_mode(char *const keys[], size_t n, bool app_cursor, uint8_t *out, size_t cap,
                          size_t *ret_len, hg_error_t *err);

/* The tmux binary's path (HANGAR_TMUX, else searched in PATH, else the one
 * beside the running program: a delivered bundle's), or NULL. */
const char *tmux_find(void);

/* Runs `tmux -S socket -f /dev/null ARGS...` and waits for it (at most
 * TMUX_TIMEOUT_MS; then it is killed). Its stdout and stderr, at most
 * TMUX_OUTPUT_MAX bytes, are returned malloc'd in *ret_out (may be NULL).
 * Returns its exit status (0-255), or -errno with err set. */
int tmux_run(const char *tmux, const char *socket, char *const args[], char **ret_out,
             size_t *ret_len, hg_error_t *err);
