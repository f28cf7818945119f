#include "split.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fileio.h"
#include "jsonx.h"

static const char *const mode_names[] = {
    [SPLIT_OFF] = "off", [SPLIT_AUTO] = "auto", [SPLIT_REQUIRED] = "required"};
static const char *const verdict_names[] = {[VERDICT_REFUSED] = "refused",
                                            [VERDICT_SINGLE_USER] = "single-user",
                                            [VERDICT_SPLIT_ACTIVE] = "split-active"};

static int name_lookup(const char *const *names, size_t n, const char *s)
{
        for (size_t i = 0; s && i < n; i++)
                if (strcmp(s, names[i]) == 0)
                        return (int)i;
        return -EINVAL;
}

int split_mode_parse(const char *s, split_mode_t *ret)
{
        int i = name_lookup(mode_names, ARRAY_SIZE(mode_names), s);
        if (i < 0)
                return i;
        *ret = (split_mode_t)i;
        return 0;
}

const char *split_mode_name(split_mode_t m)
{
        return (unsigned)m < ARRAY_SIZE(mode_names) ? mode_names[m] : "?";
}

int split_verdict_parse(const char *s, verdict_t *ret)
{
        int i = name_lookup(verdict_names, ARRAY_SIZE(verdict_names), s);
        if (i < 0)
                return i;
        *ret = (verdict_t)i;
        return 0;
}

const char *split_verdict_name(verdict_t v)
{
        /* Anything out of range reads as the failing value. */
        return (unsigned)v < ARRAY_SIZE(verdict_names) ? verdict_names[v] : "refused";
}

int split_mode_from_env(split_mode_t *ret, hg_error_t *err)
{
        const char *s = getenv(SPLIT_MODE_ENV);
        if (!s || !*s) {
                *ret = SPLIT_MODE_DEFAULT;
                return 0;
        }
        if (split_mode_parse(s, ret) < 0)
                return error_set(err, -EINVAL, "%s=%.40s is not off, auto or required",
                                 SPLIT_MODE_ENV, s);
        return 0;
}

const char *split_gate_name(split_gate_t g)
{
        switch (g) {
        case SPLIT_GATE_SPLIT:
                return "split";
        case SPLIT_GATE_SINGLE_USER:
                return "single-user";
        case SPLIT_GATE_REFUSE:
        default:
                return "refused";
        }
}

/* The verdict's first reason as "code: detail", or a fallback. */
static void first_reason(json_t *verdict, char *buf, size_t size)
{
        json_t *reasons = json_object_get(verdict, "reasons");
        json_t *r = json_array_get(reasons, 0);
        const char *code = json_string_value(json_object_get(r, "code"));
        const char *detail = json_string_value(json_object_get(r, "detail"));
        if (code)
                snprintf(buf, size, "%s%s%s", code, detail ? ": " : "", detail ? detail : "");
        else
                snprintf(buf, size, "verdict-not-split: the probe's verdict gives no reason");
}

void split_gate_decide(split_mode_t mode, const char *verdict_path, split_decision_t *ret)
{
        split_decision_t d = {.gate = SPLIT_GATE_REFUSE};
        if (mode == SPLIT_OFF) {
                d.gate = SPLIT_GATE_SINGLE_USER;
                snprintf(d.reason, sizeof(d.reason), "mode-off: %s=off", SPLIT_MODE_ENV);
                *ret = d;
                return;
        }
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        _cleanup_json_ json_t *verdict = NULL;
        hg_error_t jerr = {0};
        int r = file_read_bounded(verdict_path, SPLIT_VERDICT_MAX, &text, &len);
        const char *name = NULL;
        verdict_t v = VERDICT_REFUSED;
        if (r < 0)
                snprintf(d.reason, sizeof(d.reason), "verdict-missing: %s: %s", verdict_path,
                         strerror(-r));
        else if (jsonx_load(text, len, 16, &verdict, &jerr) < 0 || !json_is_object(verdict))
                snprintf(d.reason, sizeof(d.reason), "verdict-malformed: %s: %s", verdict_path,
                         jerr.message[0] ? jerr.message : "not a JSON object");
        else if (!(name = json_string_value(json_object_get(verdict, "verdict"))) ||
                 split_verdict_parse(name, &v) < 0)
                snprintf(d.reason, sizeof(d.reason), "verdict-malformed: %s: no known \"verdict\"",
                         verdict_path);
        else if (v == VERDICT_SPLIT_ACTIVE) {
                d.gate = SPLIT_GATE_SPLIT;
                snprintf(d.reason, sizeof(d.reason), "split-active");
                *ret = d;
                return;
        } else
                first_reason(verdict, d.reason, sizeof(d.reason));
        d.gate = mode == SPLIT_AUTO ? SPLIT_GATE_SINGLE_USER : SPLIT_GATE_REFUSE;
        *ret = d;
}

