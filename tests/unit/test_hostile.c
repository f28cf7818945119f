/* Hostile reviews and pod shapes beyond the ones each module's own tests
 * try, answered end to end as the server answers them (admission_review,
 * admission_validate on the review's text): each case is one the
 * acceptance tests found decided wrong, or one next to it that must stay
 * as it is. */
#include <errno.h>
#include <string.h>

#include "admission.h"
#include "cleanup.h"
#include "mutate.h"
#include "settings.h"
#include "strbuf.h"
#include "unit.h"
#include "webhook_fixture.h"

#define SANDBOX_POD                                                                         \
        "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\","       \
        " \"labels\": {\"hangar.dev/sandbox\": \"true\"}}, \"spec\": {\"securityContext\":" \
        " {\"runAsUser\": 1000, \"runAsGroup\": 1000}, \"containers\": [{\"name\":"         \
        " \"sandbox\", \"image\": \"env:1\"}]}}"

/* The review's text: request members given as JSON text after the fixed
 * ones (uid, kind, resource, namespace, name, userInfo). */
static char *review_text(const char *kind, const char *members)
{
        _cleanup_strbuf_ strbuf_t sb = {0};
        ck_assert_int_eq(
            strbuf_printf(&sb,
                          "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\","
                          " \"request\": {\"uid\": \"u-1\", \"kind\": {\"group\": \"\","
                          " \"version\": \"v1\", \"kind\": \"%s\"}, \"resource\": {\"group\": \"\","
                          " \"version\": \"v1\", \"resource\": \"pods\"}, \"namespace\":"
                          " \"sandboxes\", \"name\": \"p\", \"userInfo\": {\"username\":"
                          " \"mallory\", \"groups\": [\"system:authenticated\"]}, %s}}",
                          kind, members),
            0);
        return strbuf_take(&sb);
}

/* The sandbox pod as the webhook injects it, under the settings cfg holds
 * now, as JSON text. */
static char *injected_pod_text(void)
{
        /* mutate_pod applies each operation to the pod as it emits it. */
        _unit_json_ json_t *pod = unit_json(SANDBOX_POD);
        mutate_result_t r;
        ck_assert_int_eq(mutate_pod(&cfg, pod, &r), 0);
        ck_assert_int_eq(r.decision, DECISION_INJECT);
        mutate_result_free(&r);
        char *text = json_dumps(pod, JSON_COMPACT);
        ck_assert_ptr_nonnull(text);
        return text;
}

/* /validate's answer to an UPDATE pods/ephemeralcontainers adding container
 * (JSON text) to pod (JSON text). */
static mutate_reason_t add_ephemeral(const char *pod, const char *container)
{
        _unit_json_ json_t *new = unit_json(pod);
        json_object_set_new(json_object_get(new, "spec"), "ephemeralContainers",
                            json_pack("[o]", unit_json(container)));
        _cleanup_free_ char *new_text = json_dumps(new, JSON_COMPACT);
        _cleanup_strbuf_ strbuf_t members = {0};
        ck_assert_int_eq(
            strbuf_printf(&members,
                          "\"operation\": \"UPDATE\", \"subResource\":"
                          " \"ephemeralcontainers\", \"object\": %s, \"oldObject\": %s",
                          new_text, pod),
            0);
        _cleanup_free_ char *text = review_text("Pod", members.data);
        _outcome_ admission_outcome_t o;
        hg_error_t err = {0};
        _cleanup_free_ char *out = NULL;
        ck_assert_int_eq(admission_validate(&cfg, text, strlen(text), NULL, NULL, &out, &o, &err),
                         0);
        ck_assert_ptr_nonnull(out);
        return o.result.reason;
}

/* A pod injected while the driver ran as 1001, judged after driver.uid and
 * driver.gid became 2001 (an upgrade that changed them): its driver still
 * runs as 1001, and an ephemeral container as 1001 was allowed, because
 * only the configured ids were compared. */
