#!/usr/bin/env bash
# Benchmark: hangar-webhook against Kyverno, the policy engine a cluster
# would use instead, with nginx's static answer as the ceiling, in one run.
#
# 1. A real kube-apiserver + etcd (scripts/control-plane.sh, with the
#    ServiceAccount admission plugin) with Kyverno's CRDs; Kyverno's admission controller runs as a local process against it
#    (kubeconfig, URL webhooks on 127.0.0.1), with the ClusterPolicy
#    bench/kyverno/policy.yaml. Both servers serve the same ECDSA P-256
#    certificate (hangar-webhook certs), Kyverno's through its TLS Secret.
# 2. Same stored pod: the benchmark's pod (bench/data/review-typical.json's
#    object) is created once through each (hangar's MutatingWebhookConfiguration
#    first, removed; then Kyverno's), fetched back and compared with a
#    normalising diff (server-set metadata dropped, keys sorted). Then the
#    timed answers themselves: each server's patch for the benchmark's review,
#    applied with kubectl patch --local, must give the same pod. Every
#    difference is printed (an annotation Kyverno added of its own, as
#    releases before 1.19 did, is named and then left out).
# 3. The bench/webhook.sh method: wrk posts that review over keep-alive
#    HTTPS at c=1/8/32 to hangar-webhook (/mutate), Kyverno (/mutate/fail,
#    the path its webhook configuration gives the API server) and nginx
#    (a static body of the webhook's answer), one after the other at each
#    concurrency; requests/s, p50, p99, then each process's peak RSS.
# In CI short (tests/bench: bench_kyverno, when given Kyverno). Needs the tool
# caches: scripts/k8s-tools.sh (kube-apiserver, etcd, kubectl) and
# scripts/kyverno-tools.sh (Kyverno, built if missing: a long build). All
# traffic stays on 127.0.0.1.
# usage: bench/kyverno.sh [PATH/TO/hangar-webhook] [SECONDS_PER_RUN]
#   HANGAR_K8S_BIN, HANGAR_KYVERNO_BIN: use these tool dirs instead of the caches.
#   HANGAR_BENCH_KEEP=1: keep the work directory (logs, stored pods).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
WEBHOOK=$(realpath "${1:-$ROOT/build/webhook/hangar-webhook}")
DURATION=${2:-10}
bench_need wrk nginx jq curl python3
[ -x "$WEBHOOK" ] || { echo "no hangar-webhook at $WEBHOOK"; exit 1; }
K8S_BIN=${HANGAR_K8S_BIN:-$("$ROOT/scripts/k8s-tools.sh" | tail -n 1)}
KYVERNO_BIN=${HANGAR_KYVERNO_BIN:-$("$ROOT/scripts/kyverno-tools.sh" | tail -n 1)}
KYVERNO=$KYVERNO_BIN/kyverno
CRDS=$KYVERNO_BIN/../crds
POLICY=$HERE/kyverno/policy.yaml
REVIEW=$HERE/data/review-typical.json
KUBECTL=$K8S_BIN/kubectl

