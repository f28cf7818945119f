/* The caps on what the relay (the agent's side) can make the driver record:
 * relay signals, unrequested run results, the listener's rejections,
 * approval requests. Past its cap an event is only counted (status
 * "capped"), and one record.capped event says the cap was reached, so the
 * record can be neither flooded nor silently thinned. Pure bookkeeping: the
 * daemon records what the verdicts say (turnctx.h). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct reccap {
        uint64_t count; /* events seen, recorded or not */
        bool noted;     /* the record.capped event is out */
} reccap_t;

typedef enum reccap_verdict {
        RECCAP_RECORD,  /* within the cap: record the event */
        RECCAP_NOTE,    /* the first past it: record record.capped instead */
        RECCAP_COUNTED, /* past it, already noted: counted only */
} reccap_verdict_t;

/* One more event against a cap of limit. */
reccap_verdict_t reccap_take(reccap_t *c, uint64_t limit);

/* A cap some other module counts (the approvals' own limit, the terminal
 * log's bytes) was reached: true the first time only, when record.capped is
 * due. */
bool reccap_note_once(reccap_t *c);
