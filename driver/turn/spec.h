/* The turn spec hangar hands the driver (a JSON file, or stdin): what the
 * harness is, where it runs, and the secrets that stay in hangar-ctl.
 *
 *   {"turn": "t-42", "mode": "ask", "cwd": "/workspace",
 *    "script": "#!/bin/sh\nexec claude ...", "input": "prompt...",
 *    "close_stdin": true, "run_key": "...", "settings": {...},
 *    "connect_timeout_s": 120, "linger_s": 300,
 *    "terminal": {"rows": 24, "cols": 80, "term": "xterm-256color"},
 *    "keep_processes": false}
 *
 * Unknown members are rejected, so a typo never silently changes a turn. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "terminal.h"

#define SPEC_MAX_BYTES (1024u * 1024u)

typedef enum turn_mode {
        TURN_MODE_AUTO,       /* runs in the agent's container as before: not ours */
        TURN_MODE_ASK,        /* approvals come from hangar */
        TURN_MODE_DENY_RISKY, /* the driver denies every approval request itself */
        TURN_MODE_GOVERNED,   /* approvals come from hangar, under a policy */
} turn_mode_t;

#define SPEC_LOG_MAX_MIB_DEFAULT 64u
#define SPEC_LOG_MAX_MIB_MAX     2047u /* its bytes fit the record.capped event's int */

typedef struct turn_spec {
        char *turn; /* [A-Za-z0-9._-]{1,64} */
        turn_mode_t mode;
        char *cwd;    /* absolute, in the agent's container */
        char *script; /* the harness, run by the relay with /bin/sh */
        char *input;  /* sent to the harness's stdin first ("" for none) */
        bool close_stdin;
        char *run_key;    /* may be empty; stored in hangar-ctl only */
        json_t *settings; /* hangar's harness settings, object or NULL */
        uint32_t connect_timeout_s;
        uint32_t handshake_timeout_ms;
        uint32_t linger_s;
        terminal_spec_t terminal; /* "terminal": the harness on a pty (docs/terminal.md) */
        /* "keep_processes": true: the relay does not sweep the agent's
         * container before the token (docs/turn.md "sealed start"); the
         * token race is then detected only (token-misused). Default false. */
        bool keep_processes;
        /* "log_max_mib": the run log's cap (1-2047, default 64): hangar-home
         * is in the pod's memory under gVisor. Past it the harness's
         * output is counted, not kept (docs/turn.md). */
        uint32_t log_max_mib;
} turn_spec_t;

int spec_parse(const char *text, size_t len, turn_spec_t *ret, hg_error_t *err);
/* spec_parse, then text is wiped whatever the result: it held the run key. */
int spec_parse_wipe(char *text, size_t len, turn_spec_t *ret, hg_error_t *err);
void spec_free(turn_spec_t *s);
const char *spec_mode_name(turn_mode_t m);
