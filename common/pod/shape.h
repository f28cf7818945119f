/* The sidecar's shape (docs/design/driver-sidecar.md's pod table), defined once. The webhook
 * generates pods from it, the probe checks pods and containers against it, and
 * the chart's values feed the configuration it is built from. Nothing else
 * hard-codes the container's name, the volumes or who mounts what. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "config.h"
#include "strbuf.h"

#define SHAPE_DRIVER_CONTAINER "hangar-driver"
#define SHAPE_HOME_VOLUME      "hangar-home"
#define SHAPE_CTL_VOLUME       "hangar-ctl"
/* With driver.binaries.from initContainer: the bundle's memory volume, at
 * CONFIG_BUNDLE_PATH in the driver and the agent (read-only), filled by the
 * init container of the same name, which mounts it at SHAPE_BIN_COPY_PATH
 * (its own CONFIG_BUNDLE_PATH is the bundle image's). */
#define SHAPE_BIN_VOLUME    "hangar-bin"
#define SHAPE_BIN_CONTAINER "hangar-bin"
#define SHAPE_BIN_COPY_PATH "/mnt/hangar-bin"
/* The bundle's directory in the bundle image: an image volume's subPath. */
#define SHAPE_BIN_SUBPATH "opt/hangar"
/* The bundle is about 25 MB (docs/images.md); room for a larger build. */
#define SHAPE_BIN_SIZE_LIMIT "64Mi"
/* The driver's PATH where the binaries are delivered: the bundle's, then
 * the usual directories of an image (the image's own PATH is replaced). */
#define SHAPE_BIN_DRIVER_PATH \
        CONFIG_BUNDLE_PATH "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* What the webhook did to a pod: "injected" or "skipped", and a reason code. */
#define SHAPE_ANNOTATION_STATUS "hangar.dev/driver-sidecar"
#define SHAPE_ANNOTATION_REASON "hangar.dev/driver-sidecar-reason"
#define SHAPE_STATUS_INJECTED   "injected"
#define SHAPE_STATUS_SKIPPED    "skipped"

/* The pod's own name for its agent's container, in place of the cluster's
 * agentContainer: agent-sandbox's templates name their containers freely,
 * and copy the template's annotations to every pod they make. */
#define SHAPE_ANNOTATION_AGENT "hangar.dev/agent-container"
/* The container kubectl exec, logs and attach take without -c. */
#define SHAPE_ANNOTATION_DEFAULT_CONTAINER "kubectl.kubernetes.io/default-container"

typedef enum shape_role {
        SHAPE_ROLE_AGENT,          /* the sandbox container (config agentContainer) */
        SHAPE_ROLE_DRIVER,         /* hangar-driver */
        SHAPE_ROLE_OTHER,          /* every other container of spec.containers */
        SHAPE_ROLE_INIT_EPHEMERAL, /* init and ephemeral containers */
        SHAPE_ROLE_BIN_COPIER,     /* the init container hangar-bin (initContainer delivery) */
        SHAPE_ROLE_COUNT,
} shape_role_t;

typedef enum shape_volume {
        SHAPE_VOLUME_HOME, /* run scripts, logs, harness settings: driver writes, agent reads */
        SHAPE_VOLUME_CTL,  /* run key, token, approvals: the driver's alone, in memory */
        SHAPE_VOLUME_BIN,  /* the binaries, delivered: the copier writes, the rest read */
        SHAPE_VOLUME_COUNT,
} shape_volume_t;

typedef enum shape_access {
        SHAPE_ACCESS_ABSENT,       /* must not be mounted */
        SHAPE_ACCESS_READ_ONLY,    /* mounted, readOnly: true */
        SHAPE_ACCESS_READ_WRITE,   /* mounted, writable */
        SHAPE_ACCESS_UNCHECKED,    /* not part of the shape */
        SHAPE_ACCESS_NOT_WRITABLE, /* read-only or not mounted, either is fine */
} shape_access_t;

/* Who mounts which volume, and how: the heart of the split. */
shape_access_t shape_mount_access(shape_role_t role, shape_volume_t volume);
/* Whether a container that mounts a volume as have keeps to want. */
bool shape_access_allows(shape_access_t want, shape_access_t have);

/* The name of pod's agent container: its SHAPE_ANNOTATION_AGENT when it
 * has one, else cfg's agentContainer. NULL when the annotation is there but
 * is no container name (a string holding an RFC 1123 label). Whether such
 * a container exists is shape_agent_problem's question. */
const char *shape_agent_name(const hg_config_t *cfg, json_t *pod);
/* NULL when pod's agent (shape_agent_name) is one of its spec.containers
 * and not hangar-driver; else why the driver cannot run beside it, written
 * into buf (size bytes) and returned. The text names the setting that
 * chose the agent and nothing of the request, so a controller that retries
 * a refused CREATE sees the same message every time. */
const char *shape_agent_problem(const hg_config_t *cfg, json_t *pod, char *buf, size_t size);

