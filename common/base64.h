/* Base64 (RFC 4648, standard alphabet, padded, no line breaks) with OpenSSL:
 * JSON Patch payloads, caBundles and Secret data. */
#pragma once

#include <stddef.h>

#include "error.h"

/* A new NUL-terminated string, or NULL on allocation failure. */
char *base64_encode(const void *data, size_t len);
/* Decodes text (whitespace-free) into a new NUL-terminated buffer; the
 * decoded length (without the NUL) goes to *ret_len if not NULL. */
int base64_decode(const char *text, char **ret, size_t *ret_len, hg_error_t *err);
