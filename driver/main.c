/* hangar-driver: runs in the hangar-driver sidecar as uid 1001.
 *   serve                 the sidecar's daemon (PID 1): turns on request
 *   relay --spec FILE|-   one turn in a daemon of its own (docs/turn.md)
 *   ctl OP [ARGS]         hangar's requests to the daemon (start, status, ...)
 *   verdict               stores the probe's verdict (stdin) for the daemon and relay
 *   version */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "base64.h"
#include "cleanup.h"
#include "cmds.h"
#include "config.h"
#include "ctlargs.h"
#include "ctlsock.h"
#include "fileio.h"
#include "grade.h"
#include "jsonx.h"
#include "layout.h"
#include "scratch.h"
#include "spec.h"
#include "strparse.h"
#include "terminal.h"
#include "token.h"
#include "treehash.h"
#include "turn.h"

static const char usage[] =
    "usage: hangar-driver serve [--config FILE]\n"
    "       hangar-driver relay [--config FILE] --spec FILE|-\n"
    "       hangar-driver ctl [--config FILE] OP [ARGS]\n"
    "       hangar-driver verdict [--config FILE] <VERDICT_JSON\n"
    "       hangar-driver tree --turn ID DIR\n"
    "       hangar-driver gate --turn ID -- CMD [ARG]...\n"
    "       hangar-driver term-pane --socket CTL_SOCKET [--turn ID]\n"
    "       hangar-driver version\n"
    "\n"
    "serve: the sidecar's daemon: owns the control socket in hangar-ctl, runs\n"
    "turns on request (ctl start), reaps, ends the turn in flight on SIGTERM.\n"
    "\n"
    "relay: runs one ask, deny-risky or governed turn: checks HANGAR_UID_SPLIT\n"
    "against the probe's verdict in hangar-ctl, writes the run's files, listens\n"
    "on the pod's loopback for hangar-relay, relays the harness, and prints one\n"
    "JSON line. Exit: 0 the turn ran, 1 failed, 2 usage, 3 run it single-user,\n"
    "4 refused.\n"
    "\n"
    "ctl: one request to the daemon; `hangar-driver ctl --help` lists the ops.\n";

int driver_load_config(const char *path, hg_config_t *cfg)
{
        hg_error_t err = {0};
        if (config_load(cfg, path, &err) < 0) {
                fprintf(stderr, "hangar-driver: %s\n", err.message);
                return -1;
        }
        return 0;
}

static int cmd_relay(int argc, char **argv)
{
        static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
                                             {"spec", required_argument, NULL, 's'},
                                             {NULL, 0, NULL, 0}};
        const char *config_path = getenv("HANGAR_CONFIG"), *spec_path = NULL;
        int c;
        while ((c = getopt_long(argc, argv, "c:s:", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        config_path = optarg;
                        break;
                case 's':
                        spec_path = optarg;
                        break;
                default:
                        fputs(usage, stderr);
                        return TURN_EXIT_USAGE;
                }
        }
        if (!spec_path || optind != argc) {
                fputs(usage, stderr);
                return TURN_EXIT_USAGE;
        }
        _cleanup_config_ hg_config_t cfg = {0};
        if (driver_load_config(config_path, &cfg) < 0)
                return TURN_EXIT_USAGE;
        char *text = NULL;
        size_t len = 0;
        int r = ctlargs_read_text(spec_path, SPEC_MAX_BYTES, &text, &len);
        if (r < 0) {
                fprintf(stderr, "hangar-driver relay: %s: %s\n", spec_path, strerror(-r));
                return TURN_EXIT_USAGE;
        }
        turn_spec_t spec;
        hg_error_t err = {0};
        r = spec_parse_wipe(text, len, &spec, &err);
        free(text);
        if (r < 0) {
                fprintf(stderr, "hangar-driver relay: %s: %s\n", spec_path, err.message);
                return TURN_EXIT_USAGE;
        }
        int status = turn_serve(&cfg, &spec);
        spec_free(&spec);
        return status;
}

/* Where the kubelet reads a container's termination message (the default
 * terminationMessagePath); HANGAR_TERMINATION_LOG names another. */
#define TERMINATION_LOG "/dev/termination-log"

/* Why serve cannot run, on stderr (the container's log) and as the
 * termination message, which the kubelet puts on hangar-driver's container
 * status, where `kubectl describe pod` and `hangar-webhook audit` show it:
 * the one place an admin looks for a sidecar that keeps exiting. Only a file
 * that is there is written (the kubelet makes it; outside a pod there is
 * none, and none is created). */
