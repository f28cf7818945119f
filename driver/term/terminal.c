#include "terminal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "base64.h"
#include "cleanup.h"
#include "ctlsock.h"
#include "fileio.h"
#include "jsonx.h"
#include "tmux.h"

int terminal_spec_parse(const json_t *j, terminal_spec_t *ret, hg_error_t *err)
{
        *ret = (terminal_spec_t){0};
        if (!j)
                return 0;
        if (!json_is_object(j))
                return error_set(err, -EINVAL, "\"terminal\" must be an object");
        const char *key;
        json_t *v;
        json_object_foreach ((json_t *)j, key, v) {
                if (strcmp(key, "rows") != 0 && strcmp(key, "cols") != 0 &&
                    strcmp(key, "term") != 0)
                        return error_set(err, -EINVAL, "\"terminal\": unknown member");
        }
        json_t *rows = json_object_get(j, "rows"), *cols = json_object_get(j, "cols");
        json_t *term = json_object_get(j, "term");
        if (!json_is_integer(rows) || !json_is_integer(cols) || !json_is_string(term))
                return error_set(
                    err, -EINVAL,
                    "\"terminal\" needs \"rows\" and \"cols\" (integers) and \"term\"");
        json_int_t r = json_integer_value(rows), c = json_integer_value(cols);
        if (r < SCREEN_ROWS_MIN || r > SCREEN_ROWS_MAX)
                return error_set(err, -EINVAL, "\"terminal\": rows must be %u-%u", SCREEN_ROWS_MIN,
                                 SCREEN_ROWS_MAX);
        if (c < SCREEN_COLS_MIN || c > SCREEN_COLS_MAX)
                return error_set(err, -EINVAL, "\"terminal\": cols must be %u-%u", SCREEN_COLS_MIN,
                                 SCREEN_COLS_MAX);
        const char *t = json_string_value(term);
        if (json_string_length(term) != strlen(t) || !frame_term_name_ok(t))
                return error_set(err, -EINVAL,
                                 "\"terminal\": term must be 1-%u characters of [A-Za-z0-9._+-]",
                                 TERMINAL_TERM_MAX);
        ret->on = true;
        ret->rows = (unsigned)r;
        ret->cols = (unsigned)c;
        (void)snprintf(ret->term, sizeof(ret->term), "%s", t);
        return 0;
}

json_t *terminal_spec_json(const terminal_spec_t *s)
{
        return json_pack("{s:I, s:I, s:s}", "rows", (json_int_t)s->rows, "cols",
                         (json_int_t)s->cols, "term", s->term);
}

static int tmux_cmd(terminal_t *t, char *const args[], char **ret_out, hg_error_t *err)
{
        size_t len = 0;
        int r = tmux_run(t->tmux, t->sock, args, ret_out, &len, err);
        if (r > 0)
                return error_set(err, -EIO, "tmux %s exited %d", args[0], r);
        return r;
}

