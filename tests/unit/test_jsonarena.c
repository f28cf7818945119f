/* Unit tests for common/jsonarena. Addresses cannot be asked of the arena,
 * so what it does is observed from outside: the allocator jansson was given
 * (json_get_alloc_funcs), the heap in use before and after a window, and,
 * under ASan, leak and use-after-free reports. Every test installs the
 * arena in its own forked child (check's default mode), so no test sees
 * another's allocator or values. */
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cleanup.h"
#include "jsonarena.h"
#include "unit.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNIT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNIT_ASAN 1
#endif
#endif

#ifdef UNIT_ASAN
/* From the sanitizer runtime (declared in clang's allocator_interface.h,
 * which gcc does not ship). */
size_t __sanitizer_get_current_allocated_bytes(void);
/* Bytes the process has allocated and not freed. */
static size_t heap_in_use(void)
{
        return __sanitizer_get_current_allocated_bytes();
}
#else
#include <malloc.h>
static size_t heap_in_use(void)
{
        struct mallinfo2 mi = mallinfo2();
        return mi.uordblks + mi.hblkhd;
}
#endif

#define CHUNK_BYTES (64 * 1024) /* jsonarena.c's chunk size */

static json_malloc_t arena_malloc;
static json_free_t arena_free;

static void setup(void)
{
        jsonarena_install();
        json_get_alloc_funcs(&arena_malloc, &arena_free);
        ck_assert_ptr_nonnull(arena_malloc);
        ck_assert_ptr_nonnull(arena_free);
        /* Warm jansson up (hash seed, first object) outside any window, so
         * the heap measurements below see only what a test does. */
        json_t *warm = json_pack("{s:[i,s]}", "k", 1, "v");
        ck_assert_ptr_nonnull(warm);
        json_decref(warm);
}

START_TEST(install_routes_jansson_through_the_arena)
{
        ck_assert(arena_malloc != malloc);
        ck_assert(arena_free != free);
}
END_TEST

START_TEST(window_allocations_are_bumped)
{
        jsonarena_begin();
        /* Consecutive small requests sit less than 32 bytes apart, in
         * order: a bump allocator. malloc cannot do that (its smallest chunk
         * is 32 bytes on 64-bit glibc, more with ASan's redzones). */
        char *a = arena_malloc(1);
        char *b = arena_malloc(1);
        char *c = arena_malloc(17);
        char *d = arena_malloc(1);
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(d);
        ck_assert(b > a && b - a < 32);
        ck_assert(c > b && c - b < 32);
        ck_assert(d > c && d - c >= 17 && d - c < 48);
        /* Aligned as malloc's are: jansson keeps doubles and int64s there. */
        const uintptr_t align = _Alignof(max_align_t);
        ck_assert_uint_eq((uintptr_t)a % align, 0);
        ck_assert_uint_eq((uintptr_t)b % align, 0);
        ck_assert_uint_eq((uintptr_t)c % align, 0);
        ck_assert_uint_eq((uintptr_t)d % align, 0);
        jsonarena_end();
}
END_TEST

START_TEST(many_values_released_at_end_without_decref)
{
        size_t before = heap_in_use();
        jsonarena_begin();
        json_t *keep = json_object();
        ck_assert_ptr_nonnull(keep);
        for (int i = 0; i < 20000; i++) {
                char key[32];
                (void)snprintf(key, sizeof(key), "key-%d", i);
                json_t *v = json_pack("{s:i, s:s, s:[b, n]}", "n", i, "s", key, "a", 1);
                ck_assert_ptr_nonnull(v);
                ck_assert_int_eq(json_object_set_new(keep, key, v), 0);
        }
        ck_assert_uint_eq(json_object_size(keep), 20000);
        ck_assert_int_eq(
            json_integer_value(json_object_get(json_object_get(keep, "key-12345"), "n")), 12345);
        size_t inside = heap_in_use();
        /* No decref: the window's end gives it all back (ASan: no leak). */
        jsonarena_end();
        size_t after = heap_in_use();
        ck_assert_msg(inside > before + 1000000, "20000 values took only %zu bytes",
                      inside - before);
        ck_assert_msg(after <= before + 1024, "%zu bytes left after jsonarena_end", after - before);
}
END_TEST

