#include "turnexec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "shape.h"

static atomic_uint execs;

unsigned turnexec_count(void)
{
        return atomic_load(&execs);
}

static void *job_thread(void *arg)
{
        execjob_t *j = arg;
        atomic_fetch_add(&execs, 1);
        j->r = wsexec_run(j->k, &j->req, &j->io, &j->res, &j->err);
        if (j->done)
                j->done(j->done_ud);
        return NULL;
}

void execjob_start(execjob_t *j)
{
        j->started = pthread_create(&j->thread, NULL, job_thread, j) == 0;
        if (!j->started)
                (void)job_thread(j);
}

void execjob_join(execjob_t *j)
{
        if (j->started)
                (void)pthread_join(j->thread, NULL);
        j->started = false;
}

int execjob_status(const execjob_t *j)
{
        return j->r == 0 && j->res.failure == WSEXEC_OK ? 0 : -1;
}

int capture_output(void *ud, int channel, const uint8_t *data, size_t len)
{
        capture_t *c = ud;
        bool out = channel == EXS_CH_STDOUT;
        strbuf_t *b = out ? &c->out : &c->err;
        size_t max = out ? TURNEXEC_CAPTURE_MAX : TURNEXEC_STDERR_MAX;
        if (b->len + len > max) {
                *(out ? &c->out_cut : &c->err_cut) = true;
                len = max - b->len;
        }
        return strbuf_append(b, (const char *)data, len);
}

void capture_free(capture_t *c)
{
        /* A ctl start reply holds the relay's token. */
        if (c->out.data)
                explicit_bzero(c->out.data, c->out.len);
        strbuf_free(&c->out);
        strbuf_free(&c->err);
}

int turnexec_ctl(k8s_client_t *k, const char *ns, const char *pod, char *const *argv, int in_fd,
                 capture_t *cap, wsexec_result_t *res, hg_error_t *err)
{
        wsexec_request_t req = {.ns = ns,
                                .pod = pod,
                                .container = SHAPE_DRIVER_CONTAINER,
                                .argv = argv,
                                .stdin_open = in_fd >= 0,
                                /* ctl reads a spec to its end: over v4 it
                                 * would wait forever (docs/client.md). */
                                .only = in_fd >= 0 ? EXS_PROTO_V5 : EXS_PROTO_NONE};
        wsexec_io_t io = {.in_fd = in_fd, .output = capture_output, .ud = cap};
        atomic_fetch_add(&execs, 1);
        int r = wsexec_run(k, &req, &io, res, err);
        return r == 0 && res->failure == WSEXEC_OK ? 0 : -1;
}

int tokenline_open(tokenline_t *t, int *ret_rd)
{
        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0)
                return -errno;
        t->wr = fds[1];
        t->sent = false;
        *ret_rd = fds[0];
        return 0;
}

void tokenline_close(tokenline_t *t)
{
        if (t->wr >= 0)
                (void)close(t->wr);
        t->wr = -1;
        t->known = false;
        explicit_bzero(t->line, sizeof(t->line));
}

void tokenline_send(tokenline_t *t)
{
        if (t->wr >= 0 && t->known && !t->sent)
                t->sent = fd_write_all(t->wr, t->line, strlen(t->line)) == 0;
        tokenline_close(t);
}

void execjob_side(execjob_t *j, k8s_client_t *k, const char *ns, const char *pod,
                  const char *container, char **argv, int in_rd,
                  int (*output)(void *ud, int channel, const uint8_t *data, size_t len), void *ud)
{
        *j = (execjob_t){
            .k = k,
            .req = {.ns = ns, .pod = pod, .container = container, .argv = argv, .stdin_open = true},
            .io = {.in_fd = in_rd, .output = output, .ud = ud},
            .r = -1};
}
