/* Unit tests for common/yamldoc: YAML to a line-numbered tree and to JSON,
 * and manifests read from a file (one JSON object or a YAML stream). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fileio.h"
#include "strbuf.h"
#include "unit.h"
#include "yamldoc.h"

static int parse(const char *text, ynode_t **ret, hg_error_t *err)
{
        return yamldoc_parse(text, strlen(text), ret, err);
}

/* The JSON for a YAML text that must parse and convert. */
static json_t *to_json(const char *text)
{
        hg_error_t err = {0};
        _cleanup_ynode_ ynode_t *root = NULL;
        int r = parse(text, &root, &err);
        ck_assert_msg(r == 0, "parse failed (%d): %s", r, err.message);
        json_t *j = NULL;
        r = ynode_to_json(root, &j, &err);
        ck_assert_msg(r == 0, "conversion failed (%d): %s", r, err.message);
        return j;
}

START_TEST(yaml11_booleans)
{
        _unit_json_ json_t *j = to_json("a: yes\nb: no\nc: on\nd: off\ne: true\nf: False\n"
                                        "g: YES\nh: Off\ni: y\nj: N\n");
        ck_assert_json_eq_text(j, "{\"a\":true,\"b\":false,\"c\":true,\"d\":false,\"e\":true,"
                                  "\"f\":false,\"g\":true,\"h\":false,\"i\":true,\"j\":false}");
}
END_TEST

START_TEST(yaml11_integers)
{
        _unit_json_ json_t *j = to_json("octal: 0755\nhex: 0x1F\nhexlower: 0xff\ndec: 42\n"
                                        "neg: -7\nplus: +5\nzero: 0\nnegoct: -010\n"
                                        "max: 9223372036854775807\nmin: -9223372036854775808\n");
        ck_assert_json_eq_text(j, "{\"octal\":493,\"hex\":31,\"hexlower\":255,\"dec\":42,"
                                  "\"neg\":-7,\"plus\":5,\"zero\":0,\"negoct\":-8,"
                                  "\"max\":9223372036854775807,\"min\":-9223372036854775808}");
        ck_assert(json_is_integer(json_object_get(j, "octal")));
}
END_TEST

START_TEST(integers_too_big_do_not_wrap)
{
        /* Beyond 64 bits there is no JSON integer for it; whatever it becomes,
         * it must not be a wrapped-around integer. */
        _unit_json_ json_t *j = to_json("a: 9223372036854775808\nb: 0x10000000000000000\n"
                                        "c: -9223372036854775809\nd: 01777777777777777777777\n");
        static const char *const keys[] = {"a", "b", "c", "d"};
        for (size_t i = 0; i < 4; i++)
                ck_assert_msg(!json_is_integer(json_object_get(j, keys[i])), "%s wrapped to %lld",
                              keys[i], (long long)json_integer_value(json_object_get(j, keys[i])));
}
END_TEST

/* Regression test (this was a bug, now fixed): YAML 1.1 integers, as Kubernetes' decoder (go-yaml
 * v2) reads them, may be binary and may contain '_' separators; yamldoc.c leaves both as strings.
 */
START_TEST(yaml11_binary_and_underscores)
{
        _unit_json_ json_t *j = to_json("bin: 0b1010\nneg: -0b11\nsep: 1_000\nhexsep: 0x_FF\n");
        ck_assert_json_eq_text(j, "{\"bin\":10,\"neg\":-3,\"sep\":1000,\"hexsep\":255}");
}
END_TEST

START_TEST(quoted_and_tagged_stay_strings)
{
        _unit_json_ json_t *j = to_json("a: \"true\"\nb: 'yes'\nc: \"0755\"\nd: !!str 12\n"
                                        "e: '~'\nf: \"\"\ng: 'null'\n");
        ck_assert_json_eq_text(j, "{\"a\":\"true\",\"b\":\"yes\",\"c\":\"0755\",\"d\":\"12\","
                                  "\"e\":\"~\",\"f\":\"\",\"g\":\"null\"}");
}
END_TEST

START_TEST(nulls)
{
        _unit_json_ json_t *j = to_json("a: ~\nb: null\nc: Null\nd: NULL\ne:\n");
        ck_assert_json_eq_text(j, "{\"a\":null,\"b\":null,\"c\":null,\"d\":null,\"e\":null}");
}
END_TEST

