/* Unit tests for common/patch: the JSON Patch builder that applies as it emits. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "patch.h"
#include "unit.h"

/* The ops text parsed into jansson, for checks; freed after each test. */
static json_t *parsed[32];
static size_t n_parsed;

/* Each test's document, a copy of it as it was (orig), the patch on it and
 * the error its calls report: made by begin, freed after the test. */
static json_t *doc, *orig;
static patch_t p;
static hg_error_t err;

static void begin(const char *text)
{
        doc = unit_json(text);
        orig = json_deep_copy(doc);
        ck_assert_ptr_nonnull(orig);
        ck_assert_int_eq(patch_init(&p, doc), 0);
}

static json_t *ops_of(const patch_t *patch)
{
        ck_assert_uint_lt(n_parsed, ARRAY_SIZE(parsed));
        parsed[n_parsed] = unit_json(patch->ops.data);
        ck_assert(json_is_array(parsed[n_parsed]));
        ck_assert_uint_eq(json_array_size(parsed[n_parsed]), patch->n_ops);
        return parsed[n_parsed++];
}

/* The ops, applied by an independent implementation to the document as it
 * was, give the document as it is. */
static void assert_ops_reproduce(void)
{
        ck_assert_int_eq(unit_apply_patch(orig, ops_of(&p)), 0);
        ck_assert_json_eq(orig, doc);
}

static void teardown(void)
{
        while (n_parsed)
                json_decref(parsed[--n_parsed]);
        patch_free(&p);
        json_decref(orig);
        json_decref(doc);
        doc = orig = NULL;
        err = (hg_error_t){0};
}

START_TEST(absent_array_created_once_then_appended)
{
        begin("{\"spec\": {\"containers\": []}}");
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", unit_json("{\"name\":\"v1\"}"), &err),
                         0);
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", unit_json("{\"name\":\"v2\"}"), &err),
                         0);
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", unit_json("{\"name\":\"v3\"}"), &err),
                         0);
        /* The vault-k8s bug: every append saw "absent" and re-created the
         * array, so the API server kept only the last one. Here the first op
         * creates it, and only the first. */
        ck_assert_json_eq_text(ops_of(&p), "["
                                           "{\"op\":\"add\",\"path\":\"/spec/volumes\","
                                           "\"value\":[{\"name\":\"v1\"}]},"
                                           "{\"op\":\"add\",\"path\":\"/spec/volumes/-\","
                                           "\"value\":{\"name\":\"v2\"}},"
                                           "{\"op\":\"add\",\"path\":\"/spec/volumes/-\","
                                           "\"value\":{\"name\":\"v3\"}}]");
        ck_assert_uint_eq(unit_count_ops(ops_of(&p), "/spec/volumes"), 1);
        ck_assert_json_eq_text(doc, "{\"spec\": {\"containers\": [], \"volumes\": "
                                    "[{\"name\":\"v1\"}, {\"name\":\"v2\"}, {\"name\":\"v3\"}]}}");
        /* The ops, applied by an independent implementation, give the same doc. */
        assert_ops_reproduce();
}
END_TEST

START_TEST(null_array_is_absent)
{
        begin("{\"spec\": {\"volumes\": null}}");
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", json_string("a"), &err), 0);
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", json_string("b"), &err), 0);
        ck_assert_json_eq_text(ops_of(&p),
                               "[{\"op\":\"add\",\"path\":\"/spec/volumes\",\"value\":[\"a\"]},"
                               "{\"op\":\"add\",\"path\":\"/spec/volumes/-\",\"value\":\"b\"}]");
        ck_assert_json_eq_text(doc, "{\"spec\": {\"volumes\": [\"a\", \"b\"]}}");
}
END_TEST

START_TEST(existing_array_only_appends)
{
        begin("{\"spec\": {\"volumes\": [{\"name\":\"data\"}]}}");
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", json_string("x"), &err), 0);
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", json_string("y"), &err), 0);
        ck_assert_uint_eq(json_array_size(ops_of(&p)), 2);
        ck_assert_uint_eq(unit_count_ops(ops_of(&p), "/spec/volumes"), 0);
        ck_assert_uint_eq(unit_count_ops(ops_of(&p), "/spec/volumes/-"), 2);
        ck_assert_json_eq_text(doc,
                               "{\"spec\": {\"volumes\": [{\"name\":\"data\"}, \"x\", \"y\"]}}");
        assert_ops_reproduce();
}
END_TEST

