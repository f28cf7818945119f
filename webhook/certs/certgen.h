/* Certificate generation with OpenSSL: a CA and a serving certificate for the
 * webhook's Service DNS names and IP SANs, as PEM. Used by `hangar-webhook
 * certs` (and by the self-managed certificate mode). ECDSA P-256 keys: small,
 * fast to handshake, accepted by the API server and by GnuTLS. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct certgen_pem {
        char *cert; /* PEM, malloc'd */
        char *key;  /* PEM (PKCS#8), malloc'd */
} certgen_pem_t;

typedef struct certgen_request {
        const char *common_name;
        const char *const *dns_names; /* NULL-terminated */
        const char *const *ip_addresses;
        unsigned days;
} certgen_request_t;

/* A self-signed CA. */
int certgen_ca(const char *common_name, unsigned days, certgen_pem_t *ret, hg_error_t *err);
/* A serving certificate (serverAuth) signed by the CA given in PEM. */
int certgen_serving(const certgen_pem_t *ca, const certgen_request_t *req, certgen_pem_t *ret,
                    hg_error_t *err);
void certgen_pem_free(certgen_pem_t *p);

/* Checks a CA pair holds together (the key matches the certificate). */
int certgen_check_ca(const certgen_pem_t *ca, hg_error_t *err);

/* 1 if the certificate in cert_pem is no longer valid at when (Unix
 * time), 0 if it still is, <0 if it cannot be read. */
int certgen_expires_before(const char *cert_pem, int64_t when, hg_error_t *err);

/* The certificate's notAfter (Unix time); -EINVAL if it cannot be read. */
int certgen_not_after(const char *cert_pem, int64_t *ret_not_after);

/* Whether the serving certificate leaf_pem still serves: signed by ca, valid
 * now and still valid at renew_at (Unix time), and naming every DNS name and
 * IP address of req. Returns 0 if it does, 1 if it should be replaced (err
 * says why), <0 if it cannot be read. */
int certgen_leaf_current(const certgen_pem_t *ca, const char *leaf_pem,
                         const certgen_request_t *req, int64_t renew_at, hg_error_t *err);
