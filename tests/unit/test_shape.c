/* Unit tests for common/shape: the mount table and the JSON it generates. */
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "jsondump.h"
#include "shape.h"
#include "strbuf.h"
#include "unit.h"

static hg_config_t cfg;

static void setup(void)
{
        ck_assert_int_eq(config_init_defaults(&cfg), 0);
}

static void teardown(void)
{
        config_free(&cfg);
}

/* Replaces a string setting (the config owns its strings). */
static void set_string(char **slot, const char *value)
{
        free(*slot);
        *slot = strdup(value);
        ck_assert_ptr_nonnull(*slot);
}

START_TEST(mount_table)
{
        /* Design page 000: agent reads home and never sees ctl; the driver
         * writes both; nobody else mounts ctl. */
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_AGENT, SHAPE_VOLUME_HOME),
                         SHAPE_ACCESS_READ_ONLY);
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_AGENT, SHAPE_VOLUME_CTL),
                         SHAPE_ACCESS_ABSENT);
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_DRIVER, SHAPE_VOLUME_HOME),
                         SHAPE_ACCESS_READ_WRITE);
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_DRIVER, SHAPE_VOLUME_CTL),
                         SHAPE_ACCESS_READ_WRITE);
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_OTHER, SHAPE_VOLUME_CTL),
                         SHAPE_ACCESS_ABSENT);
        /* Another container may read hangar-home, never write it. */
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_OTHER, SHAPE_VOLUME_HOME),
                         SHAPE_ACCESS_NOT_WRITABLE);
        /* Init and ephemeral containers mount neither volume. */
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_INIT_EPHEMERAL, SHAPE_VOLUME_HOME),
                         SHAPE_ACCESS_ABSENT);
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_INIT_EPHEMERAL, SHAPE_VOLUME_CTL),
                         SHAPE_ACCESS_ABSENT);
        ck_assert(shape_access_allows(SHAPE_ACCESS_NOT_WRITABLE, SHAPE_ACCESS_ABSENT));
        ck_assert(shape_access_allows(SHAPE_ACCESS_NOT_WRITABLE, SHAPE_ACCESS_READ_ONLY));
        ck_assert(!shape_access_allows(SHAPE_ACCESS_NOT_WRITABLE, SHAPE_ACCESS_READ_WRITE));
        ck_assert(!shape_access_allows(SHAPE_ACCESS_READ_ONLY, SHAPE_ACCESS_ABSENT));
        ck_assert(!shape_access_allows(SHAPE_ACCESS_ABSENT, SHAPE_ACCESS_READ_ONLY));
        ck_assert(shape_access_allows(SHAPE_ACCESS_READ_WRITE, SHAPE_ACCESS_READ_WRITE));
        ck_assert(!shape_access_allows((shape_access_t)42, SHAPE_ACCESS_ABSENT));
        /* Out of range fails closed. */
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_COUNT, SHAPE_VOLUME_HOME),
                         SHAPE_ACCESS_ABSENT);
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_AGENT, SHAPE_VOLUME_COUNT),
                         SHAPE_ACCESS_ABSENT);
        ck_assert_int_eq(shape_mount_access((shape_role_t)-1, SHAPE_VOLUME_HOME),
                         SHAPE_ACCESS_ABSENT);
}
END_TEST

START_TEST(names)
{
        ck_assert_str_eq(shape_volume_name(SHAPE_VOLUME_HOME), "hangar-home");
        ck_assert_str_eq(shape_volume_name(SHAPE_VOLUME_CTL), "hangar-ctl");
        ck_assert_str_eq(shape_volume_name(SHAPE_VOLUME_COUNT), "?");
        ck_assert_str_eq(shape_role_name(SHAPE_ROLE_AGENT), "agent");
        ck_assert_str_eq(shape_role_name(SHAPE_ROLE_DRIVER), "driver");
        ck_assert_str_eq(shape_role_name(SHAPE_ROLE_OTHER), "other");
        ck_assert_str_eq(shape_role_name(SHAPE_ROLE_INIT_EPHEMERAL), "init/ephemeral");
        ck_assert_str_eq(shape_role_name(SHAPE_ROLE_COUNT), "?");
        ck_assert_str_eq(shape_access_name(SHAPE_ACCESS_ABSENT), "not mounted");
        ck_assert_str_eq(shape_access_name(SHAPE_ACCESS_READ_ONLY), "read-only");
        ck_assert_str_eq(shape_access_name(SHAPE_ACCESS_READ_WRITE), "read-write");
        ck_assert_str_eq(shape_access_name(SHAPE_ACCESS_UNCHECKED), "any");
        ck_assert_str_eq(shape_access_name(SHAPE_ACCESS_NOT_WRITABLE), "read-only or not mounted");
        ck_assert_str_eq(shape_volume_path(&cfg, SHAPE_VOLUME_HOME), "/var/lib/hangar");
        ck_assert_str_eq(shape_volume_path(&cfg, SHAPE_VOLUME_CTL), "/var/lib/hangar-ctl");
        ck_assert_str_eq(shape_volume_path(&cfg, SHAPE_VOLUME_COUNT), "");
}
END_TEST

