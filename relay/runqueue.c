#include "runqueue.h"

#include <errno.h>

int runqueue_push(runqueue_t *q, const frame_run_t *req)
{
        if (q->len == RUNQUEUE_MAX)
                return -ENOBUFS;
        q->q[(q->head + q->len++) % RUNQUEUE_MAX] = *req;
        return 0;
}

bool runqueue_pop(runqueue_t *q, frame_run_t *ret)
{
        if (q->len == 0)
                return false;
        *ret = q->q[q->head];
        q->head = (q->head + 1) % RUNQUEUE_MAX;
        q->len--;
        return true;
}

size_t runqueue_len(const runqueue_t *q)
{
        return q->len;
}

void runqueue_clear(runqueue_t *q)
{
        frame_run_t req;
        while (runqueue_pop(q, &req))
                frame_run_free(&req);
}
