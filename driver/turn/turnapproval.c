#include "turnapproval.h"

#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "layout.h"

int turnapproval_decide(turn_t *t, const char *id, bool approve, const char *by)
{
        /* A terminal turn's answers go on its approval channel (ANSWER on
         * ctl, the harness's descriptor 3), never into its terminal. */
        bool term = t->spec->terminal.on;
        if (!term && (t->stdin_closed || t->stdin_close_pending))
                return -EPIPE;
        _cleanup_free_ char *line = approvals_response_line(&t->approvals, id, approve);
        if (!line)
                return approvals_is_pending(&t->approvals, id) ? -ENOMEM : -ENOENT;
        size_t len = strlen(line);
        if (term ? !t->ctl_open || !conn_can_queue(&t->ctl, len)
                 : len > TURN_STDIN_Q_MAX - t->stdin_len)
                return -ENOBUFS;
        (void)approvals_set_state(&t->approvals, id, approve ? APPROVAL_APPROVED : APPROVAL_DENIED,
                                  by);
        _cleanup_json_ json_t *j = approvals_json(&t->approvals);
        int r = record_write_json(t->cfg->ctl_path, LAYOUT_CTL_APPROVALS, j, 0600);
        if (r == 0)
                r = record_event(&t->rec, "approval.decided",
                                 json_pack("{s:s, s:s, s:s}", "id", id, "decision",
                                           approve ? "approve" : "deny", "by", by));
        if (r < 0) {
                (void)approvals_set_state(&t->approvals, id, APPROVAL_PENDING, "");
                _cleanup_json_ json_t *back = approvals_json(&t->approvals);
                (void)record_write_json(t->cfg->ctl_path, LAYOUT_CTL_APPROVALS, back, 0600);
                return r == -ENOBUFS || r == -EPIPE || r == -ENOENT ? -EIO : r;
        }
        if (term)
                (void)conn_queue(&t->ctl, FRAME_ANSWER, line, len, NULL, 0); /* fits: checked */
        else
                (void)turnctx_stdin_append(t, line, len); /* fits: checked above */
        return 0;
}

void turnapproval_on_request(void *userdata, const char *id, json_t *request)
{
        turn_t *t = userdata;
        turnctx_record(t, "approval.requested",
                       json_pack("{s:s, s:O}", "id", id, "request", request));
        _cleanup_json_ json_t *j = approvals_json(&t->approvals);
        int r = record_write_json(t->cfg->ctl_path, LAYOUT_CTL_APPROVALS, j, 0600);
        if (r < 0)
                turnctx_record_failed(t, LAYOUT_CTL_APPROVALS, r);
        /* deny-risky: the driver itself denies whatever the harness asks. */
        if (t->spec->mode == TURN_MODE_DENY_RISKY && t->ts.state != TURN_STATE_ENDED &&
            (r = turnapproval_decide(t, id, false, "driver")) < 0 && r != -EPIPE && r != -ENOBUFS)
                turnctx_record_failed(t, "a deny-risky decision", r);
        turnctx_save_status(t);
}

void turnapproval_scan(turn_t *t, const void *data, size_t len)
{
        if (approvals_scan(&t->approvals, data, len, turnapproval_on_request, t) < 0)
                return turnstate_end(&t->ts, "driver-failed",
                                     "out of memory reading an approval request");
        if (t->approvals.over_limit && reccap_note_once(&t->approvals_cap))
                turnctx_note_cap(t, "approval.requested", APPROVALS_MAX);
        if (t->approvals.duplicates && reccap_note_once(&t->duplicates))
                turnctx_note_cap(t, "approval.duplicate", 0);
}
