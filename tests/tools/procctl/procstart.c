#include "procstart.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"

static int open_out(const char *path)
{
        if (!path)
                return open("/dev/null", O_WRONLY | O_CLOEXEC);
        return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* In the child: only async-signal-safe calls. Reports errno on the pipe. */
static _Noreturn void child(int report, char *const argv[], int in, int out, int err)
{
        sigset_t none;
        sigemptyset(&none);
        (void)sigprocmask(SIG_SETMASK, &none, NULL);
        for (int s = 1; s < NSIG; s++) {
                if (s != SIGKILL && s != SIGSTOP)
                        (void)signal(s, SIG_DFL);
        }
        int e = 0;
        if (setsid() < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
                e = errno;
        if (e == 0) {
                execvp(argv[0], argv);
                e = errno;
        }
        ssize_t w;
        do {
                w = write(report, &e, sizeof(e));
        } while (w < 0 && errno == EINTR);
        _exit(127);
}

int procstart_detached(char *const argv[], const char *out_path, const char *err_path,
                       procid_t *ret)
{
        if (!argv || !argv[0])
                return -EINVAL;
        _cleanup_close_ int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
        _cleanup_close_ int out = open_out(out_path);
        if (in < 0 || out < 0)
                return -errno;
        _cleanup_close_ int err = -1;
        if (err_path && out_path && strcmp(err_path, out_path) == 0)
                err = fcntl(out, F_DUPFD_CLOEXEC, 3);
        else
                err = open_out(err_path);
        if (err < 0)
                return -errno;
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
                return -errno;
        _cleanup_close_ int rd = p[0];
        _cleanup_close_ int wr = p[1];
        pid_t pid = fork();
        if (pid < 0)
                return -errno;
        if (pid == 0)
                child(wr, argv, in, out, err);
        (void)close(TAKE_FD(wr));
        int e = 0;
        ssize_t n;
        do {
                n = read(rd, &e, sizeof(e));
        } while (n < 0 && errno == EINTR);
        if (n == (ssize_t)sizeof(e)) {
                (void)waitpid(pid, NULL, 0);
                return e > 0 ? -e : -EIO;
        }
        /* Exec'd (the pipe closed on it). The child is unreaped, so its pid
         * cannot be another's: its stat is its own. */
        procstat_t st;
        int r = procid_read_stat(pid, &st);
        if (r < 0)
                return r;
        *ret = (procid_t){.pid = pid, .start = st.start};
        return 0;
}