START_TEST(decref_inside_window_is_harmless)
{
        jsonarena_begin();
        json_t *a = json_pack("{s:s, s:[i, i, i]}", "name", "first", "list", 1, 2, 3);
        json_t *b = json_pack("{s:s}", "name", "second");
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(b);
        json_decref(a);
        /* Freeing is a no-op in the window: the memory stays readable and
         * b, allocated next to it, is intact. Under ASan a real free would
         * be reported as a use after free on this read. */
        char *p = arena_malloc(64);
        memset(p, 0x5a, 64);
        arena_free(p);
        ck_assert_int_eq(p[63], 0x5a);
        json_t *c = json_pack("[s, o]", "third", b);
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(json_string_value(json_object_get(json_array_get(c, 1), "name")),
                         "second");
        json_decref(c);
        jsonarena_end();
}
END_TEST

START_TEST(value_from_before_begin_is_really_freed)
{
        /* 200 KB of string made with malloc, dropped inside the window: it
         * must go back to malloc at once (ASan: no leak), not be ignored as
         * if it were the arena's. */
        size_t n = 200000;
        _cleanup_free_ char *text = malloc(n);
        ck_assert_ptr_nonnull(text);
        memset(text, 'x', n);
        json_t *big = json_stringn(text, n);
        ck_assert_ptr_nonnull(big);
        json_t *small = json_string("made before");
        ck_assert_ptr_nonnull(small);

        jsonarena_begin();
        size_t before = heap_in_use();
        json_decref(big);
        size_t after_free = heap_in_use();
        json_decref(small);
        jsonarena_end();

        ck_assert_msg(after_free + n <= before, "only %zu bytes freed",
                      before > after_free ? before - after_free : 0);
}
END_TEST

START_TEST(malloc_again_after_end)
{
        jsonarena_begin();
        json_t *inside = json_string("in the window");
        ck_assert_ptr_nonnull(inside);
        jsonarena_end();

        /* After the window: plain malloc, and freeing gives memory back. */
        size_t before = heap_in_use();
        char *p = arena_malloc(300000);
        ck_assert_ptr_nonnull(p);
        memset(p, 1, 300000);
        size_t with = heap_in_use();
        arena_free(p);
        size_t after = heap_in_use();
        ck_assert_msg(with >= before + 300000, "grew by %zu", with - before);
        ck_assert_msg(after <= before + 64, "%zu bytes not given back", after - before);

        /* Values made now are ordinary: they outlive a later window. */
        json_t *kept = json_pack("{s:s}", "k", "v");
        ck_assert_ptr_nonnull(kept);
        jsonarena_begin();
        json_t *tmp = json_pack("[o]", json_incref(kept));
        ck_assert_ptr_nonnull(tmp);
        jsonarena_end();
        ck_assert_str_eq(json_string_value(json_object_get(kept, "k")), "v");
        ck_assert_int_eq(json_object_set_new(kept, "k2", json_string("v2")), 0);
        json_decref(kept); /* twice referenced: once by us, once by tmp */
        json_decref(kept);
}
END_TEST

START_TEST(request_larger_than_a_chunk)
{
        jsonarena_begin();
        char *small = arena_malloc(100);
        ck_assert_ptr_nonnull(small);
        memset(small, 's', 100);
        /* Three chunks' worth in one request, then more small ones. */
        size_t n = 3 * CHUNK_BYTES + 5;
        char *big = arena_malloc(n);
        ck_assert_ptr_nonnull(big);
        memset(big, 'b', n);
        ck_assert_int_eq(big[n - 1], 'b');
        char *after = arena_malloc(100);
        ck_assert_ptr_nonnull(after);
        memset(after, 'a', 100);
        ck_assert(after + 100 <= big || after >= big + n);
        ck_assert(small + 100 <= big || small >= big + n);
        ck_assert_int_eq(small[99], 's');
        ck_assert_int_eq(big[0], 'b');

        /* A string value of that size through jansson, too. */
        _cleanup_free_ char *text = malloc(n);
        ck_assert_ptr_nonnull(text);
        memset(text, 'z', n);
        json_t *s = json_stringn(text, n);
        ck_assert_ptr_nonnull(s);
        ck_assert_uint_eq(json_string_length(s), n);
        ck_assert_int_eq(memcmp(json_string_value(s), text, n), 0);
        json_decref(s);
        /* Exactly one chunk, and one byte over. */
        ck_assert_ptr_nonnull(arena_malloc(CHUNK_BYTES));
        ck_assert_ptr_nonnull(arena_malloc(CHUNK_BYTES + 1));
        size_t inside = heap_in_use();
        jsonarena_end();
        ck_assert_msg(heap_in_use() + 2 * n < inside, "big chunks not released");
}
END_TEST

