/* Absolute paths in canonical form, compared as text: the one place that says
 * when two spellings of a directory are the same ("//a/./b/../c/" is
 * "/a/c"). The webhook compares a container's mount paths with hangar's, the
 * spec check does, and the configuration checks its own paths with it.
 *
 * Purely lexical (no file system is asked): ".." removes the segment before
 * it, and ".." at the root stays at the root, as the kernel resolves it. A
 * path whose canonical form, or any step on the way to it, does not fit
 * PATHNORM_MAX bytes is an error, never a shortened path: a caller must
 * treat it as a refusal (the kernel would not take it either). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The kernel's PATH_MAX: the longest path, its NUL included. */
#define PATHNORM_MAX 4096

/* Writes the canonical form of path (read as absolute: a leading '/' is
 * implied) into out. 0, or -ENAMETOOLONG when it does not fit in size
 * (out is then ""). */
int pathnorm_canonical(const char *path, char *out, size_t size);

/* Whether path is root or inside it, both compared in canonical form:
 * 1 yes, 0 no, -ENAMETOOLONG when either does not fit PATHNORM_MAX. */
int pathnorm_within(const char *path, const char *root);

/* True when path is absolute and already in canonical form ("/" included;
 * "/a/", "/a//b", "/a/./b", "/a/../b" are not). */
bool pathnorm_is_canonical(const char *path);
