/* Unit tests for webhook/selfcert without an API server: a kubeconfig that
 * points at a closed port, so selfcert_new succeeds and every sync fails at
 * its first request, which names the Secret it asked for. (The tls settings
 * themselves are validated in test_config.c.) */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "cleanup.h"
#include "fileio.h"
#include "selfcert.h"
#include "settings.h"
#include "strbuf.h"
#include "unit.h"

#define CA_PEM "-----BEGIN CERTIFICATE-----\nMIIBcA==\n-----END CERTIFICATE-----\n"

static char dir[4096];
static char kubeconfig_path[4200];
static char cert_path[4200];
static char key_path[4200];

/* A kubeconfig whose context has namespace ns (NULL: none). */
static void write_kubeconfig(const char *ns)
{
        _cleanup_free_ char *ca = base64_encode(CA_PEM, strlen(CA_PEM));
        ck_assert_ptr_nonnull(ca);
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_printf(&sb,
                                       "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
                                       "contexts:\n- name: ctx\n  context:\n    cluster: c\n"
                                       "    user: u\n%s%s%s"
                                       "clusters:\n- name: c\n  cluster:\n"
                                       "    server: https://127.0.0.1:1\n"
                                       "    certificate-authority-data: %s\n"
                                       "users:\n- name: u\n  user:\n    token: t\n",
                                       ns ? "    namespace: " : "", ns ? ns : "", ns ? "\n" : "",
                                       ca),
                         0);
        (void)unlink(kubeconfig_path);
        ck_assert_int_eq(file_write_atomic(kubeconfig_path, sb.data, sb.len, 0600, 0), 0);
        strbuf_free(&sb);
}

static void setup(void)
{
        /* No HANGAR_* or POD_NAMESPACE from the caller may leak in. */
        unit_unsetenv_prefix("HANGAR_");
        ck_assert_int_eq(unsetenv("POD_NAMESPACE"), 0);
        ck_assert_int_eq(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
        unit_mkdtemp(dir, sizeof(dir));
        (void)snprintf(kubeconfig_path, sizeof(kubeconfig_path), "%s/kubeconfig", dir);
        (void)snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", dir);
        (void)snprintf(key_path, sizeof(key_path), "%s/tls.key", dir);
        write_kubeconfig(NULL);
}

static void teardown(void)
{
        unit_rmtree(dir);
}

#define _config_ _cleanup_settings_

static void selfcert_freep(selfcert_t **sc)
{
        selfcert_free(*sc);
}
#define _selfcert_ __attribute__((cleanup(selfcert_freep)))

#define ck_assert_msg_has(err, needle)                                                       \
        ck_assert_msg(strstr((err).message, (needle)), "message lacks \"%s\": %s", (needle), \
                      (err).message)

/* Defaults, self-managed mode with our files and kubeconfig, then extra
 * YAML lines under tls: (indented by two), validated. */
static void make_config(webhook_settings_t *cfg, const char *tls_extra)
{
        ck_assert_int_eq(settings_init_defaults(cfg), 0);
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_printf(&sb,
                                       "kubeconfig: %s\nserver:\n  certFile: %s\n  keyFile: %s\n"
                                       "tls:\n  mode: selfManaged\n  serviceName: hangar-webhook\n"
                                       "%s",
                                       kubeconfig_path, cert_path, key_path,
                                       tls_extra ? tls_extra : ""),
                         0);
        hg_error_t err = {0};
        int r = settings_apply_yaml(cfg, "cfg.yaml", sb.data, sb.len, &err);
        strbuf_free(&sb);
        ck_assert_msg(r == 0, "config: %s", err.message);
        ck_assert_msg(settings_validate(cfg, &err) == 0, "validate: %s", err.message);
}

/* One sync round against the closed port: must fail, and write nothing. */
static void sync_fails(selfcert_t *sc, hg_error_t *err)
{
        error_clear(err);
        int r = selfcert_sync(sc, err);
        ck_assert_msg(r == -EIO, "sync gave %d: %s", r, err->message);
        ck_assert_int_eq(err->code, -EIO);
        ck_assert_int_ne(access(cert_path, F_OK), 0);
        ck_assert_int_ne(access(key_path, F_OK), 0);
}