TMP=$(mktemp -d /tmp/hangar-bench-kyverno.XXXXXX)
pids=()
cleanup() {
        local p
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        bench_nginx_stop "$TMP"
        for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
        HANGAR_K8S_BIN=$K8S_BIN "$ROOT/scripts/control-plane.sh" stop "$TMP/cp" >>"$TMP/cp.log" 2>&1 || true
        if [ "${HANGAR_BENCH_KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
die() { echo "bench/kyverno.sh: $*" >&2; exit 1; }

# ---- the control plane -------------------------------------------------------
# With the ServiceAccount admission plugin, as a cluster has it: it mounts the
# pod's token into a container a webhook added, on the API server's second
# round, and both must take it out of hangar-driver again.
HANGAR_K8S_BIN=$K8S_BIN "$ROOT/scripts/control-plane.sh" start "$TMP/cp" --service-accounts >"$TMP/cp.log" 2>&1 ||
        { cat "$TMP/cp.log"; die "control plane did not start"; }
export KUBECONFIG=$TMP/cp/kubeconfig
kc() { "$KUBECTL" --request-timeout 20s "$@"; }
kc apply --server-side -f "$CRDS/kyverno" -f "$CRDS/policies.kyverno.io" -f "$CRDS/reports" \
        -f "$CRDS/policyreport" >"$TMP/crds.log"
kc wait --for condition=established --timeout 60s crd --all >/dev/null
kc create namespace kyverno >/dev/null
kc create namespace agents >/dev/null
# No kube-controller-manager here: the account the plugin looks for, by hand.
kc create serviceaccount default -n agents >/dev/null
# The benchmark's pod asks for the gvisor RuntimeClass (admission checks it exists).
printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n' | kc create -f - >/dev/null

# One certificate for both servers (SAN 127.0.0.1: the webhook URLs).
"$WEBHOOK" certs --out-dir "$TMP/pki" --ip 127.0.0.1 >/dev/null
CA_B64=$(base64 -w0 "$TMP/pki/ca.crt")

# ---- hangar-webhook ------------------------------------------------------------
WPORT=$(free_port)
# The chart's defaults for the driver, spelled out (the policy has them).
cat >"$TMP/webhook.yaml" <<CFG
driverSidecar: true
driver: {command: [hangar-driver, serve], probes: {enabled: true}}
logLevel: warn
server: {address: 127.0.0.1, port: $WPORT, certFile: $TMP/pki/tls.crt, keyFile: $TMP/pki/tls.key}
CFG
"$WEBHOOK" serve --config "$TMP/webhook.yaml" 2>"$TMP/webhook.log" &
WPID=$!
pids+=("$WPID")
bench_wait 10 curl -sf --cacert "$TMP/pki/ca.crt" "https://127.0.0.1:$WPORT/readyz" || die "hangar-webhook not ready"

# ---- Kyverno ---------------------------------------------------------------------
# As the Helm chart runs the admission controller, minus what needs a pod
# (docs/benchmarks.md, "Kyverno", says what is off and why).
KPORT=$(free_port)
KMPORT=$(free_port)
KCRPORT=$(free_port)
kc create configmap kyverno -n kyverno \
        --from-literal=enableDefaultRegistryMutation=true \
        --from-literal=defaultRegistry=docker.io \
        --from-literal=generateSuccessEvents=false \
        --from-literal=excludeGroups=system:nodes \
        --from-literal=resourceFilters='[Event,*,*][*/*,kube-system,*][*/*,kube-public,*][*/*,kube-node-lease,*][Node,*,*][Node/?*,*,*][APIService,*,*][APIService/?*,*,*][TokenReview,*,*][SubjectAccessReview,*,*][SelfSubjectAccessReview,*,*][Binding,*,*][Pod/binding,*,*][ReplicaSet,*,*][ReplicaSet/?*,*,*][EphemeralReport,*,*][ClusterEphemeralReport,*,*]' \
        --from-literal=webhooks='{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kyverno"]}]}}' \
        >/dev/null
kc create configmap kyverno-metrics -n kyverno >/dev/null
# The pair it serves and the CA it puts into its webhook configurations.
kc create secret tls kyverno-svc.kyverno.svc.kyverno-tls-ca -n kyverno \
        --cert "$TMP/pki/ca.crt" --key "$TMP/pki/ca.key" >/dev/null
kc create secret tls kyverno-svc.kyverno.svc.kyverno-tls-pair -n kyverno \
        --cert "$TMP/pki/tls.crt" --key "$TMP/pki/tls.key" >/dev/null
KYVERNO_NAMESPACE=kyverno KYVERNO_SERVICEACCOUNT_NAME=kyverno-admission-controller \
        KYVERNO_ROLE_NAME=kyverno:admission-controller KYVERNO_DEPLOYMENT=kyverno-admission-controller \
        KYVERNO_POD_NAME=kyverno-admission-controller-bench KYVERNO_SVC=kyverno-svc \
        INIT_CONFIG=kyverno METRICS_CONFIG=kyverno-metrics \
        "$KYVERNO" \
        --kubeconfig "$KUBECONFIG" \
        --serverIP "127.0.0.1:$KPORT" \
        --webhookServerHost 127.0.0.1 --webhookServerPort "$KPORT" \
        --caSecretName kyverno-svc.kyverno.svc.kyverno-tls-ca \
        --tlsSecretName kyverno-svc.kyverno.svc.kyverno-tls-pair \
        --disableCertManagerController \
        --backgroundServiceAccountName system:serviceaccount:kyverno:kyverno-background-controller \
        --reportsServiceAccountName system:serviceaccount:kyverno:kyverno-reports-controller \
        --admissionReports=false \
        --omitEvents PolicyApplied,PolicySkipped \
        --metricsHost 127.0.0.1 --metricsPort "$KMPORT" \
        --controllerRuntimeMetricsAddress "127.0.0.1:$KCRPORT" \
        --loggingFormat text --v 2 \
        >"$TMP/kyverno.log" 2>&1 &
KYPID=$!
pids+=("$KYPID")
kyverno_ready() {
        kill -0 "$KYPID" 2>/dev/null || { tail -n 40 "$TMP/kyverno.log" >&2; die "kyverno exited"; }
        curl -sf --cacert "$TMP/pki/ca.crt" "https://127.0.0.1:$KPORT/health/readiness" >/dev/null
}
deadline=$((SECONDS + 180))
until kyverno_ready; do
        ((SECONDS < deadline)) || { tail -n 40 "$TMP/kyverno.log" >&2; die "kyverno not ready after 180 s"; }
        sleep 0.5
done

# ---- the same stored pod ---------------------------------------------------------
jq '.request.object | del(.metadata.managedFields, .metadata.uid, .metadata.creationTimestamp)' \
        "$REVIEW" >"$TMP/pod.json"
# dry_run_gives N: a dry-run create of the pod comes back with N containers
# (2: a webhook injected it; 1: none did).
dry_run_gives() {
        [ "$(kc create --dry-run=server -o json -f "$TMP/pod.json" 2>/dev/null | jq '.spec.containers | length')" = "$1" ]
}
# Server-set fields out, keys sorted; arrays keep their order (it is part of the shape).
normalise() {
        jq -S 'del(.metadata.name, .metadata.uid, .metadata.resourceVersion, .metadata.creationTimestamp,
                   .metadata.managedFields, .metadata.generation, .status)' "$1"
}

cat >"$TMP/hangar-mwc.yaml" <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: hangar-bench}
webhooks:
- name: driver-sidecar.hangar.dev
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 10
  matchPolicy: Equivalent
  reinvocationPolicy: IfNeeded
  rules:
  - {apiGroups: [""], apiVersions: [v1], resources: [pods], operations: [CREATE], scope: Namespaced}
  objectSelector: {matchLabels: {hangar.dev/sandbox: "true"}}
  namespaceSelector:
    matchExpressions:
    - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kyverno]}
  clientConfig: {url: "https://127.0.0.1:$WPORT/mutate", caBundle: "$CA_B64"}
