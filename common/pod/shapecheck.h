/* A pod's spec against the sidecar's shape: the same table (shape.c) and the
 * same generators the webhook injects with, read the other way. One
 * judgement, two readers: `hangar-probe spec` reports every finding (a pod
 * read through the API or from a file), and the webhook, for a pod already
 * marked injected, asks for the first failure in the sidecar's scope. Each
 * finding has a stable code so the verdict can act on it.
 *
 * The driver is compared member by member, strictly: every member the shape
 * sets must be there and equal (the command is the configured one), and the
 * only others allowed are the ones the API server itself adds to every
 * container (terminationMessagePath, terminationMessagePolicy with their
 * default values). */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "config.h"
#include "error.h"
#include "shape.h"

/* Which side a finding is about. */
typedef enum shapecheck_scope {
        /* The sidecar as the webhook injects it, and what the webhook skips
         * pods for (privileged, host namespaces): in a pod marked injected,
         * a departure means someone changed it since, so the webhook denies. */
        SHAPECHECK_SIDECAR,
        /* The pod's own choices the webhook injects around: the uids and
         * capabilities of the containers beside the driver. The webhook
         * injects whatever they are, so only the verdict acts on them. */
        SHAPECHECK_POD,
} shapecheck_scope_t;

/* Checks pod; returns a JSON object {"result": "pass"|"fail", "checks": [...],
 * "other_containers": [...]} (NULL on allocation failure) and sets *ret_pass.
 * other_containers is a fact, not a finding: it passes or fails nothing. */
json_t *shapecheck_pod(const hg_config_t *cfg, json_t *pod, bool *ret_pass);

/* The names of pod's containers, other than the agent's and the driver,
 * that can run while the agent's does: regular containers, restartable
 * (native sidecar) init containers, ephemeral containers. A sealed grade
 * is isolated only when there is none (docs/graders.md: the grader's sweep
 * sees only the agent's PID namespace). NULL on allocation failure. */
json_t *shapecheck_other_containers(const hg_config_t *cfg, json_t *pod);

typedef struct shapecheck_finding {
        const char *code; /* "spec.driver", ... */
        char detail[ERROR_MESSAGE_MAX];
} shapecheck_finding_t;

/* The webhook's reading: 1 with *ret the first failing finding in the
 * sidecar's scope, 0 when there is none, -ENOMEM. */
int shapecheck_sidecar(const hg_config_t *cfg, json_t *pod, shapecheck_finding_t *ret);

/* Annotations a pod with the sidecar may not bring (they apply to every
 * sandbox it gets, and are fixed after CREATE): a dev.gvisor.spec.mount.*
 * hint for a hangar volume other than share, type and options on a pod of
 * a gVisor RuntimeClass (none at all on another pod), one whose .source
 * names a hangar volume's directory, a dev.gvisor.empty-dir.<hangar
 * volume>.* other than force-shared false, any dev.gvisor.flag.*, and an
 * AppArmor profile for the driver other than RuntimeDefault: its
 * annotation (the API server copies it onto the driver's field), but for
 * the runtime/default one it writes itself from a pod-level
 * RuntimeDefault, or the pod-level field (the kubelet applies it to the
 * driver). This reading is the webhook's before it injects, when the
 * values of the six keys it writes do not matter (it replaces them); 1
 * with *ret the first, 0 when there is none.
 *
 * shapecheck_sidecar (and shapecheck_pod, the probe's) read them as
 * stored, where the values count whoever wrote them (GKE Sandbox's own
 * admission writes these hints for every emptyDir, hangar's included when
 * it runs after the webhook): on a gVisor pod share and type must be
 * there for both volumes, and share, type and options must mount each as
 * the shape says: share pod or container (runsc mounts both alike, once
 * for the whole sandbox), type bind for hangar-home and tmpfs for
 * hangar-ctl, options only rw, rprivate and hangar-ctl's size= as the
 * webhook writes it. */
int shapecheck_annotations(const hg_config_t *cfg, json_t *pod, shapecheck_finding_t *ret);

/* The role a container of a pod's list ("containers", "initContainers",
 * "ephemeralContainers") plays in the shape. */
shape_role_t shapecheck_role(const hg_config_t *cfg, const char *list, const char *name);

/* How container c mounts volume v (its volumeMounts: name, readOnly):
 * absent, read-only or read-write. A volume mounted more than once counts as
 * its loosest mount: a second, writable mount of hangar-home elsewhere makes
 * the agent's read-only one worthless. */
shape_access_t shapecheck_mount_access(json_t *c, shape_volume_t v);

/* The service-account token's directory in every container, as the
 * ServiceAccount admission plugin mounts it (and client libraries read it). */
#define SHAPECHECK_TOKEN_PATH "/var/run/secrets/kubernetes.io/serviceaccount"
/* The prefix of that plugin's projected token volume's name. */
#define SHAPECHECK_TOKEN_VOLUME_PREFIX "kube-api-access-"

/* Whether mount m (a volumeMounts entry) is a mount of the pod's
 * service-account token: at or under SHAPECHECK_TOKEN_PATH, or of the
 * plugin's token volume wherever it is. A path too long to compare counts
 * as one (fail closed: it is removed, never kept by mistake). */
bool shapecheck_is_token_mount(json_t *m);
/* Whether m is exactly the mount the ServiceAccount plugin adds to a
 * container: its token volume, read-only, at SHAPECHECK_TOKEN_PATH. */
bool shapecheck_is_plugin_token_mount(json_t *m);
