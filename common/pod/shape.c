#include "shape.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsondump.h"
#include "k8sname.h"
#include "podview.h"
#include "split.h"

/* Design page 000, "The pod": hangar-home read-only for the agent and
 * read-write for the driver; hangar-ctl never mounted by the agent (nor by
 * anything else), read-write for the driver. Another container of the pod
 * may read hangar-home (it could not write what the driver reads); an init
 * or ephemeral container mounts neither: the one runs before the driver has
 * written anything worth reading, the other is added to a running pod by
 * whoever can update it, and is the driver's neighbour no one injected.
 * hangar-bin (delivered binaries) is written once, by hangar's own init
 * container, before either runs; from then on no container may write it:
 * the driver runs what is in it. */
static const shape_access_t mount_table[SHAPE_ROLE_COUNT][SHAPE_VOLUME_COUNT] = {
    [SHAPE_ROLE_AGENT] = {[SHAPE_VOLUME_HOME] = SHAPE_ACCESS_READ_ONLY,
                          [SHAPE_VOLUME_CTL] = SHAPE_ACCESS_ABSENT,
                          [SHAPE_VOLUME_BIN] = SHAPE_ACCESS_READ_ONLY},
    [SHAPE_ROLE_DRIVER] = {[SHAPE_VOLUME_HOME] = SHAPE_ACCESS_READ_WRITE,
                           [SHAPE_VOLUME_CTL] = SHAPE_ACCESS_READ_WRITE,
                           [SHAPE_VOLUME_BIN] = SHAPE_ACCESS_READ_ONLY},
    [SHAPE_ROLE_OTHER] = {[SHAPE_VOLUME_HOME] = SHAPE_ACCESS_NOT_WRITABLE,
                          [SHAPE_VOLUME_CTL] = SHAPE_ACCESS_ABSENT,
                          [SHAPE_VOLUME_BIN] = SHAPE_ACCESS_NOT_WRITABLE},
    [SHAPE_ROLE_INIT_EPHEMERAL] = {[SHAPE_VOLUME_HOME] = SHAPE_ACCESS_ABSENT,
                                   [SHAPE_VOLUME_CTL] = SHAPE_ACCESS_ABSENT,
                                   [SHAPE_VOLUME_BIN] = SHAPE_ACCESS_ABSENT},
    [SHAPE_ROLE_BIN_COPIER] = {[SHAPE_VOLUME_HOME] = SHAPE_ACCESS_ABSENT,
                               [SHAPE_VOLUME_CTL] = SHAPE_ACCESS_ABSENT,
                               [SHAPE_VOLUME_BIN] = SHAPE_ACCESS_READ_WRITE},
};

bool shape_delivers_binaries(const hg_config_t *cfg)
{
        return cfg->driver_binaries_from &&
               strcmp(cfg->driver_binaries_from, CONFIG_BINARIES_AGENT_IMAGE) != 0;
}

bool shape_copies_binaries(const hg_config_t *cfg)
{
        return cfg->driver_binaries_from &&
               strcmp(cfg->driver_binaries_from, CONFIG_BINARIES_INIT_CONTAINER) == 0;
}

bool shape_volume_hinted(const hg_config_t *cfg, shape_volume_t volume)
{
        return shape_volume_used(cfg, volume) &&
               (volume != SHAPE_VOLUME_BIN || shape_copies_binaries(cfg));
}

bool shape_volume_used(const hg_config_t *cfg, shape_volume_t volume)
{
        if ((unsigned)volume >= SHAPE_VOLUME_COUNT)
                return false;
        return volume != SHAPE_VOLUME_BIN || shape_delivers_binaries(cfg);
}

shape_access_t shape_mount_access(shape_role_t role, shape_volume_t volume)
{
        if ((unsigned)role >= SHAPE_ROLE_COUNT || (unsigned)volume >= SHAPE_VOLUME_COUNT)
                return SHAPE_ACCESS_ABSENT;
        return mount_table[role][volume];
}

bool shape_access_allows(shape_access_t want, shape_access_t have)
{
        switch (want) {
        case SHAPE_ACCESS_UNCHECKED:
                return true;
        case SHAPE_ACCESS_NOT_WRITABLE:
                return have == SHAPE_ACCESS_ABSENT || have == SHAPE_ACCESS_READ_ONLY;
        case SHAPE_ACCESS_ABSENT:
        case SHAPE_ACCESS_READ_ONLY:
        case SHAPE_ACCESS_READ_WRITE:
                return have == want;
        default:
                return false;
        }
}

