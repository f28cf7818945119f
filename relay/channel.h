/* The agent side's connections to the driver's loopback listener: one per
 * channel (io, ctl), each opened with a HELLO carrying the turn's token and
 * answered by WELCOME (docs/protocol.md). Shared by hangar-relay (a turn)
 * and hangar-grade (a grade's report channel). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "error.h"
#include "frame.h"
#include "token.h"

/* Connects to 127.0.0.1:port, says HELLO for channel, waits for WELCOME until
 * deadline (conn_now_ms clock). Frames up to max_payload are accepted on it.
 * Every copy of the token this makes is wiped before it returns. 0 and *ret
 * on success; else -errno with err saying which channel and why (a driver
 * that closes instead of answering is -EPIPE). */
int relay_open_channel(uint16_t port, const token_t *token, frame_channel_t channel,
                       size_t max_payload, int64_t deadline, conn_t *ret, hg_error_t *err);
