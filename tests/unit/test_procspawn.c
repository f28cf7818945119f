/* Unit tests for common/spawn, running /bin/sh -c scripts: the stdio socket
 * pairs (separate, merged, /dev/null; never reopenable through /proc), the working directory, exit
 * statuses, exec failures (127), the process group, group signals reaching grandchildren, the
 * child's clean signal mask and dispositions, closed descriptors and PR_SET_PDEATHSIG. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "conn.h"
#include "procspawn.h"
#include "strparse.h"
#include "unit.h"

/* Reads fd (non-blocking) until EOF, or until stop_at_newline and a '\n'
 * arrived; NUL-terminates buf. Fails the test after 10 s. */
static size_t read_fd(int fd, char *buf, size_t cap, bool stop_at_newline)
{
        size_t len = 0;
        int64_t deadline = conn_now_ms() + 10000;
        for (;;) {
                ck_assert_msg(len < cap - 1, "output over %zu bytes", cap - 1);
                ssize_t n = read(fd, buf + len, cap - 1 - len);
                if (n > 0) {
                        len += (size_t)n;
                        buf[len] = '\0';
                        if (stop_at_newline && memchr(buf, '\n', len))
                                break;
                        continue;
                }
                if (n == 0)
                        break;
                ck_assert_msg(errno == EAGAIN || errno == EINTR, "read: %s", strerror(errno));
                int64_t left = deadline - conn_now_ms();
                ck_assert_msg(left > 0, "no EOF in time (got \"%.*s\")", (int)len, buf);
                struct pollfd p = {.fd = fd, .events = POLLIN};
                (void)poll(&p, 1, (int)left);
        }
        buf[len] = '\0';
        return len;
}

static int wait_status(pid_t pid)
{
        int status = 0;
        pid_t r;
        while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
                ;
        ck_assert_int_eq(r, pid);
        return status;
}

static void close_child(spawn_child_t *c)
{
        if (c->in_fd >= 0)
                close(c->in_fd);
        if (c->out_fd >= 0)
                close(c->out_fd);
        if (c->err_fd >= 0)
                close(c->err_fd);
        c->in_fd = c->out_fd = c->err_fd = -1;
}

/* Starts sh -c script with the given options. */
static spawn_child_t start_sh(const char *script, const char *cwd, bool merge, bool null_in)
{
        char *argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)script, NULL};
        spawn_opts_t o = {.argv = argv, .cwd = cwd, .merge_stderr = merge, .stdin_null = null_in};
        spawn_child_t c;
        memset(&c, 0x5a, sizeof(c));
        hg_error_t err = {0};
        int r = spawn_start(&o, &c, &err);
        ck_assert_msg(r == 0, "spawn_start: %d (%s)", r, err.message);
        ck_assert_int_gt(c.pid, 0);
        return c;
}

/* Runs script to the end; its stdout (stderr merged if asked) into out. */
static int run_sh(const char *script, char *out, size_t cap)
{
        spawn_child_t c = start_sh(script, NULL, true, true);
        read_fd(c.out_fd, out, cap, false);
        close_child(&c);
        return wait_status(c.pid);
}

static void assert_fd_flags(int fd)
{
        ck_assert_int_ge(fd, 0);
        ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        ck_assert(fcntl(fd, F_GETFL) & O_NONBLOCK);
}

START_TEST(stdout_and_stderr_pipes)
{
        spawn_child_t c =
            start_sh("read line; echo \"out:$line\"; echo err >&2; exit 3", NULL, false, false);
        assert_fd_flags(c.in_fd);
        assert_fd_flags(c.out_fd);
        assert_fd_flags(c.err_fd);
        ck_assert_int_eq(write(c.in_fd, "ping\n", 5), 5);
        close(c.in_fd);
        c.in_fd = -1;
        char out[256], errbuf[256];
        read_fd(c.out_fd, out, sizeof(out), false);
        read_fd(c.err_fd, errbuf, sizeof(errbuf), false);
        ck_assert_str_eq(out, "out:ping\n");
        ck_assert_str_eq(errbuf, "err\n");
        close_child(&c);
        int st = wait_status(c.pid);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 3);
}
END_TEST

