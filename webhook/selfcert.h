/* Self-managed serving certificates (tls.mode selfManaged).
 *
 * One Secret is the single source of truth for every replica: it holds the CA
 * (certificate and key) and the current serving pair. The first replica to
 * find it missing generates a CA and pair and creates it; a replica that
 * loses that race (409) reads the winner's. A pair near expiry (or missing a
 * name the configuration asks for) is replaced with an update carrying the
 * Secret's resourceVersion, so of several replicas renewing at once exactly
 * one wins and the rest re-read. Each replica writes the pair to its own
 * certFile/keyFile, where the certificate store picks it up, and patches the
 * webhook configuration's caBundle when it differs; since the CA only ever
 * comes from the Secret, replicas never fight over caBundle. */
#pragma once

#include "error.h"
#include "settings.h"

typedef struct selfcert selfcert_t;

int selfcert_new(const webhook_settings_t *cfg, selfcert_t **ret, hg_error_t *err);
void selfcert_free(selfcert_t *sc);

/* One round: make sure the Secret holds a current pair, write it locally,
 * patch caBundle. Returns 1 if the local files changed, 0 if not, <0 with
 * err set (the next round retries). */
int selfcert_sync(selfcert_t *sc, hg_error_t *err);
