/* The webhook's HTTP transport on libmicrohttpd: TLS, limits, content type,
 * routing, metrics and one log line per review. Decisions are admission.c's. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "settings.h"

typedef struct server server_t;

/* Starts the HTTPS listener (and the plain health listener if configured).
 * Certificates come from certstore; until one is loaded handshakes fail and
 * /readyz is not ready. */
int server_start(const webhook_settings_t *cfg, server_t **ret, hg_error_t *err);
/* The port the HTTPS listener is bound to (useful with port 0). */
uint16_t server_port(const server_t *s);
uint16_t server_health_port(const server_t *s);
/* Stops accepting, marks not ready, lets in-flight requests finish, stops. */
void server_stop(server_t *s);
