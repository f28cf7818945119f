/* Unit tests for client/podagent.c: the agent's container read from the
 * pod's JSON (its hangar.dev/agent-container annotation, else the
 * configured default; a name hangar is given checked against the pod:
 * never hangar-driver, always one of spec.containers) and the relay's and
 * grader side's path (the bundle's /opt/hangar/bin where the agent mounts
 * hangar-bin at /opt/hangar, else the name from PATH, an override
 * first). */
#include <string.h>

#include "cleanup.h"
#include "config.h"
#include "podagent.h"
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

static json_t *pod(const char *text)
{
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        ck_assert_msg(j != NULL, "%s: %s", text, e.text);
        return j;
}

#define CONTAINERS                                                                               \
        "\"spec\":{\"containers\":[{\"name\":\"sandbox\"},{\"name\":\"agent\",\"volumeMounts\":" \
        "[{\"name\":\"hangar-bin\",\"mountPath\":\"/opt/hangar\",\"readOnly\":true}]},"          \
        "{\"name\":\"hangar-driver\"},{\"name\":\"other\",\"volumeMounts\":[{\"name\":"          \
        "\"hangar-bin\",\"mountPath\":\"/opt/elsewhere\"},{\"name\":\"bin\",\"mountPath\":"      \
        "\"/opt/hangar\"}]}],\"initContainers\":[{\"name\":\"init\"}]}"

START_TEST(test_default_and_annotation)
{
        char why[256];
        podagent_t a;
        _cleanup_json_ json_t *plain = pod("{" CONTAINERS "}");
        ck_assert_int_eq(podagent_resolve(&cfg, plain, NULL, &a, why, sizeof(why)), 0);
        ck_assert_str_eq(a.container, "sandbox");
        ck_assert(!a.bundle);
        _cleanup_json_ json_t *named = pod("{\"metadata\":{\"annotations\":{\"hangar.dev/"
                                           "agent-container\":\"agent\"}}," CONTAINERS "}");
        ck_assert_int_eq(podagent_resolve(&cfg, named, NULL, &a, why, sizeof(why)), 0);
        ck_assert_str_eq(a.container, "agent");
        ck_assert(a.bundle);
        /* The annotation naming what cannot be the agent's. */
        static const char *const bad[] = {"hangar-driver", "init", "gone", "Not_A_Name"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                char text[1024];
                snprintf(text, sizeof(text),
                         "{\"metadata\":{\"annotations\":{\"hangar.dev/"
                         "agent-container\":\"%s\"}}," CONTAINERS "}",
                         bad[i]);
                _cleanup_json_ json_t *p = pod(text);
                why[0] = '\0';
                ck_assert_int_eq(podagent_resolve(&cfg, p, NULL, &a, why, sizeof(why)), -EINVAL);
                ck_assert_msg(why[0] != '\0', "no reason for %s", bad[i]);
        }
        _cleanup_json_ json_t *notstr = pod(
            "{\"metadata\":{\"annotations\":{\"hangar.dev/agent-container\":7}}," CONTAINERS "}");
        ck_assert_int_eq(podagent_resolve(&cfg, notstr, NULL, &a, why, sizeof(why)), -EINVAL);
        /* The default when the pod has no such container. */
        _cleanup_json_ json_t *nodefault = pod("{\"spec\":{\"containers\":[{\"name\":\"x\"}]}}");
        ck_assert_int_eq(podagent_resolve(&cfg, nodefault, NULL, &a, why, sizeof(why)), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "sandbox"));
}
END_TEST

START_TEST(test_override_checked)
{
        char why[256];
        podagent_t a;
        _cleanup_json_ json_t *named = pod("{\"metadata\":{\"annotations\":{\"hangar.dev/"
                                           "agent-container\":\"agent\"}}," CONTAINERS "}");
        ck_assert_int_eq(podagent_resolve(&cfg, named, "other", &a, why, sizeof(why)), 0);
        ck_assert_str_eq(a.container, "other");
        ck_assert(!a.bundle); /* hangar-bin elsewhere, another volume at /opt/hangar */
        ck_assert_int_eq(podagent_resolve(&cfg, named, "hangar-driver", &a, why, sizeof(why)),
                         -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "driver"));
        ck_assert_int_eq(podagent_resolve(&cfg, named, "init", &a, why, sizeof(why)), -EINVAL);
        ck_assert_ptr_nonnull(strstr(why, "spec.containers"));
        ck_assert_int_eq(podagent_resolve(&cfg, named, "gone", &a, why, sizeof(why)), -EINVAL);
        ck_assert_int_eq(podagent_resolve(&cfg, named, "../x", &a, why, sizeof(why)), -EINVAL);
        ck_assert_int_eq(podagent_resolve(&cfg, named, "", &a, why, sizeof(why)), -EINVAL);
        /* Not a pod at all. */
        _cleanup_json_ json_t *arr = pod("[1]");
        ck_assert_int_eq(podagent_resolve(&cfg, arr, "sandbox", &a, why, sizeof(why)), -EINVAL);
}
END_TEST

START_TEST(test_program_path)
{
        char buf[256];
        podagent_t plain = {.container = "sandbox", .bundle = false};
        podagent_t bundled = {.container = "sandbox", .bundle = true};
        ck_assert_str_eq(podagent_program(&plain, "hangar-relay", NULL, buf, sizeof(buf)),
                         "hangar-relay");
        ck_assert_str_eq(podagent_program(&bundled, "hangar-relay", NULL, buf, sizeof(buf)),
                         "/opt/hangar/bin/hangar-relay");
        ck_assert_str_eq(podagent_program(&bundled, "hangar-grade", NULL, buf, sizeof(buf)),
                         "/opt/hangar/bin/hangar-grade");
        ck_assert_str_eq(podagent_program(&bundled, "hangar-relay", "/tmp/r", buf, sizeof(buf)),
                         "/tmp/r");
        /* The mount's path with trailing slashes and a subPath (an image
         * volume's opt/hangar) is the bundle's; a longer path is not. */
        static const struct {
                const char *mount;
                bool bundle;
        } cases[] = {
            {"\"mountPath\":\"/opt/hangar/\"", true},
            {"\"mountPath\":\"/opt/hangar\",\"subPath\":\"opt/hangar\"", true},
            {"\"mountPath\":\"/opt/hangarx\"", false},
            {"\"mountPath\":\"/opt/hangar/bin\"", false},
            {"\"mountPath\":\"/opt\"", false},
            {"\"mountPath\":7", false},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                char text[512], why[256];
                snprintf(text, sizeof(text),
                         "{\"spec\":{\"containers\":[{\"name\":\"sandbox\",\"volumeMounts\":[{"
                         "\"name\":\"hangar-bin\",%s}]}]}}",
                         cases[i].mount);
                _cleanup_json_ json_t *p = pod(text);
                podagent_t a;
                ck_assert_int_eq(podagent_resolve(&cfg, p, NULL, &a, why, sizeof(why)), 0);
                ck_assert_msg(a.bundle == cases[i].bundle, "%s", cases[i].mount);
        }
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("podagent");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_default_and_annotation);
        tcase_add_test(tc, test_override_checked);
        tcase_add_test(tc, test_program_path);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(suite());
}