START_TEST(volume_json)
{
        _unit_json_ json_t *home = shape_volume_json(&cfg, SHAPE_VOLUME_HOME);
        _unit_json_ json_t *ctl = shape_volume_json(&cfg, SHAPE_VOLUME_CTL);
        ck_assert_json_eq_text(home, "{\"name\": \"hangar-home\", \"emptyDir\": {}}");
        ck_assert_json_eq_text(ctl, "{\"name\": \"hangar-ctl\", \"emptyDir\": "
                                    "{\"medium\": \"Memory\", \"sizeLimit\": \"64Mi\"}}");
        ck_assert_ptr_null(shape_volume_json(&cfg, SHAPE_VOLUME_COUNT));
        set_string(&cfg.ctl_size_limit, "1Mi");
        _unit_json_ json_t *ctl2 = shape_volume_json(&cfg, SHAPE_VOLUME_CTL);
        ck_assert_str_eq(json_string_value(unit_at(ctl2, "/emptyDir/sizeLimit")), "1Mi");
}
END_TEST

START_TEST(mount_json_follows_table)
{
        _unit_json_ json_t *agent_home =
            shape_mount_json(&cfg, SHAPE_ROLE_AGENT, SHAPE_VOLUME_HOME);
        ck_assert_json_eq_text(agent_home, "{\"name\": \"hangar-home\", \"mountPath\": "
                                           "\"/var/lib/hangar\", \"readOnly\": true}");
        ck_assert_ptr_null(shape_mount_json(&cfg, SHAPE_ROLE_AGENT, SHAPE_VOLUME_CTL));
        /* Read-write mounts omit readOnly, as the API server stores them. */
        _unit_json_ json_t *driver_home =
            shape_mount_json(&cfg, SHAPE_ROLE_DRIVER, SHAPE_VOLUME_HOME);
        ck_assert_json_eq_text(driver_home,
                               "{\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\"}");
        _unit_json_ json_t *driver_ctl =
            shape_mount_json(&cfg, SHAPE_ROLE_DRIVER, SHAPE_VOLUME_CTL);
        ck_assert_json_eq_text(
            driver_ctl, "{\"name\": \"hangar-ctl\", \"mountPath\": \"/var/lib/hangar-ctl\"}");
        ck_assert_ptr_null(shape_mount_json(&cfg, SHAPE_ROLE_OTHER, SHAPE_VOLUME_CTL));
        ck_assert_ptr_null(shape_mount_json(&cfg, SHAPE_ROLE_OTHER, SHAPE_VOLUME_HOME));
        /* Configured paths are used. */
        set_string(&cfg.home_path, "/home/h");
        _unit_json_ json_t *custom = shape_mount_json(&cfg, SHAPE_ROLE_AGENT, SHAPE_VOLUME_HOME);
        ck_assert_str_eq(json_string_value(json_object_get(custom, "mountPath")), "/home/h");
}
END_TEST

