/* Unit tests for common/sweep, each scenario in a PID namespace of its own
 * (unshare: as root, or with a user namespace when not), so kill(-1) reaches
 * nothing outside it: a clean namespace, children holding a pipe's write end
 * (EOF after the sweep: every holder died), a thief that opened the
 * sweeper's stdin through /proc while it was dumpable, a fork storm and an
 * evasive fork chain, stopped and non-dumpable processes, a zombie PID 1
 * does not reap, a process of another uid (foreign-process), /proc of
 * another namespace, a /proc with hidepid=2, the caller as PID 1, a PID 1
 * taken over and then made non-dumpable (open: no proof), a bad
 * deadline, a zombie leader with a live thread, and the guard
 * that refuses to signal anything in the host's PID namespace. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cleanup.h"
#include "sweep.h"
#include "unit.h"

/* Exit codes of a scenario's sweeper; 0 is a pass. */
enum { S_OK = 0, S_SETUP = 90, S_RESULT = 91, S_LEAK = 92, S_NS = 93 };

/* The namespace's /proc mount options (NULL: none). */
static const char *proc_opts;

static void write_map(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
                _exit(S_NS);
        close(fd);
}

/* Runs body as PID 1 of a new PID namespace (with its own /proc when
 * mount_proc) and returns body's exit status. Never falls back to the
 * caller's namespace. */
static int in_pidns(int (*body)(void), bool mount_proc)
{
        pid_t c = fork();
        ck_assert_int_ge(c, 0);
        if (c == 0) {
                uid_t uid = geteuid();
                gid_t gid = getegid();
                int flags = CLONE_NEWPID | CLONE_NEWNS | (uid ? CLONE_NEWUSER : 0);
                if (unshare(flags) < 0) {
                        fprintf(stderr, "unshare: %s\n", strerror(errno));
                        _exit(S_NS);
                }
                if (uid) {
                        char map[64];
                        write_map("/proc/self/setgroups", "deny");
                        (void)snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
                        write_map("/proc/self/uid_map", map);
                        (void)snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
                        write_map("/proc/self/gid_map", map);
                }
                pid_t p1 = fork();
                if (p1 < 0)
                        _exit(S_NS);
                if (p1 == 0) {
                        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                                _exit(S_NS);
                        if (mount_proc && mount("proc", "/proc", "proc",
                                                MS_NOSUID | MS_NODEV | MS_NOEXEC, proc_opts) < 0)
                                _exit(S_NS);
                        _exit(body());
                }
                int st = 0;
                while (waitpid(p1, &st, 0) < 0 && errno == EINTR)
                        ;
                _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
        }
        int st = 0;
        while (waitpid(c, &st, 0) < 0 && errno == EINTR)
                ;
        ck_assert_msg(WIFEXITED(st), "the namespace's parent died (status %d)", st);
        ck_assert_msg(WEXITSTATUS(st) != S_NS, "cannot make a PID namespace (unshare)");
        return WEXITSTATUS(st);
}

static void print_report(const char *what, int r, const sweep_report_t *rep)
{
        json_t *j = sweep_report_json(rep);
        char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
        fprintf(stderr, "%s: sweep %d %s\n", what, r, text ? text : "(no json)");
        free(text);
        json_decref(j);
}

/* As PID 1: runs sweeper in a child and returns its exit status; PID 1
 * reaps nothing else until then (zombies stay). */
