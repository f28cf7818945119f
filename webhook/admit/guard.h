/* The doors into an injected pod after CREATE: the API server's ways to reach
 * hangar-driver's uid, its volumes or its PID namespace once the pod exists.
 * A pure function of (configuration, request): the server's /validate, the
 * offline `review` and the unit tests all come here.
 *
 *   CONNECT pods/exec, pods/attach   into hangar-driver: listed identities only
 *   CONNECT pods/portforward         to an injected pod: listed identities only
 *   UPDATE pods/ephemeralcontainers  a new ephemeral container of an injected pod
 *                                    must not target hangar-driver, mount a
 *                                    hangar volume, run as root or the driver's
 *                                    uid (or an unknown uid), escalate, add
 *                                    capabilities or be privileged
 *   UPDATE pods, pods/resize,        hangar-driver, the image it runs (the
 *          pods/status               agent's), hangar's volumes, hangar's
 *                                    annotations, every dev.gvisor.*
 *                                    annotation (the runtime reads them each
 *                                    time it makes the sandbox) and the
 *                                    selector label stay as they are
 *   UPDATE pods/<other>              not a door hangar knows: refused
 *   CREATE pods                      a pod carrying hangar-driver is marked
 *                                    injected and in the spec check's shape
 *                                    as stored (a copy of an injected pod)
 *
 * DELETE, CREATE pods/binding and pods/eviction are allowed untouched
 * (REASON_NOT_GUARDED); any other operation or subresource is refused
 * (REASON_UNKNOWN_DOOR). A review whose pods or members the rules read have
 * the wrong type is refused (REASON_INVALID_POD), never read as "not said". */
#pragma once

#include <jansson.h>

#include "mutate.h"
#include "settings.h"

typedef struct guard_request {
        const char *operation;   /* CREATE, UPDATE, DELETE, CONNECT */
        const char *resource;    /* request.resource.resource ("pods") */
        const char *subresource; /* "" or exec, attach, portforward, ephemeralcontainers, ... */
        const char *username;    /* request.userInfo.username */
        json_t *groups;          /* request.userInfo.groups (array of strings) or NULL */
        json_t *object;          /* the new object, or the CONNECT options */
        json_t *old_object;      /* UPDATE: the pod before */
        json_t *pod;             /* CONNECT portforward: the pod as stored, NULL if unknown */
        const char *pod_error;   /* why pod is NULL (for the deny message), or NULL */
} guard_request_t;

/* True when a subresource CONNECT needs the stored pod to be decided
 * (guard_request_t.pod): port-forward does, exec and attach do not. */
bool guard_needs_pod(const char *operation, const char *subresource);

/* Decides req into *ret (allow or deny, reason, detail; never a patch). */
void guard_decide(const webhook_settings_t *cfg, const guard_request_t *req, mutate_result_t *ret);

/* True when pod carries hangar's sidecar (the injected annotation or a
 * hangar-driver container): the pods whose doors are guarded. */
bool guard_pod_is_injected(json_t *pod);
