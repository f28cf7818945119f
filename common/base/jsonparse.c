#include "jsonparse.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "cleanup.h"

typedef struct reader {
        const unsigned char *p;
        const unsigned char *end;
        const unsigned char *start;
        unsigned depth;
        unsigned max_depth;
        hg_error_t *err;
        char *scratch; /* decoded strings with escapes */
        size_t scratch_cap;
} reader_t;

static int fail(reader_t *r, const char *what)
{
        return error_set(r->err, -EINVAL, "malformed JSON at byte %zu: %s",
                         (size_t)(r->p - r->start), what);
}

static inline void skip_ws(reader_t *r)
{
        const unsigned char *p = r->p;
        /* Anything above ' ' is not whitespace: one test for compact JSON. */
        while (p < r->end && *p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
                p++;
        r->p = p;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 if invalid. Rejects
 * overlong forms, UTF-16 surrogates and code points above U+10FFFF. */
static size_t utf8_seq(const unsigned char *p, const unsigned char *end)
{
        unsigned char c = p[0];
        size_t n;
        uint32_t cp;
        if (c < 0x80)
                return 1;
        if (c >= 0xC2 && c <= 0xDF) {
                n = 2;
                cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
                n = 3;
                cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
                n = 4;
                cp = c & 0x07;
        } else {
                return 0;
        }
        if ((size_t)(end - p) < n)
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xC0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        return n;
}

static int scratch_reserve(reader_t *r, size_t need)
{
        if (need <= r->scratch_cap)
                return 0;
        size_t cap = r->scratch_cap ? r->scratch_cap : 256;
        while (cap < need)
                cap *= 2;
        char *s = realloc(r->scratch, cap);
        if (!s)
                return -ENOMEM;
        r->scratch = s;
        r->scratch_cap = cap;
        return 0;
}

static int hex4(const unsigned char *p, uint32_t *ret)
{
        uint32_t v = 0;
        for (int i = 0; i < 4; i++) {
                unsigned char c = p[i];
                unsigned d;
                if (c >= '0' && c <= '9')
                        d = c - '0';
                else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
                        d = (unsigned)((c | 0x20) - 'a' + 10);
                else
                        return -EINVAL;
                v = (v << 4) | d;
        }
        *ret = v;
        return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
        if (cp < 0x80) {
                o[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                o[0] = (char)(0xC0 | (cp >> 6));
                o[1] = (char)(0x80 | (cp & 0x3F));
                return 2;
        }
        if (cp < 0x10000) {
                o[0] = (char)(0xE0 | (cp >> 12));
                o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
                o[2] = (char)(0x80 | (cp & 0x3F));
                return 3;
        }
        o[0] = (char)(0xF0 | (cp >> 18));
        o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
}

/* Bytes a string holds as they are: printable ASCII but '"' (0x22) and
 * '\\' (0x5c); controls, quotes, escapes and UTF-8 take the careful path. */
static const bool plain_ascii[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x00 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x10 */
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x30 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x40 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 0x50 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x60 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x70 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x80 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0x90 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xa0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xb0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xc0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xd0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xe0 */
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 0xf0 */
};

/* Eight bytes at a time: a mask whose lowest set bit is the high bit of the
 * first byte that is not plain (see plain_ascii), 0 if all eight are plain.
 * (x - k repeated) & ~x sets a byte's high bit when the byte is below k
 * (k <= 0x80), and x ^ c repeated has a zero byte where x holds c; a borrow
 * can set bits above a true hit, never below one, so the lowest is exact. */
static inline uint64_t word_special(uint64_t x)
{
        const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
        uint64_t quote = x ^ (ones * '"'), bslash = x ^ (ones * '\\');
        return (x | ((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) |
                ((bslash - ones) & ~bslash)) &
               highs;
}

/* Index of the first byte in memory that a word_special mask marks. On a
 * big-endian machine borrows run towards lower addresses, so the first mark
 * is not exact there: 0 sends the scan byte by byte from the word's start,
 * where every case (plain bytes included) is handled, only slower. */
static inline unsigned first_marked_byte(uint64_t mask)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        return (unsigned)__builtin_ctzll(mask) / 8;
#else
        (void)mask;
        return 0;
#endif
}

/* An unaligned 8-byte load that sanitizers accept. */
typedef uint64_t __attribute__((aligned(1), may_alias)) unaligned_u64;

/* read_string from p on, for all but plain runs that end in the closing
 * quote: s is where the string's bytes start. Out of line: most strings never
 * get here, and the callers stay small. */
__attribute__((noinline)) static int read_string_rest(reader_t *r, const unsigned char *s,
                                                      const unsigned char *p, const char **ret_str,
                                                      size_t *ret_len)
{
        const unsigned char *const end = r->end;
        for (;;) {
                if (end - p >= 8) {
                        uint64_t special = word_special(*(const unaligned_u64 *)p);
                        if (!special) {
                                p += 8;
                                continue;
                        }
                        p += first_marked_byte(special);
                } else {
                        while (p < end && plain_ascii[*p])
                                p++;
                        if (p >= end)
                                break;
                }
                unsigned char c = *p;
                if (c == '"') {
                        *ret_str = (const char *)s;
                        *ret_len = (size_t)(p - s);
                        r->p = p + 1;
                        return 0;
                }
                if (c == '\\')
                        break;
                r->p = p;
                if (c < 0x20)
                        return fail(r, "control character in a string");
                size_t n = utf8_seq(p, end);
                if (!n)
                        return fail(r, "invalid UTF-8 in a string");
                p += n;
        }
        r->p = p;
        if (r->p >= r->end)
                return fail(r, "unterminated string");

        /* Slow path: decode escapes into scratch; output never exceeds input. */
        size_t prefix = (size_t)(r->p - s);
        if (scratch_reserve(r, (size_t)(r->end - s) + 1) < 0)
                return -ENOMEM;
        char *o = r->scratch;
        memcpy(o, s, prefix);
        o += prefix;
        while (r->p < r->end) {
                unsigned char c = *r->p;
                if (c == '"') {
                        *ret_str = r->scratch;
                        *ret_len = (size_t)(o - r->scratch);
                        r->p++;
                        return 0;
                }
                if (c < 0x20)
                        return fail(r, "control character in a string");
                if (c >= 0x80) {
                        size_t n = utf8_seq(r->p, r->end);
                        if (!n)
                                return fail(r, "invalid UTF-8 in a string");
                        memcpy(o, r->p, n);
                        o += n;
                        r->p += n;
                        continue;
                }
                if (c != '\\') {
                        *o++ = (char)c;
                        r->p++;
                        continue;
                }
                if (r->end - r->p < 2)
                        return fail(r, "unterminated escape");
                unsigned char e = r->p[1];
                r->p += 2;
                switch (e) {
                case '"':
                case '\\':
                case '/':
                        *o++ = (char)e;
                        break;
                case 'b':
                        *o++ = '\b';
                        break;
                case 'f':
                        *o++ = '\f';
                        break;
                case 'n':
                        *o++ = '\n';
                        break;
                case 'r':
                        *o++ = '\r';
                        break;
                case 't':
                        *o++ = '\t';
                        break;
                case 'u': {
                        uint32_t cp, lo;
                        if (r->end - r->p < 4 || hex4(r->p, &cp) < 0)
                                return fail(r, "bad \\u escape");
                        r->p += 4;
                        if (cp >= 0xDC00 && cp <= 0xDFFF)
                                return fail(r, "lone low surrogate");
                        if (cp >= 0xD800 && cp <= 0xDBFF) {
                                if (r->end - r->p < 6 || r->p[0] != '\\' || r->p[1] != 'u' ||
                                    hex4(r->p + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
                                        return fail(r, "lone high surrogate");
                                r->p += 6;
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        }
                        if (cp == 0)
                                return fail(r, "\\u0000 is not accepted");
                        o += put_utf8(o, cp);
                        break;
                }
                default:
                        return fail(r, "unknown escape");
                }
        }
        return fail(r, "unterminated string");
}

/* Reads a string (r->p at the opening quote). Its bytes are in *ret_str for
 * *ret_len bytes: pointing into the input when it had no escapes, else into
 * r->scratch. Valid UTF-8 without NUL either way. The common case, plain
 * bytes up to the closing quote, is decided here eight bytes at a time. */
static inline int read_string(reader_t *r, const char **ret_str, size_t *ret_len)
{
        const unsigned char *const s = r->p + 1; /* past the opening quote */
        const unsigned char *p = s;
#ifdef __SSE2__
        /* Sixteen bytes at a time: a signed compare below 0x20 catches the
         * controls and every byte from 0x80 up at once. */
        const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                      space = _mm_set1_epi8(0x20);
        while (r->end - p >= 16) {
                __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
                unsigned special = (unsigned)_mm_movemask_epi8(
                    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                 _mm_cmplt_epi8(x, space)));
                if (special) {
                        p += __builtin_ctz(special);
                        if (*p != '"')
                                break;
                        *ret_str = (const char *)s;
                        *ret_len = (size_t)(p - s);
                        r->p = p + 1;
                        return 0;
                }
                p += 16;
        }
#endif
        while (r->end - p >= 8) {
                uint64_t special = word_special(*(const unaligned_u64 *)p);
                if (special) {
                        p += first_marked_byte(special);
                        if (*p != '"')
                                break;
                        *ret_str = (const char *)s;
                        *ret_len = (size_t)(p - s);
                        r->p = p + 1;
                        return 0;
                }
                p += 8;
        }
        return read_string_rest(r, s, p, ret_str, ret_len);
}

static int read_number(reader_t *r, json_t **ret)
{
        const unsigned char *s = r->p;
        bool negative = false, integral = true;
        if (r->p < r->end && *r->p == '-') {
                negative = true;
                r->p++;
        }
        if (r->p >= r->end || *r->p < '0' || *r->p > '9')
                return fail(r, "bad number");
        uint64_t mag = 0;
        bool overflow = false;
        if (*r->p == '0') {
                r->p++;
        } else {
                while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
                        unsigned d = *r->p - '0';
                        if (mag > (UINT64_MAX - d) / 10)
                                overflow = true;
                        else
                                mag = mag * 10 + d;
                        r->p++;
                }
        }
        if (r->p < r->end && *r->p == '.') {
                integral = false;
                r->p++;
                if (r->p >= r->end || *r->p < '0' || *r->p > '9')
                        return fail(r, "bad number: digits must follow '.'");
                while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
                        r->p++;
        }
        if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
                integral = false;
                r->p++;
                if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
                        r->p++;
                if (r->p >= r->end || *r->p < '0' || *r->p > '9')
                        return fail(r, "bad number: digits must follow the exponent");
                while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
                        r->p++;
        }
        if (integral) {
                uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
                if (overflow || mag > limit)
                        return fail(r, "integer does not fit in 64 bits");
                if (!ret)
                        return 0;
                json_int_t v = negative ? (json_int_t)(0 - mag) : (json_int_t)mag;
                *ret = json_integer(v);
                return *ret ? 0 : -ENOMEM;
        }
        /* strtod needs a terminated copy: on the stack for the usual short
         * number, on the heap for a long one. */
        size_t n = (size_t)(r->p - s);
        char stack[64];
        _cleanup_free_ char *heap = n < sizeof(stack) ? NULL : malloc(n + 1);
        char *tmp = heap ? heap : stack;
        if (n >= sizeof(stack) && !heap)
                return -ENOMEM;
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        char *endp = NULL;
        double d = strtod(tmp, &endp);
        if (!endp || *endp || d == HUGE_VAL || d == -HUGE_VAL)
                return fail(r, "real number out of range");
        if (!ret)
                return 0;
        *ret = json_real(d);
        return *ret ? 0 : -ENOMEM;
}

static int read_literal(reader_t *r, const char *word, json_t *value, json_t **ret)
{
        size_t n = strlen(word);
        if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
                return fail(r, "invalid literal");
        r->p += n;
        if (ret)
                *ret = value;
        return 0;
}

static int read_value(reader_t *r, const jsonparse_proj_t *proj, json_t **ret);

/* After an element of an array or object: 1 when a ',' says another one
 * follows, 0 past the closing bracket, <0 with the error. */
static int after_element(reader_t *r, char close)
{
        skip_ws(r);
        if (r->p >= r->end)
                return fail(r, close == ']' ? "unterminated array" : "unterminated object");
        if (*r->p == ',') {
                r->p++;
                return 1;
        }
        if (*r->p == close) {
                r->p++;
                return 0;
        }
        return fail(r, close == ']' ? "expected ',' or ']'" : "expected ',' or '}'");
}

/* An array: built (each element through proj->items when given, whole
 * otherwise) when ret is set, only checked when it is NULL. */
static int read_array(reader_t *r, const jsonparse_proj_t *proj, json_t **ret)
{
        const jsonparse_proj_t *items = ret && proj ? proj->items : NULL;
        _cleanup_json_ json_t *arr = NULL;
        if (ret && !(arr = json_array()))
                return -ENOMEM;
        r->p++;
        skip_ws(r);
        if (r->p < r->end && *r->p == ']') {
                r->p++;
                if (ret)
                        *ret = TAKE_PTR(arr);
                return 0;
        }
        for (;;) {
                json_t *item = NULL;
                int rc = read_value(r, items, ret ? &item : NULL);
                if (rc < 0)
                        return rc;
                if (ret && json_array_append_new(arr, item) < 0)
                        return -ENOMEM;
                rc = after_element(r, ']');
                if (rc <= 0) {
                        if (rc == 0 && ret)
                                *ret = TAKE_PTR(arr);
                        return rc;
                }
        }
}

/* An object built whole: jansson's own table finds duplicate keys. */
static int build_object(reader_t *r, json_t **ret)
{
        _cleanup_json_ json_t *obj = json_object();
        if (!obj)
                return -ENOMEM;
        r->p++;
        skip_ws(r);
        if (r->p < r->end && *r->p == '}') {
                r->p++;
                *ret = TAKE_PTR(obj);
                return 0;
        }
        for (;;) {
                skip_ws(r);
                if (r->p >= r->end || *r->p != '"')
                        return fail(r, "expected a string key");
                /* Set by read_string whenever it returns 0; initialised for
                 * clang's analyzer, which does not follow it that far. */
                const char *k = NULL;
                size_t klen = 0;
                int rc = read_string(r, &k, &klen);
                if (rc < 0)
                        return rc;
                /* A key with escapes lives in scratch, which reading the value
                 * reuses: copy that one (rare); others point into the input. */
                _cleanup_free_ char *copy = NULL;
                if (k && k == r->scratch) {
                        copy = malloc(klen + 1);
                        if (!copy)
                                return -ENOMEM;
                        memcpy(copy, k, klen);
                        k = copy;
                }
                if (json_object_getn(obj, k, klen))
                        return fail(r, "duplicate object key");
                skip_ws(r);
                if (r->p >= r->end || *r->p != ':')
                        return fail(r, "expected ':'");
                r->p++;
                json_t *value = NULL;
                rc = read_value(r, NULL, &value);
                if (rc < 0)
                        return rc;
                if (json_object_setn_new_nocheck(obj, k, klen, value) < 0)
                        return -ENOMEM;
                rc = after_element(r, '}');
                if (rc <= 0) {
                        if (rc == 0)
                                *ret = TAKE_PTR(obj);
                        return rc;
                }
        }
}

/* The keys of one object that is not built whole, for finding duplicates:
 * the first few in a list searched in order (objects are small), the rest
 * in a jansson object used as a set (its hash is seeded, so a hostile
 * object of many keys costs what it costs jansson when built whole). */
#define KEYSET_LIST 16

typedef struct key_copy {
        struct key_copy *next;
        char bytes[];
} key_copy_t;

typedef struct keyset {
        struct {
                const char *key;
                size_t len;
        } list[KEYSET_LIST];
        size_t n;
        json_t *set;        /* past KEYSET_LIST keys */
        key_copy_t *copies; /* keys that had escapes (they were in scratch) */
} keyset_t;

static void keyset_free(keyset_t *ks)
{
        json_decref(ks->set);
        while (ks->copies) {
                key_copy_t *c = ks->copies;
                ks->copies = c->next;
                free(c);
        }
}

/* Adds key k: 1 if it was there already, 0 if added, -ENOMEM. *k is moved
 * to a copy when it points into scratch, so it stays valid. */
static int keyset_add(reader_t *r, keyset_t *ks, const char **k, size_t klen)
{
        if (*k == r->scratch) {
                key_copy_t *c = malloc(sizeof(*c) + klen + 1);
                if (!c)
                        return -ENOMEM;
                memcpy(c->bytes, *k, klen);
                c->bytes[klen] = '\0';
                c->next = ks->copies;
                ks->copies = c;
                *k = c->bytes;
        }
        if (!ks->set) {
                for (size_t i = 0; i < ks->n; i++)
                        if (ks->list[i].len == klen &&
                            (klen == 0 || (ks->list[i].key[0] == (*k)[0] &&
                                           ks->list[i].key[klen - 1] == (*k)[klen - 1] &&
                                           memcmp(ks->list[i].key, *k, klen) == 0)))
                                return 1;
                if (ks->n < KEYSET_LIST) {
                        ks->list[ks->n].key = *k;
                        ks->list[ks->n].len = klen;
                        ks->n++;
                        return 0;
                }
                if (!(ks->set = json_object()))
                        return -ENOMEM;
                for (size_t i = 0; i < ks->n; i++)
                        if (json_object_setn_new_nocheck(ks->set, ks->list[i].key, ks->list[i].len,
                                                         json_null()) < 0)
                                return -ENOMEM;
        }
        if (json_object_getn(ks->set, *k, klen))
                return 1;
        return json_object_setn_new_nocheck(ks->set, *k, klen, json_null()) < 0 ? -ENOMEM : 0;
}

static const jsonparse_member_t *find_member(const jsonparse_proj_t *proj, const char *k,
                                             size_t klen)
{
        for (const jsonparse_member_t *m = proj->members; m->key; m++)
                if (m->len == klen && memcmp(m->key, k, klen) == 0)
                        return m;
        return NULL;
}

/* A value too deep to read: the same message wherever it is found. */
static int too_deep(reader_t *r)
{
        return error_set(r->err, -EINVAL, "JSON nested deeper than %u levels (at byte %zu)",
                         r->max_depth, (size_t)(r->p - r->start));
}

static int skip_value(reader_t *r);

/* Checks an array without building anything, as read_array does. */
/* Reads an object's members up to its '}' (r->p just past the '{'): every
 * key checked for duplicates, each value built through its member's
 * projection when obj is set and the key is listed (through the others
 * projection when it is not and that is set), else only checked. The
 * same checks in the same order as build_object, so the same input fails
 * with the same message. */
static int object_members(reader_t *r, const jsonparse_proj_t *proj, json_t *obj)
{
        _cleanup_(keyset_free) keyset_t ks;
        ks.n = 0;
        ks.set = NULL;
        ks.copies = NULL;
        skip_ws(r);
        if (r->p < r->end && *r->p == '}') {
                r->p++;
                return 0;
        }
        for (;;) {
                skip_ws(r);
                if (r->p >= r->end || *r->p != '"')
                        return fail(r, "expected a string key");
                const char *k = NULL; /* for the analyzer, as in build_object */
                size_t klen = 0;
                int rc = read_string(r, &k, &klen);
                if (rc < 0)
                        return rc;
                rc = keyset_add(r, &ks, &k, klen);
                if (rc < 0)
                        return rc;
                if (rc > 0)
                        return fail(r, "duplicate object key");
                skip_ws(r);
                if (r->p >= r->end || *r->p != ':')
                        return fail(r, "expected ':'");
                r->p++;
                const jsonparse_member_t *m = obj ? find_member(proj, k, klen) : NULL;
                if (m || (obj && proj->others)) {
                        json_t *value = NULL;
                        rc = read_value(r, m ? m->proj : proj->others, &value);
                        if (rc == 0 && json_object_setn_new_nocheck(obj, k, klen, value) < 0)
                                rc = -ENOMEM;
                } else {
                        rc = skip_value(r);
                }
                if (rc < 0)
                        return rc;
                rc = after_element(r, '}');
                if (rc <= 0)
                        return rc;
        }
}

/* An object built through a projection: only the members it lists. */
static int project_object(reader_t *r, const jsonparse_proj_t *proj, json_t **ret)
{
        _cleanup_json_ json_t *obj = json_object();
        if (!obj)
                return -ENOMEM;
        r->p++;
        int rc = object_members(r, proj, obj);
        if (rc < 0)
                return rc;
        *ret = TAKE_PTR(obj);
        return 0;
}

/* Checks one value without building anything: what read_value checks, in
 * the same order. */
static int skip_value(reader_t *r)
{
        skip_ws(r);
        if (r->p >= r->end)
                return fail(r, "unexpected end of input");
        const char *s;
        size_t n;
        int rc;
        switch (*r->p) {
        case '{':
        case '[':
                if (++r->depth > r->max_depth)
                        return too_deep(r);
                if (*r->p == '[') {
                        rc = read_array(r, NULL, NULL);
                } else {
                        r->p++;
                        rc = object_members(r, NULL, NULL);
                }
                r->depth--;
                return rc;
        case '"':
                return read_string(r, &s, &n);
        case 't':
                return read_literal(r, "true", NULL, NULL);
        case 'f':
                return read_literal(r, "false", NULL, NULL);
        case 'n':
                return read_literal(r, "null", NULL, NULL);
        default:
                return read_number(r, NULL);
        }
}

/* Reads one value: built whole (ret set, proj NULL), built through proj
 * (ret and proj set), or only checked (ret NULL). */
static int read_value(reader_t *r, const jsonparse_proj_t *proj, json_t **ret)
{
        if (!ret)
                return skip_value(r);
        skip_ws(r);
        if (r->p >= r->end)
                return fail(r, "unexpected end of input");
        int rc;
        switch (*r->p) {
        case '{':
        case '[':
                if (++r->depth > r->max_depth)
                        return too_deep(r);
                if (*r->p == '[')
                        rc = read_array(r, proj, ret);
                else if (proj && proj->members)
                        rc = project_object(r, proj, ret);
                else
                        rc = build_object(r, ret);
                r->depth--;
                return rc;
        case '"': {
                const char *s;
                size_t n;
                rc = read_string(r, &s, &n);
                if (rc < 0)
                        return rc;
                *ret = json_stringn_nocheck(s, n);
                return *ret ? 0 : -ENOMEM;
        }
        case 't':
                return read_literal(r, "true", json_true(), ret);
        case 'f':
                return read_literal(r, "false", json_false(), ret);
        case 'n':
                return read_literal(r, "null", json_null(), ret);
        default:
                return read_number(r, ret);
        }
}

static int load(const char *buf, size_t len, unsigned max_depth, const jsonparse_proj_t *proj,
                json_t **ret, hg_error_t *err)
{
        reader_t r = {
            .p = (const unsigned char *)buf,
            .end = (const unsigned char *)buf + len,
            .start = (const unsigned char *)buf,
            .max_depth = max_depth,
            .err = err,
        };
        skip_ws(&r);
        if (r.p >= r.end)
                return error_set(err, -EINVAL, "empty body: expected a JSON object");
        if (*r.p != '{' && *r.p != '[') {
                int rc = fail(&r, "expected an object or an array");
                return rc;
        }
        json_t *root = NULL;
        int rc = read_value(&r, proj, &root);
        free(r.scratch);
        if (rc < 0)
                return rc;
        skip_ws(&r);
        if (r.p != r.end) {
                json_decref(root);
                return fail(&r, "trailing bytes after the JSON value");
        }
        *ret = root;
        return 0;
}

int jsonparse_load(const char *buf, size_t len, unsigned max_depth, json_t **ret, hg_error_t *err)
{
        return load(buf, len, max_depth, NULL, ret, err);
}

int jsonparse_load_projected(const char *buf, size_t len, unsigned max_depth,
                             const jsonparse_proj_t *proj, json_t **ret, hg_error_t *err)
{
        return load(buf, len, max_depth, proj, ret, err);
}