EOF
kc apply -f "$TMP/hangar-mwc.yaml" >/dev/null
bench_wait 30 dry_run_gives 2 || die "the API server does not call hangar-webhook"
kc create -f "$TMP/pod.json" -o json >"$TMP/stored-hangar.json"
kc delete mutatingwebhookconfiguration hangar-bench >/dev/null
bench_wait 30 dry_run_gives 1 || die "the API server still calls hangar-webhook"

kc apply -f "$POLICY" >/dev/null
kc wait --for condition=Ready --timeout 120s clusterpolicy/hangar-driver-sidecar >/dev/null ||
        { tail -n 40 "$TMP/kyverno.log" >&2; die "policy not ready"; }
bench_wait 60 dry_run_gives 2 || { tail -n 40 "$TMP/kyverno.log" >&2; die "the API server does not call Kyverno"; }
kc create -f "$TMP/pod.json" -o json >"$TMP/stored-kyverno.json"
kc get mutatingwebhookconfigurations -o json >"$TMP/kyverno-mwc.json"

# Kyverno's own record of what it did (releases before 1.19 annotated
# mutated pods so), named and then dropped; anything else is a difference.
KY_ANNOTATION=policies.kyverno.io/last-applied-patches
compare() { # WHAT A.json B.json
        local a=$TMP/cmp-a.json b=$TMP/cmp-b.json extra
        normalise "$2" >"$a"
        normalise "$3" >"$b"
        extra=$(jq -r --arg k "$KY_ANNOTATION" '.metadata.annotations[$k] // empty' "$b")
        if [ -n "$extra" ]; then
                echo "$1: Kyverno adds the annotation $KY_ANNOTATION: $(tr '\n' ' ' <<<"$extra")"
                jq -S --arg k "$KY_ANNOTATION" 'del(.metadata.annotations[$k])' "$b" >"$b.tmp" && mv "$b.tmp" "$b"
        fi
        if diff -u --label hangar-webhook --label kyverno "$a" "$b" >"$TMP/cmp.diff"; then
                echo "$1: same pod otherwise"
        else
                echo "$1: DIFFERENT (- hangar-webhook, + kyverno):"
                cat "$TMP/cmp.diff"
                same=0
        fi
}
same=1
compare "stored pods (through the API server)" "$TMP/stored-hangar.json" "$TMP/stored-kyverno.json"

