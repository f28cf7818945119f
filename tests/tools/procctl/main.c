/* hangar-procctl: the test harnesses' process control (tests/pods/podrun,
 * scripts/node.sh, scripts/control-plane.sh, tests/lib/testlib.sh), so no
 * shell signals a pid by number. A process is named by a record, its pid and
 * start time ("PID START" a line in a file, or PID:START as an argument);
 * each signal goes through a pidfd opened on the pid and checked against the
 * start time, so it reaches the process recorded or nobody. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "procfind.h"
#include "procid.h"
#include "procstart.h"
#include "procstop.h"
#include "strparse.h"

#define PROG "hangar-procctl"

/* The most records one command takes (a node has a few hundred processes). */
#define RECORDS_MAX 65536

static const char usage_text[] =
    "usage: " PROG " COMMAND ...  (a REC is PID:START, or @FILE of \"PID START\" lines, @- stdin)\n"
    "  start [--out FILE] [--err FILE] [--record FILE] -- CMD [ARG...]\n"
    "        start CMD detached (its own session, stdin /dev/null, output appended to\n"
    "        FILE or discarded); its record on stdout and in --record FILE\n"
    "  ident PID...            records of those pids still running\n"
    "  alive REC...            exit 0 if every one is the process recorded, still running\n"
    "  signal SIG REC...       SIG (a number or TERM, KILL, ...) to each; exit 1 if one is gone\n"
    "  stop [--grace S] [--no-term] [--kill-wait S] REC...\n"
    "        SIGTERM (not with --no-term), S seconds (default 15) for them to end,\n"
    "        then SIGKILL; exit 1 if one survives\n"
    "  wait [--timeout S] REC...  exit 0 once all have ended, 1 if not within S (10)\n"
    "  find [--arg STR]... [--cgroup NAME] [--netns INODE [--mntns INODE] [--exe PATH]...]\n"
    "       [--seed REC]... [--descendants]\n"
    "        records of the running processes matching any rule (never this one or its\n"
    "        ancestors): a whole argument STR; a cgroup /NAME or under it; in network\n"
    "        namespace INODE and in mount namespace INODE or running an executable at or\n"
    "        under a PATH; a seed; then with --descendants every descendant of those\n";

static int usage(void)
{
        fputs(usage_text, stderr);
        return 2;
}

typedef struct {
        procpin_t *v;
        size_t n, cap;
} records_t;

static void records_free(records_t *r)
{
        procstop_release(r->v, r->n);
        free(r->v);
}

static int records_add(records_t *r, const procid_t *id)
{
        if (r->n >= RECORDS_MAX)
                return -E2BIG;
        if (r->n == r->cap) {
                size_t ncap = r->cap ? r->cap * 2 : 16;
                procpin_t *nv = realloc(r->v, ncap * sizeof(*nv));
                if (!nv)
                        return -ENOMEM;
                r->v = nv;
                r->cap = ncap;
        }
        r->v[r->n++] = (procpin_t){.id = *id, .pidfd = -1};
        return 0;
}

/* Records from f: one "PID START" a line; blank lines skipped. */
static int records_scan(records_t *r, FILE *f)
{
        char line[PROCID_LINE_MAX + 2];
        while (fgets(line, sizeof(line), f)) {
                if (!strchr(line, '\n') && !feof(f))
                        return -EINVAL;
                if (line[0] == '\n')
                        continue;
                procid_t id;
                int rc = procid_parse(line, &id);
                if (rc == 0)
                        rc = records_add(r, &id);
                if (rc < 0)
                        return rc;
        }
        return ferror(f) ? -EIO : 0;
}

/* Records from a file ("-": stdin). A file that does not exist holds none
 * (a pid file not written: nothing to end). */
