#!/usr/bin/env bash
# Benchmark: the sidecar on a real one-node cluster (scripts/node.sh: kubelet,
# containerd, gVisor's shim), each figure beside its reference measured in
# the same run. No pass or fail.
#
# (a) Pod create latency through the API server: labelled sandbox pods (sent
#     to the webhook, injected) against the same pod unlabelled (not sent),
#     alternating, timed per create by bench/nodeapi.py: one process, one
#     keep-alive HTTPS connection with the admin client cert, so no client
#     startup or handshake is counted. The pods are stored (admission,
#     webhook, etcd) but name a scheduler that does not exist: nothing runs.
# (b) Time to Running under gVisor (runtimeClassName gvisor,
#     localhost/hangar-sandbox:dev): a pod with the sidecar against the same
#     pod without it, alternating, one at a time (each deleted and gone before
#     the next), from the create request to phase Running (polled every 20 ms).
# (c) A turn's start through real pods/exec, as scripts/local-run.sh runs an
#     ask turn (kubectl exec as hangar's identity) against the chart's sidecar,
#     whose PID 1 is the driver's daemon (`hangar-driver serve`): `ctl start
#     --spec -` (its reply carries the token, port and instance), the relay in
#     the agent's container with `TOKEN INSTANCE` on its stdin after its ready
#     line, `ctl approvals` polled, `ctl approve`, `ctl status` polled, `ctl
#     finish`. From the first exec to the daemon's harness.started event, with
#     the steps between, against the harness started by one exec in the
#     agent's container of a pod without the sidecar (a turn without it), and
#     one `kubectl exec ... true`. Counts the execs a turn costs. Every turn
#     must have run: the relay's done line with the harness's status 0, and a
#     harness.started of that turn.
# (d) What the sidecar costs: the pod's cgroup (memory, cpuacct; v1, under the
#     kubelet's cgroupRoot) with and without the sidecar, idle (the daemon
#     waiting for a turn); the daemon's memory and CPU from the sandbox's
#     /proc (the process `ctl ping` names: PID 1 of hangar-driver), waiting on
#     an approval and after a busy turn (BENCH_BUSY_MIB of output, 5 ctl
#     runs), and the
#     pod's peak memory and CPU over that turn, and the daemon's CPU per MiB
#     of harness output over it. Under gVisor the whole pod is one sandbox
#     (the Sentry and gofer) in the pod's cgroup: the host cannot split it per
#     container.
# (e) The same ask turn through the client, `hangar turn run --approvals
#     approve` as hangar's identity (a token of its ServiceAccount): its own
#     execs (ctl start --follow and the relay together, the approval, ctl
#     finish), the events streamed, no polls. From the client's start to its
#     harness.started line (elapsed_ms), against one bare `hangar exec` of
#     the harness in the pod without the sidecar (the reference; the bare
#     `kubectl exec` of (c) beside it), and the execs a turn cost (the
#     client's count on its turn.ended line).
#
# usage: bench/node.sh BUILD_DIR [NODE_DIR]
#   BUILD_DIR   a configured CMake build dir (Ninja); when a node is started here
#               its binaries are brought up to date and its images built
#               (scripts/build-images.sh)
#   NODE_DIR    an existing node with the chart installed (the sidecar on,
#               hangar's identity $BENCH_HANGAR_ID in guard.driverUsers, its
#               webhooks selecting namespace hangar-bench): the one
#               scripts/local-run.sh set up, or the node suites' shared node
#               with a release of the checker's (tests/bench/test_bench_node.sh);
#               only namespace hangar-bench is made there, and deleted at the end.
#               Without NODE_DIR the script starts its own node, installs the
#               chart, and stops the node at the end
#   BENCH_CREATES (300), BENCH_PODS (20), BENCH_TURNS (5), BENCH_BUSY_MIB (64);
#   BENCH_RELEASE (hangar): the chart's release on NODE_DIR;
#   HANGAR_K8S_BIN: kubectl and helm from there (default: scripts/k8s-tools.sh's cache).
#   The short run CI makes (tests/bench): BENCH_CREATES=5 BENCH_PODS=1
#   BENCH_TURNS=2 BENCH_BUSY_MIB=2.
# Needs root (the node, the pods' cgroups).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$(realpath "${1:?usage: bench/node.sh BUILD_DIR [NODE_DIR]}")
NODE=${2:-}
CREATES=${BENCH_CREATES:-300}
PODS=${BENCH_PODS:-20}
TURNS=${BENCH_TURNS:-5}
BUSY_MIB=${BENCH_BUSY_MIB:-64}
RELEASE=${BENCH_RELEASE:-hangar}
# shellcheck source=../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
HANGAR_ID=${BENCH_HANGAR_ID:-$HANGAR_ID}
NS=hangar-bench
IMAGE=localhost/hangar-sandbox:dev
PROBE=$BUILD/probe/hangar-probe
HANGAR=$BUILD/client/hangar
[ "$(id -u)" = 0 ] || { echo "bench/node.sh: needs root (the node, the pods' cgroups)"; exit 1; }
[ -x "$PROBE" ] || { echo "missing $PROBE: ninja -C $BUILD hangar-webhook hangar-probe hangar-driver hangar-relay"; exit 1; }
[ -x "$HANGAR" ] || { echo "missing $HANGAR: ninja -C $BUILD hangar"; exit 1; }
for tool in jq python3 sha256sum; do
        command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh"; exit 1; }
