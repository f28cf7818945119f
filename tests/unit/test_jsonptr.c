/* Unit tests for common/jsonptr: RFC 6901 pointers and the RFC 6902 "add". */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "cleanup.h"
#include "jsonptr.h"
#include "unit.h"

/* The pointer text for the given segments. */
static char *build(const char *const *segments, size_t n)
{
        strbuf_t sb = {0};
        for (size_t i = 0; i < n; i++)
                ck_assert_int_eq(jsonptr_append(&sb, segments[i]), 0);
        return strbuf_take(&sb);
}

START_TEST(escape_order)
{
        /* '~' first, then '/': "a~/b" is "a" "~0" "~1" "b". */
        const char *seg[] = {"a~/b"};
        _cleanup_free_ char *p = build(seg, 1);
        ck_assert_str_eq(p, "/a~0~1b");
        /* A literal "~1" must not come back as '/'. */
        const char *seg2[] = {"~1"};
        _cleanup_free_ char *p2 = build(seg2, 1);
        ck_assert_str_eq(p2, "/~01");
        const char *seg3[] = {"metadata", "annotations", "hangar.dev/driver-sidecar"};
        _cleanup_free_ char *p3 = build(seg3, 3);
        ck_assert_str_eq(p3, "/metadata/annotations/hangar.dev~1driver-sidecar");
        const char *seg4[] = {"", "//", "~~"};
        _cleanup_free_ char *p4 = build(seg4, 3);
        ck_assert_str_eq(p4, "//~1~1/~0~0");
}
END_TEST

START_TEST(append_index)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        ck_assert_int_eq(jsonptr_append(&sb, "spec"), 0);
        ck_assert_int_eq(jsonptr_append(&sb, "containers"), 0);
        ck_assert_int_eq(jsonptr_append_index(&sb, 0), 0);
        ck_assert_int_eq(jsonptr_append(&sb, "volumeMounts"), 0);
        ck_assert_int_eq(jsonptr_append_index(&sb, 12), 0);
        ck_assert_str_eq(sb.data, "/spec/containers/0/volumeMounts/12");
}
END_TEST

START_TEST(long_tokens)
{
        /* Tokens past the small buffer's 64 bytes go to the heap. */
        char key[300];
        memset(key, 'k', sizeof(key) - 1);
        key[sizeof(key) - 1] = '\0';
        key[70] = '/';
        key[150] = '~';
        _unit_json_ json_t *doc = json_object();
        ck_assert_int_eq(json_object_set_new(doc, key, json_object()), 0);
        _cleanup_strbuf_ strbuf_t path = {0};
        ck_assert_int_eq(jsonptr_append(&path, key), 0);
        hg_error_t err = {0};
        json_t *v = NULL;
        ck_assert_int_eq(jsonptr_get(doc, path.data, &v, &err), 0);
        ck_assert_ptr_eq(v, json_object_get(doc, key));
        /* And as the last token of an add. */
        ck_assert_int_eq(jsonptr_append(&path, key), 0);
        _unit_json_ json_t *value = json_string("deep");
        ck_assert_int_eq(jsonptr_add(doc, path.data, value, &err), 0);
        ck_assert_str_eq(json_string_value(json_object_get(json_object_get(doc, key), key)),
                         "deep");
        /* A bad escape in a long token is still refused. */
        char bad[200];
        memset(bad, 'b', sizeof(bad) - 1);
        bad[sizeof(bad) - 1] = '\0';
        bad[0] = '/';
        bad[120] = '~';
        bad[121] = '2';
        ck_assert_int_eq(jsonptr_get(doc, bad, &v, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "bad '~' escape"), "%s", err.message);
}
END_TEST

START_TEST(append_index_digits)
{
        static const struct {
                size_t index;
                const char *text;
        } t[] = {{0, "/0"},
                 {9, "/9"},
                 {10, "/10"},
                 {1234567, "/1234567"},
                 {SIZE_MAX, "/18446744073709551615"}};
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                _cleanup_strbuf_ strbuf_t sb = {0};
                ck_assert_int_eq(jsonptr_append_index(&sb, t[i].index), 0);
                ck_assert_str_eq(sb.data, t[i].text);
        }
}
END_TEST

static const char *doc_text = "{\"a/b\": {\"m~n\": [10, 20, {\"x\": true}]}, \"\": 1,"
                              " \"x~1\": \"tilde-one\", \"x/\": \"slash\", \"s\": \"str\"}";

