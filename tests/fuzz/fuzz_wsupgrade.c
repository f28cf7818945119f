/* libFuzzer target: the answer to the exec WebSocket's upgrade
 * (common/k8s/wsupgrade.c), a 101 or an error with its body, as a hostile
 * server or proxy could send it. Input: the answer's bytes; the key is
 * fixed (RFC 6455's example), so a seed can hold a valid 101.
 * Invariants: a head is accepted only whole (it ends with CRLF CRLF within
 * the bytes and the bound); a 101 only with a subprotocol we offered; a
 * body never over its bound; wsup_body at EOF never asks for more. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wsupgrade.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *buf = (const char *)data;
        wsup_answer_t a;
        hg_error_t err = {0};
        int r = wsup_parse_head(buf, size, KEY, EXS_PROTO_NONE, &a, &err);
        if (r == -EAGAIN || r < 0)
                return 0;
        if (a.head_len < 4 || a.head_len > size || a.head_len > WSUP_MAX_HEAD ||
            memcmp(buf + a.head_len - 4, "\r\n\r\n", 4) != 0)
                abort();
        if (a.status == 101) {
                if (a.proto != EXS_PROTO_V4 && a.proto != EXS_PROTO_V5)
                        abort();
                return 0;
        }
        for (int eof = 0; eof < 2; eof++) {
                strbuf_t body = {0};
                r = wsup_body(buf + a.head_len, size - a.head_len, eof, &a, &body, &err);
                if (r == 0 &&
                    (!body.data || body.len > WSUP_MAX_BODY || strlen(body.data) > body.len))
                        abort();
                if (eof && r == -EAGAIN)
                        abort();
                strbuf_free(&body);
        }
        return 0;
}
