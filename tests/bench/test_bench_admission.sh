#!/usr/bin/env bash
# bench/admission.sh in its short mode (10 creates and 10 execs of each kind
# instead of 300): pod creates with no webhook, through a static-answer
# webhook (nginx returning hangar's patch) and through hangar as the chart
# installs it, and execs into a namespace that did not opt in with and
# without the chart; each row's figures numbers, the differences and ratios
# computed from them. The bench itself stops unless each create came back
# injected (or not) as its configuration says and every exec passed
# admission. Nothing about speed is asserted (tests/bench/benchlib.sh).
# usage: test_bench_admission.sh BUILD_DIR TOOLS_BIN
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/benchlib.sh"
t_begin "bench/admission.sh, short: hangar's cost to the API server beside a static webhook's"
F=$BENCH_F
bench_run admission env BENCH_CREATES=10 BENCH_EXECS=10 HANGAR_K8S_BIN="$2" \
	bash "$ROOT/bench/admission.sh" "$1"
bench_section "^\(a\) pod create through the API server, 10 each"
# shellcheck disable=SC2034 # read by name in differences
bench_row "no webhook" "^no webhook \(floor\) $F $F $F$" && floor=("${ROW[@]}")
# shellcheck disable=SC2034 # the same
bench_row "the static webhook" "^static webhook \(nginx, hangar's patch\) $F $F $F$" && static=("${ROW[@]}")
# shellcheck disable=SC2034 # the same
bench_row "hangar" "^hangar \(the chart: mutating \+ guard\) $F $F $F$" && hangar=("${ROW[@]}")
# differences WHAT A B: ROW (the row just read) holds A - B, column by column.
differences() {
	local i a b
	for i in 0 1 2; do
		a=$2[$i] b=$3[$i]
		t_check "$1 [$i]: ${ROW[i]} = ${!a} - ${!b}" awk -v a="${!a}" -v b="${!b}" -v d="${ROW[i]}" \
			'BEGIN { exit !(sprintf("%.2f", a - b) == d) }'
	done
}
bench_row "added by the static webhook" "^added by the static webhook $F $F $F$" &&
	differences "static added" static floor
bench_row "added by hangar" "^added by hangar $F $F $F$" && differences "hangar added" hangar floor
BENCH_ALLOW_NA=1 bench_row "hangar's added against the static webhook's" "^hangar's added / the static webhook's $F $F $F$"
bench_section
bench_row "hangar was called" "^hangar's reviews logged during its run: $F " &&
	t_check "hangar answered at least one review per create (${ROW[0]})" test "${ROW[0]}" -ge 20
bench_section "^\(b\) exec into namespace bench-other \(not opted in\), 10 each"
bench_row "exec without the chart" "^without the chart $F $F $F$" && without=("${ROW[@]}")
bench_row "exec with the chart" "^with the chart $F $F $F$" && with=("${ROW[@]}")
if bench_row "the exec ratio" "^ratio $F $F $F$"; then
	for i in 0 1 2; do
		bench_ratio "exec ratio [$i]" "${with[i]}" "${without[i]}" "${ROW[i]}"
	done
fi
t_end
