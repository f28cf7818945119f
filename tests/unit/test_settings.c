/* Unit tests for webhook/settings: the whole configuration file as the webhook
 * reads it (its settings and the sidecar's): defaults, YAML, environment,
 * validation, dump. The sidecar's reader alone: test_config.c. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "settings.h"
#include "strbuf.h"
#include "unit.h"

static char dir[4096];

/* No HANGAR_* variable from the caller's environment may leak into a test. */
static void setup(void)
{
        unit_unsetenv_prefix("HANGAR_");
        unit_mkdtemp(dir, sizeof(dir));
}

static void teardown(void)
{
        unit_rmtree(dir);
}

#define _config_ _cleanup_settings_

static int apply(webhook_settings_t *cfg, const char *text, hg_error_t *err)
{
        return settings_apply_yaml(cfg, "cfg.yaml", text, strlen(text), err);
}

/* Every pointer config_free would free is NULL: nothing left allocated. */
static void assert_all_freed(const webhook_settings_t *c)
{
        const void *const strings[] = {
            c->selector_key,
            c->selector_value,
            c->sidecar.agent_container,
            c->sidecar.driver_cpu_request,
            c->sidecar.driver_memory_request,
            c->sidecar.driver_cpu_limit,
            c->sidecar.driver_memory_limit,
            c->sidecar.home_path,
            c->sidecar.ctl_path,
            c->sidecar.ctl_size_limit,
            c->listen_address,
            c->cert_file,
            c->key_file,
            c->log_level,
            c->tls_mode,
            c->tls_secret_name,
            c->tls_secret_namespace,
            c->tls_webhook_config,
            c->tls_service_name,
            c->kubeconfig,
        };
        for (size_t i = 0; i < ARRAY_SIZE(strings); i++)
                ck_assert_msg(strings[i] == NULL, "string field %zu still allocated", i);
        ck_assert_ptr_null(c->sidecar.driver_command.items);
        ck_assert_uint_eq(c->sidecar.driver_command.n, 0);
        ck_assert_ptr_null(c->tls_dns_names.items);
        ck_assert_uint_eq(c->tls_dns_names.n, 0);
        ck_assert_ptr_null(c->tls_ip_addresses.items);
        ck_assert_uint_eq(c->tls_ip_addresses.n, 0);
}

START_TEST(defaults_exactly)
{
        _config_ webhook_settings_t c = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        ck_assert(!c.driver_sidecar);
        ck_assert_str_eq(c.selector_key, "hangar.dev/sandbox");
        ck_assert_str_eq(c.selector_value, "true");
        ck_assert_str_eq(c.sidecar.agent_container, "sandbox");
        /* The agent keeps its service-account token unless the admin asks. */
        ck_assert_str_eq(c.sidecar.agent_service_account_token, "keep");
        ck_assert_uint_eq(c.sidecar.driver_uid, 1001);
        ck_assert_uint_eq(c.sidecar.driver_gid, 1001);
        ck_assert_uint_eq(c.sidecar.driver_command.n, 2);
        ck_assert_str_eq(c.sidecar.driver_command.items[0], "hangar-driver");
        ck_assert_str_eq(c.sidecar.driver_command.items[1], "serve");
        /* The daemon and its probes by default, as in the chart. */
        ck_assert(c.sidecar.driver_probes);
        ck_assert_uint_eq(c.sidecar.driver_startup.period_s, 1);
        ck_assert_uint_eq(c.sidecar.driver_startup.timeout_s, 5);
        ck_assert_uint_eq(c.sidecar.driver_startup.failures, 60);
        ck_assert_uint_eq(c.sidecar.driver_liveness.period_s, 10);
        ck_assert_uint_eq(c.sidecar.driver_liveness.timeout_s, 5);
        ck_assert_uint_eq(c.sidecar.driver_liveness.failures, 3);
        ck_assert_str_eq(c.sidecar.driver_cpu_request, "50m");
        ck_assert_str_eq(c.sidecar.driver_memory_request, "64Mi");
        ck_assert_str_eq(c.sidecar.driver_cpu_limit, "");
        ck_assert_str_eq(c.sidecar.driver_memory_limit, "");
        ck_assert_str_eq(c.sidecar.home_path, "/var/lib/hangar");
        ck_assert_str_eq(c.sidecar.ctl_path, "/var/lib/hangar-ctl");
        ck_assert_str_eq(c.sidecar.ctl_size_limit, "64Mi");
        ck_assert_str_eq(c.listen_address, "0.0.0.0");
        ck_assert_uint_eq(c.port, 8443);
        ck_assert_uint_eq(c.health_port, 0);
        ck_assert_str_eq(c.cert_file, "/etc/hangar-webhook/tls/tls.crt");
        ck_assert_str_eq(c.key_file, "/etc/hangar-webhook/tls/tls.key");
        ck_assert_uint_eq(c.max_body_bytes, 3145728);
        ck_assert_uint_eq(c.request_timeout_seconds, 10);
        ck_assert_uint_eq(c.threads, 0);
        ck_assert_uint_eq(c.cert_poll_seconds, 2);
        ck_assert_str_eq(c.log_level, "info");
        /* TLS: certificate files by default; self-managed's settings ready. */
        ck_assert_str_eq(c.tls_mode, "files");
        ck_assert_str_eq(c.tls_secret_name, "hangar-webhook-tls");
        ck_assert_str_eq(c.tls_secret_namespace, "");
        ck_assert_str_eq(c.tls_webhook_config, "");
        ck_assert_str_eq(c.tls_service_name, "");
        ck_assert_uint_eq(c.tls_dns_names.n, 0);
        ck_assert_uint_eq(c.tls_ip_addresses.n, 0);
        ck_assert_uint_eq(c.tls_leaf_days, 90);
        ck_assert_uint_eq(c.tls_renew_before_days, 30);
        ck_assert_uint_eq(c.tls_ca_days, 3650);
        ck_assert_uint_eq(c.tls_sync_seconds, 60);
        ck_assert_str_eq(c.kubeconfig, "");
        hg_error_t err = {0};
        ck_assert_int_eq(settings_validate(&c, &err), 0);
}
END_TEST