/* Whether the shape has volume under cfg: hangar-bin only where the
 * binaries are delivered (driver.binaries.from initContainer). A volume not
 * in use is not hangar's: neither injected nor checked nor reserved. */
bool shape_volume_used(const hg_config_t *cfg, shape_volume_t volume);
/* Whether cfg delivers the binaries (hangar-bin at CONFIG_BUNDLE_PATH):
 * initContainer or imageVolume. */
bool shape_delivers_binaries(const hg_config_t *cfg);
/* Whether they are copied by the init container hangar-bin into a memory
 * volume (initContainer); with imageVolume hangar-bin is the bundle image
 * itself, mounted read-only (its opt/hangar), and nothing is copied. */
bool shape_copies_binaries(const hg_config_t *cfg);
/* Whether the webhook writes gVisor's mount hints for volume: the
 * emptyDirs it uses, not an image volume (which the shim leaves alone). */
bool shape_volume_hinted(const hg_config_t *cfg, shape_volume_t volume);

const char *shape_volume_name(shape_volume_t volume);
const char *shape_volume_path(const hg_config_t *cfg, shape_volume_t volume);
const char *shape_role_name(shape_role_t role);
const char *shape_access_name(shape_access_t access);

/* The annotations that tell gVisor's containerd shim how to mount a volume
 * (dev.gvisor.spec.mount.NAME.{share,type,options}): shared at pod level,
 * inside the sandbox (tmpfs for hangar-ctl's Memory emptyDir; for
 * hangar-home "bind", which the shim turns into the sandbox's own
 * disk-backed emptyDir). GKE Sandbox's admission sets these for every
 * emptyDir; the webhook sets them for hangar's two volumes on pods of a
 * gVisor RuntimeClass (gvisor.runtimeClassNames), so the shape holds on any
 * gVisor node. hangar-ctl's options carry its size (volumes.ctl.sizeLimit as
 * tmpfs size=BYTES): a sandbox-internal tmpfs is out of the kubelet's sight,
 * so its sizeLimit eviction never sees it fill. SHAPE_GVISOR_ANNOTATIONS
 * entries per volume; entry i's key in *ret_key, its value written into
 * value (size bytes). Returns 0, or -EINVAL / -ENAMETOOLONG. */
#define SHAPE_GVISOR_ANNOTATIONS 3
int shape_gvisor_annotation(const hg_config_t *cfg, shape_volume_t volume, unsigned i,
                            const char **ret_key, char *value, size_t size);

/* The pod volume entry ({name, emptyDir}). */
json_t *shape_volume_json(const hg_config_t *cfg, shape_volume_t volume);
/* The volumeMount entry a role gets for a volume; NULL for ABSENT/UNCHECKED. */
json_t *shape_mount_json(const hg_config_t *cfg, shape_role_t role, shape_volume_t volume);
/* The pod list hangar-driver is in: "initContainers" (a native sidecar,
 * driver.nativeSidecar) or "containers". */
const char *shape_driver_list(const hg_config_t *cfg);

/* The hangar-driver container, running the agent's image. */
json_t *shape_driver_container_json(const hg_config_t *cfg, const char *image);
/* The init container that copies the bundle into hangar-bin (only where
 * shape_copies_binaries): the bundle image, the driver's uid, no
 * capabilities, a read-only root, busybox's cp. NULL when not delivered
 * or out of memory (tell them apart with shape_delivers_binaries). */
json_t *shape_bin_container_json(const hg_config_t *cfg);

/* What the webhook adds to every pod it injects, built once for a
 * configuration, each with its JSON text (what jsondump writes for it), and
 * then shared by every pod it is added to instead of built again: about a
 * fifth of a review's work. Nothing may change these values (they are added
 * to pods as leaves, never patched into); jansson's reference counts are
 * atomic, so threads may share them. Build them outside a jsonarena window,
 * since they outlive any request. */
typedef struct shape_values {
        json_t *volume[SHAPE_VOLUME_COUNT];
        char *volume_text[SHAPE_VOLUME_COUNT];
        /* The agent's mounts; NULL where it mounts nothing. */
        json_t *agent_mount[SHAPE_VOLUME_COUNT];
        char *agent_mount_text[SHAPE_VOLUME_COUNT];
        /* The hangar-driver container's members after its image, in order,
         * and their text ("{...}"). */
        json_t *driver_rest;
        char *driver_rest_text;
        /* The bundle's init container; NULL where the binaries are the
         * agent image's. */
        json_t *bin_container;
        char *bin_container_text;
} shape_values_t;

int shape_values_new(const hg_config_t *cfg, shape_values_t **ret);
void shape_values_free(shape_values_t *sv);
/* shape_driver_container_json(cfg, image) sharing sv's constant members;
 * its text (what jsondump writes for it) is appended to text. */
json_t *shape_values_driver(const shape_values_t *sv, const char *image, strbuf_t *text);
