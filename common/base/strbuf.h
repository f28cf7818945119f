/* A growable, always NUL-terminated byte buffer: for building JSON pointers,
 * metrics text and request bodies without guessing sizes. Functions return 0
 * or -ENOMEM; after a failure the buffer keeps what it had. */
#pragma once

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
        char *data; /* NUL-terminated; NULL until the first append */
        size_t len;
        size_t cap;
} strbuf_t;

int strbuf_append_slow(strbuf_t *sb, const char *bytes, size_t n);

/* Appends n bytes. Inline: serializers call this for every token. */
static inline int strbuf_append(strbuf_t *sb, const char *bytes, size_t n)
{
        if (sb->data && n < sb->cap - sb->len) {
                __builtin_memcpy(sb->data + sb->len, bytes, n);
                sb->len += n;
                sb->data[sb->len] = '\0';
                return 0;
        }
        return strbuf_append_slow(sb, bytes, n);
}
int strbuf_puts(strbuf_t *sb, const char *s);
int strbuf_printf(strbuf_t *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void strbuf_truncate(strbuf_t *sb, size_t len);
/* Returns the string (never NULL: "" for an empty buffer) and resets sb;
 * the caller frees it. NULL only on allocation failure. */
char *strbuf_take(strbuf_t *sb);
void strbuf_free(strbuf_t *sb);

/* Cuts a multi-byte UTF-8 character that a bounded copy (snprintf) left
 * incomplete at the end of s, so the text stays valid for JSON. */
void utf8_trim_incomplete(char *s);

static inline void cleanup_strbufp(strbuf_t *sb)
{
        strbuf_free(sb);
}
#define _cleanup_strbuf_ __attribute__((cleanup(cleanup_strbufp)))
