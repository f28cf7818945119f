#include "connguard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

/* Token buckets count thousandths of a connection, so that a rate of a few
 * connections a second refills smoothly at millisecond resolution. */
#define TOKEN 1000

/* A source: an IPv4 address, or an IPv6 /64 (one host usually owns a whole
 * /64, so counting addresses would let it multiply itself). */
typedef struct source {
        bool used;
        uint8_t key[17]; /* family byte, then the address (v6: first 8 bytes) */
        uint32_t conns;  /* live, counted connections */
        uint32_t idle;   /* of them, idle */
        int64_t tokens;
        int64_t refilled_ms;
        int64_t seen_ms;
        uint64_t body; /* request body bytes its counted connections hold */
} source_t;

typedef struct entry {
        bool used;
        bool counted; /* false once doomed (evicted or expired) */
        connguard_class_t cls;
        connguard_phase_t phase;
        int source; /* -1 for trusted entries: they are not counted per source */
        int64_t phase_start_ms;
        int64_t deadline_ms;
        intptr_t handle;
        uint64_t body; /* request body bytes held (client entries only) */
} entry_t;

struct connguard {
        connguard_limits_t limits;
        cidr_t *trusted;
        size_t ntrusted;
        entry_t *entries;
        size_t nentries;
        source_t *sources;
        size_t nsources;
        uint32_t counted;     /* live connections, both classes */
        uint32_t client_idle; /* idle client connections */
        uint64_t client_body; /* request body bytes client entries hold */
        uint32_t counts[CONNGUARD_CLASS_COUNT][CONNGUARD_PHASE_COUNT];
};

/* The address as (family, bytes); an IPv4-mapped IPv6 address is IPv4. */
static int address_of(const struct sockaddr *sa, size_t len, int *ret_family, uint8_t ret[16])
{
        if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
                memcpy(ret, &((const struct sockaddr_in *)sa)->sin_addr, 4);
                *ret_family = AF_INET;
                return 0;
        }
        if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
                const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
                if (IN6_IS_ADDR_V4MAPPED(a)) {
                        memcpy(ret, &a->s6_addr[12], 4);
                        *ret_family = AF_INET;
                } else {
                        memcpy(ret, a->s6_addr, 16);
                        *ret_family = AF_INET6;
                }
                return 0;
        }
        return -EAFNOSUPPORT;
}

int connguard_new(const connguard_limits_t *limits, const cidr_t *trusted, size_t ntrusted,
                  connguard_t **ret)
{
        connguard_t *g = calloc(1, sizeof(*g));
        if (!g)
                return -ENOMEM;
        g->limits = *limits;
        /* Doomed entries stay until their socket closes: room for as many
         * again as the table counts, and a little more. */
        g->nentries = 2 * ((size_t)limits->max_connections + limits->reserved_connections) + 16;
        g->nsources = g->nentries;
        g->entries = calloc(g->nentries, sizeof(*g->entries));
        g->sources = calloc(g->nsources, sizeof(*g->sources));
        g->trusted = ntrusted ? calloc(ntrusted, sizeof(*g->trusted)) : NULL;
        if (!g->entries || !g->sources || (ntrusted && !g->trusted)) {
                connguard_free(g);
                return -ENOMEM;
        }
        if (ntrusted)
                memcpy(g->trusted, trusted, ntrusted * sizeof(*trusted));
        g->ntrusted = ntrusted;
        *ret = g;
        return 0;
}

void connguard_free(connguard_t *g)
{
        if (!g)
                return;
        free(g->entries);
        free(g->sources);
        free(g->trusted);
        free(g);
}

static void refill(const connguard_t *g, source_t *src, int64_t now_ms)
{
        int64_t cap = 2 * (int64_t)g->limits.connect_rate * TOKEN;
        int64_t elapsed = now_ms - src->refilled_ms;
        if (elapsed > 0) {
                /* rate connections a second = rate thousandths a millisecond */
                int64_t add = elapsed * (int64_t)g->limits.connect_rate;
                src->tokens = src->tokens + add > cap ? cap : src->tokens + add;
                src->refilled_ms = now_ms;
        }
}

/* The source for key, made if new (its bucket full): -1 if the table holds
 * only sources with live connections, which cannot happen while it has as
 * many rows as entries. */
