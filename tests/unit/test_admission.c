/* Unit tests for webhook/admission: AdmissionReview in, AdmissionReview out. */
#include <errno.h>
#include <string.h>

#include <openssl/evp.h>

#include "admission.h"
#include "base64.h"
#include "cleanup.h"
#include "jsondump.h"
#include "settings.h"
#include "shape.h"
#include "strbuf.h"
#include "unit.h"
#include "webhook_fixture.h"

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

static bool same_string(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Answers body reading only what the decision needs (the server's way), with
 * the sidecar's values built once, and checks that everything comes out as
 * it did from the whole review: code, message, answer bytes, outcome. */
static void assert_projected_alike(const char *body, size_t len, int want_r, const char *want_out,
                                   const admission_outcome_t *want, const hg_error_t *want_err)
{
        shape_values_t *values = NULL;
        ck_assert_int_eq(shape_values_new(&cfg.sidecar, &values), 0);
        _outcome_ admission_outcome_t o = {0};
        _cleanup_free_ char *out = NULL;
        hg_error_t err = {0};
        int r = admission_review(&cfg, values, ADMISSION_READ_PROJECTED, body, len, &out, &o, &err);
        shape_values_free(values);
        ck_assert_int_eq(r, want_r);
        ck_assert_msg(same_string(out, want_out), "answers differ:\n%s\n%s", out, want_out);
        if (r == -EINVAL)
                ck_assert_str_eq(err.message, want_err->message);
        ck_assert(same_string(o.uid, want->uid) && same_string(o.name, want->name) &&
                  same_string(o.namespace, want->namespace) &&
                  same_string(o.operation, want->operation) && o.dry_run == want->dry_run);
        ck_assert_int_eq(o.result.decision, want->result.decision);
        ck_assert_int_eq(o.result.reason, want->result.reason);
        ck_assert_str_eq(o.result.detail, want->result.detail);
        ck_assert(same_string(o.result.patch, want->result.patch));
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
        assert_projected_alike(body, strlen(body), r, out, o, &err);
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
        assert_projected_alike(body, len, r, NULL, &o, &err);
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
        ck_assert_str_eq(text, o.result.patch);
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

/* A review as the API server really sends one: managedFields, env,
 * resources, tolerations, status, userInfo, options; the pod's name from
 * generateName. */
static const char *full_review =
    "{\"kind\":\"AdmissionReview\",\"apiVersion\":\"admission.k8s.io/v1\",\"request\":{"
    "\"uid\":\"u-full\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},"
    "\"requestKind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
    "\"namespace\":\"agents\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"u\","
    "\"groups\":[\"system:authenticated\"]},\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\","
    "\"metadata\":{\"generateName\":\"sandbox-\",\"namespace\":\"agents\",\"creationTimestamp\":"
    "null,"
    "\"labels\":{\"hangar.dev/sandbox\":\"true\",\"app\":\"x\"},"
    "\"annotations\":{\"a\":\"\\u00e9\\n\"},\"managedFields\":[{\"manager\":\"m\","
    "\"operation\":\"Update\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":{"
    "\"f:labels\":{\".\":{},\"f:hangar.dev/sandbox\":{}}},\"f:spec\":{\"f:containers\":{"
    "\"k:{\\\"name\\\":\\\"sandbox\\\"}\":{\".\":{},\"f:image\":{}}}}}}]},"
    "\"spec\":{\"volumes\":[{\"name\":\"workspace\",\"emptyDir\":{}},{\"name\":\"tok\","
    "\"projected\":{\"sources\":[{\"serviceAccountToken\":{\"expirationSeconds\":3607,"
    "\"path\":\"token\"}}],\"defaultMode\":420}}],\"initContainers\":[{\"name\":\"init\","
    "\"image\":\"busybox\",\"securityContext\":{\"privileged\":false,\"runAsUser\":0}}],"
    "\"containers\":[{\"name\":\"sandbox\",\"image\":\"us-docker.pkg.dev/h/envs/py:3.12\","
    "\"command\":[\"/bin/sh\",\"-c\",\"exec sleep infinity\"],\"env\":[{\"name\":\"A\","
    "\"value\":\"1\"},{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":"
    "\"metadata.name\"}}}],\"resources\":{\"limits\":{\"cpu\":\"2\",\"memory\":\"4Gi\"},"
    "\"requests\":{\"cpu\":1.5,\"memory\":\"2Gi\"}},\"volumeMounts\":[{\"name\":\"workspace\","
    "\"mountPath\":\"/workspace\"},{\"name\":\"tok\",\"readOnly\":true,\"mountPath\":"
    "\"/var/run/secrets\"}],\"securityContext\":{\"capabilities\":{\"drop\":[\"ALL\"]},"
    "\"runAsUser\":1000,\"allowPrivilegeEscalation\":false}}],\"restartPolicy\":\"Never\","
    "\"terminationGracePeriodSeconds\":30,\"securityContext\":{\"fsGroup\":1000},"
    "\"tolerations\":[{\"key\":\"k\",\"operator\":\"Exists\",\"effect\":\"NoExecute\","
    "\"tolerationSeconds\":300}],\"priority\":0,\"enableServiceLinks\":true},\"status\":{}},"
    "\"oldObject\":null,\"dryRun\":false,\"options\":{\"kind\":\"CreateOptions\","
    "\"apiVersion\":\"meta.k8s.io/v1\"}}}";

START_TEST(projected_read_builds_only_what_it_reads)
{
        shape_values_t *values = NULL;
        ck_assert_int_eq(shape_values_new(&cfg.sidecar, &values), 0);
        _outcome_ admission_outcome_t o = {0};
        _cleanup_free_ char *out = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(admission_review(&cfg, values, ADMISSION_READ_PROJECTED, full_review,
                                          strlen(full_review), &out, &o, &err),
                         0);
        shape_values_free(values); /* the pod keeps what it shares */
        ck_assert_int_eq(o.result.reason, REASON_INJECTED);
        ck_assert_str_eq(o.name, "sandbox-");
        /* None of what the decision never reads was built... */
        ck_assert_ptr_null(unit_at(o.review, "/request/userInfo"));
        ck_assert_ptr_null(unit_at(o.review, "/request/options"));
        ck_assert_ptr_null(unit_at(o.pod, "/status"));
        ck_assert_ptr_null(unit_at(o.pod, "/metadata/managedFields"));
        ck_assert_ptr_null(unit_at(o.pod, "/spec/tolerations"));
        /* A container's members the spec check judges only by being there
         * (it refuses them in the driver): there, their objects empty. */
        ck_assert_json_eq_text(unit_at(o.pod, "/spec/volumes/1/projected"), "{}");
        /* What it judges by value, whole: resources, securityContext and
         * env (the driver's carries driver.uidSplit and cloneSafety). */
        ck_assert_json_eq_text(
            unit_at(o.pod, "/spec/containers/0/env"),
            "[{\"name\": \"A\", \"value\": \"1\"}, {\"name\": \"B\","
            " \"valueFrom\": {\"fieldRef\": {\"fieldPath\": \"metadata.name\"}}}]");
        ck_assert_json_eq_text(unit_at(o.pod, "/spec/containers/0/resources"),
                               "{\"limits\": {\"cpu\": \"2\", \"memory\": \"4Gi\"},"
                               " \"requests\": {\"cpu\": 1.5, \"memory\": \"2Gi\"}}");
        ck_assert_int_eq(
            json_integer_value(unit_at(o.pod, "/spec/initContainers/0/securityContext/runAsUser")),
            0);
        /* ...and all it reads was, as sent. */
        ck_assert_str_eq(json_string_value(unit_at(o.pod, "/metadata/annotations/a")),
                         "\xc3\xa9\n");
        ck_assert(
            json_is_false(unit_at(o.pod, "/spec/initContainers/0/securityContext/privileged")));
        ck_assert_str_eq(
            json_string_value(unit_at(o.pod, "/spec/containers/0/volumeMounts/1/mountPath")),
            "/var/run/secrets");
        /* The same answer as from the whole review. */
        _outcome_ admission_outcome_t w = {0};
        _cleanup_free_ char *wout = NULL;
        ck_assert_int_eq(admission_handle(&cfg, full_review, strlen(full_review), &wout, &w, &err),
                         0);
        ck_assert_str_eq(out, wout);
        ck_assert_ptr_nonnull(unit_at(w.pod, "/metadata/managedFields"));
}
END_TEST

/* The answer built as the webhook built it before it wrote it straight out:
 * a jansson object dumped by jsondump, the patch through base64_encode. */
static char *reference_answer(const admission_outcome_t *o)
{
        const mutate_result_t *res = &o->result;
        const char *api = json_string_value(json_object_get(o->review, "apiVersion"));
        bool allowed = res->decision != DECISION_DENY;
        _unit_json_ json_t *response =
            json_pack("{s:s, s:b, s:{s:s, s:s}}", "uid", o->uid, "allowed", allowed,
                      "auditAnnotations", "decision", mutate_decision_name(res->decision), "reason",
                      mutate_reason_name(res->reason));
        ck_assert_ptr_nonnull(response);
        if (allowed && res->patch) {
                _cleanup_free_ char *b64 = base64_encode(res->patch, strlen(res->patch));
                ck_assert_int_eq(json_object_set_new(response, "patch", json_string(b64)), 0);
                ck_assert_int_eq(
                    json_object_set_new(response, "patchType", json_string("JSONPatch")), 0);
        }
        if (!allowed)
                ck_assert_int_eq(
                    json_object_set_new(response, "status",
                                        json_pack("{s:s, s:s, s:i}", "status", "Failure", "message",
                                                  res->detail, "code", 403)),
                    0);
        if (mutate_reason_warns(res->reason)) {
                char warning[ERROR_MESSAGE_MAX + 64];
                (void)snprintf(warning, sizeof(warning), "hangar: driver sidecar not injected: %s",
                               res->detail);
                ck_assert_int_eq(
                    json_object_set_new(response, "warnings", json_pack("[s]", warning)), 0);
        }
        _unit_json_ json_t *out = json_pack("{s:s, s:s, s:O}", "apiVersion", api, "kind",
                                            "AdmissionReview", "response", response);
        char *text = jsondump(out);
        ck_assert_ptr_nonnull(text);
        return text;
}

START_TEST(answer_is_what_jansson_would_write)
{
        /* Every kind of answer, and patches of every length modulo 3 (the
         * base64 tail), each byte for byte the jansson-built answer. */
        static const struct {
                const char *path, *value;
        } t[] = {
            {"/request/object/spec/containers/0/image", "\"a\""},
            {"/request/object/spec/containers/0/image", "\"ab\""},
            {"/request/object/spec/containers/0/image", "\"abc\""},
            {"/request/object/spec/containers/0/image", "\"q\\\"uo\\\\te \\u00e9\\u20ac\""},
            {"/request/object/spec/containers/0/securityContext", "{\"privileged\": true}"},
            {"/request/object/spec/hostPID", "true"},
            {"/request/object/spec/volumes", "[{\"name\": \"hangar-home\"}]"},
            {"/request/object/spec/containers/0/name", "\"other\""},
            {"/request/object/metadata/labels", "{}"},
            {"/request/operation", "\"UPDATE\""},
            {"/request/uid", "\"\\u00e9\\n\\\"\""},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                for (int beta = 0; beta < 2; beta++) {
                        _unit_json_ json_t *doc =
                            with(review(beta ? "admission.k8s.io/v1beta1" : "admission.k8s.io/v1"),
                                 t[i].path, t[i].value);
                        _cleanup_free_ char *body = json_dumps(doc, JSON_COMPACT);
                        _outcome_ admission_outcome_t o = {0};
                        _cleanup_free_ char *out = NULL;
                        hg_error_t err = {0};
                        ck_assert_int_eq(admission_handle(&cfg, body, strlen(body), &out, &o, &err),
                                         0);
                        _cleanup_free_ char *want = reference_answer(&o);
                        ck_assert_str_eq(out, want);
                        assert_projected_alike(body, strlen(body), 0, out, &o, &err);
                }
        }
        /* A detail cut at its 512-byte limit inside a UTF-8 character is
         * trimmed to whole characters, so the answer is still JSON. */
        char name[700];
        name[0] = 'x'; /* after 'container "x', the 512-byte cut falls mid-character */
        for (int k = 0; k < 300; k++)
                memcpy(name + 1 + 2 * k, "\xc3\xa9", 2);
        name[601] = '\0';
        char value[800];
        (void)snprintf(value, sizeof(value), "\"%s\"", name);
        _unit_json_ json_t *doc = with(
            with(review("admission.k8s.io/v1"), "/request/object/spec/containers/0/name", value),
            "/request/object/spec/containers/0/securityContext", "{\"privileged\": true}");
        _outcome_ admission_outcome_t o = {0};
        _unit_json_ json_t *resp = handle(doc, &o);
        ck_assert_int_eq(o.result.reason, REASON_PRIVILEGED);
        ck_assert_uint_eq(strlen(o.result.detail), ERROR_MESSAGE_MAX - 2);
        ck_assert_ptr_nonnull(unit_at(resp, "/response/warnings/0"));
        _cleanup_free_ char *body = json_dumps(doc, JSON_COMPACT);
        _outcome_ admission_outcome_t o2 = {0};
        _cleanup_free_ char *out = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(admission_handle(&cfg, body, strlen(body), &out, &o2, &err), 0);
        _cleanup_free_ char *want = reference_answer(&o2);
        ck_assert_str_eq(out, want);
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
        tcase_add_checked_fixture(tc, sidecar_cfg_setup, sidecar_cfg_teardown);
        tcase_add_test(tc, v1_injects_with_base64_patch);
        tcase_add_test(tc, v1beta1_answered_in_kind);
        tcase_add_test(tc, uid_echoed_verbatim);
        tcase_add_test(tc, deny_has_status_message);
        tcase_add_test(tc, privileged_skip_warns_and_annotates);
        tcase_add_test(tc, skips_without_patch);
        tcase_add_test(tc, dry_run_still_injected);
        tcase_add_test(tc, wrap_pod_round_trip);
        tcase_add_test(tc, outcome_free_resets);
        tcase_add_test(tc, projected_read_builds_only_what_it_reads);
        tcase_add_test(tc, answer_is_what_jansson_would_write);
        suite_add_tcase(s, tc);
        tc = tcase_create("errors");
        tcase_add_checked_fixture(tc, sidecar_cfg_setup, sidecar_cfg_teardown);
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
