/* Readers of the running system: what a container sees from inside. Every
 * fact carries whether it could be read and where it came from, so the
 * checks can say "unknown" (never "pass") when a reader failed. Readers do
 * not judge; probe/checks.c does. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "credentials.h"
#include "mountinfo.h"
#include "procstatus.h"

#define OBSERVE_MAX_PROCS  256
#define OBSERVE_MAX_GROUPS 1024 /* supplementary groups read; more is "unknown" */

typedef struct fact_u64 {
        bool known;
        uint64_t value;
        char error[128];     /* why it is unknown */
        const char *derived; /* when known by reasoning, not read: how */
} fact_u64_t;

typedef struct other_process {
        pid_t pid;
        uint32_t uid;
        int signal_errno;   /* kill(pid, 0): 0 = could signal it */
        int mem_open_errno; /* open(/proc/PID/mem): 0 = could open it */
} other_process_t;

typedef struct observation {
        /* identity: getresuid/getresgid, getgroups */
        uint32_t uid[3], gid[3];
        uint32_t groups[OBSERVE_MAX_GROUPS];
        size_t ngroups;
        int groups_errno; /* 0 = groups/ngroups are the whole list */
        /* capabilities: capget(2) for inh/prm/eff, prctl for bounding and ambient */
        fact_u64_t cap[CAP_SET_COUNT];
        fact_u64_t cap_full; /* from /proc/sys/kernel/cap_last_cap */
        fact_u64_t no_new_privs, dumpable, seccomp, ptrace_scope;
        /* root filesystem */
        fact_u64_t root_statvfs_ro;  /* ST_RDONLY on "/" */
        fact_u64_t root_write_errno; /* 0 = a file could be created in / */
        /* mounts */
        bool mounts_known;
        char mounts_error[128];
        mount_table_t mounts;
        /* processes visible in /proc other than this one and its ancestors' uid */
        bool procs_known;
        other_process_t procs[OBSERVE_MAX_PROCS];
        size_t nprocs;
        pid_t unreadable[OBSERVE_MAX_PROCS]; /* visible, status unreadable */
        size_t nunreadable;
        /* runtime */
        char uname_release[65];
        bool kernel_log_gvisor; /* the kernel log's banner names gVisor */
        bool kernel_log_known;
        /* API tokens and what they may do: only for the agent's report,
         * filled by creds_observe (it talks to the API server) */
        creds_observation_t creds;
} observation_t;

/* Reads everything; never fails as a whole (unknowns are recorded). */
void observe_all(observation_t *o);
void observe_free(observation_t *o);
