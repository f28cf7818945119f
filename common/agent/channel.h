/* The agent side's connections to the driver's loopback listener: one per
 * channel (io, ctl), each opened with the mutual proof of docs/protocol.md
 * (HELLO, CHALLENGE, PROOF, WELCOME; common/wire/handshake.h). Whatever
 * answers on the port must prove it holds the turn's token before the relay
 * sends anything made with it; the token itself never crosses the wire.
 * Shared by hangar-relay (a turn) and hangar-grade (a grade's report
 * channel). */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "error.h"
#include "frame.h"
#include "token.h"

/* The peer on the port did not prove it holds the token: it closed, stalled,
 * sent something other than a well-formed CHALLENGE, or a CHALLENGE whose
 * proof is wrong. Nothing made with the token was sent to it. */
#define RELAY_CHANNEL_UNPROVEN (-EKEYREJECTED)
/* The peer proved it holds the token but names another daemon instance than
 * the one the caller expects. Nothing made with the token was sent to it. */
#define RELAY_CHANNEL_OTHER_INSTANCE (-ESTALE)
/* The driver proved it holds the token, checked our proof, and refused it
 * with TAKEN (its proof under the TAKEN label, checked): someone else used
 * the token before us (took this channel, or ctl before io). The token has
 * leaked; the driver records the replay and ends the turn (token-misused). */
#define RELAY_CHANNEL_TAKEN (-EALREADY)

/* Connects to 127.0.0.1:port and runs the handshake for channel until
 * deadline (conn_now_ms clock): HELLO with a fresh nonce; the driver's
 * CHALLENGE, whose proof is checked (constant time) before anything else;
 * the relay's PROOF; WELCOME (or TAKEN). instance: the daemon id (32
 * lowercase hex digits) the driver must name, or NULL to take the one it
 * names (still bound into both proofs). Frames up to max_payload are
 * accepted on the connection afterwards. Every secret this makes is wiped
 * before it returns. 0 and *ret on success; RELAY_CHANNEL_UNPROVEN,
 * RELAY_CHANNEL_OTHER_INSTANCE, RELAY_CHANNEL_TAKEN or another -errno
 * (cannot connect: connect's; the driver closed instead of WELCOME: -EPIPE;
 * a TAKEN whose proof is wrong: -EPROTO) with err saying which channel and
 * why. */
int relay_open_channel(uint16_t port, const token_t *token, const char *instance,
                       frame_channel_t channel, size_t max_payload, int64_t deadline, conn_t *ret,
                       hg_error_t *err);
