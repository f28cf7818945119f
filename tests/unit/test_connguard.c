/* connguard on a fake clock: admission, per-client caps, token buckets,
 * eviction order, deadlines and keep-alive, each decision as
 * docs/research/guard-safe-by-default.md section 3.3 gives it (W15). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "connguard.h"
#include "unit.h"

static const connguard_limits_t base_limits = {
    .max_connections = 8,
    .reserved_connections = 2,
    .max_per_client = 4,
    .max_idle_per_client = 2,
    .max_idle = 3,
    .connect_rate = 0,
    .header_ms = 5000,
    .request_ms = 10000,
    .idle_ms = 120000,
};

static struct sockaddr_storage v4(const char *text)
{
        struct sockaddr_storage ss = {0};
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        in->sin_family = AF_INET;
        ck_assert_int_eq(inet_pton(AF_INET, text, &in->sin_addr), 1);
        return ss;
}

static struct sockaddr_storage v6(const char *text)
{
        struct sockaddr_storage ss = {0};
        struct sockaddr_in6 *in = (struct sockaddr_in6 *)&ss;
        in->sin6_family = AF_INET6;
        ck_assert_int_eq(inet_pton(AF_INET6, text, &in->sin6_addr), 1);
        return ss;
}

static connguard_t *guard(const connguard_limits_t *l, const char *trusted)
{
        cidr_t c = {0};
        if (trusted)
                ck_assert_int_eq(cidr_parse(trusted, &c), 0);
        connguard_t *g = NULL;
        ck_assert_int_eq(connguard_new(l, &c, trusted ? 1 : 0, &g), 0);
        return g;
}

static connguard_decision_t admit(connguard_t *g, const char *addr, int64_t now)
{
        struct sockaddr_storage ss = strchr(addr, ':') ? v6(addr) : v4(addr);
        connguard_decision_t d;
        ck_assert_int_eq(connguard_admit(g, (struct sockaddr *)&ss, sizeof(ss), now, &d), 0);
        return d;
}

START_TEST(cidrs_parse_strictly)
{
        cidr_t c;
        ck_assert_int_eq(cidr_parse("10.0.0.0/8", &c), 0);
        ck_assert_int_eq(c.family, AF_INET);
        ck_assert_int_eq(c.prefix, 8);
        ck_assert_int_eq(cidr_parse("192.0.2.7", &c), 0);
        ck_assert_int_eq(c.prefix, 32);
        ck_assert_int_eq(cidr_parse("fd00:1::/64", &c), 0);
        ck_assert_int_eq(c.family, AF_INET6);
        const char *bad[] = {"",           "/8",          "10.0.0.1/8", "10.0.0.0/33",
                             "10.0.0.0/",  "10.0.0.0/8x", "fd00::1/64", "host",
                             "10.0.0.0/-1"};
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(cidr_parse(bad[i], &c) == -EINVAL, "accepted '%s'", bad[i]);
}
END_TEST

START_TEST(per_client_cap_refuses_and_frees_on_close)
{
        connguard_t *g = guard(&base_limits, NULL);
        int ids[4];
        for (int i = 0; i < 4; i++) {
                connguard_decision_t d = admit(g, "192.0.2.1", i);
                ck_assert_int_eq(d.verdict, CONNGUARD_ADMIT);
                ck_assert_int_eq(d.cls, CONNGUARD_CLIENT);
                ids[i] = d.id;
        }
        connguard_decision_t d = admit(g, "192.0.2.1", 10);
        ck_assert_int_eq(d.verdict, CONNGUARD_REFUSE);
        ck_assert_int_eq(d.refusal, CONNGUARD_REFUSED_PER_CLIENT);
        /* Another source is not held to the first one's count. */
        ck_assert_int_eq(admit(g, "192.0.2.2", 11).verdict, CONNGUARD_ADMIT);
        connguard_closed(g, ids[0]);
        ck_assert_int_eq(admit(g, "192.0.2.1", 12).verdict, CONNGUARD_ADMIT);
        connguard_free(g);
}
END_TEST

