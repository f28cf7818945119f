/* `hangar-webhook inject`: the webhook's decision applied offline to the
 * manifests an admin would apply (like `istioctl kube-inject`): Pods, the pod
 * templates of workloads (Deployment, StatefulSet, DaemonSet, ReplicaSet,
 * ReplicationController, Job, CronJob), and Lists of them. Each pod or
 * template gets the decision the server gives a CREATE of it
 * (admission_decide_pod: the same checks of the pod, the same mutate_pod),
 * so what inject prints is what the API server would store. Other kinds pass
 * through unchanged. */
#pragma once

#include <jansson.h>

#include "error.h"
#include "settings.h"

/* Called for each pod or template left as it was: where names it
 * ("Deployment web", "document 2: Pod a"). */
typedef void (*inject_skip_fn)(const char *where, const char *reason, const char *detail,
                               void *ctx);

/* Injects into every manifest of docs (a JSON array, changed in place).
 * A pod the webhook would deny, or a workload without its pod template, is
 * an error naming it; docs is then left half done and must not be printed. */
int inject_manifests(const webhook_settings_t *cfg, json_t *docs, inject_skip_fn skipped, void *ctx,
                     hg_error_t *err);
