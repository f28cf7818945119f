/* libFuzzer target: what an API server (or anything on the path) sends
 * after the exec WebSocket's 101, through the client's whole session:
 * wslay's frame reader fed by our recv callback, in chunks of a size the
 * input picks, then the channel demux (common/k8s/execstream.c) and the
 * status's exit code (common/k8s/wsexec.c, wsexec_replay). Input: one byte
 * (bit 0: v4 or v5; the other bits: the chunk size, 0 = any), then the
 * bytes. Invariants: the session always ends with a failure kind; an exit
 * code only with WSEXEC_OK and within 0..255; what reached stdout and
 * stderr is what the result counts; and exs_status_exit on the same bytes
 * gives an exit code only within 0..255. */
#include <stdint.h>
#include <stdlib.h>

#include "execstream.h"
#include "wsexec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct counts {
        uint64_t out, err;
} counts_t;

static int count(void *ud, int ch, const uint8_t *d, size_t n)
{
        counts_t *c = ud;
        if (ch == EXS_CH_STDOUT)
                c->out += n;
        else if (ch == EXS_CH_STDERR)
                c->err += n;
        else
                abort(); /* only stdout and stderr reach the output */
        if (n == 0 || !d)
                abort(); /* empty messages are not passed on */
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        exs_proto_t proto = (data[0] & 1) ? EXS_PROTO_V5 : EXS_PROTO_V4;
        size_t chunk = data[0] >> 1;
        counts_t c = {0};
        wsexec_io_t io = {.in_fd = -1, .output = count, .ud = &c};
        wsexec_result_t res;
        hg_error_t err = {0};
        int r = wsexec_replay(proto, data + 1, size - 1, chunk, &io, &res, &err);
        if (res.failure == WSEXEC_OK && (r != 0 || res.exit_code < 0 || res.exit_code > 255))
                abort();
        if (res.failure != WSEXEC_OK && res.failure != WSEXEC_NO_START &&
            (r >= 0 || !err.message[0]))
                abort(); /* a failure always says why */
        if (c.out != res.bytes_out || c.err != res.bytes_err)
                abort();
        int code = -1;
        if (exs_status_exit((const char *)data + 1, size - 1, &code, &err) == 0 &&
            (code < 0 || code > 255))
                abort();
        return 0;
}