int terminal_open(terminal_t *t, const terminal_spec_t *spec, const char *ctl_dir,
                  char *const pane_argv[], hg_error_t *err)
{
        *t = (terminal_t){.spec = *spec};
        int r = screen_init(&t->screen, spec->rows, spec->cols);
        if (r < 0)
                return error_set(err, r, "the terminal's screen: %s", strerror(-r));
        if (asprintf(&t->sock, "%s/%s", ctl_dir, TERMINAL_TMUX_SOCK) < 0) {
                t->sock = NULL;
                screen_free(&t->screen);
                return error_set(err, -ENOMEM, "out of memory");
        }
        t->tmux = tmux_find();
        if (!t->tmux) {
                (void)snprintf(t->tmux_error, sizeof(t->tmux_error), "tmux is not in the image");
                return 0;
        }
        /* A server left by an earlier driver is stopped and its socket never
         * reused: a new server. */
        char *kill_old[] = {"kill-server", NULL};
        (void)tmux_run(t->tmux, t->sock, kill_old, NULL, NULL, NULL);
        (void)unlink(t->sock);
        char rows[16], cols[16];
        (void)snprintf(rows, sizeof(rows), "%u", spec->rows);
        (void)snprintf(cols, sizeof(cols), "%u", spec->cols);
        char *args[48];
        size_t n = 0;
        char *head[] = {"new-session", "-d", "-s", TERMINAL_SESSION, "-x", cols, "-y", rows};
        for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
                args[n++] = head[i];
        for (size_t i = 0; pane_argv[i] && n < 32; i++)
                args[n++] = pane_argv[i];
        /* No status line (the pane is the whole window), the window's size
         * is the turn's whatever clients attach, the pane's last screen
         * stays after the turn, and a server that outlives nothing. */
        char *tail[] = {";",
                        "set-option",
                        "-g",
                        "status",
                        "off",
                        ";",
                        "set-option",
                        "-g",
                        "window-size",
                        "manual",
                        ";",
                        "set-option",
                        "-g",
                        "remain-on-exit",
                        "on",
                        ";",
                        "resize-window",
                        "-t",
                        TERMINAL_SESSION,
                        "-x",
                        cols,
                        "-y",
                        rows,
                        NULL};
        for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++)
                args[n++] = tail[i];
        hg_error_t terr = {0};
        if (tmux_cmd(t, args, NULL, &terr) < 0) {
                (void)snprintf(t->tmux_error, sizeof(t->tmux_error), "%s", terr.message);
                char *kill[] = {"kill-server", NULL};
                (void)tmux_run(t->tmux, t->sock, kill, NULL, NULL, NULL);
                (void)unlink(t->sock);
                return 0;
        }
        (void)chmod(t->sock, 0600);
        t->tmux_up = true;
        return 0;
}

void terminal_close(terminal_t *t)
{
        if (!t)
                return;
        if (t->tmux_up) {
                char *kill[] = {"kill-server", NULL};
                (void)tmux_run(t->tmux, t->sock, kill, NULL, NULL, NULL);
                t->tmux_up = false;
        }
        if (t->sock)
                (void)unlink(t->sock);
        free(t->sock);
        t->sock = NULL;
        screen_free(&t->screen);
}

void terminal_output(terminal_t *t, const uint8_t *p, size_t n)
{
        screen_feed(&t->screen, p, n);
}

size_t terminal_take_replies(terminal_t *t, uint8_t *out, size_t cap)
{
        size_t n = t->screen.reply_len;
        if (t->tmux_up || n > cap)
                n = 0;
        memcpy(out, t->screen.reply, n);
        t->screen.reply_len = 0;
        return n;
}

char *terminal_screen(terminal_t *t, bool *ret_from_tmux, size_t *ret_len)
{
        *ret_from_tmux = false;
        if (t->tmux_up && !t->log_capped) {
                char *out = NULL;
                char *cap[] = {"capture-pane", "-p", "-t", TERMINAL_SESSION, NULL};
                if (tmux_cmd(t, cap, &out, NULL) == 0 && out) {
                        *ret_from_tmux = true;
                        if (ret_len)
                                *ret_len = strlen(out);
                        return out;
                }
                free(out);
        }
        return screen_text(&t->screen, ret_len);
}

int terminal_resize(terminal_t *t, unsigned rows, unsigned cols, hg_error_t *err)
{
        int r = screen_resize(&t->screen, rows, cols);
        if (r < 0)
                return error_set(err, r, "resize: %ux%u: %s", rows, cols,
                                 r == -EINVAL ? "out of bounds" : strerror(-r));
        t->spec.rows = rows;
        t->spec.cols = cols;
        if (t->tmux_up) {
                char rs[16], cs[16];
                (void)snprintf(rs, sizeof(rs), "%u", rows);
                (void)snprintf(cs, sizeof(cs), "%u", cols);
                char *args[] = {"resize-window", "-t", TERMINAL_SESSION, "-x", cs, "-y", rs, NULL};
                hg_error_t terr = {0};
                if (tmux_cmd(t, args, NULL, &terr) < 0)
                        (void)snprintf(t->tmux_error, sizeof(t->tmux_error), "%s", terr.message);
        }
        return 0;
}

json_t *terminal_status(const terminal_t *t)
{
        return json_pack("{s:I, s:I, s:s, s:b, s:s?, s:s?}", "rows", (json_int_t)t->spec.rows,
                         "cols", (json_int_t)t->spec.cols, "term", t->spec.term, "tmux", t->tmux_up,
                         "tmux_socket", t->tmux_up ? t->sock : NULL, "tmux_error",
                         t->tmux_error[0] ? t->tmux_error : NULL);
}

