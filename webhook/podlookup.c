#include "podlookup.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "k8sclient.h"

struct podlookup {
        pthread_mutex_t lock; /* guards everything below */
        pthread_cond_t wake;
        podlookup_job_t *head, *tail;
        unsigned queued;  /* jobs in the list */
        unsigned running; /* jobs taken by a thread, not yet returned */
        unsigned max_queued;
        bool stopping;
        pthread_t *threads;
        unsigned nthreads; /* started, not yet joined */
};

static void *lane_main(void *arg)
{
        podlookup_t *p = arg;
        pthread_mutex_lock(&p->lock);
        for (;;) {
                while (!p->head && !p->stopping)
                        pthread_cond_wait(&p->wake, &p->lock);
                podlookup_job_t *job = p->head;
                if (!job)
                        break; /* stopping, and nothing left */
                p->head = job->next;
                if (!p->head)
                        p->tail = NULL;
                p->queued--;
                p->running++;
                bool cancelled = p->stopping;
                pthread_mutex_unlock(&p->lock);
                job->next = NULL;
                job->run(job, cancelled);
                pthread_mutex_lock(&p->lock);
                p->running--;
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

int podlookup_new(unsigned threads, unsigned max_queued, podlookup_t **ret)
{
        if (threads == 0)
                return -EINVAL;
        podlookup_t *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->threads = calloc(threads, sizeof(*p->threads));
        if (!p->threads) {
                free(p);
                return -ENOMEM;
        }
        p->max_queued = max_queued;
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->wake, NULL);
        for (unsigned i = 0; i < threads; i++) {
                int r = pthread_create(&p->threads[i], NULL, lane_main, p);
                if (r != 0) {
                        podlookup_free(p);
                        return -r;
                }
                p->nthreads++;
        }
        *ret = p;
        return 0;
}

int podlookup_submit(podlookup_t *p, podlookup_job_t *job)
{
        pthread_mutex_lock(&p->lock);
        int r = p->stopping ? -ESHUTDOWN : p->queued >= p->max_queued ? -EAGAIN : 0;
        if (r == 0) {
                job->next = NULL;
                if (p->tail)
                        p->tail->next = job;
                else
                        p->head = job;
                p->tail = job;
                p->queued++;
                pthread_cond_signal(&p->wake);
        }
        pthread_mutex_unlock(&p->lock);
        return r;
}

unsigned podlookup_pending(podlookup_t *p)
{
        pthread_mutex_lock(&p->lock);
        unsigned n = p->queued + p->running;
        pthread_mutex_unlock(&p->lock);
        return n;
}

void podlookup_stop(podlookup_t *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->lock);
        /* Only the thread stopping the server joins (the server's own
         * shutdown, then its free). */
        for (unsigned i = 0; i < p->nthreads; i++)
                pthread_join(p->threads[i], NULL);
        p->nthreads = 0;
}

void podlookup_free(podlookup_t *p)
{
        if (!p)
                return;
        podlookup_stop(p);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p->threads);
        free(p);
}

int podlookup_read(const char *kubeconfig, const char *ns, const char *name, long timeout_ms,
                   json_t **ret_pod, hg_error_t *err)
{
        /* A client per read, as the webhook has always made one: its
         * kubeconfig (and a token in it) is read fresh, and port-forwards
         * are rare. */
        k8s_client_t *k8s = NULL;
        int r = k8s_client_new(kubeconfig, &k8s, err);
        if (r < 0)
                return r;
        k8s_client_set_timeout_ms(k8s, timeout_ms);
        char path[400];
        int w = snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
        long status = 0;
        json_t *pod = NULL;
        if (w < 0 || (size_t)w >= sizeof(path))
                r = error_set(err, -ENAMETOOLONG, "pod name too long");
        else
                r = k8s_request(k8s, "GET", path, NULL, NULL, &status, &pod, err);
        k8s_client_free(k8s);
        if (r < 0)
                return r;
        if (status != 200 || !json_is_object(pod)) {
                char buf[32];
                r = error_set(err, -EIO, "reading pod %s/%s: %s", ns, name,
                              k8s_status_message(pod, status, buf, sizeof(buf)));
                json_decref(pod);
                return r;
        }
        *ret_pod = pod;
        return 0;
}
