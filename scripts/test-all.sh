#!/usr/bin/env bash
# Every test, on a fresh machine: installs the Debian packages and the
# cluster's tools (kube-apiserver, etcd, kubectl, helm; kubelet, scheduler,
# controller-manager, containerd, gVisor's shim; promtool; a current runsc:
# all cached outside the tree by version), then
#   1. lint (banned calls, CLOEXEC, clang-format, hidden failures in
#      scripts); static analysis (gcc -fanalyzer, clang's analyzer:
#      scripts/analyze.sh) and the compile-only build matrix (every build type
#      with gcc and clang, -Werror: scripts/build-matrix.sh) start in the
#      background, at the lowest priority, and must have passed by step 4;
#   2. a release build and every ctest test: unit (check), fuzz corpus
#      replays, the server over TLS, golden pods through kubectl, the
#      end-to-end suites against a real kube-apiserver, the pod suites
#      (probe, turn, attacks) in real runsc/crun/runc pods, the images
#      (built offline, reproducibly) and the one-node cluster they run on.
#      Two lanes at once (docs/ci.md): the images' and the node's suites two
#      at a time (the node's share one node), and every other test
#      CTEST_JOBS at a time (default twice the cores: the pod and end-to-end
#      suites mostly wait on execs and API calls), but for the pod matrix's
#      variants labelled outside_ci. The ASan+UBSan build and the fuzz
#      targets are built meanwhile, at the lowest priority;
#   3. that ASan+UBSan build running unit, fuzz replays, server, golden and
#      integration tests, the native turn included (LeakSanitizer on), as
#      soon as the other release tests are done (beside the node lane's
#      last suites); it is also the coverage build: line and branch coverage
#      per module printed;
#   4. a short libFuzzer run of every target (FUZZ_SECONDS, default 30 s of
#      CPU each, FUZZ_JOBS at a time, default the cores: scripts/fuzz.sh
#      --cpu), started at the lowest priority as soon as the targets are
#      built, so it fuzzes in the CPU the tests leave and finishes after them.
# Each stage prints its wall time; docs/ci.md has the figures and how to run
# a part alone.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
ctest_jobs=${CTEST_JOBS:-$((2 * jobs))}
# The node lane: its suites share one node (tests/node/CMakeLists.txt), and
# two at a time keep it busy (the chart suites still one at a time).
node_jobs=${NODE_JOBS:-2}
t0=$SECONDS
stage_t=$SECONDS
# stage NAME: the previous stage's time, then NAME.
stage() {
        echo "   ($((SECONDS - stage_t)) s; $((SECONDS - t0)) s in all)"
        stage_t=$SECONDS
        echo "== $*"
}
# Background jobs are process groups of their own (setsid, or set -m for the
# node lane), ended on exit.
bg_pids=()
cleanup() {
        local p
        for p in "${bg_pids[@]+"${bg_pids[@]}"}"; do kill -- -"$p" 2>/dev/null || true; done
}
trap cleanup EXIT
# lowest COMMAND...: COMMAND in a session of its own (a process group that
# cleanup ends) at the lowest priority. The kernel's autogroup scheduling (on
# in Debian's kernels and this machine's: /proc/sys/kernel/sched_autogroup_enabled)
# shares the CPU equally between sessions, whatever their processes' nice
# values: a session of nice-19 jobs got as much CPU as every test together
# (docs/ci.md, "Lowest priority"), so the session's group is set to 19 too.
# Run in the background (`lowest ... &`): it execs, so $! is the session.
lowest() {
        # shellcheck disable=SC2016 # $@ is the child shell's
        exec setsid bash -c '{ echo 19 >/proc/self/autogroup; } 2>/dev/null || true; exec nice -n 19 "$@"' lowest "$@"
}

echo "== dependencies"
scripts/install-deps.sh
TOOLS_BIN=$(scripts/k8s-tools.sh | tail -n 1)
echo "control-plane tools in $TOOLS_BIN"
NODE_BIN=$(scripts/node-tools.sh | tail -n 1)
echo "node tools in $NODE_BIN"
PROM_BIN=$(scripts/prom-tools.sh | tail -n 1)
echo "promtool in $PROM_BIN"
CERTMANAGER_BIN=$(scripts/certmanager-tools.sh | tail -n 1)
echo "cert-manager in $CERTMANAGER_BIN"
AGENT_SANDBOX_BIN=$(scripts/agent-sandbox-tools.sh | tail -n 1)
echo "agent-sandbox in $AGENT_SANDBOX_BIN"
# A compiler cache outside the clone (ccache, ~/.cache/ccache), as the tools
# are: a warm run compiles only what changed, in every build below (the
# release build, the build matrix, the fuzz targets, main_command's build of
# a clone: the variable reaches each first configure). ccache's key is the
# preprocessed source, the compiler and its flags, so a hit is the object the
# compiler would make; paths are taken relative to the clone (CCACHE_BASEDIR)
# and the build directory left out of the key (CCACHE_NOHASHDIR), or no clone
# in a new directory would ever hit: an object's debug information may then
# name the clone that first compiled it. Not the ASan+UBSan build: it is the
# coverage build, whose objects name their own directory for their counts.
if command -v ccache >/dev/null; then
        export CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1
        echo "compiler cache: $(ccache -k cache_dir)"
