#include "reaper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "strparse.h"

#define ADOPTED_ROUNDS 8 /* scans of /proc for the adopted, 20 ms apart */

reaper_who_t reaper_note(pid_t pid, int status, int64_t now, pid_t harness_pid,
                         reaper_end_t *harness, pid_t run_pid, reaper_end_t *run)
{
        reaper_end_t *end = NULL;
        reaper_who_t who = REAPER_ORPHAN;
        if (harness_pid > 0 && pid == harness_pid && !harness->reaped)
                end = harness, who = REAPER_HARNESS;
        else if (run_pid > 0 && pid == run_pid && !run->reaped)
                end = run, who = REAPER_RUN;
        if (end)
                *end = (reaper_end_t){
                    .reaped = true, .status = status, .drain_ms = now + REAPER_DRAIN_GRACE_MS};
        return who;
}

frame_exit_t reaper_exit(int status, bool timed_out)
{
        if (timed_out)
                return (frame_exit_t){.end = FRAME_END_TIMEOUT, .value = 124};
        if (WIFSIGNALED(status))
                return (frame_exit_t){.end = FRAME_END_SIGNALED,
                                      .value = (uint8_t)WTERMSIG(status)};
        return (frame_exit_t){.end = FRAME_END_EXITED, .value = (uint8_t)WEXITSTATUS(status)};
}

int reaper_stat_ppid(const char *stat, pid_t *ret)
{
        /* After comm: " S PPID ...", the state one character. */
        const char *p = strrchr(stat, ')');
        if (!p || p[1] != ' ' || !p[2] || p[3] != ' ')
                return -EINVAL;
        const char *start = p + 4, *end = strchr(start, ' ');
        char num[16];
        if (!end || end == start || (size_t)(end - start) >= sizeof(num))
                return -EINVAL;
        memcpy(num, start, (size_t)(end - start));
        num[end - start] = '\0';
        uint32_t ppid = 0;
        if (parse_u32(num, &ppid) < 0)
                return -EINVAL;
        *ret = (pid_t)ppid;
        return 0;
}

void reaper_kill_adopted(void)
{
        pid_t self = getpid();
        for (int round = 0; round < ADOPTED_ROUNDS; round++) {
                DIR *d = opendir("/proc");
                bool found = false;
                struct dirent *de;
                while (d && (de = readdir(d))) {
                        uint32_t pid = 0;
                        if (parse_u32(de->d_name, &pid) < 0 || (pid_t)pid == self)
                                continue;
                        char path[64], buf[512];
                        snprintf(path, sizeof(path), "/proc/%u/stat", pid);
                        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
                        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
                        if (n <= 0)
                                continue;
                        buf[n] = '\0';
                        pid_t ppid = 0;
                        if (reaper_stat_ppid(buf, &ppid) < 0 || ppid != self)
                                continue;
                        (void)kill((pid_t)pid, SIGKILL);
                        found = true;
                }
                if (d)
                        closedir(d);
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        ;
                if (!found)
                        return;
                (void)poll(NULL, 0, 20);
        }
}
