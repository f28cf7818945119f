/* hangar-driver: runs in the hangar-driver sidecar as uid 1001.
 *   serve                 the sidecar's daemon (PID 1): turns on request
 *   relay --spec FILE|-   one turn in a daemon of its own (docs/turn.md)
 *   ctl OP [ARGS]         hangar's requests to the daemon (start, status, ...)
 *   version */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "base64.h"
#include "cleanup.h"
#include "config.h"
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
    "ctl OPs: ping | start --spec FILE|- [--follow] | status [--turn ID] | token |\n"
    "  events [--turn ID] [--from OFFSET] [--follow] | approvals | approve ID | deny ID |\n"
    "  steer TEXT | close-stdin | signal NAME | watch [--turn ID] [--from OFFSET] |\n"
    "  finish [--turn ID] [--abort REASON] |\n"
    "  run [--timeout S] [--tail BYTES] -- CMD [ARG]...\n"
    "  tree [--timeout S] | verify [--timeout S] -- CMD [ARG]...\n"
    "  a terminal turn's: screen [--turn ID] | send-keys [--turn ID] KEY... |\n"
    "  resize [--turn ID] ROWS COLS |\n"
    "  grade begin --spec FILE|- | grade finish --spec FILE|- | grade show ID\n"
    "ctl prints the driver's JSON reply (run: the command's output tail, and\n"
    "exits with its status; watch: the harness's output, live; screen: the\n"
    "terminal's text rows).\n";

static int load_config(const char *path, hg_config_t *cfg)
{
        hg_error_t err = {0};
        if (config_load(cfg, path, &err) < 0) {
                fprintf(stderr, "hangar-driver: %s\n", err.message);
                return -1;
        }
        return 0;
}

/* The spec's text from FILE or stdin (-), at most SPEC_MAX_BYTES, in a
 * buffer the caller wipes (it holds the run key). */
