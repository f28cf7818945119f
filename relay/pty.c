#include "pty.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "childreset.h"
#include "cleanup.h"

extern char **environ;

static int set_nonblock(int fd)
{
        int flags = fcntl(fd, F_GETFL);
        return flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ? -errno : 0;
}

/* The harness's environment: the relay's, with TERM and HANGAR_APPROVAL_FD
 * set and LINES/COLUMNS removed (they would pin curses to the first size,
 * and a resize must reach it through the terminal). Built before fork. */
static char **child_env(const char *term)
{
        size_t n = 0;
        for (char **e = environ; e && *e; e++)
                n++;
        char **env = calloc(n + 3, sizeof(*env));
        if (!env)
                return NULL;
        size_t k = 0;
        for (char **e = environ; e && *e; e++) {
                if (strncmp(*e, "TERM=", 5) == 0 || strncmp(*e, "LINES=", 6) == 0 ||
                    strncmp(*e, "COLUMNS=", 8) == 0 || strncmp(*e, "HANGAR_APPROVAL_FD=", 19) == 0)
                        continue;
                env[k++] = *e;
        }
        static char term_var[5 + PTY_TERM_MAX + 1];
        (void)snprintf(term_var, sizeof(term_var), "TERM=%s", term);
        env[k++] = term_var;
        env[k++] = "HANGAR_APPROVAL_FD=3";
        env[k] = NULL;
        return env;
}

/* Async-signal-safe only from here on. */
static _Noreturn void child_exec(const pty_opts_t *o, pid_t parent, int slave, int side, char **env)
{
        (void)setsid();      /* its own session and process group: pid == pgid == sid */
        child_reset(parent); /* (its setpgid fails harmlessly: already a group leader) */
        /* The slave becomes the session's controlling terminal. */
        if (ioctl(slave, TIOCSCTTY, 0) < 0)
                _exit(127);
        if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
                _exit(127);
        if (side == PTY_APPROVAL_FD) {
                if (fcntl(side, F_SETFD, 0) < 0)
                        _exit(127);
        } else if (dup2(side, PTY_APPROVAL_FD) < 0) {
                _exit(127);
        }
        if (close_range(PTY_APPROVAL_FD + 1, ~0u, 0) < 0) {
                long max = sysconf(_SC_OPEN_MAX);
                for (long fd = PTY_APPROVAL_FD + 1; fd < (max > 0 && max < 65536 ? max : 65536);
                     fd++)
                        (void)close((int)fd);
        }
        if (o->cwd && chdir(o->cwd) < 0) {
                static const char msg[] = "hangar: cannot enter the turn's directory\r\n";
                (void)!write(2, msg, sizeof(msg) - 1);
                _exit(127);
        }
        execvpe(o->argv[0], o->argv, env);
        static const char msg[] = "hangar: cannot execute the command\r\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(127);
}

/* Whether this kernel's line discipline signals the foreground process
 * group on the interrupt character: a pty of the relay's own, a child in
 * its own session with it as its terminal and SIGINT blocked, a ^C into
 * the master, and did the child get SIGINT within a second. Linux does;
 * gVisor (runsc 2022) echoes the ^C and signals no one. */
static bool isig_works(void)
{
        bool works = true; /* if the probe cannot run, trust the kernel */
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC), s = -1, p[2] = {-1, -1};
        char name[128];
        if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) ||
            (s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0 || pipe2(p, O_CLOEXEC) < 0)
                goto out;
        pid_t parent;
        pid_t pid = fork_blocked(&parent);
        if (pid == 0) {
                /* Every signal stays blocked: SIGINT waits for sigtimedwait. */
                sigset_t intr;
                sigemptyset(&intr);
                sigaddset(&intr, SIGINT);
                struct timespec ts = {.tv_sec = 1};
                if (setsid() < 0 || ioctl(s, TIOCSCTTY, 0) < 0)
                        _exit(2);
                (void)!write(p[1], "r", 1);
                _exit(sigtimedwait(&intr, NULL, &ts) == SIGINT ? 0 : 1);
        }
        if (pid < 0)
                goto out;
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        char c;
        if (poll(&pf, 1, 2000) == 1 && read(p[0], &c, 1) == 1)
                (void)!write(m, "\x03", 1);
        int st = 0;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
        works = !(WIFEXITED(st) && WEXITSTATUS(st) == 1);
