/* Where in a pod hangar's agent-side commands run, read from the pod's
 * spec as the API server returned it (docs/client.md, "The agent's
 * container and the relay's path"):
 *
 *   - the agent's container: the pod's own hangar.dev/agent-container
 *     annotation, else the configured default (agentContainer, "sandbox");
 *     a name hangar is given (--container) must be one of the pod's
 *     spec.containers and not hangar-driver;
 *   - the path of hangar-relay and hangar-grade in it: where the agent's
 *     container mounts the bundle's volume (hangar-bin) at /opt/hangar,
 *     the bundle's own /opt/hangar/bin/NAME (its loader and libraries live
 *     there, so the image need not have any); otherwise NAME from the
 *     image's PATH.
 *
 * Pure functions of the pod's JSON: unit-tested, and fuzzed on pod bytes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "config.h"

/* The bundle, as the webhook delivers it (docs/images.md). */
#define PODAGENT_BIN_VOLUME "hangar-bin"
#define PODAGENT_BIN_PATH   "/opt/hangar"

typedef struct podagent {
        char container[64]; /* the agent's container, an RFC 1123 label */
        bool bundle;        /* it mounts hangar-bin at /opt/hangar */
} podagent_t;

/* The agent's container of pod (override: a name hangar was given, or
 * NULL), and whether it mounts the bundle. 0, or -EINVAL with why the
 * name cannot be the agent's written into why[n]. */
int podagent_resolve(const hg_config_t *cfg, json_t *pod, const char *override, podagent_t *ret,
                     char *why, size_t n);

/* The path to run program NAME (hangar-relay, hangar-grade) in the agent's
 * container: override when given, else the bundle's or NAME. Written into
 * buf[n] and returned. */
const char *podagent_program(const podagent_t *a, const char *name, const char *override, char *buf,
                             size_t n);
