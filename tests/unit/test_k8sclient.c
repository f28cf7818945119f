/* Unit tests for common/k8sclient without an API server: loading kubeconfig
 * files (inline data, paths relative to the file, tokens, namespaces), the
 * configurations it refuses, in-cluster detection, an in-cluster client
 * with another token and CA, several files merged as kubectl merges them,
 * contexts by name, kubectl's search order ($KUBECONFIG, ~/.kube/config,
 * in-cluster), exec plugins run at requests (cached until expiry, the
 * cluster in their exec info), a transport failure and Status messages;
 * and, against a TLS server of its own (a thread on 127.0.0.1 with a
 * certificate made here) that cuts answers short, which requests are sent
 * again (GET and reviews, at most twice more, each retry logged) and which
 * not (other methods, another group's "reviews", an HTTP error answer).
 * Loading does not parse PEM, so any PEM-shaped text does. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "base64.h"
#include "cleanup.h"
#include "fileio.h"
#include "k8sclient.h"
#include "strbuf.h"
#include "strparse.h"
#include "unit.h"

#define CLOSED_SERVER "https://127.0.0.1:1"
#define CA_PEM        "-----BEGIN CERTIFICATE-----\nMIIBcA==\n-----END CERTIFICATE-----\n"
#define CERT_PEM      "-----BEGIN CERTIFICATE-----\nMIIBdA==\n-----END CERTIFICATE-----\n"
#define KEY_PEM       "-----BEGIN PRIVATE KEY-----\nMIGHAg==\n-----END PRIVATE KEY-----\n"
#define SA_CA         "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"

static char dir[4096];

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
        /* Relative paths must resolve against the kubeconfig, never the
         * working directory: run from somewhere unrelated. */
        ck_assert_int_eq(chdir("/"), 0);
        ck_assert_int_eq(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
        ck_assert_int_eq(unsetenv("KUBERNETES_SERVICE_PORT"), 0);
}

static void teardown(void)
{
        unit_rmtree(dir);
}

static void client_freep(k8s_client_t **c)
{
        k8s_client_free(*c);
}
#define _client_ __attribute__((cleanup(client_freep)))

/* Writes text to dir/name (subdirectories made as needed); the path goes
 * to out (size 4200). */
static const char *put(const char *name, const char *text, char *out)
{
        (void)snprintf(out, 4200, "%s/%s", dir, name);
        for (char *slash = strchr(out + strlen(dir) + 1, '/'); slash;
             slash = strchr(slash + 1, '/')) {
                *slash = '\0';
                ck_assert(mkdir(out, 0700) == 0 || errno == EEXIST);
                *slash = '/';
        }
        ck_assert_int_eq(file_write_atomic(out, text, strlen(text), 0600, 0), 0);
        return out;
}

static char *b64(const char *text)
{
        char *s = base64_encode(text, strlen(text));
        ck_assert_ptr_nonnull(s);
        return s;
}

/* A kubeconfig with one context "ctx" -> cluster "c1" / user "u1". Each
 * argument is YAML lines to add (indented already) or NULL. */
static char *kubeconfig(const char *current, const char *context_extra, const char *cluster,
                        const char *user)
{
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "apiVersion: v1\nkind: Config\n"), 0);
        if (current)
                ck_assert_int_eq(strbuf_printf(&sb, "current-context: %s\n", current), 0);
        ck_assert_int_eq(strbuf_printf(&sb,
                                       "contexts:\n- name: ctx\n  context:\n    cluster: c1\n"
                                       "    user: u1\n%s"
                                       "- name: other\n  context:\n    cluster: c1\n"
                                       "    user: u1\n    namespace: elsewhere\n"
                                       "clusters:\n- name: c1\n  cluster:\n%s"
                                       "users:\n- name: u1\n  user:\n%s",
                                       context_extra ? context_extra : "", cluster,
                                       user ? user : "    {}\n"),
                         0);
        return strbuf_take(&sb);
}

/* The cluster lines with the closed server and an inline CA. */
static char *cluster_inline_ca(void)
{
        _cleanup_free_ char *ca = b64(CA_PEM);
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_printf(&sb,
                                       "    server: " CLOSED_SERVER "\n"
                                       "    certificate-authority-data: %s\n",
                                       ca),
                         0);
        return strbuf_take(&sb);
}

/* Writes a kubeconfig to dir/name and loads it; returns the code. */
static int load(const char *name, const char *text, k8s_client_t **ret, hg_error_t *err)
{
        char path[4200];
        return k8s_client_new(put(name, text, path), ret, err);
}

/* Loading must fail with code and a message holding want (and the file's
 * path); *ret stays untouched. */
static void assert_load_fails(const char *text, int code, const char *want)
{
        k8s_client_t *c = (k8s_client_t *)&c;
        hg_error_t err = {0};
        int r = load("bad/kubeconfig", text, &c, &err);
        ck_assert_msg(r == code, "load gave %d, want %d (%s) for:\n%s", r, code, err.message, text);
        ck_assert_ptr_eq(c, (k8s_client_t *)&c);
        ck_assert_int_eq(err.code, code);
        ck_assert_msg_has(err, want);
        ck_assert_msg_has(err, "/bad/kubeconfig");
}

START_TEST(inline_data)
{
        _cleanup_free_ char *cluster = cluster_inline_ca();
        _cleanup_free_ char *cert = b64(CERT_PEM);
        _cleanup_free_ char *key = b64(KEY_PEM);
        char user[1024];
        (void)snprintf(user, sizeof(user),
                       "    client-certificate-data: %s\n    client-key-data: %s\n", cert, key);
        _cleanup_free_ char *text = kubeconfig("ctx", "    namespace: team-a\n", cluster, user);
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(load("kc.yaml", text, &c, &err) == 0, "%s", err.message);
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(k8s_client_namespace(c), "team-a");
}
END_TEST

START_TEST(namespace_of_the_current_context)
{
        _cleanup_free_ char *cluster = cluster_inline_ca();
        /* No namespace in the context: "default". */
        _cleanup_free_ char *plain = kubeconfig("ctx", NULL, cluster, NULL);
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(load("a.yaml", plain, &c, &err) == 0, "%s", err.message);
        ck_assert_str_eq(k8s_client_namespace(c), "default");
        /* The current context's, not another context's. */
        _cleanup_free_ char *other = kubeconfig("other", NULL, cluster, NULL);
        _client_ k8s_client_t *d = NULL;
        ck_assert_msg(load("b.yaml", other, &d, &err) == 0, "%s", err.message);
        ck_assert_str_eq(k8s_client_namespace(d), "elsewhere");
}
END_TEST

