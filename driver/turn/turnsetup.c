#include "turnsetup.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "layout.h"
#include "split.h"
#include "turn.h"

static int write_text(const char *dir, const char *name, const char *text, mode_t mode)
{
        _cleanup_free_ char *path = record_path(dir, name);
        return path ? file_replace(path, text, strlen(text), mode) : -ENOMEM;
}

void turnsetup_unlink(const char *dir, const char *name)
{
        _cleanup_free_ char *path = record_path(dir, name);
        if (path)
                (void)unlink(path);
}

/* The turn's files: secrets in hangar-ctl (0600), what the agent reads in
 * hangar-home (0644, a volume mounted read-only in the agent). */
static int prepare_files(turn_t *t, hg_error_t *err)
{
        const char *home = t->cfg->home_path, *ctl = t->cfg->ctl_path;
        _cleanup_free_ char *run_dir = record_path(home, LAYOUT_HOME_RUN);
        _cleanup_free_ char *exit_path = record_path(home, LAYOUT_HOME_EXIT);
        _cleanup_free_ char *port_path = record_path(home, LAYOUT_HOME_PORT);
        if (!run_dir || !exit_path || !port_path)
                return -ENOMEM;
        if (mkdir(run_dir, 0755) < 0 && errno != EEXIST)
                return error_set(err, -errno, "%s: %s", run_dir, strerror(errno));
        (void)unlink(exit_path);
        (void)unlink(port_path);
        char hex[TOKEN_HEX_LEN + 2];
        token_to_hex(&t->token, hex);
        hex[TOKEN_HEX_LEN] = '\n';
        hex[TOKEN_HEX_LEN + 1] = '\0';
        int r = write_text(ctl, LAYOUT_CTL_TOKEN, hex, 0600);
        token_wipe(hex, sizeof(hex));
        if (r < 0 || (r = write_text(ctl, LAYOUT_CTL_RUN_KEY, t->spec->run_key, 0600)) < 0)
                return error_set(err, r, "%s: cannot write the turn's secrets: %s", ctl,
                                 strerror(-r));
        _cleanup_json_ json_t *turn =
            json_pack("{s:s, s:s, s:s, s:s, s:b}", "turn", t->spec->turn, "mode",
                      spec_mode_name(t->spec->mode), "cwd", t->spec->cwd, "instance", t->instance,
                      "keep_processes", t->spec->keep_processes);
        /* The relay's copy of the terminal: it opens the pty to that size. */
        if (turn && t->spec->terminal.on &&
            json_object_set_new(turn, "terminal", terminal_spec_json(&t->spec->terminal)) < 0)
                return -ENOMEM;
        if ((r = write_text(home, LAYOUT_HOME_SCRIPT, t->spec->script, 0644)) < 0 ||
            (r = record_write_json(home, LAYOUT_HOME_TURN, turn, 0644)) < 0 ||
            (t->spec->settings &&
             (r = record_write_json(home, LAYOUT_HOME_SETTINGS, t->spec->settings, 0644)) < 0))
                return error_set(err, r, "%s: cannot write the run's files: %s", home,
                                 strerror(-r));
        if ((r = record_open(&t->rec, home, ctl)) < 0)
                return error_set(err, r, "cannot open the turn's log and events: %s", strerror(-r));
        return 0;
}

int turnsetup_gate(const hg_config_t *cfg, const turn_spec_t *spec, const char **ret_outcome,
                   char *reason, size_t reason_size)
{
        hg_error_t err = {0};
        if (spec->mode == TURN_MODE_AUTO) {
                *ret_outcome = "single-user";
                snprintf(reason, reason_size, "auto-turn: auto turns run in the agent's container");
                return TURN_EXIT_SINGLE_USER;
        }
        split_mode_t mode;
        if (split_mode_from_env(&mode, &err) < 0) {
                *ret_outcome = "failed";
                snprintf(reason, reason_size, "%s", err.message);
                return TURN_EXIT_FAILED;
        }
        _cleanup_free_ char *path = record_path(cfg->ctl_path, LAYOUT_CTL_VERDICT);
        if (!path) {
                *ret_outcome = "failed";
                snprintf(reason, reason_size, "out of memory");
                return TURN_EXIT_FAILED;
        }
        split_decision_t d;
        split_gate_decide(mode, path, &d);
        snprintf(reason, reason_size, "%s", d.reason);
        switch (d.gate) {
        case SPLIT_GATE_SPLIT:
                return -1; /* go on */
        case SPLIT_GATE_SINGLE_USER:
                *ret_outcome = "single-user";
                return TURN_EXIT_SINGLE_USER;
        case SPLIT_GATE_REFUSE:
        default:
                *ret_outcome = "refused";
                return TURN_EXIT_REFUSED;
        }
}

/* A terminal turn's screen and tmux session; the pane runs this binary's
 * term-pane against the control socket. */
