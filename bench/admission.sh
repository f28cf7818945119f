#!/usr/bin/env bash
# Benchmark: what hangar adds to the API server's work, against the API
# server's own cost of calling a webhook, on a real control plane
# (scripts/control-plane.sh: etcd + kube-apiserver, no node). No pass or fail.
#
# (a) Pod create latency, timed per create by bench/admissionapi.py (one
#     process, one keep-alive HTTPS connection with the admin client cert):
#     the same labelled sandbox pod created
#       - with no webhook registered (the floor),
#       - with a static-answer webhook: nginx (Debian's, with its njs
#         module to echo the review's uid, which the API server checks)
#         returning hangar's own patch for this pod, registered as the chart
#         registers hangar's mutating webhook: the API server's own cost of
#         one webhook call and of applying the patch,
#       - with hangar as the chart installs it (URL mode: the mutating
#         webhook and the guard's validating entries, on the same port).
#     The added latency of each is its figure minus the floor; hangar's
#     against the static webhook's says how close hangar comes to the cost
#     the API server imposes on any webhook.
# (b) Exec latency into a namespace that did not opt in to hangar, with and
#     without the chart installed: an exec request on a pod that is never
#     scheduled passes admission, then fails for want of a node (400), so the
#     figure is the API server's path up to the node: what hangar's guard
#     adds to everyone else's execs.
#
# usage: bench/admission.sh BUILD_DIR
#   BENCH_CREATES (300), BENCH_EXECS (300). The short run CI makes
#   (tests/bench): BENCH_CREATES=5 BENCH_EXECS=5.
#   HANGAR_K8S_BIN: kube-apiserver, etcd, kubectl and helm from there
#   (default: scripts/k8s-tools.sh's cache).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$(realpath "${1:?usage: bench/admission.sh BUILD_DIR}")
CREATES=${BENCH_CREATES:-300}
EXECS=${BENCH_EXECS:-300}
WEBHOOK=$BUILD/webhook/hangar-webhook
HANGAR_ID=system:serviceaccount:hangar:hangar
NS=bench-sandbox
OTHER=bench-other
NJS=/usr/lib/nginx/modules/ngx_http_js_module.so
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
bench_need nginx jq curl python3
[ -x "$WEBHOOK" ] || { echo "missing $WEBHOOK: ninja -C $BUILD hangar-webhook"; exit 1; }
[ -f "$NJS" ] || { echo "missing nginx's njs module ($NJS): run scripts/install-deps.sh"; exit 1; }
K8S_BIN=${HANGAR_K8S_BIN:-$("$ROOT/scripts/k8s-tools.sh" | tail -n 1)}
export HANGAR_K8S_BIN=$K8S_BIN PATH=$K8S_BIN:$PATH

TMP=$(mktemp -d /tmp/hangar-bench-admission.XXXXXX)
WEBHOOK_PID=
cleanup() {
        [ -z "$WEBHOOK_PID" ] || kill "$WEBHOOK_PID" 2>/dev/null || true
        bench_nginx_stop "$TMP"
        "$ROOT/scripts/control-plane.sh" stop "$TMP/cp" >/dev/null 2>&1 || true
        rm -rf "$TMP"
}
trap cleanup EXIT
say() { echo "bench/admission.sh: $*" >&2; }
die() { say "$*"; exit 1; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
diff_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
# stats: numbers on stdin -> "p50 p99 mean" (nearest rank)
stats() {
        sort -n | awk '{ v[NR] = $1; s += $1 } END {
                if (!NR) { print "n/a n/a n/a"; exit }
                i = int(NR * 0.5 + 0.999999); j = int(NR * 0.99 + 0.999999)
                printf "%.2f %.2f %.2f\n", v[i], v[j], s / NR }'
}

# ---- the control plane, namespaces, the pod everything is timed on ---------
say "starting a control plane in $TMP/cp"
"$ROOT/scripts/control-plane.sh" start "$TMP/cp" >"$TMP/cp.log" 2>&1 ||
        { tail -n 20 "$TMP/cp.log" >&2; die "the control plane did not start"; }
