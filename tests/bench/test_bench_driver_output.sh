#!/usr/bin/env bash
# bench/driver-output.sh in its short mode (16 MiB per busy turn instead of
# 256; still 3 rounds): the driver's CPU and log writes per MiB of harness
# output, natively, against loopcopy recv (the reference) in the same run.
# Every round's figures, the medians and the ratio (n/a allowed when the
# reference's CPU came out 0 ticks, then not checked). The bench itself stops
# unless every busy turn logged exactly N zero bytes and every relay ended
# with the harness's status 0. Nothing about speed is asserted.
# usage: test_bench_driver_output.sh BUILD_DIR (root)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/benchlib.sh"
t_begin "bench/driver-output.sh, short: the driver's CPU and writes per MiB, and the reference, every figure there"
[ "$(id -u)" = 0 ] || { t_fail "needs root (bench/driver-output.sh: two uids, a bind mount, a PID namespace)"; t_end; }
F=$BENCH_F
bench_run driver-output bash "$ROOT/bench/driver-output.sh" "$1" 16
bench_section "^16 MiB of harness stdout per busy turn, 3 rounds"
for i in 1 2 3; do
	bench_row "round $i: fixed ms, busy ms, driver ms/MiB, writes/MiB, recv ms, recv ms/MiB" "^$i $F $F $F $F $F $F$"
	t_check "round $i: driver ms/MiB = (busy - fixed) / 16" awk -v f="${ROW[0]:-x}" -v b="${ROW[1]:-x}" -v d="${ROW[2]:-x}" \
		'BEGIN { x = (b - f) / 16 - d; exit !(x < 0.006 && x > -0.006) }'
done
bench_section
bench_row "the driver's median ms/MiB" "^median driver ms/MiB: $F$"
D=${ROW[0]}
bench_row "the driver's median writes/MiB" "^median driver writes/MiB: $F$"
bench_row "the reference's median ms/MiB" "^median reference ms/MiB: $F$"
R=${ROW[0]}
if BENCH_ALLOW_NA=1 bench_row "the ratio" "^ratio driver/reference: $F$" && [ "${ROW[0]}" != n/a ]; then
	bench_ratio "ratio" "$D" "$R" "${ROW[0]}"
fi
t_end
