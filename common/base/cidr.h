/* An address range in CIDR notation (IPv4 or IPv6), read strictly: the
 * webhook's trusted client sources (server.trustedClientCIDRs), checked
 * with the rest of its settings and matched by its connection table. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

typedef struct cidr {
        int family; /* AF_INET or AF_INET6 */
        uint8_t addr[16];
        uint8_t prefix;
} cidr_t;

/* "10.0.0.0/8", "fd00::/64" or a bare address (a /32 or /128): -EINVAL for
 * anything else, host bits included. */
int cidr_parse(const char *text, cidr_t *ret);

/* Whether addr (family's bytes: 4 or 16) is in c. */
bool cidr_contains(const cidr_t *c, int family, const uint8_t *addr);
