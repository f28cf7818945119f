#!/usr/bin/env bash
# How often each test of a configured build fails when run again and again:
# the flake rate docs/ci-flakes.md records. Each round runs the matching
# tests once (ctest -R REGEX -j JOBS, so they load the machine as CI's lanes
# do); the results of every round are kept, and a table of passes, failures
# and skips per test is printed at the end, then each failure's log file and
# the last lines of that test's output in it.
#
#   scripts/flake-rate.sh [--build-dir DIR] [--out OUT] [-n ROUNDS] [-j JOBS]
#                         [-L LABEL] REGEX
#     DIR     a configured and built build dir (default: build)
#     OUT     where the logs go (default: DIR/flake-rate/YYYYmmdd-HHMMSS, one
#             folder per run, so two runs never write over each other's logs)
#     ROUNDS  default 10
#     JOBS    default 4 (lane [main]'s -j on 2 cores)
#     LABEL   also pass -L LABEL (e.g. '^node$' for the node lane's fixture order)
# The logs: OUT/ROUND.log (ctest's output, the failed tests' output in it);
# OUT/results has one line per test and round: ROUND NAME pass|FAIL|skip, and
# OUT/rounds one per round: ROUND SECONDS LOAD1 LOAD5 LOAD15 (the load when
# the round ended). A test ctest skipped (SKIP_RETURN_CODE, a fixture's
# setup failed: "Not Run") is a skip, not a pass. Exit status 0 when no
# round failed, 1 otherwise, 2 for usage.
set -euo pipefail
build_dir=build out="" rounds=10 jobs=4 label=() regex=""
usage="usage: scripts/flake-rate.sh [--build-dir DIR] [--out OUT] [-n ROUNDS] [-j JOBS] [-L LABEL] REGEX"
while [ $# -gt 0 ]; do
        case $1 in
        --build-dir) build_dir=${2:?}; shift 2 ;;
        --out) out=${2:?}; shift 2 ;;
        -n) rounds=${2:?}; shift 2 ;;
        -j) jobs=${2:?}; shift 2 ;;
        -L) label=(-L "${2:?}"); shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "flake-rate: unknown option $1" >&2; exit 2 ;;
        *) [ -z "$regex" ] || { echo "flake-rate: one REGEX" >&2; exit 2; }; regex=$1; shift ;;
        esac
done
[ -n "$regex" ] || { echo "$usage" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "flake-rate: -n needs a positive number" >&2; exit 2; }
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "flake-rate: -j needs a positive number" >&2; exit 2; }
[ -f "$build_dir/CTestTestfile.cmake" ] || { echo "flake-rate: $build_dir is not a configured build dir" >&2; exit 2; }
[ -n "$out" ] || out=$build_dir/flake-rate/$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$out"
[ ! -s "$out/results" ] || { echo "flake-rate: $out already holds a run's results" >&2; exit 2; }
: >"$out/results"
: >"$out/rounds"
echo "flake-rate: $(date -u '+%Y-%m-%d %H:%M') UTC, ctest -R '$regex' ${label[*]} -j $jobs, $rounds rounds, logs in $out"
for ((r = 1; r <= rounds; r++)); do
        t0=$SECONDS
        # ctest's exit status is the round's result, read from its log below
        ctest --test-dir "$build_dir" -R "$regex" "${label[@]}" -j "$jobs" --output-on-failure \
                -O "$out/$r.log" >/dev/null 2>&1 || true
        # ctest's own summary lines: "  N/M Test  #K: NAME ....   Passed   12.3 sec",
        # "***Failed", "***Timeout", "***Exception: ...", "***Skipped", "***Not Run"
        awk -v r="$r" '/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
                s = / Passed +[0-9.]+ sec/ ? "pass" : (/\*\*\*(Skipped|Not Run)/ ? "skip" : "FAIL")
                sub(/^.*Test +#[0-9]+: /, ""); print r, $1, s }' \
                "$out/$r.log" >>"$out/results"
        n=$(awk -v r="$r" '$1 == r' "$out/results" | wc -l)
        [ "$n" -gt 0 ] || { echo "flake-rate: round $r ran no test matching '$regex' ($out/$r.log)" >&2; exit 2; }
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        echo "$r $((SECONDS - t0)) $load" >>"$out/rounds"
        echo "round $r: $n tests, $(awk -v r="$r" '$1 == r && $3 == "FAIL"' "$out/results" | wc -l) failed," \
                "$((SECONDS - t0)) s, load $load"
done
echo
printf '%-34s %6s %6s %6s  %s\n' test passed failed skipped "failed in rounds"
awk '{ n[$2]++; if ($3 == "FAIL") { f[$2]++; w[$2] = w[$2] " " $1 } if ($3 == "skip") s[$2]++ }
        END { for (t in n) printf "%-34s %6d %6d %6d %s\n", t, n[t] - f[t] - s[t], f[t] + 0, s[t] + 0, w[t] }' \
        "$out/results" | sort
echo "load (1, 5, 15 min) at the rounds' ends: $(awk '{ printf "%s%s", sep, $3; sep = " " }' "$out/rounds")"
grep -q ' FAIL$' "$out/results" || exit 0
echo
# Each failure: where its whole output is, and how it ended (ctest prints a
# failed test's output after the summary line of that test; the last lines
# before the next summary line are usually the check that failed).
awk '$3 == "FAIL" { print $1, $2 }' "$out/results" | while read -r r t; do
        echo "== $t, round $r: $out/$r.log"
        awk -v t="$t" '/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / { on = (index($0, ": " t " ") > 0); next }
                /^[0-9]+% tests passed/ { on = 0 } /^ +Start +[0-9]+: / || /^ *$/ { next } on' \
                "$out/$r.log" | tail -n 8 | sed 's/^/   /'
done
exit 1
