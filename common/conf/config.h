/* hangar-sidecar's configuration: one YAML file (libyaml) read at start, then
 * environment overrides, then validation. Every setting is a row of one table
 * in config.c (YAML path, environment variable, type, default, check), so the
 * docs, the chart's values and the loader cannot drift apart silently.
 * Bad configuration is an error naming the file, line and key; nothing is
 * half-applied. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef struct strlist {
        char **items;
        size_t n;
} strlist_t;

/* A probe's timing (Kubernetes' periodSeconds, timeoutSeconds,
 * failureThreshold; successThreshold is 1). */
typedef struct hg_probe_timing {
        uint32_t period_s;
        uint32_t timeout_s;
        uint32_t failures;
} hg_probe_timing_t;

typedef struct hg_config {
        /* injection (HANGAR_K8S_DRIVER_SIDECAR): off by default, as the design says */
        bool driver_sidecar;
        char *selector_key;
        char *selector_value;
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

        /* the two volumes */
        char *home_path;
        char *ctl_path;
        char *ctl_size_limit;

        /* the doors after CREATE (webhook/guard.c): who may exec or attach
         * into hangar-driver and port-forward to an injected pod */
        /* RuntimeClasses whose pods run under gVisor: they get the shim's
         * mount annotations for hangar's volumes (shape_gvisor_annotation) */
        strlist_t gvisor_runtime_classes;

        strlist_t guard_driver_users;
        strlist_t guard_driver_groups;

        /* the webhook's server */
        char *listen_address;
        uint32_t port;
        uint32_t health_port; /* 0 = no plain-HTTP health/metrics listener */
        char *cert_file;
        char *key_file;
        uint64_t max_body_bytes;
        uint32_t request_timeout_seconds;
        /* A kept-alive connection between reviews: longer than the API
         * server keeps an idle one (90 s), so it never sends on one we closed. */
        uint32_t idle_timeout_seconds;
        uint32_t threads; /* 0 = one per CPU */
        uint32_t cert_poll_seconds;
        char *log_level;

        /* serving certificates: "files" (certFile/keyFile, from a Secret
         * volume, cert-manager or the admin) or "selfManaged" (the webhook
         * keeps its CA and pair in a Secret and patches caBundle itself) */
        char *tls_mode;
        char *tls_secret_name;
        char *tls_secret_namespace;  /* "" = the pod's namespace */
        char *tls_webhook_config;    /* "" = do not patch a caBundle */
        char *tls_validating_config; /* "" = no ValidatingWebhookConfiguration to patch */
        char *tls_service_name;      /* "" = no Service DNS names */
        strlist_t tls_dns_names;
        strlist_t tls_ip_addresses;
        uint32_t tls_leaf_days;
        uint32_t tls_renew_before_days;
        uint32_t tls_ca_days;
        uint32_t tls_sync_seconds;
        uint32_t tls_ca_overlap_seconds; /* 0: automatic (config_ca_overlap_seconds) */
        char *kubeconfig;                /* "" = in-cluster credentials */
} hg_config_t;

#define CONFIG_TOKEN_KEEP       "keep"
#define CONFIG_TOKEN_REMOVE     "remove"

#define CONFIG_TLS_FILES        "files"
#define CONFIG_TLS_SELF_MANAGED "selfManaged"

/* Bound on the configuration file's size. */
#define CONFIG_MAX_FILE_BYTES (1024 * 1024)

/* Fills cfg with the defaults. */
int config_init_defaults(hg_config_t *cfg);
/* Loads defaults, then path (NULL: no file), then the environment, then
 * validates. On error cfg is left freed and err says what and where. */
int config_load(hg_config_t *cfg, const char *path, hg_error_t *err);
/* Applies a YAML document held in memory; name is used in messages. */
int config_apply_yaml(hg_config_t *cfg, const char *name, const char *buf, size_t len,
                      hg_error_t *err);
int config_apply_env(hg_config_t *cfg, hg_error_t *err);
/* How long old and new CA are both trusted at each step of a CA rotation:
 * tls.caOverlapSeconds, or when 0, ten rounds of tls.syncSeconds plus
 * server.certPollSeconds and at least 600. */
uint32_t config_ca_overlap_seconds(const hg_config_t *cfg);

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

/* Writes the effective configuration as YAML-compatible JSON lines for
 * `hangar-webhook config`; returns a malloc'd string. */
char *config_dump(const hg_config_t *cfg);
