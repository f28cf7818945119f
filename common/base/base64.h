/* Base64 (RFC 4648, standard alphabet, padded, no line breaks): JSON Patch
 * payloads, caBundles and Secret data. Encoding is table-driven here (the
 * webhook's hot path); decoding checks the alphabet, then uses OpenSSL. */
#pragma once

#include <stddef.h>

#include "error.h"

/* Writes the encoding of len bytes (4 * ceil(len / 3) characters, no NUL)
 * into out and returns how many it wrote. A multiple of 3 bytes encoded per
 * call keeps chunks concatenable. */
size_t base64_encode_into(char *out, const void *data, size_t len);
/* A new NUL-terminated string, or NULL on allocation failure. */
char *base64_encode(const void *data, size_t len);
/* Decodes text (whitespace-free) into a new NUL-terminated buffer; the
 * decoded length (without the NUL) goes to *ret_len if not NULL. */
int base64_decode(const char *text, char **ret, size_t *ret_len, hg_error_t *err);