START_TEST(windows_repeat)
{
        size_t before = heap_in_use();
        for (int round = 0; round < 50; round++) {
                jsonarena_begin();
                for (int i = 0; i < 2000; i++)
                        ck_assert_ptr_nonnull(json_pack("{s:i}", "round", round));
                jsonarena_end();
        }
        ck_assert_msg(heap_in_use() <= before + 1024, "rounds leave %zu bytes",
                      heap_in_use() - before);
}
END_TEST

#define THREAD_VALUE_BYTES 200000

/* A value big enough that freeing it shows in the heap figures (small
 * frees may stay in malloc's per-thread cache). */
static void *make_value_on_thread(void *unused)
{
        (void)unused;
        char *text = malloc(THREAD_VALUE_BYTES);
        if (!text)
                return NULL;
        memset(text, 't', THREAD_VALUE_BYTES);
        json_t *v = json_pack("{s:s%}", "thread", text, (size_t)THREAD_VALUE_BYTES);
        free(text);
        return v;
}

START_TEST(other_threads_use_malloc)
{
        /* The window is per thread: a value another thread makes meanwhile
         * is malloc'd, and survives this thread's jsonarena_end (under ASan,
         * reading it after the arena's chunks are gone would be reported). */
        jsonarena_begin();
        pthread_t t;
        ck_assert_int_eq(pthread_create(&t, NULL, make_value_on_thread, NULL), 0);
        void *out = NULL;
        ck_assert_int_eq(pthread_join(t, &out), 0);
        json_t *v = out;
        ck_assert_ptr_nonnull(v);
        char *mine = arena_malloc(1);
        char *mine2 = arena_malloc(1);
        ck_assert(mine2 > mine && mine2 - mine < 32); /* still this thread's arena */
        jsonarena_end();
        json_t *str = json_object_get(v, "thread");
        ck_assert_uint_eq(json_string_length(str), THREAD_VALUE_BYTES);
        ck_assert_int_eq(json_string_value(str)[THREAD_VALUE_BYTES - 1], 't');
        size_t before = heap_in_use();
        json_decref(v);
        size_t after = heap_in_use();
        ck_assert_msg(after + THREAD_VALUE_BYTES <= before, "the thread's value was not freed");
}
END_TEST

START_TEST(end_without_begin_and_empty_window)
{
        jsonarena_end();
        jsonarena_begin();
        jsonarena_end();
        jsonarena_end();
        json_t *v = json_string("still works");
        ck_assert_str_eq(json_string_value(v), "still works");
        json_decref(v);
}
END_TEST

static Suite *jsonarena_suite(void)
{
        Suite *s = suite_create("jsonarena");
        TCase *tc = tcase_create("arena");
        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_add_test(tc, install_routes_jansson_through_the_arena);
        tcase_add_test(tc, window_allocations_are_bumped);
        tcase_add_test(tc, many_values_released_at_end_without_decref);
        tcase_add_test(tc, decref_inside_window_is_harmless);
        tcase_add_test(tc, value_from_before_begin_is_really_freed);
        tcase_add_test(tc, malloc_again_after_end);
        tcase_add_test(tc, request_larger_than_a_chunk);
        tcase_add_test(tc, windows_repeat);
        tcase_add_test(tc, other_threads_use_malloc);
        tcase_add_test(tc, end_without_begin_and_empty_window);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(jsonarena_suite());
}
