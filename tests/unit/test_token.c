/* Unit tests for common/token: fresh tokens, the hex form and its strict
 * parser (exact length, either case, one optional trailing newline), and the
 * comparison the listener uses on HELLO tokens. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cleanup.h"
#include "token.h"
#include "unit.h"

/* 64 lowercase digits of bytes 0x00, 0x11, ... , 0xff, 0x00, ... */
static const char known_hex[] = "00112233445566778899aabbccddeeff"
                                "0123456789abcdeffedcba9876543210";

static token_t known_token(void)
{
        static const uint8_t b[FRAME_TOKEN_SIZE] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                                    0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff,
                                                    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
                                                    0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10};
        token_t t;
        memcpy(t.bytes, b, sizeof(b));
        return t;
}

/* Parses len bytes of text and expects -EINVAL, a message, and ret untouched. */
static void assert_refused(const char *text, size_t len, const char *needle)
{
        token_t t;
        memset(&t, 0xa5, sizeof(t));
        hg_error_t err = {0};
        int r = token_from_hex(text, len, &t, &err);
        ck_assert_msg(r == -EINVAL, "%zu bytes accepted (r=%d)", len, r);
        ck_assert_int_eq(err.code, -EINVAL);
        ck_assert_msg(err.message[0] != '\0', "empty message");
        if (needle)
                ck_assert_msg(strstr(err.message, needle), "message \"%s\" lacks \"%s\"",
                              err.message, needle);
        for (size_t i = 0; i < sizeof(t.bytes); i++)
                ck_assert_uint_eq(t.bytes[i], 0xa5);
}

START_TEST(generate_differs)
{
        token_t a, b;
        ck_assert_int_eq(token_generate(&a), 0);
        ck_assert_int_eq(token_generate(&b), 0);
        ck_assert_int_ne(memcmp(a.bytes, b.bytes, sizeof(a.bytes)), 0);
        /* 256 random bits that are all zero would mean no randomness at all. */
        static const uint8_t zero[FRAME_TOKEN_SIZE];
        ck_assert_int_ne(memcmp(a.bytes, zero, sizeof(zero)), 0);
        ck_assert(!token_matches(&a, b.bytes));
        ck_assert(token_matches(&a, a.bytes));
}
END_TEST

START_TEST(hex_known_value)
{
        token_t t = known_token();
        char text[TOKEN_HEX_LEN + 1];
        memset(text, 'x', sizeof(text));
        token_to_hex(&t, text);
        ck_assert_uint_eq(strlen(text), TOKEN_HEX_LEN);
        ck_assert_str_eq(text, known_hex);
}
END_TEST

START_TEST(hex_round_trip)
{
        for (int round = 0; round < 16; round++) {
                token_t t, back;
                ck_assert_int_eq(token_generate(&t), 0);
                char text[TOKEN_HEX_LEN + 1];
                token_to_hex(&t, text);
                ck_assert_uint_eq(strlen(text), TOKEN_HEX_LEN);
                for (size_t i = 0; i < TOKEN_HEX_LEN; i++)
                        ck_assert_msg(strchr("0123456789abcdef", text[i]), "digit %zu: %c", i,
                                      text[i]);
                hg_error_t err = {0};
                ck_assert_int_eq(token_from_hex(text, strlen(text), &back, &err), 0);
                ck_assert_int_eq(memcmp(back.bytes, t.bytes, sizeof(t.bytes)), 0);
        }
}
END_TEST

START_TEST(from_hex_either_case)
{
        token_t want = known_token();
        char upper[TOKEN_HEX_LEN + 1], mixed[TOKEN_HEX_LEN + 1];
        for (size_t i = 0; i <= TOKEN_HEX_LEN; i++) {
                char c = known_hex[i];
                upper[i] = c >= 'a' && c <= 'f' ? (char)(c - 'a' + 'A') : c;
                mixed[i] = i % 2 ? upper[i] : c;
        }
        const char *texts[] = {known_hex, upper, mixed};
        for (size_t k = 0; k < ARRAY_SIZE(texts); k++) {
                token_t t;
                hg_error_t err = {0};
                ck_assert_msg(token_from_hex(texts[k], TOKEN_HEX_LEN, &t, &err) == 0, "%s: %s",
                              texts[k], err.message);
                ck_assert_int_eq(memcmp(t.bytes, want.bytes, sizeof(t.bytes)), 0);
        }
}
END_TEST

START_TEST(from_hex_one_trailing_newline)
{
        char line[TOKEN_HEX_LEN + 2];
        memcpy(line, known_hex, TOKEN_HEX_LEN);
        line[TOKEN_HEX_LEN] = '\n';
        line[TOKEN_HEX_LEN + 1] = '\0';
        token_t t, want = known_token();
        ck_assert_int_eq(token_from_hex(line, TOKEN_HEX_LEN + 1, &t, NULL), 0);
        ck_assert_int_eq(memcmp(t.bytes, want.bytes, sizeof(t.bytes)), 0);
}
END_TEST

