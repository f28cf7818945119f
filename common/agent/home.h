/* The relay's view of hangar-home, checked before anything in it is
 * believed. The agent owns its own container: if an ancestor of
 * hangar-home's mount point is writable by the agent, the agent can rename
 * it aside and put a directory of its own (its own relay.port, pointing at
 * its own listener, which would then receive the token) where the relay
 * looks. So the relay opens the path one component at a time from "/"
 * (openat, O_NOFOLLOW: no symlink anywhere), and requires that what it
 * opened is read-only here (fstatvfs ST_RDONLY, or a write refused with
 * EROFS: gVisor's statvfs does not flag a read-only bind mount), that the mount
 * table has a read-only mount exactly at that path, and that the path still
 * names the directory it opened. Every file of hangar-home is then read
 * relative to the opened directory, never by path. Fails closed, saying
 * which check failed. */
#pragma once

#include "error.h"

/* Opens and checks home (an absolute path); *ret_fd is an O_DIRECTORY fd. */
int home_open(const char *home, int *ret_fd, hg_error_t *err);
/* Same, with the mount table read from mountinfo_path (tests). */
int home_open_with(const char *home, const char *mountinfo_path, int *ret_fd, hg_error_t *err);
/* Reads dirfd/name (relative, no symlinks in it), at most max bytes. */
int home_read(int dirfd, const char *name, size_t max, char **ret_data, size_t *ret_len,
              hg_error_t *err);