const char *shape_agent_name(const hg_config_t *cfg, json_t *pod)
{
        json_t *v = json_object_get(podview_annotations(pod), SHAPE_ANNOTATION_AGENT);
        if (!v)
                return cfg->agent_container;
        const char *name = json_string_value(v);
        return name && k8s_is_dns1123_label(name) ? name : NULL;
}

/* The list of pod's spec that has a container named name, or NULL. */
static const char *list_holding(json_t *pod, const char *name)
{
        static const char *const lists[] = {"containers", "initContainers", "ephemeralContainers"};
        for (size_t l = 0; l < ARRAY_SIZE(lists); l++)
                if (podview_container(pod, lists[l], name))
                        return lists[l];
        return NULL;
}

const char *shape_agent_problem(const hg_config_t *cfg, json_t *pod, char *buf, size_t size)
{
        bool annotated = json_object_get(podview_annotations(pod), SHAPE_ANNOTATION_AGENT) != NULL;
        const char *setting =
            annotated ? "annotation " SHAPE_ANNOTATION_AGENT : "the agentContainer setting";
        const char *name = shape_agent_name(cfg, pod);
        if (!name) {
                (void)snprintf(buf, size,
                               "annotation %s is not a container name (an RFC 1123 label)",
                               SHAPE_ANNOTATION_AGENT);
                return buf;
        }
        if (strcmp(name, SHAPE_DRIVER_CONTAINER) == 0) {
                (void)snprintf(buf, size,
                               "%s names \"%s\", the driver sidecar hangar injects; name the "
                               "agent's container",
                               setting, SHAPE_DRIVER_CONTAINER);
                return buf;
        }
        const char *list = list_holding(pod, name);
        if (list && strcmp(list, "containers") == 0)
                return NULL;
        if (list)
                (void)snprintf(buf, size,
                               "%s names \"%s\", which is in spec.%s: the agent must be one of "
                               "spec.containers",
                               setting, name, list);
        else
                (void)snprintf(buf, size,
                               "the pod has no container named \"%s\" (%s) to run the driver "
                               "sidecar beside",
                               name, setting);
        return buf;
}

const char *shape_volume_name(shape_volume_t volume)
{
        switch (volume) {
        case SHAPE_VOLUME_HOME:
                return SHAPE_HOME_VOLUME;
        case SHAPE_VOLUME_CTL:
                return SHAPE_CTL_VOLUME;
        case SHAPE_VOLUME_BIN:
                return SHAPE_BIN_VOLUME;
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
        case SHAPE_VOLUME_BIN:
                return CONFIG_BUNDLE_PATH;
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
        case SHAPE_ROLE_INIT_EPHEMERAL:
                return "init/ephemeral";
        case SHAPE_ROLE_BIN_COPIER:
                return "bundle copier";
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
        case SHAPE_ACCESS_NOT_WRITABLE:
                return "read-only or not mounted";
        default:
                return "?";
        }
}

/* Builders below set members with put() rather than json_pack: this runs on
 * every review, and json_pack re-parses its format string and re-checks
 * every key's UTF-8 each time. put() takes v (even on failure); any failure
 * makes it return non-zero, so callers OR the results and check once. */
static int put(json_t *obj, const char *key, json_t *v)
{
        return json_object_set_new_nocheck(obj, key, v) != 0;
}

static int push(json_t *arr, json_t *v)
{
        return json_array_append_new(arr, v) != 0;
}

/* Returns obj, or NULL (freeing obj) when any put failed. */
static json_t *built(json_t *obj, int failed)
{
        if (failed || !obj) {
                json_decref(obj);
                return NULL;
        }
        return obj;
}