START_TEST(new_succeeds_sync_fails)
{
        _config_ webhook_settings_t cfg = {0};
        make_config(&cfg, "  secretNamespace: hangar-system\n");
        _selfcert_ selfcert_t *sc = NULL;
        hg_error_t err = {0};
        ck_assert_msg(selfcert_new(&cfg, &sc, &err) == 0, "selfcert_new: %s", err.message);
        ck_assert_ptr_nonnull(sc);
        sync_fails(sc, &err);
        ck_assert_msg_has(err, "GET /api/v1/namespaces/hangar-system/secrets/hangar-webhook-tls: ");
        /* Again: a failed round leaves nothing behind that breaks the next. */
        sync_fails(sc, &err);
        ck_assert_msg_has(err, "/secrets/hangar-webhook-tls");
        /* No error struct: still just a code. */
        ck_assert_int_eq(selfcert_sync(sc, NULL), -EIO);
}
END_TEST

START_TEST(secret_namespace_precedence)
{
        hg_error_t err = {0};
        /* tls.secretNamespace wins over POD_NAMESPACE and the kubeconfig. */
        write_kubeconfig("from-kubeconfig");
        ck_assert_int_eq(setenv("POD_NAMESPACE", "from-pod", 1), 0);
        {
                _config_ webhook_settings_t cfg = {0};
                make_config(&cfg, "  secretNamespace: from-config\n  secretName: certs\n");
                _selfcert_ selfcert_t *sc = NULL;
                ck_assert_int_eq(selfcert_new(&cfg, &sc, &err), 0);
                sync_fails(sc, &err);
                ck_assert_msg_has(err, "GET /api/v1/namespaces/from-config/secrets/certs: ");
        }
        /* Then the pod's own namespace. */
        {
                _config_ webhook_settings_t cfg = {0};
                make_config(&cfg, NULL);
                _selfcert_ selfcert_t *sc = NULL;
                ck_assert_int_eq(selfcert_new(&cfg, &sc, &err), 0);
                sync_fails(sc, &err);
                ck_assert_msg_has(err, "/namespaces/from-pod/secrets/hangar-webhook-tls: ");
        }
        /* Then the kubeconfig context's (an empty POD_NAMESPACE is unset). */
        ck_assert_int_eq(setenv("POD_NAMESPACE", "", 1), 0);
        {
                _config_ webhook_settings_t cfg = {0};
                make_config(&cfg, NULL);
                _selfcert_ selfcert_t *sc = NULL;
                ck_assert_int_eq(selfcert_new(&cfg, &sc, &err), 0);
                sync_fails(sc, &err);
                ck_assert_msg_has(err, "/namespaces/from-kubeconfig/secrets/");
        }
        /* Then "default". */
        ck_assert_int_eq(unsetenv("POD_NAMESPACE"), 0);
        write_kubeconfig(NULL);
        {
                _config_ webhook_settings_t cfg = {0};
                make_config(&cfg, NULL);
                _selfcert_ selfcert_t *sc = NULL;
                ck_assert_int_eq(selfcert_new(&cfg, &sc, &err), 0);
                sync_fails(sc, &err);
                ck_assert_msg_has(err, "/namespaces/default/secrets/");
        }
}
END_TEST

START_TEST(most_names_allowed)
{
        /* 32 DNS names, 32 IP addresses (the configuration's maxima) and the
         * Service's four names: fits (ASan checks the arrays). */
        strbuf_t sb = {0};
        ck_assert_int_eq(strbuf_puts(&sb, "  dnsNames:\n"), 0);
        for (int i = 0; i < 32; i++)
                ck_assert_int_eq(strbuf_printf(&sb, "  - name-%d.example.com\n", i), 0);
        ck_assert_int_eq(strbuf_puts(&sb, "  ipAddresses:\n"), 0);
        for (int i = 0; i < 32; i++)
                ck_assert_int_eq(strbuf_printf(&sb, "  - 10.0.0.%d\n", i + 1), 0);
        _config_ webhook_settings_t cfg = {0};
        make_config(&cfg, sb.data);
        strbuf_free(&sb);
        ck_assert_uint_eq(cfg.tls_dns_names.n, 32);
        ck_assert_uint_eq(cfg.tls_ip_addresses.n, 32);
        _selfcert_ selfcert_t *sc = NULL;
        hg_error_t err = {0};
        ck_assert_msg(selfcert_new(&cfg, &sc, &err) == 0, "%s", err.message);
        sync_fails(sc, &err);
}
END_TEST

