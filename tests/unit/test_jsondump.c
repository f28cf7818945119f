/* Unit tests for common/jsondump: byte for byte what
 * json_dumps(JSON_COMPACT | JSON_ENCODE_ANY) writes, on values built here. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cleanup.h"
#include "jsondump.h"
#include "strbuf.h"
#include "unit.h"

/* Dumps j both ways; they must match, and match want when given. */
static void assert_dump(const json_t *j, const char *want)
{
        _cleanup_free_ char *ref = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
        ck_assert_ptr_nonnull(ref);
        _cleanup_free_ char *got = jsondump(j);
        ck_assert_msg(got != NULL, "jsondump refused %s", ref);
        ck_assert_str_eq(got, ref);
        if (want)
                ck_assert_str_eq(got, want);
}

/* Takes over j (a test's new value). */
static void assert_dump_new(json_t *j, const char *want)
{
        ck_assert_ptr_nonnull(j);
        assert_dump(j, want);
        json_decref(j);
}

START_TEST(scalars)
{
        assert_dump_new(json_null(), "null");
        assert_dump_new(json_true(), "true");
        assert_dump_new(json_false(), "false");
        assert_dump_new(json_integer(0), "0");
        assert_dump_new(json_integer(-1), "-1");
        assert_dump_new(json_integer(INT64_MAX), "9223372036854775807");
        assert_dump_new(json_integer(INT64_MIN), "-9223372036854775808");
        assert_dump_new(json_string(""), "\"\"");
        assert_dump_new(json_string("plain text"), "\"plain text\"");
}
END_TEST

