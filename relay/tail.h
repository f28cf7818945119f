/* The last N bytes of a command's output: a ring that keeps the tail of
 * whatever is appended and remembers whether anything fell off the front. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tail {
        uint8_t *buf;
        size_t cap;   /* 0: keep nothing (only count) */
        size_t start; /* index of the oldest byte */
        size_t len;
        bool truncated;
} tail_t;

int tail_init(tail_t *t, size_t cap);
void tail_free(tail_t *t);
void tail_append(tail_t *t, const uint8_t *data, size_t n);
/* Copies the kept bytes, oldest first, into out (at least t->len bytes). */
void tail_copy(const tail_t *t, uint8_t *out);
