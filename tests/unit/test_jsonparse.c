/* Unit tests for common/jsonparse: the strict reader is checked against
 * jansson's own loader (json_loadb with JSON_REJECT_DUPLICATES) on what both
 * accept, and against a list of inputs it must refuse. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "cleanup.h"
#include "jsonparse.h"
#include "strbuf.h"
#include "unit.h"

#define DEPTH 64

/* Projections the helpers below also read every input through: what is
 * accepted or refused, and the message, must not depend on what is built. */
static const jsonparse_member_t no_members[] = {JSONPARSE_MEMBERS_END};
/* An object of which nothing is built below the top (everything skipped). */
static const jsonparse_proj_t keep_nothing = {.members = no_members};
/* An array whose object elements are skipped whole. */
static const jsonparse_proj_t items_nothing = {.items = &keep_nothing};
/* Some members kept, through nested projections, the rest skipped. */
static const jsonparse_member_t some_inner[] = {
    JSONPARSE_MEMBER("k", NULL),
    JSONPARSE_MEMBER("a", &keep_nothing),
    JSONPARSE_MEMBERS_END,
};
static const jsonparse_proj_t some_inner_proj = {.members = some_inner, .items = &keep_nothing};
static const jsonparse_member_t some[] = {
    JSONPARSE_MEMBER("a", NULL),
    JSONPARSE_MEMBER("k", &some_inner_proj),
    JSONPARSE_MEMBER("items", &items_nothing),
    JSONPARSE_MEMBER("x", &some_inner_proj),
    JSONPARSE_MEMBER("m", &keep_nothing),
    JSONPARSE_MEMBERS_END,
};
static const jsonparse_proj_t keep_some = {.members = some, .items = &some_inner_proj};
/* Which members are there, values emptied: objects {}, arrays element by
 * element, scalars as they are; "k" built whole. */
static const jsonparse_proj_t presence;
static const jsonparse_proj_t presence = {.members = no_members, .items = &presence};
static const jsonparse_member_t k_whole[] = {JSONPARSE_MEMBER("k", NULL), JSONPARSE_MEMBERS_END};
static const jsonparse_proj_t keep_k_note_others = {.members = k_whole, .others = &presence};
static const jsonparse_proj_t *const projections[] = {&keep_nothing, &items_nothing, &keep_some,
                                                      &keep_k_note_others};

/* Compact text of j with keys in their stored order (malloc'd). */
static char *dump_ordered(const json_t *j)
{
        char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
        ck_assert_ptr_nonnull(s);
        return s;
}

/* A heap copy of exactly len bytes, no terminator: under ASan, reading one
 * byte past the input is reported. */
static char *exact_copy(const char *buf, size_t len)
{
        char *copy = malloc(len ? len : 1);
        ck_assert_ptr_nonnull(copy);
        if (len)
                memcpy(copy, buf, len);
        return copy;
}

/* Loads buf[0..len) with both readers; both must accept, and build values
 * that are equal and that dump to the same bytes (same types, same key
 * order, same string bytes, same doubles). */
static void assert_same_as_jansson(const char *text, size_t len)
{
        _cleanup_free_ char *buf = exact_copy(text, len);
        json_error_t jerr;
        _unit_json_ json_t *want = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
        ck_assert_msg(want != NULL, "test bug: jansson refuses %.*s: %s", (int)len, buf, jerr.text);
        _unit_json_ json_t *got = NULL;
        hg_error_t err = {0};
        int r = jsonparse_load(buf, len, DEPTH, &got, &err);
        ck_assert_msg(r == 0, "refused %.*s: %s", (int)len, buf, err.message);
        ck_assert_json_eq(got, want);
        _cleanup_free_ char *g = dump_ordered(got);
        _cleanup_free_ char *w = dump_ordered(want);
        ck_assert_str_eq(g, w);
        /* Read through a projection, the same bytes are accepted. */
        for (size_t i = 0; i < ARRAY_SIZE(projections); i++) {
                _unit_json_ json_t *part = NULL;
                r = jsonparse_load_projected(buf, len, DEPTH, projections[i], &part, &err);
                ck_assert_msg(r == 0, "projection %zu refused %.*s: %s", i, (int)len, buf,
                              err.message);
                ck_assert_int_eq(json_typeof(part), json_typeof(want));
        }
}

static void assert_same_as_jansson_text(const char *text)
{
        assert_same_as_jansson(text, strlen(text));
}

/* Expects buf[0..len) refused with -EINVAL, *ret untouched, and a message
 * with the byte offset of the fault; returns nothing, checks want_in_msg. */
static void assert_refused_n(const char *text, size_t len, const char *want_in_msg)
{
        _cleanup_free_ char *buf = exact_copy(text, len);
        json_t *sentinel = (json_t *)&sentinel;
        json_t *j = sentinel;
        hg_error_t err = {0};
        int r = jsonparse_load(buf, len, DEPTH, &j, &err);
        if (r == 0)
                json_decref(j);
        ck_assert_msg(r == -EINVAL, "accepted (r=%d): %.*s", r, (int)len, buf);
        ck_assert_ptr_eq(j, sentinel);
        ck_assert_int_eq(err.code, -EINVAL);
        ck_assert_msg(strstr(err.message, want_in_msg), "%.*s: message \"%s\" lacks \"%s\"",
                      (int)len, buf, err.message, want_in_msg);
        /* Through any projection: refused with exactly the same message. */
        for (size_t i = 0; i < ARRAY_SIZE(projections); i++) {
                hg_error_t perr = {0};
                json_t *pj = sentinel;
                int pr = jsonparse_load_projected(buf, len, DEPTH, projections[i], &pj, &perr);
                if (pr == 0)
                        json_decref(pj);
                ck_assert_msg(pr == -EINVAL, "projection %zu accepted (r=%d): %.*s", i, pr,
                              (int)len, buf);
                ck_assert_ptr_eq(pj, sentinel);
                ck_assert_str_eq(perr.message, err.message);
        }
}

