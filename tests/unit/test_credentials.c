/* probe/credentials.c, the reader: what looks like a token, and where it is
 * found (a kubelet volume's files, a file mounted on its own, environment
 * variables), once each however many places hold it; the CA beside a
 * token; a fifo or an oversized file is not waited on or read; and with no
 * API address, a token found is recorded as not asked (judged unknown).
 * tests/probe asks a real API server. */
#include <sys/stat.h>

#include "cleanup.h"
#include "credentials.h"
#include "k8sclient.h"
#include "unit.h"

#define JWT "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"

START_TEST(what_looks_like_a_token)
{
        ck_assert(creds_looks_like_token(JWT, strlen(JWT)));
        static const char *const no[] = {
            "",        "eyJ",        "eyJa.b",     "eyJa.b.c.d", "eyJa..c", ".eyJa.b",  "eyJa.b.",
            "abc.d.e", "eyJa.b c.d", "eyJa.b.c\n", "eyJa+/.b.c", "hunter2", "eyJa.b.c="};
        for (size_t i = 0; i < ARRAY_SIZE(no); i++)
                ck_assert_msg(!creds_looks_like_token(no[i], strlen(no[i])), "%s taken", no[i]);
        static char big[CREDS_TOKEN_MAX + 2];
        memset(big, 'a', sizeof(big) - 1);
        memcpy(big, "eyJ", 3);
        big[100] = '.';
        big[200] = '.';
        ck_assert(!creds_looks_like_token(big, strlen(big)));
        ck_assert(creds_looks_like_token(big, CREDS_TOKEN_MAX));
}
END_TEST

static void write_file(const char *dir, const char *name, const char *text)
{
        char path[512];
        (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

static const creds_token_t *by_source(const creds_observation_t *o, const char *source)
{
        for (size_t i = 0; i < o->ntokens; i++)
                if (strcmp(o->tokens[i].source, source) == 0)
                        return &o->tokens[i];
        return NULL;
}

START_TEST(where_tokens_are_found)
{
        ck_assert_int_eq(unsetenv("KUBERNETES_SERVICE_HOST"), 0);
        char root[256], vol[300], plain[300], single[300], path[400], other[300];
        unit_mkdtemp(root, sizeof(root));
        /* A projected volume as the kubelet writes it: ..data, files beside. */
        (void)snprintf(vol, sizeof(vol), "%s/projected", root);
        ck_assert_int_eq(mkdir(vol, 0755), 0);
        (void)snprintf(path, sizeof(path), "%s/..2026_12_02", vol);
        ck_assert_int_eq(mkdir(path, 0755), 0);
        (void)snprintf(path, sizeof(path), "%s/..data", vol);
        ck_assert_int_eq(symlink("..2026_12_02", path), 0);
        write_file(vol, "token", JWT "\n");
        write_file(vol, "ca.crt", "-----BEGIN CERTIFICATE-----\n");
        write_file(vol, "namespace", "sbx");
        (void)snprintf(path, sizeof(path), "%s/pipe", vol);
        ck_assert_int_eq(mkfifo(path, 0600), 0); /* never opened for waiting */
        /* The same token in a second volume: one token, found first where it was. */
        (void)snprintf(other, sizeof(other), "%s/again", root);
        ck_assert_int_eq(mkdir(other, 0755), 0);
        (void)snprintf(path, sizeof(path), "%s/..data", other);
        ck_assert_int_eq(mkdir(path, 0755), 0);
        write_file(other, "copy", JWT);
        /* A directory without ..data is not a kubelet volume: not searched. */
        (void)snprintf(plain, sizeof(plain), "%s/workspace", root);
        ck_assert_int_eq(mkdir(plain, 0755), 0);
        write_file(plain, "token", "eyJwbGFpbg.eyJ4.eQ");
        /* A file mounted on its own (subPath). */
        (void)snprintf(single, sizeof(single), "%s/single-token", root);
        write_file(root, "single-token", "eyJzaW5nbGU.eyJ5.eQ");
        char table[2048];
        (void)snprintf(table, sizeof(table),
                       "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                       "2 1 0:5 / /proc rw - proc proc rw\n"
                       "3 1 0:6 / %s ro - tmpfs tmpfs rw\n"
                       "4 1 0:7 / %s ro - tmpfs tmpfs rw\n"
                       "5 1 0:8 / %s rw - ext4 /dev/sda1 rw\n"
                       "6 1 0:9 / %s ro - tmpfs tmpfs rw\n"
                       "7 1 0:9 / /nonexistent/mount ro - tmpfs tmpfs rw\n",
                       vol, other, plain, single);
        mount_table_t t = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(mountinfo_parse(table, strlen(table), &t, &err), 0);
        ck_assert_int_eq(setenv("SOME_TOKEN", "eyJlbnY.eyJ6.eQ", 1), 0);
        ck_assert_int_eq(setenv("NOT_A_TOKEN", "eyJ.nope", 1), 0);
        static creds_observation_t o;
        creds_observe(&t, &o);
        ck_assert(o.observed);
        ck_assert_str_eq(o.search_error, "");
        ck_assert_uint_eq(o.volumes_searched, 2);
        ck_assert_uint_eq(o.ntokens, 3);
        char want[400];
        (void)snprintf(want, sizeof(want), "%s/token", vol);
        const creds_token_t *projected = by_source(&o, want);
        ck_assert_ptr_nonnull(projected);
        (void)snprintf(want, sizeof(want), "%s/ca.crt", vol);
        ck_assert_str_eq(projected->ca_source, want);
        /* No API address: recorded as not asked, and why. */
        ck_assert_ptr_nonnull(strstr(projected->unasked, "KUBERNETES_SERVICE_HOST"));
        ck_assert(!projected->reviewed);
        const creds_token_t *sub = by_source(&o, single);
        ck_assert_ptr_nonnull(sub);
        /* No CA beside it: the service account's, and it is not there. */
        ck_assert_str_eq(sub->ca_source, K8S_SA_DIR "/ca.crt");
        ck_assert_ptr_nonnull(strstr(sub->unasked, "no CA bundle"));
        const creds_token_t *env = by_source(&o, "environment variable SOME_TOKEN");
        ck_assert_ptr_nonnull(env);
        ck_assert(!env->standard && !projected->standard);
        creds_free(&o);
        /* No mount table: the volumes could not be searched, and it says so. */
        creds_observe(NULL, &o);
        ck_assert_ptr_nonnull(strstr(o.search_error, "mount table"));
        ck_assert_uint_eq(o.ntokens, 1); /* the environment's */
        creds_free(&o);
        mountinfo_free(&t);
        unit_rmtree(root);
}
END_TEST

START_TEST(too_many_tokens_is_said)
{
        char name[32], value[64];
        for (int i = 0; i < CREDS_MAX_TOKENS + 1; i++) {
                (void)snprintf(name, sizeof(name), "TOKEN_%d", i);
                (void)snprintf(value, sizeof(value), "eyJ%d.eyJ.eQ", i);
                ck_assert_int_eq(setenv(name, value, 1), 0);
        }
        static creds_observation_t o;
        mount_table_t empty = {0};
        creds_observe(&empty, &o);
        ck_assert_uint_eq(o.ntokens, CREDS_MAX_TOKENS);
        ck_assert_ptr_nonnull(strstr(o.search_error, "more than"));
        creds_free(&o);
}
END_TEST

static Suite *credentials_suite(void)
{
        Suite *s = suite_create("credentials");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, what_looks_like_a_token);
        tcase_add_test(tc, where_tokens_are_found);
        tcase_add_test(tc, too_many_tokens_is_said);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(credentials_suite());
}
