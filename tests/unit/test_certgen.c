/* Unit tests for webhook/certgen: a CA and a serving certificate, checked
 * with OpenSSL's own verification. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "certgen.h"
#include "unit.h"

static const char *const dns[] = {"hangar-webhook", "hangar-webhook.hangar-system.svc",
                                  "hangar-webhook.hangar-system.svc.cluster.local", NULL};
static const char *const ips[] = {"127.0.0.1", "::1", NULL};

static X509 *load_cert(const char *pem)
{
        BIO *b = BIO_new_mem_buf(pem, -1);
        ck_assert_ptr_nonnull(b);
        X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        BIO_free(b);
        ck_assert_msg(x != NULL, "not a PEM certificate");
        return x;
}

static EVP_PKEY *load_key(const char *pem)
{
        BIO *b = BIO_new_mem_buf(pem, -1);
        ck_assert_ptr_nonnull(b);
        EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
        BIO_free(b);
        ck_assert_msg(k != NULL, "not a PEM private key");
        return k;
}

static void pem_freep(certgen_pem_t *p)
{
        certgen_pem_free(p);
}
#define _pem_ __attribute__((cleanup(pem_freep)))

static void make_ca(certgen_pem_t *ca)
{
        hg_error_t err = {0};
        int r = certgen_ca("hangar-webhook-ca", 365, ca, &err);
        ck_assert_msg(r == 0, "certgen_ca: %s", err.message);
}

static void make_serving(const certgen_pem_t *ca, certgen_pem_t *leaf)
{
        certgen_request_t req = {.common_name = "hangar-webhook.hangar-system.svc",
                                 .dns_names = dns,
                                 .ip_addresses = ips,
                                 .days = 30};
        hg_error_t err = {0};
        int r = certgen_serving(ca, &req, leaf, &err);
        ck_assert_msg(r == 0, "certgen_serving: %s", err.message);
}

/* Seconds from now until t (negative if in the past). */
static long seconds_until(const ASN1_TIME *t)
{
        int days = 0, secs = 0;
        ck_assert_int_eq(ASN1_TIME_diff(&days, &secs, NULL, t), 1);
        return (long)days * 86400 + secs;
}

START_TEST(ca_is_self_signed_ca)
{
        _pem_ certgen_pem_t ca = {0};
        make_ca(&ca);
        ck_assert_ptr_nonnull(strstr(ca.cert, "-----BEGIN CERTIFICATE-----"));
        ck_assert_ptr_nonnull(strstr(ca.key, "-----BEGIN PRIVATE KEY-----"));
        X509 *x = load_cert(ca.cert);
        EVP_PKEY *k = load_key(ca.key);
        ck_assert_int_eq(X509_check_private_key(x, k), 1);
        ck_assert_int_eq(X509_verify(x, k), 1); /* signed by itself */
        ck_assert_int_ge(X509_check_ca(x), 1);
        ck_assert_int_eq(X509_check_issued(x, x), X509_V_OK);
        ck_assert(X509_get_key_usage(x) & KU_KEY_CERT_SIGN);
        ck_assert_int_eq(EVP_PKEY_get_base_id(k), EVP_PKEY_EC);
        char cn[128] = "";
        X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
        ck_assert_str_eq(cn, "hangar-webhook-ca");
        long until = seconds_until(X509_get0_notAfter(x));
        ck_assert_int_gt(until, 365L * 86400 - 120);
        ck_assert_int_le(until, 365L * 86400 + 5);
        ck_assert_int_lt(seconds_until(X509_get0_notBefore(x)), 0);
        EVP_PKEY_free(k);
        X509_free(x);
}
END_TEST

START_TEST(serving_cert_verifies_against_ca)
{
        _pem_ certgen_pem_t ca = {0}, leaf = {0}, other = {0};
        make_ca(&ca);
        make_serving(&ca, &leaf);
        X509 *cax = load_cert(ca.cert), *x = load_cert(leaf.cert);
        EVP_PKEY *ca_pub = X509_get_pubkey(cax);
        ck_assert_int_eq(X509_verify(x, ca_pub), 1);
        /* Not by its own key, nor by another CA. */
        EVP_PKEY *leaf_key = load_key(leaf.key);
        ck_assert_int_eq(X509_check_private_key(x, leaf_key), 1);
        ck_assert_int_ne(X509_verify(x, leaf_key), 1);
        make_ca(&other);
        X509 *otherx = load_cert(other.cert);
        EVP_PKEY *other_pub = X509_get_pubkey(otherx);
        ck_assert_int_ne(X509_verify(x, other_pub), 1);
        ck_assert_int_eq(X509_check_issued(cax, x), X509_V_OK);
        ck_assert_int_eq(X509_NAME_cmp(X509_get_issuer_name(x), X509_get_subject_name(cax)), 0);
        ck_assert_int_eq(X509_check_ca(x), 0);

        /* The full path check a TLS client does, for the serverAuth purpose. */
        X509_STORE *store = X509_STORE_new();
        ck_assert_int_eq(X509_STORE_add_cert(store, cax), 1);
        X509_STORE_CTX *ctx = X509_STORE_CTX_new();
        ck_assert_int_eq(X509_STORE_CTX_init(ctx, store, x, NULL), 1);
        ck_assert_int_eq(X509_STORE_CTX_set_purpose(ctx, X509_PURPOSE_SSL_SERVER), 1);
        int ok = X509_verify_cert(ctx);
        ck_assert_msg(ok == 1, "verify: %s",
                      X509_verify_cert_error_string(X509_STORE_CTX_get_error(ctx)));
        X509_STORE_CTX_free(ctx);
        X509_STORE_free(store);

        long until = seconds_until(X509_get0_notAfter(x));
        ck_assert_int_gt(until, 30L * 86400 - 120);
        ck_assert_int_le(until, 30L * 86400 + 5);
        EVP_PKEY_free(other_pub);
        X509_free(otherx);
        EVP_PKEY_free(leaf_key);
        EVP_PKEY_free(ca_pub);
        X509_free(x);
        X509_free(cax);
}
END_TEST

