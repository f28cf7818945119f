/* /proc/<pid>/status, the few fields the probe reads: real/effective/saved/
 * filesystem uid and gid, supplementary groups, the five capability sets,
 * NoNewPrivs and Seccomp. A field gVisor omits (NoNewPrivs) stays unknown
 * (have_* false), never zero. Unknown lines are ignored; a known line that is
 * malformed is an error. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define PROCSTATUS_MAX_GROUPS 64
#define PROCSTATUS_MAX_BYTES  (64 * 1024)

typedef enum cap_set {
        CAP_SET_INHERITABLE,
        CAP_SET_PERMITTED,
        CAP_SET_EFFECTIVE,
        CAP_SET_BOUNDING,
        CAP_SET_AMBIENT,
        CAP_SET_COUNT,
} cap_set_t;

typedef struct proc_status {
        bool have_uid, have_gid, have_groups;
        uint32_t uid[4]; /* real, effective, saved, filesystem */
        uint32_t gid[4];
        uint32_t groups[PROCSTATUS_MAX_GROUPS];
        size_t ngroups;
        bool have_cap[CAP_SET_COUNT];
        uint64_t cap[CAP_SET_COUNT];
        bool have_no_new_privs, have_seccomp;
        unsigned no_new_privs;
        unsigned seccomp;
} proc_status_t;

int procstatus_parse(const char *text, size_t len, proc_status_t *ret, hg_error_t *err);
const char *cap_set_name(cap_set_t set);

/* The mask of every capability the kernel knows, from the text of
 * /proc/sys/kernel/cap_last_cap (never a literal: it grows with kernels). */
int capmask_full(const char *cap_last_cap_text, uint64_t *ret, hg_error_t *err);
