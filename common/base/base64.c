#include "base64.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "cleanup.h"

/* Two output characters per table lookup: the webhook's answer is mostly a
 * base64 patch, and OpenSSL's EVP_EncodeBlock cost a tenth of a review. */
static const char b64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static char b64_pairs[4096][2]; /* 12 bits -> two characters */
static pthread_once_t b64_once = PTHREAD_ONCE_INIT;

static void b64_init(void)
{
        for (unsigned i = 0; i < 4096; i++) {
                b64_pairs[i][0] = b64_digits[i >> 6];
                b64_pairs[i][1] = b64_digits[i & 63];
        }
}

size_t base64_encode_into(char *out, const void *data, size_t len)
{
        (void)pthread_once(&b64_once, b64_init);
        const unsigned char *p = data;
        char *o = out;
        size_t i = 0;
        for (; i + 3 <= len; i += 3, o += 4) {
                uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
                memcpy(o, b64_pairs[v >> 12], 2);
                memcpy(o + 2, b64_pairs[v & 4095], 2);
        }
        if (i < len) { /* one or two bytes left */
                bool two = i + 1 < len;
                uint32_t v = (uint32_t)p[i] << 16 | (two ? (uint32_t)p[i + 1] << 8 : 0);
                o[0] = b64_digits[v >> 18];
                o[1] = b64_digits[(v >> 12) & 63];
                o[2] = two ? b64_digits[(v >> 6) & 63] : '=';
                o[3] = '=';
                o += 4;
        }
        return (size_t)(o - out);
}

char *base64_encode(const void *data, size_t len)
{
        if (len > SIZE_MAX / 4 * 3 - 3)
                return NULL;
        char *out = malloc(4 * ((len + 2) / 3) + 1);
        if (!out)
                return NULL;
        out[base64_encode_into(out, data, len)] = '\0';
        return out;
}

int base64_decode(const char *text, char **ret, size_t *ret_len, hg_error_t *err)
{
        size_t n = strlen(text);
        if (n % 4 != 0 || n > (size_t)INT32_MAX)
                return error_set(err, -EINVAL, "bad base64: length %zu is not a multiple of 4", n);
        /* OpenSSL's decoder takes '=' anywhere and skips whitespace: check the
         * alphabet first, with at most two '=' and only at the very end. */
        size_t pad = (n >= 1 && text[n - 1] == '=') + (n >= 2 && text[n - 2] == '=');
        for (size_t i = 0; i < n - pad; i++) {
                char c = text[i];
                bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                          (c >= '0' && c <= '9') || c == '+' || c == '/';
                if (!ok)
                        return error_set(err, -EINVAL, "bad base64: unexpected byte at %zu", i);
        }
        _cleanup_free_ char *out = malloc(n / 4 * 3 + 1);
        if (!out)
                return -ENOMEM;
        int len =
            n ? EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)text, (int)n) : 0;
        if (len < 0)
                return error_set(err, -EINVAL, "bad base64 data");
        /* EVP_DecodeBlock counts the padding as zero bytes: take them off. */
        len -= (int)pad;
        out[len] = '\0';
        if (ret_len)
                *ret_len = (size_t)len;
        *ret = TAKE_PTR(out);
        return 0;
}
