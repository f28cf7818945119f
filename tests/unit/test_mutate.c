/* Unit tests for webhook/mutate: the decision and the patch for a Pod. */
#include <stdarg.h>
#include <string.h>

#include "cleanup.h"
#include "jsondump.h"
#include "mutate.h"
#include "settings.h"
#include "shape.h"
#include "shapecheck.h"
#include "unit.h"

static webhook_settings_t cfg;

static void setup(void)
{
        ck_assert_int_eq(settings_init_defaults(&cfg), 0);
        cfg.driver_sidecar = true;
}

/* A result's patch text parsed into jansson ops, for checks; freed at
 * teardown. The text itself is what the API server receives, as base64. */
static json_t *parsed[128];
static size_t n_parsed;

static json_t *ops_of(const mutate_result_t *res)
{
        ck_assert_ptr_nonnull(res->patch);
        ck_assert_uint_lt(n_parsed, ARRAY_SIZE(parsed));
        parsed[n_parsed] = unit_json(res->patch);
        ck_assert(json_is_array(parsed[n_parsed]));
        return parsed[n_parsed++];
}

static void teardown(void)
{
        while (n_parsed)
                json_decref(parsed[--n_parsed]);
        settings_free(&cfg);
}

static void set_string(char **slot, const char *value)
{
        free(*slot);
        *slot = strdup(value);
        ck_assert_ptr_nonnull(*slot);
}

static void result_freep(mutate_result_t *r)
{
        mutate_result_free(r);
}
#define _result_ __attribute__((cleanup(result_freep)))

#define IMAGE    "registry.example/agent:1.2"

/* A selected pod with one container, the agent. */
static json_t *base_pod(void)
{
        return unit_json(
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\","
            " \"namespace\": \"ns\", \"labels\": {\"hangar.dev/sandbox\": \"true\"}},"
            " \"spec\": {\"containers\": [{\"name\": \"sandbox\", \"image\": \"" IMAGE "\"}]}}");
}

/* Sets path (which must have a parent) in pod to the JSON literal value. */
static json_t *with(json_t *pod, const char *path, const char *value)
{
        json_t *v = unit_json(value);
        ck_assert_msg(unit_apply_add(pod, path, v) == 0, "cannot set %s", path);
        json_decref(v);
        return pod;
}

static void run(json_t *pod, mutate_result_t *res)
{
        ck_assert_int_eq(mutate_pod(&cfg, pod, res), 0);
}

/* The decision and reason, with the detail in the failure message. */
#define ck_assert_result(res, want_decision, want_reason)                                         \
        do {                                                                                      \
                ck_assert_msg((res).decision == (want_decision) && (res).reason == (want_reason), \
                              "got %s/%s (%s), want %s/%s", mutate_decision_name((res).decision), \
                              mutate_reason_name((res).reason), (res).detail,                     \
                              mutate_decision_name(want_decision),                                \
                              mutate_reason_name(want_reason));                                   \
        } while (0)

#define ck_assert_detail_has(res, needle)                                                  \
        ck_assert_msg(strstr((res).detail, (needle)), "detail lacks \"%s\": %s", (needle), \
                      (res).detail)

/* After an inject or annotated skip: the patch applied by an independent
 * implementation to the original pod gives exactly the pod left behind. */
static void assert_patch_reproduces(json_t *orig, json_t *patched, const mutate_result_t *res)
{
        json_t *ops = ops_of(res);
        _unit_json_ json_t *copy = json_deep_copy(orig);
        ck_assert_int_eq(unit_apply_patch(copy, ops), 0);
        ck_assert_json_eq(copy, patched);
}

/* A decision that must leave the pod alone and emit nothing. */
static void assert_untouched(json_t *orig, json_t *pod, const mutate_result_t *res)
{
        ck_assert_msg(res->patch == NULL, "unexpected patch");
        ck_assert_json_eq(pod, orig);
}

/* Admits pod (edited in place) and checks the decision and reason;
 * returns a copy of the pod as it was before. */
static json_t *admit(json_t *pod, mutate_decision_t decision, mutate_reason_t reason,
                     mutate_result_t *res)
{
        json_t *orig = json_deep_copy(pod);
        run(pod, res);
        ck_assert_result(*res, decision, reason);
        return orig;
}

/* An admission whose patch, applied by an independent implementation to
 * the pod as it was, gives exactly the pod left behind. */
static void admit_patched(json_t *pod, mutate_decision_t decision, mutate_reason_t reason,
                          mutate_result_t *res)
{
        _unit_json_ json_t *orig = admit(pod, decision, reason, res);
        assert_patch_reproduces(orig, pod, res);
}

/* One that must leave the pod alone and emit nothing. */
static void admit_untouched(json_t *pod, mutate_decision_t decision, mutate_reason_t reason,
                            mutate_result_t *res)
{
        _unit_json_ json_t *orig = admit(pod, decision, reason, res);
        assert_untouched(orig, pod, res);
}

static const char *injected_pod =
    "{\"apiVersion\": \"v1\", \"kind\": \"Pod\","
    " \"metadata\": {\"name\": \"p\", \"namespace\": \"ns\","
    "   \"labels\": {\"hangar.dev/sandbox\": \"true\"},"
    "   \"annotations\": {\"hangar.dev/driver-sidecar\": \"injected\","
    "     \"hangar.dev/driver-sidecar-reason\": \"injected\","
    "     \"kubectl.kubernetes.io/default-container\": \"sandbox\"}},"
    " \"spec\": {"
    "   \"containers\": ["
    "     {\"name\": \"sandbox\", \"image\": \"" IMAGE "\","
    "      \"volumeMounts\": [{\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\","
    "        \"readOnly\": true}]},"
    "     {\"name\": \"hangar-driver\", \"image\": \"" IMAGE "\","
    "      \"imagePullPolicy\": \"IfNotPresent\", \"command\": [\"hangar-driver\", \"serve\"],"
    "      \"resources\": {\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"}},"
    "      \"securityContext\": {\"runAsUser\": 1001, \"runAsGroup\": 1001,"
    "        \"runAsNonRoot\": true, \"allowPrivilegeEscalation\": false,"
    "        \"readOnlyRootFilesystem\": true, \"privileged\": false,"
    "        \"capabilities\": {\"drop\": [\"ALL\"]},"
    "        \"seccompProfile\": {\"type\": \"RuntimeDefault\"}},"
    "      \"volumeMounts\": [{\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\"},"
    "        {\"name\": \"hangar-ctl\", \"mountPath\": \"/var/lib/hangar-ctl\"}],"
    "      \"startupProbe\": {\"exec\": {\"command\": [\"hangar-driver\", \"ctl\", \"ping\"]},"
    "        \"periodSeconds\": 1, \"timeoutSeconds\": 5, \"failureThreshold\": 60,"
    "        \"successThreshold\": 1},"
    "      \"livenessProbe\": {\"exec\": {\"command\": [\"hangar-driver\", \"ctl\", \"ping\"]},"
    "        \"periodSeconds\": 10, \"timeoutSeconds\": 5, \"failureThreshold\": 3,"
    "        \"successThreshold\": 1}}],"
    "   \"volumes\": [{\"name\": \"hangar-home\", \"emptyDir\": {}},"
    "     {\"name\": \"hangar-ctl\", \"emptyDir\": {\"medium\": \"Memory\","
    "       \"sizeLimit\": \"64Mi\"}}],"
    "   \"shareProcessNamespace\": false}}";

START_TEST(injected_pod_shape)
{
        _unit_json_ json_t *pod = base_pod();
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        ck_assert_ptr_nonnull(res.patch);
        /* Field by field, so a failure says which part of the shape broke. */
        ck_assert_uint_eq(json_array_size(unit_at(pod, "/spec/containers")), 2);
        ck_assert_str_eq(json_string_value(unit_at(pod, "/spec/containers/0/name")), "sandbox");
        ck_assert_json_eq_text(unit_at(pod, "/spec/containers/0/volumeMounts"),
                               "[{\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\","
                               " \"readOnly\": true}]");
        json_t *driver = unit_at(pod, "/spec/containers/1");
        ck_assert_str_eq(json_string_value(unit_at(driver, "/name")), "hangar-driver");
        ck_assert_str_eq(json_string_value(unit_at(driver, "/image")), IMAGE);
        ck_assert_str_eq(json_string_value(unit_at(driver, "/imagePullPolicy")), "IfNotPresent");
        ck_assert_json_eq_text(unit_at(driver, "/command"), "[\"hangar-driver\", \"serve\"]");
        ck_assert_int_eq(json_integer_value(unit_at(driver, "/securityContext/runAsUser")), 1001);
        ck_assert_int_eq(json_integer_value(unit_at(driver, "/securityContext/runAsGroup")), 1001);
        ck_assert(json_is_true(unit_at(driver, "/securityContext/runAsNonRoot")));
        ck_assert(json_is_false(unit_at(driver, "/securityContext/allowPrivilegeEscalation")));
        ck_assert_json_eq_text(unit_at(driver, "/securityContext/capabilities/drop"), "[\"ALL\"]");
        ck_assert_json_eq_text(
            unit_at(driver, "/volumeMounts"),
            "[{\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\"},"
            " {\"name\": \"hangar-ctl\", \"mountPath\": \"/var/lib/hangar-ctl\"}]");
        ck_assert_json_eq_text(unit_at(pod, "/spec/volumes/1"),
                               "{\"name\": \"hangar-ctl\", \"emptyDir\": {\"medium\": \"Memory\","
                               " \"sizeLimit\": \"64Mi\"}}");
        ck_assert(json_is_false(unit_at(pod, "/spec/shareProcessNamespace")));
        ck_assert_str_eq(
            json_string_value(unit_at(pod, "/metadata/annotations/hangar.dev~1driver-sidecar")),
            "injected");
        /* And the whole pod, so nothing else was added. */
        ck_assert_json_eq_text(pod, injected_pod);
}
END_TEST

START_TEST(no_volumes_array_created_once)
{
        _unit_json_ json_t *pod = base_pod();
        _result_ mutate_result_t res = {0};
        run(pod, &res);
        ck_assert_result(res, DECISION_INJECT, REASON_INJECTED);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/volumes"), 1);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/volumes/-"), 1);
        long create = unit_find_op(ops_of(&res), "/spec/volumes");
        long append = unit_find_op(ops_of(&res), "/spec/volumes/-");
        ck_assert_int_lt(create, append);
        json_t *value = json_object_get(json_array_get(ops_of(&res), (size_t)create), "value");
        ck_assert_json_eq_text(value, "[{\"name\": \"hangar-home\", \"emptyDir\": {}}]");
        ck_assert_json_eq_text(
            json_object_get(json_array_get(ops_of(&res), (size_t)append), "value"),
            "{\"name\": \"hangar-ctl\", \"emptyDir\": {\"medium\": \"Memory\","
            " \"sizeLimit\": \"64Mi\"}}");
}
END_TEST

START_TEST(null_volumes_is_absent)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/volumes", "null");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/volumes"), 1);
        ck_assert_uint_eq(json_array_size(unit_at(pod, "/spec/volumes")), 2);
}
END_TEST

