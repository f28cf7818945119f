/* Unit tests for common/jsonx: strict bounded loading and typed access. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "jsonx.h"
#include "strbuf.h"
#include "unit.h"

/* Loads text (strlen) with max_depth; returns the code, *ret on success. */
static int load(const char *text, unsigned max_depth, json_t **ret, hg_error_t *err)
{
        return jsonx_load(text, strlen(text), max_depth, ret, err);
}

/* "[[[ ... ]]]" nested depth times (opener and closer given), malloc'd. */
static char *nested(unsigned depth, const char *open, const char *close)
{
        strbuf_t sb = {0};
        for (unsigned i = 0; i < depth; i++)
                ck_assert_int_eq(strbuf_puts(&sb, open), 0);
        ck_assert_int_eq(strbuf_puts(&sb, "1"), 0);
        for (unsigned i = 0; i < depth; i++)
                ck_assert_int_eq(strbuf_puts(&sb, close), 0);
        return strbuf_take(&sb);
}

START_TEST(loads_object_and_array)
{
        hg_error_t err = {0};
        _unit_json_ json_t *o = NULL, *a = NULL;
        ck_assert_int_eq(load("{\"a\": [1, {\"b\": null}], \"c\": \"d\"}", 64, &o, &err), 0);
        ck_assert_json_eq_text(o, "{\"a\": [1, {\"b\": null}], \"c\": \"d\"}");
        ck_assert_int_eq(load(" [true, false] \n", 64, &a, &err), 0);
        ck_assert_json_eq_text(a, "[true, false]");
}
END_TEST

START_TEST(rejects_empty_and_scalars)
{
        hg_error_t err = {0};
        json_t *j = (json_t *)&err; /* a sentinel: must stay untouched */
        ck_assert_int_eq(jsonx_load("", 0, 64, &j, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "empty"));
        ck_assert_int_eq(load("   ", 64, &j, &err), -EINVAL);
        /* Exactly one object or array: a bare scalar is not a review. */
        ck_assert_int_eq(load("1", 64, &j, &err), -EINVAL);
        ck_assert_int_eq(load("\"s\"", 64, &j, &err), -EINVAL);
        ck_assert_int_eq(load("null", 64, &j, &err), -EINVAL);
        ck_assert_ptr_eq(j, (json_t *)&err);
}
END_TEST

START_TEST(depth_limit_exact)
{
        static const char *const pairs[][2] = {{"[", "]"}, {"{\"k\":", "}"}};
        for (size_t p = 0; p < 2; p++) {
                _cleanup_free_ char *ok = nested(JSONX_MAX_DEPTH, pairs[p][0], pairs[p][1]);
                _cleanup_free_ char *deep = nested(JSONX_MAX_DEPTH + 1, pairs[p][0], pairs[p][1]);
                hg_error_t err = {0};
                _unit_json_ json_t *j = NULL;
                ck_assert_int_eq(load(ok, JSONX_MAX_DEPTH, &j, &err), 0);
                json_t *k = NULL;
                ck_assert_int_eq(load(deep, JSONX_MAX_DEPTH, &k, &err), -EINVAL);
                ck_assert_ptr_null(k);
                ck_assert_msg(strstr(err.message, "deeper than 64"), "message: %s", err.message);
        }
}
END_TEST

START_TEST(depth_counts_mixed_nesting)
{
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        ck_assert_int_eq(load("{\"a\":[{\"b\":[1]}]}", 4, &j, &err), 0);
        json_t *k = NULL;
        ck_assert_int_eq(load("{\"a\":[{\"b\":[[1]]}]}", 4, &k, &err), -EINVAL);
        /* Siblings do not add up: depth comes back down after each close. */
        json_t *s = NULL;
        ck_assert_int_eq(load("[[1],[2],[3],[4],[5],[6]]", 2, &s, &err), 0);
        json_decref(s);
}
END_TEST

START_TEST(depth_ignores_brackets_in_strings)
{
        /* 70 openers inside a string are text, not nesting. */
        char brackets[71];
        memset(brackets, '[', 70);
        brackets[70] = '\0';
        char text[100];
        (void)snprintf(text, sizeof(text), "{\"a\":\"%s\"}", brackets);
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        ck_assert_int_eq(load(text, 2, &j, &err), 0);
        ck_assert_str_eq(json_string_value(json_object_get(j, "a")), brackets);
}
END_TEST

