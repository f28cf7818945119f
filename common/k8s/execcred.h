/* Kubernetes client credential plugins (client-go's exec protocol,
 * client.authentication.k8s.io/v1 and v1beta1): the `user.exec` stanza of a
 * kubeconfig, the KUBERNETES_EXEC_INFO input the plugin reads, running the
 * plugin (fork/exec, no shell, a timeout, stdout bounded, stderr kept for the
 * message) and reading the ExecCredential it prints. GKE's kubeconfigs name
 * gke-gcloud-auth-plugin this way; EKS and AKS have their own plugins.
 *
 * We never have a terminal to hand a plugin: spec.interactive is always
 * false, interactiveMode Always is refused and IfAvailable runs without one,
 * the plugin's stdin is /dev/null. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "error.h"

#define EXECCRED_API_V1      "client.authentication.k8s.io/v1"
#define EXECCRED_API_V1BETA1 "client.authentication.k8s.io/v1beta1"
#define EXECCRED_KIND        "ExecCredential"
#define EXECCRED_ENV_INFO    "KUBERNETES_EXEC_INFO"

/* A plugin printing more than this on stdout is cut off (a token or a
 * certificate pair is a few KiB); the first EXECCRED_STDERR_KEEP bytes of its
 * stderr go into the message when it fails. */
#define EXECCRED_MAX_OUTPUT  (1024 * 1024)
#define EXECCRED_STDERR_KEEP 4096
#define EXECCRED_MAX_ARGS    256 /* args, and env entries */
/* How long a plugin may run (gke-gcloud-auth-plugin takes about a second;
 * one that refreshes a cloud login takes a few). */
#define EXECCRED_TIMEOUT_MS 60000

typedef enum execcred_interactive {
        EXECCRED_INTERACTIVE_NEVER,
        EXECCRED_INTERACTIVE_IF_AVAILABLE,
        EXECCRED_INTERACTIVE_ALWAYS,
} execcred_interactive_t;

/* The user.exec stanza, checked. */
typedef struct execcred_config {
        char *command;      /* as written; resolved against the kubeconfig if it has a '/' */
        char **args;        /* NULL-terminated argv[1..] */
        char **env;         /* NULL-terminated NAME=VALUE, added to the environment */
        char *api_version;  /* EXECCRED_API_V1 or EXECCRED_API_V1BETA1 */
        char *install_hint; /* shown when the command is not found (may be NULL) */
        execcred_interactive_t interactive;
        bool provide_cluster_info;
} execcred_config_t;

/* What a plugin answered. */
typedef struct execcred {
        char *token;    /* status.token (may be NULL when a certificate pair is given) */
        char *cert_pem; /* status.clientCertificateData (with key_pem, or neither) */
        char *key_pem;  /* status.clientKeyData */
        time_t expiry;  /* status.expirationTimestamp; 0: none (valid until a 401) */
} execcred_t;

/* Reads a user.exec object. A relative command with a '/' in it is resolved
 * against dir (the kubeconfig's directory, as client-go resolves it); a bare
 * name is looked up on PATH when the plugin runs. Refuses: no command or
 * apiVersion, an apiVersion other than v1/v1beta1, v1 without
 * interactiveMode, interactiveMode Always (no terminal here), members of the
 * wrong type. */
int execcred_config_parse(json_t *exec, const char *dir, execcred_config_t *ret, hg_error_t *err);
void execcred_config_free(execcred_config_t *cfg);

/* The KUBERNETES_EXEC_INFO value: {apiVersion, kind: ExecCredential,
 * spec: {interactive: false[, cluster]}}, the cluster (built by the caller
 * with its server, certificate-authority-data, ...) only when the stanza
 * says provideClusterInfo. A new string. */
char *execcred_exec_info(const execcred_config_t *cfg, json_t *cluster);

/* Parses a plugin's stdout: an ExecCredential of exactly api_version, with a
 * status holding a token and/or a client certificate and key (both or
 * neither) and an optional RFC 3339 expirationTimestamp, which must be after
 * now. Unknown members are ignored, as client-go ignores them. */
int execcred_parse(const char *buf, size_t len, const char *api_version, time_t now,
                   execcred_t *ret, hg_error_t *err);
void execcred_clear(execcred_t *c); /* zeroes and frees the secrets */

/* An RFC 3339 timestamp ("2026-01-02T03:04:05Z", fractions and offsets
 * allowed) as seconds since the epoch. */
int execcred_parse_time(const char *s, time_t *ret);

/* Runs the plugin with exec_info in KUBERNETES_EXEC_INFO, waits at most
 * timeout_ms, and parses what it printed (against time(NULL)). Errors name
 * the plugin and carry its exit status and a cleaned excerpt of its stderr. */
int execcred_run(const execcred_config_t *cfg, const char *exec_info, int timeout_ms,
                 execcred_t *ret, hg_error_t *err);
