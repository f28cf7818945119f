#!/usr/bin/env bash
# bench/webhook.sh in its short mode (1 s per run instead of 10): hangar-webhook
# against nginx (the reference) at c=1, 8, 32; each row's figures numbers and
# its ratios computed, peak RSS of both, the 1500-env pod's server-side time
# over its 50 reviews; the bench itself stops unless the webhook injected the
# benchmark's pod. Nothing about speed is asserted (tests/bench/benchlib.sh).
# usage: test_bench_webhook.sh HANGAR_WEBHOOK
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/benchlib.sh"
t_begin "bench/webhook.sh, short: the webhook and its reference (nginx) measured, every figure there"
F=$BENCH_F
bench_run webhook bash "$ROOT/bench/webhook.sh" "$1" 1
bench_row "the header" "^hangar-webhook vs nginx, HTTPS keep-alive, 1s per run, $F CPUs, body $F B, answer $F B$"
for c in 1 8 32; do
	if bench_row "c=$c: req/s, p50 and p99 of the webhook and nginx, and ratios" "^$c $F $F $F $F $F $F $F $F $F$"; then
		bench_ratio "c=$c req/s ratio" "${ROW[0]}" "${ROW[1]}" "${ROW[2]}"
		bench_ratio "c=$c p50 ratio" "${ROW[3]}" "${ROW[4]}" "${ROW[5]}"
		bench_ratio "c=$c p99 ratio" "${ROW[6]}" "${ROW[7]}" "${ROW[8]}"
	fi
done
bench_row "peak RSS of both" \
	"^peak RSS: webhook $F MiB \($F KiB\), nginx \(all processes\) $F MiB \($F KiB\), ratio $F$" &&
	bench_ratio "RSS ratio" "${ROW[1]}" "${ROW[3]}" "${ROW[4]}"
bench_row "the 1500-env pod" "^1500-env pod \($F B\): mean server-side review time $F ms over $F reviews$" &&
	t_eq "the 1500-env pod: every review counted" 50 "${ROW[2]}"
t_end
