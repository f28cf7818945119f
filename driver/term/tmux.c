#include "tmux.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "procspawn.h"

typedef struct named_key {
        const char *name;
        const char *bytes;
} named_key_t;

/* xterm's bytes for the keys tmux names (normal cursor-key mode). */
static const named_key_t named_keys[] = {
    {"Enter", "\r"},       {"Tab", "\t"},         {"BTab", "\x1b[Z"},   {"Escape", "\x1b"},
    {"Space", " "},        {"BSpace", "\x7f"},    {"Up", "\x1b[A"},     {"Down", "\x1b[B"},
    {"Right", "\x1b[C"},   {"Left", "\x1b[D"},    {"Home", "\x1b[H"},   {"End", "\x1b[F"},
    {"PageUp", "\x1b[5~"}, {"PgUp", "\x1b[5~"},   {"PPage", "\x1b[5~"}, {"PageDown", "\x1b[6~"},
    {"PgDn", "\x1b[6~"},   {"NPage", "\x1b[6~"},  {"IC", "\x1b[2~"},    {"Insert", "\x1b[2~"},
    {"DC", "\x1b[3~"},     {"Delete", "\x1b[3~"}, {"F1", "\x1bOP"},     {"F2", "\x1bOQ"},
    {"F3", "\x1bOR"},      {"F4", "\x1bOS"},      {"F5", "\x1b[15~"},   {"F6", "\x1b[17~"},
    {"F7", "\x1b[18~"},    {"F8", "\x1b[19~"},    {"F9", "\x1b[20~"},   {"F10", "\x1b[21~"},
    {"F11", "\x1b[23~"},   {"F12", "\x1b[24~"},
};

/* The control character for C-c: letters, @ [ \ ] ^ _ ? and space. */
static int ctrl_of(unsigned char c)
{
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 1;
        if (c >= '@' && c <= '_')
                return c - '@';
        if (c == ' ' || c == '2')
                return 0;
        if (c == '?')
                return 0x7f;
        return -1;
}

/* The cursor keys in application cursor-key mode (DECCKM set). */
static const named_key_t app_cursor_keys[] = {
    {"Up", "\x1bOA"},   {"Down", "\x1bOB"}, {"Right", "\x1bOC"},
    {"Left", "\x1bOD"}, {"Home", "\x1bOH"}, {"End", "\x1bOF"},
};

static const named_key_t *find_key(const named_key_t *keys, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(keys[i].name, name) == 0)
                        return &keys[i];
        return NULL;
}

/* One key name, with C- and M- prefixes; 0 and the bytes in out when it is
 * one, -ENOENT when the argument is not a key name. */
static int encode_named(const char *arg, bool app_cursor, char out[16], size_t *ret_len)
{
        bool ctrl = false, meta = false;
        const char *p = arg;
        while ((p[0] == 'C' || p[0] == 'M') && p[1] == '-' && p[2]) {
                if (p[0] == 'C')
                        ctrl = true;
                else
                        meta = true;
                p += 2;
        }
        size_t len = 0;
        if (meta)
                out[len++] = '\x1b';
        if (ctrl) {
                int c = p[1] == '\0' ? ctrl_of((unsigned char)p[0]) : -1;
                if (c < 0)
                        return -ENOENT;
                out[len++] = (char)c;
        } else if (meta && p[1] == '\0' && (unsigned char)p[0] >= 0x20 &&
                   (unsigned char)p[0] < 0x7f) {
                out[len++] = p[0];
        } else {
                const named_key_t *k =
                    app_cursor ? find_key(app_cursor_keys, ARRAY_SIZE(app_cursor_keys), p) : NULL;
                if (!k)
                        k = find_key(named_keys, ARRAY_SIZE(named_keys), p);
                if (!k)
                        return -ENOENT;
                size_t n = strlen(k->bytes);
                memcpy(out + len, k->bytes, n);
                len += n;
        }
        *ret_len = len;
        return 0;
}

