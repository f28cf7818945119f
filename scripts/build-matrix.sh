#!/usr/bin/env bash
# Compile-only build matrix (every build type builds with -Werror,
# with gcc and with clang). Each combination is configured in its own
# directory, build-matrix-TYPE-COMPILER, and every object file of its `all`
# target is compiled (product, tests, the fuzz targets' corpus replayers,
# bench); nothing is linked or run (linking and archiving were a quarter of
# the build's CPU time and -Werror is the compiler's). Directories are
# reused, so a second run rebuilds only what changed (under -Werror a file
# that warned left no object, so it is compiled, and fails, again).
#
#   scripts/build-matrix.sh                 the default set (below)
#   scripts/build-matrix.sh --all           every combination, fuzz-clang too
#   scripts/build-matrix.sh COMBO...        just these (e.g. Release-gcc)
#   scripts/build-matrix.sh --list          print the combinations and exit
#   --keep-going   build every selected combination even after a failure
#   --clean        delete each combination's directory first (a cold build)
#   --link         build the whole `all` target (libraries, binaries, tests)
#
# TYPE is Debug, RelWithDebInfo (the project's default), Release (-O3),
# sanitize (Debug, -DHANGAR_SANITIZE=ON) or fuzz (Debug, -DHANGAR_FUZZ=ON,
# clang only); COMPILER is gcc or clang. The default set is the cells of
# {Debug, RelWithDebInfo, Release, sanitize} x {gcc, clang} that the test
# command does not build already: it builds RelWithDebInfo-gcc (`build`),
# sanitize-gcc (`build-asan`, plus coverage) and, with clang, only the fuzz
# targets. Debug-gcc stays in: -fsanitize=address hides some of gcc 12's
# warnings at -O0 (-Wdangling-pointer), so build-asan does not stand in for it.
#
# Prints each build's wall time; exits non-zero naming the first failing
# build and its log (DIR/build-matrix.log). BUILD_MATRIX_JOBS (default: the
# number of cores) and BUILD_MATRIX_NICE (default 10) set ninja's -j and the
# builds' niceness.
set -euo pipefail
cd "$(dirname "$0")/.."

default_combos=(Debug-gcc Release-gcc Debug-clang RelWithDebInfo-clang Release-clang sanitize-clang)
all_combos=(Debug-gcc RelWithDebInfo-gcc Release-gcc sanitize-gcc
        Debug-clang RelWithDebInfo-clang Release-clang sanitize-clang fuzz-clang)
jobs=${BUILD_MATRIX_JOBS:-$(nproc)}
niceness=${BUILD_MATRIX_NICE:-10}

usage() {
        echo "usage: scripts/build-matrix.sh [--all | COMBO...] [--keep-going] [--clean] [--link] [--list]" >&2
        exit 2
}

combos=()
all=0
keep_going=0
clean=0
link=0
list=0
while [ $# -gt 0 ]; do
        case $1 in
        --all) all=1 ;;
        --keep-going) keep_going=1 ;;
        --clean) clean=1 ;;
        --link) link=1 ;;
        --list) list=1 ;;
        -h | --help)
                sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
                exit 0
                ;;
        -*) usage ;;
        *) combos+=("$1") ;;
        esac
        shift
done
case $jobs$niceness in *[!0-9]*) echo "build-matrix: BUILD_MATRIX_JOBS and BUILD_MATRIX_NICE must be numbers" >&2; exit 2 ;; esac
if [ "$list" = 1 ]; then
        echo "default: ${default_combos[*]}"
        echo "all:     ${all_combos[*]}"
        exit 0
fi
if [ "$all" = 1 ]; then
        [ "${#combos[@]}" -eq 0 ] || usage
        combos=("${all_combos[@]}")
elif [ "${#combos[@]}" -eq 0 ]; then
        combos=("${default_combos[@]}")
fi

