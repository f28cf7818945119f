/* The driver's run requests (ctl run, tree, verify: docs/turn.md, step 5)
 * before and after the relay runs them: their arguments checked, the ids
 * sent and not yet answered, and what a result means for hangar's reply.
 * Pure: the daemon sends the frames and records the events (turnops.c,
 * turnrelay.c). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "frame.h"

#define RUNREQ_OUTSTANDING_MAX   64u  /* run requests sent and not yet answered */
#define RUNREQ_TIMEOUT_DEFAULT_S 600u /* ctl run without --timeout */
#define RUNREQ_TAIL_DEFAULT      16384u
#define RUNREQ_FAILED_TAIL_MAX   300u /* bytes of a failed tree's output in its reply */
/* verify's own arguments before the check's: hangar-driver gate --turn ID -- */
#define RUNREQ_VERIFY_PREFIX 5u

/* What a run request is for: how its result is recorded and answered. */
typedef enum runreq_kind {
        RUNREQ_PLAIN,  /* hangar's own command */
        RUNREQ_TREE,   /* hangar-driver tree: a tree hash by the agent */
        RUNREQ_VERIFY, /* the verify gate's check */
} runreq_kind_t;

/* The ids sent to the relay and not yet answered. Ids count on across turns
 * (a late result of an earlier turn is never taken for a new one's). */
typedef struct runreq_pending {
        uint32_t next_id;
        uint32_t ids[RUNREQ_OUTSTANDING_MAX];
        size_t n;
} runreq_pending_t;

/* The id of the next request. */
uint32_t runreq_next_id(runreq_pending_t *p);
bool runreq_full(const runreq_pending_t *p);
/* id is now awaited; -EBUSY when RUNREQ_OUTSTANDING_MAX already are. */
int runreq_add(runreq_pending_t *p, uint32_t id);
/* A result for id: true (and no longer awaited) if it was asked for. The
 * relay is the agent's, so a result for any other id is a lie or a replay. */
bool runreq_take(runreq_pending_t *p, uint32_t id);
/* A new turn: nothing is awaited any more. */
void runreq_forget_all(runreq_pending_t *p);

/* A request's arguments, checked: argv (NULL-terminated; the array is
 * malloc'd, the strings are argv_j's), the timeout and the tail's size. */
typedef struct runreq_args {
        char **argv;
        size_t argc;
        uint32_t timeout_s;
        uint32_t tail_max;
} runreq_args_t;

/* argv_j: 1 to FRAME_RUN_MAX_ARGS strings; timeout_j (optional): 1 to
 * FRAME_RUN_TIMEOUT_MAX_MS / 1000 s; tail_j (optional): 0 to
 * FRAME_RUN_TAIL_MAX bytes. 0, or -EINVAL / -ENOMEM with err's message for
 * hangar's reply; *ret is written only on success. */
int runreq_args_parse(json_t *argv_j, json_t *timeout_j, json_t *tail_j, runreq_args_t *ret,
                      hg_error_t *err);
void runreq_args_free(runreq_args_t *a);

/* ctl tree's command: hangar-driver tree --turn TURN CWD (NULL: no memory). */
json_t *runreq_tree_argv(const char *turn, const char *cwd);
/* ctl verify's command: hangar-driver gate --turn TURN -- USER... with
 * user 1 to FRAME_RUN_MAX_ARGS - RUNREQ_VERIFY_PREFIX strings' worth of
 * entries (the strings are checked with the rest, by runreq_args_parse). */
int runreq_verify_argv(const char *turn, json_t *user, json_t **ret, hg_error_t *err);

/* A tree run's result: the object `hangar-driver tree` printed (new
 * reference), or NULL if the run failed, was cut short or printed anything
 * else. */
json_t *runreq_tree_hash(const frame_run_result_t *rr);

/* A failed run's output for a reply: at most RUNREQ_FAILED_TAIL_MAX bytes
 * of the tail the relay sent (tail_len of them, never more: the frame is
 * not NUL-terminated), newlines as spaces, other bytes outside printable
 * ASCII as '?'. malloc'd; NULL for want of memory. */
char *runreq_failed_tail(const frame_run_result_t *rr);