int shape_gvisor_annotation(const hg_config_t *cfg, shape_volume_t volume, unsigned i,
                            const char **ret_key, char *value, size_t size)
{
#define GVISOR_MOUNT(name, field) "dev.gvisor.spec.mount." name "." field
        static const char *const table[SHAPE_VOLUME_COUNT][SHAPE_GVISOR_ANNOTATIONS][2] = {
            [SHAPE_VOLUME_HOME] = {{GVISOR_MOUNT(SHAPE_HOME_VOLUME, "share"), "pod"},
                                   {GVISOR_MOUNT(SHAPE_HOME_VOLUME, "type"), "bind"},
                                   {GVISOR_MOUNT(SHAPE_HOME_VOLUME, "options"), "rw,rprivate"}},
            [SHAPE_VOLUME_CTL] = {{GVISOR_MOUNT(SHAPE_CTL_VOLUME, "share"), "pod"},
                                  {GVISOR_MOUNT(SHAPE_CTL_VOLUME, "type"), "tmpfs"},
                                  {GVISOR_MOUNT(SHAPE_CTL_VOLUME, "options"), "rw,rprivate"}},
            [SHAPE_VOLUME_BIN] = {{GVISOR_MOUNT(SHAPE_BIN_VOLUME, "share"), "pod"},
                                  {GVISOR_MOUNT(SHAPE_BIN_VOLUME, "type"), "tmpfs"},
                                  {GVISOR_MOUNT(SHAPE_BIN_VOLUME, "options"), "rw,rprivate"}},
        };
#undef GVISOR_MOUNT
        if ((unsigned)volume >= SHAPE_VOLUME_COUNT || i >= SHAPE_GVISOR_ANNOTATIONS)
                return -EINVAL;
        *ret_key = table[volume][i][0];
        const char *base = table[volume][i][1];
        int w;
        if (volume != SHAPE_VOLUME_HOME && i == 2) {
                /* The memory volumes carry their size (a tmpfs in the sandbox). */
                const char *limit =
                    volume == SHAPE_VOLUME_CTL ? cfg->ctl_size_limit : SHAPE_BIN_SIZE_LIMIT;
                long double bytes;
                if (k8s_quantity_value(limit, &bytes) < 0 || bytes < 1 || bytes > 1e15L)
                        return -EINVAL;
                /* Whole bytes, rounded up ("0.5Ki" is 512; "1.3" would be 2). */
                unsigned long long whole = (unsigned long long)bytes;
                if ((long double)whole < bytes)
                        whole++;
                w = snprintf(value, size, "%s,size=%llu", base, whole);
        } else {
                w = snprintf(value, size, "%s", base);
        }
        return w < 0 || (size_t)w >= size ? -ENAMETOOLONG : 0;
}

json_t *shape_volume_json(const hg_config_t *cfg, shape_volume_t volume)
{
        json_t *v = json_object(), *empty_dir = json_object();
        int bad = put(v, "name", json_string_nocheck(shape_volume_name(volume)));
        switch (volume) {
        case SHAPE_VOLUME_HOME:
                break;
        case SHAPE_VOLUME_CTL:
                /* In memory: secrets never touch the node's disk, and GKE Sandbox
                 * keeps a Memory emptyDir inside the sandbox. */
                bad |= put(empty_dir, "medium", json_string_nocheck("Memory"));
                bad |= put(empty_dir, "sizeLimit", json_string(cfg->ctl_size_limit));
                break;
        case SHAPE_VOLUME_BIN:
                if (!shape_copies_binaries(cfg)) {
                        /* The bundle image itself (ImageVolume): read-only
                         * by nature, no copy, no pod memory. */
                        json_decref(empty_dir);
                        json_t *image = json_object();
                        bad |= put(image, "reference", json_string(cfg->driver_bundle_image));
                        bad |= put(image, "pullPolicy", json_string_nocheck("IfNotPresent"));
                        bad |= put(v, "image", image);
                        return built(v, bad);
                }
                /* In memory too: nothing of the node's disk, and under gVisor
                 * a tmpfs inside the sandbox the agent cannot reach. */
                bad |= put(empty_dir, "medium", json_string_nocheck("Memory"));
                bad |= put(empty_dir, "sizeLimit", json_string_nocheck(SHAPE_BIN_SIZE_LIMIT));
                break;
        default:
                bad = 1;
                break;
        }
        bad |= put(v, "emptyDir", empty_dir);
        return built(v, bad);
}

/* Whether the shape gives role a mount of volume (shape_mount_json builds
 * it): tells a mount the role has none of from one that failed to build. */
static bool role_mounts(const hg_config_t *cfg, shape_role_t role, shape_volume_t volume)
{
        if (!shape_volume_used(cfg, volume))
                return false;
        shape_access_t access = shape_mount_access(role, volume);
        return access == SHAPE_ACCESS_READ_ONLY || access == SHAPE_ACCESS_READ_WRITE;
}

