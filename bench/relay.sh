#!/usr/bin/env bash
# Benchmark: the sidecar relay (hangar-driver relay + hangar-relay) against
# plain loopback TCP on the same machine in the same run. No pass or fail.
#
# (a) Throughput: a harness (`head -c N /dev/zero`) writes N bytes of stdout;
#     hangar-relay frames them over io and the driver appends them to the run
#     log. The reference moves the same bytes through the same hops with
#     nothing in between: `head -c N /dev/zero | hangar-bench-loopcopy send`
#     into `hangar-bench-loopcopy recv`, which appends them to a file in the
#     run log's directory with 64 KiB reads and writes. The clock starts when
#     the sending side starts (the relay, with its token; the send pipeline)
#     and stops at the output file's last write (its mtime), so neither the
#     driver's setup nor its linger is counted. 3 runs each, alternating;
#     MiB/s median and the ratio relay/raw.
#     The turn lingers 1 s: with linger_s 0 the driver ends the turn on EXIT
#     without waiting for io's STDOUT EOF, and the log misses its tail.
# (b) Round trip of one small message: hangar-bench-relayrtt (the driver's
#     side of the protocol) sends STDIN frames through a real hangar-relay to
#     a `cat` harness and times each echo on STDOUT; the reference is
#     hangar-bench-loopcopy ping against its echo server. 3 runs each,
#     alternating; the median of each run's p50, p99 and mean.
# usage: bench/relay.sh BUILD_DIR [GIB]   (GIB: default 1; fractions allowed)
#   BENCH_MESSAGES (2000) and BENCH_MESSAGE_SIZE (64) set (b)'s messages.
set -euo pipefail
BUILD=$(realpath "${1:?usage: bench/relay.sh BUILD_DIR [GIB]}")
GIB=${2:-1}
MESSAGES=${BENCH_MESSAGES:-2000}
MSG_SIZE=${BENCH_MESSAGE_SIZE:-64}
RUNS=3
DRIVER=$BUILD/driver/hangar-driver
RELAY=$BUILD/relay/hangar-relay
LOOPCOPY=$BUILD/bench/hangar-bench-loopcopy
RTT=$BUILD/bench/hangar-bench-relayrtt
for bin in "$DRIVER" "$RELAY" "$LOOPCOPY" "$RTT"; do
        [ -x "$bin" ] || { echo "missing $bin: ninja -C $BUILD hangar-driver hangar-relay hangar-bench-loopcopy hangar-bench-relayrtt"; exit 1; }
done
command -v jq >/dev/null || { echo "missing jq: run scripts/install-deps.sh"; exit 1; }
BYTES=$(awk -v g="$GIB" 'BEGIN { printf "%d", g * 1073741824 }')
[ "$BYTES" -gt 0 ] || { echo "GIB must be positive"; exit 1; }

TMP=$(mktemp -d /tmp/hangar-bench-relay.XXXXXX)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        rm -rf "$TMP"
}
trap cleanup EXIT
# The driver's and the relay's volumes, the turn's directory, the agent's HOME.
mkdir -p "$TMP/home" "$TMP/ctl" "$TMP/work" "$TMP/agent"
echo '{"verdict":"split-active"}' >"$TMP/home/verdict.json"
cp "$TMP/home/verdict.json" "$TMP/ctl/verdict.json"
unset HANGAR_CONFIG
export HANGAR_HOME_PATH=$TMP/home HANGAR_CTL_PATH=$TMP/ctl HANGAR_UID_SPLIT=required HOME=$TMP/agent
LOG=$TMP/home/run/log
RAW_OUT=$TMP/home/run/raw.out