/* The child's stdio are sockets: no other process can reopen them through
 * /proc/PID/fd/N (ENXIO), so nothing of the same uid writes into the
 * harness's stdin (a forged approval_response) or reads its stdout. */
START_TEST(stdio_cannot_be_reopened)
{
        spawn_child_t c = start_sh("echo ready; read l; echo \"got $l\"", NULL, false, false);
        char out[64];
        read_fd(c.out_fd, out, sizeof(out), true); /* its stdio are in place */
        char path[64];
        const struct {
                int fd, flags;
        } tries[] = {{0, O_WRONLY}, {0, O_RDONLY}, {1, O_RDONLY}, {1, O_WRONLY}, {2, O_RDONLY}};
        for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++) {
                (void)snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)c.pid, tries[i].fd);
                int fd = open(path, tries[i].flags | O_CLOEXEC | O_NONBLOCK);
                ck_assert_msg(fd < 0, "%s reopened (flags %d)", path, tries[i].flags);
                ck_assert_msg(errno == ENXIO, "%s: %s, want ENXIO", path, strerror(errno));
        }
        /* Our own ends carry one direction only. */
        char b;
        ck_assert_int_eq(read(c.in_fd, &b, 1), 0); /* shut for reading: EOF at once */
        ck_assert_int_eq(write(c.in_fd, "in\n", 3), 3);
        read_fd(c.out_fd, out, sizeof(out), true);
        ck_assert_str_eq(out, "got in\n");
        close_child(&c);
        ck_assert_int_eq(wait_status(c.pid), 0);
}
END_TEST

START_TEST(stdin_eof_when_closed)
{
        spawn_child_t c = start_sh("cat; echo done", NULL, false, false);
        ck_assert_int_eq(write(c.in_fd, "abc", 3), 3);
        close(c.in_fd);
        c.in_fd = -1;
        char out[256];
        read_fd(c.out_fd, out, sizeof(out), false);
        ck_assert_str_eq(out, "abcdone\n");
        close_child(&c);
        ck_assert_int_eq(wait_status(c.pid), 0);
}
END_TEST

START_TEST(merge_stderr)
{
        spawn_child_t c = start_sh("echo a; echo b >&2; echo c", NULL, true, false);
        ck_assert_int_eq(c.err_fd, -1);
        ck_assert_int_ge(c.in_fd, 0);
        char out[256];
        read_fd(c.out_fd, out, sizeof(out), false);
        ck_assert_str_eq(out, "a\nb\nc\n");
        close_child(&c);
        ck_assert_int_eq(wait_status(c.pid), 0);
}
END_TEST

START_TEST(stdin_null)
{
        spawn_child_t c = start_sh("cat; echo end; ls -l /proc/self/fd/0 >&2", NULL, false, true);
        ck_assert_int_eq(c.in_fd, -1);
        char out[256], errbuf[512];
        read_fd(c.out_fd, out, sizeof(out), false);
        read_fd(c.err_fd, errbuf, sizeof(errbuf), false);
        ck_assert_str_eq(out, "end\n");
        ck_assert_msg(strstr(errbuf, "/dev/null"), "stdin is: %s", errbuf);
        close_child(&c);
        ck_assert_int_eq(wait_status(c.pid), 0);
}
END_TEST

START_TEST(working_directory)
{
        char dir[4096];
        unit_mkdtemp(dir, sizeof(dir));
        char real[PATH_MAX];
        ck_assert_ptr_nonnull(realpath(dir, real));
        spawn_child_t c = start_sh("pwd -P", dir, true, true);
        char out[PATH_MAX + 2];
        read_fd(c.out_fd, out, sizeof(out), false);
        close_child(&c);
        ck_assert_int_eq(wait_status(c.pid), 0);
        char want[PATH_MAX + 2];
        (void)snprintf(want, sizeof(want), "%s\n", real);
        ck_assert_str_eq(out, want);

        /* NULL: the parent's own directory. */
        char here[PATH_MAX];
        ck_assert_ptr_nonnull(getcwd(here, sizeof(here)));
        ck_assert_ptr_nonnull(realpath(here, real));
        c = start_sh("pwd -P", NULL, true, true);
        read_fd(c.out_fd, out, sizeof(out), false);
        close_child(&c);
        ck_assert_int_eq(wait_status(c.pid), 0);
        (void)snprintf(want, sizeof(want), "%s\n", real);
        ck_assert_str_eq(out, want);
        unit_rmtree(dir);
}
END_TEST

