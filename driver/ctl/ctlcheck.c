#include "ctlcheck.h"

#include <signal.h>
#include <string.h>

#include "cleanup.h"
#include "frame.h"

ctlcheck_need_t ctlcheck_need(ctlreq_op_t op)
{
        const ctlop_t *o = ctlop_get(op);
        return o ? o->need : CTLCHECK_IN_FLIGHT; /* the strictest for anything unlisted */
}

int ctlcheck_turn(ctlreq_op_t op, const char *req_turn, const char *turn, bool active,
                  hg_error_t *err)
{
        ctlcheck_need_t need = ctlcheck_need(op);
        if (need == CTLCHECK_NOTHING)
                return 0;
        /* --turn ID: this request is for that turn, and no other. */
        if (req_turn && (!turn || strcmp(req_turn, turn) != 0))
                return error_set(err, -ENOENT, "no turn \"%s\" here (%s%s)", req_turn,
                                 turn ? "the daemon's turn is " : "no turn yet", turn ? turn : "");
        if (need == CTLCHECK_NAMED)
                return 0;
        const char *name = ctlreq_op_name(op);
        if (!turn)
                return error_set(err, -ENOENT, "no turn yet: %s needs one (ctl start)", name);
        if (need == CTLCHECK_A_TURN)
                return 0;
        if (!active)
                return error_set(err, -ESRCH, "turn \"%s\" has ended: %s needs a turn in flight",
                                 turn, name);
        return 0;
}

int ctlcheck_signal(const char *name)
{
        static const struct {
                const char *name;
                int signo;
        } names[] = {{"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT},  {"KILL", SIGKILL},
                     {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},  {"CONT", SIGCONT},
                     {"STOP", SIGSTOP}, {"TSTP", SIGTSTP}, {"WINCH", SIGWINCH}};
        for (size_t i = 0; name && i < ARRAY_SIZE(names); i++)
                if (strcmp(name, names[i].name) == 0)
                        return names[i].signo;
        return 0;
}

bool ctlcheck_steer_text(const char *text, size_t len)
{
        if (strlen(text) != len)
                return false;
        for (size_t i = 0; i < len; i++) {
                unsigned char b = (unsigned char)text[i];
                if ((b < 0x20 && b != '\t') || b == 0x7f)
                        return false;
        }
        return true;
}

bool ctlcheck_term_size(long long rows, long long cols)
{
        return rows >= FRAME_TERM_ROWS_MIN && rows <= FRAME_TERM_ROWS_MAX &&
               cols >= FRAME_TERM_COLS_MIN && cols <= FRAME_TERM_COLS_MAX;
}