START_TEST(existing_volumes_only_appended)
{
        _unit_json_ json_t *pod =
            with(base_pod(), "/spec/volumes", "[{\"name\": \"data\", \"emptyDir\": {}}]");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/volumes"), 0);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/volumes/-"), 2);
        ck_assert_json_eq_text(unit_at(pod, "/spec/volumes"),
                               "[{\"name\": \"data\", \"emptyDir\": {}},"
                               " {\"name\": \"hangar-home\", \"emptyDir\": {}},"
                               " {\"name\": \"hangar-ctl\", \"emptyDir\": {\"medium\": \"Memory\","
                               " \"sizeLimit\": \"64Mi\"}}]");
}
END_TEST

START_TEST(agent_not_first)
{
        _unit_json_ json_t *pod =
            with(base_pod(), "/spec/containers",
                 "[{\"name\": \"helper\", \"image\": \"helper:1\"},"
                 " {\"name\": \"sandbox\", \"image\": \"agent:2\","
                 "  \"volumeMounts\": [{\"name\": \"data\", \"mountPath\": \"/data\"}]}]");
        with(pod, "/spec/volumes", "[{\"name\": \"data\", \"emptyDir\": {}}]");
        _unit_json_ json_t *orig = json_deep_copy(pod);
        _result_ mutate_result_t res = {0};
        run(pod, &res);
        ck_assert_result(res, DECISION_INJECT, REASON_INJECTED);
        /* The agent's own mounts exist: one append at its index, 1. */
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/containers/1/volumeMounts/-"), 1);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/containers/0/volumeMounts"), 0);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/containers/0/volumeMounts/-"), 0);
        ck_assert_json_eq(unit_at(pod, "/spec/containers/0"), unit_at(orig, "/spec/containers/0"));
        ck_assert_json_eq_text(unit_at(pod, "/spec/containers/1/volumeMounts"),
                               "[{\"name\": \"data\", \"mountPath\": \"/data\"},"
                               " {\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\","
                               " \"readOnly\": true}]");
        /* The driver runs the agent's image, appended last. */
        ck_assert_str_eq(json_string_value(unit_at(pod, "/spec/containers/2/name")),
                         "hangar-driver");
        ck_assert_str_eq(json_string_value(unit_at(pod, "/spec/containers/2/image")), "agent:2");
        assert_patch_reproduces(orig, pod, &res);
}
END_TEST

START_TEST(agent_not_first_without_mounts)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/containers",
                                       "[{\"name\": \"a\", \"image\": \"x\"},"
                                       " {\"name\": \"b\", \"image\": \"y\"},"
                                       " {\"name\": \"sandbox\", \"image\": \"z\"}]");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        long i = unit_find_op(ops_of(&res), "/spec/containers/2/volumeMounts");
        ck_assert_int_ge(i, 0);
        ck_assert_json_eq_text(json_object_get(json_array_get(ops_of(&res), (size_t)i), "value"),
                               "[{\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\","
                               " \"readOnly\": true}]");
        ck_assert_ptr_null(unit_at(pod, "/spec/containers/0/volumeMounts"));
        ck_assert_ptr_null(unit_at(pod, "/spec/containers/1/volumeMounts"));
}
END_TEST

START_TEST(annotation_paths_escaped)
{
        /* The annotations map exists (with keys that need escaping too): our
         * keys are set one by one, "/" written as "~1". */
        _unit_json_ json_t *pod = with(base_pod(), "/metadata/annotations",
                                       "{\"a~b/c\": \"keep\", \"hangar.dev/other\": \"x\"}");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/metadata/annotations"), 0);
        ck_assert_uint_eq(
            unit_count_ops(ops_of(&res), "/metadata/annotations/hangar.dev~1driver-sidecar"), 1);
        ck_assert_uint_eq(
            unit_count_ops(ops_of(&res), "/metadata/annotations/hangar.dev~1driver-sidecar-reason"),
            1);
        ck_assert_json_eq_text(unit_at(pod, "/metadata/annotations"),
                               "{\"a~b/c\": \"keep\", \"hangar.dev/other\": \"x\","
                               " \"hangar.dev/driver-sidecar\": \"injected\","
                               " \"hangar.dev/driver-sidecar-reason\": \"injected\","
                               " \"kubectl.kubernetes.io/default-container\": \"sandbox\"}");
}
END_TEST

START_TEST(annotations_map_created_once)
{
        _unit_json_ json_t *pod = base_pod();
        _result_ mutate_result_t res = {0};
        run(pod, &res);
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/metadata/annotations"), 1);
        long i = unit_find_op(ops_of(&res), "/metadata/annotations");
        ck_assert_json_eq_text(json_object_get(json_array_get(ops_of(&res), (size_t)i), "value"),
                               "{\"hangar.dev/driver-sidecar\": \"injected\"}");
        ck_assert_int_gt(
            unit_find_op(ops_of(&res), "/metadata/annotations/hangar.dev~1driver-sidecar-reason"),
            i);
}
END_TEST

START_TEST(share_process_namespace)
{
        /* true: turned off, with one op. */
        _unit_json_ json_t *on = with(base_pod(), "/spec/shareProcessNamespace", "true");
        _result_ mutate_result_t r1 = {0};
        run(on, &r1);
        ck_assert_result(r1, DECISION_INJECT, REASON_INJECTED);
        ck_assert_uint_eq(unit_count_ops(ops_of(&r1), "/spec/shareProcessNamespace"), 1);
        long i = unit_find_op(ops_of(&r1), "/spec/shareProcessNamespace");
        ck_assert(json_is_false(json_object_get(json_array_get(ops_of(&r1), (size_t)i), "value")));
        ck_assert(json_is_false(unit_at(on, "/spec/shareProcessNamespace")));
        /* already false: no op at all. */
        _unit_json_ json_t *off = with(base_pod(), "/spec/shareProcessNamespace", "false");
        _result_ mutate_result_t r2 = {0};
        run(off, &r2);
        ck_assert_result(r2, DECISION_INJECT, REASON_INJECTED);
        ck_assert_uint_eq(unit_count_ops(ops_of(&r2), "/spec/shareProcessNamespace"), 0);
        ck_assert(json_is_false(unit_at(off, "/spec/shareProcessNamespace")));
        /* absent: written explicitly false. */
        _unit_json_ json_t *absent = base_pod();
        _result_ mutate_result_t r3 = {0};
        run(absent, &r3);
        ck_assert_uint_eq(unit_count_ops(ops_of(&r3), "/spec/shareProcessNamespace"), 1);
}
END_TEST

/* driver.nativeSidecar: the driver is the last init container, with
 * restartPolicy Always (a Job's pod can complete), and everything else is
 * as in the default shape; reinvocation is a no-op and the spec check
 * (with the same configuration) passes the result. */
START_TEST(native_sidecar)
{
        cfg.sidecar.driver_native_sidecar = true;
        _unit_json_ json_t *pod = with(
            with(base_pod(), "/spec/initContainers", "[{\"name\": \"setup\", \"image\": \"x\"}]"),
            "/spec/securityContext", "{\"runAsUser\": 1000, \"runAsGroup\": 1000}");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        json_t *spec = json_object_get(pod, "spec");
        ck_assert_uint_eq(json_array_size(json_object_get(spec, "containers")), 1);
        json_t *init = json_object_get(spec, "initContainers");
        ck_assert_uint_eq(json_array_size(init), 2);
        json_t *driver = json_array_get(init, 1);
        ck_assert_str_eq(json_string_value(json_object_get(driver, "name")), "hangar-driver");
        ck_assert_str_eq(json_string_value(json_object_get(driver, "restartPolicy")), "Always");
        ck_assert_str_eq(json_string_value(json_object_get(driver, "image")), IMAGE);
        _result_ mutate_result_t again = {0};
        admit_untouched(pod, DECISION_SKIP, REASON_ALREADY_INJECTED, &again);
        bool pass = false;
        _unit_json_ json_t *report = shapecheck_pod(&cfg.sidecar, pod, &pass);
        ck_assert_msg(pass, "spec check: %s", unit_dump(report));
        /* The same pod judged by a configuration without native sidecars. */
        cfg.sidecar.driver_native_sidecar = false;
        _unit_json_ json_t *other = shapecheck_pod(&cfg.sidecar, pod, &pass);
        ck_assert_ptr_nonnull(other);
        ck_assert(!pass);
}
END_TEST

/* driver.probes.enabled (the default, with hangar-driver serve): the driver
 * gets the startup and liveness probes, in containers and as a native
 * sidecar; reinvocation is a no-op, the spec check passes, and a
 * configuration without probes refuses the pod (they are part of the shape). */
START_TEST(daemon_probes)
{
        ck_assert(cfg.sidecar.driver_probes);
        for (int native = 0; native <= 1; native++) {
                cfg.sidecar.driver_native_sidecar = native;
                _unit_json_ json_t *pod = with(base_pod(), "/spec/securityContext",
                                               "{\"runAsUser\": 1000, \"runAsGroup\": 1000}");
                _result_ mutate_result_t res = {0};
                admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
                json_t *driver =
                    unit_at(pod, native ? "/spec/initContainers/0" : "/spec/containers/1");
                ck_assert_str_eq(json_string_value(json_object_get(driver, "name")),
                                 "hangar-driver");
                ck_assert_json_eq_text(unit_at(driver, "/livenessProbe/exec/command"),
                                       "[\"hangar-driver\", \"ctl\", \"ping\"]");
                ck_assert_int_eq(json_integer_value(unit_at(driver, "/startupProbe/periodSeconds")),
                                 1);
                _result_ mutate_result_t again = {0};
                admit_untouched(pod, DECISION_SKIP, REASON_ALREADY_INJECTED, &again);
                bool pass = false;
                _unit_json_ json_t *report = shapecheck_pod(&cfg.sidecar, pod, &pass);
                ck_assert_msg(pass, "spec check: %s", unit_dump(report));
                cfg.sidecar.driver_probes = false;
                _unit_json_ json_t *other = shapecheck_pod(&cfg.sidecar, pod, &pass);
                ck_assert_ptr_nonnull(other);
                ck_assert(!pass);
                cfg.sidecar.driver_probes = true;
        }
}
END_TEST

START_TEST(reinvocation_is_a_no_op)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/shareProcessNamespace", "true");
        _result_ mutate_result_t first = {0};
        run(pod, &first);
        ck_assert_result(first, DECISION_INJECT, REASON_INJECTED);
        _result_ mutate_result_t second = {0};
        admit_untouched(pod, DECISION_SKIP, REASON_ALREADY_INJECTED, &second);
        ck_assert_detail_has(second, "hangar-driver");
}
END_TEST

