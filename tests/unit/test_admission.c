/* Unit tests for webhook/admission: AdmissionReview in, AdmissionReview out. */
#include <errno.h>
#include <string.h>

#include <openssl/evp.h>

#include "admission.h"
#include "cleanup.h"
#include "config.h"
#include "strbuf.h"
#include "unit.h"

static hg_config_t cfg;

static void setup(void)
{
        ck_assert_int_eq(config_init_defaults(&cfg), 0);
        cfg.driver_sidecar = true;
}

static void teardown(void)
{
        config_free(&cfg);
}

static void outcome_freep(admission_outcome_t *o)
{
        admission_outcome_free(o);
}
#define _outcome_ __attribute__((cleanup(outcome_freep)))

#define POD                                                                                      \
        "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"generateName\": \"job-\"," \
        " \"labels\": {\"hangar.dev/sandbox\": \"true\"}}, \"spec\": {\"containers\":"           \
        " [{\"name\": \"sandbox\", \"image\": \"agent:1\"}]}}"

/* A review as the API server sends it; fields can be replaced afterwards. */
static json_t *review(const char *api)
{
        char text[2048];
        (void)snprintf(
            text, sizeof(text),
            "{\"apiVersion\": \"%s\", \"kind\": \"AdmissionReview\", \"request\": {"
            " \"uid\": \"705ab4f5-6393-11e8-b7cc-42010a800002\","
            " \"kind\": {\"group\": \"\", \"version\": \"v1\", \"kind\": \"Pod\"},"
            " \"resource\": {\"group\": \"\", \"version\": \"v1\", \"resource\": \"pods\"},"
            " \"namespace\": \"team-a\", \"operation\": \"CREATE\","
            " \"userInfo\": {\"username\": \"alice\"},"
            " \"object\": " POD ", \"oldObject\": null, \"dryRun\": false}}",
            api);
        return unit_json(text);
}

static json_t *with(json_t *doc, const char *path, const char *value)
{
        json_t *v = unit_json(value);
        ck_assert_msg(unit_apply_add(doc, path, v) == 0, "cannot set %s", path);
        json_decref(v);
        return doc;
}

/* Handles doc (serialized) and returns the parsed response body. */
static json_t *handle(json_t *doc, admission_outcome_t *o)
{
        _cleanup_free_ char *body = json_dumps(doc, JSON_COMPACT);
        _cleanup_free_ char *out = NULL;
        hg_error_t err = {0};
        int r = admission_handle(&cfg, body, strlen(body), &out, o, &err);
        ck_assert_msg(r == 0, "admission_handle: %d %s", r, err.message);
        ck_assert_ptr_nonnull(out);
        return unit_json(out);
}

/* Handles raw bytes that must be refused with -EINVAL and a message. */
static void assert_bad_request(const char *body, size_t len, const char *needle)
{
        _outcome_ admission_outcome_t o = {0};
        char *out = NULL;
        hg_error_t err = {0};
        int r = admission_handle(&cfg, body, len, &out, &o, &err);
        ck_assert_msg(r == -EINVAL, "got %d for %.200s", r, body);
        ck_assert_ptr_null(out);
        ck_assert_msg(err.message[0] != '\0', "no message");
        if (needle)
                ck_assert_msg(strstr(err.message, needle), "message lacks \"%s\": %s", needle,
                              err.message);
}

static void assert_bad_doc(json_t *doc, const char *needle)
{
        _cleanup_free_ char *body = json_dumps(doc, JSON_COMPACT);
        assert_bad_request(body, strlen(body), needle);
        json_decref(doc);
}

/* Base64 (standard alphabet, padded) to bytes, NUL-terminated, malloc'd. */
static char *b64_decode(const char *b64)
{
        size_t n = strlen(b64);
        ck_assert_uint_eq(n % 4, 0);
        char *out = malloc(n / 4 * 3 + 1);
        ck_assert_ptr_nonnull(out);
        int w = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)b64, (int)n);
        ck_assert_int_ge(w, 0);
        size_t pad = (n && b64[n - 1] == '=') + (n > 1 && b64[n - 2] == '=');
        out[(size_t)w - pad] = '\0';
        return out;
}