static const char *driver_default =
    "{\"name\": \"hangar-driver\", \"image\": \"registry.example/agent:1.2\","
    " \"imagePullPolicy\": \"IfNotPresent\", \"command\": [\"hangar-driver\", \"serve\"],"
    " \"resources\": {\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"}},"
    " \"securityContext\": {\"runAsUser\": 1001, \"runAsGroup\": 1001, \"runAsNonRoot\": true,"
    "   \"allowPrivilegeEscalation\": false, \"readOnlyRootFilesystem\": true,"
    "   \"privileged\": false, \"capabilities\": {\"drop\": [\"ALL\"]},"
    "   \"seccompProfile\": {\"type\": \"RuntimeDefault\"}},"
    " \"volumeMounts\": [{\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\"},"
    "   {\"name\": \"hangar-ctl\", \"mountPath\": \"/var/lib/hangar-ctl\"}],"
    " \"startupProbe\": {\"exec\": {\"command\": [\"hangar-driver\", \"ctl\", \"ping\"]},"
    "   \"periodSeconds\": 1, \"timeoutSeconds\": 5, \"failureThreshold\": 60,"
    "   \"successThreshold\": 1},"
    " \"livenessProbe\": {\"exec\": {\"command\": [\"hangar-driver\", \"ctl\", \"ping\"]},"
    "   \"periodSeconds\": 10, \"timeoutSeconds\": 5, \"failureThreshold\": 3,"
    "   \"successThreshold\": 1}}";

START_TEST(driver_container_json)
{
        _unit_json_ json_t *c = shape_driver_container_json(&cfg, "registry.example/agent:1.2");
        ck_assert_json_eq_text(c, driver_default);
        /* Field by field, the parts the split depends on. */
        ck_assert_str_eq(json_string_value(unit_at(c, "/name")), SHAPE_DRIVER_CONTAINER);
        ck_assert_int_eq(json_integer_value(unit_at(c, "/securityContext/runAsUser")), 1001);
        ck_assert(json_is_true(unit_at(c, "/securityContext/runAsNonRoot")));
        ck_assert(json_is_false(unit_at(c, "/securityContext/allowPrivilegeEscalation")));
        ck_assert(json_is_false(unit_at(c, "/securityContext/privileged")));
        ck_assert_ptr_null(unit_at(c, "/volumeMounts/0/readOnly"));
        ck_assert_ptr_null(unit_at(c, "/volumeMounts/1/readOnly"));
        ck_assert_ptr_null(unit_at(c, "/resources/limits"));
}
END_TEST

/* The probes (driver.probes.enabled, on by default): the command's own
 * binary, ctl ping; the configured timing, all four numbers set; none when
 * off (the older sidecar that runs sleep). */
START_TEST(driver_probes_follow_config)
{
        ck_assert(cfg.driver_probes);
        set_string(&cfg.driver_command.items[0], "sleep");
        _unit_json_ json_t *on = shape_driver_container_json(&cfg, "img");
        ck_assert_json_eq_text(json_object_get(on, "startupProbe"),
                               "{\"exec\": {\"command\": [\"sleep\", \"ctl\", \"ping\"]},"
                               " \"periodSeconds\": 1, \"timeoutSeconds\": 5,"
                               " \"failureThreshold\": 60, \"successThreshold\": 1}");
        cfg.driver_liveness = (hg_probe_timing_t){.period_s = 7, .timeout_s = 2, .failures = 4};
        ck_assert_uint_ge(cfg.driver_command.n, 1);
        set_string(&cfg.driver_command.items[0], "/opt/hd");
        _unit_json_ json_t *c = shape_driver_container_json(&cfg, "img");
        ck_assert_json_eq_text(unit_at(c, "/livenessProbe"),
                               "{\"exec\": {\"command\": [\"/opt/hd\", \"ctl\", \"ping\"]},"
                               " \"periodSeconds\": 7, \"timeoutSeconds\": 2,"
                               " \"failureThreshold\": 4, \"successThreshold\": 1}");
        ck_assert_json_eq_text(unit_at(c, "/startupProbe/exec/command"),
                               "[\"/opt/hd\", \"ctl\", \"ping\"]");
        cfg.driver_probes = false;
        _unit_json_ json_t *off = shape_driver_container_json(&cfg, "img");
        ck_assert_ptr_null(json_object_get(off, "livenessProbe"));
        ck_assert_ptr_null(json_object_get(off, "startupProbe"));
}
END_TEST

