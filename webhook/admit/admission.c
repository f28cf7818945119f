#include "admission.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base64.h"
#include "cleanup.h"
#include "enforce.h"
#include "guard.h"
#include "jsondump.h"
#include "jsonparse.h"
#include "jsonx.h"
#include "k8sname.h"
#include "podview.h"
#include "strbuf.h"

#define API_V1      "admission.k8s.io/v1"
#define API_V1BETA1 "admission.k8s.io/v1beta1"
/* A Kubernetes UID is 36 characters; anything far longer is not one. */
#define UID_MAX_LEN 128

/* What decode() and decide() below read of a review; the pod is read
 * through podview's projection. The fuzz target compares every input read
 * this way with the whole-review answer. */
static const jsonparse_member_t request_members[] = {
    JSONPARSE_MEMBER("uid", NULL),
    JSONPARSE_MEMBER("operation", NULL),
    JSONPARSE_MEMBER("kind", NULL),
    JSONPARSE_MEMBER("namespace", NULL),
    JSONPARSE_MEMBER("name", NULL),
    JSONPARSE_MEMBER("subResource", NULL),
    JSONPARSE_MEMBER("dryRun", NULL),
    JSONPARSE_MEMBER("object", &podview_projection),
    JSONPARSE_MEMBERS_END,
};
static const jsonparse_member_t review_members[] = {
    JSONPARSE_MEMBER("apiVersion", NULL),
    JSONPARSE_MEMBER("kind", NULL),
    JSONPARSE_MEMBER("request", &(const jsonparse_proj_t){.members = request_members}),
    JSONPARSE_MEMBERS_END,
};
const jsonparse_proj_t admission_review_projection = {.members = review_members};

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

/* A Pod CREATE's decision: mutate_pod's, with the sidecar's values built
 * once (values) or for this pod (NULL). */
static int decide_pod(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
                      mutate_result_t *ret)
{
        int r = values ? mutate_pod_with(cfg, values, pod, ret) : mutate_pod(cfg, pod, ret);
        if (r == 0)
                enforcement_apply(settings_conflict_enforcement(cfg), ret);
        return r;
}

/* Makes the decision for a decoded request. */
static int decide(const webhook_settings_t *cfg, const shape_values_t *values, json_t *request,
                  admission_outcome_t *o, hg_error_t *err)
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
        return decide_pod(cfg, values, pod, &o->result);
}

/* The review's pod sits in review.request.object, two levels down. */
#define POD_MAX_DEPTH (JSONX_MAX_DEPTH - 2)

/* What the review's reader would refuse in a pod built some other way (a
 * manifest read from YAML): nesting past the review's bound, and NUL in a
 * string (jansson holds it, the reader takes no \u0000). Keys cannot hold
 * NUL here: jansson's are C strings. */
