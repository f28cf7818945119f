#include "ctlops.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"

/* The members several ops share. */
// clang-format off
#define TURN_OPTION {"turn", CTLOP_STRING, false, CTLOP_CLI_FLAG, "ID", NULL}
#define FROM_OPTION {"from", CTLOP_UINT, false, CTLOP_CLI_FLAG, "OFFSET", NULL}
#define FOLLOW_OPTION {"follow", CTLOP_BOOL, false, CTLOP_CLI_SWITCH, NULL, NULL}
#define TIMEOUT_OPTION {"timeout_s", CTLOP_UINT, false, CTLOP_CLI_FLAG, "S", "--timeout"}
#define SPEC_FILE {"spec", CTLOP_STRING, true, CTLOP_CLI_FILE, "FILE|-", NULL}
#define COMMAND_WORDS {"argv", CTLOP_ARGV, true, CTLOP_CLI_COMMAND, "CMD [ARG]...", NULL}
// clang-format on

static const ctlop_t ops[CTLREQ_OP_COUNT] = {
    [CTLREQ_PING] = {"ping",
                     NULL,
                     {{0}},
                     CTLCHECK_NOTHING,
                     CTLOP_REPLY_LINE,
                     "the daemon answers: its instance and state (the probes)"},
    [CTLREQ_START] = {"start",
                      NULL,
                      {SPEC_FILE, FOLLOW_OPTION},
                      CTLCHECK_NOTHING,
                      CTLOP_REPLY_START,
                      "a turn from its spec: the reply carries the relay's token; --follow "
                      "streams the turn's events after it"},
    [CTLREQ_STATUS] =
        {"status", NULL, {TURN_OPTION}, CTLCHECK_NAMED, CTLOP_REPLY_LINE, "the turn's state"},
    [CTLREQ_TOKEN] = {"token",
                      NULL,
                      {{0}},
                      CTLCHECK_IN_FLIGHT,
                      CTLOP_REPLY_LINE,
                      "the relay's token again, until the relay is in"},
    [CTLREQ_EVENTS] = {"events",
                       NULL,
                       {TURN_OPTION, FROM_OPTION, FOLLOW_OPTION},
                       CTLCHECK_NAMED,
                       CTLOP_REPLY_STREAM,
                       "events.jsonl from byte OFFSET; --follow: and on, live, until the turn "
                       "ends"},
    [CTLREQ_APPROVALS] = {"approvals",
                          NULL,
                          {{0}},
                          CTLCHECK_A_TURN,
                          CTLOP_REPLY_STREAM,
                          "the turn's approvals, pending and decided"},
    [CTLREQ_APPROVE] = {"approve",
                        NULL,
                        {{"id", CTLOP_STRING, true, CTLOP_CLI_ARG, "ID", NULL}},
                        CTLCHECK_IN_FLIGHT,
                        CTLOP_REPLY_LINE,
                        "grant a pending approval"},
    [CTLREQ_DENY] = {"deny",
                     NULL,
                     {{"id", CTLOP_STRING, true, CTLOP_CLI_ARG, "ID", NULL}},
                     CTLCHECK_IN_FLIGHT,
                     CTLOP_REPLY_LINE,
                     "refuse a pending approval"},
    [CTLREQ_STEER] = {"steer",
                      NULL,
                      {{"text", CTLOP_STRING, true, CTLOP_CLI_ARG, "TEXT", NULL}},
                      CTLCHECK_IN_FLIGHT,
                      CTLOP_REPLY_LINE,
                      "one line of text for the harness's stdin"},
    [CTLREQ_CLOSE_STDIN] = {"close-stdin",
                            NULL,
                            {{0}},
                            CTLCHECK_IN_FLIGHT,
                            CTLOP_REPLY_LINE,
                            "close the harness's stdin"},
    [CTLREQ_SIGNAL] = {"signal",
                       NULL,
                       {{"signal", CTLOP_STRING, true, CTLOP_CLI_ARG, "NAME", NULL}},
                       CTLCHECK_IN_FLIGHT,
                       CTLOP_REPLY_LINE,
                       "a signal to the harness's process group (HUP INT QUIT KILL USR1 USR2 "
                       "TERM CONT STOP TSTP WINCH)"},
    [CTLREQ_WATCH] = {"watch",
                      NULL,
                      {TURN_OPTION, FROM_OPTION},
                      CTLCHECK_NAMED,
                      CTLOP_REPLY_WATCH,
                      "the harness's output from byte OFFSET, live"},
    [CTLREQ_FINISH] = {"finish",
                       NULL,
                       {TURN_OPTION,
                        {"abort", CTLOP_STRING, false, CTLOP_CLI_FLAG, "REASON", NULL}},
                       CTLCHECK_IN_FLIGHT,
                       CTLOP_REPLY_LINE,
                       "end the turn once the harness has exited; --abort: now, in any state"},
    [CTLREQ_RUN] = {"run",
                    NULL,
                    {TIMEOUT_OPTION,
                     {"tail_max", CTLOP_UINT, false, CTLOP_CLI_FLAG, "BYTES", "--tail"},
                     COMMAND_WORDS},
                    CTLCHECK_IN_FLIGHT,
                    CTLOP_REPLY_RUN,
                    "a command as the agent in the turn's directory; exits with its status"},
    [CTLREQ_TREE] = {"tree",
                     NULL,
                     {TIMEOUT_OPTION},
                     CTLCHECK_IN_FLIGHT,
                     CTLOP_REPLY_LINE,
                     "the tree hash of the agent's workspace, recorded"},
    [CTLREQ_VERIFY] = {"verify",
                       NULL,
                       {TIMEOUT_OPTION, COMMAND_WORDS},
                       CTLCHECK_IN_FLIGHT,
                       CTLOP_REPLY_RUN,
                       "the verify gate: the command, then the tree"},
    [CTLREQ_SCREEN] = {"screen",
                       NULL,
                       {TURN_OPTION},
                       CTLCHECK_A_TURN,
                       CTLOP_REPLY_SCREEN,
                       "a terminal turn's screen, as text rows"},
    [CTLREQ_SEND_KEYS] = {"send-keys",
                          NULL,
                          {TURN_OPTION,
                           {"keys", CTLOP_ARGV, true, CTLOP_CLI_WORDS, "KEY...", NULL}},
                          CTLCHECK_IN_FLIGHT,
                          CTLOP_REPLY_LINE,
                          "tmux key names or text, typed into the terminal"},
    [CTLREQ_RESIZE] = {"resize",
                       NULL,
                       {TURN_OPTION,
                        {"rows", CTLOP_UINT, true, CTLOP_CLI_ARG, "ROWS", NULL},
                        {"cols", CTLOP_UINT, true, CTLOP_CLI_ARG, "COLS", NULL}},
                       CTLCHECK_IN_FLIGHT,
                       CTLOP_REPLY_LINE,
                       "the terminal's new size"},
    [CTLREQ_TYPE] = {"type",
                     NULL,
                     {{"data_base64", CTLOP_STRING, true, CTLOP_CLI_NONE, NULL, NULL}, TURN_OPTION},
                     CTLCHECK_IN_FLIGHT,
                     CTLOP_REPLY_LINE,
                     "raw input from the terminal's pane (hangar-driver term-pane's)"},
    [CTLREQ_GRADE_BEGIN] = {"grade-begin",
                            "grade begin",
                            {SPEC_FILE},
                            CTLCHECK_NOTHING,
                            CTLOP_REPLY_LINE,
                            "a sealed grade: its spec, before the grader runs"},
    [CTLREQ_GRADE_FINISH] = {"grade-finish",
                             "grade finish",
                             {SPEC_FILE},
                             CTLCHECK_NOTHING,
                             CTLOP_REPLY_LINE,
                             "the grader's status and output: the grade sealed"},
    [CTLREQ_GRADE_SHOW] = {"grade-show",
                           "grade show",
                           {{"grade", CTLOP_STRING, true, CTLOP_CLI_ARG, "ID", NULL}},
                           CTLCHECK_NOTHING,
                           CTLOP_REPLY_LINE,
                           "a grade's record"},
};

