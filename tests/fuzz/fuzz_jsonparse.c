/* libFuzzer target, differential: our JSON reader against jansson's own
 * json_loadb (JSON_REJECT_DUPLICATES). On every input both must accept or
 * both reject, and when both accept they must build equal documents. The
 * depth bound is set to jansson's own (2048) so only syntax is compared.
 * One known difference is allowed: jansson's lexer skips a raw NUL byte
 * between tokens ("[1,\0 2]" loads); we refuse any NUL byte. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        hg_error_t err = {0};
        _cleanup_json_ json_t *ours = NULL;
        int r = jsonparse_load((const char *)data, size, 2048, &ours, &err);
        json_error_t jerr;
        _cleanup_json_ json_t *theirs =
            json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
        bool has_nul = memchr(data, 0, size) != NULL;
        if (has_nul && r == 0)
                abort();
        if (!has_nul && (r == 0) != (theirs != NULL))
                abort();
        if (r == 0 && !json_equal(ours, theirs))
                abort();
        if (r < 0 && !err.message[0])
                abort();
        return 0;
}