static int find_source(connguard_t *g, const uint8_t key[17], int64_t now_ms)
{
        int free_row = -1, stale = -1;
        for (size_t i = 0; i < g->nsources; i++) {
                source_t *s = &g->sources[i];
                if (!s->used) {
                        if (free_row < 0)
                                free_row = (int)i;
                        continue;
                }
                if (memcmp(s->key, key, sizeof(s->key)) == 0)
                        return (int)i;
                /* A source without connections is forgotten, the least
                 * recently seen first, only when a new one needs its row. */
                if (s->conns == 0 && (stale < 0 || s->seen_ms < g->sources[stale].seen_ms))
                        stale = (int)i;
        }
        int row = free_row >= 0 ? free_row : stale;
        if (row < 0)
                return -1;
        source_t *s = &g->sources[row];
        *s = (source_t){.used = true,
                        .tokens = 2 * (int64_t)g->limits.connect_rate * TOKEN,
                        .refilled_ms = now_ms,
                        .seen_ms = now_ms};
        memcpy(s->key, key, sizeof(s->key));
        return row;
}

static void count(connguard_t *g, entry_t *e, int delta)
{
        g->counted = (uint32_t)((int64_t)g->counted + delta);
        g->counts[e->cls][e->phase] = (uint32_t)((int64_t)g->counts[e->cls][e->phase] + delta);
        if (e->phase == CONNGUARD_IDLE && e->cls == CONNGUARD_CLIENT)
                g->client_idle = (uint32_t)((int64_t)g->client_idle + delta);
        if (e->source >= 0) {
                source_t *s = &g->sources[e->source];
                s->conns = (uint32_t)((int64_t)s->conns + delta);
                if (e->phase == CONNGUARD_IDLE)
                        s->idle = (uint32_t)((int64_t)s->idle + delta);
        }
}

/* No longer counted: its socket is being shut down. */
/* The entry's body bytes leave its source now (the source's slot may
 * serve another address once it holds nothing); the table's total keeps
 * them until the request ends or the entry closes. */
static void doom(connguard_t *g, entry_t *e)
{
        if (!e->counted)
                return;
        if (e->source >= 0)
                g->sources[e->source].body -= e->body;
        count(g, e, -1);
        e->counted = false;
}

/* The client connection to give up for a newcomer, from the source
 * holding the most connections (the API server's client keeps a few per
 * address; a hog many): its connection whose current non-idle phase began
 * earliest (the API server's phases last milliseconds), else the one idle
 * the longest. Slow phases need no rule here: their deadlines cut them.
 * -1 if there is no client connection. */
static int pick_victim(const connguard_t *g)
{
        int biggest = -1;
        for (size_t i = 0; i < g->nsources; i++)
                if (g->sources[i].used && g->sources[i].conns > 0 &&
                    (biggest < 0 || g->sources[i].conns > g->sources[biggest].conns))
                        biggest = (int)i;
        int busy = -1, idle = -1;
        for (size_t i = 0; biggest >= 0 && i < g->nentries; i++) {
                const entry_t *e = &g->entries[i];
                if (!e->used || !e->counted || e->source != biggest)
                        continue;
                int *best = e->phase == CONNGUARD_IDLE ? &idle : &busy;
                if (*best < 0 || e->phase_start_ms < g->entries[*best].phase_start_ms)
                        *best = (int)i;
        }
        return busy >= 0 ? busy : idle;
}

static int free_entry(const connguard_t *g)
{
        for (size_t i = 0; i < g->nentries; i++)
                if (!g->entries[i].used)
                        return (int)i;
        return -1;
}

static int64_t phase_deadline(const connguard_t *g, connguard_phase_t p, int64_t now_ms)
{
        switch (p) {
        case CONNGUARD_HEADERS:
                return now_ms + g->limits.header_ms;
        case CONNGUARD_IDLE:
                return now_ms + g->limits.idle_ms;
        case CONNGUARD_BODY:
        case CONNGUARD_REVIEW:
        case CONNGUARD_ANSWER:
        case CONNGUARD_PHASE_COUNT:
        default:
                return now_ms + g->limits.request_ms;
        }
}

static connguard_decision_t refused(connguard_class_t cls, connguard_refusal_t why)
{
        return (connguard_decision_t){.verdict = CONNGUARD_REFUSE,
                                      .cls = cls,
                                      .refusal = why,
                                      .id = -1,
                                      .victim = -1,
                                      .victim_handle = -1};
}

