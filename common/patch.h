/* A JSON Patch builder that applies every operation to the document as it
 * emits it. Whether an array or map exists is read from the document, never
 * remembered separately, so an absent array is created exactly once and later
 * appends see it (the bug ANCHORS.md records in vault-k8s). At the end the
 * document is the patched object and `ops` the patch that produces it. */
#pragma once

#include <jansson.h>

#include "error.h"

typedef struct patch {
        json_t *doc; /* borrowed; mutated in place */
        json_t *ops; /* owned JSON array of operations */
} patch_t;

int patch_init(patch_t *p, json_t *doc);
void patch_free(patch_t *p);

/* Emits {"op":"add","path":path,"value":value}. Steals value. */
int patch_add(patch_t *p, const char *path, json_t *value, hg_error_t *err);

/* Appends value to the array parent_path/key, creating the array if absent
 * (or null). Steals value. */
int patch_append(patch_t *p, const char *parent_path, const char *key, json_t *value,
                 hg_error_t *err);

/* Sets member name of the map parent_path/key, creating the map if absent
 * (or null). Steals value. */
int patch_set_member(patch_t *p, const char *parent_path, const char *key, const char *name,
                     json_t *value, hg_error_t *err);