START_TEST(floats)
{
        _unit_json_ json_t *j = to_json("a: 1.5\nb: -0.25\nc: 1e3\nd: .5\ne: 2.\nf: 1.5e-2\n");
        ck_assert(json_is_real(json_object_get(j, "a")));
        ck_assert_double_eq(json_real_value(json_object_get(j, "a")), 1.5);
        ck_assert_double_eq(json_real_value(json_object_get(j, "b")), -0.25);
        ck_assert(json_is_real(json_object_get(j, "c")));
        ck_assert_double_eq(json_real_value(json_object_get(j, "c")), 1000.0);
        ck_assert_double_eq(json_real_value(json_object_get(j, "d")), 0.5);
        ck_assert_double_eq(json_real_value(json_object_get(j, "e")), 2.0);
        ck_assert_double_eq_tol(json_real_value(json_object_get(j, "f")), 0.015, 1e-12);
}
END_TEST

START_TEST(plain_strings)
{
        _unit_json_ json_t *j = to_json("a: hello\nb: 1.2.3\nc: 64Mi\nd: 0x\ne: 1e\nf: yess\n"
                                        "g: /var/lib/hangar\n");
        ck_assert_json_eq_text(j, "{\"a\":\"hello\",\"b\":\"1.2.3\",\"c\":\"64Mi\",\"d\":\"0x\","
                                  "\"e\":\"1e\",\"f\":\"yess\",\"g\":\"/var/lib/hangar\"}");
}
END_TEST

START_TEST(sequences_and_nesting)
{
        _unit_json_ json_t *j = to_json("spec:\n  containers:\n    - name: sandbox\n"
                                        "      command: [sleep, \"1\", 2]\n    - name: b\n"
                                        "  empty: []\n  obj: {}\n");
        ck_assert_json_eq_text(j, "{\"spec\":{\"containers\":[{\"name\":\"sandbox\","
                                  "\"command\":[\"sleep\",\"1\",2]},{\"name\":\"b\"}],"
                                  "\"empty\":[],\"obj\":{}}}");
        _unit_json_ json_t *scalar = to_json("just text\n");
        ck_assert_json_eq_text(scalar, "\"just text\"");
}
END_TEST

START_TEST(rejects_duplicate_keys)
{
        hg_error_t err = {0};
        ynode_t *root = NULL;
        ck_assert_int_eq(parse("a: 1\nb: 2\na: 3\n", &root, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "line 3") && strstr(err.message, "duplicate key 'a'"),
                      "message: %s", err.message);
        ck_assert_int_eq(parse("x:\n  k: 1\n  k: 2\n", &root, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "line 3"), "message: %s", err.message);
        ck_assert_int_eq(parse("{a: 1, a: 2}", &root, &err), -EINVAL);
        ck_assert_ptr_null(root);
        /* The same key in sibling mappings is fine. */
        _cleanup_ynode_ ynode_t *ok = NULL;
        ck_assert_int_eq(parse("- {a: 1}\n- {a: 2}\n", &ok, &err), 0);
}
END_TEST

START_TEST(rejects_aliases)
{
        hg_error_t err = {0};
        ynode_t *root = NULL;
        ck_assert_int_eq(parse("a: &x 1\nb: *x\n", &root, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "line 2") && strstr(err.message, "aliases"),
                      "message: %s", err.message);
        /* The classic "billion laughs" shape. */
        ck_assert_int_eq(parse("a: &a [x, x]\nb: &b [*a, *a]\nc: [*b, *b]\n", &root, &err),
                         -EINVAL);
        ck_assert_ptr_null(root);
}
END_TEST

START_TEST(rejects_multiple_documents)
{
        hg_error_t err = {0};
        ynode_t *root = NULL;
        ck_assert_int_eq(parse("a: 1\n---\nb: 2\n", &root, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "more than one") && strstr(err.message, "line 2"),
                      "message: %s", err.message);
        ck_assert_int_eq(parse("--- 1\n--- 2\n", &root, &err), -EINVAL);
        ck_assert_ptr_null(root);
        /* One explicit document, with its end marker, is fine. */
        _cleanup_ynode_ ynode_t *ok = NULL;
        ck_assert_int_eq(parse("---\na: 1\n...\n", &ok, &err), 0);
        ck_assert_ptr_nonnull(ynode_get(ok, "a"));
}
END_TEST

