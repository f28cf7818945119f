/* The webhook's configuration: the sidecar's settings (common/conf/config.h:
 * the pod shape it injects) and its own, from the same YAML file and
 * environment: which pods (driverSidecar, selector), the doors after CREATE
 * (guard), its HTTPS server, log level, serving certificates (tls) and API
 * access (kubeconfig). Only hangar-webhook reads these; the file format is
 * docs/configuration.md. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

typedef struct webhook_settings {
        hg_config_t sidecar; /* the shape: driver, volumes, agent container, gVisor */

        /* injection (HANGAR_K8S_DRIVER_SIDECAR): off by default, as the design says */
        bool driver_sidecar;
        char *selector_key;
        char *selector_value;
        /* "In": the label has selector_value; "Exists": any value */
        char *selector_operator;

        /* the doors after CREATE (webhook/admit/guard.c): who may exec or attach
         * into hangar-driver and port-forward to an injected pod */
        strlist_t guard_driver_users;
        strlist_t guard_driver_groups;
        /* staged rollout (enforce.h): enforce, warn or audit, for the
         * guard's refusals and for injection conflicts */
        char *guard_enforcement;
        char *conflict_enforcement;

        /* the server */
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
        /* Who may hold connections, and how long (webhook/connguard.h). */
        uint32_t max_connections;            /* the client table */
        uint32_t reserved_connections;       /* more, for trusted sources only */
        uint32_t max_connections_per_client; /* 0 = no cap */
        uint32_t max_idle_per_client;
        uint32_t max_idle_connections;
        uint32_t header_timeout_seconds; /* accept to complete headers, TLS included */
        uint32_t client_connect_rate;    /* a second, per client source; 0 = no cap */
        strlist_t trusted_client_cidrs;  /* the API server's sources */
        uint32_t threads;                /* 0 = one per CPU */
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
        uint32_t tls_ca_overlap_seconds; /* 0: automatic (settings_ca_overlap_seconds) */
        char *kubeconfig;                /* "" = in-cluster credentials */
} webhook_settings_t;

#define SETTINGS_SELECTOR_IN      "In"
#define SETTINGS_SELECTOR_EXISTS  "Exists"

#define SETTINGS_TLS_FILES        "files"
#define SETTINGS_TLS_SELF_MANAGED "selfManaged"

/* Fills s with the defaults. */
int settings_init_defaults(webhook_settings_t *s);
/* Loads defaults, then path (NULL: no file), then the environment, then
 * validates. On error s is left freed and err says what and where. */
int settings_load(webhook_settings_t *s, const char *path, hg_error_t *err);
/* Applies a YAML document held in memory; name is used in messages. */
int settings_apply_yaml(webhook_settings_t *s, const char *name, const char *buf, size_t len,
                        hg_error_t *err);
int settings_apply_env(webhook_settings_t *s, hg_error_t *err);
/* One setting by its dotted key, as "key=value"; call settings_validate after. */
int settings_set(webhook_settings_t *s, const char *assignment, hg_error_t *err);
/* The sidecar's checks (config_validate), then the webhook's. */
int settings_validate(const webhook_settings_t *s, hg_error_t *err);
/* Whether any value of the selector label selects a pod (operator Exists). */
bool settings_selects_any_value(const webhook_settings_t *s);
void settings_free(webhook_settings_t *s);
/* Scoped: `_cleanup_settings_ webhook_settings_t cfg = {0};` frees on every return. */
static inline void settings_freep(webhook_settings_t *s)
{
        settings_free(s);
}
#define _cleanup_settings_ __attribute__((cleanup(settings_freep)))

/* How long old and new CA are both trusted at each step of a CA rotation:
 * tls.caOverlapSeconds, or when 0, ten rounds of tls.syncSeconds plus
 * server.certPollSeconds and at least 600. */
uint32_t settings_ca_overlap_seconds(const webhook_settings_t *s);

/* Every setting of the file (the sidecar's too) as YAML-compatible JSON, in
 * docs/configuration.md's order, for `hangar-webhook config`; malloc'd. */
char *settings_dump(const webhook_settings_t *s);

/* The top-level keys of the webhook's own rows, for the unit test that holds
 * them equal to config_webhook_keys: calls fn once per row. */
void settings_foreach_key(void (*fn)(const char *path, void *data), void *data);