static bool utf8_valid(const unsigned char *s, size_t n)
{
        for (size_t i = 0; i < n;) {
                unsigned char c = s[i];
                size_t k = c < 0x80             ? 0
                           : (c & 0xe0) == 0xc0 ? 1
                           : (c & 0xf0) == 0xe0 ? 2
                           : (c & 0xf8) == 0xf0 ? 3
                                                : 4;
                if (k == 4 || (k == 1 && c < 0xc2) || i + k >= n)
                        return false;
                for (size_t j = 1; j <= k; j++)
                        if ((s[i + j] & 0xc0) != 0x80)
                                return false;
                i += k + 1;
        }
        return true;
}

int tmux_keys_encode(char *const keys[], size_t n, uint8_t *out, size_t cap, size_t *ret_len,
                     hg_error_t *err)
{
        return tmux_keys_encode_mode(keys, n, false, out, cap, ret_len, err);
}

int tmux_keys_encode_mode(char *const keys[], size_t n, bool app_cursor, uint8_t *out, size_t cap,
                          size_t *ret_len, hg_error_t *err)
{
        if (n == 0)
                return error_set(err, -EINVAL, "send-keys needs at least one key");
        if (n > TMUX_KEY_ARGS_MAX)
                return error_set(err, -E2BIG, "send-keys takes at most %u keys", TMUX_KEY_ARGS_MAX);
        if (cap > TMUX_KEYS_MAX)
                cap = TMUX_KEYS_MAX;
        size_t len = 0;
        for (size_t i = 0; i < n; i++) {
                const char *arg = keys[i];
                char named[16];
                size_t k = 0;
                const char *bytes = named;
                if (!arg || !arg[0])
                        return error_set(err, -EINVAL, "send-keys: an empty key");
                if (encode_named(arg, app_cursor, named, &k) < 0) {
                        k = strlen(arg);
                        bytes = arg;
                        if (!utf8_valid((const unsigned char *)arg, k))
                                return error_set(err, -EINVAL, "send-keys: key %zu is not UTF-8",
                                                 i + 1);
                }
                if (k > cap - len)
                        return error_set(err, -E2BIG, "send-keys types at most %zu bytes", cap);
                memcpy(out + len, bytes, k);
                len += k;
        }
        *ret_len = len;
        return 0;
}

/* In path's directory (a buffer of PATH_MAX), the program tmux, or NULL. */
static const char *in_dir(char *path, size_t dlen, size_t size)
{
        if (dlen == 0 || dlen + 6 > size)
                return NULL;
        memcpy(path + dlen, "/tmux", 6);
        return access(path, X_OK) == 0 ? path : NULL;
}

/* The delivered bundle's programs (CONFIG_BUNDLE_PATH/bin): the bundle's
 * loader is an absolute path there, so it is no setting. */
#define BUNDLE_BIN "/opt/hangar/bin/"

/* tmux refuses to start without a UTF-8 locale, and an image with no tmux
 * may have no locale either: the bundle's tmux has glibc's C.UTF-8 beside
 * its libraries, used unless the environment names a locale path. Only for
 * the bundle's: LOCPATH turns glibc's locale archive off, and an image's
 * own tmux (and what its panes run) keeps the image's locales. */
static void bundle_locale(const char *tmux)
{
        static const char locpath[] = BUNDLE_BIN "../lib/locale";
        if (strncmp(tmux, BUNDLE_BIN, strlen(BUNDLE_BIN)) != 0 ||
            strchr(tmux + strlen(BUNDLE_BIN), '/'))
                return;
        if (access(locpath, R_OK | X_OK) == 0)
                (void)setenv("LOCPATH", locpath, 0);
}

