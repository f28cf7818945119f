#include "jsondump.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Which bytes a JSON string must escape: '"', '\\' and the C0 controls. */
static const bool must_escape[256] = {
    [0x00] = 1, [0x01] = 1, [0x02] = 1, [0x03] = 1, [0x04] = 1, [0x05] = 1, [0x06] = 1,
    [0x07] = 1, [0x08] = 1, [0x09] = 1, [0x0a] = 1, [0x0b] = 1, [0x0c] = 1, [0x0d] = 1,
    [0x0e] = 1, [0x0f] = 1, [0x10] = 1, [0x11] = 1, [0x12] = 1, [0x13] = 1, [0x14] = 1,
    [0x15] = 1, [0x16] = 1, [0x17] = 1, [0x18] = 1, [0x19] = 1, [0x1a] = 1, [0x1b] = 1,
    [0x1c] = 1, [0x1d] = 1, [0x1e] = 1, [0x1f] = 1, ['"'] = 1,  ['\\'] = 1,
};

static int append_escape(strbuf_t *sb, unsigned char c)
{
        static const char hex[] = "0123456789ABCDEF";
        char esc[7] = {'\\', 0};
        size_t elen = 2;
        switch (c) {
        case '"':
        case '\\':
                esc[1] = (char)c;
                break;
        case '\b':
                esc[1] = 'b';
                break;
        case '\f':
                esc[1] = 'f';
                break;
        case '\n':
                esc[1] = 'n';
                break;
        case '\r':
                esc[1] = 'r';
                break;
        case '\t':
                esc[1] = 't';
                break;
        default:
                memcpy(esc + 1, "u00", 3);
                esc[4] = hex[c >> 4];
                esc[5] = hex[c & 0xF];
                elen = 6;
                break;
        }
        return strbuf_append(sb, esc, elen);
}

/* Eight bytes at a time: is any of them '"', '\\' or below 0x20? (Exact
 * for "any", which is all the scan needs; the bytewise loop then finds it.) */
static inline bool word_needs_escape(uint64_t x)
{
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
        uint64_t quote = x ^ (ones * '"'), bslash = x ^ (ones * '\\');
        uint64_t below_space = (x - ones * 0x20) & ~x;
        return ((below_space | ((quote - ones) & ~quote) | ((bslash - ones) & ~bslash)) & highs) !=
               0;
}

int jsondump_append_string(strbuf_t *sb, const char *str, size_t n)
{
        const unsigned char *p = (const unsigned char *)str, *end = p + n;
        const unsigned char *run = p; /* start of the pending run of plain bytes */
        int r = strbuf_append(sb, "\"", 1);
        while (r == 0) {
#ifdef __SSE2__
                /* Sixteen bytes at a time; x ^ 0x80 turns the unsigned test
                 * "below 0x20" into a signed one. */
                const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                              flip = _mm_set1_epi8((char)0x80),
                              limit = _mm_set1_epi8((char)(0x20 ^ 0x80));
                while (end - p >= 16) {
                        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
                        unsigned hit = (unsigned)_mm_movemask_epi8(_mm_or_si128(
                            _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                            _mm_cmplt_epi8(_mm_xor_si128(x, flip), limit)));
                        if (hit) {
                                p += __builtin_ctz(hit);
                                break;
                        }
                        p += 16;
                }
#endif
                while (end - p >= 8) {
                        uint64_t x;
                        memcpy(&x, p, sizeof(x));
                        if (word_needs_escape(x))
                                break;
                        p += 8;
                }
                while (p < end && !must_escape[*p])
                        p++;
                if (p >= end)
                        break;
                r = strbuf_append(sb, (const char *)run, (size_t)(p - run));
                if (r == 0)
                        r = append_escape(sb, *p);
                run = ++p;
        }
        if (r == 0)
                r = strbuf_append(sb, (const char *)run, (size_t)(end - run));
        if (r == 0)
                r = strbuf_append(sb, "\"", 1);
        return r;
}

/* A 64-bit integer in decimal, as printf's %lld writes it. */
static int append_integer(strbuf_t *sb, json_int_t v)
{
        char buf[24];
        char *o = buf + sizeof(buf);
        /* Through unsigned: -INT64_MIN does not fit in a json_int_t. */
        unsigned long long mag = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
        do {
                *--o = (char)('0' + mag % 10);
                mag /= 10;
        } while (mag);
        if (v < 0)
                *--o = '-';
        return strbuf_append(sb, o, (size_t)(buf + sizeof(buf) - o));
}

static int append_real(strbuf_t *sb, double d)
{
        if (!isfinite(d))
                return -EINVAL;
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "%.17g", d);
        if (n < 0 || (size_t)n >= sizeof(buf))
                return -EINVAL;
        /* Exponents as jansson writes them: "1e+308" becomes "1e308",
         * "1e-05" becomes "1e-5". */
        char *e = strchr(buf, 'e');
        if (e) {
                char *from = e + 1, *to = e + 1;
                if (*from == '+')
                        from++;
                else if (*from == '-')
                        *to++ = *from++;
                while (*from == '0' && from[1] != '\0')
                        from++;
                memmove(to, from, strlen(from) + 1);
                n = (int)strlen(buf);
        }
        /* Keep it a real when read back: "1" becomes "1.0", as jansson does. */
        if (!strpbrk(buf, ".eE") && (size_t)n + 2 < sizeof(buf)) {
                memcpy(buf + n, ".0", 3);
                n += 2;
        }
        return strbuf_append(sb, buf, (size_t)n);
}

int jsondump_append(strbuf_t *sb, const json_t *j)
{
        int r = 0;
        switch (json_typeof(j)) {
        case JSON_OBJECT: {
                const char *key;
                size_t key_len;
                json_t *value;
                bool first = true;
                r = strbuf_append(sb, "{", 1);
                /* By length: a key may hold a NUL byte (jansson allows it). */
                json_object_keylen_foreach ((json_t *)j, key, key_len, value) {
                        if (r == 0 && !first)
                                r = strbuf_append(sb, ",", 1);
                        first = false;
                        if (r == 0)
                                r = jsondump_append_string(sb, key, key_len);
                        if (r == 0)
                                r = strbuf_append(sb, ":", 1);
                        if (r == 0)
                                r = jsondump_append(sb, value);
                }
                return r == 0 ? strbuf_append(sb, "}", 1) : r;
        }
        case JSON_ARRAY: {
                r = strbuf_append(sb, "[", 1);
                for (size_t i = 0; r == 0 && i < json_array_size(j); i++) {
                        if (i > 0)
                                r = strbuf_append(sb, ",", 1);
                        if (r == 0)
                                r = jsondump_append(sb, json_array_get(j, i));
                }
                return r == 0 ? strbuf_append(sb, "]", 1) : r;
        }
        case JSON_STRING:
                return jsondump_append_string(sb, json_string_value(j), json_string_length(j));
        case JSON_INTEGER:
                return append_integer(sb, json_integer_value(j));
        case JSON_REAL:
                return append_real(sb, json_real_value(j));
        case JSON_TRUE:
                return strbuf_append(sb, "true", 4);
        case JSON_FALSE:
                return strbuf_append(sb, "false", 5);
        case JSON_NULL:
                return strbuf_append(sb, "null", 4);
        default:
                return -EINVAL;
        }
}

char *jsondump(const json_t *j)
{
        strbuf_t sb = {0};
        if (jsondump_append(&sb, j) < 0) {
                strbuf_free(&sb);
                return NULL;
        }
        return strbuf_take(&sb);
}
