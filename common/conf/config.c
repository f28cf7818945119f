#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "fileio.h"
#include "jsondump.h"
#include "jsonx.h"
#include "k8sname.h"
#include "log.h"
#include "pathnorm.h"
#include "strparse.h"
#include "yamldoc.h"

typedef enum setting_type {
        SETTING_BOOL,
        SETTING_U32,
        SETTING_U64,
        SETTING_STRING,
        SETTING_STRLIST,
} setting_type_t;

typedef bool (*string_check_fn)(const char *s);

typedef struct setting {
        const char *path; /* dotted YAML path */
        const char *env;  /* environment override */
        setting_type_t type;
        size_t offset;
        const char *default_value; /* text, parsed like the environment's */
        uint64_t min, max;         /* numbers */
        string_check_fn check;     /* strings: NULL = any non-empty */
        const char *expected;      /* what a good value looks like, for messages */
} setting_t;

static bool is_absolute_path(const char *s)
{
        return pathnorm_is_canonical(s);
}

static bool is_quantity_or_empty(const char *s)
{
        return s[0] == '\0' || k8s_is_quantity(s);
}

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

static bool is_token_choice(const char *s)
{
        return strcmp(s, CONFIG_TOKEN_KEEP) == 0 || strcmp(s, CONFIG_TOKEN_REMOVE) == 0;
}

