#!/usr/bin/env bash
# bench/daemon.sh in its short mode (2 turns each way instead of 5) under one
# runtime (the pod suites' RUNTIME [RUNTIME_BIN [FLAG...]] arguments): a
# turn's start before the daemon (`hangar-driver relay --spec -`, ctl token
# polled: the reference) and after it (`ctl start` to `hangar-driver
# serve`); each way's exec count (at least 3 before, 2 after), its times to
# harness.started, the relay's sweep, and the paired ratio. The bench itself
# stops unless every turn ran to the relay's done line with status 0 and a
# harness.started of its own. Nothing about speed is asserted.
# usage: test_bench_daemon.sh BUILD_DIR RUNTIME [RUNTIME_BIN [FLAG...]]
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/../pods/podlib.sh"
. "$HERE/benchlib.sh"
BUILD=${1:-} RUNTIME=${2:-runsc}
pods_runtime_opts "$RUNTIME" "${@:3}"
t_begin "bench/daemon.sh, short, $RUNTIME${RUNTIME_BIN:+ ($RUNTIME_BIN)}: a turn's start before and after the daemon, every figure there"
pods_preflight "$RUNTIME"
F=$BENCH_F
rt=$RUNTIME
if [ "$RUNTIME" = runsc ] && [ -n "$RUNTIME_BIN" ]; then rt=runsc-current; fi
BENCH_TURNS=2 BENCH_RUNTIMES=$rt BENCH_RUNSC_CURRENT=$RUNTIME_BIN \
	bench_run daemon bash "$ROOT/bench/daemon.sh" "$BUILD"
bench_section "^$rt: 2 turns each way \(ms from the first exec to harness.started\)"
bench_row "the section's load" "^$rt: 2 turns each way \(ms from the first exec to harness.started\), load $F $F $F$"
bench_row "before (the reference): execs, median, mean, max; the relay's sweep (median, max)" \
	"^before: relay --spec -, ctl token, relay $F $F $F $F $F, $F$" &&
	t_check "before: at least 3 execs (driver, ctl token, relay), ${ROW[0]}" test "${ROW[0]}" -ge 3
bench_row "after (the daemon): execs, median, mean, max; the relay's sweep (median, max)" \
	"^after: ctl start \(serve\), relay $F $F $F $F $F, $F$" &&
	t_eq "after: 2 execs (ctl start, the relay)" 2 "${ROW[0]}"
bench_row "the paired ratio" "^after/before, median of the 2 paired ratios: $F$"
t_end
