#include "procfind.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "strparse.h"

/* Command lines and cgroup files longer than this are read only this far:
 * the arguments matched (a state root) come early. */
#define READ_MAX (64 * 1024)

typedef struct {
        procid_t id;
        pid_t ppid;
        bool match;
        bool mine; /* this process or an ancestor: never reported */
} entry_t;

bool procfind_cmdline_has(const char *cmdline, size_t len, const char *const *args, size_t n_args)
{
        size_t i = 0;
        while (i < len) {
                const char *arg = cmdline + i;
                size_t n = strnlen(arg, len - i);
                for (size_t k = 0; k < n_args; k++) {
                        if (strlen(args[k]) == n && memcmp(arg, args[k], n) == 0)
                                return true;
                }
                i += n + 1;
        }
        return false;
}

bool procfind_cgroup_has(const char *text, const char *name)
{
        size_t nl = strlen(name);
        const char *line = text;
        while (line && *line) {
                const char *end = strchr(line, '\n');
                size_t len = end ? (size_t)(end - line) : strlen(line);
                /* The path is after the second ':'. */
                const char *c1 = memchr(line, ':', len);
                const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
                if (c2) {
                        const char *path = c2 + 1;
                        size_t plen = len - (size_t)(path - line);
                        if (plen >= nl + 1 && path[0] == '/' && memcmp(path + 1, name, nl) == 0 &&
                            (plen == nl + 1 || path[nl + 1] == '/'))
                                return true;
                }
                line = end ? end + 1 : NULL;
        }
        return false;
}

uint64_t procfind_ns_inode(const char *link)
{
        const char *open = strchr(link, '[');
        const char *close = open ? strchr(open, ']') : NULL;
        if (!close || close[1] != '\0' || close - open - 1 <= 0 || close - open - 1 >= 24)
                return 0;
        char num[24];
        memcpy(num, open + 1, (size_t)(close - open - 1));
        num[close - open - 1] = '\0';
        uint64_t ino;
        return parse_u64(num, &ino) < 0 ? 0 : ino;
}

/* Up to READ_MAX bytes of /proc/PID/NAME into buf (READ_MAX + 1 bytes),
 * NUL-terminated; the length, or -errno. */
