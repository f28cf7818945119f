#include "certgen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "cleanup.h"
#include "strbuf.h"

static void cleanup_x509(X509 **x)
{
        X509_free(*x);
}
static void cleanup_pkey(EVP_PKEY **k)
{
        EVP_PKEY_free(*k);
}
static void cleanup_bio(BIO **b)
{
        BIO_free(*b);
}

void certgen_pem_free(certgen_pem_t *p)
{
        if (!p)
                return;
        free(p->cert);
        if (p->key) {
                explicit_bzero(p->key, strlen(p->key));
                free(p->key);
        }
        p->cert = p->key = NULL;
}

static int openssl_error(hg_error_t *err, const char *what)
{
        unsigned long e = ERR_get_error();
        char buf[256] = "unknown error";
        if (e)
                ERR_error_string_n(e, buf, sizeof(buf));
        ERR_clear_error();
        return error_set(err, -EIO, "OpenSSL: %s: %s", what, buf);
}

static char *bio_to_string(BIO *b)
{
        char *data;
        long n = BIO_get_mem_data(b, &data);
        if (n < 0)
                return NULL;
        return strndup(data, (size_t)n);
}

static int to_pem(X509 *cert, EVP_PKEY *key, certgen_pem_t *ret, hg_error_t *err)
{
        _cleanup_(cleanup_bio) BIO *cb = BIO_new(BIO_s_mem());
        _cleanup_(cleanup_bio) BIO *kb = BIO_new(BIO_s_mem());
        if (!cb || !kb)
                return -ENOMEM;
        if (PEM_write_bio_X509(cb, cert) != 1 ||
            PEM_write_bio_PrivateKey(kb, key, NULL, NULL, 0, NULL, NULL) != 1)
                return openssl_error(err, "writing PEM");
        certgen_pem_t out = {bio_to_string(cb), bio_to_string(kb)};
        if (!out.cert || !out.key) {
                certgen_pem_free(&out);
                return -ENOMEM;
        }
        *ret = out;
        return 0;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value, hg_error_t *err)
{
        X509V3_CTX ctx;
        X509V3_set_ctx_nodb(&ctx);
        X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
        X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
        if (!ext)
                return openssl_error(err, "building an extension");
        int ok = X509_add_ext(cert, ext, -1);
        X509_EXTENSION_free(ext);
        return ok == 1 ? 0 : openssl_error(err, "adding an extension");
}

/* A certificate with a random 128-bit serial, valid from a minute ago (clock
 * skew between nodes) for days. */
static int new_cert(const char *cn, unsigned days, EVP_PKEY *key, X509 **ret, hg_error_t *err)
{
        _cleanup_(cleanup_x509) X509 *x = X509_new();
        if (!x)
                return -ENOMEM;
        BIGNUM *bn = BN_new();
        if (!bn || BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
            !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))) {
                BN_free(bn);
                return openssl_error(err, "serial number");
        }
        BN_free(bn);
        X509_NAME *name = X509_get_subject_name(x);
        if (X509_set_version(x, 2) != 1 || !X509_gmtime_adj(X509_getm_notBefore(x), -60) ||
            !X509_gmtime_adj(X509_getm_notAfter(x), (long)days * 86400) ||
            X509_set_pubkey(x, key) != 1 ||
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                       0) != 1)
                return openssl_error(err, "certificate fields");
        *ret = TAKE_PTR(x);
        return 0;
}

static int new_key(EVP_PKEY **ret, hg_error_t *err)
{
        EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
        if (!k)
                return openssl_error(err, "generating a P-256 key");
        *ret = k;
        return 0;
}

