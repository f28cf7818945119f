/* Compact JSON text from jansson values, byte-for-byte what json_dumps(j,
 * JSON_COMPACT | JSON_ENCODE_ANY) writes, at a fraction of its cost: jansson
 * re-decodes every string as UTF-8 one code point at a time while dumping,
 * which made encoding the answer a third of a review's time here. Strings
 * are written as raw UTF-8 with '"', '\\' and control characters escaped;
 * reals as jansson writes them (%.17g, with ".0" added when integral). */
#pragma once

#include <jansson.h>

#include "strbuf.h"

/* Appends the text of j to sb: 0, or -ENOMEM / -EINVAL (a real that is not
 * finite, which JSON cannot carry). */
int jsondump_append(strbuf_t *sb, const json_t *j);
/* Appends the JSON string of str[0..n) (valid UTF-8) to sb, quoted and
 * escaped as jsondump_append writes strings. */
int jsondump_append_string(strbuf_t *sb, const char *str, size_t n);
/* The text of j as a new string (NULL on failure). */
char *jsondump(const json_t *j);
