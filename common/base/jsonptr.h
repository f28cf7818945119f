/* JSON Pointer (RFC 6901) building and resolving, and the JSON Patch "add"
 * and "remove" operations (RFC 6902) applied to a jansson document. Escaping order matters:
 * '~' becomes "~0" before '/' becomes "~1", so "a~1b" round-trips. */
#pragma once

#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "strbuf.h"

/* Appends "/" and the escaped segment to sb. */
int jsonptr_append(strbuf_t *sb, const char *segment);
int jsonptr_append_index(strbuf_t *sb, size_t index);

/* The value at path in doc (borrowed); -ENOENT if any step is missing,
 * -EINVAL if the pointer is malformed. "" is the whole document. */
int jsonptr_get(json_t *doc, const char *path, json_t **ret, hg_error_t *err);

/* RFC 6902 add: sets an object member (replacing it), inserts into an array
 * at an index (0..size) or appends with "-". The parent must exist. Takes a
 * new reference to value; the caller keeps its own. */
int jsonptr_add(json_t *doc, const char *path, json_t *value, hg_error_t *err);

/* RFC 6902 remove: deletes an object member, or the array element at an
 * index (0..size-1; "-" is no element). The value must be there (-ENOENT
 * for a missing member, -EINVAL for a bad index). */
int jsonptr_remove(json_t *doc, const char *path, hg_error_t *err);
