#include "jsondump.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

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

static int append_string(strbuf_t *sb, const char *s, size_t n)
{
        int r = strbuf_append(sb, "\"", 1);
        size_t run = 0; /* start of the pending run of plain bytes */
        for (size_t i = 0; r == 0 && i < n; i++) {
                unsigned char c = (unsigned char)s[i];
                if (!must_escape[c])
                        continue;
                r = strbuf_append(sb, s + run, i - run);
                if (r == 0)
                        r = append_escape(sb, c);
                run = i + 1;
        }
        if (r == 0)
                r = strbuf_append(sb, s + run, n - run);
        if (r == 0)
                r = strbuf_append(sb, "\"", 1);
        return r;
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
                                r = append_string(sb, key, key_len);
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
                return append_string(sb, json_string_value(j), json_string_length(j));
        case JSON_INTEGER:
                return strbuf_printf(sb, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
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
