/* The C twin of the chart's `hangar-pod` matchCondition (templates/
 * _helpers.tpl, hangar-webhook.hangarPodCondition), which the API server
 * evaluates in CEL on every pod UPDATE (pods, pods/ephemeralcontainers,
 * pods/resize; ANDed on pods/status) and sends the guard only what it
 * matches. Two jobs:
 *   - the guard's promise that what the condition leaves out needs no
 *     webhook: every such UPDATE is allowed by guard_decide (checked on
 *     every input of tests/fuzz/fuzz_validate.c);
 *   - the same answer as the CEL on the pods a real API server stores
 *     (tests/e2e/test_matchcondition.sh runs both on the same updates).
 * It reads exactly what the CEL reads, the same way: a record annotation
 * present under either key (any value), or a container or init container
 * named hangar-driver, on either the old or the new pod. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

/* Whether the API server sends the UPDATE of old_pod into new_pod to the
 * guard (either may be NULL or not an object: then it matches nothing). */
bool guardmatch_hangar_pod(json_t *old_pod, json_t *new_pod);
