#include "mountinfo.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "strparse.h"

void mountinfo_free(mount_table_t *t)
{
        for (size_t i = 0; i < t->n; i++) {
                mount_entry_t *e = &t->entries[i];
                free(e->root);
                free(e->mount_point);
                free(e->mount_options);
                free(e->fstype);
                free(e->source);
                free(e->super_options);
        }
        free(t->entries);
        t->entries = NULL;
        t->n = 0;
}

/* A copy of field [s, s+n) with \ooo octal escapes decoded; anything else
 * after a backslash, or an escape outside 1..255, is malformed. */
static int decode_field(const char *s, size_t n, char **ret)
{
        _cleanup_free_ char *out = malloc(n + 1);
        if (!out)
                return -ENOMEM;
        size_t o = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] != '\\') {
                        out[o++] = s[i];
                        continue;
                }
                if (n - i < 4)
                        return -EINVAL;
                unsigned v = 0;
                for (size_t k = 1; k <= 3; k++) {
                        char c = s[i + k];
                        if (c < '0' || c > '7')
                                return -EINVAL;
                        v = v * 8 + (unsigned)(c - '0');
                }
                if (v == 0 || v > 255)
                        return -EINVAL;
                out[o++] = (char)v;
                i += 3;
        }
        out[o] = '\0';
        *ret = TAKE_PTR(out);
        return 0;
}

/* Splits line into space-separated fields. Empty fields are kept: gVisor
 * writes an empty optional-fields part ("ro  - 9p"); the caller decides
 * where one is allowed. */
#define MAX_FIELDS 64
static int split(const char *line, size_t len, const char **starts, size_t *lens, size_t *count)
{
        size_t n = 0, i = 0;
        for (;;) {
                if (n == MAX_FIELDS)
                        return -E2BIG;
                size_t j = i;
                while (j < len && line[j] != ' ')
                        j++;
                starts[n] = line + i;
                lens[n++] = j - i;
                if (j >= len)
                        break;
                i = j + 1;
        }
        *count = n;
        return 0;
}

static int parse_uint_field(const char *s, size_t n, unsigned *ret)
{
        char buf[16];
        if (n == 0 || n >= sizeof(buf))
                return -EINVAL;
        memcpy(buf, s, n);
        buf[n] = '\0';
        uint32_t v;
        int r = parse_u32(buf, &v);
        if (r == 0)
                *ret = v;
        return r;
}

static bool is_dev_field(const char *s, size_t n)
{
        const char *colon = memchr(s, ':', n);
        if (!colon || colon == s || colon == s + n - 1)
                return false;
        for (const char *p = s; p < s + n; p++)
                if (p != colon && (*p < '0' || *p > '9'))
                        return false;
        return true;
}

static int parse_line(const char *line, size_t len, mount_entry_t *e)
{
        const char *f[MAX_FIELDS];
        size_t fl[MAX_FIELDS], n;
        int r = split(line, len, f, fl, &n);
        if (r < 0)
                return r;
        /* Find the "-" separator after the six fixed fields and any optional ones. */
        size_t sep = 0;
        for (size_t i = 6; i < n; i++)
                if (fl[i] == 1 && f[i][0] == '-') {
                        sep = i;
                        break;
                }
        /* Three fields after "-" (SUPER_OPTIONS may be empty). The six fixed
         * fields and FSTYPE and SOURCE must not be; only the optional fields
         * between them and "-" may be. */
        if (sep == 0 || n != sep + 4)
                return -EINVAL;
        for (size_t i = 0; i < 6; i++)
                if (fl[i] == 0)
                        return -EINVAL;
        if (fl[sep + 1] == 0 || fl[sep + 2] == 0)
                return -EINVAL;
        if (parse_uint_field(f[0], fl[0], &e->id) < 0 ||
            parse_uint_field(f[1], fl[1], &e->parent_id) < 0 || !is_dev_field(f[2], fl[2]))
                return -EINVAL;
        if ((r = decode_field(f[3], fl[3], &e->root)) < 0 ||
            (r = decode_field(f[4], fl[4], &e->mount_point)) < 0 ||
            (r = decode_field(f[5], fl[5], &e->mount_options)) < 0 ||
            (r = decode_field(f[sep + 1], fl[sep + 1], &e->fstype)) < 0 ||
            (r = decode_field(f[sep + 2], fl[sep + 2], &e->source)) < 0)
                return r;
        r = decode_field(f[sep + 3], fl[sep + 3], &e->super_options);
        if (r < 0)
                return r;
        /* The mount point is always a path. The root need not be: a bind
         * mount of a namespace file (`ip netns add`, a CRI's pinned netns)
         * has the nsfs dentry's name as its root, "net:[4026532328]". */
        if (e->mount_point[0] != '/')
                return -EINVAL;
        e->read_only = mountinfo_has_option(e->mount_options, "ro");
        return 0;
}

int mountinfo_parse(const char *text, size_t len, mount_table_t *ret, hg_error_t *err)
{
        if (len > MOUNTINFO_MAX_BYTES)
                return error_set(err, -EFBIG, "mountinfo larger than %d bytes",
                                 MOUNTINFO_MAX_BYTES);
        mount_table_t t = {0};
        size_t cap = 0, lineno = 0;
        const char *p = text, *end = text + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                if (!nl)
                        nl = end; /* a last line without newline is accepted */
                lineno++;
                if (memchr(p, '\0', (size_t)(nl - p))) {
                        mountinfo_free(&t);
                        return error_set(err, -EINVAL, "mountinfo line %zu: NUL byte", lineno);
                }
                if (t.n == cap) {
                        if (cap == MOUNTINFO_MAX_ENTRIES) {
                                mountinfo_free(&t);
                                return error_set(err, -E2BIG, "mountinfo: more than %d mounts",
                                                 MOUNTINFO_MAX_ENTRIES);
                        }
                        cap = cap ? cap * 2 : 32;
                        if (cap > MOUNTINFO_MAX_ENTRIES)
                                cap = MOUNTINFO_MAX_ENTRIES;
                        mount_entry_t *e = realloc(t.entries, cap * sizeof(*e));
                        if (!e) {
                                mountinfo_free(&t);
                                return -ENOMEM;
                        }
                        t.entries = e;
                }
                mount_entry_t *e = &t.entries[t.n];
                memset(e, 0, sizeof(*e));
                t.n++; /* counted now so a failure frees its partial fields */
                int r = parse_line(p, (size_t)(nl - p), e);
                if (r < 0) {
                        mountinfo_free(&t);
                        return error_set(err, r == -ENOMEM ? r : -EINVAL,
                                         "mountinfo line %zu is malformed", lineno);
                }
                p = nl + 1;
        }
        *ret = t;
        return 0;
}

const mount_entry_t *mountinfo_find(const mount_table_t *t, const char *path)
{
        for (size_t i = t->n; i > 0; i--)
                if (strcmp(t->entries[i - 1].mount_point, path) == 0)
                        return &t->entries[i - 1];
        return NULL;
}

bool mountinfo_has_option(const char *options, const char *opt)
{
        size_t n = strlen(opt);
        for (const char *p = options; p && *p;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t)(comma - p) : strlen(p);
                if (len == n && strncmp(p, opt, n) == 0)
                        return true;
                p = comma ? comma + 1 : NULL;
        }
        return false;
}
