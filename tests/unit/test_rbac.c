/* probe/rbac.c: the permissions asked about (every one the docs name, each
 * asked where the API server would authorize it), the request bodies, and
 * the strict readers of SelfSubjectReview and SelfSubjectAccessReview
 * answers: only a well-formed "allowed": false is a no, only a
 * well-formed true a yes; anything else is unexpected, never a no. */
#include <errno.h>

#include "cleanup.h"
#include "rbac.h"
#include "unit.h"

/* The permission labelled label; the test fails when there is none. */
static const rbac_permission_t *find(const char *label)
{
        for (size_t i = 0; i < rbac_permission_count; i++)
                if (strcmp(rbac_permissions[i].label, label) == 0)
                        return &rbac_permissions[i];
        ck_abort_msg("%s is not asked", label);
}

START_TEST(every_documented_permission_is_asked)
{
        static const char *const labels[] = {"create pods/exec",
                                             "get pods/exec",
                                             "create pods/attach",
                                             "get pods/attach",
                                             "create pods/portforward",
                                             "get pods/portforward",
                                             "update pods/ephemeralcontainers",
                                             "patch pods/ephemeralcontainers",
                                             "create pods",
                                             "update pods",
                                             "patch pods",
                                             "update pods/status",
                                             "patch pods/status",
                                             "create deployments.apps",
                                             "create replicasets.apps",
                                             "create statefulsets.apps",
                                             "create daemonsets.apps",
                                             "create jobs.batch",
                                             "create cronjobs.batch",
                                             "create replicationcontrollers",
                                             "update deployments.apps",
                                             "patch cronjobs.batch",
                                             "create serviceaccounts/token",
                                             "impersonate users",
                                             "impersonate groups",
                                             "impersonate serviceaccounts",
                                             "impersonate users (cluster-wide)",
                                             "impersonate groups (cluster-wide)",
                                             "impersonate serviceaccounts (cluster-wide)",
                                             "bind clusterroles",
                                             "escalate roles",
                                             "get nodes/proxy"};
        for (size_t i = 0; i < ARRAY_SIZE(labels); i++)
                ck_assert_msg(find(labels[i]), "%s is not asked", labels[i]);
        const rbac_permission_t *p = find("create pods/exec");
        ck_assert_str_eq(p->verb, "create");
        ck_assert_str_eq(p->resource, "pods");
        ck_assert_str_eq(p->subresource, "exec");
        ck_assert(p->per_pod && !p->cluster);
        ck_assert_str_eq(find("create jobs.batch")->group, "batch");
        ck_assert_str_eq(find("create deployments.apps")->group, "apps");
        ck_assert(find("impersonate users (cluster-wide)")->cluster);
        ck_assert(find("get nodes/proxy")->cluster);
        /* Labels are unique: a report's "granted" names one question. */
        for (size_t i = 0; i < rbac_permission_count; i++)
                for (size_t j = i + 1; j < rbac_permission_count; j++)
                        ck_assert_str_ne(rbac_permissions[i].label, rbac_permissions[j].label);
}
END_TEST

START_TEST(queries_name_the_pod_only_when_known)
{
        rbac_query_t q[RBAC_MAX_QUERIES];
        size_t unnamed = rbac_queries(false, q);
        ck_assert_uint_eq(unnamed, rbac_permission_count);
        for (size_t i = 0; i < unnamed; i++)
                ck_assert(!q[i].named);
        size_t per_pod = 0;
        for (size_t i = 0; i < rbac_permission_count; i++)
                per_pod += rbac_permissions[i].per_pod;
        ck_assert_uint_ge(per_pod, 10);
        size_t all = rbac_queries(true, q);
        ck_assert_uint_eq(all, rbac_permission_count + per_pod);
        ck_assert_uint_le(all, RBAC_MAX_QUERIES);
        char label[400];
        rbac_query_label(&q[all - 1], "sandbox-1", label, sizeof(label));
        ck_assert(q[all - 1].named);
        ck_assert_ptr_nonnull(strstr(label, " on pod sandbox-1"));
}
END_TEST

