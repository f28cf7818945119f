#include "ctlargs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctlsock.h"
#include "strparse.h"
#include "token.h"

size_t ctlargs_json_end(const char *buf, size_t len)
{
        size_t depth = 0, i = 0;
        bool in_string = false, escaped = false;
        while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
                i++;
        if (i == len || (buf[i] != '{' && buf[i] != '['))
                return 0;
        for (; i < len; i++) {
                char ch = buf[i];
                if (in_string) {
                        if (escaped)
                                escaped = false;
                        else if (ch == '\\')
                                escaped = true;
                        else if (ch == '"')
                                in_string = false;
                } else if (ch == '"') {
                        in_string = true;
                } else if (ch == '{' || ch == '[') {
                        depth++;
                } else if ((ch == '}' || ch == ']') && --depth == 0) {
                        return i + 1;
                }
        }
        return 0;
}

int ctlargs_read_text(const char *path, size_t max, char **ret_text, size_t *ret_len)
{
        char *text = malloc(max + 1);
        size_t len = 0;
        int r = text ? 0 : -ENOMEM;
        _cleanup_close_ int fd = -1;
        if (r == 0 && strcmp(path, "-") != 0 &&
            (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
                r = -errno;
        while (r == 0) {
                ssize_t n = read(fd >= 0 ? fd : STDIN_FILENO, text + len, max + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        r = -errno;
                else if (n == 0)
                        break;
                else if ((len += (size_t)n) > max)
                        r = -EFBIG;
                else if (fd < 0 && ctlargs_json_end(text, len) > 0)
                        break; /* stdin: a whole spec is in (see ctlargs.h) */
        }
        if (r < 0) {
                if (text)
                        token_wipe(text, len);
                free(text);
                return r;
        }
        text[len] = '\0';
        *ret_text = text;
        *ret_len = len;
        return 0;
}

static int usage_error(ctlreq_op_t op, hg_error_t *err)
{
        char synopsis[256];
        if (ctlop_synopsis(op, synopsis, sizeof(synopsis)) < 0)
                synopsis[0] = '\0';
        return error_set(err, -EINVAL, "usage: hangar-driver ctl %s", synopsis);
}

static const char *option_of(const ctlop_member_t *m, char *buf, size_t size)
{
        if (m->option)
                return m->option;
        snprintf(buf, size, "--%s", m->name);
        return buf;
}

/* The option member argv[i] names, or NULL. */
static const ctlop_member_t *find_option(const ctlop_t *o, const char *word)
{
        char buf[64];
        for (size_t m = 0; m < CTLOP_MEMBERS_MAX && o->members[m].name; m++) {
                const ctlop_member_t *mb = &o->members[m];
                bool is_option = mb->cli == CTLOP_CLI_FLAG || mb->cli == CTLOP_CLI_SWITCH ||
                                 mb->cli == CTLOP_CLI_FILE;
                if (is_option && strcmp(word, option_of(mb, buf, sizeof(buf))) == 0)
                        return mb;
        }
        return NULL;
}

/* One value from its word, as the member's type says. */
static json_t *value_of(const ctlop_member_t *m, const char *word)
{
        if (m->type == CTLOP_UINT) {
                uint64_t v = 0;
                return parse_u64(word, &v) == 0 && v <= (uint64_t)INT64_MAX
                           ? json_integer((json_int_t)v)
                           : NULL;
        }
        return json_string(word);
}

static int read_file_member(json_t *req, const ctlop_member_t *m, const char *path, hg_error_t *err)
{
        char *text = NULL;
        size_t len = 0;
        int r = ctlargs_read_text(path, CTLSOCK_REQUEST_MAX, &text, &len);
        if (r < 0)
                return error_set(err, r, "%s: %s", path, strerror(-r));
        json_t *v = json_stringn(text, len);
        token_wipe(text, len);
        free(text);
        if (!v)
                return error_set(err, -EINVAL, "%s: not UTF-8 text", path);
        json_object_set_new(req, m->name, v);
        return 0;
}

/* The words left, from argv[i], as the member's array. */
static json_t *words_of(int argc, char *const *argv, int i)
{
        json_t *a = json_array();
        for (; a && i < argc; i++)
                if (json_array_append_new(a, json_string(argv[i])) < 0) {
                        json_decref(a);
                        return NULL;
                }
        return a;
}

int ctlargs_build(int argc, char *const *argv, json_t **ret_req, ctlreq_op_t *ret_op,
                  hg_error_t *err)
{
        int words = 0;
        ctlreq_op_t op = ctlop_by_words(argc, argv, &words);
        if (op == CTLREQ_OP_COUNT)
                return error_set(err, -ENOENT, "no op \"%.40s\" (hangar-driver ctl --help)",
                                 argc > 0 ? argv[0] : "");
        const ctlop_t *o = ctlop_get(op);
        _cleanup_json_ json_t *req = json_pack("{s:s}", "op", o->name);
        if (!req)
                return error_set(err, -ENOMEM, "out of memory");
        int i = words, r;
        /* Options, in any order, until the first word that is not one. */
        const ctlop_member_t *m;
        while (i < argc && (m = find_option(o, argv[i]))) {
                if (json_object_get(req, m->name))
                        return usage_error(op, err); /* given twice */
                if (m->cli == CTLOP_CLI_SWITCH) {
                        json_object_set_new(req, m->name, json_true());
                        i++;
                        continue;
                }
                if (i + 1 >= argc)
                        return usage_error(op, err);
                if (m->cli == CTLOP_CLI_FILE) {
                        if ((r = read_file_member(req, m, argv[i + 1], err)) < 0)
                                return r;
                } else {
                        json_t *v = value_of(m, argv[i + 1]);
                        if (!v)
                                return usage_error(op, err);
                        json_object_set_new(req, m->name, v);
                }
                i += 2;
        }
        /* Then the positional members, in the row's order. */
        for (size_t k = 0; k < CTLOP_MEMBERS_MAX && o->members[k].name; k++) {
                m = &o->members[k];
                if (m->cli == CTLOP_CLI_ARG) {
                        json_t *v = i < argc ? value_of(m, argv[i]) : NULL;
                        if (!v)
                                return usage_error(op, err);
                        json_object_set_new(req, m->name, v);
                        i++;
                } else if (m->cli == CTLOP_CLI_WORDS || m->cli == CTLOP_CLI_COMMAND) {
                        if (m->cli == CTLOP_CLI_COMMAND &&
                            (i >= argc || strcmp(argv[i], "--") != 0))
                                return usage_error(op, err);
                        i += m->cli == CTLOP_CLI_COMMAND;
                        if (i >= argc)
                                return usage_error(op, err);
                        json_t *a = words_of(argc, argv, i);
                        if (!a)
                                return error_set(err, -ENOMEM, "out of memory");
                        json_object_set_new(req, m->name, a);
                        i = argc;
                }
        }
        if (i != argc)
                return usage_error(op, err);
        for (size_t k = 0; k < CTLOP_MEMBERS_MAX && o->members[k].name; k++)
                if (o->members[k].required && !json_object_get(req, o->members[k].name))
                        return usage_error(op, err);
        *ret_req = TAKE_PTR(req);
        *ret_op = op;
        return 0;
}
