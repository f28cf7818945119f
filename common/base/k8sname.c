#include "k8sname.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

static bool is_alnum(char c)
{
        return isascii((unsigned char)c) && isalnum((unsigned char)c);
}

bool k8s_is_dns1123_label(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 63)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                          (c == '-' && i > 0 && i < n - 1);
                if (!ok)
                        return false;
        }
        return true;
}

static bool is_dns1123_subdomain_n(const char *s, size_t n)
{
        if (n == 0 || n > 253)
                return false;
        size_t start = 0;
        for (size_t i = 0; i <= n; i++) {
                if (i == n || s[i] == '.') {
                        if (i == start)
                                return false;
                        if (s[start] == '-' || s[i - 1] == '-')
                                return false;
                        start = i + 1;
                        continue;
                }
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                        return false;
        }
        return true;
}

bool k8s_is_dns1123_subdomain(const char *s)
{
        return is_dns1123_subdomain_n(s, strlen(s));
}

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? up to 63 characters. */
static bool is_name_part(const char *s, size_t n)
{
        if (n == 0 || n > 63 || !is_alnum(s[0]) || !is_alnum(s[n - 1]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return false;
        return true;
}

bool k8s_is_qualified_name(const char *s)
{
        const char *slash = strchr(s, '/');
        if (!slash)
                return is_name_part(s, strlen(s));
        if (strchr(slash + 1, '/'))
                return false;
        return is_dns1123_subdomain_n(s, (size_t)(slash - s)) &&
               is_name_part(slash + 1, strlen(slash + 1));
}

bool k8s_is_label_value(const char *s)
{
        size_t n = strlen(s);
        return n == 0 || is_name_part(s, n);
}

bool k8s_is_quantity(const char *s)
{
        static const char *const suffixes[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u",
                                               "m",  "k",  "M",  "G",  "T",  "P",  "E", ""};
        const char *p = s;
        size_t digits = 0;
        while (*p >= '0' && *p <= '9')
                p++, digits++;
        if (*p == '.') {
                p++;
                while (*p >= '0' && *p <= '9')
                        p++, digits++;
        }
        if (digits == 0)
                return false;
        if (*p == 'e' || *p == 'E') {
                const char *q = p + 1;
                if (*q == '+' || *q == '-')
                        q++;
                if (*q >= '0' && *q <= '9') {
                        while (*q >= '0' && *q <= '9')
                                q++;
                        if (*q == '\0')
                                return true;
                }
                /* "E" alone is the exa suffix: fall through to the suffix list. */
        }
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
                if (strcmp(p, suffixes[i]) == 0)
                        return true;
        return false;
}

int k8s_quantity_value(const char *s, long double *ret)
{
        static const struct {
                const char *suffix;
                long double factor;
        } suffixes[] = {
            {"Ki", 0x1p10L}, {"Mi", 0x1p20L}, {"Gi", 0x1p30L}, {"Ti", 0x1p40L},
            {"Pi", 0x1p50L}, {"Ei", 0x1p60L}, {"n", 1e-9L},    {"u", 1e-6L},
            {"m", 1e-3L},    {"k", 1e3L},     {"M", 1e6L},     {"G", 1e9L},
            {"T", 1e12L},    {"P", 1e15L},    {"E", 1e18L},    {"", 1.0L},
        };
        if (!k8s_is_quantity(s))
                return -EINVAL;
        long double v = 0, scale = 1;
        const char *p = s;
        for (; *p >= '0' && *p <= '9'; p++)
                v = v * 10 + (*p - '0');
        if (*p == '.')
                for (p++; *p >= '0' && *p <= '9'; p++) {
                        scale /= 10;
                        v += (*p - '0') * scale;
                }
        if ((*p == 'e' || *p == 'E') && p[1] != '\0') {
                /* An exponent (k8s_is_quantity checked its digits). */
                const char *q = p + 1;
                bool negative = *q == '-';
                if (*q == '+' || *q == '-')
                        q++;
                unsigned e = 0;
                for (; *q >= '0' && *q <= '9'; q++)
                        if (e < 10000)
                                e = e * 10 + (unsigned)(*q - '0');
                for (unsigned i = 0; i < e && v != 0 && v < 1e4000L && v > 1e-4000L; i++)
                        v = negative ? v / 10 : v * 10;
                *ret = v;
                return 0;
        }
        for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
                if (strcmp(p, suffixes[i].suffix) == 0) {
                        *ret = v * suffixes[i].factor;
                        return 0;
                }
        return -EINVAL;
}