START_TEST(depth_escaped_quote_keeps_string_open)
{
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        /* \" does not end the string, so the brackets after it are still text. */
        ck_assert_int_eq(load("{\"a\":\"x\\\"[[[[[[\"}", 2, &j, &err), 0);
        ck_assert_str_eq(json_string_value(json_object_get(j, "a")), "x\"[[[[[[");
        /* Closers inside a string must not lower the depth either: with them
         * counted, the real nesting after would slip under the limit. */
        json_t *k = NULL;
        ck_assert_int_eq(load("{\"a\":\"\\\"]]]]\",\"b\":[[[1]]]}", 3, &k, &err), -EINVAL);
}
END_TEST

START_TEST(depth_escaped_backslash_ends_string)
{
        hg_error_t err = {0};
        /* "\\" is a complete escape: the quote after it ends the string, so
         * the nesting that follows is real and must be counted. */
        json_t *k = NULL;
        ck_assert_int_eq(load("{\"a\":\"\\\\\",\"b\":[[[1]]]}", 3, &k, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "deeper"));
        _unit_json_ json_t *j = NULL;
        ck_assert_int_eq(load("{\"a\":\"\\\\\",\"b\":[[1]]}", 3, &j, &err), 0);
        ck_assert_str_eq(json_string_value(json_object_get(j, "a")), "\\");
}
END_TEST

START_TEST(rejects_duplicate_keys)
{
        hg_error_t err = {0};
        json_t *j = NULL;
        ck_assert_int_eq(load("{\"a\":1,\"a\":2}", 64, &j, &err), -EINVAL);
        ck_assert_int_eq(load("{\"x\":{\"uid\":\"1\",\"uid\":\"2\"}}", 64, &j, &err), -EINVAL);
        ck_assert_int_eq(load("[{\"k\":1},{\"k\":2,\"k\":3}]", 64, &j, &err), -EINVAL);
        ck_assert_ptr_null(j);
        ck_assert_ptr_nonnull(strstr(err.message, "malformed JSON"));
        /* Same key in different objects is fine. */
        _unit_json_ json_t *ok = NULL;
        ck_assert_int_eq(load("[{\"k\":1},{\"k\":2}]", 64, &ok, &err), 0);
}
END_TEST

START_TEST(rejects_trailing_junk)
{
        hg_error_t err = {0};
        json_t *j = NULL;
        ck_assert_int_eq(load("{\"a\":1} x", 64, &j, &err), -EINVAL);
        ck_assert_int_eq(load("{\"a\":1}{}", 64, &j, &err), -EINVAL);
        ck_assert_int_eq(load("[1]]", 64, &j, &err), -EINVAL);
        ck_assert_int_eq(load("{\"a\":1},", 64, &j, &err), -EINVAL);
        ck_assert_ptr_null(j);
        _unit_json_ json_t *ok = NULL;
        ck_assert_int_eq(load("{\"a\":1}\r\n\t ", 64, &ok, &err), 0);
}
END_TEST

START_TEST(rejects_nul)
{
        hg_error_t err = {0};
        json_t *j = NULL;
        /* An escaped NUL in a string (would truncate C strings later). */
        ck_assert_int_eq(load("{\"a\":\"x\\u0000y\"}", 64, &j, &err), -EINVAL);
        ck_assert_int_eq(load("{\"x\\u0000\":1}", 64, &j, &err), -EINVAL);
        /* A raw NUL byte inside a string and after the document. */
        static const char raw_in[] = "{\"a\":\"x\0y\"}";
        ck_assert_int_eq(jsonx_load(raw_in, sizeof(raw_in) - 1, 64, &j, &err), -EINVAL);
        static const char raw_after[] = "{\"a\":1}\0";
        ck_assert_int_eq(jsonx_load(raw_after, sizeof(raw_after) - 1, 64, &j, &err), -EINVAL);
        ck_assert_ptr_null(j);
}
END_TEST

START_TEST(respects_length)
{
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        /* Only len bytes are read: what follows is not part of the input. */
        const char *text = "{\"a\":1}garbage";
        ck_assert_int_eq(jsonx_load(text, 7, 64, &j, &err), 0);
        ck_assert_json_eq_text(j, "{\"a\":1}");
}
END_TEST