static ssize_t read_proc(pid_t pid, const char *name, char *buf)
{
        char path[64];
        (void)snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t got = 0;
        while (got < READ_MAX) {
                ssize_t n = read(fd, buf + got, READ_MAX - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        buf[got] = '\0';
        return (ssize_t)got;
}

static uint64_t ns_of(pid_t pid, const char *ns)
{
        char path[64], link[64];
        (void)snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
        ssize_t n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0)
                return 0;
        link[n] = '\0';
        return procfind_ns_inode(link);
}

static bool exe_under(pid_t pid, const char *const *paths, size_t n_paths)
{
        char path[64], exe[PATH_MAX];
        (void)snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
        ssize_t n = readlink(path, exe, sizeof(exe) - 1);
        if (n <= 0)
                return false;
        exe[n] = '\0';
        for (size_t i = 0; i < n_paths; i++) {
                size_t l = strlen(paths[i]);
                if (strncmp(exe, paths[i], l) == 0 && (exe[l] == '\0' || exe[l] == '/'))
                        return true;
        }
        return false;
}

/* Whether the pinned process pid matches q's own rules (not descent). */
static bool matches(const procfind_t *q, const procid_t *id, char *buf)
{
        for (size_t i = 0; i < q->n_seeds; i++) {
                if (q->seeds[i].pid == id->pid && q->seeds[i].start == id->start)
                        return true;
        }
        if (q->n_args > 0) {
                ssize_t n = read_proc(id->pid, "cmdline", buf);
                if (n > 0 && procfind_cmdline_has(buf, (size_t)n, q->args, q->n_args))
                        return true;
        }
        if (q->cgroup) {
                if (read_proc(id->pid, "cgroup", buf) > 0 && procfind_cgroup_has(buf, q->cgroup))
                        return true;
        }
        if (q->netns != 0 && ns_of(id->pid, "net") == q->netns) {
                if (q->mntns == 0 && q->n_exe_paths == 0)
                        return true;
                if (q->mntns != 0 && ns_of(id->pid, "mnt") == q->mntns)
                        return true;
                if (exe_under(id->pid, q->exe_paths, q->n_exe_paths))
                        return true;
        }
        return false;
}

static int cmp_entry(const void *a, const void *b)
{
        pid_t x = ((const entry_t *)a)->id.pid, y = ((const entry_t *)b)->id.pid;
        return (x > y) - (x < y);
}

static entry_t *find_entry(entry_t *e, size_t n, pid_t pid)
{
        entry_t key = {.id = {.pid = pid}};
        if (n == 0)
                return NULL;
        return bsearch(&key, e, n, sizeof(*e), cmp_entry);
}

/* Marks this process and its ancestors. */
static void mark_mine(entry_t *e, size_t n)
{
        pid_t pid = getpid();
        for (int depth = 0; pid > 1 && depth < 4096; depth++) {
                entry_t *x = find_entry(e, n, pid);
                if (!x)
                        break;
                x->mine = true;
                pid = x->ppid;
        }
}

/* Adds every descendant of a match, repeated until nothing is added. A child
 * starts after its parent: a parent pid whose process is younger than the
 * child is a newcomer on a reused pid, not its parent. Nothing descends
 * from this process or its ancestors (they are never ours to end). */
static void add_descendants(entry_t *e, size_t n)
{
        bool added = true;
        while (added) {
                added = false;
                for (size_t i = 0; i < n; i++) {
                        if (e[i].match)
                                continue;
                        entry_t *p = find_entry(e, n, e[i].ppid);
                        if (p && p->match && !p->mine && p->id.start <= e[i].id.start) {
                                e[i].match = true;
                                added = true;
                        }
                }
        }
}

int procfind_run(const procfind_t *q, procid_t **ret, size_t *ret_n)
{
        _cleanup_free_ char *buf = calloc(1, READ_MAX + 1);
        _cleanup_free_ entry_t *e = NULL;
        size_t n = 0, cap = 0;
        DIR *d = opendir("/proc");
        if (!buf || !d) {
                int r = buf ? -errno : -ENOMEM;
                if (d)
                        (void)closedir(d);
                return r;
        }
        struct dirent *de;
        int r = 0;
        while ((de = readdir(d))) {
                uint32_t pid;
                if (parse_u32(de->d_name, &pid) < 0 || pid == 0 || pid > INT32_MAX)
                        continue;
                procid_t id;
                procstat_t st;
                _cleanup_close_ int fd = -1;
                if (procid_learn((pid_t)pid, &id, &st, &fd) < 0)
                        continue; /* ended meanwhile */
                bool m = matches(q, &id, buf);
                /* What was read above is the pinned process's only if it still
                 * runs now. */
                if (procid_exited(fd))
                        continue;
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 256;
                        entry_t *ne = realloc(e, ncap * sizeof(*e));
                        if (!ne) {
                                r = -ENOMEM;
                                break;
                        }
                        e = ne;
                        cap = ncap;
                }
                e[n++] = (entry_t){.id = id, .ppid = st.ppid, .match = m};
        }
        (void)closedir(d);
        if (r < 0)
                return r;
        if (n > 0)
                qsort(e, n, sizeof(*e), cmp_entry);
        mark_mine(e, n);
        if (q->descendants)
                add_descendants(e, n);
        procid_t *out = malloc((n ? n : 1) * sizeof(*out));
        if (!out)
                return -ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (e[i].match && !e[i].mine)
                        out[k++] = e[i].id;
        }
        *ret = out;
        *ret_n = k;
        return 0;
}
