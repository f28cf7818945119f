#include "settings.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cidr.h"
#include "cleanup.h"
#include "conftable.h"
#include "enforce.h"
#include "k8sname.h"
#include "log.h"

static bool is_log_level(const char *s)
{
        log_level_t l;
        return log_parse_level(s, &l) == 0;
}

static bool is_ip_address(const char *s)
{
        unsigned char buf[sizeof(struct in6_addr)];
        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static bool is_any_path(const char *s)
{
        return s[0] != '\0';
}

static bool is_any_text(const char *s)
{
        return s != NULL;
}

static bool is_tls_mode(const char *s)
{
        return strcmp(s, SETTINGS_TLS_FILES) == 0 || strcmp(s, SETTINGS_TLS_SELF_MANAGED) == 0;
}

static bool is_selector_operator(const char *s)
{
        return strcmp(s, SETTINGS_SELECTOR_IN) == 0 || strcmp(s, SETTINGS_SELECTOR_EXISTS) == 0;
}

bool settings_selects_any_value(const webhook_settings_t *s)
{
        return strcmp(s->selector_operator, SETTINGS_SELECTOR_EXISTS) == 0;
}

static bool is_dns_subdomain(const char *s)
{
        return k8s_is_dns1123_subdomain(s);
}

static bool is_subdomain_or_empty(const char *s)
{
        return s[0] == '\0' || k8s_is_dns1123_subdomain(s);
}

static bool is_label_or_empty(const char *s)
{
        return s[0] == '\0' || k8s_is_dns1123_label(s);
}

#define OFF(field) offsetof(webhook_settings_t, field)

/* The webhook's rows, in two tables so that `hangar-webhook config` keeps
 * docs/configuration.md's order around the sidecar's (config.c). Keep the
 * docs and charts/ in step with them. */
static const conf_setting_t injection[] = {
    {"driverSidecar", "HANGAR_K8S_DRIVER_SIDECAR", CONF_BOOL, OFF(driver_sidecar), "false", 0, 0,
     NULL, "true or false"},
    {"selector.key", "HANGAR_SELECTOR_KEY", CONF_STRING, OFF(selector_key), "hangar.dev/sandbox", 0,
     0, k8s_is_qualified_name, "a label key like hangar.dev/sandbox"},
    {"selector.value", "HANGAR_SELECTOR_VALUE", CONF_STRING, OFF(selector_value), "true", 0, 0,
     k8s_is_label_value, "a label value"},
    {"selector.operator", "HANGAR_SELECTOR_OPERATOR", CONF_STRING, OFF(selector_operator),
     SETTINGS_SELECTOR_IN, 0, 0, is_selector_operator, "In or Exists"},
    {"conflictEnforcement", "HANGAR_CONFLICT_ENFORCEMENT", CONF_STRING, OFF(conflict_enforcement),
     "enforce", 0, 0, enforcement_is_name, ENFORCEMENT_NAMES},
};

static const conf_setting_t server[] = {
    {"guard.driverUsers", "HANGAR_GUARD_DRIVER_USERS", CONF_STRLIST, OFF(guard_driver_users), "[]",
     0, 64, NULL, "a list of user names (system:serviceaccount:NS:NAME)"},
    {"guard.driverGroups", "HANGAR_GUARD_DRIVER_GROUPS", CONF_STRLIST, OFF(guard_driver_groups),
     "[]", 0, 64, NULL, "a list of group names"},
    {"guard.enforcement", "HANGAR_GUARD_ENFORCEMENT", CONF_STRING, OFF(guard_enforcement),
     "enforce", 0, 0, enforcement_is_name, ENFORCEMENT_NAMES},
    {"server.address", "HANGAR_LISTEN_ADDRESS", CONF_STRING, OFF(listen_address), "0.0.0.0", 0, 0,
     is_ip_address, "an IPv4 or IPv6 address"},
    {"server.port", "HANGAR_PORT", CONF_U32, OFF(port), "8443", 0, 65535, NULL,
     "a TCP port (0 picks a free one)"},
    {"server.healthPort", "HANGAR_HEALTH_PORT", CONF_U32, OFF(health_port), "0", 0, 65535, NULL,
     "a TCP port, or 0 for none"},
    {"server.certFile", "HANGAR_TLS_CERT_FILE", CONF_STRING, OFF(cert_file),
     "/etc/hangar-webhook/tls/tls.crt", 0, 0, is_any_path, "a file path"},
    {"server.keyFile", "HANGAR_TLS_KEY_FILE", CONF_STRING, OFF(key_file),
     "/etc/hangar-webhook/tls/tls.key", 0, 0, is_any_path, "a file path"},
    {"server.maxBodyBytes", "HANGAR_MAX_BODY_BYTES", CONF_U64, OFF(max_body_bytes), "3145728", 4096,
     64 * 1024 * 1024, NULL, "a size in bytes from 4096 to 67108864"},
    {"server.requestTimeoutSeconds", "HANGAR_REQUEST_TIMEOUT_SECONDS", CONF_U32,
     OFF(request_timeout_seconds), "10", 1, 300, NULL, "seconds from 1 to 300"},
    {"server.idleTimeoutSeconds", "HANGAR_IDLE_TIMEOUT_SECONDS", CONF_U32,
     OFF(idle_timeout_seconds), "120", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"server.maxConnections", "HANGAR_MAX_CONNECTIONS", CONF_U32, OFF(max_connections), "512", 1,
     16384, NULL, "connections from 1 to 16384"},
    {"server.reservedConnections", "HANGAR_RESERVED_CONNECTIONS", CONF_U32,
     OFF(reserved_connections), "64", 0, 4096, NULL, "connections from 0 to 4096"},
    {"server.maxConnectionsPerClient", "HANGAR_MAX_CONNECTIONS_PER_CLIENT", CONF_U32,
     OFF(max_connections_per_client), "128", 0, 16384, NULL,
     "connections from 0 (no cap) to 16384"},
    {"server.maxIdlePerClient", "HANGAR_MAX_IDLE_PER_CLIENT", CONF_U32, OFF(max_idle_per_client),
     "64", 0, 16384, NULL, "connections from 0 to 16384"},
    {"server.maxIdleConnections", "HANGAR_MAX_IDLE_CONNECTIONS", CONF_U32,
     OFF(max_idle_connections), "256", 0, 16384, NULL, "connections from 0 to 16384"},
    {"server.headerTimeoutSeconds", "HANGAR_HEADER_TIMEOUT_SECONDS", CONF_U32,
     OFF(header_timeout_seconds), "5", 1, 300, NULL, "seconds from 1 to 300"},
    {"server.clientConnectRate", "HANGAR_CLIENT_CONNECT_RATE", CONF_U32, OFF(client_connect_rate),
     "500", 0, 100000, NULL, "connections a second from 0 (no cap) to 100000"},
    {"server.trustedClientCIDRs", "HANGAR_TRUSTED_CLIENT_CIDRS", CONF_STRLIST,
     OFF(trusted_client_cidrs), "[]", 0, 64, NULL, "a list of CIDRs like 10.0.0.0/8"},
    {"server.threads", "HANGAR_THREADS", CONF_U32, OFF(threads), "0", 0, 256, NULL,
     "0 (one per CPU) to 256"},
    {"server.certPollSeconds", "HANGAR_CERT_POLL_SECONDS", CONF_U32, OFF(cert_poll_seconds), "2", 1,
     3600, NULL, "seconds from 1 to 3600"},
    {"logLevel", "HANGAR_LOG_LEVEL", CONF_STRING, OFF(log_level), "info", 0, 0, is_log_level,
     "debug, info, warn or error"},
    {"tls.mode", "HANGAR_TLS_MODE", CONF_STRING, OFF(tls_mode), SETTINGS_TLS_FILES, 0, 0,
     is_tls_mode, "files or selfManaged"},
    {"tls.secretName", "HANGAR_TLS_SECRET_NAME", CONF_STRING, OFF(tls_secret_name),
     "hangar-webhook-tls", 0, 0, is_dns_subdomain, "a Secret name"},
    {"tls.secretNamespace", "HANGAR_TLS_SECRET_NAMESPACE", CONF_STRING, OFF(tls_secret_namespace),
     "", 0, 0, is_label_or_empty, "a namespace, or \"\" for the pod's own"},
    {"tls.webhookConfigName", "HANGAR_TLS_WEBHOOK_CONFIG", CONF_STRING, OFF(tls_webhook_config), "",
     0, 0, is_subdomain_or_empty, "a MutatingWebhookConfiguration name, or \"\""},
    {"tls.validatingWebhookConfigName", "HANGAR_TLS_VALIDATING_WEBHOOK_CONFIG", CONF_STRING,
     OFF(tls_validating_config), "", 0, 0, is_subdomain_or_empty,
     "a ValidatingWebhookConfiguration name, or \"\""},
    {"tls.serviceName", "HANGAR_TLS_SERVICE_NAME", CONF_STRING, OFF(tls_service_name), "", 0, 0,
     is_label_or_empty, "a Service name, or \"\""},
    {"tls.dnsNames", "HANGAR_TLS_DNS_NAMES", CONF_STRLIST, OFF(tls_dns_names), "[]", 0, 32, NULL,
     "a list of DNS names"},
    {"tls.ipAddresses", "HANGAR_TLS_IP_ADDRESSES", CONF_STRLIST, OFF(tls_ip_addresses), "[]", 0, 32,
     NULL, "a list of IP addresses"},
    {"tls.leafDays", "HANGAR_TLS_LEAF_DAYS", CONF_U32, OFF(tls_leaf_days), "90", 1, 3650, NULL,
     "days from 1 to 3650"},
    {"tls.renewBeforeDays", "HANGAR_TLS_RENEW_BEFORE_DAYS", CONF_U32, OFF(tls_renew_before_days),
     "30", 0, 3649, NULL, "days from 0 to 3649"},
    {"tls.caDays", "HANGAR_TLS_CA_DAYS", CONF_U32, OFF(tls_ca_days), "3650", 1, 36500, NULL,
     "days from 1 to 36500"},
    {"tls.syncSeconds", "HANGAR_TLS_SYNC_SECONDS", CONF_U32, OFF(tls_sync_seconds), "60", 1, 86400,
     NULL, "seconds from 1 to 86400"},
    {"tls.caOverlapSeconds", "HANGAR_TLS_CA_OVERLAP_SECONDS", CONF_U32, OFF(tls_ca_overlap_seconds),
     "0", 0, 604800, NULL, "seconds from 0 (automatic) to 604800"},
    {"kubeconfig", "HANGAR_KUBECONFIG", CONF_STRING, OFF(kubeconfig), "", 0, 0, is_any_text,
     "a kubeconfig path, or \"\" for in-cluster credentials"},
};

/* The whole file as the webhook reads it: no key is another binary's. */
#define WEBHOOK_TABLE(s)                                           \
        const conf_part_t parts_[] = {                             \
            {injection, ARRAY_SIZE(injection), (s), sizeof(*(s))}, \
            config_part(&(s)->sidecar),                            \
            {server, ARRAY_SIZE(server), (s), sizeof(*(s))},       \
        };                                                         \
        const conftable_t table_ = {parts_, ARRAY_SIZE(parts_), NULL}

int settings_init_defaults(webhook_settings_t *s)
{
        WEBHOOK_TABLE(s);
        return conftable_init_defaults(&table_);
}

void settings_free(webhook_settings_t *s)
{
        WEBHOOK_TABLE(s);
        conftable_free(&table_);
}

int settings_apply_yaml(webhook_settings_t *s, const char *name, const char *buf, size_t len,
                        hg_error_t *err)
{
        WEBHOOK_TABLE(s);
        return conftable_apply_yaml(&table_, name, buf, len, err);
}

int settings_apply_env(webhook_settings_t *s, hg_error_t *err)
{
        WEBHOOK_TABLE(s);
        return conftable_apply_env(&table_, err);
}

int settings_set(webhook_settings_t *s, const char *assignment, hg_error_t *err)
{
        WEBHOOK_TABLE(s);
        return conftable_set(&table_, assignment, err);
}

uint32_t settings_ca_overlap_seconds(const webhook_settings_t *s)
{
        if (s->tls_ca_overlap_seconds)
                return s->tls_ca_overlap_seconds;
        /* Automatic: ten sync rounds (with their reloads), at least ten minutes. */
        uint64_t ten_rounds = 10 * ((uint64_t)s->tls_sync_seconds + s->cert_poll_seconds);
        return ten_rounds > 600 ? (uint32_t)(ten_rounds < 604800 ? ten_rounds : 604800) : 600;
}

/* Names the API server gives everyone of a kind: listed in guard.*, they
 * would open the driver's doors to every user, every anonymous request or
 * every service account in the cluster. */
static const char *const everyone[] = {"system:authenticated", "system:unauthenticated",
                                       "system:serviceaccounts", "system:anonymous"};

/* A guard list's names: each one exact (no empty name, which an empty
 * username would match, no blank around it, which would never match) and
 * none of everyone's. */
static int check_guard_names(const char *key, const strlist_t *l, hg_error_t *err)
{
        for (size_t i = 0; i < l->n; i++) {
                const char *name = l->items[i];
                size_t n = strlen(name);
                if (n == 0 || isspace((unsigned char)name[0]) ||
                    isspace((unsigned char)name[n - 1]))
                        return error_set(err, -EINVAL,
                                         "%s: '%s' is not a name (empty, or blank around it)", key,
                                         name);
                for (size_t k = 0; k < ARRAY_SIZE(everyone); k++)
                        if (strcmp(name, everyone[k]) == 0)
                                return error_set(err, -EINVAL,
                                                 "%s: '%s' names everyone of a kind; it would "
                                                 "open hangar-driver to all of them",
                                                 key, name);
        }
        return 0;
}

/* The connection table's settings (webhook/connguard.h), against each other. */
static int check_connection_limits(const webhook_settings_t *s, hg_error_t *err)
{
        if (s->max_idle_connections > s->max_connections)
                return error_set(err, -EINVAL,
                                 "server.maxIdleConnections (%u) must not exceed "
                                 "server.maxConnections (%u)",
                                 s->max_idle_connections, s->max_connections);
        for (size_t i = 0; i < s->trusted_client_cidrs.n; i++) {
                cidr_t c;
                if (cidr_parse(s->trusted_client_cidrs.items[i], &c) < 0)
                        return error_set(err, -EINVAL,
                                         "server.trustedClientCIDRs: '%s' is not a CIDR like "
                                         "10.0.0.0/8 (no host bits set) or an address",
                                         s->trusted_client_cidrs.items[i]);
        }
        return 0;
}

int settings_validate(const webhook_settings_t *s, hg_error_t *err)
{
        int r = config_validate(&s->sidecar, err);
        if (r < 0)
                return r;
        r = check_guard_names("guard.driverUsers", &s->guard_driver_users, err);
        if (r < 0)
                return r;
        r = check_guard_names("guard.driverGroups", &s->guard_driver_groups, err);
        if (r < 0)
                return r;
        if (s->health_port != 0 && s->health_port == s->port)
                return error_set(err, -EINVAL, "server.healthPort must differ from server.port");
        r = check_connection_limits(s, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->tls_dns_names.n; i++)
                if (!k8s_is_dns1123_subdomain(s->tls_dns_names.items[i]))
                        return error_set(err, -EINVAL, "tls.dnsNames: '%s' is not a DNS name",
                                         s->tls_dns_names.items[i]);
        for (size_t i = 0; i < s->tls_ip_addresses.n; i++)
                if (!is_ip_address(s->tls_ip_addresses.items[i]))
                        return error_set(err, -EINVAL, "tls.ipAddresses: '%s' is not an IP address",
                                         s->tls_ip_addresses.items[i]);
        if (s->tls_renew_before_days >= s->tls_leaf_days)
                return error_set(err, -EINVAL,
                                 "tls.renewBeforeDays (%u) must be less than tls.leafDays (%u)",
                                 s->tls_renew_before_days, s->tls_leaf_days);
        /* A new CA must not be due for rotation the day it is made. */
        if (s->tls_ca_days <= s->tls_renew_before_days)
                return error_set(err, -EINVAL,
                                 "tls.caDays (%u) must be more than tls.renewBeforeDays (%u)",
                                 s->tls_ca_days, s->tls_renew_before_days);
        /* A CA rotation drops the old CA from caBundle one overlap after
         * the switch: every replica must have synced (and its server
         * reloaded) by then. */
        if (s->tls_ca_overlap_seconds != 0 &&
            s->tls_ca_overlap_seconds <= s->tls_sync_seconds + s->cert_poll_seconds)
                return error_set(err, -EINVAL,
                                 "tls.caOverlapSeconds (%u) must be more than tls.syncSeconds (%u) "
                                 "plus server.certPollSeconds (%u)",
                                 s->tls_ca_overlap_seconds, s->tls_sync_seconds,
                                 s->cert_poll_seconds);
        if (strcmp(s->tls_mode, SETTINGS_TLS_SELF_MANAGED) == 0 && !s->tls_service_name[0] &&
            s->tls_dns_names.n == 0 && s->tls_ip_addresses.n == 0)
                return error_set(err, -EINVAL,
                                 "tls.mode selfManaged needs tls.serviceName, tls.dnsNames or "
                                 "tls.ipAddresses for the certificate's names");
        return 0;
}

int settings_load(webhook_settings_t *s, const char *path, hg_error_t *err)
{
        WEBHOOK_TABLE(s);
        int r = conftable_load(&table_, path, err);
        if (r == 0)
                r = settings_validate(s, err);
        if (r < 0)
                settings_free(s);
        return r;
}

char *settings_dump(const webhook_settings_t *s)
{
        /* conftable_dump only reads through the parts' pointers. */
        webhook_settings_t *w = (webhook_settings_t *)s;
        WEBHOOK_TABLE(w);
        return conftable_dump(&table_);
}

void settings_foreach_key(void (*fn)(const char *path, void *data), void *data)
{
        for (size_t i = 0; i < ARRAY_SIZE(injection); i++)
                fn(injection[i].path, data);
        for (size_t i = 0; i < ARRAY_SIZE(server); i++)
                fn(server[i].path, data);
}