static bool is_tls_mode(const char *s)
{
        return strcmp(s, CONFIG_TLS_FILES) == 0 || strcmp(s, CONFIG_TLS_SELF_MANAGED) == 0;
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

#define OFF(field) offsetof(hg_config_t, field)

/* The table. Keep docs/configuration.md and charts/ in step with it. */
static const setting_t settings[] = {
    {"driverSidecar", "HANGAR_K8S_DRIVER_SIDECAR", SETTING_BOOL, OFF(driver_sidecar), "false", 0, 0,
     NULL, "true or false"},
    {"selector.key", "HANGAR_SELECTOR_KEY", SETTING_STRING, OFF(selector_key), "hangar.dev/sandbox",
     0, 0, k8s_is_qualified_name, "a label key like hangar.dev/sandbox"},
    {"selector.value", "HANGAR_SELECTOR_VALUE", SETTING_STRING, OFF(selector_value), "true", 0, 0,
     k8s_is_label_value, "a label value"},
    {"agentContainer", "HANGAR_AGENT_CONTAINER", SETTING_STRING, OFF(agent_container), "sandbox", 0,
     0, k8s_is_dns1123_label, "a container name (RFC 1123 label)"},
    {"agentServiceAccountToken", "HANGAR_AGENT_SERVICE_ACCOUNT_TOKEN", SETTING_STRING,
     OFF(agent_service_account_token), CONFIG_TOKEN_KEEP, 0, 0, is_token_choice, "keep or remove"},
    {"driver.uid", "HANGAR_DRIVER_UID", SETTING_U32, OFF(driver_uid), "1001", 1, 2147483647, NULL,
     "a uid from 1 to 2147483647 (never root)"},
    {"driver.gid", "HANGAR_DRIVER_GID", SETTING_U32, OFF(driver_gid), "1001", 1, 2147483647, NULL,
     "a gid from 1 to 2147483647 (never root)"},
    {"driver.command", "HANGAR_DRIVER_COMMAND", SETTING_STRLIST, OFF(driver_command),
     "[\"hangar-driver\", \"serve\"]", 1, 64, NULL, "a non-empty list of strings"},
    {"driver.probes.enabled", "HANGAR_DRIVER_PROBES", SETTING_BOOL, OFF(driver_probes), "true", 0,
     0, NULL, "true or false"},
    {"driver.probes.startup.periodSeconds", "HANGAR_DRIVER_STARTUP_PERIOD", SETTING_U32,
     OFF(driver_startup.period_s), "1", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"driver.probes.startup.timeoutSeconds", "HANGAR_DRIVER_STARTUP_TIMEOUT", SETTING_U32,
     OFF(driver_startup.timeout_s), "5", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"driver.probes.startup.failureThreshold", "HANGAR_DRIVER_STARTUP_FAILURES", SETTING_U32,
     OFF(driver_startup.failures), "60", 1, 10000, NULL, "a count from 1 to 10000"},
    {"driver.probes.liveness.periodSeconds", "HANGAR_DRIVER_LIVENESS_PERIOD", SETTING_U32,
     OFF(driver_liveness.period_s), "10", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"driver.probes.liveness.timeoutSeconds", "HANGAR_DRIVER_LIVENESS_TIMEOUT", SETTING_U32,
     OFF(driver_liveness.timeout_s), "5", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"driver.probes.liveness.failureThreshold", "HANGAR_DRIVER_LIVENESS_FAILURES", SETTING_U32,
     OFF(driver_liveness.failures), "3", 1, 10000, NULL, "a count from 1 to 10000"},
    {"driver.nativeSidecar", "HANGAR_DRIVER_NATIVE_SIDECAR", SETTING_BOOL,
     OFF(driver_native_sidecar), "false", 0, 0, NULL, "true or false"},
    {"driver.resources.requests.cpu", "HANGAR_DRIVER_CPU_REQUEST", SETTING_STRING,
     OFF(driver_cpu_request), "50m", 0, 0, k8s_is_quantity, "a quantity like 50m"},
    {"driver.resources.requests.memory", "HANGAR_DRIVER_MEMORY_REQUEST", SETTING_STRING,
     OFF(driver_memory_request), "64Mi", 0, 0, k8s_is_quantity, "a quantity like 64Mi"},
    {"driver.resources.limits.cpu", "HANGAR_DRIVER_CPU_LIMIT", SETTING_STRING,
     OFF(driver_cpu_limit), "", 0, 0, is_quantity_or_empty, "a quantity, or \"\" for none"},
    {"driver.resources.limits.memory", "HANGAR_DRIVER_MEMORY_LIMIT", SETTING_STRING,
     OFF(driver_memory_limit), "", 0, 0, is_quantity_or_empty, "a quantity, or \"\" for none"},
    {"volumes.home.mountPath", "HANGAR_HOME_PATH", SETTING_STRING, OFF(home_path),
     "/var/lib/hangar", 0, 0, is_absolute_path, "a normalized absolute path"},
    {"volumes.ctl.mountPath", "HANGAR_CTL_PATH", SETTING_STRING, OFF(ctl_path),
     "/var/lib/hangar-ctl", 0, 0, is_absolute_path, "a normalized absolute path"},
    {"volumes.ctl.sizeLimit", "HANGAR_CTL_SIZE_LIMIT", SETTING_STRING, OFF(ctl_size_limit), "64Mi",
     0, 0, k8s_is_quantity, "a quantity like 64Mi"},
    {"gvisor.runtimeClassNames", "HANGAR_GVISOR_RUNTIME_CLASSES", SETTING_STRLIST,
     OFF(gvisor_runtime_classes), "[\"gvisor\"]", 0, 16, NULL, "a list of RuntimeClass names"},
    {"guard.driverUsers", "HANGAR_GUARD_DRIVER_USERS", SETTING_STRLIST, OFF(guard_driver_users),
     "[]", 0, 64, NULL, "a list of user names (system:serviceaccount:NS:NAME)"},
    {"guard.driverGroups", "HANGAR_GUARD_DRIVER_GROUPS", SETTING_STRLIST, OFF(guard_driver_groups),
     "[]", 0, 64, NULL, "a list of group names"},
    {"server.address", "HANGAR_LISTEN_ADDRESS", SETTING_STRING, OFF(listen_address), "0.0.0.0", 0,
     0, is_ip_address, "an IPv4 or IPv6 address"},
    {"server.port", "HANGAR_PORT", SETTING_U32, OFF(port), "8443", 0, 65535, NULL,
     "a TCP port (0 picks a free one)"},
    {"server.healthPort", "HANGAR_HEALTH_PORT", SETTING_U32, OFF(health_port), "0", 0, 65535, NULL,
     "a TCP port, or 0 for none"},
    {"server.certFile", "HANGAR_TLS_CERT_FILE", SETTING_STRING, OFF(cert_file),
     "/etc/hangar-webhook/tls/tls.crt", 0, 0, is_any_path, "a file path"},
    {"server.keyFile", "HANGAR_TLS_KEY_FILE", SETTING_STRING, OFF(key_file),
     "/etc/hangar-webhook/tls/tls.key", 0, 0, is_any_path, "a file path"},
    {"server.maxBodyBytes", "HANGAR_MAX_BODY_BYTES", SETTING_U64, OFF(max_body_bytes), "3145728",
     4096, 64 * 1024 * 1024, NULL, "a size in bytes from 4096 to 67108864"},
    {"server.requestTimeoutSeconds", "HANGAR_REQUEST_TIMEOUT_SECONDS", SETTING_U32,
     OFF(request_timeout_seconds), "10", 1, 300, NULL, "seconds from 1 to 300"},
    {"server.idleTimeoutSeconds", "HANGAR_IDLE_TIMEOUT_SECONDS", SETTING_U32,
     OFF(idle_timeout_seconds), "120", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"server.threads", "HANGAR_THREADS", SETTING_U32, OFF(threads), "0", 0, 256, NULL,
     "0 (one per CPU) to 256"},
    {"server.certPollSeconds", "HANGAR_CERT_POLL_SECONDS", SETTING_U32, OFF(cert_poll_seconds), "2",
     1, 3600, NULL, "seconds from 1 to 3600"},
    {"logLevel", "HANGAR_LOG_LEVEL", SETTING_STRING, OFF(log_level), "info", 0, 0, is_log_level,
     "debug, info, warn or error"},
    {"tls.mode", "HANGAR_TLS_MODE", SETTING_STRING, OFF(tls_mode), CONFIG_TLS_FILES, 0, 0,
     is_tls_mode, "files or selfManaged"},
    {"tls.secretName", "HANGAR_TLS_SECRET_NAME", SETTING_STRING, OFF(tls_secret_name),
     "hangar-webhook-tls", 0, 0, is_dns_subdomain, "a Secret name"},
    {"tls.secretNamespace", "HANGAR_TLS_SECRET_NAMESPACE", SETTING_STRING,
     OFF(tls_secret_namespace), "", 0, 0, is_label_or_empty,
     "a namespace, or \"\" for the pod's own"},
    {"tls.webhookConfigName", "HANGAR_TLS_WEBHOOK_CONFIG", SETTING_STRING, OFF(tls_webhook_config),
     "", 0, 0, is_subdomain_or_empty, "a MutatingWebhookConfiguration name, or \"\""},
    {"tls.validatingWebhookConfigName", "HANGAR_TLS_VALIDATING_WEBHOOK_CONFIG", SETTING_STRING,
     OFF(tls_validating_config), "", 0, 0, is_subdomain_or_empty,
     "a ValidatingWebhookConfiguration name, or \"\""},
    {"tls.serviceName", "HANGAR_TLS_SERVICE_NAME", SETTING_STRING, OFF(tls_service_name), "", 0, 0,
     is_label_or_empty, "a Service name, or \"\""},
    {"tls.dnsNames", "HANGAR_TLS_DNS_NAMES", SETTING_STRLIST, OFF(tls_dns_names), "[]", 0, 32, NULL,
     "a list of DNS names"},
    {"tls.ipAddresses", "HANGAR_TLS_IP_ADDRESSES", SETTING_STRLIST, OFF(tls_ip_addresses), "[]", 0,
     32, NULL, "a list of IP addresses"},
    {"tls.leafDays", "HANGAR_TLS_LEAF_DAYS", SETTING_U32, OFF(tls_leaf_days), "90", 1, 3650, NULL,
     "days from 1 to 3650"},
    {"tls.renewBeforeDays", "HANGAR_TLS_RENEW_BEFORE_DAYS", SETTING_U32, OFF(tls_renew_before_days),
     "30", 0, 3649, NULL, "days from 0 to 3649"},
    {"tls.caDays", "HANGAR_TLS_CA_DAYS", SETTING_U32, OFF(tls_ca_days), "3650", 1, 36500, NULL,
     "days from 1 to 36500"},
    {"tls.syncSeconds", "HANGAR_TLS_SYNC_SECONDS", SETTING_U32, OFF(tls_sync_seconds), "60", 1,
     86400, NULL, "seconds from 1 to 86400"},
    {"tls.caOverlapSeconds", "HANGAR_TLS_CA_OVERLAP_SECONDS", SETTING_U32,
     OFF(tls_ca_overlap_seconds), "0", 0, 604800, NULL, "seconds from 0 (automatic) to 604800"},
    {"kubeconfig", "HANGAR_KUBECONFIG", SETTING_STRING, OFF(kubeconfig), "", 0, 0, is_any_text,
     "a kubeconfig path, or \"\" for in-cluster credentials"},
};

static void strlist_free(strlist_t *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->items[i]);
        free(l->items);
        l->items = NULL;
        l->n = 0;
}

