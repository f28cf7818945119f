/* Allocation failure on demand, for tests/alloc: the n-th allocation from
 * failalloc_arm() on returns NULL (ENOMEM), every other one succeeds.
 *
 * What it sees: every malloc, calloc, realloc, strdup, strndup, asprintf
 * and vasprintf called from the project's own code linked into the test
 * binary (the linker's --wrap, see CMakeLists.txt), and every allocation
 * jansson makes (its json_set_alloc_funcs hook). What it does not see:
 * allocations inside other shared libraries (libyaml, libcurl, OpenSSL,
 * libmicrohttpd, glibc's own, such as stdio buffers). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Installs jansson's hook; call once, first. */
void failalloc_init(void);
/* Counts allocations from now; fail_at (1-based) is the one that fails,
 * 0 for none. */
void failalloc_arm(unsigned long fail_at);
/* Stops failing; returns how many allocations were counted since arm. */
unsigned long failalloc_disarm(void);
/* Whether the armed allocation was reached (and so failed). */
bool failalloc_failed(void);
/* Bytes the program holds on the heap now (the sanitizer's or glibc's
 * count): equal before and after a call that freed what it took. */
size_t failalloc_heap_bytes(void);
/* Under LeakSanitizer, prints what is leaked now, with where it was
 * allocated (the run goes on); elsewhere nothing. */
void failalloc_report_leaks(void);
