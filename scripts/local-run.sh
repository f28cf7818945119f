#!/usr/bin/env bash
# The main job, end to end on this machine, as a cluster admin runs it: a real
# one-node cluster (etcd, kube-apiserver, controller-manager, scheduler,
# containerd with runc and gVisor's runsc, CNI, kubelet: scripts/node.sh),
# hangar's images built offline (scripts/build-images.sh) and loaded on the
# node, the Helm chart installed in service mode (the webhook as a 2-replica
# Deployment under restricted Pod Security, certificates made and the
# caBundle patched from inside its pods), an example sandbox pod admitted,
# scheduled and Running under gVisor with the driver sidecar, the probe run in
# each container through kubectl exec and the spec check through the API, the
# HANGAR_UID_SPLIT verdict delivered, and an ask turn run through kubectl exec
# exactly as hangar runs one: `ctl start` to the driver's daemon (the sidecar's
# PID 1), the relay in the agent's container with the token from its reply on
# its stdin, an approval decided through
# `hangar-driver ctl`. Every exec hangar makes goes as hangar's own identity
# (system:serviceaccount:hangar:hangar, the one the chart's guard lists).
#
#   scripts/local-run.sh          start everything (state in $HANGAR_LOCAL_DIR, default /tmp/hangar-local)
#   scripts/local-run.sh stop     stop everything it started and remove the state
#
# It leaves the cluster up: KUBECONFIG=$HANGAR_LOCAL_DIR/kubeconfig kubectl ...
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${HANGAR_LOCAL_DIR:-/tmp/hangar-local}
BUILD=${HANGAR_LOCAL_BUILD:-$ROOT/build}
# shellcheck source=lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"   # HANGAR_ID, the chart's install
NS=sandboxes
POD=agent-sandbox

stop_all() {
        "$ROOT/scripts/node.sh" stop "$STATE" >/dev/null 2>&1 || true
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
say "building the cluster's tools (cached after the first run; the first takes ~25 min)"
K8S_BIN=$("$ROOT/scripts/k8s-tools.sh" | tail -n 1)
NODE_BIN=$("$ROOT/scripts/node-tools.sh" | tail -n 1)
RUNSC=$("$ROOT/tests/pods/build-runsc.sh" | tail -n 1)
export HANGAR_K8S_BIN=$K8S_BIN HANGAR_NODE_BIN=$NODE_BIN HANGAR_RUNSC_CURRENT=$RUNSC
export PATH=$K8S_BIN:$PATH
say "building hangar-sidecar and its images (offline, from Debian packages)"
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHANGAR_TOOLS_BIN="$K8S_BIN" >/dev/null
ninja -C "$BUILD" hangar-webhook hangar-probe hangar-driver hangar-relay
mapfile -t ARCHIVES < <("$ROOT/scripts/build-images.sh" --build-dir "$BUILD" | tail -n 3)
printf '  %s\n' "${ARCHIVES[@]}"
PROBE=$BUILD/probe/hangar-probe

mkdir -p "$STATE"
trap 'echo "local-run: failed; logs are in $STATE; scripts/local-run.sh stop cleans up" >&2' ERR
say "starting a one-node cluster (its network stays on this machine: docs/node.md)"
"$ROOT/scripts/node.sh" start "$STATE" "${ARCHIVES[@]}"
export KUBECONFIG=$STATE/kubeconfig
kubectl get nodes -o wide

say "namespaces, and hangar's own identity"
# The webhook's namespace enforces restricted Pod Security; hangar reads
# sandbox pods and execs into them, nothing else.
hangar_system_namespace
hangar_identity "$NS"
as_hangar=(--as "$HANGAR_ID")

say "installing the chart (service mode: the webhook as its Deployment)"
hangar_chart_install hangar
kubectl get pods -n hangar-system -o wide
hangar_chart_ready hangar "$NS" 60
bundle=$(hangar_chart_bundle hangar)
echo "  caBundle patched by the webhook's pods: $(base64 -d <<<"$bundle" | openssl x509 -noout -subject)"
kubectl logs -n hangar-system -l app.kubernetes.io/instance=hangar --tail=-1 2>/dev/null |
        grep -E '"(creating the certificate Secret|caBundle updated|listening)"' | cut -c1-160 | head -n 6

say "creating an example sandbox pod (gVisor, the example environment image)"
cat >"$STATE/sandbox-pod.yaml" <<POD
apiVersion: v1
kind: Pod
metadata:
  name: $POD
  namespace: $NS
  labels:
    hangar.dev/sandbox: "true"
spec:
  runtimeClassName: gvisor
  securityContext:
    runAsUser: 1000
    runAsGroup: 1000
    fsGroup: 1000
  containers:
  - name: sandbox
    image: localhost/hangar-sandbox:dev
    imagePullPolicy: Never
    command: [sleep, infinity]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
POD
cat "$STATE/sandbox-pod.yaml"
# The API server picks up a new webhook configuration after a moment.
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
sed -e 's#hangar.dev/sandbox: "true"#hangar.dev/sandbox: "no"#' -e "s#name: $POD#name: $POD-plain#" \
        "$STATE/sandbox-pod.yaml" | kubectl create --dry-run=server -o json -f - >"$STATE/without.json"
kubectl get pod -n "$NS" "$POD" -o json >"$STATE/stored.json"
view() { jq -S '{metadata: {annotations: .metadata.annotations}, spec: (.spec | del(.nodeName))}' "$1"; }
esc=$(printf '\033')
diff -U 1000 <(view "$STATE/without.json") <(view "$STATE/stored.json") | tail -n +4 |
        sed -E "s/^\+(.*)\$/${esc}[32m+\1${esc}[0m/; s/^-(.*)\$/${esc}[31m-\1${esc}[0m/" || true

say "scheduled and Running under gVisor"
kubectl wait -n "$NS" --for=condition=Ready "pod/$POD" --timeout=300s
kubectl get pod -n "$NS" "$POD" -o wide
echo "  the sandbox kernel: $(kubectl exec -n "$NS" "$POD" -c sandbox "${as_hangar[@]}" -- dmesg 2>/dev/null | head -n 1)"

say "the probe in each container (kubectl exec), the spec check through the API, the verdict"
in_agent() { kubectl exec -n "$NS" "$POD" -c sandbox "${as_hangar[@]}" "$@"; }
in_driver() { kubectl exec -n "$NS" "$POD" -c hangar-driver "${as_hangar[@]}" "$@"; }
in_agent -- hangar-probe check --role agent >"$STATE/agent.json" || true
in_driver -- hangar-probe check --role driver >"$STATE/driver.json" || true
"$PROBE" spec --name "$POD" --namespace "$NS" --kubeconfig "$KUBECONFIG" >"$STATE/spec.json" || true
for r in spec agent driver; do
        printf '  %-7s %s\n' "$r" "$(jq -r .result "$STATE/$r.json")"
done
"$PROBE" verdict --mode required --spec "$STATE/spec.json" --agent "$STATE/agent.json" \
        --driver "$STATE/driver.json" --write "$STATE/verdict.json" || true
# hangar delivers the verdict to both sides (hangar-ctl for the driver,
# hangar-home, read-only for the agent, for the relay).
in_driver -i -- sh -c 'cat >/var/lib/hangar-ctl/verdict.json &&
        cp /var/lib/hangar-ctl/verdict.json /var/lib/hangar/verdict.json' <"$STATE/verdict.json"

say "an ask turn under the sidecar, through kubectl exec (driver uid 1001, relay as the agent)"
in_agent -- mkdir -p /tmp/turn
cat >"$STATE/harness.sh" <<'HARNESS'
echo "harness running as uid $(id -u) in $(pwd)"
echo '{"type": "approval_request", "id": "deploy", "action": "kubectl apply"}'
read -r answer
echo "got: $answer"
HARNESS
jq -n --rawfile script "$STATE/harness.sh" '{turn: "local-1", mode: "ask", cwd: "/tmp/turn",
        run_key: "local-run-key", linger_s: 30, close_stdin: false, script: $script}' >"$STATE/turn.json"