START_TEST(bad_cwd_exits_127)
{
        spawn_child_t c = start_sh("echo ran", "/nonexistent/hangar-unit-dir", false, true);
        char out[256], errbuf[256];
        read_fd(c.out_fd, out, sizeof(out), false);
        read_fd(c.err_fd, errbuf, sizeof(errbuf), false);
        ck_assert_str_eq(out, "");
        ck_assert_msg(strstr(errbuf, "cannot enter"), "stderr: %s", errbuf);
        close_child(&c);
        int st = wait_status(c.pid);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 127);
}
END_TEST

START_TEST(exit_statuses)
{
        char out[64];
        static const int codes[] = {0, 1, 2, 42, 126, 255};
        for (size_t i = 0; i < ARRAY_SIZE(codes); i++) {
                char script[32];
                (void)snprintf(script, sizeof(script), "exit %d", codes[i]);
                int st = run_sh(script, out, sizeof(out));
                ck_assert(WIFEXITED(st));
                ck_assert_int_eq(WEXITSTATUS(st), codes[i]);
        }
        int st = run_sh("kill -TERM $$; sleep 5", out, sizeof(out));
        ck_assert(WIFSIGNALED(st));
        ck_assert_int_eq(WTERMSIG(st), SIGTERM);
}
END_TEST

START_TEST(exec_failure_exits_127)
{
        char *argv[] = {(char *)"/nonexistent/hangar-no-such-program", NULL};
        spawn_opts_t o = {.argv = argv};
        spawn_child_t c;
        hg_error_t err = {0};
        ck_assert_int_eq(spawn_start(&o, &c, &err), 0);
        char out[256], errbuf[256];
        read_fd(c.out_fd, out, sizeof(out), false);
        read_fd(c.err_fd, errbuf, sizeof(errbuf), false);
        ck_assert_str_eq(out, "");
        ck_assert_msg(strstr(errbuf, "cannot execute"), "stderr: %s", errbuf);
        close_child(&c);
        int st = wait_status(c.pid);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 127);

        /* A bare name is looked up on PATH, and a missing one fails the same way. */
        char *argv2[] = {(char *)"hangar-no-such-program-on-path", NULL};
        o.argv = argv2;
        o.merge_stderr = true;
        ck_assert_int_eq(spawn_start(&o, &c, &err), 0);
        read_fd(c.out_fd, out, sizeof(out), false);
        ck_assert_msg(strstr(out, "cannot execute"), "output: %s", out);
        close_child(&c);
        st = wait_status(c.pid);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), 127);
        char *argv3[] = {(char *)"true", NULL};
        o.argv = argv3;
        ck_assert_int_eq(spawn_start(&o, &c, &err), 0);
        close_child(&c);
        ck_assert_int_eq(wait_status(c.pid), 0);
}
END_TEST

START_TEST(no_command)
{
        spawn_child_t c;
        memset(&c, 0x5a, sizeof(c));
        spawn_child_t before = c;
        hg_error_t err = {0};
        spawn_opts_t o = {.argv = NULL};
        ck_assert_int_eq(spawn_start(&o, &c, &err), -EINVAL);
        ck_assert(err.message[0] != '\0');
        char *empty[] = {NULL};
        o.argv = empty;
        ck_assert_int_eq(spawn_start(&o, &c, NULL), -EINVAL);
        char *blank[] = {(char *)"", NULL};
        o.argv = blank;
        ck_assert_int_eq(spawn_start(&o, &c, NULL), -EINVAL);
        ck_assert_int_eq(memcmp(&c, &before, sizeof(c)), 0);
}
END_TEST