static int run_sweeper(int (*sweeper)(void))
{
        pid_t s = fork();
        if (s < 0)
                return S_SETUP;
        if (s == 0)
                _exit(sweeper());
        int st = 0;
        while (waitpid(s, &st, 0) < 0 && errno == EINTR)
                ;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static pid_t spawn_sleeper(void)
{
        pid_t p = fork();
        if (p == 0) {
                for (;;)
                        pause();
        }
        return p;
}

/* ---- a clean namespace ---- */
static int sweeper_clean(void)
{
        sweep_report_t rep;
        int r = sweep_others(5000, &rep);
        print_report("clean", r, &rep);
        if (r != 0 || rep.killed != 0 || rep.rounds < 2 || rep.survivors || rep.code[0])
                return S_RESULT;
        return S_OK;
}
static int body_clean(void)
{
        return run_sweeper(sweeper_clean);
}

START_TEST(clean_namespace)
{
        ck_assert_int_eq(in_pidns(body_clean, true), 0);
}
END_TEST

/* ---- holders of a pipe, a thief through /proc, stopped, non-dumpable ---- */
static int sweeper_holders(void)
{
        int p[2], in[2], ready[2];
        if (pipe2(p, O_CLOEXEC) < 0 || pipe2(in, 0) < 0 || pipe2(ready, O_CLOEXEC) < 0)
                return S_SETUP;
        /* in[0] stands for the relay's stdin: opened by the thief through
         * /proc while the sweeper is still dumpable. */
        pid_t me = getpid();
        for (int i = 0; i < 5; i++) {
                pid_t c = fork();
                if (c < 0)
                        return S_SETUP;
                if (c == 0) {
                        close(p[0]);
                        if (i == 0) {
                                char path[64];
                                (void)snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)me,
                                               in[0]);
                                int fd = open(path, O_RDONLY | O_CLOEXEC);
                                if (fd < 0)
                                        _exit(1);
                        }
                        if (i == 1)
                                (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
                        if (write(ready[1], "x", 1) != 1)
                                _exit(1);
                        if (i == 2)
                                raise(SIGSTOP);
                        for (;;)
                                pause();
                }
        }
        close(p[1]);
        close(ready[1]);
        char buf[8];
        for (int got = 0; got < 5;) {
                ssize_t n = read(ready[0], buf, 1);
                if (n <= 0)
                        return S_SETUP;
                got++;
        }
        /* Now hardened, then swept (the relay's order). */
        (void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
        sweep_report_t rep;
        int r = sweep_others(5000, &rep);
        print_report("holders", r, &rep);
        if (r != 0 || rep.killed != 5 || rep.survivors || rep.unsignalable)
                return S_RESULT;
        /* Every holder of the write end is dead: EOF, not a hang. */
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        if (poll(&pf, 1, 2000) != 1 || read(p[0], buf, sizeof(buf)) != 0)
                return S_LEAK;
        /* What is written to "stdin" now is read by the sweeper alone. */
        if (write(in[1], "TOKEN", 5) != 5 || read(in[0], buf, 5) != 5 || memcmp(buf, "TOKEN", 5))
                return S_LEAK;
        /* Dead children are zombies until reaped: five of them. */
        for (int i = 0; i < 5; i++)
                if (waitpid(-1, NULL, WNOHANG) <= 0)
                        return S_RESULT;
        return S_OK;
}
static int body_holders(void)
{
        return run_sweeper(sweeper_holders);
}

START_TEST(holders_and_thief_die)
{
        ck_assert_int_eq(in_pidns(body_holders, true), 0);
}
END_TEST

/* ---- a fork storm and an evasive chain (fork, parent exits) ---- */
/* A tree of depth 6, two children each (127 processes), each replacing a
 * child that died, for as long as it lives. */
static void storm(int depth)
{
        int children = 0;
        for (;;) {
                while (depth < 6 && children < 2) {
                        pid_t c = fork();
                        if (c == 0) {
                                depth++;
                                children = 0;
                                continue;
                        }
                        if (c > 0)
                                children++;
                        else
                                break;
                }
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        children--;
                usleep(1000);
        }
}
static void chain(void)
{
        for (;;) {
                pid_t c = fork();
                if (c > 0)
                        _exit(0);
                if (c < 0)
                        usleep(100);
        }
}
static int sweeper_storm(void)
{
        usleep(100 * 1000); /* the storm is under way */
        sweep_report_t rep;
        int r = sweep_others(10000, &rep);
        print_report("storm", r, &rep);
        if (r != 0 || rep.survivors || rep.killed < 4)
                return S_RESULT;
        return S_OK;
}
static int body_storm(void)
{
        for (int i = 0; i < 3; i++) {
                pid_t c = fork();
                if (c == 0) {
                        if (i == 0)
                                storm(0);
                        chain();
                }
        }
        int r = run_sweeper(sweeper_storm);
        if (r)
                return r;
        /* After the sweep nothing but PID 1 is left (the sweeper reaped). */
        usleep(20 * 1000);
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        return kill(-1, 0) == 0 || errno != ESRCH ? S_LEAK : S_OK;
}

START_TEST(fork_storm_converges)
{
        ck_assert_int_eq(in_pidns(body_storm, true), 0);
}
END_TEST

/* ---- a zombie PID 1 does not reap ---- */
static int sweeper_zombie(void)
{
        sweep_report_t rep;
        int r = sweep_others(5000, &rep);
        print_report("zombie", r, &rep);
        /* the old zombie and the sleeper just killed (PID 1 reaps neither yet) */
        if (r != 0 || rep.zombies != 2 || rep.killed != 1)
                return S_RESULT;
        return S_OK;
}
static int body_zombie(void)
{
        pid_t z = fork();
        if (z == 0)
                _exit(0);
        pid_t live = spawn_sleeper();
        if (z < 0 || live < 0)
                return S_SETUP;
        usleep(20 * 1000);
        return run_sweeper(sweeper_zombie);
}

START_TEST(zombie_is_not_alive)
{
        ck_assert_int_eq(in_pidns(body_zombie, true), 0);
}
END_TEST

/* ---- a zombie leader whose other thread lives (and holds its files) ---- */
static void *sleeper_thread(void *arg)
{
        (void)arg;
        for (;;)
                pause();
        return NULL;
}
static int sweeper_leader(void)
{
        sweep_report_t rep;
        int r = sweep_others(5000, &rep);
        print_report("zombie leader", r, &rep);
        /* Seen alive before the first kill (counted), dead after. */
        if (r != 0 || rep.killed != 1 || rep.survivors)
                return S_RESULT;
        return S_OK;
}
static int body_leader(void)
{
        pid_t c = fork();
        if (c == 0) {
                pthread_t t;
                if (pthread_create(&t, NULL, sleeper_thread, NULL) != 0)
                        _exit(1);
                syscall(SYS_exit, 0); /* the leader alone: a zombie leader, one live thread */
        }
        if (c < 0)
                return S_SETUP;
        char path[64], buf[512] = "";
        (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)c);
        bool zombie = false;
        for (int i = 0; i < 300 && !zombie; i++) {
                usleep(10 * 1000);
                FILE *f = fopen(path, "re");
                zombie = f && fgets(buf, sizeof(buf), f) && strstr(buf, ") Z ");
                if (f)
                        fclose(f);
        }
        if (!zombie) {
                fprintf(stderr, "zombie leader: not the case under test: %s\n", buf);
                return S_SETUP;
        }
        return run_sweeper(sweeper_leader);
}

