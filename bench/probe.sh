#!/usr/bin/env bash
# shellcheck disable=SC2016 # commands run by eval or by another shell are single-quoted on purpose
# Benchmark: the wall time of `hangar-probe check --role agent`, natively and
# inside real pods (the pod harness, tests/pods/podrun) under runsc (gVisor)
# and crun, in the same run. Natively: N runs as uid 1000 through setpriv (no
# capabilities, no_new_privs) on the host, where every host process is
# visible (the check signals and opens each one), then N runs the same way in
# a private PID and mount namespace (unshare: only its own processes, as in a
# container), and one run as is (root). In a pod: N `podrun exec` of the
# probe against N `podrun exec ... true` (the exec overhead: podrun's bash
# and jq plus the runtime's exec), and one exec looping the probe N times
# against one looping `true` N times (the probe's own cost inside the
# sandbox, fork and exec included). Prints a table with the ratio of each
# figure to the native private-namespace one; no pass or fail.
# usage: bench/probe.sh [PATH/TO/hangar-probe] [N]
#   BENCH_RUNTIMES="runsc crun" by default, plus runsc-current when a current
#   runsc is in ~/.cache/hangar/runsc/ (tests/pods/build-runsc.sh) or named by
#   BENCH_RUNSC_CURRENT=PATH. A runtime whose pod does not start is left out
#   (said on stderr). Needs root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PROBE=$(realpath "${1:-$HERE/../build/probe/hangar-probe}")
N=${2:-20}
WEBHOOK=$(realpath "$(dirname "$PROBE")/../webhook/hangar-webhook")
PODRUN=$HERE/../tests/pods/podrun
[ "$(id -u)" = 0 ] || { echo "bench/probe.sh: needs root (setpriv, unshare, the runtimes)"; exit 1; }
for tool in jq setpriv unshare busybox; do
        command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh"; exit 1; }
done
CURRENT=${BENCH_RUNSC_CURRENT:-$(find "${HANGAR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar}/runsc" -mindepth 2 -maxdepth 2 -name runsc -type f 2>/dev/null | sort | tail -n 1 || true)}
if [ -z "${BENCH_RUNTIMES:-}" ]; then
        BENCH_RUNTIMES="runsc crun"
        [ -n "$CURRENT" ] && BENCH_RUNTIMES+=" runsc-current"
fi
TMP=$(mktemp -d /tmp/hangar-bench-probe.XXXXXX)
chmod 755 "$TMP"
PODS=()
cleanup() {
        local d
        for d in "${PODS[@]}"; do "$PODRUN" down --dir "$d" >/dev/null 2>&1 || true; done
        rm -rf "$TMP"
}
trap cleanup EXIT