json_t *shape_mount_json(const hg_config_t *cfg, shape_role_t role, shape_volume_t volume)
{
        shape_access_t access = shape_mount_access(role, volume);
        if (!role_mounts(cfg, role, volume))
                return NULL;
        json_t *m = json_object();
        int bad = put(m, "name", json_string_nocheck(shape_volume_name(volume)));
        /* The copier's own CONFIG_BUNDLE_PATH is the bundle it copies. */
        const char *path =
            role == SHAPE_ROLE_BIN_COPIER ? SHAPE_BIN_COPY_PATH : shape_volume_path(cfg, volume);
        bad |= put(m, "mountPath", json_string(path));
        /* readOnly: false is the API's default and is omitted, as the API server
         * stores it. */
        if (access == SHAPE_ACCESS_READ_ONLY)
                bad |= put(m, "readOnly", json_true());
        /* An image volume holds the whole bundle image: its opt/hangar. */
        if (volume == SHAPE_VOLUME_BIN && !shape_copies_binaries(cfg))
                bad |= put(m, "subPath", json_string_nocheck(SHAPE_BIN_SUBPATH));
        return built(m, bad);
}

static json_t *quantities(const char *cpu, const char *memory)
{
        json_t *q = json_object();
        int bad = 0;
        if (cpu[0])
                bad |= put(q, "cpu", json_string(cpu));
        if (memory[0])
                bad |= put(q, "memory", json_string(memory));
        return built(q, bad);
}

static json_t *resources_json(const hg_config_t *cfg)
{
        json_t *res = json_object();
        int bad =
            put(res, "requests", quantities(cfg->driver_cpu_request, cfg->driver_memory_request));
        if (cfg->driver_cpu_limit[0] || cfg->driver_memory_limit[0])
                bad |=
                    put(res, "limits", quantities(cfg->driver_cpu_limit, cfg->driver_memory_limit));
        return built(res, bad);
}

static json_t *security_context_json(const hg_config_t *cfg)
{
        json_t *sc = json_object(), *caps = json_object(), *drop = json_array(),
               *seccomp = json_object();
        int bad = put(sc, "runAsUser", json_integer(cfg->driver_uid));
        bad |= put(sc, "runAsGroup", json_integer(cfg->driver_gid));
        bad |= put(sc, "runAsNonRoot", json_true());
        bad |= put(sc, "allowPrivilegeEscalation", json_false());
        bad |= put(sc, "readOnlyRootFilesystem", json_true());
        bad |= put(sc, "privileged", json_false());
        bad |= push(drop, json_string_nocheck("ALL"));
        bad |= put(caps, "drop", drop);
        bad |= put(sc, "capabilities", caps);
        bad |= put(seccomp, "type", json_string_nocheck("RuntimeDefault"));
        bad |= put(sc, "seccompProfile", seccomp);
        return built(sc, bad);
}

/* An exec probe of the driver's control socket: `hangar-driver ctl ping`
 * (the command's own binary) connects, sends one request, reads one line:
 * the daemon's loop is alive and serving. All four numbers are set, so the
 * stored pod has exactly these (the API server's defaults add nothing). */
/* The driver's program, driver.command's first word: where the binaries
 * are delivered, a bare name is the bundle's (CONFIG_BUNDLE_PATH/bin/NAME),
 * since the image it runs in may have none on its PATH; a path is kept.
 * A new string, or NULL when out of memory. */
static json_t *driver_program(const hg_config_t *cfg)
{
        const char *word = cfg->driver_command.n ? cfg->driver_command.items[0] : "hangar-driver";
        if (!shape_delivers_binaries(cfg) || strchr(word, '/'))
                return json_string(word);
        char path[4096];
        int w = snprintf(path, sizeof(path), "%s/bin/%s", CONFIG_BUNDLE_PATH, word);
        return w < 0 || (size_t)w >= sizeof(path) ? NULL : json_string(path);
}

static json_t *probe_json(const hg_config_t *cfg, const hg_probe_timing_t *timing)
{
        json_t *p = json_object(), *exec = json_object(), *command = json_array();
        int bad = push(command, driver_program(cfg));
        bad |= push(command, json_string_nocheck("ctl"));
        bad |= push(command, json_string_nocheck("ping"));
        bad |= put(exec, "command", command);
        bad |= put(p, "exec", exec);
        bad |= put(p, "periodSeconds", json_integer(timing->period_s));
        bad |= put(p, "timeoutSeconds", json_integer(timing->timeout_s));
        bad |= put(p, "failureThreshold", json_integer(timing->failures));
        bad |= put(p, "successThreshold", json_integer(1));
        return built(p, bad);
}

/* The driver's environment: only the settings that differ from the
 * daemon's own defaults, so a pod of a default install carries none (and
 * stored pods of earlier releases keep their shape). The pod's author
 * cannot add to it: the container is hangar's, compared member by member
 * (shapecheck.c) and fixed after CREATE (the guard). An empty array when
 * every setting is its default; NULL only when out of memory, never
 * mistaken for "no environment". */
