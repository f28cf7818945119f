#include "jsonparse.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static void skip_ws(reader_t *r)
{
        while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
                r->p++;
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

/* Reads a string (r->p at the opening quote). Its bytes are in *ret_str for
 * *ret_len bytes: pointing into the input when it had no escapes, else into
 * r->scratch. Valid UTF-8 without NUL either way. */
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

static int read_string(reader_t *r, const char **ret_str, size_t *ret_len)
{
        r->p++; /* opening quote */
        const unsigned char *s = r->p;
        /* Fast path: a run of plain characters up to the closing quote. */
        while (r->p < r->end) {
                /* Plain ASCII needs no look beyond the table. */
                while (r->p < r->end && plain_ascii[*r->p])
                        r->p++;
                if (r->p >= r->end)
                        break;
                unsigned char c = *r->p;
                if (c == '"') {
                        *ret_str = (const char *)s;
                        *ret_len = (size_t)(r->p - s);
                        r->p++;
                        return 0;
                }
                if (c == '\\')
                        break;
                if (c < 0x20)
                        return fail(r, "control character in a string");
                if (c < 0x80) {
                        r->p++;
                        continue;
                }
                size_t n = utf8_seq(r->p, r->end);
                if (!n)
                        return fail(r, "invalid UTF-8 in a string");
                r->p += n;
        }
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
        *ret = json_real(d);
        return *ret ? 0 : -ENOMEM;
}

static int read_literal(reader_t *r, const char *word, json_t *value, json_t **ret)
{
        size_t n = strlen(word);
        if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
                return fail(r, "invalid literal");
        r->p += n;
        *ret = value;
        return 0;
}

static int read_value(reader_t *r, json_t **ret);

static int read_array(reader_t *r, json_t **ret)
{
        _cleanup_json_ json_t *arr = json_array();
        if (!arr)
                return -ENOMEM;
        r->p++;
        skip_ws(r);
        if (r->p < r->end && *r->p == ']') {
                r->p++;
                *ret = TAKE_PTR(arr);
                return 0;
        }
        for (;;) {
                json_t *item = NULL;
                int rc = read_value(r, &item);
                if (rc < 0)
                        return rc;
                if (json_array_append_new(arr, item) < 0)
                        return -ENOMEM;
                skip_ws(r);
                if (r->p >= r->end)
                        return fail(r, "unterminated array");
                if (*r->p == ',') {
                        r->p++;
                        continue;
                }
                if (*r->p == ']') {
                        r->p++;
                        *ret = TAKE_PTR(arr);
                        return 0;
                }
                return fail(r, "expected ',' or ']'");
        }
}

static int read_object(reader_t *r, json_t **ret)
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
                const char *k;
                size_t klen;
                int rc = read_string(r, &k, &klen);
                if (rc < 0)
                        return rc;
                /* A key with escapes lives in scratch, which reading the value
                 * reuses: copy that one (rare); others point into the input. */
                _cleanup_free_ char *copy = NULL;
                if (k == r->scratch) {
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
                rc = read_value(r, &value);
                if (rc < 0)
                        return rc;
                if (json_object_setn_new_nocheck(obj, k, klen, value) < 0)
                        return -ENOMEM;
                skip_ws(r);
                if (r->p >= r->end)
                        return fail(r, "unterminated object");
                if (*r->p == ',') {
                        r->p++;
                        continue;
                }
                if (*r->p == '}') {
                        r->p++;
                        *ret = TAKE_PTR(obj);
                        return 0;
                }
                return fail(r, "expected ',' or '}'");
        }
}

static int read_value(reader_t *r, json_t **ret)
{
        skip_ws(r);
        if (r->p >= r->end)
                return fail(r, "unexpected end of input");
        int rc;
        switch (*r->p) {
        case '{':
        case '[':
                if (++r->depth > r->max_depth)
                        return error_set(r->err, -EINVAL,
                                         "JSON nested deeper than %u levels (at byte %zu)",
                                         r->max_depth, (size_t)(r->p - r->start));
                rc = *r->p == '{' ? read_object(r, ret) : read_array(r, ret);
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

int jsonparse_load(const char *buf, size_t len, unsigned max_depth, json_t **ret, hg_error_t *err)
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
        int rc = read_value(&r, &root);
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
