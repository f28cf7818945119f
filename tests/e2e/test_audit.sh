#!/usr/bin/env bash
# `hangar-webhook audit` against a real kube-apiserver + etcd: sandbox pods
# created before the webhook was enabled (plain, privileged, carrying a forged
# annotation or a container of hangar's name, large enough that a page of
# them is refused whole), pods injected under an older configuration and
# under the current one, labelled pods in a namespace that has not opted in
# or that the webhook configuration leaves out (unguarded), copies carrying
# hangar-driver or hangar's record without the selector's label (unlabelled,
# exit 4), a namespace unlabelled under its running sandbox pods, and the
# audit's failures (no access, no such webhook configuration, a bad
# kubeconfig, a bad --scope), each with its exit status. (A driver that
# cannot start needs a kubelet: node_agent_sandbox.)
# usage: test_audit.sh HANGAR_WEBHOOK TOOLS_BIN
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "audit: stored sandbox pods against the current configuration (real kube-apiserver)"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH
CHART=$ROOT/charts/hangar-webhook
export HELM_CONFIG_HOME=$T_TMP/helm/config HELM_CACHE_HOME=$T_TMP/helm/cache HELM_DATA_HOME=$T_TMP/helm/data

t_control_plane
for ns in sbx other hangar-system; do kubectl create namespace "$ns" >/dev/null; done
kubectl label namespace sbx hangar.dev/injection=enabled >/dev/null # opted in to hangar (the chart's scope)

pod() { # NAMESPACE NAME [EXTRA_JSON merged into the pod]
        jq -n --arg ns "$1" --arg name "$2" --argjson extra "${3:-{\}}" '{
                apiVersion: "v1", kind: "Pod",
                metadata: {name: $name, namespace: $ns, labels: {"hangar.dev/sandbox": "true"}},
                spec: {containers: [{name: "sandbox", image: "registry.example/agent-env:1",
                        securityContext: {runAsUser: 1000, runAsGroup: 1000}}]}} * $extra'
}
create() { pod "$@" | kubectl create -f - >/dev/null 2>>create.err || t_fail "create $1/$2: $(tail -n 3 create.err)"; }
logged_create() { kubectl create -f "$1" >>create.err 2>&1; }

# ---- before the webhook exists -------------------------------------------------
create sbx before-plain
create sbx before-heavy '{"spec":{"containers":[{"name":"sandbox","image":"docker:dind","securityContext":{"privileged":true}}]}}'
create sbx forged '{"metadata":{"annotations":{"hangar.dev/driver-sidecar":"injected","hangar.dev/driver-sidecar-reason":"injected"}}}'
create sbx fake-driver '{"spec":{"containers":[{"name":"sandbox","image":"registry.example/agent-env:1"},{"name":"hangar-driver","image":"registry.example/agent-env:1"}]}}'
create sbx forged-driver '{"metadata":{"annotations":{"hangar.dev/driver-sidecar":"injected"}},"spec":{"containers":[{"name":"sandbox","image":"registry.example/agent-env:1"},{"name":"hangar-driver","image":"registry.example/agent-env:1"}]}}'
create sbx no-agent '{"spec":{"containers":[{"name":"worker","image":"registry.example/agent-env:1"}]}}'
create hangar-system own-ns
create kube-system sys-ns
pod sbx unlabelled | jq 'del(.metadata.labels)' | kubectl create -f - >/dev/null
# Copies of sandbox pods without the label: one with a container named
# hangar-driver, one with only hangar's record, in a namespace not opted in.
pod sbx copy-driver '{"spec":{"containers":[{"name":"sandbox","image":"registry.example/agent-env:1"},{"name":"hangar-driver","image":"registry.example/agent-env:1"}]}}' |
        jq 'del(.metadata.labels)' | kubectl create -f - >/dev/null
pod other copy-record '{"metadata":{"annotations":{"hangar.dev/driver-sidecar":"injected"}}}' |
        jq 'del(.metadata.labels)' | kubectl create -f - >/dev/null
# Nine pods of about 1 MiB each (a 1 MiB argument): a page of all of them
# (9 MiB) is more than the client takes in one answer (8 MiB), so the audit
# must ask for smaller pages and still see every one.
head -c 786432 /dev/zero | base64 -w0 >big.arg
for i in $(seq 1 9); do
        jq --rawfile a big.arg '.spec.containers[0].args = [$a]' <(pod sbx "big-$i") >big.json
        kubectl create -f big.json >/dev/null 2>>create.err || t_fail "create big-$i: $(tail -n 2 create.err)"
