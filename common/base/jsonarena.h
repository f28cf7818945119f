/* A per-thread bump arena for jansson's allocations during one request.
 *
 * A review builds and drops a few hundred small jansson values; with malloc
 * and free that was about a quarter of its time. Between jsonarena_begin()
 * and jsonarena_end() a thread's jansson allocations come from its arena and
 * frees are no-ops; jsonarena_end() releases them all at once. Outside that
 * window (and on every other thread) jansson uses malloc and free as usual.
 *
 * The rule that makes it safe: no jansson value allocated inside the window
 * may be used after jsonarena_end(). The webhook's request handler owns
 * every value it creates and hands out only plain malloc'd text. Values made
 * before the window (the server's shared sidecar values, shape_values_new)
 * may be added to documents inside it: their reference counts keep them,
 * and a free of memory the arena did not hand out goes to free(). */
#pragma once

/* Routes jansson's allocator through the arena; call once, before any other
 * thread starts and before any jansson value exists. */
void jsonarena_install(void);
void jsonarena_begin(void);
void jsonarena_end(void);
