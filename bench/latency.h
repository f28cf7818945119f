/* Round-trip samples for the bench tools: collected in nanoseconds, printed
 * as one line "p50_us P p99_us P mean_us M n N" that the bench scripts parse. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The monotonic clock in nanoseconds. */
uint64_t latency_now_ns(void);

/* Sorts samples[0..n) in place and prints the line on stdout; n > 0. */
void latency_report(uint64_t *samples, size_t n);