static int check_as_review_reads(json_t *v, unsigned depth, hg_error_t *err)
{
        if ((json_is_object(v) || json_is_array(v)) && depth > POD_MAX_DEPTH)
                return error_set(err, -EINVAL,
                                 "the pod is nested deeper than a review may carry it (%u levels "
                                 "under request.object)",
                                 POD_MAX_DEPTH);
        if (json_is_string(v) && strlen(json_string_value(v)) != json_string_length(v))
                return error_set(err, -EINVAL, "\\u0000 is not accepted in the pod's strings");
        const char *key;
        size_t i;
        json_t *member;
        json_object_foreach (v, key, member) {
                int r = check_as_review_reads(member, depth + 1, err);
                if (r < 0)
                        return r;
        }
        json_array_foreach (v, i, member) {
                int r = check_as_review_reads(member, depth + 1, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

int admission_decide_pod(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
                         mutate_result_t *ret, hg_error_t *err)
{
        memset(ret, 0, sizeof(*ret));
        if (!json_is_object(pod))
                return error_set(err, -EINVAL, "request.object must be the Pod being created");
        int r = check_as_review_reads(pod, 1, err);
        return r < 0 ? r : decide_pod(cfg, values, pod, ret);
}

/* Base64 written straight into the answer (the patch is most of its bytes),
 * in chunks of a multiple of 3 input bytes so they concatenate. */
static int append_base64(strbuf_t *sb, const char *in, size_t n)
{
        char chunk[1024]; /* from 768 input bytes */
        while (n > 0) {
                size_t take = n < 768 ? n : 768;
                int r = strbuf_append(sb, chunk, base64_encode_into(chunk, in, take));
                if (r < 0)
                        return r;
                in += take;
                n -= take;
        }
        return 0;
}

/* Appends ,"key":"value" (or without the comma for the first member). */
static int put_string(strbuf_t *sb, const char *key, const char *value)
{
        int r = strbuf_puts(sb, key);
        return r == 0 ? jsondump_append_string(sb, value, strlen(value)) : r;
}

/* The answer, written straight out: the same bytes as the jansson object
 *   {apiVersion, kind, response: {uid, allowed, auditAnnotations: {decision,
 *    reason}, [patch, patchType], [status: {status, message, code}],
 *    [warnings: [...]]}}
 * dumped by jsondump (members in that order), without building it. */
static int encode(const char *api, admission_outcome_t *o, char **ret_body)
{
        const mutate_result_t *res = &o->result;
        bool allowed = res->decision != DECISION_DENY;
        /* A relaxed deny (warn or audit mode) is allowed and says so in the
         * audit annotations: decision warned or audited, its reason kept. */
        /* Sized for the usual answer up front (strbuf has no reserve: this
         * is the empty buffer it would have grown to by doubling). */
        size_t usual = 512 + (res->patch ? strlen(res->patch) / 3 * 4 + 4 : 0);
        _cleanup_strbuf_ strbuf_t sb = {.data = malloc(usual), .cap = usual};
        if (!sb.data)
                return -ENOMEM;
        sb.data[0] = '\0';
        int r = put_string(&sb, "{\"apiVersion\":", api);
        if (r == 0)
                r = strbuf_puts(&sb, ",\"kind\":\"AdmissionReview\",\"response\":");
        if (r == 0)
                r = put_string(&sb, "{\"uid\":", o->uid);
        if (r == 0)
                r = strbuf_puts(&sb, allowed ? ",\"allowed\":true" : ",\"allowed\":false");
        if (r == 0)
                r = put_string(&sb, ",\"auditAnnotations\":{\"decision\":",
                               mutate_decision_name(res->decision));
        if (r == 0)
                r = put_string(&sb, ",\"reason\":", mutate_reason_name(res->reason));
        if (r == 0)
                r = strbuf_puts(&sb, "}");
        if (r == 0 && allowed && res->patch) {
                /* Base64 has nothing to escape: its bytes go in as they are. */
                r = strbuf_puts(&sb, ",\"patch\":\"");
                if (r == 0)
                        r = append_base64(&sb, res->patch, strlen(res->patch));
                if (r == 0)
                        r = strbuf_puts(&sb, "\",\"patchType\":\"JSONPatch\"");
        }
        if (r == 0 && !allowed) {
                r = put_string(&sb,
                               ",\"status\":{\"status\":\"Failure\",\"message\":", res->detail);
                if (r == 0)
                        r = strbuf_puts(&sb, ",\"code\":403}");
        }
        if (r == 0 && res->decision == DECISION_WARNED) {
                /* Warn mode: the deny that was not enforced, told to the client. */
                char warning[ENFORCEMENT_WARNING_MAX + 1];
                enforcement_warning(res, warning);
                r = put_string(&sb, ",\"warnings\":[", warning);
                if (r == 0)
                        r = strbuf_puts(&sb, "]");
        } else if (r == 0 && mutate_reason_warns(res->reason)) {
                /* A selected pod that runs without the split: tell whoever created it. */
                char warning[ERROR_MESSAGE_MAX + 64];
                (void)snprintf(warning, sizeof(warning), "hangar: driver sidecar not injected: %s",
                               res->detail);
                r = put_string(&sb, ",\"warnings\":[", warning);
                if (r == 0)
                        r = strbuf_puts(&sb, "]");
        }
        if (r == 0)
                r = strbuf_puts(&sb, "}}");
        if (r < 0)
                return r;
        *ret_body = strbuf_take(&sb);
        return *ret_body ? 0 : -ENOMEM;
}

int admission_review(const webhook_settings_t *cfg, const shape_values_t *values,
                     admission_read_t read, const char *body, size_t len, char **ret_body,
                     admission_outcome_t *o, hg_error_t *err)
{
        memset(o, 0, sizeof(*o));
        const jsonparse_proj_t *proj;
        switch (read) {
        case ADMISSION_READ_WHOLE:
                proj = NULL;
                break;
        case ADMISSION_READ_PROJECTED:
                proj = &admission_review_projection;
                break;
        default:
                return error_set(err, -EINVAL, "internal: unknown review read mode");
        }
        int r = jsonparse_load_projected(body, len, JSONX_MAX_DEPTH, proj, &o->review, err);
        if (r < 0)
                return r;
        json_t *request = NULL;
        const char *api = NULL;
        r = decode(o->review, o, &request, &api, err);
        if (r < 0)
                return r;
        r = decide(cfg, values, request, o, err);
        if (r == -EINVAL)
                return r;
        /* Internal failures were turned into a deny by mutate_pod: answer it. */
        return encode(api, o, ret_body);
}

int admission_handle(const webhook_settings_t *cfg, const char *body, size_t len, char **ret_body,
                     admission_outcome_t *o, hg_error_t *err)
{
        return admission_review(cfg, NULL, ADMISSION_READ_WHOLE, body, len, ret_body, o, err);
}

/* Reads what the guard decides on from a decoded request: the resource
 * (the API server always sends it; without it nothing says the review is
 * about pods), the rest optional in the review's schema, but a present
 * member of the wrong type is malformed. */
static int decode_guarded(json_t *request, guard_request_t *g, hg_error_t *err)
{
        json_t *resource = NULL, *user = NULL;
        g->subresource = "";
        if (jsonx_member(request, "resource", JSON_OBJECT, &resource) < 0 ||
            jsonx_string(resource, "resource", &g->resource) < 0)
                return error_set(err, -EINVAL,
                                 "request.resource must be an object naming its resource");
        if (jsonx_member(request, "userInfo", JSON_OBJECT, &user) == -EINVAL ||
            jsonx_string(request, "subResource", &g->subresource) == -EINVAL ||
            jsonx_string(user, "username", &g->username) == -EINVAL ||
            jsonx_member(user, "groups", JSON_ARRAY, &g->groups) == -EINVAL)
                return error_set(err, -EINVAL,
                                 "request.subResource and userInfo must have their documented "
                                 "types");
        size_t i;
        json_t *group;
        json_array_foreach (g->groups, i, group)
                if (!json_is_string(group))
                        return error_set(err, -EINVAL,
                                         "request.userInfo.groups[%zu] is not a string", i);
        g->object = json_object_get(request, "object");
        g->old_object = json_object_get(request, "oldObject");
        return 0;
}

int admission_validate(const webhook_settings_t *cfg, const char *body, size_t len,
                       admission_pod_lookup_fn lookup, void *lookup_ctx, char **ret_body,
                       admission_outcome_t *o, hg_error_t *err)
{
        memset(o, 0, sizeof(*o));
        int r = jsonparse_load_projected(body, len, JSONX_MAX_DEPTH, NULL, &o->review, err);
        if (r < 0)
                return r;
        json_t *request = NULL;
        const char *api = NULL;
        r = decode(o->review, o, &request, &api, err);
        if (r < 0)
                return r;
        guard_request_t g = {.operation = o->operation};
        r = decode_guarded(request, &g, err);
        if (r < 0)
                return r;
        _cleanup_json_ json_t *pod = NULL;
        hg_error_t lookup_err = {0};
        if (guard_needs_pod(g.operation, g.subresource)) {
                if (!lookup || !o->namespace || !o->name)
                        (void)error_set(&lookup_err, -ENOENT, "no way to read the pod");
                /* The names become the lookup's URL path: anything but a
                 * namespace's and a pod's syntax ("/", "..", "?") would read
                 * some other object (a forged default/../../NS/pods/POD was
                 * judged on NS/POD). The API server sends only real names. */
                else if (!k8s_is_dns1123_label(o->namespace) || !k8s_is_dns1123_subdomain(o->name))
                        (void)error_set(&lookup_err, -EINVAL,
                                        "\"%s/%s\" is not a namespace and pod name", o->namespace,
                                        o->name);
                else if ((r = lookup(lookup_ctx, o->namespace, o->name, &pod, &lookup_err)) < 0) {
                        pod = NULL;
                        /* A failure without a reason (out of memory) still says one. */
                        if (!lookup_err.message[0])
                                (void)error_set(&lookup_err, r, "%s", strerror(-r));
                }
                g.pod = pod;
                g.pod_error = lookup_err.message;
        }
        guard_decide(cfg, &g, &o->result);
        enforcement_apply(settings_guard_enforcement(cfg), &o->result);
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