# Wall clock and file mtimes in microseconds.
now() { echo "${EPOCHREALTIME/./}"; }
mtime_us() { local t; t=$(stat -c %.6Y "$1"); echo "${t/./}"; }
wait_for() { # FILE: until it has content (10 s)
        local _
        for _ in $(seq 500); do [ -s "$1" ] && return 0; sleep 0.02; done
        echo "timed out waiting for $1" >&2
        exit 1
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mibps() { awk -v b="$1" -v us="$2" 'BEGIN { printf "%.1f", b / 1048576 / (us / 1e6) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
check_size() { # FILE: exactly BYTES long
        local got
        got=$(stat -c %s "$1")
        [ "$got" = "$BYTES" ] || { echo "$1: $got bytes, expected $BYTES" >&2; exit 1; }
}

# Each run sets RESULT (not a subshell: a failure exits the script, and the
# background pids stay in the cleanup list).

# (a) one relayed run -> MiB/s
relay_throughput() {
        rm -f "$TMP/home/relay.port" "$LOG"
        jq -nc --arg cwd "$TMP/work" --arg script "head -c $BYTES /dev/zero" \
                '{turn: "bench", mode: "ask", cwd: $cwd, script: $script, linger_s: 1}' >"$TMP/spec.json"
        "$DRIVER" relay --spec "$TMP/spec.json" >"$TMP/driver.out" 2>"$TMP/driver.err" &
        local dpid=$! token t0
        pids+=("$dpid")
        wait_for "$TMP/home/relay.port"
        token=$("$DRIVER" ctl token | jq -r .token)
        t0=$(now)
        "$RELAY" <<<"$token" >"$TMP/relay.out" 2>"$TMP/relay.err" ||
                { echo "hangar-relay failed: $(cat "$TMP/relay.out" "$TMP/relay.err")" >&2; exit 1; }
        wait "$dpid" || { echo "hangar-driver failed: $(cat "$TMP/driver.out" "$TMP/driver.err")" >&2; exit 1; }
        check_size "$LOG"
        RESULT=$(mibps "$BYTES" $(($(mtime_us "$LOG") - t0)))
        rm -f "$LOG"
}

# (a) one raw run -> MiB/s
raw_throughput() {
        rm -f "$TMP/raw.port" "$RAW_OUT"
        "$LOOPCOPY" recv "$TMP/raw.port" "$RAW_OUT" >"$TMP/recv.out" &
        local rpid=$! t0
        pids+=("$rpid")
        wait_for "$TMP/raw.port"
        t0=$(now)
        head -c "$BYTES" /dev/zero | "$LOOPCOPY" send "$(cat "$TMP/raw.port")"
        wait "$rpid"
        check_size "$RAW_OUT"
        RESULT=$(mibps "$BYTES" $(($(mtime_us "$RAW_OUT") - t0)))
        rm -f "$RAW_OUT"
}

# (b) one relayed run -> "p50 p99 mean" (microseconds)
relay_rtt() {
        rm -f "$TMP/home/relay.port" "$TMP/rtt.out"
        "$RTT" "$TMP/home" "$TMP/work" cat "$MESSAGES" "$MSG_SIZE" >"$TMP/rtt.out" 2>"$TMP/rtt.err" &
        local tpid=$!
        pids+=("$tpid")
        wait_for "$TMP/rtt.out"
        head -n 1 "$TMP/rtt.out" | "$RELAY" >"$TMP/relay.out" 2>"$TMP/relay.err" ||
                { echo "hangar-relay failed: $(cat "$TMP/relay.out" "$TMP/relay.err")" >&2; exit 1; }
        wait "$tpid" || { echo "hangar-bench-relayrtt failed: $(cat "$TMP/rtt.err")" >&2; exit 1; }
        RESULT=$(tail -n 1 "$TMP/rtt.out" | awk '{ print $2, $4, $6 }')
}

# (b) one raw run -> "p50 p99 mean" (microseconds)
raw_rtt() {
        rm -f "$TMP/echo.port"
        "$LOOPCOPY" echo "$TMP/echo.port" &
        local epid=$!
        pids+=("$epid")
        wait_for "$TMP/echo.port"
        "$LOOPCOPY" ping "$(cat "$TMP/echo.port")" "$MESSAGES" "$MSG_SIZE" >"$TMP/ping.out"
        wait "$epid"
        RESULT=$(awk '{ print $2, $4, $6 }' "$TMP/ping.out")
}

echo "hangar relay vs plain loopback TCP, $(nproc) CPUs, Linux $(uname -r)"
echo "load average at start: $(cut -d" " -f1-3 /proc/loadavg)"
echo
echo "(a) throughput: $GIB GiB ($BYTES B) of harness stdout into a file, $RUNS runs each, alternating"
printf '%-6s | %12s | %12s\n' run "relay MiB/s" "raw MiB/s"
rel=() raw=()
for i in $(seq "$RUNS"); do
        relay_throughput
        rel+=("$RESULT")
        raw_throughput
        raw+=("$RESULT")
        printf '%-6s | %12s | %12s\n' "$i" "${rel[-1]}" "${raw[-1]}"
done
rel_med=$(printf '%s\n' "${rel[@]}" | median)
raw_med=$(printf '%s\n' "${raw[@]}" | median)
printf '%-6s | %12s | %12s\n' median "$rel_med" "$raw_med"
echo "ratio relay/raw: $(ratio "$rel_med" "$raw_med") (target >= 0.80)"

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