START_TEST(ipv6_sources_are_their_64)
{
        connguard_limits_t l = base_limits;
        l.max_connections = 100;
        connguard_t *g = guard(&l, NULL);
        /* Four addresses of one /64 are one source ... */
        for (int i = 0; i < 4; i++) {
                char a[64];
                (void)snprintf(a, sizeof(a), "2001:db8:1:2::%x", i + 1);
                ck_assert_int_eq(admit(g, a, i).verdict, CONNGUARD_ADMIT);
        }
        connguard_decision_t d = admit(g, "2001:db8:1:2:ffff::9", 5);
        ck_assert_int_eq(d.verdict, CONNGUARD_REFUSE);
        ck_assert_int_eq(d.refusal, CONNGUARD_REFUSED_PER_CLIENT);
        /* ... the next /64 is another, and an IPv4-mapped address is IPv4. */
        ck_assert_int_eq(admit(g, "2001:db8:1:3::1", 6).verdict, CONNGUARD_ADMIT);
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(admit(g, "192.0.2.9", 7).verdict, CONNGUARD_ADMIT);
        ck_assert_int_eq(admit(g, "::ffff:192.0.2.9", 8).verdict, CONNGUARD_ADMIT);
        ck_assert_int_eq(admit(g, "::ffff:192.0.2.9", 8).refusal, CONNGUARD_REFUSED_PER_CLIENT);
        connguard_free(g);
}
END_TEST

START_TEST(connect_rate_bucket_bursts_twice_then_refills)
{
        connguard_limits_t l = base_limits;
        l.connect_rate = 2; /* burst 4 */
        l.max_per_client = 0;
        l.max_connections = 100;
        connguard_t *g = guard(&l, NULL);
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(admit(g, "192.0.2.1", 1000).verdict, CONNGUARD_ADMIT);
        connguard_decision_t d = admit(g, "192.0.2.1", 1000);
        ck_assert_int_eq(d.verdict, CONNGUARD_REFUSE);
        ck_assert_int_eq(d.refusal, CONNGUARD_REFUSED_RATE);
        /* Another source has its own bucket. */
        ck_assert_int_eq(admit(g, "192.0.2.2", 1000).verdict, CONNGUARD_ADMIT);
        /* 2 a second: one more after 500 ms, not before. */
        ck_assert_int_eq(admit(g, "192.0.2.1", 1499).verdict, CONNGUARD_REFUSE);
        ck_assert_int_eq(admit(g, "192.0.2.1", 1500).verdict, CONNGUARD_ADMIT);
        ck_assert_int_eq(admit(g, "192.0.2.1", 1500).verdict, CONNGUARD_REFUSE);
        /* A long pause refills to the burst, no further. */
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(admit(g, "192.0.2.1", 100000).verdict, CONNGUARD_ADMIT);
        ck_assert_int_eq(admit(g, "192.0.2.1", 100000).refusal, CONNGUARD_REFUSED_RATE);
        connguard_free(g);
}
END_TEST

/* Fills the 8 client slots from 4 sources, two each. */
static void fill(connguard_t *g, int ids[8])
{
        const char *src[] = {"198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.4"};
        for (int i = 0; i < 8; i++) {
                connguard_decision_t d = admit(g, src[i / 2], 100 + i);
                ck_assert_int_eq(d.verdict, CONNGUARD_ADMIT);
                ids[i] = d.id;
        }
}

START_TEST(full_table_evicts_from_the_biggest_source)
{
        connguard_t *g = guard(&base_limits, NULL);
        /* 198.51.100.1 holds four, .2 and .3 two each. */
        int a[4], b[2], c[2];
        for (int i = 0; i < 4; i++)
                a[i] = admit(g, "198.51.100.1", 100 + i).id;
        for (int i = 0; i < 2; i++) {
                b[i] = admit(g, "198.51.100.2", 110 + i).id;
                c[i] = admit(g, "198.51.100.3", 120 + i).id;
                connguard_phase(g, b[i], CONNGUARD_BODY, 130, 0); /* busy, and early */
                connguard_phase(g, c[i], CONNGUARD_IDLE, 130, 0);
        }
        /* The big source's busy ones go first, the earliest-begun phase
         * first (a[3]'s, though its connection is newer than a[2]'s). */
        connguard_phase(g, a[0], CONNGUARD_IDLE, 200, 0);
        connguard_phase(g, a[1], CONNGUARD_IDLE, 210, 0);
        connguard_phase(g, a[2], CONNGUARD_BODY, 300, 0);
        connguard_phase(g, a[3], CONNGUARD_REVIEW, 150, 0);
        connguard_attach(g, a[3], 66);
        connguard_decision_t d = admit(g, "203.0.113.1", 400);
        ck_assert_int_eq(d.verdict, CONNGUARD_EVICT);
        ck_assert_int_eq(d.victim, a[3]);
        ck_assert_int_eq(d.victim_phase, CONNGUARD_REVIEW);
        ck_assert_int_eq(d.victim_handle, 66);
        ck_assert(!connguard_live(g, a[3]));
        ck_assert(connguard_live(g, d.id));
        d = admit(g, "203.0.113.2", 401);
        ck_assert_int_eq(d.victim, a[2]);
        /* Now .1, .2 and .3 hold two each: the first of them gives up its
         * longest idle one; .2's earlier busy ones are not its. */
        d = admit(g, "203.0.113.3", 402);
        ck_assert_int_eq(d.verdict, CONNGUARD_EVICT);
        ck_assert_int_eq(d.victim, a[0]);
        ck_assert_int_eq(d.victim_phase, CONNGUARD_IDLE);
        /* A victim is evicted once: it no longer counts, and an expiry
         * never reports it again. */
        int out[16];
        connguard_phase_t ph[16];
        ck_assert_uint_eq(connguard_expired(g, 10000000, out, ph, 16), 8);
        for (int i = 0; i < 8; i++)
                ck_assert_int_ne(out[i], a[3]);
        connguard_free(g);
}
END_TEST

