/* Unit tests for common/wire/handshake: the proofs are HMAC-SHA256 over the
 * documented layout (checked against OpenSSL computing the same bytes by
 * hand), and a proof is good for exactly one token, label (driver, relay,
 * the driver's TAKEN), channel, pair of nonces, instance and pair of
 * connection ends: changing any one bit of any of them fails it. Both
 * sides of a real connection (IPv4, IPv6) compute the same ends. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "cleanup.h"
#include "handshake.h"
#include "unit.h"

static handshake_binding_t sample(void)
{
        handshake_binding_t b = {.channel = FRAME_CHANNEL_IO};
        for (size_t i = 0; i < FRAME_NONCE_SIZE; i++) {
                b.relay_nonce[i] = (uint8_t)(i + 1);
                b.driver_nonce[i] = (uint8_t)(0xff - i);
        }
        for (size_t i = 0; i < FRAME_INSTANCE_SIZE; i++)
                b.instance[i] = (uint8_t)(0x10 * i);
        for (size_t i = 0; i < HANDSHAKE_ENDPOINT_SIZE; i++) {
                b.ends.relay[i] = (uint8_t)(0x40 + i);
                b.ends.driver[i] = (uint8_t)(0x80 + i);
        }
        return b;
}

static token_t sample_token(void)
{
        token_t t;
        for (size_t i = 0; i < FRAME_TOKEN_SIZE; i++)
                t.bytes[i] = (uint8_t)(0xa0 ^ i);
        return t;
}

START_TEST(layout_is_documented)
{
        token_t t = sample_token();
        handshake_binding_t b = sample();
        static const char *const labels[] = {"hangar driver proof v2", "hangar relay proof v2",
                                             "hangar driver taken v2"};
        ck_assert_int_eq(HANDSHAKE_DRIVER, 0);
        ck_assert_int_eq(HANDSHAKE_RELAY, 1);
        ck_assert_int_eq(HANDSHAKE_TAKEN, 2);
        for (int side = HANDSHAKE_DRIVER; side <= HANDSHAKE_TAKEN; side++) {
                uint8_t msg[192];
                size_t n = strlen(labels[side]) + 1;
                memcpy(msg, labels[side], n);
                msg[n++] = FRAME_CHANNEL_IO;
                memcpy(msg + n, b.relay_nonce, FRAME_NONCE_SIZE);
                n += FRAME_NONCE_SIZE;
                memcpy(msg + n, b.driver_nonce, FRAME_NONCE_SIZE);
                n += FRAME_NONCE_SIZE;
                memcpy(msg + n, b.instance, FRAME_INSTANCE_SIZE);
                n += FRAME_INSTANCE_SIZE;
                memcpy(msg + n, b.ends.relay, HANDSHAKE_ENDPOINT_SIZE);
                n += HANDSHAKE_ENDPOINT_SIZE;
                memcpy(msg + n, b.ends.driver, HANDSHAKE_ENDPOINT_SIZE);
                n += HANDSHAKE_ENDPOINT_SIZE;
                uint8_t want[EVP_MAX_MD_SIZE];
                unsigned int want_len = 0;
                ck_assert_ptr_nonnull(
                    HMAC(EVP_sha256(), t.bytes, (int)sizeof(t.bytes), msg, n, want, &want_len));
                ck_assert_uint_eq(want_len, FRAME_MAC_SIZE);
                uint8_t got[FRAME_MAC_SIZE];
                ck_assert_int_eq(handshake_prove(&t, (handshake_side_t)side, &b, got), 0);
                ck_assert_int_eq(memcmp(got, want, FRAME_MAC_SIZE), 0);
                ck_assert(handshake_verify(&t, (handshake_side_t)side, &b, got));
        }
}
END_TEST

/* Flip one bit of every input in turn: the proof no longer verifies. */
START_TEST(every_input_is_bound)
{
        token_t t = sample_token();
        handshake_binding_t b = sample();
        uint8_t mac[FRAME_MAC_SIZE];
        ck_assert_int_eq(handshake_prove(&t, HANDSHAKE_RELAY, &b, mac), 0);
        ck_assert(handshake_verify(&t, HANDSHAKE_RELAY, &b, mac));
        /* The other labels: a relay's proof is neither a CHALLENGE's nor a
         * TAKEN's, and those two are not each other's. */
        ck_assert(!handshake_verify(&t, HANDSHAKE_DRIVER, &b, mac));
        ck_assert(!handshake_verify(&t, HANDSHAKE_TAKEN, &b, mac));
        uint8_t dmac[FRAME_MAC_SIZE], tmac[FRAME_MAC_SIZE];
        ck_assert_int_eq(handshake_prove(&t, HANDSHAKE_DRIVER, &b, dmac), 0);
        ck_assert_int_eq(handshake_prove(&t, HANDSHAKE_TAKEN, &b, tmac), 0);
        ck_assert(handshake_verify(&t, HANDSHAKE_TAKEN, &b, tmac));
        ck_assert(!handshake_verify(&t, HANDSHAKE_TAKEN, &b, dmac));
        ck_assert(!handshake_verify(&t, HANDSHAKE_DRIVER, &b, tmac));
        ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &b, tmac));
        /* A TAKEN is bound like the rest: another channel, nonce or end fails it. */
        handshake_binding_t ot = b;
        ot.channel = FRAME_CHANNEL_CTL;
        ck_assert(!handshake_verify(&t, HANDSHAKE_TAKEN, &ot, tmac));
        ot = b;
        ot.driver_nonce[0] ^= 1;
        ck_assert(!handshake_verify(&t, HANDSHAKE_TAKEN, &ot, tmac));
        ot = b;
        ot.ends.relay[17] ^= 1;
        ck_assert(!handshake_verify(&t, HANDSHAKE_TAKEN, &ot, tmac));
        /* The other channel. */
        handshake_binding_t o = b;
        o.channel = FRAME_CHANNEL_CTL;
        ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &o, mac));
        /* Every bit of the token, the nonces, the instance; and of the proof. */
        for (size_t bit = 0; bit < 8 * FRAME_TOKEN_SIZE; bit++) {
                token_t x = t;
                x.bytes[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                ck_assert(!handshake_verify(&x, HANDSHAKE_RELAY, &b, mac));
        }
        for (size_t bit = 0; bit < 8 * FRAME_NONCE_SIZE; bit++) {
                o = b;
                o.relay_nonce[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &o, mac));
                o = b;
                o.driver_nonce[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &o, mac));
        }
        for (size_t bit = 0; bit < 8 * FRAME_INSTANCE_SIZE; bit++) {
                o = b;
                o.instance[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &o, mac));
        }
        for (size_t bit = 0; bit < 8 * HANDSHAKE_ENDPOINT_SIZE; bit++) {
                o = b;
                o.ends.relay[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &o, mac));
                o = b;
                o.ends.driver[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &o, mac));
        }
        for (size_t bit = 0; bit < 8 * FRAME_MAC_SIZE; bit++) {
                uint8_t m[FRAME_MAC_SIZE];
                memcpy(m, mac, sizeof(m));
                m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
                ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &b, m));
        }
        /* Swapping the two nonces is another binding too. */
        o = b;
        memcpy(o.relay_nonce, b.driver_nonce, FRAME_NONCE_SIZE);
        memcpy(o.driver_nonce, b.relay_nonce, FRAME_NONCE_SIZE);
        ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &o, mac));
        /* And so is swapping the two ends (relay first, then driver). */
        o = b;
        o.ends = (handshake_endpoints_t){0};
        memcpy(o.ends.relay, b.ends.driver, HANDSHAKE_ENDPOINT_SIZE);
        memcpy(o.ends.driver, b.ends.relay, HANDSHAKE_ENDPOINT_SIZE);
        ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &o, mac));
}
END_TEST

