/* The port-forward lookups' own lane, off the HTTPS listener's workers.
 *
 * A port-forward review needs the pod as stored, read from the API server.
 * Read on the worker that took the review, a slow or frozen API server held
 * that worker, and with it every connection MHD gave the worker, for as long
 * as the read took: a few port-forwards stalled every review. Here the
 * reads run on a few threads of their own, from a bounded queue: the server
 * suspends the review's connection, queues a job, and the job resumes it
 * with its answer. A full queue is refused at once (the server then answers
 * the review as undecidable, a denial), never waited on.
 *
 * The pool knows nothing of HTTP or reviews: a job is a function. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "error.h"

typedef struct podlookup podlookup_t;

typedef struct podlookup_job podlookup_job_t;
struct podlookup_job {
        /* Called once on a pool thread; cancelled: the pool is stopping and
         * the job must only finish (answer without reading). */
        void (*run)(podlookup_job_t *job, bool cancelled);
        podlookup_job_t *next; /* the pool's */
};

/* threads (>= 1) threads serving at most max_queued jobs waiting. */
int podlookup_new(unsigned threads, unsigned max_queued, podlookup_t **ret);
/* Queues job: 0, or -EAGAIN with the queue full, -ESHUTDOWN once stopping
 * (then job is not run). */
int podlookup_submit(podlookup_t *p, podlookup_job_t *job);
/* Jobs queued or running now (for the metrics). */
unsigned podlookup_pending(podlookup_t *p);
/* Stops: jobs still queued run cancelled, running ones finish, the threads
 * are joined; later submits get -ESHUTDOWN. NULL is fine; so is twice. */
void podlookup_stop(podlookup_t *p);
/* podlookup_stop, then frees. NULL is fine. */
void podlookup_free(podlookup_t *p);

/* The pod ns/name as stored, read with the credentials of kubeconfig (the
 * webhook's setting; NULL or "": in-cluster) within timeout_ms: 0 with
 * *ret_pod (owned), or <0 with err saying why (a timeout included: the
 * caller fails closed). ns and name must already be a namespace's and a
 * pod's syntax: they go into the path as they are. */
int podlookup_read(const char *kubeconfig, const char *ns, const char *name, long timeout_ms,
                   json_t **ret_pod, hg_error_t *err);
