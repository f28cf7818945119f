/* libFuzzer target: a request on the driver's control socket
 * (ctlreq_parse). Properties checked, abort() on violation:
 *   - a refused request leaves *ret untouched, with a message whose code is
 *     the one returned;
 *   - an accepted one has a known op, a turn id (when given) of 1-64
 *     [A-Za-z0-9._-], "from" within CTLREQ_FROM_MAX, and for start the
 *     spec's text as a string of spec_len bytes in the request;
 *   - the request written back out parses to the same op and members. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "ctlreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        ctlreq_t q, before;
        memset(&q, 0x5a, sizeof(q));
        before = q;
        hg_error_t err = {0};
        int r = ctlreq_parse((const char *)data, size, &q, &err);
        if (r < 0) {
                if (memcmp(&q, &before, sizeof(q)) != 0)
                        abort();
                if (r != -ENOMEM && (err.code != r || err.message[0] == '\0'))
                        abort();
                return 0;
        }
        if (r != 0 || (unsigned)q.op >= CTLREQ_OP_COUNT || !q.root)
                abort();
        if (q.turn && !ctlreq_turn_id_ok(q.turn))
                abort();
        if (q.from > CTLREQ_FROM_MAX)
                abort();
        if ((q.op == CTLREQ_START || q.op == CTLREQ_GRADE_BEGIN || q.op == CTLREQ_GRADE_FINISH) !=
            (q.spec != NULL))
                abort();
        if (q.spec && strlen(q.spec) != q.spec_len)
                abort();
        _cleanup_free_ char *text = json_dumps(q.root, JSON_COMPACT);
        if (!text)
                abort();
        ctlreq_t again;
        if (ctlreq_parse(text, strlen(text), &again, &err) != 0 || again.op != q.op ||
            !json_equal(again.root, q.root) || again.from != q.from)
                abort();
        ctlreq_free(&again);
        ctlreq_free(&q);
        if (q.root)
                abort();
        return 0;
}
