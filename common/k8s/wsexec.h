/* `kubectl exec` without kubectl: one command in a pod's container through
 * the API server's pods/exec over WebSocket, with the credentials and TLS of
 * k8sclient.c (docs/client.md, docs/research/exec-websocket.md).
 *
 * libcurl (CURLOPT_CONNECT_ONLY) makes the TCP and TLS connection with the
 * client's policy; we write the HTTP/1.1 upgrade (wsupgrade.c) offering
 * v5.channel.k8s.io then v4.channel.k8s.io; wslay does RFC 6455's frames
 * (masking, fragments, ping/pong, close) over curl_easy_send/recv; the
 * channels are execstream.c's. One thread, one poll loop: the socket and
 * the local stdin. stdin goes in messages of at most 32 KiB, never
 * fragmented (the API server reads one frame per message); its EOF is v5's
 * CLOSE [255, 0]. A server that speaks only v4 cannot be told stdin ended:
 * the command then sees no EOF (docs/client.md says so). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "execstream.h"
#include "k8sclient.h"

typedef struct wsexec_request {
        const char *ns;
        const char *pod;
        const char *container; /* NULL: the pod's only (or default) container */
        char *const *argv;     /* the command, NULL-terminated, at least one word */
        bool stdin_open;       /* forward io->in_fd as the command's stdin */
        exs_proto_t only;      /* offer this subprotocol alone; EXS_PROTO_NONE: v5, then v4 */
} wsexec_request_t;

/* How an exec can fail, each a distinct exit status of `hangar exec`. */
typedef enum wsexec_failure {
        WSEXEC_OK = 0,       /* the command ran; exit_code is its status */
        WSEXEC_CONNECT,      /* the API server not reached, TLS, the connection lost */
        WSEXEC_REFUSED,      /* 401 or 403: authentication, RBAC, or hangar's exec guard */
        WSEXEC_NOT_FOUND,    /* 404: no such pod (or namespace) */
        WSEXEC_NOT_RUNNABLE, /* 400: no such container, or it is not running */
        WSEXEC_SERVER,       /* another HTTP status (5xx, ...) */
        WSEXEC_PROTOCOL,     /* the server broke the protocol, or gave no status */
        WSEXEC_NO_START,     /* the status says the command could not be run */
        WSEXEC_LOCAL,        /* our side: writing the output failed, out of memory */
} wsexec_failure_t;

const char *wsexec_failure_name(wsexec_failure_t f);

typedef enum wsexec_phase {
        WSEXEC_PHASE_CONNECTED, /* TCP and TLS up, the upgrade not yet written */
        WSEXEC_PHASE_UPGRADED,  /* the 101 read: the command is being started */
} wsexec_phase_t;

typedef struct wsexec_io {
        int in_fd; /* read when request.stdin_open; its EOF closes the command's stdin */
        /* stdout (EXS_CH_STDOUT) and stderr (EXS_CH_STDERR) bytes as they
         * come; a negative return ends the session (WSEXEC_LOCAL). */
        int (*output)(void *ud, int channel, const uint8_t *data, size_t len);
        void *ud;
        /* Optional: told when the connection is made (TCP and TLS) and when
         * the upgrade was accepted (101), for a caller's timing. */
        void (*phase)(void *ud, wsexec_phase_t phase);
} wsexec_io_t;

typedef struct wsexec_result {
        wsexec_failure_t failure;
        int exit_code;       /* the command's, 0..255, when failure is WSEXEC_OK */
        long http_status;    /* the upgrade's answer (101 when it was accepted) */
        exs_proto_t proto;   /* the subprotocol agreed */
        bool stdin_unclosed; /* stdin ended but v4 could not say so */
        uint64_t bytes_out, bytes_err;
} wsexec_result_t;

/* Runs the command to its end. Returns 0 when the session ran to a status
 * (ret->failure WSEXEC_OK, or WSEXEC_NO_START); <0 otherwise, with
 * ret->failure saying which kind and err the reason (the server's message
 * for a refused upgrade: the guard's or RBAC's words). */
int wsexec_run(k8s_client_t *c, const wsexec_request_t *req, const wsexec_io_t *io,
               wsexec_result_t *ret, hg_error_t *err);

/* The session over bytes in memory instead of a connection, for the unit
 * tests and the fuzz target: bytes are what the server sent after the 101
 * (WebSocket frames), read at most chunk bytes at a time (0: any), under
 * proto; what we would send goes nowhere. Same result as wsexec_run. */
int wsexec_replay(exs_proto_t proto, const uint8_t *bytes, size_t n, size_t chunk,
                  const wsexec_io_t *io, wsexec_result_t *ret, hg_error_t *err);