static int records_read(records_t *r, const char *path)
{
        int rc;
        if (strcmp(path, "-") == 0) {
                rc = records_scan(r, stdin);
        } else {
                _cleanup_fclose_ FILE *f = fopen(path, "re");
                if (!f)
                        return errno == ENOENT ? 0 : -errno;
                rc = records_scan(r, f);
        }
        if (rc == -EINVAL)
                fprintf(stderr, PROG ": %s: not a record (\"PID START\" a line)\n", path);
        return rc;
}

static int records_from_args(records_t *r, int argc, char **argv)
{
        for (int i = 0; i < argc; i++) {
                int rc;
                if (argv[i][0] == '@') {
                        rc = records_read(r, argv[i] + 1);
                } else {
                        procid_t id;
                        rc = procid_parse(argv[i], &id);
                        if (rc < 0)
                                fprintf(stderr, PROG ": %s: not a record (PID:START)\n", argv[i]);
                        else
                                rc = records_add(r, &id);
                }
                if (rc < 0) {
                        if (rc != -EINVAL)
                                fprintf(stderr, PROG ": %s: %s\n", argv[i], strerror(-rc));
                        return rc;
                }
        }
        return 0;
}

static void print_record(FILE *f, const procid_t *id)
{
        char line[PROCID_LINE_MAX];
        procid_format(id, line);
        fprintf(f, "%s\n", line);
}

/* Seconds (a whole number, at most a day) as milliseconds. */
static int parse_seconds(const char *s, long *ret_ms)
{
        uint32_t v;
        if (parse_u32(s, &v) < 0 || v > 86400) {
                fprintf(stderr, PROG ": %s: not a number of seconds\n", s);
                return -EINVAL;
        }
        *ret_ms = (long)v * 1000;
        return 0;
}

static int parse_signal(const char *s, int *ret)
{
        static const struct {
                const char *name;
                int sig;
        } names[] = {{"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT},   {"HUP", SIGHUP},
                     {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"STOP", SIGSTOP}, {"CONT", SIGCONT},
                     {"QUIT", SIGQUIT}, {"0", 0}};
        const char *n = strncmp(s, "SIG", 3) == 0 ? s + 3 : s;
        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
                if (strcmp(n, names[i].name) == 0) {
                        *ret = names[i].sig;
                        return 0;
                }
        }
        uint32_t v;
        if (parse_u32(n, &v) < 0 || v == 0 || v >= (uint32_t)NSIG) {
                fprintf(stderr, PROG ": %s: not a signal\n", s);
                return -EINVAL;
        }
        *ret = (int)v;
        return 0;
}

static int write_record_file(const char *path, const procid_t *id)
{
        /* Written whole under a temporary name, then renamed: a reader never
         * sees half a record. */
        char tmp[4096];
        if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        FILE *f = fopen(tmp, "we");
        if (!f)
                return -errno;
        print_record(f, id);
        if (fclose(f) != 0 || rename(tmp, path) < 0) {
                int e = errno;
                (void)unlink(tmp);
                return -e;
        }
        return 0;
}

static int cmd_start(int argc, char **argv)
{
        static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                             {"err", required_argument, NULL, 'e'},
                                             {"record", required_argument, NULL, 'r'},
                                             {NULL, 0, NULL, 0}};
        const char *out = NULL, *err = NULL, *record = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
                switch (c) {
                case 'o':
                        out = optarg;
                        break;
                case 'e':
                        err = optarg;
                        break;
                case 'r':
                        record = optarg;
                        break;
                default:
                        return usage();
                }
        }
        if (optind >= argc)
                return usage();
        procid_t id;
        int r = procstart_detached(argv + optind, out, err, &id);
        if (r < 0) {
                fprintf(stderr, PROG ": cannot start %s: %s\n", argv[optind], strerror(-r));
                return 1;
        }
        if (record && (r = write_record_file(record, &id)) < 0) {
                /* Not recorded means not stoppable later: end it now. */
                fprintf(stderr, PROG ": %s: %s: stopping what was started\n", record, strerror(-r));
                procpin_t pin = {.id = id, .pidfd = -1};
                (void)procstop_pin(PROG, &pin, 1);
                (void)procstop_run(PROG, &pin, 1, false, 0, 5000);
                procstop_release(&pin, 1);
                return 1;
        }
        print_record(stdout, &id);
        return 0;
}

