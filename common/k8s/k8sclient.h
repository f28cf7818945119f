/* A small Kubernetes API client on libcurl: JSON requests over HTTPS with the
 * credentials of a kubeconfig file or of the pod's service account. It does
 * exactly what the webhook (self-managed certificates) and the probe (reading
 * a pod's spec) need: one request at a time, bounded answers, no watches.
 *
 * Credentials: a kubeconfig's context (server, CA, client certificate and
 * key or a bearer token; inline *-data or file paths; or a credential plugin,
 * user.exec, as GKE's gke-gcloud-auth-plugin: common/k8s/execcred.c, run at the
 * first request, its answer kept until it expires, run again after a 401),
 * or in-cluster: KUBERNETES_SERVICE_HOST/PORT with the service account's
 * token and CA under /var/run/secrets/kubernetes.io/serviceaccount (the token
 * is re-read for every request, because projected tokens rotate). TLS is
 * always verified; a kubeconfig asking to skip verification is refused.
 *
 * Several kubeconfig files (a colon-separated list, as $KUBECONFIG) are
 * merged as kubectl merges them: the first file to define a cluster, context
 * or user by a name wins and its stanza is taken whole; current-context is
 * the first file's that sets one; relative paths resolve against the
 * directory of the file the stanza is in. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "error.h"

typedef struct k8s_client k8s_client_t;

/* Answers larger than this are refused (a Secret or a Pod is far smaller). */
#define K8S_MAX_RESPONSE_BYTES (8 * 1024 * 1024)

/* The pod's service-account directory (token, ca.crt, namespace). */
#define K8S_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* kubeconfig NULL or "": in-cluster credentials. Else one file or a
 * colon-separated list merged (every file must exist), its current context:
 * the webhook's `kubeconfig` setting. */
int k8s_client_new(const char *kubeconfig, k8s_client_t **ret, hg_error_t *err);
/* The same with a context by name (NULL or "": the current context). */
int k8s_client_new_context(const char *kubeconfig, const char *context, k8s_client_t **ret,
                           hg_error_t *err);

/* Where kubectl finds its configuration, for a command's --kubeconfig and
 * --context: kubeconfig (one file, which must exist, no list) if given; else
 * $KUBECONFIG, a colon-separated list merged, files that do not exist passed
 * over (none at all: an error, or in a cluster its own credentials);
 * else ~/.kube/config if it exists and we are not in a cluster (a pod's
 * home may be written by what runs there; kubectl would read it); else
 * in-cluster. context (NULL or "": the current context) in a cluster
 * without a kubeconfig is an error. */
int k8s_client_new_kubectl(const char *kubeconfig, const char *context, k8s_client_t **ret,
                           hg_error_t *err);
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
/* The API server's address (https://host:port, no trailing slash). */
const char *k8s_client_server(const k8s_client_t *c);
/* The kubeconfig context in use, NULL in a cluster. */
const char *k8s_client_context(const k8s_client_t *c);

/* From now on, every exchange of c, retries included, ends within
 * timeout_ms of this call, else fails -EIO (-ETIMEDOUT if none is left to
 * start it; a credential plugin's run is not bounded by it): for a caller
 * with its own deadline, as the webhook's port-forward lookup answering
 * before the API server gives up. 0: each exchange gets the default 10 s. */
void k8s_client_set_timeout_ms(k8s_client_t *c, long timeout_ms);

/* Sends method to path ("/api/v1/namespaces/ns/secrets/name") with body (may
 * be NULL) of content_type (NULL: application/json). On any HTTP answer
 * returns 0 with *ret_status and the answer parsed as JSON in *ret_body (NULL
 * if empty or not JSON); transport failures are <0 with err set:
 * -ECONNRESET when the exchange broke off part way, -EIO otherwise. A GET,
 * or a POST to a review kind of authentication.k8s.io or
 * authorization.k8s.io (nothing stored), whose exchange broke off is sent
 * again, up to twice, each retry logged; never another method, never after
 * an HTTP answer, a refused connection or a timeout. A failure after
 * retries says how many times it was sent. */
int k8s_request(k8s_client_t *c, const char *method, const char *path, const char *content_type,
                const char *body, long *ret_status, json_t **ret_body, hg_error_t *err);

/* For a connection the caller drives itself (CURLOPT_CONNECT_ONLY: the exec
 * WebSocket, common/k8s/wsexec.c): sets on h (a CURL *) the URL (server +
 * path), the policy every request has (HTTPS only, HTTP/1.1, the CA and
 * verification, the client certificate), and gives the bearer token to send
 * in *ret_bearer (NULL: none; the caller wipes and frees it). With a
 * credential plugin, *io_gen is the generation of its credential (start at
 * 0); refused: the last connection made with that generation was answered
 * 401, so a new credential is asked for (once per refusal, as k8s_request). */
int k8s_client_setup_raw(k8s_client_t *c, void *h, const char *path, bool refused,
                         unsigned long *io_gen, char **ret_bearer, hg_error_t *err);

/* The message of a Kubernetes Status answer, or "HTTP <status>". */
const char *k8s_status_message(const json_t *body, long status, char *buf, size_t size);
