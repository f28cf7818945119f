#include "driverstart.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "shape.h"

/* What an admin can do, by the kind of failure and the container: the
 * driver runs the environment's image (or the delivered bundle), hangar-bin
 * the bundle image. */
typedef enum failure_kind { KIND_START, KIND_CONFIG, KIND_PULL, KIND_EXITED, KIND_COUNT } kind_t;

static const char *const driver_advice[KIND_COUNT] = {
    [KIND_START] = "the runtime could not run the driver's command: the image lacks hangar's "
                   "binaries, or they are for another architecture or not executable; use an "
                   "image with them or deliver them (docs/images.md), then recreate the pod",
    [KIND_CONFIG] = "the kubelet could not build hangar-driver's container from its spec (the "
                    "message names what is missing); fix that, then recreate the pod",
    [KIND_PULL] = "the driver's image cannot be pulled: check its name, the registry and the "
                  "pod's imagePullSecrets",
    [KIND_EXITED] = "hangar-driver started and exited: its termination message (above) says "
                    "why; fix that and recreate the pod",
};

static const char *const bin_advice[KIND_COUNT] = {
    [KIND_START] = "the runtime could not run hangar-bin's copy: the bundle image "
                   "(driver.binaries.bundleImage) is not hangar-bin's, or is for another "
                   "architecture; hangar-driver waits for it; recreate the pod once fixed",
    [KIND_CONFIG] = "the kubelet could not build hangar-bin's container from its spec (the "
                    "message names what is missing); fix that, then recreate the pod",
    [KIND_PULL] = "the bundle image hangar-bin copies from (driver.binaries.bundleImage) cannot "
                  "be pulled: check its name, the registry and the pod's imagePullSecrets",
    [KIND_EXITED] = "hangar-bin's copy of hangar's binaries failed (its message above says "
                    "why), so hangar-driver never starts; fix that and recreate the pod",
};

/* The kubelet's waiting reasons that mean the container will not start
 * until something changes. ContainerCreating and PodInitializing are the
 * normal way there and are not listed. */
static const struct {
        const char *reason;
        kind_t kind;
} waiting_failures[] = {
    {"RunContainerError", KIND_START},
    {"CreateContainerError", KIND_START},
    {"StartError", KIND_START},
    {"ContainerCannotRun", KIND_START},
    {"CreateContainerConfigError", KIND_CONFIG},
    {"ErrImagePull", KIND_PULL},
    {"ImagePullBackOff", KIND_PULL},
    {"InvalidImageName", KIND_PULL},
    {"ErrImageNeverPull", KIND_PULL},
    {"CrashLoopBackOff", KIND_EXITED},
};

static const char *advice_for(const char *container, kind_t kind)
{
        return strcmp(container, SHAPE_BIN_CONTAINER) == 0 ? bin_advice[kind] : driver_advice[kind];
}

/* A terminated state the runtime wrote because the command never ran
 * (the kubelet's back-off after a failed start shows it as lastState). */
static bool never_ran(json_t *term)
{
        const char *reason = NULL;
        return jsonx_string(term, "reason", &reason) == 0 &&
               (strcmp(reason, "StartError") == 0 || strcmp(reason, "ContainerCannotRun") == 0);
}

/* What to do when container waits for reason after last (a terminated
 * state or NULL); NULL when that is no failure. */
static const char *waiting_advice(const char *container, const char *reason, json_t *last)
{
        for (size_t i = 0; i < sizeof(waiting_failures) / sizeof(waiting_failures[0]); i++) {
                if (strcmp(waiting_failures[i].reason, reason) != 0)
                        continue;
                kind_t kind = waiting_failures[i].kind;
                if (kind == KIND_EXITED && never_ran(last))
                        kind = KIND_START;
                return advice_for(container, kind);
        }
        return NULL;
}

/* container's entry in the pod's container statuses: a regular container,
 * or an init container (hangar-bin; hangar-driver as a native sidecar). */
