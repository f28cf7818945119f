#include "observe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/prctl.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "strparse.h"

static void set_known(fact_u64_t *f, uint64_t v)
{
        f->known = true;
        f->value = v;
}

static void set_unknown(fact_u64_t *f, const char *what, int err)
{
        f->known = false;
        (void)snprintf(f->error, sizeof(f->error), "%s: %s", what, strerror(err));
}

static void read_identity(observation_t *o)
{
        uid_t r, e, s;
        gid_t rg, eg, sg;
        (void)getresuid(&r, &e, &s);
        (void)getresgid(&rg, &eg, &sg);
        o->uid[0] = r, o->uid[1] = e, o->uid[2] = s;
        o->gid[0] = rg, o->gid[1] = eg, o->gid[2] = sg;
        /* More groups than fit is EINVAL: recorded as unknown, never
         * reported as an empty list. */
        gid_t groups[OBSERVE_MAX_GROUPS];
        int n = getgroups(OBSERVE_MAX_GROUPS, groups);
        o->groups_errno = n < 0 ? errno : 0;
        o->ngroups = n > 0 ? (size_t)n : 0;
        for (size_t i = 0; i < o->ngroups; i++)
                o->groups[i] = groups[i];
}

static void read_caps(observation_t *o)
{
        struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
        struct __user_cap_data_struct data[2];
        if (syscall(SYS_capget, &hdr, data) == 0) {
                set_known(&o->cap[CAP_SET_INHERITABLE],
                          data[0].inheritable | (uint64_t)data[1].inheritable << 32);
                set_known(&o->cap[CAP_SET_PERMITTED],
                          data[0].permitted | (uint64_t)data[1].permitted << 32);
                set_known(&o->cap[CAP_SET_EFFECTIVE],
                          data[0].effective | (uint64_t)data[1].effective << 32);
        } else {
                int e = errno;
                set_unknown(&o->cap[CAP_SET_INHERITABLE], "capget", e);
                set_unknown(&o->cap[CAP_SET_PERMITTED], "capget", e);
                set_unknown(&o->cap[CAP_SET_EFFECTIVE], "capget", e);
        }

        _cleanup_free_ char *text = NULL;
        size_t len;
        hg_error_t err;
        int r = file_read_bounded("/proc/sys/kernel/cap_last_cap", 64, &text, &len);
        uint64_t full = 0;
        if (r == 0 && capmask_full(text, &full, &err) == 0) {
                set_known(&o->cap_full, full);
        } else {
                /* gVisor has no cap_last_cap: the kernel answers EINVAL to
                 * PR_CAPBSET_READ past its last capability (what libcap does). */
                unsigned last = 0;
                while (last < 63 && prctl(PR_CAPBSET_READ, last + 1, 0, 0, 0) >= 0)
                        last++;
                if (prctl(PR_CAPBSET_READ, 0, 0, 0, 0) < 0)
                        set_unknown(&o->cap_full, "cap_last_cap and PR_CAPBSET_READ", errno);
                else
                        set_known(&o->cap_full,
                                  last == 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1);
        }

        /* Bounding and ambient, one capability at a time (prctl), up to the
         * last the kernel knows. */
        if (!o->cap_full.known) {
                set_unknown(&o->cap[CAP_SET_BOUNDING], "cap_last_cap unknown", EINVAL);
                set_unknown(&o->cap[CAP_SET_AMBIENT], "cap_last_cap unknown", EINVAL);
                return;
        }
        uint64_t bnd = 0, amb = 0;
        bool bnd_ok = true, amb_ok = true;
        for (unsigned c = 0; c < 64 && (o->cap_full.value >> c) & 1; c++) {
                int b = prctl(PR_CAPBSET_READ, c, 0, 0, 0);
                if (b < 0)
                        bnd_ok = false;
                else if (b)
                        bnd |= UINT64_C(1) << c;
                int a = prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0);
                if (a < 0)
                        amb_ok = false;
                else if (a)
                        amb |= UINT64_C(1) << c;
        }
        int prctl_errno = errno;
        /* Where prctl cannot say (gVisor 2022 has no PR_CAP_AMBIENT), the
         * kernel's own /proc/self/status line can. */
        proc_status_t st = {0};
        _cleanup_free_ char *status = NULL;
        if ((!bnd_ok || !amb_ok) &&
            file_read_bounded("/proc/self/status", PROCSTATUS_MAX_BYTES, &status, &len) == 0)
                (void)procstatus_parse(status, len, &st, &err);
        if (bnd_ok)
                set_known(&o->cap[CAP_SET_BOUNDING], bnd);
        else if (st.have_cap[CAP_SET_BOUNDING])
                set_known(&o->cap[CAP_SET_BOUNDING], st.cap[CAP_SET_BOUNDING]);
        else
                set_unknown(&o->cap[CAP_SET_BOUNDING], "prctl(PR_CAPBSET_READ)", prctl_errno);
        if (amb_ok)
                set_known(&o->cap[CAP_SET_AMBIENT], amb);
        else if (st.have_cap[CAP_SET_AMBIENT])
                set_known(&o->cap[CAP_SET_AMBIENT], st.cap[CAP_SET_AMBIENT]);
        else if (o->cap[CAP_SET_PERMITTED].known && o->cap[CAP_SET_INHERITABLE].known &&
                 (o->cap[CAP_SET_PERMITTED].value & o->cap[CAP_SET_INHERITABLE].value) == 0) {
                /* gVisor 2022 can show neither; but the kernel keeps ambient
                 * within permitted and inheritable, so with those disjoint
                 * it is empty. */
                set_known(&o->cap[CAP_SET_AMBIENT], 0);
                o->cap[CAP_SET_AMBIENT].derived =
                    "derived: ambient is within permitted and inheritable, which share nothing";
        } else {
                set_unknown(&o->cap[CAP_SET_AMBIENT], "prctl(PR_CAP_AMBIENT)", prctl_errno);
        }
}

