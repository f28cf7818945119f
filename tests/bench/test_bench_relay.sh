#!/usr/bin/env bash
# bench/relay.sh in its short mode (0.01 GiB instead of 1, 100 round trips
# instead of 2000; still 3 runs each): the relay (hangar-driver serve and
# hangar-relay, laid out as the native suites lay a turn out) against plain
# loopback TCP (the reference, hangar-bench-loopcopy). (a) throughput: every
# run's figures, the medians, the ratio, the relay's start and its sealed
# start's sweep per run; (b) round trips: relay, raw and their difference.
# The bench itself stops unless every run moved all its bytes (the relay's
# done line with the harness's status 0, a log of exactly N zero bytes).
# Nothing about speed is asserted. usage: test_bench_relay.sh BUILD_DIR (root)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/benchlib.sh"
t_begin "bench/relay.sh, short: the relay and its reference (loopback TCP) measured, every figure there"
[ "$(id -u)" = 0 ] || { t_fail "needs root (bench/relay.sh: two uids, a bind mount, a PID namespace)"; t_end; }
F=$BENCH_F
BENCH_MESSAGES=100 bench_run relay bash "$ROOT/bench/relay.sh" "$1" 0.01
bench_section "^\(a\) throughput: 0.01 GiB \(10737418 B\) of harness stdout into a file, 3 runs each, alternating$"
for i in 1 2 3; do bench_row "(a) run $i: relay, raw, relay from its ready line (MiB/s)" "^$i $F $F $F$"; done
bench_row "(a) the medians" "^median $F $F $F$"
R=${ROW[0]} W=${ROW[1]}
bench_row "(a) the ratio" "^ratio relay/raw: $F \(target >= 0.80\)$" && bench_ratio "(a) ratio" "$R" "$W" "${ROW[0]}"
bench_row "(a) the relay's start per run (ms)" "^relay started to its ready line read \(in the clock above\), ms per run: $F $F $F$"
bench_row "(a) the sealed start per run: sweep ms and processes killed, sealed" \
	"^sealed start per run \(sweep ms, killed, sealed\): $F $F true; $F $F true; $F $F true;$"
bench_section "^\(b\) round trip: 100 messages of 64 B, one in flight, 3 runs each, alternating$"
bench_row "(b) the relay (p50, p99, mean us)" "^relay \(relayrtt \+ cat\) $F $F $F$"
RR=("${ROW[@]}")
bench_row "(b) the reference (p50, p99, mean us)" "^raw \(ping \+ echo\) $F $F $F$"
RW=("${ROW[@]}")
if bench_row "(b) what the relay adds" "^added \(relay - raw\) $F $F $F$"; then
	for i in 0 1 2; do
		t_check "(b) added = relay - raw (${ROW[i]} = ${RR[i]:-?} - ${RW[i]:-?})" awk -v a="${RR[i]:-x}" -v b="${RW[i]:-x}" \
			-v d="${ROW[i]}" 'BEGIN { x = a - b - d; exit !(x < 0.051 && x > -0.051) }'
	done
fi
bench_row "(b) per-run p50s" "^per-run p50 relay: $F $F $F; raw: $F $F $F$"
bench_row "(b) per-run p99s" "^per-run p99 relay: $F $F $F; raw: $F $F $F$"
t_end
