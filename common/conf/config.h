/* The sidecar's settings: what hangar-driver, hangar-relay and hangar-probe
 * read, and what the pod shape (common/pod/shape.c) is built from: the
 * agent's container, the driver's uid, command, probes and resources, the
 * two volumes. One YAML file (libyaml) read at start, then environment
 * overrides, then validation; every setting is a row of one table in
 * config.c (conftable.h). The webhook's own settings (its server, TLS,
 * guard, selector) share the file but live in webhook/admit/settings.c: here they
 * are top-level keys skipped unread, and their environment variables are
 * never looked at. Bad configuration is an error naming the file, line and
 * key; nothing is half-applied. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conftable.h"
#include "error.h"
/* A probe's timing (Kubernetes' periodSeconds, timeoutSeconds,
 * failureThreshold; successThreshold is 1). */
typedef struct hg_probe_timing {
        uint32_t period_s;
        uint32_t timeout_s;
        uint32_t failures;
} hg_probe_timing_t;

typedef struct hg_config {
        /* the agent's container (the webhook's "which pods" is its own) */
        char *agent_container;
        /* "keep" or "remove": whether the agent's container keeps its mount
         * of the pod's service-account token (CONFIG_TOKEN_*) */
        char *agent_service_account_token;

        /* the driver sidecar */
        uint32_t driver_uid;
        uint32_t driver_gid;
        strlist_t driver_command;
        /* a native sidecar: in initContainers with restartPolicy Always, so a
         * Job's pod completes when its containers do (Kubernetes 1.29+) */
        bool driver_native_sidecar;
        /* exec probes ([driver.command[0], "ctl", "ping"]: the control
         * socket answers) as the container's startupProbe and livenessProbe */
        bool driver_probes;
        hg_probe_timing_t driver_startup;
        hg_probe_timing_t driver_liveness;
        char *driver_cpu_request;
        char *driver_memory_request;
        char *driver_cpu_limit;    /* "" = no limit */
        char *driver_memory_limit; /* "" = no limit */
        /* "auto" or "required" (CONFIG_CLONE_SAFETY_*): with required,
         * hangar-driver serve refuses to start without a restore watch
         * (driver/turn/restore.h), for clusters that restore clones of pods */
        char *driver_clone_safety;
        /* HANGAR_UID_SPLIT for hangar-driver serve: "off", "auto" or
         * "required" (split.h). The shape sets it in the driver's own
         * environment, where the agent's spec cannot reach it. */
        char *driver_uid_split;
        /* Where the driver's and relay's binaries come from
         * (CONFIG_BINARIES_*): the agent's own image (baked in, the .deb),
         * or hangar's bundle image copied by an init container into a
         * memory volume mounted read-only at /opt/hangar, or that image
         * mounted there as an image volume (shape.h) */
        char *driver_binaries_from;
        /* the bundle image (localhost/hangar-bin:VERSION) for both */
        char *driver_bundle_image;

        /* the two volumes */
        char *home_path;
        char *ctl_path;
        char *ctl_size_limit;

        /* RuntimeClasses whose pods run under gVisor: they get the shim's
         * mount annotations for hangar's volumes (shape_gvisor_annotation) */
        strlist_t gvisor_runtime_classes;
} hg_config_t;

#define CONFIG_TOKEN_KEEP              "keep"
#define CONFIG_TOKEN_REMOVE            "remove"

#define CONFIG_CLONE_SAFETY_AUTO       "auto"
#define CONFIG_CLONE_SAFETY_REQUIRED   "required"

#define CONFIG_BINARIES_AGENT_IMAGE    "agentImage"
#define CONFIG_BINARIES_INIT_CONTAINER "initContainer"
#define CONFIG_BINARIES_IMAGE_VOLUME   "imageVolume"
/* Where the bundle is mounted: its loader and RPATH are absolute paths
 * under it (scripts/images/bundle.sh), so it is no setting. */
#define CONFIG_BUNDLE_PATH       "/opt/hangar"

#define CONFIG_UID_SPLIT_DEFAULT "auto" /* split_mode_name(SPLIT_MODE_DEFAULT) */

/* Bound on the configuration file's size. */
#define CONFIG_MAX_FILE_BYTES CONF_MAX_FILE_BYTES

/* The file's top-level keys that are the webhook's (webhook/admit/settings.c),
 * NULL-terminated: the sidecar's loader accepts them without reading them. */
extern const char *const config_webhook_keys[];
/* The sidecar's table alone, bound to cfg (for a reader that adds its own
 * tables to the same file: webhook/admit/settings.c). */
conf_part_t config_part(hg_config_t *cfg);

/* Fills cfg with the defaults. */
int config_init_defaults(hg_config_t *cfg);
/* Loads defaults, then path (NULL: no file), then the environment, then
 * validates. On error cfg is left freed and err says what and where. */
int config_load(hg_config_t *cfg, const char *path, hg_error_t *err);
/* Applies a YAML document held in memory; name is used in messages. */
int config_apply_yaml(hg_config_t *cfg, const char *name, const char *buf, size_t len,
                      hg_error_t *err);
int config_apply_env(hg_config_t *cfg, hg_error_t *err);
/* One setting by its dotted key, as "key=value" (a command line's --set):
 * parsed and bounded exactly as its environment variable is. Call
 * config_validate afterwards. */
int config_set(hg_config_t *cfg, const char *assignment, hg_error_t *err);
int config_validate(const hg_config_t *cfg, hg_error_t *err);
void config_free(hg_config_t *cfg);
/* Scoped: `_cleanup_config_ hg_config_t cfg = {0};` frees on every return. */
static inline void config_freep(hg_config_t *cfg)
{
        config_free(cfg);
}
#define _cleanup_config_ __attribute__((cleanup(config_freep)))

/* The sidecar's effective settings as YAML-compatible JSON; malloc'd. */
char *config_dump(const hg_config_t *cfg);
