/* YAML documents (libyaml) as a small tree that keeps each node's line, for
 * configuration errors that name file, line and key, and a conversion to
 * JSON for manifests. Aliases are refused (no "billion laughs"), nesting and
 * duplicate keys are checked. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"

typedef enum ynode_kind {
        YNODE_SCALAR,
        YNODE_MAPPING,
        YNODE_SEQUENCE,
} ynode_kind_t;

typedef struct ynode {
        ynode_kind_t kind;
        unsigned line;        /* 1-based line of the node's start */
        char *scalar;         /* YNODE_SCALAR only */
        bool plain;           /* an unquoted, untagged scalar: may be a number/bool/null */
        bool tagged_str;      /* explicitly tagged !!str */
        struct ynode **items; /* SEQUENCE: items; MAPPING: key, value, key, value... */
        size_t n;             /* number of entries in items */
} ynode_t;

#define YAMLDOC_MAX_DEPTH     64
#define YAMLDOC_MAX_DOCUMENTS 1024 /* in one manifest stream */

/* Parses exactly one YAML document from buf. An input with no document at
 * all (empty, or only comments) is -ENODATA. */
int yamldoc_parse(const char *buf, size_t len, ynode_t **ret, hg_error_t *err);
void ynode_free(ynode_t *n);

/* Every document of a YAML stream ("---"-separated), in order: at least one,
 * at most max (-E2BIG). An empty document is an empty plain scalar. */
int yamldoc_parse_stream(const char *buf, size_t len, size_t max, ynode_t ***ret, size_t *ret_n,
                         hg_error_t *err);
void ynode_free_all(ynode_t **docs, size_t n);

/* Value of key in a mapping node, or NULL. */
const ynode_t *ynode_get(const ynode_t *map, const char *key);

/* Converts to JSON as Kubernetes' YAML decoder would (YAML 1.1 scalars:
 * yes/no/on/off are booleans, 0755 is octal, ~ is null). Mapping keys must
 * be scalars. */
int ynode_to_json(const ynode_t *n, json_t **ret, hg_error_t *err);

/* The manifests of a file ("-": stdin) of up to max bytes, as a JSON array:
 * one JSON object when it starts with '{', else every non-empty document of
 * a YAML stream (as `kubectl apply -f` reads it). None at all is -ENODATA.
 * Errors name the file. */
int yamldoc_load_manifests(const char *path, size_t max, json_t **ret, hg_error_t *err);

/* The same, for an input that must hold exactly one manifest. */
int yamldoc_load_manifest(const char *path, size_t max, json_t **ret, hg_error_t *err);

static inline void cleanup_ynodep(ynode_t **n)
{
        ynode_free(*n);
}
#define _cleanup_ynode_ __attribute__((cleanup(cleanup_ynodep)))
