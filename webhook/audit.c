#include "audit.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "driverstart.h"
#include "jsonx.h"
#include "k8sclient.h"
#include "mutate.h"
#include "ownerevent.h"
#include "strbuf.h"

/* Pods per list page at first. A page is one answer, which k8sclient bounds
 * (K8S_MAX_RESPONSE_BYTES); a pod may be up to the API server's 3 MiB, so a
 * page refused whole is asked again with half as many, down to one. */
#define PAGE_LIMIT_START 100
/* Bound on the pods one audit reports, so a runaway cluster cannot exhaust
 * memory; past it the audit stops with an error rather than report part. */
#define AUDIT_MAX_PODS 1000000

static const char *const state_names[AUDIT_STATE_COUNT] = {
    [AUDIT_NOT_INJECTED] = "not-injected",
    [AUDIT_STALE] = "stale",
    [AUDIT_DENIED] = "denied",
    [AUDIT_UNGUARDED] = "unguarded",
    [AUDIT_DRIVER_FAILED] = "driver-failed",
    [AUDIT_UNLABELLED] = "unlabelled",
    [AUDIT_SKIPPED] = "skipped",
    [AUDIT_EXCLUDED] = "excluded",
    [AUDIT_CURRENT] = "current",
};

const char *audit_state_name(audit_state_t state)
{
        return (unsigned)state < AUDIT_STATE_COUNT ? state_names[state] : "not-injected";
}

bool audit_state_needs_action(audit_state_t state)
{
        switch (state) {
        case AUDIT_SKIPPED:
        case AUDIT_EXCLUDED:
        case AUDIT_CURRENT:
                return false;
        case AUDIT_NOT_INJECTED:
        case AUDIT_STALE:
        case AUDIT_DENIED:
        case AUDIT_UNGUARDED:
        case AUDIT_DRIVER_FAILED:
        case AUDIT_UNLABELLED:
        case AUDIT_STATE_COUNT:
        default:
                return true;
        }
}

bool audit_state_broken(audit_state_t state)
{
        return state == AUDIT_DRIVER_FAILED || state == AUDIT_UNLABELLED;
}

static void set_verdict(audit_verdict_t *v, audit_state_t state, const char *code, const char *fmt,
                        ...) __attribute__((format(printf, 4, 5)));
static void set_verdict(audit_verdict_t *v, audit_state_t state, const char *code, const char *fmt,
                        ...)
{
        v->state = state;
        (void)snprintf(v->code, sizeof(v->code), "%s", code);
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(v->reason, sizeof(v->reason), fmt, ap);
        va_end(ap);
}

static const char *pod_annotation(json_t *pod, const char *key)
{
        const char *v = NULL;
        json_t *a = json_object_get(json_object_get(pod, "metadata"), "annotations");
        return jsonx_string(a, key, &v) == 0 ? v : NULL;
}

/* How a pod the webhook would inject now came to be without the sidecar,
 * from what the webhook wrote on it at its CREATE (if it was asked). */
static void explain_missing(json_t *pod, audit_verdict_t *v)
{
        const char *status = pod_annotation(pod, SHAPE_ANNOTATION_STATUS);
        const char *reason = pod_annotation(pod, SHAPE_ANNOTATION_REASON);
        if (!status)
                set_verdict(v, AUDIT_NOT_INJECTED, "never-reviewed",
                            "no %s annotation: not injected at its creation (created before the "
                            "webhook was installed or while driverSidecar was off, or the API "
                            "server did not call the webhook: failurePolicy Ignore while it was "
                            "down, namespace or label not selected then); the webhook would "
                            "inject it now: recreate it",
                            SHAPE_ANNOTATION_STATUS);
        else if (strcmp(status, SHAPE_STATUS_SKIPPED) == 0)
                set_verdict(v, AUDIT_NOT_INJECTED, "skipped-at-creation",
                            "skipped at creation (%.64s), the webhook would inject it now: "
                            "recreate it",
                            reason ? reason : "no reason recorded");
        else
                set_verdict(v, AUDIT_NOT_INJECTED, "marked-without-driver",
                            "annotated %s: %.32s but without %s: the webhook would inject it "
                            "now: recreate it",
                            SHAPE_ANNOTATION_STATUS, status, SHAPE_DRIVER_CONTAINER);
}

