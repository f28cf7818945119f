#include "ownerevent.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "k8sname.h"
#include "strbuf.h"

#define EVENT_NAME_PREFIX "hangar-driver-failed."
#define EVENT_SOURCE      "hangar-webhook"

const char *owner_event_action_name(owner_event_action_t action)
{
        switch (action) {
        case OWNER_EVENT_CREATED:
                return "created";
        case OWNER_EVENT_UPDATED:
                return "updated";
        case OWNER_EVENT_NONE:
        default:
                return "none";
        }
}

/* The ownerReference marked controller: true, or NULL. */
static json_t *controller_owner(json_t *pod)
{
        size_t i;
        json_t *ref;
        json_array_foreach (json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i,
                            ref)
                if (json_is_true(json_object_get(ref, "controller")))
                        return ref;
        return NULL;
}

/* s cut to at most max bytes without splitting a UTF-8 character (jansson
 * holds valid UTF-8 only, so a continuation byte is never first). */
static size_t utf8_cut(const char *s, size_t max)
{
        size_t n = strlen(s);
        if (n <= max)
                return n;
        n = max;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
                n--;
        return n;
}

static void rfc3339(time_t t, char buf[static 32])
{
        struct tm tm;
        if (!gmtime_r(&t, &tm) || strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                (void)snprintf(buf, 32, "1970-01-01T00:00:00Z");
}

json_t *owner_event_build(json_t *pod, const char *message, time_t now, owner_event_t *ret,
                          hg_error_t *err)
{
        *ret = (owner_event_t){0};
        json_t *meta = json_object_get(pod, "metadata");
        const char *pod_name, *ns, *uid;
        if (jsonx_string(meta, "name", &pod_name) < 0 || jsonx_string(meta, "namespace", &ns) < 0 ||
            jsonx_string(meta, "uid", &uid) < 0 || !k8s_is_dns1123_label(ns) ||
            !k8s_is_dns1123_label(uid)) {
                error_set(err, -EINVAL,
                          "the pod has no name, namespace or uid as stored pods have");
                return NULL;
        }
        json_t *owner = controller_owner(pod);
        if (!owner) {
                error_set(err, -ENOENT, "pod %s/%s has no controller owner", ns, pod_name);
                return NULL;
        }
        const char *api, *kind, *name, *owner_uid;
        if (jsonx_string(owner, "apiVersion", &api) < 0 || jsonx_string(owner, "kind", &kind) < 0 ||
            jsonx_string(owner, "name", &name) < 0 || jsonx_string(owner, "uid", &owner_uid) < 0) {
                error_set(err, -EINVAL,
                          "pod %s/%s: its controller ownerReference lacks apiVersion, kind, "
                          "name or uid",
                          ns, pod_name);
                return NULL;
        }
        (void)snprintf(ret->kind, sizeof(ret->kind), "%s", kind);
        (void)snprintf(ret->name, sizeof(ret->name), "%s", name);
        char at[32];
        rfc3339(now, at);
        _cleanup_strbuf_ strbuf_t text = {0}, event_name = {0};
        if (strbuf_printf(&text, "pod %s: %s", pod_name, message) < 0 ||
            strbuf_printf(&event_name, EVENT_NAME_PREFIX "%s", uid) < 0)
                goto nomem;
        json_t *event = json_pack(
            "{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s%, s:s, s:{s:s},"
            " s:s, s:s, s:i}",
            "apiVersion", "v1", "kind", "Event", "metadata", "name", event_name.data, "namespace",
            ns, "involvedObject", "apiVersion", api, "kind", kind, "name", name, "namespace", ns,
            "uid", owner_uid, "reason", OWNER_EVENT_REASON, "message", text.data,
            utf8_cut(text.data, OWNER_EVENT_MESSAGE_MAX), "type", "Warning", "source", "component",
            EVENT_SOURCE, "firstTimestamp", at, "lastTimestamp", at, "count", 1);
        if (event)
                return event;
nomem:
        error_set(err, -ENOMEM, "out of memory");
        return NULL;
}

/* events/NAME's answer refused: err says what the identity lacks. */
static int refused(long status, json_t *body, const char *verb, const char *ns, hg_error_t *err)
{
        char buf[32];
        const char *why = k8s_status_message(body, status, buf, sizeof(buf));
        if (status == 401 || status == 403)
                return error_set(err, -EACCES,
                                 "%s an Event in namespace %s was refused (%s): the audit's "
                                 "identity needs create, get and patch on events there",
                                 verb, ns, why);
        return error_set(err, -EPROTO, "%s an Event in namespace %s: %s", verb, ns, why);
}

/* The Event at path is there already: count it once more, now. */
static int count_again(k8s_client_t *k, const char *path, json_t *event, const char *ns,
                       hg_error_t *err)
{
        long status = 0;
        _cleanup_json_ json_t *old = NULL;
        int r = k8s_request(k, "GET", path, NULL, NULL, &status, &old, err);
        if (r < 0)
                return r;
        if (status != 200)
                return refused(status, old, "reading", ns, err);
        json_int_t count = json_integer_value(json_object_get(old, "count"));
        _cleanup_json_ json_t *patch = json_pack(
            "{s:I, s:O, s:O}", "count", (count > 0 ? count : 1) + 1, "lastTimestamp",
            json_object_get(event, "lastTimestamp"), "message", json_object_get(event, "message"));
        _cleanup_free_ char *body = patch ? jsonx_dumps(patch, JSON_COMPACT) : NULL;
        if (!body)
                return error_set(err, -ENOMEM, "out of memory");
        _cleanup_json_ json_t *answer = NULL;
        r = k8s_request(k, "PATCH", path, "application/merge-patch+json", body, &status, &answer,
                        err);
        if (r < 0)
                return r;
        return status == 200 ? 0 : refused(status, answer, "updating", ns, err);
}

int owner_event_post(k8s_client_t *k, json_t *pod, const char *message, time_t now,
                     owner_event_t *ret, hg_error_t *err)
{
        hg_error_t built = {0};
        _cleanup_json_ json_t *event = owner_event_build(pod, message, now, ret, &built);
        if (!event) {
                if (built.code == -ENOENT)
                        return 0;
                if (err)
                        *err = built;
                return built.code;
        }
        json_t *meta = json_object_get(event, "metadata");
        const char *ns = json_string_value(json_object_get(meta, "namespace"));
        const char *name = json_string_value(json_object_get(meta, "name"));
        _cleanup_strbuf_ strbuf_t coll = {0}, one = {0};
        _cleanup_free_ char *body = jsonx_dumps(event, JSON_COMPACT);
        if (!body || strbuf_printf(&coll, "/api/v1/namespaces/%s/events", ns) < 0 ||
            strbuf_printf(&one, "%s/%s", coll.data, name) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        long status = 0;
        _cleanup_json_ json_t *answer = NULL;
        int r = k8s_request(k, "POST", coll.data, NULL, body, &status, &answer, err);
        if (r < 0)
                return r;
        if (status == 201 || status == 200) {
                ret->action = OWNER_EVENT_CREATED;
                return 0;
        }
        if (status != 409)
                return refused(status, answer, "creating", ns, err);
        r = count_again(k, one.data, event, ns, err);
        if (r < 0)
                return r;
        ret->action = OWNER_EVENT_UPDATED;
        return 0;
}
