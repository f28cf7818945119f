/* Whether the kubelet could start a pod's hangar-driver (and, with the
 * binaries delivered by an init container, hangar-bin, which copies them
 * first), read from the pod's status as the API server stores it.
 *
 * The webhook injects hangar-driver at CREATE without seeing the image's
 * files, so a driver whose binaries are missing from the image, built for
 * another architecture or not executable is admitted, and the pod then
 * never becomes Ready. The only record of why is the driver container's
 * status, written by the kubelet: a waiting reason with the runtime's
 * message (RunContainerError, CreateContainerError, ErrImagePull, ...), or
 * a terminated state with the termination message the driver wrote on its
 * way out (or, with terminationMessagePolicy FallbackToLogsOnError, its
 * last log lines). `hangar-webhook audit` reports these pods with that
 * message and what an admin can do about it. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

/* The runtime's words can be long (gVisor names the whole PATH searched). */
#define DRIVER_START_MESSAGE_MAX 768

typedef struct driver_start {
        /* The container that cannot run: hangar-bin or hangar-driver. */
        const char *container;
        /* The kubelet's reason (RunContainerError, CrashLoopBackOff, Error,
         * ...), as written on the status. */
        char reason[64];
        /* The runtime's words or the driver's termination message, and the
         * last exit when the kubelet is backing off a restart; one line. */
        char message[DRIVER_START_MESSAGE_MAX];
        /* What to do about it: fixed text per reason. */
        const char *advice;
} driver_start_t;

/* 1 when pod's status says hangar-bin's copy or hangar-driver cannot start
 * or exited with a message (ret filled; hangar-bin first: the driver waits
 * for it), 0 when it says nothing of the kind (no status yet, creating,
 * running, a copy that completed, a pod being deleted). pod is only read. */
int driver_start_failed(json_t *pod, driver_start_t *ret);