static int cmd_ident(int argc, char **argv)
{
        for (int i = 1; i < argc; i++) {
                uint32_t pid;
                if (parse_u32(argv[i], &pid) < 0 || pid <= 1 || pid > INT32_MAX) {
                        fprintf(stderr, PROG ": %s: not a pid\n", argv[i]);
                        return 2;
                }
                procid_t id;
                if (procid_learn((pid_t)pid, &id, NULL, NULL) == 0)
                        print_record(stdout, &id);
        }
        return 0;
}

static int cmd_alive(int argc, char **argv)
{
        _cleanup_(records_free) records_t r = {0};
        if (records_from_args(&r, argc - 1, argv + 1) < 0)
                return 2;
        if (r.n == 0)
                return 1;
        for (size_t i = 0; i < r.n; i++) {
                int fd;
                if (procid_pin(&r.v[i].id, &fd) < 0)
                        return 1;
                (void)close(fd);
        }
        return 0;
}

static int cmd_signal(int argc, char **argv)
{
        if (argc < 3)
                return usage();
        int sig;
        if (parse_signal(argv[1], &sig) < 0)
                return 2;
        _cleanup_(records_free) records_t r = {0};
        if (records_from_args(&r, argc - 2, argv + 2) < 0)
                return 2;
        int rc = 0;
        for (size_t i = 0; i < r.n; i++) {
                int fd;
                int e = procid_pin(&r.v[i].id, &fd);
                if (e == 0) {
                        e = procid_signal(fd, sig);
                        (void)close(fd);
                }
                if (e == -ESTALE)
                        fprintf(stderr, PROG ": pid %d is another process now: not signalled\n",
                                (int)r.v[i].id.pid);
                else if (e < 0)
                        fprintf(stderr, PROG ": pid %d: %s\n", (int)r.v[i].id.pid,
                                e == -ESRCH ? "ended" : strerror(-e));
                if (e < 0)
                        rc = 1;
        }
        return rc;
}

static int cmd_stop(int argc, char **argv)
{
        static const struct option opts[] = {{"grace", required_argument, NULL, 'g'},
                                             {"no-term", no_argument, NULL, 'n'},
                                             {"kill-wait", required_argument, NULL, 'k'},
                                             {NULL, 0, NULL, 0}};
        long grace = 15000, kill_wait = 10000;
        bool term = true;
        int c;
        while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
                switch (c) {
                case 'g':
                        if (parse_seconds(optarg, &grace) < 0)
                                return 2;
                        break;
                case 'n':
                        term = false;
                        break;
                case 'k':
                        if (parse_seconds(optarg, &kill_wait) < 0)
                                return 2;
                        break;
                default:
                        return usage();
                }
        }
        _cleanup_(records_free) records_t r = {0};
        if (records_from_args(&r, argc - optind, argv + optind) < 0)
                return 2;
        (void)procstop_pin(PROG, r.v, r.n);
        return procstop_run(PROG, r.v, r.n, term, grace, kill_wait) == 0 ? 0 : 1;
}

static int cmd_wait(int argc, char **argv)
{
        static const struct option opts[] = {{"timeout", required_argument, NULL, 't'},
                                             {NULL, 0, NULL, 0}};
        long timeout = 10000;
        int c;
        while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
                switch (c) {
                case 't':
                        if (parse_seconds(optarg, &timeout) < 0)
                                return 2;
                        break;
                default:
                        return usage();
                }
        }
        _cleanup_(records_free) records_t r = {0};
        if (records_from_args(&r, argc - optind, argv + optind) < 0)
                return 2;
        (void)procstop_pin(PROG, r.v, r.n);
        return procstop_wait(r.v, r.n, timeout) == 0 ? 0 : 1;
}

