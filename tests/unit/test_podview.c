/* common/pod/podview: how a pod is read. The view's checks (each wrong type
 * named, no guess), the three lists by name, iteration order and early
 * stop, the agent only in spec.containers, annotations only as strings,
 * and the projection keeping what the view reads; and a pod read as it is
 * (a member of another type reads as absent), with the gVisor question. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "jsondump.h"
#include "jsonparse.h"
#include "jsonx.h"
#include "pathnorm.h"
#include "podview.h"
#include "unit.h"

static int read_text(const char *text, pod_view_t *view, hg_error_t *err, json_t **ret_pod)
{
        json_t *pod = unit_json(text);
        int r = podview_read(pod, view, err);
        *ret_pod = pod;
        return r;
}

START_TEST(reads_the_parts)
{
        _cleanup_json_ json_t *pod = NULL;
        pod_view_t view;
        hg_error_t err = {0};
        ck_assert_int_eq(
            read_text("{\"metadata\":{\"annotations\":{\"a\":\"1\",\"n\":2}},"
                      "\"spec\":{\"volumes\":[{\"name\":\"v\"}],"
                      "\"initContainers\":[{\"name\":\"i\"}],"
                      "\"containers\":[{\"name\":\"c0\"},{\"name\":\"sandbox\",\"image\":\"x\"}],"
                      "\"ephemeralContainers\":[{\"name\":\"e\"}]}}",
                      &view, &err, &pod),
            0);
        ck_assert_ptr_eq(view.spec, json_object_get(pod, "spec"));
        ck_assert_ptr_eq(view.volumes, json_object_get(view.spec, "volumes"));
        ck_assert_ptr_eq(view.lists[PODVIEW_INIT], json_object_get(view.spec, "initContainers"));
        ck_assert_ptr_eq(view.lists[PODVIEW_CONTAINERS], json_object_get(view.spec, "containers"));
        ck_assert_ptr_eq(view.lists[PODVIEW_EPHEMERAL],
                         json_object_get(view.spec, "ephemeralContainers"));
        ck_assert_str_eq(podview_annotation(&view, "a"), "1");
        ck_assert_ptr_null(podview_annotation(&view, "n")); /* not a string */
        ck_assert_ptr_null(podview_annotation(&view, "absent"));
        size_t index = 99;
        json_t *agent = podview_agent(&view, "sandbox", &index);
        ck_assert_ptr_nonnull(agent);
        ck_assert_uint_eq(index, 1);
        ck_assert_str_eq(json_string_value(json_object_get(agent, "image")), "x");
        /* The agent is never an init or ephemeral container. */
        ck_assert_ptr_null(podview_agent(&view, "i", &index));
        ck_assert_ptr_null(podview_agent(&view, "e", &index));
        ck_assert(podview_has_container(&view, "i"));
        ck_assert(podview_has_container(&view, "e"));
        ck_assert(podview_has_container(&view, "c0"));
        ck_assert(!podview_has_container(&view, "hangar-driver"));
}
END_TEST

START_TEST(list_names)
{
        ck_assert_str_eq(podview_list_name(PODVIEW_INIT), "initContainers");
        ck_assert_str_eq(podview_list_name(PODVIEW_CONTAINERS), "containers");
        ck_assert_str_eq(podview_list_name(PODVIEW_EPHEMERAL), "ephemeralContainers");
}
END_TEST

typedef struct seen {
        char names[128];
        int stop_at; /* the call that returns non-zero (1-based), 0 never */
        int calls;
} seen_t;

static int record(json_t *c, const char *name, podview_list_t list, void *ctx)
{
        seen_t *s = ctx;
        size_t n = strlen(s->names);
        (void)snprintf(s->names + n, sizeof(s->names) - n, "%s:%s ", podview_list_name(list), name);
        return ++s->calls == s->stop_at ? 7 : 0;
}

START_TEST(iteration_order_and_stop)
{
        _cleanup_json_ json_t *pod = NULL;
        pod_view_t view;
        hg_error_t err = {0};
        ck_assert_int_eq(read_text("{\"spec\":{\"ephemeralContainers\":[{\"name\":\"e\"}],"
                                   "\"containers\":[{\"name\":\"a\"},{\"name\":\"b\"}],"
                                   "\"initContainers\":[{\"name\":\"i\"}]}}",
                                   &view, &err, &pod),
                         0);
        seen_t all = {.stop_at = 0};
        ck_assert_int_eq(podview_for_each_container(&view, record, &all), 0);
        ck_assert_str_eq(all.names, "initContainers:i containers:a containers:b "
                                    "ephemeralContainers:e ");
        seen_t two = {.stop_at = 2};
        ck_assert_int_eq(podview_for_each_container(&view, record, &two), 7);
        ck_assert_str_eq(two.names, "initContainers:i containers:a ");
}
END_TEST