/* A reason code as verdict_decide writes them: "spec-failed", "mode-off". */
static bool reason_code_ok(const char *s)
{
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > SPLIT_REASON_CODE_MAX)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
                        return false;
        return true;
}

static int check_reasons(json_t *reasons, hg_error_t *err)
{
        if (!json_is_array(reasons) || json_array_size(reasons) > SPLIT_REASONS_MAX)
                return error_set(err, -EINVAL, "\"reasons\" is not an array of at most %u",
                                 SPLIT_REASONS_MAX);
        size_t i;
        json_t *r;
        json_array_foreach (reasons, i, r) {
                json_t *detail = json_object_get(r, "detail");
                if (!json_is_object(r) || json_object_size(r) != (detail ? 2u : 1u) ||
                    !reason_code_ok(json_string_value(json_object_get(r, "code"))) ||
                    (detail && !json_is_string(detail)))
                        return error_set(err, -EINVAL,
                                         "reason %zu is not {\"code\": a-z0-9-, \"detail\": "
                                         "string}",
                                         i);
        }
        return 0;
}

int split_verdict_load(const char *text, size_t len, json_t **ret, verdict_t *ret_v,
                       hg_error_t *err)
{
        if (len > SPLIT_VERDICT_MAX)
                return error_set(err, -EFBIG, "the verdict is over %u bytes", SPLIT_VERDICT_MAX);
        _cleanup_json_ json_t *j = NULL;
        if (jsonx_load(text, len, 16, &j, err) < 0)
                return -EINVAL;
        split_mode_t mode;
        verdict_t v;
        json_t *reasons = json_object_get(j, "reasons");
        if (!json_is_object(j) || json_object_size(j) != 3)
                return error_set(err, -EINVAL,
                                 "not a verdict: an object of \"mode\", \"verdict\", \"reasons\"");
        if (split_mode_parse(json_string_value(json_object_get(j, "mode")), &mode) < 0)
                return error_set(err, -EINVAL, "\"mode\" is not off, auto or required");
        if (split_verdict_parse(json_string_value(json_object_get(j, "verdict")), &v) < 0)
                return error_set(err, -EINVAL,
                                 "\"verdict\" is not split-active, single-user or refused");
        int r = check_reasons(reasons, err);
        if (r < 0)
                return r;
        /* What verdict_decide can give, and nothing else: a split without a
         * reason against it, anything less with one, refused only under
         * required, off never split. */
        bool none = json_array_size(reasons) == 0;
        if ((v == VERDICT_SPLIT_ACTIVE) != none)
                return error_set(err, -EINVAL, "a %s verdict with %s reasons",
                                 split_verdict_name(v), none ? "no" : "some");
        if ((v == VERDICT_REFUSED) != (mode == SPLIT_REQUIRED && !none) ||
            (mode == SPLIT_OFF && v != VERDICT_SINGLE_USER))
                return error_set(err, -EINVAL, "a %s verdict cannot come of mode %s",
                                 split_verdict_name(v), split_mode_name(mode));
        *ret_v = v;
        *ret = j;
        j = NULL;
        return 0;
}
