/* libFuzzer target: AdmissionReview bytes as the API server (or anyone who can
 * reach the port) would send them. Beyond "no crash, no leak", it checks the
 * webhook's promises on every input: a well-formed review gets an answer that
 * echoes its uid, and any patch it returns applies cleanly to the pod it was
 * given and yields exactly the pod the webhook meant (never a partial patch).
 *
 * And it is differential: every input is answered twice, reading the whole
 * review (the reference) and reading only what the decision needs (the
 * projection the server uses). Both must give the same return code, the same
 * error message, the same answer bytes and the same outcome. The answer is
 * also rebuilt the way the webhook used to build it (a jansson object dumped
 * by jsondump) and must match byte for byte. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "admission.h"
#include "base64.h"
#include "cleanup.h"
#include "jsondump.h"
#include "jsonparse.h"
#include "jsonptr.h"
#include "jsonx.h"
#include "settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Two configurations: the default, and one that takes the agent's
 * service-account token out (remove ops in the patch). */
enum { CONFIGS = 2 };

static webhook_settings_t *config_n(int n)
{
        static webhook_settings_t cfg[CONFIGS];
        static int ready[CONFIGS];
        if (!ready[n]) {
                if (settings_init_defaults(&cfg[n]) < 0)
                        abort();
                cfg[n].driver_sidecar = true;
                if (n == 1) {
                        free(cfg[n].sidecar.agent_service_account_token);
                        cfg[n].sidecar.agent_service_account_token = strdup(CONFIG_TOKEN_REMOVE);
                        if (!cfg[n].sidecar.agent_service_account_token)
                                abort();
                }
                ready[n] = 1;
        }
        return &cfg[n];
}

static int current;

static webhook_settings_t *config(void)
{
        return config_n(current);
}

static const shape_values_t *values(void)
{
        static shape_values_t *sv[CONFIGS];
        if (!sv[current] && shape_values_new(&config()->sidecar, &sv[current]) < 0)
                abort();
        return sv[current];
}

/* Applies the returned ops to a fresh read of the request (read the same way
 * as the outcome's: whole, or through the projection) and expects exactly the
 * pod the outcome holds. */
static void check_patch(const char *input, size_t size, const jsonparse_proj_t *proj,
                        const admission_outcome_t *o)
{
        if (!o->result.patch)
                return;
        hg_error_t err;
        _cleanup_json_ json_t *ops = NULL, *review = NULL;
        if (jsonx_load(o->result.patch, strlen(o->result.patch), JSONX_MAX_DEPTH, &ops, &err) < 0 ||
            !json_is_array(ops) || json_array_size(ops) == 0)
                abort();
        if (jsonparse_load_projected(input, size, JSONX_MAX_DEPTH, proj, &review, &err) < 0)
                abort();
        json_t *pod = json_object_get(json_object_get(review, "request"), "object");
        size_t i;
        json_t *op;
        json_array_foreach (ops, i, op) {
                const char *kind = json_string_value(json_object_get(op, "op"));
                const char *path = json_string_value(json_object_get(op, "path"));
                if (!kind || !path)
                        abort();
                if (strcmp(kind, "remove") == 0) {
                        if (json_object_size(op) != 2 || jsonptr_remove(pod, path, &err) < 0)
                                abort();
                } else if (strcmp(kind, "add") != 0 || json_object_size(op) != 3 ||
                           jsonptr_add(pod, path, json_object_get(op, "value"), &err) < 0) {
                        abort();
                }
        }
        if (!json_equal(pod, o->pod))
                abort();
}

static bool same_string(const char *a, const char *b)
{
        return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The answer as the webhook built it before writing it straight out. */
static char *reference_answer(const admission_outcome_t *o)
{
        const mutate_result_t *res = &o->result;
        const char *api = json_string_value(json_object_get(o->review, "apiVersion"));
        bool allowed = res->decision != DECISION_DENY;
        _cleanup_json_ json_t *response =
            json_pack("{s:s, s:b, s:{s:s, s:s}}", "uid", o->uid, "allowed", allowed,
                      "auditAnnotations", "decision", mutate_decision_name(res->decision), "reason",
                      mutate_reason_name(res->reason));
        if (!response)
                abort();
        if (allowed && res->patch) {
                _cleanup_free_ char *b64 = base64_encode(res->patch, strlen(res->patch));
                if (!b64 || json_object_set_new(response, "patch", json_string(b64)) < 0 ||
                    json_object_set_new(response, "patchType", json_string("JSONPatch")) < 0)
                        abort();
        }
        if (!allowed && json_object_set_new(response, "status",
                                            json_pack("{s:s, s:s, s:i}", "status", "Failure",
                                                      "message", res->detail, "code", 403)) < 0)
                abort();
        if (mutate_reason_warns(res->reason)) {
                char warning[ERROR_MESSAGE_MAX + 64];
                (void)snprintf(warning, sizeof(warning), "hangar: driver sidecar not injected: %s",
                               res->detail);
                if (json_object_set_new(response, "warnings", json_pack("[s]", warning)) < 0)
                        abort();
        }
        _cleanup_json_ json_t *out = json_pack("{s:s, s:s, s:O}", "apiVersion", api, "kind",
                                               "AdmissionReview", "response", response);
        char *text = out ? jsondump(out) : NULL;
        if (!text)
                abort();
        return text;
}

static int one_input(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        for (current = 0; current < CONFIGS; current++)
                (void)one_input(data, size);
        return 0;
}

static int one_input(const uint8_t *data, size_t size)
{
        const char *input = (const char *)data;
        admission_outcome_t whole, proj;
        hg_error_t werr = {0}, perr = {0};
        _cleanup_free_ char *wresp = NULL, *presp = NULL;
        /* The reference builds everything for itself; the projected read
         * shares the sidecar's values built once, as the server does. */
        int rw = admission_review(config(), NULL, ADMISSION_READ_WHOLE, input, size, &wresp, &whole,
                                  &werr);
        int rp = admission_review(config(), values(), ADMISSION_READ_PROJECTED, input, size, &presp,
                                  &proj, &perr);
        if (rw != rp)
                abort();
        if (rw == -EINVAL && (!werr.message[0] || strcmp(werr.message, perr.message) != 0))
                abort(); /* a 400 must say why, and say it alike */
        /* The outcome, filled as far as decoding got, is the same. */
        if (!same_string(whole.uid, proj.uid) || !same_string(whole.namespace, proj.namespace) ||
            !same_string(whole.name, proj.name) || !same_string(whole.operation, proj.operation) ||
            whole.dry_run != proj.dry_run || whole.result.decision != proj.result.decision ||
            whole.result.reason != proj.result.reason ||
            strcmp(whole.result.detail, proj.result.detail) != 0 ||
            !same_string(whole.result.patch, proj.result.patch))
                abort();
        if (rw == 0) {
                if (strcmp(wresp, presp) != 0)
                        abort();
                _cleanup_free_ char *want = reference_answer(&whole);
                if (strcmp(want, wresp) != 0)
                        abort();
                hg_error_t err;
                _cleanup_json_ json_t *resp = NULL;
                if (jsonx_load(wresp, strlen(wresp), JSONX_MAX_DEPTH, &resp, &err) < 0)
                        abort();
                const char *uid =
                    json_string_value(json_object_get(json_object_get(resp, "response"), "uid"));
                if (!uid || strcmp(uid, whole.uid) != 0)
                        abort();
                check_patch(input, size, NULL, &whole);
                check_patch(input, size, &admission_review_projection, &proj);
        }
        admission_outcome_free(&whole);
        admission_outcome_free(&proj);
        return 0;
}
