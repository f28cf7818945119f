#include "certstore.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "cleanup.h"
#include "fileio.h"

#define PEM_MAX_BYTES   (1024 * 1024)
#define MAX_CHAIN_CERTS 16

typedef struct creds {
        gnutls_pcert_st pcerts[MAX_CHAIN_CERTS];
        unsigned n;
        gnutls_privkey_t key;
        int64_t not_after;
        time_t retired_at;
        struct creds *next_retired;
} creds_t;

typedef struct file_state {
        dev_t dev;
        ino_t ino;
        off_t size;
        struct timespec mtime;
} file_state_t;

static struct {
        pthread_rwlock_t lock;
        char *cert_path;
        char *key_path;
        unsigned grace_seconds;
        creds_t *current;
        creds_t *retired;
        file_state_t attempted[2]; /* cert, key: the last pair we tried */
        bool attempted_valid;
} store = {.lock = PTHREAD_RWLOCK_INITIALIZER};

static void creds_free(creds_t *c)
{
        if (!c)
                return;
        for (unsigned i = 0; i < c->n; i++)
                gnutls_pcert_deinit(&c->pcerts[i]);
        if (c->key)
                gnutls_privkey_deinit(c->key);
        free(c);
}

static void cleanup_creds(creds_t **c)
{
        creds_free(*c);
}

static void cleanup_bio(BIO **b)
{
        BIO_free(*b);
}
static void cleanup_x509(X509 **x)
{
        X509_free(*x);
}
static void cleanup_pkey(EVP_PKEY **k)
{
        EVP_PKEY_free(*k);
}

int certstore_init(const char *cert_path, const char *key_path, unsigned grace_seconds)
{
        certstore_shutdown(); /* a second init starts afresh */
        store.cert_path = strdup(cert_path);
        store.key_path = strdup(key_path);
        store.grace_seconds = grace_seconds;
        return store.cert_path && store.key_path ? 0 : -ENOMEM;
}

static int stat_file(const char *path, file_state_t *ret)
{
        struct stat st;
        if (stat(path, &st) < 0)
                return -errno;
        *ret = (file_state_t){st.st_dev, st.st_ino, st.st_size, st.st_mtim};
        return 0;
}

static bool same_state(const file_state_t *a, const file_state_t *b)
{
        return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
               a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

/* OpenSSL's view of the pair: parses, matches, and is valid now. */
static int validate_pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                         int64_t *ret_not_after, hg_error_t *err)
{
        _cleanup_(cleanup_bio) BIO *cb = BIO_new_mem_buf(cert_pem, (int)cert_len);
        _cleanup_(cleanup_bio) BIO *kb = BIO_new_mem_buf(key_pem, (int)key_len);
        if (!cb || !kb)
                return -ENOMEM;
        _cleanup_(cleanup_x509) X509 *leaf = PEM_read_bio_X509(cb, NULL, NULL, NULL);
        if (!leaf) {
                ERR_clear_error();
                return error_set(err, -EINVAL, "%s holds no PEM certificate", store.cert_path);
        }
        _cleanup_(cleanup_pkey) EVP_PKEY *key = PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL);
        if (!key) {
                ERR_clear_error();
                return error_set(err, -EINVAL, "%s holds no PEM private key", store.key_path);
        }
        if (X509_check_private_key(leaf, key) != 1) {
                ERR_clear_error();
                return error_set(err, -EINVAL, "the key in %s does not match the certificate in %s",
                                 store.key_path, store.cert_path);
        }
        if (X509_cmp_current_time(X509_get0_notBefore(leaf)) > 0)
                return error_set(err, -EINVAL, "the certificate in %s is not valid yet",
                                 store.cert_path);
        if (X509_cmp_current_time(X509_get0_notAfter(leaf)) < 0)
                return error_set(err, -EINVAL, "the certificate in %s has expired",
                                 store.cert_path);
        struct tm tm;
        if (ASN1_TIME_to_tm(X509_get0_notAfter(leaf), &tm) != 1)
                return error_set(err, -EINVAL, "unreadable expiry in %s", store.cert_path);
        *ret_not_after = (int64_t)timegm(&tm);
        return 0;
}

/* GnuTLS's credentials for the same bytes. */
static int import_pair(const char *cert_pem, size_t cert_len, const char *key_pem, size_t key_len,
                       creds_t **ret, hg_error_t *err)
{
        _cleanup_(cleanup_creds) creds_t *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        gnutls_datum_t cd = {(unsigned char *)cert_pem, (unsigned)cert_len};
        gnutls_datum_t kd = {(unsigned char *)key_pem, (unsigned)key_len};
        unsigned n = MAX_CHAIN_CERTS;
        int g = gnutls_pcert_list_import_x509_raw(c->pcerts, &n, &cd, GNUTLS_X509_FMT_PEM, 0);
        if (g < 0)
                return error_set(err, -EINVAL, "GnuTLS cannot use the certificates in %s: %s",
                                 store.cert_path, gnutls_strerror(g));
        c->n = n;
        if (gnutls_privkey_init(&c->key) < 0)
                return -ENOMEM;
        g = gnutls_privkey_import_x509_raw(c->key, &kd, GNUTLS_X509_FMT_PEM, NULL, 0);
        if (g < 0)
                return error_set(err, -EINVAL, "GnuTLS cannot use the key in %s: %s",
                                 store.key_path, gnutls_strerror(g));
        *ret = TAKE_PTR(c);
        return 0;
}

