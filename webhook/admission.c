#include "admission.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base64.h"
#include "cleanup.h"
#include "jsondump.h"
#include "jsonx.h"

#define API_V1      "admission.k8s.io/v1"
#define API_V1BETA1 "admission.k8s.io/v1beta1"
/* A Kubernetes UID is 36 characters; anything far longer is not one. */
#define UID_MAX_LEN 128

void admission_outcome_free(admission_outcome_t *o)
{
        mutate_result_free(&o->result);
        json_decref(o->review);
        memset(o, 0, sizeof(*o));
}

static int require_string(json_t *obj, const char *where, const char *key, const char **ret,
                          hg_error_t *err)
{
        int r = jsonx_string(obj, key, ret);
        if (r == -ENOENT)
                return error_set(err, -EINVAL, "%s%s is missing", where, key);
        if (r < 0)
                return error_set(err, -EINVAL, "%s%s must be a string", where, key);
        return 0;
}

/* Reads the request fields this webhook acts on, checking each one's type. */
static int decode(json_t *review, admission_outcome_t *o, json_t **ret_request,
                  const char **ret_api, hg_error_t *err)
{
        const char *api, *kind;
        if (!json_is_object(review))
                return error_set(err, -EINVAL, "body is %s, expected an AdmissionReview object",
                                 jsonx_type_name(review));
        int r = require_string(review, "", "apiVersion", &api, err);
        if (r < 0)
                return r;
        if (strcmp(api, API_V1) != 0 && strcmp(api, API_V1BETA1) != 0)
                return error_set(err, -EINVAL, "apiVersion must be %s or %s, got \"%s\"", API_V1,
                                 API_V1BETA1, api);
        r = require_string(review, "", "kind", &kind, err);
        if (r < 0)
                return r;
        if (strcmp(kind, "AdmissionReview") != 0)
                return error_set(err, -EINVAL, "kind must be AdmissionReview, got \"%s\"", kind);

        json_t *request;
        r = jsonx_member(review, "request", JSON_OBJECT, &request);
        if (r < 0)
                return error_set(err, -EINVAL, "request is %s",
                                 r == -ENOENT ? "missing" : "not an object");
        r = require_string(request, "request.", "uid", &o->uid, err);
        if (r < 0)
                return r;
        if (!o->uid[0] || strlen(o->uid) > UID_MAX_LEN)
                return error_set(err, -EINVAL, "request.uid must be 1 to %d characters",
                                 UID_MAX_LEN);
        r = require_string(request, "request.", "operation", &o->operation, err);
        if (r < 0)
                return r;
        json_t *gvk;
        if (jsonx_member(request, "kind", JSON_OBJECT, &gvk) < 0)
                return error_set(err, -EINVAL, "request.kind is missing or not an object");
        const char *ignored;
        r = require_string(gvk, "request.kind.", "kind", &ignored, err);
        if (r < 0)
                return r;
        /* Optional fields: absent is fine, a wrong type is not. */
        if (jsonx_string(request, "namespace", &o->namespace) == -EINVAL ||
            jsonx_string(request, "name", &o->name) == -EINVAL ||
            jsonx_string(request, "subResource", &ignored) == -EINVAL ||
            jsonx_string(gvk, "group", &ignored) == -EINVAL ||
            jsonx_bool(request, "dryRun", &o->dry_run) == -EINVAL)
                return error_set(err, -EINVAL,
                                 "request.namespace, name, subResource, kind.group and dryRun "
                                 "must have their documented types");
        *ret_request = request;
        *ret_api = api;
        return 0;
}

static bool is_core_pod(json_t *request)
{
        json_t *gvk = json_object_get(request, "kind");
        const char *group = "", *kind = "";
        (void)jsonx_string(gvk, "group", &group);
        (void)jsonx_string(gvk, "kind", &kind);
        return group[0] == '\0' && strcmp(kind, "Pod") == 0;
}