START_TEST(streams_keep_every_document)
{
        static const char text[] = "---\na: 1\n---\n---\n# only a comment\n---\n- x\n...\n";
        hg_error_t err = {0};
        ynode_t **docs = NULL;
        size_t n = 0;
        ck_assert_int_eq(yamldoc_parse_stream(text, strlen(text), 8, &docs, &n, &err), 0);
        /* Empty documents are empty plain scalars: the caller decides. */
        ck_assert_uint_eq(n, 4);
        ck_assert_ptr_nonnull(ynode_get(docs[0], "a"));
        ck_assert_int_eq(docs[1]->kind, YNODE_SCALAR);
        ck_assert_str_eq(docs[1]->scalar, "");
        ck_assert_int_eq(docs[3]->kind, YNODE_SEQUENCE);
        ck_assert_uint_eq(docs[3]->line, 7);
        ynode_free_all(docs, n);

        /* Over the limit, the line of the first document too many. */
        docs = NULL;
        ck_assert_int_eq(yamldoc_parse_stream(text, strlen(text), 2, &docs, &n, &err), -E2BIG);
        ck_assert_msg(strstr(err.message, "more than 2 YAML documents") &&
                          strstr(err.message, "line 4"),
                      "message: %s", err.message);
        ck_assert_ptr_null(docs);
        /* An error in a later document loses the earlier ones, all freed. */
        static const char broken[] = "a: 1\n---\nb: [\n";
        ck_assert_int_eq(yamldoc_parse_stream(broken, sizeof(broken) - 1, 8, &docs, &n, &err),
                         -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "YAML error"));
        ck_assert_int_eq(yamldoc_parse_stream("", 0, 8, &docs, &n, &err), -ENODATA);
}
END_TEST

START_TEST(rejects_empty_and_syntax_errors)
{
        hg_error_t err = {0};
        ynode_t *root = NULL;
        /* No document at all: an error (its code is left open, so a caller
         * such as config can tell "empty" apart). */
        ck_assert_int_lt(yamldoc_parse("", 0, &root, &err), 0);
        ck_assert_ptr_nonnull(strstr(err.message, "empty"));
        ck_assert_int_eq(parse("a: [1, 2\nb: 3\n", &root, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "YAML error"));
        ck_assert_int_eq(parse("a: 1\n b: 2\n", &root, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "line 2"), "message: %s", err.message);
        ck_assert_int_eq(parse("? [a, b]\n: 1\n", &root, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "keys must be scalars"));
        ck_assert_int_eq(parse("a: \"x\\0y\"\n", &root, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "NUL"));
        ck_assert_ptr_null(root);
}
END_TEST

/* n nested flow sequences: "[[[ ... ]]]". */
static char *nested(unsigned n)
{
        strbuf_t sb = {0};
        for (unsigned i = 0; i < n; i++)
                ck_assert_int_eq(strbuf_puts(&sb, "["), 0);
        for (unsigned i = 0; i < n; i++)
                ck_assert_int_eq(strbuf_puts(&sb, "]"), 0);
        return strbuf_take(&sb);
}

START_TEST(nesting_limit)
{
        hg_error_t err = {0};
        _cleanup_ynode_ ynode_t *ok = NULL;
        char *text = nested(YAMLDOC_MAX_DEPTH);
        ck_assert_int_eq(parse(text, &ok, &err), 0);
        free(text);
        ynode_t *root = NULL;
        text = nested(YAMLDOC_MAX_DEPTH + 1);
        ck_assert_int_eq(parse(text, &root, &err), -EINVAL);
        free(text);
        ck_assert_ptr_null(root);
        ck_assert_msg(strstr(err.message, "deeper than 64"), "message: %s", err.message);
        /* Block style counts the same way. */
        strbuf_t sb = {0};
        for (unsigned i = 0; i <= YAMLDOC_MAX_DEPTH; i++) {
                for (unsigned k = 0; k < i; k++)
                        ck_assert_int_eq(strbuf_puts(&sb, " "), 0);
                ck_assert_int_eq(strbuf_printf(&sb, "k%u:\n", i), 0);
        }
        text = strbuf_take(&sb);
        ck_assert_int_eq(parse(text, &root, &err), -EINVAL);
        free(text);
        ck_assert_ptr_null(root);
}
END_TEST

