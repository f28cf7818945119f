/* The driver's run requests waiting in the relay behind the one that runs:
 * a bounded first-in, first-out queue, so a driver that sends requests
 * faster than they run is answered "busy" for the excess instead of
 * growing the relay's memory. Pure. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "frame.h"

#define RUNQUEUE_MAX 16u /* run requests waiting behind the current one */

typedef struct runqueue {
        frame_run_t q[RUNQUEUE_MAX];
        size_t head, len;
} runqueue_t;

/* Takes *req at the back: 0, or -ENOBUFS when full (req is still the
 * caller's, to answer and free). */
int runqueue_push(runqueue_t *q, const frame_run_t *req);
/* The oldest request (now the caller's), or false if none waits. */
bool runqueue_pop(runqueue_t *q, frame_run_t *ret);
size_t runqueue_len(const runqueue_t *q);
/* Frees every request still waiting. */
void runqueue_clear(runqueue_t *q);
