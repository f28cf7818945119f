#include "shape.h"

#include <stddef.h>

#include "cleanup.h"

/* Design page 000, "The pod": hangar-home read-only for the agent and
 * read-write for the driver; hangar-ctl never mounted by the agent (nor by
 * anything else), read-write for the driver. */
static const shape_access_t mount_table[SHAPE_ROLE_COUNT][SHAPE_VOLUME_COUNT] = {
    [SHAPE_ROLE_AGENT] =
        {[SHAPE_VOLUME_HOME] = SHAPE_ACCESS_READ_ONLY, [SHAPE_VOLUME_CTL] = SHAPE_ACCESS_ABSENT},
    [SHAPE_ROLE_DRIVER] = {[SHAPE_VOLUME_HOME] = SHAPE_ACCESS_READ_WRITE,
                           [SHAPE_VOLUME_CTL] = SHAPE_ACCESS_READ_WRITE},
    [SHAPE_ROLE_OTHER] =
        {[SHAPE_VOLUME_HOME] = SHAPE_ACCESS_UNCHECKED, [SHAPE_VOLUME_CTL] = SHAPE_ACCESS_ABSENT},
};

shape_access_t shape_mount_access(shape_role_t role, shape_volume_t volume)
{
        if ((unsigned)role >= SHAPE_ROLE_COUNT || (unsigned)volume >= SHAPE_VOLUME_COUNT)
                return SHAPE_ACCESS_ABSENT;
        return mount_table[role][volume];
}

const char *shape_volume_name(shape_volume_t volume)
{
        switch (volume) {
        case SHAPE_VOLUME_HOME:
                return SHAPE_HOME_VOLUME;
        case SHAPE_VOLUME_CTL:
                return SHAPE_CTL_VOLUME;
        default:
                return "?";
        }
}

const char *shape_volume_path(const hg_config_t *cfg, shape_volume_t volume)
{
        switch (volume) {
        case SHAPE_VOLUME_HOME:
                return cfg->home_path;
        case SHAPE_VOLUME_CTL:
                return cfg->ctl_path;
        default:
                return "";
        }
}

const char *shape_role_name(shape_role_t role)
{
        switch (role) {
        case SHAPE_ROLE_AGENT:
                return "agent";
        case SHAPE_ROLE_DRIVER:
                return "driver";
        case SHAPE_ROLE_OTHER:
                return "other";
        default:
                return "?";
        }
}

const char *shape_access_name(shape_access_t access)
{
        switch (access) {
        case SHAPE_ACCESS_ABSENT:
                return "not mounted";
        case SHAPE_ACCESS_READ_ONLY:
                return "read-only";
        case SHAPE_ACCESS_READ_WRITE:
                return "read-write";
        case SHAPE_ACCESS_UNCHECKED:
                return "any";
        default:
                return "?";
        }
}

json_t *shape_volume_json(const hg_config_t *cfg, shape_volume_t volume)
{
        switch (volume) {
        case SHAPE_VOLUME_HOME:
                return json_pack("{s:s, s:{}}", "name", SHAPE_HOME_VOLUME, "emptyDir");
        case SHAPE_VOLUME_CTL:
                /* In memory: secrets never touch the node's disk, and GKE Sandbox
                 * keeps a Memory emptyDir inside the sandbox. */
                return json_pack("{s:s, s:{s:s, s:s}}", "name", SHAPE_CTL_VOLUME, "emptyDir",
                                 "medium", "Memory", "sizeLimit", cfg->ctl_size_limit);
        default:
                return NULL;
        }
}

json_t *shape_mount_json(const hg_config_t *cfg, shape_role_t role, shape_volume_t volume)
{
        shape_access_t access = shape_mount_access(role, volume);
        if (access != SHAPE_ACCESS_READ_ONLY && access != SHAPE_ACCESS_READ_WRITE)
                return NULL;
        json_t *m = json_pack("{s:s, s:s}", "name", shape_volume_name(volume), "mountPath",
                              shape_volume_path(cfg, volume));
        /* readOnly: false is the API's default and is omitted, as the API server
         * stores it. */
        if (m && access == SHAPE_ACCESS_READ_ONLY &&
            json_object_set_new(m, "readOnly", json_true()) < 0) {
                json_decref(m);
                return NULL;
        }
        return m;
}

static json_t *resources_json(const hg_config_t *cfg)
{
        _cleanup_json_ json_t *res =
            json_pack("{s:{s:s, s:s}}", "requests", "cpu", cfg->driver_cpu_request, "memory",
                      cfg->driver_memory_request);
        if (!res)
                return NULL;
        if (cfg->driver_cpu_limit[0] || cfg->driver_memory_limit[0]) {
                json_t *limits = json_object();
                if (!limits || json_object_set_new(res, "limits", limits) < 0)
                        return NULL;
                if (cfg->driver_cpu_limit[0] &&
                    json_object_set_new(limits, "cpu", json_string(cfg->driver_cpu_limit)) < 0)
                        return NULL;
                if (cfg->driver_memory_limit[0] &&
                    json_object_set_new(limits, "memory", json_string(cfg->driver_memory_limit)) <
                        0)
                        return NULL;
        }
        return TAKE_PTR(res);
}

json_t *shape_driver_container_json(const hg_config_t *cfg, const char *image)
{
        _cleanup_json_ json_t *command = json_array();
        for (size_t i = 0; command && i < cfg->driver_command.n; i++)
                if (json_array_append_new(command, json_string(cfg->driver_command.items[i])) < 0)
                        return NULL;
        _cleanup_json_ json_t *mounts = json_array();
        for (shape_volume_t v = 0; mounts && v < SHAPE_VOLUME_COUNT; v++) {
                json_t *m = shape_mount_json(cfg, SHAPE_ROLE_DRIVER, v);
                if (m && json_array_append_new(mounts, m) < 0)
                        return NULL;
        }
        json_t *resources = resources_json(cfg);
        if (!command || !mounts || !resources) {
                json_decref(resources);
                return NULL;
        }
        /* IfNotPresent: the agent's container has just pulled this image, so the
         * driver runs the same bytes and nothing new is pulled. */
        return json_pack("{s:s, s:s, s:s, s:O, s:o, s:{s:I, s:I, s:b, s:b, s:b, s:b, "
                         "s:{s:[s]}, s:{s:s}}, s:O}",
                         "name", SHAPE_DRIVER_CONTAINER, "image", image, "imagePullPolicy",
                         "IfNotPresent", "command", command, "resources", resources,
                         "securityContext", "runAsUser", (json_int_t)cfg->driver_uid, "runAsGroup",
                         (json_int_t)cfg->driver_gid, "runAsNonRoot", 1, "allowPrivilegeEscalation",
                         0, "readOnlyRootFilesystem", 1, "privileged", 0, "capabilities", "drop",
                         "ALL", "seccompProfile", "type", "RuntimeDefault", "volumeMounts", mounts);
}
