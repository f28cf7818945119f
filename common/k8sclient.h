/* A small Kubernetes API client on libcurl: JSON requests over HTTPS with the
 * credentials of a kubeconfig file or of the pod's service account. It does
 * exactly what the webhook (self-managed certificates) and the probe (reading
 * a pod's spec) need: one request at a time, bounded answers, no watches.
 *
 * Credentials: a kubeconfig's current context (server, CA, client
 * certificate and key or a bearer token; inline *-data or file paths), or
 * in-cluster: KUBERNETES_SERVICE_HOST/PORT with the service account's token
 * and CA under /var/run/secrets/kubernetes.io/serviceaccount (the token is
 * re-read for every request, because projected tokens rotate). TLS is always
 * verified; a kubeconfig asking to skip verification is refused. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "error.h"

typedef struct k8s_client k8s_client_t;

/* Answers larger than this are refused (a Secret or a Pod is far smaller). */
#define K8S_MAX_RESPONSE_BYTES (8 * 1024 * 1024)

/* The pod's service-account directory (token, ca.crt, namespace). */
#define K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* kubeconfig NULL or "": in-cluster credentials. */
int k8s_client_new(const char *kubeconfig, k8s_client_t **ret, hg_error_t *err);
void k8s_client_free(k8s_client_t *c);

/* In-cluster like k8s_client_new(NULL) (the address from
 * KUBERNETES_SERVICE_HOST/PORT, the namespace from K8S_SA_DIR), with another
 * bearer token and CA: exactly one of token_file (re-read per request) and
 * token (used as given), and the CA bundle in ca_file. */
int k8s_client_new_in_cluster(const char *token_file, const char *token, const char *ca_file,
                              k8s_client_t **ret, hg_error_t *err);

/* The namespace of the kubeconfig's context, or the pod's own in-cluster;
 * "default" if neither says. */
const char *k8s_client_namespace(const k8s_client_t *c);
/* Whether that namespace was said (false: "default" is only the fallback). */
bool k8s_client_namespace_known(const k8s_client_t *c);

/* Sends method to path ("/api/v1/namespaces/ns/secrets/name") with body (may
 * be NULL) of content_type (NULL: application/json). On any HTTP answer
 * returns 0 with *ret_status and the answer parsed as JSON in *ret_body (NULL
 * if empty or not JSON); transport failures are <0 with err set. */
int k8s_request(k8s_client_t *c, const char *method, const char *path, const char *content_type,
                const char *body, long *ret_status, json_t **ret_body, hg_error_t *err);

/* The message of a Kubernetes Status answer, or "HTTP <status>". */
const char *k8s_status_message(const json_t *body, long status, char *buf, size_t size);
