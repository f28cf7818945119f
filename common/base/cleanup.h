/* Scoped cleanup helpers (systemd/crun style): a variable declared with one of
 * these attributes is released when it goes out of scope, so every early
 * return is leak-free. TAKE_PTR / TAKE_FD hand ownership on. */
#pragma once

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

static inline void cleanup_freep(void *p)
{
        free(*(void **)p);
}

static inline void cleanup_closep(int *fd)
{
        if (*fd >= 0) {
                int saved = errno;
                (void)close(*fd);
                errno = saved;
        }
}

static inline void cleanup_fclosep(FILE **f)
{
        if (*f)
                (void)fclose(*f);
}

static inline void cleanup_json_decrefp(json_t **j)
{
        json_decref(*j);
}

#define _cleanup_(f)     __attribute__((cleanup(f)))
#define _cleanup_free_   _cleanup_(cleanup_freep)
#define _cleanup_close_  _cleanup_(cleanup_closep)
#define _cleanup_fclose_ _cleanup_(cleanup_fclosep)
#define _cleanup_json_   _cleanup_(cleanup_json_decrefp)

/* Hand ownership of a pointer on: returns it and leaves NULL behind. */
#define TAKE_PTR(p)                        \
        ({                                 \
                __typeof__(p) *_pp = &(p); \
                __typeof__(p) _v = *_pp;   \
                *_pp = NULL;               \
                _v;                        \
        })

/* Same for file descriptors: returns it and leaves -1 behind. */
#define TAKE_FD(fd)                \
        ({                         \
                int *_pfd = &(fd); \
                int _v = *_pfd;    \
                *_pfd = -1;        \
                _v;                \
        })

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