START_TEST(array_key_is_escaped)
{
        begin("{\"m\": {}}");
        ck_assert_int_eq(patch_append(&p, "/m", "a/b~c", json_integer(1), &err), 0);
        ck_assert_int_eq(patch_append(&p, "/m", "a/b~c", json_integer(2), &err), 0);
        ck_assert_int_ge(unit_find_op(ops_of(&p), "/m/a~1b~0c"), 0);
        ck_assert_int_ge(unit_find_op(ops_of(&p), "/m/a~1b~0c/-"), 0);
        ck_assert_json_eq_text(doc, "{\"m\": {\"a/b~c\": [1, 2]}}");
        assert_ops_reproduce();
}
END_TEST

START_TEST(absent_map_created_once)
{
        begin("{\"metadata\": {\"name\": \"p\"}}");
        ck_assert_int_eq(patch_set_member(&p, "/metadata", "annotations", "hangar.dev/a",
                                          json_string("1"), &err),
                         0);
        ck_assert_int_eq(
            patch_set_member(&p, "/metadata", "annotations", "x~y", json_string("2"), &err), 0);
        ck_assert_int_eq(patch_set_member(&p, "/metadata", "annotations", "hangar.dev/a",
                                          json_string("3"), &err),
                         0);
        ck_assert_json_eq_text(ops_of(&p),
                               "["
                               "{\"op\":\"add\",\"path\":\"/metadata/annotations\","
                               "\"value\":{\"hangar.dev/a\":\"1\"}},"
                               "{\"op\":\"add\",\"path\":\"/metadata/annotations/x~0y\","
                               "\"value\":\"2\"},"
                               "{\"op\":\"add\",\"path\":"
                               "\"/metadata/annotations/hangar.dev~1a\",\"value\":\"3\"}]");
        ck_assert_json_eq_text(doc, "{\"metadata\": {\"name\": \"p\", \"annotations\": "
                                    "{\"hangar.dev/a\": \"3\", \"x~y\": \"2\"}}}");
        assert_ops_reproduce();
}
END_TEST

START_TEST(existing_map_sets_members)
{
        begin("{\"metadata\": {\"annotations\": {\"keep\": \"me\"}}}");
        ck_assert_int_eq(patch_set_member(&p, "/metadata", "annotations", "a/b", json_true(), &err),
                         0);
        ck_assert_json_eq_text(ops_of(&p),
                               "[{\"op\":\"add\",\"path\":\"/metadata/annotations/a~1b\","
                               "\"value\":true}]");
        ck_assert_json_eq_text(
            doc, "{\"metadata\": {\"annotations\": {\"keep\": \"me\", \"a/b\": true}}}");
}
END_TEST

START_TEST(ops_not_changed_by_later_ops)
{
        begin("{\"spec\": {}, \"metadata\": {}}");
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", json_string("first"), &err), 0);
        ck_assert_int_eq(patch_set_member(&p, "/metadata", "labels", "a", json_string("1"), &err),
                         0);
        json_t *snapshot = ops_of(&p);
        for (int i = 0; i < 5; i++) {
                ck_assert_int_eq(patch_append(&p, "/spec", "volumes", json_integer(i), &err), 0);
                ck_assert_int_eq(
                    patch_set_member(&p, "/metadata", "labels", "b", json_integer(i), &err), 0);
        }
        /* The creating ops still carry the one-element array and one-member map. */
        ck_assert_json_eq(json_array_get(ops_of(&p), 0), json_array_get(snapshot, 0));
        ck_assert_json_eq(json_array_get(ops_of(&p), 1), json_array_get(snapshot, 1));
        ck_assert_json_eq_text(json_object_get(json_array_get(ops_of(&p), 0), "value"),
                               "[\"first\"]");
        /* Even changing the document directly does not reach into the ops. */
        json_array_append_new(json_object_get(json_object_get(doc, "spec"), "volumes"),
                              json_string("sneaky"));
        ck_assert_json_eq_text(json_object_get(json_array_get(ops_of(&p), 0), "value"),
                               "[\"first\"]");
}
END_TEST

