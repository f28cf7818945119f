#include "procstatus.h"

#include <errno.h>
#include <string.h>

#include "strparse.h"

static const struct {
        const char *key;
        cap_set_t set;
        const char *name;
} cap_lines[] = {
    {"CapInh", CAP_SET_INHERITABLE, "inheritable"}, {"CapPrm", CAP_SET_PERMITTED, "permitted"},
    {"CapEff", CAP_SET_EFFECTIVE, "effective"},     {"CapBnd", CAP_SET_BOUNDING, "bounding"},
    {"CapAmb", CAP_SET_AMBIENT, "ambient"},
};

const char *cap_set_name(cap_set_t set)
{
        for (size_t i = 0; i < sizeof(cap_lines) / sizeof(cap_lines[0]); i++)
                if (cap_lines[i].set == set)
                        return cap_lines[i].name;
        return "?";
}

static int parse_hex64(const char *s, uint64_t *ret)
{
        size_t n = strlen(s);
        if (n == 0 || n > 16)
                return -EINVAL;
        uint64_t v = 0;
        for (const char *p = s; *p; p++) {
                unsigned d;
                if (*p >= '0' && *p <= '9')
                        d = (unsigned)(*p - '0');
                else if (*p >= 'a' && *p <= 'f')
                        d = (unsigned)(*p - 'a' + 10);
                else if (*p >= 'A' && *p <= 'F')
                        d = (unsigned)(*p - 'A' + 10);
                else
                        return -EINVAL;
                v = (v << 4) | d;
        }
        *ret = v;
        return 0;
}

/* Splits value on tabs/spaces into up to max unsigned numbers. */
static int parse_ids(char *value, uint32_t *out, size_t max, size_t *count)
{
        size_t n = 0;
        char *p = value;
        for (;;) {
                p += strspn(p, " \t");
                if (!*p)
                        break;
                size_t len = strcspn(p, " \t");
                char saved = p[len];
                p[len] = '\0';
                int r = n == max ? -E2BIG : parse_u32(p, &out[n]);
                p[len] = saved;
                if (r < 0)
                        return r;
                n++;
                p += len;
        }
        *count = n;
        return 0;
}

static int parse_line(char *line, proc_status_t *st)
{
        char *colon = strchr(line, ':');
        if (!colon)
                return 0; /* not a "Key:" line: ignore */
        *colon = '\0';
        char *value = colon + 1;
        value += strspn(value, " \t");
        size_t n;
        if (strcmp(line, "Uid") == 0 || strcmp(line, "Gid") == 0) {
                uint32_t *ids = line[0] == 'U' ? st->uid : st->gid;
                if (parse_ids(value, ids, 4, &n) < 0 || n != 4)
                        return -EINVAL;
                if (line[0] == 'U')
                        st->have_uid = true;
                else
                        st->have_gid = true;
                return 0;
        }
        if (strcmp(line, "Groups") == 0) {
                if (parse_ids(value, st->groups, PROCSTATUS_MAX_GROUPS, &st->ngroups) < 0)
                        return -EINVAL;
                st->have_groups = true;
                return 0;
        }
        for (size_t i = 0; i < sizeof(cap_lines) / sizeof(cap_lines[0]); i++) {
                if (strcmp(line, cap_lines[i].key) != 0)
                        continue;
                if (parse_hex64(value, &st->cap[cap_lines[i].set]) < 0)
                        return -EINVAL;
                st->have_cap[cap_lines[i].set] = true;
                return 0;
        }
        if (strcmp(line, "NoNewPrivs") == 0 || strcmp(line, "Seccomp") == 0) {
                uint32_t v;
                if (parse_u32(value, &v) < 0)
                        return -EINVAL;
                if (line[0] == 'N') {
                        st->no_new_privs = v;
                        st->have_no_new_privs = true;
                } else {
                        st->seccomp = v;
                        st->have_seccomp = true;
                }
        }
        return 0;
}

int procstatus_parse(const char *text, size_t len, proc_status_t *ret, hg_error_t *err)
{
        if (len > PROCSTATUS_MAX_BYTES)
                return error_set(err, -EFBIG, "status larger than %d bytes", PROCSTATUS_MAX_BYTES);
        proc_status_t st = {0};
        size_t lineno = 0;
        const char *p = text, *end = text + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                if (!nl)
                        nl = end;
                lineno++;
                char line[1024];
                size_t n = (size_t)(nl - p);
                if (memchr(p, '\0', n))
                        return error_set(err, -EINVAL, "status line %zu: NUL byte", lineno);
                if (n >= sizeof(line))
                        return error_set(err, -EINVAL, "status line %zu is too long", lineno);
                memcpy(line, p, n);
                line[n] = '\0';
                if (parse_line(line, &st) < 0)
                        return error_set(err, -EINVAL, "status line %zu is malformed", lineno);
                p = nl + 1;
        }
        *ret = st;
        return 0;
}

int capmask_full(const char *text, uint64_t *ret, hg_error_t *err)
{
        char buf[16];
        size_t n = strcspn(text, "\n");
        if (n == 0 || n >= sizeof(buf) || text[n + (text[n] == '\n')] != '\0')
                return error_set(err, -EINVAL, "cap_last_cap is not a number");
        memcpy(buf, text, n);
        buf[n] = '\0';
        uint32_t last;
        if (parse_u32(buf, &last) < 0 || last > 63)
                return error_set(err, -EINVAL, "cap_last_cap '%s' is out of range", buf);
        *ret = last == 63 ? UINT64_MAX : (UINT64_C(1) << (last + 1)) - 1;
        return 0;
}