static json_t *container_status(json_t *status, const char *container)
{
        static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
        for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(status, lists[l]), i, c) {
                        const char *name = NULL;
                        if (jsonx_string(c, "name", &name) == 0 && strcmp(name, container) == 0)
                                return c;
                }
        }
        return NULL;
}

static const char *string_or(json_t *obj, const char *key, const char *fallback)
{
        const char *v = NULL;
        return jsonx_string(obj, key, &v) == 0 ? v : fallback;
}

/* "exit N (REASON): MESSAGE" of a terminated state into buf. */
static void describe_exit(json_t *term, char *buf, size_t size)
{
        json_int_t code = json_integer_value(json_object_get(term, "exitCode"));
        const char *msg = string_or(term, "message", "");
        (void)snprintf(buf, size, "exit %lld (%s)%s%s", (long long)code,
                       string_or(term, "reason", "no reason"), msg[0] ? ": " : "", msg);
}

/* The message on one line: a termination message may be several (the
 * driver's, or the last log lines with FallbackToLogsOnError). */
static void one_line(char *s)
{
        for (; *s; s++)
                if (*s == '\n' || *s == '\r' || *s == '\t')
                        *s = ' ';
}

/* One container's status: 1 with ret filled when it cannot run. */
static int container_failed(json_t *status, const char *container, driver_start_t *ret)
{
        *ret = (driver_start_t){.container = container};
        json_t *cs = container_status(status, container);
        json_t *state = json_object_get(cs, "state");
        json_t *waiting = json_object_get(state, "waiting");
        json_t *term = json_object_get(state, "terminated");
        json_t *last = json_object_get(json_object_get(cs, "lastState"), "terminated");
        if (json_is_object(waiting)) {
                const char *reason = string_or(waiting, "reason", "");
                const char *advice = waiting_advice(container, reason, last);
                if (!advice)
                        return 0;
                char exit[DRIVER_START_MESSAGE_MAX / 2] = "";
                if (json_is_object(last))
                        describe_exit(last, exit, sizeof(exit));
                /* The back-off's own message only repeats the container's
                 * and pod's names: the last exit says why. */
                const char *msg = strcmp(reason, "CrashLoopBackOff") == 0 && exit[0]
                                      ? ""
                                      : string_or(waiting, "message", "");
                (void)snprintf(ret->message, sizeof(ret->message), "%s%s%s%s", msg,
                               msg[0] && exit[0] ? "; " : "", exit[0] ? "last " : "", exit);
                (void)snprintf(ret->reason, sizeof(ret->reason), "%s", reason);
                ret->advice = advice;
        } else if (json_is_object(term)) {
                /* Stopped for good (restartPolicy Never, or a copy that
                 * ended): a failure when it says so. */
                json_int_t code = json_integer_value(json_object_get(term, "exitCode"));
                if (code == 0 && !string_or(term, "message", "")[0])
                        return 0;
                describe_exit(term, ret->message, sizeof(ret->message));
                (void)snprintf(ret->reason, sizeof(ret->reason), "%s",
                               string_or(term, "reason", "Terminated"));
                ret->advice = advice_for(container, never_ran(term) ? KIND_START : KIND_EXITED);
        } else {
                return 0;
        }
        if (!ret->message[0])
                (void)snprintf(ret->message, sizeof(ret->message), "no message from the kubelet");
        one_line(ret->message);
        return 1;
}

int driver_start_failed(json_t *pod, driver_start_t *ret)
{
        *ret = (driver_start_t){.container = SHAPE_DRIVER_CONTAINER};
        /* A pod on its way out stops its containers: not a failed start. */
        if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                return 0;
        json_t *status = json_object_get(pod, "status");
        if (container_failed(status, SHAPE_BIN_CONTAINER, ret) == 1)
                return 1;
        return container_failed(status, SHAPE_DRIVER_CONTAINER, ret);
}
