/* The bytes a turn brings back, read as lines: the relay's stdout (the
 * agent's container: untrusted) and the driver's events.jsonl through
 * `ctl events --follow`. Both are split by a bounded line splitter that
 * keeps byte offsets, so an event line names where it starts and where the
 * next begins (`hangar turn attach --from`), and a line longer than its
 * cap is told (its length) instead of held in memory.
 *
 * The relay's stdout carries exactly two lines of the relay's own
 * (docs/protocol.md, "the order hangar keeps"): its ready line, which must
 * come first, once, and carry the sweep's report, and its outcome line at
 * the end. Anything else there was written by someone else (a process of
 * the agent's that opened the relay's stdout in the moment after execve):
 * relaywatch says so, and hangar then never sends the token, or ends the
 * turn. No line of the relay's reaches hangar's stdout as an event: it is
 * reported inside one, as data. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "strbuf.h"

/* ---- lines, bounded, with offsets ---- */

typedef struct linesplit {
        strbuf_t partial; /* the line being read, at most max bytes */
        size_t max;       /* the longest line kept whole */
        uint64_t start;   /* the stream offset where the partial line began */
        uint64_t length;  /* its length so far (past max: counted, not kept) */
} linesplit_t;

/* One whole line (without its '\n'): text and len are NULL and its real
 * length when the line was longer than max. offset: where it began in the
 * stream; the next line begins at offset + length + 1. A negative return
 * stops the feed and is returned. */
typedef int (*linesplit_fn)(void *ud, const char *text, size_t len, uint64_t offset,
                            uint64_t length);

/* max: at least 1. from: the stream offset of the first byte fed. */
void linesplit_init(linesplit_t *ls, size_t max, uint64_t from);
int linesplit_feed(linesplit_t *ls, const uint8_t *data, size_t n, linesplit_fn fn, void *ud);
/* Bytes after the last '\n' (an unfinished line), 0 if none. */
uint64_t linesplit_pending(const linesplit_t *ls);
void linesplit_free(linesplit_t *ls);

/* ---- the relay's stdout ---- */

#define RELAYWATCH_LINE_MAX (64 * 1024) /* the ready line is a few hundred bytes */

typedef enum relaywatch_state {
        RELAYWATCH_WAITING, /* nothing yet: no token may be sent */
        RELAYWATCH_READY,   /* its ready line, first and whole: the token may go */
        RELAYWATCH_ENDED,   /* its outcome line after the ready line */
        RELAYWATCH_REFUSED, /* its outcome line instead of a ready line (the gate, a sweep that
                               failed) */
        RELAYWATCH_BROKEN,  /* someone else's bytes: the turn must end */
} relaywatch_state_t;

typedef struct relaywatch {
        linesplit_t ls;
        relaywatch_state_t state;
        json_t *ready;   /* the ready line, once READY */
        json_t *outcome; /* the relay's last line (ENDED or REFUSED) */
        char why[256];   /* BROKEN: what broke the order */
} relaywatch_t;

void relaywatch_init(relaywatch_t *w);
/* Feeds the relay's stdout bytes. Returns the state after them; BROKEN is
 * final (later bytes are ignored). -ENOMEM on our side's failure. */
int relaywatch_feed(relaywatch_t *w, const uint8_t *data, size_t n);
/* The relay's exec ended: an unfinished line, or no line at all, is said. */
relaywatch_state_t relaywatch_end(relaywatch_t *w);
void relaywatch_free(relaywatch_t *w);
const char *relaywatch_state_name(relaywatch_state_t s);

/* ---- the driver's events ---- */

/* The driver writes events of at most a few KiB (approval requests are
 * capped at 64 KiB); a longer line is reported by its offsets alone. */
#define TURNEVENT_LINE_MAX (1024 * 1024)

/* One events.jsonl line as the JSON object it must be, or NULL and why in
 * why[n] (not JSON, not an object, no "event" string). */
json_t *turnevent_parse(const char *text, size_t len, char *why, size_t n);
