#!/usr/bin/env bash
# bench/webhook-memory.sh in its short mode (2 sources x 8 connections
# instead of 8 x 64): every way of filling the table reported, each with
# every connection held and its RSS figures numbers; the held RSS never
# below the RSS after start. Nothing about size is asserted.
# usage: test_bench_webhook_memory.sh BUILD_DIR
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/benchlib.sh"
t_begin "bench/webhook-memory.sh, short: the webhook's memory with its table full, every row there"
F=$BENCH_F
bench_run webhook-memory bash "$ROOT/bench/webhook-memory.sh" "$1" 2 8
for mode in idle bodies reviews; do
	bench_row "$mode" "^$mode $F of $F connections held: VmRSS after start $F KiB, held $F KiB \(peak sampled\), VmHWM $F KiB$" &&
		t_eq "$mode: all 16 held, the held RSS at least the start's" "16 16 yes" \
			"${ROW[0]} ${ROW[1]} $([ "${ROW[3]}" -ge "${ROW[2]}" ] && echo yes)"
done
bench_row "bodies+reviews" "^bodies\+reviews $F \+ $F of $F connections held: VmRSS after start $F KiB, held $F KiB \(peak sampled\), VmHWM $F KiB$" &&
	t_eq "bodies+reviews: 8 + 8 of 16 held" "8 8 16" "${ROW[0]} ${ROW[1]} ${ROW[2]}"
t_end
