/* A process named so that it cannot be mistaken for another: its pid and its
 * start time (field 22 of /proc/PID/stat, clock ticks after boot). A pid
 * alone is not a name on a machine with a small pid_max: a fork storm hands a
 * pid gone a moment ago to another process. A pidfd pins the process it was
 * opened on, so a start time read while the pidfd's process still runs is that
 * process's, and a signal through the pidfd reaches it or nothing. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
        pid_t pid;
        uint64_t start;
} procid_t;

/* What this tool reads of /proc/PID/stat. */
typedef struct {
        char state; /* R, S, D, Z, X, ... */
        pid_t ppid;
        uint64_t start;
} procstat_t;

/* The longest record line written ("PID START"), with its NUL. */
#define PROCID_LINE_MAX 48

/* Parses the text of /proc/PID/stat (NUL-terminated). The command name
 * (field 2) may hold spaces and parentheses: fields are counted from its last
 * ')'. -EINVAL on anything short or malformed. */
int procid_parse_stat(const char *text, procstat_t *ret);

/* Parses a record: "PID START" or "PID:START" (one line, no junk after it).
 * -EINVAL if malformed, pid 0, 1 or negative (never a process of ours). */
int procid_parse(const char *s, procid_t *ret);

/* Formats "PID START" into buf (PROCID_LINE_MAX bytes). */
void procid_format(const procid_t *id, char *buf);

/* /proc/PID/stat of pid: -ESRCH if there is no such process. */
int procid_read_stat(pid_t pid, procstat_t *ret);

/* True once the pidfd's process has ended (a zombie counts as ended). */
bool procid_exited(int pidfd);

/* Pins pid: a pidfd on it and its stat, read while it still runs.
 * -ESRCH if it has ended (or is a zombie). */
int procid_learn(pid_t pid, procid_t *ret_id, procstat_t *ret_stat, int *ret_pidfd);

/* Pins the process id names. 0 and a pidfd on that very process; -ESRCH if it
 * has ended; -ESTALE if the pid now belongs to another process (its start time
 * differs): that one is refused, never signalled. */
int procid_pin(const procid_t *id, int *ret_pidfd);

/* The signal through the pidfd (so to the pinned process or to nobody). */
int procid_signal(int pidfd, int sig);
