#!/usr/bin/env bash
# Line and branch coverage (gcov, summed by gcovr) of the product's modules
# (common/'s libraries, webhook/, probe/, driver/, relay/, grade/): one row per
# .c file, a total per directory, and one for common/ as a whole. Files
# below 80% of their lines are marked "<80".
#
#   scripts/coverage.sh [--build-dir DIR]           configure DIR with
#       -DHANGAR_COVERAGE=ON (Debug), build, run the suites that need no
#       cluster or pod (ctest labels unit, fuzz, integration, metrics; the
#       ones needing kubectl/promtool are skipped by ctest when the tools are
#       not configured), then report
#   scripts/coverage.sh ... --exclude REGEX         leaves those ctest tests out
#   scripts/coverage.sh --prepare DIR                before a test run of a
#       coverage build: forgets earlier counts and creates every counter file
#       (.gcda) empty and writable by all in a mirror of DIR under /tmp (the
#       daemons that the suites run under other uids, setpriv, must reach
#       it: a clone in a 0700 directory is not theirs to enter), and prints
#       the mirror: run the tests with GCOV_PREFIX set to it
#   scripts/coverage.sh --report-only DIR            report what DIR's last
#       test run counted (scripts/test-all.sh: its ASan+UBSan build is the
#       coverage build), from the mirror when --prepare made one
# Pass extra cmake arguments after --, e.g. -- -DHANGAR_TOOLS_BIN=...
# The table is also written to DIR/coverage.txt, gcovr's JSON to
# DIR/coverage.json.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=build-coverage
run=1
tests_failed=0
ctest_args=()
while [ $# -gt 0 ]; do
        case "$1" in
        --build-dir) build_dir=$2; shift 2 ;;
        --report-only) build_dir=$2; run=0; shift 2 ;;
        --prepare) build_dir=$2; run=prepare; shift 2 ;;
        --exclude) ctest_args+=(-E "$2"); shift 2 ;;
        --) shift; break ;;
        *) echo "usage: $0 [--build-dir DIR | --prepare DIR | --report-only DIR] [--exclude REGEX] [-- CMAKE_ARGS...]" >&2; exit 2 ;;
        esac
done
if ! command -v gcovr >/dev/null; then
        echo "coverage: gcovr not found (scripts/install-deps.sh installs it)" >&2
        exit 2
fi

# counts_dir DIR: where the processes of a test run write DIR's counts: libgcov
# puts a counter file at GCOV_PREFIX + its absolute path in DIR. A directory
# under /tmp that every uid can traverse, named after DIR.
counts_dir() { echo "/tmp/hangar-gcov-$(realpath "$1" | sha256sum | cut -c1-12)"; }
# prepare [PREFIX]: every counter file empty and writable by all, in DIR (no
# PREFIX) or under PREFIX (DIR's path mirrored there, every directory 0755).
prepare() {
        local prefix=${1:-} n f
        find "$build_dir" -name '*.gcda' -delete
        if [ -n "$prefix" ]; then
                rm -rf "$prefix"
                install -d -m 0755 "$prefix"
        fi
        find "$(realpath "$build_dir")" -name '*.gcno' -print0 | while IFS= read -r -d '' n; do
                f=$prefix${n%.gcno}.gcda
                [ -z "$prefix" ] || install -d -m 0755 "$(dirname "$f")"
                : >"$f"
                chmod 0666 "$f"
        done
}
# collect: the counts a run wrote under the mirror, back beside their .gcno.
collect() {
        local prefix f
        prefix=$(counts_dir "$build_dir")
        [ -d "$prefix" ] || return 0
        (cd "$prefix" && find . -name '*.gcda' -print0) | while IFS= read -r -d '' f; do
                cp "$prefix/${f#./}" "/${f#./}"
        done
        rm -rf "$prefix"
}
if [ "$run" = prepare ]; then
        prepare "$(counts_dir "$build_dir")"
        counts_dir "$build_dir"
        exit 0
elif [ "$run" = 1 ]; then
        cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHANGAR_COVERAGE=ON "$@" >/dev/null
        ninja -C "$build_dir"
        prepare "$(counts_dir "$build_dir")"
        # A failing test still leaves its counts: report them, then fail.
        GCOV_PREFIX=$(counts_dir "$build_dir") ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -LE 'e2e|pods|node|images' \
                "${ctest_args[@]}" || tests_failed=$?
elif ! grep -q '^HANGAR_COVERAGE:BOOL=ON' "$build_dir/CMakeCache.txt" 2>/dev/null; then
        echo "coverage: $build_dir is not a -DHANGAR_COVERAGE=ON build" >&2
        exit 2
fi

collect
# Counter files no process wrote to are still empty: not gcov's format.
find "$build_dir" -name '*.gcda' -empty -delete
sanitized=0
grep -q '^HANGAR_SANITIZE:BOOL=ON' "$build_dir/CMakeCache.txt" && sanitized=1
gcovr --root . --object-directory "$build_dir" -j "$(nproc)" \
        --filter 'common/' --filter 'webhook/' --filter 'probe/' --filter 'driver/' --filter 'relay/' --filter 'grade/' \
        --json-summary-pretty --output "$build_dir/coverage.json" >/dev/null
python3 - "$build_dir/coverage.json" "$sanitized" <<'EOF' | tee "$build_dir/coverage.txt"
import json, os, sys
data = json.load(open(sys.argv[1]))
sanitized = sys.argv[2] == "1"

def pct(c, t):
    return f"{100.0 * c / t:5.1f}%" if t else "    -"

rows = {}
for f in data["files"]:
    rows.setdefault(os.path.dirname(f["filename"]), []).append(f)
print(f"{'module':34} {'lines':>22} {'branches':>22}")
for d in sorted(rows):
    lc = lt = bc = bt = 0
    for f in sorted(rows[d], key=lambda f: f["filename"]):
        mark = " <80" if f["line_total"] and f["line_covered"] < 0.8 * f["line_total"] else ""
        print(f"{f['filename']:34} {f['line_covered']:>7}/{f['line_total']:<7} {pct(f['line_covered'], f['line_total'])}"
              f" {f['branch_covered']:>7}/{f['branch_total']:<7} {pct(f['branch_covered'], f['branch_total'])}{mark}")
        lc += f["line_covered"]; lt += f["line_total"]; bc += f["branch_covered"]; bt += f["branch_total"]
    print(f"{d + '/ total':34} {lc:>7}/{lt:<7} {pct(lc, lt)} {bc:>7}/{bt:<7} {pct(bc, bt)}")
    print()
# common/'s libraries above one by one; here as one.
shared = [f for f in data["files"] if f["filename"].startswith("common/")]
if shared:
    lc = sum(f["line_covered"] for f in shared); lt = sum(f["line_total"] for f in shared)
    bc = sum(f["branch_covered"] for f in shared); bt = sum(f["branch_total"] for f in shared)
    print(f"{'common/ (all) total':34} {lc:>7}/{lt:<7} {pct(lc, lt)} {bc:>7}/{bt:<7} {pct(bc, bt)}")
    print()
print(f"{'all':34} {data['line_covered']:>7}/{data['line_total']:<7} {pct(data['line_covered'], data['line_total'])}"
      f" {data['branch_covered']:>7}/{data['branch_total']:<7} {pct(data['branch_covered'], data['branch_total'])}")
if sanitized:
    print("note: an ASan+UBSan build; UBSan's bounds checks add branches that no run takes,"
          " so its branch figures are somewhat low")
EOF
if [ "$tests_failed" != 0 ]; then
        echo "coverage: some tests failed (above); the figures count what ran" >&2
        exit 1
fi
