#include "base64.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "cleanup.h"

char *base64_encode(const void *data, size_t len)
{
        if (len > (size_t)(INT32_MAX / 4 * 3))
                return NULL;
        char *out = malloc(4 * ((len + 2) / 3) + 1);
        if (!out)
                return NULL;
        (void)EVP_EncodeBlock((unsigned char *)out, data, (int)len);
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
