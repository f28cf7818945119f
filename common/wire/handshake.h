/* The mutual proof on connect (docs/protocol.md, "The handshake"): on every
 * connection to the driver's listener (a turn's io and ctl, a grade's), the
 * driver proves first that it holds the token, then the relay; neither ever
 * sends the token. A proof is HMAC-SHA256 keyed with the token's 32 bytes
 * over a fixed layout:
 *
 *   label        "hangar driver proof v2\0", "hangar relay proof v2\0" or
 *                "hangar driver taken v2\0"
 *   channel      1 byte (1 io, 2 ctl)
 *   relay_nonce  FRAME_NONCE_SIZE bytes (the relay's HELLO)
 *   driver_nonce FRAME_NONCE_SIZE bytes (the driver's CHALLENGE)
 *   instance     FRAME_INSTANCE_SIZE bytes (the driver daemon's id)
 *   relay end    HANDSHAKE_ENDPOINT_SIZE bytes: the relay's address and port
 *   driver end   HANDSHAKE_ENDPOINT_SIZE bytes: the listener's address and port
 *
 * The label makes one side's proof useless as the other's, and the driver's
 * TAKEN (its refusal of a right PROOF: the token was taken before) useless
 * as its CHALLENGE and the other way round; the nonces, one
 * chosen by each side, make every proof good for one connection only; the
 * channel and instance make it useless on another channel or for another
 * daemon; the two ends bind it to the TCP connection it was made on, so a
 * proxy between relay and driver (two connections, each with its own ends)
 * cannot pass one side's proof on to the other. An end is 16 address bytes
 * (IPv6, or IPv4 as ::ffff:a.b.c.d) and the port, big-endian; each side
 * takes them from its own socket (handshake_endpoints). This module only computes and checks: the
 * frames are frame.h's, the order is the listener's (driver) and channel.c's (relay). */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "frame.h"
#include "token.h"

/* The daemon's instance id as text: 32 lowercase hex digits. */
#define HANDSHAKE_INSTANCE_HEX_LEN (2u * FRAME_INSTANCE_SIZE)

typedef enum handshake_side {
        HANDSHAKE_DRIVER, /* the proof in CHALLENGE */
        HANDSHAKE_RELAY,  /* the proof in PROOF */
        HANDSHAKE_TAKEN,  /* the driver's proof in TAKEN (not a socket side) */
} handshake_side_t;

/* One end of the connection: 16 address bytes, 2 port bytes. */
#define HANDSHAKE_ENDPOINT_SIZE 18u

/* The connection a proof is made on, the same bytes on both sides: the
 * relay's end (its local address, the driver's peer) and the driver's. */
typedef struct handshake_endpoints {
        uint8_t relay[HANDSHAKE_ENDPOINT_SIZE];
        uint8_t driver[HANDSHAKE_ENDPOINT_SIZE];
} handshake_endpoints_t;

/* Everything a proof covers besides the token. */
typedef struct handshake_binding {
        frame_channel_t channel;
        uint8_t relay_nonce[FRAME_NONCE_SIZE];
        uint8_t driver_nonce[FRAME_NONCE_SIZE];
        uint8_t instance[FRAME_INSTANCE_SIZE];
        handshake_endpoints_t ends;
} handshake_binding_t;

/* The ends of the connected TCP socket fd, seen from side (the driver's
 * accepted socket: its own address is the driver's end, its peer the
 * relay's; the relay's socket the other way round). -errno from
 * getsockname/getpeername, -EAFNOSUPPORT for a socket neither IPv4 nor
 * IPv6, -EINVAL for a side that is not HANDSHAKE_DRIVER or HANDSHAKE_RELAY. */
int handshake_endpoints(int fd, handshake_side_t side, handshake_endpoints_t *ret);

/* A fresh nonce from getrandom(2) (kernrand.h); -errno if the kernel
 * refuses (never a fallback). */
int handshake_nonce(uint8_t ret[FRAME_NONCE_SIZE]);

/* side's proof for b, made with token. -EINVAL for a channel outside the
 * set, -EIO if OpenSSL fails; ret is written only on success. Every
 * intermediate copy is wiped. */
int handshake_prove(const token_t *token, handshake_side_t side, const handshake_binding_t *b,
                    uint8_t ret[FRAME_MAC_SIZE]);

/* Whether mac is side's proof for b made with token, compared in constant
 * time (CRYPTO_memcmp). False when the proof cannot be computed. */
bool handshake_verify(const token_t *token, handshake_side_t side, const handshake_binding_t *b,
                      const uint8_t mac[FRAME_MAC_SIZE]);

/* Parses an instance id: exactly HANDSHAKE_INSTANCE_HEX_LEN lowercase hex
 * digits, nothing after. -EINVAL otherwise (ret untouched). */
int handshake_instance_from_hex(const char *hex, size_t len, uint8_t ret[FRAME_INSTANCE_SIZE]);
/* text[HANDSHAKE_INSTANCE_HEX_LEN + 1]: the hex form, NUL-terminated. */
void handshake_instance_to_hex(const uint8_t instance[FRAME_INSTANCE_SIZE],
                               char text[HANDSHAKE_INSTANCE_HEX_LEN + 1]);
