/* The relay token: FRAME_TOKEN_SIZE random bytes from the kernel (kernrand.h), kept
 * as lowercase hex text in files and on the relay's stdin, compared in
 * constant time. One token per turn; the driver accepts it on two
 * connections only (io, then ctl). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "frame.h"

#define TOKEN_HEX_LEN (2u * FRAME_TOKEN_SIZE)

typedef struct token {
        uint8_t bytes[FRAME_TOKEN_SIZE];
} token_t;

/* Fresh random bytes from getrandom(2) (kernrand.h); -errno if the kernel
 * refuses them (never a weak fallback). */
int token_generate(token_t *ret);

/* text[TOKEN_HEX_LEN + 1]: the hex form, NUL-terminated. */
void token_to_hex(const token_t *t, char text[TOKEN_HEX_LEN + 1]);

/* Parses exactly TOKEN_HEX_LEN hex digits (either case), optionally followed
 * by one "\n" (a line on stdin) and nothing else. -EINVAL otherwise. */
int token_from_hex(const char *text, size_t len, token_t *ret, hg_error_t *err);

/* Constant-time comparison of a token and FRAME_TOKEN_SIZE bytes off the wire. */
bool token_matches(const token_t *t, const uint8_t candidate[FRAME_TOKEN_SIZE]);

/* Overwrites a token (or any secret) in a way the compiler keeps. */
void token_wipe(void *p, size_t n);