fi
# Kyverno is bench/kyverno.sh's peer only, and a long build (about 33 min at
# nice 19 on 2 cores): taken when cached, never built here (docs/benchmarks.md).
if KYVERNO_BIN=$(scripts/kyverno-tools.sh --print-bin-dir 2>/dev/null); then
        echo "Kyverno in $KYVERNO_BIN"
else
        KYVERNO_BIN=""
        echo "WARNING: Kyverno is not built (scripts/kyverno-tools.sh): bench_kyverno is left out" >&2
fi

stage "lint"
scripts/lint.sh
stage "static analysis (scripts/analyze.sh) started, at the lowest priority, in the background of what follows"
mkdir -p build-analysis
lowest scripts/analyze.sh >build-analysis/analyze.log 2>&1 &
analyze_pid=$!
bg_pids+=("$analyze_pid")

stage "every build type x compiler compiles with -Werror (scripts/build-matrix.sh), at the lowest priority, in the background"
lowest env BUILD_MATRIX_NICE=19 scripts/build-matrix.sh --keep-going >build-analysis/build-matrix.log 2>&1 &
matrix_pid=$!
bg_pids+=("$matrix_pid")

stage "a current runsc (GKE runs one; Debian's is from 2022), cached by version"
RUNSC_CURRENT=""
if RUNSC_CURRENT=$(tests/pods/build-runsc.sh | tail -n 1) && [ -x "$RUNSC_CURRENT" ]; then
        echo "current runsc: $RUNSC_CURRENT"
else
        RUNSC_CURRENT=""
        echo "WARNING: no current runsc could be built; the *_runsc_current pod tests are left out" >&2
fi
stage "release build"
# The node suite needs the current runsc (its RuntimeClass gvisor runs it).
NODE_ARG=()
[ -z "$RUNSC_CURRENT" ] || NODE_ARG=(-DHANGAR_NODE_BIN="$NODE_BIN")
cmake -S . -B build -G Ninja -DHANGAR_TOOLS_BIN="$TOOLS_BIN" -DHANGAR_RUNSC_CURRENT="$RUNSC_CURRENT" \
        -DHANGAR_PROM_BIN="$PROM_BIN" -DHANGAR_CERTMANAGER_BIN="$CERTMANAGER_BIN" \
        -DHANGAR_KYVERNO_BIN="$KYVERNO_BIN" -DHANGAR_AGENT_SANDBOX_BIN="$AGENT_SANDBOX_BIN" "${NODE_ARG[@]}" >/dev/null
ninja -C build

stage "ASan+UBSan build and the fuzz targets started, at the lowest priority, in the background of the tests"
# Fuzzing starts in the background once they are built, at the lowest
# priority too: the tests wait on pods and API servers much of the time, and
# each target gets FUZZ_SECONDS of CPU however long it waits for it (fuzz.sh
# --cpu), so the fuzzing is the same as on cores of its own.
fuzz_seconds=${FUZZ_SECONDS:-30}
cmake -S . -B build-asan -G Ninja -DHANGAR_SANITIZE=ON -DHANGAR_COVERAGE=ON -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER_LAUNCHER= \
        -DHANGAR_TOOLS_BIN="$TOOLS_BIN" -DHANGAR_PROM_BIN="$PROM_BIN" >/dev/null
lowest bash -c 'ninja -C build-asan && scripts/fuzz.sh --build-only' \
        >build-asan/background-build.log 2>&1 &
builds_pid=$!
bg_pids+=("$builds_pid")

stage "images (offline, from Debian packages; cached root file systems)"
# The node lane loads them; their tests run in that lane (docs/ci.md).
# bin and bare: the bundle and a busybox-only image, for node_bare.
scripts/build-images.sh --build-dir build webhook sandbox pause bin bare >/dev/null

