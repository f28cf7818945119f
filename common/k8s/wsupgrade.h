/* The HTTP/1.1 side of opening an exec WebSocket (RFC 6455 section 4): the
 * upgrade request we write, and the parse of the server's answer, a 101 or
 * an error with a metav1.Status body. A pure module (the key comes from the
 * caller), so the fuzz target runs exactly this parser over hostile bytes.
 * libcurl (CONNECT_ONLY) carries the bytes; wslay does the frames after. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "execstream.h"
#include "strbuf.h"

/* The answer's head is bounded: an API server's is a few hundred bytes. */
#define WSUP_MAX_HEAD (16 * 1024)
/* And the body of an error answer (client-go reads 64 KiB too). */
#define WSUP_MAX_BODY (64 * 1024)
/* Sec-WebSocket-Key: base64 of 16 bytes (24 characters), and the accept
 * value: base64 of a SHA-1 (28 characters). */
#define WSUP_KEY_LEN    24
#define WSUP_ACCEPT_LEN 28

/* A fresh key from 16 random bytes (OpenSSL's RAND_bytes). */
int wsup_key_new(char ret_key[WSUP_KEY_LEN + 1]);
/* base64(SHA-1(key + the RFC's GUID)): what the 101 must answer. */
void wsup_accept_for(const char *key, char ret_accept[WSUP_ACCEPT_LEN + 1]);

/* Appends the request: GET target (path and query, already escaped) to
 * host, offering v5.channel.k8s.io then v4.channel.k8s.io (only: one of
 * them alone; EXS_PROTO_NONE: both), with the bearer
 * token when not NULL (the caller wipes out after use: it holds the token)
 * and extra_headers (each "Name: value", NULL-terminated list, may be NULL). */
int wsup_request(strbuf_t *out, const char *host, const char *target, const char *key,
                 exs_proto_t only, const char *bearer, const char *const *extra_headers);

typedef struct wsup_answer {
        int status;          /* the HTTP status code */
        size_t head_len;     /* bytes of the head, "\r\n\r\n" included */
        exs_proto_t proto;   /* 101: the subprotocol the server chose */
        bool chunked;        /* an error's body: Transfer-Encoding: chunked */
        long content_length; /* an error's body: -1 when not given (then to EOF) */
} wsup_answer_t;

/* Parses the head at the start of buf (n bytes so far). -EAGAIN: not whole
 * yet, read more. A 101 is accepted only with Upgrade: websocket,
 * Connection: upgrade, the Sec-WebSocket-Accept of key and a
 * Sec-WebSocket-Protocol we offered (only, as for wsup_request) (else
 * -EPROTO, err says which); the
 * bytes after head_len are the first WebSocket frames. Any other status is
 * returned as parsed (0), its body to be read with wsup_body. A head over
 * WSUP_MAX_HEAD, a malformed status line or header line, a header repeated
 * that must be single, are -EPROTO. */
int wsup_parse_head(const char *buf, size_t n, const char *key, exs_proto_t only,
                    wsup_answer_t *ret, hg_error_t *err);

/* The body of an error answer from buf (the bytes after the head, n so far;
 * eof: the connection ended). 0 with the body in *ret (NUL-terminated, cut
 * at WSUP_MAX_BODY) once it is whole; -EAGAIN: read more; -EPROTO: malformed
 * chunking, or a body cut short by EOF. */
int wsup_body(const char *buf, size_t n, bool eof, const wsup_answer_t *a, strbuf_t *ret,
              hg_error_t *err);