const char *tmux_find(void)
{
        static char found[4096];
        const char *env = getenv("HANGAR_TMUX");
        if (env && env[0])
                return env[0] == '/' && access(env, X_OK) == 0 ? env : NULL;
        const char *path = getenv("PATH");
        if (!path || !path[0])
                path = "/usr/local/bin:/usr/bin:/bin";
        const char *hit = NULL;
        while (*path && !hit) {
                const char *colon = strchr(path, ':');
                size_t dlen = colon ? (size_t)(colon - path) : strlen(path);
                if (path[0] == '/' && dlen < sizeof(found)) {
                        memcpy(found, path, dlen);
                        hit = in_dir(found, dlen, sizeof(found));
                }
                path += dlen + (colon ? 1 : 0);
        }
        /* Else beside the driver's own program: a bundle delivered into an
         * image with no tmux (docs/images.md) carries its own. */
        if (!hit) {
                ssize_t n = readlink("/proc/self/exe", found, sizeof(found) - 1);
                char *slash = n > 0 ? memrchr(found, '/', (size_t)n) : NULL;
                if (slash)
                        hit = in_dir(found, (size_t)(slash - found), sizeof(found));
        }
        if (hit)
                bundle_locale(hit);
        return hit;
}

static int64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int tmux_run(const char *tmux, const char *socket, char *const args[], char **ret_out,
             size_t *ret_len, hg_error_t *err)
{
        char *argv[64];
        size_t n = 0;
        argv[n++] = (char *)tmux;
        argv[n++] = "-S";
        argv[n++] = (char *)socket;
        argv[n++] = "-f";
        argv[n++] = "/dev/null";
        for (size_t i = 0; args[i]; i++) {
                if (n + 1 >= sizeof(argv) / sizeof(argv[0]))
                        return error_set(err, -E2BIG, "tmux: too many arguments");
                argv[n++] = args[i];
        }
        argv[n] = NULL;
        spawn_opts_t o = {.argv = argv, .merge_stderr = true, .stdin_null = true};
        spawn_child_t ch;
        int r = spawn_start(&o, &ch, err);
        if (r < 0)
                return r;
        _cleanup_close_ int out_fd = ch.out_fd;
        size_t cap = 4096, len = 0;
        _cleanup_free_ char *out = malloc(cap);
        if (!out) {
                (void)spawn_signal_group(ch.pid, SIGKILL);
                (void)waitpid(ch.pid, NULL, 0);
                return error_set(err, -ENOMEM, "out of memory");
        }
        int64_t deadline = now_ms() + TMUX_TIMEOUT_MS;
        bool timed_out = false;
        for (;;) {
                int64_t left = deadline - now_ms();
                if (left <= 0) {
                        timed_out = true;
                        break;
                }
                struct pollfd p = {.fd = out_fd, .events = POLLIN};
                int pr = poll(&p, 1, (int)left);
                if (pr < 0 && errno == EINTR)
                        continue;
                if (pr <= 0)
                        continue;
                if (len + 4096 > cap && cap < TMUX_OUTPUT_MAX) {
                        char *bigger = realloc(out, cap * 2);
                        if (!bigger)
                                break;
                        out = bigger;
                        cap *= 2;
                }
                ssize_t k = read(out_fd, out + len, cap - len - 1 > 4096 ? 4096 : cap - len - 1);
                if (k < 0 && (errno == EINTR || errno == EAGAIN))
                        continue;
                if (k <= 0)
                        break;
                len += (size_t)k;
                if (len + 1 >= TMUX_OUTPUT_MAX)
                        break;
        }
        int status = 0;
        if (timed_out)
                (void)spawn_signal_group(ch.pid, SIGKILL);
        /* The tmux client exits as soon as its output is closed; a server it
         * forked is in its own session and is not waited for. */
        while (waitpid(ch.pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (timed_out)
                return error_set(err, -ETIMEDOUT, "tmux %s: no answer within %d ms", args[0],
                                 TMUX_TIMEOUT_MS);
        out[len] = '\0';
        if (ret_len)
                *ret_len = len;
        if (ret_out)
                *ret_out = TAKE_PTR(out);
        if (WIFSIGNALED(status))
                return 128 + WTERMSIG(status);
        return WEXITSTATUS(status);
}
