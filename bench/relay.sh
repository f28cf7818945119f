#!/usr/bin/env bash
# Benchmark: the sidecar relay (hangar-driver serve + hangar-relay) against
# plain loopback TCP on the same machine in the same run. No pass or fail,
# but every run must have moved all its bytes (or the bench stops).
#
# The host is laid out as the native test suites lay it out
# (tests/turn/hostlib.sh, whose preamble this script runs): its own mount
# namespace, hangar-home (uid 1001) seen by the agent (uid 1000) through a
# read-only bind mount, hangar-ctl a tmpfs, the split-active verdict
# delivered, the binaries copied where both uids reach them. The driver is
# the daemon (`hangar-driver serve` as uid 1001), each turn a `ctl start`.
# The relay starts as hangar starts it: as the agent, in a PID namespace of
# its own under a PID 1 of another uid (the container's command), so its
# sealed start really sweeps (in the host's PID namespace it would skip the
# sweep); the token and the daemon's instance go to it (`TOKEN INSTANCE`)
# only after its ready line, and it connects with the v2 handshake.
#
# (a) Throughput: the harness (`head -c N /dev/zero`) writes N bytes of
#     stdout; hangar-relay frames them over io and the daemon appends them
#     to the run log. The reference moves the same bytes through the same
#     hops with nothing in between: `head -c N /dev/zero |
#     hangar-bench-loopcopy send` (as the agent) into `hangar-bench-loopcopy
#     recv` (as the driver), which appends them to a file in the run log's
#     directory with 64 KiB reads and writes. The clock starts when the
#     sending side starts (the relay, ctl start's reply in hand: so its
#     start, home check, sweep, ready line and handshake are in the figure;
#     the send pipeline) and stops at the output file's last write (its
#     mtime), so neither the daemon's ctl start nor the turn's linger counts.
#     3 runs each, alternating; MiB/s median and the ratio relay/raw (also
#     printed: the relay's MiB/s from its ready line, its start left out). Each
#     relayed run must end with the relay's done line (harness status 0) and
#     a log of exactly N zero bytes; each raw run with N zero bytes.
#     The turn lingers 1 s after the harness's exit (hangar would send ctl
#     finish); the next turn starts once the daemon says the turn ended.
# (b) Round trip of one small message: hangar-bench-relayrtt (the driver's
#     side of the protocol, v2 handshake and instance included; the daemon
#     is stopped first) sends STDIN frames through a real hangar-relay,
#     started as in (a), to a `cat` harness and times each echo on STDOUT;
#     the reference is hangar-bench-loopcopy ping against its echo server.
#     The relay's start is not in these figures (each message is timed once
#     both channels are up). 3 runs each, alternating; the median of each
#     run's p50, p99 and mean.
# usage: bench/relay.sh BUILD_DIR [GIB]   (as root; GIB: default 1; fractions allowed)
#   BENCH_MESSAGES (2000) and BENCH_MESSAGE_SIZE (64) set (b)'s messages.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
BUILD=$(realpath "${1:?usage: bench/relay.sh BUILD_DIR [GIB]}")
GIB=${2:-1}
MESSAGES=${BENCH_MESSAGES:-2000}
MSG_SIZE=${BENCH_MESSAGE_SIZE:-64}
RUNS=3
BINS=("$BUILD/driver/hangar-driver" "$BUILD/relay/hangar-relay" "$BUILD/bench/hangar-bench-loopcopy"
        "$BUILD/bench/hangar-bench-relayrtt")
bench_host_check "$BUILD" "${BINS[@]}"
BYTES=$(awk -v g="$GIB" 'BEGIN { printf "%d", g * 1073741824 }')
[ "$BYTES" -gt 0 ] || { echo "GIB must be positive"; exit 1; }
bench_host_up "$@"
RTT=$T_TMP/bin/hangar-bench-relayrtt

# Wall clock and file mtimes in microseconds.
now() { echo "${EPOCHREALTIME/./}"; }
mtime_us() { local t; t=$(stat -c %.6Y "$1"); echo "${t/./}"; }
die() { bench_die "$@"; }
median() { bench_median; }
mibps() { awk -v b="$1" -v us="$2" 'BEGIN { printf "%.1f", b / 1048576 / (us / 1e6) }'; }
moved_all() { bench_moved_all "$1" "$BYTES"; }

# Each run sets RESULT (not a subshell: a failure exits the script).
SWEEPS=() READIES=()

# (a) one relayed turn -> MiB/s
relay_throughput() {
        local name=tput$1 t0
        rm -f "$LOG"
        jq -nc --arg id "$name" --arg cwd "$T_TMP/turn" --arg script "head -c $BYTES /dev/zero" \
                --argjson mib $((BYTES / 1048576 + 1)) \
                '{turn: $id, mode: "ask", cwd: $cwd, script: $script, run_key: "k", linger_s: 1, log_max_mib: $mib}' >"$name.spec"
        ctl start --spec - <"$name.spec" >"$name.start" 2>"$name.start.err" ||
                die "$name: ctl start: $(cat "$name.start.err")"
        t0=$(now)
        bench_relay "$name" "$(jq -r '"\(.token) \(.instance)"' "$name.start")"
        t_wait_for "[ \"\$(ctl status --turn $name | jq -r .state)\" = ended ]" 30 ||
                die "$name: the daemon did not end the turn: $(ctl status --turn "$name")"
        RESULT=$(mibps "$BYTES" $(($(mtime_us "$LOG") - t0)))
        FROM_READY=$(mibps "$BYTES" $(($(mtime_us "$LOG") - t0 - READY_US)))
        moved_all "$LOG"
        rm -f "$LOG"
        SWEEPS+=("$(head -n 1 "$name.relay.out" | jq -r '"\(.sweep.elapsed_ms) \(.sweep.killed) \(.sealed)"')")
        READIES+=("$READY_US")
}

