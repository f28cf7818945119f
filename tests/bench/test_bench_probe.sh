#!/usr/bin/env bash
# bench/probe.sh in its short mode (5 runs per figure instead of 20) under one
# runtime (the pod suites' RUNTIME [RUNTIME_BIN [FLAG...]] arguments: runsc,
# crun, runc, or runsc with a current build as runsc-current): the probe
# natively, in a private PID namespace (the reference) and on the host, then
# in a pod through podrun exec and looped inside one exec, each against its
# `true`; every row's figures numbers, and the probe's own result in the pod
# "pass" (what was timed is a probe that ran its checks). Nothing about speed
# is asserted. usage: test_bench_probe.sh HANGAR_PROBE RUNTIME [RUNTIME_BIN [FLAG...]]
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/../pods/podlib.sh"
. "$HERE/benchlib.sh"
PROBE=${1:-} RUNTIME=${2:-runsc}
pods_runtime_opts "$RUNTIME" "${@:3}"
t_begin "bench/probe.sh, short, $RUNTIME${RUNTIME_BIN:+ ($RUNTIME_BIN)}: the probe and its reference measured, every figure there"
pods_preflight "$RUNTIME"
F=$BENCH_F
case $RUNTIME in
runsc)
	if [ -n "$RUNTIME_BIN" ]; then
		rt=runsc-current label="runsc current, systrap"
	else
		rt=runsc label="runsc [^ ]+, ptrace"
	fi ;;
*) rt=$RUNTIME label=$RUNTIME ;;
esac
BENCH_RUNTIMES=$rt BENCH_RUNSC_CURRENT=$RUNTIME_BIN bench_run probe bash "$ROOT/bench/probe.sh" "$PROBE" 5
bench_row "the columns" "^where what ms/run ratio$"
bench_row "native, host PID namespace" "^native host PID namespace \($F procs\), uid 1000 $F $F$"
bench_row "native, private PID namespace (the reference)" "^native private PID namespace, uid 1000 \(reference\) $F 1.0$"
REF=${ROW[0]}
# The "probe alone" rows are differences of two timings: with few runs on a
# busy machine the native one can come out 0 or less, and every ratio to it
# is then n/a (and must be).
bench_section "^native private PID namespace, uid 1000 \(reference\)"
bench_row "native, private PID namespace, the probe alone (the reference of the alone rows)" \
	"^native minus a setpriv /bin/true \(the probe alone\) $F 1.0$"
REF_ALONE=${ROW[0]:-0}
bench_section
alone() { # WHAT ERE: a row whose ratio is to REF_ALONE
	BENCH_ALLOW_NA=1 bench_row "$1" "$2" || return
	if awk -v r="$REF_ALONE" 'BEGIN { exit !(r > 0) }'; then
		bench_ratio "$1: the ratio to the native probe alone" "${ROW[0]}" "$REF_ALONE" "${ROW[1]}"
	else
		t_eq "$1: no ratio to a native probe alone of $REF_ALONE ms" n/a "${ROW[1]}"
	fi
}
alone "native, host PID namespace, the probe alone" "^native minus a setpriv /bin/true \(the probe alone\) $F $F$"
bench_row "native, as is" "^native as is \(root, host PID namespace\), 1 run $F $F$" &&
	bench_ratio "native, as is: the ratio to the reference" "${ROW[0]}" "$REF" "${ROW[1]}"
bench_row "$rt: podrun exec of the probe" "^$label podrun exec of the probe $F $F$" &&
	bench_ratio "$rt: exec of the probe, the ratio to the reference" "${ROW[0]}" "$REF" "${ROW[1]}"
bench_row "$rt: podrun exec of true" "^$label podrun exec of true \(the exec overhead\) $F $F$"
alone "$rt: the paired difference" "^$label paired difference \(the probe, via exec\) $F $F$"
bench_row "$rt: the probe looped in one exec" "^$label probe looped inside one exec $F $F$"
alone "$rt: the probe alone in the pod" "^$label minus a busybox true \(the probe alone\) $F $F$"
bench_row "the probe's result: natively, and pass in the pod" \
	"^the probe's result \(its warm-up run\): native: [a-z]+; $label: pass$"
t_end