START_TEST(refuses_what_it_cannot_read)
{
        static const struct {
                const char *pod;
                const char *message;
        } cases[] = {
            {"[]", "object is an array, expected a Pod object"},
            {"{\"metadata\":[],\"spec\":{}}", "metadata is not an object"},
            {"{\"metadata\":{\"labels\":1},\"spec\":{}}", "labels and annotations must be objects"},
            {"{\"metadata\":{\"annotations\":\"a\"},\"spec\":{}}",
             "labels and annotations must be objects"},
            {"{\"metadata\":{}}", "spec is missing or not an object"},
            {"{\"spec\":[]}", "spec is missing or not an object"},
            {"{\"spec\":{\"volumes\":{}}}", "spec.volumes is not an array"},
            {"{\"spec\":{\"volumes\":[{}]}}", "spec.volumes[0] has no name"},
            {"{\"spec\":{\"initContainers\":{}}}", "spec.initContainers is not an array"},
            {"{\"spec\":{\"ephemeralContainers\":[{\"name\":1}]}}",
             "spec.ephemeralContainers[0] has no name"},
            {"{\"spec\":{\"containers\":[{\"name\":\"a\",\"securityContext\":[]}]}}",
             "container \"a\": securityContext is not an object"},
            {"{\"spec\":{\"containers\":[{\"name\":\"a\",\"volumeMounts\":{}}]}}",
             "container \"a\": volumeMounts is not an array"},
            {"{\"spec\":{\"containers\":[{\"name\":\"a\",\"volumeMounts\":[{\"name\":\"v\"}]}]}}",
             "container \"a\": volumeMounts[0] needs a name and a mountPath"},
            {"{\"spec\":{}}", "spec.containers is missing or empty"},
            {"{\"spec\":{\"containers\":[]}}", "spec.containers is missing or empty"},
            {"{\"spec\":{\"initContainers\":[{\"name\":\"a\"}],\"containers\":[{\"name\":\"a\"}]}}",
             "container name \"a\" is used twice"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
                _cleanup_json_ json_t *pod = NULL;
                pod_view_t view;
                hg_error_t err = {0};
                ck_assert_int_eq(read_text(cases[i].pod, &view, &err, &pod), -EINVAL);
                ck_assert_msg(strstr(err.message, cases[i].message), "%s: got \"%s\"", cases[i].pod,
                              err.message);
        }
}
END_TEST

/* A mountPath that cannot be normalised could be any path: refused, never
 * compared shortened. */
START_TEST(mount_path_past_the_bound)
{
        static char path[2 * PATHNORM_MAX];
        memset(path, 'a', sizeof(path) - 1);
        path[0] = '/';
        path[PATHNORM_MAX] = '\0'; /* PATHNORM_MAX bytes and its NUL: one too many */
        _cleanup_json_ json_t *pod =
            json_pack("{s:{s:[{s:s, s:[{s:s, s:s}]}]}}", "spec", "containers", "name", "a",
                      "volumeMounts", "name", "v", "mountPath", path);
        ck_assert_ptr_nonnull(pod);
        pod_view_t view;
        hg_error_t err = {0};
        ck_assert_int_eq(podview_read(pod, &view, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err.message, "mountPath is longer than 4095 bytes"));
        path[PATHNORM_MAX - 1] = '\0'; /* exactly the bound: read */
        json_t *m = json_array_get(
            json_object_get(
                json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0),
                "volumeMounts"),
            0);
        ck_assert_int_eq(json_object_set_new(m, "mountPath", json_string(path)), 0);
        ck_assert_int_eq(podview_read(pod, &view, &err), 0);
}
END_TEST

/* Read through the projection, a pod keeps every part the view reads, and
 * of the rest only that it is there (ports' entries emptied) or nothing
 * (status, nodeName, uid). */