done
K8S_BIN=${HANGAR_K8S_BIN:-$("$ROOT/scripts/k8s-tools.sh" | tail -n 1)}
export PATH=$K8S_BIN:$PATH

TMP=$(mktemp -d /tmp/hangar-bench-node.XXXXXX)
STARTED=
pids=()
cleanup() {
        local p
        exec 7>&- 2>/dev/null || true
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        if [ -n "$STARTED" ]; then
                "$ROOT/scripts/node.sh" stop "$NODE" >/dev/null 2>&1 || true
                rm -rf "$NODE"
        elif [ -n "$NODE" ] && [ -f "$NODE/kubeconfig" ]; then
                kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
        fi
        rm -rf "$TMP"
}
trap cleanup EXIT
say() { echo "bench/node.sh: $*" >&2; }
die() { say "$*"; exit 1; }

# ---- the node -------------------------------------------------------------
if [ -z "$NODE" ]; then
        NODE=$(mktemp -d /tmp/hangar-bench-nodedir.XXXXXX)
        export HANGAR_K8S_BIN=$K8S_BIN
        HANGAR_NODE_BIN=$("$ROOT/scripts/node-tools.sh" | tail -n 1)
        HANGAR_RUNSC_CURRENT=$("$ROOT/tests/pods/build-runsc.sh" | tail -n 1)
        export HANGAR_NODE_BIN HANGAR_RUNSC_CURRENT
        say "building the binaries and the images"
        # All of it: build-images.sh packages every binary the images hold
        # (hangar-grade too) through cpack.
        ninja -C "$BUILD" >"$TMP/ninja.log" || { tail -n 20 "$TMP/ninja.log" >&2; exit 1; }
        # Captured, then split: read through a process substitution, a failed
        # image build went unnoticed (scripts/lint.sh).
        images=$("$ROOT/scripts/build-images.sh" --build-dir "$BUILD" 2>"$TMP/images.log") ||
                { tail -n 20 "$TMP/images.log" >&2; die "scripts/build-images.sh failed"; }
        mapfile -t ARCHIVES <<<"$(tail -n 3 <<<"$images")"
        say "starting a node in $NODE"
        STARTED=1
        "$ROOT/scripts/node.sh" start "$NODE" "${ARCHIVES[@]}" >"$TMP/node-start.log" 2>&1 ||
                { tail -n 20 "$TMP/node-start.log" >&2; exit 1; }
        export KUBECONFIG=$NODE/kubeconfig
        say "installing the chart (service mode, the sidecar on, as scripts/local-run.sh does)"
        hangar_system_namespace
        kubectl create namespace hangar >/dev/null
        kubectl create serviceaccount -n hangar hangar >/dev/null
        hangar_chart_install "$RELEASE" >/dev/null
else
        NODE=$(realpath "$NODE")
        export KUBECONFIG=$NODE/kubeconfig
fi
SERVER=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
CG=hangar-node-$(printf '%s' "$NODE" | sha256sum | cut -c1-8)
if kubectl get namespace "$NS" >/dev/null 2>&1; then
        say "namespace $NS is left from an earlier run: waiting for it to go"
        kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true
        kubectl wait --for=delete "namespace/$NS" --timeout=180s >/dev/null 2>&1 || true
fi
# Opted in to hangar (the chart's scope label), as an admin makes a sandbox namespace.
hangar_sandbox_namespace "$NS"
kubectl create role -n "$NS" hangar --verb=get,list,watch --resource=pods >/dev/null
kubectl create role -n "$NS" hangar-exec --verb=get,create --resource=pods/exec >/dev/null
kubectl create rolebinding -n "$NS" hangar --role=hangar --user="$HANGAR_ID" >/dev/null
kubectl create rolebinding -n "$NS" hangar-exec --role=hangar-exec --user="$HANGAR_ID" >/dev/null
# Wait until the API server sends labelled pods to the webhook.
hangar_chart_ready "$RELEASE" "$NS" 60

