#!/usr/bin/env bash
# The chart's `hangar-pod` matchCondition and its C twin agree (S10 of
# docs/research/guard-safe-by-default.md; webhook/admit/guardmatch.c).
# The real kube-apiserver evaluates the CEL of the chart's updates.* entry on
# each UPDATE below; whether it sent the UPDATE to the webhook is read twice,
# from its own counter (apiserver_admission_match_condition_exclusions_total
# grows by one for an UPDATE left out) and from the webhook's log (a review
# of that pod arrives). The same old and new pods (the pod read before, the
# dry run's answer after) go to `hangar-webhook match hangar-pod`, the C
# twin. Each row fails if the two disagree; the suite fails unless both
# answers occur. The webhook audits instead of refusing (guard.enforcement
# audit), so every dry run comes back with the pod it would store.
# usage: test_matchcondition.sh HANGAR_WEBHOOK TOOLS_BIN
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/doorslib.sh"
t_begin "the hangar-pod matchCondition: the API server's CEL against its C twin"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

# shellcheck disable=SC2119 # the default control plane
doors_up
# shellcheck disable=SC2119 # no settings beyond the environment's
HANGAR_GUARD_ENFORCEMENT=audit restart_webhook

plain() { # NAME [EXTRA_JSON merged]: a pod no webhook injects (no sandbox label)
        jq -n --arg name "$1" --arg ns $NS --argjson extra "${2:-{\}}" '{
                apiVersion: "v1", kind: "Pod", metadata: {name: $name, namespace: $ns},
                spec: {securityContext: {runAsUser: 1000, runAsGroup: 1000},
                       containers: [{name: "sandbox", image: "registry.example/agent-env:1.2"}]}} * $extra'
}
pod box | kubectl create -f - >/dev/null
plain plain | kubectl create -f - >/dev/null
plain reason-only '{"metadata": {"annotations": {"hangar.dev/driver-sidecar-reason": "forged"}}}' | kubectl create -f - >/dev/null
plain status-only '{"metadata": {"annotations": {"hangar.dev/driver-sidecar": "skipped"}}}' | kubectl create -f - >/dev/null
plain fake-driver '{"spec": {"containers": [{"name": "sandbox", "image": "registry.example/agent-env:1.2"},
        {"name": "hangar-driver", "image": "registry.example/agent-env:1.2"}]}}' | kubectl create -f - >/dev/null
plain init-driver '{"spec": {"initContainers": [{"name": "hangar-driver", "image": "registry.example/agent-env:1.2"}]}}' |
        kubectl create -f - >/dev/null
plain near-miss '{"metadata": {"annotations": {"hangar.dev/driver-sidecar-x": "injected", "hangar.dev/other": "1"}},
        "spec": {"containers": [{"name": "hangar-driver-2", "image": "registry.example/agent-env:1.2"}]}}' |
        kubectl create -f - >/dev/null
t_eq "the pods exist" 7 "$(kubectl get pods -n $NS -o name | wc -l)"
t_eq "box is injected" true \
        "$(kubectl get pod -n $NS box -o json | jq '[.spec.containers[].name] | index("hangar-driver") != null')"

excluded() {
        kubectl get --raw /metrics | grep -E '^apiserver_admission_match_condition_exclusions_total\{' |
                grep -F 'name="updates.driver-sidecar.hangar.dev"' | awk '{s += $NF} END {print s + 0}'
}
reviews_of() { # POD: the UPDATE reviews of POD the webhook logged so far
        jq -c --arg p "$1" 'select(.msg == "review" and .operation == "UPDATE" and .pod == $p)' webhook.log 2>/dev/null | wc -l
}

SEEN_TRUE=0
SEEN_FALSE=0
# row POD PATCH: the merge patch as a server-side dry run; the API server's
# verdict and the twin's on the same pods, compared.
row() {
        local pod=$1 patch=$2 x0 x1 r0 r1 cel twin
        kubectl get pod -n $NS "$pod" -o json >old.json
        x0=$(excluded)
        r0=$(reviews_of "$pod")
        if ! kubectl patch pod -n $NS "$pod" --type merge -p "$patch" --dry-run=server -o json >new.json 2>patch.err; then
                t_fail "$pod $patch: the dry run failed: $(head -c 200 patch.err)"
                return
        fi
        x1=$(excluded)
        # The webhook logs a review once it answered it; the API server has
        # its answer by now, so the line is there or never will be.
        r1=$(reviews_of "$pod")
        if [ $((x1 - x0)) = 1 ] && [ "$r1" = "$r0" ]; then
                cel=false
        elif [ "$x1" = "$x0" ] && [ "$r1" -gt "$r0" ]; then
                cel=true
        else
                t_fail "$pod $patch: the API server's counter moved by $((x1 - x0)) and the webhook logged $((r1 - r0)) reviews"
                return
        fi
        twin=$(jq -n --slurpfile o old.json --slurpfile n new.json '{request: {oldObject: $o[0], object: $n[0]}}' |
                "$WEBHOOK" match hangar-pod)
        t_eq "$pod $patch: the twin says what the CEL did ($cel)" "$cel" "$twin"
        if [ "$cel" = true ]; then SEEN_TRUE=$((SEEN_TRUE + 1)); else SEEN_FALSE=$((SEEN_FALSE + 1)); fi
}

for p in box plain reason-only status-only fake-driver init-driver near-miss; do
        row "$p" '{"metadata": {"labels": {"team": "a"}}}'
        row "$p" '{"metadata": {"annotations": {"note": "x"}}}'
        row "$p" '{"spec": {"activeDeadlineSeconds": 3600}}'
done
# The new pod's side: a record annotation added to (or taken from) a pod
# that had none, and the old pod's side: one taken away.
row plain '{"metadata": {"annotations": {"hangar.dev/driver-sidecar": "injected"}}}'
row plain '{"metadata": {"annotations": {"hangar.dev/driver-sidecar-reason": "x"}}}'
row plain '{"metadata": {"annotations": {"hangar.dev/driver-sidecar": ""}}}'
row reason-only '{"metadata": {"annotations": {"hangar.dev/driver-sidecar-reason": null}}}'
row box '{"metadata": {"annotations": {"hangar.dev/driver-sidecar": null, "hangar.dev/driver-sidecar-reason": null}}}'
row near-miss '{"metadata": {"annotations": {"hangar.dev/driver-sidecar-x": null}}}'
t_check "both answers occurred (the CEL sent $SEEN_TRUE updates, left out $SEEN_FALSE)" \
        test "$SEEN_TRUE" -ge 5 -a "$SEEN_FALSE" -ge 5
t_end
