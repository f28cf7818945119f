/* The self-managed CA's rotation as a pure step: (the CAs in the Secret,
 * the clock) -> the CAs as they should be. No I/O, so every replica given
 * the same Secret at the same time takes the same step (the Secret's
 * resourceVersion lets one of them write it), and the tests can drive the
 * clock. The steps:
 *   stage   the CA expires within tls.renewBeforeDays: a new CA is made and
 *           published beside it (caBundle trusts both); the old one still
 *           signs.
 *   switch  one tls.caOverlapSeconds later (the API server trusts the new
 *           CA by then): the new CA signs (the serving pair is reissued) and
 *           the old one stays trusted as "previous".
 *   retire  one more overlap (every replica serves the new pair by then):
 *           the previous CA leaves caBundle.
 * A CA already expired is replaced at once: there is nothing to overlap. */
#pragma once

#include <stdint.h>

#include "certgen.h"
#include "error.h"
#include "settings.h"

typedef struct ca_set {
        certgen_pem_t ca;       /* signs the serving pair */
        certgen_pem_t next;     /* staged: trusted, not signing yet; or both NULL */
        char *previous;         /* replaced by the last switch, still trusted; or NULL */
        int64_t next_since;     /* Unix time next was staged */
        int64_t previous_since; /* Unix time previous was replaced */
} ca_set_t;

typedef enum ca_step {
        CA_STEP_NONE = 0,
        CA_STEP_STAGED,
        CA_STEP_SWITCHED,
        CA_STEP_RETIRED,
        CA_STEP_REPLACED, /* the CA had expired */
} ca_step_t;

/* Takes at most one step (a retire may come with a switch or stage) and
 * returns the last one taken (CA_STEP_NONE: nothing to do), or <0 with err
 * set (a CA that cannot be read, or OpenSSL failing). */
int carotation_step(const webhook_settings_t *cfg, ca_set_t *set, int64_t now, hg_error_t *err);

/* The PEM bundle the API server must trust: ca, then next or previous. */
char *carotation_bundle(const ca_set_t *set);

void ca_set_free(ca_set_t *set);
