/* What a token found in the agent's container must not be allowed to do, the
 * API requests that ask (SelfSubjectReview: who is this token;
 * SelfSubjectAccessReview: may it do this), and strict readers of their
 * answers. Pure: no I/O; probe/credentials.c sends, probe/checks.c judges.
 *
 * SelfSubjectAccessReview, not SelfSubjectRulesReview: an access review is
 * answered by the API server's whole authorizer chain (RBAC, and on GKE the
 * IAM webhook), exactly as the real request would be; a rules review lists
 * RBAC's rules only and is "incomplete" wherever a webhook authorizer sits
 * in the chain, so it could never pass there. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"

typedef struct rbac_permission {
        const char *label; /* "create pods/exec": how reports and docs name it */
        const char *verb;
        const char *group; /* "" for the core group */
        const char *resource;
        const char *subresource; /* "" for none */
        bool cluster;            /* asked with no namespace (cluster-wide) */
        bool per_pod;            /* also asked naming the pod (a Role may name it) */
} rbac_permission_t;

extern const rbac_permission_t rbac_permissions[];
extern const size_t rbac_permission_count;

/* One access review to send: a permission, unnamed or naming the pod. */
typedef struct rbac_query {
        size_t permission; /* index into rbac_permissions */
        bool named;
} rbac_query_t;

#define RBAC_MAX_QUERIES 64

/* The queries for a pod whose name is known (or not): every permission
 * unnamed, and the per-pod ones again naming the pod. Returns the count. */
size_t rbac_queries(bool pod_known, rbac_query_t out[RBAC_MAX_QUERIES]);

/* "create pods/exec", or "create pods/exec on pod NAME" for a named query. */
void rbac_query_label(const rbac_query_t *q, const char *pod, char *buf, size_t size);

#define RBAC_SSR_PATH  "/apis/authentication.k8s.io/v1/selfsubjectreviews"
#define RBAC_SSAR_PATH "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"

/* Request bodies (JSON text, to free). namespace is ignored for cluster-wide
 * permissions; pod names the pod for a named query. */
char *rbac_ssr_body(void);
char *rbac_ssar_body(const rbac_query_t *q, const char *namespace, const char *pod);

/* Who a token is, from a SelfSubjectReview answer. */
typedef struct rbac_identity {
        char username[256];
        char sa_namespace[64]; /* from system:serviceaccount:NS:NAME; "" if not one */
        char pod_name[254]; /* the bound pod (user extra authentication.kubernetes.io/pod-name); ""
                               if none */
} rbac_identity_t;

/* The outcome of reading one answer. */
typedef enum rbac_answer {
        RBAC_UNEXPECTED, /* first: a zeroed answer is never a "no" */
        RBAC_REJECTED,   /* 401: the API server does not accept the token */
        RBAC_ALLOWED,
        RBAC_DENIED,
} rbac_answer_t;

/* A SelfSubjectReview answer (HTTP status, parsed body or NULL): 0 with ret
 * filled, -EACCES for a 401 (the API server does not accept the token), or
 * another <0 with the reason in err (anything but a SelfSubjectReview with a
 * username). */
int rbac_parse_ssr(long status, json_t *body, rbac_identity_t *ret, hg_error_t *err);

/* A SelfSubjectAccessReview answer: allowed, denied, rejected (401), or
 * unexpected with the reason in err (any other status, a body that is not
 * a SelfSubjectAccessReview with a boolean status.allowed, allowed and
 * denied both true, or an evaluationError beside a "no": the authorizer
 * could not finish, so "no" is not proven). */
rbac_answer_t rbac_parse_ssar(long status, json_t *body, hg_error_t *err);
