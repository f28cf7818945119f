/* libFuzzer target: the doors' reviews (/validate) as anyone who can reach
 * the port would send them: UPDATEs with two pods, ephemeral containers,
 * CONNECT options, hostile userInfo. Beyond "no crash, no leak", every
 * well-formed review gets an answer that echoes its uid, is allowed exactly
 * when the decision is, carries no patch, and, when refused, a Failure
 * status whose message leads with "hangar <reason>:". The pod a port-forward
 * names is the review's own oldObject (so it is fuzzed too), or unreadable.
 * Every input is also answered in audit mode (enforce.h), which must give
 * the same decision except that a relaxable deny is admitted as audited,
 * with its reason, and a failure to decide is still refused.
 *
 * And the chart's `hangar-pod` matchCondition, through its C twin
 * (guardmatch.h): an UPDATE the condition leaves out never reaches the
 * webhook, so the guard must allow every one of them (S9 of the design
 * page). A refusal there would be a door the API server leaves open. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"
#include "cleanup.h"
#include "enforce.h"
#include "guardmatch.h"
#include "jsonx.h"
#include "settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The "stored pod": the review's oldObject if it has one, else unreadable. */
static int lookup(void *ctx, const char *ns, const char *name, json_t **ret, hg_error_t *err)
{
        json_t *old = json_object_get(json_object_get(ctx, "request"), "oldObject");
        if (!json_is_object(old))
                return error_set(err, -EIO, "no such pod");
        *ret = json_incref(old);
        return 0;
}

/* [0] enforces (the default), [1] audits. */
static webhook_settings_t *config_n(int n)
{
        static webhook_settings_t cfg[2];
        static int ready[2];
        if (!ready[n]) {
                hg_error_t err = {0};
                if (settings_init_defaults(&cfg[n]) < 0 ||
                    settings_set(&cfg[n],
                                 "guard.driverUsers=[\"system:serviceaccount:hangar:hangar\"]",
                                 &err) < 0 ||
                    settings_set(&cfg[n], "guard.driverGroups=[\"hangar-operators\"]", &err) < 0 ||
                    (n == 1 && settings_set(&cfg[n], "guard.enforcement=audit", &err) < 0))
                        abort();
                cfg[n].driver_sidecar = true;
                ready[n] = 1;
        }
        return &cfg[n];
}

static webhook_settings_t *config(void)
{
        return config_n(0);
}

/* An UPDATE of two pods that the chart's rules send (pods, resize,
 * ephemeralcontainers; status under its own entry, ANDed) and that the
 * hangar-pod condition leaves out: the guard must have allowed it. */
static void check_match_condition(json_t *doc, const mutate_result_t *decided)
{
        json_t *req = json_object_get(doc, "request");
        const char *op = json_string_value(json_object_get(req, "operation"));
        const char *resource =
            json_string_value(json_object_get(json_object_get(req, "resource"), "resource"));
        json_t *subj = json_object_get(req, "subResource");
        const char *sub = subj ? json_string_value(subj) : "";
        json_t *old = json_object_get(req, "oldObject"), *new = json_object_get(req, "object");
        if (!op || strcmp(op, "UPDATE") != 0 || !resource || strcmp(resource, "pods") != 0 ||
            !sub ||
            (sub[0] && strcmp(sub, "resize") != 0 && strcmp(sub, "ephemeralcontainers") != 0 &&
             strcmp(sub, "status") != 0) ||
            !json_is_object(old) || !json_is_object(new))
                return;
        if (!guardmatch_hangar_pod(old, new) && decided->decision == DECISION_DENY)
                abort();
}

/* The same input in audit mode: what enforce decided, relaxed only where
 * enforce.h says. */
static void check_audit_mode(const uint8_t *data, size_t size, json_t *doc, int enforce_r,
                             const mutate_result_t *enforced)
{
        admission_outcome_t o;
        hg_error_t err = {0};
        _cleanup_free_ char *resp = NULL;
        int r =
            admission_validate(config_n(1), (const char *)data, size, lookup, doc, &resp, &o, &err);
        if (r == -ENOMEM || enforce_r == -ENOMEM) {
                admission_outcome_free(&o);
                return;
        }
        if (r != enforce_r)
                abort();
        if (r == 0) {
                bool relaxed =
                    enforced->decision == DECISION_DENY && enforcement_relaxable(enforced->reason);
                mutate_decision_t want = relaxed ? DECISION_AUDITED : enforced->decision;
                if (o.result.decision != want || o.result.reason != enforced->reason)
                        abort();
                json_error_t jerr;
                json_t *answer = json_loads(resp, 0, &jerr);
                json_t *response = json_object_get(answer, "response");
                if (json_is_true(json_object_get(response, "allowed")) != (want != DECISION_DENY) ||
                    (relaxed && json_object_get(response, "warnings")))
                        abort();
                json_decref(answer);
        }
        admission_outcome_free(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        /* The lookup reads the same bytes through jansson, independently. */
        json_error_t jerr;
        json_t *doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
        admission_outcome_t o;
        hg_error_t err = {0};
        _cleanup_free_ char *resp = NULL;
        int r =
            admission_validate(config(), (const char *)data, size, lookup, doc, &resp, &o, &err);
        if (r == 0) {
                json_t *answer = json_loads(resp, 0, &jerr);
                json_t *response = json_object_get(answer, "response");
                const char *uid = NULL, *message = NULL;
                if (!response || jsonx_string(response, "uid", &uid) < 0 || strcmp(uid, o.uid) != 0)
                        abort();
                bool allowed = json_is_true(json_object_get(response, "allowed"));
                if (allowed != (o.result.decision != DECISION_DENY))
                        abort();
                if (json_object_get(response, "patch") || o.result.patch)
                        abort();
                if (!allowed) {
                        char prefix[96];
                        int w = snprintf(prefix, sizeof(prefix),
                                         "hangar %s:", mutate_reason_name(o.result.reason));
                        if (jsonx_string(json_object_get(response, "status"), "message", &message) <
                                0 ||
                            w < 0 || strncmp(message, prefix, (size_t)w) != 0)
                                abort();
                }
                json_decref(answer);
                check_match_condition(doc, &o.result);
        } else if (r == -EINVAL) {
                if (!err.message[0] || resp)
                        abort();
        } else if (r != -ENOMEM) {
                abort();
        }
        check_audit_mode(data, size, doc, r, &o.result);
        admission_outcome_free(&o);
        json_decref(doc);
        return 0;
}
