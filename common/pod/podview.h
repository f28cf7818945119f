/* How a pod is read, the one place for it. Two ways in:
 *
 * - checked: the parts the webhook's decision looks at, their types checked
 *   once (podview_read into a pod_view_t), the three container lists by
 *   name rather than by index, iteration over every container, the agent
 *   lookup, and the projection (which parts of a review's pod are built at
 *   all). mutate.c decides on what a pod_view_t holds; everything it reads
 *   of the pod is reached through here or through shapecheck.c (a pod
 *   marked injected), so podview_projection lists exactly that.
 * - as it is: any JSON value read as a pod (a stored pod, both pods of an
 *   UPDATE, the spec check's pod), where a member of the wrong type reads
 *   as absent: podview_spec, podview_string, podview_container, ... The
 *   spec check, the guard and the shape read a pod through these. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "config.h"
#include "error.h"
#include "jsonparse.h"

/* The container lists of a pod spec, in the order the API server starts
 * them (and the order every check walks them in). */
typedef enum podview_list {
        PODVIEW_INIT,       /* spec.initContainers (native sidecars among them) */
        PODVIEW_CONTAINERS, /* spec.containers: the agent's list */
        PODVIEW_EPHEMERAL,  /* spec.ephemeralContainers */
        PODVIEW_LIST_COUNT,
} podview_list_t;

/* The parts of a pod the decision reads. Absent and JSON null are both
 * NULL. Borrowed from the pod: patch ops added later never replace these
 * objects, only add into them. */
typedef struct pod_view {
        json_t *annotations;
        json_t *spec;
        json_t *volumes;
        json_t *lists[PODVIEW_LIST_COUNT];
} pod_view_t;

/* The parts of a Pod the webhook reads (for jsonparse_load_projected):
 * given a pod read through it, the decision and its patch are exactly those
 * for the whole pod. The fuzz targets check it on every input. */
extern const jsonparse_proj_t podview_projection;

/* The list's member name in a pod spec ("initContainers", ...). */
const char *podview_list_name(podview_list_t list);

/* Reads pod into *ret: 0; -EINVAL (err says what is wrong: an invalid pod,
 * to deny with that message) when the parts it reads have the wrong types,
 * a container or volume has no name, a mountPath does not fit PATHNORM_MAX
 * once normalised, spec.containers is empty, or two containers share a
 * name; -ENOMEM. *ret is zeroed first. */
int podview_read(json_t *pod, pod_view_t *ret, hg_error_t *err);

/* Calls fn on every container of every list, in podview_list_t order, with
 * its name (podview_read made sure it is a string), until fn returns
 * non-zero; returns that value, or 0. */
typedef int (*podview_container_fn)(json_t *c, const char *name, podview_list_t list, void *ctx);
int podview_for_each_container(const pod_view_t *view, podview_container_fn fn, void *ctx);

/* Whether any container of any list is named name. */
bool podview_has_container(const pod_view_t *view, const char *name);

/* The container named name in spec.containers (the agent: never an init
 * or ephemeral container) and its index there, or NULL. */
json_t *podview_agent(const pod_view_t *view, const char *name, size_t *ret_index);

/* The annotation's value when it is a string, else NULL. */
const char *podview_annotation(const pod_view_t *view, const char *key);

/* A pod as it is, whatever its JSON: a member of another type than the one
 * asked for reads as absent (NULL), never as an error. */

/* pod.spec (NULL when pod is not an object). */
json_t *podview_spec(json_t *pod);

/* pod.metadata.annotations (NULL when absent). */
json_t *podview_annotations(json_t *pod);

/* obj's member key when it is a string, else NULL. */
const char *podview_string(json_t *obj, const char *key);

/* The container named name in pod's spec.<list> ("containers",
 * "initContainers", "ephemeralContainers"): the first whose name is that
 * string, or NULL. */
json_t *podview_container(json_t *pod, const char *list, const char *name);

/* The volume named name in pod's spec.volumes, or NULL. */
json_t *podview_volume(json_t *pod, const char *name);

/* Whether a pod of this spec runs under gVisor: its runtimeClassName is one
 * of the configured gVisor classes (gvisor.runtimeClassNames). */
bool podview_runs_under_gvisor(const hg_config_t *cfg, json_t *spec);
