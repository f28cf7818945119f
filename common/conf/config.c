#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cleanup.h"
#include "k8sname.h"
#include "pathnorm.h"
#include "split.h"

static bool is_absolute_path(const char *s)
{
        return pathnorm_is_canonical(s);
}

static bool is_quantity_or_empty(const char *s)
{
        return s[0] == '\0' || k8s_is_quantity(s);
}

static bool is_token_choice(const char *s)
{
        return strcmp(s, CONFIG_TOKEN_KEEP) == 0 || strcmp(s, CONFIG_TOKEN_REMOVE) == 0;
}

static bool is_clone_safety(const char *s)
{
        return strcmp(s, CONFIG_CLONE_SAFETY_AUTO) == 0 ||
               strcmp(s, CONFIG_CLONE_SAFETY_REQUIRED) == 0;
}

static bool is_binaries_from(const char *s)
{
        return strcmp(s, CONFIG_BINARIES_AGENT_IMAGE) == 0 ||
               strcmp(s, CONFIG_BINARIES_INIT_CONTAINER) == 0 ||
               strcmp(s, CONFIG_BINARIES_IMAGE_VOLUME) == 0;
}

/* An image reference as a pod's container takes it: not empty, no
 * whitespace or control characters (the API server refuses those). */
static bool is_image_reference(const char *s)
{
        if (!s[0] || strlen(s) > 512)
                return false;
        for (const unsigned char *c = (const unsigned char *)s; *c; c++)
                if (*c <= ' ' || *c == 0x7f)
                        return false;
        return true;
}

static bool is_split_mode(const char *s)
{
        split_mode_t m;
        return split_mode_parse(s, &m) == 0;
}

#define OFF(field) offsetof(hg_config_t, field)

/* The sidecar's table. Keep docs/configuration.md and charts/ in step with
 * it; the webhook's rows are in webhook/admit/settings.c. */
static const conf_setting_t settings[] = {
    {"agentContainer", "HANGAR_AGENT_CONTAINER", CONF_STRING, OFF(agent_container), "sandbox", 0, 0,
     k8s_is_dns1123_label, "a container name (RFC 1123 label)"},
    {"agentServiceAccountToken", "HANGAR_AGENT_SERVICE_ACCOUNT_TOKEN", CONF_STRING,
     OFF(agent_service_account_token), CONFIG_TOKEN_KEEP, 0, 0, is_token_choice, "keep or remove"},
    {"driver.uid", "HANGAR_DRIVER_UID", CONF_U32, OFF(driver_uid), "1001", 1, 2147483647, NULL,
     "a uid from 1 to 2147483647 (never root)"},
    {"driver.gid", "HANGAR_DRIVER_GID", CONF_U32, OFF(driver_gid), "1001", 1, 2147483647, NULL,
     "a gid from 1 to 2147483647 (never root)"},
    {"driver.command", "HANGAR_DRIVER_COMMAND", CONF_STRLIST, OFF(driver_command),
     "[\"hangar-driver\", \"serve\"]", 1, 64, NULL, "a non-empty list of strings"},
    {"driver.probes.enabled", "HANGAR_DRIVER_PROBES", CONF_BOOL, OFF(driver_probes), "true", 0, 0,
     NULL, "true or false"},
    {"driver.probes.startup.periodSeconds", "HANGAR_DRIVER_STARTUP_PERIOD", CONF_U32,
     OFF(driver_startup.period_s), "1", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"driver.probes.startup.timeoutSeconds", "HANGAR_DRIVER_STARTUP_TIMEOUT", CONF_U32,
     OFF(driver_startup.timeout_s), "5", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"driver.probes.startup.failureThreshold", "HANGAR_DRIVER_STARTUP_FAILURES", CONF_U32,
     OFF(driver_startup.failures), "60", 1, 10000, NULL, "a count from 1 to 10000"},
    {"driver.probes.liveness.periodSeconds", "HANGAR_DRIVER_LIVENESS_PERIOD", CONF_U32,
     OFF(driver_liveness.period_s), "10", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"driver.probes.liveness.timeoutSeconds", "HANGAR_DRIVER_LIVENESS_TIMEOUT", CONF_U32,
     OFF(driver_liveness.timeout_s), "5", 1, 3600, NULL, "seconds from 1 to 3600"},
    {"driver.probes.liveness.failureThreshold", "HANGAR_DRIVER_LIVENESS_FAILURES", CONF_U32,
     OFF(driver_liveness.failures), "3", 1, 10000, NULL, "a count from 1 to 10000"},
    {"driver.nativeSidecar", "HANGAR_DRIVER_NATIVE_SIDECAR", CONF_BOOL, OFF(driver_native_sidecar),
     "false", 0, 0, NULL, "true or false"},
    {"driver.resources.requests.cpu", "HANGAR_DRIVER_CPU_REQUEST", CONF_STRING,
     OFF(driver_cpu_request), "50m", 0, 0, k8s_is_quantity, "a quantity like 50m"},
    {"driver.resources.requests.memory", "HANGAR_DRIVER_MEMORY_REQUEST", CONF_STRING,
     OFF(driver_memory_request), "64Mi", 0, 0, k8s_is_quantity, "a quantity like 64Mi"},
    {"driver.resources.limits.cpu", "HANGAR_DRIVER_CPU_LIMIT", CONF_STRING, OFF(driver_cpu_limit),
     "", 0, 0, is_quantity_or_empty, "a quantity, or \"\" for none"},
    {"driver.resources.limits.memory", "HANGAR_DRIVER_MEMORY_LIMIT", CONF_STRING,
     OFF(driver_memory_limit), "", 0, 0, is_quantity_or_empty, "a quantity, or \"\" for none"},
    {"driver.cloneSafety", "HANGAR_DRIVER_CLONE_SAFETY", CONF_STRING, OFF(driver_clone_safety),
     CONFIG_CLONE_SAFETY_AUTO, 0, 0, is_clone_safety, "auto or required"},
    /* Not HANGAR_UID_SPLIT itself: that is the mode of whoever runs a
     * binary (the probe's verdict, the relay's gate), never a statement of
     * what the injected driver's environment holds. */
    {"driver.uidSplit", "HANGAR_DRIVER_UID_SPLIT", CONF_STRING, OFF(driver_uid_split),
     CONFIG_UID_SPLIT_DEFAULT, 0, 0, is_split_mode, "off, auto or required"},
    {"driver.binaries.from", "HANGAR_DRIVER_BINARIES_FROM", CONF_STRING, OFF(driver_binaries_from),
     CONFIG_BINARIES_AGENT_IMAGE, 0, 0, is_binaries_from,
     "agentImage, initContainer or imageVolume"},
    {"driver.binaries.bundleImage", "HANGAR_DRIVER_BUNDLE_IMAGE", CONF_STRING,
     OFF(driver_bundle_image), "localhost/hangar-bin:" HANGAR_VERSION, 0, 0, is_image_reference,
     "an image reference without whitespace"},
    {"volumes.home.mountPath", "HANGAR_HOME_PATH", CONF_STRING, OFF(home_path), "/var/lib/hangar",
     0, 0, is_absolute_path, "a normalized absolute path"},
    {"volumes.ctl.mountPath", "HANGAR_CTL_PATH", CONF_STRING, OFF(ctl_path), "/var/lib/hangar-ctl",
     0, 0, is_absolute_path, "a normalized absolute path"},
    {"volumes.ctl.sizeLimit", "HANGAR_CTL_SIZE_LIMIT", CONF_STRING, OFF(ctl_size_limit), "64Mi", 0,
     0, k8s_is_quantity, "a quantity like 64Mi"},
    {"gvisor.runtimeClassNames", "HANGAR_GVISOR_RUNTIME_CLASSES", CONF_STRLIST,
     OFF(gvisor_runtime_classes), "[\"gvisor\"]", 0, 16, NULL, "a list of RuntimeClass names"},
};

