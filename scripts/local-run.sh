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
# its stdin, an approval decided through `hangar-driver ctl`. Every exec
# hangar makes goes as hangar's own identity (system:serviceaccount:hangar:hangar,
# the one the chart's guard lists). It ends with a summary of what it saw,
# each line checked: it exits non-zero when any step or check fails, naming
# the step and its log.
#
#   scripts/local-run.sh          start everything (state in $HANGAR_LOCAL_DIR, default /tmp/hangar-local)
#   scripts/local-run.sh stop     stop everything it started and remove the state
#
# It leaves the cluster up: KUBECONFIG=$HANGAR_LOCAL_DIR/kubeconfig kubectl ...
# HANGAR_LOCAL_BUILD: the CMake build dir (default: BUILD next to scripts/, Release).
set -euo pipefail
set -E # the ERR trap in functions too
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STATE=${HANGAR_LOCAL_DIR:-/tmp/hangar-local}
BUILD=${HANGAR_LOCAL_BUILD:-$ROOT/build}
LOGS=$STATE/logs
# shellcheck source=lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh" # HANGAR_ID, the chart's install
NS=sandboxes
POD=agent-sandbox
TURN=local-1

if [ "${1:-}" = stop ]; then
        [ $# -eq 1 ] || { echo "usage: scripts/local-run.sh [stop]" >&2; exit 2; }
        if [ -d "$STATE/node" ] && ! "$ROOT/scripts/node.sh" stop "$STATE" >"$STATE/stop.log" 2>&1; then
                tail -n 20 "$STATE/stop.log" >&2
                echo "local-run: stop failed; $STATE kept (its log: $STATE/stop.log); run stop again" >&2
                exit 1
        fi
        rm -rf "$STATE"
        echo "local-run: stopped, $STATE removed"
        exit 0
fi
[ $# -eq 0 ] || { echo "usage: scripts/local-run.sh [stop]" >&2; exit 2; }
if [ -e "$STATE" ]; then
        echo "local-run: $STATE exists (already running?); run 'scripts/local-run.sh stop' first" >&2
        exit 1
fi
mkdir -p "$LOGS"

STEP=starting
say() {
        STEP=$*
        printf '\n\033[1m== %s\033[0m\n' "$*"
}
# Any failing command ends the run here, naming the step.
trap 'echo "local-run: failed in step \"$STEP\" (line $LINENO); logs in $LOGS; scripts/local-run.sh stop cleans up" >&2' ERR
# fail WHAT [LOG]: WHAT failed; LOG's end shown. Exits.
fail() {
        trap - ERR
        if [ -n "${2:-}" ] && [ -f "$2" ]; then
                echo "---- the end of $2:" >&2
                tail -n 25 "$2" >&2
                echo "----" >&2
        fi
        echo "local-run: $1 (step \"$STEP\"${2:+; log: $2}); scripts/local-run.sh stop cleans up" >&2
        exit 1
}
# logged NAME CMD...: CMD's output into $LOGS/NAME.log; a failure ends the run.
logged() {
        local name=$1
        shift
        "$@" >"$LOGS/$name.log" 2>&1 || fail "$* exited $?" "$LOGS/$name.log"
}
# tool_dir VAR NAME SCRIPT: VAR = the bin dir SCRIPT prints last (its build
# output in $LOGS/NAME.log).
tool_dir() {
        local out
        out=$("$3" 2>"$LOGS/$2.log") || fail "$3 exited $?" "$LOGS/$2.log"
        out=${out##*$'\n'}
        [ -d "$out" ] || [ -x "$out" ] || fail "$3 printed no tool path ('$out')" "$LOGS/$2.log"
        printf -v "$1" '%s' "$out"
}
# wait_for SECONDS WHAT CMD...: CMD until it succeeds; fails the run after SECONDS.
wait_for() {
        local limit=$1 what=$2 t0=$SECONDS
        shift 2
        until "$@" >/dev/null 2>&1; do
                [ $((SECONDS - t0)) -lt "$limit" ] || fail "$what: not within ${limit}s"
                sleep 0.3
        done
}

say "installing dependencies (log: $LOGS/deps.log)"
logged deps "$ROOT/scripts/install-deps.sh"
say "the cluster's tools (cached after the first run; the first takes ~25 min; logs in $LOGS)"
tool_dir K8S_BIN k8s-tools "$ROOT/scripts/k8s-tools.sh"
tool_dir NODE_BIN node-tools "$ROOT/scripts/node-tools.sh"
tool_dir RUNSC runsc "$ROOT/tests/pods/build-runsc.sh"
export HANGAR_K8S_BIN=$K8S_BIN HANGAR_NODE_BIN=$NODE_BIN HANGAR_RUNSC_CURRENT=$RUNSC
export PATH=$K8S_BIN:$PATH
echo "  $K8S_BIN, $NODE_BIN, $RUNSC"

say "building hangar-sidecar and its images (offline, from Debian packages; logs in $LOGS)"
logged cmake cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHANGAR_TOOLS_BIN="$K8S_BIN"
logged build ninja -C "$BUILD" hangar-shipped
# The archives are the last three lines build-images.sh prints on stdout.
"$ROOT/scripts/build-images.sh" --build-dir "$BUILD" >"$LOGS/images.out" 2>"$LOGS/images.log" ||
        fail "scripts/build-images.sh exited $?" "$LOGS/images.log"
tail -n 3 "$LOGS/images.out" >"$LOGS/archives"
mapfile -t ARCHIVES <"$LOGS/archives"
[ "${#ARCHIVES[@]}" = 3 ] || fail "build-images.sh printed ${#ARCHIVES[@]} archives, not 3" "$LOGS/images.log"
for a in "${ARCHIVES[@]}"; do [ -s "$a" ] || fail "image archive '$a' missing" "$LOGS/images.log"; done
printf '  %s\n' "${ARCHIVES[@]}"
PROBE=$BUILD/probe/hangar-probe

say "starting a one-node cluster (its network stays on this machine: docs/node.md)"
logged node-start "$ROOT/scripts/node.sh" start "$STATE" "${ARCHIVES[@]}"
export KUBECONFIG=$STATE/kubeconfig
kubectl get nodes -o wide

say "namespaces, and hangar's own identity"
# The webhook's namespace enforces restricted Pod Security; hangar reads
# sandbox pods and execs into them, nothing else.
hangar_system_namespace
hangar_identity "$NS"
as_hangar=(--as "$HANGAR_ID")

say "installing the chart (service mode: the webhook as its Deployment; log: $LOGS/helm.log)"
logged helm hangar_chart_install hangar
kubectl get pods -n hangar-system -o wide
hangar_chart_ready hangar "$NS" 60
bundle=$(hangar_chart_bundle hangar)
echo "  caBundle patched by the webhook's pods: $(base64 -d <<<"$bundle" | openssl x509 -noout -subject)"
kubectl logs -n hangar-system -l app.kubernetes.io/instance=hangar --tail=-1 >"$LOGS/webhook.log" 2>&1 || true
grep -E '"(creating the certificate Secret|caBundle updated|listening)"' "$LOGS/webhook.log" | cut -c1-160 | head -n 6 || true

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
# hangar_chart_ready saw a labelled pod injected in a dry run; the real
# create goes to the same webhook.
logged create kubectl create -f "$STATE/sandbox-pod.yaml"

say "the pod as the API server stored it; lines hangar-webhook added are green (+)"
# The same pod without the sandbox label, dry-run: what the API server
# would have stored without the webhook. The difference is the injection.
sed -e 's#hangar.dev/sandbox: "true"#hangar.dev/sandbox: "no"#' -e "s#name: $POD#name: $POD-plain#" \
        "$STATE/sandbox-pod.yaml" >"$STATE/plain-pod.yaml"
kubectl create --dry-run=server -o json -f "$STATE/plain-pod.yaml" >"$STATE/without.json"
kubectl get pod -n "$NS" "$POD" -o json >"$STATE/stored.json"
view() { jq -S '{metadata: {annotations: .metadata.annotations}, spec: (.spec | del(.nodeName))}' "$1"; }
view "$STATE/without.json" >"$STATE/without.view.json"
view "$STATE/stored.json" >"$STATE/stored.view.json"
diff -U 1000 "$STATE/without.view.json" "$STATE/stored.view.json" >"$STATE/injection.diff" || [ $? = 1 ]
esc=$(printf '\033')
tail -n +4 "$STATE/injection.diff" | sed -E "s/^\+(.*)\$/${esc}[32m+\1${esc}[0m/; s/^-(.*)\$/${esc}[31m-\1${esc}[0m/"
containers=$(jq -r '[.spec.containers[].name] | join(",")' "$STATE/stored.json")
[ "$containers" = sandbox,hangar-driver ] || fail "the stored pod's containers are '$containers', not sandbox,hangar-driver"

say "scheduled and Running under gVisor"
logged wait kubectl wait -n "$NS" --for=condition=Ready "pod/$POD" --timeout=300s
kubectl get pod -n "$NS" "$POD" -o wide
in_agent() { kubectl exec -n "$NS" "$POD" -c sandbox "${as_hangar[@]}" "$@"; }
in_driver() { kubectl exec -n "$NS" "$POD" -c hangar-driver "${as_hangar[@]}" "$@"; }
# gVisor's own kernel says who it is on its first line of dmesg.
kernel=$(in_agent -- dmesg | head -n 1)
echo "  the sandbox kernel: $kernel"
[[ $kernel == *gVisor* ]] || fail "the pod's kernel is not gVisor's: '$kernel'"

say "the probe in each container (kubectl exec), the spec check through the API, the verdict"
# A probe that finds the shape wrong exits non-zero and says why in its
# report: the reports are printed, and the verdict decides.
in_agent -- hangar-probe check --role agent >"$STATE/agent.json" || true
in_driver -- hangar-probe check --role driver >"$STATE/driver.json" || true
"$PROBE" spec --name "$POD" --namespace "$NS" --kubeconfig "$KUBECONFIG" >"$STATE/spec.json" || true
declare -A probe_result
for r in spec agent driver; do
        probe_result[$r]=$(jq -r .result "$STATE/$r.json" 2>/dev/null) || probe_result[$r]="no report"
        printf '  %-7s %s\n' "$r" "${probe_result[$r]}"
done
"$PROBE" verdict --mode required --spec "$STATE/spec.json" --agent "$STATE/agent.json" \
        --driver "$STATE/driver.json" --write "$STATE/verdict.json" >"$LOGS/verdict.log" 2>&1 || true
verdict=$(jq -r .verdict "$STATE/verdict.json" 2>/dev/null) || verdict="none written"
echo "  verdict: $verdict"
[ "$verdict" = split-active ] || fail "the verdict is '$verdict', not split-active (reports in $STATE/{spec,agent,driver}.json)" "$LOGS/verdict.log"
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
jq -n --arg turn "$TURN" --rawfile script "$STATE/harness.sh" '{turn: $turn, mode: "ask", cwd: "/tmp/turn",
        run_key: "local-run-key", linger_s: 30, close_stdin: false, script: $script}' >"$STATE/turn.json"
# The driver is the sidecar's daemon (hangar-driver serve, PID 1, Ready once
# its startup probe pinged it): a turn is one request, whose reply carries
# the relay's token and port. One exec into hangar-driver, one for the relay.
echo "  PID 1 of hangar-driver: $(in_driver -- cat /proc/1/cmdline | tr '\0' ' ')"
in_driver -- hangar-driver ctl ping >"$STATE/ping.json"
echo "  the daemon: $(jq -c '{instance, state, pid}' "$STATE/ping.json")"
in_driver -i -- hangar-driver ctl start --spec - <"$STATE/turn.json" >"$STATE/start.json"
echo "  ctl start: $(jq -c '{turn, port, instance}' "$STATE/start.json")"
# The relay hardens itself, says {"relay":"ready"}, and only then gets the
# token on its stdin (docs/turn.md: the order hangar keeps).
mkfifo "$STATE/relay.in"
in_agent -i -- env HANGAR_UID_SPLIT=required hangar-relay <"$STATE/relay.in" >"$STATE/relay.out" 2>"$LOGS/relay.log" &
RELAY_EXEC=$!
exec 7>"$STATE/relay.in"
wait_for 30 "the relay's ready line" grep -q '"relay":"ready"' "$STATE/relay.out"
# The token and the daemon's instance: the relay connects only to that daemon.
jq -r '"\(.token) \(.instance)"' "$STATE/start.json" >&7
exec 7>&-
asked() { in_driver -- hangar-driver ctl approvals >"$STATE/approvals.json" && jq -e 'any(.approvals[]; .id == "deploy")' "$STATE/approvals.json"; }
wait_for 60 "the harness's approval request" asked
echo "  the harness asked: $(jq -c '.approvals[] | select(.id == "deploy") | .request' "$STATE/approvals.json" | cut -c1-160)"
in_driver -- hangar-driver ctl approve deploy >/dev/null
echo "  hangar approved it through hangar-driver ctl"
exited() { [ "$(in_driver -- hangar-driver ctl status | jq -r .state)" = harness-exited ]; }
wait_for 60 "the harness's exit" exited
in_driver -- hangar-driver ctl finish >/dev/null
relay_rc=0
wait "$RELAY_EXEC" || relay_rc=$?
in_driver -- hangar-driver ctl status --turn "$TURN" >"$STATE/status.json"
echo "  driver: $(jq -c '{state, end: .["end"], harness}' "$STATE/status.json")"
echo "  relay:  $(tail -n 1 "$STATE/relay.out")"
echo "  the run's log, as the agent reads it from hangar-home:"
in_agent -- cat /var/lib/hangar/run/log >"$STATE/run.log"
sed 's/^/    /' "$STATE/run.log"

say "summary"
# Each line is checked; a line that cannot be made is a failure of the run.
turn_state=$(jq -r .state "$STATE/status.json")
harness_end=$(jq -r '.harness | "\(.end) \(.value)"' "$STATE/status.json")
in_driver -- hangar-driver ctl approvals >"$STATE/approvals.json"
decided=$(jq -r '.approvals[] | select(.id == "deploy") | .state' "$STATE/approvals.json")
relay_line=$(tail -n 1 "$STATE/relay.out" | jq -r .relay)
printf '  %-8s %s\n' pod "$NS/$POD Running, runtimeClassName $(jq -r .spec.runtimeClassName "$STATE/stored.json"), containers $containers" \
        probes "spec ${probe_result[spec]}, agent ${probe_result[agent]}, driver ${probe_result[driver]}" \
        verdict "$verdict" \
        approval "deploy $decided" \
        turn "$TURN $turn_state, harness $harness_end, relay $relay_line (exit $relay_rc)"
[ "${probe_result[spec]} ${probe_result[agent]} ${probe_result[driver]}" = "pass pass pass" ] ||
        fail "a probe did not pass (reports in $STATE)"
[ "$decided" = approved ] || fail "the approval is '$decided', not approved"
[ "$turn_state $harness_end $relay_rc" = "ended exited 0 0" ] ||
        fail "the turn did not end well (status in $STATE/status.json, relay's output in $STATE/relay.out)" "$LOGS/relay.log"
# The harness reads the driver's answer on its stdin.
grep -q '^got: {"type":"approval_response","id":"deploy","decision":"approve"}$' "$STATE/run.log" ||
        fail "the harness never read the approval (its log: $STATE/run.log)"
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
