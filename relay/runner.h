/* The driver's run requests in the relay (docs/turn.md, step 5: the
 * verify gate, the trees, hangar's commands): queued (runqueue.h), run one
 * at a time as the agent from the turn's directory in a process group of
 * their own, killed past their timeout, and answered on ctl with RUN_RESULT
 * and the last bytes of their output. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "conn.h"
#include "error.h"
#include "frame.h"
#include "procspawn.h"
#include "reaper.h"
#include "runqueue.h"
#include "tail.h"

#define RUNNER_CHUNK 65536u /* bytes read from the run's pipe at a time */

/* The run in progress. */
typedef struct runner_run {
        bool active;
        frame_run_t req;
        spawn_child_t child; /* pid 0: it could not be started */
        bool out_open;
        reaper_end_t end;
        bool timed_out;
        int64_t deadline_ms; /* killed past this */
        tail_t tail;
} runner_run_t;

typedef struct runner {
        runqueue_t queue;
        runner_run_t run;
} runner_t;

void runner_init(runner_t *r);

/* A RUN from the driver (taken): queued, or answered at once as not
 * started ("too many run requests waiting") when the queue is full.
 * -EPIPE (with err) if even that answer cannot be queued on ctl. */
int runner_accept(runner_t *r, conn_t *ctl, frame_run_t *req, hg_error_t *err);

/* No run in progress: the next request starts (a spawn that fails is
 * answered as not started, its reason as the output). -ENOMEM with err. */
int runner_start_next(runner_t *r, const char *cwd, int64_t now, hg_error_t *err);

/* The run's pipe is readable: its output into the tail. */
void runner_read(runner_t *r);

/* Past its deadline and not yet reaped: the run's process group is killed
 * (the result says timeout, 124). */
void runner_check_timeout(runner_t *r, int64_t now);

/* Reaped, and its pipe at EOF or past the drain: the result goes on ctl
 * (when ctl has room: else later) and the run is over. -ENOMEM with err. */
int runner_finish_if_done(runner_t *r, conn_t *ctl, int64_t now, hg_error_t *err);

/* The next time the run needs the loop (its timeout, or the end of the
 * drain once reaped); INT64_MAX for none. */
int64_t runner_next_deadline(const runner_t *r);

/* The relay's end: the run's leftovers and every queued request freed (its
 * process group must be stopped and reaped first). */
void runner_clear(runner_t *r);