START_TEST(driver_container_follows_config)
{
        cfg.driver_uid = 2000;
        cfg.driver_gid = 3000;
        set_string(&cfg.driver_cpu_limit, "1");
        set_string(&cfg.home_path, "/h");
        set_string(&cfg.ctl_path, "/c");
        _unit_json_ json_t *c = shape_driver_container_json(&cfg, "img");
        ck_assert_int_eq(json_integer_value(unit_at(c, "/securityContext/runAsUser")), 2000);
        ck_assert_int_eq(json_integer_value(unit_at(c, "/securityContext/runAsGroup")), 3000);
        /* Only the limit that is set appears. */
        ck_assert_json_eq_text(unit_at(c, "/resources"),
                               "{\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"},"
                               " \"limits\": {\"cpu\": \"1\"}}");
        ck_assert_json_eq_text(unit_at(c, "/volumeMounts"),
                               "[{\"name\": \"hangar-home\", \"mountPath\": \"/h\"},"
                               " {\"name\": \"hangar-ctl\", \"mountPath\": \"/c\"}]");
        set_string(&cfg.driver_memory_limit, "256Mi");
        _unit_json_ json_t *c2 = shape_driver_container_json(&cfg, "img");
        ck_assert_json_eq_text(unit_at(c2, "/resources/limits"),
                               "{\"cpu\": \"1\", \"memory\": \"256Mi\"}");
        /* No image, no container. */
        ck_assert_ptr_null(shape_driver_container_json(&cfg, NULL));
}
END_TEST

/* The text jsondump writes for j (malloc'd). */
static char *text_of(const json_t *j)
{
        char *t = jsondump(j);
        ck_assert_ptr_nonnull(t);
        return t;
}

static void values_freep(shape_values_t **sv)
{
        shape_values_free(*sv);
}

/* Built once and shared: the same values, in the same member order, as the
 * builders give, and each text is what jsondump writes for its value. */
static void assert_values_match_builders(void)
{
        __attribute__((cleanup(values_freep))) shape_values_t *sv = NULL;
        ck_assert_int_eq(shape_values_new(&cfg, &sv), 0);
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                if (!shape_volume_used(&cfg, v)) {
                        ck_assert_ptr_null(sv->volume[v]);
                        ck_assert_ptr_null(sv->agent_mount[v]);
                        continue;
                }
                _unit_json_ json_t *want = shape_volume_json(&cfg, v);
                _cleanup_free_ char *want_text = text_of(want);
                ck_assert_str_eq(sv->volume_text[v], want_text);
                _cleanup_free_ char *have_text = text_of(sv->volume[v]);
                ck_assert_str_eq(have_text, want_text);
                _unit_json_ json_t *mount = shape_mount_json(&cfg, SHAPE_ROLE_AGENT, v);
                if (!mount) {
                        ck_assert_ptr_null(sv->agent_mount[v]);
                        ck_assert_ptr_null(sv->agent_mount_text[v]);
                        continue;
                }
                _cleanup_free_ char *mount_text = text_of(mount);
                ck_assert_str_eq(sv->agent_mount_text[v], mount_text);
                _cleanup_free_ char *have_mount = text_of(sv->agent_mount[v]);
                ck_assert_str_eq(have_mount, mount_text);
        }
        static const char *const images[] = {"img", "registry.example/agent:1.2",
                                             "q\"uote\\back\nline \xc3\xa9", ""};
        for (size_t i = 0; i < ARRAY_SIZE(images); i++) {
                _unit_json_ json_t *want = shape_driver_container_json(&cfg, images[i]);
                _cleanup_free_ char *want_text = text_of(want);
                _cleanup_strbuf_ strbuf_t text = {0};
                ck_assert_int_eq(strbuf_puts(&text, "prefix,"), 0);
                _unit_json_ json_t *have = shape_values_driver(sv, images[i], &text);
                ck_assert_ptr_nonnull(have);
                _cleanup_free_ char *have_text = text_of(have);
                ck_assert_str_eq(have_text, want_text); /* same members, same order */
                ck_assert_str_eq(text.data + strlen("prefix,"), want_text);
        }
        _unit_json_ json_t *copier = shape_bin_container_json(&cfg);
        if (!copier) {
                ck_assert_ptr_null(sv->bin_container);
        } else {
                _cleanup_free_ char *copier_text = text_of(copier);
                ck_assert_str_eq(sv->bin_container_text, copier_text);
        }
        /* No image, no container, and nothing written. */
        _cleanup_strbuf_ strbuf_t none = {0};
        ck_assert_ptr_null(shape_values_driver(sv, NULL, &none));
        ck_assert_ptr_null(none.data);
}

