#include "podagent.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "k8sname.h"
#include "shape.h"

/* The container named name in pod's spec.containers, or NULL. */
static json_t *find_container(json_t *pod, const char *name)
{
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(json_object_get(pod, "spec"), "containers"), i, c) {
                const char *have = json_string_value(json_object_get(c, "name"));
                if (have && strcmp(have, name) == 0)
                        return c;
        }
        return NULL;
}

/* "/opt/hangar", with or without trailing slashes. */
static bool is_bin_path(const char *path)
{
        size_t n = strlen(PODAGENT_BIN_PATH);
        if (!path || strncmp(path, PODAGENT_BIN_PATH, n) != 0)
                return false;
        return strspn(path + n, "/") == strlen(path + n);
}

/* Whether container mounts the bundle's volume at /opt/hangar (whatever
 * its subPath: an image volume holds the bundle under opt/hangar). */
static bool mounts_bundle(json_t *container)
{
        size_t i;
        json_t *m;
        json_array_foreach (json_object_get(container, "volumeMounts"), i, m) {
                const char *name = json_string_value(json_object_get(m, "name"));
                if (name && strcmp(name, PODAGENT_BIN_VOLUME) == 0 &&
                    is_bin_path(json_string_value(json_object_get(m, "mountPath"))))
                        return true;
        }
        return false;
}

int podagent_resolve(const hg_config_t *cfg, json_t *pod, const char *override, podagent_t *ret,
                     char *why, size_t n)
{
        *ret = (podagent_t){0};
        const char *name = override;
        if (!name) {
                /* The pod's own word, checked as the webhook and the probe
                 * check it (a name, in spec.containers, not the driver's). */
                const char *problem = shape_agent_problem(cfg, pod, why, n);
                if (problem)
                        return -EINVAL;
                name = shape_agent_name(cfg, pod);
        }
        if (!name || !k8s_is_dns1123_label(name)) {
                (void)snprintf(why, n, "the agent's container \"%.63s\" is not a container name",
                               name ? name : "");
                return -EINVAL;
        }
        if (strcmp(name, SHAPE_DRIVER_CONTAINER) == 0) {
                (void)snprintf(why, n, "\"%s\" is the driver sidecar, not the agent's container",
                               SHAPE_DRIVER_CONTAINER);
                return -EINVAL;
        }
        json_t *c = find_container(pod, name);
        if (!c) {
                (void)snprintf(why, n, "the pod has no container \"%s\" in spec.containers", name);
                return -EINVAL;
        }
        (void)snprintf(ret->container, sizeof(ret->container), "%s", name);
        ret->bundle = mounts_bundle(c);
        return 0;
}

const char *podagent_program(const podagent_t *a, const char *name, const char *override, char *buf,
                             size_t n)
{
        if (override)
                (void)snprintf(buf, n, "%s", override);
        else if (a->bundle)
                (void)snprintf(buf, n, "%s/bin/%s", PODAGENT_BIN_PATH, name);
        else
                (void)snprintf(buf, n, "%s", name);
        return buf;
}