START_TEST(load_without_file_is_defaults)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_load(&c, NULL, &err), 0);
        ck_assert(!c.driver_sidecar);
        ck_assert_uint_eq(c.sidecar.driver_uid, 1001);
        ck_assert_str_eq(c.sidecar.home_path, "/var/lib/hangar");
}
END_TEST

START_TEST(yaml_overrides)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        int r = apply(&c,
                      "driverSidecar: yes\n"
                      "selector:\n  key: example.com/agent\n  value: \"on\"\n"
                      "agentContainer: agent\n"
                      "agentServiceAccountToken: remove\n"
                      "driver:\n  uid: 2000\n  gid: 3000\n  command: [/bin/driver, --serve]\n"
                      "  resources:\n    requests: {cpu: 100m, memory: 32Mi}\n"
                      "    limits:\n      cpu: \"1\"\n      memory: 1Gi\n"
                      "volumes:\n  home:\n    mountPath: /home/hangar\n"
                      "  ctl:\n    mountPath: /run/hangar-ctl\n    sizeLimit: 1Mi\n"
                      "server:\n  address: \"::\"\n  port: 9443\n  healthPort: 8080\n"
                      "  maxBodyBytes: 4096\n  threads: 4\n"
                      "logLevel: debug\n",
                      &err);
        ck_assert_msg(r == 0, "apply failed: %s", err.message);
        ck_assert(c.driver_sidecar);
        ck_assert_str_eq(c.selector_key, "example.com/agent");
        ck_assert_str_eq(c.selector_value, "on"); /* quoted: the string, not a boolean */
        ck_assert_str_eq(c.sidecar.agent_container, "agent");
        ck_assert_str_eq(c.sidecar.agent_service_account_token, "remove");
        ck_assert_uint_eq(c.sidecar.driver_uid, 2000);
        ck_assert_uint_eq(c.sidecar.driver_gid, 3000);
        ck_assert_uint_eq(c.sidecar.driver_command.n, 2);
        ck_assert_str_eq(c.sidecar.driver_command.items[0], "/bin/driver");
        ck_assert_str_eq(c.sidecar.driver_command.items[1], "--serve");
        ck_assert_str_eq(c.sidecar.driver_cpu_request, "100m");
        ck_assert_str_eq(c.sidecar.driver_memory_request, "32Mi");
        ck_assert_str_eq(c.sidecar.driver_cpu_limit, "1");
        ck_assert_str_eq(c.sidecar.driver_memory_limit, "1Gi");
        ck_assert_str_eq(c.sidecar.home_path, "/home/hangar");
        ck_assert_str_eq(c.sidecar.ctl_path, "/run/hangar-ctl");
        ck_assert_str_eq(c.sidecar.ctl_size_limit, "1Mi");
        ck_assert_str_eq(c.listen_address, "::");
        ck_assert_uint_eq(c.port, 9443);
        ck_assert_uint_eq(c.health_port, 8080);
        ck_assert_uint_eq(c.max_body_bytes, 4096);
        ck_assert_uint_eq(c.threads, 4);
        ck_assert_str_eq(c.log_level, "debug");
        /* Untouched settings keep their defaults. */
        ck_assert_uint_eq(c.request_timeout_seconds, 10);
        ck_assert_str_eq(c.cert_file, "/etc/hangar-webhook/tls/tls.crt");
        ck_assert_int_eq(settings_validate(&c, &err), 0);
}
END_TEST

START_TEST(explicit_empty_document_is_defaults)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        ck_assert_int_eq(apply(&c, "{}\n", &err), 0);
        ck_assert_int_eq(apply(&c, "---\n", &err), 0);
        ck_assert_uint_eq(c.sidecar.driver_uid, 1001);
}
END_TEST

/* Regression test (this was a bug, now fixed): config.c says an empty file means all defaults, but
 * yamldoc_parse refuses a stream with no document ("empty YAML document"), so
 * an empty or comment-only config file stops the webhook from starting. */
START_TEST(empty_file_is_defaults)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        int r = settings_apply_yaml(&c, "cfg.yaml", "", 0, &err);
        ck_assert_msg(r == 0, "empty file refused: %s", err.message);
        r = apply(&c, "# all defaults\n", &err);
        ck_assert_msg(r == 0, "comment-only file refused: %s", err.message);
        ck_assert_uint_eq(c.sidecar.driver_uid, 1001);
}
END_TEST