/* Whether cfg's selector selects pod, as the webhook's is_selected reads it. */
static bool pod_selected(const webhook_settings_t *cfg, json_t *pod)
{
        const char *value;
        json_t *labels = json_object_get(json_object_get(pod, "metadata"), "labels");
        if (jsonx_string(labels, cfg->selector_key, &value) < 0)
                return false;
        return settings_selects_any_value(cfg) || strcmp(value, cfg->selector_value) == 0;
}

static bool has_driver_in(json_t *spec, const char *list)
{
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(spec, list), i, c) {
                const char *name = NULL;
                if (jsonx_string(c, "name", &name) == 0 &&
                    strcmp(name, SHAPE_DRIVER_CONTAINER) == 0)
                        return true;
        }
        return false;
}

/* What of hangar's a pod carries: "driver" (a container named
 * hangar-driver, regular or init), "record" (the injected annotation), or
 * NULL for neither. */
static const char *hangar_part(json_t *pod)
{
        json_t *spec = json_object_get(pod, "spec");
        if (has_driver_in(spec, "containers") || has_driver_in(spec, "initContainers"))
                return "driver";
        const char *status = pod_annotation(pod, SHAPE_ANNOTATION_STATUS);
        if (status && strcmp(status, SHAPE_STATUS_INJECTED) == 0)
                return "record";
        return NULL;
}

/* A copy of a sandbox pod without the selector's label (kubectl get -o
 * yaml, the label dropped, created again): in shape, the guard's CREATE
 * check lets it in, and nothing that selects by the label (injection, the
 * chart's scope policy, the audit before this) counts it. */
static void judge_copy(const webhook_settings_t *cfg, const char *part, audit_verdict_t *v)
{
        char selector[320];
        if (settings_selects_any_value(cfg))
                (void)snprintf(selector, sizeof(selector), "%s", cfg->selector_key);
        else
                (void)snprintf(selector, sizeof(selector), "%s=%s", cfg->selector_key,
                               cfg->selector_value);
        if (strcmp(part, "driver") == 0)
                set_verdict(v, AUDIT_UNLABELLED, "driver-without-label",
                            "carries a container named %s but not the label %s: a copy of a "
                            "sandbox pod, which the webhook does not select (never injected "
                            "again, not a sandbox pod to the label's scope policy, the probe "
                            "or a label-based audit); delete it, or recreate it from its "
                            "template with the label",
                            SHAPE_DRIVER_CONTAINER, selector);
        else
                set_verdict(v, AUDIT_UNLABELLED, "record-without-label",
                            "carries the %s: %s record but not the label %s: a copy of a "
                            "sandbox pod, which the webhook does not select; delete it, or "
                            "recreate it from its template with the label",
                            SHAPE_ANNOTATION_STATUS, SHAPE_STATUS_INJECTED, selector);
}

/* An injected pod whose driver the kubelet cannot start (or that exited
 * with a message) is driver-failed, whatever its shape: it does not work. */
static void judge_driver_start(json_t *pod, audit_verdict_t *v)
{
        driver_start_t ds;
        if (driver_start_failed(pod, &ds) != 1)
                return;
        set_verdict(v, AUDIT_DRIVER_FAILED, ds.reason, "%s cannot start (%s): %s; %s", ds.container,
                    ds.reason, ds.message, ds.advice);
}