export KUBECONFIG=$TMP/cp/kubeconfig
SERVER=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
PKI=$TMP/cp/pki
kubectl create namespace "$NS" >/dev/null
kubectl label namespace "$NS" hangar.dev/injection=enabled >/dev/null # opted in (the chart's scope)
kubectl create namespace "$OTHER" >/dev/null
kubectl create namespace hangar-system >/dev/null
kubectl apply -f - >/dev/null <<'YAML'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
YAML
# The pod bench/admissionapi.py creates, as the API server defaults it
# (what a webhook is sent), and hangar's answer for it: the static
# webhook's patch.
python3 -c 'import json, sys; sys.path.insert(0, sys.argv[1]); import nodeapi
print(json.dumps(nodeapi.pod("ba-0", True, "registry.example/agent-env:1", False)))' "$HERE" >"$TMP/pod.json"
kubectl create --dry-run=server -n "$NS" -o json -f "$TMP/pod.json" >"$TMP/defaulted.json"
cat >"$TMP/webhook.yaml" <<YAML
driverSidecar: true
guard: {driverUsers: ["$HANGAR_ID"]}
kubeconfig: $KUBECONFIG
server: {address: 127.0.0.1, port: 0, certFile: $TMP/pki/tls.crt, keyFile: $TMP/pki/tls.key}
YAML
jq -n --slurpfile pod "$TMP/defaulted.json" '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
        request: {uid: "UID-PLACEHOLDER", kind: {group: "", version: "v1", kind: "Pod"},
                  resource: {group: "", version: "v1", resource: "pods"}, namespace: "'"$NS"'",
                  operation: "CREATE", userInfo: {username: "admin"}, object: $pod[0], dryRun: false}}' \
        >"$TMP/review.json"
"$WEBHOOK" review --config "$TMP/webhook.yaml" <"$TMP/review.json" >"$TMP/answer.json"
[ "$(jq -r .response.auditAnnotations.decision "$TMP/answer.json")" = injected ] ||
        die "hangar-webhook review did not inject the bench pod: $(head -c 300 "$TMP/answer.json")"

# ---- the two webhooks, on loopback, the same certificate --------------------
"$WEBHOOK" certs --out-dir "$TMP/pki" --ip 127.0.0.1 >/dev/null
WPORT=$(free_port)
sed -i "s/port: 0,/port: $WPORT,/" "$TMP/webhook.yaml"
"$WEBHOOK" serve --config "$TMP/webhook.yaml" 2>"$TMP/webhook.log" &
WEBHOOK_PID=$!
bench_wait 10 curl -sf --cacert "$TMP/pki/ca.crt" "https://127.0.0.1:$WPORT/readyz" ||
        { tail -n 5 "$TMP/webhook.log" >&2; die "hangar-webhook not ready"; }
# nginx answers hangar's bytes with the review's uid put in: the uid is the
# request's first member, the only "uid" before the pod (a pod being
# created has none).
jq -c . "$TMP/answer.json" >"$TMP/answer.min.json"
prefix=$(sed 's/UID-PLACEHOLDER.*//' "$TMP/answer.min.json")
suffix=$(sed 's/.*UID-PLACEHOLDER//' "$TMP/answer.min.json")
cat >"$TMP/static.js" <<JS
var PREFIX = $(jq -Rn --arg s "$prefix" '$s');
var SUFFIX = $(jq -Rn --arg s "$suffix" '$s');
function mutate(r) {
    var m = /"uid"\s*:\s*"([^"]*)"/.exec(r.requestText || "");
    r.headersOut["Content-Type"] = "application/json";
    r.return(200, PREFIX + (m ? m[1] : "") + SUFFIX);
}
export default {mutate};
JS
bench_nginx_start "$TMP" "$TMP/pki" "" "js_content answer.mutate;" "load_module $NJS;" \
        "client_body_buffer_size 1m; client_max_body_size 1m; js_path $TMP; js_import answer from static.js;"
got=$(jq '.request.uid = "u-42"' "$TMP/review.json" |
        curl -sf --cacert "$TMP/pki/ca.crt" -H 'Content-Type: application/json' --data-binary @- \
                "https://127.0.0.1:$NPORT/mutate" | jq -r .response.uid) || got=
[ "$got" = u-42 ] || die "the static webhook does not echo the uid (got '$got'; $TMP/nginx/error.log)"
CA=$(base64 -w0 "$TMP/pki/ca.crt")

# injected_now: a dry-run create of the bench pod comes back with hangar-driver.
injected_now() {
        kubectl create --dry-run=server -n "$NS" -o json -f "$TMP/pod.json" 2>/dev/null |
                jq -e '[.spec.containers[].name] | index("hangar-driver")' >/dev/null
}
not_injected_now() { ! injected_now; }
creates() { # INJECTED OUT
        python3 "$HERE/admissionapi.py" creates "$SERVER" "$PKI" "$NS" "$CREATES" "$1" >"$2"
        bench_wait 60 sh -c "[ -z \"\$(kubectl get pods -n $NS -o name)\" ]" || die "pods left in $NS"
}
execs() { # OUT
        python3 "$HERE/admissionapi.py" execs "$SERVER" "$PKI" "$OTHER" idle "$EXECS" >"$1"
}
python3 -c 'import json, sys; sys.path.insert(0, sys.argv[1]); import nodeapi
p = nodeapi.pod("idle", False, "registry.example/agent-env:1", False); p["metadata"]["labels"].pop("hangar.dev/bench")
print(json.dumps(p))' "$HERE" | kubectl create -n "$OTHER" -f - >/dev/null