START_TEST(zombie_leader_with_live_thread)
{
        ck_assert_int_eq(in_pidns(body_leader, true), 0);
}
END_TEST

/* ---- a process of another uid ---- */
static int sweeper_foreign(void)
{
        if (setresgid(54320, 54320, 54320) < 0 || setresuid(54320, 54320, 54320) < 0)
                return S_SETUP;
        sweep_report_t rep;
        int r = sweep_others(5000, &rep);
        print_report("foreign", r, &rep);
        if (r != -EPERM || rep.unsignalable != 1 || strcmp(rep.code, "foreign-process") != 0 ||
            rep.killed != 1 || rep.survivors)
                return S_RESULT;
        return S_OK;
}
static int body_foreign(void)
{
        /* One of the sweeper's uid, one root. */
        pid_t same = fork();
        if (same == 0) {
                if (setresuid(54320, 54320, 54320) < 0)
                        _exit(1);
                for (;;)
                        pause();
        }
        pid_t root = spawn_sleeper();
        if (same < 0 || root < 0)
                return S_SETUP;
        usleep(20 * 1000);
        int r = run_sweeper(sweeper_foreign);
        kill(root, SIGKILL);
        return r;
}

/* An exec entering the container as root, taking the container's uid a
 * moment later (runc, crun): not foreign, killed once it is the sweeper's. */
static int sweeper_transient(void)
{
        if (setresgid(54320, 54320, 54320) < 0 || setresuid(54320, 54320, 54320) < 0)
                return S_SETUP;
        sweep_report_t rep;
        int r = sweep_others(5000, &rep);
        print_report("transient", r, &rep);
        /* killed by kill(-1) as soon as it was ours: dead (a zombie), maybe never seen alive */
        if (r != 0 || rep.unsignalable || rep.survivors || rep.zombies != 1)
                return S_RESULT;
        return S_OK;
}
static int body_transient(void)
{
        pid_t c = fork();
        if (c == 0) {
                usleep(300 * 1000);
                if (setresgid(54320, 54320, 54320) < 0 || setresuid(54320, 54320, 54320) < 0)
                        _exit(1);
                for (;;)
                        pause();
        }
        if (c < 0)
                return S_SETUP;
        return run_sweeper(sweeper_transient);
}

START_TEST(transient_root_is_not_foreign)
{
        if (geteuid() != 0) {
                fprintf(stderr, "transient_root_is_not_foreign: needs root (two uids); not run\n");
                return;
        }
        ck_assert_int_eq(in_pidns(body_transient, true), 0);
}
END_TEST

START_TEST(foreign_uid_fails_closed)
{
        if (geteuid() != 0) {
                fprintf(stderr, "foreign_uid_fails_closed: needs root (two uids); not run\n");
                return;
        }
        ck_assert_int_eq(in_pidns(body_foreign, true), 0);
}
END_TEST

