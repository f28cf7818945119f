/* A JSON Patch builder that applies every operation to the document as it
 * emits it. Whether an array or map exists is read from the document, never
 * remembered separately, so an absent array is created exactly once and later
 * appends see it (the bug ANCHORS.md records in vault-k8s). At the end the
 * document is the patched object and `ops` the patch that produces it.
 *
 * Each operation is written out as JSON text the moment it is emitted, so
 * later operations, which change the document's values (an append to an
 * array an earlier op created), can never change an emitted one; no value is
 * copied to keep it that way. */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "strbuf.h"

typedef struct patch {
        json_t *doc;  /* borrowed; mutated in place */
        strbuf_t ops; /* the operations so far: always a complete JSON array */
        size_t n_ops;
        strbuf_t path; /* scratch for building each op's path */
} patch_t;

int patch_init(patch_t *p, json_t *doc);
void patch_free(patch_t *p);

/* Emits {"op":"add","path":path,"value":value}. Steals value. */
int patch_add(patch_t *p, const char *path, json_t *value, hg_error_t *err);

/* Emits {"op":"remove","path":path}: path (an array index as the array is
 * now, after the ops before it) must be there. Removing several elements
 * of one array, go from the last to the first so each index is still the
 * element meant. */
int patch_remove(patch_t *p, const char *path, hg_error_t *err);

/* Appends value to the array parent_path/key, creating the array if absent
 * (or null). Steals value. */
int patch_append(patch_t *p, const char *parent_path, const char *key, json_t *value,
                 hg_error_t *err);

/* patch_append for a value whose JSON text (what jsondump writes for it)
 * the caller has already, so it is copied rather than written out again. */
int patch_append_known(patch_t *p, const char *parent_path, const char *key, json_t *value,
                       const char *text, hg_error_t *err);

/* Sets member name of the map parent_path/key, creating the map if absent
 * (or null). Steals value. */
int patch_set_member(patch_t *p, const char *parent_path, const char *key, const char *name,
                     json_t *value, hg_error_t *err);

/* The patch as JSON text ("[...]", malloc'd; the caller frees it), leaving p
 * empty (patch_free it still); NULL when there are no operations. */
char *patch_take_ops(patch_t *p);