const ctlop_t *ctlop_get(ctlreq_op_t op)
{
        return (unsigned)op < CTLREQ_OP_COUNT ? &ops[op] : NULL;
}

ctlreq_op_t ctlop_by_name(const char *name)
{
        for (size_t i = 0; name && i < CTLREQ_OP_COUNT; i++)
                if (strcmp(name, ops[i].name) == 0)
                        return (ctlreq_op_t)i;
        return CTLREQ_OP_COUNT;
}

/* Does the command line's argv start with words ("grade show": two)? */
static int words_match(const char *words, int argc, char *const *argv)
{
        int n = 0;
        const char *w = words;
        while (*w) {
                size_t len = strcspn(w, " ");
                if (n >= argc || strlen(argv[n]) != len || strncmp(argv[n], w, len) != 0)
                        return 0;
                n++;
                w += len;
                w += *w == ' ';
        }
        return n;
}

bool ctlop_on_command_line(ctlreq_op_t op)
{
        const ctlop_t *o = ctlop_get(op);
        if (!o)
                return false;
        for (size_t m = 0; m < CTLOP_MEMBERS_MAX && o->members[m].name; m++)
                if (o->members[m].cli == CTLOP_CLI_NONE && o->members[m].required)
                        return false;
        return true;
}

ctlreq_op_t ctlop_by_words(int argc, char *const *argv, int *ret_words)
{
        for (size_t i = 0; i < CTLREQ_OP_COUNT; i++) {
                int n = words_match(ops[i].words ?: ops[i].name, argc, argv);
                if (n > 0 && ctlop_on_command_line((ctlreq_op_t)i)) {
                        *ret_words = n;
                        return (ctlreq_op_t)i;
                }
        }
        *ret_words = 0;
        return CTLREQ_OP_COUNT;
}