/* ---- /proc of another namespace; the caller as PID 1 ---- */
static int sweeper_wrong_proc(void)
{
        sweep_report_t rep;
        int r = sweep_others(5000, &rep);
        print_report("wrong proc", r, &rep);
        return r == -ENOTSUP && strcmp(rep.code, "not-own-pid-namespace") == 0 && rep.rounds == 0
                   ? S_OK
                   : S_RESULT;
}
static int body_wrong_proc(void)
{
        return run_sweeper(sweeper_wrong_proc);
}

START_TEST(proc_of_another_namespace)
{
        ck_assert_int_eq(in_pidns(body_wrong_proc, false), 0);
}
END_TEST

static int body_as_pid1(void)
{
        return sweeper_wrong_proc();
}

START_TEST(caller_is_pid1)
{
        ck_assert_int_eq(in_pidns(body_as_pid1, true), 0);
}
END_TEST

/* A PID 1 taken over earlier (a process of its uid attached with ptrace
 * while PID 1 was dumpable) that then made itself non-dumpable: what the
 * tracer did is not undone, so "non-dumpable now" is no proof and the
 * judgement must say open. Run as an unused uid (root can always attach); where
 * Yama's relational scope is on the attach is refused, which the judgement
 * must then name and count as proof. */
static int body_pid1_taken_then_hidden(void)
{
        if (geteuid() != 0) {
                fprintf(stderr, "pid1_taken_then_hidden: needs root to change uid; not run\n");
                return S_OK;
        }
        /* A change of uid leaves a process non-dumpable: dumpable again, as
         * the container's command starts. */
        if (setresgid(54321, 54321, 54321) < 0 || setresuid(54321, 54321, 54321) < 0 ||
            prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
                return S_SETUP;
        int ready[2];
        if (pipe2(ready, O_CLOEXEC) < 0)
                return S_SETUP;
        pid_t tracer = fork();
        if (tracer < 0)
                return S_SETUP;
        if (tracer == 0) {
                /* Attached, and gone again (a traced PID 1 would stop on
                 * every signal, its children's SIGCHLD too): what it did
                 * while attached is not seen afterwards either. */
                int ws = 0;
                char ok = ptrace(PTRACE_SEIZE, 1, NULL, NULL) == 0 &&
                                  ptrace(PTRACE_INTERRUPT, 1, NULL, NULL) == 0 &&
                                  waitpid(1, &ws, __WALL) == 1 &&
                                  ptrace(PTRACE_DETACH, 1, NULL, NULL) == 0
                              ? 'y'
                              : 'n';
                _exit(write(ready[1], &ok, 1) == 1 ? S_OK : S_SETUP);
        }
        char attached = 0;
        if (read(ready[0], &attached, 1) != 1)
                return S_SETUP;
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
                return S_SETUP;
        pid_t judge = fork();
        if (judge < 0)
                return S_SETUP;
        if (judge == 0) {
                sweep_report_t rep;
                sweep_judge_pid1(&rep);
                fprintf(stderr, "pid1_taken_then_hidden: attached %c, pid1 %s, yama %d\n", attached,
                        sweep_pid1_name(rep.pid1), rep.yama_scope);
                if (attached == 'y')
                        _exit(rep.pid1 == SWEEP_PID1_OPEN && !sweep_pid1_proven(rep.pid1)
                                  ? S_OK
                                  : S_RESULT);
                _exit(rep.pid1 == SWEEP_PID1_YAMA_RELATIONAL && sweep_pid1_proven(rep.pid1)
                          ? S_OK
                          : S_RESULT);
        }
        int st = 0;
        while (waitpid(judge, &st, 0) < 0 && errno == EINTR)
                ;
        while (waitpid(tracer, NULL, 0) < 0 && errno == EINTR)
                ;
        return WIFEXITED(st) ? WEXITSTATUS(st) : S_RESULT;
}

START_TEST(pid1_taken_then_hidden)
{
        ck_assert_int_eq(in_pidns(body_pid1_taken_then_hidden, true), 0);
}
END_TEST

START_TEST(pid1_proofs)
{
        ck_assert(sweep_pid1_proven(SWEEP_PID1_YAMA_RELATIONAL));
        ck_assert(sweep_pid1_proven(SWEEP_PID1_OTHER_UID));
        ck_assert(!sweep_pid1_proven(SWEEP_PID1_OPEN));
        ck_assert(!sweep_pid1_proven(SWEEP_PID1_UNKNOWN));
}
END_TEST

/* hidepid=2 would hide other uids' processes from the scan: refused. */
static int sweeper_hidden(void)
{
        sweep_report_t rep;
        int r = sweep_others(5000, &rep);
        print_report("hidepid", r, &rep);
        return r == -ENOTSUP && strcmp(rep.code, "proc-unreadable") == 0 && rep.rounds == 0
                   ? S_OK
                   : S_RESULT;
}
static int body_hidden(void)
{
        return run_sweeper(sweeper_hidden);
}

START_TEST(proc_with_hidepid)
{
        proc_opts = "hidepid=2";
        ck_assert_int_eq(in_pidns(body_hidden, true), 0);
}
END_TEST

START_TEST(bad_deadline)
{
        sweep_report_t rep;
        ck_assert_int_eq(sweep_others(0, &rep), -EINVAL);
        ck_assert_str_eq(rep.code, "bad-deadline");
        ck_assert_int_eq(sweep_others(SWEEP_DEADLINE_MAX_MS + 1, &rep), -EINVAL);
        ck_assert_int_eq(rep.rounds, 0);
}
END_TEST

/* The host's PID namespace: refused before anything is signalled. Run as
 * an otherwise unused uid, so that even a broken guard's kill(-1) could
 * reach nothing but this child's own uid. */
START_TEST(host_namespace_refused)
{
        char buf[256] = "";
        FILE *f = fopen("/proc/2/stat", "re");
        bool host = f && fgets(buf, sizeof(buf), f) && strstr(buf, "(kthreadd)");
        if (f)
                fclose(f);
        if (!host) {
                fprintf(stderr,
                        "host_namespace_refused: no kthreadd here (a container); not run\n");
                return;
        }
        pid_t c = fork();
        ck_assert_int_ge(c, 0);
        if (c == 0) {
                if (geteuid() == 0 &&
                    (setresgid(54321, 54321, 54321) < 0 || setresuid(54321, 54321, 54321) < 0))
                        _exit(S_SETUP);
                sweep_report_t rep;
                int r = sweep_others(1000, &rep);
                print_report("host", r, &rep);
                _exit(r == -ENOTSUP && strcmp(rep.code, "host-pid-namespace") == 0 &&
                              rep.rounds == 0
                          ? S_OK
                          : S_RESULT);
        }
        int st = 0;
        ck_assert_int_eq(waitpid(c, &st, 0), c);
        ck_assert(WIFEXITED(st));
        ck_assert_int_eq(WEXITSTATUS(st), S_OK);
}
END_TEST

START_TEST(report_json)
{
        sweep_report_t rep = {.killed = 3,
                              .rounds = 2,
                              .unsignalable = 1,
                              .unsignalable_pids = {7},
                              .yama_scope = 1,
                              .pid1 = SWEEP_PID1_YAMA_RELATIONAL,
                              .code = "foreign-process"};
        (void)snprintf(rep.reason, sizeof(rep.reason), "foreign-process: x");
        _cleanup_json_ json_t *j = sweep_report_json(&rep);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(json_integer_value(json_object_get(j, "killed")), 3);
        ck_assert_int_eq(json_integer_value(json_object_get(j, "rounds")), 2);
        ck_assert_str_eq(json_string_value(json_object_get(j, "pid1")), "yama-relational");
        ck_assert_int_eq(
            json_integer_value(json_array_get(json_object_get(j, "unsignalable_pids"), 0)), 7);
        ck_assert_ptr_null(json_object_get(j, "survivor_pids"));
        ck_assert_str_eq(json_string_value(json_object_get(j, "code")), "foreign-process");
        ck_assert_str_eq(sweep_pid1_name(SWEEP_PID1_OPEN), "open");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("sweep");
        TCase *tc = tcase_create("sweep");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, clean_namespace);
        tcase_add_test(tc, holders_and_thief_die);
        tcase_add_test(tc, fork_storm_converges);
        tcase_add_test(tc, zombie_is_not_alive);
        tcase_add_test(tc, zombie_leader_with_live_thread);
        tcase_add_test(tc, foreign_uid_fails_closed);
        tcase_add_test(tc, transient_root_is_not_foreign);
        tcase_add_test(tc, proc_of_another_namespace);
        tcase_add_test(tc, caller_is_pid1);
        tcase_add_test(tc, pid1_taken_then_hidden);
        tcase_add_test(tc, pid1_proofs);
        tcase_add_test(tc, proc_with_hidepid);
        tcase_add_test(tc, bad_deadline);
        tcase_add_test(tc, host_namespace_refused);
        tcase_add_test(tc, report_json);
        suite_add_tcase(s, tc);
        return unit_run(s);
}