# The timed answers: each patch applied to the review's object (the object
# the patch was made against: a patch may touch what pod.json left out).
# Kyverno's path is the one its webhook configuration gives the API server
# for pods.
jq .request.object "$REVIEW" >"$TMP/review-object.json"
K_PATH=$(jq -r --arg port "$KPORT" '[.items[].webhooks[]? | select(.clientConfig.url // "" | contains("127.0.0.1:" + $port))
        | select(any(.rules[]?; any(.resources[]?; . == "pods" or . == "*")))
        | .clientConfig.url | sub("^https://[^/]*"; "")] | first // empty' "$TMP/kyverno-mwc.json")
[ -n "$K_PATH" ] || die "no webhook of Kyverno's for pods in its configurations ($TMP/kyverno-mwc.json)"
post() { curl -sf --cacert "$TMP/pki/ca.crt" -H 'Content-Type: application/json' --data-binary @"$REVIEW" "$1"; }
W_ANSWER=$(post "https://127.0.0.1:$WPORT/mutate")
K_ANSWER=$(post "https://127.0.0.1:$KPORT$K_PATH")
apply_answer() { # ANSWER OUT
        jq -r '.response.patch // empty' <<<"$1" | base64 -d >"$TMP/patch.json"
        [ -s "$TMP/patch.json" ] || die "no patch in the answer: $1"
        "$KUBECTL" patch --local -f "$TMP/review-object.json" --type=json --patch-file "$TMP/patch.json" -o json >"$2"
}
apply_answer "$W_ANSWER" "$TMP/answer-hangar.json"
apply_answer "$K_ANSWER" "$TMP/answer-kyverno.json"
compare "the benchmark's answers (patches applied with kubectl)" "$TMP/answer-hangar.json" "$TMP/answer-kyverno.json"
echo "patches: hangar-webhook $(jq -r .response.patch <<<"$W_ANSWER" | base64 -d | jq length) operations," \
        "Kyverno $(jq -r .response.patch <<<"$K_ANSWER" | base64 -d | jq length) (at $K_PATH)"
echo "Kyverno's answer otherwise: $(jq -c '.response | del(.patch, .uid)' <<<"$K_ANSWER")"
[ "$same" = 1 ] || echo "(the pods differ as shown: timing them anyway, the difference is the report's)"

# ---- nginx, the ceiling ------------------------------------------------------------
bench_nginx_start "$TMP" "$TMP/pki" "$W_ANSWER"
bench_wrk_script "$REVIEW" "$TMP/post.lua"

