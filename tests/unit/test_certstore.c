/* Unit tests for webhook/certstore: loading, change detection and refusing
 * bad pairs while the old one stays in use. Pairs come from certgen. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "certgen.h"
#include "certstore.h"
#include "cleanup.h"
#include "fileio.h"
#include "strbuf.h"
#include "unit.h"

static char dir[4096];
static char cert_path[4200];
static char key_path[4200];
static certgen_pem_t ca;

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
        (void)snprintf(cert_path, sizeof(cert_path), "%s/tls.crt", dir);
        (void)snprintf(key_path, sizeof(key_path), "%s/tls.key", dir);
        hg_error_t err = {0};
        ck_assert_msg(certgen_ca("test-ca", 10, &ca, &err) == 0, "certgen_ca: %s", err.message);
}

static void teardown(void)
{
        certstore_shutdown();
        certgen_pem_free(&ca);
        unit_rmtree(dir);
}

static void serving(unsigned days, certgen_pem_t *ret)
{
        static const char *const names[] = {"hangar-webhook.hangar-system.svc", NULL};
        certgen_request_t req = {.common_name = "hangar-webhook", .dns_names = names, .days = days};
        hg_error_t err = {0};
        ck_assert_msg(certgen_serving(&ca, &req, ret, &err) == 0, "certgen_serving: %s",
                      err.message);
}

/* Replaces a file the way a Secret volume update does: a new inode. */
static void put(const char *path, const char *text)
{
        ck_assert_int_eq(file_write_atomic(path, text, strlen(text), 0600, 0), 0);
}

static void put_pair(const certgen_pem_t *p)
{
        put(cert_path, p->cert);
        put(key_path, p->key);
}

static void assert_ready_until_about(int64_t want)
{
        ck_assert(certstore_ready());
        int64_t got = certstore_not_after();
        ck_assert_msg(got >= want - 120 && got <= want + 5, "not_after %lld, want about %lld",
                      (long long)got, (long long)want);
}

START_TEST(load_then_unchanged)
{
        certgen_pem_t p = {0};
        serving(30, &p);
        put_pair(&p);
        certgen_pem_free(&p);
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        ck_assert(!certstore_ready());
        ck_assert_int_eq(certstore_not_after(), 0);
        hg_error_t err = {0};
        int r = certstore_reload(&err);
        ck_assert_msg(r == 1, "reload: %d %s", r, err.message);
        assert_ready_until_about((int64_t)time(NULL) + 30 * 86400);
        ck_assert_int_eq(certstore_reload(&err), 0);
        ck_assert_int_eq(certstore_reload(&err), 0);
        ck_assert(certstore_ready());
}
END_TEST

START_TEST(retrieve_hands_out_the_pair)
{
        gnutls_pcert_st *pcert = NULL;
        unsigned int n = 99;
        gnutls_privkey_t key = NULL;
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        /* Nothing loaded: the handshake must fail. */
        ck_assert_int_lt(certstore_retrieve(NULL, NULL, 0, NULL, 0, &pcert, &n, &key), 0);
        /* The leaf followed by the CA: a chain of two. */
        certgen_pem_t p = {0};
        serving(30, &p);
        _cleanup_strbuf_ strbuf_t chain = {0};
        ck_assert_int_eq(strbuf_puts(&chain, p.cert), 0);
        ck_assert_int_eq(strbuf_puts(&chain, ca.cert), 0);
        put(cert_path, chain.data);
        put(key_path, p.key);
        certgen_pem_free(&p);
        hg_error_t err = {0};
        ck_assert_msg(certstore_reload(&err) == 1, "reload: %s", err.message);
        ck_assert_int_eq(certstore_retrieve(NULL, NULL, 0, NULL, 0, &pcert, &n, &key), 0);
        ck_assert_ptr_nonnull(pcert);
        ck_assert_uint_eq(n, 2);
        ck_assert_ptr_nonnull(key);
}
END_TEST

START_TEST(new_pair_replaces_old)
{
        certgen_pem_t p = {0};
        serving(30, &p);
        put_pair(&p);
        certgen_pem_free(&p);
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        hg_error_t err = {0};
        ck_assert_int_eq(certstore_reload(&err), 1);
        assert_ready_until_about((int64_t)time(NULL) + 30 * 86400);
        serving(5, &p);
        put_pair(&p);
        certgen_pem_free(&p);
        ck_assert_int_eq(certstore_reload(&err), 1);
        assert_ready_until_about((int64_t)time(NULL) + 5 * 86400);
        ck_assert_int_eq(certstore_reload(&err), 0);
}
END_TEST

