/* The sidecar's shape (design page 000's pod table), defined once. The webhook
 * generates pods from it, the probe checks pods and containers against it, and
 * the chart's values feed the configuration it is built from. Nothing else
 * hard-codes the container's name, the volumes or who mounts what. */
#pragma once

#include <jansson.h>

#include "config.h"

#define SHAPE_DRIVER_CONTAINER "hangar-driver"
#define SHAPE_HOME_VOLUME      "hangar-home"
#define SHAPE_CTL_VOLUME       "hangar-ctl"

/* What the webhook did to a pod: "injected" or "skipped", and a reason code. */
#define SHAPE_ANNOTATION_STATUS "hangar.dev/driver-sidecar"
#define SHAPE_ANNOTATION_REASON "hangar.dev/driver-sidecar-reason"
#define SHAPE_STATUS_INJECTED   "injected"
#define SHAPE_STATUS_SKIPPED    "skipped"

typedef enum shape_role {
        SHAPE_ROLE_AGENT,  /* the sandbox container (config agentContainer) */
        SHAPE_ROLE_DRIVER, /* hangar-driver */
        SHAPE_ROLE_OTHER,  /* every other container, init containers included */
        SHAPE_ROLE_COUNT,
} shape_role_t;

typedef enum shape_volume {
        SHAPE_VOLUME_HOME, /* run scripts, logs, harness settings: driver writes, agent reads */
        SHAPE_VOLUME_CTL,  /* run key, token, approvals: the driver's alone, in memory */
        SHAPE_VOLUME_COUNT,
} shape_volume_t;

typedef enum shape_access {
        SHAPE_ACCESS_ABSENT,     /* must not be mounted */
        SHAPE_ACCESS_READ_ONLY,  /* mounted, readOnly: true */
        SHAPE_ACCESS_READ_WRITE, /* mounted, writable */
        SHAPE_ACCESS_UNCHECKED,  /* not part of the shape */
} shape_access_t;

/* Who mounts which volume, and how: the heart of the split. */
shape_access_t shape_mount_access(shape_role_t role, shape_volume_t volume);

const char *shape_volume_name(shape_volume_t volume);
const char *shape_volume_path(const hg_config_t *cfg, shape_volume_t volume);
const char *shape_role_name(shape_role_t role);
const char *shape_access_name(shape_access_t access);

/* The pod volume entry ({name, emptyDir}). */
json_t *shape_volume_json(const hg_config_t *cfg, shape_volume_t volume);
/* The volumeMount entry a role gets for a volume; NULL for ABSENT/UNCHECKED. */
json_t *shape_mount_json(const hg_config_t *cfg, shape_role_t role, shape_volume_t volume);
/* The hangar-driver container, running the agent's image. */
json_t *shape_driver_container_json(const hg_config_t *cfg, const char *image);
