/* A sealed grade on the driver's daemon (docs/graders.md): `ctl grade
 * begin` keeps the hidden tests in memory (their hash in hangar-ctl),
 * listens on the pod's loopback with a one-time token (the relay's listener,
 * driver/core/listener.h, its rules unchanged), and answers the grader side
 * (hangar-grade, in the agent's container) only after it has swept: then
 * the tests are unpacked into hangar-home/grades/ID/tests (read-only for the
 * agent), the go is sent, and the workspace's tree, the report and the
 * grader's end come back. `ctl grade finish` takes the exit status and
 * output as hangar's exec returned them and seals
 * hangar-ctl/grades/ID/grade.json; `ctl grade show` reads it. One grade at
 * a time, never while a turn runs. */
#pragma once

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctlreq.h"
#include "listener.h"

#define GRADE_POLLFDS (LISTENER_PENDING_MAX + 1 + 2)

typedef struct grade_ctx grade_ctx_t;

/* A daemon's grades: home and ctl are the volumes' paths (copied), instance
 * the daemon's id (its grades' handshakes name it, as its turns' do).
 * Removes hangar-home/grades (tests an earlier daemon may have left there). */
int grade_ctx_new(const char *home, const char *ctl, const char *instance, grade_ctx_t **ret);
void grade_ctx_free(grade_ctx_t *g);
/* The sandbox was restored from a checkpoint (driver/turn/restore.h): instance
 * is the daemon's new id. A grade in flight began in the checkpointed
 * sandbox: its connection and token go, its record says "restored" (ctl
 * grade show), and it can be neither finished nor sealed; a new grade may
 * begin. */
void grade_ctx_restored(grade_ctx_t *g, const char *instance);

/* A grade is in flight (begun, not finished): no turn may start. */
bool grade_busy(const grade_ctx_t *g);

/* ctl grade-begin / grade-finish / grade-show. turn_active: a turn is in
 * flight (begin is refused). Returns the reply. */
json_t *grade_ctl(grade_ctx_t *g, const ctlreq_t *q, bool turn_active);

/* The loop: descriptors to poll (at most GRADE_POLLFDS; unused entries
 * have fd -1), what poll said, and the next deadline (INT64_MAX: none). */
void grade_pollfds(const grade_ctx_t *g, struct pollfd p[GRADE_POLLFDS]);
void grade_process(grade_ctx_t *g, const struct pollfd p[GRADE_POLLFDS]);
int64_t grade_next_deadline(const grade_ctx_t *g);