/* Regression test (this was a bug, now fixed): selfcert.c keeps the Secret's path in a 256-byte
 * buffer (and the webhook configuration's in 320) filled with an unchecked snprintf; a valid Secret
 * name of 253 characters makes a longer path, which is cut silently, so the webhook reads and
 * writes a Secret of another name. */
START_TEST(long_secret_name_not_truncated)
{
        char name[254];
        memset(name, 'a', 253);
        name[253] = '\0';
        name[63] = name[127] = name[191] = '.'; /* labels of at most 63 */
        char extra[400];
        (void)snprintf(extra, sizeof(extra), "  secretName: %s\n  secretNamespace: hangar-system\n",
                       name);
        _config_ webhook_settings_t cfg = {0};
        make_config(&cfg, extra);
        ck_assert_str_eq(cfg.tls_secret_name, name);
        _selfcert_ selfcert_t *sc = NULL;
        hg_error_t err = {0};
        int r = selfcert_new(&cfg, &sc, &err);
        if (r < 0) {
                /* Refusing the name up front would be a fix, too. */
                ck_assert_int_eq(r, -EINVAL);
                ck_assert_ptr_null(sc);
                return;
        }
        char want[400];
        (void)snprintf(want, sizeof(want),
                       "GET /api/v1/namespaces/hangar-system/secrets/%s: ", name);
        sync_fails(sc, &err);
        ck_assert_msg_has(err, want);
}
END_TEST

START_TEST(new_fails_cleanly)
{
        /* A kubeconfig that cannot be used: the error comes through, no
         * selfcert is made, nothing leaks (ASan). */
        const char *broken = "current-context: x\n";
        ck_assert_int_eq(file_write_atomic(kubeconfig_path, broken, strlen(broken), 0600, 0), 0);
        _config_ webhook_settings_t cfg = {0};
        make_config(&cfg, NULL);
        selfcert_t *sc = (selfcert_t *)&sc;
        hg_error_t err = {0};
        ck_assert_int_eq(selfcert_new(&cfg, &sc, &err), -EINVAL);
        ck_assert_ptr_eq(sc, (selfcert_t *)&sc);
        ck_assert_msg_has(err, kubeconfig_path);
        ck_assert_msg_has(err, "no current context");

        /* In-cluster credentials outside a cluster. */
        _config_ webhook_settings_t in_cluster = {0};
        ck_assert_int_eq(settings_init_defaults(&in_cluster), 0);
        const char *yaml = "tls:\n  mode: selfManaged\n  serviceName: s\n";
        ck_assert_int_eq(settings_apply_yaml(&in_cluster, "c.yaml", yaml, strlen(yaml), &err), 0);
        ck_assert_str_eq(in_cluster.kubeconfig, "");
        ck_assert_int_eq(selfcert_new(&in_cluster, &sc, &err), -ENOENT);
        ck_assert_msg_has(err, "KUBERNETES_SERVICE_HOST");
        selfcert_free(NULL);
}
END_TEST

static Suite *selfcert_suite(void)
{
        Suite *s = suite_create("selfcert");
        TCase *tc = tcase_create("no_server");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, new_succeeds_sync_fails);
        tcase_add_test(tc, secret_namespace_precedence);
        tcase_add_test(tc, most_names_allowed);
        tcase_add_test(tc, long_secret_name_not_truncated);
        tcase_add_test(tc, new_fails_cleanly);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(selfcert_suite());
}
