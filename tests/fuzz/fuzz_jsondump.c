/* libFuzzer target, differential: our compact serializer against jansson's
 * json_dumps(JSON_COMPACT | JSON_ENCODE_ANY), byte for byte, on every
 * document jansson can load from the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsondump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        json_error_t jerr;
        _cleanup_json_ json_t *j =
            json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (!j)
                return 0;
        _cleanup_free_ char *theirs = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
        strbuf_t sb = {0};
        int r = jsondump_append(&sb, j);
        _cleanup_free_ char *ours = strbuf_take(&sb);
        if (!theirs || r < 0 || !ours)
                abort();
        /* With JSON_ALLOW_NUL a string may hold NUL: compare full lengths. */
        if (strlen(theirs) != strlen(ours) || memcmp(theirs, ours, strlen(theirs)) != 0)
                abort();
        return 0;
}