int connguard_admit(connguard_t *g, const struct sockaddr *addr, size_t addrlen, int64_t now_ms,
                    connguard_decision_t *ret)
{
        int family;
        uint8_t bytes[16];
        int r = address_of(addr, addrlen, &family, bytes);
        if (r < 0)
                return r;
        connguard_class_t cls = CONNGUARD_CLIENT;
        for (size_t i = 0; i < g->ntrusted; i++)
                if (cidr_contains(&g->trusted[i], family, bytes))
                        cls = CONNGUARD_TRUSTED;

        int src = -1;
        if (cls == CONNGUARD_CLIENT) {
                uint8_t key[17] = {(uint8_t)family};
                memcpy(key + 1, bytes, family == AF_INET ? 4 : 8);
                src = find_source(g, key, now_ms);
                if (src < 0) {
                        *ret = refused(cls, CONNGUARD_REFUSED_FULL);
                        return 0;
                }
                source_t *s = &g->sources[src];
                s->seen_ms = now_ms;
                if (g->limits.connect_rate) {
                        /* Every attempt spends a token: a refused one still
                         * cost an accept. */
                        refill(g, s, now_ms);
                        if (s->tokens < TOKEN) {
                                *ret = refused(cls, CONNGUARD_REFUSED_RATE);
                                return 0;
                        }
                        s->tokens -= TOKEN;
                }
                if (g->limits.max_per_client && s->conns >= g->limits.max_per_client) {
                        *ret = refused(cls, CONNGUARD_REFUSED_PER_CLIENT);
                        return 0;
                }
        }

        int id = free_entry(g);
        if (id < 0) {
                *ret = refused(cls, CONNGUARD_REFUSED_FULL);
                return 0;
        }
        uint32_t limit = g->limits.max_connections +
                         (cls == CONNGUARD_TRUSTED ? g->limits.reserved_connections : 0);
        connguard_decision_t d = {
            .verdict = CONNGUARD_ADMIT, .cls = cls, .id = id, .victim = -1, .victim_handle = -1};
        if (g->counted >= limit) {
                int victim = pick_victim(g);
                if (victim < 0) {
                        *ret = refused(cls, CONNGUARD_REFUSED_FULL);
                        return 0;
                }
                entry_t *v = &g->entries[victim];
                d.verdict = CONNGUARD_EVICT;
                d.victim = victim;
                d.victim_phase = v->phase;
                d.victim_handle = v->handle;
                doom(g, v);
        }
        entry_t *e = &g->entries[id];
        *e = (entry_t){.used = true,
                       .counted = true,
                       .cls = cls,
                       .phase = CONNGUARD_HEADERS,
                       .source = src,
                       .phase_start_ms = now_ms,
                       .deadline_ms = phase_deadline(g, CONNGUARD_HEADERS, now_ms),
                       .handle = -1};
        count(g, e, +1);
        *ret = d;
        return 0;
}

static entry_t *entry_of(const connguard_t *g, int id)
{
        if (id < 0 || (size_t)id >= g->nentries || !g->entries[id].used)
                return NULL;
        return &g->entries[id];
}

void connguard_attach(connguard_t *g, int id, intptr_t handle)
{
        entry_t *e = entry_of(g, id);
        if (e)
                e->handle = handle;
}

intptr_t connguard_handle(const connguard_t *g, int id)
{
        const entry_t *e = entry_of(g, id);
        return e ? e->handle : -1;
}

bool connguard_live(const connguard_t *g, int id)
{
        const entry_t *e = entry_of(g, id);
        return e && e->counted;
}

void connguard_closed(connguard_t *g, int id)
{
        entry_t *e = entry_of(g, id);
        if (!e)
                return;
        doom(g, e);
        g->client_body -= e->body;
        e->body = 0;
        e->used = false;
}

int connguard_hold_body(connguard_t *g, int id, uint64_t n)
{
        entry_t *e = entry_of(g, id);
        if (!e || !e->counted)
                return -ENOSPC; /* being shut down: nothing more for it */
        if (e->cls != CONNGUARD_CLIENT)
                return 0;
        source_t *src = e->source >= 0 ? &g->sources[e->source] : NULL;
        const connguard_limits_t *l = &g->limits;
        if ((l->body_per_client && src && src->body + n > l->body_per_client) ||
            (l->body_total && g->client_body + n > l->body_total))
                return -ENOSPC;
        if (src)
                src->body += n;
        e->body += n;
        g->client_body += n;
        return 0;
}

void connguard_release_body(connguard_t *g, int id, uint64_t n)
{
        entry_t *e = entry_of(g, id);
        if (!e || e->cls != CONNGUARD_CLIENT)
                return;
        if (n > e->body)
                n = e->body;
        if (e->counted && e->source >= 0)
                g->sources[e->source].body -= n;
        e->body -= n;
        g->client_body -= n;
}

