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