START_TEST(privileged_skips_with_annotations_only)
{
        static const char *const where[] = {"/spec/containers/0/securityContext",
                                            "/spec/initContainers", "/spec/ephemeralContainers"};
        static const char *const value[] = {
            "{\"privileged\": true}",
            "[{\"name\": \"init\", \"image\": \"i\", \"securityContext\": {\"privileged\": true}}]",
            ("[{\"name\": \"debug\", \"image\": \"d\", \"securityContext\": "
             "{\"privileged\": true}}]"), /* one string, split for width */
        };
        static const char *const who[] = {"\"sandbox\"", "\"init\"", "\"debug\""};
        for (size_t k = 0; k < ARRAY_SIZE(where); k++) {
                _unit_json_ json_t *pod = with(base_pod(), where[k], value[k]);
                _unit_json_ json_t *orig = json_deep_copy(pod);
                _result_ mutate_result_t res = {0};
                run(pod, &res);
                ck_assert_result(res, DECISION_SKIP, REASON_PRIVILEGED);
                ck_assert_detail_has(res, who[k]);
                ck_assert_uint_eq(json_array_size(ops_of(&res)), 2);
                size_t i;
                json_t *op;
                json_array_foreach (ops_of(&res), i, op) {
                        const char *path = json_string_value(json_object_get(op, "path"));
                        ck_assert_msg(strncmp(path, "/metadata/annotations", 21) == 0,
                                      "op outside the annotations: %s", path);
                }
                ck_assert_json_eq_text(unit_at(pod, "/metadata/annotations"),
                                       "{\"hangar.dev/driver-sidecar\": \"skipped\","
                                       " \"hangar.dev/driver-sidecar-reason\": "
                                       "\"privileged-container\"}");
                ck_assert_json_eq(unit_at(pod, "/spec"), unit_at(orig, "/spec"));
                assert_patch_reproduces(orig, pod, &res);
        }
}
END_TEST

START_TEST(reinvocation_of_skipped_pod_is_a_no_op)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/hostPID", "true");
        _result_ mutate_result_t first = {0};
        run(pod, &first);
        ck_assert_result(first, DECISION_SKIP, REASON_HOST_PID);
        ck_assert_ptr_nonnull(first.patch);
        _result_ mutate_result_t second = {0};
        admit_untouched(pod, DECISION_SKIP, REASON_HOST_PID, &second);
}
END_TEST

START_TEST(privileged_false_is_injected)
{
        _unit_json_ json_t *pod =
            with(base_pod(), "/spec/containers/0/securityContext", "{\"privileged\": false}");
        _result_ mutate_result_t res = {0};
        run(pod, &res);
        ck_assert_result(res, DECISION_INJECT, REASON_INJECTED);
}
END_TEST

START_TEST(host_pid_skips)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/hostPID", "true");
        _unit_json_ json_t *orig = json_deep_copy(pod);
        _result_ mutate_result_t res = {0};
        run(pod, &res);
        ck_assert_result(res, DECISION_SKIP, REASON_HOST_PID);
        ck_assert_uint_eq(json_array_size(ops_of(&res)), 2);
        ck_assert_str_eq(json_string_value(unit_at(
                             pod, "/metadata/annotations/hangar.dev~1driver-sidecar-reason")),
                         "host-pid");
        ck_assert_json_eq(unit_at(pod, "/spec"), unit_at(orig, "/spec"));
        assert_patch_reproduces(orig, pod, &res);

        _unit_json_ json_t *no = with(base_pod(), "/spec/hostPID", "false");
        _result_ mutate_result_t r2 = {0};
        run(no, &r2);
        ck_assert_result(r2, DECISION_INJECT, REASON_INJECTED);
}
END_TEST

START_TEST(disabled_skips_without_patch)
{
        cfg.driver_sidecar = false;
        /* Even a pod that would otherwise be annotated gets nothing. */
        _unit_json_ json_t *pod = with(base_pod(), "/spec/hostPID", "true");
        _result_ mutate_result_t res = {0};
        admit_untouched(pod, DECISION_SKIP, REASON_INJECTION_DISABLED, &res);
        _unit_json_ json_t *plain = base_pod();
        _result_ mutate_result_t r2 = {0};
        admit_untouched(plain, DECISION_SKIP, REASON_INJECTION_DISABLED, &r2);
}
END_TEST

START_TEST(not_selected_skips_without_patch)
{
        static const char *const labels[] = {
            "{}",
            "{\"hangar.dev/sandbox\": \"false\"}",
            "{\"hangar.dev/sandbox\": \"True\"}",
            "{\"sandbox\": \"true\"}",
            "null",
        };
        for (size_t k = 0; k < ARRAY_SIZE(labels); k++) {
                _unit_json_ json_t *pod = with(base_pod(), "/metadata/labels", labels[k]);
                _result_ mutate_result_t res = {0};
                admit_untouched(pod, DECISION_SKIP, REASON_NOT_SELECTED, &res);
                ck_assert_detail_has(res, "hangar.dev/sandbox=true");
        }
        /* A configured selector is the one that counts. */
        set_string(&cfg.selector_key, "example.com/agent");
        set_string(&cfg.selector_value, "yes");
        _unit_json_ json_t *pod = base_pod();
        _result_ mutate_result_t r1 = {0};
        run(pod, &r1);
        ck_assert_result(r1, DECISION_SKIP, REASON_NOT_SELECTED);
        _unit_json_ json_t *sel =
            with(base_pod(), "/metadata/labels", "{\"example.com/agent\": \"yes\"}");
        _result_ mutate_result_t r2 = {0};
        run(sel, &r2);
        ck_assert_result(r2, DECISION_INJECT, REASON_INJECTED);
}
END_TEST

/* Runs a pod that must be denied as a conflict naming needle. */
static void assert_conflict(json_t *pod, const char *needle)
{
        _result_ mutate_result_t res = {0};
        admit_untouched(pod, DECISION_DENY, REASON_CONFLICT, &res);
        ck_assert_detail_has(res, needle);
}

/* An injected pod changed since (another webhook) or forged: its shape is
 * checked (shapecheck), and a shared PID namespace is turned off again. */
static json_t *injected_then(const char *path, const char *value)
{
        json_t *pod = base_pod();
        _result_ mutate_result_t first = {0};
        run(pod, &first);
        ck_assert_result(first, DECISION_INJECT, REASON_INJECTED);
        /* mutate_pod leaves the pod as patched: exactly one hangar-driver. */
        ck_assert_uint_eq(
            json_array_size(json_object_get(json_object_get(pod, "spec"), "containers")), 2);
        return path ? with(pod, path, value) : pod;
}

START_TEST(reinvocation_turns_shared_pid_off_again)
{
        _unit_json_ json_t *pod = injected_then("/spec/shareProcessNamespace", "true");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_SKIP, REASON_ALREADY_INJECTED, &res);
        ck_assert_detail_has(res, "shareProcessNamespace set back to false");
        ck_assert(
            json_is_false(json_object_get(json_object_get(pod, "spec"), "shareProcessNamespace")));
}
END_TEST

START_TEST(reinvocation_denies_mounts_out_of_shape)
{
        static const struct {
                const char *path, *value, *needle;
        } cases[] = {
            /* The agent given hangar-ctl at another path. */
            {"/spec/containers/0/volumeMounts/-",
             "{\"name\": \"hangar-ctl\", \"mountPath\": \"/x\"}",
             "container \"sandbox\" (agent) mounts hangar-ctl read-write; expected not mounted "
             "(spec.mount)"},
            /* A second, writable mount of hangar-home in the agent. */
            {"/spec/containers/0/volumeMounts/-",
             "{\"name\": \"hangar-home\", \"mountPath\": \"/h\"}", "mounts hangar-home read-write"},
            /* An init container reading hangar-ctl. */
            {"/spec/initContainers",
             "[{\"name\": \"i\", \"image\": \"x\", \"volumeMounts\": [{\"name\": \"hangar-ctl\", "
             "\"mountPath\": \"/c\", \"readOnly\": true}]}]",
             "container \"i\" (init/ephemeral) mounts hangar-ctl read-only"},
            /* The driver's own mounts gone. */
            {"/spec/containers/1/volumeMounts", "[]",
             "hangar-driver.volumeMounts differs from the shape (spec.driver)"},
            /* The driver in any other member: what it runs, its image, ... */
            {"/spec/containers/1/args", "[\"-c\", \"x\"]",
             "hangar-driver.args is not part of the shape"},
            {"/spec/containers/1/command", "[\"sh\"]", "hangar-driver.command differs"},
            {"/spec/containers/1/image", "\"evil:1\"", "hangar-driver.image differs"},
            {"/spec/containers/1/lifecycle", "{\"postStart\": {\"exec\": {\"command\": [\"sh\"]}}}",
             "hangar-driver.lifecycle"},
            {"/spec/containers/1/env", "[{\"name\": \"A\", \"value\": \"b\"}]",
             "hangar-driver.env"},
            {"/spec/containers/1/stdin", "true", "hangar-driver.stdin"},
            /* hangar-home in an init container, even read-only. */
            {"/spec/initContainers",
             "[{\"name\": \"i\", \"image\": \"x\", \"volumeMounts\": [{\"name\": \"hangar-home\", "
             "\"mountPath\": \"/h\", \"readOnly\": true}]}]",
             "container \"i\" (init/ephemeral) mounts hangar-home read-only"},
            /* Another container writing hangar-home. */
            {"/spec/containers/-",
             "{\"name\": \"o\", \"image\": \"x\", \"volumeMounts\": [{\"name\": \"hangar-home\", "
             "\"mountPath\": \"/h\"}]}",
             "container \"o\" (other) mounts hangar-home read-write"},
            /* An ephemeral container joining the driver's PID namespace. */
            {"/spec/ephemeralContainers",
             "[{\"name\": \"debug\", \"image\": \"x\", \"targetContainerName\": "
             "\"hangar-driver\"}]",
             "container \"debug\" targets hangar-driver"},
            /* What the webhook skips pods for, turned on since. */
            {"/spec/hostNetwork", "true", "hostNetwork must not be true"},
            {"/spec/hostIPC", "true", "hostIPC must not be true"},
            {"/spec/hostPID", "true", "hostPID must not be true"},
            {"/spec/containers/0/securityContext", "{\"privileged\": true}",
             "container \"sandbox\" must not be privileged"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _unit_json_ json_t *pod = injected_then(cases[i].path, cases[i].value);
                _result_ mutate_result_t res = {0};
                admit_untouched(pod, DECISION_DENY, REASON_CONFLICT, &res);
                ck_assert_detail_has(res, "is marked hangar.dev/driver-sidecar: injected, but");
                ck_assert_detail_has(res, cases[i].needle);
        }
        /* A forged annotation and container without our mounts at all. */
        _unit_json_ json_t *forged = with(base_pod(), "/spec/containers/-",
                                          "{\"name\": \"hangar-driver\", \"image\": \"evil\"}");
        with(forged, "/metadata/annotations", "{\"hangar.dev/driver-sidecar\": \"injected\"}");
        assert_conflict(forged, "is marked hangar.dev/driver-sidecar: injected, but");
}
END_TEST

START_TEST(conflict_existing_volume)
{
        _unit_json_ json_t *home =
            with(base_pod(), "/spec/volumes", "[{\"name\": \"hangar-home\", \"emptyDir\": {}}]");
        assert_conflict(home, "\"hangar-home\"");
        _unit_json_ json_t *ctl =
            with(base_pod(), "/spec/volumes", "[{\"name\": \"data\"}, {\"name\": \"hangar-ctl\"}]");
        assert_conflict(ctl, "\"hangar-ctl\"");
}
END_TEST

START_TEST(conflict_existing_driver_container)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/containers/-",
                                       "{\"name\": \"hangar-driver\", \"image\": \"evil\"}");
        assert_conflict(pod, "\"hangar-driver\"");
        /* In the init containers too. */
        _unit_json_ json_t *init = with(base_pod(), "/spec/initContainers",
                                        "[{\"name\": \"hangar-driver\", \"image\": \"evil\"}]");
        assert_conflict(init, "\"hangar-driver\"");
        /* Our annotation saying "skipped" is not "injected". */
        _unit_json_ json_t *skipped = with(base_pod(), "/spec/containers/-",
                                           "{\"name\": \"hangar-driver\", \"image\": \"evil\"}");
        with(skipped, "/metadata/annotations", "{\"hangar.dev/driver-sidecar\": \"skipped\"}");
        assert_conflict(skipped, "did not inject");
        /* Our annotation without the container is not "already injected" either. */
        _unit_json_ json_t *claimed = with(base_pod(), "/metadata/annotations",
                                           "{\"hangar.dev/driver-sidecar\": \"injected\"}");
        _result_ mutate_result_t res = {0};
        run(claimed, &res);
        ck_assert_result(res, DECISION_INJECT, REASON_INJECTED);
}
END_TEST

