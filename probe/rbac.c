#include "rbac.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsondump.h"
#include "jsonx.h"

/* Every way a token in the agent's container could reach hangar-driver or
 * become someone who can (docs/probe.md, "RBAC"). exec, attach and
 * port-forward are asked as create (a SPDY or POST request) and get (a
 * WebSocket upgrade is a GET); the pod's own subresources and updates are
 * asked again naming the pod, because a Role may grant them by name only. */
#define NS(label, verb, group, resource, sub, per_pod)            \
        {                                                         \
                label, verb, group, resource, sub, false, per_pod \
        }
#define CLUSTER(label, verb, group, resource, sub)             \
        {                                                      \
                label, verb, group, resource, sub, true, false \
        }
const rbac_permission_t rbac_permissions[] = {
    NS("create pods/exec", "create", "", "pods", "exec", true),
    NS("get pods/exec", "get", "", "pods", "exec", true),
    NS("create pods/attach", "create", "", "pods", "attach", true),
    NS("get pods/attach", "get", "", "pods", "attach", true),
    NS("create pods/portforward", "create", "", "pods", "portforward", true),
    NS("get pods/portforward", "get", "", "pods", "portforward", true),
    NS("update pods/ephemeralcontainers", "update", "", "pods", "ephemeralcontainers", true),
    NS("patch pods/ephemeralcontainers", "patch", "", "pods", "ephemeralcontainers", true),
    NS("create pods", "create", "", "pods", "", false),
    NS("update pods", "update", "", "pods", "", true),
    NS("patch pods", "patch", "", "pods", "", true),
    /* A status write keeps its labels and annotations: hangar's record and
     * the sandbox label (the guard refuses it where matchConditions exist). */
    NS("update pods/status", "update", "", "pods", "status", true),
    NS("patch pods/status", "patch", "", "pods", "status", true),
    /* Workloads make pods from a template: creating one, or editing one's
     * template, creates pods with any spec. */
    NS("create deployments.apps", "create", "apps", "deployments", "", false),
    NS("update deployments.apps", "update", "apps", "deployments", "", false),
    NS("patch deployments.apps", "patch", "apps", "deployments", "", false),
    NS("create replicasets.apps", "create", "apps", "replicasets", "", false),
    NS("update replicasets.apps", "update", "apps", "replicasets", "", false),
    NS("patch replicasets.apps", "patch", "apps", "replicasets", "", false),
    NS("create statefulsets.apps", "create", "apps", "statefulsets", "", false),
    NS("update statefulsets.apps", "update", "apps", "statefulsets", "", false),
    NS("patch statefulsets.apps", "patch", "apps", "statefulsets", "", false),
    NS("create daemonsets.apps", "create", "apps", "daemonsets", "", false),
    NS("update daemonsets.apps", "update", "apps", "daemonsets", "", false),
    NS("patch daemonsets.apps", "patch", "apps", "daemonsets", "", false),
    NS("create jobs.batch", "create", "batch", "jobs", "", false),
    NS("update jobs.batch", "update", "batch", "jobs", "", false),
    NS("patch jobs.batch", "patch", "batch", "jobs", "", false),
    NS("create cronjobs.batch", "create", "batch", "cronjobs", "", false),
    NS("update cronjobs.batch", "update", "batch", "cronjobs", "", false),
    NS("patch cronjobs.batch", "patch", "batch", "cronjobs", "", false),
    NS("create replicationcontrollers", "create", "", "replicationcontrollers", "", false),
    NS("update replicationcontrollers", "update", "", "replicationcontrollers", "", false),
    NS("patch replicationcontrollers", "patch", "", "replicationcontrollers", "", false),
    /* Minting a token for another service account (hangar's among them). */
    NS("create serviceaccounts/token", "create", "", "serviceaccounts", "token", false),
    /* Becoming another identity. A service account's impersonation is
     * authorized in that account's namespace, a user's or group's
     * cluster-wide: both are asked. */
    NS("impersonate serviceaccounts", "impersonate", "", "serviceaccounts", "", false),
    NS("impersonate users", "impersonate", "", "users", "", false),
    NS("impersonate groups", "impersonate", "", "groups", "", false),
    CLUSTER("impersonate users (cluster-wide)", "impersonate", "", "users", ""),
    CLUSTER("impersonate groups (cluster-wide)", "impersonate", "", "groups", ""),
    CLUSTER("impersonate serviceaccounts (cluster-wide)", "impersonate", "", "serviceaccounts", ""),
    /* Granting itself any of the above past RBAC's escalation check. */
    NS("bind roles", "bind", "rbac.authorization.k8s.io", "roles", "", false),
    NS("escalate roles", "escalate", "rbac.authorization.k8s.io", "roles", "", false),
    CLUSTER("bind clusterroles", "bind", "rbac.authorization.k8s.io", "clusterroles", ""),
    CLUSTER("escalate clusterroles", "escalate", "rbac.authorization.k8s.io", "clusterroles", ""),
    /* The kubelet's API (exec into any pod of a node) through the API server. */
    CLUSTER("get nodes/proxy", "get", "", "nodes", "proxy"),
    CLUSTER("create nodes/proxy", "create", "", "nodes", "proxy"),
};
#undef NS
#undef CLUSTER
const size_t rbac_permission_count = ARRAY_SIZE(rbac_permissions);