START_TEST(own_process_group)
{
        spawn_child_t c = start_sh("read x || true", NULL, true, false);
        ck_assert_int_eq(getpgid(c.pid), c.pid);
        ck_assert_int_ne(getpgid(c.pid), getpgrp());
        close_child(&c); /* EOF on its stdin ends it */
        ck_assert_int_eq(wait_status(c.pid), 0);
}
END_TEST

START_TEST(signal_group_reaches_grandchild)
{
        /* This test process becomes a subreaper, so the grandchild, orphaned
         * when its parent dies, is ours to wait for. */
        ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        /* The shell starts a background sleep, prints its pid, and becomes a
         * second sleep (which never reaps the first). */
        spawn_child_t c = start_sh("sleep 300 & echo $!; exec sleep 300", NULL, true, true);
        char line[64];
        read_fd(c.out_fd, line, sizeof(line), true);
        char *nl = strchr(line, '\n');
        ck_assert_msg(nl, "no line: %s", line);
        *nl = '\0';
        uint32_t g = 0;
        ck_assert_msg(parse_u32(line, &g) == 0 && g > 0, "not a pid: %s", line);
        pid_t grandchild = (pid_t)g;
        ck_assert_int_eq(getpgid(grandchild), c.pid);

        ck_assert_int_eq(spawn_signal_group(c.pid, SIGTERM), 0);
        int st = wait_status(c.pid);
        ck_assert(WIFSIGNALED(st));
        ck_assert_int_eq(WTERMSIG(st), SIGTERM);
        st = wait_status(grandchild);
        ck_assert(WIFSIGNALED(st));
        ck_assert_int_eq(WTERMSIG(st), SIGTERM);
        close_child(&c);

        /* The group is gone: ESRCH counts as done. */
        ck_assert_int_eq(spawn_signal_group(c.pid, SIGKILL), 0);
        ck_assert_int_eq(spawn_signal_group(0, SIGKILL), -EINVAL);
        ck_assert_int_eq(spawn_signal_group(-1, SIGKILL), -EINVAL);
}
END_TEST

START_TEST(signal_mask_is_empty)
{
        /* The parent blocks SIGTERM (as the driver does for its signalfd) and
         * ignores SIGPIPE and SIGUSR1; none of that reaches the command. */
        sigset_t block, old;
        sigemptyset(&block);
        sigaddset(&block, SIGTERM);
        sigaddset(&block, SIGCHLD);
        ck_assert_int_eq(sigprocmask(SIG_BLOCK, &block, &old), 0);
        signal(SIGPIPE, SIG_IGN);
        signal(SIGUSR1, SIG_IGN);
        char out[256];
        int st = run_sh("grep -E '^Sig(Blk|Ign):' /proc/self/status", out, sizeof(out));
        ck_assert_int_eq(st, 0);
        ck_assert_msg(strstr(out, "SigBlk:\t0000000000000000\n"), "child: %s", out);
        ck_assert_msg(strstr(out, "SigIgn:\t0000000000000000\n"), "child: %s", out);
        /* The parent's own mask is as it was. */
        sigset_t now;
        ck_assert_int_eq(sigprocmask(SIG_BLOCK, NULL, &now), 0);
        ck_assert(sigismember(&now, SIGTERM));
        ck_assert(sigismember(&now, SIGCHLD));
        ck_assert(!sigismember(&now, SIGUSR2));
}
END_TEST

START_TEST(other_descriptors_closed)
{
        /* A descriptor the parent leaks without CLOEXEC does not reach the command. */
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        ck_assert_int_eq(fcntl(p[0], F_SETFD, 0), 0);
        char script[128];
        (void)snprintf(script, sizeof(script),
                       "if [ -e /proc/self/fd/%d ]; then echo leaked; else echo closed; fi", p[0]);
        char out[64];
        ck_assert_int_eq(run_sh(script, out, sizeof(out)), 0);
        ck_assert_str_eq(out, "closed\n");
        close(p[0]);
        close(p[1]);
}
END_TEST