/* Makes the decision for a decoded request. */
static int decide(const hg_config_t *cfg, json_t *request, admission_outcome_t *o, hg_error_t *err)
{
        const char *sub = "";
        (void)jsonx_string(request, "subResource", &sub);
        if (!is_core_pod(request)) {
                mutate_result_set(&o->result, REASON_NOT_POD, "not a Pod");
                return 0;
        }
        if (sub[0]) {
                mutate_result_set(&o->result, REASON_SUBRESOURCE, "subresource %s", sub);
                return 0;
        }
        if (strcmp(o->operation, "CREATE") != 0) {
                mutate_result_set(&o->result, REASON_NOT_CREATE, "operation %s", o->operation);
                return 0;
        }
        json_t *pod;
        if (jsonx_member(request, "object", JSON_OBJECT, &pod) < 0)
                return error_set(err, -EINVAL, "request.object must be the Pod being created");
        o->pod = pod;
        if (!o->name) {
                /* CREATE with generateName: the API server has not named it yet. */
                json_t *meta = json_object_get(pod, "metadata");
                if (jsonx_string(meta, "name", &o->name) < 0)
                        (void)jsonx_string(meta, "generateName", &o->name);
        }
        return mutate_pod(cfg, pod, &o->result);
}

static json_t *encode_patch(json_t *ops)
{
        _cleanup_free_ char *text = jsondump(ops);
        _cleanup_free_ char *b64 = text ? base64_encode(text, strlen(text)) : NULL;
        return b64 ? json_string_nocheck(b64) : NULL;
}

static int encode(const char *api, admission_outcome_t *o, char **ret_body)
{
        const mutate_result_t *res = &o->result;
        bool allowed = res->decision != DECISION_DENY;
        _cleanup_json_ json_t *response =
            json_pack("{s:s, s:b, s:{s:s, s:s}}", "uid", o->uid, "allowed", allowed,
                      "auditAnnotations", "decision", mutate_decision_name(res->decision), "reason",
                      mutate_reason_name(res->reason));
        if (!response)
                return -ENOMEM;
        if (allowed && res->patch) {
                json_t *b64 = encode_patch(res->patch);
                if (!b64 || json_object_set_new(response, "patch", b64) < 0 ||
                    json_object_set_new(response, "patchType", json_string("JSONPatch")) < 0)
                        return -ENOMEM;
        }
        if (!allowed) {
                json_t *status = json_pack("{s:s, s:s, s:i}", "status", "Failure", "message",
                                           res->detail, "code", 403);
                if (!status || json_object_set_new(response, "status", status) < 0)
                        return -ENOMEM;
        }
        if (res->reason == REASON_PRIVILEGED || res->reason == REASON_HOST_PID) {
                /* A selected pod that runs without the split: tell whoever created it. */
                char warning[ERROR_MESSAGE_MAX + 64];
                (void)snprintf(warning, sizeof(warning), "hangar: driver sidecar not injected: %s",
                               res->detail);
                json_t *w = json_pack("[s]", warning);
                if (!w || json_object_set_new(response, "warnings", w) < 0)
                        return -ENOMEM;
        }
        _cleanup_json_ json_t *out = json_pack("{s:s, s:s, s:O}", "apiVersion", api, "kind",
                                               "AdmissionReview", "response", response);
        if (!out)
                return -ENOMEM;
        *ret_body = jsondump(out);
        return *ret_body ? 0 : -ENOMEM;
}

int admission_handle(const hg_config_t *cfg, const char *body, size_t len, char **ret_body,
                     admission_outcome_t *o, hg_error_t *err)
{
        memset(o, 0, sizeof(*o));
        int r = jsonx_load(body, len, JSONX_MAX_DEPTH, &o->review, err);
        if (r < 0)
                return r;
        json_t *request = NULL;
        const char *api = NULL;
        r = decode(o->review, o, &request, &api, err);
        if (r < 0)
                return r;
        r = decide(cfg, request, o, err);
        if (r == -EINVAL)
                return r;
        /* Internal failures were turned into a deny by mutate_pod: answer it. */
        return encode(api, o, ret_body);
}

json_t *admission_wrap_pod(json_t *pod, const char *uid)
{
        return json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, "
                         "s:O, s:b}}",
                         "apiVersion", API_V1, "kind", "AdmissionReview", "request", "uid", uid,
                         "kind", "group", "", "version", "v1", "kind", "Pod", "resource", "group",
                         "", "version", "v1", "resource", "pods", "operation", "CREATE",
                         "namespace", "default", "object", pod, "dryRun", 0);
}
