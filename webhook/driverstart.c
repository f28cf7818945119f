#include "driverstart.h"

#include <stdio.h>
#include <string.h>

#include "jsonx.h"
#include "shape.h"

#define ADVICE_START                                                                          \
        "the runtime could not run the driver's command: the image lacks hangar's binaries, " \
        "or they are for another architecture or not executable; use an image with them "     \
        "(docs/images.md), then recreate the pod"
#define ADVICE_CONFIG                                                                       \
        "the kubelet could not build hangar-driver's container from its spec (the message " \
        "names what is missing); fix that, then recreate the pod"
#define ADVICE_PULL                                                                        \
        "the driver's image cannot be pulled: check its name, the registry and the pod's " \
        "imagePullSecrets"
#define ADVICE_EXITED                                                                      \
        "hangar-driver started and exited: its termination message (above) says why; fix " \
        "that and recreate the pod"

/* The kubelet's waiting reasons that mean the container will not start
 * until something changes, with what to do about each. ContainerCreating
 * and PodInitializing are the normal way there and are not listed. */
static const struct {
        const char *reason;
        const char *advice;
} waiting_failures[] = {
    {"RunContainerError", ADVICE_START},
    {"CreateContainerError", ADVICE_START},
    {"StartError", ADVICE_START},
    {"ContainerCannotRun", ADVICE_START},
    {"CreateContainerConfigError", ADVICE_CONFIG},
    {"ErrImagePull", ADVICE_PULL},
    {"ImagePullBackOff", ADVICE_PULL},
    {"InvalidImageName", ADVICE_PULL},
    {"ErrImageNeverPull", ADVICE_PULL},
    {"CrashLoopBackOff", ADVICE_EXITED},
};

static const char *waiting_advice(const char *reason)
{
        for (size_t i = 0; i < sizeof(waiting_failures) / sizeof(waiting_failures[0]); i++)
                if (strcmp(waiting_failures[i].reason, reason) == 0)
                        return waiting_failures[i].advice;
        return NULL;
}

/* hangar-driver's entry in the pod's container statuses: a regular
 * container, or an init container when it runs as a native sidecar. */
static json_t *driver_status(json_t *status)
{
        static const char *const lists[] = {"containerStatuses", "initContainerStatuses"};
        for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
                size_t i;
                json_t *c;
                json_array_foreach (json_object_get(status, lists[l]), i, c) {
                        const char *name = NULL;
                        if (jsonx_string(c, "name", &name) == 0 &&
                            strcmp(name, SHAPE_DRIVER_CONTAINER) == 0)
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

/* The message on one line: the termination message may be several (the
 * driver's, or the last log lines with FallbackToLogsOnError). */
static void one_line(char *s)
{
        for (; *s; s++)
                if (*s == '\n' || *s == '\r' || *s == '\t')
                        *s = ' ';
}

int driver_start_failed(json_t *pod, driver_start_t *ret)
{
        *ret = (driver_start_t){0};
        json_t *meta = json_object_get(pod, "metadata");
        /* A pod on its way out stops its containers: not a failed start. */
        if (json_object_get(meta, "deletionTimestamp"))
                return 0;
        json_t *cs = driver_status(json_object_get(pod, "status"));
        json_t *state = json_object_get(cs, "state");
        json_t *waiting = json_object_get(state, "waiting");
        json_t *term = json_object_get(state, "terminated");
        json_t *last = json_object_get(json_object_get(cs, "lastState"), "terminated");
        if (json_is_object(waiting)) {
                const char *reason = string_or(waiting, "reason", "");
                const char *advice = waiting_advice(reason);
                if (!advice)
                        return 0;
                char exit[ERROR_MESSAGE_MAX / 2] = "";
                if (json_is_object(last))
                        describe_exit(last, exit, sizeof(exit));
                const char *msg = string_or(waiting, "message", "");
                (void)snprintf(ret->message, sizeof(ret->message), "%s%s%s%s", msg,
                               msg[0] && exit[0] ? "; " : "", exit[0] ? "last " : "", exit);
                (void)snprintf(ret->reason, sizeof(ret->reason), "%s", reason);
                ret->advice = advice;
        } else if (json_is_object(term)) {
                /* Stopped for good (restartPolicy Never or OnFailure after a
                 * success): a failure when it says so. */
                json_int_t code = json_integer_value(json_object_get(term, "exitCode"));
                if (code == 0 && !string_or(term, "message", "")[0])
                        return 0;
                describe_exit(term, ret->message, sizeof(ret->message));
                (void)snprintf(ret->reason, sizeof(ret->reason), "%s",
                               string_or(term, "reason", "Terminated"));
                ret->advice = ADVICE_EXITED;
        } else {
                return 0;
        }
        if (!ret->message[0])
                (void)snprintf(ret->message, sizeof(ret->message), "no message from the kubelet");
        one_line(ret->message);
        return 1;
}