START_TEST(projection_keeps_what_the_view_reads)
{
        static const char text[] =
            "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"a\":\"1\"},\"uid\":\"u\"},"
            "\"spec\":{\"containers\":[{\"name\":\"sandbox\",\"image\":\"x\","
            "\"env\":[{\"name\":\"E\",\"value\":\"v\"}],\"ports\":[{\"containerPort\":80}],"
            "\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/m\"}]}],"
            "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{},\"secret\":{\"secretName\":\"s\"}}],"
            "\"hostPID\":true,\"nodeName\":\"n\"},\"status\":{\"phase\":\"Pending\"}}";
        hg_error_t err = {0};
        _cleanup_json_ json_t *pod = NULL;
        ck_assert_int_eq(jsonparse_load_projected(text, strlen(text), JSONX_MAX_DEPTH,
                                                  &podview_projection, &pod, &err),
                         0);
        _cleanup_free_ char *got = jsondump(pod);
        ck_assert_str_eq(got, "{\"metadata\":{\"name\":\"p\",\"annotations\":{\"a\":\"1\"}},"
                              "\"spec\":{\"containers\":[{\"name\":\"sandbox\",\"image\":\"x\","
                              "\"env\":[{\"name\":\"E\",\"value\":\"v\"}],\"ports\":[{}],"
                              "\"volumeMounts\":[{\"name\":\"v\",\"mountPath\":\"/m\"}]}],"
                              "\"volumes\":[{\"name\":\"v\",\"emptyDir\":{},\"secret\":{}}],"
                              "\"hostPID\":true}}");
        pod_view_t view;
        ck_assert_int_eq(podview_read(pod, &view, &err), 0);
        ck_assert(podview_has_container(&view, "sandbox"));
}
END_TEST

START_TEST(reads_a_pod_as_it_is)
{
        _cleanup_json_ json_t *pod =
            unit_json("{\"metadata\":{\"annotations\":{\"a\":\"1\",\"n\":2}},"
                      "\"spec\":{\"volumes\":[{\"name\":7},{\"name\":\"v\",\"emptyDir\":{}}],"
                      "\"initContainers\":[{\"name\":\"i\"}],"
                      "\"containers\":[{\"image\":\"nameless\"},{\"name\":\"c\"},{\"name\":\"c\","
                      "\"image\":\"second\"}],"
                      "\"ephemeralContainers\":{\"name\":\"e\"}}}");
        ck_assert_ptr_eq(podview_spec(pod), json_object_get(pod, "spec"));
        ck_assert_str_eq(podview_string(podview_annotations(pod), "a"), "1");
        ck_assert_ptr_null(podview_string(podview_annotations(pod), "n")); /* not a string */
        ck_assert_ptr_null(podview_string(podview_annotations(pod), "absent"));
        /* The first of that name, in the list asked for only. */
        json_t *c = podview_container(pod, "containers", "c");
        ck_assert_ptr_eq(c, json_array_get(json_object_get(podview_spec(pod), "containers"), 1));
        ck_assert_ptr_nonnull(podview_container(pod, "initContainers", "i"));
        ck_assert_ptr_null(podview_container(pod, "containers", "i"));
        /* A list that is not an array holds nothing. */
        ck_assert_ptr_null(podview_container(pod, "ephemeralContainers", "e"));
        ck_assert_ptr_eq(podview_volume(pod, "v"),
                         json_array_get(json_object_get(podview_spec(pod), "volumes"), 1));
        ck_assert_ptr_null(podview_volume(pod, "w"));
        /* Not a pod at all: nothing, never a crash. */
        _cleanup_json_ json_t *number = json_integer(3);
        ck_assert_ptr_null(podview_spec(number));
        ck_assert_ptr_null(podview_annotations(number));
        ck_assert_ptr_null(podview_container(number, "containers", "c"));
        ck_assert_ptr_null(podview_volume(NULL, "v"));
}
END_TEST

START_TEST(runs_under_gvisor)
{
        hg_config_t cfg;
        ck_assert_int_eq(config_init_defaults(&cfg), 0);
        ck_assert_uint_gt(cfg.gvisor_runtime_classes.n, 0);
        const char *gvisor = cfg.gvisor_runtime_classes.items[0];
        _cleanup_json_ json_t *spec = json_pack("{s:s}", "runtimeClassName", gvisor);
        ck_assert(podview_runs_under_gvisor(&cfg, spec));
        _cleanup_json_ json_t *runc = unit_json("{\"runtimeClassName\":\"runc\"}");
        ck_assert(!podview_runs_under_gvisor(&cfg, runc));
        _cleanup_json_ json_t *number = unit_json("{\"runtimeClassName\":1}");
        ck_assert(!podview_runs_under_gvisor(&cfg, number));
        ck_assert(!podview_runs_under_gvisor(&cfg, NULL));
        config_free(&cfg);
}
END_TEST

static Suite *podview_suite(void)
{
        Suite *s = suite_create("podview");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, reads_the_parts);
        tcase_add_test(tc, list_names);
        tcase_add_test(tc, iteration_order_and_stop);
        tcase_add_test(tc, refuses_what_it_cannot_read);
        tcase_add_test(tc, mount_path_past_the_bound);
        tcase_add_test(tc, projection_keeps_what_the_view_reads);
        tcase_add_test(tc, reads_a_pod_as_it_is);
        tcase_add_test(tc, runs_under_gvisor);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(podview_suite());
}
