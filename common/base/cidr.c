#include "cidr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "strparse.h"

int cidr_parse(const char *text, cidr_t *ret)
{
        char addr[INET6_ADDRSTRLEN + 1];
        const char *slash = strchr(text, '/');
        size_t n = slash ? (size_t)(slash - text) : strlen(text);
        if (n == 0 || n >= sizeof(addr))
                return -EINVAL;
        memcpy(addr, text, n);
        addr[n] = '\0';
        cidr_t c = {0};
        unsigned max;
        if (inet_pton(AF_INET, addr, c.addr) == 1) {
                c.family = AF_INET;
                max = 32;
        } else if (inet_pton(AF_INET6, addr, c.addr) == 1) {
                c.family = AF_INET6;
                max = 128;
        } else {
                return -EINVAL;
        }
        uint32_t prefix = max;
        if (slash && (parse_u32(slash + 1, &prefix) < 0 || prefix > max))
                return -EINVAL;
        /* Host bits set mean a typo (10.0.0.1/8 for 10.0.0.0/8?): refuse. */
        for (unsigned bit = prefix; bit < max; bit++)
                if (c.addr[bit / 8] & (0x80u >> (bit % 8)))
                        return -EINVAL;
        c.prefix = (uint8_t)prefix;
        *ret = c;
        return 0;
}

bool cidr_contains(const cidr_t *c, int family, const uint8_t *addr)
{
        if (c->family != family)
                return false;
        unsigned full = c->prefix / 8, rest = c->prefix % 8;
        if (memcmp(c->addr, addr, full) != 0)
                return false;
        if (rest == 0)
                return true;
        uint8_t mask = (uint8_t)(0xffu << (8 - rest));
        return (c->addr[full] & mask) == (addr[full] & mask);
}
