/* A driver that cannot start, told on the object that owns its pod.
 *
 * The kubelet's reason for a hangar-driver that cannot start is on the pod
 * (its container status and the kubelet's own Events), but admins of
 * controllers that make pods (agent-sandbox's Sandbox, a Deployment's
 * ReplicaSet, a Job) look at the owner: `kubectl describe sandbox NAME`,
 * where agent-sandbox copies only the pod's readiness. `hangar-webhook
 * audit --events` posts, for each driver-failed pod with a controller
 * owner, one Warning Event (core/v1) on that owner with the audit's
 * reason; a later audit of the same pod updates the same Event (its count,
 * last time and message) instead of adding another, so a scheduled audit
 * does not flood the namespace.
 *
 * The Event is in the pod's namespace and names the owner there (owners of
 * a namespaced pod that are themselves namespaced, as every controller
 * that makes pods is). Its name is fixed per pod ("hangar-driver-failed."
 * and the pod's uid); its reason is OWNER_EVENT_REASON; its source
 * component is hangar-webhook. */
#pragma once

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "error.h"
#include "k8sclient.h"

#define OWNER_EVENT_REASON "HangarDriverFailed"
/* The message is cut to this many bytes (at a character boundary): an
 * Event is read in `kubectl describe`, and the audit's JSON has it whole. */
#define OWNER_EVENT_MESSAGE_MAX 1024

typedef enum owner_event_action {
        OWNER_EVENT_NONE,    /* the pod has no controller owner: nothing posted */
        OWNER_EVENT_CREATED, /* a new Event */
        OWNER_EVENT_UPDATED, /* the pod's Event was there: counted again */
} owner_event_action_t;

typedef struct owner_event {
        owner_event_action_t action;
        char kind[64];
        char name[254];
} owner_event_t;

const char *owner_event_action_name(owner_event_action_t action);

/* The Event (a new object, or NULL with err set) that tells pod's
 * controller owner message, at now; *ret gets the owner's kind and name
 * (action left NONE). -ENOENT in err when the pod has no controller
 * owner; -EINVAL when the pod lacks a name, namespace or uid, or the owner
 * lacks apiVersion, kind, name or uid. Pure: nothing is sent. */
json_t *owner_event_build(json_t *pod, const char *message, time_t now, owner_event_t *ret,
                          hg_error_t *err);

/* Posts owner_event_build's Event, or, when the pod's Event is there
 * already, adds one to its count and sets its last time and message.
 * 0 with ret->action saying which (NONE when the pod has no controller
 * owner), <0 with err set when the API server refused (the RBAC the
 * audit's identity needs: create, get and patch on events) or could not
 * be reached. */
int owner_event_post(k8s_client_t *k, json_t *pod, const char *message, time_t now,
                     owner_event_t *ret, hg_error_t *err);
