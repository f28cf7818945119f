/* Every control op, declared once. A row says the op's name on the wire,
 * the members it takes (name, JSON type, required, and how the command
 * line gives each), what it needs of the daemon's turn, how
 * `hangar-driver ctl` prints its reply, and its help line. Everything else
 * reads the row: the request grammar (ctlreq.c), the precondition
 * (ctlcheck.c), the command line and its usage (ctlargs.c), the handler
 * table (driver/turn/turnops.c, indexed by the same enum and checked
 * complete by unit_ctlops), and docs/turn.md (unit_ctlops checks that it
 * lists every op's synopsis). Adding an op is one row here, one handler. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef enum ctlreq_op {
        CTLREQ_PING,
        CTLREQ_START,
        CTLREQ_STATUS,
        CTLREQ_TOKEN,
        CTLREQ_EVENTS,
        CTLREQ_APPROVALS,
        CTLREQ_APPROVE,
        CTLREQ_DENY,
        CTLREQ_STEER,
        CTLREQ_CLOSE_STDIN,
        CTLREQ_SIGNAL,
        CTLREQ_WATCH,
        CTLREQ_FINISH,
        CTLREQ_RUN,
        CTLREQ_TREE,
        CTLREQ_VERIFY,
        CTLREQ_SCREEN,       /* a terminal turn's screen (docs/terminal.md) */
        CTLREQ_SEND_KEYS,    /* tmux key names or text, typed into it */
        CTLREQ_RESIZE,       /* its new size */
        CTLREQ_TYPE,         /* raw bytes from the tmux pane (hangar-driver term-pane) */
        CTLREQ_GRADE_BEGIN,  /* a sealed grade (docs/graders.md): its spec */
        CTLREQ_GRADE_FINISH, /* the exec's status and output: the grade sealed */
        CTLREQ_GRADE_SHOW,   /* a grade's record */
        CTLREQ_OP_COUNT,
} ctlreq_op_t;

/* What an op needs of the daemon's turn (ctlcheck.h applies it). */
typedef enum ctlcheck_need {
        CTLCHECK_NOTHING,   /* ping, start, the grades: served whatever the turn */
        CTLCHECK_NAMED,     /* status, watch, events: "--turn" must name the daemon's turn */
        CTLCHECK_A_TURN,    /* approvals, screen: a turn, current or ended */
        CTLCHECK_IN_FLIGHT, /* the rest: a turn in flight */
} ctlcheck_need_t;

typedef enum ctlop_type { CTLOP_STRING, CTLOP_UINT, CTLOP_ARGV, CTLOP_BOOL } ctlop_type_t;

/* How `hangar-driver ctl OP` takes a member. Options (FLAG, SWITCH, FILE)
 * come first, in any order; the first word that is not one of the op's
 * options starts the positional members (ARG, then WORDS or COMMAND), so
 * a steer text or a tmux key that begins with "--" is still text. */
typedef enum ctlop_cli {
        CTLOP_CLI_NONE,    /* not from the command line (type: the pane's own) */
        CTLOP_CLI_FLAG,    /* --NAME VALUE */
        CTLOP_CLI_SWITCH,  /* --NAME: true */
        CTLOP_CLI_FILE,    /* --NAME FILE|-: the text of the file (or stdin) */
        CTLOP_CLI_ARG,     /* the next word (a UINT: a number) */
        CTLOP_CLI_WORDS,   /* every word left, at least one */
        CTLOP_CLI_COMMAND, /* -- CMD [ARG]...: every word after the "--" */
} ctlop_cli_t;

/* How `hangar-driver ctl` prints the daemon's reply. */
typedef enum ctlop_reply {
        CTLOP_REPLY_LINE,   /* the JSON line; exit 1 unless ok */
        CTLOP_REPLY_STREAM, /* the line, then the stream to the daemon's close */
        CTLOP_REPLY_WATCH,  /* the line, then the log: whole however it ends */
        CTLOP_REPLY_SCREEN, /* the screen's text rows */
        CTLOP_REPLY_RUN,    /* the command's output tail; exit with its status */
        CTLOP_REPLY_START,  /* the line (a token: wiped); with follow, the events */
} ctlop_reply_t;

#define CTLOP_MEMBERS_MAX 4

typedef struct ctlop_member {
        const char *name; /* on the wire; NULL ends the list */
        ctlop_type_t type;
        bool required;
        ctlop_cli_t cli;
        const char *metavar; /* the value's name in the usage: ID, OFFSET, CMD */
        const char *option;  /* FLAG, FILE: the option if not "--" NAME */
} ctlop_member_t;

typedef struct ctlop {
        const char *name;  /* on the wire: {"op": NAME} */
        const char *words; /* on the command line, if not the name: "grade begin" */
        ctlop_member_t members[CTLOP_MEMBERS_MAX];
        ctlcheck_need_t need;
        ctlop_reply_t reply;
        const char *help;
} ctlop_t;

/* The row of op; NULL out of range. */
const ctlop_t *ctlop_get(ctlreq_op_t op);
/* The op whose wire name is name, or CTLREQ_OP_COUNT. */
ctlreq_op_t ctlop_by_name(const char *name);
/* Can `hangar-driver ctl` give op (every required member has a form)? */
bool ctlop_on_command_line(ctlreq_op_t op);
/* The op the command line's first words name ("status", "grade show"), or
 * CTLREQ_OP_COUNT; *ret_words: how many words it took. Ops without a
 * command-line form (type) are not found. */
ctlreq_op_t ctlop_by_words(int argc, char *const *argv, int *ret_words);
/* "events [--turn ID] [--from OFFSET] [--follow]": the op's synopsis, as
 * the usage and docs/turn.md give it. 0, or -ENOSPC. */
int ctlop_synopsis(ctlreq_op_t op, char *buf, size_t size);
