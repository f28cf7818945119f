#include "procid.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cleanup.h"
#include "strparse.h"

int procid_parse_stat(const char *text, procstat_t *ret)
{
        /* After the command name: state (3), ppid (4), ... starttime (22). */
        const char *p = strrchr(text, ')');
        if (!p || p[1] != ' ')
                return -EINVAL;
        p += 2;
        char state = *p;
        if (state == '\0' || p[1] != ' ')
                return -EINVAL;
        p += 2;
        int64_t ppid = -1;
        uint64_t start = 0;
        /* Fields 4..22: 19 numbers separated by single spaces. */
        for (int field = 4; field <= 22; field++) {
                size_t n = strcspn(p, " \n");
                char num[24];
                if (n == 0 || n >= sizeof(num))
                        return -EINVAL;
                memcpy(num, p, n);
                num[n] = '\0';
                if (field == 4 && parse_i64(num, &ppid) < 0)
                        return -EINVAL;
                if (field == 22 && parse_u64(num, &start) < 0)
                        return -EINVAL;
                p += n;
                if (field < 22) {
                        if (*p != ' ')
                                return -EINVAL;
                        p++;
                }
        }
        if (ppid < 0 || ppid > INT32_MAX)
                return -EINVAL;
        *ret = (procstat_t){.state = state, .ppid = (pid_t)ppid, .start = start};
        return 0;
}

int procid_parse(const char *s, procid_t *ret)
{
        char pid_s[16], start_s[24];
        size_t n = strcspn(s, " :");
        if (n == 0 || n >= sizeof(pid_s) || (s[n] != ' ' && s[n] != ':'))
                return -EINVAL;
        memcpy(pid_s, s, n);
        pid_s[n] = '\0';
        const char *t = s + n + 1;
        size_t m = strcspn(t, "\n");
        if (m == 0 || m >= sizeof(start_s) || (t[m] == '\n' && t[m + 1] != '\0'))
                return -EINVAL;
        memcpy(start_s, t, m);
        start_s[m] = '\0';
        uint32_t pid;
        uint64_t start;
        if (parse_u32(pid_s, &pid) < 0 || parse_u64(start_s, &start) < 0)
                return -EINVAL;
        /* 0 is no process; 1 is init, never a process of a suite. */
        if (pid <= 1 || pid > INT32_MAX)
                return -EINVAL;
        *ret = (procid_t){.pid = (pid_t)pid, .start = start};
        return 0;
}

void procid_format(const procid_t *id, char *buf)
{
        (void)snprintf(buf, PROCID_LINE_MAX, "%d %" PRIu64, (int)id->pid, id->start);
}

int procid_read_stat(pid_t pid, procstat_t *ret)
{
        char path[32], text[1024];
        (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        /* One read: the kernel writes the line whole (well under 1 KiB). */
        ssize_t n;
        do {
                n = read(fd, text, sizeof(text) - 1);
        } while (n < 0 && errno == EINTR);
        if (n < 0)
                return errno == ESRCH ? -ESRCH : -errno;
        text[n] = '\0';
        return procid_parse_stat(text, ret);
}

bool procid_exited(int pidfd)
{
        struct pollfd p = {.fd = pidfd, .events = POLLIN};
        int r;
        do {
                r = poll(&p, 1, 0);
        } while (r < 0 && errno == EINTR);
        /* An error on the pidfd itself: treat the process as ended, so it is
         * never signalled on a guess. */
        return r != 0;
}

static int pidfd_open_(pid_t pid)
{
        int fd = (int)syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : fd;
}

int procid_learn(pid_t pid, procid_t *ret_id, procstat_t *ret_stat, int *ret_pidfd)
{
        _cleanup_close_ int fd = pidfd_open_(pid);
        if (fd < 0)
                return fd == -ESRCH || fd == -EINVAL ? -ESRCH : fd;
        procstat_t st = {0};
        int r = procid_read_stat(pid, &st);
        if (r < 0)
                return r;
        /* Read while the pidfd's process had not ended: the stat was its. */
        if (procid_exited(fd) || st.state == 'Z' || st.state == 'X')
                return -ESRCH;
        if (ret_id)
                *ret_id = (procid_t){.pid = pid, .start = st.start};
        if (ret_stat)
                *ret_stat = st;
        if (ret_pidfd)
                *ret_pidfd = TAKE_FD(fd);
        return 0;
}

int procid_pin(const procid_t *id, int *ret_pidfd)
{
        procid_t now;
        _cleanup_close_ int fd = -1;
        int r = procid_learn(id->pid, &now, NULL, &fd);
        if (r < 0)
                return r;
        if (now.start != id->start)
                return -ESTALE;
        *ret_pidfd = TAKE_FD(fd);
        return 0;
}

int procid_signal(int pidfd, int sig)
{
        if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0)
                return -errno;
        return 0;
}
