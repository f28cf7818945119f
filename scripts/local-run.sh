#!/usr/bin/env bash
# The main job, end to end on this machine: installs what is needed, builds,
# starts a real kube-apiserver + etcd on loopback, runs hangar-webhook on TLS
# with self-managed certificates (CA in a Secret, caBundle patched by the
# webhook), installs the Helm chart pointing the API server at it, creates an
# example sandbox pod, prints the pod as the API server stored it with the
# injected sidecar highlighted, then runs that pod in a real gVisor sandbox
# (runsc), prints the probe's HANGAR_UID_SPLIT verdict, and runs an ask turn
# under the sidecar: hangar-driver in the sidecar, hangar-relay as the agent,
# an approval decided through the driver's control command.
#
#   scripts/local-run.sh          start everything (state in $HANGAR_LOCAL_DIR, default /tmp/hangar-local)
#   scripts/local-run.sh stop     stop everything it started and remove the state
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${HANGAR_LOCAL_DIR:-/tmp/hangar-local}

stop_all() {
        if [ -d "$STATE/pod" ]; then
                "$ROOT/tests/pods/podrun" down --dir "$STATE/pod" >/dev/null 2>&1 || true
        fi
        if [ -f "$STATE/webhook.pid" ]; then
                kill "$(cat "$STATE/webhook.pid")" 2>/dev/null || true
        fi
        if [ -d "$STATE/cp" ]; then
                "$ROOT/scripts/control-plane.sh" stop "$STATE/cp" >/dev/null 2>&1 || true
        fi
        rm -rf "$STATE"
}

if [ "${1:-}" = stop ]; then
        stop_all
        echo "local-run: stopped, $STATE removed"
        exit 0
fi
if [ -e "$STATE" ]; then
        echo "local-run: $STATE exists (already running?); run 'scripts/local-run.sh stop' first" >&2
        exit 1
fi

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "installing dependencies"
"$ROOT/scripts/install-deps.sh"
say "building kube-apiserver, etcd, kubectl and helm (cached after the first run; the first takes ~15 min)"
BIN=$("$ROOT/scripts/k8s-tools.sh" | tail -n 1)
export PATH=$BIN:$PATH
say "building hangar-sidecar"
cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DHANGAR_TOOLS_BIN="$BIN" >/dev/null
ninja -C "$ROOT/build" hangar-webhook hangar-probe hangar-driver hangar-relay
WEBHOOK=$ROOT/build/webhook/hangar-webhook
PROBE=$ROOT/build/probe/hangar-probe
DRIVER=$ROOT/build/driver/hangar-driver
RELAY=$ROOT/build/relay/hangar-relay
PODRUN=$ROOT/tests/pods/podrun

mkdir -p "$STATE"
trap 'echo "local-run: failed; cleaning up" >&2; stop_all' ERR
say "starting a local control plane (etcd + kube-apiserver on loopback)"
HANGAR_K8S_BIN=$BIN "$ROOT/scripts/control-plane.sh" start "$STATE/cp"
export KUBECONFIG=$STATE/cp/kubeconfig
kubectl create namespace hangar-system >/dev/null
kubectl create namespace sandboxes >/dev/null
# GKE Sandbox's RuntimeClass, so the example pod looks like one on GKE.
kubectl apply -f - >/dev/null <<'RC'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
RC

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
say "installing the chart (URL mode: the API server calls the webhook on 127.0.0.1:$PORT)"
# The webhook patches the real caBundle in; the chart needs a placeholder.
"$WEBHOOK" certs --out-dir "$STATE/placeholder" --ip 127.0.0.1 >/dev/null
helm install hangar "$ROOT/charts/hangar-webhook" -n hangar-system \
        --set driverSidecar.enabled=true \
        --set webhook.url="https://127.0.0.1:$PORT/mutate" \
        --set webhook.caBundle="$(base64 -w0 "$STATE/placeholder/ca.crt")"
MWC=$(kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/instance=hangar \
        -o jsonpath='{.items[0].metadata.name}')

