/* Unit tests for hangar-procctl's modules (tests/tools/procctl): the
 * /proc/PID/stat and record parsers, pinning a process by pid and start time
 * (a record whose start time is not the running process's is refused and
 * nothing is signalled), the stop (TERM, the grace, KILL), the wait, the
 * /proc scan and the detached start, against real child processes. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "procfind.h"
#include "procid.h"
#include "procstart.h"
#include "procstop.h"
#include "unit.h"

/* A child running /bin/sh -c script (argv[0] name); it has set its
 * dispositions once the parent returns (it writes a byte when ready). */
static pid_t child_sh(const char *script, const char *name)
{
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid_t pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                /* The script writes to fd 3 when it is ready. */
                if (dup2(p[1], 3) < 0)
                        _exit(126);
                execl("/bin/sh", "sh", "-c", script, name, (char *)NULL);
                _exit(127);
        }
        (void)close(p[1]);
        char c;
        ssize_t n;
        do {
                n = read(p[0], &c, 1);
        } while (n < 0 && errno == EINTR);
        (void)close(p[0]);
        ck_assert_msg(n == 1, "the child never said it was ready");
        return pid;
}

static int reap(pid_t pid)
{
        int status = 0;
        pid_t r;
        while ((r = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
                ;
        ck_assert_int_eq(r, pid);
        return status;
}

static bool still_running(pid_t pid)
{
        int status;
        return waitpid(pid, &status, WNOHANG) == 0;
}

START_TEST(stat_fields)
{
        procstat_t st;
        const char *plain =
            "1234 (sleep) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 "
            "4717753 2000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0\n";
        ck_assert_int_eq(procid_parse_stat(plain, &st), 0);
        ck_assert_int_eq(st.state, 'S');
        ck_assert_int_eq(st.ppid, 1);
        ck_assert_uint_eq(st.start, 4717753);
        /* A command name with spaces and parentheses: fields from its end. */
        const char *odd = "77 (a) Z 9 (b c) R 42 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 99 0 0\n";
        ck_assert_int_eq(procid_parse_stat(odd, &st), 0);
        ck_assert_int_eq(st.state, 'R');
        ck_assert_int_eq(st.ppid, 42);
        ck_assert_uint_eq(st.start, 99);
}
END_TEST

START_TEST(stat_malformed)
{
        procstat_t st = {.start = 5};
        ck_assert_int_eq(procid_parse_stat("", &st), -EINVAL);
        ck_assert_int_eq(procid_parse_stat("12 (x)", &st), -EINVAL);
        ck_assert_int_eq(procid_parse_stat("12 (x) S 1 2 3", &st), -EINVAL);
        ck_assert_int_eq(
            procid_parse_stat("12 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9x 0", &st), -EINVAL);
        ck_assert_int_eq(
            procid_parse_stat("12 (x) S -1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0", &st), -EINVAL);
        ck_assert_uint_eq(st.start, 5); /* untouched on failure */
}
END_TEST

START_TEST(record_forms)
{
        procid_t id;
        ck_assert_int_eq(procid_parse("1234 5678", &id), 0);
        ck_assert_int_eq(id.pid, 1234);
        ck_assert_uint_eq(id.start, 5678);
        ck_assert_int_eq(procid_parse("1234:5678\n", &id), 0);
        ck_assert_uint_eq(id.start, 5678);
        char line[PROCID_LINE_MAX];
        procid_format(&(procid_t){.pid = 42, .start = 18446744073709551615ULL}, line);
        ck_assert_str_eq(line, "42 18446744073709551615");
        ck_assert_int_eq(procid_parse(line, &id), 0);
        ck_assert_uint_eq(id.start, 18446744073709551615ULL);
}
END_TEST

START_TEST(record_refused)
{
        static const char *bad[] = {
            "",          "1234", "1234 ", " 1234 5", "1234 5 6",      "1234 5x",
            "1234 5\nx", "0 5",  "1 5",   "-3 4",    "99999999999 5", "12 99999999999999999999",
            "12\t5",     "12:"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                procid_t id;
                ck_assert_msg(procid_parse(bad[i], &id) == -EINVAL, "accepted \"%s\"", bad[i]);
        }
}
END_TEST

START_TEST(learn_self)
{
        procid_t id;
        procstat_t st, again;
        _cleanup_close_ int fd = -1;
        ck_assert_int_eq(procid_learn(getpid(), &id, &st, &fd), 0);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(id.pid, getpid());
        ck_assert_int_eq(st.ppid, getppid());
        ck_assert_int_eq(procid_read_stat(getpid(), &again), 0);
        ck_assert_uint_eq(id.start, again.start);
        ck_assert(!procid_exited(fd));
}
END_TEST

/* The case the tool exists for: a record whose start time is not that of the
 * process now at its pid (as after a reuse) is refused and nothing is sent. */
START_TEST(wrong_start_refused)
{
        pid_t pid = child_sh("echo >&3; exec sleep 30", "sleeper");
        procid_t id;
        ck_assert_int_eq(procid_learn(pid, &id, NULL, NULL), 0);
        procid_t other = {.pid = pid, .start = id.start + 1};
        int fd = -1;
        ck_assert_int_eq(procid_pin(&other, &fd), -ESTALE);
        ck_assert_int_eq(fd, -1);
        /* The stop refuses it too: counted, not signalled, the child runs on. */
        procpin_t pin = {.id = other};
        ck_assert_uint_eq(procstop_pin("test", &pin, 1), 1);
        ck_assert(pin.ended);
        ck_assert_uint_eq(procstop_run("test", &pin, 1, true, 100, 100), 0);
        ck_assert(still_running(pid));
        /* The right record reaches it. */
        ck_assert_int_eq(procid_pin(&id, &fd), 0);
        ck_assert_int_eq(procid_signal(fd, SIGKILL), 0);
        (void)close(fd);
        int status = reap(pid);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}
END_TEST

START_TEST(ended_is_gone)
{
        pid_t pid = child_sh("echo >&3; exit 0", "quick");
        procid_t id = {.pid = pid};
        procstat_t st;
        /* Read while a child still unreaped (running or a zombie). */
        ck_assert_int_eq(procid_read_stat(pid, &st), 0);
        id.start = st.start;
        /* Once it has exited, a zombie not yet reaped: ended. */
        for (int i = 0; i < 1000; i++) {
                if (procid_read_stat(pid, &st) == 0 && st.state == 'Z')
                        break;
                usleep(10000);
        }
        int fd = -1;
        ck_assert_int_eq(procid_pin(&id, &fd), -ESRCH);
        (void)reap(pid);
        ck_assert_int_eq(procid_pin(&id, &fd), -ESRCH);
}
END_TEST

START_TEST(stop_term_then_kill)
{
        pid_t polite =
            child_sh("trap 'exit 0' TERM; echo >&3; while :; do sleep 1; done", "polite");
        pid_t deaf = child_sh("trap '' TERM; echo >&3; while :; do sleep 1; done", "deaf");
        procpin_t pins[2];
        ck_assert_int_eq(procid_learn(polite, &pins[0].id, NULL, NULL), 0);
        ck_assert_int_eq(procid_learn(deaf, &pins[1].id, NULL, NULL), 0);
        ck_assert_uint_eq(procstop_pin("test", pins, 2), 0);
        ck_assert(!pins[0].ended && !pins[1].ended);
        /* The grace is long for the polite one (it ends on TERM at once), and
         * the deaf one needs the KILL whatever the grace. */
        ck_assert_uint_eq(procstop_run("test", pins, 2, true, 3000, 10000), 0);
        procstop_release(pins, 2);
        int s1 = reap(polite), s2 = reap(deaf);
        ck_assert_msg(WIFEXITED(s1) || (WIFSIGNALED(s1) && WTERMSIG(s1) == SIGTERM),
                      "the polite one: status %d", s1);
        ck_assert(WIFSIGNALED(s2) && WTERMSIG(s2) == SIGKILL);
}
END_TEST

START_TEST(wait_reports_running)
{
        pid_t pid = child_sh("echo >&3; exec sleep 30", "sleeper");
        procpin_t pin;
        ck_assert_int_eq(procid_learn(pid, &pin.id, NULL, NULL), 0);
        ck_assert_uint_eq(procstop_pin("test", &pin, 1), 0);
        ck_assert_uint_eq(procstop_wait(&pin, 1, 100), 1);
        ck_assert_int_eq(procid_signal(pin.pidfd, SIGTERM), 0);
        ck_assert_uint_eq(procstop_wait(&pin, 1, 60000), 0);
        procstop_release(&pin, 1);
        (void)reap(pid);
}
END_TEST

START_TEST(find_by_argument_and_descent)
{
        char marker[64];
        (void)snprintf(marker, sizeof(marker), "procctl-test-%d", (int)getpid());
        /* sh forks sleep (a command list, so no exec): a child to descend to. */
        pid_t pid = child_sh("echo >&3; sleep 30; true", marker);
        procid_t self;
        ck_assert_int_eq(procid_learn(getpid(), &self, NULL, NULL), 0);
        const char *args[] = {marker};
        procfind_t q = {.args = args, .n_args = 1, .seeds = &self, .n_seeds = 1};
        _cleanup_free_ procid_t *found = NULL;
        size_t n = 0;
        ck_assert_int_eq(procfind_run(&q, &found, &n), 0);
        /* The child by its argument; never this process, though seeded. */
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(found[0].pid, pid);
        /* With descent: the child's sleep too, once sh has forked it. */
        q.descendants = true;
        for (int i = 0; i < 1000 && n < 2; i++) {
                free(found);
                found = NULL;
                ck_assert_int_eq(procfind_run(&q, &found, &n), 0);
                if (n < 2)
                        usleep(10000);
        }
        ck_assert_uint_eq(n, 2);
        procpin_t pins[2] = {{.id = found[0]}, {.id = found[1]}};
        ck_assert_uint_eq(procstop_pin("test", pins, 2), 0);
        ck_assert_uint_eq(procstop_run("test", pins, 2, false, 0, 10000), 0);
        procstop_release(pins, 2);
        (void)reap(pid);
}
END_TEST

START_TEST(match_rules)
{
        const char cmd[] = "runsc\0--root=/w/state\0boot\0";
        const char *want[] = {"--root=/w/state"}, *prefix[] = {"--root=/w"};
        ck_assert(procfind_cmdline_has(cmd, sizeof(cmd) - 1, want, 1));
        ck_assert(!procfind_cmdline_has(cmd, sizeof(cmd) - 1, prefix, 1));
        ck_assert(procfind_cgroup_has("0::/hangar-node-ab12\n", "hangar-node-ab12"));
        ck_assert(procfind_cgroup_has("5:memory:/x\n4:cpu:/hangar-node-ab12/kubepods\n",
                                      "hangar-node-ab12"));
        ck_assert(!procfind_cgroup_has("0::/hangar-node-ab123\n", "hangar-node-ab12"));
        ck_assert(!procfind_cgroup_has("0::/a/hangar-node-ab12\n", "hangar-node-ab12"));
        ck_assert_uint_eq(procfind_ns_inode("net:[4026531840]"), 4026531840ULL);
        ck_assert_uint_eq(procfind_ns_inode("net:[]"), 0);
        ck_assert_uint_eq(procfind_ns_inode("net:[12]x"), 0);
        ck_assert_uint_eq(procfind_ns_inode("4026531840"), 0);
}
END_TEST

START_TEST(start_detached)
{
        char dir[] = "/tmp/procctl-test-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char out[128], err[128];
        (void)snprintf(out, sizeof(out), "%s/out", dir);
        (void)snprintf(err, sizeof(err), "%s/err", dir);
        char *argv[] = {"sh", "-c", "echo out; echo err >&2; test \"$(ps -o sid= -p $$)\" -eq $$",
                        NULL};
        procid_t id;
        ck_assert_int_eq(procstart_detached(argv, out, err, &id), 0);
        int status = reap(id.pid);
        char buf[64] = {0};
        FILE *f = fopen(out, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        (void)fclose(f);
        ck_assert_str_eq(buf, "out\n");
        f = fopen(err, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        (void)fclose(f);
        ck_assert_str_eq(buf, "err\n");
        ck_assert_msg(WIFEXITED(status), "status %d", status);
        (void)unlink(out);
        (void)unlink(err);
        (void)rmdir(dir);
        char *missing[] = {"/nonexistent/procctl-test", NULL};
        ck_assert_int_eq(procstart_detached(missing, NULL, NULL, &id), -ENOENT);
}
END_TEST

static Suite *procctl_suite(void)
{
        Suite *s = suite_create("procctl");
        TCase *tc = tcase_create("procctl");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, stat_fields);
        tcase_add_test(tc, stat_malformed);
        tcase_add_test(tc, record_forms);
        tcase_add_test(tc, record_refused);
        tcase_add_test(tc, learn_self);
        tcase_add_test(tc, wrong_start_refused);
        tcase_add_test(tc, ended_is_gone);
        tcase_add_test(tc, stop_term_then_kill);
        tcase_add_test(tc, wait_reports_running);
        tcase_add_test(tc, find_by_argument_and_descent);
        tcase_add_test(tc, match_rules);
        tcase_add_test(tc, start_detached);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(procctl_suite());
}
