/* Helpers shared by the unit tests (check(3)): running a suite, JSON from
 * literals, temporary directories, and an RFC 6901/6902 reader and "add"
 * applier written independently of common/base/jsonptr.c, so a test can check the
 * code under test against a second implementation instead of against itself;
 * and loopback TCP sockets for the tests that play a peer.
 * Everything here is static inline: each test is its own executable. */
#pragma once

#include <arpa/inet.h>
#include <errno.h>
#include <ftw.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <check.h>
#include <jansson.h>

/* Runs every test of s (check's default fork mode: one child per test) and
 * returns the process exit status. */
static inline int unit_run(Suite *s)
{
        SRunner *sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        int failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Parses a JSON literal written in a test; a bad literal is a test bug. */
static inline json_t *unit_json(const char *text)
{
        json_error_t jerr;
        json_t *j = json_loads(text, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
        if (!j)
                ck_abort_msg("bad JSON literal in test (%s): %s", jerr.text, text);
        return j;
}

static inline void unit_json_decrefp(json_t **j)
{
        json_decref(*j);
}
#define _unit_json_ __attribute__((cleanup(unit_json_decrefp)))

/* Compact, key-sorted text of j for messages and byte comparisons (malloc'd). */
static inline char *unit_dump(const json_t *j)
{
        char *s = j ? json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        return s ? s : strdup("(null)");
}

#define ck_assert_json_eq(got, want)                                                     \
        do {                                                                             \
                json_t *_g = (got), *_w = (want);                                        \
                if (!_g || !_w || !json_equal(_g, _w)) {                                 \
                        char *_gs = unit_dump(_g), *_ws = unit_dump(_w);                 \
                        ck_abort_msg("JSON differs:\n  got:  %s\n  want: %s", _gs, _ws); \
                }                                                                        \
        } while (0)

/* An hg_error_t's message contains needle. */
#define ck_assert_msg_has(err, needle)                                                       \
        ck_assert_msg(strstr((err).message, (needle)), "message lacks \"%s\": %s", (needle), \
                      (err).message)

/* Same, with the expectation written as a JSON literal. */
#define ck_assert_json_eq_text(got, want_text)        \
        do {                                          \
                json_t *_want = unit_json(want_text); \
                ck_assert_json_eq((got), _want);      \
                json_decref(_want);                   \
        } while (0)

/* A fresh directory under $TMPDIR (or /tmp), written into buf. */
static inline void unit_mkdtemp(char *buf, size_t n)
{
        const char *base = getenv("TMPDIR");
        int w = snprintf(buf, n, "%s/hangar-unit.XXXXXX", base && *base ? base : "/tmp");
        ck_assert_msg(w > 0 && (size_t)w < n, "temporary path too long");
        ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp: %s", strerror(errno));
}

static inline int unit_rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
        (void)st;
        (void)flag;
        (void)f;
        return remove(path);
}

/* Unsets every environment variable whose name starts with PREFIX, so that
 * nothing of the caller's environment leaks into a test. */
static inline void unit_unsetenv_prefix(const char *prefix)
{
        extern char **environ;
        size_t plen = strlen(prefix);
        for (;;) {
                char name[256] = "";
                for (char **e = environ; *e; e++) {
                        size_t n = strcspn(*e, "=");
                        if (strncmp(*e, prefix, plen) == 0 && n < sizeof(name)) {
                                memcpy(name, *e, n);
                                name[n] = '\0';
                                break;
                        }
                }
                if (!name[0])
                        return;
                ck_assert_int_eq(unsetenv(name), 0);
        }
}

/* Writes text to dir/name, replacing what was there; returns the path (a
 * static buffer, good until the next call). */
static inline const char *unit_write_file(const char *dir, const char *name, const char *text)
{
        static char path[4200];
        int w = snprintf(path, sizeof(path), "%s/%s", dir, name);
        ck_assert_msg(w > 0 && (size_t)w < sizeof(path), "path too long");
        (void)unlink(path);
        FILE *f = fopen(path, "wxe");
        ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
        size_t n = strlen(text);
        ck_assert_uint_eq(fwrite(text, 1, n, f), n);
        ck_assert_int_eq(fclose(f), 0);
        return path;
}

/* Removes a directory tree made by unit_mkdtemp. */
static inline void unit_rmtree(const char *dir)
{
        (void)nftw(dir, unit_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- loopback TCP ---- */

/* A socket listening on 127.0.0.1 at a port the kernel picks (*ret_port). */
static inline int unit_loopback_listen(int backlog, uint16_t *ret_port)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t sl = sizeof(sa);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(fd, backlog), 0);
        ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
        *ret_port = ntohs(sa.sin_port);
        return fd;
}

/* A connection to 127.0.0.1:port whose reads give up after 5 s, or -1 with
 * the connect's errno in *ret_errno. */
static inline int unit_loopback_try_connect(uint16_t port, int *ret_errno)
{
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        struct timeval tv = {.tv_sec = 5};
        ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                *ret_errno = errno;
                close(fd);
                return -1;
        }
        return fd;
}

/* The same, where a refused connection is a test failure. */
static inline int unit_loopback_connect(uint16_t port)
{
        int e = 0;
        int fd = unit_loopback_try_connect(port, &e);
        ck_assert_msg(fd >= 0, "connect to 127.0.0.1:%u: %s", (unsigned)port, strerror(e));
        return fd;
}

