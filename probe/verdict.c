#include "verdict.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "jsonx.h"

/* The agent's API credentials get reasons of their own: the fix is in RBAC
 * (docs/probe.md, "RBAC"), not in the pod. */
#define CREDENTIALS_CHECK "credentials.service_account_token"

static void reason(json_t *reasons, const char *code, const char *detail)
{
        (void)json_array_append_new(reasons,
                                    json_pack("{s:s, s:s}", "code", code, "detail", detail));
}

/* Appends text to buf (comma-separated), as much as fits. */
static void join(char *buf, size_t size, size_t *used, const char *text)
{
        int n = snprintf(buf + *used, size - *used, "%s%s", *used ? ", " : "", text);
        if (n > 0)
                *used = (size_t)n >= size - *used ? size - 1 : *used + (size_t)n;
}

static bool is_credentials(json_t *c)
{
        const char *name;
        return jsonx_string(c, "name", &name) == 0 && strcmp(name, CREDENTIALS_CHECK) == 0;
}

/* The names (or codes) of the report's failed required checks, comma-joined,
 * and whether any other required check is not a pass; the credentials
 * check left out when skip_credentials. */
static void failed_names(json_t *report, const char *key, bool skip_credentials, char *buf,
                         size_t size, bool *ret_unknown)
{
        size_t used = 0, i;
        json_t *c;
        buf[0] = '\0';
        *ret_unknown = false;
        json_array_foreach (json_object_get(report, "checks"), i, c) {
                const char *status = "", *name = "";
                (void)jsonx_string(c, "status", &status);
                (void)jsonx_string(c, key, &name);
                json_t *required = json_object_get(c, "required");
                if (json_is_false(required) || (skip_credentials && is_credentials(c)))
                        continue;
                if (strcmp(status, "fail") == 0)
                        join(buf, size, &used, name);
                else if (strcmp(status, "pass") != 0)
                        *ret_unknown = true;
        }
}

/* The agent report's credentials check: exactly one, required (a report
 * without it comes from a probe that did not look, and a "required": false
 * would take it out of the result). NULL if not so. */
static json_t *credentials_check(json_t *report)
{
        json_t *found = NULL, *c;
        size_t i;
        json_array_foreach (json_object_get(report, "checks"), i, c) {
                if (!is_credentials(c))
                        continue;
                if (found)
                        return NULL;
                found = c;
        }
        return found && json_is_true(json_object_get(found, "required")) ? found : NULL;
}

/* What the credentials check says, for a reason's detail: the permissions
 * each failing token has, or why a token could not be judged. */
static void credentials_detail(json_t *check, bool failed, char *buf, size_t size)
{
        size_t used = 0, i, j;
        json_t *t, *e;
        buf[0] = '\0';
        json_t *observed = json_object_get(check, "observed");
        json_array_foreach (json_object_get(observed, "tokens"), i, t) {
                const char *status = "", *source = "?", *user = NULL, *why = NULL;
                (void)jsonx_string(t, "status", &status);
                (void)jsonx_string(t, "source", &source);
                (void)jsonx_string(t, "user", &user);
                char head[512];
                (void)snprintf(head, sizeof(head), "%s%s%s%s", source, user ? " (" : "",
                               user ? user : "", user ? ")" : "");
                if (failed && strcmp(status, "fail") == 0) {
                        char line[1024];
                        size_t lused = 0;
                        line[0] = '\0';
                        json_array_foreach (json_object_get(t, "granted"), j, e)
                                if (json_is_string(e))
                                        join(line, sizeof(line), &lused, json_string_value(e));
                        char item[1600];
                        (void)snprintf(item, sizeof(item), "%s may: %s", head, line);
                        join(buf, size, &used, item);
                } else if (!failed && strcmp(status, "pass") != 0) {
                        if (jsonx_string(t, "reason", &why) < 0) {
                                e = json_array_get(json_object_get(t, "unknown"), 0);
                                (void)jsonx_string(e, "reason", &why);
                        }
                        char item[1600];
                        (void)snprintf(item, sizeof(item), "%s: %s", head,
                                       why ? why : "not judged");
                        join(buf, size, &used, item);
                }
        }
        const char *search_error;
        if (!failed && jsonx_string(observed, "search_error", &search_error) == 0)
                join(buf, size, &used, search_error);
        if (!buf[0])
                (void)snprintf(buf, size, "%s is %s", CREDENTIALS_CHECK,
                               failed ? "fail" : "unknown");
}

/* What a report's required checks add up to, whatever its "result" says
 * (spec findings carry no "required": all of them are). */