START_TEST(conflict_agent_mount_path)
{
        static const struct {
                const char *path, *needle;
        } t[] = {
            {"/var/lib/hangar", "/var/lib/hangar"},
            {"/var/lib/hangar/", "hangar-home"},
            {"/var/lib/hangar/sub/dir", "/var/lib/hangar/sub/dir"},
            {"/var/lib/hangar-ctl", "hangar-ctl"},
            {"/var/lib/hangar-ctl/x", "hangar-ctl"},
        };
        for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
                char mounts[256];
                (void)snprintf(mounts, sizeof(mounts),
                               "[{\"name\": \"data\", \"mountPath\": \"%s\"}]", t[k].path);
                _unit_json_ json_t *pod =
                    with(base_pod(), "/spec/containers/0/volumeMounts", mounts);
                with(pod, "/spec/volumes", "[{\"name\": \"data\", \"emptyDir\": {}}]");
                assert_conflict(pod, t[k].needle);
        }
}
END_TEST

START_TEST(conflict_mount_of_reserved_volume)
{
        /* Any container mounting a volume by our name clashes. */
        _unit_json_ json_t *pod = with(base_pod(), "/spec/containers/-",
                                       "{\"name\": \"other\", \"image\": \"o\", \"volumeMounts\":"
                                       " [{\"name\": \"hangar-ctl\", \"mountPath\": \"/x\"}]}");
        assert_conflict(pod, "\"hangar-ctl\"");
}
END_TEST

START_TEST(no_conflict_nearby_paths)
{
        static const char *const ok[] = {"/var/lib/hangarx", "/var/lib", "/var/lib/hangar-ctlx",
                                         "/data"};
        for (size_t k = 0; k < ARRAY_SIZE(ok); k++) {
                char mounts[256];
                (void)snprintf(mounts, sizeof(mounts),
                               "[{\"name\": \"data\", \"mountPath\": \"%s\"}]", ok[k]);
                _unit_json_ json_t *pod =
                    with(base_pod(), "/spec/containers/0/volumeMounts", mounts);
                with(pod, "/spec/volumes", "[{\"name\": \"data\", \"emptyDir\": {}}]");
                _result_ mutate_result_t res = {0};
                run(pod, &res);
                ck_assert_msg(res.decision == DECISION_INJECT, "%s: %s", ok[k], res.detail);
        }
        /* Another container may use the path for its own volume. */
        _unit_json_ json_t *pod =
            with(base_pod(), "/spec/containers/-",
                 "{\"name\": \"other\", \"image\": \"o\", \"volumeMounts\":"
                 " [{\"name\": \"data\", \"mountPath\": \"/var/lib/hangar\"}]}");
        with(pod, "/spec/volumes", "[{\"name\": \"data\", \"emptyDir\": {}}]");
        _result_ mutate_result_t res = {0};
        run(pod, &res);
        ck_assert_result(res, DECISION_INJECT, REASON_INJECTED);
}
END_TEST

START_TEST(no_agent_container)
{
        _unit_json_ json_t *pod =
            with(base_pod(), "/spec/containers", "[{\"name\": \"other\", \"image\": \"x\"}]");
        _result_ mutate_result_t res = {0};
        admit_untouched(pod, DECISION_DENY, REASON_NO_AGENT_CONTAINER, &res);
        ck_assert_detail_has(res, "\"sandbox\"");
        /* An init container by that name is not the agent. */
        with(pod, "/spec/initContainers", "[{\"name\": \"sandbox\", \"image\": \"x\"}]");
        _result_ mutate_result_t r2 = {0};
        run(pod, &r2);
        ck_assert_result(r2, DECISION_DENY, REASON_NO_AGENT_CONTAINER);
        /* The configured name is the one looked for. */
        set_string(&cfg.sidecar.agent_container, "agent");
        _unit_json_ json_t *std = base_pod();
        _result_ mutate_result_t r3 = {0};
        run(std, &r3);
        ck_assert_result(r3, DECISION_DENY, REASON_NO_AGENT_CONTAINER);
        ck_assert_detail_has(r3, "\"agent\"");
}
END_TEST

/* agent-sandbox's templates name their containers freely: the pod names
 * its agent with an annotation, which wins over agentContainer. */
START_TEST(agent_named_by_annotation)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/containers",
                                       "[{\"name\": \"helper\", \"image\": \"helper:1\"},"
                                       " {\"name\": \"python-runtime\", \"image\": \"env:3\"}]");
        with(pod, "/metadata/annotations", "{\"hangar.dev/agent-container\": \"python-runtime\"}");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        /* The driver runs the named container's image and it mounts
         * hangar-home; the other container is left alone. */
        ck_assert_str_eq(json_string_value(unit_at(pod, "/spec/containers/2/image")), "env:3");
        ck_assert_ptr_null(unit_at(pod, "/spec/containers/0/volumeMounts"));
        ck_assert_json_eq_text(unit_at(pod, "/spec/containers/1/volumeMounts"),
                               "[{\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\","
                               " \"readOnly\": true}]");
        /* It is the default container, and the annotation is kept as it was. */
        ck_assert_str_eq(
            json_string_value(
                unit_at(pod, "/metadata/annotations/kubectl.kubernetes.io~1default-container")),
            "python-runtime");
        ck_assert_str_eq(
            json_string_value(unit_at(pod, "/metadata/annotations/hangar.dev~1agent-container")),
            "python-runtime");
        /* The spec check reads the pod the same way: a reinvocation keeps it. */
        shapecheck_finding_t finding;
        ck_assert_int_eq(shapecheck_sidecar(&cfg.sidecar, pod, &finding), 0);
        _result_ mutate_result_t again = {0};
        run(pod, &again);
        ck_assert_result(again, DECISION_SKIP, REASON_ALREADY_INJECTED);
        /* A pod without the annotation still falls back to agentContainer. */
        _unit_json_ json_t *plain = with(base_pod(), "/spec/containers",
                                         "[{\"name\": \"python-runtime\", \"image\": \"x\"}]");
        _result_ mutate_result_t r2 = {0};
        run(plain, &r2);
        ck_assert_result(r2, DECISION_DENY, REASON_NO_AGENT_CONTAINER);
        ck_assert_detail_has(r2, "the agentContainer setting");
}
END_TEST

/* An annotation that names no container hangar can run beside is refused
 * with the same text on every try (a controller retries the CREATE). */
