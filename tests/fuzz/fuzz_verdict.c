/* libFuzzer target: the uid split's verdict as hangar-driver verdict takes
 * it on stdin (split_verdict_load). What it accepts must read back as the
 * same verdict through the gate's own names, and a refusal says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "split.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_t *j = NULL;
        verdict_t v = VERDICT_REFUSED;
        hg_error_t err = {0};
        if (split_verdict_load((const char *)data, size, &j, &v, &err) < 0) {
                if (!err.message[0] || j)
                        abort();
                return 0;
        }
        verdict_t again;
        if (split_verdict_parse(json_string_value(json_object_get(j, "verdict")), &again) < 0 ||
            again != v ||
            (v == VERDICT_SPLIT_ACTIVE) != (json_array_size(json_object_get(j, "reasons")) == 0))
                abort();
        json_decref(j);
        return 0;
}