START_TEST(file_paths_relative_to_kubeconfig)
{
        char ca[4200], crt[4200], key[4200];
        (void)put("cfg/ca.crt", CA_PEM, ca);
        (void)put("cfg/certs/client.crt", CERT_PEM, crt);
        (void)put("keys/client.key", KEY_PEM, key);
        char cluster[512], user[4600];
        (void)snprintf(cluster, sizeof(cluster),
                       "    server: " CLOSED_SERVER "/\n    certificate-authority: ca.crt\n");
        (void)snprintf(user, sizeof(user),
                       "    client-certificate: certs/client.crt\n    client-key: %s\n", key);
        _cleanup_free_ char *text = kubeconfig("ctx", NULL, cluster, user);
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(load("cfg/kubeconfig", text, &c, &err) == 0, "%s", err.message);

        /* Without the CA file next to it, the error names the resolved path. */
        ck_assert_int_eq(unlink(ca), 0);
        k8s_client_t *d = NULL;
        ck_assert_int_eq(load("cfg/kubeconfig", text, &d, &err), -ENOENT);
        ck_assert_ptr_null(d);
        ck_assert_msg_has(err, ca);
        ck_assert_msg_has(err, "cannot read");
        /* Same for the client certificate. */
        (void)put("cfg/ca.crt", CA_PEM, ca);
        ck_assert_int_eq(unlink(crt), 0);
        ck_assert_int_eq(load("cfg/kubeconfig", text, &d, &err), -ENOENT);
        ck_assert_msg_has(err, crt);
}
END_TEST

/* A GET to the closed server with c; the code, and the message in err. */
static int get(k8s_client_t *c, hg_error_t *err)
{
        long status = -7;
        json_t *body = (json_t *)&status;
        int r = k8s_request(c, "GET", "/api/v1/namespaces/default/secrets/x", NULL, NULL, &status,
                            &body, err);
        if (r < 0) {
                ck_assert_int_eq(status, -7);
                ck_assert_ptr_eq(body, (json_t *)&status);
        }
        return r;
}

START_TEST(token_and_token_file)
{
        _cleanup_free_ char *cluster = cluster_inline_ca();
        _cleanup_free_ char *with_token =
            kubeconfig("ctx", NULL, cluster, "    token: abc.def.ghi\n");
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(load("t.yaml", with_token, &c, &err) == 0, "%s", err.message);
        ck_assert_int_lt(get(c, &err), 0);
        ck_assert_ptr_null(strstr(err.message, "cannot read"));

        /* tokenFile is read for each request: present, then gone. */
        char token_path[4200], user[4400];
        (void)put("tokens/sa-token", "projected-token\n", token_path);
        (void)snprintf(user, sizeof(user), "    tokenFile: %s\n", token_path);
        _cleanup_free_ char *with_file = kubeconfig("ctx", NULL, cluster, user);
        _client_ k8s_client_t *d = NULL;
        ck_assert_msg(load("tf.yaml", with_file, &d, &err) == 0, "%s", err.message);
        ck_assert_int_eq(get(d, &err), -EIO);
        ck_assert_ptr_null(strstr(err.message, "cannot read"));
        ck_assert_int_eq(unlink(token_path), 0);
        ck_assert_int_eq(get(d, &err), -ENOENT);
        ck_assert_msg_has(err, "cannot read");
        ck_assert_msg_has(err, token_path);
}
END_TEST

/* Regression test (this was a bug, now fixed): kubectl (client-go's ResolveLocalPaths) resolves a
 * relative tokenFile against the kubeconfig's directory, like the other
 * file references; k8sclient.c keeps it as given, so it is read relative to
 * the working directory and every request fails. */
START_TEST(relative_token_file)
{
        _cleanup_free_ char *cluster = cluster_inline_ca();
        char token_path[4200];
        (void)put("cfg/token", "projected-token\n", token_path);
        _cleanup_free_ char *text = kubeconfig("ctx", NULL, cluster, "    tokenFile: token\n");
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(load("cfg/kubeconfig", text, &c, &err) == 0, "%s", err.message);
        int r = get(c, &err);
        ck_assert_int_lt(r, 0);
        ck_assert_msg(r == -EIO && !strstr(err.message, "cannot read"),
                      "relative tokenFile not found next to the kubeconfig: %s", err.message);
}
END_TEST

START_TEST(refused_configurations)
{
        _cleanup_free_ char *ca = b64(CA_PEM);
        _cleanup_free_ char *cluster = cluster_inline_ca();
        char buf[1024];

        _cleanup_free_ char *no_current = kubeconfig(NULL, NULL, cluster, NULL);
        assert_load_fails(no_current, -EINVAL, "no current context");
        _cleanup_free_ char *unknown = kubeconfig("nope", NULL, cluster, NULL);
        assert_load_fails(unknown, -EINVAL,
                          "no current context (current-context \"nope\" not found)");

        (void)snprintf(buf, sizeof(buf),
                       "    server: http://127.0.0.1:1\n    certificate-authority-data: %s\n", ca);
        _cleanup_free_ char *http = kubeconfig("ctx", NULL, buf, NULL);
        assert_load_fails(http, -EINVAL, "server must be https");

        (void)snprintf(buf, sizeof(buf), "    certificate-authority-data: %s\n", ca);
        _cleanup_free_ char *no_server = kubeconfig("ctx", NULL, buf, NULL);
        assert_load_fails(no_server, -EINVAL, "has no server");

        (void)snprintf(buf, sizeof(buf),
                       "    server: " CLOSED_SERVER "\n    certificate-authority-data: %s\n"
                       "    insecure-skip-tls-verify: true\n",
                       ca);
        _cleanup_free_ char *insecure = kubeconfig("ctx", NULL, buf, NULL);
        assert_load_fails(insecure, -EINVAL, "insecure-skip-tls-verify is refused");

        _cleanup_free_ char *no_ca =
            kubeconfig("ctx", NULL, "    server: " CLOSED_SERVER "\n", "    token: t\n");
        assert_load_fails(no_ca, -EINVAL, "no certificate authority");

        _cleanup_free_ char *bad_b64 = kubeconfig(
            "ctx", NULL,
            "    server: " CLOSED_SERVER "\n    certificate-authority-data: \"not*base64\"\n",
            NULL);
        assert_load_fails(bad_b64, -EINVAL, "base64");

        _cleanup_free_ char *missing_ca = kubeconfig(
            "ctx", NULL, "    server: " CLOSED_SERVER "\n    certificate-authority: nowhere.crt\n",
            NULL);
        assert_load_fails(missing_ca, -ENOENT, "cannot read");
        assert_load_fails(missing_ca, -ENOENT, "/bad/nowhere.crt");

        assert_load_fails("current-context: [\n", -EINVAL, "kubeconfig");
}
END_TEST

