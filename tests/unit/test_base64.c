/* Unit tests for common/base64: round trips against an independent encoder,
 * padding, and refusing what is not canonical padded RFC 4648 base64. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "base64.h"
#include "cleanup.h"
#include "unit.h"

/* RFC 4648 section 4, written from the RFC: 3 bytes become 4 characters,
 * the last group padded with '='. Writes into out (4 * ceil(n / 3) + 1). */
static void ref_encode(const unsigned char *in, size_t n, char *out)
{
        static const char alphabet[] =
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t o = 0;
        for (size_t i = 0; i < n; i += 3) {
                uint32_t group = (uint32_t)in[i] << 16;
                if (i + 1 < n)
                        group |= (uint32_t)in[i + 1] << 8;
                if (i + 2 < n)
                        group |= in[i + 2];
                out[o++] = alphabet[(group >> 18) & 63];
                out[o++] = alphabet[(group >> 12) & 63];
                out[o++] = i + 1 < n ? alphabet[(group >> 6) & 63] : '=';
                out[o++] = i + 2 < n ? alphabet[group & 63] : '=';
        }
        out[o] = '\0';
}

/* Bytes that cover every value, NUL and the high half included. */
static void pattern(unsigned char *buf, size_t n, unsigned seed)
{
        for (size_t i = 0; i < n; i++)
                buf[i] = (unsigned char)(seed * 31u + i * 89u + (i >> 2));
}

/* Decodes text and expects failure with -EINVAL and a message; ret and
 * ret_len stay untouched. */
static void assert_refused(const char *text)
{
        char *out = (char *)"untouched";
        size_t len = 777;
        hg_error_t err = {0};
        int r = base64_decode(text, &out, &len, &err);
        ck_assert_msg(r == -EINVAL, "\"%s\" decoded (r=%d, %zu bytes)", text, r,
                      r == 0 ? len : (size_t)0);
        ck_assert_int_eq(err.code, -EINVAL);
        ck_assert_msg(strstr(err.message, "base64"), "message: %s", err.message);
        ck_assert_str_eq(out, "untouched");
        ck_assert_uint_eq(len, 777);
}

START_TEST(round_trip_every_length)
{
        /* _i is the length: 0..64 covers each remainder mod 3 many times. */
        size_t n = (size_t)_i;
        for (unsigned seed = 0; seed < 8; seed++) {
                unsigned char data[64];
                char want[4 * 22 + 1];
                pattern(data, n, seed);
                ref_encode(data, n, want);

                _cleanup_free_ char *text = base64_encode(data, n);
                ck_assert_ptr_nonnull(text);
                ck_assert_uint_eq(strlen(text), 4 * ((n + 2) / 3));
                ck_assert_str_eq(text, want);

                _cleanup_free_ char *back = NULL;
                size_t len = 12345;
                hg_error_t err = {0};
                ck_assert_msg(base64_decode(text, &back, &len, &err) == 0, "%s: %s", text,
                              err.message);
                ck_assert_uint_eq(len, n);
                ck_assert_int_eq(memcmp(back, data, n), 0);
                ck_assert_int_eq(back[n], '\0');
        }
}
END_TEST

START_TEST(all_byte_values)
{
        unsigned char data[256];
        for (size_t i = 0; i < sizeof(data); i++)
                data[i] = (unsigned char)i;
        char want[4 * 86 + 1];
        ref_encode(data, sizeof(data), want);
        _cleanup_free_ char *text = base64_encode(data, sizeof(data));
        ck_assert_ptr_nonnull(text);
        ck_assert_str_eq(text, want);
        _cleanup_free_ char *back = NULL;
        size_t len = 0;
        hg_error_t err = {0};
        ck_assert_int_eq(base64_decode(text, &back, &len, &err), 0);
        ck_assert_uint_eq(len, sizeof(data));
        ck_assert_int_eq(memcmp(back, data, sizeof(data)), 0);
}
END_TEST

