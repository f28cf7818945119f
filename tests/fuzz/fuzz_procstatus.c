/* libFuzzer target: /proc/PID/status as the probe reads it, and
 * cap_last_cap's text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procstatus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        proc_status_t st;
        hg_error_t err = {0};
        if (procstatus_parse((const char *)data, size, &st, &err) < 0 && !err.message[0])
                abort();
        if (size < 32) {
                char text[32];
                memcpy(text, data, size);
                text[size] = '\0';
                uint64_t mask;
                if (capmask_full(text, &mask, &err) == 0 && (mask & 1) == 0)
                        abort(); /* a full mask always has CAP_CHOWN */
        }
        return 0;
}
