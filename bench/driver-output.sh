#!/usr/bin/env bash
# Benchmark: the driver's CPU per MiB of harness output, natively, against
# a plain socket-to-file copy of the same bytes in the same run. No pass or
# fail, but every run must have moved all its bytes (or the bench stops).
#
# Laid out as bench/relay.sh and the native suites lay a turn out
# (tests/turn/hostlib.sh): the daemon (`hangar-driver serve`, uid 1001), a
# `ctl start` per turn, hangar-relay as the agent (uid 1000) given `TOKEN
# INSTANCE` after its ready line.
#
# - busy: the harness is `head -c N /dev/zero`; the relay frames its stdout
#   over io and the daemon appends it to the run log (log_max_mib set above
#   N, so every byte is written). The daemon's utime+stime (/proc/PID/stat)
#   is read before `ctl start` and after the turn ended.
# - fixed: the same turn with the harness `true` (0 bytes): what a turn
#   costs the daemon whatever its output (start, handshakes, events, the
#   status polls of this script). busy - fixed, over N MiB, is the figure.
# - reference: `head -c N /dev/zero | hangar-bench-loopcopy send` (as the
#   agent) into `hangar-bench-loopcopy recv` (as the driver): loopback TCP
#   into a file in the run log's directory, 64 KiB blocking reads and
#   writes, nothing else; the CPU of recv alone (bash's `times`).
# Beside the CPU, the daemon's write syscalls per MiB (syscw of
# /proc/PID/io, busy - fixed: write and writev, the log's writes; send is
# not counted, nor is recv in syscr): a counter, the same from run to run
# where CPU time is not, and a cost under gVisor (each syscall a trip
# through the sandbox's kernel).
# RUNS rounds (default 3), each fixed, busy and reference; medians.
# usage: bench/driver-output.sh BUILD_DIR [MIB]   (as root; MIB default 256)
#   BENCH_RUNS sets the rounds. BENCH_RUNSC=PATH runs the whole bench under
#   gVisor (`PATH do`, systrap, no network): the daemon, the relay, the
#   harness and the reference in one sandbox.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(realpath "${1:?usage: bench/driver-output.sh BUILD_DIR [MIB]}")
MIB=${2:-256}
RUNS=${BENCH_RUNS:-3}
BINS=("$BUILD/driver/hangar-driver" "$BUILD/relay/hangar-relay" "$BUILD/bench/hangar-bench-loopcopy")
bench_host_check "$BUILD" "${BINS[@]}"
if [ -n "${BENCH_RUNSC:-}" ] && [ "${HANGAR_BENCH_IN_RUNSC:-}" != 1 ]; then
        root=$(mktemp -d)
        trap 'rm -rf "$root"' EXIT
        HANGAR_BENCH_IN_RUNSC=1 "$BENCH_RUNSC" --root="$root" --platform=systrap --network=none \
                "do" env HANGAR_BENCH_IN_RUNSC=1 BENCH_RUNS="$RUNS" bash "$HERE/driver-output.sh" "$BUILD" "$MIB"
        exit $?
fi
[[ $MIB =~ ^[1-9][0-9]*$ ]] || { echo "MIB must be a whole number of MiB, at least 1"; exit 1; }
BYTES=$((MIB * 1048576))
bench_host_up "$@"
TCK=$(getconf CLK_TCK)

die() { bench_die "$@"; }
median() { bench_median; }
# cpu_ms PID: the process's utime+stime so far, in ms.
cpu_ms() { awk -v t="$TCK" '{ sub(/^.*\) /, ""); printf "%d", ($12 + $13) * 1000 / t }' "/proc/$1/stat"; }
# calls PID: its write syscalls so far (write, writev).
calls() { awk '/^syscw:/ { print $2 }' "/proc/$1/io"; }
moved_all() { bench_moved_all "$1" "$BYTES"; }