START_TEST(get_with_escapes)
{
        _unit_json_ json_t *doc = unit_json(doc_text);
        hg_error_t err = {0};
        json_t *v = NULL;
        ck_assert_int_eq(jsonptr_get(doc, "", &v, &err), 0);
        ck_assert_ptr_eq(v, doc);
        ck_assert_int_eq(jsonptr_get(doc, "/", &v, &err), 0);
        ck_assert_int_eq(json_integer_value(v), 1);
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/1", &v, &err), 0);
        ck_assert_int_eq(json_integer_value(v), 20);
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/2/x", &v, &err), 0);
        ck_assert(json_is_true(v));
        /* "~01" decodes to "~1" (not "/"): the key "x~1", not "x/". */
        ck_assert_int_eq(jsonptr_get(doc, "/x~01", &v, &err), 0);
        ck_assert_str_eq(json_string_value(v), "tilde-one");
        ck_assert_int_eq(jsonptr_get(doc, "/x~1", &v, &err), 0);
        ck_assert_str_eq(json_string_value(v), "slash");
        /* Each pointer the builder makes resolves to its own segment. */
        const char *seg[] = {"a/b", "m~n"};
        _cleanup_free_ char *p = build(seg, 2);
        ck_assert_int_eq(jsonptr_get(doc, p, &v, &err), 0);
        ck_assert(json_is_array(v));
}
END_TEST

