/* A strict RFC 8259 reader that builds jansson values.
 *
 * Why not json_loadb: jansson's loader reads byte by byte through a stream
 * abstraction and costs ~100-300 instructions per input byte here, which
 * made parsing most of the webhook's time per review (130 us for a typical
 * 3 KB AdmissionReview; 3 ms for a pod with 1500 env vars). This reader scans
 * spans with plain loops and hands whole strings to jansson, and keeps
 * jansson as the document model everything else uses.
 *
 * It accepts exactly what json_loadb with JSON_REJECT_DUPLICATES accepts,
 * and more strictly where that matters for untrusted input: one object or
 * array at the top, nothing but whitespace after it, valid UTF-8 only, no
 * NUL (raw or \u0000), no lone surrogates, no duplicate keys, integers that
 * fit in 64 bits, nesting no deeper than max_depth. */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "error.h"

int jsonparse_load(const char *buf, size_t len, unsigned max_depth, json_t **ret, hg_error_t *err);

/* A projection: which parts of a document to build. Reading through one
 * checks every byte exactly as jsonparse_load does (same order, same
 * messages: an input one refuses, the other refuses alike) but builds only
 * what the projection names; the rest is read and dropped. So a reader that
 * looks only at the named parts sees the same values either way, at the cost
 * of the bytes it skips rather than of the values it would have built.
 *
 * For an object, `members` lists the members to build (each through its
 * own projection; a NULL projection builds the member whole), and `others`,
 * when set, is the projection every member it does not list is built
 * through (so a reader can tell which members are there without building
 * their values; unset, they are dropped); for an array,
 * `items` is the projection of every element (NULL: elements built whole).
 * A value the projection does not describe (a scalar, an array where members
 * were expected, an object where items were) is built whole, so a reader
 * checking types sees the wrong type as it is. */
typedef struct jsonparse_proj jsonparse_proj_t;

typedef struct jsonparse_member {
        const char *key;
        size_t len;
        const jsonparse_proj_t *proj;
} jsonparse_member_t;

struct jsonparse_proj {
        const jsonparse_member_t *members; /* ends with a NULL key */
        const jsonparse_proj_t *items;
        const jsonparse_proj_t *others; /* members not listed; NULL: dropped */
};

/* One entry of a members list: JSONPARSE_MEMBER("name", &proj_or_NULL). */
#define JSONPARSE_MEMBER(name, proj)             \
        {                                        \
                (name), sizeof(name) - 1, (proj) \
        }
#define JSONPARSE_MEMBERS_END \
        {                     \
                NULL, 0, NULL \
        }

/* jsonparse_load through a projection (NULL: the whole document). */
int jsonparse_load_projected(const char *buf, size_t len, unsigned max_depth,
                             const jsonparse_proj_t *proj, json_t **ret, hg_error_t *err);