# ---- helpers --------------------------------------------------------------
now() { echo "${EPOCHREALTIME/./}"; }
ms() { awk -v us="$1" 'BEGIN { printf "%.0f", us / 1e3 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
diff_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
# stats: numbers on stdin -> "p50 p99 mean max" (nearest rank)
stats() {
        sort -n | awk '{ v[NR] = $1; s += $1 } END {
                if (!NR) { print "n/a n/a n/a n/a"; exit }
                i = int(NR * 0.5 + 0.999999); j = int(NR * 0.99 + 0.999999)
                printf "%.1f %.1f %.1f %.1f\n", v[i], v[j], s / NR, v[NR] }'
}
kind_of() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
kib() { awk -v k="$1" 'BEGIN { if (k > 0) printf "%.1f", k / 1024; else print "n/a" }'; } # KiB -> MiB; 0: gVisor does not say
load() { cut -d' ' -f1-3 /proc/loadavg; }

# Every kubectl exec hangar makes goes through x, as hangar's identity; each
# is counted in $TMP/execs with what it was for ("turn" or "measure").
x() { # PURPOSE POD CONTAINER KUBECTL-EXEC-ARGS... -- CMD...
        local purpose=$1 pod=$2 c=$3 a cmd=()
        shift 3
        for a in "$@"; do
                if [ "${#cmd[@]}" -gt 0 ] || [ "$a" = -- ]; then cmd+=("$a"); fi
        done
        if [ "${cmd[1]:-}" = hangar-driver ] && [ "${cmd[2]:-}" = ctl ]; then
                echo "$purpose ctl ${cmd[3]:-}" >>"$TMP/execs"
        else
                echo "$purpose ${cmd[1]:-}" >>"$TMP/execs"
        fi
        kubectl exec -n "$NS" "$pod" -c "$c" --as "$HANGAR_ID" "$@"
}

wait_running() { kubectl wait -n "$NS" --for=condition=Ready "pod/$1" --timeout=300s >/dev/null; }
pod_cgroup() { # POD -> the pod's memory cgroup directory on the host
        local uid
        uid=$(kubectl get pod -n "$NS" "$1" -o jsonpath='{.metadata.uid}')
        find "/sys/fs/cgroup/memory/$CG" -maxdepth 3 -type d -name "pod$uid" | head -n 1
}
cg_read() { # MEMORY-CGROUP-DIR -> "usage max_usage rss cache cpuacct_ns"
        local d=$1 cpu
        cpu=$(cat "${d/\/memory\//\/cpuacct\/}/cpuacct.usage" 2>/dev/null || echo 0)
        echo "$(cat "$d/memory.usage_in_bytes") $(cat "$d/memory.max_usage_in_bytes")" \
                "$(awk '$1 == "total_rss" { r = $2 } $1 == "total_cache" { c = $2 } END { print r + 0, c + 0 }' "$d/memory.stat") $cpu"
}

echo "hangar sidecar on a one-node cluster ($(nproc) CPUs, load $(load) at the start; node $NODE)"

# ---- (a) creates ------------------------------------------------------------
say "(a) $CREATES creates of each kind"
python3 "$HERE/nodeapi.py" creates "$SERVER" "$NODE/pki" "$NS" "$CREATES" >"$TMP/creates"
# Each figure captured, then read: through a process substitution its
# command's failure would go unnoticed (scripts/lint.sh).
v=$(kind_of webhook "$TMP/creates" | stats)
read -r w50 w99 wmean _ <<<"$v"
v=$(kind_of plain "$TMP/creates" | stats)
read -r n50 n99 nmean _ <<<"$v"
echo
echo "(a) pod create through the API server, $CREATES each, alternating (ms; load $(load) after)"
printf '%-36s %8s %8s %8s\n' "" p50 p99 mean
printf '%-36s %8s %8s %8s\n' "labelled: webhook, injected" "$w50" "$w99" "$wmean"
printf '%-36s %8s %8s %8s\n' "unlabelled: not sent (reference)" "$n50" "$n99" "$nmean"
printf '%-36s %8s %8s %8s\n' "ratio" "$(ratio "$w50" "$n50")" "$(ratio "$w99" "$n99")" "$(ratio "$wmean" "$nmean")"
printf '%-36s %8s %8s %8s\n' "added by the webhook" "$(diff_of "$w50" "$n50")" "$(diff_of "$w99" "$n99")" "$(diff_of "$wmean" "$nmean")"
while [ -n "$(kubectl get pods -n "$NS" -l hangar.dev/bench=node -o name 2>/dev/null | head -n 1)" ]; do sleep 1; done

# ---- (b) time to Running ---------------------------------------------------
say "(b) $PODS gVisor pods of each kind to Running"
python3 "$HERE/nodeapi.py" running "$SERVER" "$NODE/pki" "$NS" "$PODS" "$IMAGE" >"$TMP/running"
v=$(kind_of sidecar "$TMP/running" | stats)
read -r s50 s99 smean smax <<<"$v"
v=$(kind_of plain "$TMP/running" | stats)
read -r p50 p99 pmean pmax <<<"$v"
echo
echo "(b) create to Running under gVisor, $PODS each, alternating, one at a time (ms; load $(load) after)"
printf '%-36s %8s %8s %8s %8s\n' "" p50 p99 mean max
printf '%-36s %8s %8s %8s %8s\n' "with the sidecar" "$s50" "$s99" "$smean" "$smax"
printf '%-36s %8s %8s %8s %8s\n' "without (reference)" "$p50" "$p99" "$pmean" "$pmax"
printf '%-36s %8s %8s %8s %8s\n' "ratio" "$(ratio "$s50" "$p50")" "$(ratio "$s99" "$p99")" "$(ratio "$smean" "$pmean")" "$(ratio "$smax" "$pmax")"