START_TEST(env_wins_over_file)
{
        const char *path =
            unit_write_file(dir, "cfg.yaml", "driverSidecar: false\ndriver:\n  uid: 2000\n");
        ck_assert_int_eq(setenv("HANGAR_K8S_DRIVER_SIDECAR", "true", 1), 0);
        ck_assert_int_eq(setenv("HANGAR_DRIVER_UID", "3000", 1), 0);
        ck_assert_int_eq(setenv("HANGAR_DRIVER_COMMAND", "[\"/bin/d\", \"-v\", \"x\"]", 1), 0);
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        int r = settings_load(&c, path, &err);
        ck_assert_msg(r == 0, "load failed: %s", err.message);
        ck_assert(c.driver_sidecar);
        ck_assert_uint_eq(c.sidecar.driver_uid, 3000);
        ck_assert_uint_eq(c.sidecar.driver_command.n, 3);
        ck_assert_str_eq(c.sidecar.driver_command.items[2], "x");
        unsetenv("HANGAR_K8S_DRIVER_SIDECAR");
        unsetenv("HANGAR_DRIVER_UID");
        unsetenv("HANGAR_DRIVER_COMMAND");
}
END_TEST

START_TEST(env_errors_name_the_variable)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(setenv("HANGAR_K8S_DRIVER_SIDECAR", "maybe", 1), 0);
        ck_assert_int_eq(settings_load(&c, NULL, &err), -EINVAL);
        ck_assert_msg_has(err, "HANGAR_K8S_DRIVER_SIDECAR");
        ck_assert_msg_has(err, "'maybe'");
        assert_all_freed(&c);
        unsetenv("HANGAR_K8S_DRIVER_SIDECAR");
        ck_assert_int_eq(setenv("HANGAR_DRIVER_COMMAND", "sleep infinity", 1), 0);
        ck_assert_int_eq(settings_load(&c, NULL, &err), -EINVAL);
        ck_assert_msg_has(err, "HANGAR_DRIVER_COMMAND");
        assert_all_freed(&c);
        unsetenv("HANGAR_DRIVER_COMMAND");
}
END_TEST

START_TEST(set_by_dotted_key)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_load(&c, NULL, &err), 0);
        ck_assert_int_eq(settings_set(&c, "driver.uid=2001", &err), 0);
        ck_assert_uint_eq(c.sidecar.driver_uid, 2001);
        ck_assert_int_eq(settings_set(&c, "volumes.home.mountPath=/srv/home", &err), 0);
        ck_assert_str_eq(c.sidecar.home_path, "/srv/home");
        /* Parsed and bounded as the environment variable is. */
        ck_assert_int_eq(settings_set(&c, "driver.uid=0", &err), -EINVAL);
        ck_assert_msg_has(err, "--set driver.uid");
        ck_assert_int_eq(settings_set(&c, "driverSidecar=maybe", &err), -EINVAL);
        ck_assert_int_eq(settings_set(&c, "driver=1", &err), -EINVAL);
        ck_assert_msg_has(err, "unknown key 'driver'");
        ck_assert_int_eq(settings_set(&c, "driver.uid", &err), -EINVAL);
        ck_assert_msg_has(err, "KEY=VALUE");
        ck_assert_int_eq(settings_set(&c, "=1", &err), -EINVAL);
        /* A refused value leaves the setting as it was. */
        ck_assert_uint_eq(c.sidecar.driver_uid, 2001);
}
END_TEST

START_TEST(error_names_file_line_and_key)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        ck_assert_int_eq(apply(&c, "driver:\n  uid: abc\n", &err), -EINVAL);
        ck_assert_msg_has(err, "cfg.yaml:2");
        ck_assert_msg_has(err, "driver.uid");
        ck_assert_msg_has(err, "'abc'");
        ck_assert_int_eq(err.code, -EINVAL);
        /* The field keeps its value after a refused setting. */
        ck_assert_uint_eq(c.sidecar.driver_uid, 1001);
        /* A deeper key, further down. */
        ck_assert_int_eq(apply(&c,
                               "logLevel: info\ndriver:\n  resources:\n    requests:\n"
                               "      cpu: lots\n",
                               &err),
                         -EINVAL);
        ck_assert_msg_has(err, "cfg.yaml:5");
        ck_assert_msg_has(err, "driver.resources.requests.cpu");
}
END_TEST

START_TEST(load_error_names_the_path)
{
        const char *path = unit_write_file(dir, "bad.yaml", "# header\ndriver:\n  gid: -5\n");
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_load(&c, path, &err), -EINVAL);
        char want[4300];
        (void)snprintf(want, sizeof(want), "%s:3", path);
        ck_assert_msg_has(err, want);
        ck_assert_msg_has(err, "driver.gid");
        assert_all_freed(&c);
}
END_TEST

START_TEST(unknown_key_rejected_with_line)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        ck_assert_int_eq(apply(&c, "driver:\n  uid: 5\n  colour: red\n", &err), -EINVAL);
        ck_assert_msg_has(err, "cfg.yaml:3");
        ck_assert_msg_has(err, "unknown key 'driver.colour'");
        ck_assert_int_eq(apply(&c, "driverSidecars: true\n", &err), -EINVAL);
        ck_assert_msg_has(err, "cfg.yaml:1");
        ck_assert_msg_has(err, "driverSidecars");
        /* A prefix of settings that is given a scalar is not a setting. */
        ck_assert_int_eq(apply(&c, "volumes: /x\n", &err), -EINVAL);
        ck_assert_msg_has(err, "cfg.yaml:1");
        ck_assert_msg_has(err, "'volumes' must be a mapping");
        ck_assert_int_eq(apply(&c, "- a\n- b\n", &err), -EINVAL);
        ck_assert_int_eq(apply(&c, "driver: {uid: 5", &err), -EINVAL);
        ck_assert_msg_has(err, "cfg.yaml: ");
}
END_TEST

