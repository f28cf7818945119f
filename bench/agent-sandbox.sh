#!/usr/bin/env bash
# Benchmark: from a SandboxClaim to its turn's harness started, with a warm
# pool and without (a cold Sandbox), on a node of scripts/node.sh with
# agent-sandbox v1.0.1 and hangar's chart in the integration mode of
# docs/agent-sandbox.md. No pass or fail.
#
# One SandboxTemplate (the page's: gVisor, the agent container `agent`
# named by hangar.dev/agent-container, localhost/hangar-sandbox:dev) and two
# pools of it: `warm` with one ready Sandbox, `cold` with none, so a claim
# of `cold` makes its Sandbox from the template then (agent-sandbox's cold
# path). Claims alternate warm and cold, one at a time; each is timed from
# its create request (kubectl create) through:
#   ready     the claim's Ready condition True (the pod Running with
#             hangar-driver Ready: the Sandbox is Ready only then);
#   checked   `hangar pod check NS/POD --mode required`: the probe in both
#             containers and the verdict delivered (the chart's
#             driver.uidSplit required refuses a turn without it), as a
#             user's first step on a new sandbox;
#   started   `hangar turn run NS/POD --spec FILE`'s harness.started line
#             (the daemon's event, polled in its output every 20 ms).
# Every turn must end done with exit 0 and a harness.started, or the bench
# stops. Before each warm claim the pool is back to one ready Sandbox, so
# every warm claim adopts a pod made before it; each claim and its Sandbox
# are deleted after its turn.
#
# usage: bench/agent-sandbox.sh BUILD_DIR NODE_DIR
#   BUILD_DIR   a built CMake build dir (client/hangar)
#   NODE_DIR    a running node (docs/node.md) whose chart release has the
#               page's values (selector Exists on
#               agents.x-k8s.io/sandbox-name-hash, driver.uidSplit required)
#               and selects namespace $BENCH_NS
#   BENCH_NS (required): an existing namespace, opted in to hangar, where
#               hangar's identity may get pods and create pods/exec;
#   BENCH_KUBECONFIG (required): hangar's identity (guard.driverUsers),
#               for the client, as a user runs it;
#   BENCH_RUNS (5): claims of each kind. The short run CI makes
#               (tests/bench/test_bench_agent_sandbox.sh): BENCH_RUNS=1.
#   agent-sandbox's controller: installed here (scripts/agent-sandbox.sh,
#   HANGAR_AGENT_SANDBOX_BIN) unless it runs, and then uninstalled at the end.
# Needs root (the node).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$(realpath "${1:?usage: bench/agent-sandbox.sh BUILD_DIR NODE_DIR}")
NODE=$(realpath "${2:?usage: bench/agent-sandbox.sh BUILD_DIR NODE_DIR}")
NS=${BENCH_NS:?BENCH_NS: the namespace to claim sandboxes in}
CLIENT_KUBECONFIG=$(realpath "${BENCH_KUBECONFIG:?BENCH_KUBECONFIG: hangar\'s identity}")
RUNS=${BENCH_RUNS:-5}
HANGAR=$BUILD/client/hangar
IMAGE=localhost/hangar-sandbox:dev
[ "$(id -u)" = 0 ] || { echo "bench/agent-sandbox.sh: needs root (the node)"; exit 1; }
[ -x "$HANGAR" ] || { echo "missing $HANGAR: ninja -C $BUILD hangar"; exit 1; }
for tool in jq kubectl; do
        command -v "$tool" >/dev/null || { echo "missing $tool (kubectl: HANGAR_K8S_BIN on PATH)"; exit 1; }
done
export KUBECONFIG=$NODE/kubeconfig

TMP=$(mktemp -d /tmp/hangar-bench-asb.XXXXXX)
INSTALLED=
cleanup() {
        kubectl delete sandboxclaim,sandboxwarmpool,sandboxtemplate -n "$NS" --all --wait=false >/dev/null 2>&1 || true
        kubectl delete sandbox -n "$NS" --all --wait=false >/dev/null 2>&1 || true
        [ -z "$INSTALLED" ] || "$ROOT/scripts/agent-sandbox.sh" uninstall "$NODE" >/dev/null 2>&1 || true
        rm -rf "$TMP"
}
trap cleanup EXIT
say() { echo "bench/agent-sandbox.sh: $*" >&2; }
die() { say "$*"; exit 1; }
now_ms() { date +%s%3N; }

if ! "$ROOT/scripts/agent-sandbox.sh" status "$NODE" >/dev/null 2>&1; then
        say "installing agent-sandbox's controller"
        INSTALLED=1
        "$ROOT/scripts/agent-sandbox.sh" install "$NODE" >"$TMP/install.log" 2>&1 ||
                { tail -n 20 "$TMP/install.log" >&2; die "scripts/agent-sandbox.sh install failed"; }
fi

# ---- the template and the two pools ----------------------------------------
jq -n --arg ns "$NS" --arg img "$IMAGE" '{apiVersion: "v1", kind: "List", items: [
  {apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "SandboxTemplate",
   metadata: {name: "bench", namespace: $ns},
   spec: {podTemplate: {metadata: {annotations: {"hangar.dev/agent-container": "agent"}},
     spec: {runtimeClassName: "gvisor", terminationGracePeriodSeconds: 5,
       securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000},
       containers: [{name: "agent", image: $img, command: ["sleep", "infinity"]}]}}}},
  {apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "SandboxWarmPool",
   metadata: {name: "warm", namespace: $ns}, spec: {replicas: 1, sandboxTemplateRef: {name: "bench"}}},
  {apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "SandboxWarmPool",
   metadata: {name: "cold", namespace: $ns}, spec: {replicas: 0, sandboxTemplateRef: {name: "bench"}}}]}' \
        >"$TMP/objects.json"