START_TEST(agent_annotation_hostile)
{
        static const struct {
                const char *annotation; /* JSON value */
                const char *detail;
        } t[] = {
            {"\"missing\"",
             "no container named \"missing\" (annotation hangar.dev/agent-container)"},
            {"\"hangar-driver\"", "names \"hangar-driver\", the driver sidecar"},
            {"\"setup\"", "\"setup\", which is in spec.initContainers"},
            {"\"debug\"", "\"debug\", which is in spec.ephemeralContainers"},
            {"\"\"", "not a container name"},
            {"\"Sandbox\"", "not a container name"},
            {"\"sandbox;rm\"", "not a container name"},
            {"7", "not a container name"},
            {"null", "not a container name"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                _unit_json_ json_t *pod = base_pod();
                with(pod, "/spec/initContainers", "[{\"name\": \"setup\", \"image\": \"x\"}]");
                with(pod, "/spec/ephemeralContainers", "[{\"name\": \"debug\", \"image\": \"x\"}]");
                with(pod, "/metadata/annotations", "{}");
                with(pod, "/metadata/annotations/hangar.dev~1agent-container", t[i].annotation);
                _result_ mutate_result_t res = {0};
                admit_untouched(pod, DECISION_DENY, REASON_NO_AGENT_CONTAINER, &res);
                ck_assert_detail_has(res, t[i].detail);
                _result_ mutate_result_t again = {0};
                run(pod, &again);
                ck_assert_str_eq(again.detail, res.detail);
                /* The spec check (probe, guard) fails the same pod alike. */
                shapecheck_finding_t finding;
                ck_assert_int_eq(shapecheck_sidecar(&cfg.sidecar, pod, &finding), 1);
                ck_assert_str_eq(finding.code, "spec.no-agent");
        }
}
END_TEST

/* kubectl.kubernetes.io/default-container: set to the agent when absent,
 * kept when the pod has its own, refused when it names the driver. */
START_TEST(default_container_annotation)
{
        _unit_json_ json_t *own = with(base_pod(), "/spec/containers",
                                       "[{\"name\": \"sandbox\", \"image\": \"a\"},"
                                       " {\"name\": \"tools\", \"image\": \"b\"}]");
        with(own, "/metadata/annotations",
             "{\"kubectl.kubernetes.io/default-container\": \"tools\"}");
        _result_ mutate_result_t res = {0};
        admit_patched(own, DECISION_INJECT, REASON_INJECTED, &res);
        ck_assert_uint_eq(
            unit_count_ops(ops_of(&res),
                           "/metadata/annotations/kubectl.kubernetes.io~1default-container"),
            0);
        ck_assert_str_eq(
            json_string_value(
                unit_at(own, "/metadata/annotations/kubectl.kubernetes.io~1default-container")),
            "tools");

        _unit_json_ json_t *driver = with(base_pod(), "/metadata/annotations",
                                          "{\"kubectl.kubernetes.io/default-container\": "
                                          "\"hangar-driver\"}");
        _result_ mutate_result_t r2 = {0};
        admit_untouched(driver, DECISION_DENY, REASON_CONFLICT, &r2);
        ck_assert_detail_has(r2, "kubectl.kubernetes.io/default-container names \"hangar-driver\"");
}
END_TEST

/* selector.operator Exists: the label's presence selects, any value. */
START_TEST(selector_exists)
{
        set_string(&cfg.selector_key, "agents.x-k8s.io/sandbox-name-hash");
        set_string(&cfg.selector_operator, "Exists");
        _unit_json_ json_t *pod = with(base_pod(), "/metadata/labels",
                                       "{\"agents.x-k8s.io/sandbox-name-hash\": \"4f1c2a9e\"}");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        _unit_json_ json_t *empty =
            with(base_pod(), "/metadata/labels", "{\"agents.x-k8s.io/sandbox-name-hash\": \"\"}");
        _result_ mutate_result_t r2 = {0};
        admit_patched(empty, DECISION_INJECT, REASON_INJECTED, &r2);
        _unit_json_ json_t *absent = base_pod();
        _result_ mutate_result_t r3 = {0};
        admit_untouched(absent, DECISION_SKIP, REASON_NOT_SELECTED, &r3);
        ck_assert_str_eq(r3.detail, "pod lacks label agents.x-k8s.io/sandbox-name-hash");
        /* In (the default) still compares the value. */
        set_string(&cfg.selector_operator, "In");
        set_string(&cfg.selector_value, "x");
        _unit_json_ json_t *other =
            with(base_pod(), "/metadata/labels", "{\"agents.x-k8s.io/sandbox-name-hash\": \"y\"}");
        _result_ mutate_result_t r4 = {0};
        admit_untouched(other, DECISION_SKIP, REASON_NOT_SELECTED, &r4);
}
END_TEST

/* driver.uidSplit and driver.cloneSafety reach the driver's environment,
 * only when not the default; a pod brought with a driver whose environment
 * loosens them is refused, and the agent's own environment changes nothing
 * of the driver's. */
START_TEST(driver_environment)
{
        _unit_json_ json_t *dflt = base_pod();
        _result_ mutate_result_t r0 = {0};
        admit_patched(dflt, DECISION_INJECT, REASON_INJECTED, &r0);
        ck_assert_ptr_null(unit_at(dflt, "/spec/containers/1/env"));

        set_string(&cfg.sidecar.driver_uid_split, "required");
        set_string(&cfg.sidecar.driver_clone_safety, "required");
        _unit_json_ json_t *pod = with(base_pod(), "/spec/containers/0/env",
                                       "[{\"name\": \"HANGAR_UID_SPLIT\", \"value\": \"off\"}]");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        ck_assert_json_eq_text(
            unit_at(pod, "/spec/containers/1/env"),
            "[{\"name\": \"HANGAR_UID_SPLIT\", \"value\": \"required\"},"
            " {\"name\": \"HANGAR_DRIVER_CLONE_SAFETY\", \"value\": \"required\"}]");
        /* Marked injected, with the driver's environment loosened: refused. */
        with(pod, "/spec/containers/1/env/0/value", "\"off\"");
        _result_ mutate_result_t r2 = {0};
        admit_untouched(pod, DECISION_DENY, REASON_CONFLICT, &r2);
        ck_assert_detail_has(r2, "hangar-driver");
        /* Or without it at all. */
        json_object_del(unit_at(pod, "/spec/containers/1"), "env");
        _result_ mutate_result_t r3 = {0};
        admit_untouched(pod, DECISION_DENY, REASON_CONFLICT, &r3);
        /* off alone (cloneSafety back to auto) is one variable. */
        set_string(&cfg.sidecar.driver_uid_split, "off");
        set_string(&cfg.sidecar.driver_clone_safety, "auto");
        _unit_json_ json_t *off = base_pod();
        _result_ mutate_result_t r4 = {0};
        admit_patched(off, DECISION_INJECT, REASON_INJECTED, &r4);
        ck_assert_json_eq_text(unit_at(off, "/spec/containers/1/env"),
                               "[{\"name\": \"HANGAR_UID_SPLIT\", \"value\": \"off\"}]");
}
END_TEST

START_TEST(invalid_pods_denied)
{
        static const struct {
                const char *path, *value;
        } t[] = {
            {"/spec/containers", "{\"name\": \"sandbox\"}"},
            {"/spec/containers", "[]"},
            {"/spec/containers", "[{\"image\": \"x\"}]"},
            {"/spec/containers", "[{\"name\": 7, \"image\": \"x\"}]"},
            {"/spec/containers", "[\"sandbox\"]"},
            {"/spec/containers", "null"},
            {"/spec/initContainers", "{}"},
            {"/spec/initContainers", "[{\"image\": \"x\"}]"},
            {"/spec/volumes", "{}"},
            {"/spec/volumes", "[{\"emptyDir\": {}}]"},
            {"/spec/containers/0/volumeMounts", "{}"},
            {"/spec/containers/0/volumeMounts", "[{\"name\": \"data\"}]"},
            {"/spec/containers/0/volumeMounts", "[{\"mountPath\": \"/x\"}]"},
            {"/spec/containers/0/securityContext", "true"},
            {"/spec/containers/0/image", "\"\""},
            {"/spec/containers/0/image", "null"},
            {"/spec/containers/0/image", "5"},
            {"/metadata/annotations", "[]"},
            {"/spec", "[]"},
            {"/spec", "null"},
        };
        for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
                _unit_json_ json_t *pod = with(base_pod(), t[k].path, t[k].value);
                _unit_json_ json_t *orig = json_deep_copy(pod);
                _result_ mutate_result_t res = {0};
                run(pod, &res);
                ck_assert_msg(res.decision == DECISION_DENY && res.reason == REASON_INVALID_POD,
                              "%s = %s: got %s/%s (%s)", t[k].path, t[k].value,
                              mutate_decision_name(res.decision), mutate_reason_name(res.reason),
                              res.detail);
                ck_assert_msg(strncmp(res.detail, "invalid pod: ", 13) == 0, "detail: %s",
                              res.detail);
                assert_untouched(orig, pod, &res);
        }
}
END_TEST

START_TEST(duplicate_container_names_denied)
{
        /* Which "sandbox" is the agent would be a guess (and a reinvocation
         * would judge the other one): invalid, as the API server would say. */
        static const char *const extra[][2] = {
            {"/spec/containers/-", "{\"name\": \"sandbox\", \"image\": \"other\"}"},
            {"/spec/initContainers", "[{\"name\": \"sandbox\", \"image\": \"i\"}]"},
            {"/spec/ephemeralContainers", "[{\"name\": \"sandbox\", \"image\": \"e\"}]"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(extra); i++) {
                _unit_json_ json_t *pod = with(base_pod(), extra[i][0], extra[i][1]);
                _result_ mutate_result_t res = {0};
                admit_untouched(pod, DECISION_DENY, REASON_INVALID_POD, &res);
                ck_assert_detail_has(res, "container name \"sandbox\" is used twice");
        }
}
END_TEST

START_TEST(shared_values_give_the_same_pods)
{
        /* The server builds the sidecar's values once and every pod shares
         * them: the same patch and the same pod as mutate_pod gives, and the
         * shared values are never changed by the pods they went into. */
        shape_values_t *values = NULL;
        ck_assert_int_eq(shape_values_new(&cfg.sidecar, &values), 0);
        _cleanup_free_ char *before = jsondump(values->driver_rest);
        static const char *const variants[][2] = {
            {NULL, NULL},
            {"/spec/volumes", "[{\"name\": \"data\"}]"},
            {"/metadata/annotations", "{\"a\": \"b\"}"},
            {"/spec/shareProcessNamespace", "true"},
            {"/spec/containers/0/volumeMounts", "[{\"name\": \"d\", \"mountPath\": \"/d\"}]"},
            {"/spec/containers/0/securityContext", "{\"privileged\": true}"},
            /* The driver held to its requests (limit_driver): its own
             * resources, never the shared ones. */
            {"/spec/resources", "{\"limits\": {\"cpu\": \"1\"}}"},
            {"/spec/containers/0/resources", "{\"limits\": {\"memory\": \"1Gi\"}}"},
        };
        for (int round = 0; round < 3; round++) {
                for (size_t i = 0; i < ARRAY_SIZE(variants); i++) {
                        _unit_json_ json_t *a = base_pod();
                        if (variants[i][0])
                                with(a, variants[i][0], variants[i][1]);
                        _unit_json_ json_t *b = json_deep_copy(a);
                        _result_ mutate_result_t ra = {0}, rb = {0};
                        ck_assert_int_eq(mutate_pod(&cfg, a, &ra), 0);
                        ck_assert_int_eq(mutate_pod_with(&cfg, values, b, &rb), 0);
                        ck_assert_int_eq(ra.reason, rb.reason);
                        ck_assert_str_eq(ra.detail, rb.detail);
                        ck_assert_msg((!ra.patch && !rb.patch) ||
                                          (ra.patch && rb.patch && !strcmp(ra.patch, rb.patch)),
                                      "patches differ: %s / %s", ra.patch, rb.patch);
                        ck_assert_json_eq(a, b);
                }
        }
        _cleanup_free_ char *after = jsondump(values->driver_rest);
        ck_assert_str_eq(before, after);
        shape_values_free(values);
}
END_TEST

START_TEST(deterministic)
{
        _unit_json_ json_t *a =
            with(base_pod(), "/metadata/annotations", "{\"z\": \"1\", \"a\": \"2\"}");
        with(a, "/spec/volumes", "[{\"name\": \"data\"}]");
        _unit_json_ json_t *b = json_deep_copy(a);
        _result_ mutate_result_t ra = {0}, rb = {0};
        run(a, &ra);
        run(b, &rb);
        ck_assert_result(ra, DECISION_INJECT, REASON_INJECTED);
        /* Byte-identical, in emission order (not sorted). */
        ck_assert_str_eq(ra.patch, rb.patch);
        /* And the text is what jansson writes for the same ops. */
        _cleanup_free_ char *pa = json_dumps(ops_of(&ra), JSON_COMPACT);
        ck_assert_str_eq(pa, ra.patch);
        _cleanup_free_ char *da = json_dumps(a, JSON_COMPACT);
        _cleanup_free_ char *db = json_dumps(b, JSON_COMPACT);
        ck_assert_str_eq(da, db);
}
END_TEST

START_TEST(custom_configuration)
{
        set_string(&cfg.sidecar.agent_container, "agent");
        set_string(&cfg.sidecar.home_path, "/home/h");
        set_string(&cfg.sidecar.ctl_path, "/run/c");
        cfg.sidecar.driver_uid = 2000;
        _unit_json_ json_t *pod = with(base_pod(), "/spec/containers/0/name", "\"agent\"");
        _result_ mutate_result_t res = {0};
        run(pod, &res);
        ck_assert_result(res, DECISION_INJECT, REASON_INJECTED);
        ck_assert_str_eq(
            json_string_value(unit_at(pod, "/spec/containers/0/volumeMounts/0/mountPath")),
            "/home/h");
        ck_assert_str_eq(
            json_string_value(unit_at(pod, "/spec/containers/1/volumeMounts/1/mountPath")),
            "/run/c");
        ck_assert_int_eq(
            json_integer_value(unit_at(pod, "/spec/containers/1/securityContext/runAsUser")), 2000);
        /* The conflict check follows the configured paths. */
        _unit_json_ json_t *clash = with(base_pod(), "/spec/containers/0/name", "\"agent\"");
        with(clash, "/spec/containers/0/volumeMounts",
             "[{\"name\": \"d\", \"mountPath\": \"/run/c\"}]");
        assert_conflict(clash, "/run/c");
}
END_TEST

START_TEST(reason_table)
{
        static const struct {
                mutate_reason_t reason;
                const char *name;
                mutate_decision_t decision;
        } t[] = {
            {REASON_INTERNAL_ERROR, "internal-error", DECISION_DENY},
            {REASON_INJECTED, "injected", DECISION_INJECT},
            {REASON_NOT_POD, "not-pod", DECISION_SKIP},
            {REASON_NOT_CREATE, "not-create", DECISION_SKIP},
            {REASON_SUBRESOURCE, "subresource", DECISION_SKIP},
            {REASON_INJECTION_DISABLED, "injection-disabled", DECISION_SKIP},
            {REASON_NOT_SELECTED, "not-selected", DECISION_SKIP},
            {REASON_ALREADY_INJECTED, "already-injected", DECISION_SKIP},
            {REASON_PRIVILEGED, "privileged-container", DECISION_SKIP},
            {REASON_HOST_PID, "host-pid", DECISION_SKIP},
            {REASON_HOST_NETWORK, "host-network", DECISION_SKIP},
            {REASON_HOST_IPC, "host-ipc", DECISION_SKIP},
            {REASON_CONFLICT, "conflict", DECISION_DENY},
            {REASON_NO_AGENT_CONTAINER, "no-agent-container", DECISION_DENY},
            {REASON_INVALID_POD, "invalid-pod", DECISION_DENY},
            {REASON_NOT_GUARDED, "not-guarded", DECISION_ALLOW},
            {REASON_LISTED_IDENTITY, "listed-identity", DECISION_ALLOW},
            {REASON_DRIVER_EXEC, "driver-exec", DECISION_DENY},
            {REASON_PORT_FORWARD, "port-forward", DECISION_DENY},
            {REASON_POD_UNKNOWN, "pod-unknown", DECISION_DENY},
            {REASON_EPHEMERAL_CONTAINER, "ephemeral-container", DECISION_DENY},
            {REASON_DRIVER_CHANGED, "driver-changed", DECISION_DENY},
            {REASON_HANGAR_METADATA, "hangar-metadata", DECISION_DENY},
            {REASON_UNKNOWN_DOOR, "unknown-door", DECISION_DENY},
        };
        ck_assert_uint_eq(ARRAY_SIZE(t), REASON_COUNT);
        for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
                ck_assert_str_eq(mutate_reason_name(t[k].reason), t[k].name);
                ck_assert_int_eq(mutate_reason_decision(t[k].reason), t[k].decision);
        }
        /* A selected pod left without the split comes back with a warning. */
        for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
                bool warns = t[k].reason == REASON_PRIVILEGED || t[k].reason == REASON_HOST_PID ||
                             t[k].reason == REASON_HOST_NETWORK || t[k].reason == REASON_HOST_IPC;
                ck_assert_msg(mutate_reason_warns(t[k].reason) == warns, "%s", t[k].name);
        }
        ck_assert(!mutate_reason_warns(REASON_COUNT));
        ck_assert_str_eq(mutate_reason_name(REASON_COUNT), "internal-error");
        ck_assert_int_eq(mutate_reason_decision(REASON_COUNT), DECISION_DENY);
        ck_assert_str_eq(mutate_decision_name(DECISION_INJECT), "injected");
        ck_assert_str_eq(mutate_decision_name(DECISION_SKIP), "skipped");
        ck_assert_str_eq(mutate_decision_name(DECISION_DENY), "denied");
        ck_assert_str_eq(mutate_decision_name(DECISION_ALLOW), "allowed");
        ck_assert_str_eq(mutate_decision_name((mutate_decision_t)42), "denied");
        /* A zeroed result fails closed. */
        mutate_result_t zero = {0};
        ck_assert_int_eq(zero.decision, DECISION_DENY);
        ck_assert_int_eq(zero.reason, REASON_INTERNAL_ERROR);
        mutate_result_set(&zero, REASON_NOT_CREATE, "operation %s", "UPDATE");
        ck_assert_int_eq(zero.decision, DECISION_SKIP);
        ck_assert_str_eq(zero.detail, "operation UPDATE");
        mutate_result_free(&zero);
        ck_assert_ptr_null(zero.patch);
}
END_TEST