START_TEST(request_bodies)
{
        rbac_query_t q[RBAC_MAX_QUERIES];
        size_t n = rbac_queries(true, q);
        for (size_t i = 0; i < n; i++) {
                const rbac_permission_t *p = &rbac_permissions[q[i].permission];
                _cleanup_free_ char *text = rbac_ssar_body(&q[i], "sbx", "sandbox-1");
                ck_assert_ptr_nonnull(text);
                _unit_json_ json_t *j = unit_json(text);
                ck_assert_str_eq(json_string_value(json_object_get(j, "kind")),
                                 "SelfSubjectAccessReview");
                ck_assert_str_eq(json_string_value(json_object_get(j, "apiVersion")),
                                 "authorization.k8s.io/v1");
                json_t *a = json_object_get(json_object_get(j, "spec"), "resourceAttributes");
                ck_assert_str_eq(json_string_value(json_object_get(a, "verb")), p->verb);
                ck_assert_str_eq(json_string_value(json_object_get(a, "group")), p->group);
                ck_assert_str_eq(json_string_value(json_object_get(a, "resource")), p->resource);
                json_t *sub = json_object_get(a, "subresource");
                ck_assert_str_eq(sub ? json_string_value(sub) : "", p->subresource);
                json_t *ns = json_object_get(a, "namespace");
                if (p->cluster)
                        ck_assert_ptr_null(ns);
                else
                        ck_assert_str_eq(json_string_value(ns), "sbx");
                json_t *name = json_object_get(a, "name");
                if (q[i].named)
                        ck_assert_str_eq(json_string_value(name), "sandbox-1");
                else
                        ck_assert_ptr_null(name);
        }
        rbac_query_t named = {.permission = 0, .named = true};
        ck_assert_ptr_null(rbac_ssar_body(&named, "sbx", NULL));
        rbac_query_t bad = {.permission = rbac_permission_count};
        ck_assert_ptr_null(rbac_ssar_body(&bad, "sbx", NULL));
        _cleanup_free_ char *ssr = rbac_ssr_body();
        _unit_json_ json_t *j = unit_json(ssr);
        ck_assert_str_eq(json_string_value(json_object_get(j, "kind")), "SelfSubjectReview");
}
END_TEST

static rbac_answer_t ssar(long status, const char *body, hg_error_t *err)
{
        _unit_json_ json_t *j = body ? unit_json(body) : NULL;
        error_clear(err);
        return rbac_parse_ssar(status, j, err);
}

#define SSAR(st) "{\"kind\": \"SelfSubjectAccessReview\", \"status\": " st "}"

