#include "procspawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "childreset.h"
#include "cleanup.h"

/* In the child: every descriptor above stderr goes. close_range where the
 * kernel (or gVisor) has it, else one by one up to the limit. Our own fds
 * are CLOEXEC already; this catches whatever a library leaked. */
static void close_from_3(void)
{
        if (close_range(3, ~0u, 0) == 0)
                return;
        long max = sysconf(_SC_OPEN_MAX);
        for (long fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
                (void)close((int)fd);
}

/* dup2 onto a stdio number. A socket end already there (the parent ran with
 * that fd closed) only loses FD_CLOEXEC: dup2 onto itself would keep the
 * flag, and exec would close the child's stdin or stdout. */
static int move_fd(int fd, int target)
{
        if (fd == target)
                return fcntl(fd, F_SETFD, 0);
        return dup2(fd, target);
}

/* Async-signal-safe only from here on: no malloc, no stdio. */
static _Noreturn void child_exec(const spawn_opts_t *o, pid_t parent, int in_r, int out_w,
                                 int err_w)
{
        child_reset(parent);
        if (in_r < 0)
                in_r = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (in_r < 0 || move_fd(in_r, 0) < 0 || move_fd(out_w, 1) < 0 || move_fd(err_w, 2) < 0)
                _exit(127);
        close_from_3();
        if (o->cwd && chdir(o->cwd) < 0) {
                static const char msg[] = "hangar: cannot enter the turn's directory\n";
                (void)!write(2, msg, sizeof(msg) - 1);
                _exit(127);
        }
        execvp(o->argv[0], o->argv);
        static const char msg[] = "hangar: cannot execute the command\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(127);
}

static int set_nonblock(int fd)
{
        int flags = fcntl(fd, F_GETFL);
        return flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ? -errno : 0;
}

/* One direction of the child's stdio: a connected AF_UNIX stream pair, not
 * a pipe. /proc/PID/fd/N of a socket cannot be opened (ENXIO), so no other
 * process of the same uid can reopen the child's stdin to write into it or
 * its stdout to read from it; a pipe (or a FIFO) reopens through /proc.
 * Laid out as pipe2's: ret[0] only reads, ret[1] only writes (the other
 * direction of each is shut down). */
static int stdio_pair(int ret[2])
{
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return -errno;
        if (shutdown(sv[0], SHUT_WR) < 0 || shutdown(sv[1], SHUT_RD) < 0) {
                int e = -errno;
                (void)close(sv[0]);
                (void)close(sv[1]);
                return e;
        }
        ret[0] = sv[0];
        ret[1] = sv[1];
        return 0;
}

int spawn_start(const spawn_opts_t *o, spawn_child_t *ret, hg_error_t *err)
{
        if (!o->argv || !o->argv[0] || !o->argv[0][0])
                return error_set(err, -EINVAL, "no command to run");
        int in_p[2] = {-1, -1}, out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
        _cleanup_close_ int in_r = -1, in_w = -1, out_r = -1, out_w = -1, err_r = -1, err_w = -1;
        int r;
        if (!o->stdin_null) {
                if ((r = stdio_pair(in_p)) < 0)
                        return error_set(err, r, "socketpair: %s", strerror(-r));
                in_r = in_p[0], in_w = in_p[1];
        }
        if ((r = stdio_pair(out_p)) < 0)
                return error_set(err, r, "socketpair: %s", strerror(-r));
        out_r = out_p[0], out_w = out_p[1];
        if (!o->merge_stderr) {
                if ((r = stdio_pair(err_p)) < 0)
                        return error_set(err, r, "socketpair: %s", strerror(-r));
                err_r = err_p[0], err_w = err_p[1];
        }
        pid_t parent;
        pid_t pid = fork_blocked(&parent);
        if (pid == 0)
                child_exec(o, parent, in_r, out_w, o->merge_stderr ? out_w : err_w);
        if (pid < 0)
                return error_set(err, -errno, "fork: %s", strerror(errno));
        /* Also from the parent, so a signal sent before the child ran setpgid
         * still reaches the group. EACCES: it has exec'd already, fine. */
        (void)setpgid(pid, pid);
        if ((in_w >= 0 && set_nonblock(in_w) < 0) || set_nonblock(out_r) < 0 ||
            (err_r >= 0 && set_nonblock(err_r) < 0)) {
                /* Cannot happen on a fresh socket; the child still must not run on. */
                (void)kill(-pid, SIGKILL);
                return error_set(err, -EIO, "cannot make the child's stdio non-blocking");
        }
        *ret = (spawn_child_t){
            .pid = pid, .in_fd = TAKE_FD(in_w), .out_fd = TAKE_FD(out_r), .err_fd = TAKE_FD(err_r)};
        return 0;
}

int spawn_signal_group(pid_t pid, int sig)
{
        if (pid <= 0)
                return -EINVAL;
        if (kill(-pid, sig) == 0 || errno == ESRCH)
                return 0;
        return -errno;
}