START_TEST(member_missing_vs_wrong_type)
{
        _unit_json_ json_t *o = unit_json("{\"s\":\"v\",\"n\":3,\"r\":1.5,\"t\":true,\"f\":false,"
                                          "\"z\":null,\"o\":{},\"a\":[]}");
        json_t *v = (json_t *)o; /* sentinel */
        ck_assert_int_eq(jsonx_member(o, "missing", JSON_STRING, &v), -ENOENT);
        ck_assert_int_eq(jsonx_member(o, "z", JSON_STRING, &v), -ENOENT); /* null = absent */
        ck_assert_int_eq(jsonx_member(o, "n", JSON_STRING, &v), -EINVAL);
        ck_assert_int_eq(jsonx_member(o, "r", JSON_INTEGER, &v), -EINVAL);
        ck_assert_int_eq(jsonx_member(o, "n", JSON_REAL, &v), -EINVAL);
        ck_assert_int_eq(jsonx_member(o, "o", JSON_ARRAY, &v), -EINVAL);
        ck_assert_int_eq(jsonx_member(o, "a", JSON_OBJECT, &v), -EINVAL);
        ck_assert_ptr_eq(v, (json_t *)o);
        ck_assert_int_eq(jsonx_member(o, "a", JSON_ARRAY, &v), 0);
        ck_assert_ptr_eq(v, json_object_get(o, "a")); /* borrowed, same object */
        ck_assert_int_eq(jsonx_member(o, "n", JSON_INTEGER, &v), 0);
        ck_assert_int_eq(json_integer_value(v), 3);
        /* Not an object at all: -ENOENT, so a missing parent reads as missing. */
        ck_assert_int_eq(jsonx_member(NULL, "s", JSON_STRING, &v), -ENOENT);
        ck_assert_int_eq(jsonx_member(json_object_get(o, "a"), "s", JSON_STRING, &v), -ENOENT);
        ck_assert_int_eq(jsonx_member(json_object_get(o, "s"), "s", JSON_STRING, &v), -ENOENT);
}
END_TEST

START_TEST(string_and_bool_access)
{
        _unit_json_ json_t *o = unit_json("{\"s\":\"v\",\"n\":3,\"t\":true,\"f\":false,"
                                          "\"ts\":\"true\",\"z\":null}");
        const char *s = "sentinel";
        ck_assert_int_eq(jsonx_string(o, "s", &s), 0);
        ck_assert_str_eq(s, "v");
        s = "sentinel";
        ck_assert_int_eq(jsonx_string(o, "n", &s), -EINVAL);
        ck_assert_int_eq(jsonx_string(o, "t", &s), -EINVAL);
        ck_assert_int_eq(jsonx_string(o, "nope", &s), -ENOENT);
        ck_assert_int_eq(jsonx_string(o, "z", &s), -ENOENT);
        ck_assert_str_eq(s, "sentinel");

        bool b = false;
        ck_assert_int_eq(jsonx_bool(o, "t", &b), 0);
        ck_assert(b);
        ck_assert_int_eq(jsonx_bool(o, "f", &b), 0); /* false is a boolean too */
        ck_assert(!b);
        b = true;
        ck_assert_int_eq(jsonx_bool(o, "ts", &b), -EINVAL); /* "true" is a string */
        ck_assert_int_eq(jsonx_bool(o, "n", &b), -EINVAL);
        ck_assert_int_eq(jsonx_bool(o, "nope", &b), -ENOENT);
        ck_assert(b);
}
END_TEST

START_TEST(type_names)
{
        _unit_json_ json_t *a = unit_json("[{}, [], \"s\", 1, 1.5, true, false, null]");
        ck_assert_str_eq(jsonx_type_name(json_array_get(a, 0)), "an object");
        ck_assert_str_eq(jsonx_type_name(json_array_get(a, 1)), "an array");
        ck_assert_str_eq(jsonx_type_name(json_array_get(a, 2)), "a string");
        ck_assert_str_eq(jsonx_type_name(json_array_get(a, 3)), "an integer");
        ck_assert_str_eq(jsonx_type_name(json_array_get(a, 4)), "a number");
        ck_assert_str_eq(jsonx_type_name(json_array_get(a, 5)), "a boolean");
        ck_assert_str_eq(jsonx_type_name(json_array_get(a, 6)), "a boolean");
        ck_assert_str_eq(jsonx_type_name(json_array_get(a, 7)), "null");
        ck_assert_str_eq(jsonx_type_name(NULL), "null");
}
END_TEST

