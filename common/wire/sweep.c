/* The sweep (sweep.h): kill(-1, SIGKILL) and /proc rescans until only PID 1
 * and the caller are alive. */
#include "sweep.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "strparse.h"

/* include/linux/sched.h: set on kernel threads, which only the initial PID
 * namespace can see. */
#define SWEEP_PF_KTHREAD 0x00200000u
/* Distinct pids remembered for the "killed" count; past this many the count
 * goes on without telling repeats apart. */
#define SWEEP_SEEN_SLOTS 4096u
/* How long a process of another uid must stay so before it fails the sweep. */
#define SWEEP_FOREIGN_GRACE_MS 1000

typedef struct seen {
        pid_t *slot;
        unsigned used;
} seen_t;

/* Adds pid; 1 if new, 0 if already there. */
static int seen_add(seen_t *s, pid_t pid)
{
        if (!s->slot || s->used >= SWEEP_SEEN_SLOTS / 2)
                return 1;
        unsigned i = ((unsigned)pid * 2654435761u) % SWEEP_SEEN_SLOTS;
        while (s->slot[i]) {
                if (s->slot[i] == pid)
                        return 0;
                i = (i + 1) % SWEEP_SEEN_SLOTS;
        }
        s->slot[i] = pid;
        s->used++;
        return 1;
}

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* A small file under dirfd into buf (NUL-terminated); bytes or -errno. */
static ssize_t read_small(int dirfd, const char *path, char *buf, size_t size)
{
        _cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        size_t len = 0;
        while (len + 1 < size) {
                ssize_t n = read(fd, buf + len, size - 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        buf[len] = '\0';
        return (ssize_t)len;
}

typedef struct pstat {
        char state;
        unsigned long flags;
        long threads;
} pstat_t;

/* PATH ("N/stat" or "N/task/T/stat") parsed past the command (which may
 * hold spaces and parentheses: the last ')' ends it). 0, or -errno
 * (-ENOENT/-ESRCH: gone; -EPROTO: unparsable). */
static int read_stat(int procfd, const char *path, pstat_t *ret)
{
        char buf[1024];
        ssize_t n = read_small(procfd, path, buf, sizeof(buf));
        if (n < 0)
                return (int)n;
        char *p = strrchr(buf, ')');
        if (!p || p[1] != ' ' || !p[2])
                return -EPROTO;
        p += 2;
        pstat_t s = {.state = p[0], .threads = -1};
        /* Fields after the state: ppid pgrp session tty_nr tpgid flags (6th)
         * ... num_threads (17th). */
        char *save = NULL;
        char *tok = strtok_r(p, " ", &save); /* the state */
        for (int field = 1; tok && field <= 17; field++) {
                tok = strtok_r(NULL, " ", &save);
                if (!tok)
                        break;
                uint64_t v = 0;
                if (field == 6 && parse_u64(tok, &v) == 0)
                        s.flags = (unsigned long)v;
                if (field == 17 && parse_u64(tok, &v) == 0)
                        s.threads = (long)v;
        }
        *ret = s;
        return 0;
}

/* A zombie leader may still have live threads (sharing, or not, a table of
 * descriptors): dead only when every task is. */
static bool all_tasks_dead(int procfd, pid_t pid)
{
        char path[64];
        (void)snprintf(path, sizeof(path), "%d/task", (int)pid);
        int fd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT || errno == ESRCH;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return false;
        }
        bool dead = true;
        struct dirent *e;
        while (dead && (e = readdir(d))) {
                if (!isdigit((unsigned char)e->d_name[0]))
                        continue;
                char tpath[96];
                pstat_t ts;
                (void)snprintf(tpath, sizeof(tpath), "%d/task/%s/stat", (int)pid, e->d_name);
                int r = read_stat(procfd, tpath, &ts);
                if (r == -ENOENT || r == -ESRCH)
                        continue;
                if (r < 0 || (ts.state != 'Z' && ts.state != 'X'))
                        dead = false;
        }
        closedir(d);
        return dead;
}

typedef enum pkind { PK_GONE, PK_ZOMBIE, PK_ALIVE, PK_KTHREAD } pkind_t;

static pkind_t classify(int procfd, pid_t pid)
{
        char path[32];
        pstat_t s;
        (void)snprintf(path, sizeof(path), "%d/stat", (int)pid);
        int r = read_stat(procfd, path, &s);
        if (r == -ENOENT || r == -ESRCH)
                return PK_GONE;
        if (r < 0)
                return PK_ALIVE; /* unreadable (hidepid=1, another uid): kill() will tell */
        if (s.flags & SWEEP_PF_KTHREAD)
                return PK_KTHREAD;
        /* num_threads counts the zombie leader itself until it is reaped:
         * more than one means live threads (whose descriptors live on);
         * then every task must be dead. gVisor cannot list a zombie's task
         * directory, and shows 1 for it. */
        if (s.state == 'Z' || s.state == 'X')
                return (s.threads >= 0 && s.threads <= 1) || all_tasks_dead(procfd, pid) ? PK_ZOMBIE
                                                                                         : PK_ALIVE;
        return PK_ALIVE;
}

static void add_pid(pid_t *list, unsigned count, pid_t pid)
{
        if (count < SWEEP_PIDS_MAX)
                list[count] = pid;
}

typedef struct scan {
        unsigned alive;   /* signalable, alive (each sent SIGKILL again) */
        unsigned foreign; /* alive, EPERM */
        unsigned zombies;
        bool kthread;
} scan_t;

/* One pass over /proc. With signal set, every live process but PID 1 and
 * self gets its own SIGKILL (kill(-1) may have raced its fork). The pids of
 * this pass replace the report's lists. */
static int scan_proc(int procfd, pid_t self, bool signal, seen_t *seen, sweep_report_t *out,
                     scan_t *ret)
{
        int fd = openat(procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        scan_t s = {0};
        struct dirent *e;
        errno = 0;
        while ((e = readdir(d))) {
                uint32_t v = 0;
                if (!isdigit((unsigned char)e->d_name[0]) || parse_u32(e->d_name, &v) < 0 || v == 0)
                        continue;
                pid_t pid = (pid_t)v;
                if (pid == 1 || pid == self)
                        continue;
                switch (classify(procfd, pid)) {
                case PK_GONE:
                        break;
                case PK_ZOMBIE:
                        s.zombies++;
                        break;
                case PK_KTHREAD:
                        s.kthread = true;
                        break;
                case PK_ALIVE:
                        if (!signal) {
                                /* Before the first kill(-1): who is there. */
                                if (kill(pid, 0) == 0)
                                        out->killed += (unsigned)seen_add(seen, pid);
                                break;
                        }
                        if (kill(pid, SIGKILL) == 0) {
                                out->killed += (unsigned)seen_add(seen, pid);
                                add_pid(out->survivor_pids, s.alive++, pid);
                        } else if (errno == EPERM) {
                                add_pid(out->unsignalable_pids, s.foreign++, pid);
                        }
                        break;
                default:
                        break;
                }
                errno = 0;
        }
        int r = errno ? -errno : 0;
        closedir(d);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

/* /proc/self must be this process: /proc is then this PID namespace's. */
static bool proc_is_ours(int procfd)
{
        char link[32];
        ssize_t n = readlinkat(procfd, "self", link, sizeof(link) - 1);
        uint32_t v = 0;
        if (n <= 0)
                return false;
        link[n] = '\0';
        return parse_u32(link, &v) == 0 && (pid_t)v == getpid();
}

/* hidepid=2 (invisible) hides other uids' processes from the scan. */
static bool proc_hides_pids(void)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;
        if (file_read_bounded("/proc/self/mountinfo", 4u << 20, &buf, &len) < 0)
                return true; /* cannot tell: assume the worst */
        for (char *line = buf, *next; line && *line; line = next) {
                next = strchr(line, '\n');
                if (next)
                        *next++ = '\0';
                /* id parent major:minor root MOUNTPOINT ... - fstype source OPTIONS */
                char *save = NULL, *tok = strtok_r(line, " ", &save);
                for (int i = 0; tok && i < 4; i++)
                        tok = strtok_r(NULL, " ", &save);
                if (!tok || strcmp(tok, "/proc") != 0)
                        continue;
                char *opts = NULL;
                while ((tok = strtok_r(NULL, " ", &save)))
                        opts = tok; /* the last field: the superblock's options */
                const char *h = opts ? strstr(opts, "hidepid=") : NULL;
                if (h && (strncmp(h + 8, "2", 1) == 0 || strncmp(h + 8, "invisible", 9) == 0 ||
                          strncmp(h + 8, "ptraceable", 10) == 0))
                        return true;
        }
        return false;
}

const char *sweep_pid1_name(sweep_pid1_t p)
{
        switch (p) {
        case SWEEP_PID1_YAMA_RELATIONAL:
                return "yama-relational";
        case SWEEP_PID1_OTHER_UID:
                return "other-uid";
        case SWEEP_PID1_OPEN:
                return "open";
        case SWEEP_PID1_UNKNOWN:
        default:
                return "unknown";
        }
}

bool sweep_pid1_proven(sweep_pid1_t p)
{
        return p == SWEEP_PID1_YAMA_RELATIONAL || p == SWEEP_PID1_OTHER_UID;
}

void sweep_judge_pid1(sweep_report_t *out)
{
        char buf[4096];
        uint32_t v = 0;
        out->yama_scope = -1;
        out->pid1 = SWEEP_PID1_UNKNOWN;
        if (read_small(AT_FDCWD, "/proc/sys/kernel/yama/ptrace_scope", buf, sizeof(buf)) > 0) {
                buf[strcspn(buf, "\n")] = '\0';
                if (parse_u32(buf, &v) == 0 && v <= 3)
                        out->yama_scope = (int)v;
        }
        if (read_small(AT_FDCWD, "/proc/1/status", buf, sizeof(buf)) <= 0)
                return;
        char *u = strstr(buf, "\nUid:");
        if (!u)
                return;
        u += 5;
        u[strcspn(u, "\n")] = '\0';
        uint32_t uid[4];
        char *save = NULL, *tok = strtok_r(u, " \t", &save);
        for (int i = 0; i < 4; i++, tok = strtok_r(NULL, " \t", &save))
                if (!tok || parse_u32(tok, &uid[i]) < 0)
                        return;
        uid_t me = geteuid();
        /* ptrace (and /proc/1/mem) needs the caller's uid in every one of
         * PID 1's real, effective and saved uids (no capabilities here). */
        if (uid[0] != me || uid[1] != me || uid[2] != me) {
                out->pid1 = SWEEP_PID1_OTHER_UID;
                return;
        }
        out->pid1 = out->yama_scope >= 1 ? SWEEP_PID1_YAMA_RELATIONAL : SWEEP_PID1_OPEN;
}

static int fail(sweep_report_t *out, int code, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(sweep_report_t *out, int code, const char *what, const char *fmt, ...)
{
        char detail[sizeof(out->reason)];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof(detail), fmt, ap);
        va_end(ap);
        out->code = what;
        (void)snprintf(out->reason, sizeof(out->reason), "%s: %s", what, detail);
        return code;
}

static void pids_text(const pid_t *list, unsigned count, char *buf, size_t size)
{
        size_t len = 0;
        buf[0] = '\0';
        for (unsigned i = 0; i < count && i < SWEEP_PIDS_MAX && len + 16 < size; i++)
                len += (size_t)snprintf(buf + len, size - len, "%s%d", i ? " " : "", (int)list[i]);
        if (count > SWEEP_PIDS_MAX && len + 5 < size)
                (void)snprintf(buf + len, size - len, " ...");
}

int sweep_others(int deadline_ms, sweep_report_t *out)
{
        *out = (sweep_report_t){.yama_scope = -1, .code = ""};
        int64_t start = now_ms();
        if (deadline_ms < 1 || deadline_ms > SWEEP_DEADLINE_MAX_MS)
                return fail(out, -EINVAL, "bad-deadline", "%d ms is not 1-%d", deadline_ms,
                            SWEEP_DEADLINE_MAX_MS);
        sweep_judge_pid1(out);
        pid_t self = getpid();
        if (self == 1)
                return fail(out, -ENOTSUP, "not-own-pid-namespace",
                            "the caller is PID 1: nothing would spare the container's command");
        _cleanup_close_ int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (procfd < 0)
                return fail(out, -errno, "proc-unreadable", "/proc: %s", strerror(errno));
        if (!proc_is_ours(procfd))
                return fail(out, -ENOTSUP, "not-own-pid-namespace",
                            "/proc/self is not this process: /proc is another PID namespace's");
        if (proc_hides_pids())
                return fail(out, -ENOTSUP, "proc-unreadable",
                            "/proc is mounted with hidepid (or its mounts are unreadable): "
                            "other uids' processes would not be seen");
        _cleanup_free_ pid_t *slots = calloc(SWEEP_SEEN_SLOTS, sizeof(pid_t));
        seen_t seen = {.slot = slots};
        /* Who is there, before anything is signalled: kernel threads mean
         * the initial PID namespace (a host, not a container), where
         * kill(-1) would reach every process of this uid on the machine. */
        scan_t s = {0};
        int r = scan_proc(procfd, self, false, &seen, out, &s);
        if (r < 0)
                return fail(out, r, "proc-unreadable", "/proc: %s", strerror(-r));
        if (s.kthread)
                return fail(out, -ENOTSUP, "host-pid-namespace",
                            "kernel threads are visible: this is the host's PID namespace, "
                            "not a container's; nothing was signalled");
        int clean = 0, pause = 1;
        int64_t foreign_since = 0;
        for (;;) {
                out->rounds++;
                /* Every process this uid may signal but PID 1 and the caller. */
                (void)kill(-1, SIGKILL);
                r = scan_proc(procfd, self, true, &seen, out, &s);
                if (r < 0)
                        return fail(out, r, "proc-unreadable", "/proc: %s", strerror(-r));
                out->survivors = s.alive;
                out->unsignalable = s.foreign;
                out->zombies = s.zombies;
                /* A process of another uid is judged only once it has
                 * stayed so for SWEEP_FOREIGN_GRACE_MS: an exec into the
                 * container (runc, crun) enters it as root and takes the
                 * container's uid a moment later, when it is killed like
                 * the rest. */
                bool foreign_settled = false;
                if (!s.foreign)
                        foreign_since = 0;
                else if (!foreign_since)
                        foreign_since = now_ms();
                else
                        foreign_settled = now_ms() - foreign_since >= SWEEP_FOREIGN_GRACE_MS;
                /* Clean twice running: a fork that raced the first kill(-1)
                 * shows in the second scan. */
                if (s.alive == 0 && (!s.foreign || foreign_settled) && ++clean >= 2)
                        break;
                if (s.alive || (s.foreign && !foreign_settled))
                        clean = 0;
                out->elapsed_ms = (long)(now_ms() - start);
                if (out->elapsed_ms >= deadline_ms && s.alive == 0)
                        break; /* only other uids left: judged below */
                if (out->elapsed_ms >= deadline_ms) {
                        char pids[SWEEP_PIDS_MAX * 12 + 8];
                        pids_text(out->survivor_pids, s.alive, pids, sizeof(pids));
                        return fail(out, -ETIMEDOUT, "still-running",
                                    "%u process(es) still alive after %u rounds in %ld ms "
                                    "(pids %s)",
                                    s.alive, out->rounds, out->elapsed_ms, pids);
                }
                if (s.alive || (s.foreign && !foreign_settled)) {
                        sleep_ms(pause);
                        pause = pause < 16 ? pause * 2 : 16;
                }
        }
        out->elapsed_ms = (long)(now_ms() - start);
        if (out->unsignalable) {
                char pids[SWEEP_PIDS_MAX * 12 + 8];
                pids_text(out->unsignalable_pids, out->unsignalable, pids, sizeof(pids));
                return fail(out, -EPERM, "foreign-process",
                            "%u process(es) of another uid cannot be signalled (pids %s)",
                            out->unsignalable, pids);
        }
        return 0;
}

static json_t *pid_array(const pid_t *list, unsigned count)
{
        json_t *a = json_array();
        for (unsigned i = 0; a && i < count && i < SWEEP_PIDS_MAX; i++)
                if (json_array_append_new(a, json_integer(list[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

json_t *sweep_report_json(const sweep_report_t *r)
{
        json_t *o = json_pack("{s:i, s:i, s:i, s:i, s:i, s:s, s:i, s:i}", "killed", (int)r->killed,
                              "rounds", (int)r->rounds, "survivors", (int)r->survivors,
                              "unsignalable", (int)r->unsignalable, "zombies", (int)r->zombies,
                              "pid1", sweep_pid1_name(r->pid1), "yama_scope", r->yama_scope,
                              "elapsed_ms", (int)r->elapsed_ms);
        if (!o)
                return NULL;
        if (r->survivors &&
            json_object_set_new(o, "survivor_pids", pid_array(r->survivor_pids, r->survivors)) < 0)
                goto fail;
        if (r->unsignalable &&
            json_object_set_new(o, "unsignalable_pids",
                                pid_array(r->unsignalable_pids, r->unsignalable)) < 0)
                goto fail;
        if (r->code && r->code[0] &&
            (json_object_set_new(o, "code", json_string(r->code)) < 0 ||
             json_object_set_new(o, "reason", json_string(r->reason)) < 0))
                goto fail;
        return o;
fail:
        json_decref(o);
        return NULL;
}