static void assert_refused(const char *text, const char *want_in_msg)
{
        assert_refused_n(text, strlen(text), want_in_msg);
}

/* Everything below is valid RFC 8259 that jansson takes as well. */
static const char *const accepted[] = {
    "{}",
    "[]",
    " \t\r\n{ \t\r\n} \t\r\n",
    "[ ]",
    "{\"a\":1}",
    "{\"a\" : [ 1 , 2 ] , \"b\" : { } }",
    "[true,false,null]",
    "[[[[[[]]]]]]",
    "[{},[],{\"\":{}},[[]]]",
    "{\"\":\"\"}",
    "{\"b\":1,\"a\":2,\"c\":3,\"A\":4}",
    "[{\"k\":1},{\"k\":2}]",
    "{\"k\":{\"k\":{\"k\":1}}}",
    /* integers */
    "[0,-0,1,-1,10,123456789]",
    "[9223372036854775807]",
    "[-9223372036854775808]",
    "[9223372036854775806,-9223372036854775807]",
    /* reals */
    "[0.5,-0.5,0.0,-0.0,1.0]",
    "[1e5,1E5,1e+5,1e-5,1E-5,-1e5]",
    "[0e0,0E+0,-0e-0]",
    "[0.1,0.2,0.30000000000000004]",
    "[1.5e300,-1.5e300,1.7976931348623157e308,2.2250738585072014e-308]",
    "[4.9e-324,1e-400,-1e-400]",
    "[123456789012345678901234567890.0,1e19,9223372036854775808.0]",
    "[3.141592653589793238462643383279502884197169399375105820974944592307816406286]",
    "[0.00000000000000000000000000000000000000000000000000000000000000000000000001]",
    /* strings: escapes */
    "[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]",
    "[\"\\u0041\\u00e9\\u00E9\\u20ac\\u20AC\\uffff\\uFFFF\\u0001\\u001f\\u007f\"]",
    "[\"\\ud83d\\ude00\",\"\\uD83D\\uDE00\",\"\\udbff\\udfff\",\"\\ud800\\udc00\"]",
    "[\"a\\u0062c\",\"\\n\",\"x\\\\\"]",
    /* strings: raw UTF-8 of every length, edges of the ranges */
    "[\"\xc2\x80\",\"\xdf\xbf\",\"\xe0\xa0\x80\",\"\xed\x9f\xbf\",\"\xee\x80\x80\"]",
    "[\"\xef\xbf\xbf\",\"\xf0\x90\x80\x80\",\"\xf4\x8f\xbf\xbf\",\"\xf0\x9f\x98\x80\"]",
    "[\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\",\"\x7f\"]",
    /* keys */
    "{\"\\u0061\":1,\"b\":2}",
    "{\"caf\xc3\xa9\":1,\"cafe\":2}",
    "{\"a\\nb\":{\"a\\tb\":[\"\\\"\"]}}",
    "{\"A\":1,\"a\":2}",
    "{\"a\":1,\"a \":2,\" a\":3}",
};

START_TEST(accepts_like_jansson)
{
        for (size_t i = 0; i < ARRAY_SIZE(accepted); i++)
                assert_same_as_jansson_text(accepted[i]);
}
END_TEST

START_TEST(builds_expected_values)
{
        /* The comparison above leans on jansson; these spell the values out. */
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        const char *text = "{\"i\":-9223372036854775808,\"r\":0.5,\"s\":\"\\u00e9\\ud83d\\ude00\","
                           "\"t\":true,\"n\":null,\"a\":[1,\"x\"]}";
        ck_assert_int_eq(jsonparse_load(text, strlen(text), DEPTH, &j, &err), 0);
        ck_assert(json_is_integer(json_object_get(j, "i")));
        ck_assert(json_integer_value(json_object_get(j, "i")) == INT64_MIN);
        ck_assert(json_is_real(json_object_get(j, "r")));
        ck_assert(json_real_value(json_object_get(j, "r")) == 0.5);
        ck_assert_str_eq(json_string_value(json_object_get(j, "s")), "\xc3\xa9\xf0\x9f\x98\x80");
        ck_assert_uint_eq(json_string_length(json_object_get(j, "s")), 6);
        ck_assert(json_is_true(json_object_get(j, "t")));
        ck_assert(json_is_null(json_object_get(j, "n")));
        ck_assert_json_eq_text(json_object_get(j, "a"), "[1, \"x\"]");
        ck_assert_uint_eq(json_object_size(j), 6);
        /* An integral value with a fraction or exponent is a real. */
        _unit_json_ json_t *k = NULL;
        ck_assert_int_eq(jsonparse_load("[1.0,1e0,1]", 11, DEPTH, &k, &err), 0);
        ck_assert(json_is_real(json_array_get(k, 0)));
        ck_assert(json_is_real(json_array_get(k, 1)));
        ck_assert(json_is_integer(json_array_get(k, 2)));
}
END_TEST

START_TEST(keeps_key_order)
{
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        const char *text = "{\"z\":1,\"a\":2,\"m\":3,\"\\u0062\":4}";
        ck_assert_int_eq(jsonparse_load(text, strlen(text), DEPTH, &j, &err), 0);
        const char *order[] = {"z", "a", "m", "b"};
        size_t n = 0;
        const char *key;
        json_t *v;
        json_object_foreach (j, key, v) {
                ck_assert_uint_lt(n, ARRAY_SIZE(order));
                ck_assert_str_eq(key, order[n]);
                ck_assert_int_eq(json_integer_value(v), (json_int_t)n + 1);
                n++;
        }
        ck_assert_uint_eq(n, 4);
}
END_TEST

