/* webhook/admit/inject.c: finding the pods in manifests (Pods, workload
 * templates, Lists) and running each through the admission path; what is
 * not ours left alone; skips reported; a deny fails the whole set. (The
 * end-to-end checks are tests/golden/test_inject_manifests.sh.) */
#include "inject.h"

#include "cleanup.h"
#include "unit.h"
#include "webhook_fixture.h"

#define SPEC "{\"containers\": [{\"name\": \"sandbox\", \"image\": \"img:1\"}]}"
#define META "{\"labels\": {\"hangar.dev/sandbox\": \"true\"}}"

static char skipped_where[256];
static int skips;

static void on_skip(const char *where, const char *reason, const char *detail, void *ctx)
{
        (void)reason, (void)detail, (void)ctx;
        skips++;
        (void)snprintf(skipped_where, sizeof(skipped_where), "%s", where);
}

static int run(json_t *docs, hg_error_t *err)
{
        skips = 0;
        skipped_where[0] = '\0';
        return inject_manifests(&cfg, docs, on_skip, NULL, err);
}

static size_t containers_at(json_t *doc, const char *path)
{
        json_t *spec = unit_at(doc, path);
        ck_assert_ptr_nonnull(spec);
        return json_array_size(json_object_get(spec, "containers"));
}

START_TEST(pods_and_templates)
{
        _unit_json_ json_t *docs = unit_json(
            "[{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": " META ", \"spec\": " SPEC
            "},"
            " {\"apiVersion\": \"apps/v1\", \"kind\": \"StatefulSet\", \"metadata\": {\"name\": "
            "\"s\"}, \"spec\": {\"template\": {\"metadata\": " META ", \"spec\": " SPEC "}}},"
            " {\"apiVersion\": \"batch/v1\", \"kind\": \"CronJob\", \"metadata\": {\"name\": "
            "\"c\"},"
            "  \"spec\": {\"jobTemplate\": {\"spec\": {\"template\": {\"metadata\": " META
            ", \"spec\": " SPEC "}}}}},"
            " {\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"m\"},"
            "  \"data\": {\"spec\": \"not a pod\"}}]");
        _unit_json_ json_t *configmap = json_deep_copy(json_array_get(docs, 3));
        hg_error_t err = {0};
        ck_assert_int_eq(run(docs, &err), 0);
        ck_assert_uint_eq(containers_at(json_array_get(docs, 0), "/spec"), 2);
        ck_assert_uint_eq(containers_at(json_array_get(docs, 1), "/spec/template/spec"), 2);
        ck_assert_uint_eq(
            containers_at(json_array_get(docs, 2), "/spec/jobTemplate/spec/template/spec"), 2);
        ck_assert(json_equal(json_array_get(docs, 3), configmap));
        ck_assert_int_eq(skips, 0);
}
END_TEST

START_TEST(skips_are_named)
{
        _unit_json_ json_t *docs = unit_json(
            "[{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"a\"}, "
            "\"spec\": " SPEC "},"
            " {\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": "
            "\"web\"}, \"spec\": {\"template\": {\"metadata\": " META
            ", \"spec\": {\"containers\": "
            "[{\"name\": \"sandbox\", \"image\": \"i\", \"securityContext\": {\"privileged\": "
            "true}}]}}}}]");
        hg_error_t err = {0};
        ck_assert_int_eq(run(docs, &err), 0);
        ck_assert_int_eq(skips, 2);
        ck_assert_str_eq(skipped_where, "document 2: Deployment web");
}
END_TEST

START_TEST(lists_typed_and_nested)
{
        _unit_json_ json_t *docs =
            unit_json("[{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": ["
                      "  {\"apiVersion\": \"v1\", \"kind\": \"PodList\", \"items\": ["
                      "    {\"metadata\": " META ", \"spec\": " SPEC "}]}]}]");
        hg_error_t err = {0};
        ck_assert_int_eq(run(docs, &err), 0);
        json_t *pod = unit_at(json_array_get(docs, 0), "/items/0/items/0");
        ck_assert_str_eq(json_string_value(json_object_get(pod, "kind")), "Pod");
        ck_assert_str_eq(json_string_value(json_object_get(pod, "apiVersion")), "v1");
        ck_assert_uint_eq(containers_at(pod, "/spec"), 2);
}
END_TEST

START_TEST(errors_name_the_manifest)
{
        static const struct {
                const char *docs, *needle;
        } cases[] = {
            {"[{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": " META
             ", \"spec\": {\"containers\": [{\"name\": \"sandbox\", \"image\": \"i\"}], "
             "\"volumes\": [{\"name\": \"hangar-ctl\"}]}}]",
             "Pod: the pod already has a volume named \"hangar-ctl\""},
            {"[{\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": "
             "\"d\"}, \"spec\": {}}]",
             "Deployment d: no pod template with a spec"},
            {"[{\"apiVersion\": \"v2\", \"kind\": \"Pod\"}]", "expected v1"},
            {"[7]", "not a Kubernetes object"},
            {"[{\"kind\": \"List\", \"items\": 3}]", "items is not a list"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _unit_json_ json_t *docs = unit_json(cases[i].docs);
                hg_error_t err = {0};
                ck_assert_int_lt(run(docs, &err), 0);
                ck_assert_msg(strstr(err.message, cases[i].needle), "case %zu: %s", i, err.message);
        }
}
END_TEST

static Suite *inject_suite(void)
{
        Suite *s = suite_create("inject");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, sidecar_cfg_setup, sidecar_cfg_teardown);
        tcase_add_test(tc, pods_and_templates);
        tcase_add_test(tc, skips_are_named);
        tcase_add_test(tc, lists_typed_and_nested);
        tcase_add_test(tc, errors_name_the_manifest);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(inject_suite());
}