START_TEST(values_match_builders)
{
        assert_values_match_builders();
        /* And with every setting that changes them. */
        cfg.driver_uid = 2000;
        cfg.driver_gid = 3000;
        set_string(&cfg.driver_cpu_limit, "1");
        set_string(&cfg.driver_memory_limit, "256Mi");
        set_string(&cfg.home_path, "/h\"ome");
        set_string(&cfg.ctl_path, "/c");
        set_string(&cfg.ctl_size_limit, "1Gi");
        assert_values_match_builders();
        set_string(&cfg.driver_binaries_from, CONFIG_BINARIES_INIT_CONTAINER);
        assert_values_match_builders();
}
END_TEST

/* Delivered binaries: hangar-bin in memory, read-only at /opt/hangar in
 * the driver and the agent, written by the copier alone; the driver runs
 * the bundle's program and its probes too, and says so in its env. */
START_TEST(delivered_binaries)
{
        ck_assert(!shape_delivers_binaries(&cfg));
        ck_assert(!shape_volume_used(&cfg, SHAPE_VOLUME_BIN));
        ck_assert(shape_volume_used(&cfg, SHAPE_VOLUME_HOME));
        ck_assert_ptr_null(shape_bin_container_json(&cfg));
        ck_assert_ptr_null(shape_mount_json(&cfg, SHAPE_ROLE_AGENT, SHAPE_VOLUME_BIN));
        set_string(&cfg.driver_binaries_from, CONFIG_BINARIES_INIT_CONTAINER);
        ck_assert(shape_delivers_binaries(&cfg));
        ck_assert(shape_volume_used(&cfg, SHAPE_VOLUME_BIN));
        ck_assert(!shape_volume_used(&cfg, SHAPE_VOLUME_COUNT));

        static const shape_access_t want[SHAPE_ROLE_COUNT] = {
            [SHAPE_ROLE_AGENT] = SHAPE_ACCESS_READ_ONLY,
            [SHAPE_ROLE_DRIVER] = SHAPE_ACCESS_READ_ONLY,
            [SHAPE_ROLE_OTHER] = SHAPE_ACCESS_NOT_WRITABLE,
            [SHAPE_ROLE_INIT_EPHEMERAL] = SHAPE_ACCESS_ABSENT,
            [SHAPE_ROLE_BIN_COPIER] = SHAPE_ACCESS_READ_WRITE,
        };
        for (shape_role_t r = 0; r < SHAPE_ROLE_COUNT; r++)
                ck_assert_int_eq(shape_mount_access(r, SHAPE_VOLUME_BIN), want[r]);
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_BIN_COPIER, SHAPE_VOLUME_HOME),
                         SHAPE_ACCESS_ABSENT);
        ck_assert_int_eq(shape_mount_access(SHAPE_ROLE_BIN_COPIER, SHAPE_VOLUME_CTL),
                         SHAPE_ACCESS_ABSENT);

        _unit_json_ json_t *vol = shape_volume_json(&cfg, SHAPE_VOLUME_BIN);
        _cleanup_free_ char *vol_text = text_of(vol);
        ck_assert_str_eq(vol_text, "{\"name\":\"hangar-bin\",\"emptyDir\":{\"medium\":\"Memory\","
                                   "\"sizeLimit\":\"64Mi\"}}");
        _unit_json_ json_t *agent = shape_mount_json(&cfg, SHAPE_ROLE_AGENT, SHAPE_VOLUME_BIN);
        _cleanup_free_ char *agent_text = text_of(agent);
        ck_assert_str_eq(
            agent_text,
            "{\"name\":\"hangar-bin\",\"mountPath\":\"/opt/hangar\",\"readOnly\":true}");

        _unit_json_ json_t *copier = shape_bin_container_json(&cfg);
        ck_assert_ptr_nonnull(copier);
        ck_assert_str_eq(json_string_value(json_object_get(copier, "name")), "hangar-bin");
        ck_assert_str_eq(json_string_value(json_object_get(copier, "image")),
                         "localhost/hangar-bin:" HANGAR_VERSION);
        _cleanup_free_ char *command = text_of(json_object_get(copier, "command"));
        ck_assert_str_eq(command,
                         "[\"/bin/busybox\",\"cp\",\"-R\",\"/opt/hangar/.\",\"/mnt/hangar-bin/\"]");
        _cleanup_free_ char *mounts = text_of(json_object_get(copier, "volumeMounts"));
        ck_assert_str_eq(mounts, "[{\"name\":\"hangar-bin\",\"mountPath\":\"/mnt/hangar-bin\"}]");
        json_t *sc = json_object_get(copier, "securityContext");
        ck_assert_int_eq(json_integer_value(json_object_get(sc, "runAsUser")), 1001);
        ck_assert(json_is_true(json_object_get(sc, "readOnlyRootFilesystem")));
        ck_assert_ptr_null(json_object_get(copier, "restartPolicy"));

        _unit_json_ json_t *driver = shape_driver_container_json(&cfg, "img");
        _cleanup_free_ char *dcmd = text_of(json_object_get(driver, "command"));
        ck_assert_str_eq(dcmd, "[\"/opt/hangar/bin/hangar-driver\",\"serve\"]");
        json_t *probe_cmd = json_object_get(
            json_object_get(json_object_get(driver, "livenessProbe"), "exec"), "command");
        ck_assert_str_eq(json_string_value(json_array_get(probe_cmd, 0)),
                         "/opt/hangar/bin/hangar-driver");
        _cleanup_free_ char *dmounts = text_of(json_object_get(driver, "volumeMounts"));
        ck_assert_ptr_nonnull(strstr(dmounts, "{\"name\":\"hangar-bin\",\"mountPath\":\"/opt/"
                                              "hangar\",\"readOnly\":true}"));
        _cleanup_free_ char *env = text_of(json_object_get(driver, "env"));
        ck_assert_str_eq(env, "[{\"name\":\"PATH\",\"value\":\"/opt/hangar/bin:/usr/local/sbin:"
                              "/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\"},{\"name\":"
                              "\"HANGAR_DRIVER_BINARIES_FROM\",\"value\":\"initContainer\"}]");
        /* A path in driver.command is kept as it is. */
        set_string(&cfg.driver_command.items[0], "/usr/local/bin/hangar-driver");
        _unit_json_ json_t *kept = shape_driver_container_json(&cfg, "img");
        ck_assert_str_eq(json_string_value(json_array_get(json_object_get(kept, "command"), 0)),
                         "/usr/local/bin/hangar-driver");

        /* Its gVisor hints: a tmpfs in the sandbox, with its size. */
        const char *key;
        char value[96];
        ck_assert_int_eq(
            shape_gvisor_annotation(&cfg, SHAPE_VOLUME_BIN, 1, &key, value, sizeof(value)), 0);
        ck_assert_str_eq(key, "dev.gvisor.spec.mount.hangar-bin.type");
        ck_assert_str_eq(value, "tmpfs");
        ck_assert_int_eq(
            shape_gvisor_annotation(&cfg, SHAPE_VOLUME_BIN, 2, &key, value, sizeof(value)), 0);
        ck_assert_str_eq(value, "rw,rprivate,size=67108864");
}
END_TEST