START_TEST(uses_only_len_bytes)
{
        /* The input need not be NUL-terminated: bytes past len are not read. */
        const char text[] = "{\"a\":[1,2]}GARBAGE";
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        ck_assert_int_eq(jsonparse_load(text, 11, DEPTH, &j, &err), 0);
        ck_assert_json_eq_text(j, "{\"a\":[1,2]}");
        /* Cut inside a value: refused, not read on. */
        json_t *k = NULL;
        ck_assert_int_eq(jsonparse_load(text, 8, DEPTH, &k, &err), -EINVAL);
        ck_assert_ptr_null(k);
}
END_TEST

START_TEST(rejects_empty_and_scalars)
{
        assert_refused_n("", 0, "empty");
        assert_refused(" \t\r\n", "empty");
        static const char *const scalars[] = {"1", "-1", "0.5", "\"s\"", "true", "false", "null"};
        for (size_t i = 0; i < ARRAY_SIZE(scalars); i++)
                assert_refused(scalars[i], "at byte 0: expected an object or an array");
        assert_refused("  \"s\"", "at byte 2");
}
END_TEST

START_TEST(rejects_trailing_bytes)
{
        assert_refused("{} x", "at byte 3: trailing bytes");
        assert_refused("[]]", "at byte 2: trailing bytes");
        assert_refused("{}{}", "at byte 2: trailing bytes");
        assert_refused("[1] 2", "at byte 4: trailing bytes");
        assert_refused("{\"a\":1},", "at byte 7: trailing bytes");
        assert_refused_n("[]\0", 3, "at byte 2: trailing bytes");
        assert_refused("[] \xef\xbb\xbf", "at byte 3: trailing bytes");
}
END_TEST

START_TEST(rejects_duplicate_keys)
{
        static const char *const dups[] = {
            "{\"a\":1,\"a\":2}",
            "{\"a\":1,\"b\":2,\"a\":3}",
            "{\"x\":{\"uid\":\"1\",\"uid\":\"2\"}}",
            "[{\"k\":1},{\"k\":2,\"k\":3}]",
            /* The same key spelled with escapes, either one first. */
            "{\"a\":1,\"\\u0061\":2}",
            "{\"\\u0061\":1,\"a\":2}",
            "{\"\\u0061\":1,\"\\u0061\":2}",
            "{\"ab\":1,\"a\\u0062\":2}",
            "{\"a/\":1,\"a\\/\":2}",
            "{\"caf\xc3\xa9\":1,\"caf\\u00e9\":2}",
            "{\"caf\\u00E9\":1,\"caf\xc3\xa9\":2}",
            "{\"\xf0\x9f\x98\x80\":1,\"\\ud83d\\ude00\":2}",
            "{\"\\n\":1,\"\\u000a\":2}",
            "{\"\":1,\"\":2}",
            /* An escaped key whose value also needs the scratch buffer. */
            "{\"\\u0061\":\"\\n\\n\",\"b\":\"\\t\",\"a\":3}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(dups); i++) {
                /* jansson agrees these are duplicates. */
                json_error_t jerr;
                json_t *jj = json_loads(dups[i], JSON_REJECT_DUPLICATES, &jerr);
                ck_assert_msg(jj == NULL, "test bug: jansson accepts %s", dups[i]);
                assert_refused(dups[i], "duplicate object key");
        }
        /* The offset is where the second key ends. */
        assert_refused("{\"a\":1,\"a\":2}", "at byte 10");
}
END_TEST

START_TEST(rejects_nul)
{
        assert_refused_n("[\"a\0b\"]", 7, "at byte 3: control character");
        assert_refused_n("{\"a\0\":1}", 8, "at byte 3: control character");
        /* jansson takes a NUL right after a number or literal; this reader
         * takes no raw NUL anywhere. */
        assert_refused_n("[1\0]", 4, "at byte 2");
        assert_refused_n("[true\0]", 7, "at byte 5");
        assert_refused_n("\0[]", 3, "at byte 0");
        assert_refused("[\"\\u0000\"]", "\\u0000 is not accepted");
        assert_refused("[\"abc\\u0000\"]", "at byte 11");
        assert_refused("{\"\\u0000\":1}", "\\u0000");
        assert_refused("{\"k\":\"x\\u0000y\"}", "\\u0000");
}
END_TEST