START_TEST(patch_add_plain)
{
        begin("{\"spec\": {\"shareProcessNamespace\": true}}");
        ck_assert_int_eq(patch_add(&p, "/spec/shareProcessNamespace", json_false(), &err), 0);
        ck_assert_json_eq_text(ops_of(&p),
                               "[{\"op\":\"add\",\"path\":\"/spec/shareProcessNamespace\","
                               "\"value\":false}]");
        ck_assert_json_eq_text(doc, "{\"spec\": {\"shareProcessNamespace\": false}}");
}
END_TEST

START_TEST(remove_as_the_document_is_now)
{
        begin(
            "{\"spec\": {\"containers\": [{\"name\": \"a\", \"volumeMounts\": [{\"name\": \"t\"},"
            " {\"name\": \"x\"}, {\"name\": \"t2\"}]}]}, \"metadata\": {\"annotations\": {\"a/b\": "
            "\"1\"}}}");
        /* Last first, so index 0 is still the element meant. */
        ck_assert_int_eq(patch_remove(&p, "/spec/containers/0/volumeMounts/2", &err), 0);
        ck_assert_int_eq(patch_remove(&p, "/spec/containers/0/volumeMounts/0", &err), 0);
        ck_assert_int_eq(patch_remove(&p, "/metadata/annotations/a~1b", &err), 0);
        /* Then an add sees the array as it is now. */
        ck_assert_int_eq(
            patch_append(&p, "/spec/containers/0", "volumeMounts", json_string("h"), &err), 0);
        ck_assert_json_eq_text(
            ops_of(&p), "[{\"op\":\"remove\",\"path\":\"/spec/containers/0/volumeMounts/2\"},"
                        "{\"op\":\"remove\",\"path\":\"/spec/containers/0/volumeMounts/0\"},"
                        "{\"op\":\"remove\",\"path\":\"/metadata/annotations/a~1b\"},"
                        "{\"op\":\"add\",\"path\":\"/spec/containers/0/volumeMounts/-\","
                        "\"value\":\"h\"}]");
        ck_assert_json_eq_text(
            doc, "{\"spec\": {\"containers\": [{\"name\": \"a\", \"volumeMounts\":"
                 " [{\"name\": \"x\"}, \"h\"]}]}, \"metadata\": {\"annotations\": {}}}");
        /* An independent application of the ops gives the same document. */
        assert_ops_reproduce();
        /* Nothing there, or past the end: an error, no op. */
        size_t n = p.n_ops;
        ck_assert_int_lt(patch_remove(&p, "/spec/containers/0/volumeMounts/2", &err), 0);
        ck_assert_int_lt(patch_remove(&p, "/spec/containers/0/volumeMounts/-", &err), 0);
        ck_assert_int_lt(patch_remove(&p, "/metadata/annotations/nope", &err), 0);
        ck_assert_int_lt(patch_remove(&p, "/nope/x", &err), 0);
        ck_assert_uint_eq(p.n_ops, n);
}
END_TEST

START_TEST(failures_emit_nothing)
{
        begin("{\"spec\": {\"volumes\": {\"not\": \"an array\"}},"
              " \"metadata\": {\"annotations\": [1]}}");
        /* The wrong type is an error with a message, not a blind re-create. */
        ck_assert_int_eq(patch_append(&p, "/spec", "volumes", json_string("x"), &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "/spec/volumes is an object, expected an array"),
                      "message: %s", err.message);
        ck_assert_int_eq(
            patch_set_member(&p, "/metadata", "annotations", "a", json_string("x"), &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "expected an object"), "message: %s", err.message);
        /* A missing parent: the add fails, no op is recorded. */
        ck_assert_int_lt(patch_add(&p, "/nope/x", json_string("x"), &err), 0);
        ck_assert_int_lt(patch_append(&p, "/nope", "list", json_string("x"), &err), 0);
        /* NULL value (a failed allocation upstream) is -ENOMEM. */
        ck_assert_int_eq(patch_add(&p, "/spec/x", NULL, &err), -ENOMEM);
        ck_assert_int_eq(patch_append(&p, "/spec", "y", NULL, &err), -ENOMEM);
        ck_assert_int_eq(patch_set_member(&p, "/spec", "z", "k", NULL, &err), -ENOMEM);
        ck_assert_uint_eq(p.n_ops, 0);
        ck_assert_str_eq(p.ops.data, "[]");
        ck_assert_json_eq(doc, orig);
}
END_TEST