static json_t *driver_env_json(const hg_config_t *cfg)
{
        const struct {
                const char *name, *value, *dflt;
        } vars[] = {
            {SPLIT_MODE_ENV, cfg->driver_uid_split, CONFIG_UID_SPLIT_DEFAULT},
            {"HANGAR_DRIVER_CLONE_SAFETY", cfg->driver_clone_safety, CONFIG_CLONE_SAFETY_AUTO},
            /* So a probe run in the driver's container judges the pod's
             * own delivery without being told. */
            {"HANGAR_DRIVER_BINARIES_FROM", cfg->driver_binaries_from, CONFIG_BINARIES_AGENT_IMAGE},
        };
        json_t *env = json_array();
        int bad = 0;
        /* Delivered, the bundle's programs come first on the driver's PATH:
         * an exec of `hangar-driver ctl ...` or `hangar-probe` into the
         * driver's container finds the daemon's own, in an image with none. */
        if (shape_delivers_binaries(cfg)) {
                json_t *e = json_object();
                int failed = put(e, "name", json_string_nocheck("PATH"));
                failed |= put(e, "value", json_string_nocheck(SHAPE_BIN_DRIVER_PATH));
                bad |= push(env, built(e, failed));
        }
        for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
                if (!vars[i].value || strcmp(vars[i].value, vars[i].dflt) == 0)
                        continue;
                json_t *e = json_object();
                int failed = put(e, "name", json_string_nocheck(vars[i].name));
                failed |= put(e, "value", json_string(vars[i].value));
                bad |= push(env, built(e, failed));
        }
        return built(env, bad);
}

const char *shape_driver_list(const hg_config_t *cfg)
{
        return cfg->driver_native_sidecar ? "initContainers" : "containers";
}

json_t *shape_driver_container_json(const hg_config_t *cfg, const char *image)
{
        json_t *c = json_object(), *command = json_array(), *mounts = json_array();
        int bad = 0;
        for (size_t i = 0; i < cfg->driver_command.n; i++)
                bad |= push(command, i == 0 ? driver_program(cfg)
                                            : json_string(cfg->driver_command.items[i]));
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++)
                if (role_mounts(cfg, SHAPE_ROLE_DRIVER, v)) /* NULL: out of memory */
                        bad |= push(mounts, shape_mount_json(cfg, SHAPE_ROLE_DRIVER, v));
        bad |= put(c, "name", json_string_nocheck(SHAPE_DRIVER_CONTAINER));
        bad |= put(c, "image", json_string(image));
        /* IfNotPresent: the agent's container has just pulled this image, so the
         * driver runs the same bytes and nothing new is pulled. */
        bad |= put(c, "imagePullPolicy", json_string_nocheck("IfNotPresent"));
        bad |= put(c, "command", command);
        json_t *env = driver_env_json(cfg);
        if (!env)
                bad = 1;
        else if (json_array_size(env) == 0)
                json_decref(env);
        else
                bad |= put(c, "env", env);
        bad |= put(c, "resources", resources_json(cfg));
        bad |= put(c, "securityContext", security_context_json(cfg));
        bad |= put(c, "volumeMounts", mounts);
        /* hangar-driver serve's health: the startup probe holds the
         * liveness probe off until the daemon first answers; a daemon that
         * stops answering is restarted by the kubelet (docs/turn.md). */
        if (cfg->driver_probes) {
                bad |= put(c, "startupProbe", probe_json(cfg, &cfg->driver_startup));
                bad |= put(c, "livenessProbe", probe_json(cfg, &cfg->driver_liveness));
        }
        /* A native sidecar runs beside the containers for the pod's life
         * and does not hold a completing pod (a Job's) open. */
        if (cfg->driver_native_sidecar)
                bad |= put(c, "restartPolicy", json_string_nocheck("Always"));
        return built(c, bad);
}