START_TEST(mismatched_key_refused_old_pair_kept)
{
        certgen_pem_t good = {0}, other = {0};
        serving(30, &good);
        serving(30, &other);
        put_pair(&good);
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        hg_error_t err = {0};
        ck_assert_int_eq(certstore_reload(&err), 1);
        int64_t before = certstore_not_after();

        /* A new certificate arrives before its key: the pair does not match. */
        put(cert_path, other.cert);
        int r = certstore_reload(&err);
        ck_assert_msg(r < 0, "mismatched pair accepted: %d", r);
        ck_assert_msg(strstr(err.message, "does not match"), "message: %s", err.message);
        ck_assert(certstore_ready());
        ck_assert_int_eq(certstore_not_after(), before);
        gnutls_pcert_st *pcert = NULL;
        unsigned int n = 0;
        gnutls_privkey_t key = NULL;
        ck_assert_int_eq(certstore_retrieve(NULL, NULL, 0, NULL, 0, &pcert, &n, &key), 0);
        ck_assert_uint_eq(n, 1);
        /* Reported once, not on every poll. */
        ck_assert_int_eq(certstore_reload(&err), 0);
        /* Its key arrives: now the new pair loads. */
        put(key_path, other.key);
        ck_assert_int_eq(certstore_reload(&err), 1);
        ck_assert(certstore_ready());
        certgen_pem_free(&good);
        certgen_pem_free(&other);
}
END_TEST

START_TEST(expired_refused)
{
        /* certgen has no "not after" in the past, but days = 0 puts it at
         * the moment of generation, and a certificate is expired at notAfter. */
        certgen_pem_t p = {0};
        serving(0, &p);
        put_pair(&p);
        certgen_pem_free(&p);
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        hg_error_t err = {0};
        int r = certstore_reload(&err);
        ck_assert_msg(r < 0, "expired pair accepted: %d", r);
        ck_assert_msg(strstr(err.message, "expired"), "message: %s", err.message);
        ck_assert(!certstore_ready());
        ck_assert_int_eq(certstore_not_after(), 0);
}
END_TEST

START_TEST(expired_refused_old_pair_kept)
{
        certgen_pem_t good = {0}, old = {0};
        serving(30, &good);
        serving(0, &old);
        put_pair(&good);
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        hg_error_t err = {0};
        ck_assert_int_eq(certstore_reload(&err), 1);
        int64_t before = certstore_not_after();
        put_pair(&old);
        ck_assert_int_lt(certstore_reload(&err), 0);
        ck_assert_ptr_nonnull(strstr(err.message, "expired"));
        ck_assert(certstore_ready());
        ck_assert_int_eq(certstore_not_after(), before);
        certgen_pem_free(&good);
        certgen_pem_free(&old);
}
END_TEST

START_TEST(garbage_and_missing_files)
{
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        hg_error_t err = {0};
        /* Neither file yet. */
        ck_assert_int_eq(certstore_reload(&err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(err.message, "cannot stat"));
        ck_assert(!certstore_ready());
        put(cert_path, "not a certificate\n");
        put(key_path, "not a key\n");
        ck_assert_int_eq(certstore_reload(&err), -EINVAL);
        ck_assert_msg(strstr(err.message, "holds no PEM certificate"), "message: %s", err.message);
        certgen_pem_t p = {0};
        serving(30, &p);
        put(cert_path, p.cert);
        ck_assert_int_eq(certstore_reload(&err), -EINVAL);
        ck_assert_msg(strstr(err.message, "holds no PEM private key"), "message: %s", err.message);
        ck_assert(!certstore_ready());
        /* Both right: loads, even though the earlier attempts failed. */
        put(key_path, p.key);
        ck_assert_int_eq(certstore_reload(&err), 1);
        ck_assert(certstore_ready());
        /* The files vanish: an error, and the pair in use stays. */
        ck_assert_int_eq(unlink(key_path), 0);
        ck_assert_int_eq(certstore_reload(&err), -ENOENT);
        ck_assert(certstore_ready());
        /* And when they come back unchanged in content, they are read again. */
        put(key_path, p.key);
        ck_assert_int_eq(certstore_reload(&err), 1);
        certgen_pem_free(&p);
}
END_TEST

START_TEST(shutdown_forgets_everything)
{
        certgen_pem_t p = {0};
        serving(30, &p);
        put_pair(&p);
        certgen_pem_free(&p);
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        hg_error_t err = {0};
        ck_assert_int_eq(certstore_reload(&err), 1);
        certstore_shutdown();
        ck_assert(!certstore_ready());
        ck_assert_int_eq(certstore_not_after(), 0);
        /* Usable again after a shutdown: the same files load anew. */
        ck_assert_int_eq(certstore_init(cert_path, key_path, 0), 0);
        ck_assert_int_eq(certstore_reload(&err), 1);
        ck_assert(certstore_ready());
}
END_TEST

static Suite *certstore_suite(void)
{
        Suite *s = suite_create("certstore");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 30);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, load_then_unchanged);
        tcase_add_test(tc, retrieve_hands_out_the_pair);
        tcase_add_test(tc, new_pair_replaces_old);
        tcase_add_test(tc, mismatched_key_refused_old_pair_kept);
        tcase_add_test(tc, expired_refused);
        tcase_add_test(tc, expired_refused_old_pair_kept);
        tcase_add_test(tc, garbage_and_missing_files);
        tcase_add_test(tc, shutdown_forgets_everything);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(certstore_suite());
}
