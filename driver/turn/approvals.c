#include "approvals.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"

int approvals_init(approvals_t *a)
{
        approvals_t n = {0};
        n.items = calloc(APPROVALS_MAX, sizeof(approval_t));
        n.line = malloc(APPROVALS_LINE_MAX);
        if (!n.items || !n.line) {
                free(n.items);
                free(n.line);
                return -ENOMEM;
        }
        *a = n;
        return 0;
}

void approvals_free(approvals_t *a)
{
        for (size_t i = 0; a->items && i < a->n; i++)
                json_decref(a->items[i].request);
        free(a->items);
        free(a->line);
        *a = (approvals_t){0};
}

static approval_t *find(const approvals_t *a, const char *id)
{
        for (size_t i = 0; i < a->n; i++)
                if (strcmp(a->items[i].id, id) == 0)
                        return &a->items[i];
        return NULL;
}

/* -ENOMEM when the line could not be read for want of memory (counted in
 * lost: it may have been a request); 0 otherwise, a request or not. */
static int consider_line(approvals_t *a, approvals_request_fn fn, void *userdata)
{
        if (a->line_len == 0 || a->line[0] != '{')
                return 0;
        _cleanup_json_ json_t *j = NULL;
        int r = jsonx_load((const char *)a->line, a->line_len, 16, &j, NULL);
        if (r == -ENOMEM) {
                a->lost++;
                return r;
        }
        if (r < 0 || !json_is_object(j))
                return 0;
        const char *type = json_string_value(json_object_get(j, "type"));
        const char *id = json_string_value(json_object_get(j, "id"));
        if (!type || strcmp(type, "approval_request") != 0 || !id || !id[0] ||
            strlen(id) > APPROVALS_ID_MAX)
                return 0;
        /* Counted, never silently dropped: the driver reports both. */
        if (find(a, id)) {
                a->duplicates++;
                return 0;
        }
        if (a->n == APPROVALS_MAX) {
                a->over_limit++;
                return 0;
        }
        approval_t *ap = &a->items[a->n++];
        memcpy(ap->id, id, strlen(id) + 1);
        ap->request = json_incref(j);
        ap->state = APPROVAL_PENDING;
        if (fn)
                fn(userdata, ap->id, j);
        return 0;
}

int approvals_scan(approvals_t *a, const uint8_t *data, size_t n, approvals_request_fn fn,
                   void *userdata)
{
        int ret = 0;
        while (n > 0) {
                const uint8_t *nl = memchr(data, '\n', n);
                size_t len = nl ? (size_t)(nl - data) : n;
                /* Only a line that starts with '{' can be a request: others are
                 * skipped to their newline without a copy. */
                if (!a->line_overflow) {
                        if ((a->line_len == 0 && len > 0 && data[0] != '{') ||
                            len > APPROVALS_LINE_MAX - a->line_len)
                                a->line_overflow = true;
                        else {
                                memcpy(a->line + a->line_len, data, len);
                                a->line_len += len;
                        }
                }
                if (!nl)
                        return ret;
                if (!a->line_overflow && consider_line(a, fn, userdata) < 0)
                        ret = -ENOMEM;
                a->line_len = 0;
                a->line_overflow = false;
                data = nl + 1;
                n -= len + 1;
        }
        return ret;
}

char *approvals_response_line(const approvals_t *a, const char *id, bool approve)
{
        approval_t *ap = find(a, id);
        if (!ap || ap->state != APPROVAL_PENDING)
                return NULL;
        _cleanup_json_ json_t *j = json_pack("{s:s, s:s, s:s}", "type", "approval_response", "id",
                                             id, "decision", approve ? "approve" : "deny");
        char *text = j ? jsonx_dumps(j, JSON_COMPACT) : NULL;
        if (!text)
                return NULL;
        size_t len = strlen(text);
        char *line = realloc(text, len + 2);
        if (!line) {
                free(text);
                return NULL;
        }
        line[len] = '\n';
        line[len + 1] = '\0';
        return line;
}

int approvals_set_state(approvals_t *a, const char *id, approval_state_t state, const char *by)
{
        approval_t *ap = find(a, id);
        if (!ap)
                return -ENOENT;
        ap->state = state;
        snprintf(ap->by, sizeof(ap->by), "%s", state == APPROVAL_PENDING ? "" : by);
        return 0;
}

char *approvals_decide(approvals_t *a, const char *id, bool approve, const char *by)
{
        /* The line first: out of memory leaves the request pending, never
         * recorded as decided without a response for the harness. */
        char *line = approvals_response_line(a, id, approve);
        if (line)
                (void)approvals_set_state(a, id, approve ? APPROVAL_APPROVED : APPROVAL_DENIED, by);
        return line;
}

bool approvals_is_pending(const approvals_t *a, const char *id)
{
        approval_t *ap = find(a, id);
        return ap && ap->state == APPROVAL_PENDING;
}

size_t approvals_pending(const approvals_t *a)
{
        size_t n = 0;
        for (size_t i = 0; i < a->n; i++)
                n += a->items[i].state == APPROVAL_PENDING;
        return n;
}

json_t *approvals_json(const approvals_t *a)
{
        static const char *const names[] = {[APPROVAL_PENDING] = "pending",
                                            [APPROVAL_APPROVED] = "approved",
                                            [APPROVAL_DENIED] = "denied"};
        json_t *arr = json_array();
        for (size_t i = 0; arr && i < a->n; i++)
                json_array_append_new(arr,
                                      json_pack("{s:s, s:s, s:s, s:O}", "id", a->items[i].id,
                                                "state", names[a->items[i].state], "by",
                                                a->items[i].by, "request", a->items[i].request));
        return arr;
}
