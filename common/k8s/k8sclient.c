#include "k8sclient.h"

#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <curl/curl.h>

#include "base64.h"
#include "cleanup.h"
#include "execcred.h"
#include "fileio.h"
#include "jsonx.h"
#include "log.h"
#include "strbuf.h"
#include "yamldoc.h"

#define CREDENTIAL_MAX    (1024 * 1024)
#define REQUEST_TIMEOUT_S 10L
/* Times a replayable request is sent again after its exchange broke off. */
#define MAX_BROKEN_RETRIES 2

struct k8s_client {
        char *server;     /* https://host:port, no trailing slash */
        char *ca_pem;     /* trusted CA bundle */
        char *cert_pem;   /* client certificate (optional) */
        char *key_pem;    /* client key (optional) */
        char *token;      /* static bearer token (optional) */
        char *token_file; /* re-read per request (optional) */
        char *namespace;
        char *context;           /* the kubeconfig's context (NULL in a cluster) */
        execcred_config_t *exec; /* the user's credential plugin (optional) */
        char *exec_info;         /* its KUBERNETES_EXEC_INFO */
        pthread_mutex_t lock;    /* guards cred, cred_valid, cred_gen */
        execcred_t cred;         /* what the plugin last gave, while valid */
        bool cred_valid;
        unsigned long cred_gen; /* counts the plugin's runs */
        int64_t deadline_ms;    /* CLOCK_MONOTONIC; 0: REQUEST_TIMEOUT_S each */
};

static int64_t monotonic_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void k8s_client_set_timeout_ms(k8s_client_t *c, long timeout_ms)
{
        c->deadline_ms = timeout_ms > 0 ? monotonic_ms() + timeout_ms : 0;
}

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
        free(c->context);
        execcred_config_free(c->exec);
        free(c->exec);
        free(c->exec_info);
        execcred_clear(&c->cred);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

static k8s_client_t *client_alloc(void)
{
        pthread_once(&curl_once, curl_init_once);
        k8s_client_t *c = calloc(1, sizeof(*c));
        if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
                free(c);
                return NULL;
        }
        return c;
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
        if (jsonx_string(obj, data_key, &v) == 0 && v[0])
                return base64_decode(v, ret, NULL, err);
        if (jsonx_string(obj, file_key, &v) == 0 && v[0]) {
                char path[4096];
                (void)snprintf(path, sizeof(path), "%s%s%s", v[0] == '/' ? "" : dir,
                               v[0] == '/' ? "" : "/", v);
                return read_text(path, ret, err);
        }
        return 0;
}

/* ---- kubeconfig files, merged as kubectl merges $KUBECONFIG -------------
 *
 * Every file's clusters, contexts and users go into one map each, by name:
 * the first file to define a name wins, and its stanza is taken whole
 * (never merged with a later file's stanza of that name). current-context
 * is the first file's that sets one. Each stanza remembers its file, whose
 * directory its relative paths are resolved against (client-go resolves
 * each file's paths before merging). */

#define KUBECONFIG_MAX_FILES 64

static const char *const kc_lists[][2] = {
    {"clusters", "cluster"}, {"contexts", "context"}, {"users", "user"}};

/* Adds one parsed file to merged: {"clusters": {name: {"file", "value"}},
 * ..., "current-context": {"file", "value"}}. */
