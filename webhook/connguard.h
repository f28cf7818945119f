/* Who may hold the webhook's connections, and for how long: one table per
 * listener of every connection's source, class, phase and absolute
 * deadline, and the decisions made on it (admit, refuse, evict, expire,
 * keep alive or not). Pure: the caller passes the clock and does the I/O
 * (server.c shuts sockets down, under its own mutex); nothing here locks.
 *
 * Why: one pod that opens many keep-alive connections, or trickles bytes,
 * must not keep the API server's reviews out. The API server's client is
 * recognised by behaviour (few idle connections, short phases) unless its
 * addresses are configured as trusted (docs/webhook.md, "Connections"). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cidr.h"

typedef enum connguard_class {
        CONNGUARD_TRUSTED, /* in server.trustedClientCIDRs: no per-client caps, reserved slots */
        CONNGUARD_CLIENT,
        CONNGUARD_CLASS_COUNT,
} connguard_class_t;

/* A connection's phases, each with its own deadline. */
typedef enum connguard_phase {
        CONNGUARD_HEADERS, /* TLS handshake, then a request's headers */
        CONNGUARD_BODY,
        CONNGUARD_REVIEW, /* the answer is being computed */
        CONNGUARD_ANSWER, /* queued, being written */
        CONNGUARD_IDLE,   /* between requests (or handshaken, before the first) */
        CONNGUARD_PHASE_COUNT,
} connguard_phase_t;

typedef enum connguard_refusal {
        CONNGUARD_REFUSED_PER_CLIENT, /* the source holds maxConnectionsPerClient */
        CONNGUARD_REFUSED_RATE,       /* the source connects faster than clientConnectRate */
        CONNGUARD_REFUSED_FULL,       /* the table is full and nothing may be evicted */
        CONNGUARD_REFUSED_COUNT,
} connguard_refusal_t;

/* Whether an answer keeps its connection alive, and if not why. */
typedef enum connguard_keepalive {
        CONNGUARD_KEEP,
        CONNGUARD_CLOSE_CLIENT_IDLE, /* the source holds maxIdlePerClient idle connections */
        CONNGUARD_CLOSE_TABLE_IDLE,  /* the table holds maxIdleConnections idle client ones */
        CONNGUARD_CLOSE_UNTRUSTED,   /* trusted CIDRs are set and the source is not in them */
        CONNGUARD_KEEPALIVE_COUNT,
} connguard_keepalive_t;

typedef enum connguard_verdict {
        CONNGUARD_ADMIT,
        CONNGUARD_EVICT, /* admitted; the victim must be shut down */
        CONNGUARD_REFUSE,
} connguard_verdict_t;

typedef struct connguard_limits {
        uint32_t max_connections;      /* client table size */
        uint32_t reserved_connections; /* more, for trusted sources only */
        uint32_t max_per_client;       /* 0: no cap */
        uint32_t max_idle_per_client;  /* 0: never keep a client's connection alive */
        uint32_t max_idle;             /* idle client connections in all */
        uint32_t connect_rate; /* new connections a second per client source, burst 2x; 0: no cap */
        uint32_t header_ms;    /* accept (or the first byte of a request) to its headers */
        uint32_t request_ms;   /* each of body, review and answer */
        uint32_t idle_ms;      /* between requests, absolute */
        /* Request body bytes client connections may hold in memory, per
         * source and in all (0: no cap); trusted sources are not counted. */
        uint64_t body_per_client;
        uint64_t body_total;
} connguard_limits_t;

typedef struct connguard connguard_t;

typedef struct connguard_decision {
        connguard_verdict_t verdict;
        connguard_class_t cls;
        connguard_refusal_t refusal; /* CONNGUARD_REFUSE */
        int id;                      /* ADMIT, EVICT: the newcomer's entry */
        int victim;                  /* EVICT: the entry to shut down */
        connguard_phase_t victim_phase;
        intptr_t victim_handle; /* what connguard_attach gave the victim (-1: none yet) */
} connguard_decision_t;

int connguard_new(const connguard_limits_t *limits, const cidr_t *trusted, size_t ntrusted,
                  connguard_t **ret);
void connguard_free(connguard_t *g);

/* A new connection from addr at now_ms (monotonic milliseconds): its entry
 * starts in CONNGUARD_HEADERS. -EAFNOSUPPORT for a family other than IPv4
 * and IPv6. An evicted victim no longer counts from here on; its entry
 * stays until connguard_closed. */
int connguard_admit(connguard_t *g, const struct sockaddr *addr, size_t addrlen, int64_t now_ms,
                    connguard_decision_t *ret);
/* The caller's handle for an entry (server.c: the socket). */
void connguard_attach(connguard_t *g, int id, intptr_t handle);
intptr_t connguard_handle(const connguard_t *g, int id);
/* Whether the entry still counts (not evicted, not expired). */
bool connguard_live(const connguard_t *g, int id);
/* The connection is gone: its entry is free. */
void connguard_closed(connguard_t *g, int id);

/* A request on entry id is about to hold n more bytes of its body in
 * memory: 0 (counted), or -ENOSPC when its source would then hold more than
 * body_per_client, or the client connections in all more than body_total,
 * or the entry is being shut down. A client that trickles bodies on many
 * connections would otherwise make the webhook hold maxBodyBytes on each
 * (1.2 GB with the chart's table full: bench/webhook-memory.sh). Trusted
 * entries are not counted. */
int connguard_hold_body(connguard_t *g, int id, uint64_t n);
/* n of them given back (the request ended, or its body was thrown away).
 * connguard_closed gives back what is left. */
void connguard_release_body(connguard_t *g, int id, uint64_t n);
/* The entry enters phase at now_ms; deadline_ms 0 means the phase's own
 * (limits), else that absolute time. A doomed (evicted, expired) entry
 * stays as it is. */
void connguard_phase(connguard_t *g, int id, connguard_phase_t phase, int64_t now_ms,
                     int64_t deadline_ms);
connguard_phase_t connguard_phase_of(const connguard_t *g, int id);
/* Whether the answer about to be queued on entry id keeps the connection. */
connguard_keepalive_t connguard_keep_alive(const connguard_t *g, int id);
/* How many entries the table can hold, doomed ones included. */
size_t connguard_capacity(const connguard_t *g);
/* Calls fn for each live entry in phase (CONNGUARD_PHASE_COUNT: in any),
 * with its id and handle; fn must not change the table (collect, then
 * act). */
void connguard_foreach(const connguard_t *g, connguard_phase_t phase,
                       void (*fn)(int id, intptr_t handle, void *data), void *data);
/* Dooms a live entry now, as if its deadline had passed (a deadline the
 * caller keeps: server.c's request starts, seen without the lock). */
void connguard_expire(connguard_t *g, int id);
/* Entries past their deadline at now_ms, at most max, each doomed (no
 * longer counted, never reported again): their ids and phases. */
size_t connguard_expired(connguard_t *g, int64_t now_ms, int *ret_ids,
                         connguard_phase_t *ret_phases, size_t max);
/* Live (not doomed) connections by class and phase. */
void connguard_counts(const connguard_t *g,
                      uint32_t ret[CONNGUARD_CLASS_COUNT][CONNGUARD_PHASE_COUNT]);

const char *connguard_phase_name(connguard_phase_t p);
const char *connguard_refusal_name(connguard_refusal_t r);
const char *connguard_keepalive_name(connguard_keepalive_t k);
const char *connguard_class_name(connguard_class_t c);
