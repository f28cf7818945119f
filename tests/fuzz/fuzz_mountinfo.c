/* libFuzzer target: /proc/self/mountinfo as the probe reads it. A table that
 * parses holds only absolute mount points, non-empty roots (a path, or an
 * nsfs name such as "net:[4026532328]") and knows its read-only flags. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mountinfo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        mount_table_t t = {0};
        hg_error_t err = {0};
        if (mountinfo_parse((const char *)data, size, &t, &err) < 0) {
                if (!err.message[0])
                        abort();
                return 0;
        }
        for (size_t i = 0; i < t.n; i++) {
                const mount_entry_t *e = &t.entries[i];
                if (e->mount_point[0] != '/' || e->root[0] == '\0' ||
                    e->read_only != mountinfo_has_option(e->mount_options, "ro") ||
                    mountinfo_find(&t, e->mount_point) == NULL)
                        abort();
        }
        mountinfo_free(&t);
        return 0;
}
