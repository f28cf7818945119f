/* `hangar-webhook audit` and `hangar-webhook test-injection`: the webhook's
 * own decision (mutate_pod, and through it the spec check of shapecheck.c)
 * applied to pods as the API server stores them.
 *
 * The webhook only sees a pod at CREATE. A sandbox pod created before the
 * sidecar was enabled, while the webhook was not called (failurePolicy
 * Ignore, a namespace not selected then), or injected under an older
 * configuration keeps that shape for its whole life. The audit asks, for
 * each stored sandbox pod, what the webhook would answer for it now:
 *   - it would inject: the pod lacks the sidecar (not-injected);
 *   - it is marked injected and the spec check finds a departure from the
 *     shape this configuration injects, or the reinvocation path would
 *     still change it: injected by another configuration (stale);
 *   - it would refuse the pod now (denied), or skip it (skipped: privileged,
 *     host namespaces; the webhook's current answer, so not a problem);
 *   - it is injected but its hangar-driver cannot start, or started and
 *     exited with a message (driver-failed: the kubelet's reason and the
 *     runtime's words from the pod's status, driverstart.c);
 *   - it lives where the webhooks are never called (unguarded): a
 *     namespace that has not opted in (the scope label, the chart's
 *     scope.namespaceLabel) or, given the webhook configuration, one its
 *     namespaceSelector leaves out. The guard never sees such a pod's
 *     port-forwards, updates or ephemeral containers, and the scope policy
 *     would refuse it at creation now; it is reported whatever its shape;
 *   - otherwise the pod is current.
 * A pod the selector does not select but that carries hangar-driver or
 * hangar's `injected` record is a copy of a sandbox pod without its label
 * (unlabelled): the webhook and the guard's selection never see it as a
 * sandbox pod, so it is listed whatever its shape.
 * One judgement with the webhook: nothing here decides a shape itself.
 *
 * test-injection (the chart's `helm test` hook) creates a sandbox pod with
 * dryRun=All through the API and asks the same question of what the API
 * server would store: it must come back current. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

#include "error.h"
#include "settings.h"
#include "shape.h"

typedef enum audit_state {
        AUDIT_NOT_INJECTED, /* first: a zeroed verdict is a problem */
        AUDIT_STALE,
        AUDIT_DENIED,
        AUDIT_UNGUARDED,
        AUDIT_DRIVER_FAILED,
        AUDIT_UNLABELLED,
        AUDIT_SKIPPED,
        AUDIT_EXCLUDED,
        AUDIT_CURRENT,
        AUDIT_STATE_COUNT,
} audit_state_t;

typedef struct audit_verdict {
        audit_state_t state;
        /* A stable code: the webhook's reason, a spec check's finding code
         * ("spec.driver"), or how a pod came to lack the sidecar
         * ("never-reviewed", "skipped-at-creation", "marked-without-driver"). */
        char code[64];
        /* Room for the runtime's words and what to do (driver-failed). */
        char reason[2 * ERROR_MESSAGE_MAX + 256];
} audit_verdict_t;

const char *audit_state_name(audit_state_t state);
/* Whether a pod in this state needs an admin (recreate it, or opt its
 * namespace in): not injected, stale, denied, unguarded, driver-failed or
 * unlabelled. */
bool audit_state_needs_action(audit_state_t state);

/* Whether a pod in this state is broken now rather than out of date: its
 * driver cannot start, or it is a copy no selection sees (driver-failed,
 * unlabelled). audit_run's AUDIT_FOUND_BROKEN. */
bool audit_state_broken(audit_state_t state);

/* Judges one stored pod (left unchanged) against cfg with the webhook's
 * decision and, for a pod injected, its driver's start; cfg->driver_sidecar
 * must be true. A pod cfg does not select is judged too (excluded, or
 * unlabelled when it carries hangar's parts). 0, or -ENOMEM. */
int audit_pod(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
              audit_verdict_t *ret);

typedef struct audit_options {
        const char *kubeconfig; /* NULL: as kubectl finds it (k8s_client_new_kubectl) */
        const char *context;
        const char *namespace; /* NULL: the context's; ignored with all_namespaces */
        bool all_namespaces;
        bool json;     /* a JSON document instead of a table */
        bool show_all; /* the table lists current, skipped and excluded pods too */
        /* A MutatingWebhookConfiguration whose namespaceSelector and
         * objectSelector say which pods the API server sends: pods of a
         * namespace it leaves out are unguarded, pods its objectSelector
         * leaves out are excluded. NULL: none. */
        const char *webhook_configuration;
        /* The namespace label that opts a namespace in (the chart's
         * scope.namespaceLabel, scope.mode optIn): pods of a namespace
         * without it are unguarded. NULL key: every namespace is in scope
         * (scope.mode all). */
        const char *scope_key;
        const char *scope_value;
        /* Tell each driver-failed pod's controller owner (a Sandbox, a
         * ReplicaSet, a Job) with a Warning Event (ownerevent.h). */
        bool events;
} audit_options_t;

/* audit_run's result when a pod is broken (audit_state_broken). */
#define AUDIT_FOUND_BROKEN 2

/* Lists the pods (all of them: a copy without the selector's label is
 * found only so), judges the sandbox pods (cfg's selector) and the copies,
 * and writes a table or JSON to out. Returns AUDIT_FOUND_BROKEN when a pod
 * is broken, else 1 when a pod needs action, 0 when none does, <0 with err
 * set when the audit could not finish. */
int audit_run(const webhook_settings_t *cfg, const audit_options_t *o, FILE *out, hg_error_t *err);

/* Creates a sandbox pod in ns with dryRun=All (image: its agent
 * container's) and judges what comes back. 0 when it is injected in the
 * current shape, 1 when not (the reason in err), <0 when the check could not
 * run (err says why). A line for people goes to out either way. */
int audit_test_injection(const webhook_settings_t *cfg, const char *kubeconfig, const char *context,
                         const char *ns, const char *image, FILE *out, hg_error_t *err);