static void serve_refuse(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void serve_refuse(const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        fprintf(stderr, "hangar-driver serve: %s\n", msg);
        const char *path = getenv("HANGAR_TERMINATION_LOG");
        const char *where = path && path[0] ? path : TERMINATION_LOG;
        int fd = open(where, O_WRONLY | O_TRUNC | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return;
        dprintf(fd, "hangar-driver serve: %s\n", msg);
        (void)close(fd);
}

/* One of the daemon's volumes: a directory it can write into as the uid it
 * runs as. A pod built wrong (the volume not mounted into hangar-driver,
 * the driver run as another uid than the one the volume was made for)
 * would otherwise fail later, on a socket or a turn's first file, with a
 * line only its log has. */
static int check_volume(const char *what, const char *path)
{
        struct stat st;
        if (stat(path, &st) < 0) {
                serve_refuse("%s (%s): %s: is the volume mounted into hangar-driver?", what, path,
                             strerror(errno));
                return -1;
        }
        if (!S_ISDIR(st.st_mode)) {
                serve_refuse("%s (%s) is not a directory", what, path);
                return -1;
        }
        if (faccessat(AT_FDCWD, path, W_OK | X_OK, AT_EACCESS) < 0) {
                serve_refuse("%s (%s) is not writable by uid %u gid %u (it is %u:%u, mode %03o): "
                             "the driver runs as another uid than the volume was made for "
                             "(driver.uid, the pod's securityContext)",
                             what, path, (unsigned)geteuid(), (unsigned)getegid(),
                             (unsigned)st.st_uid, (unsigned)st.st_gid,
                             (unsigned)(st.st_mode & 07777));
                return -1;
        }
        return 0;
}

/* The daemon's start: its configuration, then its two volumes. What fails
 * is said by serve_refuse; a failure of the daemon itself after this is
 * left to its log (the message stays empty, so terminationMessagePolicy
 * FallbackToLogsOnError shows the log's last lines instead). */
static int cmd_serve(int argc, char **argv)
{
        const char *config_path = getenv("HANGAR_CONFIG");
        if (argc == 3 && strcmp(argv[1], "--config") == 0)
                config_path = argv[2];
        else if (argc != 1) {
                fputs(usage, stderr);
                return 2;
        }
        _cleanup_config_ hg_config_t cfg = {0};
        hg_error_t err = {0};
        if (config_load(&cfg, config_path, &err) < 0) {
                serve_refuse("%s", err.message);
                return 2;
        }
        if (check_volume("hangar-ctl", cfg.ctl_path) < 0 ||
            check_volume("hangar-home", cfg.home_path) < 0)
                return 1;
        return turn_serve(&cfg, NULL) == 0 ? 0 : 1;
}

/* hangar-driver term-pane: the program in a terminal turn's tmux pane
 * (driver/term/terminal.h); started by the driver, not by hand. */
static int cmd_term_pane(int argc, char **argv)
{
        const char *sock = NULL, *turn = NULL;
        for (int i = 1; i + 1 < argc; i += 2) {
                if (strcmp(argv[i], "--socket") == 0)
                        sock = argv[i + 1];
                else if (strcmp(argv[i], "--turn") == 0)
                        turn = argv[i + 1];
                else
                        sock = NULL, i = argc;
        }
        if (!sock || argc % 2 == 0) {
                fputs("usage: hangar-driver term-pane --socket CTL_SOCKET [--turn ID]\n", stderr);
                return 2;
        }
        return terminal_pane_main(sock, turn);
}

/* hangar-driver tree: run in the agent's container, as the agent, through
 * the relay. Prints {"tree", counts, "manifest"}; the manifest goes to the
 * turn's scratch directory in the agent's home. */
static int cmd_tree(int argc, char **argv)
{
        if (argc != 4 || strcmp(argv[1], "--turn") != 0) {
                fputs("usage: hangar-driver tree --turn ID DIR\n", stderr);
                return 2;
        }
        hg_error_t err = {0};
        _cleanup_free_ char *scratch = NULL, *tmp = NULL, *final = NULL;
        if (scratch_create(argv[2], &scratch, &err) < 0) {
                fprintf(stderr, "hangar-driver tree: %s\n", err.message);
                return 1;
        }
        if (asprintf(&tmp, "%s/.manifest.%d", scratch, (int)getpid()) < 0)
                return 1;
        _cleanup_fclose_ FILE *manifest = fopen(tmp, "wxe");
        char hex[TREEHASH_HEX_LEN + 1];
        treehash_stats_t st;
        if (!manifest) {
                fprintf(stderr, "hangar-driver tree: %s: %s\n", tmp, strerror(errno));
                return 1;
        }
        int r = treehash_compute(argv[3], manifest, hex, &st, &err);
        if (r == 0 && fflush(manifest) != 0)
                r = error_set(&err, -EIO, "cannot write the manifest");
        if (r < 0 || asprintf(&final, "%s/%s.manifest", scratch, hex) < 0 ||
            rename(tmp, final) < 0) {
                (void)unlink(tmp);
                fprintf(stderr, "hangar-driver tree: %s\n",
                        err.message[0] ? err.message : "failed");
                return 1;
        }
        _cleanup_json_ json_t *j = json_pack(
            "{s:s, s:I, s:I, s:I, s:I, s:I, s:s}", "tree", hex, "files", (json_int_t)st.files,
            "dirs", (json_int_t)st.dirs, "symlinks", (json_int_t)st.symlinks, "specials",
            (json_int_t)st.specials, "bytes", (json_int_t)st.bytes, "manifest", final);
        _cleanup_free_ char *text = j ? jsonx_dumps(j, JSON_COMPACT) : NULL;
        if (!text)
                return 1;
        puts(text);
        return 0;
}

/* hangar-driver gate: the verify gate's check, in the agent's container.
 * Counts the round in the agent's own rounds file, then becomes the check. */
static int cmd_gate(int argc, char **argv)
{
        if (argc < 5 || strcmp(argv[1], "--turn") != 0 || strcmp(argv[3], "--") != 0) {
                fputs("usage: hangar-driver gate --turn ID -- CMD [ARG]...\n", stderr);
                return 2;
        }
        hg_error_t err = {0};
        _cleanup_free_ char *scratch = NULL, *rounds = NULL, *text = NULL;
        if (scratch_create(argv[2], &scratch, &err) < 0 ||
            asprintf(&rounds, "%s/verify-rounds", scratch) < 0) {
                fprintf(stderr, "hangar-driver gate: %s\n", err.message);
                return 1;
        }
        uint32_t n = 0;
        size_t len = 0;
        if (file_read_bounded(rounds, 32, &text, &len) == 0) {
                if (len && text[len - 1] == '\n')
                        text[len - 1] = '\0';
                if (parse_u32(text, &n) < 0)
                        n = 0;
        }
        char next[16];
        snprintf(next, sizeof(next), "%u\n", n + 1);
        if (file_write_atomic(rounds, next, strlen(next), 0600, 0) < 0)
                fprintf(stderr, "hangar-driver gate: cannot count the round in %s\n", rounds);
        fprintf(stderr, "hangar-driver gate: round %u\n", n + 1);
        fflush(stderr);
        execvp(argv[4], argv + 4);
        fprintf(stderr, "hangar-driver gate: %s: %s\n", argv[4], strerror(errno));
        return 127;
}

/* jansson's copies of the spec (the run key) and of the replies are wiped
 * before their memory goes back to the allocator. */
static void *wiping_malloc(size_t n)
{
        return malloc(n);
}

static void wiping_free(void *p)
{
        if (p)
                token_wipe(p, malloc_usable_size(p));
        free(p);
}

int main(int argc, char **argv)
{
        /* First thing: no uid-1001 process (an exec into hangar-driver) may
         * read the run key or the token from this process's memory, and no
         * core dump may hold them. Checked: a driver that stays dumpable
         * refuses to run. */
        if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 || prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) {
                if (argc > 1 && strcmp(argv[1], "serve") == 0)
                        serve_refuse("cannot make itself non-dumpable; refusing to run");
                else
                        fputs("hangar-driver: cannot make itself non-dumpable; refusing to run\n",
                              stderr);
                return 1;
        }
        json_set_alloc_funcs(wiping_malloc, wiping_free);
        if (argc < 2) {
                fputs(usage, stderr);
                return 2;
        }
        const char *cmd = argv[1];
        if (strcmp(cmd, "serve") == 0)
                return cmd_serve(argc - 1, argv + 1);
        if (strcmp(cmd, "relay") == 0)
                return cmd_relay(argc - 1, argv + 1);
        if (strcmp(cmd, "ctl") == 0)
                return cmd_ctl(argc - 1, argv + 1);
        if (strcmp(cmd, "verdict") == 0)
                return cmd_verdict(argc - 1, argv + 1);
        if (strcmp(cmd, "tree") == 0)
                return cmd_tree(argc - 1, argv + 1);
        if (strcmp(cmd, "gate") == 0)
                return cmd_gate(argc - 1, argv + 1);
        if (strcmp(cmd, "term-pane") == 0)
                return cmd_term_pane(argc - 1, argv + 1);
        if (strcmp(cmd, "version") == 0) {
                puts("hangar-driver " HANGAR_VERSION);
                return 0;
        }
        if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
                fputs(usage, stdout);
                return 0;
        }
        fputs(usage, stderr);
        return 2;
}
