#include "turnfiles.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <jansson.h>

#include "cleanup.h"
#include "conn.h"
#include "frame.h"
#include "home.h"
#include "jsonx.h"
#include "layout.h"
#include "strparse.h"

#define TURN_FILE "hangar-home/" LAYOUT_HOME_TURN

bool turnfiles_instance_ok(const char *s, size_t len)
{
        if (len != INSTANCE_HEX_LEN)
                return false;
        for (size_t i = 0; i < len; i++)
                if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
                        return false;
        return true;
}

void turnfiles_free(turn_files_t *f)
{
        free(f->turn);
        free(f->cwd);
        f->turn = f->cwd = NULL;
}

static int read_port(int home_fd, uint16_t *ret, hg_error_t *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        uint32_t port = 0;
        int r = home_read(home_fd, LAYOUT_HOME_PORT, 16, &text, &len, err);
        if (r < 0)
                return r;
        if (len && text[len - 1] == '\n')
                text[--len] = '\0';
        if (parse_u32(text, &port) < 0 || port == 0 || port > 65535)
                return error_set(err, -EINVAL, "hangar-home/%s: not a port number",
                                 LAYOUT_HOME_PORT);
        *ret = (uint16_t)port;
        return 0;
}

/* "terminal" in the turn file: absent (pipes), or exactly rows, cols and
 * term within the protocol's bounds; anything else refuses the turn. */
static int read_terminal(const json_t *turn, turn_files_t *f, hg_error_t *err)
{
        json_t *t = json_object_get(turn, "terminal");
        f->term_on = false;
        if (!t)
                return 0;
        json_t *rows = json_object_get(t, "rows"), *cols = json_object_get(t, "cols");
        const char *term = json_string_value(json_object_get(t, "term"));
        if (!json_is_object(t) || json_object_size(t) != 3 || !json_is_integer(rows) ||
            !json_is_integer(cols) || !term)
                return error_set(err, -EINVAL,
                                 "%s: \"terminal\" needs exactly \"rows\", \"cols\" and \"term\"",
                                 TURN_FILE);
        json_int_t r = json_integer_value(rows), c = json_integer_value(cols);
        if (r < FRAME_TERM_ROWS_MIN || r > FRAME_TERM_ROWS_MAX || c < FRAME_TERM_COLS_MIN ||
            c > FRAME_TERM_COLS_MAX || !frame_term_name_ok(term))
                return error_set(err, -EINVAL, "%s: \"terminal\" is out of bounds", TURN_FILE);
        f->term = (session_term_t){.rows = (unsigned)r, .cols = (unsigned)c};
        (void)snprintf(f->term.term, sizeof(f->term.term), "%s", term);
        f->term_on = true;
        return 0;
}

/* The turn's id and directory, its terminal, keep_processes and the
 * instance, from the driver's turn file. */
static int read_turn(int home_fd, turn_files_t *f, hg_error_t *err)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        _cleanup_json_ json_t *turn = NULL;
        int r = home_read(home_fd, LAYOUT_HOME_TURN, 64 * 1024, &text, &len, err);
        if (r < 0)
                return r;
        if (jsonx_load(text, len, 8, &turn, err) < 0)
                return error_prefix(err, "%s: ", TURN_FILE);
        const char *cwd = json_string_value(json_object_get(turn, "cwd"));
        const char *id = json_string_value(json_object_get(turn, "turn"));
        if (!cwd || cwd[0] != '/' || !id)
                return error_set(err, -EINVAL, "%s: needs \"turn\" and an absolute \"cwd\"",
                                 TURN_FILE);
        if ((r = read_terminal(turn, f, err)) < 0)
                return r;
        /* Absent: sealed (the default); anything but a boolean refuses. */
        json_t *keep = json_object_get(turn, "keep_processes");
        if (keep && !json_is_boolean(keep))
                return error_set(err, -EINVAL, "%s: \"keep_processes\" must be true or false",
                                 TURN_FILE);
        f->keep_processes = keep && json_is_true(keep);
        /* The daemon that wrote the file: absent (an older driver) or its id. */
        json_t *inst = json_object_get(turn, "instance");
        f->instance[0] = '\0';
        if (inst && (!json_is_string(inst) ||
                     !turnfiles_instance_ok(json_string_value(inst), json_string_length(inst))))
                return error_set(err, -EINVAL, "%s: \"instance\" is not an instance id", TURN_FILE);
        if (inst)
                memcpy(f->instance, json_string_value(inst), INSTANCE_HEX_LEN + 1);
        _cleanup_free_ char *c = strdup(cwd), *t = strdup(id);
        if (!c || !t)
                return -ENOMEM;
        f->cwd = TAKE_PTR(c);
        f->turn = TAKE_PTR(t);
        return 0;
}

