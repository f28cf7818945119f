/* The serving certificate and key, reloaded while the server runs.
 *
 * libmicrohttpd's TLS is GnuTLS, so the pair in use is held as GnuTLS
 * credentials and handed to each handshake by a callback. A changed pair (a
 * Kubernetes Secret volume swaps its `..data` symlink) is validated with
 * OpenSSL first: it must parse, the key must match the leaf certificate, and
 * the leaf must be inside its validity window. A bad pair is refused and the
 * old one kept. Replaced credentials are freed only after a grace period,
 * because a handshake that already picked them may still be using them.
 *
 * The GnuTLS callback carries no user pointer, so there is one store per
 * process (the webhook serves one certificate). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#include "error.h"

/* Sets the files and grace period (seconds); does not load yet. */
int certstore_init(const char *cert_path, const char *key_path, unsigned grace_seconds);
/* Loads the pair if the files changed since the last attempt: 1 = loaded a
 * new pair, 0 = unchanged, <0 = refused (err says why; the old pair stays). */
int certstore_reload(hg_error_t *err);
/* True once a valid pair is in use. */
bool certstore_ready(void);
/* Expiry (Unix time) of the leaf in use; 0 if none. */
int64_t certstore_not_after(void);
/* Frees everything; no handshake may run any more. */
void certstore_shutdown(void);

/* The MHD_OPTION_HTTPS_CERT_CALLBACK function (a gnutls_certificate_retrieve_function2). */
int certstore_retrieve(gnutls_session_t session, const gnutls_datum_t *req_ca_rdn, int nreqs,
                       const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
                       gnutls_pcert_st **ret_pcert, unsigned int *ret_pcert_length,
                       gnutls_privkey_t *ret_privkey);