say "starting hangar-webhook (self-managed certificates; log in $STATE/webhook.log)"
cat >"$STATE/webhook.yaml" <<CFG
driverSidecar: true
server:
  address: 127.0.0.1
  port: $PORT
  certFile: $STATE/tls.crt
  keyFile: $STATE/tls.key
tls:
  mode: selfManaged
  secretNamespace: hangar-system
  webhookConfigName: $MWC
  ipAddresses: [127.0.0.1]
  syncSeconds: 10
kubeconfig: $KUBECONFIG
CFG
nohup "$WEBHOOK" serve --config "$STATE/webhook.yaml" >>"$STATE/webhook.log" 2>&1 &
echo $! >"$STATE/webhook.pid"
for _ in $(seq 100); do
        curl -sf --cacert <(kubectl get secret -n hangar-system hangar-webhook-tls \
                -o jsonpath='{.data.ca\.crt}' 2>/dev/null | base64 -d) \
                "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
        sleep 0.2
done
grep -E '"(creating the certificate Secret|caBundle updated|listening)"' "$STATE/webhook.log" | cut -c1-200

say "creating an example sandbox pod"
cat >"$STATE/sandbox-pod.yaml" <<'POD'
apiVersion: v1
kind: Pod
metadata:
  name: agent-sandbox
  namespace: sandboxes
  labels:
    hangar.dev/sandbox: "true"
spec:
  runtimeClassName: gvisor
  securityContext:
    fsGroup: 1000
  containers:
  - name: sandbox
    image: us-docker.pkg.dev/hangar/envs/python:3.12
    securityContext:
      runAsUser: 1000
      runAsGroup: 1000
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
POD
cat "$STATE/sandbox-pod.yaml"
# The API server picks up the webhook configuration after a moment.
created=false
for _ in $(seq 50); do
        if kubectl create -f "$STATE/sandbox-pod.yaml" 2>"$STATE/create.err"; then
                created=true
                break
        fi
        sleep 0.3
done
$created || { cat "$STATE/create.err" >&2; false; }

say "the pod as the API server stored it; lines hangar-webhook added are green (+)"
# The same pod without the sandbox label, dry-run: what the API server
# would have stored without the webhook. The difference is the injection.
sed -e 's#hangar.dev/sandbox: "true"#hangar.dev/sandbox: "no"#' -e 's#name: agent-sandbox#name: agent-sandbox-plain#' "$STATE/sandbox-pod.yaml" |
        kubectl create --dry-run=server -o json -f - >"$STATE/without.json"
kubectl get pod -n sandboxes agent-sandbox -o json >"$STATE/stored.json"
view() { jq -S '{metadata: {annotations: .metadata.annotations}, spec: .spec}' "$1"; }
esc=$(printf '\033')
diff -U 1000 <(view "$STATE/without.json") <(view "$STATE/stored.json") | tail -n +4 |
        sed -E "s/^\+(.*)\$/${esc}[32m+\1${esc}[0m/; s/^-(.*)\$/${esc}[31m-\1${esc}[0m/" || true

say "running the stored pod in a real gVisor sandbox (runsc) and deciding HANGAR_UID_SPLIT"
# No kubelet here: tests/pods/podrun builds one OCI bundle per container from
# the stored pod (images replaced by busybox plus this build's binaries).
"$PODRUN" up --pod "$STATE/stored.json" --dir "$STATE/pod" --runtime runsc \
        --bin "$(dirname "$WEBHOOK")" --bin "$(dirname "$PROBE")" --bin "$(dirname "$DRIVER")" \
        --bin "$(dirname "$RELAY")" >"$STATE/pod.log" 2>&1 ||
        { tail -n 5 "$STATE/pod.log" >&2; false; }
"$PODRUN" exec --dir "$STATE/pod" sandbox -- hangar-probe check --role agent >"$STATE/agent.json" || true
"$PODRUN" exec --dir "$STATE/pod" hangar-driver -- hangar-probe check --role driver >"$STATE/driver.json" || true
"$PROBE" spec --name agent-sandbox --namespace sandboxes --kubeconfig "$KUBECONFIG" >"$STATE/spec.json" || true
for r in spec agent driver; do
        printf '  %-7s %s\n' "$r" "$(jq -r .result "$STATE/$r.json")"