# The driver is the sidecar's daemon (hangar-driver serve, PID 1, Ready once
# its startup probe pinged it): a turn is one request, whose reply carries
# the relay's token and port. One exec into hangar-driver, one for the relay.
echo "  PID 1 of hangar-driver: $(in_driver -- cat /proc/1/cmdline | tr '\0' ' ')"
in_driver -- hangar-driver ctl ping | jq -c '{instance, state, pid}' | sed 's/^/  the daemon: /'
in_driver -i -- hangar-driver ctl start --spec - <"$STATE/turn.json" >"$STATE/start.json"
echo "  ctl start: $(jq -c '{turn, port, instance}' "$STATE/start.json")"
# The relay hardens itself, says {"relay":"ready"}, and only then gets the
# token on its stdin (docs/turn.md: the order hangar keeps).
mkfifo "$STATE/relay.in"
in_agent -i -- env HANGAR_UID_SPLIT=required hangar-relay <"$STATE/relay.in" >"$STATE/relay.out" 2>&1 &
RELAY_EXEC=$!
exec 7>"$STATE/relay.in"
for _ in $(seq 100); do grep -q '"relay":"ready"' "$STATE/relay.out" 2>/dev/null && break; sleep 0.2; done
grep -q '"relay":"ready"' "$STATE/relay.out" || { cat "$STATE/relay.out" >&2; false; }
# The token and the daemon's instance: the relay connects only to that daemon.
jq -r '"\(.token) \(.instance)"' "$STATE/start.json" >&7
exec 7>&-
for _ in $(seq 100); do
        in_driver -- hangar-driver ctl approvals 2>/dev/null | grep -q '"deploy"' && break
        sleep 0.3
done
echo "  the harness asked: $(in_driver -- hangar-driver ctl approvals | grep '"deploy"' | head -n 1 | cut -c1-160)"
in_driver -- hangar-driver ctl approve deploy >/dev/null && echo "  hangar approved it through hangar-driver ctl"
for _ in $(seq 100); do
        [ "$(in_driver -- hangar-driver ctl status | jq -r .state)" = harness-exited ] && break
        sleep 0.3
done
in_driver -- hangar-driver ctl finish >/dev/null
wait "$RELAY_EXEC" || true
echo "  driver: $(in_driver -- hangar-driver ctl status --turn local-1 | jq -c '{state, end, harness}')"
echo "  relay:  $(tail -n 1 "$STATE/relay.out")"
echo "  the run's log, as the agent reads it from hangar-home:"
in_agent -- cat /var/lib/hangar/run/log | sed 's/^/    /'
trap - ERR

say "done"
cat <<MSG
The cluster is up (docs/node.md says what runs where):
  export KUBECONFIG=$KUBECONFIG
  kubectl get pods -A -o wide
  kubectl exec -n $NS $POD -c sandbox -- id
  kubectl exec -n $NS $POD -c hangar-driver --as $HANGAR_ID -- hangar-driver ctl status
  (exec into hangar-driver is hangar's alone: without --as the guard refuses it)
Stop everything with:  scripts/local-run.sh stop
MSG