size_t rbac_queries(bool pod_known, rbac_query_t out[RBAC_MAX_QUERIES])
{
        size_t n = 0;
        for (size_t i = 0; i < rbac_permission_count && n < RBAC_MAX_QUERIES; i++)
                out[n++] = (rbac_query_t){.permission = i, .named = false};
        for (size_t i = 0; pod_known && i < rbac_permission_count && n < RBAC_MAX_QUERIES; i++)
                if (rbac_permissions[i].per_pod)
                        out[n++] = (rbac_query_t){.permission = i, .named = true};
        return n;
}

void rbac_query_label(const rbac_query_t *q, const char *pod, char *buf, size_t size)
{
        const char *label =
            q->permission < rbac_permission_count ? rbac_permissions[q->permission].label : "?";
        if (q->named)
                (void)snprintf(buf, size, "%s on pod %s", label, pod ? pod : "?");
        else
                (void)snprintf(buf, size, "%s", label);
}

char *rbac_ssr_body(void)
{
        _cleanup_json_ json_t *j = json_pack("{s:s, s:s}", "apiVersion", "authentication.k8s.io/v1",
                                             "kind", "SelfSubjectReview");
        return j ? jsondump(j) : NULL;
}

char *rbac_ssar_body(const rbac_query_t *q, const char *namespace, const char *pod)
{
        if (q->permission >= rbac_permission_count || (q->named && !pod))
                return NULL;
        const rbac_permission_t *p = &rbac_permissions[q->permission];
        _cleanup_json_ json_t *attrs = json_pack("{s:s, s:s, s:s}", "verb", p->verb, "group",
                                                 p->group, "resource", p->resource);
        if (!attrs)
                return NULL;
        int r = 0;
        if (p->subresource[0])
                r |= json_object_set_new(attrs, "subresource", json_string(p->subresource));
        if (!p->cluster)
                r |= json_object_set_new(attrs, "namespace", json_string(namespace));
        if (q->named)
                r |= json_object_set_new(attrs, "name", json_string(pod));
        _cleanup_json_ json_t *j =
            json_pack("{s:s, s:s, s:{s:O}}", "apiVersion", "authorization.k8s.io/v1", "kind",
                      "SelfSubjectAccessReview", "spec", "resourceAttributes", attrs);
        return r == 0 && j ? jsondump(j) : NULL;
}

/* The Status message of an error answer, for the reason. */
static const char *message_of(json_t *body)
{
        const char *m;
        return jsonx_string(body, "message", &m) == 0 ? m : "no message";
}

/* A 2xx answer of the kind asked for, or the reason it is not. */
static int expect_kind(long status, json_t *body, const char *kind, hg_error_t *err)
{
        const char *k;
        if (status == 401)
                return error_set(err, -EACCES,
                                 "the API server does not accept the token (401: %.200s)",
                                 message_of(body));
        if (status != 200 && status != 201)
                return error_set(err, -EPROTO, "%s answered HTTP %ld: %.200s", kind, status,
                                 message_of(body));
        if (!json_is_object(body))
                return error_set(err, -EPROTO, "%s answer is not a JSON object", kind);
        if (jsonx_string(body, "kind", &k) < 0 || strcmp(k, kind) != 0)
                return error_set(err, -EPROTO, "answer is not a %s", kind);
        return 0;
}

