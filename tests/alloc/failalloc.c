#include "failalloc.h"

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
/* libasan exports it; gcc ships no header for it (clang: allocator_interface.h). */
size_t __sanitizer_get_current_allocated_bytes(void);
#include <sanitizer/common_interface_defs.h>
#include <sanitizer/lsan_interface.h>
#endif

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **ret, const char *fmt, va_list ap);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_vasprintf(char **ret, const char *fmt, va_list ap);
int __wrap_asprintf(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool armed;
static unsigned long count, fail_at;
static bool failed;

/* One allocation: true when it is the one to fail. */
static bool fail_now(void)
{
        if (!armed)
                return false;
        count++;
        if (fail_at == 0 || count != fail_at)
                return false;
        failed = true;
#ifdef HAVE_ASAN
        /* ALLOC_STACK=1: where the failing allocation is (with ALLOC_N). */
        if (getenv("ALLOC_STACK"))
                __sanitizer_print_stack_trace();
#endif
        errno = ENOMEM;
        return true;
}

void *__wrap_malloc(size_t n)
{
        return fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
        return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n)
{
        return fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
        return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
        return fail_now() ? NULL : __real_strndup(s, n);
}

int __wrap_vasprintf(char **ret, const char *fmt, va_list ap)
{
        if (fail_now())
                return -1;
        return __real_vasprintf(ret, fmt, ap);
}

int __wrap_asprintf(char **ret, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        int r = __wrap_vasprintf(ret, fmt, ap);
        va_end(ap);
        return r;
}

static void *json_malloc(size_t n)
{
        return fail_now() ? NULL : __real_malloc(n);
}

void failalloc_init(void)
{
        json_set_alloc_funcs(json_malloc, free);
}

void failalloc_arm(unsigned long n)
{
        count = 0;
        fail_at = n;
        failed = false;
        armed = true;
}

unsigned long failalloc_disarm(void)
{
        armed = false;
        return count;
}

bool failalloc_failed(void)
{
        return failed;
}

size_t failalloc_heap_bytes(void)
{
#ifdef HAVE_ASAN
        return __sanitizer_get_current_allocated_bytes();
#else
        struct mallinfo2 mi = mallinfo2();
        return mi.uordblks + mi.hblkhd;
#endif
}

void failalloc_report_leaks(void)
{
#ifdef HAVE_ASAN
        (void)__lsan_do_recoverable_leak_check();
#endif
}