static int open_terminal(turn_t *t, hg_error_t *err)
{
        char exe[4096];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0)
                return error_set(err, -EIO, "cannot find the driver's own binary");
        exe[n] = '\0';
        _cleanup_free_ char *sock = record_path(t->cfg->ctl_path, LAYOUT_CTL_SOCKET);
        if (!sock)
                return error_set(err, -ENOMEM, "out of memory");
        char *argv[] = {exe, "term-pane", "--socket", sock, "--turn", t->spec->turn, NULL};
        int r = terminal_open(&t->term, &t->spec->terminal, t->cfg->ctl_path, argv, err);
        if (r == 0)
                t->term_open = true;
        return r;
}

int turnsetup_start(turn_t *t, hg_error_t *err)
{
        if (t->term_open)
                terminal_close(&t->term);
        t->term_open = false;
        t->log_cap = (reccap_t){0};
        t->typed_bytes = t->log_bytes = t->log_dropped = 0;
        approvals_free(&t->approvals);
        t->io = (conn_t){.fd = -1};
        t->ctl = (conn_t){.fd = -1};
        t->lis = (listener_t){.fd = -1};
        t->rec = (record_t){.events_fd = -1, .log_fd = -1};
        t->io_open = t->ctl_open = false;
        t->end_recorded = false;
        t->stdin_len = 0;
        t->stdin_close_pending = t->stdin_closed = false;
        t->exit = (frame_exit_t){0};
        t->have_exit = false;
        runreq_forget_all(&t->runs);
        t->signals = t->unrequested = t->rejections = (reccap_t){0};
        t->approvals_cap = t->duplicates = (reccap_t){0};
        t->gen++;
        turnstate_begin(&t->ts);

        int r = approvals_init(&t->approvals);
        if (r < 0)
                error_set(err, r, "out of memory");
        else if ((r = token_generate(&t->token)) < 0)
                error_set(err, r, "no random bytes for the relay token");
        if (r == 0)
                r = prepare_files(t, err);
        if (r == 0 && t->spec->terminal.on)
                r = open_terminal(t, err);
        if (r == 0)
                r = listener_open(&t->lis, &t->token, t->instance, t->spec->handshake_timeout_ms,
                                  err);
        if (r == 0) {
                /* For the whole turn: a relay that comes after someone else
                 * took both channels with the token is told so and recorded
                 * (a replay: token-misused), not refused by the kernel unseen. */
                t->lis.keep_open = true;
                char port[16];
                snprintf(port, sizeof(port), "%u\n", t->lis.port);
                /* The port goes last: its presence says the listener is up. */
                if ((r = write_text(t->cfg->home_path, LAYOUT_HOME_PORT, port, 0644)) < 0)
                        error_set(err, r, "cannot write the port file: %s", strerror(-r));
        }
        if (r < 0) {
                if (t->rec.events_fd >= 0)
                        (void)record_event(&t->rec, "turn.failed",
                                           json_pack("{s:s}", "reason", err->message));
                turnstate_end(&t->ts, "failed", "%s", err->message);
                turnctx_save_status(t);
                t->end_recorded = true;
                listener_close(&t->lis);
                record_close(&t->rec);
                token_wipe(&t->token, sizeof(t->token));
                turnsetup_unlink(t->cfg->home_path, LAYOUT_HOME_PORT);
                turnsetup_unlink(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
                return r;
        }
        turnctx_record(t, "relay.listening",
                       json_pack("{s:i, s:s, s:s, s:s, s:b}", "port", t->lis.port, "turn",
                                 t->spec->turn, "mode", spec_mode_name(t->spec->mode), "instance",
                                 t->instance, "keep_processes", t->spec->keep_processes));
        turnstate_listening(&t->ts, conn_now_ms(), t->spec->connect_timeout_s);
        turnctx_save_status(t);
        return 0;
}

json_t *turnsetup_exit_json(const turn_t *t)
{
        json_t *j = json_pack("{s:s, s:s, s:s}", "turn", t->spec->turn, "end", t->ts.end, "reason",
                              t->ts.reason);
        if (j && t->have_exit)
                json_object_set_new(j, "harness",
                                    json_pack("{s:s, s:i}", "end", frame_end_name(t->exit.end),
                                              "value", t->exit.value));
        return j;
}

void turnsetup_finish(turn_t *t)
{
        _cleanup_json_ json_t *exit_j = turnsetup_exit_json(t);
        (void)record_write_json(t->cfg->home_path, LAYOUT_HOME_EXIT, exit_j, 0644);
        (void)record_event(&t->rec, "turn.ended",
                           json_pack("{s:s, s:s}", "end", t->ts.end, "reason", t->ts.reason));
        turnctx_save_status(t);
        t->end_recorded = true;
        for (size_t i = 0; i < CTLCLIENT_MAX; i++)
                if (t->clients[i].used && t->clients[i].state == CTLCLIENT_WAIT_RUN)
                        ctlclient_reply(&t->clients[i], ctlclient_error("the turn ended"));
        conn_close(&t->io);
        conn_close(&t->ctl);
        t->io_open = t->ctl_open = false;
        listener_close(&t->lis);
        record_close(&t->rec);
        token_wipe(&t->token, sizeof(t->token));
        turnsetup_unlink(t->cfg->home_path, LAYOUT_HOME_PORT);
        turnsetup_unlink(t->cfg->ctl_path, LAYOUT_CTL_TOKEN);
}