int ctlop_synopsis(ctlreq_op_t op, char *buf, size_t size)
{
        const ctlop_t *o = ctlop_get(op);
        if (!o || size == 0)
                return -EINVAL;
        size_t len = 0;
        int n = snprintf(buf, size, "%s", o->words ?: o->name);
        for (size_t m = 0;
             n >= 0 && (size_t)n < size - len && m < CTLOP_MEMBERS_MAX && o->members[m].name; m++) {
                len += (size_t)n;
                const ctlop_member_t *mb = &o->members[m];
                char option[64];
                snprintf(option, sizeof(option), "%s%s", mb->option ? "" : "--",
                         mb->option ?: mb->name);
                const char *open = mb->required ? "" : "[", *close = mb->required ? "" : "]";
                switch (mb->cli) {
                case CTLOP_CLI_FLAG:
                case CTLOP_CLI_FILE:
                        n = snprintf(buf + len, size - len, " %s%s %s%s", open, option, mb->metavar,
                                     close);
                        break;
                case CTLOP_CLI_SWITCH:
                        n = snprintf(buf + len, size - len, " %s%s%s", open, option, close);
                        break;
                case CTLOP_CLI_ARG:
                case CTLOP_CLI_WORDS:
                        n = snprintf(buf + len, size - len, " %s", mb->metavar);
                        break;
                case CTLOP_CLI_COMMAND:
                        n = snprintf(buf + len, size - len, " -- %s", mb->metavar);
                        break;
                case CTLOP_CLI_NONE:
                default:
                        n = 0;
                        break;
                }
        }
        return n >= 0 && (size_t)n < size - len ? 0 : -ENOSPC;
}
