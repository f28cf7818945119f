#!/usr/bin/env bash
# Staged rollout through a real kube-apiserver: the guard's and injection
# conflicts' warn and audit modes (docs/operations.md). In warn mode a
# request the webhook would refuse is admitted and the client sees
# "Warning: hangar would deny (REASON)"; in audit mode it is admitted
# silently; in both the webhook logs and counts it, and the API server's
# audit log carries the decision. Back in enforce mode the same requests are
# refused. Requests are made as "mallory" (ordinary RBAC in the namespace).
# usage: test_rollout.sh HANGAR_WEBHOOK TOOLS_BIN
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/doorslib.sh"
t_begin "staged rollout: warn and audit modes through the real API server"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

# The API server's audit log: every pod request at Metadata level, which
# records the webhooks' audit annotations.
cat >audit-policy.yaml <<'YAML'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: "", resources: ["pods", "pods/exec", "pods/attach"]}]
  - level: None
YAML
doors_up --apiserver-arg "--audit-policy-file=$T_TMP/audit-policy.yaml" \
        --apiserver-arg "--audit-log-path=$T_TMP/audit.log"
pod box | kubectl create -f - >/dev/null
t_eq "the sandbox pod is injected" '["sandbox","hangar-driver"]' \
        "$(kubectl get pod -n $NS box -o json | jq -c '[.spec.containers[].name]')"
doors_wait

not_refused() { ! grep -q "denied the request" <<<"$1"; }
not_warned() { ! grep -q "Warning: hangar" <<<"$1"; }
created_silently() { grep -q "created" <<<"$1" && not_warned "$1"; }

# A sandbox pod whose volume takes hangar-home's name: an injection conflict.
conflicting() { # NAME
        pod "$1" | jq '.spec.volumes = [{name: "hangar-home", emptyDir: {}}]'
}
metric() { # DECISION REASON: the webhook's counter
        curl -sf --cacert pki/ca.crt "https://127.0.0.1:$PORT/metrics" |
                awk -v k="hangar_webhook_reviews_total{decision=\"$1\",reason=\"$2\"}" '$1 == k {print $2}'
}
logged() { # DECISION REASON: review lines logged with them
        jq -c --arg d "$1" --arg r "$2" 'select(.msg == "review" and .decision == $d and .reason == $r)' \
                webhook.log 2>/dev/null | wc -l
}
audited() { # ANNOTATION_VALUE: audit events carrying a hangar decision annotation with that value
        jq -c --arg v "$1" 'select([.annotations // {} | to_entries[] |
                select((.key | endswith("driver-sidecar.hangar.dev/decision")) and .value == $v)] |
                length > 0)' audit.log 2>/dev/null | wc -l
}

# --- enforce (the default): the baseline refusals ---
refused "set image of hangar-driver (enforce)" driver-changed \
        kubectl set image -n $NS pod/box hangar-driver=registry.example/evil:1 "${M[@]}"
out=$(conflicting c0 | kubectl create -f - 2>&1)
t_check "a conflicting sandbox pod is refused (enforce): $out" grep -q "denied the request.*hangar reserves" <<<"$out"

# --- warn ---
export HANGAR_GUARD_ENFORCEMENT=warn HANGAR_CONFLICT_ENFORCEMENT=warn
restart_webhook "logLevel: info"
out=$(kubectl set image -n $NS pod/box hangar-driver=registry.example/evil:1 "${M[@]}" 2>&1)
t_check "warn: set image of hangar-driver admitted ($out)" \
        not_refused "$out"
t_check "warn: the client is told what would have been refused" \
        grep -q "Warning: hangar would deny (driver-changed)" <<<"$out"
t_eq "warn: the change is stored" registry.example/evil:1 \
        "$(kubectl get pod -n $NS box -o jsonpath='{.spec.containers[?(@.name=="hangar-driver")].image}')"
t_eq "warn: counted as warned" 1 "$(metric warned driver-changed)"
t_eq "warn: logged as warned" 1 "$(logged warned driver-changed)"
out=$(conflicting c1 | kubectl create -f - 2>&1)
t_check "warn: the conflicting pod is created, with a warning ($out)" \
        grep -q "Warning: hangar would deny (conflict)" <<<"$out"