START_TEST(v1_injects_with_base64_patch)
{
        _unit_json_ json_t *doc = review("admission.k8s.io/v1");
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert_str_eq(json_string_value(unit_at(resp, "/apiVersion")), "admission.k8s.io/v1");
        ck_assert_str_eq(json_string_value(unit_at(resp, "/kind")), "AdmissionReview");
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/uid")),
                         "705ab4f5-6393-11e8-b7cc-42010a800002");
        ck_assert(json_is_true(unit_at(resp, "/response/allowed")));
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/patchType")), "JSONPatch");
        ck_assert_ptr_null(unit_at(resp, "/response/status"));
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/auditAnnotations/decision")),
                         "injected");
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/auditAnnotations/reason")),
                         "injected");
        /* The patch is base64 of exactly the JSON Patch the decision made. */
        const char *b64 = json_string_value(unit_at(resp, "/response/patch"));
        ck_assert_ptr_nonnull(b64);
        _cleanup_free_ char *text = b64_decode(b64);
        _cleanup_free_ char *want = json_dumps(o.result.patch, JSON_COMPACT);
        ck_assert_str_eq(text, want);
        _unit_json_ json_t *ops = unit_json(text);
        ck_assert(json_is_array(ops));
        ck_assert_uint_gt(json_array_size(ops), 0);
        /* Applied to the pod as sent, it gives the pod the outcome holds. */
        _unit_json_ json_t *pod = unit_json(POD);
        ck_assert_int_eq(unit_apply_patch(pod, ops), 0);
        ck_assert_json_eq(pod, o.pod);
        ck_assert_str_eq(json_string_value(unit_at(pod, "/spec/containers/1/name")),
                         "hangar-driver");
        /* The outcome, for logs. */
        ck_assert_str_eq(o.uid, "705ab4f5-6393-11e8-b7cc-42010a800002");
        ck_assert_str_eq(o.namespace, "team-a");
        ck_assert_str_eq(o.name, "job-"); /* generateName before the API server names it */
        ck_assert_str_eq(o.operation, "CREATE");
        ck_assert(!o.dry_run);
        ck_assert_int_eq(o.result.decision, DECISION_INJECT);
}
END_TEST

START_TEST(v1beta1_answered_in_kind)
{
        _unit_json_ json_t *doc = review("admission.k8s.io/v1beta1");
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert_str_eq(json_string_value(unit_at(resp, "/apiVersion")),
                         "admission.k8s.io/v1beta1");
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/uid")),
                         "705ab4f5-6393-11e8-b7cc-42010a800002");
        ck_assert(json_is_true(unit_at(resp, "/response/allowed")));
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/patchType")), "JSONPatch");
}
END_TEST

START_TEST(uid_echoed_verbatim)
{
        _unit_json_ json_t *doc =
            with(review("admission.k8s.io/v1"), "/request/uid", "\"u-\\\"1\"");
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/uid")), "u-\"1");
}
END_TEST

START_TEST(deny_has_status_message)
{
        _unit_json_ json_t *doc =
            with(review("admission.k8s.io/v1"), "/request/object/spec/volumes",
                 "[{\"name\": \"hangar-home\", \"emptyDir\": {}}]");
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert(json_is_false(unit_at(resp, "/response/allowed")));
        ck_assert_ptr_null(unit_at(resp, "/response/patch"));
        ck_assert_ptr_null(unit_at(resp, "/response/patchType"));
        const char *msg = json_string_value(unit_at(resp, "/response/status/message"));
        ck_assert_ptr_nonnull(msg);
        ck_assert_str_eq(msg, o.result.detail);
        ck_assert_ptr_nonnull(strstr(msg, "hangar-home"));
        ck_assert_int_eq(json_integer_value(unit_at(resp, "/response/status/code")), 403);
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/status/status")), "Failure");
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/auditAnnotations/reason")),
                         "conflict");
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/uid")),
                         "705ab4f5-6393-11e8-b7cc-42010a800002");
}
END_TEST

START_TEST(privileged_skip_warns_and_annotates)
{
        _unit_json_ json_t *doc =
            with(review("admission.k8s.io/v1"), "/request/object/spec/containers/0/securityContext",
                 "{\"privileged\": true}");
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert(json_is_true(unit_at(resp, "/response/allowed")));
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/patchType")), "JSONPatch");
        _cleanup_free_ char *text = b64_decode(json_string_value(unit_at(resp, "/response/patch")));
        _unit_json_ json_t *ops = unit_json(text);
        ck_assert_uint_eq(json_array_size(ops), 2);
        const char *warning = json_string_value(unit_at(resp, "/response/warnings/0"));
        ck_assert_ptr_nonnull(warning);
        ck_assert_ptr_nonnull(strstr(warning, "not injected"));
}
END_TEST