START_TEST(known_text_is_used_as_given)
{
        /* A value whose text the caller has: copied in as it is. */
        begin("{\"spec\": {\"volumes\": []}}");
        json_t *v = unit_json("{\"name\": \"a\"}");
        ck_assert_int_eq(patch_append_known(&p, "/spec", "volumes", v, "{\"name\":\"a\"}", &err),
                         0);
        ck_assert_str_eq(
            p.ops.data,
            "[{\"op\":\"add\",\"path\":\"/spec/volumes/-\",\"value\":{\"name\":\"a\"}}]");
        ck_assert_json_eq_text(doc, "{\"spec\": {\"volumes\": [{\"name\": \"a\"}]}}");
        /* The document holds the value itself, not a copy. */
        ck_assert_ptr_eq(
            json_array_get(json_object_get(json_object_get(doc, "spec"), "volumes"), 0), v);
        /* An absent array is created around the value, written out. */
        json_t *m = unit_json("{\"mountPath\": \"/x\"}");
        ck_assert_int_eq(
            patch_append_known(&p, "/spec", "mounts", m, "{\"mountPath\":\"/x\"}", &err), 0);
        ck_assert_str_eq(
            p.ops.data, "[{\"op\":\"add\",\"path\":\"/spec/volumes/-\",\"value\":{\"name\":\"a\"}},"
                        "{\"op\":\"add\",\"path\":\"/spec/mounts\","
                        "\"value\":[{\"mountPath\":\"/x\"}]}]");
        _cleanup_free_ char *taken = patch_take_ops(&p);
        ck_assert_ptr_nonnull(taken);
        ck_assert_uint_eq(p.n_ops, 0);
        _unit_json_ json_t *ops = unit_json(taken);
        ck_assert_uint_eq(json_array_size(ops), 2);
}
END_TEST

START_TEST(ops_text_is_what_jansson_writes)
{
        /* Escaped paths and values with every kind of string: the ops text is
         * byte for byte what jansson writes for the same operations. */
        begin("{\"m\": {\"a\": {}}}");
        ck_assert_int_eq(patch_set_member(&p, "/m", "a", "k/\"\\\n\xc3\xa9~",
                                          json_string("v\"\\\x01\xe2\x82\xac"), &err),
                         0);
        ck_assert_int_eq(patch_append(&p, "/m", "l", json_integer(-42), &err), 0);
        ck_assert_int_eq(patch_add(&p, "/m/r", json_real(0.5), &err), 0);
        _cleanup_free_ char *want = json_dumps(ops_of(&p), JSON_COMPACT);
        ck_assert_str_eq(p.ops.data, want);
}
END_TEST

START_TEST(free_resets)
{
        begin("{}");
        ck_assert_ptr_eq(p.doc, doc);
        ck_assert_str_eq(p.ops.data, "[]");
        ck_assert_uint_eq(p.n_ops, 0);
        ck_assert_ptr_null(patch_take_ops(&p)); /* no ops: nothing to hand on */
        patch_free(&p);
        ck_assert_ptr_null(p.ops.data);
        patch_free(&p); /* twice is fine (teardown frees it a third time) */
}
END_TEST

static Suite *patch_suite(void)
{
        Suite *s = suite_create("patch");
        TCase *tc = tcase_create("arrays");
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, absent_array_created_once_then_appended);
        tcase_add_test(tc, null_array_is_absent);
        tcase_add_test(tc, existing_array_only_appends);
        tcase_add_test(tc, array_key_is_escaped);
        suite_add_tcase(s, tc);
        tc = tcase_create("maps");
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, absent_map_created_once);
        tcase_add_test(tc, existing_map_sets_members);
        suite_add_tcase(s, tc);
        tc = tcase_create("ops");
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, ops_not_changed_by_later_ops);
        tcase_add_test(tc, patch_add_plain);
        tcase_add_test(tc, remove_as_the_document_is_now);
        tcase_add_test(tc, failures_emit_nothing);
        tcase_add_test(tc, free_resets);
        tcase_add_test(tc, known_text_is_used_as_given);
        tcase_add_test(tc, ops_text_is_what_jansson_writes);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(patch_suite());
}