stage "release tests: lane [node] (the node and images suites, -j $node_jobs) and lane [main] (the rest, -j $ctest_jobs)"
# lane NAME COMMAND...: COMMAND's output with each line prefixed [NAME], and
# its status.
lane() {
        local name=$1
        shift
        "$@" 2>&1 | sed -u "s/^/[$name] /"
        return "${PIPESTATUS[0]}"
}
node_lane() {
        ctest --test-dir build --output-on-failure -L '^(node|images)$' -j "$node_jobs" -O build/ctest-node.log
}
# Each lane in a process group of its own (set -m), its input /dev/null: a
# background group that read the terminal would be stopped (SIGTTIN).
set -m
lane node node_lane </dev/null &
node_lane_pid=$!
# outside_ci: the pod suites' variants CI leaves out (docs/ci.md, "The pod
# matrix in CI"); `ctest -L outside_ci` runs them.
lane main ctest --test-dir build --output-on-failure -j "$ctest_jobs" -LE '^(images|node|outside_ci)$' \
        -O build/ctest-main.log </dev/null &
main_lane_pid=$!
set +m
bg_pids+=("$node_lane_pid" "$main_lane_pid")
# The fuzzing, as soon as its targets are built (the lanes go on meanwhile).
builds_rc=0
wait "$builds_pid" || builds_rc=$?
fuzz_pid=""
if [ "$builds_rc" = 0 ]; then
        echo "== fuzzing started ($fuzz_seconds s of CPU per target), at the lowest priority, in the background of the tests"
        lowest env FUZZ_SECONDS="$fuzz_seconds" scripts/fuzz.sh --cpu >build-asan/fuzz.log 2>&1 &
        fuzz_pid=$!
        bg_pids+=("$fuzz_pid")
fi
# The ASan+UBSan tests as soon as one lane is done, beside the other's last
# suites (as the release tests ran beside each other: nothing of theirs is
# on the node). A failure is reported once both lanes are done: the node
# lane's fixture stops the node.
main_rc=0 node_rc=0 first_rc=0 first=""
wait -n -p first "$main_lane_pid" "$node_lane_pid" || first_rc=$?
if [ "$first" = "$main_lane_pid" ]; then
        main_rc=$first_rc first_name=main other_name=node other_pid=$node_lane_pid
else
        node_rc=$first_rc first_name=node other_name=main other_pid=$main_lane_pid
fi
if kill -0 "$other_pid" 2>/dev/null; then
        stage "lane [$first_name] done (lane [$other_name] goes on)"
else
        stage "both lanes done"
fi
asan_rc=0
if [ "$first_rc" = 0 ] && [ "$builds_rc" = 0 ]; then
        stage "ASan+UBSan: every test but the end-to-end and pod suites (turn_native sanitizes the turn)"
        # This run's counts only, from every uid, into a directory each can
        # reach (the clone may be in one only root can enter).
        gcov_prefix=$(scripts/coverage.sh --prepare build-asan)
        GCOV_PREFIX=$gcov_prefix ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
                lane asan ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE "e2e|pods" \
                -O build-asan/ctest-asan.log || asan_rc=$?
fi
stage "lane [$other_name] finishing"
other_rc=0
wait "$other_pid" || other_rc=$?
if [ "$other_name" = main ]; then main_rc=$other_rc; else node_rc=$other_rc; fi
if [ "$main_rc" != 0 ] || [ "$node_rc" != 0 ]; then
        echo "release tests failed: lane main $main_rc, lane node $node_rc (build/ctest-main.log, build/ctest-node.log)" >&2
        exit 1
fi
if [ "$builds_rc" != 0 ]; then
        cat build-asan/background-build.log
        echo "the ASan+UBSan or the fuzz build failed" >&2
        exit 1
fi
if [ "$asan_rc" != 0 ]; then
        echo "ASan+UBSan tests failed (build-asan/ctest-asan.log)" >&2
        exit 1
fi
stage "coverage of that run"
scripts/coverage.sh --report-only build-asan

stage "static analysis (started after lint)"
if ! wait "$analyze_pid"; then
        cat build-analysis/analyze.log
        echo "static analysis: findings above (scripts/analyze.sh)" >&2
        exit 1
fi
grep -E '^(PENDING|analyze:)' build-analysis/analyze.log
stage "the build matrix (started after lint)"
if ! wait "$matrix_pid"; then
        tail -n 40 build-analysis/build-matrix.log
        echo "the build matrix failed: above (scripts/build-matrix.sh)" >&2
        exit 1
fi
tail -n 3 build-analysis/build-matrix.log

stage "fuzzing (started in the background when its targets were built) finishing"
fuzz_rc=0
wait "$fuzz_pid" || fuzz_rc=$?
cat build-asan/fuzz.log
[ "$fuzz_rc" = 0 ] || { echo "fuzzing failed: above (scripts/fuzz.sh)" >&2; exit 1; }
stage "all tests passed"