START_TEST(rejects_lone_surrogates)
{
        static const struct {
                const char *text, *why;
        } t[] = {
            {"[\"\\ud800\"]", "lone high surrogate"},
            {"[\"\\udbff\"]", "lone high surrogate"},
            {"[\"\\ud800x\"]", "lone high surrogate"},
            {"[\"\\ud800\\n\"]", "lone high surrogate"},
            {"[\"\\ud800\\u0041\"]", "lone high surrogate"},
            {"[\"\\ud800\\ud800\"]", "lone high surrogate"},
            {"[\"\\ud800\\ue000\"]", "lone high surrogate"},
            {"[\"\\ud800\\udbff\"]", "lone high surrogate"},
            {"[\"\\ud800\\u", "lone high surrogate"},
            {"[\"\\udc00\"]", "lone low surrogate"},
            {"[\"\\udfff\"]", "lone low surrogate"},
            {"[\"\\udc00\\ud800\"]", "lone low surrogate"},
            {"{\"\\ud83d\":1}", "lone high surrogate"},
            {"{\"\\ude00\":1}", "lone low surrogate"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++)
                assert_refused(t[i].text, t[i].why);
        assert_refused("[\"ab\\udc00\"]", "at byte 10");
}
END_TEST

START_TEST(rejects_invalid_utf8)
{
        static const char *const bad[] = {
            "\xc0\xaf",
            "\xc1\xbf", /* overlong 2-byte */
            "\xe0\x80\xaf",
            "\xe0\x9f\xbf", /* overlong 3-byte */
            "\xf0\x80\x80\xaf",
            "\xf0\x8f\xbf\xbf", /* overlong 4-byte */
            "\xed\xa0\x80",
            "\xed\xbf\xbf", /* UTF-16 surrogates encoded */
            "\xf4\x90\x80\x80",
            "\xf5\x80\x80\x80", /* above U+10FFFF */
            "\xf7\xbf\xbf\xbf",
            "\xf8\x88\x80\x80\x80",
            "\xc3",
            "\xe2\x82", /* truncated before the quote */
            "\xf0\x9f\x98",
            "\xe2\x28\xa1", /* bad continuation */
            "\x80",
            "\xbf", /* lone continuation bytes */
            "\xfe",
            "\xff",
        };
        /* In a value, in a key, after an escape (the slow path). */
        static const char *const forms[][2] = {
            {"[\"", "\"]"}, {"{\"", "\":1}"}, {"[\"\\n", "\"]"}, {"{\"k\\t", "\":1}"}};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                for (size_t f = 0; f < ARRAY_SIZE(forms); f++) {
                        char text[64];
                        (void)snprintf(text, sizeof(text), "%s%s%s", forms[f][0], bad[i],
                                       forms[f][1]);
                        assert_refused(text, "invalid UTF-8");
                }
        }
        /* The offset names the first byte of the bad sequence. */
        assert_refused("[\"ab\xc0\xaf\"]", "at byte 4: invalid UTF-8");
        assert_refused("[\"\\tb\xed\xa0\x80\"]", "at byte 5: invalid UTF-8");
        /* Cut off by the end of the input inside a sequence (the helpers
         * pass an exact-size copy, so ASan sees any read past the end). */
        static const char *const cut[] = {"[\"\xc3",        "[\"\xe2\x82", "[\"\xf0\x9f\x98",
                                          "[\"\\n\xe2\x82", "{\"\xf0\x9f", "[\"\\n\xf0"};
        for (size_t i = 0; i < ARRAY_SIZE(cut); i++)
                assert_refused(cut[i], "invalid UTF-8");
}
END_TEST

START_TEST(rejects_control_characters)
{
        for (unsigned c = 0x01; c < 0x20; c++) {
                char text[16];
                (void)snprintf(text, sizeof(text), "[\"a%cb\"]", (char)c);
                assert_refused(text, "at byte 3: control character");
                (void)snprintf(text, sizeof(text), "[\"\\n%c\"]", (char)c);
                assert_refused(text, "at byte 4: control character");
                (void)snprintf(text, sizeof(text), "{\"%c\":1}", (char)c);
                assert_refused(text, "at byte 2: control character");
        }
        /* DEL is not a control character for JSON. */
        assert_same_as_jansson_text("[\"a\x7f\"]");
}
END_TEST

START_TEST(integer_range)
{
        assert_same_as_jansson_text("[9223372036854775807,-9223372036854775808]");
        static const char *const bad[] = {
            "[9223372036854775808]",   "[-9223372036854775809]",       "[18446744073709551615]",
            "[18446744073709551616]",  "[-18446744073709551616]",      "[99999999999999999999999]",
            "[100000000000000000000]", "{\"a\":92233720368547758070}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                json_error_t jerr;
                json_t *jj = json_loads(bad[i], JSON_REJECT_DUPLICATES, &jerr);
                ck_assert_msg(jj == NULL, "test bug: jansson accepts %s", bad[i]);
                assert_refused(bad[i], "does not fit in 64 bits");
        }
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        ck_assert_int_eq(
            jsonparse_load("[9223372036854775807,-9223372036854775808]", 42, DEPTH, &j, &err), 0);
        ck_assert(json_integer_value(json_array_get(j, 0)) == INT64_MAX);
        ck_assert(json_integer_value(json_array_get(j, 1)) == INT64_MIN);
}
END_TEST

START_TEST(real_range)
{
        static const char *const bad[] = {"[1e999]", "[-1e999]", "[1.7976931348623159e308]",
                                          "[1e400]", "{\"a\":-2e308}"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
                assert_refused(bad[i], "real number out of range");
        /* Underflow is not overflow: it reads as zero, as jansson has it. */
        assert_same_as_jansson_text("[1e-999,-1e-999]");
        /* A long number goes through the heap copy; one past the limit too. */
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "[1."), 0);
        for (int i = 0; i < 200; i++)
                ck_assert_int_eq(strbuf_puts(&sb, "0"), 0);
        ck_assert_int_eq(strbuf_puts(&sb, "1e308]"), 0);
        assert_same_as_jansson(sb.data, sb.len);
        strbuf_truncate(&sb, sb.len - 2);
        ck_assert_int_eq(strbuf_puts(&sb, "9]"), 0);
        assert_refused_n(sb.data, sb.len, "real number out of range");
        strbuf_free(&sb);
}
END_TEST

