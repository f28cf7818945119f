/* The execs a turn is made of (docs/client.md, "hangar turn run"): each a
 * pods/exec session (common/k8s/wsexec.c) on a thread of its own, so the
 * driver's `ctl start` and the relay start together and the events are
 * followed while hangar answers; and `hangar-driver ctl OP` calls, one exec
 * each, their reply kept in memory. Every exec this process starts is
 * counted (the turn's last line says how many: the cost per turn). */
#pragma once

#include <pthread.h>
#include <stdbool.h>

#include "k8sclient.h"
#include "strbuf.h"
#include "wsexec.h"

/* A ctl reply or a run's output tail is at most a few hundred KiB. */
#define TURNEXEC_CAPTURE_MAX (4 * 1024 * 1024)
#define TURNEXEC_STDERR_MAX  (16 * 1024)

typedef struct execjob {
        k8s_client_t *k;
        wsexec_request_t req;
        wsexec_io_t io;
        /* The results, once joined. */
        wsexec_result_t res;
        hg_error_t err;
        int r;
        /* Called on the exec's thread when it ended (before join returns). */
        void (*done)(void *ud);
        void *done_ud;
        pthread_t thread;
        bool started;
} execjob_t;

/* Starts the exec on a thread (or, when no thread can be made, runs it
 * here to its end). */
void execjob_start(execjob_t *j);
void execjob_join(execjob_t *j);
/* 0 when the command ran to a status (j->res.exit_code), else <0. */
int execjob_status(const execjob_t *j);

/* How many execs this process has started. */
unsigned turnexec_count(void);

/* stdout and stderr kept in memory, each bounded (past the bound: dropped,
 * and said). */
typedef struct capture {
        strbuf_t out, err;
        bool out_cut, err_cut;
} capture_t;

int capture_output(void *ud, int channel, const uint8_t *data, size_t len);
void capture_free(capture_t *c);

/* One `hangar-driver ctl ARGV...` in hangar-driver, to its end, stdin from
 * in_fd (-1: none). 0 when it ran to a status (res->exit_code), <0 with
 * res->failure and err otherwise. */
int turnexec_ctl(k8s_client_t *k, const char *ns, const char *pod, char *const *argv, int in_fd,
                 capture_t *cap, wsexec_result_t *res, hg_error_t *err);

/* The stdin of an exec whose program reads one line, the token, and must
 * get it only after its ready line (hangar-relay: `TOKEN INSTANCE`;
 * hangar-grade: `TOKEN PORT`): a pipe's write end, and the line kept only
 * until it goes. The order itself is the caller's (relaywatch,
 * gradewatch); this is the once-only write and the close. */
#define TOKENLINE_MAX 128

typedef struct tokenline {
        int wr; /* -1 once closed */
        char line[TOKENLINE_MAX];
        bool known; /* line set, not yet sent */
        bool sent;  /* it went, whole */
} tokenline_t;

/* The pipe (the line may be set before or after): *ret_rd is the exec's
 * stdin (the caller closes it after the exec). 0 or -errno. */
int tokenline_open(tokenline_t *t, int *ret_rd);
/* Writes the line (if known, once: about 100 bytes into an empty pipe,
 * which does not block), wipes it, and closes: the program reads one line. */
void tokenline_send(tokenline_t *t);
/* Closes without the token (it never goes: the order broke, the start was
 * refused) and wipes the line. */
void tokenline_close(tokenline_t *t);

/* An exec beside the driver's: ARGV in the agent's container, its stdin
 * from in_rd (a tokenline's), its output to output(ud). */
void execjob_side(execjob_t *j, k8s_client_t *k, const char *ns, const char *pod,
                  const char *container, char **argv, int in_rd,
                  int (*output)(void *ud, int channel, const uint8_t *data, size_t len), void *ud);