static int read_spec(const char *spec_path, char **ret_text, size_t *ret_len)
{
        char *text = malloc(SPEC_MAX_BYTES + 1);
        size_t len = 0;
        int r = text ? 0 : -ENOMEM;
        _cleanup_close_ int fd = -1;
        if (r == 0 && strcmp(spec_path, "-") != 0 &&
            (fd = open(spec_path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
                r = -errno;
        while (r == 0) {
                ssize_t n = read(fd >= 0 ? fd : STDIN_FILENO, text + len, SPEC_MAX_BYTES + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        r = -errno;
                else if (n == 0)
                        break;
                else if ((len += (size_t)n) > SPEC_MAX_BYTES)
                        r = -EFBIG;
        }
        if (r < 0) {
                if (text)
                        token_wipe(text, len < SPEC_MAX_BYTES + 1 ? len : SPEC_MAX_BYTES + 1);
                free(text);
                return r;
        }
        text[len] = '\0';
        *ret_text = text;
        *ret_len = len;
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
        if (load_config(config_path, &cfg) < 0)
                return TURN_EXIT_USAGE;
        char *text = NULL;
        size_t len = 0;
        int r = read_spec(spec_path, &text, &len);
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
        if (load_config(config_path, &cfg) < 0)
                return 2;
        return turn_serve(&cfg, NULL) == 0 ? 0 : 1;
}

/* Sends one request and copies the reply to stdout. For run, prints the
 * tail and returns the command's status; otherwise 0 if the reply is ok. */
/* The rest of a streamed reply (watch, events, approvals, start --follow),
 * copied as it comes, whatever its size, until the daemon closes. A watch
 * counts as whole however it ends (the log is the record: a watcher comes
 * back with its offset); the others must end with the daemon's close. */
static int copy_stream(int fd, const char *op)
{
        bool whole_anyway = strcmp(op, "watch") == 0;
        char buf[16384];
        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0)
                        return 0;
                if (n < 0 || fd_write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
                        break;
        }
        if (whole_anyway)
                return 0;
        fprintf(stderr, "hangar-driver ctl %s: the reply was cut short\n", op);
        return 1;
}

static int ctl_request(const char *sock, json_t *req, bool is_run, bool is_start)
{
        hg_error_t err = {0};
        _cleanup_close_ int fd = -1;
        if (ctlsock_connect(sock, &fd, &err) < 0) {
                fprintf(stderr, "hangar-driver ctl: %s\n", err.message);
                return 1;
        }
        _cleanup_free_ char *text = jsonx_dumps(req, JSON_COMPACT);
        if (!text || fd_write_all(fd, text, strlen(text)) < 0 || shutdown(fd, SHUT_WR) < 0) {
                fprintf(stderr, "hangar-driver ctl: cannot send the request\n");
                return 1;
        }
        /* The first line is the JSON reply; a watch streams raw output after it. */
        char line[256 * 1024];
        size_t len = 0;
        bool have_line = false;
        for (;;) {
                ssize_t n = read(fd, line + len, sizeof(line) - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
                char *nl = memchr(line, '\n', len);
                if (nl || len == sizeof(line)) {
                        have_line = nl != NULL;
                        break;
                }
        }
        char *nl = have_line ? memchr(line, '\n', len) : NULL;
        if (!nl) {
                fprintf(stderr, "hangar-driver ctl: no reply from the driver\n");
                return 1;
        }
        size_t line_len = (size_t)(nl - line);
        _cleanup_json_ json_t *reply = NULL;
        if (jsonx_load(line, line_len, 16, &reply, &err) < 0) {
                fprintf(stderr, "hangar-driver ctl: bad reply: %s\n", err.message);
                return 1;
        }
        bool ok = json_is_true(json_object_get(reply, "ok"));
        if (is_start) {
                /* The reply is hangar's: the token and port, or the gate's
                 * outcome; the exit status as `hangar-driver relay`'s. */
                (void)fd_write_all(STDOUT_FILENO, line, line_len + 1);
                json_t *st = json_object_get(reply, "status");
                if (!ok)
                        fprintf(stderr, "hangar-driver ctl start: %s\n",
                                json_string_value(json_object_get(reply, "error")) ?: "failed");
                /* --follow: the turn's events come after the reply, as
                 * `events --follow` streams them. */
                if (ok && json_is_true(json_object_get(req, "follow"))) {
                        int r = fd_write_all(STDOUT_FILENO, nl + 1, len - line_len - 1) < 0
                                    ? 1
                                    : copy_stream(fd, "start");
                        token_wipe(line, len);
                        return r;
                }
                token_wipe(line, len);
                return ok ? 0 : json_is_integer(st) ? (int)json_integer_value(st) : 1;
        }
        if (!ok) {
                fprintf(stderr, "hangar-driver ctl: %s\n",
                        json_string_value(json_object_get(reply, "error")) ?: "failed");
                return 1;
        }
        if (is_run) {
                const char *tail = json_string_value(json_object_get(reply, "tail_base64"));
                _cleanup_free_ char *bytes = NULL;
                size_t n = 0;
                if (tail && base64_decode(tail, &bytes, &n, NULL) == 0)
                        (void)fd_write_all(STDOUT_FILENO, bytes, n);
                const char *end = json_string_value(json_object_get(reply, "end"));
                int value = (int)json_integer_value(json_object_get(reply, "value"));
                if (end && strcmp(end, "signaled") == 0)
                        return 128 + value;
                return value;
        }
        /* watch, events and approvals stream after the header line: the
         * rest is copied as it comes, whatever its size. */
        const char *op = json_string_value(json_object_get(req, "op"));
        if (op && (strcmp(op, "watch") == 0 || strcmp(op, "events") == 0 ||
                   strcmp(op, "approvals") == 0)) {
                if (fd_write_all(STDOUT_FILENO, nl + 1, len - line_len - 1) < 0)
                        return 1;
                return copy_stream(fd, op);
        }
        /* ctl screen: the screen's text rows, not the JSON around them. */
        const char *screen = op && strcmp(op, "screen") == 0
                                 ? json_string_value(json_object_get(reply, "screen"))
                                 : NULL;
        if (screen) {
                size_t n = json_string_length(json_object_get(reply, "screen"));
                return fd_write_all(STDOUT_FILENO, screen, n) < 0 ? 1 : 0;
        }
        (void)fd_write_all(STDOUT_FILENO, line, line_len + 1);
        return 0;
}

static int cmd_ctl(int argc, char **argv)
{
        const char *config_path = getenv("HANGAR_CONFIG");
        int i = 1;
        if (i + 1 < argc && strcmp(argv[i], "--config") == 0) {
                config_path = argv[i + 1];
                i += 2;
        }
        if (i >= argc) {
                fputs(usage, stderr);
                return 2;
        }
        const char *op = argv[i++];
        _cleanup_json_ json_t *req = json_pack("{s:s}", "op", op);
        bool is_run = strcmp(op, "run") == 0 || strcmp(op, "verify") == 0;
        if (!req)
                return 1;
        if (strcmp(op, "approve") == 0 || strcmp(op, "deny") == 0 || strcmp(op, "steer") == 0 ||
            strcmp(op, "signal") == 0) {
                if (i + 1 != argc) {
                        fprintf(stderr, "hangar-driver ctl %s: takes one argument\n", op);
                        return 2;
                }
                const char *key = op[0] == 's' ? (op[1] == 't' ? "text" : "signal") : "id";
                json_object_set_new(req, key, json_string(argv[i]));
        } else if (is_run) {
                uint32_t timeout = 0, tail = 0;
                for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
                        uint32_t *dst = strcmp(argv[i], "--timeout") == 0 ? &timeout
                                        : strcmp(argv[i], "--tail") == 0  ? &tail
                                                                          : NULL;
                        if (!dst || i + 1 >= argc || parse_u32(argv[i + 1], dst) < 0) {
                                fputs("hangar-driver ctl run: [--timeout S] [--tail BYTES] -- "
                                      "CMD...\n",
                                      stderr);
                                return 2;
                        }
                        json_object_set_new(req, dst == &timeout ? "timeout_s" : "tail_max",
                                            json_integer(*dst));
                }
                if (i >= argc || ++i >= argc) {
                        fputs("hangar-driver ctl run: no command after --\n", stderr);
                        return 2;
                }
                json_t *av = json_array();
                for (; i < argc; i++)
                        json_array_append_new(av, json_string(argv[i]));
                json_object_set_new(req, "argv", av);
        } else if (strcmp(op, "start") == 0) {
                if (i + 3 == argc && strcmp(argv[i + 2], "--follow") == 0)
                        json_object_set_new(req, "follow", json_true());
                else if (i + 2 != argc) {
                        i = argc; /* the usage below */
                }
                if (i + 2 > argc || strcmp(argv[i], "--spec") != 0) {
                        fputs("hangar-driver ctl start: --spec FILE|- [--follow]\n", stderr);
                        return 2;
                }
                char *text = NULL;
                size_t len = 0;
                int r = read_spec(argv[i + 1], &text, &len);
                if (r < 0) {
                        fprintf(stderr, "hangar-driver ctl start: %s: %s\n", argv[i + 1],
                                strerror(-r));
                        return 2;
                }
                json_t *spec = json_stringn(text, len);
                token_wipe(text, len);
                free(text);
                if (!spec) {
                        fputs("hangar-driver ctl start: the spec is not UTF-8 text\n", stderr);
                        return 2;
                }
                json_object_set_new(req, "spec", spec);
        } else if (strcmp(op, "status") == 0 || strcmp(op, "watch") == 0 ||
                   strcmp(op, "events") == 0 || strcmp(op, "finish") == 0) {
                bool takes_from = op[0] == 'w' || op[0] == 'e';
                for (; i < argc; i += 2) {
                        uint64_t from = 0;
                        if (op[0] == 'e' && strcmp(argv[i], "--follow") == 0) {
                                json_object_set_new(req, "follow", json_true());
                                i--; /* a flag: no argument */
                        } else if (i + 1 < argc && strcmp(argv[i], "--turn") == 0)
                                json_object_set_new(req, "turn", json_string(argv[i + 1]));
                        else if (op[0] == 'f' && i + 1 < argc && strcmp(argv[i], "--abort") == 0)
                                json_object_set_new(req, "abort", json_string(argv[i + 1]));
                        else if (takes_from && i + 1 < argc && strcmp(argv[i], "--from") == 0 &&
                                 parse_u64(argv[i + 1], &from) == 0)
                                json_object_set_new(req, "from", json_integer((json_int_t)from));
                        else {
                                fprintf(stderr, "hangar-driver ctl %s: [--turn ID]%s%s\n", op,
                                        takes_from ? " [--from OFFSET]" : "",
                                        op[0] == 'e'   ? " [--follow]"
                                        : op[0] == 'f' ? " [--abort REASON]"
                                                       : "");
                                return 2;
                        }
                }
        } else if (strcmp(op, "screen") == 0 || strcmp(op, "send-keys") == 0 ||
                   strcmp(op, "resize") == 0) {
                /* [--turn ID] first, then the op's arguments. */
                if (i + 1 < argc && strcmp(argv[i], "--turn") == 0) {
                        json_object_set_new(req, "turn", json_string(argv[i + 1]));
                        i += 2;
                }
                uint32_t rows = 0, cols = 0;
                if (op[1] == 'c' && i != argc) {
                        fputs("hangar-driver ctl screen: [--turn ID]\n", stderr);
                        return 2;
                } else if (op[0] == 'r') {
                        if (i + 2 != argc || parse_u32(argv[i], &rows) < 0 ||
                            parse_u32(argv[i + 1], &cols) < 0) {
                                fputs("hangar-driver ctl resize: [--turn ID] ROWS COLS\n", stderr);
                                return 2;
                        }
                        json_object_set_new(req, "rows", json_integer(rows));
                        json_object_set_new(req, "cols", json_integer(cols));
                } else if (op[1] == 'e') {
                        if (i >= argc) {
                                fputs("hangar-driver ctl send-keys: [--turn ID] KEY...\n", stderr);
                                return 2;
                        }
                        json_t *keys = json_array();
                        for (; i < argc; i++)
                                json_array_append_new(keys, json_string(argv[i]));
                        json_object_set_new(req, "keys", keys);
                }
        } else if (strcmp(op, "grade") == 0) {
                int r = grade_ctl_args(argc - i, argv + i, req);
                if (r)
                        return r;
        } else if (strcmp(op, "tree") == 0) {
                uint32_t timeout = 0;
                if (i + 2 == argc && strcmp(argv[i], "--timeout") == 0 &&
                    parse_u32(argv[i + 1], &timeout) == 0)
                        json_object_set_new(req, "timeout_s", json_integer(timeout));
                else if (i != argc) {
                        fputs("hangar-driver ctl tree: [--timeout S]\n", stderr);
                        return 2;
                }
        } else if (i != argc) {
                fprintf(stderr, "hangar-driver ctl %s: takes no argument\n", op);
                return 2;
        }
        _cleanup_config_ hg_config_t cfg = {0};
        if (load_config(config_path, &cfg) < 0)
                return 2;
        _cleanup_free_ char *sock = NULL;
        if (asprintf(&sock, "%s/%s", cfg.ctl_path, LAYOUT_CTL_SOCKET) < 0)
                sock = NULL;
        return sock ? ctl_request(sock, req, is_run, strcmp(op, "start") == 0) : 1;
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
                fputs("hangar-driver: cannot make itself non-dumpable; refusing to run\n", stderr);
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