# ---- the pods for (c) and (d) ----------------------------------------------
pod_yaml() { # NAME LABEL
        cat <<POD
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $NS, labels: {hangar.dev/sandbox: "$2"}}
spec:
  runtimeClassName: gvisor
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000}
  terminationGracePeriodSeconds: 1
  containers:
  - name: sandbox
    image: $IMAGE
    imagePullPolicy: Never
    command: [sleep, infinity]
    securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
POD
}
pod_yaml bench-turn true | kubectl create -f - >/dev/null
pod_yaml bench-plain "no" | kubectl create -f - >/dev/null
wait_running bench-turn
wait_running bench-plain
# The verdict, as local-run.sh delivers it (not counted: once per pod, not per turn).
x setup bench-turn sandbox -- hangar-probe check --role agent >"$TMP/agent.json" || true
x setup bench-turn hangar-driver -- hangar-probe check --role driver >"$TMP/driver.json" || true
"$PROBE" spec --name bench-turn --namespace "$NS" --kubeconfig "$KUBECONFIG" >"$TMP/spec.json" || true
"$PROBE" verdict --mode required --spec "$TMP/spec.json" --agent "$TMP/agent.json" \
        --driver "$TMP/driver.json" --write "$TMP/verdict.json" >/dev/null || true
x setup bench-turn hangar-driver -i -- sh -c 'cat >/var/lib/hangar-ctl/verdict.json &&
        cp /var/lib/hangar-ctl/verdict.json /var/lib/hangar/verdict.json' <"$TMP/verdict.json"
x setup bench-turn sandbox -- mkdir -p /tmp/turn
[ "$(jq -r .verdict "$TMP/verdict.json")" = split-active ] ||
        { echo "the verdict is not split-active: $(cat "$TMP/verdict.json")" >&2; exit 1; }

# ---- (d, idle) the pods' cgroups with and without the sidecar --------------
sleep 5
CG_TURN=$(pod_cgroup bench-turn)
CG_PLAIN=$(pod_cgroup bench-plain)
if [ -z "$CG_TURN" ] || [ -z "$CG_PLAIN" ]; then
        echo "no pod cgroup under /sys/fs/cgroup/memory/$CG" >&2
        exit 1