/* ---- the pane ---- */

/* One request on the control socket; the reply's first line is read (and
 * checked "ok") when wait_reply. Returns the connected fd or -1. */
static int pane_request(const char *sock, json_t *req, bool *ret_ok)
{
        hg_error_t err = {0};
        int fd = -1;
        if (ctlsock_connect(sock, &fd, &err) < 0)
                return -1;
        _cleanup_free_ char *text = jsonx_dumps(req, JSON_COMPACT);
        if (!text || fd_write_all(fd, text, strlen(text)) < 0 || shutdown(fd, SHUT_WR) < 0) {
                (void)close(fd);
                return -1;
        }
        /* The reply's first line, byte by byte: what follows (a watch's
         * stream) stays in the socket for the caller. */
        char line[4096];
        size_t len = 0;
        while (len + 1 < sizeof(line)) {
                ssize_t n = read(fd, line + len, 1);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        break;
                if (line[len++] == '\n')
                        break;
        }
        line[len] = '\0';
        _cleanup_json_ json_t *reply = NULL;
        *ret_ok = jsonx_load(line, len, 8, &reply, NULL) == 0 &&
                  json_is_true(json_object_get(reply, "ok"));
        return fd;
}

static void pane_type(const char *sock, const char *turn, const uint8_t *p, size_t n)
{
        _cleanup_free_ char *b64 = base64_encode(p, n);
        if (!b64)
                return;
        _cleanup_json_ json_t *req = json_pack("{s:s, s:s}", "op", "type", "data_base64", b64);
        if (!req || (turn && json_object_set_new(req, "turn", json_string(turn)) < 0))
                return;
        bool ok = false;
        int fd = pane_request(sock, req, &ok);
        if (fd >= 0)
                (void)close(fd);
}

int terminal_pane_main(const char *ctl_sock, const char *turn)
{
        /* Raw: every key the pane gets goes to the harness as it is; the
         * harness's own terminal does the echo and the line editing. */
        struct termios tio;
        if (tcgetattr(STDIN_FILENO, &tio) == 0) {
                cfmakeraw(&tio);
                (void)tcsetattr(STDIN_FILENO, TCSANOW, &tio);
        }
        _cleanup_json_ json_t *req = json_pack("{s:s}", "op", "watch");
        if (!req || (turn && json_object_set_new(req, "turn", json_string(turn)) < 0))
                return 1;
        bool ok = false;
        int wfd = -1;
        /* The driver may not serve yet when tmux starts the pane. */
        for (int i = 0; i < 100 && wfd < 0; i++) {
                wfd = pane_request(ctl_sock, req, &ok);
                if (wfd >= 0 && !ok) {
                        (void)close(wfd);
                        wfd = -1;
                }
                if (wfd < 0)
                        (void)poll(NULL, 0, 100);
        }
        if (wfd < 0) {
                static const char msg[] = "hangar-driver term-pane: no turn to watch\r\n";
                (void)fd_write_all(STDOUT_FILENO, msg, sizeof(msg) - 1);
                return 1;
        }
        bool in_open = true;
        for (;;) {
                struct pollfd p[2] = {{.fd = wfd, .events = POLLIN},
                                      {.fd = in_open ? STDIN_FILENO : -1, .events = POLLIN}};
                if (poll(p, 2, -1) < 0) {
                        if (errno == EINTR)
                                continue;
                        break;
                }
                uint8_t buf[16384];
                if (p[0].revents) {
                        ssize_t n = read(wfd, buf, sizeof(buf));
                        if (n < 0 && errno == EINTR)
                                continue;
                        if (n <= 0)
                                break; /* the turn ended */
                        if (fd_write_all(STDOUT_FILENO, buf, (size_t)n) < 0)
                                break;
                }
                if (p[1].revents) {
                        ssize_t n = read(STDIN_FILENO, buf, 4096);
                        if (n > 0)
                                pane_type(ctl_sock, turn, buf, (size_t)n);
                        else if (n == 0 || (errno != EINTR && errno != EAGAIN))
                                in_open = false;
                }
        }
        (void)close(wfd);
        return 0;
}