# CPU ticks (user + system) of PID and its threads so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
nginx_ticks() {
        local total=0 p
        for p in $(cat "$TMP/nginx.pid") $(pgrep -P "$(cat "$TMP/nginx.pid")"); do
                total=$((total + $(cpu_ticks "$p")))
        done
        echo "$total"
}
HZ=$(getconf CLK_TCK)
# timed URL CONNECTIONS TICKS_CMD...: wrk's "rps p50 p99", then the
# server's CPU per answered request in us (its ticks over the run / requests).
timed() {
        local t0 t1 out rps
        t0=$("${@:3}")
        out=$(run_wrk "$TMP/post.lua" "$DURATION" "$1" "$2")
        t1=$("${@:3}")
        rps=${out%% *}
        echo "$out $(awk -v t="$((t1 - t0))" -v hz="$HZ" -v r="$rps" -v d="$DURATION" \
                'BEGIN { if (r > 0) printf "%.0f", t / hz * 1e6 / (r * d); else print "n/a" }')"
}

k_idle=$(rss_of "$KYPID" VmRSS)
# Untimed warm-up of each server (Go's heap and the policy cache settle).
for url in "https://127.0.0.1:$WPORT/mutate" "https://127.0.0.1:$KPORT$K_PATH" "https://127.0.0.1:$NPORT/mutate"; do
        run_wrk "$TMP/post.lua" 2 "$url" 8 >/dev/null
done

echo
echo "hangar-webhook $("$WEBHOOK" version 2>/dev/null | head -n 1) vs Kyverno" \
        "$(sed -n 's/^kyverno=\([^ ]*\).*/\1/p' "$KYVERNO_BIN/../BUILD-INFO" 2>/dev/null) vs nginx, HTTPS keep-alive," \
        "${DURATION}s per run, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)," \
        "body $(wc -c <"$REVIEW") B, answers ${#W_ANSWER} B (hangar, nginx) / ${#K_ANSWER} B (Kyverno)"
printf '%-4s | %9s %9s %9s %5s %5s | %8s %8s %8s %5s | %8s %8s %8s %5s | %6s %6s %6s %5s\n' conc \
        "hangar/s" "kyverno/s" "nginx/s" "h/ng" "k/h" "h p50us" "k p50us" "ng p50us" "k/h" \
        "h p99us" "k p99us" "ng p99us" "k/h" "h cpu" "k cpu" "ng cpu" "k/h"
for c in 1 8 32; do
        w=$(timed "https://127.0.0.1:$WPORT/mutate" "$c" cpu_ticks "$WPID")
        k=$(timed "https://127.0.0.1:$KPORT$K_PATH" "$c" cpu_ticks "$KYPID")
        n=$(timed "https://127.0.0.1:$NPORT/mutate" "$c" nginx_ticks)
        read -r wr w50 w99 wc <<<"$w"
        read -r kr k50 k99 kc <<<"$k"
        read -r nr n50 n99 nc <<<"$n"
        printf '%-4s | %9s %9s %9s %5s %5s | %8s %8s %8s %5s | %8s %8s %8s %5s | %6s %6s %6s %5s\n' "$c" \
                "$wr" "$kr" "$nr" "$(ratio "$wr" "$nr")" "$(ratio "$kr" "$wr")" \
                "$w50" "$k50" "$n50" "$(ratio "$k50" "$w50")" "$w99" "$k99" "$n99" "$(ratio "$k99" "$w99")" \
                "$wc" "$kc" "$nc" "$(ratio "$kc" "$wc")"
done
echo "(cpu: the server's user+system CPU per answered request, us; $HZ ticks/s)"
wrss=$(rss_of "$WPID")
krss=$(rss_of "$KYPID")
nrss=$(bench_nginx_rss "$TMP")
echo "peak RSS: hangar-webhook $((wrss / 1024)) MiB ($wrss KiB), Kyverno $((krss / 1024)) MiB ($krss KiB; $((k_idle / 1024)) MiB" \
        "before the timed runs), nginx (all processes) $((nrss / 1024)) MiB ($nrss KiB); Kyverno/hangar $(ratio "$krss" "$wrss")"
kill -0 "$KYPID" 2>/dev/null || die "kyverno exited during the runs"
echo "Kyverno log: $(wc -l <"$TMP/kyverno.log") lines, $(grep -c '^E\|level=error\|"level":"error"' "$TMP/kyverno.log" || true) error lines"
