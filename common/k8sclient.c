#include "k8sclient.h"

#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "base64.h"
#include "cleanup.h"
#include "fileio.h"
#include "jsonx.h"
#include "strbuf.h"
#include "yamldoc.h"

#define CREDENTIAL_MAX    (1024 * 1024)
#define REQUEST_TIMEOUT_S 10L

struct k8s_client {
        char *server;     /* https://host:port, no trailing slash */
        char *ca_pem;     /* trusted CA bundle */
        char *cert_pem;   /* client certificate (optional) */
        char *key_pem;    /* client key (optional) */
        char *token;      /* static bearer token (optional) */
        char *token_file; /* re-read per request (optional) */
        char *namespace;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void)
{
        (void)curl_global_init(CURL_GLOBAL_DEFAULT);
}

void k8s_client_free(k8s_client_t *c)
{
        if (!c)
                return;
        free(c->server);
        free(c->ca_pem);
        free(c->cert_pem);
        if (c->key_pem) {
                explicit_bzero(c->key_pem, strlen(c->key_pem));
                free(c->key_pem);
        }
        if (c->token) {
                explicit_bzero(c->token, strlen(c->token));
                free(c->token);
        }
        free(c->token_file);
        free(c->namespace);
        free(c);
}

static void cleanup_clientp(k8s_client_t **c)
{
        k8s_client_free(*c);
}

const char *k8s_client_namespace(const k8s_client_t *c)
{
        return c->namespace ? c->namespace : "default";
}

static int read_text(const char *path, char **ret, hg_error_t *err)
{
        size_t len;
        int r = file_read_bounded(path, CREDENTIAL_MAX, ret, &len);
        if (r < 0)
                return error_set(err, r, "cannot read %s: %s", path, strerror(-r));
        return 0;
}

/* A kubeconfig value that is inline (*-data, base64) or a file path relative
 * to the kubeconfig's directory. Neither present: 0 and *ret NULL. */
static int inline_or_file(json_t *obj, const char *data_key, const char *file_key, const char *dir,
                          char **ret, hg_error_t *err)
{
        const char *v;
        *ret = NULL;
        if (jsonx_string(obj, data_key, &v) == 0)
                return base64_decode(v, ret, NULL, err);
        if (jsonx_string(obj, file_key, &v) == 0) {
                char path[4096];
                (void)snprintf(path, sizeof(path), "%s%s%s", v[0] == '/' ? "" : dir,
                               v[0] == '/' ? "" : "/", v);
                return read_text(path, ret, err);
        }
        return 0;
}

/* The entry of list (clusters/contexts/users) named name: its inner object. */
static json_t *named(json_t *kc, const char *list, const char *inner, const char *name)
{
        size_t i;
        json_t *e;
        json_array_foreach (json_object_get(kc, list), i, e) {
                const char *n;
                if (jsonx_string(e, "name", &n) == 0 && strcmp(n, name) == 0)
                        return json_object_get(e, inner);
        }
        return NULL;
}

static int from_kubeconfig(const char *path, k8s_client_t *c, hg_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r = file_read_bounded(path, CREDENTIAL_MAX, &buf, &len);
        if (r < 0)
                return error_set(err, r, "kubeconfig %s: %s", path, strerror(-r));
        _cleanup_ynode_ ynode_t *doc = NULL;
        _cleanup_json_ json_t *kc = NULL;
        r = yamldoc_parse(buf, len, &doc, err);
        if (r == 0)
                r = ynode_to_json(doc, &kc, err);
        if (r < 0)
                return error_prefix(err, "kubeconfig %s: ", path);

        _cleanup_free_ char *dir_copy = strdup(path);
        if (!dir_copy)
                return -ENOMEM;
        const char *dir = dirname(dir_copy);
        const char *current, *cluster_name, *user_name, *server, *ns;
        json_t *ctx, *cluster, *user;
        bool insecure = false;
        if (jsonx_string(kc, "current-context", &current) < 0 ||
            !(ctx = named(kc, "contexts", "context", current)))
                return error_set(err, -EINVAL, "kubeconfig %s: no current context", path);
        if (jsonx_string(ctx, "cluster", &cluster_name) < 0 ||
            !(cluster = named(kc, "clusters", "cluster", cluster_name)) ||
            jsonx_string(cluster, "server", &server) < 0)
                return error_set(err, -EINVAL, "kubeconfig %s: the context's cluster has no server",
                                 path);
        if (strncmp(server, "https://", 8) != 0)
                return error_set(err, -EINVAL, "kubeconfig %s: server must be https", path);
        if (jsonx_bool(cluster, "insecure-skip-tls-verify", &insecure) == 0 && insecure)
                return error_set(err, -EINVAL, "kubeconfig %s: insecure-skip-tls-verify is refused",
                                 path);
        user = jsonx_string(ctx, "user", &user_name) == 0 ? named(kc, "users", "user", user_name)
                                                          : NULL;
        c->server = strndup(server, strlen(server) - (server[strlen(server) - 1] == '/'));
        if (!c->server)
                return -ENOMEM;
        if (jsonx_string(ctx, "namespace", &ns) == 0 && !(c->namespace = strdup(ns)))
                return -ENOMEM;
        r = inline_or_file(cluster, "certificate-authority-data", "certificate-authority", dir,
                           &c->ca_pem, err);
        if (r == 0)
                r = inline_or_file(user, "client-certificate-data", "client-certificate", dir,
                                   &c->cert_pem, err);
        if (r == 0)
                r = inline_or_file(user, "client-key-data", "client-key", dir, &c->key_pem, err);
        if (r < 0)
                return error_prefix(err, "kubeconfig %s: ", path);
        const char *token;
        if (jsonx_string(user, "token", &token) == 0 && !(c->token = strdup(token)))
                return -ENOMEM;
        if (jsonx_string(user, "tokenFile", &token) == 0) {
                /* Relative to the kubeconfig, as kubectl reads it. */
                strbuf_t sb = {0};
                if (strbuf_printf(&sb, "%s%s%s", token[0] == '/' ? "" : dir,
                                  token[0] == '/' ? "" : "/", token) < 0)
                        return -ENOMEM;
                c->token_file = strbuf_take(&sb);
                if (!c->token_file)
                        return -ENOMEM;
        }
        if (!c->ca_pem)
                return error_set(err, -EINVAL,
                                 "kubeconfig %s: the cluster has no certificate authority", path);
        return 0;
}

