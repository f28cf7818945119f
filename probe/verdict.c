#include "verdict.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "jsonx.h"

static void reason(json_t *reasons, const char *code, const char *detail)
{
        (void)json_array_append_new(reasons,
                                    json_pack("{s:s, s:s}", "code", code, "detail", detail));
}

/* The names (or codes) of the report's failed required checks, comma-joined. */
static void failed_names(json_t *report, const char *key, char *buf, size_t size)
{
        size_t used = 0, i;
        json_t *c;
        buf[0] = '\0';
        json_array_foreach (json_object_get(report, "checks"), i, c) {
                const char *status = "", *name = "";
                (void)jsonx_string(c, "status", &status);
                (void)jsonx_string(c, key, &name);
                json_t *required = json_object_get(c, "required");
                if (strcmp(status, "fail") != 0 || json_is_false(required))
                        continue;
                int n = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", name);
                if (n < 0 || (size_t)n >= size - used)
                        break;
                used += (size_t)n;
        }
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
        char code[64], detail[512], names[400];
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
        if (strcmp(result, "inconclusive") == 0) {
                (void)snprintf(code, sizeof(code), "%s-inconclusive", what);
                (void)snprintf(detail, sizeof(detail), "a required %s check could not be read",
                               what);
                reason(reasons, code, detail);
                return;
        }
        failed_names(report, name_key, names, sizeof(names));
        (void)snprintf(code, sizeof(code), "%s-failed", what);
        (void)snprintf(detail, sizeof(detail), "%s out of shape: %s", what,
                       names[0] ? names : result);
        reason(reasons, code, detail);
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