static void read_prctl(fact_u64_t *f, int option, const char *name)
{
        int v = prctl(option, 0, 0, 0, 0);
        if (v < 0)
                set_unknown(f, name, errno);
        else
                set_known(f, (uint64_t)v);
}

static void read_number_file(fact_u64_t *f, const char *path)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = file_read_bounded(path, 64, &text, &len);
        if (r < 0) {
                set_unknown(f, path, -r);
                return;
        }
        text[strcspn(text, "\n")] = '\0';
        uint64_t v;
        if (parse_u64(text, &v) < 0)
                set_unknown(f, path, EINVAL);
        else
                set_known(f, v);
}

static void read_root(observation_t *o)
{
        struct statvfs sv;
        if (statvfs("/", &sv) == 0)
                set_known(&o->root_statvfs_ro, (sv.f_flag & ST_RDONLY) != 0);
        else
                set_unknown(&o->root_statvfs_ro, "statvfs(/)", errno);
        /* The decisive test: try to create a file in /. A unique name, removed
         * at once if the attempt (wrongly) succeeds. */
        char path[64];
        (void)snprintf(path, sizeof(path), "/.hangar-probe-%ld", (long)getpid());
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0) {
                close(fd);
                (void)unlink(path);
                set_known(&o->root_write_errno, 0);
        } else {
                set_known(&o->root_write_errno, (uint64_t)errno);
        }
}

static void read_mounts(observation_t *o)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        hg_error_t err = {0};
        int r = file_read_bounded("/proc/self/mountinfo", MOUNTINFO_MAX_BYTES, &text, &len);
        if (r == 0)
                r = mountinfo_parse(text, len, &o->mounts, &err);
        else
                (void)snprintf(err.message, sizeof(err.message), "%s", strerror(-r));
        o->mounts_known = r == 0;
        if (r < 0)
                (void)snprintf(o->mounts_error, sizeof(o->mounts_error), "/proc/self/mountinfo: %s",
                               err.message);
}

/* Processes this container can see that run as another uid: in a pod with
 * separate PID namespaces there are none. For each, whether it could be
 * signalled or its memory opened; never attached to. */
static void read_processes(observation_t *o)
{
        DIR *d = opendir("/proc");
        if (!d)
                return;
        o->procs_known = true;
        struct dirent *e;
        while ((e = readdir(d)) && o->nprocs < OBSERVE_MAX_PROCS) {
                uint32_t pid;
                if (parse_u32(e->d_name, &pid) < 0 || pid == (uint32_t)getpid())
                        continue;
                char path[64];
                (void)snprintf(path, sizeof(path), "/proc/%u/status", pid);
                _cleanup_free_ char *text = NULL;
                size_t len;
                proc_status_t st;
                hg_error_t err;
                int r = file_read_bounded(path, PROCSTATUS_MAX_BYTES, &text, &len);
                if (r == -ENOENT || r == -ESRCH)
                        continue; /* exited since readdir */
                if (r < 0 || procstatus_parse(text, len, &st, &err) < 0 || !st.have_uid) {
                        /* Visible but unreadable (hidepid=1, say): not
                         * ours, but whose is unknown. Never a pass. */
                        if (o->nunreadable < OBSERVE_MAX_PROCS)
                                o->unreadable[o->nunreadable++] = (pid_t)pid;
                        continue;
                }
                if (st.uid[0] == o->uid[0] && st.uid[1] == o->uid[1])
                        continue;
                other_process_t *p = &o->procs[o->nprocs++];
                p->pid = (pid_t)pid;
                p->uid = st.uid[1];
                p->signal_errno = kill((pid_t)pid, 0) == 0 ? 0 : errno;
                (void)snprintf(path, sizeof(path), "/proc/%u/mem", pid);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                p->mem_open_errno = fd >= 0 ? 0 : errno;
                if (fd >= 0)
                        close(fd);
        }
        closedir(d);
}

static void read_runtime(observation_t *o)
{
        struct utsname u;
        if (uname(&u) == 0)
                (void)snprintf(o->uname_release, sizeof(o->uname_release), "%s", u.release);
        /* gVisor's kernel log starts with its banner and needs no capability. */
        char buf[4096];
        int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf) - 1);
        if (n >= 0) {
                buf[n] = '\0';
                o->kernel_log_known = true;
                o->kernel_log_gvisor = strstr(buf, "gVisor") != NULL;
        }
}

void observe_all(observation_t *o)
{
        memset(o, 0, sizeof(*o));
        read_identity(o);
        read_caps(o);
        read_prctl(&o->no_new_privs, PR_GET_NO_NEW_PRIVS, "prctl(PR_GET_NO_NEW_PRIVS)");
        read_prctl(&o->dumpable, PR_GET_DUMPABLE, "prctl(PR_GET_DUMPABLE)");
        read_prctl(&o->seccomp, PR_GET_SECCOMP, "prctl(PR_GET_SECCOMP)");
        read_number_file(&o->ptrace_scope, "/proc/sys/kernel/yama/ptrace_scope");
        read_root(o);
        read_mounts(o);
        read_processes(o);
        read_runtime(o);
}

void observe_free(observation_t *o)
{
        mountinfo_free(&o->mounts);
        creds_free(&o->creds);
}