/* A connected pair over loopback in family: the relay's socket, the
 * driver's accepted one, and the listener's port. */
static void loopback_pair(int family, int *relay, int *driver)
{
        struct sockaddr_storage ss = {0};
        socklen_t sl;
        if (family == AF_INET) {
                struct sockaddr_in *in = (struct sockaddr_in *)&ss;
                in->sin_family = AF_INET;
                in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                sl = sizeof(*in);
        } else {
                struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
                in6->sin6_family = AF_INET6;
                in6->sin6_addr = in6addr_loopback;
                sl = sizeof(*in6);
        }
        _cleanup_close_ int lfd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(lfd, 0);
        ck_assert_int_eq(bind(lfd, (struct sockaddr *)&ss, sl), 0);
        ck_assert_int_eq(listen(lfd, 1), 0);
        ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&ss, &sl), 0);
        *relay = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(*relay, 0);
        ck_assert_int_eq(connect(*relay, (struct sockaddr *)&ss, sl), 0);
        *driver = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        ck_assert_int_ge(*driver, 0);
}

/* Both sides of one connection name the same ends, relay's first, in the
 * documented encoding: IPv4 as ::ffff:127.0.0.1, IPv6 as it is, the port
 * big-endian. */
START_TEST(endpoints_agree_on_both_sides)
{
        static const int families[] = {AF_INET, AF_INET6};
        for (size_t k = 0; k < ARRAY_SIZE(families); k++) {
                int relay, driver;
                loopback_pair(families[k], &relay, &driver);
                handshake_endpoints_t r, d;
                ck_assert_int_eq(handshake_endpoints(relay, HANDSHAKE_RELAY, &r), 0);
                ck_assert_int_eq(handshake_endpoints(driver, HANDSHAKE_DRIVER, &d), 0);
                ck_assert_int_eq(memcmp(&r, &d, sizeof(r)), 0);
                uint8_t want_addr[16] = {0};
                if (families[k] == AF_INET) {
                        want_addr[10] = want_addr[11] = 0xff;
                        want_addr[12] = 127;
                        want_addr[15] = 1;
                } else {
                        want_addr[15] = 1;
                }
                ck_assert_int_eq(memcmp(r.relay, want_addr, 16), 0);
                ck_assert_int_eq(memcmp(r.driver, want_addr, 16), 0);
                /* The listener's port, read into the family's own type (a
                 * sockaddr_storage read as sockaddr_in is uninitialised to
                 * clang's analyzer). */
                uint16_t port = 0;
                if (families[k] == AF_INET) {
                        struct sockaddr_in a = {0};
                        socklen_t al = sizeof(a);
                        ck_assert_int_eq(getsockname(driver, (struct sockaddr *)&a, &al), 0);
                        port = ntohs(a.sin_port);
                } else {
                        struct sockaddr_in6 a = {0};
                        socklen_t al = sizeof(a);
                        ck_assert_int_eq(getsockname(driver, (struct sockaddr *)&a, &al), 0);
                        port = ntohs(a.sin6_port);
                }
                ck_assert_uint_eq((unsigned)(r.driver[16] << 8 | r.driver[17]), port);
                /* The relay's end is its own port, not the listener's. */
                ck_assert_int_ne(memcmp(r.relay + 16, r.driver + 16, 2), 0);
                close(relay);
                close(driver);
        }
        /* Not a TCP/IP socket: refused. */
        int sv[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        handshake_endpoints_t e;
        ck_assert_int_eq(handshake_endpoints(sv[0], HANDSHAKE_RELAY, &e), -EAFNOSUPPORT);
        close(sv[0]);
        close(sv[1]);
        /* Not connected: getpeername's error. */
        int lone = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_eq(handshake_endpoints(lone, HANDSHAKE_DRIVER, &e), -ENOTCONN);
        close(lone);
}
END_TEST

START_TEST(bad_inputs_refused)
{
        token_t t = sample_token();
        handshake_binding_t b = sample();
        uint8_t mac[FRAME_MAC_SIZE];
        memset(mac, 0x77, sizeof(mac));
        b.channel = (frame_channel_t)3;
        ck_assert_int_eq(handshake_prove(&t, HANDSHAKE_RELAY, &b, mac), -EINVAL);
        ck_assert_uint_eq(mac[0], 0x77); /* written only on success */
        ck_assert(!handshake_verify(&t, HANDSHAKE_RELAY, &b, mac));
        b = sample();
        ck_assert_int_eq(handshake_prove(&t, (handshake_side_t)3, &b, mac), -EINVAL);
        ck_assert(!handshake_verify(&t, (handshake_side_t)3, &b, mac));
        ck_assert_int_eq(handshake_prove(&t, (handshake_side_t)-1, &b, mac), -EINVAL);
        ck_assert_uint_eq(mac[0], 0x77);
        /* TAKEN is a proof's label, not a side of a socket. */
        int relay, driver;
        loopback_pair(AF_INET, &relay, &driver);
        handshake_endpoints_t e;
        ck_assert_int_eq(handshake_endpoints(driver, HANDSHAKE_TAKEN, &e), -EINVAL);
        ck_assert_int_eq(handshake_endpoints(relay, (handshake_side_t)3, &e), -EINVAL);
        close(relay);
        close(driver);
}
END_TEST

START_TEST(nonces_are_fresh)
{
        uint8_t a[FRAME_NONCE_SIZE], b[FRAME_NONCE_SIZE];
        static const uint8_t zero[FRAME_NONCE_SIZE];
        ck_assert_int_eq(handshake_nonce(a), 0);
        ck_assert_int_eq(handshake_nonce(b), 0);
        ck_assert_int_ne(memcmp(a, b, sizeof(a)), 0);
        ck_assert_int_ne(memcmp(a, zero, sizeof(a)), 0);
}
END_TEST

START_TEST(instance_hex)
{
        uint8_t id[FRAME_INSTANCE_SIZE];
        static const char hex[] = "00112233445566778899aabbccddeeff";
        ck_assert_int_eq(handshake_instance_from_hex(hex, strlen(hex), id), 0);
        ck_assert_uint_eq(id[0], 0x00);
        ck_assert_uint_eq(id[5], 0x55);
        ck_assert_uint_eq(id[15], 0xff);
        char back[HANDSHAKE_INSTANCE_HEX_LEN + 1];
        handshake_instance_to_hex(id, back);
        ck_assert_str_eq(back, hex);
        static const char *const bad[] = {"",
                                          "00112233445566778899aabbccddeef",
                                          "00112233445566778899aabbccddeeff0",
                                          "00112233445566778899AABBCCDDEEFF",
                                          "00112233445566778899aabbccddeefg",
                                          "0011223344556677 899aabbccddeeff"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                memset(id, 0x5a, sizeof(id));
                ck_assert_int_eq(handshake_instance_from_hex(bad[i], strlen(bad[i]), id), -EINVAL);
                ck_assert_uint_eq(id[0], 0x5a);
        }
        ck_assert_int_eq(handshake_instance_from_hex(NULL, 32, id), -EINVAL);
        /* The length is the caller's, not strlen: a NUL inside is refused. */
        ck_assert_int_eq(handshake_instance_from_hex("0011223344556677\0"
                                                     "8899aabbccddeeff",
                                                     32, id),
                         -EINVAL);
}
END_TEST

static Suite *handshake_suite(void)
{
        Suite *s = suite_create("handshake");
        TCase *tc = tcase_create("proof");
        tcase_add_test(tc, layout_is_documented);
        tcase_add_test(tc, every_input_is_bound);
        tcase_add_test(tc, endpoints_agree_on_both_sides);
        tcase_add_test(tc, bad_inputs_refused);
        tcase_add_test(tc, nonces_are_fresh);
        tcase_add_test(tc, instance_hex);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(handshake_suite());
}