START_TEST(access_review_answers)
{
        hg_error_t err;
        ck_assert_int_eq(
            ssar(201, SSAR("{\"allowed\": true, \"reason\": \"RBAC: allowed\"}"), &err),
            RBAC_ALLOWED);
        ck_assert_int_eq(ssar(200, SSAR("{\"allowed\": false}"), &err), RBAC_DENIED);
        ck_assert_int_eq(ssar(201, SSAR("{\"allowed\": false, \"denied\": true}"), &err),
                         RBAC_DENIED);
        ck_assert_int_eq(ssar(201, SSAR("{\"allowed\": false, \"evaluationError\": \"\"}"), &err),
                         RBAC_DENIED);
        ck_assert_int_eq(ssar(401, "{\"kind\": \"Status\", \"message\": \"Unauthorized\"}", &err),
                         RBAC_REJECTED);
        ck_assert_ptr_nonnull(strstr(err.message, "401"));
        static const struct {
                long status;
                const char *body;
                const char *says;
        } odd[] = {
            {403, "{\"kind\": \"Status\", \"message\": \"forbidden: no\"}", "403: forbidden: no"},
            {404, NULL, "404: no message"},
            {201, NULL, "not a JSON object"},
            {201, "[]", "not a JSON object"},
            {201, "{\"kind\": \"SelfSubjectReview\", \"status\": {\"allowed\": true}}",
             "not a SelfSubjectAccessReview"},
            {201, "{\"status\": {\"allowed\": true}}", "not a SelfSubjectAccessReview"},
            {201, SSAR("{}"), "no boolean status.allowed"},
            {201, SSAR("[]"), "no boolean status.allowed"},
            {201, SSAR("{\"allowed\": 1}"), "no boolean status.allowed"},
            {201, SSAR("{\"allowed\": false, \"denied\": \"yes\"}"), "malformed"},
            {201, SSAR("{\"allowed\": false, \"evaluationError\": 3}"), "malformed"},
            {201, SSAR("{\"allowed\": true, \"denied\": true}"), "both"},
            {201, SSAR("{\"allowed\": false, \"evaluationError\": \"role \\\"x\\\" not found\"}"),
             "could not decide: role \"x\" not found"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(odd); i++) {
                ck_assert_msg(ssar(odd[i].status, odd[i].body, &err) == RBAC_UNEXPECTED,
                              "case %zu not unexpected", i);
                ck_assert_msg(strstr(err.message, odd[i].says), "case %zu: %s", i, err.message);
        }
}
END_TEST

#define SSR(user, extra)                                                                      \
        "{\"kind\": \"SelfSubjectReview\", \"status\": {\"userInfo\": {\"username\": \"" user \
        "\"" extra "}}}"

static int ssr(long status, const char *body, rbac_identity_t *id, hg_error_t *err)
{
        _unit_json_ json_t *j = body ? unit_json(body) : NULL;
        error_clear(err);
        memset(id, 0x55, sizeof(*id)); /* written only on success */
        return rbac_parse_ssr(status, j, id, err);
}

START_TEST(self_review_answers)
{
        hg_error_t err;
        rbac_identity_t id;
        ck_assert_int_eq(
            ssr(201,
                SSR("system:serviceaccount:sbx:agent",
                    ", \"extra\": {\"authentication.kubernetes.io/pod-name\": [\"sandbox-1\"], "
                    "\"authentication.kubernetes.io/pod-uid\": [\"u\"]}"),
                &id, &err),
            0);
        ck_assert_str_eq(id.username, "system:serviceaccount:sbx:agent");
        ck_assert_str_eq(id.sa_namespace, "sbx");
        ck_assert_str_eq(id.pod_name, "sandbox-1");
        ck_assert_int_eq(ssr(201, SSR("alice", ""), &id, &err), 0);
        ck_assert_str_eq(id.sa_namespace, "");
        ck_assert_str_eq(id.pod_name, "");
        ck_assert_int_eq(ssr(401, NULL, &id, &err), -EACCES);
        static const char *const bad[] = {
            "{\"kind\": \"SelfSubjectReview\"}",
            "{\"kind\": \"SelfSubjectReview\", \"status\": {\"userInfo\": {}}}",
            SSR("", ""),
            SSR("system:serviceaccount:", ""),
            SSR("system:serviceaccount:sbx", ""),
            SSR("system:serviceaccount:sbx:", ""),
            SSR("system:serviceaccount::agent", ""),
            SSR("a", ", \"extra\": []"),
            SSR("a", ", \"extra\": {\"authentication.kubernetes.io/pod-name\": \"p\"}"),
            SSR("a", ", \"extra\": {\"authentication.kubernetes.io/pod-name\": []}"),
            SSR("a", ", \"extra\": {\"authentication.kubernetes.io/pod-name\": [\"p\", \"q\"]}"),
            SSR("a", ", \"extra\": {\"authentication.kubernetes.io/pod-name\": [1]}"),
            ("{\"kind\": \"SelfSubjectAccessReview\", \"status\": {\"userInfo\": {\"username\": "
             "\"a\"}}}"), /* the wrong kind */
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                ck_assert_msg(ssr(201, bad[i], &id, &err) == -EPROTO, "case %zu accepted", i);
                ck_assert_msg(err.message[0], "case %zu: no reason", i);
        }
        ck_assert_int_eq(ssr(403, "{\"message\": \"no\"}", &id, &err), -EPROTO);
        /* Too long for the record: refused, never cut short. */
        char long_name[600];
        memset(long_name, 'a', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        _unit_json_ json_t *j = json_pack("{s:s, s:{s:{s:s}}}", "kind", "SelfSubjectReview",
                                          "status", "userInfo", "username", long_name);
        ck_assert_int_eq(rbac_parse_ssr(201, j, &id, &err), -EPROTO);
}
END_TEST

static Suite *rbac_suite(void)
{
        Suite *s = suite_create("rbac");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, every_documented_permission_is_asked);
        tcase_add_test(tc, queries_name_the_pod_only_when_known);
        tcase_add_test(tc, request_bodies);
        tcase_add_test(tc, access_review_answers);
        tcase_add_test(tc, self_review_answers);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(rbac_suite());
}