kubectl create -f "$TMP/objects.json" >/dev/null

# wait_for SECONDS CMD...: CMD every 20 ms until it succeeds; 1 if it never does.
wait_for() {
        local deadline=$((SECONDS + $1))
        shift
        until "$@" >/dev/null 2>&1; do
                ((SECONDS < deadline)) || return 1
                sleep 0.02
        done
}
pool_ready() { [ "$(kubectl get sandboxwarmpool -n "$NS" warm -o jsonpath='{.status.readyReplicas}')" = 1 ]; }
claim_ready() {
        [ "$(kubectl get sandboxclaim -n "$NS" "$1" \
                -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')" = True ]
}
started() { grep -q '"event":"harness.started"' "$1"; }

# The turn: a harness that says it started and exits.
jq -n '{turn: "t1", mode: "ask", cwd: "/tmp", script: "echo started", run_key: "RUN-KEY-t1",
        linger_s: 1, connect_timeout_s: 60, close_stdin: true}' >"$TMP/turn.spec"

# claim KIND I: one claim of pool KIND, timed; a line "KIND ready checked
# started" (ms since the claim's create) in $TMP/rows.
claim() {
        local kind=$1 name="c-$1-$2" t0 t1 t2 t3 pod rc
        t0=$(now_ms)
        jq -n --arg ns "$NS" --arg n "$name" --arg pool "$kind" '{apiVersion: "extensions.agents.x-k8s.io/v1beta1",
                kind: "SandboxClaim", metadata: {name: $n, namespace: $ns}, spec: {warmPoolRef: {name: $pool}}}' |
                kubectl create -f - >/dev/null
        wait_for 300 claim_ready "$name" || die "claim $name never became Ready"
        t1=$(now_ms)
        pod=$(kubectl get sandboxclaim -n "$NS" "$name" -o jsonpath='{.status.sandbox.name}')
        # (the settings that injected the pod: the page's driver.uidSplit)
        "$HANGAR" pod check "$NS/$pod" --mode required --set driver.uidSplit=required \
                --kubeconfig "$CLIENT_KUBECONFIG" >"$TMP/$name.check" 2>"$TMP/$name.check.err" ||
                die "hangar pod check $NS/$pod failed: $(tail -n 3 "$TMP/$name.check") $(tail -n 3 "$TMP/$name.check.err")"
        t2=$(now_ms)
        "$HANGAR" turn run "$NS/$pod" --spec "$TMP/turn.spec" --kubeconfig "$CLIENT_KUBECONFIG" \
                </dev/null >"$TMP/$name.jsonl" 2>"$TMP/$name.err" &
        local turn_pid=$!
        wait_for 120 started "$TMP/$name.jsonl" || { kill "$turn_pid" 2>/dev/null; die "no harness.started in $name's turn"; }
        t3=$(now_ms)
        rc=0
        wait "$turn_pid" || rc=$?
        if [ "$rc" != 0 ] ||
                ! jq -e 'select(.event == "turn.ended") | .end == "done" and .exit == 0' "$TMP/$name.jsonl" >/dev/null; then
                die "$name's turn did not end done (exit $rc): $(tail -n 2 "$TMP/$name.jsonl") $(tail -n 2 "$TMP/$name.err")"
        fi
        echo "$kind $((t1 - t0)) $((t2 - t0)) $((t3 - t0))" >>"$TMP/rows"
        say "$name ($pod): ready $((t1 - t0)) ms, checked $((t2 - t0)) ms, harness.started $((t3 - t0)) ms"
        kubectl delete sandboxclaim -n "$NS" "$name" --wait=false >/dev/null
        kubectl delete sandbox -n "$NS" "$pod" --wait=false >/dev/null 2>&1 || true
}

: >"$TMP/rows"
for i in $(seq 1 "$RUNS"); do
        wait_for 300 pool_ready || die "the warm pool never had a ready Sandbox"
        # (settled: the pod the pool made is idle before the claim, as a
        # pooled pod is when a user comes)
        sleep 2
        claim warm "$i"
        claim cold "$i"
done

# ---- the table ------------------------------------------------------------------
# stats KIND FIELD: "p50 mean max" of the rows' field FIELD (2 ready, 3
# checked, 4 started) for KIND.
stats() {
        awk -v k="$1" -v f="$2" '$1 == k { print $f }' "$TMP/rows" | sort -n |
                awk '{ v[NR] = $1; s += $1 } END { printf "%d %.0f %d", v[int((NR + 1) / 2)], s / NR, v[NR] }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
read -r la1 la5 la15 _ </proc/loadavg
echo "claim to a turn's harness.started, $RUNS claims each, alternating (ms since the claim's create; load $la1 $la5 $la15 after)"
echo "                                             p50 mean max"
for kind in warm cold; do
        label=$([ "$kind" = warm ] && echo "warm (a pooled pod adopted)" || echo "cold (a Sandbox made at the claim)")
        echo "$label"
        echo "  $kind: claim Ready                         $(stats "$kind" 2)"
        echo "  $kind: the verdict delivered (pod check)   $(stats "$kind" 3)"
        echo "  $kind: harness.started (turn run)          $(stats "$kind" 4)"
done
read -r w50 wmean wmax <<<"$(stats warm 4)"
read -r c50 cmean cmax <<<"$(stats cold 4)"
echo "ratio cold / warm, harness.started           $(ratio "$c50" "$w50") $(ratio "$cmean" "$wmean") $(ratio "$cmax" "$wmax")"
echo "what the warm pool saves, harness.started    $((c50 - w50)) $(awk -v a="$cmean" -v b="$wmean" 'BEGIN { printf "%.0f", a - b }') $((cmax - wmax))"
echo
