/* Unit tests for common/k8sname: Kubernetes name, label and quantity syntax. */
#include <errno.h>
#include <string.h>

#include "cleanup.h"
#include "k8sname.h"
#include "unit.h"

/* Writes n copies of c followed by tail into buf and returns buf. */
static const char *repeat(char *buf, size_t n, char c, const char *tail)
{
        size_t t = strlen(tail);
        memset(buf, c, n);
        memcpy(buf + n, tail, t + 1);
        return buf;
}

typedef struct {
        const char *s;
        bool ok;
} name_case_t;

#define CHECK_TABLE(fn, table)                                                             \
        for (size_t _k = 0; _k < sizeof(table) / sizeof((table)[0]); _k++)                 \
        ck_assert_msg(fn((table)[_k].s) == (table)[_k].ok, "%s(\"%s\") should be %s", #fn, \
                      (table)[_k].s, (table)[_k].ok ? "true" : "false")

START_TEST(dns1123_label)
{
        static const name_case_t t[] = {
            {"a", true},         {"sandbox", true},  {"hangar-driver", true},
            {"0abc", true},      {"a1-b2", true},    {"9", true},
            {"", false},         {"-a", false},      {"a-", false},
            {"A", false},        {"Sandbox", false}, {"a_b", false},
            {"a.b", false},      {"a b", false},     {"a/b", false},
            {"\xc3\xa4", false}, {"-", false},       {"a--b", true},
        };
        CHECK_TABLE(k8s_is_dns1123_label, t);
        char buf[80];
        ck_assert(k8s_is_dns1123_label(repeat(buf, 63, 'a', "")));
        ck_assert(!k8s_is_dns1123_label(repeat(buf, 64, 'a', "")));
}
END_TEST

START_TEST(qualified_name)
{
        static const name_case_t t[] = {
            {"sandbox", true},
            {"hangar.dev/sandbox", true},
            {"app.kubernetes.io/name", true},
            {"x/My_Name.v1", true},
            {"Name", true},
            {"a-b_c.d", true},
            {"", false},
            {"/a", false},
            {"a/", false},
            {"a/b/c", false},
            {"Hangar.dev/x", false},
            {"hangar_dev/x", false},
            {"a..b/c", false},
            {"-a.b/c", false},
            {"a-.b/c", false},
            {".a/c", false},
            {"-a", false},
            {"a-", false},
            {"_a", false},
            {"a b", false},
            {"hangar.dev/-x", false},
            {"hangar.dev/x.", false},
        };
        CHECK_TABLE(k8s_is_qualified_name, t);
        char buf[400];
        ck_assert(k8s_is_qualified_name(repeat(buf, 63, 'n', "")));
        ck_assert(!k8s_is_qualified_name(repeat(buf, 64, 'n', "")));
        /* Prefix up to 253 (a subdomain), name up to 63. */
        char name[80];
        (void)snprintf(buf, sizeof(buf), "p/%s", repeat(name, 63, 'n', ""));
        ck_assert(k8s_is_qualified_name(buf));
        (void)snprintf(buf, sizeof(buf), "p/%s", repeat(name, 64, 'n', ""));
        ck_assert(!k8s_is_qualified_name(buf));
        /* 253 = 4 labels of 62 + 3 dots + 2 more characters. */
        char prefix[300], label[64];
        repeat(label, 62, 'a', "");
        (void)snprintf(prefix, sizeof(prefix), "%s.%s.%s.%sbb", label, label, label, label);
        ck_assert_uint_eq(strlen(prefix), 253);
        (void)snprintf(buf, sizeof(buf), "%s/x", prefix);
        ck_assert(k8s_is_qualified_name(buf));
        (void)snprintf(buf, sizeof(buf), "%sb/x", prefix);
        ck_assert(!k8s_is_qualified_name(buf));
}
END_TEST

START_TEST(label_value)
{
        static const name_case_t t[] = {
            {"", true},    {"true", true}, {"a.b_c-d", true},   {"A1", true},
            {"-a", false}, {"a-", false},  {"a b", false},      {"a/b", false},
            {"_a", false}, {".a", false},  {"\xc3\xa4", false},
        };
        CHECK_TABLE(k8s_is_label_value, t);
        char buf[80];
        ck_assert(k8s_is_label_value(repeat(buf, 63, 'v', "")));
        ck_assert(!k8s_is_label_value(repeat(buf, 64, 'v', "")));
}
END_TEST

START_TEST(quantity)
{
        static const name_case_t t[] = {
            {"50m", true}, {"64Mi", true},  {"1e3", true},    {"1.5", true},   {"1E", true},
            {"0", true},   {"1", true},     {"1Ki", true},    {"2Gi", true},   {"1Ei", true},
            {".5", true},  {"1.", true},    {"100n", true},   {"5u", true},    {"1k", true},
            {"3M", true},  {"1E3", true},   {"1e-3", true},   {"1e+3", true},  {"1.5Gi", true},
            {"-1", false}, {"", false},     {"1.2.3", false}, {"Mi", false},   {"m", false},
            {".", false},  {"1e", false},   {"1x", false},    {"1MiB", false}, {"1 ", false},
            {" 1", false}, {"1Mi ", false}, {"1e3Mi", false}, {"1K", false},   {"1mi", false},
            {"e3", false}, {"1e+", false},  {"0x10", false},  {"1,5", false},
        };
        CHECK_TABLE(k8s_is_quantity, t);
}
END_TEST

START_TEST(quantity_value)
{
        /* Spellings the API server stores in another form are the same value. */
        static const struct {
                const char *a, *b;
        } same[] = {
            {"0.05", "50m"},  {"1000m", "1"},     {"65536Ki", "64Mi"}, {"1e3", "1k"},
            {"1.5", "1500m"}, {"0.5Gi", "512Mi"}, {"1E", "1e18"},      {"67108864", "64Mi"},
            {"100n", "0.1u"}, {".5", "500m"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(same); i++) {
                long double a, b;
                ck_assert_int_eq(k8s_quantity_value(same[i].a, &a), 0);
                ck_assert_int_eq(k8s_quantity_value(same[i].b, &b), 0);
                ck_assert_msg(a == b || ((a - b) / b < 1e-12L && (b - a) / b < 1e-12L), "%s != %s",
                              same[i].a, same[i].b);
        }
        long double v;
        ck_assert_int_eq(k8s_quantity_value("64Mi", &v), 0);
        ck_assert(v == 67108864.0L);
        ck_assert_int_eq(k8s_quantity_value("50m", &v), 0);
        ck_assert(v > 0.0499L && v < 0.0501L);
        ck_assert_int_eq(k8s_quantity_value("1MiB", &v), -EINVAL);
        ck_assert_int_eq(k8s_quantity_value("", &v), -EINVAL);
        ck_assert_int_eq(k8s_quantity_value("1e99999", &v), 0); /* bounded, no hang */
}
END_TEST

static Suite *k8sname_suite(void)
{
        Suite *s = suite_create("k8sname");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, dns1123_label);
        tcase_add_test(tc, qualified_name);
        tcase_add_test(tc, label_value);
        tcase_add_test(tc, quantity);
        tcase_add_test(tc, quantity_value);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(k8sname_suite());
}
