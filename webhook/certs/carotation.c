#include "carotation.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "strbuf.h"

#define CA_COMMON_NAME "hangar-webhook CA"

void ca_set_free(ca_set_t *set)
{
        certgen_pem_free(&set->ca);
        certgen_pem_free(&set->next);
        free(set->previous);
        memset(set, 0, sizeof(*set));
}

int carotation_step(const webhook_settings_t *cfg, ca_set_t *set, int64_t now, hg_error_t *err)
{
        int64_t overlap = settings_ca_overlap_seconds(cfg);
        ca_step_t step = CA_STEP_NONE;
        if (set->previous && now - set->previous_since >= overlap) {
                free(set->previous);
                set->previous = NULL;
                step = CA_STEP_RETIRED;
        }
        if (set->next.cert) {
                if (now - set->next_since < overlap)
                        return step;
                free(set->previous);
                set->previous = TAKE_PTR(set->ca.cert);
                set->previous_since = now;
                free(set->ca.key);
                set->ca = set->next;
                set->next = (certgen_pem_t){0};
                return CA_STEP_SWITCHED;
        }
        int64_t rotate_at = now + (int64_t)cfg->tls_renew_before_days * 86400;
        int expired = certgen_expires_before(set->ca.cert, now, err);
        int expiring = expired < 0 ? expired : certgen_expires_before(set->ca.cert, rotate_at, err);
        if (expiring < 0)
                return error_prefix(err, "the CA: ");
        if (!expiring)
                return step;
        certgen_pem_t fresh = {0};
        int r = certgen_ca(CA_COMMON_NAME, cfg->tls_ca_days, &fresh, err);
        if (r < 0)
                return r;
        if (expired) {
                certgen_pem_free(&set->ca);
                set->ca = fresh;
                return CA_STEP_REPLACED;
        }
        set->next = fresh;
        set->next_since = now;
        return CA_STEP_STAGED;
}

char *carotation_bundle(const ca_set_t *set)
{
        strbuf_t sb = {0};
        if (strbuf_printf(&sb, "%s%s%s", set->ca.cert ? set->ca.cert : "",
                          set->next.cert ? set->next.cert : "",
                          set->previous ? set->previous : "") < 0) {
                strbuf_free(&sb);
                return NULL;
        }
        return strbuf_take(&sb);
}
