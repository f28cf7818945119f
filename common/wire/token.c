#include "token.h"

#include <errno.h>

#include <openssl/crypto.h>

#include "kernrand.h"

int token_generate(token_t *ret)
{
        token_t t;
        int r = kernrand_bytes(t.bytes, sizeof(t.bytes));
        if (r < 0)
                return r;
        *ret = t;
        token_wipe(&t, sizeof(t));
        return 0;
}

void token_to_hex(const token_t *t, char text[TOKEN_HEX_LEN + 1])
{
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < FRAME_TOKEN_SIZE; i++) {
                text[2 * i] = digits[t->bytes[i] >> 4];
                text[2 * i + 1] = digits[t->bytes[i] & 0xf];
        }
        text[TOKEN_HEX_LEN] = '\0';
}

static int hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

int token_from_hex(const char *text, size_t len, token_t *ret, hg_error_t *err)
{
        if (len == TOKEN_HEX_LEN + 1 && text[TOKEN_HEX_LEN] == '\n')
                len--;
        if (len != TOKEN_HEX_LEN)
                return error_set(err, -EINVAL, "a relay token is %u hex digits, got %zu bytes",
                                 TOKEN_HEX_LEN, len);
        token_t t;
        for (size_t i = 0; i < FRAME_TOKEN_SIZE; i++) {
                int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
                if (hi < 0 || lo < 0) {
                        token_wipe(&t, sizeof(t));
                        return error_set(err, -EINVAL, "a relay token is hex digits only");
                }
                t.bytes[i] = (uint8_t)(hi << 4 | lo);
        }
        *ret = t;
        token_wipe(&t, sizeof(t));
        return 0;
}

bool token_matches(const token_t *t, const uint8_t candidate[FRAME_TOKEN_SIZE])
{
        return CRYPTO_memcmp(t->bytes, candidate, FRAME_TOKEN_SIZE) == 0;
}

void token_wipe(void *p, size_t n)
{
        OPENSSL_cleanse(p, n);
}
