#include "jsonarena.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

/* Under AddressSanitizer the arena's free space is poisoned, so a value used
 * after jsonarena_end() is reported like any use after free. */
#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifdef HAVE_ASAN
#include <sanitizer/asan_interface.h>
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#define CHUNK_BYTES (64 * 1024)
#define ALIGNMENT   16

typedef struct chunk {
        struct chunk *next;
        size_t size; /* usable bytes after the header */
        size_t used;
        max_align_t data[];
} chunk_t;

static _Thread_local chunk_t *chunks; /* newest first */
static _Thread_local bool active;

static chunk_t *chunk_new(size_t at_least)
{
        size_t size = at_least > CHUNK_BYTES ? at_least : CHUNK_BYTES;
        chunk_t *c = malloc(sizeof(*c) + size);
        if (!c)
                return NULL;
        c->next = NULL;
        c->size = size;
        c->used = 0;
        POISON(c->data, size);
        return c;
}

static void *arena_malloc(size_t n)
{
        if (!active)
                return malloc(n);
        size_t need = (n + ALIGNMENT - 1) & ~(size_t)(ALIGNMENT - 1);
        if (need < n)
                return NULL;
        if (!chunks || chunks->size - chunks->used < need) {
                chunk_t *c = chunk_new(need);
                if (!c)
                        return NULL;
                c->next = chunks;
                chunks = c;
        }
        void *p = (char *)chunks->data + chunks->used;
        chunks->used += need;
        UNPOISON(p, n);
        return p;
}

static bool in_arena(const void *p)
{
        for (const chunk_t *c = chunks; c; c = c->next) {
                const char *start = (const char *)c->data;
                if ((const char *)p >= start && (const char *)p < start + c->size)
                        return true;
        }
        return false;
}

static void arena_free(void *p)
{
        if (p && !in_arena(p))
                free(p);
}

void jsonarena_install(void)
{
        json_set_alloc_funcs(arena_malloc, arena_free);
}

void jsonarena_begin(void)
{
        active = true;
}

void jsonarena_end(void)
{
        active = false;
        /* Nothing is kept between requests: a thread that ends leaves no
         * chunk behind, and an oversized request's memory goes back at once. */
        while (chunks) {
                chunk_t *c = chunks;
                chunks = c->next;
                free(c);
        }
}
