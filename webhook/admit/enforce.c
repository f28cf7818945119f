#include "enforce.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {
    [ENFORCEMENT_ENFORCE] = "enforce",
    [ENFORCEMENT_WARN] = "warn",
    [ENFORCEMENT_AUDIT] = "audit",
};

int enforcement_parse(const char *s, enforcement_t *ret)
{
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (s && strcmp(s, names[i]) == 0) {
                        *ret = (enforcement_t)i;
                        return 0;
                }
        return -EINVAL;
}

bool enforcement_is_name(const char *s)
{
        enforcement_t unused;
        return enforcement_parse(s, &unused) == 0;
}

static enforcement_t enforcement_of(const char *name)
{
        enforcement_t mode = ENFORCEMENT_ENFORCE;
        return enforcement_parse(name, &mode) == 0 ? mode : ENFORCEMENT_ENFORCE;
}

enforcement_t settings_guard_enforcement(const webhook_settings_t *s)
{
        return enforcement_of(s->guard_enforcement);
}

enforcement_t settings_conflict_enforcement(const webhook_settings_t *s)
{
        return enforcement_of(s->conflict_enforcement);
}

bool enforcement_relaxable(mutate_reason_t reason)
{
        switch (reason) {
        /* Injection: a selected pod hangar's shape does not fit. */
        case REASON_CONFLICT:
        case REASON_NO_AGENT_CONTAINER:
        /* The guard's doors. */
        case REASON_DRIVER_EXEC:
        case REASON_PORT_FORWARD:
        case REASON_EPHEMERAL_CONTAINER:
        case REASON_DRIVER_CHANGED:
        case REASON_HANGAR_METADATA:
        case REASON_UNKNOWN_DOOR:
                return true;
        /* Not decisions but failures to decide (a pod that could not be
         * read or parsed, an internal error): closed in every mode, or
         * audit mode would turn an outage of the API server into an open
         * door nobody asked for. */
        default:
                return false;
        }
}

void enforcement_apply(enforcement_t mode, mutate_result_t *res)
{
        if (mode == ENFORCEMENT_ENFORCE || res->decision != DECISION_DENY ||
            !enforcement_relaxable(res->reason))
                return;
        res->decision = mode == ENFORCEMENT_WARN ? DECISION_WARNED : DECISION_AUDITED;
        /* A deny carries no patch today; if one ever did, it must not be
         * applied to a pod that is let through as if skipped. */
        free(res->patch);
        res->patch = NULL;
}

void enforcement_warning(const mutate_result_t *res, char out[ENFORCEMENT_WARNING_MAX + 1])
{
        char full[ENFORCEMENT_WARNING_MAX + ERROR_MESSAGE_MAX + 64];
        int n = snprintf(full, sizeof(full), "hangar would deny (%s): %s",
                         mutate_reason_name(res->reason), res->detail);
        size_t len = n < 0 ? 0 : (size_t)n;
        if (len >= sizeof(full))
                len = sizeof(full) - 1;
        if (len > ENFORCEMENT_WARNING_MAX) {
                len = ENFORCEMENT_WARNING_MAX;
                /* Back off to the start of a UTF-8 sequence: never half a
                 * character (continuation bytes are 10xxxxxx). */
                while (len > 0 && ((unsigned char)full[len] & 0xC0) == 0x80)
                        len--;
        }
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)full[i];
                out[i] = c < 0x20 || c == 0x7F ? ' ' : (char)c;
        }
        out[len] = '\0';
}