# turn NAME SCRIPT: one turn through the daemon; RESULT the daemon's CPU
# (ms) from before its ctl start to after its end, CALLS its write
# syscalls over the same span.
turn() {
        local name=$1 script=$2 before w0
        rm -f "$LOG"
        jq -nc --arg id "$name" --arg cwd "$T_TMP/turn" --arg script "$script" --argjson mib $((MIB + 1)) \
                '{turn: $id, mode: "ask", cwd: $cwd, script: $script, run_key: "k", linger_s: 1, log_max_mib: $mib}' >"$name.spec"
        before=$(cpu_ms "$SERVE")
        w0=$(calls "$SERVE")
        ctl start --spec - <"$name.spec" >"$name.start" 2>"$name.start.err" ||
                die "$name: ctl start: $(cat "$name.start.err")"
        bench_relay "$name" "$(jq -r '"\(.token) \(.instance)"' "$name.start")"
        t_wait_for "[ \"\$(ctl status --turn $name | jq -r .state)\" = ended ]" 60 ||
                die "$name: the daemon did not end the turn: $(ctl status --turn "$name")"
        RESULT=$(($(cpu_ms "$SERVE") - before))
        CALLS=$(($(calls "$SERVE") - w0))
}

# reference: loopcopy recv's own CPU (ms) for the same bytes.
reference() {
        local rpid
        rm -f home/raw.port "$RAW_OUT"
        as_driver bash -c '"$@"; times' recv "$LOOPCOPY" recv home/raw.port "$RAW_OUT" >recv.out &
        rpid=$!
        t_cleanup_pid "$rpid"
        t_wait_for "[ -s home/raw.port ]" 10 || die "no port from loopcopy recv"
        head -c "$BYTES" /dev/zero | as_agent "$LOOPCOPY" send "$(cat home/raw.port)"
        wait "$rpid"
        moved_all "$RAW_OUT"
        rm -f "$RAW_OUT"
        # times' second line: the children's user and system time, as 0m0.123s
        RESULT=$(tail -n 1 recv.out | awk '{ for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); t += p[1] * 60 + p[2] } printf "%d", t * 1000 }')
}

per_mib() { awk -v ms="$1" -v m="$MIB" 'BEGIN { printf "%.2f", ms / m }'; }

echo "hangar-driver's CPU per MiB of harness output, $(nproc) CPUs, Linux $(uname -r), the log on $(df --output=fstype "$T_TMP" | tail -n 1)"
echo "load average at start: $(cut -d" " -f1-3 /proc/loadavg)"
host_serve bench || exit 1
SERVE=$(cat bench.serve.pid)
echo
echo "$MIB MiB of harness stdout per busy turn, $RUNS rounds (CPU ms; clock ticks of $((1000 / TCK)) ms; writes: busy - fixed)"
printf '%-6s | %9s | %8s | %14s | %17s | %8s | %s\n' round "fixed ms" "busy ms" "driver ms/MiB" "driver writes/MiB" "recv ms" "recv ms/MiB"
drv=() ref=() wr=()
for i in $(seq "$RUNS"); do
        turn "fixed$i" true
        fixed=$RESULT
        fw=$CALLS
        turn "busy$i" "head -c $BYTES /dev/zero"
        busy=$RESULT
        bw=$CALLS
        moved_all "$LOG"
        rm -f "$LOG"
        reference
        drv+=("$(per_mib $((busy - fixed)))") ref+=("$(per_mib "$RESULT")")
        wr+=("$(per_mib $((bw - fw)))")
        printf '%-6s | %9s | %8s | %14s | %17s | %8s | %s\n' "$i" "$fixed" "$busy" "${drv[-1]}" "${wr[-1]}" "$RESULT" "${ref[-1]}"
done
D=$(printf '%s\n' "${drv[@]}" | median)
R=$(printf '%s\n' "${ref[@]}" | median)
echo "median driver ms/MiB: $D"
echo "median driver writes/MiB: $(printf '%s\n' "${wr[@]}" | median)"
echo "median reference ms/MiB: $R"
echo "ratio driver/reference: $(ratio "$D" "$R")"
echo "load average at the end: $(cut -d" " -f1-3 /proc/loadavg)"
