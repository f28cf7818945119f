/* libFuzzer target: YAML as `inject -f` and the configuration loaders read
 * it (the sidecar's, which skips the webhook's keys, and the webhook's).
 * Every document that parses must convert to JSON or fail with a message. */
#include <stdint.h>
#include <stdlib.h>

#include "cleanup.h"
#include "config.h"
#include "settings.h"
#include "yamldoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        hg_error_t err = {0};
        _cleanup_ynode_ ynode_t *doc = NULL;
        if (yamldoc_parse((const char *)data, size, &doc, &err) < 0) {
                if (!err.message[0])
                        abort();
        } else {
                _cleanup_json_ json_t *j = NULL;
                err.message[0] = '\0';
                if (ynode_to_json(doc, &j, &err) < 0 && !err.message[0])
                        abort();
        }
        /* The same bytes as a configuration file: applied fully or refused. */
        hg_config_t cfg;
        if (config_init_defaults(&cfg) < 0)
                abort();
        err.message[0] = '\0';
        if (config_apply_yaml(&cfg, "fuzz.yaml", (const char *)data, size, &err) < 0 &&
            !err.message[0])
                abort();
        config_free(&cfg);
        webhook_settings_t ws;
        if (settings_init_defaults(&ws) < 0)
                abort();
        err.message[0] = '\0';
        if (settings_apply_yaml(&ws, "fuzz.yaml", (const char *)data, size, &err) < 0 &&
            !err.message[0])
                abort();
        settings_free(&ws);
        return 0;
}
