# shellcheck shell=bash
# What the bench checkers share (tests/bench/test_bench_*.sh, ctest label
# "bench"): each runs one script of bench/ once in a short mode and checks
# that it still measures what it says: it ran to its end, every row of its
# table is there with numbers that parse, ratios computed (the ratio of the
# figures beside it), its reference measured, its own correctness checks
# passed. No figure is compared with a limit: speed is never asserted
# (docs/benchmarks.md). A renamed row, a figure printed as n/a or a bench
# that stops half-way fails the checker, so a change to a bench's interface
# fails CI instead of rotting until someone runs it.
# Source after tests/lib/testlib.sh.

# bench_run NAME CMD...: runs CMD (the bench), its stdout and stderr in
# $T_TMP/NAME.out, shown indented; the suite ends (failed) when it does not
# exit 0. The checks below then read that output (BENCH_OUT).
bench_run() {
	local name=$1 t0=$SECONDS rc=0
	shift
	echo "  running: $*"
	"$@" >"$T_TMP/$name.out" 2>&1 || rc=$?
	sed 's/^/  | /' "$T_TMP/$name.out"
	t_eq "$name: the bench ran to its end ($((SECONDS - t0)) s)" "exit 0" "exit $rc"
	[ "$rc" = 0 ] || t_end
	BENCH_OUT=$T_TMP/$name.out
	BENCH_SCOPE=$BENCH_OUT
}

# bench_section REGEX: the checks that follow read only the lines from the
# first one matching REGEX (ERE, against the line made as bench_row makes
# it) to the next empty line (one table); with no argument, the whole output
# again.
bench_section() {
	BENCH_SCOPE=$BENCH_OUT
	[ "$#" -gt 0 ] || return 0
	BENCH_SCOPE=$T_TMP/section.$((++BENCH_SECTIONS))
	awk -v re="$1" '{ l = $0; gsub(/\|/, " ", l); gsub(/ +/, " ", l); sub(/^ /, "", l); sub(/ $/, "", l) }
		on && l == "" { exit } on || l ~ re { on = 1; print }' "$BENCH_OUT" >"$BENCH_SCOPE"
	if [ -s "$BENCH_SCOPE" ]; then
		t_check "a section like /$1/" true
	else
		t_fail "no section like /$1/ in the bench's output"
	fi
}
BENCH_SECTIONS=0

# bench_is_num VALUE: a decimal number (a sign and a fraction allowed); not
# n/a, not empty.
bench_is_num() { [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]]; }

# bench_row WHAT ERE: the first line of the section (bench_section) matching
# ERE, matched after every "|" is made a space, runs of spaces squeezed to
# one and the ends trimmed; each of ERE's groups must be a number. The
# numbers go to ROW (ROW[0] the first group). A missing line or a group that
# is not a number is a failed check that says which. BENCH_ALLOW_NA=1 lets a
# group be "n/a" too (a ratio to a figure that can be 0 or less; the caller
# checks when).
# BENCH_F is a group for one figure; write ERE with single spaces.
# shellcheck disable=SC2034 # the checkers' own (they source this file)
BENCH_F='([^ ]+)'
bench_row() {
	local what=$1 re=$2 line m bad="" v
	ROW=()
	while IFS= read -r line; do
		line=${line//|/ }
		line=$(tr -s ' ' <<<"$line")
		line=${line# }
		line=${line% }
		[[ $line =~ $re ]] || continue
		m=("${BASH_REMATCH[@]:1}")
		for v in "${m[@]}"; do
			bench_is_num "$v" || { [ "${BENCH_ALLOW_NA:-}" = 1 ] && [ "$v" = n/a ]; } || bad+=" [$v]"
		done
		# shellcheck disable=SC2034 # read by the checkers
		ROW=("${m[@]}")
		if [ "${#m[@]}" = 0 ]; then
			t_check "$what: there" true
		else
			t_eq "$what: ${#m[@]} figures, all numbers (${m[*]})" "" "${bad# }"
		fi
		return 0
	done <"$BENCH_SCOPE"
	t_fail "$what: no line like /$re/ in the bench's output"
	return 1
}

# bench_ratio WHAT A B R: R is A/B as printed, within the rounding of all
# three (each to its own decimals: A and B may be rounded before or after
# the bench divided them).
bench_ratio() {
	t_check "$1: $4 = $2 / $3" awk -v a="$2" -v b="$3" -v r="$4" '
		function half(v) { sub(/^[^.]*\.?/, "", v); return 0.5 * 10 ^ -length(v) }
		function abs(v) { return v < 0 ? -v : v }
		BEGIN {
			if (b == 0) exit 1
			tol = half(r) + abs(a / b) * (half(a) / (abs(a) + 1e-12) + half(b) / abs(b)) + 1e-9
			exit !(abs(a / b - r) <= tol) }'
}

# bench_absent WHAT ERE: no line of the whole output matches ERE.
bench_absent() {
	local hit
	hit=$(grep -E -m1 -- "$2" "$BENCH_OUT")
	t_eq "$1" "" "$hit"
}