START_TEST(uid_gid_ranges)
{
        static const char *const bad[] = {
            "driver:\n  uid: 0\n",   "driver:\n  gid: 0\n",
            "driver:\n  uid: -1\n",  "driver:\n  uid: 2147483648\n",
            "driver:\n  uid: 1.5\n", "driver:\n  uid: 99999999999999999999\n",
            "driver:\n  uid: [1]\n", "driver:\n  uid:\n",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                _config_ webhook_settings_t c = {0};
                hg_error_t err = {0};
                ck_assert_int_eq(settings_init_defaults(&c), 0);
                ck_assert_msg(apply(&c, bad[i], &err) == -EINVAL, "accepted: %s", bad[i]);
                ck_assert_msg(strstr(err.message, "cfg.yaml:2"), "%s -> %s", bad[i], err.message);
                ck_assert_uint_eq(c.sidecar.driver_uid, 1001);
                ck_assert_uint_eq(c.sidecar.driver_gid, 1001);
        }
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        ck_assert_int_eq(apply(&c, "driver:\n  uid: 1\n  gid: 2147483647\n", &err), 0);
        ck_assert_uint_eq(c.sidecar.driver_uid, 1);
        ck_assert_uint_eq(c.sidecar.driver_gid, 2147483647);
}
END_TEST

START_TEST(string_settings_checked)
{
        static const char *const bad[] = {
            "selector:\n  key: \"bad key\"\n",
            "selector:\n  value: \"-x\"\n",
            "agentContainer: Sandbox\n",
            "agentServiceAccountToken: drop\n",
            "agentServiceAccountToken: \"\"\n",
            "volumes:\n  home:\n    mountPath: /var/lib/./hangar\n",
            "volumes:\n  home:\n    mountPath: //var/lib/hangar\n",
            "volumes:\n  home:\n    mountPath: /var/lib/hangar/..\n",
            "driver:\n  resources:\n    requests:\n      memory: 64MB\n",
            "driver:\n  resources:\n    limits:\n      cpu: \"-1\"\n",
            "volumes:\n  home:\n    mountPath: var/lib\n",
            "volumes:\n  home:\n    mountPath: /var/lib/../etc\n",
            "volumes:\n  ctl:\n    mountPath: /var/lib/hangar-ctl/\n",
            "volumes:\n  ctl:\n    sizeLimit: big\n",
            "server:\n  address: localhost\n",
            "server:\n  port: 65536\n",
            "logLevel: verbose\n",
            "driver:\n  command: []\n",
            "driver:\n  command: sleep\n",
            "driver:\n  command: [sleep, [1]]\n",
            "driver:\n  probes:\n    enabled: sometimes\n",
            "driver:\n  probes:\n    startup:\n      periodSeconds: 0\n",
            "driver:\n  probes:\n    liveness:\n      timeoutSeconds: 3601\n",
            "driver:\n  probes:\n    liveness:\n      failureThreshold: -1\n",
            "driver:\n  probes:\n    liveness:\n      every: 10\n",
            "driverSidecar: maybe\n",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                _config_ webhook_settings_t c = {0};
                hg_error_t err = {0};
                ck_assert_int_eq(settings_init_defaults(&c), 0);
                ck_assert_msg(apply(&c, bad[i], &err) == -EINVAL, "accepted: %s", bad[i]);
                ck_assert_msg(strstr(err.message, "cfg.yaml:"), "%s -> %s", bad[i], err.message);
        }
}
END_TEST

START_TEST(mount_paths_must_not_nest)
{
        static const struct {
                const char *home, *ctl;
                bool ok;
        } t[] = {
            {"/var/lib/hangar", "/var/lib/hangar-ctl", true},
            {"/var/lib/hangar-ctl", "/var/lib/hangar", true},
            {"/a/b", "/a/c", true},
            {"/var/lib/hangar", "/var/lib/hangar", false},
            {"/var/lib/hangar", "/var/lib/hangar/ctl", false},
            {"/var/lib/hangar/home", "/var/lib/hangar", false},
            {"/", "/run/ctl", false},
            {"/home", "/", false},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                char yaml[256];
                (void)snprintf(yaml, sizeof(yaml),
                               "volumes:\n  home:\n    mountPath: %s\n  ctl:\n    mountPath: %s\n",
                               t[i].home, t[i].ctl);
                const char *path = unit_write_file(dir, "paths.yaml", yaml);
                _config_ webhook_settings_t c = {0};
                hg_error_t err = {0};
                int r = settings_load(&c, path, &err);
                ck_assert_msg((r == 0) == t[i].ok, "home %s ctl %s: %d %s", t[i].home, t[i].ctl, r,
                              err.message);
                if (!t[i].ok) {
                        ck_assert_int_eq(r, -EINVAL);
                        ck_assert_msg_has(err, "must not be equal or nested");
                        assert_all_freed(&c);
                }
        }
}
END_TEST

START_TEST(long_paths_refused)
{
        /* A path that does not fit PATH_MAX once normalised is no path. */
        char path[5000];
        size_t n = 0;
        while (n + 3 < sizeof(path)) {
                path[n++] = '/';
                path[n++] = 'a';
        }
        path[n] = '\0';
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        char assignment[sizeof(path) + 32];
        (void)snprintf(assignment, sizeof(assignment), "volumes.home.mountPath=%s", path);
        ck_assert_int_eq(settings_set(&c, assignment, &err), -EINVAL);
        ck_assert_str_eq(c.sidecar.home_path, "/var/lib/hangar");
        /* Just under the limit is fine. */
        path[4094] = '\0';
        if (path[4093] == '/')
                path[4093] = '\0';
        (void)snprintf(assignment, sizeof(assignment), "volumes.home.mountPath=%s", path);
        ck_assert_msg(settings_set(&c, assignment, &err) == 0, "%s", err.message);
}
END_TEST

