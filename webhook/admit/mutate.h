/* The webhook's decision: a pure function of (configuration, pod). It reads
 * the pod, decides inject / skip / deny with a stable reason code, and for
 * inject or an annotated skip has sidecarpatch.c emit a JSON Patch while
 * applying it to the pod, so the pod it leaves behind is exactly what the
 * API server will store. No I/O: the server, `review` and `inject` all come
 * here. */
#pragma once

#include <jansson.h>

#include "error.h"
#include "jsonparse.h"
#include "settings.h"
#include "shape.h"

typedef enum mutate_decision {
        DECISION_DENY, /* first: a zeroed result fails closed */
        DECISION_SKIP,
        DECISION_INJECT,
        DECISION_ALLOW, /* a door after CREATE used within the rules (guard.c) */
        /* A deny not enforced (enforce.h): allowed, logged and counted as
         * what it would have been; warned also tells the client. */
        DECISION_WARNED,
        DECISION_AUDITED,
} mutate_decision_t;

/* Stable reason codes: logs, metrics labels, annotations and docs use them. */
typedef enum mutate_reason {
        REASON_INTERNAL_ERROR, /* first: a zeroed result fails closed */
        REASON_INJECTED,
        REASON_NOT_POD,
        REASON_NOT_CREATE,
        REASON_SUBRESOURCE,
        REASON_INJECTION_DISABLED,
        REASON_NOT_SELECTED,
        REASON_ALREADY_INJECTED,
        REASON_PRIVILEGED,
        REASON_HOST_PID,
        REASON_HOST_NETWORK,
        REASON_HOST_IPC,
        REASON_CONFLICT,
        REASON_NO_AGENT_CONTAINER,
        REASON_INVALID_POD,
        /* The doors after CREATE (guard.c): UPDATE, subresources, CONNECT. */
        REASON_NOT_GUARDED,         /* nothing of an injected pod's split is touched */
        REASON_LISTED_IDENTITY,     /* a door only the listed identities may use, used by one */
        REASON_DRIVER_EXEC,         /* exec/attach into hangar-driver */
        REASON_PORT_FORWARD,        /* port-forward to an injected pod */
        REASON_POD_UNKNOWN,         /* the pod a port-forward names could not be read */
        REASON_EPHEMERAL_CONTAINER, /* an ephemeral container breaking the split */
        REASON_DRIVER_CHANGED,      /* UPDATE changing hangar-driver or the image it runs */
        REASON_HANGAR_METADATA,     /* UPDATE changing hangar's annotations or selector label */
        REASON_UNKNOWN_DOOR,        /* a CONNECT subresource this webhook does not know */
        REASON_COUNT,
} mutate_reason_t;

typedef struct mutate_result {
        mutate_decision_t decision;
        mutate_reason_t reason;
        char detail[ERROR_MESSAGE_MAX]; /* for people: deny message, skip explanation */
        char *patch;                    /* JSON Patch text ("[...]"); NULL when no ops */
} mutate_result_t;

const char *mutate_reason_name(mutate_reason_t reason);
const char *mutate_decision_name(mutate_decision_t decision);
mutate_decision_t mutate_reason_decision(mutate_reason_t reason);
/* Whether a decision for this reason is returned with an admission warning
 * (a selected pod left without the split: tell whoever created it). */
bool mutate_reason_warns(mutate_reason_t reason);

/* Decides for a Pod CREATE and patches pod in place. Returns 0 with *ret
 * filled (any decision), or -ENOMEM; on error *ret says deny/internal. */
int mutate_pod(const webhook_settings_t *cfg, json_t *pod, mutate_result_t *ret);
/* mutate_pod with the sidecar's values built beforehand (shape_values_new
 * for cfg), as the server does once at start; the pod then shares them. */
int mutate_pod_with(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
                    mutate_result_t *ret);

/* Sets a skip or deny without looking at a pod (request-level reasons). */
void mutate_result_set(mutate_result_t *ret, mutate_reason_t reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void mutate_result_free(mutate_result_t *r);