START_TEST(ephemeral_as_the_pods_own_driver)
{
        _cleanup_free_ char *pod = injected_pod_text();
        hg_error_t err = {0};
        ck_assert_int_eq(settings_set(&cfg, "driver.uid=2001", &err), 0);
        ck_assert_int_eq(settings_set(&cfg, "driver.gid=2001", &err), 0);
        static const struct {
                const char *container;
                mutate_reason_t want;
        } cases[] = {
            {"{\"name\": \"d\", \"image\": \"b\", \"securityContext\": {\"runAsUser\": 1001,"
             " \"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"b\", \"securityContext\": {\"runAsUser\": 3000,"
             " \"runAsGroup\": 1001, \"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            /* the configured ids stay refused */
            {"{\"name\": \"d\", \"image\": \"b\", \"securityContext\": {\"runAsUser\": 2001,"
             " \"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            {"{\"name\": \"d\", \"image\": \"b\", \"securityContext\": {\"runAsUser\": 3000,"
             " \"runAsGroup\": 2001, \"allowPrivilegeEscalation\": false}}",
             REASON_EPHEMERAL_CONTAINER},
            /* a uid and gid of its own still passes */
            {"{\"name\": \"d\", \"image\": \"b\", \"securityContext\": {\"runAsUser\": 3000,"
             " \"runAsGroup\": 3000, \"allowPrivilegeEscalation\": false}}",
             REASON_NOT_GUARDED},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                mutate_reason_t got = add_ephemeral(pod, cases[i].container);
                ck_assert_msg(got == cases[i].want, "case %zu: got %s, want %s", i,
                              mutate_reason_name(got), mutate_reason_name(cases[i].want));
        }
        /* The old driver's gid as the pod's fsGroup is in its group too. */
        _unit_json_ json_t *grouped = unit_json(pod);
        json_object_set_new(json_object_get(json_object_get(grouped, "spec"), "securityContext"),
                            "fsGroup", json_integer(1001));
        _cleanup_free_ char *grouped_text = json_dumps(grouped, JSON_COMPACT);
        ck_assert_int_eq(add_ephemeral(grouped_text,
                                       "{\"name\": \"d\", \"image\": \"b\", \"securityContext\":"
                                       " {\"runAsUser\": 3000, \"runAsGroup\": 3000,"
                                       " \"allowPrivilegeEscalation\": false}}"),
                         REASON_EPHEMERAL_CONTAINER);
}
END_TEST

/* /mutate's answer to a CREATE of pod (JSON text). */
static mutate_reason_t create(const char *pod, bool *ret_patched)
{
        _cleanup_strbuf_ strbuf_t members = {0};
        ck_assert_int_eq(strbuf_printf(&members, "\"operation\": \"CREATE\", \"object\": %s", pod),
                         0);
        _cleanup_free_ char *text = review_text("Pod", members.data);
        mutate_reason_t reason = REASON_COUNT;
        for (int read = ADMISSION_READ_WHOLE; read <= ADMISSION_READ_PROJECTED; read++) {
                _outcome_ admission_outcome_t o;
                hg_error_t err = {0};
                _cleanup_free_ char *out = NULL;
                ck_assert_int_eq(
                    admission_review(&cfg, NULL, read, text, strlen(text), &out, &o, &err), 0);
                /* Both reads of the review decide alike. */
                ck_assert(reason == REASON_COUNT || reason == o.result.reason);
                reason = o.result.reason;
                _unit_json_ json_t *answer = unit_json(out);
                *ret_patched = json_object_get(json_object_get(answer, "response"), "patch");
        }
        return reason;
}

/* The sandbox pod with spec member key set to value (JSON text), or, with
 * a container key ("securityContext.privileged"), the agent's. */
static char *sandbox_with(const char *key, const char *value, bool in_agent)
{
        _unit_json_ json_t *pod = unit_json(SANDBOX_POD);
        json_t *spec = json_object_get(pod, "spec");
        json_t *at = in_agent ? json_array_get(json_object_get(spec, "containers"), 0) : spec;
        if (in_agent) {
                json_t *sc = json_object();
                json_object_set_new(at, "securityContext", sc);
                at = sc;
        }
        json_object_set_new(at, key, unit_json(value));
        char *text = json_dumps(pod, JSON_COMPACT);
        ck_assert_ptr_nonnull(text);
        return text;
}

/* What the decision reads of a pod, with a type it cannot have: the API
 * server refuses such a pod, but the webhook injected it as if the member
 * said nothing (hostNetwork "true" was no hostNetwork; a RuntimeClass named
 * by a number got no gVisor annotations). Denied as invalid-pod now, with
 * no patch; null still counts as absent. */
START_TEST(malformed_where_the_decision_reads)
{
        static const struct {
                const char *key, *value;
                bool in_agent;
                mutate_reason_t want;
        } cases[] = {
            {"hostNetwork", "\"true\"", false, REASON_INVALID_POD},
            {"hostPID", "1", false, REASON_INVALID_POD},
            {"hostIPC", "[true]", false, REASON_INVALID_POD},
            {"shareProcessNamespace", "\"true\"", false, REASON_INVALID_POD},
            {"runtimeClassName", "5", false, REASON_INVALID_POD},
            {"os", "\"windows\"", false, REASON_INVALID_POD},
            {"os", "{\"name\": 1}", false, REASON_INVALID_POD},
            {"resources", "[]", false, REASON_INVALID_POD},
            {"resources", "{\"requests\": [\"1\"]}", false, REASON_INVALID_POD},
            {"resources", "{\"limits\": \"1Gi\"}", false, REASON_INVALID_POD},
            {"securityContext", "\"root\"", false, REASON_INVALID_POD},
            {"privileged", "\"true\"", true, REASON_INVALID_POD},
            /* null is absent, for the API server too */
            {"hostNetwork", "null", false, REASON_INJECTED},
            {"os", "null", false, REASON_INJECTED},
            {"resources", "{\"requests\": null}", false, REASON_INJECTED},
            {"privileged", "null", true, REASON_INJECTED},
            /* and the booleans themselves decide as before */
            {"hostNetwork", "true", false, REASON_HOST_NETWORK},
            {"hostNetwork", "false", false, REASON_INJECTED},
            {"privileged", "true", true, REASON_PRIVILEGED},
            {"os", "{\"name\": \"linux\"}", false, REASON_INJECTED},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _cleanup_free_ char *pod =
                    sandbox_with(cases[i].key, cases[i].value, cases[i].in_agent);
                bool patched = false;
                mutate_reason_t got = create(pod, &patched);
                ck_assert_msg(got == cases[i].want, "%s: %s: got %s, want %s", cases[i].key,
                              cases[i].value, mutate_reason_name(got),
                              mutate_reason_name(cases[i].want));
                if (mutate_reason_decision(got) == DECISION_DENY)
                        ck_assert_msg(!patched, "%s: %s: a deny with a patch", cases[i].key,
                                      cases[i].value);
        }
}
END_TEST

/* The same pods through hangar-webhook inject's path (a manifest read from
 * YAML is checked as the review's reader would check it). */
START_TEST(malformed_where_the_decision_reads_inject)
{
        _cleanup_free_ char *pod = sandbox_with("hostNetwork", "\"true\"", false);
        _unit_json_ json_t *doc = unit_json(pod);
        mutate_result_t r;
        hg_error_t err = {0};
        ck_assert_int_eq(admission_decide_pod(&cfg, NULL, doc, &r, &err), 0);
        ck_assert_int_eq(r.reason, REASON_INVALID_POD);
        ck_assert_ptr_nonnull(strstr(r.detail, "spec.hostNetwork must be true or false"));
        ck_assert_ptr_null(r.patch);
}
END_TEST

/* /validate on CONNECT options as the API server sends them, and a few it
 * never sends: the container omitted or empty is the API server's to
 * refuse (it does, for a pod of more than one container), any other type
 * is refused here. */
START_TEST(connect_options)
{
        static const struct {
                const char *sub, *object;
                mutate_reason_t want;
        } cases[] = {
            {"exec", "{\"kind\": \"PodExecOptions\", \"container\": \"hangar-driver\"}",
             REASON_DRIVER_EXEC},
            {"attach", "{\"kind\": \"PodAttachOptions\", \"container\": \"hangar-driver\"}",
             REASON_DRIVER_EXEC},
            {"exec", "{\"kind\": \"PodExecOptions\", \"command\": [\"id\"]}", REASON_NOT_GUARDED},
            {"exec", "{\"kind\": \"PodExecOptions\", \"container\": \"\"}", REASON_NOT_GUARDED},
            {"exec", "{\"kind\": \"PodExecOptions\", \"container\": null}", REASON_INVALID_POD},
            {"exec", "{\"kind\": \"PodExecOptions\", \"container\": [\"hangar-driver\"]}",
             REASON_INVALID_POD},
            {"exec", "[\"hangar-driver\"]", REASON_INVALID_POD},
            /* names are exact, as the API server's lookup is */
            {"exec", "{\"container\": \"hangar-driver \"}", REASON_NOT_GUARDED},
            {"exec", "{\"container\": \"Hangar-Driver\"}", REASON_NOT_GUARDED},
            {"exec", "{\"container\": \"hangar\\u002ddriver\"}", REASON_DRIVER_EXEC},
            {"log", "{}", REASON_UNKNOWN_DOOR},
            {"", "{}", REASON_UNKNOWN_DOOR},
            {"portforward", "{\"ports\": [8080]}", REASON_POD_UNKNOWN},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _cleanup_strbuf_ strbuf_t members = {0};
                ck_assert_int_eq(strbuf_printf(&members,
                                               "\"operation\": \"CONNECT\", \"subResource\": "
                                               "\"%s\", \"object\": %s",
                                               cases[i].sub, cases[i].object),
                                 0);
                _cleanup_free_ char *text = review_text("PodExecOptions", members.data);
                _outcome_ admission_outcome_t o;
                hg_error_t err = {0};
                _cleanup_free_ char *out = NULL;
                ck_assert_int_eq(
                    admission_validate(&cfg, text, strlen(text), NULL, NULL, &out, &o, &err), 0);
                ck_assert_msg(o.result.reason == cases[i].want, "case %zu: got %s, want %s", i,
                              mutate_reason_name(o.result.reason),
                              mutate_reason_name(cases[i].want));
        }
}
END_TEST

static int lookups;

/* The stored pod, for any name the lookup is given (counted). */
static int lookup_any(void *ctx, const char *ns, const char *name, json_t **ret_pod,
                      hg_error_t *err)
{
        lookups++;
        *ret_pod = unit_json(ctx);
        return 0;
}

/* A port-forward's names go into the URL the webhook reads the pod from:
 * a forged "default/../../sandboxes/pods/p" read sandboxes/p, and the
 * review was judged on that pod. Names that are none are refused unread,
 * by the server and by review --validate alike (both go through here). */
START_TEST(port_forward_names)
{
        _cleanup_free_ char *pod = injected_pod_text();
        hg_error_t serr = {0};
        ck_assert_int_eq(settings_set(&cfg,
                                      "guard.driverUsers=[\"system:serviceaccount:hangar:hangar\"]",
                                      &serr),
                         0);
        static const struct {
                const char *ns, *name;
                bool read;
        } cases[] = {
            {"sandboxes", "p", true},
            {"sandboxes", "p.q-1", true},
            {"default", "../../sandboxes/pods/p", false},
            {"sandboxes", "p?watch=1", false},
            {"sandboxes", "p#x", false},
            {"sandboxes", "P", false},
            {"sand/boxes", "p", false},
            {"..", "p", false},
            {"sandboxes", "", false},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _unit_json_ json_t *review = unit_json(
                    "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\","
                    " \"request\": {\"uid\": \"u\", \"kind\": {\"kind\": "
                    "\"PodPortForwardOptions\"},"
                    " \"resource\": {\"resource\": \"pods\"}, \"subResource\": \"portforward\","
                    " \"operation\": \"CONNECT\", \"userInfo\": {\"username\":"
                    " \"system:serviceaccount:hangar:hangar\"}, \"object\": {\"ports\": [1]}}}");
                hg_error_t err = {0};
                json_t *req = json_object_get(review, "request");
                json_object_set_new(req, "namespace", json_string(cases[i].ns));
                json_object_set_new(req, "name", json_string(cases[i].name));
                _cleanup_free_ char *text = json_dumps(review, JSON_COMPACT);
                _outcome_ admission_outcome_t o;
                _cleanup_free_ char *out = NULL;
                lookups = 0;
                ck_assert_int_eq(
                    admission_validate(&cfg, text, strlen(text), lookup_any, pod, &out, &o, &err),
                    0);
                ck_assert_msg(lookups == (cases[i].read ? 1 : 0), "%s/%s: %d lookups", cases[i].ns,
                              cases[i].name, lookups);
                mutate_reason_t want = cases[i].read ? REASON_LISTED_IDENTITY : REASON_POD_UNKNOWN;
                ck_assert_msg(o.result.reason == want, "%s/%s: got %s", cases[i].ns, cases[i].name,
                              mutate_reason_name(o.result.reason));
                if (!cases[i].read)
                        ck_assert_ptr_nonnull(
                            strstr(o.result.detail, "is not a namespace and pod name"));
        }
}
END_TEST

/* Review texts no API server sends are refused whole (HTTP 400 from the
 * server), by both endpoints, never answered as if they said less. */
START_TEST(refused_whole)
{
        static const char *const bad[] = {
            /* a duplicate key: which container would be the one? */
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\":"
            " {\"uid\": \"u\", \"kind\": {\"kind\": \"PodExecOptions\"}, \"resource\":"
            " {\"resource\": \"pods\"}, \"operation\": \"CONNECT\", \"subResource\": \"exec\","
            " \"object\": {\"container\": \"sandbox\", \"container\": \"hangar-driver\"}}}",
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\":"
            " {\"uid\": \"u\", \"uid\": \"v\", \"kind\": {\"kind\": \"Pod\"}, \"resource\":"
            " {\"resource\": \"pods\"}, \"operation\": \"CREATE\", \"object\": " SANDBOX_POD "}}",
            /* NUL inside a name */
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\":"
            " {\"uid\": \"u\", \"kind\": {\"kind\": \"PodExecOptions\"}, \"resource\":"
            " {\"resource\": \"pods\"}, \"operation\": \"CONNECT\", \"subResource\": \"exec\","
            " \"object\": {\"container\": \"hangar-driver\\u0000x\"}}}",
            /* a uid far longer than a Kubernetes UID */
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\":"
            " {\"uid\": \"uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu"
            "uuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuuu\","
            " \"kind\": {\"kind\": \"Pod\"}, \"resource\": {\"resource\": \"pods\"},"
            " \"operation\": \"CREATE\", \"object\": " SANDBOX_POD "}}",
            /* an integer past 64 bits as a uid of the pod */
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\":"
            " {\"uid\": \"u\", \"kind\": {\"kind\": \"Pod\"}, \"resource\": {\"resource\":"
            " \"pods\"}, \"operation\": \"CREATE\", \"object\": {\"metadata\": {\"labels\":"
            " {\"hangar.dev/sandbox\": \"true\"}}, \"spec\": {\"securityContext\": {\"runAsUser\":"
            " 18446744073709552617}, \"containers\": [{\"name\": \"sandbox\", \"image\": "
            "\"e\"}]}}}}",
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\":"
            " null}",
            "{\"apiVersion\": \"admission.k8s.io/v1\", \"kind\": \"AdmissionReview\", \"request\":"
            " {\"uid\": \"u\", \"kind\": {\"kind\": \"Pod\"}, \"resource\": {\"resource\":"
            " \"pods\"}, \"operation\": \"CREATE\", \"object\": " SANDBOX_POD "}} x",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                for (int endpoint = 0; endpoint < 2; endpoint++) {
                        _outcome_ admission_outcome_t o;
                        hg_error_t err = {0};
                        char *out = NULL;
                        int r = endpoint == 0
                                    ? admission_review(&cfg, NULL, ADMISSION_READ_PROJECTED, bad[i],
                                                       strlen(bad[i]), &out, &o, &err)
                                    : admission_validate(&cfg, bad[i], strlen(bad[i]), NULL, NULL,
                                                         &out, &o, &err);
                        ck_assert_msg(r == -EINVAL, "case %zu, %s: answered", i,
                                      endpoint == 0 ? "mutate" : "validate");
                        ck_assert_ptr_null(out);
                        ck_assert_msg(err.message[0], "case %zu: no reason given", i);
                }
        }
}
END_TEST

static Suite *hostile_suite(void)
{
        Suite *s = suite_create("hostile");
        TCase *tc = tcase_create("reviews");
        tcase_add_checked_fixture(tc, sidecar_cfg_setup, sidecar_cfg_teardown);
        tcase_add_test(tc, ephemeral_as_the_pods_own_driver);
        tcase_add_test(tc, malformed_where_the_decision_reads);
        tcase_add_test(tc, malformed_where_the_decision_reads_inject);
        tcase_add_test(tc, connect_options);
        tcase_add_test(tc, port_forward_names);
        tcase_add_test(tc, refused_whole);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(hostile_suite());
}