START_TEST(ports_must_differ)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        ck_assert_int_eq(apply(&c, "server:\n  port: 9000\n  healthPort: 9000\n", &err), 0);
        ck_assert_int_eq(settings_validate(&c, &err), -EINVAL);
        ck_assert_msg_has(err, "healthPort");
}
END_TEST

START_TEST(error_leaves_nothing_allocated)
{
        /* Errors at each stage: YAML syntax, a bad value, the environment,
         * validation, an unreadable file. Run under ASan to see leaks. */
        const char *path = unit_write_file(dir, "e1.yaml", "driver: [\n");
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_load(&c, path, &err), -EINVAL);
        assert_all_freed(&c);
        path = unit_write_file(dir, "e2.yaml",
                               "selector:\n  key: example.com/k\ndriver:\n  command: [a, b]\n"
                               "  uid: 0\n");
        ck_assert_int_eq(settings_load(&c, path, &err), -EINVAL);
        ck_assert_msg_has(err, ":5");
        assert_all_freed(&c);
        path = unit_write_file(dir, "e3.yaml", "agentContainer: agent\n");
        ck_assert_int_eq(setenv("HANGAR_PORT", "http", 1), 0);
        ck_assert_int_eq(settings_load(&c, path, &err), -EINVAL);
        ck_assert_msg_has(err, "HANGAR_PORT");
        assert_all_freed(&c);
        unsetenv("HANGAR_PORT");
        path = unit_write_file(dir, "e4.yaml",
                               "volumes:\n  home:\n    mountPath: /x\n  ctl:\n"
                               "    mountPath: /x/y\n");
        ck_assert_int_eq(settings_load(&c, path, &err), -EINVAL);
        assert_all_freed(&c);
        char missing[4200];
        (void)snprintf(missing, sizeof(missing), "%s/missing.yaml", dir);
        ck_assert_int_eq(settings_load(&c, missing, &err), -ENOENT);
        ck_assert_msg_has(err, missing);
        assert_all_freed(&c);
}
END_TEST

START_TEST(oversized_file_refused)
{
        size_t n = CONFIG_MAX_FILE_BYTES + 1;
        _cleanup_free_ char *big = malloc(n + 1);
        ck_assert_ptr_nonnull(big);
        memset(big, '#', n);
        big[n] = '\0';
        const char *path = unit_write_file(dir, "big.yaml", big);
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(settings_load(&c, path, &err), -EFBIG);
        ck_assert_msg_has(err, "larger than 1 MiB");
        assert_all_freed(&c);
}
END_TEST

START_TEST(dump_reflects_settings)
{
        _config_ webhook_settings_t c = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        c.sidecar.driver_uid = 4242;
        _cleanup_free_ char *text = settings_dump(&c);
        ck_assert_ptr_nonnull(text);
        _unit_json_ json_t *j = unit_json(text);
        ck_assert_int_eq(json_integer_value(json_object_get(j, "driver.uid")), 4242);
        ck_assert_json_eq_text(json_object_get(j, "driver.command"),
                               "[\"hangar-driver\", \"serve\"]");
        ck_assert_int_eq(
            json_integer_value(json_object_get(j, "driver.probes.liveness.periodSeconds")), 10);
        ck_assert(json_is_false(json_object_get(j, "driverSidecar")));
        ck_assert_str_eq(json_string_value(json_object_get(j, "volumes.ctl.sizeLimit")), "64Mi");
}
END_TEST

/* The sidecar's reader skips the webhook's top-level keys by name
 * (config_webhook_keys): that list must be exactly the top-level keys of
 * the webhook's rows, and hold none of the sidecar's. */
static bool is_webhook_key(const char *path, size_t len)
{
        for (const char *const *k = config_webhook_keys; *k; k++)
                if (strlen(*k) == len && strncmp(*k, path, len) == 0)
                        return true;
        return false;
}

static void count_webhook_row(const char *path, void *data)
{
        size_t *used = data;
        size_t len = strcspn(path, ".");
        ck_assert_msg(is_webhook_key(path, len), "%s: not in config_webhook_keys", path);
        for (size_t i = 0; config_webhook_keys[i]; i++)
                if (strlen(config_webhook_keys[i]) == len &&
                    strncmp(config_webhook_keys[i], path, len) == 0)
                        used[i]++;
}

START_TEST(webhook_keys_match_the_sidecars_skip_list)
{
        size_t used[16] = {0};
        size_t n = 0;
        while (config_webhook_keys[n])
                n++;
        ck_assert_uint_le(n, ARRAY_SIZE(used));
        settings_foreach_key(count_webhook_row, used);
        for (size_t i = 0; i < n; i++)
                ck_assert_msg(used[i] > 0, "%s: no webhook setting", config_webhook_keys[i]);
        _cleanup_settings_ webhook_settings_t c = {0};
        ck_assert_int_eq(settings_init_defaults(&c), 0);
        conf_part_t side = config_part(&c.sidecar);
        for (size_t i = 0; i < side.n; i++)
                ck_assert_msg(!is_webhook_key(side.rows[i].path, strcspn(side.rows[i].path, ".")),
                              "%s: the sidecar's, yet skipped by its reader", side.rows[i].path);
}
END_TEST

/* Loads text as a config file (defaults, file, environment, validation). */
static int load_text(webhook_settings_t *c, const char *text, hg_error_t *err)
{
        return settings_load(c, unit_write_file(dir, "tls.yaml", text), err);
}

