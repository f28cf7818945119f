/* What the relay reads of its turn in hangar-home (the driver's read-only
 * mount, opened by common/agent/home.h): the port the driver listens on
 * and the turn file (the turn's id and directory, its terminal, whether it
 * keeps the agent's processes, the daemon instance that wrote it). Read
 * before the sweep, waited for when hangar started the relay together with
 * ctl start, and read again before connecting when hangar names the
 * daemon instance it started the turn with. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "session.h"

/* The daemon's instance id: 32 lowercase hex digits (driver/turn/turn.c). */
#define INSTANCE_HEX_LEN 32

typedef struct turn_files {
        uint16_t port;
        char *turn, *cwd;
        session_term_t term;
        bool term_on, keep_processes;
        char instance[INSTANCE_HEX_LEN + 1]; /* "" if the driver named none */
} turn_files_t;

void turnfiles_free(turn_files_t *f);

bool turnfiles_instance_ok(const char *s, size_t len);

/* The port and the turn file, once. 0, or -errno with err (-ENOENT: not
 * written yet). */
int turnfiles_read(int home_fd, turn_files_t *f, hg_error_t *err);

/* --turn ID --wait-port S: up to S seconds for a port and a turn file
 * naming want (NULL: any), read again each time a file lands in hangar-home
 * (inotify) and on a tick. Data or the end of stdin ends the wait at once
 * (-ECANCELED: hangar gave up). */
int turnfiles_wait(int home_fd, const char *want, uint32_t wait_s, turn_files_t *f,
                   hg_error_t *err);

/* hangar named the daemon instance want: the files, read again now, must be
 * that instance's and name the port and turn of before (read earlier).
 * Otherwise -ESTALE: the port may be a dead daemon's, free for any process
 * of the agent's to listen on. */
int turnfiles_check_instance(int home_fd, const char *want, const turn_files_t *before,
                             hg_error_t *err);
