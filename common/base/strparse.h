/* Strict number and flag parsing: the only way this project turns text into
 * numbers. Each rejects empty input, signs where none belong, leading or
 * trailing junk and overflow, returning -EINVAL or -ERANGE. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

int parse_u32(const char *s, uint32_t *ret);
int parse_u64(const char *s, uint64_t *ret);
int parse_i64(const char *s, int64_t *ret);
/* true/false, yes/no, on/off, 1/0 (case-insensitive), as env vars are written. */
int parse_bool(const char *s, bool *ret);