/* The API server's address inside a pod: KUBERNETES_SERVICE_HOST/PORT. */
static int cluster_server(k8s_client_t *c, hg_error_t *err)
{
        const char *host = getenv("KUBERNETES_SERVICE_HOST");
        const char *port = getenv("KUBERNETES_SERVICE_PORT");
        if (!host || !port)
                return error_set(err, -ENOENT,
                                 "not in a cluster (KUBERNETES_SERVICE_HOST unset) and no "
                                 "kubeconfig given");
        strbuf_t sb = {0};
        bool v6 = strchr(host, ':') != NULL;
        if (strbuf_printf(&sb, "https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port) < 0)
                return -ENOMEM;
        c->server = strbuf_take(&sb);
        return c->server ? 0 : -ENOMEM;
}

/* In a pod: the address from the environment, the CA from ca_file, the
 * bearer token re-read from token_file or given as token, and the pod's
 * namespace from the service account's directory when it is mounted. */
static int from_cluster(k8s_client_t *c, const char *token_file, const char *token,
                        const char *ca_file, hg_error_t *err)
{
        int r = cluster_server(c, err);
        if (r < 0)
                return r;
        r = read_text(ca_file, &c->ca_pem, err);
        if (r < 0)
                return r;
        if (token_file && !(c->token_file = strdup(token_file)))
                return -ENOMEM;
        if (token && !(c->token = strdup(token)))
                return -ENOMEM;
        _cleanup_free_ char *ns = NULL;
        if (read_text(K8S_SA_DIR "/namespace", &ns, NULL) == 0) {
                ns[strcspn(ns, " \r\n")] = '\0';
                c->namespace = TAKE_PTR(ns);
        }
        return 0;
}

int k8s_client_new_in_cluster(const char *token_file, const char *token, const char *ca_file,
                              k8s_client_t **ret, hg_error_t *err)
{
        if (!token_file == !token || !ca_file)
                return error_set(err, -EINVAL, "in-cluster client: one token source and a CA");
        pthread_once(&curl_once, curl_init_once);
        _cleanup_(cleanup_clientp) k8s_client_t *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        int r = from_cluster(c, token_file, token, ca_file, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

int k8s_client_new(const char *kubeconfig, k8s_client_t **ret, hg_error_t *err)
{
        if (!kubeconfig || !kubeconfig[0])
                return k8s_client_new_in_cluster(K8S_SA_DIR "/token", NULL, K8S_SA_DIR "/ca.crt",
                                                 ret, err);
        pthread_once(&curl_once, curl_init_once);
        _cleanup_(cleanup_clientp) k8s_client_t *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        int r = from_kubeconfig(kubeconfig, c, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

typedef struct answer {
        strbuf_t data;
        bool too_big;
} answer_t;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        answer_t *a = userdata;
        size_t n = size * nmemb;
        if (a->data.len + n > K8S_MAX_RESPONSE_BYTES) {
                a->too_big = true;
                return 0; /* aborts the transfer */
        }
        return strbuf_append(&a->data, ptr, n) == 0 ? n : 0;
}

static void cleanup_curlp(CURL **h)
{
        if (*h)
                curl_easy_cleanup(*h);
}

static void cleanup_slistp(struct curl_slist **l)
{
        curl_slist_free_all(*l);
}

static int bearer_header(k8s_client_t *c, struct curl_slist **headers, hg_error_t *err)
{
        _cleanup_free_ char *file_token = NULL;
        const char *token = c->token;
        if (c->token_file) {
                int r = read_text(c->token_file, &file_token, err);
                if (r < 0)
                        return r;
                file_token[strcspn(file_token, "\r\n")] = '\0';
                token = file_token;
        }
        if (!token)
                return 0;
        _cleanup_strbuf_ strbuf_t h = {0};
        if (strbuf_printf(&h, "Authorization: Bearer %s", token) < 0)
                return -ENOMEM;
        struct curl_slist *l = curl_slist_append(*headers, h.data);
        explicit_bzero(h.data, h.len);
        if (file_token)
                explicit_bzero(file_token, strlen(file_token));
        if (!l)
                return -ENOMEM;
        *headers = l;
        return 0;
}

bool k8s_client_namespace_known(const k8s_client_t *c)
{
        return c->namespace != NULL;
}

int k8s_request(k8s_client_t *c, const char *method, const char *path, const char *content_type,
                const char *body, long *ret_status, json_t **ret_body, hg_error_t *err)
{
        _cleanup_(cleanup_curlp) CURL *h = curl_easy_init();
        _cleanup_(cleanup_slistp) struct curl_slist *headers = NULL;
        _cleanup_strbuf_ strbuf_t url = {0};
        _cleanup_strbuf_ strbuf_t ct = {0};
        answer_t a = {0};
        if (!h || strbuf_printf(&url, "%s%s", c->server, path) < 0 ||
            strbuf_printf(&ct, "Content-Type: %s",
                          content_type ? content_type : "application/json") < 0)
                return -ENOMEM;
        headers = curl_slist_append(NULL, "Accept: application/json");
        if (!headers || (body && !curl_slist_append(headers, ct.data)))
                return -ENOMEM;
        int r = bearer_header(c, &headers, err);
        if (r < 0)
                return r;
        struct curl_blob ca = {c->ca_pem, strlen(c->ca_pem), CURL_BLOB_COPY};
        CURLcode cc = CURLE_OK;
#define SET(opt, val)       \
        if (cc == CURLE_OK) \
        cc = curl_easy_setopt(h, opt, val)
        SET(CURLOPT_URL, url.data);
        SET(CURLOPT_PROTOCOLS_STR, "https");
        SET(CURLOPT_CUSTOMREQUEST, method);
        SET(CURLOPT_HTTPHEADER, headers);
        SET(CURLOPT_CAINFO_BLOB, &ca);
        SET(CURLOPT_SSL_VERIFYPEER, 1L);
        SET(CURLOPT_SSL_VERIFYHOST, 2L);
        SET(CURLOPT_TIMEOUT, REQUEST_TIMEOUT_S);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_WRITEFUNCTION, on_data);
        SET(CURLOPT_WRITEDATA, &a);
        if (body) {
                SET(CURLOPT_POSTFIELDS, body);
                SET(CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        }
        if (c->cert_pem && c->key_pem) {
                struct curl_blob cert = {c->cert_pem, strlen(c->cert_pem), CURL_BLOB_COPY};
                struct curl_blob key = {c->key_pem, strlen(c->key_pem), CURL_BLOB_COPY};
                SET(CURLOPT_SSLCERT_BLOB, &cert);
                SET(CURLOPT_SSLCERTTYPE, "PEM");
                SET(CURLOPT_SSLKEY_BLOB, &key);
                SET(CURLOPT_SSLKEYTYPE, "PEM");
        }
#undef SET
        if (cc == CURLE_OK)
                cc = curl_easy_perform(h);
        if (cc != CURLE_OK) {
                strbuf_free(&a.data);
                return error_set(err, -EIO, "%s %s: %s", method, path,
                                 a.too_big ? "answer too large" : curl_easy_strerror(cc));
        }
        long status = 0;
        (void)curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
        json_t *j = NULL;
        if (a.data.len > 0) {
                hg_error_t ignored;
                (void)jsonx_load(a.data.data, a.data.len, JSONX_MAX_DEPTH, &j, &ignored);
        }
        strbuf_free(&a.data);
        *ret_status = status;
        *ret_body = j;
        return 0;
}

const char *k8s_status_message(const json_t *body, long status, char *buf, size_t size)
{
        const char *msg;
        if (jsonx_string((json_t *)body, "message", &msg) == 0)
                return msg;
        (void)snprintf(buf, size, "HTTP %ld", status);
        return buf;
}