fi
v=$(cg_read "$CG_TURN")
read -r it_use _ it_rss it_cache _ <<<"$v"
v=$(cg_read "$CG_PLAIN")
read -r ip_use _ ip_rss ip_cache _ <<<"$v"
# What the host can see inside a pod's cgroup: one directory per container
# (pause, sandbox, hangar-driver), but the sandbox's processes sit in one.
cg_split() { # DIR -> "name:tasks:usage ..." for the pod and each child
        local d out="" c
        for d in "$1" "$1"/*/; do
                d=${d%/}
                c=$(basename "$d")
                out+="${c:0:12}:tasks=$(wc -l <"$d/tasks"):$(mib "$(cat "$d/memory.usage_in_bytes")")MiB "
        done
        echo "$out"
}

# ---- (c) a turn's start ------------------------------------------------------
# shellcheck disable=SC2016 # the harness's own shell expands it
HARNESS='echo "harness running as uid $(id -u)"
echo "{\"type\": \"approval_request\", \"id\": \"a1\", \"action\": \"deploy\"}"
read -r answer
echo "got: $answer"'
turn_spec() { # TURN SCRIPT
        jq -n --arg turn "$1" --arg script "$2" '{turn: $turn, mode: "ask", cwd: "/tmp/turn",
                run_key: "bench-run-key", linger_s: 60, close_stdin: false, script: $script}'
}
# driver_pid: the process that runs the turn. Under `hangar-driver serve`
# that is the daemon itself (PID 1 of hangar-driver, no child per turn); it
# names itself in ctl ping's reply.
driver_pid() {
        local ping pid
        ping=$(x measure bench-turn hangar-driver -- hangar-driver ctl ping)
        pid=$(jq -r '.pid // empty' <<<"$ping")
        [[ $pid =~ ^[0-9]+$ ]] || die "ctl ping names no pid: $ping"
        echo "$pid"
}
proc_read() { # PID -> "VmRSS_kB VmHWM_kB utime+stime_ticks" of the driver, from the sandbox's /proc
        x measure bench-turn hangar-driver -- cat "/proc/$1/status" "/proc/$1/stat" |
                awk '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 } /^[0-9]+ \(/ { sub(/^.*\) /, ""); t = $12 + $13 }
                        END { print r + 0, h + 0, t + 0 }'
}
# poll SECONDS WHAT CMD...: CMD (a turn's exec) every 0.1 s until it succeeds;
# the bench stops when it has not after SECONDS.
poll() {
        local limit=$1 what=$2 t=$SECONDS
        shift 2
        until "$@"; do
                [ $((SECONDS - t)) -lt "$limit" ] || die "$what: not after ${limit}s"
                sleep 0.1
        done
}
asked() { # (the reply read whole first: grep -q leaving early could fail kubectl's write)
        local a
        a=$(x turn-poll bench-turn hangar-driver -- hangar-driver ctl approvals 2>/dev/null) || return 1
        grep -q '"a1"' <<<"$a"
}
exited() { [ "$(x turn-poll bench-turn hangar-driver -- hangar-driver ctl status | jq -r .state)" = harness-exited ]; }
ended() { [ "$(x measure bench-turn hangar-driver -- hangar-driver ctl status --turn "$1" | jq -r .state)" = ended ]; }
# run_turn N SCRIPT: an ask turn (TURN bench-N) as local-run.sh runs it, the
# ask answered; the time (us since the first exec) of each step into
# $TMP/turn.N. The daemon takes the next turn only once this one ended, which
# is waited for after the turn (measure execs, not the turn's).
run_turn() {
        local n=$1 t0 out turn=bench-$1 done_line t
        out=$TMP/turn.$n
        : >"$out"
        turn_spec "$turn" "$2" >"$TMP/spec.$n.json"
        rm -f "$TMP/relay.in" "$TMP/relay.out.$n"
        mkfifo "$TMP/relay.in"
        t0=$(now)
        x turn bench-turn hangar-driver -i -- hangar-driver ctl start --spec - <"$TMP/spec.$n.json" >"$TMP/start.$n.json" ||
                die "turn $n: ctl start refused: $(cat "$TMP/start.$n.json")"
        echo "start $(($(now) - t0))" >>"$out"
        echo "turn hangar-relay" >>"$TMP/execs"
        kubectl exec -n "$NS" bench-turn -c sandbox --as "$HANGAR_ID" -i -- \
                env HANGAR_UID_SPLIT=required hangar-relay <"$TMP/relay.in" >"$TMP/relay.out.$n" 2>&1 &
        RELAY_EXEC=$!
        pids+=("$RELAY_EXEC")
        exec 7>"$TMP/relay.in"
        # (the local poll of the relay's output file costs no exec)
        t=$SECONDS
        until grep -q '"relay":"ready"' "$TMP/relay.out.$n"; do
                [ $((SECONDS - t)) -lt 120 ] ||
                        die "turn $n: no ready line from the relay after 120s: $(head -c 600 "$TMP/relay.out.$n")"
                sleep 0.1
        done
        echo "ready $(($(now) - t0))" >>"$out"
        # The token and the daemon's instance, as hangar writes them.
        jq -r '"\(.token) \(.instance)"' "$TMP/start.$n.json" >&7
        exec 7>&-
        echo "written $(($(now) - t0))" >>"$out"
        echo "t0 $t0" >>"$out"
        poll 120 "turn $n: the approval request in ctl approvals" asked
        echo "asked $(($(now) - t0))" >>"$out"
        [ -z "${TURN_HOOK:-}" ] || "$TURN_HOOK"
        x turn bench-turn hangar-driver -- hangar-driver ctl approve a1 >/dev/null
        poll 120 "turn $n: ctl status harness-exited" exited
        echo "exited $(($(now) - t0))" >>"$out"
        [ -z "${EXITED_HOOK:-}" ] || "$EXITED_HOOK"
        x measure bench-turn hangar-driver -- hangar-driver ctl events --turn "$turn" >"$TMP/events.$n"
        x turn bench-turn hangar-driver -- hangar-driver ctl finish >/dev/null
        wait "$RELAY_EXEC" || true
        echo "done $(($(now) - t0))" >>"$out"
        # The turn ran: the relay's done line with the harness's status 0 ...
        done_line=$(grep '"relay":"done"' "$TMP/relay.out.$n" | tail -n 1)
        jq -e '.harness_value == 0' <<<"$done_line" >/dev/null 2>&1 ||
                die "turn $n: the relay did not end with the harness's status 0: $(tail -n 3 "$TMP/relay.out.$n")"
        # ... and harness.started: the driver's own clock (the sandbox's wall clock is the host's).
        awk -v t0="$t0" 'index($0, "\"harness.started\"") {
                match($0, /"ts": *[0-9.]+/); ts = substr($0, RSTART, RLENGTH); sub(/.*: */, "", ts)
                printf "started %.0f\n", ts * 1e6 - t0 }' "$TMP/events.$n" | head -n 1 >>"$out"
        grep -q '^started ' "$out" || die "turn $n: no harness.started event: $(head -c 600 "$TMP/events.$n")"
        poll 120 "turn $n: ctl status ended (after ctl finish)" ended "$turn"
}
say "(c) $TURNS turns"
# The driver idle during a turn (waiting on the approval), and the pod then.
idle_hook() {
        local pid a b v
        pid=$(driver_pid)
        v=$(proc_read "$pid")
        read -r _ _ a <<<"$v"
        sleep 10
        v=$(proc_read "$pid")
        read -r D_IDLE_RSS D_IDLE_HWM b <<<"$v"
        D_IDLE_TICKS=$((b - a))
        v=$(cg_read "$CG_TURN")
        read -r iw_use _ iw_rss iw_cache _ <<<"$v"
}
: >"$TMP/execs"
for ((i = 1; i <= TURNS; i++)); do
        run_turn "$i" "$HARNESS"
        [ "$i" != 1 ] || cp "$TMP/execs" "$TMP/execs.first"
