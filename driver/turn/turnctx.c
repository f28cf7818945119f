#include "turnctx.h"

#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "layout.h"

void turnctx_add_clone_fields(const turn_t *t, json_t *j)
{
        if (!j)
                return;
        json_object_set_new(j, "instance", json_string(t->instance));
        json_object_set_new(j, "restores", json_integer((json_int_t)t->restore.restores));
        json_object_set_new(j, "restore_watch",
                            json_string(restore_watch_state_name(t->restore.state)));
}

json_t *turnctx_status_json(const turn_t *t)
{
        if (!t->spec) {
                json_t *idle = json_pack("{s:s}", "state", turnstate_name(t->ts.state));
                turnctx_add_clone_fields(t, idle);
                return idle;
        }
        json_t *j =
            json_pack("{s:s, s:s, s:s, s:i, s:b, s:b, s:I, s:i}", "turn", t->spec->turn, "mode",
                      spec_mode_name(t->spec->mode), "state", turnstate_name(t->ts.state), "port",
                      t->lis.port, "io", t->io_open, "ctl", t->ctl_open, "rejected",
                      (json_int_t)(t->lis.rejected[LISTENER_REJECT_BAD_TOKEN] +
                                   t->lis.rejected[LISTENER_REJECT_MALFORMED] +
                                   t->lis.rejected[LISTENER_REJECT_REPLAYED] +
                                   t->lis.rejected[LISTENER_REJECT_SLOW] +
                                   t->lis.rejected[LISTENER_REJECT_CLOSED] +
                                   t->lis.rejected[LISTENER_REJECT_FLOOD] +
                                   t->lis.rejected[LISTENER_REJECT_LATE]),
                      "pending_approvals", (int)approvals_pending(&t->approvals));
        if (j)
                json_object_set_new(
                    j, "capped",
                    json_pack("{s:I, s:I, s:I, s:I, s:I}", "relay_signals",
                              (json_int_t)t->signals.count, "unrequested_run_results",
                              (json_int_t)t->unrequested.count, "approvals_over_limit",
                              (json_int_t)t->approvals.over_limit, "approvals_duplicate",
                              (json_int_t)t->approvals.duplicates, "log_dropped",
                              (json_int_t)t->log_dropped));
        if (j && t->have_exit)
                json_object_set_new(j, "harness",
                                    json_pack("{s:s, s:i}", "end", frame_end_name(t->exit.end),
                                              "value", t->exit.value));
        if (j && t->ts.state == TURN_STATE_ENDED)
                json_object_set_new(
                    j, "end", json_pack("{s:s, s:s}", "end", t->ts.end, "reason", t->ts.reason));
        if (j && t->term_open) {
                json_t *term = terminal_status(&t->term);
                json_object_set_new(term, "typed_bytes", json_integer((json_int_t)t->typed_bytes));
                json_object_set_new(term, "log_dropped", json_integer((json_int_t)t->log_dropped));
                json_object_set_new(j, "terminal", term);
        }
        turnctx_add_clone_fields(t, j);
        return j;
}

void turnctx_record_failed(turn_t *t, const char *what, int r)
{
        turnstate_end(&t->ts, "record-failed", "cannot record %s: %s", what, strerror(-r));
}

void turnctx_record(turn_t *t, const char *event, json_t *fields)
{
        if (t->rec.events_fd < 0) { /* no turn: nothing to record it in */
                json_decref(fields);
                return;
        }
        int r = record_event(&t->rec, event, fields);
        if (r < 0)
                turnctx_record_failed(t, event, r);
}

void turnctx_save_status(turn_t *t)
{
        if (!t->spec)
                return;
        _cleanup_json_ json_t *j = turnctx_status_json(t);
        int r = record_write_json(t->cfg->ctl_path, LAYOUT_CTL_STATUS, j, 0600);
        if (r < 0)
                turnctx_record_failed(t, LAYOUT_CTL_STATUS, r);
}

void turnctx_note_cap(turn_t *t, const char *what, unsigned limit)
{
        turnctx_record(t, "record.capped",
                       json_pack("{s:s, s:i}", "what", what, "limit", (int)limit));
        turnctx_save_status(t);
}

int turnctx_stdin_append(turn_t *t, const char *data, size_t n)
{
        if (t->stdin_closed || t->stdin_close_pending)
                return -EPIPE;
        if (n > TURN_STDIN_Q_MAX - t->stdin_len)
                return -ENOBUFS;
        memcpy(t->stdin_q + t->stdin_len, data, n);
        t->stdin_len += n;
        return 0;
}