START_TEST(get_missing_and_malformed)
{
        _unit_json_ json_t *doc = unit_json(doc_text);
        hg_error_t err = {0};
        json_t *v = (json_t *)doc;
        ck_assert_int_eq(jsonptr_get(doc, "/nope", &v, &err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(err.message, "nope"));
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/3", &v, &err), -ENOENT);
        ck_assert_int_eq(jsonptr_get(doc, "/s/deeper", &v, &err), -ENOENT);
        ck_assert_int_eq(jsonptr_get(doc, "/a/b", &v, &err), -ENOENT); /* unescaped '/' */
        ck_assert_int_eq(jsonptr_get(doc, "a~1b", &v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_get(doc, "/a~2b", &v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_get(doc, "/a~", &v, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "'~'"));
        /* Array indexes: no leading zeros, no signs, no "-" for reading. */
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/01", &v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/00", &v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/-1", &v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/+1", &v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/-", &v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/", &v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/99999999999999999999999", &v, &err), -EINVAL);
        ck_assert_ptr_eq(v, (json_t *)doc); /* untouched on failure */
        ck_assert_int_eq(jsonptr_get(doc, "/a~1b/m~0n/0", &v, &err), 0);
        ck_assert_int_eq(json_integer_value(v), 10);
}
END_TEST

START_TEST(add_to_object)
{
        _unit_json_ json_t *doc = unit_json("{\"metadata\": {\"labels\": {\"a\": \"1\"}}}");
        hg_error_t err = {0};
        _unit_json_ json_t *v = json_string("x");
        ck_assert_int_eq(jsonptr_add(doc, "/metadata/annotations", v, &err), 0);
        /* A new reference: the caller's stays valid and is shared. */
        ck_assert_int_eq(v->refcount, 2);
        ck_assert_ptr_eq(json_object_get(json_object_get(doc, "metadata"), "annotations"), v);
        /* Escaped member names are decoded. */
        ck_assert_int_eq(
            jsonptr_add(doc, "/metadata/labels/hangar.dev~1sandbox", json_true(), &err), 0);
        ck_assert_int_eq(jsonptr_add(doc, "/metadata/labels/t~0x", json_false(), &err), 0);
        /* add on an existing member replaces it. */
        _unit_json_ json_t *two = json_integer(2);
        ck_assert_int_eq(jsonptr_add(doc, "/metadata/labels/a", two, &err), 0);
        ck_assert_json_eq_text(doc, "{\"metadata\": {\"labels\": {\"a\": 2, \"hangar.dev/sandbox\":"
                                    " true, \"t~x\": false}, \"annotations\": \"x\"}}");
}
END_TEST

START_TEST(add_to_array)
{
        _unit_json_ json_t *doc = unit_json("{\"a\": [1, 2]}");
        hg_error_t err = {0};
        _unit_json_ json_t *zero = json_integer(0), *three = json_integer(3),
                           *end = json_integer(9), *mid = json_integer(5);
        ck_assert_int_eq(jsonptr_add(doc, "/a/0", zero, &err), 0);
        ck_assert_json_eq_text(doc, "{\"a\": [0, 1, 2]}");
        ck_assert_int_eq(jsonptr_add(doc, "/a/3", three, &err), 0); /* index == size */
        ck_assert_json_eq_text(doc, "{\"a\": [0, 1, 2, 3]}");
        ck_assert_int_eq(jsonptr_add(doc, "/a/-", end, &err), 0);
        ck_assert_json_eq_text(doc, "{\"a\": [0, 1, 2, 3, 9]}");
        ck_assert_int_eq(jsonptr_add(doc, "/a/2", mid, &err), 0);
        ck_assert_json_eq_text(doc, "{\"a\": [0, 1, 5, 2, 3, 9]}");
}
END_TEST

START_TEST(add_rejects_bad_targets)
{
        _unit_json_ json_t *doc = unit_json("{\"a\": [1, 2], \"s\": \"str\", \"o\": {}}");
        _unit_json_ json_t *before = json_deep_copy(doc);
        _unit_json_ json_t *v = json_integer(7);
        hg_error_t err = {0};
        ck_assert_int_eq(jsonptr_add(doc, "/a/3", v, &err), -EINVAL); /* index > size */
        ck_assert_ptr_nonnull(strstr(err.message, "'3'"));
        ck_assert_int_eq(jsonptr_add(doc, "/a/01", v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_add(doc, "/a/-1", v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_add(doc, "/a/x", v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_add(doc, "/missing/child", v, &err), -ENOENT);
        ck_assert_int_eq(jsonptr_add(doc, "/o/missing/child", v, &err), -ENOENT);
        ck_assert_int_eq(jsonptr_add(doc, "/s/child", v, &err), -ENOENT); /* parent a string */
        ck_assert_int_eq(jsonptr_add(doc, "", v, &err), -EINVAL);         /* the root */
        ck_assert_int_eq(jsonptr_add(doc, "o", v, &err), -EINVAL);
        ck_assert_int_eq(jsonptr_add(doc, "/o/~2", v, &err), -EINVAL);
        ck_assert_int_eq(v->refcount, 1); /* nothing kept a reference */
        ck_assert_json_eq(doc, before);
}
END_TEST

START_TEST(remove_members_and_elements)
{
        _unit_json_ json_t *doc = unit_json("{\"a/b\": 1, \"m~n\": 2, \"l\": [0, 1, 2]}");
        hg_error_t err = {0};
        ck_assert_int_eq(jsonptr_remove(doc, "/a~1b", &err), 0);
        ck_assert_int_eq(jsonptr_remove(doc, "/m~0n", &err), 0);
        ck_assert_int_eq(jsonptr_remove(doc, "/l/1", &err), 0);
        ck_assert_json_eq_text(doc, "{\"l\": [0, 2]}");
        /* Nothing there: an error, the document unchanged. */
        ck_assert_int_eq(jsonptr_remove(doc, "/nope", &err), -ENOENT);
        ck_assert_int_eq(jsonptr_remove(doc, "/l/2", &err), -EINVAL);
        ck_assert_int_eq(jsonptr_remove(doc, "/l/-", &err), -EINVAL);
        ck_assert_int_eq(jsonptr_remove(doc, "/l/01", &err), -EINVAL);
        ck_assert_int_lt(jsonptr_remove(doc, "/x/y", &err), 0);
        ck_assert_int_lt(jsonptr_remove(doc, "", &err), 0);
        ck_assert_json_eq_text(doc, "{\"l\": [0, 2]}");
}
END_TEST

static Suite *jsonptr_suite(void)
{
        Suite *s = suite_create("jsonptr");
        TCase *tc = tcase_create("build");
        tcase_add_test(tc, escape_order);
        tcase_add_test(tc, append_index);
        tcase_add_test(tc, append_index_digits);
        tcase_add_test(tc, long_tokens);
        suite_add_tcase(s, tc);
        tc = tcase_create("get");
        tcase_add_test(tc, get_with_escapes);
        tcase_add_test(tc, get_missing_and_malformed);
        suite_add_tcase(s, tc);
        tc = tcase_create("add");
        tcase_add_test(tc, add_to_object);
        tcase_add_test(tc, add_to_array);
        tcase_add_test(tc, add_rejects_bad_targets);
        tcase_add_test(tc, remove_members_and_elements);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(jsonptr_suite());
}
