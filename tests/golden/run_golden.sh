#!/usr/bin/env bash
# Golden tests: pod manifests in, stored pods out. For each case under cases/:
#   1. kubectl reads pod.yaml (Kubernetes' own YAML decoder) into JSON;
#   2. it is wrapped in an AdmissionReview (review.conf may set apiVersion,
#      operation, dryRun) and answered by `hangar-webhook review`;
#   3. the answer's patch is applied with `kubectl patch --local --type=json`
#      (the API server's JSON Patch library), and the result must equal
#      expected.json; a deny must carry expected-deny.txt in its message;
#   4. `hangar-webhook inject` must print the same pod as step 3;
#   5. reinvocation: reviewing the patched pod again must change nothing.
# usage: run_golden.sh HANGAR_WEBHOOK KUBECTL [--update]
WEBHOOK=$(realpath "$1")
KUBECTL=${2:-}
UPDATE=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "golden pods (kubectl patch --local applies the webhook's patches)"

if [ -z "$KUBECTL" ] || [ ! -x "$KUBECTL" ]; then
        t_fail "kubectl not found at '$KUBECTL': run scripts/k8s-tools.sh"
        t_end
fi
# kubectl patch --local needs no cluster, but it must not pick one up either.
export KUBECONFIG=/dev/null

review_of() { # POD_JSON CONF UID
        local api=admission.k8s.io/v1 op=CREATE dry=false
        if [ -f "$2" ]; then
                while IFS='=' read -r k v; do
                        case $k in
                        apiVersion) api=$v ;;
                        operation) op=$v ;;
                        dryRun) dry=$v ;;
                        esac
                done <"$2"
        fi
        jq -c --arg api "$api" --arg op "$op" --argjson dry "$dry" --arg uid "$3" '{
                apiVersion: $api, kind: "AdmissionReview",
                request: {uid: $uid, kind: {group: "", version: "v1", kind: "Pod"},
                          resource: {group: "", version: "v1", resource: "pods"},
                          operation: $op, namespace: "default", dryRun: $dry,
                          object: .}}' "$1"
}

# Applies the patch in review answer $1 to pod $2 with kubectl; prints the pod.
apply_answer() {
        local patch
        patch=$(jq -r '.response.patch // empty' "$1" | base64 -d)
        if [ -z "$patch" ]; then
                jq -S . "$2"
        else
                "$KUBECTL" patch --local -f "$2" --type=json -p "$patch" -o json | jq -S .
        fi
}

for dir in "$HERE"/cases/*/; do
        name=$(basename "$dir")
        work=$T_TMP/$name
        mkdir -p "$work"
        config=$dir/config.yaml
        [ -f "$config" ] || config=$HERE/default-config.yaml
        conf=$dir/review.conf

        if ! "$KUBECTL" patch --local -f "$dir/pod.yaml" --type=json -p '[]' -o json >"$work/pod.json" 2>"$work/kubectl.err"; then
                t_fail "$name: kubectl cannot read pod.yaml: $(cat "$work/kubectl.err")"
                continue
        fi
        uid="golden-$name"
        review_of "$work/pod.json" "$conf" "$uid" >"$work/review.json"
        if ! "$WEBHOOK" review --config "$config" <"$work/review.json" >"$work/answer.json" 2>"$work/review.err"; then
                t_fail "$name: review failed: $(cat "$work/review.err")"
                continue
        fi
        t_eq "$name: uid echoed" "$uid" "$(jq -r .response.uid "$work/answer.json")"
        t_eq "$name: answered in the request's apiVersion" \
                "$(jq -r .apiVersion "$work/review.json")" "$(jq -r .apiVersion "$work/answer.json")"

        if [ -f "$dir/expected-deny.txt" ]; then
                t_eq "$name: denied" false "$(jq -r .response.allowed "$work/answer.json")"
                msg=$(jq -r .response.status.message "$work/answer.json")
                t_check "$name: deny says what clashed ($msg)" grep -qF -- "$(cat "$dir/expected-deny.txt")" <<<"$msg"
                t_check "$name: no patch with a deny" test "$(jq -r '.response.patch // "none"' "$work/answer.json")" = none
                if "$WEBHOOK" inject -f "$dir/pod.yaml" --config "$config" >/dev/null 2>"$work/inject.err"; then
                        t_fail "$name: inject accepted a pod the webhook denies"
                else
                        t_check "$name: inject fails with a one-line error" test "$(wc -l <"$work/inject.err")" -eq 1
                fi
                continue
        fi

        t_eq "$name: allowed" true "$(jq -r .response.allowed "$work/answer.json")"
        if ! apply_answer "$work/answer.json" "$work/pod.json" >"$work/out.json" 2>"$work/patch.err"; then
                t_fail "$name: kubectl could not apply the patch: $(cat "$work/patch.err")"
                continue
        fi
        if [ "$UPDATE" = --update ]; then
                cp "$work/out.json" "$dir/expected.json"
        fi
        if [ ! -f "$dir/expected.json" ]; then
                t_fail "$name: no expected.json (run with --update after checking the output)"
                continue
        fi
        t_check "$name: patched pod equals expected.json" diff -u "$dir/expected.json" "$work/out.json"

        # The offline command takes the same path as the server, and forces
        # injection on; compare where the server's configuration has it on too.
        op=$(grep -s '^operation=' "$conf" | cut -d= -f2)
        if grep -q 'driverSidecar: true' "$config" && [ "${op:-CREATE}" = CREATE ]; then
                if "$WEBHOOK" inject -f "$dir/pod.yaml" --config "$config" 2>/dev/null | jq -S . >"$work/inject.json"; then
                        t_check "$name: inject prints the same pod" diff -u "$work/out.json" "$work/inject.json"
                else
                        t_fail "$name: inject failed"
                fi
        fi

        # Reinvocation: the API server may call again with the patched pod.
        review_of "$work/out.json" "$conf" "$uid-again" >"$work/review2.json"
        "$WEBHOOK" review --config "$config" <"$work/review2.json" >"$work/answer2.json"
        t_eq "$name: reinvocation adds nothing" none "$(jq -r '.response.patch // "none"' "$work/answer2.json")"
        t_eq "$name: reinvocation allowed" true "$(jq -r .response.allowed "$work/answer2.json")"
done

# Two hangar.dev/agent-container keys in one pod (no YAML decoder would
# write them, a hostile client can): the review is refused whole, never
# read as either value.
dup='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"dup",'
dup+='"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},'
dup+='"operation":"CREATE","namespace":"default","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p",'
dup+='"labels":{"hangar.dev/sandbox":"true"},"annotations":{"hangar.dev/agent-container":"sandbox",'
dup+='"hangar.dev/agent-container":"hangar-driver"}},"spec":{"containers":[{"name":"sandbox","image":"x"}]}}}}'
if printf '%s' "$dup" | "$WEBHOOK" review --config "$HERE/default-config.yaml" >"$T_TMP/dup.out" 2>"$T_TMP/dup.err"; then
        t_fail "a review with two hangar.dev/agent-container keys was answered: $(cat "$T_TMP/dup.out")"
else
        t_check "two hangar.dev/agent-container keys: the review is refused ($(cat "$T_TMP/dup.err"))" \
                grep -qF "duplicate object key" "$T_TMP/dup.err"
fi
t_end