START_TEST(reals)
{
        static const struct {
                double d;
                const char *want;
        } t[] = {
            {1.0, "1.0"},
            {0.1, "0.10000000000000001"},
            {1e300, "1.0000000000000001e300"},
            {-2.5e-10, "-2.5000000000000002e-10"},
            {1e-5, "1.0000000000000001e-5"},
            {0.5, "0.5"},
            {-0.0, "-0.0"},
            {0.0, "0.0"},
            {100.0, "100.0"},
            {1e16, "10000000000000000.0"},
            {1e17, "1e17"},
            {1e-4, "0.0001"},
            {123.456, "123.456"},
            {DBL_MAX, "1.7976931348623157e308"},
            {-DBL_MAX, "-1.7976931348623157e308"},
            {DBL_MIN, "2.2250738585072014e-308"},
            {5e-324, "4.9406564584124654e-324"},
            {9007199254740993.0, "9007199254740992.0"},
            {1.5e-7, "1.4999999999999999e-7"},
            {-1e100, "-1e100"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                json_t *r = json_real(t[i].d);
                ck_assert_ptr_nonnull(r);
                _cleanup_free_ char *ref = json_dumps(r, JSON_COMPACT | JSON_ENCODE_ANY);
                _cleanup_free_ char *got = jsondump(r);
                json_decref(r);
                ck_assert_ptr_nonnull(ref);
                ck_assert_msg(got && strcmp(got, ref) == 0, "%.17g: got %s, jansson %s", t[i].d,
                              got ? got : "(null)", ref);
                ck_assert_msg(strcmp(got, t[i].want) == 0, "%.17g: got %s, want %s", t[i].d, got,
                              t[i].want);
        }
}
END_TEST

START_TEST(every_control_character)
{
        /* All 32 C0 controls, one string and one key each. */
        static const char *const escaped[32] = {
            "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
            "\\b",     "\\t",     "\\n",     "\\u000B", "\\f",     "\\r",     "\\u000E", "\\u000F",
            "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
            "\\u0018", "\\u0019", "\\u001A", "\\u001B", "\\u001C", "\\u001D", "\\u001E", "\\u001F",
        };
        for (unsigned c = 0; c < 32; c++) {
                char raw[3] = {'x', (char)c, 'y'};
                char want[32];
                (void)snprintf(want, sizeof(want), "\"x%sy\"", escaped[c]);
                assert_dump_new(json_stringn(raw, 3), want);
                if (c == 0)
                        continue; /* a key is a C string: no NUL inside */
                char key[4] = {'k', (char)c, 0, 0};
                json_t *o = json_object();
                ck_assert_int_eq(json_object_set_new(o, key, json_integer(c)), 0);
                (void)snprintf(want, sizeof(want), "{\"k%s\":%u}", escaped[c], c);
                assert_dump_new(o, want);
        }
        /* All of them in one string, between plain runs. */
        char all[64];
        for (unsigned c = 0; c < 32; c++) {
                all[2 * c] = 'a';
                all[2 * c + 1] = (char)c;
        }
        assert_dump_new(json_stringn(all, sizeof(all)), NULL);
}
END_TEST

START_TEST(quotes_backslashes_and_slashes)
{
        assert_dump_new(json_string("\""), "\"\\\"\"");
        assert_dump_new(json_string("\\"), "\"\\\\\"");
        assert_dump_new(json_string("a\"b\\c\"\"\\\\"), "\"a\\\"b\\\\c\\\"\\\"\\\\\\\\\"");
        /* '/' and DEL are written as they are. */
        assert_dump_new(json_string("</script>"), "\"</script>\"");
        assert_dump_new(json_string("\x7f"), "\"\x7f\"");
        json_t *o = json_object();
        ck_assert_int_eq(json_object_set_new(o, "q\"k\\", json_string("v\"")), 0);
        assert_dump_new(o, "{\"q\\\"k\\\\\":\"v\\\"\"}");
}
END_TEST

START_TEST(utf8_raw)
{
        /* Non-ASCII stays raw UTF-8, never \u escapes. */
        static const char *const s[] = {
            "caf\xc3\xa9",
            "\xe2\x82\xac 5",
            "\xf0\x9f\x98\x80",
            "\xc2\x80",
            "\xef\xbf\xbf",
            "\xf4\x8f\xbf\xbf",
            "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\n\"",
        };
        for (size_t i = 0; i < ARRAY_SIZE(s); i++) {
                json_t *str = json_string(s[i]);
                ck_assert_ptr_nonnull(str);
                _cleanup_free_ char *got = jsondump(str);
                ck_assert_ptr_nonnull(got);
                ck_assert_ptr_null(strstr(got, "\\u"));
                assert_dump(str, NULL);
                json_t *o = json_object();
                ck_assert_int_eq(json_object_set(o, s[i], str), 0);
                assert_dump_new(o, NULL);
                json_decref(str);
        }
        assert_dump_new(json_string("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
}
END_TEST

START_TEST(nested_empty_containers)
{
        static const char *const t[] = {
            "[]",
            "{}",
            "[[]]",
            "[{}]",
            "{\"a\":{}}",
            "{\"a\":[]}",
            "[[],{},[[]],[{}],{\"\":[]}]",
            "{\"a\":{\"b\":{\"c\":{}}},\"d\":[[[[]]]]}",
            "[null,true,false,0,\"\",[],{}]",
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++)
                assert_dump_new(unit_json(t[i]), t[i]);
}
END_TEST

START_TEST(key_order_preserved)
{
        /* Insertion order, not sorted: z, a, m, then an updated key stays put. */
        json_t *o = json_object();
        ck_assert_int_eq(json_object_set_new(o, "z", json_integer(1)), 0);
        ck_assert_int_eq(json_object_set_new(o, "a", json_integer(2)), 0);
        ck_assert_int_eq(json_object_set_new(o, "m", json_object()), 0);
        ck_assert_int_eq(json_object_set_new(json_object_get(o, "m"), "y", json_true()), 0);
        ck_assert_int_eq(json_object_set_new(json_object_get(o, "m"), "b", json_false()), 0);
        ck_assert_int_eq(json_object_set_new(o, "a", json_string("again")), 0);
        assert_dump_new(o, "{\"z\":1,\"a\":\"again\",\"m\":{\"y\":true,\"b\":false}}");
}
END_TEST

START_TEST(mixed_document)
{
        json_t *j =
            unit_json("{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
                      "\"response\":{\"uid\":\"0a1b\",\"allowed\":true,\"patchType\":"
                      "\"JSONPatch\",\"patch\":\"W3sib3AiOiJhZGQifV0=\",\"n\":[1,-2,3.5,"
                      "1e-5,null],\"msg\":\"line1\\nline2\\t\\\"q\\\" \\u00e9\"}}");
        assert_dump_new(j, NULL);
}
END_TEST

START_TEST(long_strings)
{
        /* Long plain runs, and escapes spread through a long string, so the
         * output buffer grows many times. */
        size_t n = 200000;
        _cleanup_free_ char *s = malloc(n);
        ck_assert_ptr_nonnull(s);
        for (size_t i = 0; i < n; i++)
                s[i] = (char)(i % 97 == 0 ? '\n' : i % 89 == 0 ? '"' : 'a' + (char)(i % 26));
        assert_dump_new(json_stringn(s, n), NULL);
        memset(s, 'p', n);
        assert_dump_new(json_stringn(s, n), NULL);
        json_t *arr = json_array();
        for (int i = 0; i < 5000; i++)
                ck_assert_int_eq(json_array_append_new(arr, json_stringn(s, (size_t)i % 300)), 0);
        assert_dump_new(arr, NULL);
}
END_TEST

START_TEST(escapes_at_every_offset)
{
        /* Strings are scanned 16 and 8 bytes at a time: every byte that
         * needs escaping (and UTF-8 and DEL, which do not) at every offset
         * of strings up to 40 bytes, alone and in pairs. */
        static const char specials[] = {'"', '\\', '\n', '\x01', '\x1f', '\x7f', '\xc3', '/'};
        for (size_t sp = 0; sp < sizeof(specials); sp++) {
                for (size_t len = 1; len <= 40; len++) {
                        for (size_t at = 0; at < len; at++) {
                                char buf[48];
                                memset(buf, 'x', len);
                                buf[at] = specials[sp];
                                if (specials[sp] == '\xc3') {
                                        if (at + 1 >= len)
                                                continue;
                                        buf[at + 1] = '\xa9'; /* é */
                                }
                                if (at + 5 < len)
                                        buf[at + 5] = '"';
                                assert_dump_new(json_stringn(buf, len), NULL);
                                /* The exported writer, on its own. */
                                strbuf_t sb = {0};
                                ck_assert_int_eq(jsondump_append_string(&sb, buf, len), 0);
                                json_t *j = json_stringn(buf, len);
                                _cleanup_free_ char *want = json_dumps(j, JSON_ENCODE_ANY);
                                json_decref(j);
                                ck_assert_str_eq(sb.data, want);
                                strbuf_free(&sb);
                        }
                }
        }
}
END_TEST

START_TEST(integers_without_printf)
{
        static const json_int_t values[] = {
            0,         1,     -1,     9,         10,        -10,           99,
            100,       12345, -12345, INT64_MAX, INT64_MIN, INT64_MIN + 1, 1001,
            4294967296};
        for (size_t i = 0; i < ARRAY_SIZE(values); i++)
                assert_dump_new(json_integer(values[i]), NULL);
}
END_TEST

START_TEST(append_keeps_what_is_there)
{
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "prefix:"), 0);
        json_t *j = unit_json("{\"a\":[1,\"\\n\"]}");
        ck_assert_int_eq(jsondump_append(&sb, j), 0);
        ck_assert_int_eq(jsondump_append(&sb, j), 0);
        json_decref(j);
        ck_assert_str_eq(sb.data, "prefix:{\"a\":[1,\"\\n\"]}{\"a\":[1,\"\\n\"]}");
        ck_assert_uint_eq(sb.len, strlen(sb.data));
        strbuf_free(&sb);
}
END_TEST

/* jansson will not make a non-finite real (json_real and json_real_set
 * refuse), so one is forged through its private layout, which is
 * struct { json_t json; double value; } in every jansson 2.x. */
typedef struct forged_real {
        json_t json;
        double value;
} forged_real_t;

static json_t *forge_real(double d)
{
        json_t *r = json_real(0.0);
        ck_assert_ptr_nonnull(r);
        ((forged_real_t *)r)->value = d;
        /* If the layout ever changes, say so instead of testing nothing. */
        ck_assert_msg(isnan(d) ? isnan(json_real_value(r)) : json_real_value(r) == d,
                      "jansson's real layout changed; this test needs a new forgery");
        return r;
}

START_TEST(non_finite_refused)
{
        const double bad[] = {INFINITY, -INFINITY, NAN};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                json_t *r = forge_real(bad[i]);
                ck_assert_ptr_null(jsondump(r));
                strbuf_t sb = {0};
                ck_assert_int_eq(strbuf_puts(&sb, "x"), 0);
                ck_assert_int_eq(jsondump_append(&sb, r), -EINVAL);
                strbuf_free(&sb);
                /* Deep inside a document: the whole dump is refused. */
                json_t *doc = json_pack("{s:[i, {s:o}]}", "a", 1, "b", r);
                ck_assert_ptr_nonnull(doc);
                ck_assert_ptr_null(jsondump(doc));
                json_decref(doc);
        }
        /* Finite extremes are fine. */
        json_t *ok = forge_real(DBL_MAX);
        _cleanup_free_ char *text = jsondump(ok);
        json_decref(ok);
        ck_assert_str_eq(text, "1.7976931348623157e308");
}
END_TEST