START_TEST(rejects_malformed)
{
        static const struct {
                const char *text, *why;
        } t[] = {
            {"[1,]", "at byte 3: bad number"},
            {"[,1]", "at byte 1: bad number"},
            {"[01]", "at byte 2: expected ',' or ']'"},
            {"[1.]", "digits must follow '.'"},
            {"[.5]", "bad number"},
            {"[1e]", "digits must follow the exponent"},
            {"[1e+]", "digits must follow the exponent"},
            {"[-]", "bad number"},
            {"[+1]", "bad number"},
            {"[0x10]", "expected ',' or ']'"},
            {"[NaN]", "bad number"},
            {"[Infinity]", "bad number"},
            {"[-Infinity]", "bad number"},
            {"[tru]", "invalid literal"},
            {"[nul]", "invalid literal"},
            {"[True]", "bad number"},
            {"[\"\\x\"]", "unknown escape"},
            {"[\"\\'\"]", "unknown escape"},
            {"[\"\\u12G4\"]", "bad \\u escape"},
            {"[\"\\u12\"]", "bad \\u escape"},
            {"[\"abc]", "unterminated string"},
            {"[\"ab\\\"]", "unterminated string"},
            {"[\"\\", "unterminated escape"},
            {"{\"a\" 1}", "expected ':'"},
            {"{\"a\":1,}", "expected a string key"},
            {"{a:1}", "expected a string key"},
            {"{'a':1}", "expected a string key"},
            {"{1:1}", "expected a string key"},
            {"[1 2]", "expected ',' or ']'"},
            {"{\"a\":1 \"b\":2}", "expected ',' or '}'"},
            {"[1", "unterminated array"},
            {"{\"a\":1", "unterminated object"},
            {"{\"a\":", "unexpected end of input"},
            {"[", "unexpected end of input"},
            {"{", "expected a string key"},
            {"[}", "bad number"},
            {"{]", "expected a string key"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                json_error_t jerr;
                json_t *jj = json_loads(t[i].text, JSON_REJECT_DUPLICATES, &jerr);
                ck_assert_msg(jj == NULL, "test bug: jansson accepts %s", t[i].text);
                assert_refused(t[i].text, t[i].why);
                assert_refused(t[i].text, "malformed JSON at byte ");
        }
}
END_TEST

/* Nesting of exactly depth containers: arrays, objects, or both taking
 * turns; with empty_inner the innermost container is empty. Malloc'd. */
static char *nested(unsigned depth, const char *kind, bool empty_inner)
{
        strbuf_t sb = {0};
        for (unsigned i = 0; i < depth; i++) {
                bool obj = kind[0] == 'o' || (kind[0] == 'm' && i % 2 == 1);
                bool last = i + 1 == depth;
                const char *open = obj ? (last && empty_inner ? "{" : "{\"k\":") : "[";
                ck_assert_int_eq(strbuf_puts(&sb, open), 0);
        }
        if (!empty_inner)
                ck_assert_int_eq(strbuf_puts(&sb, "1"), 0);
        for (unsigned i = depth; i-- > 0;) {
                bool obj = kind[0] == 'o' || (kind[0] == 'm' && i % 2 == 1);
                ck_assert_int_eq(strbuf_puts(&sb, obj ? "}" : "]"), 0);
        }
        return strbuf_take(&sb);
}

START_TEST(depth_limit_exact)
{
        static const unsigned depths[] = {1, 2, 3, 7, 64, 65, 500};
        static const char *const kinds[] = {"arrays", "objects", "mixed"};
        for (size_t d = 0; d < ARRAY_SIZE(depths); d++) {
                for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
                        for (int empty = 0; empty < 2; empty++) {
                                unsigned depth = depths[d];
                                _cleanup_free_ char *text = nested(depth, kinds[k], empty);
                                hg_error_t err = {0};
                                _unit_json_ json_t *j = NULL;
                                ck_assert_msg(
                                    jsonparse_load(text, strlen(text), depth, &j, &err) == 0,
                                    "%s refused at its own depth %u: %s", text, depth, err.message);
                                json_t *deep = NULL;
                                ck_assert_msg(jsonparse_load(text, strlen(text), depth - 1, &deep,
                                                             &err) == -EINVAL,
                                              "%s accepted at limit %u", text, depth - 1);
                                ck_assert_ptr_null(deep);
                                char want[64];
                                (void)snprintf(want, sizeof(want),
                                               "deeper than %u levels (at byte ", depth - 1);
                                ck_assert_msg(strstr(err.message, want), "message: %s",
                                              err.message);
                        }
                }
        }
}
END_TEST

START_TEST(depth_error_names_offset)
{
        hg_error_t err = {0};
        json_t *j = NULL;
        ck_assert_int_eq(jsonparse_load("[[[1]]]", 7, 2, &j, &err), -EINVAL);
        ck_assert_str_eq(err.message, "JSON nested deeper than 2 levels (at byte 2)");
        ck_assert_int_eq(jsonparse_load("{\"a\":[1,{\"b\":2}]}", 17, 2, &j, &err), -EINVAL);
        ck_assert_str_eq(err.message, "JSON nested deeper than 2 levels (at byte 8)");
        /* Siblings do not add up. */
        _unit_json_ json_t *k = NULL;
        ck_assert_int_eq(jsonparse_load("[[1],[2],{\"a\":3},[]]", 20, 2, &k, &err), 0);
        /* A limit of 0 refuses even the top level. */
        ck_assert_int_eq(jsonparse_load("[]", 2, 0, &j, &err), -EINVAL);
        ck_assert_ptr_null(j);
}
END_TEST

START_TEST(deep_failure_frees_everything)
{
        /* A fault deep inside a large document: everything built so far is
         * dropped (ASan reports a leak otherwise) and nothing is returned. */
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "{\"list\":["), 0);
        for (int i = 0; i < 2000; i++)
                ck_assert_int_eq(
                    strbuf_printf(&sb, "{\"n\":%d,\"s\":\"v\\n%d\",\"a\":[1,2]},", i, i), 0);
        ck_assert_int_eq(strbuf_puts(&sb, "{\"n\":1,\"n\":2}]}"), 0);
        json_t *j = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(jsonparse_load(sb.data, sb.len, DEPTH, &j, &err), -EINVAL);
        ck_assert_ptr_null(j);
        ck_assert_msg(strstr(err.message, "duplicate object key"), "message: %s", err.message);
        strbuf_free(&sb);
}
END_TEST