out:
        if (m >= 0)
                (void)close(m);
        if (s >= 0)
                (void)close(s);
        if (p[0] >= 0)
                (void)close(p[0]);
        if (p[1] >= 0)
                (void)close(p[1]);
        return works;
}

void pty_input_signals(int master, pid_t leader, unsigned char *buf, size_t *len)
{
        struct termios tio;
        if (tcgetattr(master, &tio) < 0 || !(tio.c_lflag & ISIG))
                return; /* raw mode (a full-screen program): the bytes are keys */
        size_t out = 0;
        for (size_t i = 0; i < *len; i++) {
                unsigned char b = buf[i];
                int sig = 0;
                if (b != _POSIX_VDISABLE && b == tio.c_cc[VINTR])
                        sig = SIGINT;
                else if (b != _POSIX_VDISABLE && b == tio.c_cc[VQUIT])
                        sig = SIGQUIT;
                else if (b != _POSIX_VDISABLE && b == tio.c_cc[VSUSP])
                        sig = SIGTSTP;
                if (sig)
                        (void)pty_signal_foreground(master, leader, sig);
                else
                        buf[out++] = b;
        }
        *len = out;
}

int pty_start(const pty_opts_t *o, pty_child_t *ret, hg_error_t *err)
{
        if (!o->argv || !o->argv[0] || !o->argv[0][0])
                return error_set(err, -EINVAL, "no command to run");
        if (!frame_term_name_ok(o->term))
                return error_set(err, -EINVAL, "the terminal's TERM is not allowed");
        _cleanup_close_ int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
                return error_set(err, -errno, "posix_openpt: %s", strerror(errno));
        char name[128];
        if (grantpt(master) < 0 || unlockpt(master) < 0 || ptsname_r(master, name, sizeof(name)))
                return error_set(err, -errno, "pty: %s", strerror(errno));
        /* The slave is opened here, before fork, and held by the child from
         * the start: the master never sees a moment with no slave open (it
         * would read EIO, as at the end). */
        _cleanup_close_ int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (slave < 0)
                return error_set(err, -errno, "%s: %s", name, strerror(errno));
        struct winsize ws = {.ws_row = (unsigned short)o->rows, .ws_col = (unsigned short)o->cols};
        if (ioctl(master, TIOCSWINSZ, &ws) < 0)
                return error_set(err, -errno, "TIOCSWINSZ: %s", strerror(errno));
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
                return error_set(err, -errno, "socketpair: %s", strerror(errno));
        _cleanup_close_ int side = sv[0], child_side = sv[1];
        _cleanup_free_ char **env = child_env(o->term);
        if (!env)
                return error_set(err, -ENOMEM, "out of memory");

        pid_t parent;
        pid_t pid = fork_blocked(&parent);
        if (pid == 0)
                child_exec(o, parent, slave, child_side, env);
        if (pid < 0)
                return error_set(err, -errno, "fork: %s", strerror(errno));
        if (set_nonblock(master) < 0 || set_nonblock(side) < 0) {
                (void)kill(pid, SIGKILL);
                return error_set(err, -EIO, "cannot make the terminal non-blocking");
        }
        *ret = (pty_child_t){.pid = pid,
                             .master = TAKE_FD(master),
                             .side = TAKE_FD(side),
                             .isig_emulated = !isig_works()};
        return 0;
}

int pty_signal_foreground(int master, pid_t leader, int sig)
{
        pid_t fg = tcgetpgrp(master);
        if (fg <= 0)
                fg = leader;
        if (fg <= 0)
                return -EINVAL;
        if (kill(-fg, sig) == 0 || errno == ESRCH)
                return 0;
        return -errno;
}

int pty_resize(int master, pid_t leader, unsigned rows, unsigned cols)
{
        struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
        if (ioctl(master, TIOCSWINSZ, &ws) < 0)
                return -errno;
        return pty_signal_foreground(master, leader, SIGWINCH);
}