START_TEST(host_network_and_ipc_skip)
{
        static const struct {
                const char *member;
                mutate_reason_t reason;
                const char *name;
        } t[] = {
            {"/spec/hostNetwork", REASON_HOST_NETWORK, "host-network"},
            {"/spec/hostIPC", REASON_HOST_IPC, "host-ipc"},
        };
        for (size_t k = 0; k < ARRAY_SIZE(t); k++) {
                _unit_json_ json_t *pod = with(base_pod(), t[k].member, "true");
                _unit_json_ json_t *orig = json_deep_copy(pod);
                _result_ mutate_result_t res = {0};
                run(pod, &res);
                ck_assert_result(res, DECISION_SKIP, t[k].reason);
                ck_assert_uint_eq(json_array_size(ops_of(&res)), 2);
                ck_assert_str_eq(
                    json_string_value(
                        unit_at(pod, "/metadata/annotations/hangar.dev~1driver-sidecar-reason")),
                    t[k].name);
                ck_assert_json_eq(unit_at(pod, "/spec"), unit_at(orig, "/spec"));
                assert_patch_reproduces(orig, pod, &res);
                ck_assert(mutate_reason_warns(res.reason));
                /* Reinvoked: nothing more. */
                _result_ mutate_result_t again = {0};
                admit_untouched(pod, DECISION_SKIP, t[k].reason, &again);
                /* false is no reason to skip. */
                _unit_json_ json_t *no = with(base_pod(), t[k].member, "false");
                _result_ mutate_result_t r2 = {0};
                run(no, &r2);
                ck_assert_result(r2, DECISION_INJECT, REASON_INJECTED);
        }
}
END_TEST

START_TEST(reinvocation_leaves_the_pods_own_choices)
{
        /* Who the agent runs as and what it adds are the verdict's: the
         * webhook injected around them, so a reinvocation does not deny. */
        _unit_json_ json_t *pod = injected_then("/spec/containers/0/securityContext",
                                                "{\"capabilities\": {\"add\": [\"NET_RAW\"]}}");
        _result_ mutate_result_t res = {0};
        admit_untouched(pod, DECISION_SKIP, REASON_ALREADY_INJECTED, &res);
}
END_TEST

START_TEST(conflict_container_targeting_driver)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/ephemeralContainers",
                                       "[{\"name\": \"debug\", \"image\": \"d\","
                                       " \"targetContainerName\": \"hangar-driver\"}]");
        assert_conflict(pod, "targets \"hangar-driver\"");
}
END_TEST

/* "/var/lib/" + "y/" * k + "../" * k + "hangar": canonically /var/lib/hangar. */
static char *long_path(size_t k)
{
        static char buf[4 * 8192];
        size_t n = (size_t)snprintf(buf, sizeof(buf), "/var/lib/");
        for (size_t i = 0; i < k; i++)
                n += (size_t)snprintf(buf + n, sizeof(buf) - n, "y/");
        for (size_t i = 0; i < k; i++)
                n += (size_t)snprintf(buf + n, sizeof(buf) - n, "../");
        (void)snprintf(buf + n, sizeof(buf) - n, "hangar");
        return buf;
}

START_TEST(long_mount_path_denied)
{
        /* The agent's own volume at a path that resolves to hangar-home:
         * short enough to normalise, it is the known conflict; past 4 KiB on
         * the way it was injected (segments dropped made it "/hangar") and
         * is now refused, never compared shortened. */
        static const struct {
                size_t k;
                mutate_reason_t reason;
                const char *needle;
        } t[] = {
            {100, REASON_CONFLICT, "already mounts \"data\" at /var/lib/y/"},
            {2100, REASON_INVALID_POD, "mountPath is longer than 4095 bytes once normalised"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
                _unit_json_ json_t *pod = base_pod();
                json_t *mounts =
                    json_pack("[{s:s, s:s}]", "name", "data", "mountPath", long_path(t[i].k));
                ck_assert_int_eq(unit_apply_add(pod, "/spec/containers/0/volumeMounts", mounts), 0);
                json_decref(mounts);
                with(pod, "/spec/volumes", "[{\"name\": \"data\", \"emptyDir\": {}}]");
                _result_ mutate_result_t res = {0};
                admit_untouched(pod, DECISION_DENY, t[i].reason, &res);
                ck_assert_detail_has(res, t[i].needle);
        }
}
END_TEST

/* A sandbox pod as the ServiceAccount admission plugin leaves it before
 * the webhook: its token volume, mounted in every container. */
static json_t *pod_with_token(void)
{
        return unit_json(
            "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"p\","
            " \"namespace\": \"ns\", \"labels\": {\"hangar.dev/sandbox\": \"true\"}},"
            " \"spec\": {\"serviceAccountName\": \"default\", \"containers\": ["
            "  {\"name\": \"helper\", \"image\": \"h:1\", \"volumeMounts\": [{\"name\": "
            "   \"kube-api-access-abcde\", \"readOnly\": true, \"mountPath\": "
            "   \"/var/run/secrets/kubernetes.io/serviceaccount\"}]},"
            "  {\"name\": \"sandbox\", \"image\": \"" IMAGE "\", \"volumeMounts\": ["
            "   {\"name\": \"data\", \"mountPath\": \"/data\"},"
            "   {\"name\": \"kube-api-access-abcde\", \"readOnly\": true, \"mountPath\": "
            "   \"/var/run/secrets/kubernetes.io/serviceaccount\"}]}],"
            " \"volumes\": [{\"name\": \"data\", \"emptyDir\": {}}, {\"name\": "
            "  \"kube-api-access-abcde\", \"projected\": {\"sources\": [{\"serviceAccountToken\": "
            "  {\"expirationSeconds\": 3607, \"path\": \"token\"}}]}}]}}");
}

/* What the plugin does again on a reinvocation: its mount added to every
 * container without one at its path (the driver, and the agent if the
 * webhook took it out). */
static void plugin_again(json_t *pod)
{
        json_t *containers = unit_at(pod, "/spec/containers");
        size_t i;
        json_t *c;
        json_array_foreach (containers, i, c) {
                json_t *mounts = json_object_get(c, "volumeMounts");
                bool has = false;
                size_t k;
                json_t *m;
                json_array_foreach (mounts, k, m) {
                        const char *path = json_string_value(json_object_get(m, "mountPath"));
                        has |= strcmp(path, "/var/run/secrets/kubernetes.io/serviceaccount") == 0;
                }
                if (has)
                        continue;
                if (!mounts) {
                        mounts = json_array();
                        json_object_set_new(c, "volumeMounts", mounts);
                }
                json_array_append_new(mounts, unit_json("{\"name\": \"kube-api-access-abcde\","
                                                        " \"readOnly\": true, \"mountPath\":"
                                                        " \"/var/run/secrets/kubernetes.io/"
                                                        "serviceaccount\"}"));
        }
}

static size_t token_mounts_of(json_t *pod, size_t index)
{
        char path[64];
        (void)snprintf(path, sizeof(path), "/spec/containers/%zu/volumeMounts", index);
        size_t k, n = 0;
        json_t *m;
        json_array_foreach (unit_at(pod, path), k, m)
                n += strncmp(json_string_value(json_object_get(m, "name")), "kube-api-access-",
                             16) == 0;
        return n;
}

/* Under a gVisor RuntimeClass the shim's mount annotations for hangar's
 * volumes are set (as GKE Sandbox's admission sets them); elsewhere not. */
START_TEST(gvisor_mount_annotations)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/runtimeClassName", "\"gvisor\"");
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
        static const char *const want[][2] = {
            {"dev.gvisor.spec.mount.hangar-ctl.share", "pod"},
            {"dev.gvisor.spec.mount.hangar-ctl.type", "tmpfs"},
            {"dev.gvisor.spec.mount.hangar-ctl.options", "rw,rprivate,size=67108864"},
            {"dev.gvisor.spec.mount.hangar-home.share", "pod"},
            {"dev.gvisor.spec.mount.hangar-home.type", "bind"},
            {"dev.gvisor.spec.mount.hangar-home.options", "rw,rprivate"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(want); i++)
                ck_assert_str_eq(json_string_value(json_object_get(ann, want[i][0])), want[i][1]);
        /* The size follows volumes.ctl.sizeLimit, in whole bytes. */
        hg_error_t serr = {0};
        ck_assert_int_eq(settings_set(&cfg, "volumes.ctl.sizeLimit=0.5Gi", &serr), 0);
        _unit_json_ json_t *half = with(base_pod(), "/spec/runtimeClassName", "\"gvisor\"");
        _result_ mutate_result_t resh = {0};
        run(half, &resh);
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(json_object_get(half, "metadata"), "annotations"),
                             "dev.gvisor.spec.mount.hangar-ctl.options")),
                         "rw,rprivate,size=536870912");
        /* A pod's own value for one of them is replaced. */
        _unit_json_ json_t *own = with(base_pod(), "/spec/runtimeClassName", "\"gvisor\"");
        with(own, "/metadata/annotations",
             "{\"dev.gvisor.spec.mount.hangar-ctl.share\": \"container\"}");
        _result_ mutate_result_t res2 = {0};
        run(own, &res2);
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(json_object_get(own, "metadata"), "annotations"),
                             "dev.gvisor.spec.mount.hangar-ctl.share")),
                         "pod");
        /* runc pods, or no RuntimeClass: none. */
        _unit_json_ json_t *runc = with(base_pod(), "/spec/runtimeClassName", "\"runc\"");
        _result_ mutate_result_t res3 = {0};
        run(runc, &res3);
        ck_assert_ptr_null(
            json_object_get(json_object_get(json_object_get(runc, "metadata"), "annotations"),
                            "dev.gvisor.spec.mount.hangar-ctl.type"));
        /* The RuntimeClasses are the admin's to name. */
        hg_error_t err = {0};
        ck_assert_int_eq(settings_set(&cfg, "gvisor.runtimeClassNames=[\"runc\"]", &err), 0);
        _unit_json_ json_t *named = with(base_pod(), "/spec/runtimeClassName", "\"runc\"");
        _result_ mutate_result_t res4 = {0};
        run(named, &res4);
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(json_object_get(named, "metadata"), "annotations"),
                             "dev.gvisor.spec.mount.hangar-ctl.type")),
                         "tmpfs");
}
END_TEST