done

# ---- the webhook, locally on TLS, under an older configuration -------------------
"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 >/dev/null
PORT=$(t_free_port)
write_config() { # FILE COMMAND_JSON SIZE PROBES
        cat >"$1" <<CFG
driverSidecar: true
driver: {command: $2, probes: {enabled: $4}}
volumes: {ctl: {sizeLimit: $3}}
server: {address: 127.0.0.1, port: $PORT, certFile: $T_TMP/pki/tls.crt, keyFile: $T_TMP/pki/tls.key}
CFG
}
# The older sidecar: sleep as PID 1, so no ctl ping probes (today's default is serve with them).
write_config old.yaml '["sleep", "infinity"]' 64Mi false
write_config new.yaml '["hangar-driver", "serve"]' 32Mi true
start_webhook() { # CONFIG
        "$WEBHOOK" serve --config "$1" 2>>webhook.log &
        WEBHOOK_PID=$!
        t_cleanup_pid $WEBHOOK_PID
        t_wait_for "curl -sf --cacert pki/ca.crt https://127.0.0.1:$PORT/readyz >/dev/null" 10
}
start_webhook old.yaml || { cat webhook.log; exit 1; }
helm install hangar "$CHART" -n hangar-system --set webhook.url="https://127.0.0.1:$PORT/mutate" \
        --set webhook.caBundle="$(base64 -w0 pki/ca.crt)" --set driverSidecar.enabled=true >helm.log 2>&1 ||
        { cat helm.log; exit 1; }
MWC=hangar-hangar-webhook
# shellcheck disable=SC2317 # called through t_wait_for
injected_now() { # the dry-run create of a sandbox pod comes back with the driver's command $1
        pod sbx probe | kubectl create --dry-run=server -o json -f - 2>/dev/null |
                jq -e --arg c "$1" '.spec.containers[1].command[0] == $c' >/dev/null
}
t_check "webhook active with the older configuration" t_wait_for "injected_now sleep" 30
create sbx old-1
create sbx old-heavy '{"spec":{"containers":[{"name":"sandbox","image":"docker:dind","securityContext":{"privileged":true}}]}}'

# ---- the current configuration ----------------------------------------------------
t_signal TERM "$WEBHOOK_PID" && wait "$WEBHOOK_PID" 2>/dev/null
start_webhook new.yaml || { cat webhook.log; exit 1; }
t_check "webhook restarted with the current configuration" t_wait_for "injected_now hangar-driver" 10
create sbx new-1
t_eq "new-1 stored with the current driver" '["hangar-driver","serve"]' \
        "$(kubectl get pod -n sbx new-1 -o json | jq -c '.spec.containers[1].command')"

# A copy of new-1 as `kubectl get -o json` gives it, its label taken off:
# in shape, so the guard's CREATE check lets it in; only the audit finds it.
kubectl get pod -n sbx new-1 -o json | jq '.metadata |= {name: "copy-new", namespace, annotations,
        labels: (.labels | del(."hangar.dev/sandbox"))} | del(.status)' >copy-new.json
t_check "a copy of new-1 without the label is admitted now" logged_create copy-new.json

# ---- the audit ----------------------------------------------------------------------
audit() { # OUTPUT_FILE ARGS...: runs the audit, prints its exit status
        local out=$1
        shift
        "$WEBHOOK" audit --kubeconfig "$KUBECONFIG" "$@" >"$out" 2>"$out.err"
        echo $?
}
t_eq "audit -A (current configuration) exits 4: copies without the label" 4 "$(audit all.json --config new.yaml -A -o json)"
state() { jq -r --arg ns "$1" --arg n "$2" '.pods[] | select(.namespace == $ns and .name == $n) | "\(.state) \(.code)"' all.json; }
t_eq "before-plain: not injected, never reviewed" "not-injected never-reviewed" "$(state sbx before-plain)"
t_eq "before-heavy: the webhook would skip it now too (privileged)" "skipped privileged-container" "$(state sbx before-heavy)"
t_eq "forged (annotated injected, no driver): not injected" "not-injected marked-without-driver" "$(state sbx forged)"
t_eq "fake-driver (a container of hangar's name, never reviewed): denied" "denied conflict" "$(state sbx fake-driver)"
t_eq "forged-driver (annotation and a driver not of hangar's shape): stale" "stale shape" "$(state sbx forged-driver)"
t_eq "no-agent: denied (no agent container)" "denied no-agent-container" "$(state sbx no-agent)"
t_eq "old-1: injected by the older configuration: stale" "stale shape" "$(state sbx old-1)"
t_check "old-1's reason names what differs (the driver)" \
        bash -c "jq -e '.pods[] | select(.name == \"old-1\") | .reason | test(\"another configuration\") and test(\"driver\")' all.json >/dev/null"
