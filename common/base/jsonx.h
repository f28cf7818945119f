/* JSON helpers over jansson: bounded, strict loading of untrusted bytes and
 * typed member access where missing and wrong-typed are told apart. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"

/* Deep enough for any Pod or AdmissionReview (they nest about 12 levels),
 * shallow enough that hostile input cannot exhaust the stack. */
#define JSONX_MAX_DEPTH 64

/* Parses exactly one JSON object or array from buf, rejecting duplicate keys,
 * NUL bytes in strings, trailing bytes and nesting deeper than max_depth. */
int jsonx_load(const char *buf, size_t len, unsigned max_depth, json_t **ret, hg_error_t *err);

/* Member of obj with the given type: 0 and *ret set (borrowed), -ENOENT if
 * absent (or JSON null), -EINVAL if present with another type. obj may be
 * NULL or not an object: that is -ENOENT. */
int jsonx_member(json_t *obj, const char *key, json_type type, json_t **ret);
int jsonx_string(json_t *obj, const char *key, const char **ret);
int jsonx_bool(json_t *obj, const char *key, bool *ret);

/* Human name of a JSON type for error messages ("an object", "a string"). */
const char *jsonx_type_name(const json_t *j);

/* json_dumps(j, flags), or NULL when any of the text could not be stored.
 * Use it instead of json_dumps: jansson 2.14's dumper ignores a failure to
 * write an object's key and returns the text without that key (under
 * memory pressure `{"driverSidecar": true}` came out as `{": true}`). The
 * text is written through a callback into a buffer of ours and refused on
 * the first failed write (tests/alloc, the config target); its memory comes
 * from jansson's allocator, as json_dumps's does (free() it as before). */
char *jsonx_dumps(const json_t *j, size_t flags);

/* Prints one compact JSON line {"<who>": outcome, "reason": reason, ...extra}
 * on stdout and flushes: the line a hangar-driver or hangar-relay run ends
 * with, for hangar to read. Returns status, so callers can return it. */
int jsonx_print_outcome(int status, const char *who, const char *outcome, const char *reason,
                        json_t *extra);
