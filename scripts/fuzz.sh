#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time (default 30 s each) from its
# checked-in corpus, FUZZ_JOBS targets at a time (default: the number of
# cores, so each target still has a core of its own for its whole time: the
# same fuzzing CPU per target as one at a time, in 1/FUZZ_JOBS of the wall
# time). New inputs stay in build-fuzz/corpus/ (not committed: copy
# interesting ones into tests/fuzz/corpus/<target>/ by hand); a crash is
# saved in build-fuzz/artifacts/ and fails the run (FUZZ_BUILD_DIR: another
# build directory than build-fuzz).
# usage: scripts/fuzz.sh [--build-only] [SECONDS_PER_TARGET]
#   --build-only: configure and build the targets, run nothing (test-all.sh
#   builds them in the background of the tests).
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [ "${1:-}" = --build-only ]; then
        build_only=1
        shift
fi
seconds=${1:-30}
jobs=${FUZZ_JOBS:-$(nproc)}
case $seconds$jobs in *[!0-9]*) echo "usage: scripts/fuzz.sh [--build-only] [SECONDS]; FUZZ_JOBS a number" >&2; exit 2 ;; esac
[ "$jobs" -ge 1 ] || jobs=1
bd=${FUZZ_BUILD_DIR:-build-fuzz}
CC=clang cmake -S . -B "$bd" -G Ninja -DHANGAR_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
# Only the fuzz targets: the rest of the tree is built and tested elsewhere.
targets=()
for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
ninja -C "$bd" "${targets[@]}" >/dev/null
[ "$build_only" = 0 ] || exit 0
mkdir -p "$bd/artifacts"

# fuzz_one TARGET: one target for $seconds; its status is the fuzzer's.
fuzz_one() {
        local target=$1 name=${1#fuzz_}
        local work=$bd/corpus/$name
        mkdir -p "$work"
        cp -n tests/fuzz/corpus/"$name"/* "$work"/ 2>/dev/null || true
        "$bd/tests/fuzz/$target" -max_total_time="$seconds" -max_len=65536 \
                -artifact_prefix="$bd/artifacts/$name-" "$work" >"$bd/$name.log" 2>&1
}
# report TARGET STATUS: its outcome, in the order the targets end.
report() {
        local target=$1 name=${1#fuzz_}
        if [ "$2" != 0 ]; then
                echo "fuzz: $target FAILED; see $bd/$name.log and $bd/artifacts/"
                tail -n 30 "$bd/$name.log"
                status=1
        else
                echo "fuzz: $target done: $(grep -E '^Done' "$bd/$name.log" || echo '(no Done line)')"
        fi
}

echo "fuzz: ${#targets[@]} targets, ${seconds}s each, $jobs at a time"
status=0
declare -A running=() # pid -> target
for target in "${targets[@]}"; do
        while [ "${#running[@]}" -ge "$jobs" ]; do
                rc=0
                wait -n -p done_pid "${!running[@]}" || rc=$?
                report "${running[$done_pid]}" "$rc"
                unset "running[$done_pid]"
        done
        fuzz_one "$target" &
        running[$!]=$target
done
while [ "${#running[@]}" -gt 0 ]; do
        rc=0
        wait -n -p done_pid "${!running[@]}" || rc=$?
        report "${running[$done_pid]}" "$rc"
        unset "running[$done_pid]"
done
exit "$status"