t_eq "old-heavy: skipped at creation and now" "skipped privileged-container" "$(state sbx old-heavy)"
t_eq "new-1: current" "current already-injected" "$(state sbx new-1)"
t_eq "own-ns (release namespace, not opted in): unguarded" \
        "unguarded namespace-not-opted-in" "$(state hangar-system own-ns)"
t_eq "sys-ns (kube-system, not opted in): unguarded" \
        "unguarded namespace-not-opted-in" "$(state kube-system sys-ns)"
t_check "... the reason says how to opt in" \
        bash -c "jq -e '.pods[] | select(.name == \"own-ns\") | .reason | test(\"kubectl label namespace hangar-system hangar.dev/injection=enabled\")' all.json >/dev/null"
t_eq "--scope all (the chart's scope.mode all): exits 4 (the copies)" 4 \
        "$(audit scopeall.json --config new.yaml -A -o json --scope all)"
t_eq "... own-ns not injected" "not-injected never-reviewed" \
        "$(jq -r '.pods[] | select(.name == "own-ns") | "\(.state) \(.code)"' scopeall.json)"
t_eq "unlabelled pods are not sandbox pods: not listed" "" "$(state sbx unlabelled)"
t_eq "copy-driver (hangar-driver, no label): unlabelled" "unlabelled driver-without-label" "$(state sbx copy-driver)"
t_eq "copy-new (new-1 copied without its label): unlabelled" "unlabelled driver-without-label" "$(state sbx copy-new)"
t_eq "copy-record (the injected record, no label, a namespace not opted in): unlabelled" \
        "unlabelled record-without-label" "$(state other copy-record)"
t_check "... the reason names the label it lacks" \
        bash -c "jq -e '.pods[] | select(.name == \"copy-driver\") | .reason | test(\"not the label hangar.dev/sandbox=true\")' all.json >/dev/null"
t_eq "all nine 1 MiB pods judged (pages refused whole were asked again smaller)" 9 \
        "$(jq '[.pods[] | select(.name | startswith("big-")) | select(.state == "not-injected")] | length' all.json)"
t_eq "counts add up (20 sandbox pods, 3 copies)" "23 3" "$(jq -r '"\([.counts[]] | add) \(.counts.unlabelled)"' all.json)"
t_eq "nothing on stderr but nothing wrong" "" "$(cat all.json.err)"

# The release's namespace opted in by mistake: the webhooks still never see
# it (the chart's namespaceSelector leaves it out whatever its labels).
kubectl label namespace hangar-system hangar.dev/injection=enabled >/dev/null
t_eq "with the webhook configuration: exits 4 (the copies)" 4 \
        "$(audit wc.json --config new.yaml -A -o json --webhook-configuration "$MWC")"
state() { jq -r --arg ns "$1" --arg n "$2" '.pods[] | select(.namespace == $ns and .name == $n) | "\(.state) \(.code)"' wc.json; }
t_eq "own-ns, its namespace labelled: unguarded (the release namespace is never sent)" \
        "unguarded namespace-not-selected" "$(state hangar-system own-ns)"
t_eq "sys-ns: unguarded (not opted in)" "unguarded namespace-not-opted-in" "$(state kube-system sys-ns)"
kubectl label namespace hangar-system hangar.dev/injection- >/dev/null
t_eq "before-plain still not injected" "not-injected never-reviewed" "$(state sbx before-plain)"

t_eq "with the older configuration: exits 4" 4 "$(audit oldcfg.json --config old.yaml -n sbx -o json)"
state() { jq -r --arg n "$1" '.pods[] | select(.name == $n) | "\(.state) \(.code)"' oldcfg.json; }
t_eq "older configuration: old-1 current" "current already-injected" "$(state old-1)"
t_eq "older configuration: new-1 stale" "stale shape" "$(state new-1)"
t_eq "-n sbx: only that namespace" sbx "$(jq -r '[.pods[].namespace] | unique | join(",")' oldcfg.json)"

t_eq "table output exits 4" 4 "$(audit table.txt --config new.yaml -n sbx)"
t_check "table: a header and one line per pod needing action" \
        bash -c "head -n1 table.txt | grep -q '^NAMESPACE *NAME *STATE *CODE *REASON' && [ \$(grep -c '^sbx ' table.txt) = 17 ]"
