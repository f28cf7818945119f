/* File and descriptor I/O that never reads without a bound and never leaves
 * a half-written file behind. All return 0 or -errno. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

/* Reads all of fd, retrying on EINTR; more than max bytes is -EFBIG. The
 * result is NUL-terminated (the NUL is not counted in *ret_len). */
int fd_read_bounded(int fd, size_t max, char **ret_data, size_t *ret_len);
/* Reads a whole file with the same bound. */
int file_read_bounded(const char *path, size_t max, char **ret_data, size_t *ret_len);
/* Writes all n bytes, retrying on EINTR and short writes. */
int fd_write_all(int fd, const void *buf, size_t n);
/* Writes a file through a temporary in the same directory and renames it
 * into place, so readers see the old or the new content, never a part.
 * With exclusive set, an existing path is -EEXIST and left alone. */
int file_write_atomic(const char *path, const void *data, size_t n, mode_t mode, int exclusive);
/* The same rename into place, without the fsync: for files that live only
 * as long as the pod (hangar-home, hangar-ctl), which nothing reads after a
 * host crash. Under gVisor an fsync on hangar-home goes through the gofer to
 * the node's disk, on the turn's start path once per file. */
int file_replace(const char *path, const void *data, size_t n, mode_t mode);