void connguard_phase(connguard_t *g, int id, connguard_phase_t phase, int64_t now_ms,
                     int64_t deadline_ms)
{
        entry_t *e = entry_of(g, id);
        if (!e || !e->counted || (unsigned)phase >= CONNGUARD_PHASE_COUNT)
                return;
        count(g, e, -1);
        e->phase = phase;
        count(g, e, +1);
        e->phase_start_ms = now_ms;
        e->deadline_ms = deadline_ms ? deadline_ms : phase_deadline(g, phase, now_ms);
}

connguard_phase_t connguard_phase_of(const connguard_t *g, int id)
{
        const entry_t *e = entry_of(g, id);
        return e ? e->phase : CONNGUARD_PHASE_COUNT;
}

connguard_keepalive_t connguard_keep_alive(const connguard_t *g, int id)
{
        const entry_t *e = entry_of(g, id);
        if (!e || !e->counted)
                return CONNGUARD_CLOSE_CLIENT_IDLE;
        if (e->cls == CONNGUARD_TRUSTED)
                return CONNGUARD_KEEP;
        /* With the API server's addresses known, nobody else needs to keep
         * a connection: declining costs a client a handshake, no more. */
        if (g->ntrusted)
                return CONNGUARD_CLOSE_UNTRUSTED;
        if (e->source < 0 || g->sources[e->source].idle >= g->limits.max_idle_per_client)
                return CONNGUARD_CLOSE_CLIENT_IDLE;
        if (g->client_idle >= g->limits.max_idle)
                return CONNGUARD_CLOSE_TABLE_IDLE;
        return CONNGUARD_KEEP;
}

size_t connguard_capacity(const connguard_t *g)
{
        return g->nentries;
}

void connguard_foreach(const connguard_t *g, connguard_phase_t phase,
                       void (*fn)(int id, intptr_t handle, void *data), void *data)
{
        for (size_t i = 0; i < g->nentries; i++) {
                const entry_t *e = &g->entries[i];
                if (e->used && e->counted && (phase == CONNGUARD_PHASE_COUNT || e->phase == phase))
                        fn((int)i, e->handle, data);
        }
}

void connguard_expire(connguard_t *g, int id)
{
        entry_t *e = entry_of(g, id);
        if (e)
                doom(g, e);
}

size_t connguard_expired(connguard_t *g, int64_t now_ms, int *ret_ids,
                         connguard_phase_t *ret_phases, size_t max)
{
        size_t n = 0;
        for (size_t i = 0; i < g->nentries && n < max; i++) {
                entry_t *e = &g->entries[i];
                if (!e->used || !e->counted || e->deadline_ms > now_ms)
                        continue;
                ret_ids[n] = (int)i;
                ret_phases[n] = e->phase;
                n++;
                doom(g, e);
        }
        return n;
}

void connguard_counts(const connguard_t *g,
                      uint32_t ret[CONNGUARD_CLASS_COUNT][CONNGUARD_PHASE_COUNT])
{
        memcpy(ret, g->counts, sizeof(g->counts));
}

const char *connguard_phase_name(connguard_phase_t p)
{
        switch (p) {
        case CONNGUARD_HEADERS:
                return "headers";
        case CONNGUARD_BODY:
                return "body";
        case CONNGUARD_REVIEW:
                return "review";
        case CONNGUARD_ANSWER:
                return "answer";
        case CONNGUARD_IDLE:
                return "idle";
        case CONNGUARD_PHASE_COUNT:
        default:
                return "unknown";
        }
}

const char *connguard_refusal_name(connguard_refusal_t r)
{
        switch (r) {
        case CONNGUARD_REFUSED_PER_CLIENT:
                return "per-client";
        case CONNGUARD_REFUSED_RATE:
                return "rate";
        case CONNGUARD_REFUSED_FULL:
                return "full";
        case CONNGUARD_REFUSED_COUNT:
        default:
                return "unknown";
        }
}

const char *connguard_keepalive_name(connguard_keepalive_t k)
{
        switch (k) {
        case CONNGUARD_KEEP:
                return "kept";
        case CONNGUARD_CLOSE_CLIENT_IDLE:
                return "client-idle";
        case CONNGUARD_CLOSE_TABLE_IDLE:
                return "table-idle";
        case CONNGUARD_CLOSE_UNTRUSTED:
                return "untrusted";
        case CONNGUARD_KEEPALIVE_COUNT:
        default:
                return "unknown";
        }
}

const char *connguard_class_name(connguard_class_t c)
{
        switch (c) {
        case CONNGUARD_TRUSTED:
                return "trusted";
        case CONNGUARD_CLIENT:
                return "client";
        case CONNGUARD_CLASS_COUNT:
        default:
                return "unknown";
        }
}
