/* /proc/self/mountinfo, parsed strictly (proc(5)): one entry per line,
 * "ID PARENT MAJ:MIN ROOT MOUNT_POINT MOUNT_OPTIONS [OPTIONAL...] - FSTYPE
 * SOURCE SUPER_OPTIONS". Paths have their octal escapes (\040 for a space,
 * \011, \012, \134) decoded. Read-only-ness is the per-mount option ("ro" in
 * MOUNT_OPTIONS), which is what a bind mount's readOnly sets; the
 * superblock's options say what the filesystem allows. gVisor writes
 * "none" as the source and may leave SUPER_OPTIONS empty. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define MOUNTINFO_MAX_ENTRIES 4096
#define MOUNTINFO_MAX_BYTES   (4 * 1024 * 1024)

typedef struct mount_entry {
        unsigned id;
        unsigned parent_id;
        char *root;
        char *mount_point;
        char *mount_options; /* per-mount: "rw,nosuid,relatime" */
        char *fstype;
        char *source;
        char *super_options;
        bool read_only; /* "ro" among mount_options */
} mount_entry_t;

typedef struct mount_table {
        mount_entry_t *entries;
        size_t n;
} mount_table_t;

int mountinfo_parse(const char *text, size_t len, mount_table_t *ret, hg_error_t *err);
void mountinfo_free(mount_table_t *t);

/* The entry mounted at path (the last one: later mounts cover earlier), or NULL. */
const mount_entry_t *mountinfo_find(const mount_table_t *t, const char *path);
/* True if options (comma-separated) contains exactly opt. */
bool mountinfo_has_option(const char *options, const char *opt);
