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
#     ask turn (kubectl exec as hangar's identity): from the first exec to the
#     driver's harness.started event, with the steps between, against the
#     harness started by one exec in the agent's container (a turn without the
#     sidecar), and one `kubectl exec ... true`. Counts the execs a turn costs.
# (d) What the sidecar costs: the pod's cgroup (memory, cpuacct; v1, under the
#     kubelet's cgroupRoot) with and without the sidecar, idle; the driver
#     process's memory and CPU from the sandbox's /proc, waiting on an approval
#     and after a busy turn (BENCH_BUSY_MIB of output, 5 ctl runs), and the
#     pod's peak memory and CPU over that turn. Under gVisor the whole pod is
#     one sandbox (the Sentry and gofer) in the pod's cgroup: the host cannot
#     split it per container.
#
# usage: bench/node.sh BUILD_DIR [NODE_DIR]
#   BUILD_DIR   a configured CMake build dir (Ninja); when a node is started here
#               its binaries are brought up to date and its images built
#               (scripts/build-images.sh)
#   NODE_DIR    an existing node that scripts/local-run.sh set up (the chart with
#               the sidecar, hangar's identity $BENCH_HANGAR_ID in guard.driverUsers);
#               without it the script starts its own node and stops it at the end
#   BENCH_CREATES (300), BENCH_PODS (20), BENCH_TURNS (5), BENCH_BUSY_MIB (64)
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
# shellcheck source=../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
HANGAR_ID=${BENCH_HANGAR_ID:-$HANGAR_ID}
NS=hangar-bench
IMAGE=localhost/hangar-sandbox:dev
PROBE=$BUILD/probe/hangar-probe
[ "$(id -u)" = 0 ] || { echo "bench/node.sh: needs root (the node, the pods' cgroups)"; exit 1; }
[ -x "$PROBE" ] || { echo "missing $PROBE: ninja -C $BUILD hangar-webhook hangar-probe hangar-driver hangar-relay"; exit 1; }
for tool in jq python3 sha256sum; do
        command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh"; exit 1; }
done
K8S_BIN=$("$ROOT/scripts/k8s-tools.sh" | tail -n 1)
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

# ---- the node -------------------------------------------------------------
if [ -z "$NODE" ]; then
        NODE=$(mktemp -d /tmp/hangar-bench-nodedir.XXXXXX)
        export HANGAR_K8S_BIN=$K8S_BIN
        HANGAR_NODE_BIN=$("$ROOT/scripts/node-tools.sh" | tail -n 1)
        HANGAR_RUNSC_CURRENT=$("$ROOT/tests/pods/build-runsc.sh" | tail -n 1)
        export HANGAR_NODE_BIN HANGAR_RUNSC_CURRENT
        say "building the binaries and the images"
        ninja -C "$BUILD" hangar-webhook hangar-probe hangar-driver hangar-relay >"$TMP/ninja.log" ||
                { tail -n 20 "$TMP/ninja.log" >&2; exit 1; }
        mapfile -t ARCHIVES < <("$ROOT/scripts/build-images.sh" --build-dir "$BUILD" 2>"$TMP/images.log" | tail -n 3)
        say "starting a node in $NODE"
        STARTED=1
        "$ROOT/scripts/node.sh" start "$NODE" "${ARCHIVES[@]}" >"$TMP/node-start.log" 2>&1 ||
                { tail -n 20 "$TMP/node-start.log" >&2; exit 1; }
        export KUBECONFIG=$NODE/kubeconfig
        say "installing the chart (service mode, the sidecar on, as scripts/local-run.sh does)"
        hangar_system_namespace
        kubectl create namespace hangar >/dev/null
        kubectl create serviceaccount -n hangar hangar >/dev/null
        hangar_chart_install hangar >/dev/null
else
        NODE=$(realpath "$NODE")
        export KUBECONFIG=$NODE/kubeconfig
