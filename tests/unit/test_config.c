/* Unit tests for common/conf/config: the sidecar's reader of the shared
 * configuration file (hangar-driver, hangar-relay, hangar-probe). It reads
 * its own settings only: the webhook's keys in the same file are skipped
 * unread, the webhook's environment variables never looked at, and a typo
 * is still an error. The whole file as the webhook reads it:
 * test_settings.c. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
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

START_TEST(defaults)
{
        _cleanup_config_ hg_config_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(config_load(&c, NULL, &err), 0);
        ck_assert_str_eq(c.home_path, "/var/lib/hangar");
        ck_assert_str_eq(c.ctl_path, "/var/lib/hangar-ctl");
        ck_assert_uint_eq(c.driver_uid, 1001);
        ck_assert_str_eq(c.agent_container, "sandbox");
}
END_TEST

/* The chart's whole file, webhook sections included: the sidecar reads its
 * paths and skips the rest, even values the webhook would refuse (a TLS
 * setting is none of the relay's business). */
static const char shared_file[] = "driverSidecar: true\n"
                                  "selector: {key: hangar.dev/sandbox, value: \"yes\"}\n"
                                  "guard: {driverUsers: [\"system:serviceaccount:h:h\"]}\n"
                                  "server: {port: 8443, healthPort: 8443, certFile: \"\"}\n"
                                  "logLevel: chatty\n"
                                  "tls: {mode: sideways, leafDays: 0, dnsNames: [\"not a name\"]}\n"
                                  "kubeconfig: /nonexistent\n"
                                  "volumes:\n"
                                  "  home: {mountPath: /srv/home}\n"
                                  "  ctl: {mountPath: /srv/ctl}\n"
                                  "driver: {uid: 2001}\n";

START_TEST(webhook_sections_skipped_unread)
{
        _cleanup_config_ hg_config_t c = {0};
        hg_error_t err = {0};
        int r = config_load(&c, unit_write_file(dir, "c.yaml", shared_file), &err);
        ck_assert_msg(r == 0, "%s", err.message);
        ck_assert_str_eq(c.home_path, "/srv/home");
        ck_assert_str_eq(c.ctl_path, "/srv/ctl");
        ck_assert_uint_eq(c.driver_uid, 2001);
}
END_TEST

START_TEST(webhook_environment_not_read)
{
        ck_assert_int_eq(setenv("HANGAR_TLS_MODE", "sideways", 1), 0);
        ck_assert_int_eq(setenv("HANGAR_PORT", "not a port", 1), 0);
        ck_assert_int_eq(setenv("HANGAR_K8S_DRIVER_SIDECAR", "maybe", 1), 0);
        ck_assert_int_eq(setenv("HANGAR_HOME_PATH", "/srv/home", 1), 0);
        _cleanup_config_ hg_config_t c = {0};
        hg_error_t err = {0};
        int r = config_load(&c, NULL, &err);
        ck_assert_msg(r == 0, "%s", err.message);
        ck_assert_str_eq(c.home_path, "/srv/home");
}
END_TEST

/* driver.uidSplit (HANGAR_DRIVER_UID_SPLIT) is what the webhook writes as
 * the injected driver's HANGAR_UID_SPLIT; the process's own HANGAR_UID_SPLIT
 * (a probe's or relay's mode) never sets it. */
/* driver.binaries: agentImage by default, initContainer by file or
 * environment, anything else refused by name; delivered, the bundle's
 * fixed path may not hold or nest hangar's volumes. */
START_TEST(binaries_setting)
{
        _cleanup_config_ hg_config_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(config_load(&c, NULL, &err), 0);
        ck_assert_str_eq(c.driver_binaries_from, "agentImage");
        ck_assert_str_eq(c.driver_bundle_image, "localhost/hangar-bin:" HANGAR_VERSION);
        config_free(&c);
        ck_assert_int_eq(setenv("HANGAR_DRIVER_BINARIES_FROM", "initContainer", 1), 0);
        ck_assert_int_eq(config_load(&c, NULL, &err), 0);
        ck_assert_str_eq(c.driver_binaries_from, "initContainer");
        config_free(&c);
        ck_assert_int_eq(setenv("HANGAR_DRIVER_BINARIES_FROM", "baked", 1), 0);
        ck_assert_int_eq(config_load(&c, NULL, &err), -EINVAL);
        ck_assert_msg(strstr(err.message, "HANGAR_DRIVER_BINARIES_FROM") &&
                          strstr(err.message, "agentImage, initContainer or imageVolume"),
                      "%s", err.message);
        unsetenv("HANGAR_DRIVER_BINARIES_FROM");
        ck_assert_int_eq(
            config_load(
                &c, unit_write_file(dir, "b.yaml", "driver: {binaries: {bundleImage: \"a b\"}}\n"),
                &err),
            -EINVAL);
        ck_assert_int_eq(
            config_load(&c,
                        unit_write_file(dir, "n.yaml",
                                        "driver: {binaries: {from: initContainer}}\n"
                                        "volumes: {home: {mountPath: /opt/hangar/home}}\n"),
                        &err),
            -EINVAL);
        ck_assert_msg(strstr(err.message, "/opt/hangar"), "%s", err.message);
        /* The same paths with the binaries in the agent's image: no clash. */
        ck_assert_int_eq(config_load(&c,
                                     unit_write_file(dir, "i.yaml",
                                                     "volumes: {home: {mountPath: /opt/hangar}}\n"),
                                     &err),
                         0);
}
END_TEST

