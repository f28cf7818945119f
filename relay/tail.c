#include "tail.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tail_init(tail_t *t, size_t cap)
{
        tail_t n = {.cap = cap};
        if (cap && !(n.buf = malloc(cap)))
                return -ENOMEM;
        *t = n;
        return 0;
}

void tail_free(tail_t *t)
{
        free(t->buf);
        *t = (tail_t){0};
}

void tail_append(tail_t *t, const uint8_t *data, size_t n)
{
        if (n == 0)
                return;
        if (n >= t->cap) { /* only the end of this chunk survives */
                t->truncated = t->truncated || t->len > 0 || n > t->cap;
                if (t->cap)
                        memcpy(t->buf, data + (n - t->cap), t->cap);
                t->start = 0;
                t->len = t->cap;
                return;
        }
        size_t overflow = t->len + n > t->cap ? t->len + n - t->cap : 0;
        if (overflow) {
                t->start = (t->start + overflow) % t->cap;
                t->len -= overflow;
                t->truncated = true;
        }
        size_t end = (t->start + t->len) % t->cap;
        size_t first = n < t->cap - end ? n : t->cap - end;
        memcpy(t->buf + end, data, first);
        memcpy(t->buf, data + first, n - first);
        t->len += n;
}

void tail_copy(const tail_t *t, uint8_t *out)
{
        if (t->len == 0)
                return;
        size_t first = t->len < t->cap - t->start ? t->len : t->cap - t->start;
        memcpy(out, t->buf + t->start, first);
        memcpy(out + first, t->buf, t->len - first);
}
