#include "strparse.h"

#include <errno.h>
#include <stdlib.h>
#include <strings.h>

static int parse_digits_u64(const char *s, uint64_t *ret)
{
        if (!s || !*s)
                return -EINVAL;
        uint64_t v = 0;
        for (const char *p = s; *p; p++) {
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                unsigned d = (unsigned)(*p - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

int parse_u64(const char *s, uint64_t *ret)
{
        uint64_t v;
        int r = parse_digits_u64(s, &v);
        if (r < 0)
                return r;
        *ret = v;
        return 0;
}

int parse_u32(const char *s, uint32_t *ret)
{
        uint64_t v;
        int r = parse_digits_u64(s, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *ret = (uint32_t)v;
        return 0;
}

int parse_i64(const char *s, int64_t *ret)
{
        if (!s)
                return -EINVAL;
        bool negative = (*s == '-');
        uint64_t v;
        int r = parse_digits_u64(negative ? s + 1 : s, &v);
        if (r < 0)
                return r;
        if (negative) {
                if (v > (uint64_t)INT64_MAX + 1)
                        return -ERANGE;
                *ret = (v == (uint64_t)INT64_MAX + 1) ? INT64_MIN : -(int64_t)v;
        } else {
                if (v > (uint64_t)INT64_MAX)
                        return -ERANGE;
                *ret = (int64_t)v;
        }
        return 0;
}

int parse_bool(const char *s, bool *ret)
{
        static const char *const truthy[] = {"1", "true", "yes", "on"};
        static const char *const falsy[] = {"0", "false", "no", "off"};
        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(truthy) / sizeof(truthy[0]); i++) {
                if (strcasecmp(s, truthy[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(s, falsy[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}