done
"$PROBE" verdict --mode required --spec "$STATE/spec.json" --agent "$STATE/agent.json" \
        --driver "$STATE/driver.json" --write "$STATE/verdict.json" || true

say "an ask turn under the sidecar (driver uid 1001 in hangar-driver, relay as the agent)"
in_pod() { "$PODRUN" exec --dir "$STATE/pod" "$@"; }
# hangar delivers the verdict to both sides (hangar-ctl for the driver,
# hangar-home, read-only for the agent, for the relay).
in_pod --stdin hangar-driver -- sh -c 'cat >/var/lib/hangar-ctl/verdict.json &&
        cp /var/lib/hangar-ctl/verdict.json /var/lib/hangar/verdict.json' <"$STATE/verdict.json"
in_pod sandbox -- mkdir -p /tmp/turn
cat >"$STATE/harness.sh" <<'HARNESS'
echo "harness running as uid $(id -u) in $(pwd)"
echo '{"type": "approval_request", "id": "deploy", "action": "kubectl apply"}'
read -r answer
echo "got: $answer"
HARNESS
jq -n --rawfile script "$STATE/harness.sh" '{turn: "local-1", mode: "ask", cwd: "/tmp/turn",
        run_key: "local-run-key", linger_s: 30, close_stdin: false, script: $script}' >"$STATE/turn.json"
in_pod --stdin --env HANGAR_UID_SPLIT=required hangar-driver -- hangar-driver relay --spec - \
        <"$STATE/turn.json" >"$STATE/driver.out" 2>&1 &
DRIVER_EXEC=$!
for _ in $(seq 50); do in_pod hangar-driver -- hangar-driver ctl token >"$STATE/token.json" 2>/dev/null && break; sleep 0.2; done
jq -r .token "$STATE/token.json" | in_pod --stdin --env HANGAR_UID_SPLIT=required sandbox -- hangar-relay \
        >"$STATE/relay.out" 2>&1 &
RELAY_EXEC=$!
for _ in $(seq 50); do
        in_pod hangar-driver -- hangar-driver ctl approvals 2>/dev/null | jq -e '.approvals | length > 0' >/dev/null && break
        sleep 0.2
done
echo "  the harness asked: $(in_pod hangar-driver -- hangar-driver ctl approvals | jq -c '.approvals[0].request')"
in_pod hangar-driver -- hangar-driver ctl approve deploy >/dev/null && echo "  hangar approved it through hangar-driver ctl"
for _ in $(seq 50); do
        [ "$(in_pod hangar-driver -- hangar-driver ctl status | jq -r .state)" = harness-exited ] && break
        sleep 0.2
done
in_pod hangar-driver -- hangar-driver ctl finish >/dev/null
wait "$DRIVER_EXEC" "$RELAY_EXEC" || true
echo "  driver: $(tail -n 1 "$STATE/driver.out")"
echo "  relay:  $(tail -n 1 "$STATE/relay.out")"
echo "  the run's log, as the agent reads it from hangar-home:"
in_pod sandbox -- cat /var/lib/hangar/run/log | sed 's/^/    /'
trap - ERR

say "done"
cat <<MSG
Everything is running:
  kube-apiserver   $(grep HANGAR_APISERVER_URL "$STATE/cp/env" | cut -d= -f2)   (export KUBECONFIG=$KUBECONFIG)
  hangar-webhook   https://127.0.0.1:$PORT   (log: $STATE/webhook.log, metrics: curl -sk https://127.0.0.1:$PORT/metrics)
Try: kubectl --kubeconfig $KUBECONFIG get pod -n sandboxes agent-sandbox -o yaml
The pod runs under runsc: scripts/local-run.sh stop takes it down too.
  tests/pods/podrun exec --dir $STATE/pod hangar-driver -- id
Stop everything with:  scripts/local-run.sh stop
MSG