int turnfiles_read(int home_fd, turn_files_t *f, hg_error_t *err)
{
        turnfiles_free(f);
        int r = read_port(home_fd, &f->port, err);
        if (r == 0)
                r = read_turn(home_fd, f, err);
        return r;
}

int turnfiles_check_instance(int home_fd, const char *want, const turn_files_t *before,
                             hg_error_t *err)
{
        turn_files_t now = {0};
        int r = turnfiles_read(home_fd, &now, err);
        if (r < 0) {
                turnfiles_free(&now);
                return error_prefix(err, "daemon %s: ", want);
        }
        if (!now.instance[0])
                r = error_set(err, -ESTALE,
                              "hangar-home/%s names no daemon instance; hangar expects %s",
                              LAYOUT_HOME_TURN, want);
        else if (strcmp(now.instance, want) != 0)
                r = error_set(err, -ESTALE,
                              "hangar-home/%s is daemon %s's, not %s's (the one that started "
                              "the turn): not connecting",
                              LAYOUT_HOME_TURN, now.instance, want);
        else if (now.port != before->port || !before->turn || strcmp(now.turn, before->turn) != 0)
                r = error_set(err, -ESTALE,
                              "the turn in hangar-home changed while the relay waited for its "
                              "token: not connecting");
        turnfiles_free(&now);
        return r;
}

/* `hangar turn run` starts the relay together with `ctl start`
 * (docs/client.md), so the driver may not have written the turn's files
 * yet (the port last, after the turn file), and a turn still in flight may
 * hold them. The relay waits before it sweeps: a relay started for a turn
 * the driver then refuses never sweeps another turn's processes. hangar
 * gives up by ending the relay's stdin (nothing else may be on it before
 * the ready line).
 *
 * The wait is on the start's critical path, so it is woken by inotify on
 * hangar-home (the driver renames each file into place): the relay reads
 * the files again as soon as one lands, not at the next tick. A tick stays
 * as the safety net, long where the watch is set (a writer the watch cannot
 * see, a volume shared from outside gVisor's sandbox, still gets through)
 * and short where it could not be. */
#define WAIT_STEP_MS         20  /* without a watch */
#define WAIT_STEP_WATCHED_MS 250 /* with one: only a net under it */

/* An inotify descriptor watching hangar-home for files landing in it, or -1
 * (the tick alone then). Set before the first read, so a file written
 * between that read and the wait still wakes it. */
static int watch_home(int home_fd)
{
        int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (in < 0)
                return -1;
        char path[64];
        (void)snprintf(path, sizeof(path), "/proc/self/fd/%d", home_fd);
        if (inotify_add_watch(in, path, IN_MOVED_TO | IN_CLOSE_WRITE | IN_CREATE | IN_ONLYDIR) <
            0) {
                (void)close(in);
                return -1;
        }
        return in;
}

/* Reads the watch's events away (they say only "something landed"). */
static void drain_watch(int in)
{
        char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
        while (read(in, buf, sizeof(buf)) > 0)
                ;
}

int turnfiles_wait(int home_fd, const char *want, uint32_t wait_s, turn_files_t *f, hg_error_t *err)
{
        int64_t deadline = conn_now_ms() + (int64_t)wait_s * 1000;
        _cleanup_close_ int watch = watch_home(home_fd);
        for (;;) {
                hg_error_t e = {0};
                int r = turnfiles_read(home_fd, f, &e);
                bool mine = r == 0 && (!want || (f->turn && strcmp(f->turn, want) == 0));
                if (mine)
                        return 0;
                if ((r < 0 && r != -ENOENT) || conn_now_ms() >= deadline) {
                        if (r < 0) {
                                *err = e;
                                return r;
                        }
                        return error_set(
                            err, -ESRCH, "hangar-home/%s names turn \"%.64s\", not \"%s\"",
                            LAYOUT_HOME_TURN, f->turn ? f->turn : "?", want ? want : "?");
                }
                struct pollfd p[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                                      {.fd = watch, .events = POLLIN}};
                int n =
                    poll(p, watch >= 0 ? 2 : 1, watch >= 0 ? WAIT_STEP_WATCHED_MS : WAIT_STEP_MS);
                if (n > 0 && p[0].revents)
                        return error_set(err, -ECANCELED,
                                         "stdin ended or was written before the turn \"%s\" was "
                                         "up: hangar gave up",
                                         want ? want : "?");
                if (n > 0 && watch >= 0 && p[1].revents)
                        drain_watch(watch);
        }
}