START_TEST(from_hex_rejects_length)
{
        char buf[TOKEN_HEX_LEN + 8];
        memcpy(buf, known_hex, TOKEN_HEX_LEN);
        buf[TOKEN_HEX_LEN] = '0';
        /* 63 and 65 digits, and none at all. */
        assert_refused(buf, TOKEN_HEX_LEN - 1, "64 hex digits");
        assert_refused(buf, TOKEN_HEX_LEN + 1, "64 hex digits");
        assert_refused(buf, 0, "64 hex digits");
        assert_refused(buf, 2, "got 2 bytes");
        /* Two newlines are not one line. */
        buf[TOKEN_HEX_LEN] = '\n';
        buf[TOKEN_HEX_LEN + 1] = '\n';
        assert_refused(buf, TOKEN_HEX_LEN + 2, NULL);
        /* A newline in place of the last digit: 63 digits and "\n". */
        memcpy(buf, known_hex, TOKEN_HEX_LEN);
        buf[TOKEN_HEX_LEN - 1] = '\n';
        assert_refused(buf, TOKEN_HEX_LEN, "hex digits only");
        /* 63 digits then "\n\n": after dropping one "\n", a newline remains. */
        buf[TOKEN_HEX_LEN] = '\n';
        assert_refused(buf, TOKEN_HEX_LEN + 1, "hex digits only");
        /* "\r\n" is not the one newline allowed. */
        memcpy(buf, known_hex, TOKEN_HEX_LEN);
        buf[TOKEN_HEX_LEN] = '\r';
        buf[TOKEN_HEX_LEN + 1] = '\n';
        assert_refused(buf, TOKEN_HEX_LEN + 2, NULL);
        assert_refused(buf, TOKEN_HEX_LEN + 1, NULL);
}
END_TEST

START_TEST(from_hex_rejects_non_hex)
{
        static const char bad[] = {'g', 'G', 'x', ' ',  '-',  '+',        ':',
                                   '/', '@', '`', '\0', '\t', (char)0x80, (char)0xff};
        for (size_t k = 0; k < ARRAY_SIZE(bad); k++) {
                /* In the high digit, the low digit, and the very last place. */
                static const size_t where[] = {0, 1, 30, 31, TOKEN_HEX_LEN - 1};
                for (size_t w = 0; w < ARRAY_SIZE(where); w++) {
                        char buf[TOKEN_HEX_LEN + 1];
                        memcpy(buf, known_hex, sizeof(buf));
                        buf[where[w]] = bad[k];
                        assert_refused(buf, TOKEN_HEX_LEN, "hex digits only");
                }
        }
        /* A "0x" prefix takes the place of two digits. */
        char buf[TOKEN_HEX_LEN + 1];
        memcpy(buf, known_hex, sizeof(buf));
        buf[0] = '0';
        buf[1] = 'x';
        assert_refused(buf, TOKEN_HEX_LEN, NULL);
}
END_TEST

START_TEST(from_hex_rejects_embedded_nul)
{
        /* The length is what counts, not a C string: a NUL inside is refused. */
        char buf[TOKEN_HEX_LEN + 1];
        memcpy(buf, known_hex, sizeof(buf));
        buf[20] = '\0';
        assert_refused(buf, TOKEN_HEX_LEN, NULL);
        memcpy(buf, known_hex, sizeof(buf));
        buf[TOKEN_HEX_LEN] = '\0';
        assert_refused(buf, TOKEN_HEX_LEN + 1, NULL); /* a NUL where "\n" may be */
}
END_TEST

START_TEST(from_hex_err_may_be_null)
{
        token_t t;
        ck_assert_int_eq(token_from_hex("abc", 3, &t, NULL), -EINVAL);
        char buf[TOKEN_HEX_LEN + 1];
        memcpy(buf, known_hex, sizeof(buf));
        buf[5] = 'z';
        ck_assert_int_eq(token_from_hex(buf, TOKEN_HEX_LEN, &t, NULL), -EINVAL);
}
END_TEST

START_TEST(matches)
{
        token_t t = known_token();
        uint8_t c[FRAME_TOKEN_SIZE];
        memcpy(c, t.bytes, sizeof(c));
        ck_assert(token_matches(&t, c));
        /* Any single byte, first and last included, and any single bit. */
        for (size_t i = 0; i < FRAME_TOKEN_SIZE; i++) {
                for (int bit = 0; bit < 8; bit++) {
                        c[i] ^= (uint8_t)(1u << bit);
                        ck_assert_msg(!token_matches(&t, c), "byte %zu bit %d", i, bit);
                        c[i] ^= (uint8_t)(1u << bit);
                }
        }
        ck_assert(token_matches(&t, c));
        c[FRAME_TOKEN_SIZE - 1]++;
        ck_assert(!token_matches(&t, c));
        static const uint8_t zero[FRAME_TOKEN_SIZE];
        ck_assert(!token_matches(&t, zero));
}
END_TEST

START_TEST(wipe_zeroes)
{
        token_t t = known_token();
        token_wipe(&t, sizeof(t));
        for (size_t i = 0; i < sizeof(t.bytes); i++)
                ck_assert_uint_eq(t.bytes[i], 0);
        char s[] = "secret";
        token_wipe(s, 3);
        ck_assert_int_eq(memcmp(s, "\0\0\0ret", 7), 0);
        token_wipe(s, 0);
}
END_TEST

static Suite *token_suite(void)
{
        Suite *s = suite_create("token");
        TCase *tc = tcase_create("token");
        tcase_add_test(tc, generate_differs);
        tcase_add_test(tc, hex_known_value);
        tcase_add_test(tc, hex_round_trip);
        tcase_add_test(tc, from_hex_either_case);
        tcase_add_test(tc, from_hex_one_trailing_newline);
        tcase_add_test(tc, from_hex_rejects_length);
        tcase_add_test(tc, from_hex_rejects_non_hex);
        tcase_add_test(tc, from_hex_rejects_embedded_nul);
        tcase_add_test(tc, from_hex_err_may_be_null);
        tcase_add_test(tc, matches);
        tcase_add_test(tc, wipe_zeroes);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(token_suite());
}