int certgen_ca(const char *common_name, unsigned days, certgen_pem_t *ret, hg_error_t *err)
{
        _cleanup_(cleanup_pkey) EVP_PKEY *key = NULL;
        _cleanup_(cleanup_x509) X509 *x = NULL;
        int r = new_key(&key, err);
        if (r == 0)
                r = new_cert(common_name, days, key, &x, err);
        if (r < 0)
                return r;
        if (X509_set_issuer_name(x, X509_get_subject_name(x)) != 1)
                return openssl_error(err, "issuer");
        if ((r = add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0", err)) < 0 ||
            (r = add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign", err)) < 0 ||
            (r = add_ext(x, x, NID_subject_key_identifier, "hash", err)) < 0)
                return r;
        if (X509_sign(x, key, EVP_sha256()) <= 0)
                return openssl_error(err, "signing the CA");
        return to_pem(x, key, ret, err);
}

/* SAN values go into an OpenSSL config string, so only plain DNS names and
 * parsed IP addresses are let in (no commas or colons smuggled). */
static bool is_dns_name(const char *s)
{
        size_t n = strlen(s);
        if (n == 0 || n > 253)
                return false;
        for (const char *p = s; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
                      *p == '.' || (*p == '*' && p == s && p[1] == '.')))
                        return false;
        return true;
}

static int build_san(const certgen_request_t *req, strbuf_t *sb, hg_error_t *err)
{
        int r = 0;
        for (const char *const *d = req->dns_names; d && *d && r == 0; d++) {
                if (!is_dns_name(*d))
                        return error_set(err, -EINVAL, "'%s' is not a DNS name", *d);
                r = strbuf_printf(sb, "%sDNS:%s", sb->len ? "," : "", *d);
        }
        for (const char *const *ip = req->ip_addresses; ip && *ip && r == 0; ip++) {
                unsigned char buf[16];
                if (inet_pton(AF_INET, *ip, buf) != 1 && inet_pton(AF_INET6, *ip, buf) != 1)
                        return error_set(err, -EINVAL, "'%s' is not an IP address", *ip);
                r = strbuf_printf(sb, "%sIP:%s", sb->len ? "," : "", *ip);
        }
        if (r == 0 && sb->len == 0)
                return error_set(err, -EINVAL, "a serving certificate needs a DNS name or an IP");
        return r;
}

int certgen_serving(const certgen_pem_t *ca, const certgen_request_t *req, certgen_pem_t *ret,
                    hg_error_t *err)
{
        _cleanup_(cleanup_bio) BIO *cb = BIO_new_mem_buf(ca->cert, -1);
        _cleanup_(cleanup_bio) BIO *kb = BIO_new_mem_buf(ca->key, -1);
        if (!cb || !kb)
                return -ENOMEM;
        _cleanup_(cleanup_x509) X509 *ca_cert = PEM_read_bio_X509(cb, NULL, NULL, NULL);
        _cleanup_(cleanup_pkey) EVP_PKEY *ca_key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
        if (!ca_cert || !ca_key)
                return openssl_error(err, "reading the CA");
        if (X509_check_private_key(ca_cert, ca_key) != 1)
                return openssl_error(err, "the CA key does not match the CA certificate");

        _cleanup_strbuf_ strbuf_t san = {0};
        int r = build_san(req, &san, err);
        if (r < 0)
                return r;
        _cleanup_(cleanup_pkey) EVP_PKEY *key = NULL;
        _cleanup_(cleanup_x509) X509 *x = NULL;
        r = new_key(&key, err);
        if (r == 0)
                r = new_cert(req->common_name, req->days, key, &x, err);
        if (r < 0)
                return r;
        if (X509_set_issuer_name(x, X509_get_subject_name(ca_cert)) != 1)
                return openssl_error(err, "issuer");
        if ((r = add_ext(x, ca_cert, NID_basic_constraints, "critical,CA:FALSE", err)) < 0 ||
            (r = add_ext(x, ca_cert, NID_key_usage, "critical,digitalSignature", err)) < 0 ||
            (r = add_ext(x, ca_cert, NID_ext_key_usage, "serverAuth", err)) < 0 ||
            (r = add_ext(x, ca_cert, NID_subject_key_identifier, "hash", err)) < 0 ||
            (r = add_ext(x, ca_cert, NID_authority_key_identifier, "keyid:always", err)) < 0 ||
            (r = add_ext(x, ca_cert, NID_subject_alt_name, san.data, err)) < 0)
                return r;
        if (X509_sign(x, ca_key, EVP_sha256()) <= 0)
                return openssl_error(err, "signing the serving certificate");
        return to_pem(x, key, ret, err);
}

static int read_ca(const certgen_pem_t *ca, X509 **ret_cert, EVP_PKEY **ret_key, hg_error_t *err)
{
        _cleanup_(cleanup_bio) BIO *cb = BIO_new_mem_buf(ca->cert, -1);
        _cleanup_(cleanup_bio) BIO *kb = BIO_new_mem_buf(ca->key, -1);
        if (!cb || !kb)
                return -ENOMEM;
        _cleanup_(cleanup_x509) X509 *cert = PEM_read_bio_X509(cb, NULL, NULL, NULL);
        _cleanup_(cleanup_pkey) EVP_PKEY *key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
        if (!cert || !key)
                return openssl_error(err, "reading the CA");
        if (X509_check_private_key(cert, key) != 1)
                return openssl_error(err, "the CA key does not match the CA certificate");
        *ret_cert = TAKE_PTR(cert);
        if (ret_key)
                *ret_key = TAKE_PTR(key);
        return 0;
}

int certgen_check_ca(const certgen_pem_t *ca, hg_error_t *err)
{
        _cleanup_(cleanup_x509) X509 *cert = NULL;
        return read_ca(ca, &cert, NULL, err);
}

int certgen_expires_before(const char *cert_pem, int64_t when, hg_error_t *err)
{
        _cleanup_(cleanup_bio) BIO *b = BIO_new_mem_buf(cert_pem, -1);
        if (!b)
                return -ENOMEM;
        _cleanup_(cleanup_x509) X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        if (!x) {
                ERR_clear_error();
                return error_set(err, -EINVAL, "the certificate cannot be read");
        }
        time_t t = (time_t)when;
        return X509_cmp_time(X509_get0_notAfter(x), &t) < 0 ? 1 : 0;
}

int certgen_not_after(const char *cert_pem, int64_t *ret_not_after)
{
        _cleanup_(cleanup_bio) BIO *b = BIO_new_mem_buf(cert_pem, -1);
        if (!b)
                return -ENOMEM;
        _cleanup_(cleanup_x509) X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
        struct tm tm;
        if (!x || ASN1_TIME_to_tm(X509_get0_notAfter(x), &tm) != 1) {
                ERR_clear_error();
                return -EINVAL;
        }
        *ret_not_after = (int64_t)timegm(&tm);
        return 0;
}

int certgen_leaf_current(const certgen_pem_t *ca, const char *leaf_pem,
                         const certgen_request_t *req, int64_t renew_at, hg_error_t *err)
{
        _cleanup_(cleanup_x509) X509 *ca_cert = NULL;
        int r = read_ca(ca, &ca_cert, NULL, err);
        if (r < 0)
                return r;
        _cleanup_(cleanup_bio) BIO *lb = BIO_new_mem_buf(leaf_pem, -1);
        if (!lb)
                return -ENOMEM;
        _cleanup_(cleanup_x509) X509 *leaf = PEM_read_bio_X509(lb, NULL, NULL, NULL);
        if (!leaf) {
                ERR_clear_error();
                error_set(err, -EINVAL, "the serving certificate cannot be read");
                return 1;
        }
        EVP_PKEY *ca_pub = X509_get0_pubkey(ca_cert);
        if (!ca_pub || X509_verify(leaf, ca_pub) != 1) {
                ERR_clear_error();
                error_set(err, -EINVAL, "the serving certificate is not signed by the CA");
                return 1;
        }
        time_t when = (time_t)renew_at;
        if (X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0 ||
            X509_cmp_time(X509_get0_notAfter(leaf), &when) < 0) {
                error_set(err, -EINVAL,
                          "the serving certificate expires within the renewal window");
                return 1;
        }
        for (const char *const *d = req->dns_names; d && *d; d++)
                if (X509_check_host(leaf, *d, 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL) != 1) {
                        error_set(err, -EINVAL, "the serving certificate does not name %s", *d);
                        return 1;
                }
        for (const char *const *ip = req->ip_addresses; ip && *ip; ip++)
                if (X509_check_ip_asc(leaf, *ip, 0) != 1) {
                        error_set(err, -EINVAL, "the serving certificate does not name %s", *ip);
                        return 1;
                }
        return 0;
}