static int parse_inode(const char *s, uint64_t *ret)
{
        /* The link's text ("net:[4026531840]") or the number alone. */
        uint64_t v = strchr(s, '[') ? procfind_ns_inode(s) : 0;
        if (v == 0 && parse_u64(s, &v) < 0)
                v = 0;
        if (v == 0) {
                fprintf(stderr, PROG ": %s: not a namespace inode\n", s);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

static int cmd_find(int argc, char **argv)
{
        static const struct option opts[] = {
            {"arg", required_argument, NULL, 'a'},   {"cgroup", required_argument, NULL, 'c'},
            {"netns", required_argument, NULL, 'n'}, {"mntns", required_argument, NULL, 'm'},
            {"exe", required_argument, NULL, 'x'},   {"seed", required_argument, NULL, 's'},
            {"descendants", no_argument, NULL, 'd'}, {NULL, 0, NULL, 0}};
        /* Each option's values point into argv; at most argc of them. */
        _cleanup_free_ const char **args = calloc((size_t)argc, sizeof(*args));
        _cleanup_free_ const char **exes = calloc((size_t)argc, sizeof(*exes));
        _cleanup_(records_free) records_t seeds = {0};
        if (!args || !exes)
                return 1;
        procfind_t q = {.args = args, .exe_paths = exes};
        int c;
        while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
                switch (c) {
                case 'a':
                        args[q.n_args++] = optarg;
                        break;
                case 'c':
                        if (optarg[0] == '\0' || strchr(optarg, '\n')) {
                                fprintf(stderr, PROG ": --cgroup: an empty name\n");
                                return 2;
                        }
                        q.cgroup = optarg;
                        break;
                case 'n':
                        if (parse_inode(optarg, &q.netns) < 0)
                                return 2;
                        break;
                case 'm':
                        if (parse_inode(optarg, &q.mntns) < 0)
                                return 2;
                        break;
                case 'x':
                        exes[q.n_exe_paths++] = optarg;
                        break;
                case 's':
                        if (records_from_args(&seeds, 1, &optarg) < 0)
                                return 2;
                        break;
                case 'd':
                        q.descendants = true;
                        break;
                default:
                        return usage();
                }
        }
        if (optind != argc)
                return usage();
        if ((q.mntns || q.n_exe_paths) && !q.netns) {
                fprintf(stderr, PROG ": --mntns and --exe narrow --netns: give it\n");
                return 2;
        }
        _cleanup_free_ procid_t *seed_ids = calloc(seeds.n ? seeds.n : 1, sizeof(*seed_ids));
        if (!seed_ids)
                return 1;
        for (size_t i = 0; i < seeds.n; i++)
                seed_ids[i] = seeds.v[i].id;
        q.seeds = seed_ids;
        q.n_seeds = seeds.n;
        _cleanup_free_ procid_t *found = NULL;
        size_t n = 0;
        int r = procfind_run(&q, &found, &n);
        if (r < 0) {
                fprintf(stderr, PROG ": scanning /proc: %s\n", strerror(-r));
                return 1;
        }
        for (size_t i = 0; i < n; i++)
                print_record(stdout, &found[i]);
        return 0;
}

int main(int argc, char **argv)
{
        static const struct {
                const char *name;
                int (*run)(int argc, char **argv);
        } commands[] = {{"start", cmd_start},   {"ident", cmd_ident}, {"alive", cmd_alive},
                        {"signal", cmd_signal}, {"stop", cmd_stop},   {"wait", cmd_wait},
                        {"find", cmd_find}};
        if (argc < 2)
                return usage();
        for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
                if (strcmp(argv[1], commands[i].name) == 0) {
                        int rc = commands[i].run(argc - 1, argv + 1);
                        if (fflush(stdout) != 0)
                                return 1;
                        return rc;
                }
        }
        if (strcmp(argv[1], "--help") == 0) {
                fputs(usage_text, stdout);
                return 0;
        }
        fprintf(stderr, PROG ": %s: no such command\n", argv[1]);
        return usage();
}
