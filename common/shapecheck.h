/* A pod's spec against the sidecar's shape: the same table (shape.c) and the
 * same generators the webhook injects with, read the other way. Used by
 * `hangar-probe spec` on a pod read through the API or from a file. Each
 * finding has a stable code so the verdict can act on it. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "config.h"

/* Checks pod; returns a JSON object {"result": "pass"|"fail", "checks": [...]}
 * (NULL on allocation failure) and sets *ret_pass. */
json_t *shapecheck_pod(const hg_config_t *cfg, json_t *pod, bool *ret_pass);

/* True if every member of expected is in actual with an equal value
 * (recursively; arrays element by element, same length). Extra members in
 * actual (API server defaults) are fine. */
bool shapecheck_subset(json_t *expected, json_t *actual);