int audit_pod(const webhook_settings_t *cfg, const shape_values_t *values, json_t *pod,
              audit_verdict_t *ret)
{
        *ret = (audit_verdict_t){0};
        if (!json_is_object(pod)) {
                set_verdict(ret, AUDIT_DENIED, "invalid-pod", "not a pod object");
                return 0;
        }
        const char *part = hangar_part(pod);
        if (part && !pod_selected(cfg, pod)) {
                judge_copy(cfg, part, ret);
                return 0;
        }
        const char *status = pod_annotation(pod, SHAPE_ANNOTATION_STATUS);
        bool marked = status && strcmp(status, SHAPE_STATUS_INJECTED) == 0;
        /* mutate_pod patches what it is given: a copy, so pod stays as read. */
        _cleanup_json_ json_t *copy = json_deep_copy(pod);
        if (!copy)
                return -ENOMEM;
        mutate_result_t res;
        int r = mutate_pod_with(cfg, values, copy, &res);
        if (r < 0) {
                mutate_result_free(&res);
                return r;
        }
        const char *name = mutate_reason_name(res.reason);
        switch (res.reason) {
        case REASON_ALREADY_INJECTED:
                /* The reinvocation path: in shape, but what it would still
                 * change (token mounts, shareProcessNamespace) is what this
                 * configuration injects differently. */
                if (res.patch)
                        set_verdict(ret, AUDIT_STALE, "reinvocation-changes",
                                    "injected, but the webhook would still change it: %s",
                                    res.detail);
                else
                        set_verdict(ret, AUDIT_CURRENT, name, "injected, in the current shape");
                break;
        case REASON_CONFLICT:
                if (marked)
                        set_verdict(ret, AUDIT_STALE, "shape",
                                    "injected by another configuration (or changed since): %s",
                                    res.detail);
                else
                        set_verdict(ret, AUDIT_DENIED, name, "the webhook would refuse it now: %s",
                                    res.detail);
                break;
        case REASON_INJECTED:
                explain_missing(pod, ret);
                break;
        case REASON_PRIVILEGED:
        case REASON_HOST_PID:
        case REASON_HOST_NETWORK:
        case REASON_HOST_IPC:
                set_verdict(ret, AUDIT_SKIPPED, name, "the webhook skips it now too: %s",
                            res.detail);
                break;
        case REASON_NOT_SELECTED:
                set_verdict(ret, AUDIT_EXCLUDED, name, "%s", res.detail);
                break;
        case REASON_NO_AGENT_CONTAINER:
        case REASON_INVALID_POD:
        case REASON_INTERNAL_ERROR:
        case REASON_INJECTION_DISABLED:
        case REASON_NOT_POD:
        case REASON_NOT_CREATE:
        case REASON_SUBRESOURCE:
        case REASON_NOT_GUARDED:
        case REASON_LISTED_IDENTITY:
        case REASON_DRIVER_EXEC:
        case REASON_PORT_FORWARD:
        case REASON_POD_UNKNOWN:
        case REASON_EPHEMERAL_CONTAINER:
        case REASON_DRIVER_CHANGED:
        case REASON_HANGAR_METADATA:
        case REASON_UNKNOWN_DOOR:
        case REASON_COUNT:
        default:
                /* Anything else the webhook would not let through as is. */
                set_verdict(ret, AUDIT_DENIED, name, "the webhook would refuse it now: %s",
                            res.detail);
                break;
        }
        mutate_result_free(&res);
        if (ret->state == AUDIT_CURRENT || ret->state == AUDIT_STALE)
                judge_driver_start(pod, ret);
        return 0;
}

/* ---- label selectors (metav1.LabelSelector), as the API server reads the
 * webhook configuration's namespaceSelector and objectSelector ---- */

static bool in_values(json_t *values, const char *v)
{
        size_t i;
        json_t *x;
        json_array_foreach (values, i, x)
                if (json_is_string(x) && strcmp(json_string_value(x), v) == 0)
                        return true;
        return false;
}

/* 1 when labels match sel (NULL or {} matches everything), 0 when not,
 * -EINVAL for a selector this code does not know how to read (fail closed:
 * the audit stops rather than guess). */
static int selector_matches(json_t *sel, json_t *labels, hg_error_t *err)
{
        if (!sel || json_is_null(sel))
                return 1;
        if (!json_is_object(sel))
                return error_set(err, -EINVAL, "a label selector is not an object");
        const char *key;
        json_t *want;
        json_object_foreach (json_object_get(sel, "matchLabels"), key, want) {
                const char *have = NULL;
                if (!json_is_string(want))
                        return error_set(err, -EINVAL, "matchLabels[%s] is not a string", key);
                if (jsonx_string(labels, key, &have) < 0 ||
                    strcmp(have, json_string_value(want)) != 0)
                        return 0;
        }
        size_t i;
        json_t *e;
        json_array_foreach (json_object_get(sel, "matchExpressions"), i, e) {
                const char *k, *op, *have = NULL;
                if (jsonx_string(e, "key", &k) < 0 || jsonx_string(e, "operator", &op) < 0)
                        return error_set(err, -EINVAL,
                                         "matchExpressions[%zu] needs a key and an "
                                         "operator",
                                         i);
                bool exists = jsonx_string(labels, k, &have) == 0;
                json_t *values = json_object_get(e, "values");
                bool ok;
                if (strcmp(op, "In") == 0)
                        ok = exists && in_values(values, have);
                else if (strcmp(op, "NotIn") == 0)
                        ok = !exists || !in_values(values, have);
                else if (strcmp(op, "Exists") == 0)
                        ok = exists;
                else if (strcmp(op, "DoesNotExist") == 0)
                        ok = !exists;
                else
                        return error_set(err, -EINVAL,
                                         "matchExpressions[%zu]: unknown operator "
                                         "'%.32s'",
                                         i, op);
                if (!ok)
                        return 0;
        }
        return 1;
}