START_TEST(line_numbers)
{
        hg_error_t err = {0};
        _cleanup_ynode_ ynode_t *root = NULL;
        ck_assert_int_eq(
            parse("# comment\na: 1\nb:\n  c: x\n  d:\n    - 1\n    - 2\ne: |\n  text\n", &root,
                  &err),
            0);
        ck_assert_int_eq(root->kind, YNODE_MAPPING);
        ck_assert_uint_eq(root->n, 6); /* three key/value pairs */
        ck_assert_uint_eq(root->line, 2);
        ck_assert_uint_eq(root->items[0]->line, 2); /* key "a" */
        ck_assert_uint_eq(ynode_get(root, "a")->line, 2);
        const ynode_t *b = ynode_get(root, "b");
        ck_assert_int_eq(b->kind, YNODE_MAPPING);
        ck_assert_uint_eq(b->line, 4);
        ck_assert_uint_eq(ynode_get(b, "c")->line, 4);
        const ynode_t *d = ynode_get(b, "d");
        ck_assert_int_eq(d->kind, YNODE_SEQUENCE);
        ck_assert_uint_eq(d->n, 2);
        ck_assert_uint_eq(d->items[0]->line, 6);
        ck_assert_uint_eq(d->items[1]->line, 7);
        ck_assert_str_eq(d->items[1]->scalar, "2");
        ck_assert_uint_eq(ynode_get(root, "e")->line, 8);
        ck_assert_str_eq(ynode_get(root, "e")->scalar, "text\n");
}
END_TEST

START_TEST(node_flags)
{
        hg_error_t err = {0};
        _cleanup_ynode_ ynode_t *root = NULL;
        ck_assert_int_eq(parse("a: 1\nb: \"1\"\nc: !!str 1\n", &root, &err), 0);
        const ynode_t *a = ynode_get(root, "a"), *b = ynode_get(root, "b"),
                      *c = ynode_get(root, "c");
        ck_assert(a->plain && !a->tagged_str);
        ck_assert(!b->plain && !b->tagged_str);
        ck_assert(!c->plain && c->tagged_str);
        ck_assert_str_eq(c->scalar, "1");
        /* ynode_get: missing keys and non-mappings give NULL. */
        ck_assert_ptr_null(ynode_get(root, "z"));
        ck_assert_ptr_null(ynode_get(a, "a"));
        ck_assert_ptr_null(ynode_get(NULL, "a"));
        ynode_free(NULL);
}
END_TEST

/* ---- manifests from a file (the inject CLI's input) ---- */

static char dir[4096];

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
}

static void teardown(void)
{
        unit_rmtree(dir);
}

/* Writes text to dir/name; the path goes to out (size 4200). */
static const char *put(const char *name, const char *text, char *out)
{
        (void)snprintf(out, 4200, "%s/%s", dir, name);
        ck_assert_int_eq(file_write_atomic(out, text, strlen(text), 0600, 0), 0);
        return out;
}

START_TEST(manifests_from_a_yaml_stream)
{
        char path[4200];
        /* A leading and a doubled "---" make empty documents: not manifests. */
        put("m.yaml",
            "---\nkind: Pod\nspec:\n  containers: [{name: a}, {name: b}]\n---\n---\n"
            "kind: Job\nitems:\n- 1\n- two\n",
            path);
        hg_error_t err = {0};
        _unit_json_ json_t *list = NULL;
        ck_assert_msg(yamldoc_load_manifests(path, 4096, &list, &err) == 0, "%s", err.message);
        ck_assert_json_eq_text(list, "[{\"kind\":\"Pod\",\"spec\":{\"containers\":[{\"name\":"
                                     "\"a\"},{\"name\":\"b\"}]}},"
                                     "{\"kind\":\"Job\",\"items\":[1,\"two\"]}]");
        /* Exactly one is asked for: two is an error naming the file. */
        json_t *one = NULL;
        error_clear(&err);
        ck_assert_int_eq(yamldoc_load_manifest(path, 4096, &one, &err), -EINVAL);
        ck_assert_ptr_null(one);
        ck_assert_msg(strstr(err.message, "2 manifests, expected one"), "%s", err.message);
        ck_assert_msg(strstr(err.message, path), "%s", err.message);
}
END_TEST