static void free_expired_retired(time_t now)
{
        creds_t **pp = &store.retired;
        while (*pp) {
                creds_t *c = *pp;
                if (now - c->retired_at >= (time_t)store.grace_seconds) {
                        *pp = c->next_retired;
                        creds_free(c);
                } else {
                        pp = &c->next_retired;
                }
        }
}

int certstore_reload(hg_error_t *err)
{
        /* Zeroed only for clang's analyzer, which takes a failed stat's
         * -errno for a possible success. */
        file_state_t now_state[2] = {0};
        int r = stat_file(store.cert_path, &now_state[0]);
        if (r == 0)
                r = stat_file(store.key_path, &now_state[1]);
        time_t now = time(NULL);

        pthread_rwlock_wrlock(&store.lock);
        free_expired_retired(now);
        pthread_rwlock_unlock(&store.lock);

        if (r < 0) {
                /* Try again as soon as the files are back. */
                store.attempted_valid = false;
                return error_set(err, r, "cannot stat %s or %s: %s", store.cert_path,
                                 store.key_path, strerror(-r));
        }
        if (store.attempted_valid && same_state(&store.attempted[0], &now_state[0]) &&
            same_state(&store.attempted[1], &now_state[1]))
                return 0;
        /* Whatever happens next, this pair has been tried: a bad pair is
         * reported once, not on every poll. */
        store.attempted[0] = now_state[0];
        store.attempted[1] = now_state[1];
        store.attempted_valid = true;

        _cleanup_free_ char *cert = NULL, *key = NULL;
        size_t cert_len, key_len;
        r = file_read_bounded(store.cert_path, PEM_MAX_BYTES, &cert, &cert_len);
        if (r < 0)
                return error_set(err, r, "cannot read %s: %s", store.cert_path, strerror(-r));
        r = file_read_bounded(store.key_path, PEM_MAX_BYTES, &key, &key_len);
        if (r < 0)
                return error_set(err, r, "cannot read %s: %s", store.key_path, strerror(-r));
        int64_t not_after = 0;
        r = validate_pair(cert, cert_len, key, key_len, &not_after, err);
        creds_t *c = NULL;
        if (r == 0)
                r = import_pair(cert, cert_len, key, key_len, &c, err);
        explicit_bzero(key, key_len);
        if (r < 0 || !c) /* c is set whenever r is 0: the test is for the analyzer */
                return r < 0 ? r : -EINVAL;
        c->not_after = not_after;

        pthread_rwlock_wrlock(&store.lock);
        creds_t *old = store.current;
        store.current = c;
        if (old) {
                old->retired_at = now;
                old->next_retired = store.retired;
                store.retired = old;
        }
        pthread_rwlock_unlock(&store.lock);
        return 1;
}

bool certstore_ready(void)
{
        pthread_rwlock_rdlock(&store.lock);
        bool ready = store.current && store.current->not_after > (int64_t)time(NULL);
        pthread_rwlock_unlock(&store.lock);
        return ready;
}

int64_t certstore_not_after(void)
{
        pthread_rwlock_rdlock(&store.lock);
        int64_t t = store.current ? store.current->not_after : 0;
        pthread_rwlock_unlock(&store.lock);
        return t;
}

void certstore_shutdown(void)
{
        pthread_rwlock_wrlock(&store.lock);
        creds_free(store.current);
        store.current = NULL;
        while (store.retired) {
                creds_t *c = store.retired;
                store.retired = c->next_retired;
                creds_free(c);
        }
        pthread_rwlock_unlock(&store.lock);
        free(store.cert_path);
        free(store.key_path);
        store.cert_path = store.key_path = NULL;
        store.attempted_valid = false;
}

int certstore_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                       const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                       gnutls_pcert_st **ret_pcert, unsigned int *ret_pcert_length,
                       gnutls_privkey_t *ret_privkey)
{
        int r = -1; /* no pair: the handshake fails */
        pthread_rwlock_rdlock(&store.lock);
        if (store.current) {
                *ret_pcert = store.current->pcerts;
                *ret_pcert_length = store.current->n;
                *ret_privkey = store.current->key;
                r = 0;
        }
        pthread_rwlock_unlock(&store.lock);
        return r;
}