echo "hangar's cost to the API server ($(nproc) CPUs, load $(load) at the start)"

# ---- no webhook --------------------------------------------------------------
say "(a) $CREATES creates with no webhook; (b) $EXECS execs without the chart"
creates no "$TMP/none"
execs "$TMP/exec-none"

# ---- the static webhook ------------------------------------------------------
say "(a) $CREATES creates through the static webhook"
kubectl apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: bench-static}
webhooks:
  - name: static.bench.hangar.dev
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Fail
    timeoutSeconds: 10
    reinvocationPolicy: IfNeeded
    matchPolicy: Equivalent
    rules: [{apiGroups: [""], apiVersions: ["v1"], resources: ["pods"], operations: ["CREATE"], scope: Namespaced}]
    objectSelector: {matchLabels: {hangar.dev/sandbox: "true"}}
    namespaceSelector: {matchLabels: {hangar.dev/injection: enabled}}
    clientConfig: {url: "https://127.0.0.1:$NPORT/mutate", caBundle: "$CA"}
YAML
bench_wait 30 injected_now || die "the static webhook is not called"
creates yes "$TMP/static"
kubectl delete mutatingwebhookconfiguration bench-static >/dev/null
bench_wait 30 not_injected_now || die "the static webhook is still called"

# ---- hangar, as the chart installs it ------------------------------------------
say "(a) $CREATES creates through hangar; (b) $EXECS execs with the chart"
helm install hangar "$ROOT/charts/hangar-webhook" -n hangar-system \
        --set webhook.url="https://127.0.0.1:$WPORT/mutate" --set webhook.caBundle="$CA" \
        --set driverSidecar.enabled=true --set-json "guard.driverUsers=[\"$HANGAR_ID\"]" >"$TMP/helm.log" 2>&1 ||
        { cat "$TMP/helm.log" >&2; die "helm install failed"; }
bench_wait 30 injected_now || die "hangar's webhook is not called"
creates yes "$TMP/hangar"
execs "$TMP/exec-chart"
calls=$(grep -c '"msg":"review"' "$TMP/webhook.log" || true)

v=$(stats <"$TMP/none")
read -r n50 n99 nmean <<<"$v"
v=$(stats <"$TMP/static")
read -r s50 s99 smean <<<"$v"
v=$(stats <"$TMP/hangar")
read -r h50 h99 hmean <<<"$v"
echo
echo "(a) pod create through the API server, $CREATES each (ms; load $(load) after)"
printf '%-44s %8s %8s %8s\n' "" p50 p99 mean
printf '%-44s %8s %8s %8s\n' "no webhook (floor)" "$n50" "$n99" "$nmean"
printf '%-44s %8s %8s %8s\n' "static webhook (nginx, hangar's patch)" "$s50" "$s99" "$smean"
printf '%-44s %8s %8s %8s\n' "hangar (the chart: mutating + guard)" "$h50" "$h99" "$hmean"
printf '%-44s %8s %8s %8s\n' "added by the static webhook" "$(diff_of "$s50" "$n50")" "$(diff_of "$s99" "$n99")" "$(diff_of "$smean" "$nmean")"
printf '%-44s %8s %8s %8s\n' "added by hangar" "$(diff_of "$h50" "$n50")" "$(diff_of "$h99" "$n99")" "$(diff_of "$hmean" "$nmean")"
printf '%-44s %8s %8s %8s\n' "hangar's added / the static webhook's" \
        "$(ratio "$(diff_of "$h50" "$n50")" "$(diff_of "$s50" "$n50")")" \
        "$(ratio "$(diff_of "$h99" "$n99")" "$(diff_of "$s99" "$n99")")" \
        "$(ratio "$(diff_of "$hmean" "$nmean")" "$(diff_of "$smean" "$nmean")")"
echo "hangar's reviews logged during its run: $calls (a pod create: the mutating call, and the guard's when it is sent)"

v=$(stats <"$TMP/exec-none")
read -r e50 e99 emean <<<"$v"
v=$(stats <"$TMP/exec-chart")
read -r c50 c99 cmean <<<"$v"
echo
echo "(b) exec into namespace $OTHER (not opted in), $EXECS each (ms)"
printf '%-44s %8s %8s %8s\n' "" p50 p99 mean
printf '%-44s %8s %8s %8s\n' "without the chart" "$e50" "$e99" "$emean"
printf '%-44s %8s %8s %8s\n' "with the chart" "$c50" "$c99" "$cmean"
printf '%-44s %8s %8s %8s\n' "ratio" "$(ratio "$c50" "$e50")" "$(ratio "$c99" "$e99")" "$(ratio "$cmean" "$emean")"