/* The API server's client holds a few connections per address; a hog
 * many: a full table takes from the hog, even its newer connections. */
START_TEST(full_table_spares_small_sources)
{
        connguard_limits_t l = base_limits;
        l.max_per_client = 0;
        l.max_connections = 9;
        connguard_t *g = guard(&l, NULL);
        int api = admit(g, "192.0.2.1", 0).id;
        connguard_phase(g, api, CONNGUARD_IDLE, 10, 0);
        int hog[7];
        for (int i = 0; i < 7; i++) {
                hog[i] = admit(g, "198.51.100.9", 20 + i).id;
                connguard_phase(g, hog[i], CONNGUARD_IDLE, 30 + i, 0);
        }
        /* The API server's idle connection is the oldest, and a hog's
         * handshake is young: neither is what goes. */
        connguard_decision_t y = admit(g, "198.51.100.9", 40);
        ck_assert_int_eq(y.verdict, CONNGUARD_ADMIT);
        int young = y.id;
        connguard_decision_t d = admit(g, "203.0.113.1", 500);
        ck_assert_int_eq(d.verdict, CONNGUARD_EVICT);
        ck_assert_int_eq(d.victim, young);
        d = admit(g, "203.0.113.2", 501);
        ck_assert_int_eq(d.victim, hog[0]);
        ck_assert(connguard_live(g, api));
        connguard_free(g);
}
END_TEST

START_TEST(trusted_sources_use_reserved_slots_and_are_never_victims)
{
        connguard_limits_t l = base_limits;
        connguard_t *g = guard(&l, "10.0.0.0/8");
        int ids[8];
        fill(g, ids);
        /* Trusted: no per-client cap, two reserved slots, no eviction. */
        int t[2];
        for (int i = 0; i < 2; i++) {
                connguard_decision_t d = admit(g, "10.1.2.3", 500);
                ck_assert_int_eq(d.verdict, CONNGUARD_ADMIT);
                ck_assert_int_eq(d.cls, CONNGUARD_TRUSTED);
                t[i] = d.id;
        }
        /* Past the reserve, a trusted newcomer evicts a client. */
        connguard_decision_t d = admit(g, "10.1.2.3", 501);
        ck_assert_int_eq(d.verdict, CONNGUARD_EVICT);
        ck_assert_int_ne(d.victim, t[0]);
        ck_assert_int_ne(d.victim, t[1]);
        /* A client newcomer finds the table over its 8: it evicts a client. */
        d = admit(g, "203.0.113.1", 600);
        ck_assert_int_eq(d.verdict, CONNGUARD_EVICT);
        ck_assert_int_ne(d.victim, t[0]);
        ck_assert_int_ne(d.victim, t[1]);
        /* With only trusted connections in the table, a client is
         * refused rather than evicting one. */
        connguard_t *h = guard(&l, "10.0.0.0/8");
        for (int i = 0; i < 10; i++)
                ck_assert_int_eq(admit(h, "10.9.9.9", 1).verdict, CONNGUARD_ADMIT);
        d = admit(h, "192.0.2.1", 2);
        ck_assert_int_eq(d.verdict, CONNGUARD_REFUSE);
        ck_assert_int_eq(d.refusal, CONNGUARD_REFUSED_FULL);
        connguard_free(h);
        connguard_free(g);
}
END_TEST