/* What jsonx_print_outcome writes to stdout, read back through a pipe. */
static json_t *printed(int *ret_status, int status, json_t *extra)
{
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        int saved = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        ck_assert_int_ge(saved, 0);
        ck_assert_int_eq(dup2(p[1], STDOUT_FILENO), STDOUT_FILENO);
        *ret_status = jsonx_print_outcome(status, "probe", "fail", "a \"quoted\" reason", extra);
        ck_assert_int_eq(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
        close(saved);
        close(p[1]);
        char buf[1024];
        ssize_t n = read(p[0], buf, sizeof(buf) - 1);
        close(p[0]);
        ck_assert_int_gt(n, 0);
        buf[n] = '\0';
        ck_assert_msg(buf[n - 1] == '\n', "no newline: %s", buf);
        return unit_json(buf);
}

START_TEST(print_outcome)
{
        int status = 0;
        _unit_json_ json_t *plain = printed(&status, 3, NULL);
        ck_assert_int_eq(status, 3);
        ck_assert_json_eq_text(plain,
                               "{\"probe\":\"fail\",\"reason\":\"a \\\"quoted\\\" reason\"}");
        /* Extra members are added; one of the same name replaces. */
        _unit_json_ json_t *extra = unit_json("{\"checks\":[1],\"reason\":\"other\"}");
        _unit_json_ json_t *with = printed(&status, 0, extra);
        ck_assert_int_eq(status, 0);
        ck_assert_json_eq_text(with, "{\"probe\":\"fail\",\"reason\":\"other\",\"checks\":[1]}");
}
END_TEST

/* jsonx_dumps writes what json_dumps writes, for every flag the tree uses;
 * tests/alloc covers that it refuses a text it could not store whole. */
START_TEST(dumps_as_json_dumps)
{
        _cleanup_json_ json_t *j = unit_json(
            "{\"b\":[1,2.5,\"x\\u00e9\\n\",null,true],\"a\":{\"k\":{}},\"e\":[],\"s\":\"\"}");
        const size_t flags[] = {0, JSON_COMPACT, JSON_INDENT(2), JSON_INDENT(2) | JSON_SORT_KEYS,
                                JSON_COMPACT | JSON_ENSURE_ASCII};
        for (size_t i = 0; i < ARRAY_SIZE(flags); i++) {
                _cleanup_free_ char *want = json_dumps(j, flags[i]);
                _cleanup_free_ char *got = jsonx_dumps(j, flags[i]);
                ck_assert_ptr_nonnull(want);
                ck_assert_ptr_nonnull(got);
                ck_assert_str_eq(got, want);
        }
        ck_assert_ptr_null(jsonx_dumps(NULL, 0));
}
END_TEST

static Suite *jsonx_suite(void)
{
        Suite *s = suite_create("jsonx");
        TCase *tc = tcase_create("load");
        tcase_add_test(tc, loads_object_and_array);
        tcase_add_test(tc, rejects_empty_and_scalars);
        tcase_add_test(tc, depth_limit_exact);
        tcase_add_test(tc, depth_counts_mixed_nesting);
        tcase_add_test(tc, depth_ignores_brackets_in_strings);
        tcase_add_test(tc, depth_escaped_quote_keeps_string_open);
        tcase_add_test(tc, depth_escaped_backslash_ends_string);
        tcase_add_test(tc, rejects_duplicate_keys);
        tcase_add_test(tc, rejects_trailing_junk);
        tcase_add_test(tc, rejects_nul);
        tcase_add_test(tc, respects_length);
        suite_add_tcase(s, tc);
        tc = tcase_create("access");
        tcase_add_test(tc, member_missing_vs_wrong_type);
        tcase_add_test(tc, string_and_bool_access);
        tcase_add_test(tc, type_names);
        tcase_add_test(tc, print_outcome);
        tcase_add_test(tc, dumps_as_json_dumps);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(jsonx_suite());
}
