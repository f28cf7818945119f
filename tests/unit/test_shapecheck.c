/* common/shapecheck.c: a pod built from the shape's own generators passes;
 * API defaults added pass; each departure fails with its stable code; a
 * volume mounted twice counts as its loosest mount. */
#include "shapecheck.h"

#include "cleanup.h"
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

/* The injected pod, from the generators the webhook injects with. */
static json_t *in_shape(void)
{
        json_t *agent =
            json_pack("{s:s, s:s, s:[]}", "name", "sandbox", "image", "img:1", "volumeMounts");
        json_t *volumes = json_array();
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                json_array_append_new(volumes, shape_volume_json(&cfg, v));
                json_t *m = shape_mount_json(&cfg, SHAPE_ROLE_AGENT, v);
                if (m)
                        json_array_append_new(json_object_get(agent, "volumeMounts"), m);
        }
        return json_pack("{s:s, s:s, s:{s:o, s:[o, o], s:b}}", "apiVersion", "v1", "kind", "Pod",
                         "spec", "volumes", volumes, "containers", agent,
                         shape_driver_container_json(&cfg, "img:1"), "shareProcessNamespace", 0);
}

/* Sets path in pod to the JSON literal value. */
static void add(json_t *pod, const char *path, const char *value)
{
        _unit_json_ json_t *v = unit_json(value);
        ck_assert_msg(unit_apply_add(pod, path, v) == 0, "cannot set %s", path);
}

/* The failing codes, comma-joined ("" when it passes). */
static char *failing(json_t *pod)
{
        bool pass = false;
        _unit_json_ json_t *r = shapecheck_pod(&cfg, pod, &pass);
        ck_assert_ptr_nonnull(r);
        static char out[1024];
        out[0] = '\0';
        size_t n = 0, i;
        json_t *c;
        json_array_foreach (json_object_get(r, "checks"), i, c) {
                if (strcmp(json_string_value(json_object_get(c, "status")), "fail") != 0)
                        continue;
                const char *code = json_string_value(json_object_get(c, "code"));
                if (!strstr(out, code))
                        n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", n ? "," : "", code);
        }
        ck_assert(pass == (out[0] == '\0'));
        return out;
}

START_TEST(generated_pod_passes)
{
        _unit_json_ json_t *pod = in_shape();
        ck_assert_str_eq(failing(pod), "");
        /* API defaults (extra members) are fine. */
        add(pod, "/spec/containers/1/terminationMessagePath", "\"/dev/termination-log\"");
        add(pod, "/spec/containers/1/imagePullPolicy", "\"IfNotPresent\"");
        add(pod, "/spec/dnsPolicy", "\"ClusterFirst\"");
        ck_assert_str_eq(failing(pod), "");
        /* The driver's command is the operator's to change. */
        add(pod, "/spec/containers/1/command", "[\"other\"]");
        ck_assert_str_eq(failing(pod), "");
}
END_TEST

START_TEST(departures_fail_with_their_code)
{
        static const struct {
                const char *path, *value, *code;
        } cases[] = {
            {"/spec/shareProcessNamespace", "true", "spec.share-process-namespace"},
            {"/spec/hostPID", "true", "spec.host-pid"},
            {"/spec/containers/1/securityContext/runAsUser", "0", "spec.driver"},
            {"/spec/containers/1/securityContext/capabilities/add", "[\"SYS_PTRACE\"]",
             "spec.driver"},
            {"/spec/containers/1/securityContext/procMount", "\"Unmasked\"", "spec.driver"},
            {"/spec/containers/0/securityContext", "{\"capabilities\": {\"add\": [\"CAP_KILL\"]}}",
             "spec.agent-capabilities"},
            {"/spec/containers/0/securityContext", "{\"runAsUser\": 1001}", "spec.agent-uid"},
            {"/spec/containers/0/securityContext", "{\"privileged\": true}", "spec.privileged"},
            {"/spec/volumes/1/emptyDir", "{}", "spec.volume"},
            /* A second, writable mount of hangar-home in the agent. */
            {"/spec/containers/0/volumeMounts/-",
             "{\"name\": \"hangar-home\", \"mountPath\": \"/h\"}", "spec.mount"},
            /* hangar-ctl in an init container, read-only or not. */
            {"/spec/initContainers",
             "[{\"name\": \"i\", \"volumeMounts\": [{\"name\": \"hangar-ctl\", \"mountPath\": "
             "\"/c\", \"readOnly\": true}]}]",
             "spec.mount"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _unit_json_ json_t *pod = in_shape();
                add(pod, cases[i].path, cases[i].value);
                ck_assert_msg(strstr(failing(pod), cases[i].code), "case %zu (%s): failing %s", i,
                              cases[i].path, failing(pod));
        }
        /* No agent, no driver. */
        _unit_json_ json_t *bare =
            unit_json("{\"spec\": {\"containers\": [{\"name\": \"app\", \"image\": \"i\"}]}}");
        ck_assert_str_eq(failing(bare), "spec.no-agent");
        _unit_json_ json_t *no_driver = in_shape();
        json_array_remove(json_object_get(json_object_get(no_driver, "spec"), "containers"), 1);
        ck_assert_ptr_nonnull(strstr(failing(no_driver), "spec.no-driver"));
}
END_TEST

START_TEST(loosest_mount_counts)
{
        _unit_json_ json_t *c = unit_json(
            "{\"volumeMounts\": [{\"name\": \"hangar-home\", \"mountPath\": \"/a\", \"readOnly\": "
            "true}, {\"name\": \"hangar-home\", \"mountPath\": \"/b\", \"readOnly\": true}]}");
        ck_assert_int_eq(shapecheck_mount_access(c, SHAPE_VOLUME_HOME), SHAPE_ACCESS_READ_ONLY);
        ck_assert_int_eq(shapecheck_mount_access(c, SHAPE_VOLUME_CTL), SHAPE_ACCESS_ABSENT);
        json_t *rw = unit_json("{\"name\": \"hangar-home\", \"mountPath\": \"/c\"}");
        json_array_append_new(json_object_get(c, "volumeMounts"), rw);
        ck_assert_int_eq(shapecheck_mount_access(c, SHAPE_VOLUME_HOME), SHAPE_ACCESS_READ_WRITE);
        ck_assert_int_eq(shapecheck_role(&cfg, "containers", "sandbox"), SHAPE_ROLE_AGENT);
        ck_assert_int_eq(shapecheck_role(&cfg, "initContainers", "sandbox"), SHAPE_ROLE_OTHER);
        ck_assert_int_eq(shapecheck_role(&cfg, "containers", "hangar-driver"), SHAPE_ROLE_DRIVER);
}
END_TEST

static Suite *shapecheck_suite(void)
{
        Suite *s = suite_create("shapecheck");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, generated_pod_passes);
        tcase_add_test(tc, departures_fail_with_their_code);
        tcase_add_test(tc, loosest_mount_counts);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(shapecheck_suite());
}
