#include "latency.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

uint64_t latency_now_ns(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
        uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
        return (x > y) - (x < y);
}

/* Nearest rank: the smallest sample with at least pct% of them at or below it. */
static uint64_t rank(const uint64_t *sorted, size_t n, unsigned pct)
{
        size_t r = (n * pct + 99) / 100;
        return sorted[r ? r - 1 : 0];
}

void latency_report(uint64_t *samples, size_t n)
{
        qsort(samples, n, sizeof(*samples), cmp_u64);
        double sum = 0;
        for (size_t i = 0; i < n; i++)
                sum += (double)samples[i];
        printf("p50_us %.1f p99_us %.1f mean_us %.1f n %zu\n", rank(samples, n, 50) / 1e3,
               rank(samples, n, 99) / 1e3, sum / (double)n / 1e3, n);
        fflush(stdout);
}