fi
SERVER=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
CG=hangar-node-$(printf '%s' "$NODE" | sha256sum | cut -c1-8)
kubectl create namespace "$NS" >/dev/null
kubectl create role -n "$NS" hangar --verb=get,list,watch --resource=pods >/dev/null
kubectl create role -n "$NS" hangar-exec --verb=create --resource=pods/exec >/dev/null
kubectl create rolebinding -n "$NS" hangar --role=hangar --user="$HANGAR_ID" >/dev/null
kubectl create rolebinding -n "$NS" hangar-exec --role=hangar-exec --user="$HANGAR_ID" >/dev/null
# Wait until the API server sends labelled pods to the webhook.
hangar_chart_ready hangar "$NS" 30

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
read -r w50 w99 wmean _ < <(kind_of webhook "$TMP/creates" | stats)
read -r n50 n99 nmean _ < <(kind_of plain "$TMP/creates" | stats)
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
read -r s50 s99 smean smax < <(kind_of sidecar "$TMP/running" | stats)
read -r p50 p99 pmean pmax < <(kind_of plain "$TMP/running" | stats)
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
read -r it_use _ it_rss it_cache _ < <(cg_read "$CG_TURN")
read -r ip_use _ ip_rss ip_cache _ < <(cg_read "$CG_PLAIN")
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
driver_pid() { x measure bench-turn hangar-driver -- pgrep -u 1001 -f 'hangar-driver relay' | head -n 1; }
proc_read() { # PID -> "VmRSS_kB VmHWM_kB utime+stime_ticks" of the driver, from the sandbox's /proc
        x measure bench-turn hangar-driver -- cat "/proc/$1/status" "/proc/$1/stat" 2>/dev/null |
                awk '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 } /^[0-9]+ \(/ { sub(/^.*\) /, ""); t = $12 + $13 }
                        END { print r + 0, h + 0, t + 0 }'
}
# run_turn N SPEC-FILE: the turn as local-run.sh runs it, the ask answered;
# TURN_T (us since the first exec) of each step into $TMP/turn.N.
run_turn() {
        local n=$1 spec=$2 t0 out
        out=$TMP/turn.$n
        : >"$out"
        rm -f "$TMP/relay.in" "$TMP/relay.out.$n"
        mkfifo "$TMP/relay.in"
        t0=$(now)
        echo "turn driver relay" >>"$TMP/execs"
        kubectl exec -n "$NS" bench-turn -c hangar-driver --as "$HANGAR_ID" -i -- \
                env HANGAR_UID_SPLIT=required hangar-driver relay --spec - <"$spec" >"$TMP/driver.out.$n" 2>&1 &
        DRIVER_EXEC=$!
        pids+=("$DRIVER_EXEC")
        local _
        for _ in $(seq 200); do
                x turn-poll bench-turn hangar-driver -- hangar-driver ctl token >"$TMP/token.json" 2>/dev/null && break
                sleep 0.1
        done
        echo "token $(($(now) - t0))" >>"$out"
        echo "turn hangar-relay" >>"$TMP/execs"
        kubectl exec -n "$NS" bench-turn -c sandbox --as "$HANGAR_ID" -i -- \
                env HANGAR_UID_SPLIT=required hangar-relay <"$TMP/relay.in" >"$TMP/relay.out.$n" 2>&1 &
        RELAY_EXEC=$!
        pids+=("$RELAY_EXEC")
        exec 7>"$TMP/relay.in"
        for _ in $(seq 1000); do grep -q '"relay":"ready"' "$TMP/relay.out.$n" 2>/dev/null && break; sleep 0.01; done
        grep -q '"relay":"ready"' "$TMP/relay.out.$n" || { cat "$TMP/relay.out.$n" >&2; exit 1; }
        echo "ready $(($(now) - t0))" >>"$out"
        jq -r .token "$TMP/token.json" >&7
        exec 7>&-
        echo "written $(($(now) - t0))" >>"$out"
        echo "t0 $t0" >>"$out"
        for _ in $(seq 300); do
                x turn-poll bench-turn hangar-driver -- hangar-driver ctl approvals 2>/dev/null | grep -q '"a1"' && break
                sleep 0.1
        done
        echo "asked $(($(now) - t0))" >>"$out"
        [ -z "${TURN_HOOK:-}" ] || "$TURN_HOOK"
        x turn bench-turn hangar-driver -- hangar-driver ctl approve a1 >/dev/null
        for _ in $(seq 600); do
                [ "$(x turn-poll bench-turn hangar-driver -- hangar-driver ctl status | jq -r .state)" = harness-exited ] && break
                sleep 0.1
        done
        echo "exited $(($(now) - t0))" >>"$out"
        [ -z "${EXITED_HOOK:-}" ] || "$EXITED_HOOK"
        x measure bench-turn hangar-driver -- hangar-driver ctl events >"$TMP/events.$n"
        x turn bench-turn hangar-driver -- hangar-driver ctl finish >/dev/null
        wait "$DRIVER_EXEC" "$RELAY_EXEC" || true
        echo "done $(($(now) - t0))" >>"$out"
        # harness.started: the driver's own clock (the sandbox's wall clock is the host's).
        awk -v t0="$t0" 'index($0, "\"harness.started\"") {
                match($0, /"ts": *[0-9.]+/); ts = substr($0, RSTART, RLENGTH); sub(/.*: */, "", ts)
                printf "started %.0f\n", ts * 1e6 - t0 }' "$TMP/events.$n" | head -n 1 >>"$out"
        grep -q '^started ' "$out" || { echo "turn $n: no harness.started event" >&2; cat "$TMP/driver.out.$n" "$TMP/events.$n" >&2; exit 1; }
}
say "(c) $TURNS turns"
turn_spec bench-ask "$HARNESS" >"$TMP/turn-ask.json"
# The driver idle during a turn (waiting on the approval), and the pod then.
idle_hook() {
        local pid a b
        pid=$(driver_pid)
        read -r _ _ a < <(proc_read "$pid")
        sleep 10
        read -r D_IDLE_RSS D_IDLE_HWM b < <(proc_read "$pid")
        D_IDLE_TICKS=$((b - a))
        read -r iw_use _ iw_rss iw_cache _ < <(cg_read "$CG_TURN")
}
: >"$TMP/execs"
for ((i = 1; i <= TURNS; i++)); do
        run_turn "$i" "$TMP/turn-ask.json"
        [ "$i" != 1 ] || cp "$TMP/execs" "$TMP/execs.first"