/* Loading text must fail with -EINVAL, a message holding want, and nothing
 * left allocated. */
static void assert_load_refused(const char *text, const char *want)
{
        _config_ webhook_settings_t c = {0};
        hg_error_t err = {0};
        int r = load_text(&c, text, &err);
        ck_assert_msg(r == -EINVAL, "accepted (%d): %s", r, text);
        ck_assert_msg(strstr(err.message, want), "%s -> message lacks \"%s\": %s", text, want,
                      err.message);
        assert_all_freed(&c);
}

static void assert_load_ok(const char *text, webhook_settings_t *c)
{
        hg_error_t err = {0};
        int r = load_text(c, text, &err);
        ck_assert_msg(r == 0, "refused: %s -> %s", text, err.message);
}

START_TEST(tls_mode_values)
{
        {
                _config_ webhook_settings_t c = {0};
                assert_load_ok("tls:\n  mode: files\n", &c);
                ck_assert_str_eq(c.tls_mode, SETTINGS_TLS_FILES);
        }
        {
                _config_ webhook_settings_t c = {0};
                assert_load_ok("tls:\n  mode: selfManaged\n  serviceName: hangar-webhook\n"
                               "  secretName: certs\n  secretNamespace: hangar-system\n"
                               "  webhookConfigName: hangar-webhook\n  syncSeconds: 5\n"
                               "kubeconfig: /etc/kube/config\n",
                               &c);
                ck_assert_str_eq(c.tls_mode, SETTINGS_TLS_SELF_MANAGED);
                ck_assert_str_eq(c.tls_service_name, "hangar-webhook");
                ck_assert_str_eq(c.tls_secret_name, "certs");
                ck_assert_str_eq(c.tls_secret_namespace, "hangar-system");
                ck_assert_str_eq(c.tls_webhook_config, "hangar-webhook");
                ck_assert_uint_eq(c.tls_sync_seconds, 5);
                ck_assert_str_eq(c.kubeconfig, "/etc/kube/config");
        }
        static const char *const bad[] = {"self-managed", "SelfManaged", "selfmanaged", "Files",
                                          "FILES",        "auto",        "\"\"",        "[files]"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                char yaml[128];
                (void)snprintf(yaml, sizeof(yaml), "tls:\n  serviceName: s\n  mode: %s\n", bad[i]);
                assert_load_refused(yaml, "tls.mode");
                assert_load_refused(yaml, ":3");
        }
        /* The environment's form is checked the same way. */
        ck_assert_int_eq(setenv("HANGAR_TLS_MODE", "selfmanaged", 1), 0);
        assert_load_refused("tls:\n  serviceName: s\n", "HANGAR_TLS_MODE");
        unsetenv("HANGAR_TLS_MODE");
}
END_TEST

START_TEST(tls_renew_before_less_than_leaf)
{
        static const struct {
                unsigned leaf, renew;
                bool ok;
        } t[] = {
            {90, 30, true},  {30, 29, true},  {1, 0, true},  {3650, 3649, true},
            {30, 30, false}, {30, 31, false}, {1, 1, false}, {10, 3649, false},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                char yaml[128];
                (void)snprintf(yaml, sizeof(yaml), "tls:\n  leafDays: %u\n  renewBeforeDays: %u\n",
                               t[i].leaf, t[i].renew);
                if (t[i].ok) {
                        _config_ webhook_settings_t c = {0};
                        assert_load_ok(yaml, &c);
                        ck_assert_uint_eq(c.tls_leaf_days, t[i].leaf);
                        ck_assert_uint_eq(c.tls_renew_before_days, t[i].renew);
                } else {
                        assert_load_refused(yaml, "must be less than tls.leafDays");
                }
        }
        /* Renewing before the default 90 days from the environment. */
        ck_assert_int_eq(setenv("HANGAR_TLS_RENEW_BEFORE_DAYS", "90", 1), 0);
        assert_load_refused("tls:\n  mode: files\n", "tls.renewBeforeDays (90)");
        unsetenv("HANGAR_TLS_RENEW_BEFORE_DAYS");
        /* Out of each setting's own range. */
        assert_load_refused("tls:\n  leafDays: 0\n", "tls.leafDays");
        assert_load_refused("tls:\n  leafDays: 3651\n", "tls.leafDays");
        assert_load_refused("tls:\n  renewBeforeDays: 3650\n  leafDays: 3650\n",
                            "tls.renewBeforeDays");
        assert_load_refused("tls:\n  renewBeforeDays: -1\n", "tls.renewBeforeDays");
        assert_load_refused("tls:\n  caDays: 0\n", "tls.caDays");
        assert_load_refused("tls:\n  syncSeconds: 0\n", "tls.syncSeconds");
}
END_TEST

START_TEST(tls_ca_rotation_settings)
{
        _config_ webhook_settings_t c = {0};
        assert_load_ok(
            "tls:\n  caOverlapSeconds: 8\n  syncSeconds: 1\nserver:\n  certPollSeconds: 1\n", &c);
        ck_assert_uint_eq(c.tls_ca_overlap_seconds, 8);
        ck_assert_uint_eq(settings_ca_overlap_seconds(&c), 8);
        /* Automatic (0, the default): ten rounds, at least ten minutes; so a
         * long syncSeconds never makes a configuration invalid. */
        _config_ webhook_settings_t d = {0};
        assert_load_ok("tls:\n  syncSeconds: 3600\n", &d);
        ck_assert_uint_eq(d.tls_ca_overlap_seconds, 0);
        ck_assert_uint_eq(settings_ca_overlap_seconds(&d), 36020);
        _config_ webhook_settings_t e = {0};
        assert_load_ok("tls:\n  syncSeconds: 5\n", &e);
        ck_assert_uint_eq(settings_ca_overlap_seconds(&e), 600);
        /* Every replica must sync and reload within one overlap. */
        assert_load_refused("tls:\n  caOverlapSeconds: 62\n", "tls.caOverlapSeconds (62)");
        /* A new CA must not be due for rotation at once. */
        assert_load_refused("tls:\n  caDays: 30\n", "tls.caDays (30) must be more than");
}
END_TEST

