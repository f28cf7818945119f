#!/usr/bin/env bash
# bench/tree.sh in its short mode (a tree of 300 files instead of 30000, in
# this suite's T_TMP): hangar-driver tree against git (the reference), warm
# and cold-ish; every run's figures numbers, the medians and ratios there;
# the bench itself stops unless hangar counted every file and every run
# hashed the tree as the first did. Nothing about speed is asserted.
# usage: test_bench_tree.sh BUILD_DIR
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/benchlib.sh"
t_begin "bench/tree.sh, short: hangar's tree hash and its reference (git) measured, every figure there"
F=$BENCH_F
FILES=300
TMPDIR=$T_TMP bench_run tree bash "$ROOT/bench/tree.sh" "$1" "$FILES"
bench_row "the tree" "^tree: $F files \($F MiB\), $F directories \(10 empty\), $F symlinks, seed 1$" &&
	t_eq "the tree: as many files as asked, 1121 directories (10 of them empty), 20 symlinks" "$FILES 1121 20" \
		"${ROW[0]} ${ROW[2]} ${ROW[3]}"
t_check "the hashes: hangar's SHA-256 tree and git's tree, each the same in every run" \
	grep -qE '^tree hash [0-9a-f]{64}, git tree [0-9a-f]{40} \(each the same in every run below\)$' "$BENCH_OUT"
table() { # LABEL SECTION-ERE
	local i
	bench_section "$2"
	for i in 1 2 3; do bench_row "$1: run $i, hangar and git (s)" "^$i $F $F$"; done
	bench_row "$1: the medians" "^median $F $F$" || return
	local h=${ROW[0]} g=${ROW[1]}
	bench_row "$1: the ratio git/hangar" "^ratio git/hangar: $F \(target: > 1, hangar faster\)$" &&
		bench_ratio "$1: ratio" "$g" "$h" "${ROW[0]}"
}
table "warm" "^warm cache: 3 runs each, alternating$"
bench_section
bench_row "cold-ish: the eviction checked" "^cold-ish check: $F bytes resident in 200 sample files after eviction$"
table "cold-ish" "^cold-ish cache \(file contents evicted before each run\): 3 runs each, alternating$"
t_end
