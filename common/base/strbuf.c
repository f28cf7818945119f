#include "strbuf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int strbuf_reserve(strbuf_t *sb, size_t extra)
{
        if (extra > SIZE_MAX - sb->len - 1)
                return -ENOMEM;
        size_t need = sb->len + extra + 1;
        if (need <= sb->cap)
                return 0;
        size_t cap = sb->cap ? sb->cap : 64;
        while (cap < need)
                cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        char *p = realloc(sb->data, cap);
        if (!p)
                return -ENOMEM;
        sb->data = p;
        sb->cap = cap;
        return 0;
}

int strbuf_append_slow(strbuf_t *sb, const char *bytes, size_t n)
{
        int r = strbuf_reserve(sb, n);
        if (r < 0)
                return r;
        if (n)
                memcpy(sb->data + sb->len, bytes, n);
        sb->len += n;
        sb->data[sb->len] = '\0';
        return 0;
}

int strbuf_puts(strbuf_t *sb, const char *s)
{
        return strbuf_append(sb, s, strlen(s));
}

int strbuf_printf(strbuf_t *sb, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -EINVAL;
        int r = strbuf_reserve(sb, (size_t)n);
        if (r < 0)
                return r;
        va_start(ap, fmt);
        (void)vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        sb->len += (size_t)n;
        return 0;
}

void strbuf_truncate(strbuf_t *sb, size_t len)
{
        if (sb->data && len < sb->len) {
                sb->len = len;
                sb->data[len] = '\0';
        }
}

char *strbuf_take(strbuf_t *sb)
{
        char *s = sb->data ? sb->data : strdup("");
        sb->data = NULL;
        sb->len = sb->cap = 0;
        return s;
}

void strbuf_free(strbuf_t *sb)
{
        free(sb->data);
        sb->data = NULL;
        sb->len = sb->cap = 0;
}

void utf8_trim_incomplete(char *s)
{
        size_t n = strlen(s);
        /* Walk back over continuation bytes (10xxxxxx) to the lead byte. */
        size_t i = n, cont = 0;
        while (i > 0 && cont < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
                i--;
                cont++;
        }
        if (i == 0)
                return;
        unsigned char lead = (unsigned char)s[i - 1];
        size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
        if (want > 1 && cont + 1 < want)
                s[i - 1] = '\0';
}
