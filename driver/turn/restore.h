/* The restore watch: how the driver's daemon learns that its sandbox was
 * restored from a checkpoint (GKE Pod Snapshots, warm pools, `runsc
 * restore`), so that no clone of one snapshot goes on as its twin
 * (docs/turn.md, "Clones").
 *
 * gVisor's /proc/gvisor/checkpoint (pkg/sentry/fsimpl/proc/checkpoint.go
 * at the runsc tests/pods/build-runsc.sh pins): an open descriptor reads
 * EAGAIN until the next checkpoint is over, then polls readable and reads
 * "restore\n" (this is a restored clone), "resume\n" (the checkpointed
 * sandbox itself goes on) or "error\n" (the checkpoint failed; it goes on
 * too), then EOF; it keeps its place across the restore. To see the next
 * checkpoint the file is opened again. Outside gVisor, or in a runsc
 * without the file, there is no watch: "unavailable".
 *
 * This module owns the descriptor and reads it; what a restore means for
 * the daemon (reseed, new instance id, the turn ended `restored`) is
 * driver/turn/turn.c's. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RESTORE_WATCH_PATH "/proc/gvisor/checkpoint"
/* The longest result gVisor writes is "restore\n"; more is junk. */
#define RESTORE_RESULT_MAX 16u

typedef enum restore_event {
        RESTORE_EV_NONE,     /* nothing yet (EAGAIN, or a part of a line) */
        RESTORE_EV_RESTORED, /* "restore": this sandbox is a clone of a checkpoint */
        RESTORE_EV_RESUMED,  /* "resume": the checkpointed sandbox goes on */
        RESTORE_EV_FAILED,   /* "error": the checkpoint failed; the sandbox goes on */
        RESTORE_EV_UNKNOWN,  /* anything else, EOF before a line, a read error */
} restore_event_t;

typedef enum restore_watch_state {
        RESTORE_WATCH_UNAVAILABLE, /* no such file here (not gVisor, or an older runsc) */
        RESTORE_WATCH_AVAILABLE,   /* open, waiting for the next checkpoint */
        RESTORE_WATCH_BROKEN,      /* it said something unknown, or could not be reopened */
} restore_watch_state_t;

/* Opens the file to wait for the next checkpoint: a new descriptor, or
 * -errno. The daemon's is restore_watch_open_proc; tests give their own. */
typedef int (*restore_opener_t)(void *ctx);

typedef struct restore_watch {
        int fd; /* -1 unless AVAILABLE */
        restore_watch_state_t state;
        restore_opener_t opener;
        void *opener_ctx;
        uint64_t restores; /* "restore" results seen by this process */
        uint64_t resumes;  /* "resume" and "error" results */
        char buf[RESTORE_RESULT_MAX];
        size_t len;
        int open_errno; /* why it is unavailable or broken (0: not known) */
} restore_watch_t;

/* Opens RESTORE_WATCH_PATH O_RDONLY|O_NONBLOCK|O_CLOEXEC (ctx unused). */
int restore_watch_open_proc(void *ctx);

/* Starts the watch with opener. The file missing (ENOENT, ENOTDIR) is
 * UNAVAILABLE and returns 0; any other error opening it is BROKEN and
 * returns -errno (the caller decides whether a daemon may run so). */
int restore_watch_start(restore_watch_t *w, restore_opener_t opener, void *ctx);

/* The descriptor to poll for POLLIN, or -1. */
int restore_watch_fd(const restore_watch_t *w);

/* Reads what is there after poll said the descriptor is ready. A whole
 * result is counted and the file is opened again, for the next
 * checkpoint. RESTORE_EV_UNKNOWN closes the watch (BROKEN): the caller
 * must treat it as a restore, since a checkpoint it cannot read may well
 * have made this process a clone (fail closed), and a watch that said it
 * once would say it again. */
restore_event_t restore_watch_read(restore_watch_t *w);

/* "available", "unavailable" or "broken" (ctl status, ping). */
const char *restore_watch_state_name(restore_watch_state_t s);

void restore_watch_close(restore_watch_t *w);