static int merge_file(json_t *merged, const char *path, json_t *kc, hg_error_t *err)
{
        if (!json_is_object(kc))
                return error_set(err, -EINVAL, "kubeconfig %s: not a mapping", path);
        for (size_t l = 0; l < ARRAY_SIZE(kc_lists); l++) {
                json_t *list = json_object_get(kc, kc_lists[l][0]);
                if (!list || json_is_null(list))
                        continue;
                if (!json_is_array(list))
                        return error_set(err, -EINVAL, "kubeconfig %s: %s must be a list", path,
                                         kc_lists[l][0]);
                json_t *map = json_object_get(merged, kc_lists[l][0]);
                _cleanup_json_ json_t *seen = json_object();
                if (!seen)
                        return -ENOMEM;
                size_t i;
                json_t *e;
                json_array_foreach (list, i, e) {
                        const char *name;
                        if (jsonx_string(e, "name", &name) < 0 || !name[0])
                                return error_set(err, -EINVAL, "kubeconfig %s: %s[%zu] has no name",
                                                 path, kc_lists[l][0], i);
                        if (json_object_get(seen, name))
                                return error_set(err, -EINVAL,
                                                 "kubeconfig %s: two %s named \"%.100s\"", path,
                                                 kc_lists[l][0], name);
                        if (json_object_set_new(seen, name, json_true()) < 0)
                                return -ENOMEM;
                        if (json_object_get(map, name))
                                continue; /* an earlier file defined it */
                        json_t *inner = json_object_get(e, kc_lists[l][1]);
                        json_t *entry = json_pack("{s:s, s:O}", "file", path, "value",
                                                  inner ? inner : json_null());
                        if (!entry || json_object_set_new(map, name, entry) < 0)
                                return -ENOMEM;
                }
        }
        const char *current;
        if (!json_object_get(merged, "current-context") &&
            jsonx_string(kc, "current-context", &current) == 0 && current[0]) {
                json_t *entry = json_pack("{s:s, s:s}", "file", path, "value", current);
                if (!entry || json_object_set_new(merged, "current-context", entry) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/* Reads path and merges it in. A missing file is -ENOENT with err set. */
static int load_file(json_t *merged, const char *path, hg_error_t *err)
{
        _cleanup_free_ char *buf = NULL;
        size_t len;
        int r = file_read_bounded(path, CREDENTIAL_MAX, &buf, &len);
        if (r < 0)
                return error_set(err, r, "kubeconfig %s: %s", path, strerror(-r));
        _cleanup_ynode_ ynode_t *doc = NULL;
        _cleanup_json_ json_t *kc = NULL;
        r = yamldoc_parse(buf, len, &doc, err);
        if (r == -ENODATA)
                return 0; /* an empty file is an empty configuration, as for kubectl */
        if (r == 0)
                r = ynode_to_json(doc, &kc, err);
        if (r < 0)
                return error_prefix(err, "kubeconfig %s: ", path);
        return merge_file(merged, path, kc, err);
}

/* The stanza of name in the merged list, and the file it came from. */
static json_t *merged_get(json_t *merged, const char *list, const char *name, const char **file)
{
        json_t *e = json_object_get(json_object_get(merged, list), name);
        if (!e)
                return NULL;
        *file = json_string_value(json_object_get(e, "file"));
        return json_object_get(e, "value");
}

/* The cluster as KUBERNETES_EXEC_INFO's spec.cluster shows it to a plugin
 * that asks (provideClusterInfo): what client-go puts there. */
static json_t *exec_cluster_info(json_t *cluster, const char *server, const char *ca_pem)
{
        _cleanup_free_ char *ca = base64_encode(ca_pem, strlen(ca_pem));
        json_t *j =
            json_pack("{s:s, s:s}", "server", server, "certificate-authority-data", ca ? ca : "");
        if (!j || !ca)
                goto fail;
        static const char *const copied[] = {"tls-server-name", "proxy-url"};
        for (size_t i = 0; i < ARRAY_SIZE(copied); i++) {
                const char *v;
                if (jsonx_string(cluster, copied[i], &v) == 0 && v[0] &&
                    json_object_set_new(j, copied[i], json_string(v)) < 0)
                        goto fail;
        }
        bool off = false;
        if (jsonx_bool(cluster, "disable-compression", &off) == 0 && off &&
            json_object_set_new(j, "disable-compression", json_true()) < 0)
                goto fail;
        /* Per-cluster plugin configuration: the extension of this name
         * (null without one, as client-go writes it). */
        if (json_object_set_new(j, "config", json_null()) < 0)
                goto fail;
        size_t i;
        json_t *e;
        json_array_foreach (json_object_get(cluster, "extensions"), i, e) {
                const char *n;
                json_t *ext = json_object_get(e, "extension");
                if (jsonx_string(e, "name", &n) == 0 &&
                    strcmp(n, "client.authentication.k8s.io/exec") == 0 && ext &&
                    json_object_set(j, "config", ext) < 0)
                        goto fail;
        }
        return j;
fail:
        json_decref(j);
        return NULL;
}

static int dir_of(const char *file, char **ret)
{
        _cleanup_free_ char *copy = strdup(file);
        if (!copy)
                return -ENOMEM;
        *ret = strdup(dirname(copy));
        return *ret ? 0 : -ENOMEM;
}

/* The client of the merged configuration's context (context, else the
 * current one); names is what the errors call the configuration when no
 * one file is to blame. */
static int from_merged(json_t *merged, const char *names, const char *context, k8s_client_t *c,
                       hg_error_t *err)
{
        const char *ctx_file = names, *cluster_file = NULL, *user_file = NULL;
        const char *name = context;
        if (!name) {
                json_t *cur = json_object_get(merged, "current-context");
                name = json_string_value(json_object_get(cur, "value"));
                if (!name)
                        return error_set(err, -EINVAL,
                                         "kubeconfig %s: no current context (set "
                                         "current-context or name one with --context)",
                                         names);
                ctx_file = json_string_value(json_object_get(cur, "file"));
        }
        json_t *ctx = merged_get(merged, "contexts", name, &ctx_file);
        if (!ctx && context)
                return error_set(err, -EINVAL, "kubeconfig %s: context \"%.100s\" not found", names,
                                 name);
        if (!ctx)
                return error_set(err, -EINVAL,
                                 "kubeconfig %s: no current context (current-context \"%.100s\" "
                                 "not found)",
                                 ctx_file, name);
        const char *cluster_name, *user_name, *server, *ns;
        json_t *cluster = NULL, *user = NULL;
        if (jsonx_string(ctx, "cluster", &cluster_name) < 0 || !cluster_name[0])
                return error_set(err, -EINVAL, "kubeconfig %s: context \"%.100s\" names no cluster",
                                 ctx_file, name);
        if (!(cluster = merged_get(merged, "clusters", cluster_name, &cluster_file)))
                return error_set(err, -EINVAL,
                                 "kubeconfig %s: cluster \"%.100s\" of context \"%.100s\" not "
                                 "found",
                                 names, cluster_name, name);
        if (jsonx_string(cluster, "server", &server) < 0 || !server[0])
                return error_set(err, -EINVAL, "kubeconfig %s: the context's cluster has no server",
                                 cluster_file);
        if (jsonx_string(ctx, "user", &user_name) < 0 || !user_name[0])
                return error_set(err, -EINVAL, "kubeconfig %s: context \"%.100s\" names no user",
                                 ctx_file, name);
        if (!(user = merged_get(merged, "users", user_name, &user_file)))
                return error_set(err, -EINVAL,
                                 "kubeconfig %s: user \"%.100s\" of context \"%.100s\" not found",
                                 names, user_name, name);
        if (strncmp(server, "https://", 8) != 0)
                return error_set(err, -EINVAL, "kubeconfig %s: server must be https", cluster_file);
        bool insecure = false;
        if (jsonx_bool(cluster, "insecure-skip-tls-verify", &insecure) == 0 && insecure)
                return error_set(err, -EINVAL, "kubeconfig %s: insecure-skip-tls-verify is refused",
                                 cluster_file);
        _cleanup_free_ char *cluster_dir = NULL, *user_dir = NULL;
        if (dir_of(cluster_file, &cluster_dir) < 0 || dir_of(user_file, &user_dir) < 0)
                return -ENOMEM;
        c->server = strndup(server, strlen(server) - (server[strlen(server) - 1] == '/'));
        if (!c->server || !(c->context = strdup(name)))
                return -ENOMEM;
        if (jsonx_string(ctx, "namespace", &ns) == 0 && ns[0] && !(c->namespace = strdup(ns)))
                return -ENOMEM;
        int r = inline_or_file(cluster, "certificate-authority-data", "certificate-authority",
                               cluster_dir, &c->ca_pem, err);
        if (r < 0)
                return error_prefix(err, "kubeconfig %s: ", cluster_file);
        if (!c->ca_pem)
                return error_set(err, -EINVAL,
                                 "kubeconfig %s: the cluster has no certificate authority",
                                 cluster_file);
        r = inline_or_file(user, "client-certificate-data", "client-certificate", user_dir,
                           &c->cert_pem, err);
        if (r == 0)
                r = inline_or_file(user, "client-key-data", "client-key", user_dir, &c->key_pem,
                                   err);
        if (r < 0)
                return error_prefix(err, "kubeconfig %s: ", user_file);
        const char *token;
        if (jsonx_string(user, "token", &token) == 0 && token[0] && !(c->token = strdup(token)))
                return -ENOMEM;
        if (jsonx_string(user, "tokenFile", &token) == 0 && token[0]) {
                /* Relative to the kubeconfig, as kubectl reads it. */
                strbuf_t sb = {0};
                if (strbuf_printf(&sb, "%s%s%s", token[0] == '/' ? "" : user_dir,
                                  token[0] == '/' ? "" : "/", token) < 0)
                        return -ENOMEM;
                c->token_file = strbuf_take(&sb);
                if (!c->token_file)
                        return -ENOMEM;
        }
        json_t *exec = json_object_get(user, "exec");
        if (exec && !json_is_null(exec)) {
                if (!(c->exec = calloc(1, sizeof(*c->exec))))
                        return -ENOMEM;
                r = execcred_config_parse(exec, user_dir, c->exec, err);
                if (r < 0) {
                        free(c->exec);
                        c->exec = NULL;
                        return error_prefix(err, "kubeconfig %s: user \"%.100s\": ", user_file,
                                            user_name);
                }
                _cleanup_json_ json_t *info = exec_cluster_info(cluster, server, c->ca_pem);
                if (!info || !(c->exec_info = execcred_exec_info(c->exec, info)))
                        return -ENOMEM;
        } else if (json_object_get(user, "auth-provider")) {
                return error_set(err, -EINVAL,
                                 "kubeconfig %s: user \"%.100s\": auth-provider is not supported "
                                 "(kubectl dropped it too): use an exec plugin (on GKE, "
                                 "gke-gcloud-auth-plugin: gcloud container clusters "
                                 "get-credentials writes one)",
                                 user_file, user_name);
        }
        return 0;
}

/* Loads files in order into one configuration and builds the client of
 * context. skip_missing: files that do not exist are passed over (as in
 * $KUBECONFIG); none left is -ENOENT. */
static int from_kubeconfigs(char *const *files, size_t n, bool skip_missing, const char *context,
                            k8s_client_t *c, hg_error_t *err)
{
        _cleanup_json_ json_t *merged =
            json_pack("{s:{}, s:{}, s:{}}", "clusters", "contexts", "users");
        _cleanup_strbuf_ strbuf_t names = {0};
        if (!merged)
                return -ENOMEM;
        size_t loaded = 0;
        for (size_t i = 0; i < n; i++) {
                if (strbuf_printf(&names, "%s%s", names.len ? ":" : "", files[i]) < 0)
                        return -ENOMEM;
                int r = load_file(merged, files[i], err);
                if (r == -ENOENT && skip_missing)
                        continue;
                if (r < 0)
                        return r;
                loaded++;
        }
        if (loaded == 0) /* only when skipping missing files */
                return error_set(err, -ENODATA, "kubeconfig %s: no such file", names.data);
        return from_merged(merged, names.data, context, c, err);
}

/* The files of a colon-separated list: empty entries dropped, each file
 * once (the first time it is named), at most KUBECONFIG_MAX_FILES. */
static int split_list(const char *list, char ***ret, size_t *ret_n, hg_error_t *err)
{
        size_t n = 0;
        char **v = calloc(KUBECONFIG_MAX_FILES + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (const char *p = list; *p;) {
                size_t len = strcspn(p, ":");
                bool dup = false;
                for (size_t i = 0; i < n && !dup; i++)
                        dup = strlen(v[i]) == len && strncmp(v[i], p, len) == 0;
                if (len > 0 && !dup) {
                        if (n == KUBECONFIG_MAX_FILES) {
                                for (size_t i = 0; i < n; i++)
                                        free(v[i]);
                                free(v);
                                return error_set(err, -E2BIG, "kubeconfig: more than %d files",
                                                 KUBECONFIG_MAX_FILES);
                        }
                        if (!(v[n++] = strndup(p, len))) {
                                for (size_t i = 0; i < n; i++)
                                        free(v[i]);
                                free(v);
                                return -ENOMEM;
                        }
                }
                p += len + (p[len] == ':');
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

static void free_list(char **v)
{
        for (char **p = v; p && *p; p++)
                free(*p);
        free(v);
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
        _cleanup_(cleanup_clientp) k8s_client_t *c = client_alloc();
        if (!c)
                return -ENOMEM;
        int r = from_cluster(c, token_file, token, ca_file, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

static int new_from_files(char *const *files, size_t n, bool skip_missing, const char *context,
                          k8s_client_t **ret, hg_error_t *err)
{
        _cleanup_(cleanup_clientp) k8s_client_t *c = client_alloc();
        if (!c)
                return -ENOMEM;
        int r = from_kubeconfigs(files, n, skip_missing, context, c, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(c);
        return 0;
}

int k8s_client_new_context(const char *kubeconfig, const char *context, k8s_client_t **ret,
                           hg_error_t *err)
{
        if (!kubeconfig || !kubeconfig[0]) {
                if (context && context[0])
                        return error_set(err, -EINVAL,
                                         "context \"%.100s\" named, but no kubeconfig to find it "
                                         "in",
                                         context);
                return k8s_client_new_in_cluster(K8S_SA_DIR "/token", NULL, K8S_SA_DIR "/ca.crt",
                                                 ret, err);
        }
        char **files = NULL;
        size_t n = 0;
        int r = split_list(kubeconfig, &files, &n, err);
        if (r < 0)
                return r;
        if (n == 0)
                r = error_set(err, -EINVAL, "kubeconfig \"%.100s\" names no file", kubeconfig);
        else
                r = new_from_files(files, n, false, context && context[0] ? context : NULL, ret,
                                   err);
        free_list(files);
        return r;
}

int k8s_client_new(const char *kubeconfig, k8s_client_t **ret, hg_error_t *err)
{
        return k8s_client_new_context(kubeconfig, NULL, ret, err);
}

int k8s_client_new_kubectl(const char *kubeconfig, const char *context, k8s_client_t **ret,
                           hg_error_t *err)
{
        if (context && !context[0])
                context = NULL;
        /* 1. --kubeconfig: that one file, which must exist. */
        if (kubeconfig && kubeconfig[0]) {
                char *one[] = {(char *)kubeconfig, NULL};
                return new_from_files(one, 1, false, context, ret, err);
        }
        /* 2. $KUBECONFIG: the list merged, missing files passed over. */
        const char *env = getenv("KUBECONFIG");
        bool in_cluster = getenv("KUBERNETES_SERVICE_HOST") != NULL;
        if (env && env[0]) {
                char **files = NULL;
                size_t n = 0;
                int r = split_list(env, &files, &n, err);
                if (r < 0)
                        return r;
                r = new_from_files(files, n, true, context, ret, err);
                free_list(files);
                if (r != -ENODATA)
                        return r;
                /* None of them exists: in a cluster, its own credentials
                 * (as kubectl falls back); elsewhere an error. */
                if (!in_cluster || context)
                        return error_set(err, -ENOENT,
                                         "none of the files in $KUBECONFIG (%.300s) exists", env);
        } else if (!in_cluster) {
                /* 3. ~/.kube/config, outside a cluster only: a pod's home
                 * may be written by whoever runs there, its service account
                 * is what the pod was given. */
                const char *home = getenv("HOME");
                _cleanup_strbuf_ strbuf_t path = {0};
                struct stat st;
                if (home && home[0] && strbuf_printf(&path, "%s/.kube/config", home) == 0 &&
                    stat(path.data, &st) == 0) {
                        char *one[] = {path.data, NULL};
                        return new_from_files(one, 1, false, context, ret, err);
                }
        }
        /* 4. In a cluster: the pod's service account. */
        if (context)
                return error_set(err, -EINVAL,
                                 "context \"%.100s\" named, but no kubeconfig to find it in "
                                 "(--kubeconfig, $KUBECONFIG, ~/.kube/config)",
                                 context);
        return k8s_client_new_in_cluster(K8S_SA_DIR "/token", NULL, K8S_SA_DIR "/ca.crt", ret, err);
}

const char *k8s_client_server(const k8s_client_t *c)
{
        return c->server;
}

const char *k8s_client_context(const k8s_client_t *c)
{
        return c->context;
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

/* The Authorization header: the kubeconfig's tokenFile (re-read), else its
 * token, else the plugin's (exec_token), else none. */
static int bearer_header(k8s_client_t *c, const char *exec_token, struct curl_slist **headers,
                         hg_error_t *err)
{
        _cleanup_free_ char *file_token = NULL;
        const char *token = c->token ? c->token : exec_token;
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

static void execcred_clearp(execcred_t *e)
{
        execcred_clear(e);
}

static int dup_or_null(const char *s, char **ret)
{
        *ret = s ? strdup(s) : NULL;
        return !s || *ret ? 0 : -ENOMEM;
}

/* The plugin's credential for one request, copied into *ret: the cached
 * one while it has not expired, else a new run. stale: the request made
 * with generation used_gen was refused (401), so that one is dropped unless
 * another request has replaced it meanwhile. */
static int plugin_credential(k8s_client_t *c, bool stale, unsigned long used_gen, execcred_t *ret,
                             unsigned long *ret_gen, hg_error_t *err)
{
        pthread_mutex_lock(&c->lock);
        if (c->cred_valid && ((stale && c->cred_gen == used_gen) ||
                              (c->cred.expiry && time(NULL) >= c->cred.expiry))) {
                execcred_clear(&c->cred);
                c->cred_valid = false;
        }
        int r = 0;
        if (!c->cred_valid) {
                execcred_t fresh = {0};
                r = execcred_run(c->exec, c->exec_info, EXECCRED_TIMEOUT_MS, &fresh, err);
                if (r == 0) {
                        c->cred = fresh;
                        c->cred_valid = true;
                        c->cred_gen++;
                }
        }
        if (r == 0) {
                *ret = (execcred_t){.expiry = c->cred.expiry};
                if (dup_or_null(c->cred.token, &ret->token) < 0 ||
                    dup_or_null(c->cred.cert_pem, &ret->cert_pem) < 0 ||
                    dup_or_null(c->cred.key_pem, &ret->key_pem) < 0) {
                        execcred_clear(ret);
                        r = -ENOMEM;
                }
                *ret_gen = c->cred_gen;
        }
        pthread_mutex_unlock(&c->lock);
        return r;
}

/* The connection was made but the exchange broke off part way (reset, cut
 * short; seen in CI over h2: the API server's 401 to a POST, a GET's
 * body). Worth another try when the request is safe to send again. Not a
 * connection that could not be made (refused, or timed out: that spends
 * the whole REQUEST_TIMEOUT_S, and the probe stops at the first request
 * without an answer so that an unreachable server costs it one timeout,
 * not three). Never an HTTP status: that is an answer, the caller's to
 * judge. */
static bool exchange_broke(CURLcode cc)
{
        return cc == CURLE_PARTIAL_FILE || cc == CURLE_GOT_NOTHING || cc == CURLE_RECV_ERROR ||
               cc == CURLE_SEND_ERROR || cc == CURLE_HTTP2 || cc == CURLE_HTTP2_STREAM;
}

/* Sending twice changes nothing: reads, and POSTs to the review kinds of
 * authentication.k8s.io and authorization.k8s.io (token, access, rules and
 * self-subject reviews), which the API server answers without storing
 * anything. Those two groups serve nothing else; another group's plural
 * that ends in "reviews" (a custom resource) may well be stored. */
static bool starts_with(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool replayable(const char *method, const char *path)
{
        if (strcmp(method, "GET") == 0)
                return true;
        bool review_group = starts_with(path, "/apis/authentication.k8s.io/") ||
                            starts_with(path, "/apis/authorization.k8s.io/");
        size_t n = strcspn(path, "?");
        return strcmp(method, "POST") == 0 && review_group && n >= 7 &&
               strncmp(path + n - 7, "reviews", 7) == 0;
}

/* Whether the plugin runs: when it gives what the kubeconfig does not. */
static bool uses_plugin(const k8s_client_t *c)
{
        return c->exec && (!(c->token || c->token_file) || !(c->cert_pem && c->key_pem));
}

/* The connection's policy, the same for every request and for the exec
 * WebSocket: HTTPS to url only, HTTP/1.1, the CA, verification, the client
 * certificate (the kubeconfig's, else the plugin's pc). */
static CURLcode set_connection(k8s_client_t *c, CURL *h, const char *url, const execcred_t *pc)
{
        const char *cert_pem = c->cert_pem, *key_pem = c->key_pem;
        if (!(cert_pem && key_pem) && pc->cert_pem && pc->key_pem)
                cert_pem = pc->cert_pem, key_pem = pc->key_pem;
        struct curl_blob ca = {c->ca_pem, strlen(c->ca_pem), CURL_BLOB_COPY};
        CURLcode cc = CURLE_OK;
#define SET(opt, val)       \
        if (cc == CURLE_OK) \
        cc = curl_easy_setopt(h, opt, val)
        SET(CURLOPT_URL, url);
        SET(CURLOPT_PROTOCOLS_STR, "https");
        /* HTTP/1.1, not h2: each request has its own connection, so h2's
         * streams buy nothing, and the API server's early answer to a POST
         * (a 401 before it reads the body) ends its h2 stream with a reset
         * that libcurl reports as a partial transfer (seen in CI, three
         * times in a row). Over HTTP/1.1 that answer arrives whole. The
         * exec WebSocket's upgrade is HTTP/1.1 only, and ALPN is fixed when
         * the connection is made. */
        SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        SET(CURLOPT_CAINFO_BLOB, &ca);
        SET(CURLOPT_SSL_VERIFYPEER, 1L);
        SET(CURLOPT_SSL_VERIFYHOST, 2L);
        SET(CURLOPT_NOSIGNAL, 1L);
        if (cert_pem && key_pem) {
                struct curl_blob cert = {(void *)cert_pem, strlen(cert_pem), CURL_BLOB_COPY};
                struct curl_blob key = {(void *)key_pem, strlen(key_pem), CURL_BLOB_COPY};
                SET(CURLOPT_SSLCERT_BLOB, &cert);
                SET(CURLOPT_SSLCERTTYPE, "PEM");
                SET(CURLOPT_SSLKEY_BLOB, &key);
                SET(CURLOPT_SSLKEYTYPE, "PEM");
        }
#undef SET
        return cc;
}

/* One HTTP exchange with the credentials of the kubeconfig, and the
 * plugin's (pc) where the kubeconfig has none of that kind. */
static int perform(k8s_client_t *c, const char *method, const char *path, const char *content_type,
                   const char *body, const execcred_t *pc, long *ret_status, json_t **ret_body,
                   CURLcode *ret_cc, hg_error_t *err)
{
        _cleanup_(cleanup_curlp) CURL *h = curl_easy_init();
        _cleanup_(cleanup_slistp) struct curl_slist *headers = NULL;
        _cleanup_strbuf_ strbuf_t url = {0};
        _cleanup_strbuf_ strbuf_t ct = {0};
        answer_t a = {0};
        long timeout_ms = REQUEST_TIMEOUT_S * 1000;
        if (c->deadline_ms) {
                int64_t left = c->deadline_ms - monotonic_ms();
                if (left <= 0)
                        return error_set(err, -ETIMEDOUT, "%s %s: no time left before the deadline",
                                         method, path);
                if (left < timeout_ms)
                        timeout_ms = (long)left;
        }
        if (!h || strbuf_printf(&url, "%s%s", c->server, path) < 0 ||
            strbuf_printf(&ct, "Content-Type: %s",
                          content_type ? content_type : "application/json") < 0)
                return -ENOMEM;
        headers = curl_slist_append(NULL, "Accept: application/json");
        if (!headers || (body && !curl_slist_append(headers, ct.data)))
                return -ENOMEM;
        int r = bearer_header(c, pc->token, &headers, err);
        if (r < 0)
                return r;
        CURLcode cc = set_connection(c, h, url.data, pc);
#define SET(opt, val)       \
        if (cc == CURLE_OK) \
        cc = curl_easy_setopt(h, opt, val)
        SET(CURLOPT_CUSTOMREQUEST, method);
        SET(CURLOPT_HTTPHEADER, headers);
        SET(CURLOPT_TIMEOUT_MS, timeout_ms);
        SET(CURLOPT_WRITEFUNCTION, on_data);
        SET(CURLOPT_WRITEDATA, &a);
        if (body) {
                SET(CURLOPT_POSTFIELDS, body);
                SET(CURLOPT_POSTFIELDSIZE, (long)strlen(body));
        }
#undef SET
        if (cc == CURLE_OK)
                cc = curl_easy_perform(h);
        *ret_cc = cc;
        if (cc != CURLE_OK) {
                strbuf_free(&a.data);
                return error_set(err, exchange_broke(cc) ? -ECONNRESET : -EIO, "%s %s: %s", method,
                                 path, a.too_big ? "answer too large" : curl_easy_strerror(cc));
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

/* Logs that a request is sent again, and why (the decision is made here). */
static void log_retry(const char *method, const char *path, CURLcode cc, int retry)
{
        log_event(LOG_LEVEL_WARN, "API request sent again after its exchange broke off",
                  json_pack("{s:s, s:s, s:s, s:i, s:i}", "method", method, "path", path, "error",
                            curl_easy_strerror(cc), "retry", retry, "max_retries",
                            MAX_BROKEN_RETRIES));
}

int k8s_request(k8s_client_t *c, const char *method, const char *path, const char *content_type,
                const char *body, long *ret_status, json_t **ret_body, hg_error_t *err)
{
        /* The plugin runs when it gives what the kubeconfig does not. */
        bool plugin = uses_plugin(c);
        unsigned long gen = 0;
        int retries = 0;
        for (int attempt = 0;; attempt++) {
                _cleanup_(execcred_clearp) execcred_t pc = {0};
                int r = plugin ? plugin_credential(c, attempt > 0, gen, &pc, &gen, err) : 0;
                if (r < 0)
                        return r;
                long status = 0;
                json_t *j = NULL;
                CURLcode cc = CURLE_OK;
                hg_error_t failure = {0};
                r = perform(c, method, path, content_type, body, &pc, &status, &j, &cc, &failure);
                if (exchange_broke(cc) && replayable(method, path) &&
                    retries < MAX_BROKEN_RETRIES) {
                        retries++;
                        log_retry(method, path, cc, retries);
                        attempt--; /* not a refusal: the plugin's credential stands */
                        struct timespec pause = {0, 100L * 1000 * 1000 * retries};
                        (void)nanosleep(&pause, NULL);
                        continue;
                }
                if (r < 0 && failure.code == 0)
                        return r; /* out of memory: no message */
                if (r < 0 && retries > 0)
                        return error_set(err, r, "%s (sent %d times)", failure.message,
                                         retries + 1);
                if (r < 0) {
                        if (err)
                                *err = failure;
                        return r;
                }
                /* Refused: the credential may have been revoked or expired
                 * early. Once more with a new one from the plugin. */
                if (status == 401 && plugin && attempt == 0) {
                        json_decref(j);
                        continue;
                }
                *ret_status = status;
                *ret_body = j;
                return 0;
        }
}

int k8s_client_setup_raw(k8s_client_t *c, void *h, const char *path, bool refused,
                         unsigned long *io_gen, char **ret_bearer, hg_error_t *err)
{
        _cleanup_(execcred_clearp) execcred_t pc = {0};
        _cleanup_strbuf_ strbuf_t url = {0};
        _cleanup_free_ char *file_token = NULL;
        if (uses_plugin(c)) {
                int r = plugin_credential(c, refused, *io_gen, &pc, io_gen, err);
                if (r < 0)
                        return r;
        }
        if (strbuf_printf(&url, "%s%s", c->server, path) < 0)
                return -ENOMEM;
        CURLcode cc = set_connection(c, h, url.data, &pc);
        if (cc != CURLE_OK)
                return error_set(err, -EIO, "%s: %s", path, curl_easy_strerror(cc));
        const char *token = c->token ? c->token : pc.token;
        if (c->token_file) {
                int r = read_text(c->token_file, &file_token, err);
                if (r < 0)
                        return r;
                file_token[strcspn(file_token, "\r\n")] = '\0';
                token = file_token;
        }
        char *copy = NULL;
        if (token && !(copy = strdup(token)))
                return -ENOMEM;
        if (file_token)
                explicit_bzero(file_token, strlen(file_token));
        *ret_bearer = copy;
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