START_TEST(skips_without_patch)
{
        static const struct {
                const char *path, *value, *reason;
        } t[] = {
            {"/request/kind",
             "{\"group\": \"apps\", \"version\": \"v1\", \"kind\": \"Deployment\"}", "not-pod"},
            {"/request/kind",
             "{\"group\": \"example.com\", \"version\": \"v1\", \"kind\": \"Pod\"}", "not-pod"},
            {"/request/operation", "\"UPDATE\"", "not-create"},
            {"/request/operation", "\"DELETE\"", "not-create"},
            {"/request/subResource", "\"status\"", "subresource"},
            {"/request/object/metadata/labels", "{}", "not-selected"},
        };
        for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
                _unit_json_ json_t *doc =
                    with(review("admission.k8s.io/v1"), t[k].path, t[k].value);
                _outcome_ admission_outcome_t o = {0};
                _unit_json_ json_t *resp = handle(doc, &o);
                ck_assert_msg(json_is_true(unit_at(resp, "/response/allowed")), "%s", t[k].reason);
                ck_assert_ptr_null(unit_at(resp, "/response/patch"));
                ck_assert_ptr_null(unit_at(resp, "/response/patchType"));
                ck_assert_ptr_null(unit_at(resp, "/response/status"));
                ck_assert_str_eq(
                    json_string_value(unit_at(resp, "/response/auditAnnotations/reason")),
                    t[k].reason);
                ck_assert_str_eq(
                    json_string_value(unit_at(resp, "/response/auditAnnotations/decision")),
                    "skipped");
        }
        /* An UPDATE needs no object to be answered. */
        _unit_json_ json_t *doc =
            with(review("admission.k8s.io/v1"), "/request/operation", "\"UPDATE\"");
        ck_assert_int_eq(json_object_del(json_object_get(doc, "request"), "object"), 0);
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert(json_is_true(unit_at(resp, "/response/allowed")));
}
END_TEST

START_TEST(dry_run_still_injected)
{
        _unit_json_ json_t *doc = with(review("admission.k8s.io/v1"), "/request/dryRun", "true");
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert(o.dry_run);
        ck_assert(json_is_true(unit_at(resp, "/response/allowed")));
        ck_assert_ptr_nonnull(unit_at(resp, "/response/patch"));
        ck_assert_int_eq(o.result.reason, REASON_INJECTED);
}
END_TEST

START_TEST(malformed_bodies)
{
        assert_bad_request("", 0, "empty");
        assert_bad_request("{", 1, "malformed JSON");
        assert_bad_request("not json", 8, "malformed JSON");
        const char *dup = "{\"apiVersion\": \"admission.k8s.io/v1\", \"apiVersion\": \"x\"}";
        assert_bad_request(dup, strlen(dup), "malformed JSON");
        /* A duplicate deep inside the pod counts too. */
        _unit_json_ json_t *good = review("admission.k8s.io/v1");
        _cleanup_free_ char *text = json_dumps(good, JSON_COMPACT);
        const char *at = strstr(text, "\"uid\":");
        ck_assert_ptr_nonnull(at);
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_append(&sb, text, (size_t)(at - text)), 0);
        ck_assert_int_eq(strbuf_puts(&sb, "\"uid\":\"first\","), 0);
        ck_assert_int_eq(strbuf_puts(&sb, at), 0);
        _cleanup_free_ char *dup2 = strbuf_take(&sb);
        assert_bad_request(dup2, strlen(dup2), "malformed JSON");
        const char *junk = "{\"apiVersion\": \"admission.k8s.io/v1\"} trailing";
        assert_bad_request(junk, strlen(junk), "malformed JSON");
        assert_bad_request("[]", 2, "expected an AdmissionReview object");
}
END_TEST

START_TEST(too_deep)
{
        /* 70 levels inside the pod's annotations: over the 64 limit. */
        strbuf_t sb = {0};
        for (int i = 0; i < 70; i++)
                ck_assert_int_eq(strbuf_puts(&sb, "["), 0);
        for (int i = 0; i < 70; i++)
                ck_assert_int_eq(strbuf_puts(&sb, "]"), 0);
        _cleanup_free_ char *deep = strbuf_take(&sb);
        json_t *doc =
            with(review("admission.k8s.io/v1"), "/request/object/metadata/annotations", "{}");
        with(doc, "/request/object/metadata/annotations/x", deep);
        assert_bad_doc(doc, "deeper than 64");
        /* 64 in all is still accepted (review, request, object, metadata and
         * annotations take 5 of them). */
        _unit_json_ json_t *ok = review("admission.k8s.io/v1");
        strbuf_t s2 = {0};
        for (int i = 0; i < 59; i++)
                ck_assert_int_eq(strbuf_puts(&s2, "["), 0);
        for (int i = 0; i < 59; i++)
                ck_assert_int_eq(strbuf_puts(&s2, "]"), 0);
        _cleanup_free_ char *nested = strbuf_take(&s2);
        with(ok, "/request/object/metadata/annotations", "{}");
        with(ok, "/request/object/metadata/annotations/x", nested);
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(ok, &o);
        ck_assert_ptr_nonnull(unit_at(resp, "/response/uid"));
}
END_TEST