START_TEST(deadlines_per_phase_are_absolute)
{
        connguard_t *g = guard(&base_limits, NULL);
        int a = admit(g, "192.0.2.1", 0).id;
        int b = admit(g, "192.0.2.2", 0).id;
        int c = admit(g, "192.0.2.3", 0).id;
        int out[8];
        connguard_phase_t ph[8];
        ck_assert_uint_eq(connguard_expired(g, 4999, out, ph, 8), 0);
        connguard_phase(g, b, CONNGUARD_BODY, 1000, 0);      /* due 11000 */
        connguard_phase(g, c, CONNGUARD_REVIEW, 1000, 3000); /* ?timeout: due 3000 */
        /* Headers: from accept, however the client trickles. */
        ck_assert_uint_eq(connguard_expired(g, 3000, out, ph, 8), 1);
        ck_assert_int_eq(out[0], c);
        ck_assert_int_eq(ph[0], CONNGUARD_REVIEW);
        ck_assert_uint_eq(connguard_expired(g, 5000, out, ph, 8), 1);
        ck_assert_int_eq(out[0], a);
        ck_assert_int_eq(ph[0], CONNGUARD_HEADERS);
        /* Doomed entries stay doomed: a later phase change is ignored. */
        connguard_phase(g, a, CONNGUARD_IDLE, 5001, 0);
        ck_assert_uint_eq(connguard_expired(g, 10999, out, ph, 8), 0);
        ck_assert_uint_eq(connguard_expired(g, 11000, out, ph, 8), 1);
        ck_assert_int_eq(out[0], b);
        /* Idle: idle_since + idleTimeout, not refreshed by phase churn. */
        int d = admit(g, "192.0.2.4", 20000).id;
        connguard_phase(g, d, CONNGUARD_IDLE, 20000, 0);
        ck_assert_uint_eq(connguard_expired(g, 139999, out, ph, 8), 0);
        ck_assert_uint_eq(connguard_expired(g, 140000, out, ph, 8), 1);
        ck_assert_int_eq(ph[0], CONNGUARD_IDLE);
        /* At most max at a time; the rest on the next call. */
        for (int i = 0; i < 3; i++)
                (void)admit(g, "192.0.2.5", 200000);
        ck_assert_uint_eq(connguard_expired(g, 300000, out, ph, 2), 2);
        ck_assert_uint_eq(connguard_expired(g, 300000, out, ph, 2), 1);
        connguard_free(g);
}
END_TEST

START_TEST(keep_alive_declined_over_idle_caps)
{
        connguard_t *g = guard(&base_limits, NULL);
        int a[4];
        for (int i = 0; i < 4; i++)
                a[i] = admit(g, "192.0.2.1", 0).id;
        /* maxIdlePerClient 2: the third answer while two are idle closes. */
        ck_assert_int_eq(connguard_keep_alive(g, a[0]), CONNGUARD_KEEP);
        connguard_phase(g, a[0], CONNGUARD_IDLE, 1, 0);
        connguard_phase(g, a[1], CONNGUARD_IDLE, 1, 0);
        ck_assert_int_eq(connguard_keep_alive(g, a[2]), CONNGUARD_CLOSE_CLIENT_IDLE);
        /* Another source, under its own cap, is held by the table's: 3. */
        int b = admit(g, "192.0.2.2", 2).id;
        int b2 = admit(g, "192.0.2.2", 2).id;
        ck_assert_int_eq(connguard_keep_alive(g, b), CONNGUARD_KEEP);
        connguard_phase(g, b, CONNGUARD_IDLE, 3, 0);
        ck_assert_int_eq(connguard_keep_alive(g, b2), CONNGUARD_CLOSE_TABLE_IDLE);
        /* An idle connection put to work frees its idle slot. */
        connguard_phase(g, a[0], CONNGUARD_HEADERS, 4, 0);
        ck_assert_int_eq(connguard_keep_alive(g, b2), CONNGUARD_KEEP);
        ck_assert_int_eq(connguard_keep_alive(g, a[2]), CONNGUARD_KEEP);
        uint32_t counts[CONNGUARD_CLASS_COUNT][CONNGUARD_PHASE_COUNT];
        connguard_counts(g, counts);
        ck_assert_uint_eq(counts[CONNGUARD_CLIENT][CONNGUARD_IDLE], 2);
        ck_assert_uint_eq(counts[CONNGUARD_CLIENT][CONNGUARD_HEADERS], 4);
        ck_assert_uint_eq(counts[CONNGUARD_TRUSTED][CONNGUARD_HEADERS], 0);
        connguard_free(g);
}
END_TEST