START_TEST(explicit_false_insecure_is_fine)
{
        _cleanup_free_ char *ca = b64(CA_PEM);
        char buf[1024];
        (void)snprintf(buf, sizeof(buf),
                       "    server: " CLOSED_SERVER "\n    certificate-authority-data: %s\n"
                       "    insecure-skip-tls-verify: false\n",
                       ca);
        _cleanup_free_ char *text = kubeconfig("ctx", NULL, buf, NULL);
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(load("kc", text, &c, &err) == 0, "%s", err.message);
}
END_TEST

START_TEST(unreadable_kubeconfig)
{
        char path[4200];
        (void)snprintf(path, sizeof(path), "%s/does-not-exist", dir);
        k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(k8s_client_new(path, &c, &err), -ENOENT);
        ck_assert_ptr_null(c);
        ck_assert_msg_has(err, path);
        /* A directory is not a kubeconfig either. */
        ck_assert_int_lt(k8s_client_new(dir, &c, &err), 0);
        ck_assert_ptr_null(c);
        ck_assert_msg_has(err, dir);
}
END_TEST

START_TEST(in_cluster_needs_service_host)
{
        k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(k8s_client_new(NULL, &c, &err), -ENOENT);
        ck_assert_ptr_null(c);
        ck_assert_msg_has(err, "KUBERNETES_SERVICE_HOST");
        error_clear(&err);
        ck_assert_int_eq(k8s_client_new("", &c, &err), -ENOENT);
        ck_assert_msg_has(err, "KUBERNETES_SERVICE_HOST");
        /* With the variables but without the service account files. */
        if (access(SA_CA, F_OK) == 0)
                return; /* running inside a pod: nothing to check here */
        ck_assert_int_eq(setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1), 0);
        ck_assert_int_eq(setenv("KUBERNETES_SERVICE_PORT", "443", 1), 0);
        ck_assert_int_eq(k8s_client_new(NULL, &c, &err), -ENOENT);
        ck_assert_ptr_null(c);
        ck_assert_msg_has(err, SA_CA);
}
END_TEST

START_TEST(in_cluster_with_another_token)
{
        char ca[4200], token[4200];
        put("vol/ca.crt", CA_PEM, ca);
        put("vol/token", "eyJh.eyJi.c2ln\n", token);
        k8s_client_t *c = NULL;
        hg_error_t err = {0};
        /* Exactly one token source, and a CA. */
        ck_assert_int_eq(k8s_client_new_in_cluster(NULL, NULL, ca, &c, &err), -EINVAL);
        ck_assert_int_eq(k8s_client_new_in_cluster(token, "t", ca, &c, &err), -EINVAL);
        ck_assert_int_eq(k8s_client_new_in_cluster(token, NULL, NULL, &c, &err), -EINVAL);
        ck_assert_ptr_null(c);
        /* The address comes from the environment, as k8s_client_new(NULL). */
        error_clear(&err);
        ck_assert_int_eq(k8s_client_new_in_cluster(token, NULL, ca, &c, &err), -ENOENT);
        ck_assert_msg_has(err, "KUBERNETES_SERVICE_HOST");
        ck_assert_int_eq(setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1), 0);
        ck_assert_int_eq(setenv("KUBERNETES_SERVICE_PORT", "1", 1), 0);
        char missing[4200];
        (void)snprintf(missing, sizeof(missing), "%s/nope/ca.crt", dir);
        error_clear(&err);
        ck_assert_int_eq(k8s_client_new_in_cluster(token, NULL, missing, &c, &err), -ENOENT);
        ck_assert_msg_has(err, missing);
        /* A token file and a static token both reach the (closed) server. */
        const char *tokens[][2] = {{token, NULL}, {NULL, "eyJh.eyJi.c2ln"}};
        for (size_t i = 0; i < 2; i++) {
                _client_ k8s_client_t *k = NULL;
                error_clear(&err);
                ck_assert_msg(k8s_client_new_in_cluster(tokens[i][0], tokens[i][1], ca, &k, &err) ==
                                  0,
                              "%s", err.message);
                if (access("/var/run/secrets/kubernetes.io/serviceaccount/namespace", F_OK) != 0) {
                        ck_assert(!k8s_client_namespace_known(k));
                        ck_assert_str_eq(k8s_client_namespace(k), "default");
                }
                long status = 0;
                json_t *body = NULL;
                ck_assert_int_eq(
                    k8s_request(k, "POST", "/apis/x", NULL, "{}", &status, &body, &err), -EIO);
                ck_assert_msg_has(err, "POST /apis/x: ");
        }
        /* A token file that went away fails the request, not the client. */
        _client_ k8s_client_t *k = NULL;
        ck_assert_int_eq(k8s_client_new_in_cluster(token, NULL, ca, &k, &err), 0);
        ck_assert_int_eq(unlink(token), 0);
        long status = 0;
        json_t *body = NULL;
        error_clear(&err);
        ck_assert_int_lt(k8s_request(k, "GET", "/version", NULL, NULL, &status, &body, &err), 0);
        ck_assert_msg_has(err, token);
}
END_TEST

START_TEST(request_to_closed_port)
{
        _cleanup_free_ char *cluster = cluster_inline_ca();
        _cleanup_free_ char *text = kubeconfig("ctx", NULL, cluster, NULL);
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(load("kc.yaml", text, &c, &err) == 0, "%s", err.message);
        ck_assert_int_eq(get(c, &err), -EIO);
        ck_assert_int_eq(err.code, -EIO);
        ck_assert_msg_has(err, "GET /api/v1/namespaces/default/secrets/x: ");
        ck_assert_uint_gt(strlen(err.message),
                          strlen("GET /api/v1/namespaces/default/secrets/x: "));
        /* Refused: not sent again (an unreachable server costs one try). */
        ck_assert_msg(!strstr(err.message, "sent"), "a GET was sent again: %s", err.message);
        /* With a body, too. */
        long status = -7;
        json_t *body = NULL;
        error_clear(&err);
        ck_assert_int_eq(k8s_request(c, "POST", "/api/v1/namespaces/default/secrets",
                                     "application/json", "{\"kind\":\"Secret\"}", &status, &body,
                                     &err),
                         -EIO);
        ck_assert_ptr_null(body);
        ck_assert_int_eq(status, -7);
        ck_assert_msg_has(err, "POST /api/v1/namespaces/default/secrets: ");
        ck_assert_msg(!strstr(err.message, "sent"), "a POST was sent again: %s", err.message);
        /* And without an error struct. */
        ck_assert_int_eq(k8s_request(c, "GET", "/version", NULL, NULL, &status, &body, NULL), -EIO);
}
END_TEST

