/* The turn's state machine (docs/turn.md, "A turn's states"):
 *
 *   idle -> waiting-for-relay -> running -> harness-exited -> ended
 *
 * with the end's name and reason, and the deadlines that move a turn on
 * when nothing else does (no relay in time, the linger after the harness's
 * exit, the wait for the last of its output). Pure: no descriptors and no
 * clock (the caller passes now), so every transition is unit-tested; what a
 * transition means for the record (status.json, events) is the daemon's
 * (turnctx.h). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* After EXIT, the least time the driver waits for io's STDOUT EOF: io and
 * ctl are not ordered, so the end of the log may still be on its way. */
#define TURNSTATE_DRAIN_GRACE_MS 2000

typedef enum turn_state {
        TURN_STATE_IDLE,    /* the daemon has run no turn yet */
        TURN_STATE_WAITING, /* for the relay's two connections */
        TURN_STATE_RUNNING, /* the harness runs */
        TURN_STATE_EXITED,  /* the harness ended; runs still served until finish */
        TURN_STATE_ENDED,   /* the last turn ended; its record is kept until the next start */
} turn_state_t;

typedef struct turnstate {
        turn_state_t state;
        char end[32];             /* TURN_STATE_ENDED: "done", "relay-lost", ... */
        char reason[256];         /* its reason, for a person */
        int64_t connect_deadline; /* waiting: the relay is in by then or the turn ends */
        int64_t linger_deadline;  /* exited: the turn ends then if hangar has not finished it */
        int64_t drain_deadline;   /* exited: the latest wait for io's STDOUT EOF */
        bool finish_requested;    /* ctl finish came */
        bool io_eof_seen;         /* the relay's STDOUT EOF came */
} turnstate_t;

/* The name status and ping report ("waiting-for-relay", ...). */
const char *turnstate_name(turn_state_t s);

/* A turn is in flight: from its start until it ends. */
bool turnstate_active(const turnstate_t *ts);

/* A turn starts: waiting for the relay, whatever the last one left
 * cleared. The connect deadline is set once it listens. */
void turnstate_begin(turnstate_t *ts);

/* The listener is up: the relay has until now + connect_timeout_s. */
void turnstate_listening(turnstate_t *ts, int64_t now, unsigned connect_timeout_s);

/* Ends the turn in flight with end and a formatted reason; the first end
 * wins: a turn that is not in flight (idle, or already ended) keeps what it
 * has. */
void turnstate_end(turnstate_t *ts, const char *end, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The sandbox was restored from a checkpoint (driver/turn/restore.h): the turn
 * in flight ends as "restored", whatever its state, since its token,
 * listener and relay belong to the sandbox that was checkpointed. First
 * end wins, as for every end: an ended turn keeps its end. */
void turnstate_restored(turnstate_t *ts, uint64_t restores, const char *old_instance);

/* Both of the relay's connections are in: waiting -> running. False (and no
 * change) from any other state. */
bool turnstate_connected(turnstate_t *ts);

/* The harness's EXIT came: running -> harness-exited, lingering linger_s
 * for hangar's verify and tree runs, and waiting at least
 * TURNSTATE_DRAIN_GRACE_MS for the log's end. False from any other state. */
bool turnstate_exited(turnstate_t *ts, int64_t now, unsigned linger_s);

/* The relay closed io (is_ctl false) or ctl. While the harness runs the
 * relay is lost; ctl closed after the harness's exit is the relay's own
 * end of the turn ("done"). */
void turnstate_channel_closed(turnstate_t *ts, bool is_ctl);

/* Waiting past the connect deadline: relay-never-connected. */
void turnstate_check_connect(turnstate_t *ts, int64_t now, unsigned connect_timeout_s);

/* Exited, and finished by hangar or past the linger: the turn is done once
 * the log is whole (the STDOUT EOF seen, io gone, or past the drain
 * deadline). */
void turnstate_check_linger(turnstate_t *ts, int64_t now, bool io_open);

/* The next time the turn moves on by itself (INT64_MAX: none);
 * listener_deadline is the listener's own (a handshake's timeout), which
 * counts only while the relay is awaited. */
int64_t turnstate_next_deadline(const turnstate_t *ts, int64_t listener_deadline);