# (a) one raw run -> MiB/s
raw_throughput() {
        local rpid t0
        rm -f home/raw.port "$RAW_OUT"
        as_driver "$LOOPCOPY" recv home/raw.port "$RAW_OUT" >recv.out &
        rpid=$!
        t_cleanup_pid "$rpid"
        t_wait_for "[ -s home/raw.port ]" 10 || die "no port from loopcopy recv"
        t0=$(now)
        head -c "$BYTES" /dev/zero | as_agent "$LOOPCOPY" send "$(cat home/raw.port)"
        wait "$rpid"
        RESULT=$(mibps "$BYTES" $(($(mtime_us "$RAW_OUT") - t0)))
        moved_all "$RAW_OUT"
        rm -f "$RAW_OUT"
}

# (b) one relayed run -> "p50 p99 mean" (microseconds)
relay_rtt() {
        local tpid
        rm -f home/relay.port rtt.out
        as_driver "$RTT" "$T_TMP/home" "$T_TMP/turn" cat "$MESSAGES" "$MSG_SIZE" >rtt.out 2>rtt.err &
        tpid=$!
        t_cleanup_pid "$tpid"
        t_wait_for "[ -s rtt.out ]" 10 || die "no token from hangar-bench-relayrtt: $(cat rtt.err)"
        bench_relay rtt "$(head -n 1 rtt.out)"
        wait "$tpid" || die "hangar-bench-relayrtt failed: $(cat rtt.err)"
        RESULT=$(tail -n 1 rtt.out | awk '{ print $2, $4, $6 }')
}

# (b) one raw run -> "p50 p99 mean" (microseconds)
raw_rtt() {
        local epid
        rm -f home/echo.port
        as_driver "$LOOPCOPY" echo home/echo.port &
        epid=$!
        t_cleanup_pid "$epid"
        t_wait_for "[ -s home/echo.port ]" 10 || die "no port from loopcopy echo"
        as_agent "$LOOPCOPY" ping "$(cat home/echo.port)" "$MESSAGES" "$MSG_SIZE" >ping.out
        wait "$epid"
        RESULT=$(awk '{ print $2, $4, $6 }' ping.out)
}

echo "hangar relay vs plain loopback TCP, $(nproc) CPUs, Linux $(uname -r), $T_TMP on $(df --output=fstype "$T_TMP" | tail -n 1)"
echo "load average at start: $(cut -d" " -f1-3 /proc/loadavg)"
host_serve bench || exit 1
echo
echo "(a) throughput: $GIB GiB ($BYTES B) of harness stdout into a file, $RUNS runs each, alternating"
printf '%-6s | %12s | %12s | %s\n' run "relay MiB/s" "raw MiB/s" "relay MiB/s from its ready line"
rel=() raw=() ready=()
for i in $(seq "$RUNS"); do
        relay_throughput "$i"
        rel+=("$RESULT") ready+=("$FROM_READY")
        raw_throughput
        raw+=("$RESULT")
        printf '%-6s | %12s | %12s | %s\n' "$i" "${rel[-1]}" "${raw[-1]}" "${ready[-1]}"
done
rel_med=$(printf '%s\n' "${rel[@]}" | median)
raw_med=$(printf '%s\n' "${raw[@]}" | median)
printf '%-6s | %12s | %12s | %s\n' median "$rel_med" "$raw_med" "$(printf '%s\n' "${ready[@]}" | median)"
echo "ratio relay/raw: $(ratio "$rel_med" "$raw_med") (target >= 0.80)"
echo "relay started to its ready line read (in the clock above), ms per run: $(printf '%s\n' "${READIES[@]}" | awk '{ printf "%s%.1f", (NR > 1 ? " " : ""), $1 / 1000 }')"
echo "sealed start per run (sweep ms, killed, sealed): $(printf '%s; ' "${SWEEPS[@]}")"
# (b) plays the driver itself: the daemon goes first.
kill -TERM "$(cat bench.serve.pid)"
t_wait_pid bench.serve.pid 10 >/dev/null || true

echo
echo "(b) round trip: $MESSAGES messages of $MSG_SIZE B, one in flight, $RUNS runs each, alternating"
r50=() r99=() rmean=() w50=() w99=() wmean=()
for _ in $(seq "$RUNS"); do
        relay_rtt
        read -r a b c <<<"$RESULT"
        r50+=("$a") r99+=("$b") rmean+=("$c")
        raw_rtt
        read -r a b c <<<"$RESULT"
        w50+=("$a") w99+=("$b") wmean+=("$c")
done
med() { printf '%s\n' "$@" | median; }
added() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
R50=$(med "${r50[@]}") R99=$(med "${r99[@]}") RM=$(med "${rmean[@]}")
W50=$(med "${w50[@]}") W99=$(med "${w99[@]}") WM=$(med "${wmean[@]}")
printf '%-22s | %8s | %8s | %8s\n' "" "p50 us" "p99 us" "mean us"
printf '%-22s | %8s | %8s | %8s\n' "relay (relayrtt + cat)" "$R50" "$R99" "$RM"
printf '%-22s | %8s | %8s | %8s\n' "raw (ping + echo)" "$W50" "$W99" "$WM"
printf '%-22s | %8s | %8s | %8s\n' "added (relay - raw)" "$(added "$R50" "$W50")" "$(added "$R99" "$W99")" "$(added "$RM" "$WM")"
echo "per-run p50 relay: ${r50[*]}; raw: ${w50[*]}"
echo "per-run p99 relay: ${r99[*]}; raw: ${w99[*]}"
echo "load average at the end: $(cut -d" " -f1-3 /proc/loadavg)"