static const char *result_of_checks(json_t *checks)
{
        bool failed = false, unknown = false;
        size_t i;
        json_t *c;
        json_array_foreach (checks, i, c) {
                const char *status = "";
                (void)jsonx_string(c, "status", &status);
                if (json_is_false(json_object_get(c, "required")))
                        continue;
                if (strcmp(status, "fail") == 0)
                        failed = true;
                else if (strcmp(status, "pass") != 0)
                        unknown = true;
        }
        return failed ? "fail" : unknown ? "inconclusive" : "pass";
}

/* A report fit to be judged: from the role it is given as, with checks that
 * add up to its result. Anything else (swapped or doctored reports) says
 * why in detail. */
static bool report_valid(json_t *report, const char *what, const char *result, char *detail,
                         size_t size)
{
        const char *role = NULL;
        json_t *checks = json_object_get(report, "checks");
        bool in_container = strcmp(what, "spec") != 0;
        if (in_container && (jsonx_string(report, "role", &role) < 0 || strcmp(role, what) != 0)) {
                (void)snprintf(detail, size, "the %s report is from role \"%s\"", what,
                               role ? role : "(none)");
                return false;
        }
        if (!in_container && json_object_get(report, "role")) {
                (void)snprintf(detail, size, "the spec report is a container's report");
                return false;
        }
        if (!json_is_array(checks) || json_array_size(checks) == 0) {
                (void)snprintf(detail, size, "the %s report has no checks", what);
                return false;
        }
        if (strcmp(what, "agent") == 0 && !credentials_check(report)) {
                (void)snprintf(detail, size,
                               "the agent report has no required %s check (written by an older "
                               "probe?)",
                               CREDENTIALS_CHECK);
                return false;
        }
        const char *computed = result_of_checks(checks);
        if (strcmp(computed, result) != 0) {
                (void)snprintf(detail, size, "the %s report says %s but its checks say %s", what,
                               result, computed);
                return false;
        }
        return true;
}

/* Adds the reasons one report gives. */
static void judge(json_t *reasons, json_t *report, const char *what, const char *name_key)
{
        char code[64], detail[1024], names[400];
        const char *result = NULL;
        if (!report || jsonx_string(report, "result", &result) < 0) {
                (void)snprintf(code, sizeof(code), "%s-report-missing", what);
                (void)snprintf(detail, sizeof(detail), "no readable %s report", what);
                reason(reasons, code, detail);
                return;
        }
        if (!report_valid(report, what, result, detail, sizeof(detail))) {
                (void)snprintf(code, sizeof(code), "%s-report-invalid", what);
                reason(reasons, code, detail);
                return;
        }
        if (strcmp(result, "pass") == 0)
                return;
        bool agent = strcmp(what, "agent") == 0, unknown = false;
        size_t before = json_array_size(reasons);
        failed_names(report, name_key, agent, names, sizeof(names), &unknown);
        if (names[0]) {
                (void)snprintf(code, sizeof(code), "%s-failed", what);
                (void)snprintf(detail, sizeof(detail), "%s out of shape: %s", what, names);
                reason(reasons, code, detail);
        } else if (unknown) {
                (void)snprintf(code, sizeof(code), "%s-inconclusive", what);
                (void)snprintf(detail, sizeof(detail), "a required %s check could not be read",
                               what);
                reason(reasons, code, detail);
        }
        json_t *creds = agent ? credentials_check(report) : NULL;
        const char *status = "pass";
        (void)jsonx_string(creds, "status", &status);
        if (strcmp(status, "pass") != 0) {
                bool failed = strcmp(status, "fail") == 0;
                credentials_detail(creds, failed, detail, sizeof(detail));
                reason(reasons,
                       failed ? "agent-credentials-failed" : "agent-credentials-inconclusive",
                       detail);
        }
        if (json_array_size(reasons) == before) { /* never a non-pass without a reason */
                (void)snprintf(code, sizeof(code), "%s-failed", what);
                (void)snprintf(detail, sizeof(detail), "%s report says %s", what, result);
                reason(reasons, code, detail);
        }
}

json_t *verdict_decide(split_mode_t mode, json_t *spec, json_t *agent, json_t *driver,
                       verdict_t *ret)
{
        json_t *reasons = json_array();
        if (!reasons)
                return NULL;
        verdict_t v;
        if (mode == SPLIT_OFF) {
                reason(reasons, "mode-off", "HANGAR_UID_SPLIT=off: turns run single-user");
                v = VERDICT_SINGLE_USER;
        } else {
                judge(reasons, spec, "spec", "code");
                judge(reasons, agent, "agent", "name");
                judge(reasons, driver, "driver", "name");
                if (json_array_size(reasons) == 0)
                        v = VERDICT_SPLIT_ACTIVE;
                else
                        v = mode == SPLIT_REQUIRED ? VERDICT_REFUSED : VERDICT_SINGLE_USER;
        }
        *ret = v;
        return json_pack("{s:s, s:s, s:o}", "mode", split_mode_name(mode), "verdict",
                         split_verdict_name(v), "reasons", reasons);
}
