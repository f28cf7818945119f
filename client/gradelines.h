/* The grader side's stdout, as `hangar grade` reads it (docs/client.md,
 * "hangar grade"): its first line must be hangar-grade's ready line
 * (`{"grade":"ready",...,"findings":{...}}`), whole and within 64 KiB; only
 * then may the grade's token go on its stdin. What follows it is the
 * grader's own output (kept as bytes for the record, never read as lines
 * of ours). Anything else first (a line that is not the ready line, a line
 * over the cap, the stream's end before a whole line) means the sealed
 * start was not shown: no token. The bytes are the agent's container's:
 * untrusted, unit-tested and fuzzed (tests/fuzz/fuzz_gradelines.c). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "strbuf.h"

#define GRADEWATCH_LINE_MAX (64 * 1024)

typedef enum gradewatch_state {
        GRADEWATCH_WAITING, /* the first line is not whole yet: no token */
        GRADEWATCH_READY,   /* the ready line came first: the token may go */
        GRADEWATCH_BROKEN,  /* something else came first, or nothing: never a token */
} gradewatch_state_t;

typedef struct gradewatch {
        strbuf_t first; /* the first line, while it is read */
        gradewatch_state_t state;
        json_t *ready; /* the ready line, once READY */
        char why[160]; /* BROKEN: why */
} gradewatch_t;

void gradewatch_init(gradewatch_t *w);
/* Feeds stdout bytes; returns the state after them (READY and BROKEN are
 * final: later bytes are the grader's, or ignored), -ENOMEM on our side. */
int gradewatch_feed(gradewatch_t *w, const uint8_t *data, size_t n);
/* The exec ended: a first line never finished is BROKEN. */
gradewatch_state_t gradewatch_end(gradewatch_t *w);
void gradewatch_free(gradewatch_t *w);

/* The grader side's last stderr line: hangar-grade ends with one JSON
 * object {"grade": OUTCOME, ...} ("done", or why it failed). NULL when the
 * bytes' last line is no such object. */
json_t *gradeside_outcome(const char *text, size_t len);