/* A string of n repetitions of unit inside quotes, appended to sb. */
static void put_repeated(strbuf_t *sb, const char *unit, size_t n)
{
        for (size_t i = 0; i < n; i++)
                ck_assert_int_eq(strbuf_puts(sb, unit), 0);
}

START_TEST(long_strings_with_escapes)
{
        /* The scratch buffer starts at 256 bytes and doubles: strings well
         * past that, escapes at the start, the end, after a long plain run,
         * and many strings of growing size in one document. */
        static const char *const units[] = {"\\n",         "a\\\"", "\\u00e9", "\\ud83d\\ude00",
                                            "\xc3\xa9\\t", "\\\\",  "\\/x"};
        static const size_t counts[] = {1, 127, 128, 129, 300, 5000, 20000};
        for (size_t u = 0; u < ARRAY_SIZE(units); u++) {
                strbuf_t sb = {0};
                ck_assert_int_eq(strbuf_puts(&sb, "{"), 0);
                for (size_t c = 0; c < ARRAY_SIZE(counts); c++) {
                        ck_assert_int_eq(strbuf_printf(&sb, "%s\"k%zu", c ? "," : "", c), 0);
                        put_repeated(&sb, units[u], c + 1); /* escaped keys, too */
                        ck_assert_int_eq(strbuf_puts(&sb, "\":\""), 0);
                        put_repeated(&sb, units[u], counts[c]);
                        ck_assert_int_eq(strbuf_puts(&sb, "\""), 0);
                }
                ck_assert_int_eq(strbuf_puts(&sb, "}"), 0);
                assert_same_as_jansson(sb.data, sb.len);
                strbuf_free(&sb);
        }
}
END_TEST

START_TEST(escape_after_long_plain_run)
{
        for (size_t plain = 250; plain <= 1100; plain += 850 / 4) {
                strbuf_t sb = {0};
                ck_assert_int_eq(strbuf_puts(&sb, "[\""), 0);
                put_repeated(&sb, "p", plain);
                ck_assert_int_eq(strbuf_puts(&sb, "\\n\""), 0);
                /* A short escaped string after it reuses the big scratch. */
                ck_assert_int_eq(strbuf_puts(&sb, ",\"\\t\",\""), 0);
                put_repeated(&sb, "\xe2\x82\xac", plain);
                ck_assert_int_eq(strbuf_puts(&sb, "\\\\\"]"), 0);
                assert_same_as_jansson(sb.data, sb.len);

                hg_error_t err = {0};
                _unit_json_ json_t *j = NULL;
                ck_assert_int_eq(jsonparse_load(sb.data, sb.len, DEPTH, &j, &err), 0);
                const char *s = json_string_value(json_array_get(j, 0));
                ck_assert_uint_eq(json_string_length(json_array_get(j, 0)), plain + 1);
                ck_assert_int_eq(s[plain], '\n');
                ck_assert_str_eq(json_string_value(json_array_get(j, 1)), "\t");
                ck_assert_uint_eq(json_string_length(json_array_get(j, 2)), 3 * plain + 1);
                strbuf_free(&sb);
        }
}
END_TEST

START_TEST(escaped_key_survives_long_value)
{
        /* The key lives in scratch until the value, which grows scratch. */
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "{\"key\\u00e9\\n\":\""), 0);
        put_repeated(&sb, "\\u20ac", 10000);
        ck_assert_int_eq(strbuf_puts(&sb, "\",\"n\\u0065xt\":{\"in\\u006ber\":\"\\t\"}}"), 0);
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        ck_assert_int_eq(jsonparse_load(sb.data, sb.len, DEPTH, &j, &err), 0);
        json_t *v = json_object_get(j, "key\xc3\xa9\n");
        ck_assert_ptr_nonnull(v);
        ck_assert_uint_eq(json_string_length(v), 30000);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "next"), "inker")),
                         "\t");
        assert_same_as_jansson(sb.data, sb.len);
        strbuf_free(&sb);
}
END_TEST

START_TEST(large_document)
{
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "{\"items\":["), 0);
        for (int i = 0; i < 5000; i++)
                ck_assert_int_eq(strbuf_printf(&sb, "%s{\"name\":\"env-%d\",\"value\":\"%d\\n\"}",
                                               i ? "," : "", i, i * 7),
                                 0);
        ck_assert_int_eq(strbuf_puts(&sb, "]}"), 0);
        assert_same_as_jansson(sb.data, sb.len);
        strbuf_free(&sb);
}
END_TEST

/* Loads text through proj; it must be accepted. */
static json_t *projected(const char *text, const jsonparse_proj_t *proj)
{
        hg_error_t err = {0};
        json_t *j = NULL;
        int r = jsonparse_load_projected(text, strlen(text), DEPTH, proj, &j, &err);
        ck_assert_msg(r == 0, "refused %s: %s", text, err.message);
        return j;
}