static void *field(hg_config_t *cfg, const setting_t *s)
{
        return (char *)cfg + s->offset;
}

/* Stores a string list from a JSON array (the environment's form). */
static int parse_strlist_json(const char *text, strlist_t *ret)
{
        hg_error_t ignored;
        _cleanup_json_ json_t *arr = NULL;
        int r = jsonx_load(text, strlen(text), 4, &arr, &ignored);
        if (r == -ENOMEM)
                return r;
        if (r < 0 || !json_is_array(arr))
                return -EINVAL;
        strlist_t l = {0};
        l.items = calloc(json_array_size(arr) + 1, sizeof(char *));
        if (!l.items)
                return -ENOMEM;
        size_t i;
        json_t *v;
        json_array_foreach (arr, i, v) {
                if (!json_is_string(v) || !(l.items[l.n] = strdup(json_string_value(v)))) {
                        strlist_free(&l);
                        return json_is_string(v) ? -ENOMEM : -EINVAL;
                }
                l.n++;
        }
        *ret = l;
        return 0;
}

/* Parses text into the setting's field, checking its range or syntax.
 * On error the field is unchanged and err says why (without location). */
static int set_from_text(hg_config_t *cfg, const setting_t *s, const char *text, hg_error_t *err)
{
        switch (s->type) {
        case SETTING_BOOL: {
                bool b;
                if (parse_bool(text, &b) < 0)
                        return error_set(err, -EINVAL, "expected %s, got '%s'", s->expected, text);
                *(bool *)field(cfg, s) = b;
                return 0;
        }
        case SETTING_U32:
        case SETTING_U64: {
                uint64_t v;
                if (parse_u64(text, &v) < 0 || v < s->min || v > s->max)
                        return error_set(err, -EINVAL, "expected %s, got '%s'", s->expected, text);
                if (s->type == SETTING_U32)
                        *(uint32_t *)field(cfg, s) = (uint32_t)v;
                else
                        *(uint64_t *)field(cfg, s) = v;
                return 0;
        }
        case SETTING_STRING: {
                bool ok = s->check ? s->check(text) : text[0] != '\0';
                if (!ok)
                        return error_set(err, -EINVAL, "expected %s, got '%s'", s->expected, text);
                char *copy = strdup(text);
                if (!copy)
                        return -ENOMEM;
                char **slot = field(cfg, s);
                free(*slot);
                *slot = copy;
#if defined(__GNUC__) && !defined(__clang__)
/* gcc 12's analyzer loses track of a pointer stored at a run-time offset
 * into *cfg and reports it leaked here; config_free frees it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wanalyzer-malloc-leak"
#endif
                return 0;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
        }
        case SETTING_STRLIST: {
                strlist_t l;
                int r = parse_strlist_json(text, &l);
                if (r == -ENOMEM)
                        return r;
                if (r < 0 || l.n < s->min || l.n > s->max) {
                        if (r == 0)
                                strlist_free(&l);
                        return error_set(err, -EINVAL, "expected %s as a JSON array, got '%s'",
                                         s->expected, text);
                }
                strlist_t *slot = field(cfg, s);
                strlist_free(slot);
                *slot = l;
                return 0;
        }
        default:
                return error_set(err, -EINVAL, "unknown setting type");
        }
}

int config_init_defaults(hg_config_t *cfg)
{
        memset(cfg, 0, sizeof(*cfg));
        for (size_t i = 0; i < ARRAY_SIZE(settings); i++) {
                hg_error_t err;
                int r = set_from_text(cfg, &settings[i], settings[i].default_value, &err);
                if (r < 0) {
                        config_free(cfg);
                        return r;
                }
        }
        return 0;
}

void config_free(hg_config_t *cfg)
{
        for (size_t i = 0; i < ARRAY_SIZE(settings); i++) {
                const setting_t *s = &settings[i];
                if (s->type == SETTING_STRING) {
                        char **slot = field(cfg, s);
                        free(*slot);
                        *slot = NULL;
                } else if (s->type == SETTING_STRLIST) {
                        strlist_free(field(cfg, s));
                }
        }
}

/* YAML: walks the mapping, matching dotted paths against the table; any key
 * that is neither a setting nor a prefix of one is an error (typos must not
 * pass silently). */
static int apply_node(hg_config_t *cfg, const char *name, const ynode_t *map, const char *prefix,
                      hg_error_t *err)
{
        if (map->kind != YNODE_MAPPING)
                return error_set(err, -EINVAL, "%s:%u: '%s' must be a mapping", name, map->line,
                                 prefix[0] ? prefix : "the document");
        for (size_t i = 0; i + 1 < map->n; i += 2) {
                const ynode_t *key = map->items[i], *value = map->items[i + 1];
                /* "driver.uid: 5" would be a second way to write driver: {uid: 5}. */
                if (strchr(key->scalar, '.') || !key->scalar[0])
                        return error_set(err, -EINVAL, "%s:%u: unknown key '%s%s%s'", name,
                                         key->line, prefix, prefix[0] ? "." : "", key->scalar);
                char path[256];
                int w = snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "",
                                 key->scalar);
                if (w < 0 || (size_t)w >= sizeof(path))
                        return error_set(err, -EINVAL, "%s:%u: key too long", name, key->line);

                const setting_t *match = NULL;
                bool is_prefix = false;
                size_t plen = strlen(path);
                for (size_t k = 0; k < ARRAY_SIZE(settings); k++) {
                        if (strcmp(settings[k].path, path) == 0)
                                match = &settings[k];
                        else if (strncmp(settings[k].path, path, plen) == 0 &&
                                 settings[k].path[plen] == '.')
                                is_prefix = true;
                }
                int r;
                if (match) {
                        if (match->type == SETTING_STRLIST) {
                                _cleanup_json_ json_t *j = NULL;
                                _cleanup_free_ char *text = NULL;
                                if (value->kind != YNODE_SEQUENCE)
                                        return error_set(err, -EINVAL,
                                                         "%s:%u: key '%s': expected %s", name,
                                                         value->line, path, match->expected);
                                r = ynode_to_json(value, &j, err);
                                if (r == -ENOMEM) /* not the file's fault */
                                        return r;
                                if (r < 0)
                                        return error_prefix(err, "%s: key '%s': ", name, path);
                                text = jsondump(j);
                                if (!text)
                                        return -ENOMEM;
                                r = set_from_text(cfg, match, text, err);
                        } else if (value->kind != YNODE_SCALAR) {
                                return error_set(err, -EINVAL, "%s:%u: key '%s': expected %s", name,
                                                 value->line, path, match->expected);
                        } else {
                                r = set_from_text(cfg, match, value->scalar, err);
                        }
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return error_prefix(err, "%s:%u: key '%s': ", name, value->line,
                                                    path);
                } else if (is_prefix) {
                        r = apply_node(cfg, name, value, path, err);
                        if (r < 0)
                                return r;
                } else {
                        return error_set(err, -EINVAL, "%s:%u: unknown key '%s'", name, key->line,
                                         path);
                }
        }
        return 0;
}

int config_apply_yaml(hg_config_t *cfg, const char *name, const char *buf, size_t len,
                      hg_error_t *err)
{
        _cleanup_ynode_ ynode_t *root = NULL;
        int r = yamldoc_parse(buf, len, &root, err);
        if (r == -ENODATA) {
                /* An empty or comment-only file means all defaults. */
                error_clear(err);
                return 0;
        }
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_prefix(err, "%s: ", name);
        /* So does an empty document ("---") or "{}". */
        if (root->kind == YNODE_SCALAR && root->scalar[0] == '\0')
                return 0;
        return apply_node(cfg, name, root, "", err);
}

int config_apply_env(hg_config_t *cfg, hg_error_t *err)
{
        for (size_t i = 0; i < ARRAY_SIZE(settings); i++) {
                const char *v = getenv(settings[i].env);
                if (!v)
                        continue;
                int r = set_from_text(cfg, &settings[i], v, err);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return error_prefix(err, "environment %s: ", settings[i].env);
        }
        return 0;
}

uint32_t config_ca_overlap_seconds(const hg_config_t *cfg)
{
        if (cfg->tls_ca_overlap_seconds)
                return cfg->tls_ca_overlap_seconds;
        /* Automatic: ten sync rounds (with their reloads), at least ten minutes. */
        uint64_t ten_rounds = 10 * ((uint64_t)cfg->tls_sync_seconds + cfg->cert_poll_seconds);
        return ten_rounds > 600 ? (uint32_t)(ten_rounds < 604800 ? ten_rounds : 604800) : 600;
}

int config_set(hg_config_t *cfg, const char *assignment, hg_error_t *err)
{
        const char *eq = strchr(assignment, '=');
        if (!eq || eq == assignment)
                return error_set(err, -EINVAL, "'%s': expected KEY=VALUE", assignment);
        size_t klen = (size_t)(eq - assignment);
        for (size_t i = 0; i < ARRAY_SIZE(settings); i++) {
                if (strlen(settings[i].path) != klen ||
                    strncmp(settings[i].path, assignment, klen) != 0)
                        continue;
                int r = set_from_text(cfg, &settings[i], eq + 1, err);
                return r < 0 ? error_prefix(err, "--set %s: ", settings[i].path) : 0;
        }
        return error_set(err, -EINVAL, "--set: unknown key '%.*s' (see docs/configuration.md)",
                         (int)klen, assignment);
}

/* Both are canonical (is_absolute_path), so they always fit. */
static bool path_within(const char *inner, const char *outer)
{
        return pathnorm_within(inner, outer) != 0;
}

int config_validate(const hg_config_t *cfg, hg_error_t *err)
{
        if (path_within(cfg->home_path, cfg->ctl_path) ||
            path_within(cfg->ctl_path, cfg->home_path))
                return error_set(err, -EINVAL,
                                 "volumes.home.mountPath '%s' and volumes.ctl.mountPath '%s' must "
                                 "not be equal or nested",
                                 cfg->home_path, cfg->ctl_path);
        if (cfg->health_port != 0 && cfg->health_port == cfg->port)
                return error_set(err, -EINVAL, "server.healthPort must differ from server.port");
        for (size_t i = 0; i < cfg->tls_dns_names.n; i++)
                if (!k8s_is_dns1123_subdomain(cfg->tls_dns_names.items[i]))
                        return error_set(err, -EINVAL, "tls.dnsNames: '%s' is not a DNS name",
                                         cfg->tls_dns_names.items[i]);
        for (size_t i = 0; i < cfg->tls_ip_addresses.n; i++)
                if (!is_ip_address(cfg->tls_ip_addresses.items[i]))
                        return error_set(err, -EINVAL, "tls.ipAddresses: '%s' is not an IP address",
                                         cfg->tls_ip_addresses.items[i]);
        if (cfg->tls_renew_before_days >= cfg->tls_leaf_days)
                return error_set(err, -EINVAL,
                                 "tls.renewBeforeDays (%u) must be less than tls.leafDays (%u)",
                                 cfg->tls_renew_before_days, cfg->tls_leaf_days);
        /* A new CA must not be due for rotation the day it is made. */
        if (cfg->tls_ca_days <= cfg->tls_renew_before_days)
                return error_set(err, -EINVAL,
                                 "tls.caDays (%u) must be more than tls.renewBeforeDays (%u)",
                                 cfg->tls_ca_days, cfg->tls_renew_before_days);
        /* A CA rotation drops the old CA from caBundle one overlap after
         * the switch: every replica must have synced (and its server
         * reloaded) by then. */
        if (cfg->tls_ca_overlap_seconds != 0 &&
            cfg->tls_ca_overlap_seconds <= cfg->tls_sync_seconds + cfg->cert_poll_seconds)
                return error_set(err, -EINVAL,
                                 "tls.caOverlapSeconds (%u) must be more than tls.syncSeconds (%u) "
                                 "plus server.certPollSeconds (%u)",
                                 cfg->tls_ca_overlap_seconds, cfg->tls_sync_seconds,
                                 cfg->cert_poll_seconds);
        if (strcmp(cfg->tls_mode, CONFIG_TLS_SELF_MANAGED) == 0 && !cfg->tls_service_name[0] &&
            cfg->tls_dns_names.n == 0 && cfg->tls_ip_addresses.n == 0)
                return error_set(err, -EINVAL,
                                 "tls.mode selfManaged needs tls.serviceName, tls.dnsNames or "
                                 "tls.ipAddresses for the certificate's names");
        return 0;
}

int config_load(hg_config_t *cfg, const char *path, hg_error_t *err)
{
        int r = config_init_defaults(cfg);
        if (r < 0)
                return error_set(err, r, "cannot set configuration defaults");
        if (path) {
                _cleanup_free_ char *buf = NULL;
                size_t len;
                r = file_read_bounded(path, CONFIG_MAX_FILE_BYTES, &buf, &len);
                if (r < 0) {
                        config_free(cfg);
                        return error_set(err, r, "%s: cannot read: %s", path,
                                         r == -EFBIG ? "larger than 1 MiB" : strerror(-r));
                }
                r = config_apply_yaml(cfg, path, buf, len, err);
        }
        if (r == 0)
                r = config_apply_env(cfg, err);
        if (r == 0)
                r = config_validate(cfg, err);
        if (r < 0)
                config_free(cfg);
        return r;
}

char *config_dump(const hg_config_t *cfg)
{
        _cleanup_json_ json_t *out = json_object();
        if (!out)
                return NULL;
        for (size_t i = 0; i < ARRAY_SIZE(settings); i++) {
                const setting_t *s = &settings[i];
                const void *f = (const char *)cfg + s->offset;
                json_t *v = NULL;
                switch (s->type) {
                case SETTING_BOOL:
                        v = json_boolean(*(const bool *)f);
                        break;
                case SETTING_U32:
                        v = json_integer(*(const uint32_t *)f);
                        break;
                case SETTING_U64:
                        v = json_integer((json_int_t) * (const uint64_t *)f);
                        break;
                case SETTING_STRING:
                        v = json_string(*(char *const *)f);
                        break;
                case SETTING_STRLIST: {
                        const strlist_t *l = f;
                        v = json_array();
                        for (size_t k = 0; v && k < l->n; k++) {
                                /* A list cut short would be another setting. */
                                if (json_array_append_new(v, json_string(l->items[k])) < 0) {
                                        json_decref(v);
                                        v = NULL;
                                }
                        }
                        break;
                }
                default:
                        return NULL;
                }
                if (!v || json_object_set_new(out, s->path, v) < 0)
                        return NULL;
        }
        return jsonx_dumps(out, JSON_INDENT(2));
}