/* Annotations a pod brings at CREATE that would hold for its whole life
 * (the guard fixes dev.gvisor.* after CREATE): a mount hint for a hangar
 * volume beyond the webhook's own, a hint pointing at a hangar volume's
 * directory, a runsc flag, an AppArmor profile for the driver other than
 * runtime/default. Each is a conflict naming the key; the pod's own
 * volumes' hints and runtime/default stay allowed. */
START_TEST(create_annotations_refused)
{
        static const struct {
                const char *runtime_class, *annotations, *needle;
        } refused[] = {
            {"gvisor", "{\"dev.gvisor.spec.mount.hangar-ctl.x.type\": \"bind\"}",
             "dev.gvisor.spec.mount.hangar-ctl.x.type"},
            {"gvisor", "{\"dev.gvisor.spec.mount.hangar-home.source\": \"/tmp\"}",
             "dev.gvisor.spec.mount.hangar-home.source"},
            {"gvisor", "{\"dev.gvisor.spec.mount.hangar-ctl\": \"x\"}",
             "dev.gvisor.spec.mount.hangar-ctl"},
            /* not a gVisor class of the configuration: the webhook writes none */
            {"runc", "{\"dev.gvisor.spec.mount.hangar-ctl.type\": \"bind\"}",
             "dev.gvisor.spec.mount.hangar-ctl.type"},
            {"gvisor",
             "{\"dev.gvisor.spec.mount.data.source\": "
             "\"/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/hangar-ctl\"}",
             "dev.gvisor.spec.mount.data.source"},
            {"gvisor", "{\"dev.gvisor.spec.mount.data.source\": \"/x/hangar-home/sub/\"}",
             "dev.gvisor.spec.mount.data.source"},
            {"gvisor", "{\"dev.gvisor.flag.network\": \"host\"}", "dev.gvisor.flag.network"},
            {"runc",
             "{\"container.apparmor.security.beta.kubernetes.io/hangar-driver\": "
             "\"unconfined\"}",
             "container.apparmor.security.beta.kubernetes.io/hangar-driver"},
            {"runc",
             "{\"container.apparmor.security.beta.kubernetes.io/hangar-driver\": "
             "\"localhost/p\"}",
             "AppArmor"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
                char rc[32];
                (void)snprintf(rc, sizeof(rc), "\"%s\"", refused[i].runtime_class);
                _unit_json_ json_t *pod = with(base_pod(), "/spec/runtimeClassName", rc);
                with(pod, "/metadata/annotations", refused[i].annotations);
                assert_conflict(pod, refused[i].needle);
        }
        /* A pod-level profile is the driver's too (the API server copies it). */
        _unit_json_ json_t *level = with(base_pod(), "/spec/securityContext",
                                         "{\"appArmorProfile\": {\"type\": \"Unconfined\"}}");
        assert_conflict(level, "appArmorProfile");

        static const char *const allowed[] = {
            "{\"dev.gvisor.spec.mount.data.share\": \"pod\", \"dev.gvisor.spec.mount.data.type\":"
            " \"tmpfs\", \"dev.gvisor.spec.mount.data.source\": \"/var/lib/kubelet/pods/u/"
            "volumes/kubernetes.io~empty-dir/data\"}",
            "{\"dev.gvisor.spec.mount.hangar-ctl.type\": \"bind\"}", /* replaced */
            "{\"container.apparmor.security.beta.kubernetes.io/sandbox\": \"unconfined\"}",
        };
        for (size_t i = 0; i < ARRAY_SIZE(allowed); i++) {
                _unit_json_ json_t *pod = with(base_pod(), "/spec/runtimeClassName", "\"gvisor\"");
                with(pod, "/metadata/annotations", allowed[i]);
                _result_ mutate_result_t res = {0};
                admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        }
        /* runtime/default alone would be copied onto the driver's own
         * securityContext; beside a pod-level RuntimeDefault it is the one
         * the API server writes itself. */
        _unit_json_ json_t *alone = with(base_pod(), "/metadata/annotations",
                                         "{\"container.apparmor.security.beta.kubernetes.io/"
                                         "hangar-driver\": \"runtime/default\"}");
        assert_conflict(alone, "AppArmor profile of its own");
        _unit_json_ json_t *rd = with(base_pod(), "/spec/securityContext",
                                      "{\"appArmorProfile\": {\"type\": \"RuntimeDefault\"}}");
        with(rd, "/metadata/annotations",
             "{\"container.apparmor.security.beta.kubernetes.io/hangar-driver\": "
             "\"runtime/default\"}");
        _result_ mutate_result_t resrd = {0};
        admit_patched(rd, DECISION_INJECT, REASON_INJECTED, &resrd);

        /* A pod marked injected (a copy) that carries one is refused too. */
        _unit_json_ json_t *copy = injected_then(
            "/metadata/annotations/dev.gvisor.spec.mount.hangar-ctl.x.type", "\"bind\"");
        assert_conflict(copy, "dev.gvisor.spec.mount.hangar-ctl.x.type");
}
END_TEST

START_TEST(agent_token_kept_by_default)
{
        _unit_json_ json_t *pod = pod_with_token();
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        ck_assert_uint_eq(token_mounts_of(pod, 1), 1);
        /* The driver is added without one. */
        ck_assert_uint_eq(token_mounts_of(pod, 2), 0);
        /* Reinvoked after the plugin gave the driver its mount: taken out. */
        _unit_json_ json_t *first = json_deep_copy(pod);
        plugin_again(pod);
        ck_assert_uint_eq(token_mounts_of(pod, 2), 1);
        _result_ mutate_result_t again = {0};
        admit_patched(pod, DECISION_SKIP, REASON_ALREADY_INJECTED, &again);
        ck_assert_detail_has(again, "token's mounts taken out again");
        ck_assert_json_eq(pod, first);
        ck_assert_uint_eq(unit_count_ops(ops_of(&again), "/spec/containers/2/volumeMounts/2"), 1);
}
END_TEST

START_TEST(agent_token_removed_when_asked)
{
        set_string(&cfg.sidecar.agent_service_account_token, "remove");
        _unit_json_ json_t *pod = pod_with_token();
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        /* The agent's token mount went (a remove at its index, before the
         * append of hangar-home); the helper keeps its own; nothing else
         * of the agent changed. */
        ck_assert_uint_eq(unit_count_ops(ops_of(&res), "/spec/containers/1/volumeMounts/1"), 1);
        ck_assert_json_eq_text(unit_at(pod, "/spec/containers/1/volumeMounts"),
                               "[{\"name\": \"data\", \"mountPath\": \"/data\"},"
                               " {\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\","
                               " \"readOnly\": true}]");
        ck_assert_uint_eq(token_mounts_of(pod, 0), 1);
        ck_assert_uint_eq(token_mounts_of(pod, 2), 0);
        /* Reviewing our own output again: no operation at all. */
        _unit_json_ json_t *first = json_deep_copy(pod);
        _result_ mutate_result_t same = {0};
        run(pod, &same);
        ck_assert_result(same, DECISION_SKIP, REASON_ALREADY_INJECTED);
        assert_untouched(first, pod, &same);
        /* Reinvoked after the plugin ran again (mounts back in the agent and
         * the driver): both taken out, the pod as the first pass left it. */
        plugin_again(pod);
        ck_assert_uint_eq(token_mounts_of(pod, 1), 1);
        _result_ mutate_result_t again = {0};
        admit_patched(pod, DECISION_SKIP, REASON_ALREADY_INJECTED, &again);
        ck_assert_json_eq(pod, first);
        /* Mounted elsewhere, or under the path: those go too. */
        _unit_json_ json_t *moved = pod_with_token();
        with(moved, "/spec/containers/1/volumeMounts/-",
             "{\"name\": \"kube-api-access-abcde\", \"mountPath\": \"/t\", \"readOnly\": true}");
        with(moved, "/spec/containers/1/volumeMounts/-",
             "{\"name\": \"data\", \"mountPath\": \"/var/run/secrets/kubernetes.io/serviceaccount/"
             "x\", \"subPath\": \"x\"}");
        _result_ mutate_result_t r3 = {0};
        admit_patched(moved, DECISION_INJECT, REASON_INJECTED, &r3);
        ck_assert_json_eq_text(unit_at(moved, "/spec/containers/1/volumeMounts"),
                               "[{\"name\": \"data\", \"mountPath\": \"/data\"},"
                               " {\"name\": \"hangar-home\", \"mountPath\": \"/var/lib/hangar\","
                               " \"readOnly\": true}]");
}
END_TEST

START_TEST(deny_carries_no_patch)
{
        /* Token mounts taken out, then the spec check refuses: the answer
         * is the deny alone. */
        set_string(&cfg.sidecar.agent_service_account_token, "remove");
        _unit_json_ json_t *pod = pod_with_token();
        _result_ mutate_result_t res = {0};
        run(pod, &res);
        ck_assert_result(res, DECISION_INJECT, REASON_INJECTED);
        plugin_again(pod);
        with(pod, "/spec/containers/2/args", "[\"x\"]");
        _result_ mutate_result_t again = {0};
        run(pod, &again);
        ck_assert_result(again, DECISION_DENY, REASON_CONFLICT);
        ck_assert_ptr_null(again.patch);
}
END_TEST

/* The driver's resources once injected (its container is the last of list). */
static json_t *driver_resources(json_t *pod, const char *list)
{
        json_t *l = json_object_get(json_object_get(pod, "spec"), list);
        json_t *driver = json_array_get(l, json_array_size(l) - 1);
        ck_assert_str_eq(json_string_value(json_object_get(driver, "name")), "hangar-driver");
        return json_object_get(driver, "resources");
}

/* After injection: the patch reproduces the pod, the reinvocation is a
 * no-op and the sidecar is in shape. */
static void admit_in_shape(json_t *pod)
{
        _result_ mutate_result_t res = {0};
        admit_patched(pod, DECISION_INJECT, REASON_INJECTED, &res);
        _result_ mutate_result_t again = {0};
        admit_untouched(pod, DECISION_SKIP, REASON_ALREADY_INJECTED, &again);
        shapecheck_finding_t finding;
        ck_assert_msg(shapecheck_sidecar(&cfg.sidecar, pod, &finding) == 0, "out of shape: %s",
                      finding.detail);
}

/* Pod-level limits with no driver limit configured: the pod's limits grow
 * by the driver's requests and the driver is held to them, so LimitRanger's
 * default limit (above the pod's, on the API server's second round) is
 * never given to it. Both lists the driver can be in. */
START_TEST(pod_level_limits_hold_the_driver)
{
        for (int native = 0; native <= 1; native++) {
                cfg.sidecar.driver_native_sidecar = native;
                _unit_json_ json_t *pod =
                    with(with(base_pod(), "/spec/resources",
                              "{\"limits\": {\"cpu\": \"500m\", \"memory\": \"256Mi\"}}"),
                         "/spec/containers/0/resources", "{\"limits\": {\"memory\": \"256Mi\"}}");
                admit_in_shape(pod);
                ck_assert_json_eq_text(
                    unit_at(pod, "/spec/resources"),
                    "{\"limits\": {\"cpu\": \"550m\", \"memory\": \"335544320\"}}");
                ck_assert_json_eq_text(
                    driver_resources(pod, native ? "initContainers" : "containers"),
                    "{\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"},"
                    " \"limits\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"}}");
        }
}
END_TEST

