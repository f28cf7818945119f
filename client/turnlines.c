#include "turnlines.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"

/* Event lines are flat objects with a request nested in them. */
#define EVENT_DEPTH_MAX 16
/* The relay's lines: the sweep's report is one level down. */
#define RELAY_DEPTH_MAX 4

void linesplit_init(linesplit_t *ls, size_t max, uint64_t from)
{
        *ls = (linesplit_t){.max = max ? max : 1, .start = from};
}

int linesplit_feed(linesplit_t *ls, const uint8_t *data, size_t n, linesplit_fn fn, void *ud)
{
        while (n > 0) {
                const uint8_t *nl = memchr(data, '\n', n);
                size_t take = nl ? (size_t)(nl - data) : n;
                /* Keep what fits under max; past it, only count. */
                if (ls->length < ls->max) {
                        size_t room = ls->max - (size_t)ls->length;
                        if (strbuf_append(&ls->partial, (const char *)data,
                                          take < room ? take : room) < 0)
                                return -ENOMEM;
                }
                ls->length += take;
                if (!nl)
                        return 0;
                bool whole = ls->length <= ls->max;
                int r = fn(ud, whole ? (ls->partial.data ? ls->partial.data : "") : NULL,
                           whole ? (size_t)ls->length : 0, ls->start, ls->length);
                ls->start += ls->length + 1;
                ls->length = 0;
                strbuf_truncate(&ls->partial, 0);
                if (r < 0)
                        return r;
                data += take + 1;
                n -= take + 1;
        }
        return 0;
}

uint64_t linesplit_pending(const linesplit_t *ls)
{
        return ls->length;
}

void linesplit_free(linesplit_t *ls)
{
        strbuf_free(&ls->partial);
}

/* ---- the relay's stdout ---- */

void relaywatch_init(relaywatch_t *w)
{
        *w = (relaywatch_t){.state = RELAYWATCH_WAITING};
        linesplit_init(&w->ls, RELAYWATCH_LINE_MAX, 0);
}

static int broken(relaywatch_t *w, const char *why)
{
        w->state = RELAYWATCH_BROKEN;
        (void)snprintf(w->why, sizeof(w->why), "%s", why);
        return 0;
}

/* The relay's own lines are one JSON object each with a "relay" string. */
static json_t *relay_object(const char *text, size_t len, const char **ret_relay)
{
        json_t *j = NULL;
        hg_error_t err = {0};
        if (!text || jsonx_load(text, len, RELAY_DEPTH_MAX, &j, &err) < 0)
                return NULL;
        const char *relay = NULL;
        if (!json_is_object(j) || jsonx_string(j, "relay", &relay) < 0 || !relay) {
                json_decref(j);
                return NULL;
        }
        *ret_relay = relay;
        return j;
}

static int on_relay_line(void *ud, const char *text, size_t len, uint64_t offset, uint64_t length)
{
        relaywatch_t *w = ud;
        (void)offset;
        if (w->state == RELAYWATCH_BROKEN)
                return 0;
        if (!text)
                return broken(w, "a line of more than 65536 bytes on the relay's stdout");
        const char *relay = NULL;
        _cleanup_json_ json_t *j = relay_object(text, len, &relay);
        (void)length;
        switch (w->state) {
        case RELAYWATCH_WAITING:
                if (!j)
                        return broken(w, "output that is not the relay's before its ready line");
                if (strcmp(relay, "ready") != 0) {
                        /* The relay's own refusal (exit 125): no token. */
                        w->outcome = TAKE_PTR(j);
                        w->state = RELAYWATCH_REFUSED;
                        return 0;
                }
                /* A line without the sweep's report is not the relay's. */
                if (!json_is_object(json_object_get(j, "sweep")))
                        return broken(w, "a ready line without the sweep's report");
                w->ready = TAKE_PTR(j);
                w->state = RELAYWATCH_READY;
                return 0;
        case RELAYWATCH_READY:
                if (!j)
                        return broken(w, "output that is not the relay's after its ready line");
                if (strcmp(relay, "ready") == 0)
                        return broken(w, "a second ready line");
                w->outcome = TAKE_PTR(j);
                w->state = RELAYWATCH_ENDED;
                return 0;
        case RELAYWATCH_ENDED:
        case RELAYWATCH_REFUSED:
        default:
                /* The relay's outcome is its last line. */
                return broken(w, "a line after the relay's outcome");
        }
}

int relaywatch_feed(relaywatch_t *w, const uint8_t *data, size_t n)
{
        if (w->state == RELAYWATCH_BROKEN)
                return (int)w->state;
        int r = linesplit_feed(&w->ls, data, n, on_relay_line, w);
        if (r < 0)
                return r;
        /* Bytes before the ready line's end are waited for whole; a line
         * that is not the relay's breaks the order as soon as it is seen,
         * but an unfinished first line longer than the cap cannot be one. */
        if (w->state == RELAYWATCH_WAITING && linesplit_pending(&w->ls) > RELAYWATCH_LINE_MAX)
                (void)broken(w, "a line of more than 65536 bytes on the relay's stdout");
        return (int)w->state;
}

relaywatch_state_t relaywatch_end(relaywatch_t *w)
{
        if (w->state != RELAYWATCH_BROKEN && linesplit_pending(&w->ls) > 0)
                (void)broken(w, "an unfinished line on the relay's stdout");
        return w->state;
}

void relaywatch_free(relaywatch_t *w)
{
        linesplit_free(&w->ls);
        json_decref(w->ready);
        json_decref(w->outcome);
        w->ready = w->outcome = NULL;
}

const char *relaywatch_state_name(relaywatch_state_t s)
{
        switch (s) {
        case RELAYWATCH_WAITING:
                return "waiting";
        case RELAYWATCH_READY:
                return "ready";
        case RELAYWATCH_ENDED:
                return "ended";
        case RELAYWATCH_REFUSED:
                return "refused";
        case RELAYWATCH_BROKEN:
        default:
                return "broken";
        }
}

/* ---- the driver's events ---- */

json_t *turnevent_parse(const char *text, size_t len, char *why, size_t n)
{
        json_t *j = NULL;
        hg_error_t err = {0};
        if (jsonx_load(text, len, EVENT_DEPTH_MAX, &j, &err) < 0) {
                (void)snprintf(why, n, "an event line that is not JSON: %s", err.message);
                return NULL;
        }
        const char *event = NULL;
        if (!json_is_object(j) || jsonx_string(j, "event", &event) < 0 || !event) {
                (void)snprintf(why, n, "an event line without an \"event\" string");
                json_decref(j);
                return NULL;
        }
        return j;
}