/* The webhook's part of the shared file (webhook/admit/settings.c checks that its
 * table has no other top-level key). */
const char *const config_webhook_keys[] = {
    "driverSidecar", "selector", "conflictEnforcement", "guard", "server",
    "logLevel",      "tls",      "kubeconfig",          NULL,
};

conf_part_t config_part(hg_config_t *cfg)
{
        return (conf_part_t){settings, ARRAY_SIZE(settings), cfg, sizeof(*cfg)};
}

/* The sidecar's reader: its own table, the webhook's keys skipped. */
#define SIDECAR_TABLE(cfg)                          \
        const conf_part_t part_ = config_part(cfg); \
        const conftable_t table_ = {&part_, 1, config_webhook_keys}

int config_init_defaults(hg_config_t *cfg)
{
        SIDECAR_TABLE(cfg);
        return conftable_init_defaults(&table_);
}

void config_free(hg_config_t *cfg)
{
        SIDECAR_TABLE(cfg);
        conftable_free(&table_);
}

int config_apply_yaml(hg_config_t *cfg, const char *name, const char *buf, size_t len,
                      hg_error_t *err)
{
        SIDECAR_TABLE(cfg);
        return conftable_apply_yaml(&table_, name, buf, len, err);
}

int config_apply_env(hg_config_t *cfg, hg_error_t *err)
{
        SIDECAR_TABLE(cfg);
        return conftable_apply_env(&table_, err);
}

int config_set(hg_config_t *cfg, const char *assignment, hg_error_t *err)
{
        SIDECAR_TABLE(cfg);
        return conftable_set(&table_, assignment, err);
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
        /* The bundle's loader and RPATH are absolute paths under it. */
        static const char bin_path[] = CONFIG_BUNDLE_PATH;
        if (strcmp(cfg->driver_binaries_from, CONFIG_BINARIES_AGENT_IMAGE) != 0 &&
            (path_within(cfg->home_path, bin_path) || path_within(bin_path, cfg->home_path) ||
             path_within(cfg->ctl_path, bin_path) || path_within(bin_path, cfg->ctl_path)))
                return error_set(err, -EINVAL,
                                 "with driver.binaries.from %s the bundle is mounted at "
                                 "%s: volumes.home.mountPath '%s' and volumes.ctl.mountPath '%s' "
                                 "must not be it, nor be nested with it",
                                 cfg->driver_binaries_from, bin_path, cfg->home_path,
                                 cfg->ctl_path);
        return 0;
}

int config_load(hg_config_t *cfg, const char *path, hg_error_t *err)
{
        SIDECAR_TABLE(cfg);
        int r = conftable_load(&table_, path, err);
        if (r == 0)
                r = config_validate(cfg, err);
        if (r < 0)
                config_free(cfg);
        return r;
}

char *config_dump(const hg_config_t *cfg)
{
        /* conftable_dump only reads through the part's pointer. */
        SIDECAR_TABLE((hg_config_t *)cfg);
        return conftable_dump(&table_);
}