START_TEST(with_trusted_cidrs_only_trusted_keep_alive)
{
        connguard_limits_t l = base_limits;
        l.max_idle_per_client = 0; /* would refuse every client anyway */
        connguard_t *g = guard(&l, "2001:db8::/32");
        int t = admit(g, "2001:db8:5::1", 0).id;
        int c = admit(g, "192.0.2.1", 0).id;
        ck_assert_int_eq(connguard_keep_alive(g, t), CONNGUARD_KEEP);
        ck_assert_int_eq(connguard_keep_alive(g, c), CONNGUARD_CLOSE_UNTRUSTED);
        connguard_free(g);
}
END_TEST

START_TEST(other_families_are_refused_by_the_caller)
{
        connguard_t *g = guard(&base_limits, NULL);
        struct sockaddr_storage ss = {0};
        ss.ss_family = AF_UNIX;
        connguard_decision_t d;
        ck_assert_int_eq(connguard_admit(g, (struct sockaddr *)&ss, sizeof(ss), 0, &d),
                         -EAFNOSUPPORT);
        /* A short IPv4 address is not read past its length. */
        struct sockaddr_storage s4 = v4("192.0.2.1");
        ck_assert_int_eq(connguard_admit(g, (struct sockaddr *)&s4, 4, 0, &d), -EAFNOSUPPORT);
        connguard_free(g);
}
END_TEST

START_TEST(sources_are_recycled_when_the_table_is_busy)
{
        connguard_limits_t l = base_limits;
        l.connect_rate = 1;
        connguard_t *g = guard(&l, NULL);
        /* Many more sources than rows come and go: the rows of sources
         * without connections are reused, and a new source starts full. */
        for (int i = 0; i < 200; i++) {
                char a[32];
                (void)snprintf(a, sizeof(a), "10.0.%d.%d", i / 200, i % 200);
                connguard_decision_t d = admit(g, a, i);
                ck_assert_int_eq(d.verdict, CONNGUARD_ADMIT);
                connguard_closed(g, d.id);
        }
        ck_assert_int_eq(admit(g, "192.0.2.1", 1000).verdict, CONNGUARD_ADMIT);
        ck_assert_int_eq(admit(g, "192.0.2.1", 1000).verdict, CONNGUARD_ADMIT);
        ck_assert_int_eq(admit(g, "192.0.2.1", 1000).refusal, CONNGUARD_REFUSED_RATE);
        connguard_free(g);
}
END_TEST

static void collect(int id, intptr_t handle, void *data)
{
        int *seen = data;
        seen[id] = (int)handle;
}

START_TEST(foreach_and_expire_one)
{
        connguard_t *g = guard(&base_limits, NULL);
        int a = admit(g, "192.0.2.1", 0).id;
        int b = admit(g, "192.0.2.2", 0).id;
        connguard_attach(g, a, 10);
        connguard_attach(g, b, 11);
        connguard_phase(g, b, CONNGUARD_IDLE, 1, 0);
        int seen[64];
        memset(seen, -1, sizeof(seen));
        connguard_foreach(g, CONNGUARD_IDLE, collect, seen);
        ck_assert_int_eq(seen[b], 11);
        ck_assert_int_eq(seen[a], -1);
        memset(seen, -1, sizeof(seen));
        connguard_foreach(g, CONNGUARD_PHASE_COUNT, collect, seen);
        ck_assert_int_eq(seen[a], 10);
        ck_assert_int_eq(seen[b], 11);
        ck_assert_uint_ge(connguard_capacity(g), 2 * (8 + 2));
        /* Expired by the caller: no longer counted, never listed or
         * reported again. */
        connguard_expire(g, b);
        ck_assert(!connguard_live(g, b));
        memset(seen, -1, sizeof(seen));
        connguard_foreach(g, CONNGUARD_IDLE, collect, seen);
        ck_assert_int_eq(seen[b], -1);
        int out[4];
        connguard_phase_t ph[4];
        ck_assert_uint_eq(connguard_expired(g, 1000000, out, ph, 4), 1);
        ck_assert_int_eq(out[0], a);
        connguard_free(g);
}
END_TEST

/* Request bodies held in memory: per source and in all, trusted sources
 * not counted, given back at the request's end and at close, and a source
 * doomed (evicted) gives its share back at once. */
