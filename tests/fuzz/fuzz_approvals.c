/* libFuzzer target: approval requests in the harness's stdout. The first
 * byte seeds the chunking: the rest is fed to approvals_scan in pieces whose
 * sizes come from a small generator seeded by it (empty pieces included),
 * and, into a second tracker, in one piece. Properties checked, abort() on
 * violation:
 *   - chunking does not matter: both trackers hold the same ids in order;
 *   - n <= APPROVALS_MAX; every id is non-empty, at most APPROVALS_ID_MAX,
 *     terminated inside its buffer, and unique; the callback saw each new
 *     id once, in order, with its request (an object of type
 *     approval_request carrying that id);
 *   - all are pending at first; approvals_json lists n entries;
 *   - deciding a pending id returns one line of valid JSON ending in "\n"
 *     (type approval_response, that id, the decision asked for), after which
 *     the id is no longer pending, deciding it again gives NULL, and the
 *     pending count has dropped by one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "approvals.h"
#include "cleanup.h"
#include "jsonx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
        char ids[APPROVALS_MAX][APPROVALS_ID_MAX + 1];
        size_t n;
} seen_t;

static seen_t seen_chunked, seen_whole;

static void on_request(void *userdata, const char *id, json_t *request)
{
        seen_t *s = userdata;
        if (s->n >= APPROVALS_MAX || !id || !json_is_object(request))
                abort();
        const char *type = json_string_value(json_object_get(request, "type"));
        const char *rid = json_string_value(json_object_get(request, "id"));
        if (!type || strcmp(type, "approval_request") != 0 || !rid || strcmp(rid, id) != 0)
                abort();
        size_t len = strlen(id);
        if (len == 0 || len > APPROVALS_ID_MAX)
                abort();
        memcpy(s->ids[s->n++], id, len + 1);
}

static uint32_t rng_next(uint32_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 17;
        *s ^= *s << 5;
        return *s;
}

static int cmp_str(const void *x, const void *y)
{
        return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static void check_ids(const approvals_t *a, const seen_t *s)
{
        if (a->n > APPROVALS_MAX || s->n != a->n)
                abort();
        const char *sorted[APPROVALS_MAX];
        for (size_t i = 0; i < a->n; i++) {
                const char *id = a->items[i].id;
                if (!memchr(id, '\0', sizeof(a->items[i].id)))
                        abort();
                size_t len = strlen(id);
                if (len == 0 || len > APPROVALS_ID_MAX || strcmp(id, s->ids[i]) != 0)
                        abort();
                if (a->items[i].state != APPROVAL_PENDING || !json_is_object(a->items[i].request))
                        abort();
                sorted[i] = id;
        }
        /* Unique: no two neighbours equal once sorted (n log n, not n^2:
         * up to APPROVALS_MAX ids, under instrumented strcmp). */
        qsort(sorted, a->n, sizeof(sorted[0]), cmp_str);
        for (size_t i = 1; i < a->n; i++)
                if (strcmp(sorted[i - 1], sorted[i]) == 0)
                        abort();
        if (approvals_pending(a) != a->n)
                abort();
        _cleanup_json_ json_t *list = approvals_json(a);
        if (!json_is_array(list) || json_array_size(list) != a->n)
                abort();
}

/* Decides items[i]; pending is the count before (kept by the caller, so
 * the loop over every id stays linear here). */
static void check_decide(approvals_t *a, size_t i, bool approve, size_t pending)
{
        char id[APPROVALS_ID_MAX + 1];
        memcpy(id, a->items[i].id, sizeof(id));
        if (!approvals_is_pending(a, id))
                abort();
        _cleanup_free_ char *line = approvals_decide(a, id, approve, "fuzz");
        if (!line)
                abort();
        size_t len = strlen(line);
        if (len < 2 || line[len - 1] != '\n' || memchr(line, '\n', len - 1))
                abort();
        _cleanup_json_ json_t *j = NULL;
        if (jsonx_load(line, len, 4, &j, NULL) < 0 || !json_is_object(j) ||
            json_object_size(j) != 3)
                abort();
        const char *type = json_string_value(json_object_get(j, "type"));
        const char *jid = json_string_value(json_object_get(j, "id"));
        const char *decision = json_string_value(json_object_get(j, "decision"));
        if (!type || strcmp(type, "approval_response") != 0 || !jid || strcmp(jid, id) != 0 ||
            !decision || strcmp(decision, approve ? "approve" : "deny") != 0)
                abort();
        if (approvals_is_pending(a, id))
                abort();
        /* The full count now and then: it walks every item. */
        if ((i % 32 == 0 || i + 1 == a->n) && approvals_pending(a) != pending - 1)
                abort();
        if (a->items[i].state != (approve ? APPROVAL_APPROVED : APPROVAL_DENIED) ||
            strcmp(a->items[i].by, "fuzz") != 0)
                abort();
        char *again = approvals_decide(a, id, !approve, "fuzz");
        if (again)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size == 0)
                return 0;
        uint8_t seed = data[0];
        const uint8_t *p = data + 1;
        size_t len = size - 1;

        approvals_t chunked, whole;
        if (approvals_init(&chunked) < 0)
                return 0;
        if (approvals_init(&whole) < 0) {
                approvals_free(&chunked);
                return 0;
        }
        seen_chunked.n = seen_whole.n = 0;

        /* Small pieces (1-16 bytes) or large ones (up to 4 KiB), by the seed. */
        uint32_t rng = 0x9e3779b9u ^ ((uint32_t)seed * 0x01000193u);
        size_t max_piece = seed & 1 ? 16 : 4096;
        for (size_t off = 0; off < len;) {
                uint32_t r = rng_next(&rng);
                size_t n = r % 8 == 0 ? 0 : 1 + (size_t)(rng_next(&rng) % max_piece);
                if (n > len - off)
                        n = len - off;
                approvals_scan(&chunked, p + off, n, on_request, &seen_chunked);
                off += n;
        }
        approvals_scan(&whole, p, len, on_request, &seen_whole);

        check_ids(&chunked, &seen_chunked);
        check_ids(&whole, &seen_whole);
        if (chunked.n != whole.n)
                abort();
        for (size_t i = 0; i < chunked.n; i++)
                if (strcmp(chunked.items[i].id, whole.items[i].id) != 0)
                        abort();

        /* Decide them all, approve or deny as the generator says. */
        for (size_t i = 0; i < chunked.n; i++)
                check_decide(&chunked, i, rng_next(&rng) & 1, chunked.n - i);
        if (approvals_pending(&chunked) != 0)
                abort();
        if (approvals_decide(&chunked, "", true, "fuzz"))
                abort();

        /* Scanning the same bytes again never re-opens a decided id (a
         * partial last line may join the first one into a new request). */
        size_t decided = chunked.n;
        approvals_scan(&chunked, p, len, NULL, NULL);
        if (chunked.n < decided || chunked.n > APPROVALS_MAX)
                abort();
        for (size_t i = 0; i < decided; i++)
                if (chunked.items[i].state == APPROVAL_PENDING)
                        abort();
        if (approvals_pending(&chunked) != chunked.n - decided)
                abort();

        approvals_free(&chunked);
        approvals_free(&whole);
        return 0;
}
