#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time (default 30 s each) from its
# checked-in corpus. New inputs stay in build-fuzz/corpus/ (not committed:
# copy interesting ones into tests/fuzz/corpus/<target>/ by hand); a crash
# is saved in build-fuzz/artifacts/ and fails the run.
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
CC=clang cmake -S . -B build-fuzz -G Ninja -DHANGAR_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
# Only the fuzz targets: the rest of the tree is built and tested elsewhere.
targets=()
for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
ninja -C build-fuzz "${targets[@]}" >/dev/null
mkdir -p build-fuzz/artifacts
status=0
for src in tests/fuzz/fuzz_*.c; do
        target=$(basename "$src" .c)
        name=${target#fuzz_}
        work=build-fuzz/corpus/$name
        mkdir -p "$work"
        cp -n tests/fuzz/corpus/"$name"/* "$work"/ 2>/dev/null || true
        echo "fuzz: $target for ${seconds}s"
        if ! build-fuzz/tests/fuzz/"$target" -max_total_time="$seconds" -max_len=65536 \
                -artifact_prefix=build-fuzz/artifacts/"$name"- "$work" >build-fuzz/"$name".log 2>&1; then
                echo "fuzz: $target FAILED; see build-fuzz/$name.log and build-fuzz/artifacts/"
                tail -n 30 build-fuzz/"$name".log
                status=1
        else
                grep -E '^Done' build-fuzz/"$name".log || true
        fi
done
exit "$status"
