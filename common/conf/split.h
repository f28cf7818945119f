/* HANGAR_UID_SPLIT: the mode, the probe's verdict names, and the gate the
 * driver and the relay both apply before a turn relies on the uid split.
 * The probe decides the verdict (probe/verdict.c); this module only names it
 * and reads it back. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "error.h"

typedef enum split_mode {
        SPLIT_OFF,      /* never split */
        SPLIT_AUTO,     /* split where the pod passes, else single-user with the reason */
        SPLIT_REQUIRED, /* split where the pod passes, else refuse */
} split_mode_t;

typedef enum verdict {
        VERDICT_REFUSED, /* first: a zeroed verdict fails closed */
        VERDICT_SINGLE_USER,
        VERDICT_SPLIT_ACTIVE,
} verdict_t;

#define SPLIT_MODE_ENV        "HANGAR_UID_SPLIT"
#define SPLIT_MODE_DEFAULT    SPLIT_AUTO
#define SPLIT_VERDICT_MAX     (64u * 1024u) /* bytes of a verdict file */
#define SPLIT_REASONS_MAX     64u           /* reasons in one verdict */
#define SPLIT_REASON_CODE_MAX 64u           /* bytes of a reason's code */

int split_mode_parse(const char *s, split_mode_t *ret);
const char *split_mode_name(split_mode_t m);
int split_verdict_parse(const char *s, verdict_t *ret);
const char *split_verdict_name(verdict_t v);

/* Parses a verdict as hangar-probe verdict writes it, for whoever stores
 * one (hangar-driver verdict): an object of exactly "mode", "verdict" and
 * "reasons" (objects of "code", a-z0-9-, and an optional string
 * "detail"), and only what verdict_decide can give (split-active with no
 * reason, refused only under required, off always single-user). Anything
 * else is -EINVAL (-EFBIG over SPLIT_VERDICT_MAX) with err saying why. */
int split_verdict_load(const char *text, size_t len, json_t **ret, verdict_t *ret_v,
                       hg_error_t *err);

/* Reads the mode from HANGAR_UID_SPLIT (unset or empty: the default); an
 * unknown value is -EINVAL with err saying so (never a silent default). */
int split_mode_from_env(split_mode_t *ret, hg_error_t *err);

/* What a split turn may do, from the mode and the probe's verdict file. */
typedef enum split_gate {
        SPLIT_GATE_REFUSE,      /* first: fails closed */
        SPLIT_GATE_SINGLE_USER, /* run the turn in the agent's container, say why */
        SPLIT_GATE_SPLIT,       /* run it under the sidecar */
} split_gate_t;

typedef struct split_decision {
        split_gate_t gate;
        char reason[ERROR_MESSAGE_MAX]; /* stable code first: "mode-off", "verdict-missing: ..." */
} split_decision_t;

/* Applies mode to the verdict file at verdict_path: off -> single-user
 * ("mode-off"); a verdict of split-active -> split; anything else (missing,
 * unreadable, malformed, single-user, refused) -> single-user under auto and
 * refuse under required, with the verdict's first reason code. Never fails:
 * every problem is a reason. */
void split_gate_decide(split_mode_t mode, const char *verdict_path, split_decision_t *ret);
const char *split_gate_name(split_gate_t g);