json_t *shape_bin_container_json(const hg_config_t *cfg)
{
        if (!shape_copies_binaries(cfg))
                return NULL;
        json_t *c = json_object(), *command = json_array(), *mounts = json_array();
        /* busybox is the bundle image's own (static); cp -R keeps each file's
         * mode (binaries 0555, libraries 0444) and makes the copy the
         * driver's uid's: nobody else's to change. */
        static const char *const argv[] = {"/bin/busybox", "cp", "-R", CONFIG_BUNDLE_PATH "/.",
                                           SHAPE_BIN_COPY_PATH "/"};
        int bad = 0;
        for (size_t i = 0; i < ARRAY_SIZE(argv); i++)
                bad |= push(command, json_string_nocheck(argv[i]));
        bad |= push(mounts, shape_mount_json(cfg, SHAPE_ROLE_BIN_COPIER, SHAPE_VOLUME_BIN));
        bad |= put(c, "name", json_string_nocheck(SHAPE_BIN_CONTAINER));
        bad |= put(c, "image", json_string(cfg->driver_bundle_image));
        bad |= put(c, "imagePullPolicy", json_string_nocheck("IfNotPresent"));
        bad |= put(c, "command", command);
        /* The driver's requests: a cp of 25 MB needs less, and the pod's
         * effective request is the larger of an init container's and the
         * sum of the others', so this adds nothing to it. */
        bad |= put(c, "resources", resources_json(cfg));
        bad |= put(c, "securityContext", security_context_json(cfg));
        bad |= put(c, "volumeMounts", mounts);
        return built(c, bad);
}

void shape_values_free(shape_values_t *sv)
{
        if (!sv)
                return;
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                json_decref(sv->volume[v]);
                free(sv->volume_text[v]);
                json_decref(sv->agent_mount[v]);
                free(sv->agent_mount_text[v]);
        }
        json_decref(sv->driver_rest);
        free(sv->driver_rest_text);
        json_decref(sv->bin_container);
        free(sv->bin_container_text);
        free(sv);
}

/* value and its text, or -ENOMEM (value taken either way). */
static int with_text(json_t *value, json_t **ret, char **ret_text)
{
        *ret = value;
        *ret_text = value ? jsondump(value) : NULL;
        return *ret_text ? 0 : -ENOMEM;
}

int shape_values_new(const hg_config_t *cfg, shape_values_t **ret)
{
        shape_values_t *sv = calloc(1, sizeof(*sv));
        if (!sv)
                return -ENOMEM;
        int r = 0;
        for (shape_volume_t v = 0; r == 0 && v < SHAPE_VOLUME_COUNT; v++) {
                if (!shape_volume_used(cfg, v))
                        continue;
                r = with_text(shape_volume_json(cfg, v), &sv->volume[v], &sv->volume_text[v]);
                /* A mount the agent has must be there: NULL is then out of memory. */
                if (r == 0 && role_mounts(cfg, SHAPE_ROLE_AGENT, v))
                        r = with_text(shape_mount_json(cfg, SHAPE_ROLE_AGENT, v),
                                      &sv->agent_mount[v], &sv->agent_mount_text[v]);
        }
        /* The whole container with an empty image, less its name and image:
         * what follows them, in the order the builder set it. */
        json_t *rest = r == 0 ? shape_driver_container_json(cfg, "") : NULL;
        if (rest && (json_object_del(rest, "name") < 0 || json_object_del(rest, "image") < 0 ||
                     json_object_size(rest) == 0)) {
                json_decref(rest);
                rest = NULL;
        }
        if (r == 0)
                r = with_text(rest, &sv->driver_rest, &sv->driver_rest_text);
        if (r == 0 && shape_copies_binaries(cfg))
                r = with_text(shape_bin_container_json(cfg), &sv->bin_container,
                              &sv->bin_container_text);
        if (r < 0) {
                shape_values_free(sv);
                return r;
        }
        *ret = sv;
        return 0;
}

json_t *shape_values_driver(const shape_values_t *sv, const char *image, strbuf_t *text)
{
        json_t *c = json_object();
        int bad = put(c, "name", json_string_nocheck(SHAPE_DRIVER_CONTAINER));
        bad |= put(c, "image", json_string(image));
        const char *key;
        json_t *v;
        json_object_foreach (sv->driver_rest, key, v)
                bad |= put(c, key, json_incref(v));
        /* {"name":...,"image":..., then the rest's text without its '{'. */
        if (!bad)
                bad = strbuf_puts(text, "{\"name\":") < 0 ||
                      jsondump_append_string(text, SHAPE_DRIVER_CONTAINER,
                                             strlen(SHAPE_DRIVER_CONTAINER)) < 0 ||
                      strbuf_puts(text, ",\"image\":") < 0 ||
                      jsondump_append_string(text, image, strlen(image)) < 0 ||
                      strbuf_puts(text, ",") < 0 || strbuf_puts(text, sv->driver_rest_text + 1) < 0;
        return built(c, bad);
}