# Wall clock in microseconds (bash's own clock: no process per reading).
now() { echo "${EPOCHREALTIME/./}"; }
ms() { awk -v us="$1" -v n="${2:-1}" 'BEGIN { printf "%.2f", us / n / 1e3 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "n/a" }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
AS_AGENT=(setpriv --reuid 1000 --regid 1000 --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs)

# pair N A B: runs A and B alternately N times (so drift hits both alike);
# prints the medians of A, of B and of the paired differences A-B, in ms.
pair() {
        local n=$1 a=$2 b=$3 i t0 t1 t2 da=() db=() dd=()
        for ((i = 0; i < n; i++)); do
                t0=$(now)
                eval "$a" >/dev/null 2>&1 || true
                t1=$(now)
                eval "$b" >/dev/null 2>&1 || true
                t2=$(now)
                da+=($((t1 - t0))) db+=($((t2 - t1))) dd+=($(((t1 - t0) - (t2 - t1))))
        done
        echo "$(ms "$(printf '%s\n' "${da[@]}" | median)") $(ms "$(printf '%s\n' "${db[@]}" | median)")" \
                "$(ms "$(printf '%s\n' "${dd[@]}" | median)")"
}

ROWS=()
row() { ROWS+=("$(printf '%-26s %-46s %9s %7s' "$1" "$2" "$3" "$4")"); }

# Natively. A warm-up run first (page cache); its result is printed (on the
# host the agent's checks do not pass: no hangar-home, the host's processes).
RESULTS=("native: $("${AS_AGENT[@]}" "$PROBE" check --role agent 2>/dev/null | jq -r '.result // "none"' 2>/dev/null || true)")
# Counted by the shell's glob: find(1) fails (and pipefail with it) when a
# process exits between its readdir and its stat, as one did in CI.
host_pids=(/proc/[0-9]*)
host_procs=${#host_pids[@]}
# (captured, then read: through a process substitution a failure would go unnoticed)
paired=$(pair "$N" '"${AS_AGENT[@]}" "$PROBE" check --role agent' '"${AS_AGENT[@]}" /bin/true')
read -r native_host _ native_host_net <<<"$paired"
# In a private PID and mount namespace (as in a container): one unshare runs
# the loop, timed inside; the same loop of /bin/true is subtracted.
ns_loop() { # CMD: N runs of CMD as uid 1000 in a fresh PID namespace; prints total us
        unshare --mount --pid --fork --mount-proc bash -c '
                n=$1; shift
                t0=${EPOCHREALTIME/./}
                for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1; done
                echo $((${EPOCHREALTIME/./} - t0))' - "$N" "${AS_AGENT[@]}" "$@"
}
native_ns_total=$(ns_loop "$PROBE" check --role agent)
native_ns_true_total=$(ns_loop /bin/true)
native_ns=$(ms "$native_ns_total" "$N")
native_ns_net=$(ms $((native_ns_total - native_ns_true_total)) "$N")
t0=$(now)
"$PROBE" check --role agent >/dev/null 2>&1 || true
native_root=$(ms $(($(now) - t0)))
row native "host PID namespace ($host_procs procs), uid 1000" "$native_host" "$(ratio "$native_host" "$native_ns")"
row native "  minus a setpriv /bin/true (the probe alone)" "$native_host_net" "$(ratio "$native_host_net" "$native_ns_net")"
row native "private PID namespace, uid 1000 (reference)" "$native_ns" 1.0
row native "  minus a setpriv /bin/true (the probe alone)" "$native_ns_net" 1.0
row native "as is (root, host PID namespace), 1 run" "$native_root" "$(ratio "$native_root" "$native_ns")"

# In pods.
cp "$HERE/../tests/pods/fixtures/sandbox-pod.yaml" "$TMP/pod.yaml"
"$WEBHOOK" inject -f "$TMP/pod.yaml" >"$TMP/pod.json" 2>/dev/null
for rt in $BENCH_RUNTIMES; do
        opts=(--runtime "$rt")
        label=$rt
        case $rt in
        runsc-current)
                opts=(--runtime runsc --runtime-bin "$CURRENT" --runtime-flag=--platform=systrap)
                label="runsc current, systrap" ;;
        runsc) label="runsc $(runsc --version 2>/dev/null | awk 'NR == 1 { sub(/^0\.0~/, "", $3); print $3 }'), ptrace" ;;
        esac
        dir=$TMP/pod-$rt
        PODS+=("$dir")
        if ! "$PODRUN" up -q --pod "$TMP/pod.json" --dir "$dir" "${opts[@]}" \
                --bin "$(dirname "$WEBHOOK")" --bin "$(dirname "$PROBE")" >"$TMP/$rt.up.log" 2>&1; then
                echo "podrun up under $rt failed: $(tail -n 3 "$TMP/$rt.up.log")" >&2
                continue
        fi
        x() { "$PODRUN" exec --dir "$dir" sandbox -- "$@"; }
        # The warm-up; its result is printed: what was timed is a probe that
        # ran its checks (a pod built from the webhook's output: pass).
        result=$(x hangar-probe check --role agent 2>/dev/null | jq -r '.result // "none"' 2>/dev/null || true)
        RESULTS+=("$label: ${result:-none}")
        paired=$(pair "$N" 'x hangar-probe check --role agent' 'x true')
        read -r exec_probe exec_true exec_net <<<"$paired"
        # One exec, the loop inside the sandbox, timed there with the
        # sandbox's /proc/uptime (busybox date has no %N: 10 ms resolution
        # over the whole loop).
        loop='n=$1; shift; read -r u0 _ </proc/uptime; i=0
              while [ $i -lt $n ]; do "$@" >/dev/null 2>&1; i=$((i + 1)); done
              read -r u1 _ </proc/uptime
              echo $(((${u1%.*}${u1#*.} - ${u0%.*}${u0#*.}) * 10000))'
        in_total=$(x sh -c "$loop" - "$N" hangar-probe check --role agent)
        in_true_total=$(x sh -c "$loop" - "$N" /bin/busybox true)
        in_loop=$(ms "$in_total" "$N")
        in_net=$(ms $((in_total - in_true_total)) "$N")
        row "$label" "podrun exec of the probe" "$exec_probe" "$(ratio "$exec_probe" "$native_ns")"
        row "$label" "podrun exec of true (the exec overhead)" "$exec_true" "$(ratio "$exec_true" "$native_ns")"
        row "$label" "  paired difference (the probe, via exec)" "$exec_net" "$(ratio "$exec_net" "$native_ns_net")"
        row "$label" "probe looped inside one exec" "$in_loop" "$(ratio "$in_loop" "$native_ns")"
        row "$label" "  minus a busybox true (the probe alone)" "$in_net" "$(ratio "$in_net" "$native_ns_net")"
        "$PODRUN" down --dir "$dir" >/dev/null 2>&1 || true
done

echo "hangar-probe check --role agent: wall time per run over $N runs, $(nproc) CPUs"
echo "(exec rows: medians, the probe and true alternating; loops: means. ratio: to the native"
echo " private-PID-namespace run, the \"probe alone\" rows to the native probe alone)"
printf '%-26s %-46s %9s %7s\n' "where" "what" "ms/run" "ratio"
printf '%s\n' "${ROWS[@]}"
echo "the probe's result (its warm-up run): $(printf '%s; ' "${RESULTS[@]}" | sed 's/; $//')"