START_TEST(status_message)
{
        char buf[32];
        json_t *with = unit_json("{\"kind\":\"Status\",\"message\":\"secrets \\\"x\\\" not found\","
                                 "\"code\":404}");
        ck_assert_str_eq(k8s_status_message(with, 404, buf, sizeof(buf)),
                         "secrets \"x\" not found");
        json_decref(with);
        json_t *without = unit_json("{\"kind\":\"Status\",\"code\":403}");
        ck_assert_str_eq(k8s_status_message(without, 403, buf, sizeof(buf)), "HTTP 403");
        json_decref(without);
        json_t *wrong_type = unit_json("{\"message\":42}");
        ck_assert_str_eq(k8s_status_message(wrong_type, 500, buf, sizeof(buf)), "HTTP 500");
        json_decref(wrong_type);
        json_t *array = unit_json("[\"message\"]");
        ck_assert_str_eq(k8s_status_message(array, 502, buf, sizeof(buf)), "HTTP 502");
        json_decref(array);
        ck_assert_str_eq(k8s_status_message(NULL, 0, buf, sizeof(buf)), "HTTP 0");
        /* A small buffer is cut, still terminated. */
        char tiny[6];
        ck_assert_str_eq(k8s_status_message(NULL, 404, tiny, sizeof(tiny)), "HTTP ");
}
END_TEST

START_TEST(free_null)
{
        k8s_client_free(NULL);
}
END_TEST

/* ---- several files, contexts, plugins ---- */

/* Two kubeconfigs in their own directories. a: current ctx-a (c1, u1,
 * ns-a), c1 with an inline CA. b: current ctx-b (c2, u2, ns-b), its own
 * ctx-a (c2, u2, from-b), a c1 and c2 whose CA file is next to b only. */
static void two_files(char *a, char *b)
{
        _cleanup_free_ char *ca = b64(CA_PEM);
        char text[4096], ca_path[4200];
        (void)snprintf(text, sizeof(text),
                       "current-context: ctx-a\n"
                       "contexts:\n"
                       "- {name: ctx-a, context: {cluster: c1, user: u1, namespace: ns-a}}\n"
                       "clusters:\n"
                       "- {name: c1, cluster: {server: 'https://127.0.0.1:1',"
                       " certificate-authority-data: %s}}\n"
                       "users:\n- {name: u1, user: {}}\n",
                       ca);
        (void)put("a/config", text, a);
        (void)put("b/ca.crt", CA_PEM, ca_path);
        (void)put("b/config",
                  "current-context: ctx-b\n"
                  "contexts:\n"
                  "- {name: ctx-b, context: {cluster: c2, user: u2, namespace: ns-b}}\n"
                  "- {name: ctx-a, context: {cluster: c2, user: u2, namespace: from-b}}\n"
                  "clusters:\n"
                  "- {name: c1, cluster: {server: 'https://b-c1.invalid', certificate-authority: "
                  "ca.crt}}\n"
                  "- {name: c2, cluster: {server: 'https://b-c2.invalid/', certificate-authority: "
                  "ca.crt}}\n"
                  "users:\n- {name: u2, user: {token: t}}\n",
                  b);
}

/* Loads list (colon-separated) with context; checks what it chose. */
static void assert_chooses(const char *list, const char *context, const char *want_context,
                           const char *want_ns, const char *want_server)
{
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(k8s_client_new_context(list, context, &c, &err) == 0, "%s: %s", list,
                      err.message);
        ck_assert_str_eq(k8s_client_context(c), want_context);
        ck_assert_str_eq(k8s_client_namespace(c), want_ns);
        ck_assert_str_eq(k8s_client_server(c), want_server);
}

START_TEST(merged_first_file_wins)
{
        char a[4200], b[4200], ab[8500], ba[8500], list[17000];
        two_files(a, b);
        (void)snprintf(ab, sizeof(ab), "%s:%s", a, b);
        (void)snprintf(ba, sizeof(ba), "%s:%s", b, a);
        /* current-context: the first file's that sets one. */
        assert_chooses(ab, NULL, "ctx-a", "ns-a", "https://127.0.0.1:1");
        assert_chooses(ba, NULL, "ctx-b", "ns-b", "https://b-c2.invalid");
        /* A context by name; b's paths resolve next to b. */
        assert_chooses(ab, "ctx-b", "ctx-b", "ns-b", "https://b-c2.invalid");
        /* The first file's stanza of a name, whole. */
        assert_chooses(ba, "ctx-a", "ctx-a", "from-b", "https://b-c2.invalid");
        assert_chooses(ab, "ctx-a", "ctx-a", "ns-a", "https://127.0.0.1:1");
        /* Empty entries and repeats are passed over. */
        (void)snprintf(list, sizeof(list), ":%s::%s:%s:", a, b, a);
        assert_chooses(list, NULL, "ctx-a", "ns-a", "https://127.0.0.1:1");
        /* One file alone (b) names its own CA relative to itself. */
        assert_chooses(b, NULL, "ctx-b", "ns-b", "https://b-c2.invalid");
        /* Every file of the webhook's list must exist. */
        (void)snprintf(list, sizeof(list), "%s:%s/missing", a, dir);
        k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(k8s_client_new(list, &c, &err), -ENOENT);
        ck_assert_msg_has(err, "/missing");
        ck_assert_ptr_null(c);
}
END_TEST

START_TEST(merged_stanzas_are_not_merged)
{
        /* x's c1 has no CA, y's c1 has one: x's is taken whole, so there is
         * none (kubectl: "never merge the stanzas"). */
        _cleanup_free_ char *ca = b64(CA_PEM);
        char x[4200], y[4200], text[2048], list[8500];
        (void)put("x",
                  "current-context: k\ncontexts:\n- {name: k, context: {cluster: c1, user: u}}\n"
                  "clusters:\n- {name: c1, cluster: {server: 'https://x.invalid'}}\n"
                  "users:\n- {name: u, user: {}}\n",
                  x);
        (void)snprintf(text, sizeof(text),
                       "clusters:\n- {name: c1, cluster: {server: 'https://y.invalid', "
                       "certificate-authority-data: %s}}\n",
                       ca);
        (void)put("y", text, y);
        (void)snprintf(list, sizeof(list), "%s:%s", x, y);
        k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(k8s_client_new(list, &c, &err), -EINVAL);
        ck_assert_msg_has(err, "no certificate authority");
        ck_assert_msg_has(err, x);
        (void)snprintf(list, sizeof(list), "%s:%s", y, x);
        assert_chooses(list, NULL, "k", "default", "https://y.invalid");
}
END_TEST