START_TEST(bad_reviews)
{
        /* Each is a well-formed JSON document that is not a usable review. */
        json_t *d;
        d = review("admission.k8s.io/v1");
        ck_assert_int_eq(json_object_del(json_object_get(d, "request"), "uid"), 0);
        assert_bad_doc(d, "request.uid is missing");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/uid", "\"\""), "request.uid");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/uid", "42"),
                       "request.uid must be a string");
        char longuid[200];
        memset(longuid, 'u', sizeof(longuid));
        longuid[0] = '"';
        longuid[130] = '"';
        longuid[131] = '\0';
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/uid", longuid), "request.uid");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/kind", "\"Pod\""), "kind must be");
        d = review("admission.k8s.io/v1");
        ck_assert_int_eq(json_object_del(d, "kind"), 0);
        assert_bad_doc(d, "kind is missing");
        assert_bad_doc(review("admission.k8s.io/v2"), "apiVersion must be");
        assert_bad_doc(review("v1"), "apiVersion must be");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/apiVersion", "1"), "apiVersion");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request", "\"req\""),
                       "request is not an object");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request", "[]"),
                       "request is not an object");
        d = review("admission.k8s.io/v1");
        ck_assert_int_eq(json_object_del(d, "request"), 0);
        assert_bad_doc(d, "request is missing");
        /* CREATE of a Pod with no object, or a non-object one. */
        d = review("admission.k8s.io/v1");
        ck_assert_int_eq(json_object_del(json_object_get(d, "request"), "object"), 0);
        assert_bad_doc(d, "request.object");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/object", "null"),
                       "request.object");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/object", "[]"),
                       "request.object");
        /* Typed fields with the wrong type. */
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/dryRun", "\"true\""),
                       "documented types");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/namespace", "7"),
                       "documented types");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/operation", "1"),
                       "request.operation");
        assert_bad_doc(with(review("admission.k8s.io/v1"), "/request/kind", "\"Pod\""),
                       "request.kind");
}
END_TEST

START_TEST(wrap_pod_round_trip)
{
        _unit_json_ json_t *pod = unit_json(POD);
        _unit_json_ json_t *doc = admission_wrap_pod(pod, "test-uid");
        ck_assert_ptr_nonnull(doc);
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert_str_eq(json_string_value(unit_at(resp, "/response/uid")), "test-uid");
        ck_assert_str_eq(json_string_value(unit_at(resp, "/apiVersion")), "admission.k8s.io/v1");
        ck_assert_int_eq(o.result.reason, REASON_INJECTED);
        ck_assert_str_eq(o.namespace, "default");
}
END_TEST

START_TEST(outcome_free_resets)
{
        _unit_json_ json_t *doc = review("admission.k8s.io/v1");
        admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert_ptr_nonnull(resp);
        ck_assert_ptr_nonnull(o.review);
        admission_outcome_free(&o);
        ck_assert_ptr_null(o.review);
        ck_assert_ptr_null(o.result.patch);
        ck_assert_ptr_null(o.uid);
        admission_outcome_free(&o); /* twice is fine */
}
END_TEST

static Suite *admission_suite(void)
{
        Suite *s = suite_create("admission");
        TCase *tc = tcase_create("answers");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, v1_injects_with_base64_patch);
        tcase_add_test(tc, v1beta1_answered_in_kind);
        tcase_add_test(tc, uid_echoed_verbatim);
        tcase_add_test(tc, deny_has_status_message);
        tcase_add_test(tc, privileged_skip_warns_and_annotates);
        tcase_add_test(tc, skips_without_patch);
        tcase_add_test(tc, dry_run_still_injected);
        tcase_add_test(tc, wrap_pod_round_trip);
        tcase_add_test(tc, outcome_free_resets);
        suite_add_tcase(s, tc);
        tc = tcase_create("errors");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, malformed_bodies);
        tcase_add_test(tc, too_deep);
        tcase_add_test(tc, bad_reviews);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(admission_suite());
}
