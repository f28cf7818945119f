/* A pod's spec against the sidecar's shape: the same table (shape.c) and the
 * same generators the webhook injects with, read the other way. Used by
 * `hangar-probe spec` on a pod read through the API or from a file. Each
 * finding has a stable code so the verdict can act on it. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "config.h"
#include "shape.h"

/* Checks pod; returns a JSON object {"result": "pass"|"fail", "checks": [...]}
 * (NULL on allocation failure) and sets *ret_pass. */
json_t *shapecheck_pod(const hg_config_t *cfg, json_t *pod, bool *ret_pass);

/* True if every member of expected is in actual with an equal value
 * (recursively; arrays element by element, same length). Extra members in
 * actual (API server defaults) are fine. */
bool shapecheck_subset(json_t *expected, json_t *actual);

/* The role a container of a pod's list ("containers", "initContainers",
 * "ephemeralContainers") plays in the shape. */
shape_role_t shapecheck_role(const hg_config_t *cfg, const char *list, const char *name);

/* How container c mounts volume v (its volumeMounts: name, readOnly):
 * absent, read-only or read-write. A volume mounted more than once counts as
 * its loosest mount: a second, writable mount of hangar-home elsewhere makes
 * the agent's read-only one worthless. */
shape_access_t shapecheck_mount_access(json_t *c, shape_volume_t v);
