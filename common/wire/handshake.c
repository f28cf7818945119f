#include "handshake.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "kernrand.h"

/* NUL-terminated, so no label is a prefix of another: two kinds of proof
 * can never be over the same bytes. "v2" is the wire version. */
static const char label_driver[] = "hangar driver proof v2";
static const char label_relay[] = "hangar relay proof v2";
static const char label_taken[] = "hangar driver taken v2";

#define LABEL_MAX \
        (sizeof(label_driver) > sizeof(label_taken) ? sizeof(label_driver) : sizeof(label_taken))
_Static_assert(sizeof(label_relay) <= LABEL_MAX, "LABEL_MAX holds every label");
#define MESSAGE_MAX                                                                   \
        (LABEL_MAX + 1u + FRAME_NONCE_SIZE + FRAME_NONCE_SIZE + FRAME_INSTANCE_SIZE + \
         2u * HANDSHAKE_ENDPOINT_SIZE)

int handshake_nonce(uint8_t ret[FRAME_NONCE_SIZE])
{
        return kernrand_bytes(ret, FRAME_NONCE_SIZE);
}

/* The bytes a proof covers (the layout in handshake.h); returns their length. */
static size_t message(handshake_side_t side, const handshake_binding_t *b, uint8_t out[MESSAGE_MAX])
{
        const char *label = side == HANDSHAKE_DRIVER  ? label_driver
                            : side == HANDSHAKE_RELAY ? label_relay
                                                      : label_taken;
        size_t n = strlen(label) + 1;
        memcpy(out, label, n);
        out[n++] = (uint8_t)b->channel;
        memcpy(out + n, b->relay_nonce, FRAME_NONCE_SIZE);
        n += FRAME_NONCE_SIZE;
        memcpy(out + n, b->driver_nonce, FRAME_NONCE_SIZE);
        n += FRAME_NONCE_SIZE;
        memcpy(out + n, b->instance, FRAME_INSTANCE_SIZE);
        n += FRAME_INSTANCE_SIZE;
        memcpy(out + n, b->ends.relay, HANDSHAKE_ENDPOINT_SIZE);
        n += HANDSHAKE_ENDPOINT_SIZE;
        memcpy(out + n, b->ends.driver, HANDSHAKE_ENDPOINT_SIZE);
        return n + HANDSHAKE_ENDPOINT_SIZE;
}

/* One end in the proofs' form: an IPv4 address as IPv4-mapped IPv6, so the
 * same connection has one encoding whichever family a side's socket has. */
static int endpoint_encode(const struct sockaddr_storage *ss, uint8_t out[HANDSHAKE_ENDPOINT_SIZE])
{
        const uint8_t *port;
        if (ss->ss_family == AF_INET) {
                const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
                memset(out, 0, 10);
                out[10] = out[11] = 0xff;
                memcpy(out + 12, &in->sin_addr, 4);
                port = (const uint8_t *)&in->sin_port;
        } else if (ss->ss_family == AF_INET6) {
                const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
                memcpy(out, &in6->sin6_addr, 16);
                port = (const uint8_t *)&in6->sin6_port;
        } else {
                return -EAFNOSUPPORT;
        }
        /* sin_port is already in network order: copied as it is. */
        out[16] = port[0];
        out[17] = port[1];
        return 0;
}

int handshake_endpoints(int fd, handshake_side_t side, handshake_endpoints_t *ret)
{
        if (side != HANDSHAKE_DRIVER && side != HANDSHAKE_RELAY)
                return -EINVAL;
        struct sockaddr_storage local = {0}, peer = {0};
        socklen_t ll = sizeof(local), pl = sizeof(peer);
        if (getsockname(fd, (struct sockaddr *)&local, &ll) < 0 ||
            getpeername(fd, (struct sockaddr *)&peer, &pl) < 0)
                return -errno;
        handshake_endpoints_t e;
        bool driver = side == HANDSHAKE_DRIVER;
        int r = endpoint_encode(driver ? &peer : &local, e.relay);
        if (r == 0)
                r = endpoint_encode(driver ? &local : &peer, e.driver);
        if (r == 0)
                *ret = e;
        return r;
}

int handshake_prove(const token_t *token, handshake_side_t side, const handshake_binding_t *b,
                    uint8_t ret[FRAME_MAC_SIZE])
{
        switch (side) {
        case HANDSHAKE_DRIVER:
        case HANDSHAKE_RELAY:
        case HANDSHAKE_TAKEN:
                break;
        default:
                return -EINVAL;
        }
        switch (b->channel) {
        case FRAME_CHANNEL_IO:
        case FRAME_CHANNEL_CTL:
                break;
        default:
                return -EINVAL;
        }
        uint8_t msg[MESSAGE_MAX], mac[EVP_MAX_MD_SIZE];
        unsigned int mac_len = 0;
        size_t n = message(side, b, msg);
        int r = 0;
        if (!HMAC(EVP_sha256(), token->bytes, (int)sizeof(token->bytes), msg, n, mac, &mac_len) ||
            mac_len != FRAME_MAC_SIZE)
                r = -EIO;
        else
                memcpy(ret, mac, FRAME_MAC_SIZE);
        OPENSSL_cleanse(mac, sizeof(mac));
        OPENSSL_cleanse(msg, sizeof(msg));
        return r;
}

bool handshake_verify(const token_t *token, handshake_side_t side, const handshake_binding_t *b,
                      const uint8_t mac[FRAME_MAC_SIZE])
{
        uint8_t want[FRAME_MAC_SIZE];
        bool ok = handshake_prove(token, side, b, want) == 0 &&
                  CRYPTO_memcmp(want, mac, FRAME_MAC_SIZE) == 0;
        OPENSSL_cleanse(want, sizeof(want));
        return ok;
}

static int lower_hex_value(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

int handshake_instance_from_hex(const char *hex, size_t len, uint8_t ret[FRAME_INSTANCE_SIZE])
{
        if (!hex || len != HANDSHAKE_INSTANCE_HEX_LEN)
                return -EINVAL;
        uint8_t id[FRAME_INSTANCE_SIZE];
        for (size_t i = 0; i < FRAME_INSTANCE_SIZE; i++) {
                int hi = lower_hex_value(hex[2 * i]), lo = lower_hex_value(hex[2 * i + 1]);
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                id[i] = (uint8_t)(hi << 4 | lo);
        }
        memcpy(ret, id, sizeof(id));
        return 0;
}

void handshake_instance_to_hex(const uint8_t instance[FRAME_INSTANCE_SIZE],
                               char text[HANDSHAKE_INSTANCE_HEX_LEN + 1])
{
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < FRAME_INSTANCE_SIZE; i++) {
                text[2 * i] = digits[instance[i] >> 4];
                text[2 * i + 1] = digits[instance[i] & 0xf];
        }
        text[HANDSHAKE_INSTANCE_HEX_LEN] = '\0';
}