/* All n bytes in one send, or the test fails (no SIGPIPE). */
static inline void unit_send_all(int fd, const void *p, size_t n)
{
        ck_assert_int_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

/* Decodes one RFC 6901 reference token the way the RFC describes it: first
 * every "~1" becomes "/", then every "~0" becomes "~". Returns malloc'd text,
 * or NULL for a malformed escape. */
static inline char *unit_ptr_token(const char *start, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (start[i] == '~' && (i + 1 >= n || (start[i + 1] != '0' && start[i + 1] != '1')))
                        return NULL;
        char *a = strndup(start, n);
        if (!a)
                return NULL;
        const char *pass[2][2] = {{"~1", "/"}, {"~0", "~"}};
        for (int p = 0; p < 2; p++) {
                char *hit;
                size_t from = 0;
                while ((hit = strstr(a + from, pass[p][0]))) {
                        *hit = pass[p][1][0];
                        memmove(hit + 1, hit + 2, strlen(hit + 2) + 1);
                        from = (size_t)(hit - a) + 1;
                }
        }
        return a;
}

/* An RFC 6901 array index: "0" or digits without a leading zero; -1 if not. */
static inline long unit_ptr_index(const char *tok)
{
        if (!*tok || (tok[0] == '0' && tok[1]) || strlen(tok) > 9)
                return -1;
        long v = 0;
        for (const char *p = tok; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -1;
                v = v * 10 + (*p - '0');
        }
        return v;
}

/* Resolves path in doc (borrowed result), or NULL if absent or malformed. */
static inline json_t *unit_at(json_t *doc, const char *path)
{
        if (*path && *path != '/')
                return NULL;
        json_t *cur = doc;
        const char *p = path;
        while (cur && *p) {
                const char *start = p + 1, *end = strchr(start, '/');
                if (!end)
                        end = start + strlen(start);
                char *tok = unit_ptr_token(start, (size_t)(end - start));
                if (!tok)
                        return NULL;
                if (json_is_object(cur)) {
                        cur = json_object_get(cur, tok);
                } else if (json_is_array(cur)) {
                        long idx = unit_ptr_index(tok);
                        cur = idx >= 0 ? json_array_get(cur, (size_t)idx) : NULL;
                } else {
                        cur = NULL;
                }
                free(tok);
                p = end;
        }
        return cur;
}

/* Applies one RFC 6902 "add" to doc; 0 or -1. */
static inline int unit_apply_add(json_t *doc, const char *path, json_t *value)
{
        const char *slash = strrchr(path, '/');
        if (!slash)
                return -1;
        size_t plen = (size_t)(slash - path);
        char *parent_path = strndup(path, plen);
        char *last = unit_ptr_token(slash + 1, strlen(slash + 1));
        json_t *parent = parent_path ? unit_at(doc, parent_path) : NULL;
        int r = -1;
        if (last && json_is_object(parent)) {
                r = json_object_set(parent, last, value);
        } else if (last && json_is_array(parent)) {
                size_t size = json_array_size(parent);
                if (strcmp(last, "-") == 0) {
                        r = json_array_append(parent, value);
                } else {
                        long idx = unit_ptr_index(last);
                        if (idx >= 0 && (size_t)idx <= size)
                                r = json_array_insert(parent, (size_t)idx, value);
                }
        }
        free(parent_path);
        free(last);
        return r;
}

/* Applies one RFC 6902 "remove" to doc; 0 or -1. */
static inline int unit_apply_remove(json_t *doc, const char *path)
{
        const char *slash = strrchr(path, '/');
        if (!slash)
                return -1;
        char *parent_path = strndup(path, (size_t)(slash - path));
        char *last = unit_ptr_token(slash + 1, strlen(slash + 1));
        json_t *parent = parent_path ? unit_at(doc, parent_path) : NULL;
        int r = -1;
        if (last && json_is_object(parent) && json_object_get(parent, last)) {
                r = json_object_del(parent, last);
        } else if (last && json_is_array(parent)) {
                long idx = unit_ptr_index(last);
                if (idx >= 0 && (size_t)idx < json_array_size(parent))
                        r = json_array_remove(parent, (size_t)idx);
        }
        free(parent_path);
        free(last);
        return r;
}

/* Applies a JSON Patch made of "add" and "remove" operations (all this
 * project emits); any other op or a failed step is -1. */
static inline int unit_apply_patch(json_t *doc, json_t *ops)
{
        size_t i;
        json_t *op;
        if (!json_is_array(ops))
                return -1;
        json_array_foreach (ops, i, op) {
                const char *kind = json_string_value(json_object_get(op, "op"));
                const char *path = json_string_value(json_object_get(op, "path"));
                json_t *value = json_object_get(op, "value");
                if (kind && path && strcmp(kind, "remove") == 0 && json_object_size(op) == 2) {
                        if (unit_apply_remove(doc, path) < 0)
                                return -1;
                        continue;
                }
                if (!kind || strcmp(kind, "add") != 0 || !path || !value ||
                    json_object_size(op) != 3)
                        return -1;
                /* A deep copy: the patch must stay as it was. */
                json_t *copy = json_deep_copy(value);
                int r = unit_apply_add(doc, path, copy);
                json_decref(copy);
                if (r < 0)
                        return -1;
        }
        return 0;
}

/* Number of ops in a patch whose path is exactly path. */
static inline size_t unit_count_ops(json_t *ops, const char *path)
{
        size_t i, n = 0;
        json_t *op;
        json_array_foreach (ops, i, op) {
                const char *p = json_string_value(json_object_get(op, "path"));
                if (p && strcmp(p, path) == 0)
                        n++;
        }
        return n;
}

/* Index of the first op whose path is exactly path, or -1. */
static inline long unit_find_op(json_t *ops, const char *path)
{
        size_t i;
        json_t *op;
        json_array_foreach (ops, i, op) {
                const char *p = json_string_value(json_object_get(op, "path"));
                if (p && strcmp(p, path) == 0)
                        return (long)i;
        }
        return -1;
}