done
# One more, not timed: the driver idle while it waits on the approval.
TURN_HOOK=idle_hook run_turn idle "$HARNESS"
field() { awk -v k="$1" '$1 == k { print $2 / 1e3 }' "$TMP"/turn.[0-9]* | stats; }
# The reference: the harness started in the agent's container by one exec
# (the turn without the sidecar); the time its first line reaches the host.
: >"$TMP/ref"
: >"$TMP/true"
for ((i = 1; i <= TURNS; i++)); do
        t0=$(now)
        x measure bench-plain sandbox -- sh -c 'echo started; sleep 0.2' | { read -r _; echo $(($(now) - t0)) >>"$TMP/ref"; cat >/dev/null; }
        t0=$(now)
        x measure bench-turn hangar-driver -- true
        echo $(($(now) - t0)) >>"$TMP/true"
done
[ "$(wc -l <"$TMP/ref")" = "$TURNS" ] || die "the reference's harness line did not arrive in every run"
v=$(field started)
read -r st50 _ stmean stmax <<<"$v"
v=$(awk '{ print $1 / 1e3 }' "$TMP/ref" | stats)
read -r ref50 _ refmean refmax <<<"$v"
v=$(awk '{ print $1 / 1e3 }' "$TMP/true" | stats)
read -r tr50 _ trmean trmax <<<"$v"
echo
echo "(c) a turn's start through pods/exec, $TURNS turns (ms since the first exec; load $(load) after)"
printf '%-52s %8s %8s %8s\n' "" p50 mean max
for k in start ready written started asked exited "done"; do
        case $k in
        start) what="ctl start answered (token, port, instance)" ;;
        ready) what="relay said ready" ;;
        written) what="token and instance written to the relay" ;;
        started) what="harness.started (the daemon's event)" ;;
        asked) what="the approval request seen by ctl approvals" ;;
        exited) what="harness exited (after ctl approve)" ;;
        done) what="turn over (ctl finish, the relay's exec ended)" ;;
        esac
        v=$(field "$k")
        read -r a _ b c <<<"$v"
        printf '%-52s %8s %8s %8s\n' "$what" "$a" "$b" "$c"
done
printf '%-52s %8s %8s %8s\n' "without the sidecar: one exec to the harness's line" "$ref50" "$refmean" "$refmax"
printf '%-52s %8s %8s %8s\n' "one kubectl exec of true (hangar-driver)" "$tr50" "$trmean" "$trmax"
printf '%-52s %8s %8s %8s\n' "ratio harness.started / without the sidecar" "$(ratio "$st50" "$ref50")" "$(ratio "$stmean" "$refmean")" "$(ratio "$stmax" "$refmax")"
breakdown() { # PURPOSE: the first turn's execs of that purpose, by command
        grep "^$1 " "$TMP/execs.first" | cut -d' ' -f2- | sort | uniq -c |
                awk '{ c = $1; $1 = ""; printf "%s%s x%d", s, substr($0, 2), c; s = ", " }'
}
fixed=$(grep -c '^turn ' "$TMP/execs.first" || true)
polls=$(grep -c '^turn-poll ' "$TMP/execs.first" || true)
echo "execs per turn (the first): $((fixed + polls)): $fixed fixed ($(breakdown turn)), $polls polls every 0.1 s ($(breakdown turn-poll))"
echo "  without the sidecar: 1 exec (the harness in the agent's container)"