START_TEST(projection_builds_only_what_it_names)
{
        const char *text = "{\"z\":[1,{\"q\":2}],\"a\":{\"deep\":[{\"x\":1}]},"
                           "\"k\":{\"k\":\"kept\",\"drop\":{\"y\":[1,2,3]},\"a\":{\"gone\":1}},"
                           "\"items\":[{\"n\":1},2,\"s\",[3],{\"m\":{}}],\"tail\":\"\\u00e9\"}";
        _unit_json_ json_t *j = projected(text, &keep_some);
        /* a whole; k through its projection (k whole, a emptied); items'
         * objects emptied, the rest as they were; z and tail dropped. */
        ck_assert_json_eq_text(j, "{\"a\":{\"deep\":[{\"x\":1}]},"
                                  "\"k\":{\"k\":\"kept\",\"a\":{}},"
                                  "\"items\":[{},2,\"s\",[3],{}]}");
        /* Members keep the document's order, not the projection's. */
        const char *order[] = {"a", "k", "items"};
        size_t n = 0;
        const char *key;
        json_t *v;
        json_object_foreach (j, key, v)
                ck_assert_str_eq(key, order[n++]);
        ck_assert_uint_eq(n, 3);
        /* Nothing named: an empty top-level object; NULL: the whole document. */
        _unit_json_ json_t *none = projected(text, &keep_nothing);
        ck_assert_json_eq_text(none, "{}");
        _unit_json_ json_t *whole = projected(text, NULL);
        _unit_json_ json_t *want = unit_json(text);
        ck_assert_json_eq(whole, want);
}
END_TEST

START_TEST(projection_builds_others_through_their_projection)
{
        /* Members not listed are built through others, not dropped: their
         * keys are all there, their values as little as others builds. */
        _unit_json_ json_t *j =
            projected("{\"z\":[1,{\"q\":2},[{\"r\":3}]],\"k\":{\"deep\":[{\"x\":1}]},"
                      "\"o\":{\"y\":{\"w\":1}},\"s\":\"t\",\"n\":null}",
                      &keep_k_note_others);
        ck_assert_json_eq_text(j, "{\"z\":[1,{},[{}]],\"k\":{\"deep\":[{\"x\":1}]},"
                                  "\"o\":{},\"s\":\"t\",\"n\":null}");
}
END_TEST

START_TEST(projection_builds_the_unexpected_whole)
{
        /* What the projection does not describe is built as it is, so a
         * reader checking types sees the wrong type: a scalar or an array
         * where members were named, an object where items were. */
        _unit_json_ json_t *a = projected("{\"m\":[{\"k\":1,\"z\":2}],\"x\":7}", &keep_some);
        ck_assert_json_eq_text(a, "{\"m\":[{\"k\":1,\"z\":2}],\"x\":7}");
        _unit_json_ json_t *b = projected("{\"items\":{\"n\":{\"deep\":1}}}", &keep_some);
        ck_assert_json_eq_text(b, "{\"items\":{\"n\":{\"deep\":1}}}");
        _unit_json_ json_t *c = projected("{\"k\":null,\"x\":\"s\",\"items\":true}", &keep_some);
        ck_assert_json_eq_text(c, "{\"k\":null,\"x\":\"s\",\"items\":true}");
        /* A top-level array through an object projection: whole. */
        _unit_json_ json_t *d = projected("[{\"q\":1},{\"k\":2}]", &keep_nothing);
        ck_assert_json_eq_text(d, "[{\"q\":1},{\"k\":2}]");
        /* Through an items projection: each element by it. */
        _unit_json_ json_t *e = projected("[{\"k\":1,\"q\":2},3]", &some_inner_proj);
        ck_assert_json_eq_text(e, "[{},3]");
}
END_TEST

START_TEST(projection_keys_match_decoded)
{
        /* A listed key spelled with escapes is the key it decodes to. */
        _unit_json_ json_t *j = projected("{\"\\u0061\":1,\"\\u006b\":{\"k\":2}}", &keep_some);
        ck_assert_json_eq_text(j, "{\"a\":1,\"k\":{\"k\":2}}");
        /* ...and is a duplicate of its plain spelling, kept or skipped. */
        static const char *const dups[] = {
            "{\"a\":1,\"\\u0061\":2}",
            "{\"zz\":1,\"z\\u007a\":2}",
            "{\"k\":{\"drop\":1,\"dr\\u006fp\":2}}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(dups); i++) {
                hg_error_t err = {0};
                json_t *d = NULL;
                ck_assert_int_eq(
                    jsonparse_load_projected(dups[i], strlen(dups[i]), DEPTH, &keep_some, &d, &err),
                    -EINVAL);
                ck_assert_msg(strstr(err.message, "duplicate object key"), "%s", err.message);
        }
}
END_TEST

/* An object of n distinct keys "kN" (and a repeat of key dup if >= 0),
 * nested under "skip" so that a projection skips it. Malloc'd. */
static char *many_keys(size_t n, long dup_at, long dup)
{
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "{\"skip\":{"), 0);
        for (size_t i = 0; i < n; i++) {
                ck_assert_int_eq(strbuf_printf(&sb, "%s\"k%zu\":%zu", i ? "," : "", i, i), 0);
                if ((long)i == dup_at)
                        ck_assert_int_eq(strbuf_printf(&sb, ",\"k%ld\":0", dup), 0);
        }
        ck_assert_int_eq(strbuf_puts(&sb, "},\"a\":1}"), 0);
        return strbuf_take(&sb);
}

START_TEST(projection_finds_duplicates_in_large_skipped_objects)
{
        /* The first keys of a skipped object are kept in a list, the rest
         * in a hashed set: duplicates are found either side of the switch,
         * at the same offset as the whole read finds them. */
        static const size_t sizes[] = {1, 15, 16, 17, 40, 3000};
        for (size_t s = 0; s < ARRAY_SIZE(sizes); s++) {
                size_t n = sizes[s];
                _cleanup_free_ char *ok = many_keys(n, -1, 0);
                _unit_json_ json_t *j = projected(ok, &keep_some);
                ck_assert_json_eq_text(j, "{\"a\":1}");
                const long at[] = {0, (long)n / 2, (long)n - 1};
                for (size_t a = 0; a < ARRAY_SIZE(at); a++) {
                        for (long dup = 0; dup <= at[a]; dup += at[a] > 20 ? at[a] / 7 + 1 : 1) {
                                _cleanup_free_ char *bad = many_keys(n, at[a], dup);
                                assert_refused(bad, "duplicate object key");
                        }
                }
        }
}
END_TEST