/* Copies s into buf when it fits; a longer value is an unexpected answer,
 * never a silently shortened name. */
static int copy_bounded(char *buf, size_t size, const char *s, const char *what, hg_error_t *err)
{
        size_t n = strlen(s);
        if (n >= size)
                return error_set(err, -EPROTO, "%s is longer than %zu bytes", what, size - 1);
        memcpy(buf, s, n + 1);
        return 0;
}

int rbac_parse_ssr(long status, json_t *body, rbac_identity_t *ret, hg_error_t *err)
{
        int r = expect_kind(status, body, "SelfSubjectReview", err);
        if (r < 0)
                return r;
        rbac_identity_t id = {0};
        json_t *st, *user, *extra, *pods;
        const char *name;
        if (jsonx_member(body, "status", JSON_OBJECT, &st) < 0 ||
            jsonx_member(st, "userInfo", JSON_OBJECT, &user) < 0 ||
            jsonx_string(user, "username", &name) < 0 || !name[0])
                return error_set(err, -EPROTO, "SelfSubjectReview has no status.userInfo.username");
        r = copy_bounded(id.username, sizeof(id.username), name, "the username", err);
        if (r < 0)
                return r;
        static const char sa_prefix[] = "system:serviceaccount:";
        if (strncmp(name, sa_prefix, sizeof(sa_prefix) - 1) == 0) {
                const char *ns = name + sizeof(sa_prefix) - 1;
                size_t len = strcspn(ns, ":");
                if (len == 0 || ns[len] != ':' || ns[len + 1] == '\0' ||
                    len >= sizeof(id.sa_namespace))
                        return error_set(err, -EPROTO,
                                         "service-account username \"%.200s\" is malformed", name);
                memcpy(id.sa_namespace, ns, len);
                id.sa_namespace[len] = '\0';
        }
        r = jsonx_member(user, "extra", JSON_OBJECT, &extra);
        if (r == -EINVAL)
                return error_set(err, -EPROTO,
                                 "SelfSubjectReview's userInfo.extra is not an object");
        if (r == 0) {
                r = jsonx_member(extra, "authentication.kubernetes.io/pod-name", JSON_ARRAY, &pods);
                if (r == -EINVAL || (r == 0 && (json_array_size(pods) != 1 ||
                                                !json_is_string(json_array_get(pods, 0)))))
                        return error_set(err, -EPROTO,
                                         "SelfSubjectReview's pod-name is not one string");
                if (r == 0) {
                        r = copy_bounded(id.pod_name, sizeof(id.pod_name),
                                         json_string_value(json_array_get(pods, 0)),
                                         "the pod's name", err);
                        if (r < 0)
                                return r;
                }
        }
        *ret = id;
        return 0;
}

rbac_answer_t rbac_parse_ssar(long status, json_t *body, hg_error_t *err)
{
        int r = expect_kind(status, body, "SelfSubjectAccessReview", err);
        if (r == -EACCES)
                return RBAC_REJECTED;
        if (r < 0)
                return RBAC_UNEXPECTED;
        json_t *st;
        bool allowed = false, denied = false;
        const char *eval = "";
        if (jsonx_member(body, "status", JSON_OBJECT, &st) < 0 ||
            jsonx_bool(st, "allowed", &allowed) < 0) {
                (void)error_set(err, -EPROTO,
                                "SelfSubjectAccessReview has no boolean status.allowed");
                return RBAC_UNEXPECTED;
        }
        r = jsonx_bool(st, "denied", &denied);
        if (r == -EINVAL || jsonx_string(st, "evaluationError", &eval) == -EINVAL) {
                (void)error_set(err, -EPROTO, "SelfSubjectAccessReview's status is malformed");
                return RBAC_UNEXPECTED;
        }
        if (allowed && denied) {
                (void)error_set(err, -EPROTO, "SelfSubjectAccessReview is both allowed and denied");
                return RBAC_UNEXPECTED;
        }
        if (allowed)
                return RBAC_ALLOWED;
        if (eval[0]) {
                (void)error_set(err, -EPROTO, "the authorizer could not decide: %.300s", eval);
                return RBAC_UNEXPECTED;
        }
        return RBAC_DENIED;
}