t_eq "warn: it runs without the sidecar, as a skip would" '["sandbox"]' \
        "$(kubectl get pod -n $NS c1 -o json | jq -c '[.spec.containers[].name]')"
t_eq "warn: the conflict counted" 1 "$(metric warned conflict)"

# --- audit ---
export HANGAR_GUARD_ENFORCEMENT=audit HANGAR_CONFLICT_ENFORCEMENT=audit
restart_webhook "logLevel: info"
out=$(kubectl annotate -n $NS pod box hangar.dev/driver-sidecar-reason=forged --overwrite "${M[@]}" 2>&1)
t_check "audit: rewriting hangar's record admitted ($out)" \
        not_refused "$out"
t_check "audit: no warning to the client" not_warned "$out"
t_eq "audit: counted as audited" 1 "$(metric audited hangar-metadata)"
out=$(conflicting c2 | kubectl create -f - 2>&1)
t_check "audit: the conflicting pod is created silently ($out)" \
        created_silently "$out"
t_eq "audit: the conflict counted" 1 "$(metric audited conflict)"
t_check "the API server's audit log carries the warned decisions" \
        t_wait_for "[ \"\$(audited warned)\" -ge 2 ]" 10
t_check "the API server's audit log carries the audited decisions" \
        t_wait_for "[ \"\$(audited audited)\" -ge 2 ]" 10

# --- the exec policy (a ValidatingAdmissionPolicy: no webhook call) follows
# guard.enforcement through its binding's validationActions ---
vap_refuses() { # captured first: grep -q ending early would fail the pipe (pipefail)
        local out
        out=$(kubectl exec -n "$NS" box -c hangar-driver "${M[@]}" -- true 2>&1)
        grep -q "hangar driver-exec" <<<"$out"
}
vap_lets_through() { ! vap_refuses; }
policy_audited() { # the API server's audit events of a pods/exec with the policy's failure noted
        jq -c 'select(.objectRef.subresource == "exec" and
                ((.annotations // {})["validation.policy.admission.k8s.io/validation_failure"] // "" |
                 contains("driver-exec")))' audit.log 2>/dev/null | wc -l
}
t_check "enforce: the policy refuses mallory's exec into hangar-driver" vap_refuses
helm upgrade hangar "$ROOT/charts/hangar-webhook" -n hangar-system --reuse-values \
        --set guard.enforcement=audit >helm-audit.log 2>&1 || cat helm-audit.log
t_eq "the exec policy's binding audits only" '["Audit"]' \
        "$(kubectl get validatingadmissionpolicybinding -l app.kubernetes.io/instance=hangar -o json |
                jq -c '[.items[] | select(.spec.policyName | endswith("-driver-exec")) | .spec.validationActions[]]')"
t_check "audit: mallory's exec into hangar-driver passes admission" t_wait_for vap_lets_through 30
t_check "audit: the API server's audit log notes the policy's failure" \
        t_wait_for "[ \"\$(policy_audited)\" -ge 1 ]" 10
helm upgrade hangar "$ROOT/charts/hangar-webhook" -n hangar-system --reuse-values \
        --set guard.enforcement=enforce >helm-enforce.log 2>&1 || cat helm-enforce.log
t_check "enforce again: the policy refuses the exec" t_wait_for vap_refuses 30

# --- back to enforce: the same requests refused again ---
unset HANGAR_GUARD_ENFORCEMENT HANGAR_CONFLICT_ENFORCEMENT
restart_webhook "logLevel: info"
refused "set image of hangar-driver (enforce again)" driver-changed \
        kubectl set image -n $NS pod/box hangar-driver=registry.example/evil:2 "${M[@]}"
out=$(conflicting c3 | kubectl create -f - 2>&1)
t_check "a conflicting sandbox pod is refused again: $out" grep -q "denied the request.*hangar reserves" <<<"$out"
t_end