done
# One more, not timed: the driver idle while it waits on the approval.
TURN_HOOK=idle_hook run_turn idle "$TMP/turn-ask.json"
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
read -r st50 _ stmean stmax < <(field started)
read -r ref50 _ refmean refmax < <(awk '{ print $1 / 1e3 }' "$TMP/ref" | stats)
read -r tr50 _ trmean trmax < <(awk '{ print $1 / 1e3 }' "$TMP/true" | stats)
echo
echo "(c) a turn's start through pods/exec, $TURNS turns (ms since the first exec; load $(load) after)"
printf '%-52s %8s %8s %8s\n' "" p50 mean max
for k in token ready written started asked exited "done"; do
        case $k in
        token) what="ctl token answered (the driver listens)" ;;
        ready) what="relay said ready" ;;
        written) what="token written to the relay" ;;
        started) what="harness.started (the driver's event)" ;;
        asked) what="the approval request seen by ctl approvals" ;;
        exited) what="harness exited (after ctl approve)" ;;
        done) what="turn over (ctl finish, both execs ended)" ;;
        esac
        read -r a _ b c < <(field "$k")
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
turn_spec bench-busy "$BUSY" >"$TMP/turn-busy.json"
busy_start() {
        BUSY_PID=$(driver_pid)
        read -r _ _ BUSY_TICKS0 < <(proc_read "$BUSY_PID")
        echo 0 >"$CG_TURN/memory.max_usage_in_bytes" 2>/dev/null || true
        read -r _ _ _ _ BUSY_CPU0 < <(cg_read "$CG_TURN")
        BUSY_T0=$(now)
}
busy_exited() {
        local _i
        for _i in 1 2 3 4 5; do
                x turn bench-turn hangar-driver -- hangar-driver ctl run --timeout 60 -- sh -c 'ls / | wc -l' >/dev/null
        done
        read -r D_BUSY_RSS D_BUSY_HWM b < <(proc_read "$BUSY_PID")
        D_BUSY_TICKS=$((b - BUSY_TICKS0))
        read -r _ B_MAX _ _ B_CPU1 < <(cg_read "$CG_TURN")
        B_CPU=$((B_CPU1 - BUSY_CPU0))
        B_WALL=$(($(now) - BUSY_T0))
}
TURN_HOOK=busy_start EXITED_HOOK=busy_exited run_turn busy "$TMP/turn-busy.json"
logsize=$(x measure bench-turn sandbox -- stat -c %s /var/lib/hangar/run/log)
read -r bt_use _ bt_rss bt_cache _ < <(cg_read "$CG_TURN")
HZ=$(getconf CLK_TCK)
cpu_pct() { awk -v t="$1" -v hz="$HZ" -v us="$2" 'BEGIN { printf "%.1f", t / hz / (us / 1e6) * 100 }'; }
echo
echo "(d) what the sidecar costs (design page: 50m CPU and 64 MiB, estimates; load $(load) after)"
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
echo "host view of the pods' cgroups (per child: tasks, memory.usage_in_bytes):"
echo "  with sidecar: $(cg_split "$CG_TURN")"
echo "  without:      $(cg_split "$CG_PLAIN")"
echo "load at the end: $(load)"