START_TEST(tls_self_managed_needs_names)
{
        assert_load_refused("tls:\n  mode: selfManaged\n", "needs tls.serviceName");
        assert_load_refused("tls:\n  mode: selfManaged\n  dnsNames: []\n  ipAddresses: []\n",
                            "needs tls.serviceName");
        assert_load_refused("tls:\n  mode: selfManaged\n  serviceName: \"\"\n",
                            "needs tls.serviceName");
        static const char *const ok[] = {
            "tls:\n  mode: selfManaged\n  serviceName: webhook\n",
            "tls:\n  mode: selfManaged\n  dnsNames: [webhook.example.com]\n",
            "tls:\n  mode: selfManaged\n  ipAddresses: [\"10.1.2.3\"]\n",
            /* files mode needs no names */
            "tls:\n  mode: files\n",
        };
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                _config_ webhook_settings_t c = {0};
                assert_load_ok(ok[i], &c);
        }
}
END_TEST

START_TEST(tls_names_checked)
{
        static const char *const bad_dns[] = {
            "Bad_Name", "UPPER.example.com", "-lead.example.com", "trail-.example.com", "a..b",
            "",         "has space",         "*.example.com",     "x.example.com.",
        };
        for (size_t i = 0; i < ARRAY_SIZE(bad_dns); i++) {
                char yaml[256];
                (void)snprintf(yaml, sizeof(yaml),
                               "tls:\n  dnsNames:\n  - ok.example.com\n  - \"%s\"\n", bad_dns[i]);
                assert_load_refused(yaml, "tls.dnsNames");
        }
        static const char *const bad_ip[] = {"1.2.3",       "256.0.0.1", "10.0.0.1/24", "::g",
                                             "1.2.3.4.5",   "",          "localhost",   "[::1]",
                                             "10.0.0.1:80", "0x7f.0.0.1"};
        for (size_t i = 0; i < ARRAY_SIZE(bad_ip); i++) {
                char yaml[256];
                (void)snprintf(yaml, sizeof(yaml),
                               "tls:\n  ipAddresses:\n  - \"10.0.0.1\"\n  - \"%s\"\n", bad_ip[i]);
                assert_load_refused(yaml, "tls.ipAddresses");
        }
        /* The message quotes the bad entry. */
        assert_load_refused("tls:\n  dnsNames: [Bad_Name]\n", "'Bad_Name' is not a DNS name");
        assert_load_refused("tls:\n  ipAddresses: [\"1.2.3\"]\n", "'1.2.3' is not an IP address");
        /* Not a list, or a list of something else. */
        assert_load_refused("tls:\n  dnsNames: webhook.example.com\n", "tls.dnsNames");
        assert_load_refused("tls:\n  dnsNames: [[a]]\n", "tls.dnsNames");
        assert_load_refused("tls:\n  ipAddresses: {a: 1}\n", "tls.ipAddresses");
        /* From the environment, as JSON arrays. */
        ck_assert_int_eq(setenv("HANGAR_TLS_DNS_NAMES", "[\"Bad_Name\"]", 1), 0);
        assert_load_refused("tls:\n  mode: files\n", "tls.dnsNames");
        unsetenv("HANGAR_TLS_DNS_NAMES");
        ck_assert_int_eq(setenv("HANGAR_TLS_IP_ADDRESSES", "10.0.0.1", 1), 0);
        assert_load_refused("tls:\n  mode: files\n", "HANGAR_TLS_IP_ADDRESSES");
        unsetenv("HANGAR_TLS_IP_ADDRESSES");

        /* Good ones, IPv4 and IPv6, read back in order. */
        _config_ webhook_settings_t c = {0};
        assert_load_ok("tls:\n  dnsNames: [webhook.example.com, localhost, a-b.c]\n"
                       "  ipAddresses: [\"10.0.0.1\", \"::1\", \"fe80::1\", \"2001:db8::7\"]\n",
                       &c);
        ck_assert_uint_eq(c.tls_dns_names.n, 3);
        ck_assert_str_eq(c.tls_dns_names.items[0], "webhook.example.com");
        ck_assert_str_eq(c.tls_dns_names.items[2], "a-b.c");
        ck_assert_uint_eq(c.tls_ip_addresses.n, 4);
        ck_assert_str_eq(c.tls_ip_addresses.items[1], "::1");
        ck_assert_str_eq(c.tls_ip_addresses.items[3], "2001:db8::7");
}
END_TEST