START_TEST(body_bytes_capped_per_source_and_in_all)
{
        connguard_limits_t l = base_limits;
        l.body_per_client = 100;
        l.body_total = 150;
        connguard_t *g = guard(&l, "10.0.0.0/8");
        int a1 = admit(g, "192.0.2.1", 1).id, a2 = admit(g, "192.0.2.1", 2).id;
        int b1 = admit(g, "192.0.2.2", 3).id, t = admit(g, "10.1.1.1", 4).id;
        ck_assert_int_eq(connguard_hold_body(g, a1, 60), 0);
        ck_assert_int_eq(connguard_hold_body(g, a2, 40), 0);
        /* The source is at its 100. */
        ck_assert_int_eq(connguard_hold_body(g, a2, 1), -ENOSPC);
        ck_assert_int_eq(connguard_hold_body(g, b1, 50), 0);
        /* All clients at their 150: another source is refused too. */
        ck_assert_int_eq(connguard_hold_body(g, b1, 1), -ENOSPC);
        /* The trusted source is not counted. */
        ck_assert_int_eq(connguard_hold_body(g, t, 1000), 0);
        /* A request's end gives its bytes back. */
        connguard_release_body(g, a1, 60);
        ck_assert_int_eq(connguard_hold_body(g, b1, 50), 0);
        ck_assert_int_eq(connguard_hold_body(g, b1, 1), -ENOSPC);
        /* Closing gives back what is left; an expired entry is refused. */
        connguard_closed(g, b1);
        ck_assert_int_eq(connguard_hold_body(g, a1, 60), 0);
        ck_assert_int_eq(connguard_hold_body(g, a1, 1), -ENOSPC);
        int ids[8];
        connguard_phase_t phases[8];
        size_t n = connguard_expired(g, 1 + l.header_ms + 1, ids, phases, 8);
        ck_assert_uint_ge(n, 1);
        ck_assert_int_eq(connguard_hold_body(g, a1, 1), -ENOSPC);
        /* Doomed, a1's and a2's bytes left their source: a new connection
         * of it may hold its whole share, within the total. */
        int a3 = admit(g, "192.0.2.1", 1 + l.header_ms + 2).id;
        ck_assert_int_eq(connguard_hold_body(g, a3, 50), 0);
        /* ... but the doomed entries' bytes still count in all (100 + 50). */
        ck_assert_int_eq(connguard_hold_body(g, a3, 1), -ENOSPC);
        connguard_closed(g, a1);
        connguard_closed(g, a2);
        ck_assert_int_eq(connguard_hold_body(g, a3, 50), 0);
        ck_assert_int_eq(connguard_hold_body(g, a3, 1), -ENOSPC); /* its source's 100 */
        connguard_free(g);
}
END_TEST

START_TEST(names)
{
        ck_assert_str_eq(connguard_phase_name(CONNGUARD_HEADERS), "headers");
        ck_assert_str_eq(connguard_phase_name(CONNGUARD_IDLE), "idle");
        ck_assert_str_eq(connguard_refusal_name(CONNGUARD_REFUSED_PER_CLIENT), "per-client");
        ck_assert_str_eq(connguard_refusal_name(CONNGUARD_REFUSED_RATE), "rate");
        ck_assert_str_eq(connguard_keepalive_name(CONNGUARD_CLOSE_CLIENT_IDLE), "client-idle");
        ck_assert_str_eq(connguard_class_name(CONNGUARD_TRUSTED), "trusted");
        ck_assert_str_eq(connguard_phase_name((connguard_phase_t)99), "unknown");
}
END_TEST

static Suite *connguard_suite(void)
{
        Suite *s = suite_create("connguard");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, cidrs_parse_strictly);
        tcase_add_test(tc, per_client_cap_refuses_and_frees_on_close);
        tcase_add_test(tc, ipv6_sources_are_their_64);
        tcase_add_test(tc, connect_rate_bucket_bursts_twice_then_refills);
        tcase_add_test(tc, full_table_evicts_from_the_biggest_source);
        tcase_add_test(tc, full_table_spares_small_sources);
        tcase_add_test(tc, trusted_sources_use_reserved_slots_and_are_never_victims);
        tcase_add_test(tc, deadlines_per_phase_are_absolute);
        tcase_add_test(tc, keep_alive_declined_over_idle_caps);
        tcase_add_test(tc, with_trusted_cidrs_only_trusted_keep_alive);
        tcase_add_test(tc, other_families_are_refused_by_the_caller);
        tcase_add_test(tc, sources_are_recycled_when_the_table_is_busy);
        tcase_add_test(tc, foreach_and_expire_one);
        tcase_add_test(tc, body_bytes_capped_per_source_and_in_all);
        tcase_add_test(tc, names);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(connguard_suite());
}
