#include "procstop.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void)
{
        struct timespec t;
        (void)clock_gettime(CLOCK_MONOTONIC, &t);
        return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

size_t procstop_pin(const char *prog, procpin_t *pins, size_t n)
{
        size_t refused = 0;
        for (size_t i = 0; i < n; i++) {
                pins[i].pidfd = -1;
                pins[i].ended = false;
                int r = procid_pin(&pins[i].id, &pins[i].pidfd);
                if (r == -ESTALE) {
                        fprintf(stderr,
                                "%s: pid %d is another process now (not the one started at tick "
                                "%llu): not signalled\n",
                                prog, (int)pins[i].id.pid, (unsigned long long)pins[i].id.start);
                        refused++;
                }
                if (r < 0)
                        pins[i].ended = true;
        }
        return refused;
}

static size_t mark_ended(procpin_t *pins, size_t n)
{
        size_t running = 0;
        for (size_t i = 0; i < n; i++) {
                if (!pins[i].ended && procid_exited(pins[i].pidfd))
                        pins[i].ended = true;
                if (!pins[i].ended)
                        running++;
        }
        return running;
}

size_t procstop_wait(procpin_t *pins, size_t n, long timeout_ms)
{
        long deadline = now_ms() + timeout_ms;
        struct pollfd *p = calloc(n ? n : 1, sizeof(*p));
        if (!p) {
                /* No memory for the poll set: report them running rather than
                 * claim they ended. */
                return mark_ended(pins, n);
        }
        size_t running;
        while ((running = mark_ended(pins, n)) > 0) {
                long left = deadline - now_ms();
                if (left <= 0)
                        break;
                for (size_t i = 0; i < n; i++)
                        p[i] = (struct pollfd){.fd = pins[i].ended ? -1 : pins[i].pidfd,
                                               .events = POLLIN};
                int r = poll(p, n, left > 1000 ? 1000 : (int)left);
                if (r < 0 && errno != EINTR)
                        break;
        }
        free(p);
        return running;
}

static void signal_running(const char *prog, procpin_t *pins, size_t n, int sig)
{
        for (size_t i = 0; i < n; i++) {
                if (pins[i].ended)
                        continue;
                int r = procid_signal(pins[i].pidfd, sig);
                /* ESRCH: it ended between the look and the signal. */
                if (r < 0 && r != -ESRCH)
                        fprintf(stderr, "%s: signal %d to pid %d: %s\n", prog, sig,
                                (int)pins[i].id.pid, strerror(-r));
        }
}

size_t procstop_run(const char *prog, procpin_t *pins, size_t n, bool term, long grace_ms,
                    long kill_wait_ms)
{
        if (term)
                signal_running(prog, pins, n, SIGTERM);
        size_t running = procstop_wait(pins, n, grace_ms);
        if (running == 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                if (!pins[i].ended)
                        fprintf(stderr,
                                "%s: pid %d (started at tick %llu) still running after %ld ms: "
                                "SIGKILL\n",
                                prog, (int)pins[i].id.pid, (unsigned long long)pins[i].id.start,
                                grace_ms);
        }
        signal_running(prog, pins, n, SIGKILL);
        running = procstop_wait(pins, n, kill_wait_ms);
        for (size_t i = 0; i < n; i++) {
                if (!pins[i].ended)
                        fprintf(stderr, "%s: pid %d survived SIGKILL\n", prog, (int)pins[i].id.pid);
        }
        return running;
}

void procstop_release(procpin_t *pins, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (pins[i].pidfd >= 0)
                        (void)close(pins[i].pidfd);
                pins[i].pidfd = -1;
        }
}
