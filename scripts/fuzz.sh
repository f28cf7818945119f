#!/usr/bin/env bash
# Runs every libFuzzer target for a bounded time (default 30 s each) from its
# checked-in corpus, FUZZ_JOBS targets at a time (default: the number of
# cores, so each target still has a core of its own for its whole time: the
# same fuzzing CPU per target as one at a time, in 1/FUZZ_JOBS of the wall
# time). New inputs stay in build-fuzz/corpus/ (not committed: copy
# interesting ones into tests/fuzz/corpus/<target>/ by hand); a crash is
# saved in build-fuzz/artifacts/ and fails the run (FUZZ_BUILD_DIR: another
# build directory than build-fuzz).
# usage: scripts/fuzz.sh [--build-only] [--cpu] [SECONDS_PER_TARGET]
#   --build-only: configure and build the targets, run nothing (test-all.sh
#   builds them in the background of the tests).
#   --cpu: SECONDS of CPU time per target instead of wall time. Each target
#   runs until its process has used that much CPU (user and system, read
#   from /proc), then is asked to stop (SIGUSR1: libFuzzer's graceful exit).
#   test-all.sh fuzzes this way at the lowest priority beside the tests,
#   where a target may wait for a core: a wall-time budget would fuzz less
#   the busier the machine, a CPU budget does the same work whenever the
#   CPU comes. On an idle core the two are the same.
# SECONDS defaults to FUZZ_SECONDS, else 30.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0 budget=wall
while [ $# -gt 0 ]; do
        case $1 in
        --build-only) build_only=1 ;;
        --cpu) budget=cpu ;;
        *) break ;;
        esac
        shift
done
seconds=${1:-${FUZZ_SECONDS:-30}}
jobs=${FUZZ_JOBS:-$(nproc)}
case $seconds$jobs in *[!0-9]*) echo "usage: scripts/fuzz.sh [--build-only] [--cpu] [SECONDS]; FUZZ_JOBS a number" >&2; exit 2 ;; esac
[ "$jobs" -ge 1 ] || jobs=1
bd=${FUZZ_BUILD_DIR:-build-fuzz}
CC=clang cmake -S . -B "$bd" -G Ninja -DHANGAR_FUZZ=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
# Only the fuzz targets: the rest of the tree is built and tested elsewhere.
targets=()
for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
ninja -C "$bd" "${targets[@]}" >/dev/null
[ "$build_only" = 0 ] || exit 0
mkdir -p "$bd/artifacts"

# cpu_ticks PID: the CPU the process has used (user and system, in clock
# ticks), or nothing once it has ended (gone, or a zombie). The fields after
# the command's name, which may hold spaces: state is the 1st, utime the
# 12th, stime the 13th (proc(5)).
cpu_ticks() {
        local stat rest f
        read -r stat 2>/dev/null <"/proc/$1/stat" || return 0
        rest=${stat##*) }
        read -ra f <<<"$rest"
        [ "${f[0]}" != Z ] || return 0
        echo $((f[11] + f[12]))
}
tick=$(getconf CLK_TCK)
# fuzz_one TARGET: one target for $seconds (of wall time, or with --cpu of
# its CPU time); its status is the fuzzer's.
fuzz_one() {
        local target=$1 name=${1#fuzz_}
        local work=$bd/corpus/$name
        mkdir -p "$work"
        cp -n tests/fuzz/corpus/"$name"/* "$work"/ 2>/dev/null || true
        local args=(-max_len=65536 -artifact_prefix="$bd/artifacts/$name-" "$work")
        if [ "$budget" = wall ]; then
                "$bd/tests/fuzz/$target" -max_total_time="$seconds" "${args[@]}" >"$bd/$name.log" 2>&1
                return
        fi
        # A wall-time cap far above any wait for a core, so a target that
        # never stops cannot hang the run; reaching it is a failure (below).
        local t0=$SECONDS pid ticks=0 now rc=0
        "$bd/tests/fuzz/$target" -max_total_time=$((100 * seconds)) "${args[@]}" >"$bd/$name.log" 2>&1 &
        pid=$!
        while now=$(cpu_ticks "$pid") && [ -n "$now" ]; do
                ticks=$now
                if [ "$ticks" -ge $((seconds * tick)) ]; then
                        kill -USR1 "$pid" 2>/dev/null || true
                        break
                fi
                sleep 1
        done
        wait "$pid" || rc=$?
        echo "$((ticks / tick)) $((SECONDS - t0))" >"$bd/$name.cpu"
        if [ "$rc" = 0 ] && [ "$ticks" -lt $((seconds * tick)) ]; then
                echo "fuzz: $target ended after $((ticks / tick)) s of CPU, before its $seconds s" >>"$bd/$name.log"
                rc=1
        fi
        return "$rc"
}
# report TARGET STATUS: its outcome, in the order the targets end.
report() {
        local target=$1 name=${1#fuzz_} runs cpu wall
        if [ "$2" != 0 ]; then
                echo "fuzz: $target FAILED; see $bd/$name.log and $bd/artifacts/"
                tail -n 30 "$bd/$name.log"
                status=1
        elif [ "$budget" = wall ]; then
                echo "fuzz: $target done: $(grep -E '^Done' "$bd/$name.log" || echo '(no Done line)')"
        else
                # libFuzzer's last status line (#RUNS ...) counts the inputs run.
                runs=$(grep -oE '^#[0-9]+' "$bd/$name.log" | tail -n 1)
                read -r cpu wall <"$bd/$name.cpu"
                echo "fuzz: $target done: ${runs#\#} runs, $cpu s of CPU in $wall s"
        fi
}

echo "fuzz: ${#targets[@]} targets, ${seconds}s $([ "$budget" = cpu ] && echo "of CPU ")each, $jobs at a time"
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