START_TEST(values_are_shared_not_copied)
{
        __attribute__((cleanup(values_freep))) shape_values_t *sv = NULL;
        ck_assert_int_eq(shape_values_new(&cfg, &sv), 0);
        _cleanup_strbuf_ strbuf_t t1 = {0}, t2 = {0};
        _unit_json_ json_t *a = shape_values_driver(sv, "a", &t1);
        _unit_json_ json_t *b = shape_values_driver(sv, "b", &t2);
        /* Two containers, one set of constant members between them. */
        ck_assert_ptr_ne(a, b);
        ck_assert_ptr_eq(json_object_get(a, "securityContext"),
                         json_object_get(b, "securityContext"));
        ck_assert_ptr_eq(json_object_get(a, "volumeMounts"), json_object_get(b, "volumeMounts"));
        ck_assert_str_eq(json_string_value(json_object_get(a, "image")), "a");
        ck_assert_str_eq(json_string_value(json_object_get(b, "image")), "b");
        shape_values_free(NULL); /* accepts NULL */
}
END_TEST

static Suite *shape_suite(void)
{
        Suite *s = suite_create("shape");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, mount_table);
        tcase_add_test(tc, names);
        tcase_add_test(tc, volume_json);
        tcase_add_test(tc, mount_json_follows_table);
        tcase_add_test(tc, driver_container_json);
        tcase_add_test(tc, driver_probes_follow_config);
        tcase_add_test(tc, driver_container_follows_config);
        tcase_add_test(tc, values_match_builders);
        tcase_add_test(tc, values_are_shared_not_copied);
        tcase_add_test(tc, delivered_binaries);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(shape_suite());
}
