/* The daemon's turn as it holds it in memory (one per process): the
 * current or last turn's spec, state, connections to the relay, approvals,
 * control clients and terminal, and the helpers every part of the daemon
 * uses to keep the record (events.jsonl, status.json) in step with it. The
 * parts: turn.c (the daemon's setup and loop), turnsetup.c (a turn's start
 * and end), turnrelay.c (the relay's frames), turnapproval.c (decisions),
 * turnops.c (the control requests). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "approvals.h"
#include "config.h"
#include "conn.h"
#include "ctlclient.h"
#include "frame.h"
#include "grade.h"
#include "listener.h"
#include "reccap.h"
#include "record.h"
#include "restore.h"
#include "runreq.h"
#include "spec.h"
#include "terminal.h"
#include "token.h"
#include "turnstate.h"

#define TURN_STDIN_Q_MAX (4u * 1024u * 1024u) /* input plus steer commands not yet sent */
/* After a read that emptied the io socket, the loop leaves io unread this
 * long, so a harness that writes in small pieces is read many frames at a
 * time (turn.c, "the loop"): output reaches the log and approvals are seen
 * at most this much later. */
#define TURN_IO_REST_MS 5
/* The caps on what the relay can make the driver record (reccap.h). */
#define TURN_RELAY_SIGNAL_EVENTS_MAX 64u  /* harness.signal events from the relay */
#define TURN_UNREQUESTED_EVENTS_MAX  16u  /* run.unrequested events */
#define TURN_REJECTED_EVENTS_MAX     256u /* relay.rejected events */

typedef struct turn {
        const hg_config_t *cfg;
        turn_spec_t *spec;    /* the current or last turn; NULL while idle */
        turn_spec_t own_spec; /* serve: the spec from the start request */
        bool once;            /* hangar-driver relay: one turn, then exit */
        bool stop;            /* SIGTERM: end the turn, then exit */
        uint64_t gen;         /* turns started by this process */
        char instance[33];    /* this daemon's id, fresh at each start and each restore */
        turnstate_t ts;
        bool end_recorded; /* turnsetup_finish has run for this turn */
        record_t rec;
        token_t token;
        listener_t lis;
        conn_t io, ctl; /* valid from running */
        bool io_open, ctl_open;
        int64_t io_rest_until; /* io not read before (conn_now_ms), TURN_IO_REST_MS */
        int ctl_lfd;
        int sigfd;

        uint8_t *stdin_q; /* TURN_STDIN_Q_MAX */
        size_t stdin_len;
        bool stdin_close_pending, stdin_closed;

        frame_exit_t exit;
        bool have_exit;

        approvals_t approvals;
        runreq_pending_t runs;
        ctlclient_t clients[CTLCLIENT_MAX];
        uint64_t followed_gen, followed_appends; /* what followers were last woken for (turn.c) */

        /* Relay-originated events past their caps (reported in status). */
        reccap_t signals, unrequested, rejections, approvals_cap, duplicates;

        /* A terminal turn (spec->terminal.on): its screen and tmux session. */
        terminal_t term;
        bool term_open;
        uint64_t typed_bytes; /* ctl type: the pane's keys, counted, not recorded */
        uint64_t log_bytes;   /* of the terminal stream, kept in the log */
        uint64_t log_dropped; /* past the spec's log_max_mib (turnrelay.c, log_bounded) */
        reccap_t log_cap;

        grade_ctx_t *grade; /* serve: sealed grades (docs/graders.md) */

        restore_watch_t restore; /* restores from a checkpoint (driver/turn/restore.h) */
} turn_t;

/* j's "instance", "restores" and "restore_watch" (status and ping). */
void turnctx_add_clone_fields(const turn_t *t, json_t *j);

/* status.json's and ctl status's object (new reference; NULL: no memory). */
json_t *turnctx_status_json(const turn_t *t);

/* The record could not be written (hangar-ctl or hangar-home full, an I/O
 * error): a turn that goes on unrecorded would be a blind one, so it ends,
 * loudly, as record-failed. */
void turnctx_record_failed(turn_t *t, const char *what, int r);

/* An event the turn or the relay caused (fields taken); one that cannot be
 * recorded ends the turn (record-failed). Nothing without a turn. */
void turnctx_record(turn_t *t, const char *event, json_t *fields);

/* status.json rewritten from memory (after a transition). */
void turnctx_save_status(turn_t *t);

/* A cap reached for the first time (reccap.h's verdict): one
 * record.capped event says so; the count goes on in status. */
void turnctx_note_cap(turn_t *t, const char *what, unsigned limit);

/* Bytes for the harness's stdin, queued until io has room: -EPIPE once its
 * stdin is closed (or closing), -ENOBUFS past TURN_STDIN_Q_MAX. */
int turnctx_stdin_append(turn_t *t, const char *data, size_t n);
