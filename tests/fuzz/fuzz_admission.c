/* libFuzzer target: AdmissionReview bytes as the API server (or anyone who can
 * reach the port) would send them. Beyond "no crash, no leak", it checks the
 * webhook's promises on every input: a well-formed review gets an answer that
 * echoes its uid, and any patch it returns applies cleanly to the pod it was
 * given and yields exactly the pod the webhook meant (never a partial patch). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "admission.h"
#include "cleanup.h"
#include "config.h"
#include "jsonptr.h"
#include "jsonx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static hg_config_t *config(void)
{
        static hg_config_t cfg;
        static int ready;
        if (!ready) {
                if (config_init_defaults(&cfg) < 0)
                        abort();
                cfg.driver_sidecar = true;
                ready = 1;
        }
        return &cfg;
}

static void check_patch(const char *input, size_t size, const admission_outcome_t *o)
{
        if (!o->result.patch)
                return;
        /* Apply the returned ops to a fresh copy of the request's pod. */
        hg_error_t err;
        _cleanup_json_ json_t *review = NULL;
        if (jsonx_load(input, size, JSONX_MAX_DEPTH, &review, &err) < 0)
                abort();
        json_t *pod = json_object_get(json_object_get(review, "request"), "object");
        size_t i;
        json_t *op;
        json_array_foreach (o->result.patch, i, op) {
                const char *path = json_string_value(json_object_get(op, "path"));
                if (!path || jsonptr_add(pod, path, json_object_get(op, "value"), &err) < 0)
                        abort();
        }
        if (!json_equal(pod, o->pod))
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        admission_outcome_t o;
        hg_error_t err = {0};
        _cleanup_free_ char *response = NULL;
        int r = admission_handle(config(), (const char *)data, size, &response, &o, &err);
        if (r == 0) {
                _cleanup_json_ json_t *resp = NULL;
                if (jsonx_load(response, strlen(response), JSONX_MAX_DEPTH, &resp, &err) < 0)
                        abort();
                const char *uid =
                    json_string_value(json_object_get(json_object_get(resp, "response"), "uid"));
                if (!uid || strcmp(uid, o.uid) != 0)
                        abort();
                check_patch((const char *)data, size, &o);
        } else if (r == -EINVAL && !err.message[0]) {
                abort(); /* a 400 must say why */
        }
        admission_outcome_free(&o);
        return 0;
}
