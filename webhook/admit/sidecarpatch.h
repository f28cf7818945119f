/* The sidecar's patch: the JSON Patch operations mutate.c's decision emits
 * once it has decided, applied to the pod as they are emitted (patch.h).
 * For a pod to inject: the decision recorded in annotations, the agent made
 * the default container, the agent's service-account token taken out where
 * configured, the volumes, the agent's mounts, the bundle's copier, the
 * driver, the gVisor mount hints, a PID namespace per container, room in a
 * pod-level budget and the driver's limits. For a pod marked injected (a
 * reinvocation): the token mounts the API server's plugin put back, taken
 * out again. No decision is taken here but the one a pod-level budget that
 * is no quantity forces (a deny). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "mutate.h"
#include "patch.h"
#include "podview.h"
#include "settings.h"
#include "shape.h"

/* Records ret's decision on the pod (hangar's status and reason
 * annotations), leaving annotations that already say it alone. */
int sidecarpatch_annotate(patch_t *p, mutate_result_t *ret, hg_error_t *err);

/* Adds the sidecar to the pod p holds (the one view reads), whose agent is
 * agent (named agent_name, at agent_index in spec.containers), ret being
 * the decision to inject: 0, 1 when the pod's budget is no quantity (ret is
 * then a deny), or a negative errno. */
int sidecarpatch_inject(const webhook_settings_t *cfg, const shape_values_t *values, patch_t *p,
                        const pod_view_t *view, const char *agent_name, json_t *agent,
                        size_t agent_index, mutate_result_t *ret, hg_error_t *err);

/* Removes container index's mounts of the service-account token (every
 * one shapecheck_is_token_mount names, or for plugin_only only the mount
 * the ServiceAccount admission plugin adds). */
int sidecarpatch_remove_token_mounts(patch_t *p, const pod_view_t *view, podview_list_t list,
                                     size_t index, bool plugin_only, hg_error_t *err);

/* Whether the agent's token is taken out (agentServiceAccountToken: remove). */
bool sidecarpatch_removes_agent_token(const webhook_settings_t *cfg);
