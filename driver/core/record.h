/* The turn's record: events (hangar-ctl, one JSON object per line), status
 * (hangar-ctl, rewritten atomically), and the log and exit status the agent
 * may read (hangar-home). Writers only; the turn decides what to record. */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

typedef struct record {
        char *home;       /* hangar-home mount path */
        char *ctl;        /* hangar-ctl mount path */
        int events_fd;    /* O_APPEND */
        int log_fd;       /* O_APPEND */
        uint64_t seq;     /* events written */
        uint64_t appends; /* lines and log writes so far: followers have more to read */
} record_t;

/* Opens the events file (0600) and a fresh log (0644). */
int record_open(record_t *r, const char *home, const char *ctl);
void record_close(record_t *r);

/* Appends {"seq", "ts", "event", ...fields} to events.jsonl as one whole
 * line; takes fields. 0, or -errno (-ENOSPC: hangar-ctl is full) with
 * nothing written: the caller decides how loudly that fails. */
int record_event(record_t *r, const char *event, json_t *fields);
/* Appends harness output to the run's log. 0 or -errno. */
int record_log(record_t *r, const void *data, size_t n);
/* The same for n pieces in order, one writev for all of them (the frames
 * of one read from the relay). iov is left as it was. 0 or -errno. */
int record_logv(record_t *r, const struct iovec *iov, int n);
/* Appends j as one line to dir/name (0600), whole or not at all. */
int record_append_json(const char *dir, const char *name, json_t *j);
/* Writes a JSON file under home or ctl atomically (mode as given): by
 * rename, without an fsync (file_replace: the pod's files, and an fsync on
 * hangar-home under gVisor is a trip to the node's disk). */
int record_write_json(const char *dir, const char *name, json_t *j, unsigned mode);
/* path = dir + "/" + name, allocated; NULL on ENOMEM. */
char *record_path(const char *dir, const char *name);
