/* The relay's children and what their ends mean: a wait status matched to
 * the harness or the run in progress (anything else is an orphan the relay
 * adopted as a child subreaper), the status as the protocol's EXIT, the
 * grace for their pipes after they are reaped, and at the end the sweep of
 * whatever the harness daemonized out of its process group. The matching
 * and the parsing are pure; the sweep reads /proc. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "frame.h"

#define REAPER_DRAIN_GRACE_MS 2000 /* after a process exits, for its pipes to reach EOF */

/* How a child ended, once it has. */
typedef struct reaper_end {
        bool reaped;
        int status;       /* waitpid's */
        int64_t drain_ms; /* after reaping: give up on its pipes past this */
} reaper_end_t;

typedef enum reaper_who {
        REAPER_ORPHAN,  /* adopted, reaped, nothing more */
        REAPER_HARNESS, /* the harness: its end recorded */
        REAPER_RUN,     /* the run in progress: its end recorded */
} reaper_who_t;

/* A child reaped at now with status: whose it is, its end recorded there.
 * harness_pid, run_pid: 0 for none (not started, no run in progress); a
 * child already reaped is not matched twice. */
reaper_who_t reaper_note(pid_t pid, int status, int64_t now, pid_t harness_pid,
                         reaper_end_t *harness, pid_t run_pid, reaper_end_t *run);

/* A wait status as EXIT's end and value: a signal's number, an exit's
 * status; timed_out (a run past its timeout, killed) is 124 as timeout(1)
 * says. */
frame_exit_t reaper_exit(int status, bool timed_out);

/* The parent pid in the text of /proc/PID/stat ("pid (comm) state ppid
 * ..."; comm may hold anything, spaces and parentheses too, so it is read
 * after the last ')'). 0, or -EINVAL. */
int reaper_stat_ppid(const char *stat, pid_t *ret);

/* Kills and reaps every remaining child of the relay (what the harness
 * daemonized out of its process group came back to the relay, a child
 * subreaper), found through /proc: gVisor has no
 * /proc/PID/task/TID/children. A few rounds, for children forked while it
 * ran. */
void reaper_kill_adopted(void);
