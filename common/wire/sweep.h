/* The sweep: the caller kills every other process of its PID namespace it
 * may signal, except PID 1 (the container's own command) and itself, and
 * rescans /proc until none is left alive. Used by hangar-relay before it
 * reads a turn's token (docs/turn.md, "sealed start") and by the grader
 * side before the hidden tests exist (docs/graders.md). Every descriptor
 * a killed process held (an open of /proc/RELAY/fd/0, a socket, one in
 * flight in a unix socket whose holders are all dead) is closed with it.
 *
 * What counts as gone: no /proc entry, or a zombie (state Z or X with no
 * live thread left): an exited process holds no descriptors; its parent
 * reaps it. The caller reaps its own children itself (the sweep never
 * waits, so a caller's waitpid keeps its status).
 *
 * Fail closed: the sweep reports clean (0) only when a scan that could see
 * the whole namespace (/proc is this namespace's: /proc/self is getpid())
 * found nothing but PID 1, the caller and zombies. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

/* How many pids of each kind the report lists (the counts are exact). */
#define SWEEP_PIDS_MAX 8
/* The longest sweep a caller may ask for. */
#define SWEEP_DEADLINE_MAX_MS 60000

/* What can be said of PID 1, which the sweep spares (docs/graders.md "PID
 * 1"): judged from outside, as the caller's uid, by rules that hold for
 * PID 1's whole life, never by a state seen now (sweep_pid1_proven). Being
 * non-dumpable is such a state: a process may make itself so at any time,
 * and a tracer attached before stays attached; so it is no judgement here
 * (and Linux keeps /proc/PID's owner whatever it is). */
typedef enum sweep_pid1 {
        SWEEP_PID1_UNKNOWN,         /* /proc/1 or its status unreadable */
        SWEEP_PID1_YAMA_RELATIONAL, /* ptrace_scope >= 1: no non-descendant may attach */
        SWEEP_PID1_OTHER_UID,       /* PID 1 runs as another uid than the caller */
        SWEEP_PID1_OPEN,            /* same uid, Yama off or absent: it could have been attached */
} sweep_pid1_t;

typedef struct sweep_report {
        unsigned killed;       /* distinct pids seen alive and SIGKILLed (by kill(-1) or by pid) */
        unsigned rounds;       /* kill(-1) + /proc scan passes */
        unsigned survivors;    /* signalable, still alive at the deadline */
        unsigned unsignalable; /* alive, kill() refused with EPERM (another uid) */
        unsigned zombies; /* dead but not reaped at the end (harmless, listed for the record) */
        pid_t survivor_pids[SWEEP_PIDS_MAX];
        pid_t unsignalable_pids[SWEEP_PIDS_MAX];
        int yama_scope;    /* /proc/sys/kernel/yama/ptrace_scope, -1 when absent or unreadable */
        sweep_pid1_t pid1; /* why PID 1 is not the trial's, or that it could be */
        long elapsed_ms;   /* wall time of the whole sweep */
        /* "" when clean; else "foreign-process", "still-running",
         * "not-own-pid-namespace", "host-pid-namespace" (kernel threads
         * visible: nothing was signalled), "proc-unreadable" or
         * "bad-deadline" (a
         * static string; never NULL after sweep_others). */
        const char *code;
        char reason[200]; /* "" when clean; else one line: what was left, or what failed */
} sweep_report_t;

/* Sweeps for at most deadline_ms (1..SWEEP_DEADLINE_MAX_MS). Returns 0 when
 * only PID 1, the caller and zombies remain; -EPERM when a process of another
 * uid is alive and stayed so for a second (cannot be signalled:
 * "foreign-process"; an exec entering the container as root and taking the
 * caller's uid a moment later is not one); -ETIMEDOUT when
 * signalable processes were still alive at the deadline ("still-running",
 * e.g. a fork storm that did not end, or one stuck in D state); -ENOTSUP when
 * /proc is not this PID namespace's, the caller is PID 1 itself, or this is
 * the host's PID namespace (kernel threads visible: kill(-1) there would
 * reach every process of the caller's uid on the machine; code
 * "host-pid-namespace"), each before anything is signalled;
 * -EINVAL for a bad deadline; other -errno when /proc cannot be read. out is always written (zeroed
 * first), reason set on every failure. Not async-signal-safe; single-threaded
 * callers only (it blocks nothing and installs no handlers). */
int sweep_others(int deadline_ms, sweep_report_t *out);

/* Judges PID 1 and fills out->yama_scope and out->pid1 (sweep_others
 * does this too). */
void sweep_judge_pid1(sweep_report_t *out);

/* "yama-relational", "other-uid", "open", "unknown". */
const char *sweep_pid1_name(sweep_pid1_t p);

/* Whether the judgement proves PID 1 was never the caller uid's to attach
 * to: Yama's relational scope (a boot-time rule of the kernel or gVisor:
 * PID 1 is nobody's descendant) and another uid (the caller, without
 * capabilities, could never match all of PID 1's uids, and a process of
 * the caller's uid cannot leave it without privilege). */
bool sweep_pid1_proven(sweep_pid1_t p);

/* The report as the record shows it (both the relay's ready line and a
 * grade's "sweep" member): {"killed", "rounds", "survivors",
 * "unsignalable", "zombies", "pid1", "yama_scope", "elapsed_ms"} plus
 * "survivor_pids"/"unsignalable_pids" arrays when non-empty and "code" and
 * "reason" when set. NULL on allocation failure. */
json_t *sweep_report_json(const sweep_report_t *r);