START_TEST(serving_cert_names_and_usage)
{
        _pem_ certgen_pem_t ca = {0}, leaf = {0};
        make_ca(&ca);
        make_serving(&ca, &leaf);
        X509 *x = load_cert(leaf.cert);
        /* Every SAN, and nothing else. */
        GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
        ck_assert_ptr_nonnull(names);
        int n_dns = 0, n_ip = 0;
        for (int i = 0; i < sk_GENERAL_NAME_num(names); i++) {
                const GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
                if (g->type == GEN_DNS) {
                        const char *s = (const char *)ASN1_STRING_get0_data(g->d.dNSName);
                        ck_assert_str_eq(s, dns[n_dns]);
                        n_dns++;
                } else if (g->type == GEN_IPADD) {
                        n_ip++;
                } else {
                        ck_abort_msg("unexpected SAN type %d", g->type);
                }
        }
        GENERAL_NAMES_free(names);
        ck_assert_int_eq(n_dns, 3);
        ck_assert_int_eq(n_ip, 2);
        for (int i = 0; dns[i]; i++)
                ck_assert_int_eq(X509_check_host(x, dns[i], 0, 0, NULL), 1);
        ck_assert_int_eq(X509_check_host(x, "evil.example.com", 0, 0, NULL), 0);
        ck_assert_int_eq(X509_check_ip_asc(x, "127.0.0.1", 0), 1);
        ck_assert_int_eq(X509_check_ip_asc(x, "::1", 0), 1);
        ck_assert_int_eq(X509_check_ip_asc(x, "10.0.0.1", 0), 0);
        /* serverAuth, and a leaf's key usage. */
        ck_assert(X509_get_extension_flags(x) & EXFLAG_XKUSAGE);
        ck_assert(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
        ck_assert(!(X509_get_extended_key_usage(x) & XKU_SSL_CLIENT));
        ck_assert(X509_get_key_usage(x) & KU_DIGITAL_SIGNATURE);
        ck_assert(!(X509_get_key_usage(x) & KU_KEY_CERT_SIGN));
        ck_assert_int_eq(X509_check_purpose(x, X509_PURPOSE_SSL_SERVER, 0), 1);
        X509_free(x);
}
END_TEST

START_TEST(serials_are_random)
{
        _pem_ certgen_pem_t a = {0}, b = {0};
        make_ca(&a);
        make_ca(&b);
        X509 *xa = load_cert(a.cert), *xb = load_cert(b.cert);
        ck_assert_int_ne(ASN1_INTEGER_cmp(X509_get0_serialNumber(xa), X509_get0_serialNumber(xb)),
                         0);
        ck_assert_str_ne(a.key, b.key);
        X509_free(xa);
        X509_free(xb);
}
END_TEST

START_TEST(bad_names_rejected)
{
        _pem_ certgen_pem_t ca = {0};
        make_ca(&ca);
        static const char *const bad_dns[] = {"a.example,DNS:evil.com",
                                              "a.example,evil.com",
                                              "a.example,IP:1.2.3.4",
                                              "Upper.example",
                                              "a b",
                                              "a:b",
                                              "",
                                              "x.*.example",
                                              "a/b"};
        for (size_t i = 0; i < sizeof(bad_dns) / sizeof(bad_dns[0]); i++) {
                const char *names[] = {"ok.example", bad_dns[i], NULL};
                certgen_request_t req = {.common_name = "x", .dns_names = names, .days = 1};
                certgen_pem_t out = {(char *)"untouched", NULL};
                hg_error_t err = {0};
                ck_assert_msg(certgen_serving(&ca, &req, &out, &err) == -EINVAL, "accepted '%s'",
                              bad_dns[i]);
                ck_assert_msg(strstr(err.message, "is not a DNS name"), "message: %s", err.message);
                ck_assert_str_eq(out.cert, "untouched");
        }
        static const char *const bad_ip[] = {"1.2.3.4,DNS:evil.com", "256.1.1.1", "localhost", ""};
        for (size_t i = 0; i < sizeof(bad_ip) / sizeof(bad_ip[0]); i++) {
                const char *addrs[] = {bad_ip[i], NULL};
                certgen_request_t req = {.common_name = "x", .ip_addresses = addrs, .days = 1};
                certgen_pem_t out = {0};
                hg_error_t err = {0};
                ck_assert_msg(certgen_serving(&ca, &req, &out, &err) == -EINVAL, "accepted '%s'",
                              bad_ip[i]);
                ck_assert_ptr_nonnull(strstr(err.message, "is not an IP address"));
                ck_assert_ptr_null(out.cert);
        }
        /* Neither names nor addresses. */
        certgen_request_t none = {.common_name = "x", .days = 1};
        certgen_pem_t out = {0};
        hg_error_t err = {0};
        ck_assert_int_eq(certgen_serving(&ca, &none, &out, &err), -EINVAL);
        ck_assert_ptr_null(out.cert);
        /* A wildcard as the first label is a DNS name. */
        const char *wild[] = {"*.hangar-system.svc", NULL};
        certgen_request_t w = {.common_name = "x", .dns_names = wild, .days = 1};
        _pem_ certgen_pem_t leaf = {0};
        ck_assert_int_eq(certgen_serving(&ca, &w, &leaf, &err), 0);
}
END_TEST

START_TEST(ca_key_must_match)
{
        _pem_ certgen_pem_t a = {0}, b = {0};
        make_ca(&a);
        make_ca(&b);
        /* a's certificate with b's key. */
        certgen_pem_t mixed = {a.cert, b.key};
        const char *names[] = {"x.example", NULL};
        certgen_request_t req = {.common_name = "x", .dns_names = names, .days = 1};
        certgen_pem_t out = {0};
        hg_error_t err = {0};
        ck_assert_int_lt(certgen_serving(&mixed, &req, &out, &err), 0);
        ck_assert_ptr_nonnull(strstr(err.message, "does not match"));
        ck_assert_ptr_null(out.cert);
        /* Not PEM at all. */
        certgen_pem_t junk = {(char *)"junk", (char *)"junk"};
        ck_assert_int_lt(certgen_serving(&junk, &req, &out, &err), 0);
        ck_assert_ptr_null(out.cert);
}
END_TEST

START_TEST(zero_days_expires_at_once)
{
        /* days = 0 gives notAfter = now: how certstore's test makes an expired pair. */
        _pem_ certgen_pem_t ca = {0}, leaf = {0};
        make_ca(&ca);
        const char *names[] = {"x.example", NULL};
        certgen_request_t req = {.common_name = "x", .dns_names = names, .days = 0};
        hg_error_t err = {0};
        ck_assert_int_eq(certgen_serving(&ca, &req, &leaf, &err), 0);
        X509 *x = load_cert(leaf.cert);
        ck_assert_int_le(seconds_until(X509_get0_notAfter(x)), 0);
        ck_assert_int_lt(X509_cmp_current_time(X509_get0_notAfter(x)), 0);
        X509_free(x);
}
END_TEST

START_TEST(not_after_of_a_ca)
{
        _pem_ certgen_pem_t ca = {0};
        int64_t before = (int64_t)time(NULL);
        make_ca(&ca);
        int64_t not_after = 0;
        ck_assert_int_eq(certgen_not_after(ca.cert, &not_after), 0);
        /* 365 days from issue, give or take the seconds this test took. */
        ck_assert_int_ge(not_after, before + 365 * 86400 - 5);
        ck_assert_int_le(not_after, (int64_t)time(NULL) + 365 * 86400 + 5);
        not_after = 42;
        ck_assert_int_eq(certgen_not_after("not a certificate", &not_after), -EINVAL);
        ck_assert_int_eq(not_after, 42);
}
END_TEST

START_TEST(pem_free)
{
        certgen_pem_t p = {strdup("cert"), strdup("key")};
        certgen_pem_free(&p);
        ck_assert_ptr_null(p.cert);
        ck_assert_ptr_null(p.key);
        certgen_pem_free(&p);
        certgen_pem_free(NULL);
}
END_TEST

static Suite *certgen_suite(void)
{
        Suite *s = suite_create("certgen");
        TCase *tc = tcase_create("core");
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, ca_is_self_signed_ca);
        tcase_add_test(tc, serving_cert_verifies_against_ca);
        tcase_add_test(tc, serving_cert_names_and_usage);
        tcase_add_test(tc, serials_are_random);
        tcase_add_test(tc, bad_names_rejected);
        tcase_add_test(tc, ca_key_must_match);
        tcase_add_test(tc, zero_days_expires_at_once);
        tcase_add_test(tc, not_after_of_a_ca);
        tcase_add_test(tc, pem_free);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(certgen_suite());
}