/* A pod-level limit of one resource holds the driver in that one only. */
START_TEST(pod_level_limit_of_one_resource)
{
        _unit_json_ json_t *pod =
            with(base_pod(), "/spec/resources", "{\"limits\": {\"memory\": \"1Gi\"}}");
        admit_in_shape(pod);
        ck_assert_json_eq_text(driver_resources(pod, "containers"),
                               "{\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"},"
                               " \"limits\": {\"memory\": \"64Mi\"}}");
}
END_TEST

/* Every container limited (as a ResourceQuota on limits.* requires, or a
 * LimitRange's defaults made them): the driver too, in each resource all
 * of them limit; one container without a limit leaves the driver without. */
START_TEST(driver_limited_where_every_container_is)
{
        _unit_json_ json_t *pod = with(with(base_pod(), "/spec/containers/0/resources",
                                            "{\"requests\": {\"cpu\": \"1\"}, \"limits\": "
                                            "{\"cpu\": \"2\", \"memory\": \"1Gi\"}}"),
                                       "/spec/initContainers",
                                       "[{\"name\": \"setup\", \"image\": \"x\", \"resources\": "
                                       "{\"limits\": {\"cpu\": \"1\"}}}]");
        admit_in_shape(pod);
        ck_assert_json_eq_text(driver_resources(pod, "containers"),
                               "{\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"},"
                               " \"limits\": {\"cpu\": \"50m\"}}");
        ck_assert_ptr_null(json_object_get(json_object_get(pod, "spec"), "resources"));

        _unit_json_ json_t *mixed =
            with(with(base_pod(), "/spec/containers/0/resources", "{\"limits\": {\"cpu\": \"2\"}}"),
                 "/spec/containers/-", "{\"name\": \"helper\", \"image\": \"x\"}");
        admit_in_shape(mixed);
        ck_assert_json_eq_text(driver_resources(mixed, "containers"),
                               "{\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"}}");
}
END_TEST

/* A Guaranteed pod (every container's requests equal to its limits) stays
 * Guaranteed: the driver's limits are its requests. */
START_TEST(guaranteed_pod_stays_guaranteed)
{
        _unit_json_ json_t *pod = with(base_pod(), "/spec/containers/0/resources",
                                       "{\"requests\": {\"cpu\": \"1\", \"memory\": \"1Gi\"},"
                                       " \"limits\": {\"cpu\": \"1\", \"memory\": \"1Gi\"}}");
        admit_in_shape(pod);
        json_t *r = driver_resources(pod, "containers");
        ck_assert_json_eq(json_object_get(r, "requests"), json_object_get(r, "limits"));
}
END_TEST

/* Configured limits (driver.resources.limits) are the driver's wherever
 * set; the webhook fills in only a resource they leave unlimited, and a
 * pod-level limit grows by the configured limit. */
START_TEST(configured_limits_kept)
{
        set_string(&cfg.sidecar.driver_cpu_limit, "1");
        _unit_json_ json_t *pod = with(base_pod(), "/spec/resources",
                                       "{\"limits\": {\"cpu\": \"2\", \"memory\": \"1Gi\"}}");
        admit_in_shape(pod);
        ck_assert_json_eq_text(unit_at(pod, "/spec/resources"),
                               "{\"limits\": {\"cpu\": \"3000m\", \"memory\": \"1140850688\"}}");
        ck_assert_json_eq_text(driver_resources(pod, "containers"),
                               "{\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"},"
                               " \"limits\": {\"cpu\": \"1\", \"memory\": \"64Mi\"}}");
        /* A pod that limits nothing: the configured limit only. */
        _unit_json_ json_t *plain = base_pod();
        admit_in_shape(plain);
        ck_assert_json_eq_text(driver_resources(plain, "containers"),
                               "{\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"},"
                               " \"limits\": {\"cpu\": \"1\"}}");
}
END_TEST

/* Pod-level requests without limits set no driver limit (nothing above the
 * driver to exceed). */
START_TEST(pod_level_requests_only)
{
        _unit_json_ json_t *pod =
            with(base_pod(), "/spec/resources", "{\"requests\": {\"cpu\": \"1\"}}");
        admit_in_shape(pod);
        ck_assert_json_eq_text(driver_resources(pod, "containers"),
                               "{\"requests\": {\"cpu\": \"50m\", \"memory\": \"64Mi\"}}");
        ck_assert_json_eq_text(unit_at(pod, "/spec/resources"),
                               "{\"requests\": {\"cpu\": \"1050m\"}}");
}
END_TEST

static Suite *mutate_suite(void)
{
        Suite *s = suite_create("mutate");
        TCase *tc = tcase_create("inject");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, injected_pod_shape);
        tcase_add_test(tc, no_volumes_array_created_once);
        tcase_add_test(tc, null_volumes_is_absent);
        tcase_add_test(tc, existing_volumes_only_appended);
        tcase_add_test(tc, agent_not_first);
        tcase_add_test(tc, agent_not_first_without_mounts);
        tcase_add_test(tc, annotation_paths_escaped);
        tcase_add_test(tc, annotations_map_created_once);
        tcase_add_test(tc, share_process_namespace);
        tcase_add_test(tc, reinvocation_is_a_no_op);
        tcase_add_test(tc, reinvocation_turns_shared_pid_off_again);
        tcase_add_test(tc, reinvocation_denies_mounts_out_of_shape);
        tcase_add_test(tc, reinvocation_leaves_the_pods_own_choices);
        tcase_add_test(tc, gvisor_mount_annotations);
        tcase_add_test(tc, create_annotations_refused);
        tcase_add_test(tc, native_sidecar);
        tcase_add_test(tc, daemon_probes);
        tcase_add_test(tc, agent_token_kept_by_default);
        tcase_add_test(tc, agent_token_removed_when_asked);
        tcase_add_test(tc, deterministic);
        tcase_add_test(tc, shared_values_give_the_same_pods);
        tcase_add_test(tc, custom_configuration);
        tcase_add_test(tc, agent_named_by_annotation);
        tcase_add_test(tc, selector_exists);
        tcase_add_test(tc, driver_environment);
        suite_add_tcase(s, tc);
        tc = tcase_create("skip");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, privileged_skips_with_annotations_only);
        tcase_add_test(tc, privileged_false_is_injected);
        tcase_add_test(tc, reinvocation_of_skipped_pod_is_a_no_op);
        tcase_add_test(tc, host_pid_skips);
        tcase_add_test(tc, host_network_and_ipc_skip);
        tcase_add_test(tc, disabled_skips_without_patch);
        tcase_add_test(tc, not_selected_skips_without_patch);
        suite_add_tcase(s, tc);
        tc = tcase_create("deny");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, conflict_existing_volume);
        tcase_add_test(tc, conflict_existing_driver_container);
        tcase_add_test(tc, conflict_agent_mount_path);
        tcase_add_test(tc, conflict_mount_of_reserved_volume);
        tcase_add_test(tc, no_conflict_nearby_paths);
        tcase_add_test(tc, no_agent_container);
        tcase_add_test(tc, agent_annotation_hostile);
        tcase_add_test(tc, default_container_annotation);
        tcase_add_test(tc, invalid_pods_denied);
        tcase_add_test(tc, duplicate_container_names_denied);
        tcase_add_test(tc, reason_table);
        tcase_add_test(tc, conflict_container_targeting_driver);
        tcase_add_test(tc, long_mount_path_denied);
        tcase_add_test(tc, deny_carries_no_patch);
        suite_add_tcase(s, tc);
        tc = tcase_create("resources");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, pod_level_limits_hold_the_driver);
        tcase_add_test(tc, pod_level_limit_of_one_resource);
        tcase_add_test(tc, driver_limited_where_every_container_is);
        tcase_add_test(tc, guaranteed_pod_stays_guaranteed);
        tcase_add_test(tc, configured_limits_kept);
        tcase_add_test(tc, pod_level_requests_only);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(mutate_suite());
}