/* Regression test (this was a bug, now fixed): with the parent's stdin and
 * stdout closed, the new socket pairs (laid out as pipes) take fds 0 and 1, so the child's stdin
 * pipe is already fd 0 (or, with stdin_null, its stdout pipe is already fd 1); dup2 onto the same
 * number keeps FD_CLOEXEC, and exec closed it. */
START_TEST(parent_without_stdio)
{
        for (int round = 0; round < 2; round++) {
                bool null_in = round == 1;
                close(0);
                close(1);
                char *argv[] = {(char *)"/bin/sh", (char *)"-c",
                                (char *)"read x; echo \"out:$x\"; echo err >&2", NULL};
                spawn_opts_t o = {.argv = argv, .stdin_null = null_in};
                spawn_child_t c;
                hg_error_t err = {0};
                ck_assert_msg(spawn_start(&o, &c, &err) == 0, "%s", err.message);
                if (null_in)
                        ck_assert_int_eq(c.out_fd, 0); /* its write end was fd 1 */
                else
                        ck_assert_int_eq(c.in_fd, 1); /* its read end was fd 0 */
                if (c.in_fd >= 0) {
                        ck_assert_int_eq(write(c.in_fd, "ping\n", 5), 5);
                        close(c.in_fd);
                        c.in_fd = -1;
                }
                char out[256], errbuf[256];
                read_fd(c.out_fd, out, sizeof(out), false);
                read_fd(c.err_fd, errbuf, sizeof(errbuf), false);
                ck_assert_str_eq(out, null_in ? "out:\n" : "out:ping\n");
                ck_assert_str_eq(errbuf, "err\n");
                close_child(&c);
                ck_assert_int_eq(wait_status(c.pid), 0);
        }
}
END_TEST

START_TEST(dies_with_parent)
{
        /* An intermediate process spawns a long sleep and exits; PDEATHSIG
         * kills the sleep. This process is a subreaper, so it can check. */
        ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid_t mid = fork();
        ck_assert_int_ge(mid, 0);
        if (mid == 0) {
                char *argv[] = {(char *)"sleep", (char *)"300", NULL};
                spawn_opts_t o = {.argv = argv, .merge_stderr = true, .stdin_null = true};
                spawn_child_t c;
                pid_t pid = spawn_start(&o, &c, NULL) == 0 ? c.pid : -1;
                (void)!write(p[1], &pid, sizeof(pid));
                usleep(200000); /* let the sleep start, so PDEATHSIG is what ends it */
                _exit(0);
        }
        close(p[1]);
        pid_t pid = -1;
        ck_assert_int_eq(read(p[0], &pid, sizeof(pid)), (ssize_t)sizeof(pid));
        close(p[0]);
        ck_assert_int_gt(pid, 0);
        ck_assert_int_eq(wait_status(mid), 0);
        /* SIGKILL from PDEATHSIG, or 127 if the parent was gone before it
         * was armed (the child checks getppid() right after). */
        int st = wait_status(pid);
        ck_assert_msg((WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) ||
                          (WIFEXITED(st) && WEXITSTATUS(st) == 127),
                      "status %#x", st);
}
END_TEST

static Suite *spawn_suite(void)
{
        Suite *s = suite_create("spawn");
        TCase *tc = tcase_create("spawn");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, stdout_and_stderr_pipes);
        tcase_add_test(tc, stdin_eof_when_closed);
        tcase_add_test(tc, stdio_cannot_be_reopened);
        tcase_add_test(tc, merge_stderr);
        tcase_add_test(tc, stdin_null);
        tcase_add_test(tc, working_directory);
        tcase_add_test(tc, bad_cwd_exits_127);
        tcase_add_test(tc, exit_statuses);
        tcase_add_test(tc, exec_failure_exits_127);
        tcase_add_test(tc, no_command);
        tcase_add_test(tc, own_process_group);
        tcase_add_test(tc, signal_group_reaches_grandchild);
        tcase_add_test(tc, signal_mask_is_empty);
        tcase_add_test(tc, other_descriptors_closed);
        tcase_add_test(tc, parent_without_stdio);
        tcase_add_test(tc, dies_with_parent);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(spawn_suite());
}