# ---- (d, busy) a busy turn ---------------------------------------------------
say "(d) a busy turn ($BUSY_MIB MiB of output, 5 ctl runs)"
BUSY="echo \"{\\\"type\\\": \\\"approval_request\\\", \\\"id\\\": \\\"a1\\\"}\"
read -r answer
yes 'harness output: a line of a busy agent, about like a build log or a test run' | head -c $((BUSY_MIB * 1048576))
echo"
busy_start() {
        local v
        BUSY_PID=$(driver_pid)
        v=$(proc_read "$BUSY_PID")
        read -r _ _ BUSY_TICKS0 <<<"$v"
        echo 0 >"$CG_TURN/memory.max_usage_in_bytes" 2>/dev/null || true
        v=$(cg_read "$CG_TURN")
        read -r _ _ _ _ BUSY_CPU0 <<<"$v"
        BUSY_T0=$(now)
}
busy_exited() {
        local _i v b
        for _i in 1 2 3 4 5; do
                x turn bench-turn hangar-driver -- hangar-driver ctl run --timeout 60 -- sh -c 'ls / | wc -l' >/dev/null
        done
        v=$(proc_read "$BUSY_PID")
        read -r D_BUSY_RSS D_BUSY_HWM b <<<"$v"
        D_BUSY_TICKS=$((b - BUSY_TICKS0))
        v=$(cg_read "$CG_TURN")
        read -r _ B_MAX _ _ B_CPU1 <<<"$v"
        B_CPU=$((B_CPU1 - BUSY_CPU0))
        B_WALL=$(($(now) - BUSY_T0))
}
TURN_HOOK=busy_start EXITED_HOOK=busy_exited run_turn busy "$BUSY"
logsize=$(x measure bench-turn sandbox -- stat -c %s /var/lib/hangar/run/log)
v=$(cg_read "$CG_TURN")
read -r bt_use _ bt_rss bt_cache _ <<<"$v"
HZ=$(getconf CLK_TCK)
cpu_pct() { awk -v t="$1" -v hz="$HZ" -v us="$2" 'BEGIN { printf "%.1f", t / hz / (us / 1e6) * 100 }'; }
echo
echo "(d) what the sidecar costs (the design's estimate: 50m CPU and 64 MiB; load $(load) after)"
printf '%-58s %14s %14s %8s\n' "" "with sidecar" "without (ref)" ratio
printf '%-58s %14s %14s %8s\n' "pod cgroup memory.usage_in_bytes, idle (MiB)" "$(mib "$it_use")" "$(mib "$ip_use")" "$(ratio "$it_use" "$ip_use")"
printf '%-58s %14s %14s %8s\n' "  of which total_rss (MiB)" "$(mib "$it_rss")" "$(mib "$ip_rss")" "$(ratio "$it_rss" "$ip_rss")"
printf '%-58s %14s %14s %8s\n' "  of which total_cache (MiB)" "$(mib "$it_cache")" "$(mib "$ip_cache")" "$(ratio "$it_cache" "$ip_cache")"
printf '%-58s %14s\n' "pod memory, the driver waiting in a turn, usage / rss / cache" "$(mib "$iw_use") / $(mib "$iw_rss") / $(mib "$iw_cache")"
printf '%-58s %14s\n' "pod memory after the busy turn, usage / rss / cache (MiB)" "$(mib "$bt_use") / $(mib "$bt_rss") / $(mib "$bt_cache")"
printf '%-58s %14s\n' "pod peak memory over the busy turn, max_usage (MiB)" "$(mib "$B_MAX")"
printf '%-58s %14s\n' "pod CPU over the busy turn (cpuacct, whole sandbox)" "$(awk -v ns="$B_CPU" -v us="$B_WALL" 'BEGIN { printf "%.2f s in %.1f s = %.0fm", ns / 1e9, us / 1e6, ns / 1e9 / (us / 1e6) * 1000 }')"
printf '%-58s %14s\n' "the driver process, waiting on an approval: VmRSS / VmHWM" "$(kib "$D_IDLE_RSS") / $(kib "$D_IDLE_HWM") MiB"
printf '%-58s %14s\n' "  its CPU over 10 s waiting (utime+stime)" "$D_IDLE_TICKS ticks ($(cpu_pct "$D_IDLE_TICKS" 10000000)%)"
printf '%-58s %14s\n' "the driver after the busy turn ($(mib "$logsize") MiB log): VmRSS / VmHWM" "$(kib "$D_BUSY_RSS") / $(kib "$D_BUSY_HWM") MiB"
printf '%-58s %14s\n' "  its CPU over the busy turn (utime+stime)" "$D_BUSY_TICKS ticks = $(awk -v t="$D_BUSY_TICKS" -v hz="$HZ" 'BEGIN { printf "%.2f", t / hz }') s ($(cpu_pct "$D_BUSY_TICKS" "$B_WALL")% of $(awk -v us="$B_WALL" 'BEGIN { printf "%.1f", us / 1e6 }') s)"
printf '%-58s %14s\n' "  its CPU per MiB of harness output (busy turn, ms/MiB)" "$(awk -v t="$D_BUSY_TICKS" -v hz="$HZ" -v m="$BUSY_MIB" 'BEGIN { printf "%.2f", t / hz * 1000 / m }')"
echo "host view of the pods' cgroups (per child: tasks, memory.usage_in_bytes):"
echo "  with sidecar: $(cg_split "$CG_TURN")"
echo "  without:      $(cg_split "$CG_PLAIN")"