# cmake_args COMBO: print the configure arguments of COMBO, one a line;
# fails on a name that is not a combination.
cmake_args() {
        local type=${1%-*} compiler=${1##*-}
        case $compiler in
        gcc | clang) ;;
        *) return 1 ;;
        esac
        echo "-DCMAKE_C_COMPILER=$compiler"
        case $type in
        Debug | RelWithDebInfo | Release) printf '%s\n' "-DCMAKE_BUILD_TYPE=$type" -DHANGAR_SANITIZE=OFF -DHANGAR_FUZZ=OFF ;;
        sanitize) printf '%s\n' -DCMAKE_BUILD_TYPE=Debug -DHANGAR_SANITIZE=ON -DHANGAR_FUZZ=OFF ;;
        fuzz)
                [ "$compiler" = clang ] || return 1
                printf '%s\n' -DCMAKE_BUILD_TYPE=Debug -DHANGAR_SANITIZE=OFF -DHANGAR_FUZZ=ON
                ;;
        *) return 1 ;;
        esac
}

# Check every name and compiler before building anything.
for combo in "${combos[@]}"; do
        if ! cmake_args "$combo" >/dev/null; then
                echo "build-matrix: unknown combination '$combo' (scripts/build-matrix.sh --list)" >&2
                exit 2
        fi
        compiler=${combo##*-}
        if ! command -v "$compiler" >/dev/null; then
                echo "build-matrix: $compiler not found (scripts/install-deps.sh installs it)" >&2
                exit 1
        fi
done

# build COMBO: configure and build it in build-matrix-COMBO; the log is
# build-matrix-COMBO/build-matrix.log. Each step's status is checked here
# (errexit does not apply inside a function called from a condition).
build() {
        local dir=build-matrix-$1 args inputs objects
        args=$(cmake_args "$1") || return 1
        local -a cmake_opts targets=(all)
        mapfile -t cmake_opts <<<"$args"
        if [ "$clean" = 1 ]; then
                rm -rf "$dir" || return 1
        fi
        mkdir -p "$dir" || return 1
        local log=$dir/build-matrix.log
        {
                echo "== cmake -S . -B $dir -G Ninja ${cmake_opts[*]}"
                cmake -S . -B "$dir" -G Ninja "${cmake_opts[@]}" || return 1
                if [ "$link" = 0 ]; then
                        # Every object `all` needs (not the EXCLUDE_FROM_ALL
                        # ones, such as tests/boundaries' deliberate failures).
                        inputs=$(ninja -C "$dir" -t inputs all) || return 1
                        objects=$(grep '\.o$' <<<"$inputs") || {
                                echo "build-matrix: no object files in $dir's all target"
                                return 1
                        }
                        mapfile -t targets <<<"$objects"
                fi
                echo "== nice -n $niceness ninja -C $dir -j $jobs -k 0 (${#targets[@]} targets)"
                nice -n "$niceness" ninja -C "$dir" -j "$jobs" -k 0 "${targets[@]}" || return 1
        } >"$log" 2>&1
}

echo "build-matrix: ${combos[*]} ($jobs jobs, nice $niceness; load $(cut -d' ' -f1-3 /proc/loadavg))"
start=$SECONDS
failed=()
for combo in "${combos[@]}"; do
        t0=$SECONDS
        status=0
        build "$combo" || status=$?
        took=$((SECONDS - t0))
        log=$PWD/build-matrix-$combo/build-matrix.log
        if [ "$status" = 0 ]; then
                echo "build-matrix: $combo ok in ${took}s"
                continue
        fi
        echo "build-matrix: $combo FAILED after ${took}s; log: $log"
        if [ -f "$log" ]; then
                grep -m 20 -E 'error:|FAILED:|CMake Error' "$log" || tail -n 20 "$log"
        fi
        failed+=("$combo")
        [ "$keep_going" = 1 ] || break
done
total=$((SECONDS - start))
if [ "${#failed[@]}" -gt 0 ]; then
        echo "build-matrix: FAILED: ${failed[*]} (first: ${failed[0]}, log: $PWD/build-matrix-${failed[0]}/build-matrix.log) after ${total}s" >&2
        exit 1
fi
echo "build-matrix: all ${#combos[@]} built with -Werror in ${total}s (load $(cut -d' ' -f1-3 /proc/loadavg))"