/* ---- the API ---- */

/* Percent-encodes s (everything but RFC 3986's unreserved characters). */
static int url_escape(strbuf_t *b, const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                bool plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                             (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
                             *p == '~';
                int r = plain ? strbuf_printf(b, "%c", *p)
                              : strbuf_printf(b, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void cleanup_clientp(k8s_client_t **c)
{
        k8s_client_free(*c);
}

/* GET path expecting 200; the answer in *ret. */
static int get_json(k8s_client_t *k, const char *path, json_t **ret, hg_error_t *err)
{
        long status = 0;
        json_t *body = NULL;
        int r = k8s_request(k, "GET", path, NULL, NULL, &status, &body, err);
        if (r < 0)
                return r;
        if (status != 200) {
                char buf[32];
                /* HTTP refusals are told apart from transport failures
                 * (-EIO, -ECONNRESET), which list_page retries smaller. */
                int code = status == 404                    ? -ENOENT
                           : status == 401 || status == 403 ? -EACCES
                           : status == 410                  ? -ESTALE
                                                            : -EPROTO;
                error_set(err, code, "GET %s: %s%s", path,
                          k8s_status_message(body, status, buf, sizeof(buf)),
                          status == 410 ? " (the list changed while it was read: run the "
                                          "audit again)"
                                        : "");
                json_decref(body);
                return err->code;
        }
        if (!json_is_object(body)) {
                json_decref(body);
                return error_set(err, -EIO, "GET %s: the answer is not a JSON object", path);
        }
        *ret = body;
        return 0;
}

typedef struct audit_run_ctx {
        const webhook_settings_t *cfg;
        const shape_values_t *values;
        k8s_client_t *k;
        json_t *webhook; /* the configuration's webhook entry, or NULL */
        const audit_options_t *o;
        json_t *ns_labels; /* namespace -> its labels (an object), read once each */
        json_t *rows;      /* [{namespace, name, state, code, reason}] */
        size_t counts[AUDIT_STATE_COUNT];
} audit_run_ctx_t;

/* The labels of namespace ns, read once per namespace (borrowed from the
 * cache). */
static int namespace_labels(audit_run_ctx_t *a, const char *ns, json_t **ret, hg_error_t *err)
{
        json_t *known = json_object_get(a->ns_labels, ns);
        if (!known) {
                _cleanup_strbuf_ strbuf_t path = {0};
                if (strbuf_printf(&path, "/api/v1/namespaces/") < 0 || url_escape(&path, ns) < 0)
                        return -ENOMEM;
                _cleanup_json_ json_t *nsobj = NULL;
                int r = get_json(a->k, path.data, &nsobj, err);
                if (r < 0)
                        return r;
                json_t *labels = json_object_get(json_object_get(nsobj, "metadata"), "labels");
                known = json_is_object(labels) ? json_incref(labels) : json_object();
                if (!known || json_object_set_new(a->ns_labels, ns, known) < 0)
                        return -ENOMEM;
        }
        *ret = known;
        return 0;
}

/* Whether the webhooks are ever called for pods of namespace ns: 1, or 0
 * with *v the unguarded verdict saying why not. */
static int namespace_guarded(audit_run_ctx_t *a, const char *ns, audit_verdict_t *v,
                             hg_error_t *err)
{
        json_t *labels = NULL;
        int r = namespace_labels(a, ns, &labels, err);
        if (r < 0)
                return r;
        const char *key = a->o->scope_key, *want = a->o->scope_value, *have = NULL;
        if (key && (jsonx_string(labels, key, &have) < 0 || strcmp(have, want) != 0)) {
                set_verdict(v, AUDIT_UNGUARDED, "namespace-not-opted-in",
                            "namespace %s is not labelled %s=%s: neither webhook is called for "
                            "its pods, so the guard never sees this pod's port-forwards, "
                            "updates or ephemeral containers, and the scope policy would refuse "
                            "it at creation now; opt the namespace in (kubectl label namespace "
                            "%s %s=%s), then audit again",
                            ns, key, want, ns, key, want);
                return 0;
        }
        if (!a->webhook)
                return 1;
        r = selector_matches(json_object_get(a->webhook, "namespaceSelector"), labels, err);
        if (r < 0)
                return error_prefix(err, "namespace %s: ", ns);
        if (r == 0)
                set_verdict(v, AUDIT_UNGUARDED, "namespace-not-selected",
                            "the webhook configuration's namespaceSelector leaves namespace %s "
                            "out (the release's namespace, kube-system and "
                            "webhook.excludeNamespaces never are sent): the API server never "
                            "sends its pods, so this sandbox pod is neither injected nor "
                            "guarded; run sandbox pods in an opted-in namespace",
                            ns);
        return r;
}

/* A driver-failed pod's reason, posted on its controller owner; what was
 * done goes on the pod's row ("event": {action, kind, name}). */
static int tell_owner(audit_run_ctx_t *a, json_t *pod, const audit_verdict_t *v, json_t *row,
                      hg_error_t *err)
{
        owner_event_t ev;
        int r = owner_event_post(a->k, pod, v->reason, time(NULL), &ev, err);
        if (r < 0)
                return r;
        json_t *e = ev.action == OWNER_EVENT_NONE
                        ? json_pack("{s:s}", "action", owner_event_action_name(ev.action))
                        : json_pack("{s:s, s:s, s:s}", "action", owner_event_action_name(ev.action),
                                    "kind", ev.kind, "name", ev.name);
        return e && json_object_set_new(row, "event", e) == 0 ? 0 : -ENOMEM;
}

static int judge(audit_run_ctx_t *a, json_t *pod, hg_error_t *err)
{
        const char *ns = "", *name = "";
        json_t *meta = json_object_get(pod, "metadata");
        (void)jsonx_string(meta, "namespace", &ns);
        (void)jsonx_string(meta, "name", &name);
        audit_verdict_t v;
        /* Every pod is listed; only sandbox pods and copies of them are
         * judged. A copy is one whatever its namespace (audit_pod). */
        bool selected = pod_selected(a->cfg, pod);
        if (!selected && !hangar_part(pod))
                return 0;
        int r = selected ? namespace_guarded(a, ns, &v, err) : 1;
        /* Out of the webhooks' sight first: whatever its shape, nothing
         * guards such a pod. */
        if (r > 0 && selected && a->webhook) {
                r = selector_matches(json_object_get(a->webhook, "objectSelector"),
                                     json_object_get(meta, "labels"), err);
                if (r == 0)
                        set_verdict(&v, AUDIT_EXCLUDED, "object-not-selected",
                                    "the webhook configuration's objectSelector leaves "
                                    "this pod out");
        }
        if (r < 0)
                return r;
        if (r > 0) {
                r = audit_pod(a->cfg, a->values, pod, &v);
                if (r < 0)
                        return r;
        }
        a->counts[v.state]++;
        json_t *row = json_pack("{s:s, s:s, s:s, s:s, s:s}", "namespace", ns, "name", name, "state",
                                audit_state_name(v.state), "code", v.code, "reason", v.reason);
        if (!row || json_array_append_new(a->rows, row) < 0)
                return -ENOMEM;
        return a->o->events && v.state == AUDIT_DRIVER_FAILED ? tell_owner(a, pod, &v, row, err)
                                                              : 0;
}

/* One page of pods from the collection at base; *ret_next gets the continue
 * token ("" when this was the last page). */
static int list_page(audit_run_ctx_t *a, const char *base, const char *cont, unsigned *limit,
                     json_t **ret_items, char **ret_next, hg_error_t *err)
{
        for (;;) {
                _cleanup_strbuf_ strbuf_t path = {0};
                if (strbuf_printf(&path, "%s?limit=%u", base, *limit) < 0)
                        return -ENOMEM;
                if (cont[0] &&
                    (strbuf_printf(&path, "&continue=") < 0 || url_escape(&path, cont) < 0))
                        return -ENOMEM;
                json_t *list = NULL;
                int r = get_json(a->k, path.data, &list, err);
                /* A page too large to take, or cut off: fewer pods at a time
                 * (k8sclient reports both as transport failures). */
                if (r < 0) {
                        if (*limit > 1 && (r == -EIO || r == -ECONNRESET)) {
                                *limit /= 2;
                                continue;
                        }
                        return r;
                }
                _cleanup_json_ json_t *owned = list; /* freed at return; items is increffed */
                (void)owned;
                json_t *items = json_object_get(list, "items");
                if (!json_is_array(items) && !json_is_null(items) && items)
                        return error_set(err, -EIO, "GET %s: items is not an array", base);
                const char *next = "";
                (void)jsonx_string(json_object_get(list, "metadata"), "continue", &next);
                char *n = strdup(next);
                if (!n)
                        return -ENOMEM;
                *ret_items = items ? json_incref(items) : json_array();
                *ret_next = n;
                return 0;
        }
}

/* The table's cells are pod names and reasons, partly from the pod: one
 * line each, no control characters. */
static void put_cell(FILE *out, const char *s, int width)
{
        int n = 0;
        for (const unsigned char *p = (const unsigned char *)s; *p; p++, n++)
                fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, out);
        for (; n < width; n++)
                fputc(' ', out);
}

static bool row_needs_action(json_t *row)
{
        const char *name = json_string_value(json_object_get(row, "state"));
        for (audit_state_t s = 0; s < AUDIT_STATE_COUNT; s++)
                if (strcmp(name, state_names[s]) == 0)
                        return audit_state_needs_action(s);
        return true;
}

static void print_table(const audit_run_ctx_t *a, bool show_all, FILE *out)
{
        static const char *const cols[] = {"namespace", "name", "state", "code"};
        int width[ARRAY_SIZE(cols)];
        for (size_t c = 0; c < ARRAY_SIZE(cols); c++)
                width[c] = (int)strlen(cols[c]);
        size_t i;
        json_t *row;
        size_t shown = 0;
        json_array_foreach (a->rows, i, row) {
                if (!show_all && !row_needs_action(row))
                        continue;
                shown++;
                for (size_t c = 0; c < ARRAY_SIZE(cols); c++) {
                        int len = (int)strlen(json_string_value(json_object_get(row, cols[c])));
                        if (len > width[c])
                                width[c] = len;
                }
        }
        if (shown) {
                fprintf(out, "%-*s  %-*s  %-*s  %-*s  REASON\n", width[0], "NAMESPACE", width[1],
                        "NAME", width[2], "STATE", width[3], "CODE");
                json_array_foreach (a->rows, i, row) {
                        if (!show_all && !row_needs_action(row))
                                continue;
                        for (size_t c = 0; c < ARRAY_SIZE(cols); c++) {
                                put_cell(out, json_string_value(json_object_get(row, cols[c])),
                                         width[c]);
                                fputs("  ", out);
                        }
                        put_cell(out, json_string_value(json_object_get(row, "reason")), 0);
                        fputc('\n', out);
                }
        }
        json_array_foreach (a->rows, i, row) {
                json_t *ev = json_object_get(row, "event");
                if (!ev)
                        continue;
                const char *action = json_string_value(json_object_get(ev, "action"));
                fputs("event ", out);
                put_cell(out, action, 0);
                if (strcmp(action, "none") == 0)
                        fputs(": no controller owns pod ", out);
                else {
                        fputs(" on ", out);
                        put_cell(out, json_string_value(json_object_get(ev, "kind")), 0);
                        fputc('/', out);
                        put_cell(out, json_string_value(json_object_get(ev, "name")), 0);
                        fputs(" for pod ", out);
                }
                put_cell(out, json_string_value(json_object_get(row, "namespace")), 0);
                fputc('/', out);
                put_cell(out, json_string_value(json_object_get(row, "name")), 0);
                fputc('\n', out);
        }
        size_t total = json_array_size(a->rows);
        fprintf(out, "%zu sandbox pod%s:", total, total == 1 ? "" : "s");
        const char *sep = " ";
        for (audit_state_t s = 0; s < AUDIT_STATE_COUNT; s++) {
                fprintf(out, "%s%zu %s", sep, a->counts[s], state_names[s]);
                sep = ", ";
        }
        fputc('\n', out);
}

int audit_run(const webhook_settings_t *cfg, const audit_options_t *o, FILE *out, hg_error_t *err)
{
        audit_run_ctx_t a = {.cfg = cfg, .o = o};
        _cleanup_(cleanup_clientp) k8s_client_t *k = NULL;
        int r = k8s_client_new_kubectl(o->kubeconfig, o->context, &k, err);
        if (r < 0)
                return r;
        a.k = k;
        shape_values_t *values = NULL;
        if (shape_values_new(&cfg->sidecar, &values) < 0)
                return -ENOMEM;
        a.values = values;
        _cleanup_json_ json_t *mwc = NULL, *ns_labels = json_object(), *rows = json_array();
        a.ns_labels = ns_labels;
        a.rows = rows;
        _cleanup_strbuf_ strbuf_t base = {0}, selector = {0};
        _cleanup_free_ char *cont = strdup("");
        if (!ns_labels || !rows || !cont) {
                r = -ENOMEM;
                goto out;
        }
        if (o->webhook_configuration) {
                _cleanup_strbuf_ strbuf_t path = {0};
                if (strbuf_printf(&path, "/apis/admissionregistration.k8s.io/v1/"
                                         "mutatingwebhookconfigurations/") < 0 ||
                    url_escape(&path, o->webhook_configuration) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
                r = get_json(k, path.data, &mwc, err);
                if (r < 0)
                        goto out;
                json_t *hooks = json_object_get(mwc, "webhooks");
                if (json_array_size(hooks) != 1) {
                        r = error_set(err, -EINVAL,
                                      "mutatingwebhookconfiguration %s has %zu webhooks; the "
                                      "chart's has one",
                                      o->webhook_configuration, json_array_size(hooks));
                        goto out;
                }
                a.webhook = json_array_get(hooks, 0);
        }
        const char *ns = o->namespace ? o->namespace : k8s_client_namespace(k);
        if (o->all_namespaces) {
                r = strbuf_printf(&base, "/api/v1/pods");
        } else {
                r = strbuf_printf(&base, "/api/v1/namespaces/");
                if (r == 0)
                        r = url_escape(&base, ns);
                if (r == 0)
                        r = strbuf_printf(&base, "/pods");
        }
        if (r == 0)
                r = settings_selects_any_value(cfg)
                        ? strbuf_printf(&selector, "%s", cfg->selector_key)
                        : strbuf_printf(&selector, "%s=%s", cfg->selector_key, cfg->selector_value);
        if (r < 0)
                goto out;
        unsigned limit = PAGE_LIMIT_START;
        do {
                _cleanup_json_ json_t *items = NULL;
                char *next = NULL;
                r = list_page(&a, base.data, cont, &limit, &items, &next, err);
                if (r < 0)
                        goto out;
                free(cont);
                cont = next;
                size_t i;
                json_t *pod;
                json_array_foreach (items, i, pod) {
                        if (json_array_size(rows) >= AUDIT_MAX_PODS) {
                                r = error_set(err, -E2BIG, "more than %d sandbox pods",
                                              AUDIT_MAX_PODS);
                                goto out;
                        }
                        r = judge(&a, pod, err);
                        if (r < 0)
                                goto out;
                }
        } while (cont[0]);

        if (o->json) {
                json_t *counts = json_object();
                for (audit_state_t s = 0; counts && s < AUDIT_STATE_COUNT; s++)
                        if (json_object_set_new(counts, state_names[s],
                                                json_integer((json_int_t)a.counts[s])) < 0)
                                json_decref(TAKE_PTR(counts));
                _cleanup_json_ json_t *doc =
                    counts
                        ? json_pack("{s:s, s:s?, s:s, s:s?, s:o, s:O}", "selector", selector.data,
                                    "namespace", o->all_namespaces ? NULL : ns, "driverList",
                                    shape_driver_list(&cfg->sidecar), "webhookConfiguration",
                                    o->webhook_configuration, "counts", counts, "pods", rows)
                        : NULL;
                _cleanup_free_ char *text = doc ? jsonx_dumps(doc, JSON_INDENT(2)) : NULL;
                if (!text) {
                        r = -ENOMEM;
                        goto out;
                }
                fprintf(out, "%s\n", text);
        } else {
                print_table(&a, o->show_all, out);
        }
        r = 0;
        for (audit_state_t s = 0; s < AUDIT_STATE_COUNT; s++)
                if (a.counts[s] && audit_state_broken(s))
                        r = AUDIT_FOUND_BROKEN;
                else if (a.counts[s] && audit_state_needs_action(s) && r == 0)
                        r = 1;
out:
        shape_values_free(values);
        return r;
}

/* ---- test-injection ---- */

int audit_test_injection(const webhook_settings_t *cfg, const char *kubeconfig, const char *context,
                         const char *ns, const char *image, FILE *out, hg_error_t *err)
{
        if (!cfg->driver_sidecar)
                return error_set(err, -EINVAL,
                                 "driverSidecar is off in this configuration "
                                 "(driverSidecar.enabled=false): the webhook changes no pod, so "
                                 "there is no injection to test");
        _cleanup_(cleanup_clientp) k8s_client_t *k = NULL;
        int r = k8s_client_new_kubectl(kubeconfig, context, &k, err);
        if (r < 0)
                return r;
        /* A pod Pod Security "restricted" admits, as a sandbox pod would be. */
        json_int_t uid = cfg->sidecar.driver_uid == 1000 ? 1002 : 1000;
        _cleanup_json_ json_t *pod = json_pack(
            "{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:{s:b, s:{s:b, s:I, s:I, s:I, s:{s:s}},"
            " s:[{s:s, s:s, s:[s,s], s:{s:b, s:b, s:{s:[s]}}}]}}",
            "apiVersion", "v1", "kind", "Pod", "metadata", "generateName", "hangar-test-injection-",
            "namespace", ns, "labels", cfg->selector_key, cfg->selector_value, "spec",
            "automountServiceAccountToken", 0, "securityContext", "runAsNonRoot", 1, "runAsUser",
            uid, "runAsGroup", uid, "fsGroup", uid, "seccompProfile", "type", "RuntimeDefault",
            "containers", "name", cfg->sidecar.agent_container, "image", image, "command", "sleep",
            "infinity", "securityContext", "allowPrivilegeEscalation", 0, "runAsNonRoot", 1,
            "capabilities", "drop", "ALL");
        _cleanup_free_ char *body = pod ? jsonx_dumps(pod, JSON_COMPACT) : NULL;
        _cleanup_strbuf_ strbuf_t path = {0};
        if (!body || strbuf_printf(&path, "/api/v1/namespaces/") < 0 || url_escape(&path, ns) < 0 ||
            strbuf_printf(&path, "/pods?dryRun=All&fieldManager=hangar-webhook-test") < 0)
                return -ENOMEM;
        long status = 0;
        _cleanup_json_ json_t *stored = NULL;
        r = k8s_request(k, "POST", path.data, NULL, body, &status, &stored, err);
        if (r < 0)
                return r;
        if (status != 201 && status != 200) {
                char buf[32];
                return error_set(err, -EIO,
                                 "the dry-run create of a sandbox pod in namespace %s was refused "
                                 "(HTTP %ld): %s",
                                 ns, status, k8s_status_message(stored, status, buf, sizeof(buf)));
        }
        if (!json_is_object(stored))
                return error_set(err, -EIO, "the dry-run create answered no pod");
        shape_values_t *values = NULL;
        if (shape_values_new(&cfg->sidecar, &values) < 0)
                return -ENOMEM;
        audit_verdict_t v;
        r = audit_pod(cfg, values, stored, &v);
        shape_values_free(values);
        if (r < 0)
                return r;
        const char *name = "";
        (void)jsonx_string(json_object_get(stored, "metadata"), "name", &name);
        if (v.state == AUDIT_CURRENT) {
                fprintf(out,
                        "ok: sandbox pod %s/%s (dry run) is stored with %s in the current shape\n",
                        ns, name, SHAPE_DRIVER_CONTAINER);
                return 0;
        }
        if (strcmp(v.code, "never-reviewed") == 0)
                error_set(err, -EINVAL,
                          "the dry-run sandbox pod came back without %s and without the %s "
                          "annotation: the API server did not call the webhook for it (is "
                          "namespace %s selected by the MutatingWebhookConfiguration's "
                          "namespaceSelector, is the webhook configuration there?)",
                          SHAPE_DRIVER_CONTAINER, SHAPE_ANNOTATION_STATUS, ns);
        else
                error_set(err, -EINVAL, "the dry-run sandbox pod is %s (%s): %s",
                          audit_state_name(v.state), v.code, v.reason);
        fprintf(out, "FAIL: %s\n", err->message);
        return 1;
}