# ---- (e) the same turn through the client ------------------------------------
say "(e) $TURNS turns through hangar turn run"
# hangar's identity as the client reads it: a kubeconfig with a token of
# its ServiceAccount (system:serviceaccount:NS:NAME) and the cluster's CA.
[[ $HANGAR_ID =~ ^system:serviceaccount:([^:]+):([^:]+)$ ]] || die "hangar's identity $HANGAR_ID is not a ServiceAccount"
admin=$(kubectl config view --raw --minify -o json)
ca=$(jq -r '.clusters[0].cluster["certificate-authority-data"] // empty' <<<"$admin")
[ -n "$ca" ] || ca=$(base64 -w0 <"$(jq -r '.clusters[0].cluster["certificate-authority"]' <<<"$admin")")
token=$(kubectl create token "${BASH_REMATCH[2]}" -n "${BASH_REMATCH[1]}" --duration=1h)
jq -n --arg s "$SERVER" --arg ca "$ca" --arg t "$token" '{apiVersion: "v1", kind: "Config",
        clusters: [{name: "node", cluster: {server: $s, "certificate-authority-data": $ca}}],
        users: [{name: "hangar", user: {token: $t}}],
        contexts: [{name: "hangar", context: {cluster: "node", user: "hangar"}}],
        "current-context": "hangar"}' >"$TMP/hangar.kubeconfig"
chmod 600 "$TMP/hangar.kubeconfig"
H() { KUBECONFIG=$TMP/hangar.kubeconfig "$HANGAR" "$@"; }
# first_line_us CMD...: from starting CMD to its first line of stdout.
first_line_us() { local t0 l; t0=$(now); "$@" </dev/null | { read -r l && [ "$l" = started ] && echo $(($(now) - t0)); cat >/dev/null; }; }
: >"$TMP/client.started"
: >"$TMP/client.bare"
: >"$TMP/client.execs"
for ((i = 1; i <= TURNS; i++)); do
        turn_spec "client-$i" "$HARNESS" >"$TMP/cspec.$i.json"
        H turn run "$NS/bench-turn" --spec "$TMP/cspec.$i.json" --approvals approve \
                </dev/null >"$TMP/client.$i.jsonl" 2>"$TMP/client.$i.err" ||
                die "client turn $i: hangar turn run exited $?: $(tail -n 2 "$TMP/client.$i.jsonl") $(head -c 300 "$TMP/client.$i.err")"
        v=$(jq -r 'select(.event == "turn.ended") | "\(.end) \(.harness.value) \(.execs)"' "$TMP/client.$i.jsonl")
        read -r cend cval cexecs <<<"$v"
        [ "$cend $cval" = "done 0" ] || die "client turn $i did not end done with the harness's 0: $v"
        echo "$cexecs" >>"$TMP/client.execs"
        jq -r 'select(.event == "turn.event" and .record.event == "harness.started") | .elapsed_ms' \
                "$TMP/client.$i.jsonl" >>"$TMP/client.started"
        first_line_us H exec "$NS/bench-plain" -c sandbox -- sh -c 'echo started; sleep 0.2' >>"$TMP/client.bare"
done
[ "$(wc -l <"$TMP/client.started")" = "$TURNS" ] || die "a client turn has no harness.started line"
[ "$(grep -c '^[0-9]' "$TMP/client.bare")" = "$TURNS" ] || die "a bare hangar exec printed no line"
v=$(stats <"$TMP/client.started")
read -r c50 _ cmean cmax <<<"$v"
v=$(awk '{ print $1 / 1e3 }' "$TMP/client.bare" | stats)
read -r hb50 _ hbmean hbmax <<<"$v"
echo
echo "(e) the same turn through the client (hangar turn run --approvals approve), $TURNS turns (ms; load $(load) after)"
printf '%-52s %8s %8s %8s\n' "" p50 mean max
printf '%-52s %8s %8s %8s\n' "hangar turn run to harness.started" "$c50" "$cmean" "$cmax"
printf '%-52s %8s %8s %8s\n' "bare hangar exec: the harness's line, no sidecar" "$hb50" "$hbmean" "$hbmax"
printf '%-52s %8s %8s %8s\n' "bare kubectl exec: the harness's line, no sidecar" "$ref50" "$refmean" "$refmax"
printf '%-52s %8s %8s %8s\n' "ratio turn run / bare hangar exec" "$(ratio "$c50" "$hb50")" "$(ratio "$cmean" "$hbmean")" "$(ratio "$cmax" "$hbmax")"
printf '%-52s %8s %8s %8s\n' "ratio turn run / bare kubectl exec" "$(ratio "$c50" "$ref50")" "$(ratio "$cmean" "$refmean")" "$(ratio "$cmax" "$refmax")"
echo "execs per ask turn with one approval (hangar turn run, per turn): $(tr '\n' ' ' <"$TMP/client.execs" | sed 's/ $//')"
echo "load at the end: $(load)"
