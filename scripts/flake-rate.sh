#!/usr/bin/env bash
# How often each test of a configured build fails when run again and again:
# the flake rate docs/ci.md records. Each round runs the matching tests once
# (ctest -R REGEX -j JOBS, so they load the machine as CI's lanes do); the
# results of every round are kept, and a table of passes and failures per
# test is printed at the end, with each failure's log file.
#
#   scripts/flake-rate.sh [--build-dir DIR] [-n ROUNDS] [-j JOBS] [-L LABEL] REGEX
#     DIR     a configured and built build dir (default: build)
#     ROUNDS  default 10
#     JOBS    default 4 (lane [main]'s -j on 2 cores)
#     LABEL   also pass -L LABEL (e.g. '^node$' for the node lane's fixture order)
# The logs: DIR/flake-rate/ROUND.log (ctest's output). Exit status 0 when no
# round failed, 1 otherwise, 2 for usage.
set -euo pipefail
build_dir=build rounds=10 jobs=4 label=() regex=""
while [ $# -gt 0 ]; do
        case $1 in
        --build-dir) build_dir=${2:?}; shift 2 ;;
        -n) rounds=${2:?}; shift 2 ;;
        -j) jobs=${2:?}; shift 2 ;;
        -L) label=(-L "${2:?}"); shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        -*) echo "flake-rate: unknown option $1" >&2; exit 2 ;;
        *) [ -z "$regex" ] || { echo "flake-rate: one REGEX" >&2; exit 2; }; regex=$1; shift ;;
        esac
done
[ -n "$regex" ] || { echo "usage: scripts/flake-rate.sh [--build-dir DIR] [-n ROUNDS] [-j JOBS] [-L LABEL] REGEX" >&2; exit 2; }
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "flake-rate: -n needs a positive number" >&2; exit 2; }
[ -f "$build_dir/CTestTestfile.cmake" ] || { echo "flake-rate: $build_dir is not a configured build dir" >&2; exit 2; }
out=$build_dir/flake-rate
mkdir -p "$out"
: >"$out/results"
for ((r = 1; r <= rounds; r++)); do
        t0=$SECONDS
        ctest --test-dir "$build_dir" -R "$regex" "${label[@]}" -j "$jobs" --output-on-failure \
                -O "$out/$r.log" >/dev/null 2>&1 || true
        # ctest's own summary lines: "  N/M Test  #K: NAME ....   Passed   12.3 sec"
        awk -v r="$r" '/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: / {
                sub(/^.*Test +#[0-9]+: /, ""); print r, $1, (/ Passed +[0-9.]+ sec/ ? "pass" : "FAIL") }' \
                "$out/$r.log" >>"$out/results"
        n=$(awk -v r="$r" '$1 == r' "$out/results" | wc -l)
        [ "$n" -gt 0 ] || { echo "flake-rate: round $r ran no test matching '$regex' ($out/$r.log)" >&2; exit 2; }
        echo "round $r: $n tests, $(awk -v r="$r" '$1 == r && $3 == "FAIL"' "$out/results" | wc -l) failed," \
                "$((SECONDS - t0)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
done
echo
printf '%-34s %6s %6s  %s\n' test passed failed "failed in rounds (logs: $out/ROUND.log)"
awk '{ n[$2]++; if ($3 == "FAIL") { f[$2]++; w[$2] = w[$2] " " $1 } }
        END { for (t in n) printf "%-34s %6d %6d %s\n", t, n[t] - f[t], f[t] + 0, w[t] }' "$out/results" | sort
! grep -q ' FAIL$' "$out/results"