START_TEST(known_vectors)
{
        /* RFC 4648 section 10. */
        static const char *const vectors[][2] = {
            {"", ""},
            {"f", "Zg=="},
            {"fo", "Zm8="},
            {"foo", "Zm9v"},
            {"foob", "Zm9vYg=="},
            {"fooba", "Zm9vYmE="},
            {"foobar", "Zm9vYmFy"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(vectors); i++) {
                _cleanup_free_ char *text = base64_encode(vectors[i][0], strlen(vectors[i][0]));
                ck_assert_ptr_nonnull(text);
                ck_assert_str_eq(text, vectors[i][1]);
                _cleanup_free_ char *back = NULL;
                size_t len = 99;
                hg_error_t err = {0};
                ck_assert_int_eq(base64_decode(vectors[i][1], &back, &len, &err), 0);
                ck_assert_uint_eq(len, strlen(vectors[i][0]));
                ck_assert_str_eq(back, vectors[i][0]);
        }
}
END_TEST

START_TEST(padding_counts_off)
{
        /* One '=' takes one byte off the last group, two take two; bytes that
         * decode to NUL are data, not padding. */
        static const struct {
                const char *text;
                size_t len;
                const char *bytes;
        } t[] = {
            {"AA==", 1, "\0"},           {"AAA=", 2, "\0\0"},
            {"AAAA", 3, "\0\0\0"},       {"QQ==", 1, "A"},
            {"QUI=", 2, "AB"},           {"QUJD", 3, "ABC"},
            {"QUJDAA==", 4, "ABC\0"},    {"QUJDRA==", 4, "ABCD"},
            {"////", 3, "\xff\xff\xff"}, {"++++", 3, "\xfb\xef\xbe"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                _cleanup_free_ char *back = NULL;
                size_t len = 99;
                hg_error_t err = {0};
                ck_assert_msg(base64_decode(t[i].text, &back, &len, &err) == 0, "%s: %s", t[i].text,
                              err.message);
                ck_assert_msg(len == t[i].len, "%s: %zu bytes, want %zu", t[i].text, len, t[i].len);
                ck_assert_int_eq(memcmp(back, t[i].bytes, len), 0);
                ck_assert_int_eq(back[len], '\0');
        }
}
END_TEST

START_TEST(decode_without_length)
{
        _cleanup_free_ char *back = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(base64_decode("aGFuZ2Fy", &back, NULL, &err), 0);
        ck_assert_str_eq(back, "hangar");
}
END_TEST

START_TEST(rejects_bad_length)
{
        static const char *const bad[] = {"A", "QQ", "QUJ", "QUJDR", "Zm9vYg=", "Zm9vYg", "Zg="};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused(bad[i]);
        hg_error_t err = {0};
        char *out = NULL;
        ck_assert_int_eq(base64_decode("QUJ", &out, NULL, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "length 3"), "message: %s", err.message);
}
END_TEST

START_TEST(rejects_bad_characters)
{
        /* base64url's '-' and '_', punctuation, controls, bytes >= 0x80. */
        static const char *const bad[] = {"QUJ-",       "QUJ_", "QU.D", "Q\tJD",  "QUJ\x01",
                                          "QU\xc3\xa9", "QUJ*", "!!!!", "QUJ\x7f"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused(bad[i]);
        /* NULL error struct: the code alone. */
        char *out = NULL;
        ck_assert_int_eq(base64_decode("QU.D", &out, NULL, NULL), -EINVAL);
        ck_assert_ptr_null(out);
}
END_TEST

/* Regression test (this was a bug, now fixed): EVP_DecodeBlock reads '=' as a zero sextet wherever
 * it stands, and base64.c only strips padding at the very end, so '=' in the middle or three '='
 * decode to made-up zero bytes instead of failing. */
START_TEST(rejects_misplaced_padding)
{
        static const char *const bad[] = {
            "QQ=A",     /* '=' before a data character */
            "=QUJ",     /* '=' first */
            "QQ==QQ==", /* padding inside, then another group */
            "AB==AAAA", /* '=' in the first of two groups */
            "A===",     /* three '=': one character cannot make a byte */
            "====",     /* nothing but padding */
            "QUJD====", /* a whole group of padding */
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused(bad[i]);
}
END_TEST

/* Regression test (this was a bug, now fixed): EVP_DecodeBlock trims leading blanks and trailing
 * blanks/newlines, so whitespace-padded text is taken, and the '=' count is
 * then read from the untrimmed end: "QQ==\n\n\n\n" comes back as 3 bytes
 * ("A\0\0") instead of 1. */
START_TEST(rejects_whitespace)
{
        static const char *const bad[] = {"    QUJD", "QUJD\n\n\n\n", "QQ==\n\n\n\n", "QUJD    ",
                                          "\r\nQUJD\r\n"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused(bad[i]);
}
END_TEST

static Suite *base64_suite(void)
{
        Suite *s = suite_create("base64");
        TCase *tc = tcase_create("round_trip");
        tcase_add_loop_test(tc, round_trip_every_length, 0, 65);
        tcase_add_test(tc, all_byte_values);
        tcase_add_test(tc, known_vectors);
        tcase_add_test(tc, padding_counts_off);
        tcase_add_test(tc, decode_without_length);
        suite_add_tcase(s, tc);
        tc = tcase_create("invalid");
        tcase_add_test(tc, rejects_bad_length);
        tcase_add_test(tc, rejects_bad_characters);
        tcase_add_test(tc, rejects_misplaced_padding);
        tcase_add_test(tc, rejects_whitespace);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(base64_suite());
}