START_TEST(context_selection_errors)
{
        char a[4200], b[4200], ab[8500], p[4200];
        two_files(a, b);
        (void)snprintf(ab, sizeof(ab), "%s:%s", a, b);
        struct {
                const char *file_text, *context, *want;
        } cases[] = {
            {NULL, "nope", "context \"nope\" not found"},
            {"current-context: k\ncontexts:\n- {name: k, context: {cluster: gone, user: u}}\n",
             NULL, "cluster \"gone\" of context \"k\" not found"},
            {"current-context: k\ncontexts:\n- {name: k, context: {cluster: c1, user: gone}}\n",
             NULL, "user \"gone\" of context \"k\" not found"},
            {"current-context: k\ncontexts:\n- {name: k, context: {cluster: c1}}\n", NULL,
             "context \"k\" names no user"},
            {"current-context: k\ncontexts:\n- {name: k, context: {user: u1}}\n", NULL,
             "context \"k\" names no cluster"},
            {"contexts:\n- {name: k, context: {cluster: c1, user: u1}}\n"
             "- {name: k, context: {cluster: c1, user: u1}}\n",
             "k", "two contexts named \"k\""},
            {"contexts:\n- {context: {cluster: c1, user: u1}}\n", "k", "contexts[0] has no name"},
            {"contexts: {k: 1}\n", "k", "contexts must be a list"},
            {"- a\n- b\n", "k", "not a mapping"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                char list[8500];
                if (cases[i].file_text) {
                        (void)put("first", cases[i].file_text, p);
                        (void)snprintf(list, sizeof(list), "%s:%s", p, ab);
                } else {
                        (void)snprintf(list, sizeof(list), "%s", ab);
                }
                k8s_client_t *c = NULL;
                hg_error_t err = {0};
                ck_assert_int_eq(k8s_client_new_context(list, cases[i].context, &c, &err), -EINVAL);
                ck_assert_ptr_null(c);
                ck_assert_msg_has(err, cases[i].want);
        }
        /* An empty file is an empty configuration. */
        char list[8500];
        (void)put("empty", "# nothing\n", p);
        (void)snprintf(list, sizeof(list), "%s:%s", p, a);
        assert_chooses(list, NULL, "ctx-a", "ns-a", "https://127.0.0.1:1");
        /* No kubeconfig, but a context named. */
        k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_int_eq(k8s_client_new_context("", "ctx-a", &c, &err), -EINVAL);
        ck_assert_msg_has(err, "no kubeconfig");
}
END_TEST

static int new_kubectl(const char *flag, const char *context, k8s_client_t **ret, hg_error_t *err)
{
        return k8s_client_new_kubectl(flag, context, ret, err);
}

START_TEST(kubectl_search_order)
{
        char a[4200], b[4200], env[9000], home[4200], kc[4200];
        two_files(a, b);
        (void)snprintf(home, sizeof(home), "%s/home", dir);
        ck_assert_int_eq(setenv("HOME", home, 1), 0);
        hg_error_t err = {0};
        /* $KUBECONFIG: merged, missing files passed over. */
        (void)snprintf(env, sizeof(env), "%s/missing:%s:%s", dir, b, a);
        ck_assert_int_eq(setenv("KUBECONFIG", env, 1), 0);
        _client_ k8s_client_t *c1 = NULL;
        ck_assert_msg(new_kubectl(NULL, NULL, &c1, &err) == 0, "%s", err.message);
        ck_assert_str_eq(k8s_client_context(c1), "ctx-b");
        _client_ k8s_client_t *c2 = NULL;
        ck_assert_msg(new_kubectl("", "ctx-a", &c2, &err) == 0, "%s", err.message);
        ck_assert_str_eq(k8s_client_namespace(c2), "from-b");
        /* --kubeconfig: only that file, no merging. */
        _client_ k8s_client_t *c3 = NULL;
        ck_assert_msg(new_kubectl(a, NULL, &c3, &err) == 0, "%s", err.message);
        ck_assert_str_eq(k8s_client_context(c3), "ctx-a");
        k8s_client_t *c = NULL;
        ck_assert_int_eq(new_kubectl(a, "ctx-b", &c, &err), -EINVAL);
        ck_assert_msg_has(err, "context \"ctx-b\" not found");
        ck_assert_int_eq(new_kubectl(env, NULL, &c, &err), -ENOENT); /* a file, not a list */
        /* None of $KUBECONFIG's files: an error outside a cluster... */
        (void)snprintf(env, sizeof(env), "%s/m1:%s/m2", dir, dir);
        ck_assert_int_eq(setenv("KUBECONFIG", env, 1), 0);
        ck_assert_int_eq(new_kubectl(NULL, NULL, &c, &err), -ENOENT);
        ck_assert_msg_has(err, "none of the files in $KUBECONFIG");
        /* ... and in one, the pod's own credentials (none here: its CA). */
        ck_assert_int_eq(setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1", 1), 0);
        ck_assert_int_eq(setenv("KUBERNETES_SERVICE_PORT", "1", 1), 0);
        ck_assert_int_lt(new_kubectl(NULL, NULL, &c, &err), 0);
        ck_assert_msg_has(err, SA_CA);
        ck_assert_int_eq(new_kubectl(NULL, "ctx-a", &c, &err), -ENOENT);
        ck_assert_msg_has(err, "none of the files in $KUBECONFIG");
        /* No $KUBECONFIG: ~/.kube/config, but only outside a cluster. */
        ck_assert_int_eq(unsetenv("KUBECONFIG"), 0);
        _cleanup_free_ char *b_text = NULL;
        size_t len;
        ck_assert_int_eq(file_read_bounded(b, 65536, &b_text, &len), 0);
        (void)put("home/.kube/ca.crt", CA_PEM, kc);
        (void)put("home/.kube/config", b_text, kc);
        ck_assert_int_lt(new_kubectl(NULL, NULL, &c, &err), 0);
        ck_assert_msg_has(err, SA_CA);
        ck_assert_int_eq(new_kubectl(NULL, "ctx-b", &c, &err), -EINVAL);
        ck_assert_msg_has(err, "no kubeconfig to find it in");
        ck_assert_int_eq(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
        _client_ k8s_client_t *c4 = NULL;
        ck_assert_msg(new_kubectl(NULL, NULL, &c4, &err) == 0, "%s", err.message);
        ck_assert_str_eq(k8s_client_context(c4), "ctx-b");
        /* Nothing at all: the in-cluster error. */
        ck_assert_int_eq(unlink(kc), 0);
        ck_assert_int_eq(new_kubectl(NULL, NULL, &c, &err), -ENOENT);
        ck_assert_msg_has(err, "KUBERNETES_SERVICE_HOST unset");
        ck_assert_ptr_null(c);
}
END_TEST

/* A kubeconfig in dir/kc/ whose user runs exec (YAML lines, indented for
 * the user mapping); the cluster carries a per-cluster plugin config. */
static const char *exec_kubeconfig(const char *exec_lines, char *out)
{
        _cleanup_free_ char *ca = b64(CA_PEM);
        char text[8192];
        (void)snprintf(text, sizeof(text),
                       "current-context: ctx\n"
                       "contexts:\n- {name: ctx, context: {cluster: c1, user: u1}}\n"
                       "clusters:\n- name: c1\n  cluster:\n    server: " CLOSED_SERVER "\n"
                       "    certificate-authority-data: %s\n"
                       "    extensions:\n    - name: client.authentication.k8s.io/exec\n"
                       "      extension: {audience: hangar}\n"
                       "users:\n- name: u1\n  user:\n    exec:\n%s",
                       ca, exec_lines);
        return put("kc/config", text, out);
}

START_TEST(exec_stanza_errors)
{
        char p[4200];
        k8s_client_t *c = NULL;
        hg_error_t err = {0};
        (void)exec_kubeconfig(
            "      command: x\n      apiVersion: client.authentication.k8s.io/v1\n", p);
        ck_assert_int_eq(k8s_client_new(p, &c, &err), -EINVAL);
        ck_assert_msg_has(err, p);
        ck_assert_msg_has(err, "user \"u1\": exec: interactiveMode must be set");
        (void)exec_kubeconfig(
            "      command: x\n      apiVersion: client.authentication.k8s.io/v1\n"
            "      interactiveMode: Always\n",
            p);
        ck_assert_int_eq(k8s_client_new(p, &c, &err), -EINVAL);
        ck_assert_msg_has(err, "interactiveMode Always");
        _cleanup_free_ char *cluster = cluster_inline_ca();
        _cleanup_free_ char *gcp =
            kubeconfig("ctx", NULL, cluster, "    auth-provider: {name: gcp}\n");
        ck_assert_int_eq(load("gcp", gcp, &c, &err), -EINVAL);
        ck_assert_msg_has(err, "auth-provider is not supported");
        ck_assert_ptr_null(c);
}
END_TEST

#define PLUGIN_V1                                                                                 \
        "      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: IfAvailable\n" \
        "      provideClusterInfo: true\n"

START_TEST(exec_plugin_runs_at_requests)
{
        /* Counts its runs, keeps what it was given, answers a token valid
         * for two seconds. */
        char p[4200], body[2048], plugin[4200];
        (void)snprintf(body, sizeof(body),
                       "#!/bin/sh\necho run >>'%s/runs'\n"
                       "printf '%%s' \"$KUBERNETES_EXEC_INFO\" >'%s/info'\n"
                       "exp=$(date -u -d '+2 seconds' +%%Y-%%m-%%dT%%H:%%M:%%SZ)\n"
                       "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                       "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"tok\","
                       "\"expirationTimestamp\":\"'$exp'\"}}'\n",
                       dir, dir);
        (void)snprintf(plugin, sizeof(plugin), "%s/kc/bin/plugin", dir);
        (void)put("kc/bin/plugin", body, plugin);
        ck_assert_int_eq(chmod(plugin, 0755), 0);
        (void)exec_kubeconfig("      command: bin/plugin\n" PLUGIN_V1, p);
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(k8s_client_new(p, &c, &err) == 0, "%s", err.message);
        char runs[4200], info_path[4200];
        (void)snprintf(runs, sizeof(runs), "%s/runs", dir);
        (void)snprintf(info_path, sizeof(info_path), "%s/info", dir);
        ck_assert_int_eq(access(runs, F_OK), -1); /* not at load: at the first request */
        ck_assert_int_eq(get(c, &err), -EIO);     /* the closed port, past the plugin */
        ck_assert_msg_has(err, "GET ");
        ck_assert_int_eq(get(c, &err), -EIO);
        _cleanup_free_ char *text = NULL;
        size_t len;
        ck_assert_int_eq(file_read_bounded(runs, 4096, &text, &len), 0);
        ck_assert_str_eq(text, "run\n"); /* cached */
        _cleanup_free_ char *info = NULL;
        ck_assert_int_eq(file_read_bounded(info_path, 65536, &info, &len), 0);
        _cleanup_free_ char *ca = b64(CA_PEM);
        _cleanup_strbuf_ strbuf_t want = {0};
        ck_assert_int_eq(
            strbuf_printf(&want,
                          "{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                          "\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false,"
                          "\"cluster\":{\"server\":\"" CLOSED_SERVER "\","
                          "\"certificate-authority-data\":\"%s\","
                          "\"config\":{\"audience\":\"hangar\"}}}}",
                          ca),
            0);
        _unit_json_ json_t *got = unit_json(info);
        ck_assert_json_eq_text(got, want.data);
        /* Expired: run again. */
        (void)sleep(3);
        ck_assert_int_eq(get(c, &err), -EIO);
        free(text);
        text = NULL;
        ck_assert_int_eq(file_read_bounded(runs, 4096, &text, &len), 0);
        ck_assert_str_eq(text, "run\nrun\n");
}
END_TEST

START_TEST(exec_plugin_failure_is_the_request_error)
{
        char p[4200];
        (void)exec_kubeconfig("      command: hangar-no-such-plugin\n" PLUGIN_V1
                              "      installHint: install hangar-no-such-plugin\n",
                              p);
        _client_ k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(k8s_client_new(p, &c, &err) == 0, "%s", err.message);
        ck_assert_int_eq(get(c, &err), -ENOENT);
        ck_assert_msg_has(err, "exec plugin hangar-no-such-plugin not found on PATH: install");
        /* A static token and client certificate leave the plugin nothing to give. */
        _cleanup_free_ char *cert = b64(CERT_PEM), *key = b64(KEY_PEM);
        char lines[2048];
        (void)snprintf(lines, sizeof(lines),
                       "      command: hangar-no-such-plugin\n" PLUGIN_V1
                       "    token: static\n    client-certificate-data: %s\n"
                       "    client-key-data: %s\n",
                       cert, key);
        (void)exec_kubeconfig(lines, p);
        _client_ k8s_client_t *d = NULL;
        ck_assert_msg(k8s_client_new(p, &d, &err) == 0, "%s", err.message);
        ck_assert_int_eq(get(d, &err), -EIO);
        ck_assert_ptr_null(strstr(err.message, "plugin"));
}
END_TEST

/* ---- a broken exchange, replayed when that is safe ---- */

/* A TLS server on 127.0.0.1 (a thread, a self-signed certificate made
 * here) that reads one request per connection and answers the first `cut`
 * of them short (Content-Length 100, 8 bytes of body, then close_notify:
 * libcurl's CURLE_PARTIAL_FILE), the rest whole with `status`. */
typedef struct {
        int lfd;
        uint16_t port;
        int cut;
        int status;
        SSL_CTX *ctx;
        pthread_t thread;
        int served;           /* connections answered (read after the join) */
        char first_line[256]; /* of the last request */
        char cert_pem[4096];
} tls_server_t;

/* A P-256 key and a certificate for IP 127.0.0.1 signed by it, valid for an hour. */
static void make_cert(EVP_PKEY **ret_key, X509 **ret_cert)
{
        EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        X509 *x = X509_new();
        ck_assert(key && x);
        ck_assert(X509_set_version(x, 2) == 1);
        ck_assert(ASN1_INTEGER_set(X509_get_serialNumber(x), 1) == 1);
        ck_assert_ptr_nonnull(X509_gmtime_adj(X509_getm_notBefore(x), -60));
        ck_assert_ptr_nonnull(X509_gmtime_adj(X509_getm_notAfter(x), 3600));
        X509_NAME *name = X509_get_subject_name(x);
        ck_assert(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                             (const unsigned char *)"127.0.0.1", -1, -1, 0) == 1);
        ck_assert(X509_set_issuer_name(x, name) == 1);
        ck_assert(X509_set_pubkey(x, key) == 1);
        X509V3_CTX v3;
        X509V3_set_ctx_nodb(&v3);
        X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
        X509_EXTENSION *san = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
        ck_assert_ptr_nonnull(san);
        ck_assert(X509_add_ext(x, san, -1) == 1);
        X509_EXTENSION_free(san);
        ck_assert(X509_sign(x, key, EVP_sha256()) > 0);
        *ret_key = key;
        *ret_cert = x;
}

/* Reads one HTTP request (headers, then Content-Length bytes of body);
 * its first line goes to s->first_line. */
static bool read_request(SSL *ssl, tls_server_t *s)
{
        char buf[8192];
        size_t len = 0;
        char *end = NULL;
        while (!end) {
                if (len + 1 >= sizeof(buf))
                        return false;
                int n = SSL_read(ssl, buf + len, (int)(sizeof(buf) - 1 - len));
                if (n <= 0)
                        return false;
                len += (size_t)n;
                buf[len] = '\0';
                end = strstr(buf, "\r\n\r\n");
        }
        size_t first = strcspn(buf, "\r\n");
        (void)snprintf(s->first_line, sizeof(s->first_line), "%.*s", (int)first, buf);
        uint32_t body = 0;
        const char *cl = strcasestr(buf, "\r\nContent-Length:");
        if (cl && cl < end) {
                char digits[16];
                cl += strlen("\r\nContent-Length:");
                cl += strspn(cl, " ");
                size_t n = strspn(cl, "0123456789");
                (void)snprintf(digits, sizeof(digits), "%.*s", (int)n, cl);
                if (parse_u32(digits, &body) < 0)
                        return false;
        }
        size_t have = len - (size_t)(end + 4 - buf);
        while (have < body) {
                char sink[1024];
                int n = SSL_read(ssl, sink, (int)sizeof(sink));
                if (n <= 0)
                        return false;
                have += (size_t)n;
        }
        return true;
}

static void *serve(void *arg)
{
        tls_server_t *s = arg;
        for (;;) {
                int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
                if (fd < 0)
                        return NULL; /* shut down: the test is done */
                SSL *ssl = SSL_new(s->ctx);
                if (ssl && SSL_set_fd(ssl, fd) == 1 && SSL_accept(ssl) == 1 &&
                    read_request(ssl, s)) {
                        char whole[256];
                        int w = snprintf(whole, sizeof(whole),
                                         "HTTP/1.1 %d Whatever\r\n"
                                         "Content-Type: application/json\r\n"
                                         "Content-Length: 11\r\n"
                                         "Connection: close\r\n\r\n"
                                         "{\"ok\":true}",
                                         s->status);
                        static const char cut[] = "HTTP/1.1 200 OK\r\n"
                                                  "Content-Type: application/json\r\n"
                                                  "Content-Length: 100\r\n"
                                                  "Connection: close\r\n\r\n"
                                                  "{\"ok\":tr";
                        bool short_answer = s->served < s->cut;
                        const char *a = short_answer ? cut : whole;
                        size_t n = short_answer ? sizeof(cut) - 1 : (size_t)w;
                        (void)SSL_write(ssl, a, (int)n);
                        s->served++;
                        (void)SSL_shutdown(ssl);
                }
                SSL_free(ssl);
                (void)close(fd);
        }
}

static void server_start(tls_server_t *s, int cut, int status)
{
        memset(s, 0, sizeof(*s));
        s->cut = cut;
        s->status = status;
        /* A write to a client that went away must not kill the test. */
        ck_assert(signal(SIGPIPE, SIG_IGN) != SIG_ERR);
        EVP_PKEY *key = NULL;
        X509 *cert = NULL;
        make_cert(&key, &cert);
        s->ctx = SSL_CTX_new(TLS_server_method());
        ck_assert_ptr_nonnull(s->ctx);
        ck_assert(SSL_CTX_use_certificate(s->ctx, cert) == 1);
        ck_assert(SSL_CTX_use_PrivateKey(s->ctx, key) == 1);
        BIO *bio = BIO_new(BIO_s_mem());
        ck_assert(bio && PEM_write_bio_X509(bio, cert) == 1);
        char *pem = NULL;
        long n = BIO_get_mem_data(bio, &pem);
        ck_assert(n > 0 && (size_t)n < sizeof(s->cert_pem));
        memcpy(s->cert_pem, pem, (size_t)n);
        BIO_free(bio);
        X509_free(cert);
        EVP_PKEY_free(key);

        s->lfd = unit_loopback_listen(8, &s->port);
        ck_assert_int_eq(pthread_create(&s->thread, NULL, serve, s), 0);
}

/* Stops accepting (accept fails once the socket is shut down) and waits
 * for the thread: s->served is then final. */
static void server_stop(tls_server_t *s)
{
        ck_assert_int_eq(shutdown(s->lfd, SHUT_RDWR), 0);
        ck_assert_int_eq(pthread_join(s->thread, NULL), 0);
        (void)close(s->lfd);
        SSL_CTX_free(s->ctx);
}

/* A client of s: its address and certificate, a static token. */
static k8s_client_t *client_of(const tls_server_t *s)
{
        _cleanup_free_ char *ca = b64(s->cert_pem);
        strbuf_t cluster = {0};
        ck_assert_int_eq(strbuf_printf(&cluster,
                                       "    server: https://127.0.0.1:%u\n"
                                       "    certificate-authority-data: %s\n",
                                       (unsigned)s->port, ca),
                         0);
        _cleanup_free_ char *text =
            kubeconfig("ctx", NULL, cluster.data, "    token: not-a-real-token\n");
        strbuf_free(&cluster);
        k8s_client_t *c = NULL;
        hg_error_t err = {0};
        ck_assert_msg(load("kc.yaml", text, &c, &err) == 0, "%s", err.message);
        return c;
}

/* What one request to a tls_server_t came to. */
typedef struct {
        int r;
        long status; /* 0 when it failed */
        int served;  /* requests the server got */
        int logged;  /* retries logged */
        char first_line[256];
        hg_error_t err;
} exchange_t;

/* Lines of the file at path that contain want. */
static int count_lines(const char *path, const char *want)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        ck_assert_int_eq(file_read_bounded(path, 1 << 20, &text, &len), 0);
        int n = 0;
        for (char *line = text; line && *line;) {
                char *nl = strchr(line, '\n');
                if (nl)
                        *nl = '\0';
                n += strstr(line, want) != NULL;
                line = nl ? nl + 1 : NULL;
        }
        return n;
}

/* One request (a body for every method but GET and DELETE) to a server
 * that cuts its first `cut` answers short and answers the rest with
 * `status`; what the client logged to stderr meanwhile is counted. */
static void exchange(int cut, int status, const char *method, const char *path, exchange_t *x)
{
        memset(x, 0, sizeof(*x));
        tls_server_t s;
        server_start(&s, cut, status);
        _client_ k8s_client_t *c = client_of(&s);
        bool has_body = strcmp(method, "GET") != 0 && strcmp(method, "DELETE") != 0;
        const char *payload = has_body ? "{\"kind\":\"Test\"}" : NULL;
        char log_path[4200];
        (void)snprintf(log_path, sizeof(log_path), "%s/stderr.log", dir);
        int log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        ck_assert(log_fd >= 0 && saved >= 0);
        ck_assert_int_eq(dup2(log_fd, STDERR_FILENO), STDERR_FILENO);
        json_t *body = NULL;
        x->r = k8s_request(c, method, path, payload ? "application/json" : NULL, payload,
                           &x->status, &body, &x->err);
        ck_assert_int_eq(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        (void)close(saved);
        (void)close(log_fd);
        server_stop(&s);
        if (x->r == 0) {
                ck_assert_msg(body && json_is_true(json_object_get(body, "ok")),
                              "not the whole answer");
                json_decref(body);
        } else {
                x->status = 0;
        }
        x->served = s.served;
        x->logged = count_lines(log_path, "API request sent again after its exchange broke off");
        (void)snprintf(x->first_line, sizeof(x->first_line), "%s", s.first_line);
}

/* x came back as an answer with status, after served requests of which
 * logged were retries. */
static void assert_answered(const exchange_t *x, long status, int served, int logged)
{
        ck_assert_msg(x->r == 0, "%s: %d: %s", x->first_line, x->r, x->err.message);
        ck_assert_int_eq(x->status, status);
        ck_assert_int_eq(x->served, served);
        ck_assert_int_eq(x->logged, logged);
}

/* Cut every time: after two more tries the error comes out, curl's reason
 * and how many times it was sent. */
START_TEST(broken_get_gives_up_after_two_more)
{
        exchange_t x;
        exchange(INT_MAX, 200, "GET", "/version", &x);
        ck_assert_int_eq(x.r, -ECONNRESET);
        ck_assert_int_eq(x.err.code, -ECONNRESET);
        ck_assert_int_eq(x.served, 3);
        ck_assert_int_eq(x.logged, 2);
        ck_assert_msg_has(x.err, "GET /version: ");
        ck_assert_msg_has(x.err, "partial file");
        ck_assert_msg_has(x.err, "(sent 3 times)");
}
END_TEST

/* Cut short once: reads (GET, the review kinds) are sent again and
 * answered, the retry logged; writes, and POSTs that may store something,
 * are tried once and fail with the error as it was. */
START_TEST(broken_exchange_sent_again_only_when_safe)
{
        static const struct {
                bool replayed; /* else tried once */
                const char *method, *path;
        } cases[] = {
            {true, "GET", "/api/v1/namespaces/x/pods/p"},
            {true, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews"},
            {true, "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"},
            {false, "POST", "/api/v1/namespaces/x/pods"},
            {false, "PATCH", "/api/v1/namespaces/x/pods/p"},
            {false, "PUT", "/api/v1/namespaces/x/secrets/s"},
            {false, "DELETE", "/api/v1/namespaces/x/secrets/s"},
            /* Another group's plural ending in "reviews": a custom resource. */
            {false, "POST", "/apis/example.com/v1/namespaces/x/codereviews"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                exchange_t x;
                char request[256], line[300];
                (void)snprintf(request, sizeof(request), "%s %s", cases[i].method, cases[i].path);
                exchange(1, 200, cases[i].method, cases[i].path, &x);
                (void)snprintf(line, sizeof(line), "%s HTTP/1.1", request);
                ck_assert_str_eq(x.first_line, line);
                if (cases[i].replayed) {
                        assert_answered(&x, 200, 2, 1);
                        continue;
                }
                ck_assert_msg(x.r == -ECONNRESET, "%s: %d", request, x.r);
                ck_assert_msg(x.served == 1, "%s: sent %d times", request, x.served);
                ck_assert_int_eq(x.logged, 0);
                (void)snprintf(line, sizeof(line), "%s: ", request);
                ck_assert_msg_has(x.err, line);
                ck_assert_msg(!strstr(x.err.message, "sent"), "%s", x.err.message);
        }
}
END_TEST

/* An HTTP error is an answer: returned as it came, not sent again. */
START_TEST(error_status_is_not_sent_again)
{
        exchange_t x;
        exchange(0, 503, "GET", "/version", &x);
        assert_answered(&x, 503, 1, 0);
}
END_TEST

static Suite *k8sclient_suite(void)
{
        Suite *s = suite_create("k8sclient");
        TCase *tc = tcase_create("kubeconfig");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, inline_data);
        tcase_add_test(tc, namespace_of_the_current_context);
        tcase_add_test(tc, file_paths_relative_to_kubeconfig);
        tcase_add_test(tc, token_and_token_file);
        tcase_add_test(tc, relative_token_file);
        tcase_add_test(tc, refused_configurations);
        tcase_add_test(tc, explicit_false_insecure_is_fine);
        tcase_add_test(tc, unreadable_kubeconfig);
        tcase_add_test(tc, in_cluster_needs_service_host);
        tcase_add_test(tc, in_cluster_with_another_token);
        tcase_add_test(tc, merged_first_file_wins);
        tcase_add_test(tc, merged_stanzas_are_not_merged);
        tcase_add_test(tc, context_selection_errors);
        tcase_add_test(tc, kubectl_search_order);
        tcase_add_test(tc, exec_stanza_errors);
        suite_add_tcase(s, tc);
        tc = tcase_create("requests");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, request_to_closed_port);
        tcase_add_test(tc, status_message);
        tcase_add_test(tc, free_null);
        tcase_add_test(tc, exec_plugin_runs_at_requests);
        tcase_add_test(tc, exec_plugin_failure_is_the_request_error);
        suite_add_tcase(s, tc);
        tc = tcase_create("broken exchanges");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, broken_exchange_sent_again_only_when_safe);
        tcase_add_test(tc, broken_get_gives_up_after_two_more);
        tcase_add_test(tc, error_status_is_not_sent_again);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(k8sclient_suite());
}