START_TEST(manifest_from_json_and_from_one_document)
{
        char path[4200];
        hg_error_t err = {0};
        _unit_json_ json_t *j = NULL;
        put("m.json", "  \n{\"kind\": \"Pod\", \"n\": [1, 2]}\n", path);
        ck_assert_msg(yamldoc_load_manifest(path, 4096, &j, &err) == 0, "%s", err.message);
        ck_assert_json_eq_text(j, "{\"kind\":\"Pod\",\"n\":[1,2]}");
        _unit_json_ json_t *y = NULL;
        put("one.yaml", "kind: Pod\nmetadata: {name: p}\n", path);
        ck_assert_msg(yamldoc_load_manifest(path, 4096, &y, &err) == 0, "%s", err.message);
        ck_assert_json_eq_text(y, "{\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\"}}");
}
END_TEST

START_TEST(manifest_errors_name_the_file)
{
        char path[4200];
        hg_error_t err = {0};
        json_t *j = NULL;
        /* Only document separators: no manifest. */
        put("empty.yaml", "---\n---\n", path);
        ck_assert_int_eq(yamldoc_load_manifests(path, 4096, &j, &err), -ENODATA);
        ck_assert_msg(strstr(err.message, "no manifest in the input"), "%s", err.message);
        ck_assert_msg(strstr(err.message, "empty.yaml: "), "%s", err.message);
        /* Bigger than the bound. */
        error_clear(&err);
        put("big.yaml", "kind: Pod\nspec: {}\n", path);
        ck_assert_int_eq(yamldoc_load_manifests(path, 8, &j, &err), -EFBIG);
        ck_assert_msg(strstr(err.message, "file too large"), "%s", err.message);
        /* Absent. */
        error_clear(&err);
        (void)snprintf(path, sizeof(path), "%s/absent.yaml", dir);
        ck_assert_int_eq(yamldoc_load_manifests(path, 4096, &j, &err), -ENOENT);
        ck_assert_msg(strstr(err.message, "absent.yaml"), "%s", err.message);
        /* Malformed JSON, and malformed YAML. */
        error_clear(&err);
        put("bad.json", "{\"kind\": }", path);
        ck_assert_int_lt(yamldoc_load_manifests(path, 4096, &j, &err), 0);
        ck_assert_msg(strstr(err.message, "bad.json: "), "%s", err.message);
        error_clear(&err);
        put("bad.yaml", "kind: [unclosed\n", path);
        ck_assert_int_lt(yamldoc_load_manifests(path, 4096, &j, &err), 0);
        ck_assert_msg(strstr(err.message, "bad.yaml: "), "%s", err.message);
        ck_assert_ptr_null(j);
}
END_TEST

static Suite *yamldoc_suite(void)
{
        Suite *s = suite_create("yamldoc");
        TCase *tc = tcase_create("scalars");
        tcase_add_test(tc, yaml11_booleans);
        tcase_add_test(tc, yaml11_integers);
        tcase_add_test(tc, integers_too_big_do_not_wrap);
        tcase_add_test(tc, yaml11_binary_and_underscores);
        tcase_add_test(tc, quoted_and_tagged_stay_strings);
        tcase_add_test(tc, nulls);
        tcase_add_test(tc, floats);
        tcase_add_test(tc, plain_strings);
        tcase_add_test(tc, sequences_and_nesting);
        suite_add_tcase(s, tc);
        tc = tcase_create("structure");
        tcase_add_test(tc, rejects_duplicate_keys);
        tcase_add_test(tc, rejects_aliases);
        tcase_add_test(tc, rejects_multiple_documents);
        tcase_add_test(tc, streams_keep_every_document);
        tcase_add_test(tc, rejects_empty_and_syntax_errors);
        tcase_add_test(tc, nesting_limit);
        tcase_add_test(tc, line_numbers);
        tcase_add_test(tc, node_flags);
        suite_add_tcase(s, tc);
        tc = tcase_create("manifests");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, manifests_from_a_yaml_stream);
        tcase_add_test(tc, manifest_from_json_and_from_one_document);
        tcase_add_test(tc, manifest_errors_name_the_file);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(yamldoc_suite());
}
