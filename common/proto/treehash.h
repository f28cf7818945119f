/* The working tree's hash (docs/design/trees-and-gate.md): `hangar-driver tree`, run in
 * the agent's container through the relay after each edit. SHA-256 over a
 * canonical walk, deterministic whatever the order readdir returns:
 *
 *   file     H("blob " size "\0" contents)
 *   symlink  H("link " len "\0" target)           never followed
 *   other    H("special " mode "\0")               fifos, sockets, devices: never opened
 *   dir      H("tree " n "\0" entries)  entries sorted by name (bytes), each
 *            "<kind> <mode-octal> <name>\0<32-byte hash>"; kind is one of
 *            blob, link, special, tree; mode keeps the permission bits
 *
 * so modes, symlinks and empty directories all change the hash. Nothing
 * outside the root is read: every step is openat() relative to an already
 * open directory with O_NOFOLLOW, and a file is hashed only if what was
 * opened is the regular file lstat saw (a swap between the two is an error,
 * not a read elsewhere). Entries named ".git" are skipped, as git does. */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"

#define TREEHASH_HEX_LEN   64
#define TREEHASH_MAX_DEPTH 256

typedef struct treehash_stats {
        uint64_t files, dirs, symlinks, specials, bytes;
} treehash_stats_t;

/* Hashes the tree at root. manifest (may be NULL) gets one line per entry,
 * "<hex> <kind> <mode-octal> <path>\n", paths relative to root, in walk
 * order. */
int treehash_compute(const char *root, FILE *manifest, char ret_hex[TREEHASH_HEX_LEN + 1],
                     treehash_stats_t *ret_stats, hg_error_t *err);
