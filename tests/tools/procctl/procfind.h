/* Finding a pod's or a node's processes in /proc, each one pinned by a pidfd
 * while it is looked at, so what is reported of a pid (its command line, its
 * namespaces, its cgroup, its parent) is the process named by the start time
 * reported with it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "procid.h"

typedef struct {
        /* A whole argument of the command line equal to one of these. */
        const char *const *args;
        size_t n_args;
        /* A cgroup path (any hierarchy) that is /NAME or under it. */
        const char *cgroup;
        /* In this network namespace (its inode) and either in this mount
         * namespace or running an executable at or under one of exe_paths.
         * netns 0: no namespace rule; mntns 0 and no exe_paths: the network
         * namespace alone. */
        uint64_t netns, mntns;
        const char *const *exe_paths;
        size_t n_exe_paths;
        /* These very processes (the same start time). */
        const procid_t *seeds;
        size_t n_seeds;
        /* Then every descendant of a match (by parent, repeated). */
        bool descendants;
} procfind_t;

/* The running processes matching q, sorted by pid; never this process or its
 * ancestors (a tool that ends what it finds must not end its caller). The
 * array is malloc'd. */
int procfind_run(const procfind_t *q, procid_t **ret, size_t *ret_n);

/* True if one argument of the NUL-separated cmdline (len bytes) is one of
 * args. */
bool procfind_cmdline_has(const char *cmdline, size_t len, const char *const *args, size_t n_args);

/* True if a line "ID:CONTROLLERS:PATH" of a /proc/PID/cgroup text has PATH
 * /name or under it. */
bool procfind_cgroup_has(const char *text, const char *name);

/* The inode of a namespace link's text ("net:[4026531840]"), 0 if malformed. */
uint64_t procfind_ns_inode(const char *link);
