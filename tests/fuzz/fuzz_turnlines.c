/* libFuzzer target: the bytes a turn brings back to `hangar turn run`
 * (client/turnlines.c). The relay's stdout (the agent's container's: a
 * relay replaced by the agent, or a process that opened its stdout) through
 * relaywatch, and events.jsonl's lines through the bounded splitter and
 * turnevent_parse, fed in chunks of a size the input picks. Input: one byte
 * (bit 0: relay or events; the other bits: the chunk size, 0 = all at
 * once), then the bytes. Invariants: BROKEN is final; a ready line is held
 * only in READY or later, an outcome only in ENDED or REFUSED; nothing held
 * past the bounds; the splitter's lines are contiguous (each begins where
 * the last ended plus its newline), whole exactly when within the bound,
 * and the pending bytes are what is left. */
#include <stdint.h>
#include <stdlib.h>

#include "turnlines.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct walk {
        uint64_t next;
        size_t max;
} walk_t;

static int check_line(void *ud, const char *text, size_t len, uint64_t offset, uint64_t length)
{
        walk_t *w = ud;
        if (offset != w->next || (text != NULL) != (length <= w->max) || (text && len != length))
                abort();
        w->next = offset + length + 1;
        if (text) {
                char why[256];
                json_t *e = turnevent_parse(text, len, why, sizeof(why));
                if (e && !json_is_string(json_object_get(e, "event")))
                        abort();
                json_decref(e);
        }
        return 0;
}

static void relay(const uint8_t *data, size_t size, size_t chunk)
{
        relaywatch_t w;
        relaywatch_init(&w);
        bool was_broken = false;
        for (size_t i = 0; i < size; i += chunk) {
                size_t n = size - i < chunk ? size - i : chunk;
                int s = relaywatch_feed(&w, data + i, n);
                if (s < 0)
                        break;
                if (was_broken && s != RELAYWATCH_BROKEN)
                        abort();
                was_broken = s == RELAYWATCH_BROKEN;
                if (w.ls.partial.len > RELAYWATCH_LINE_MAX)
                        abort();
        }
        relaywatch_state_t s = relaywatch_end(&w);
        if (w.ready && s != RELAYWATCH_READY && s != RELAYWATCH_ENDED && s != RELAYWATCH_BROKEN)
                abort();
        if ((s == RELAYWATCH_READY || s == RELAYWATCH_ENDED) && !w.ready)
                abort();
        if ((s == RELAYWATCH_ENDED || s == RELAYWATCH_REFUSED) && !w.outcome)
                abort();
        relaywatch_free(&w);
}

static void events(const uint8_t *data, size_t size, size_t chunk)
{
        /* A small bound, so that inputs of any size cross it. */
        walk_t w = {.next = 7, .max = 64};
        linesplit_t ls;
        linesplit_init(&ls, w.max, 7);
        uint64_t fed = 0;
        for (size_t i = 0; i < size; i += chunk) {
                size_t n = size - i < chunk ? size - i : chunk;
                if (linesplit_feed(&ls, data + i, n, check_line, &w) < 0)
                        abort();
                fed += n;
                if (ls.partial.len > w.max)
                        abort();
        }
        if (w.next + linesplit_pending(&ls) != 7 + fed)
                abort();
        linesplit_free(&ls);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        size_t chunk = data[0] >> 1;
        if (chunk == 0)
                chunk = size;
        if (data[0] & 1)
                relay(data + 1, size - 1, chunk);
        else
                events(data + 1, size - 1, chunk);
        return 0;
}
