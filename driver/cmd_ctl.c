/* hangar-driver ctl: one request to the daemon on its control socket, and
 * its reply printed as the op's row says (driver/ctl/ctlops.c): the JSON
 * line, a stream, a run's output tail and status, a screen's rows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <jansson.h>

#include "base64.h"
#include "cleanup.h"
#include "cmds.h"
#include "ctlargs.h"
#include "ctlsock.h"
#include "fileio.h"
#include "jsonx.h"
#include "layout.h"
#include "token.h"

static void print_help(FILE *out)
{
        fputs("usage: hangar-driver ctl [--config FILE] OP [ARGS]\n\nOPs:\n", out);
        for (int op = 0; op < CTLREQ_OP_COUNT; op++) {
                char synopsis[256];
                const ctlop_t *o = ctlop_get((ctlreq_op_t)op);
                if (!ctlop_on_command_line((ctlreq_op_t)op))
                        continue; /* the pane's type */
                if (ctlop_synopsis((ctlreq_op_t)op, synopsis, sizeof(synopsis)) == 0)
                        fprintf(out, "  %s\n      %s\n", synopsis, o->help);
        }
        fputs("\nctl prints the driver's JSON reply (run, verify: the command's output tail,\n"
              "and exits with its status; watch: the harness's output, live; screen: the\n"
              "terminal's text rows).\n",
              out);
}

/* The rest of a streamed reply (watch, events, approvals, start --follow),
 * copied as it comes, whatever its size, until the daemon closes. A watch
 * counts as whole however it ends (the log is the record: a watcher comes
 * back with its offset); the others must end with the daemon's close. */
static int copy_stream(int fd, const char *op, bool whole_anyway)
{
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

/* A run's reply: its output tail, and the command's status as ours. */
static int print_run(json_t *reply)
{
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

/* start's reply is hangar's: the token and port, or the gate's outcome;
 * the exit status as `hangar-driver relay`'s. With follow, the turn's
 * events come after it, as `events --follow` streams them. */
static int print_start(int fd, json_t *req, json_t *reply, char *buf, size_t len, size_t line_len)
{
        bool ok = json_is_true(json_object_get(reply, "ok"));
        (void)fd_write_all(STDOUT_FILENO, buf, line_len + 1);
        json_t *st = json_object_get(reply, "status");
        if (!ok)
                fprintf(stderr, "hangar-driver ctl start: %s\n",
                        json_string_value(json_object_get(reply, "error")) ?: "failed");
        int r = ok ? 0 : json_is_integer(st) ? (int)json_integer_value(st) : 1;
        if (ok && json_is_true(json_object_get(req, "follow")))
                r = fd_write_all(STDOUT_FILENO, buf + line_len + 1, len - line_len - 1) < 0
                        ? 1
                        : copy_stream(fd, "start", false);
        token_wipe(buf, len);
        return r;
}

static int print_reply(int fd, const ctlop_t *o, json_t *req, char *buf, size_t len)
{
        char *nl = memchr(buf, '\n', len);
        if (!nl) {
                fputs("hangar-driver ctl: no reply from the driver\n", stderr);
                return 1;
        }
        size_t line_len = (size_t)(nl - buf);
        hg_error_t err = {0};
        _cleanup_json_ json_t *reply = NULL;
        if (jsonx_load(buf, line_len, 16, &reply, &err) < 0) {
                fprintf(stderr, "hangar-driver ctl: bad reply: %s\n", err.message);
                return 1;
        }
        if (o->reply == CTLOP_REPLY_START)
                return print_start(fd, req, reply, buf, len, line_len);
        if (!json_is_true(json_object_get(reply, "ok"))) {
                fprintf(stderr, "hangar-driver ctl: %s\n",
                        json_string_value(json_object_get(reply, "error")) ?: "failed");
                return 1;
        }
        json_t *screen = json_object_get(reply, "screen");
        switch (o->reply) {
        case CTLOP_REPLY_RUN:
                return print_run(reply);
        case CTLOP_REPLY_STREAM:
        case CTLOP_REPLY_WATCH:
                if (fd_write_all(STDOUT_FILENO, nl + 1, len - line_len - 1) < 0)
                        return 1;
                return copy_stream(fd, o->name, o->reply == CTLOP_REPLY_WATCH);
        case CTLOP_REPLY_SCREEN:
                if (json_is_string(screen))
                        return fd_write_all(STDOUT_FILENO, json_string_value(screen),
                                            json_string_length(screen)) < 0
                                   ? 1
                                   : 0;
                break;
        case CTLOP_REPLY_LINE:
        case CTLOP_REPLY_START:
        default:
                break;
        }
        return fd_write_all(STDOUT_FILENO, buf, line_len + 1) < 0 ? 1 : 0;
}

/* Sends one request and prints its reply. The first line is the JSON
 * reply; a stream follows it. */
static int ctl_request(const char *sock, const ctlop_t *o, json_t *req)
{
        hg_error_t err = {0};
        _cleanup_close_ int fd = -1;
        if (ctlsock_connect(sock, &fd, &err) < 0) {
                fprintf(stderr, "hangar-driver ctl: %s\n", err.message);
                return 1;
        }
        _cleanup_free_ char *text = jsonx_dumps(req, JSON_COMPACT);
        size_t text_len = text ? strlen(text) : 0;
        int w = text ? fd_write_all(fd, text, text_len) : -ENOMEM;
        if (text)
                token_wipe(text, text_len); /* a start's spec: the run key */
        if (w < 0 || shutdown(fd, SHUT_WR) < 0) {
                fputs("hangar-driver ctl: cannot send the request\n", stderr);
                return 1;
        }
        static char buf[256 * 1024];
        size_t len = 0;
        for (;;) {
                ssize_t n = read(fd, buf + len, sizeof(buf) - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                len += (size_t)n;
                if (memchr(buf, '\n', len) || len == sizeof(buf))
                        break;
        }
        return print_reply(fd, o, req, buf, len);
}

int cmd_ctl(int argc, char **argv)
{
        const char *config_path = getenv("HANGAR_CONFIG");
        int i = 1;
        if (i + 1 < argc && strcmp(argv[i], "--config") == 0) {
                config_path = argv[i + 1];
                i += 2;
        }
        if (i < argc && (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "help") == 0)) {
                print_help(stdout);
                return 0;
        }
        if (i >= argc) {
                print_help(stderr);
                return 2;
        }
        hg_error_t err = {0};
        _cleanup_json_ json_t *req = NULL;
        ctlreq_op_t op;
        if (ctlargs_build(argc - i, argv + i, &req, &op, &err) < 0) {
                fprintf(stderr, "hangar-driver ctl: %s\n", err.message);
                return 2;
        }
        _cleanup_config_ hg_config_t cfg = {0};
        if (driver_load_config(config_path, &cfg) < 0)
                return 2;
        _cleanup_free_ char *sock = NULL;
        if (asprintf(&sock, "%s/%s", cfg.ctl_path, LAYOUT_CTL_SOCKET) < 0)
                return 1;
        return ctl_request(sock, ctlop_get(op), req);
}