START_TEST(uid_split_setting)
{
        _cleanup_config_ hg_config_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(setenv("HANGAR_UID_SPLIT", "required", 1), 0);
        ck_assert_int_eq(config_load(&c, NULL, &err), 0);
        ck_assert_str_eq(c.driver_uid_split, "auto");
        config_free(&c);
        ck_assert_int_eq(setenv("HANGAR_DRIVER_UID_SPLIT", "required", 1), 0);
        ck_assert_int_eq(config_load(&c, NULL, &err), 0);
        ck_assert_str_eq(c.driver_uid_split, "required");
        config_free(&c);
        static const char *const bad[] = {"", "Required", "maybe"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                ck_assert_int_eq(setenv("HANGAR_DRIVER_UID_SPLIT", bad[i], 1), 0);
                ck_assert_int_eq(config_load(&c, NULL, &err), -EINVAL);
                ck_assert_msg(strstr(err.message, "HANGAR_DRIVER_UID_SPLIT") &&
                                  strstr(err.message, "off, auto or required"),
                              "%s", err.message);
        }
        unsetenv("HANGAR_DRIVER_UID_SPLIT");
        /* The file's scalars are strings: off is the mode, quoted or not. */
        ck_assert_int_eq(
            config_load(&c, unit_write_file(dir, "s.yaml", "driver: {uidSplit: off}\n"), &err), 0);
        ck_assert_str_eq(c.driver_uid_split, "off");
}
END_TEST

/* Skipping is by name: a top-level typo, or one inside the sidecar's own
 * sections, is still an error naming the line and key. */
START_TEST(unknown_keys_still_refused)
{
        static const struct {
                const char *text, *want;
        } cases[] = {
            {"volume:\n  home: {mountPath: /srv}\n", "c.yaml:1: unknown key 'volume'"},
            {"driver:\n  uidd: 5\n", "c.yaml:2: unknown key 'driver.uidd'"},
            {"tls.mode: files\n", "unknown key 'tls.mode'"},
            {"driver:\n  uid: 0\n", "key 'driver.uid'"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _cleanup_config_ hg_config_t c = {0};
                hg_error_t err = {0};
                ck_assert_int_eq(
                    config_load(&c, unit_write_file(dir, "c.yaml", cases[i].text), &err), -EINVAL);
                ck_assert_msg_has(err, cases[i].want);
        }
}
END_TEST

START_TEST(set_knows_only_the_sidecars_keys)
{
        _cleanup_config_ hg_config_t c = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(config_load(&c, NULL, &err), 0);
        ck_assert_int_eq(config_set(&c, "driver.uid=2001", &err), 0);
        ck_assert_uint_eq(c.driver_uid, 2001);
        ck_assert_int_eq(config_set(&c, "server.port=1", &err), -EINVAL);
        ck_assert_msg_has(err, "unknown key 'server.port'");
        ck_assert_int_eq(config_set(&c, "tls.mode=files", &err), -EINVAL);
}
END_TEST

START_TEST(mount_paths_must_not_nest)
{
        _cleanup_config_ hg_config_t c = {0};
        hg_error_t err = {0};
        const char *path = unit_write_file(dir, "c.yaml",
                                           "volumes:\n  home: {mountPath: /srv}\n"
                                           "  ctl: {mountPath: /srv/ctl}\n");
        ck_assert_int_eq(config_load(&c, path, &err), -EINVAL);
        ck_assert_msg_has(err, "must not be equal or nested");
        ck_assert_ptr_null(c.home_path);
}
END_TEST

START_TEST(dump_holds_only_the_sidecars_settings)
{
        _cleanup_config_ hg_config_t c = {0};
        ck_assert_int_eq(config_init_defaults(&c), 0);
        _cleanup_free_ char *text = config_dump(&c);
        ck_assert_ptr_nonnull(text);
        ck_assert_ptr_nonnull(strstr(text, "\"volumes.home.mountPath\""));
        ck_assert_ptr_null(strstr(text, "\"server."));
        ck_assert_ptr_null(strstr(text, "\"tls."));
        ck_assert_ptr_null(strstr(text, "\"selector."));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("config");
        TCase *tc = tcase_create("sidecar");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, defaults);
        tcase_add_test(tc, webhook_sections_skipped_unread);
        tcase_add_test(tc, webhook_environment_not_read);
        tcase_add_test(tc, unknown_keys_still_refused);
        tcase_add_test(tc, set_knows_only_the_sidecars_keys);
        tcase_add_test(tc, mount_paths_must_not_nest);
        tcase_add_test(tc, dump_holds_only_the_sidecars_settings);
        tcase_add_test(tc, uid_split_setting);
        tcase_add_test(tc, binaries_setting);
        suite_add_tcase(s, tc);
        return unit_run(s);
}