START_TEST(projection_limits_depth_where_it_skips)
{
        /* Skipped containers count towards the limit like built ones. */
        for (unsigned depth = 2; depth < 70; depth += 11) {
                strbuf_t sb = {0};
                ck_assert_int_eq(strbuf_puts(&sb, "{\"z\":"), 0);
                _cleanup_free_ char *inner = nested(depth - 1, "mixed", false);
                ck_assert_int_eq(strbuf_puts(&sb, inner), 0);
                ck_assert_int_eq(strbuf_puts(&sb, "}"), 0);
                hg_error_t err = {0}, perr = {0};
                json_t *j = NULL;
                ck_assert_int_eq(
                    jsonparse_load_projected(sb.data, sb.len, depth, &keep_nothing, &j, &err), 0);
                json_decref(j);
                j = NULL;
                ck_assert_int_eq(jsonparse_load(sb.data, sb.len, depth - 1, &j, &err), -EINVAL);
                ck_assert_int_eq(
                    jsonparse_load_projected(sb.data, sb.len, depth - 1, &keep_nothing, &j, &perr),
                    -EINVAL);
                ck_assert_ptr_null(j);
                ck_assert_str_eq(perr.message, err.message);
                strbuf_free(&sb);
        }
}
END_TEST

START_TEST(projection_strings_at_every_offset)
{
        /* The string scan takes 16 and 8 bytes at a time: a quote, an
         * escape, a control, UTF-8 (good and bad) at every offset of strings
         * up to 40 bytes, in kept and skipped values alike. */
        static const char *const specials[] = {"\\n",      "\\u00e9", "\xc3\xa9",        "\\\"",
                                               "\xe2\x82", "\x01",    "\xf0\x9f\x98\x80"};
        for (size_t sp = 0; sp < ARRAY_SIZE(specials); sp++) {
                for (size_t len = 0; len < 40; len++) {
                        for (size_t at = 0; at <= len; at += 3) {
                                strbuf_t sb = {0};
                                ck_assert_int_eq(strbuf_puts(&sb, "{\"a\":\""), 0);
                                for (size_t i = 0; i < len; i++) {
                                        if (i == at)
                                                ck_assert_int_eq(strbuf_puts(&sb, specials[sp]), 0);
                                        ck_assert_int_eq(strbuf_puts(&sb, "p"), 0);
                                }
                                ck_assert_int_eq(strbuf_puts(&sb, "\",\"z\":\""), 0);
                                for (size_t i = 0; i < len; i++) {
                                        if (i == at)
                                                ck_assert_int_eq(strbuf_puts(&sb, specials[sp]), 0);
                                        ck_assert_int_eq(strbuf_puts(&sb, "q"), 0);
                                }
                                ck_assert_int_eq(strbuf_puts(&sb, "\"}"), 0);
                                hg_error_t err = {0};
                                _unit_json_ json_t *whole = NULL;
                                int r = jsonparse_load(sb.data, sb.len, DEPTH, &whole, &err);
                                if (r == 0)
                                        assert_same_as_jansson(sb.data, sb.len);
                                else
                                        assert_refused_n(sb.data, sb.len, err.message);
                                strbuf_free(&sb);
                        }
                }
        }
}
END_TEST

static Suite *jsonparse_suite(void)
{
        Suite *s = suite_create("jsonparse");
        TCase *tc = tcase_create("accepts");
        tcase_set_timeout(tc, 30); /* large inputs, slow under ASan */
        tcase_add_test(tc, accepts_like_jansson);
        tcase_add_test(tc, builds_expected_values);
        tcase_add_test(tc, keeps_key_order);
        tcase_add_test(tc, uses_only_len_bytes);
        tcase_add_test(tc, long_strings_with_escapes);
        tcase_add_test(tc, escape_after_long_plain_run);
        tcase_add_test(tc, escaped_key_survives_long_value);
        tcase_add_test(tc, large_document);
        suite_add_tcase(s, tc);
        tc = tcase_create("rejects");
        tcase_add_test(tc, rejects_empty_and_scalars);
        tcase_add_test(tc, rejects_trailing_bytes);
        tcase_add_test(tc, rejects_duplicate_keys);
        tcase_add_test(tc, rejects_nul);
        tcase_add_test(tc, rejects_lone_surrogates);
        tcase_add_test(tc, rejects_invalid_utf8);
        tcase_add_test(tc, rejects_control_characters);
        tcase_add_test(tc, integer_range);
        tcase_add_test(tc, real_range);
        tcase_add_test(tc, rejects_malformed);
        tcase_add_test(tc, depth_limit_exact);
        tcase_add_test(tc, depth_error_names_offset);
        tcase_add_test(tc, deep_failure_frees_everything);
        suite_add_tcase(s, tc);
        tc = tcase_create("projection");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, projection_builds_only_what_it_names);
        tcase_add_test(tc, projection_builds_others_through_their_projection);
        tcase_add_test(tc, projection_builds_the_unexpected_whole);
        tcase_add_test(tc, projection_keys_match_decoded);
        tcase_add_test(tc, projection_finds_duplicates_in_large_skipped_objects);
        tcase_add_test(tc, projection_limits_depth_where_it_skips);
        tcase_add_test(tc, projection_strings_at_every_offset);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(jsonparse_suite());
}