/* Regression test (this was a bug, now fixed): jansson 2.14 keys may hold NUL bytes
 * (json_object_setn), and json_dumps writes them as \u0000; jsondump.c measures keys with strlen,
 * so it cuts them at the NUL, and two keys that differ after it come out as the same key twice. */
START_TEST(keys_with_nul_bytes)
{
        json_t *o = json_object();
        ck_assert_int_eq(json_object_setn_new(o, "a\0b", 3, json_integer(1)), 0);
        ck_assert_int_eq(json_object_setn_new(o, "a\0c", 3, json_integer(2)), 0);
        assert_dump_new(o, "{\"a\\u0000b\":1,\"a\\u0000c\":2}");
}
END_TEST

static Suite *jsondump_suite(void)
{
        Suite *s = suite_create("jsondump");
        TCase *tc = tcase_create("same_as_jansson");
        tcase_add_test(tc, scalars);
        tcase_add_test(tc, reals);
        tcase_add_test(tc, every_control_character);
        tcase_add_test(tc, quotes_backslashes_and_slashes);
        tcase_add_test(tc, utf8_raw);
        tcase_add_test(tc, nested_empty_containers);
        tcase_add_test(tc, key_order_preserved);
        tcase_add_test(tc, mixed_document);
        tcase_add_test(tc, long_strings);
        tcase_add_test(tc, escapes_at_every_offset);
        tcase_add_test(tc, integers_without_printf);
        tcase_add_test(tc, append_keeps_what_is_there);
        tcase_add_test(tc, keys_with_nul_bytes);
        suite_add_tcase(s, tc);
        tc = tcase_create("refused");
        tcase_add_test(tc, non_finite_refused);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(jsondump_suite());
}