t_check "table: current and skipped pods left out without --all" bash -c "! grep -Eq '^sbx +(new-1|before-heavy|old-heavy) ' table.txt"
t_check "table: a summary line" grep -q '^20 sandbox pods: 11 not-injected, 2 stale, 2 denied, 0 unguarded, 0 driver-failed, 2 unlabelled, 2 skipped, 0 excluded, 1 current$' table.txt
audit tableall.txt --config new.yaml -n sbx --all >/dev/null
t_check "--all lists the current pod too" grep -Eq '^sbx +new-1 +current ' tableall.txt

# Recreate what needs it (what an admin does after the audit): the audit then passes.
mapfile -t bigs < <(printf 'big-%s\n' $(seq 1 9))
kubectl delete pod -n sbx --wait=false before-plain forged fake-driver forged-driver no-agent old-1 copy-driver copy-new "${bigs[@]}" >/dev/null
t_check "pods deleted" t_wait_for "[ \$(kubectl get pods -n sbx -o name | wc -l) = 4 ]" 30
create sbx before-plain
t_eq "after recreating: the audit of sbx exits 0" 0 "$(audit clean.txt --config new.yaml -n sbx)"
t_check "after recreating: before-plain now current" \
        bash -c "'$WEBHOOK' audit --kubeconfig '$KUBECONFIG' --config new.yaml -n sbx -o json | jq -e '.pods[] | select(.name == \"before-plain\") | .state == \"current\"' >/dev/null"

# A namespace unlabelled while its sandbox pods run: they are unguarded from then on.
kubectl label namespace sbx hangar.dev/injection- >/dev/null
t_eq "sbx unlabelled under its pods: the audit exits 1" 1 "$(audit unlabelled.json --config new.yaml -n sbx -o json)"
t_eq "... the current pod is unguarded" "unguarded namespace-not-opted-in" \
        "$(jq -r '.pods[] | select(.name == "before-plain") | "\(.state) \(.code)"' unlabelled.json)"
t_eq "... a namespace label of another name opts it in (--scope)" 0 \
        "$(kubectl label namespace sbx team.example/hangar=on >/dev/null; audit relabelled.txt --config new.yaml -n sbx --scope team.example/hangar=on)"
kubectl label namespace sbx hangar.dev/injection=enabled >/dev/null

# ---- failures ----------------------------------------------------------------------
t_eq "no such webhook configuration: exits 3" 3 "$(audit err1.txt --config new.yaml -A --webhook-configuration nope)"
t_check "... saying it is not found" grep -q 'mutatingwebhookconfigurations/nope.*not found' err1.txt.err
# A user with no rights at all: the list is forbidden, and the audit says so.
TOKEN_USER=nobody
kubectl create serviceaccount "$TOKEN_USER" -n sbx >/dev/null 2>&1 || true
kubectl config view --raw --minify >nobody.kubeconfig
KUBECONFIG=nobody.kubeconfig kubectl config set-credentials nobody --token "$(kubectl create token "$TOKEN_USER" -n sbx 2>/dev/null || echo none)" >/dev/null
KUBECONFIG=nobody.kubeconfig kubectl config set-context --current --user nobody >/dev/null
"$WEBHOOK" audit --kubeconfig nobody.kubeconfig --config new.yaml -A >err2.txt 2>&1
t_eq "a user who may not list pods: exits 3" 3 "$?"
t_check "... with the API server's refusal" grep -Eq 'forbidden|Unauthorized' err2.txt
"$WEBHOOK" audit --kubeconfig /nonexistent --config new.yaml -A >err3.txt 2>&1
t_eq "a missing kubeconfig: exits 3" 3 "$?"
t_check "... naming it" grep -q /nonexistent err3.txt
"$WEBHOOK" audit --kubeconfig "$KUBECONFIG" -n sbx -A >/dev/null 2>&1
t_eq "-n with -A: usage, exits 2" 2 "$?"
"$WEBHOOK" audit --kubeconfig "$KUBECONFIG" -o yaml >/dev/null 2>&1
t_eq "-o yaml: usage, exits 2" 2 "$?"
for bad in "" "=enabled" "hangar.dev/injection" "bad key=x" "k=bad value"; do
        "$WEBHOOK" audit --kubeconfig "$KUBECONFIG" --scope "$bad" >badscope.out 2>&1
        t_eq "--scope '$bad': usage, exits 2" 2 "$?"
done
t_check "... saying what --scope takes" grep -q "scope must be all or KEY=VALUE" badscope.out

helm uninstall hangar -n hangar-system >/dev/null 2>&1
t_end