/* A guard list that would open hangar-driver to everyone, or never match. */
START_TEST(guard_names_checked)
{
        static const char *const bad[] = {
            "\"\"",
            "\" hangar\"",
            "\"system:serviceaccount:hangar:hangar \"",
            "system:authenticated",
            "system:unauthenticated",
            "system:serviceaccounts",
            "system:anonymous",
        };
        static const char *const keys[] = {"driverUsers", "driverGroups"};
        for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
                for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                        char yaml[256], key[64];
                        (void)snprintf(yaml, sizeof(yaml), "guard:\n  %s: [ok, %s]\n", keys[k],
                                       bad[i]);
                        (void)snprintf(key, sizeof(key), "guard.%s", keys[k]);
                        assert_load_refused(yaml, key);
                }
        assert_load_refused("guard:\n  driverGroups: [system:authenticated]\n",
                            "names everyone of a kind");
        /* One namespace's service accounts are a choice the admin may make. */
        _config_ webhook_settings_t c = {0};
        assert_load_ok("guard:\n  driverUsers: [\"system:serviceaccount:hangar:hangar\"]\n"
                       "  driverGroups: [\"system:serviceaccounts:hangar\"]\n",
                       &c);
        ck_assert_uint_eq(c.guard_driver_groups.n, 1);
}
END_TEST

START_TEST(tls_name_list_lengths)
{
        /* Up to 32 entries each; 33 is refused. */
        for (int n = 32; n <= 33; n++) {
                strbuf_t dns = {0}, ips = {0};
                ck_assert_int_eq(strbuf_puts(&dns, "tls:\n  dnsNames:\n"), 0);
                ck_assert_int_eq(strbuf_puts(&ips, "tls:\n  ipAddresses:\n"), 0);
                for (int i = 0; i < n; i++) {
                        ck_assert_int_eq(strbuf_printf(&dns, "  - n%d.example.com\n", i), 0);
                        ck_assert_int_eq(strbuf_printf(&ips, "  - \"10.0.1.%d\"\n", i), 0);
                }
                if (n == 32) {
                        _config_ webhook_settings_t c = {0};
                        assert_load_ok(dns.data, &c);
                        ck_assert_uint_eq(c.tls_dns_names.n, 32);
                        _config_ webhook_settings_t d = {0};
                        assert_load_ok(ips.data, &d);
                        ck_assert_uint_eq(d.tls_ip_addresses.n, 32);
                } else {
                        assert_load_refused(dns.data, "tls.dnsNames");
                        assert_load_refused(ips.data, "tls.ipAddresses");
                }
                strbuf_free(&dns);
                strbuf_free(&ips);
        }
}
END_TEST

START_TEST(dotted_keys_refused)
{
        static const struct {
                const char *text, *want;
        } t[] = {
            {"tls.mode: files\n", "cfg.yaml:1: unknown key 'tls.mode'"},
            {"logLevel: info\ntls.leafDays: 5\n", "cfg.yaml:2: unknown key 'tls.leafDays'"},
            {"tls:\n  leaf.days: 5\n", "cfg.yaml:2: unknown key 'tls.leaf.days'"},
            {"driver.uid: 5\n", "cfg.yaml:1: unknown key 'driver.uid'"},
            {"driver:\n  resources.requests:\n    cpu: 1\n",
             "unknown key 'driver.resources.requests'"},
            {".: 1\n", "unknown key '.'"},
            {"\"\": 1\n", "unknown key ''"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                _config_ webhook_settings_t c = {0};
                hg_error_t err = {0};
                ck_assert_int_eq(settings_init_defaults(&c), 0);
                ck_assert_msg(apply(&c, t[i].text, &err) == -EINVAL, "accepted: %s", t[i].text);
                ck_assert_msg(strstr(err.message, t[i].want), "%s -> %s", t[i].text, err.message);
                ck_assert_str_eq(c.tls_mode, "files");
                ck_assert_uint_eq(c.tls_leaf_days, 90);
                ck_assert_uint_eq(c.sidecar.driver_uid, 1001);
        }
}
END_TEST

static Suite *config_suite(void)
{
        Suite *s = suite_create("config");
        TCase *tc = tcase_create("load");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, defaults_exactly);
        tcase_add_test(tc, load_without_file_is_defaults);
        tcase_add_test(tc, yaml_overrides);
        tcase_add_test(tc, explicit_empty_document_is_defaults);
        tcase_add_test(tc, empty_file_is_defaults);
        tcase_add_test(tc, env_wins_over_file);
        tcase_add_test(tc, env_errors_name_the_variable);
        tcase_add_test(tc, dump_reflects_settings);
        tcase_add_test(tc, webhook_keys_match_the_sidecars_skip_list);
        suite_add_tcase(s, tc);
        tc = tcase_create("errors");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, error_names_file_line_and_key);
        tcase_add_test(tc, load_error_names_the_path);
        tcase_add_test(tc, unknown_key_rejected_with_line);
        tcase_add_test(tc, uid_gid_ranges);
        tcase_add_test(tc, string_settings_checked);
        tcase_add_test(tc, mount_paths_must_not_nest);
        tcase_add_test(tc, long_paths_refused);
        tcase_add_test(tc, ports_must_differ);
        tcase_add_test(tc, error_leaves_nothing_allocated);
        tcase_add_test(tc, oversized_file_refused);
        suite_add_tcase(s, tc);
        tc = tcase_create("tls");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, tls_mode_values);
        tcase_add_test(tc, tls_renew_before_less_than_leaf);
        tcase_add_test(tc, tls_ca_rotation_settings);
        tcase_add_test(tc, tls_self_managed_needs_names);
        tcase_add_test(tc, tls_names_checked);
        tcase_add_test(tc, tls_name_list_lengths);
        tcase_add_test(tc, guard_names_checked);
        tcase_add_test(tc, dotted_keys_refused);
        tcase_add_test(tc, set_by_dotted_key);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(config_suite());
}
