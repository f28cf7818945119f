/* libFuzzer target: `hangar-webhook inject` on a manifest stream, from the
 * YAML reader to the injected documents. Every input is injected or refused
 * with a message; what is injected is a fixed point: injecting it again
 * gives the same documents (a reinvocation never adds a second sidecar). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "inject.h"
#include "settings.h"
#include "yamldoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The stream's non-empty documents as a JSON array, or NULL. */
static json_t *load(const uint8_t *data, size_t size)
{
        hg_error_t err = {0};
        ynode_t **docs = NULL;
        size_t n = 0;
        if (yamldoc_parse_stream((const char *)data, size, 64, &docs, &n, &err) < 0) {
                if (!err.message[0])
                        abort();
                return NULL;
        }
        json_t *list = json_array();
        for (size_t i = 0; list && i < n; i++) {
                json_t *doc = NULL;
                err.message[0] = '\0';
                if (ynode_to_json(docs[i], &doc, &err) < 0) {
                        if (!err.message[0])
                                abort();
                        json_decref(list);
                        list = NULL;
                } else if (!json_is_null(doc)) {
                        json_array_append_new(list, doc);
                } else {
                        json_decref(doc);
                }
        }
        ynode_free_all(docs, n);
        return list;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        _cleanup_json_ json_t *docs = load(data, size);
        if (!docs)
                return 0;
        webhook_settings_t cfg;
        if (settings_init_defaults(&cfg) < 0)
                abort();
        cfg.driver_sidecar = true;
        hg_error_t err = {0};
        if (inject_manifests(&cfg, docs, NULL, NULL, &err) < 0) {
                if (!err.message[0])
                        abort();
                settings_free(&cfg);
                return 0;
        }
        _cleanup_json_ json_t *again = json_deep_copy(docs);
        if (!again || inject_manifests(&cfg, again, NULL, NULL, &err) < 0 ||
            !json_equal(docs, again))
                abort();
        settings_free(&cfg);
        return 0;
}
