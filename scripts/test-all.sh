#!/usr/bin/env bash
# Every test, on a fresh machine: installs the Debian packages and the
# cluster's tools (kube-apiserver, etcd, kubectl, helm; kubelet, scheduler,
# controller-manager, containerd, gVisor's shim; promtool; a current runsc:
# all cached outside the tree by version), then
#   1. lint (banned calls, CLOEXEC, clang-format); static analysis (gcc
#      -fanalyzer, clang's analyzer: scripts/analyze.sh) starts in the
#      background of steps 2 and 3, and must have no finding by step 4;
#   2. a release build and every ctest test: unit (check), fuzz corpus
#      replays, the server over TLS, golden pods through kubectl, the
#      end-to-end suites against a real kube-apiserver, the pod suites
#      (probe, turn, attacks) in real runsc/crun/runc pods, the images
#      (built offline, reproducibly) and the one-node cluster they run on;
#   3. an ASan+UBSan build running unit, fuzz replays, server, golden and
#      integration tests, the native turn included (LeakSanitizer on); it is
#      also the coverage build: line and branch coverage per module printed;
#   4. a short libFuzzer run of every target (FUZZ_SECONDS, default 30).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

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

echo "== lint"
scripts/lint.sh
echo "== static analysis (scripts/analyze.sh) started, in the background of the builds and tests below"
mkdir -p build-analysis
setsid scripts/analyze.sh >build-analysis/analyze.log 2>&1 &
analyze_pid=$!
trap 'kill -- -"$analyze_pid" 2>/dev/null || true' EXIT

echo "== a current runsc (GKE runs one; Debian's is from 2022), cached by version"
RUNSC_CURRENT=""
if RUNSC_CURRENT=$(tests/pods/build-runsc.sh | tail -n 1) && [ -x "$RUNSC_CURRENT" ]; then
        echo "current runsc: $RUNSC_CURRENT"
else
        RUNSC_CURRENT=""
        echo "WARNING: no current runsc could be built; the *_runsc_current pod tests are left out" >&2
fi
echo "== release build and all tests"
# The node suite needs the current runsc (its RuntimeClass gvisor runs it).
NODE_ARG=()
[ -z "$RUNSC_CURRENT" ] || NODE_ARG=(-DHANGAR_NODE_BIN="$NODE_BIN")
cmake -S . -B build -G Ninja -DHANGAR_TOOLS_BIN="$TOOLS_BIN" -DHANGAR_RUNSC_CURRENT="$RUNSC_CURRENT" \
        -DHANGAR_PROM_BIN="$PROM_BIN" -DHANGAR_CERTMANAGER_BIN="$CERTMANAGER_BIN" "${NODE_ARG[@]}" >/dev/null
ninja -C build
echo "== images for the node suites (offline, from Debian packages; cached root file systems)"
scripts/build-images.sh --build-dir build >/dev/null
ctest --test-dir build --output-on-failure -j "$jobs"

echo "== ASan+UBSan build: every test but the end-to-end and pod suites (turn_native sanitizes the turn)"
cmake -S . -B build-asan -G Ninja -DHANGAR_SANITIZE=ON -DHANGAR_COVERAGE=ON -DCMAKE_BUILD_TYPE=Debug \
        -DHANGAR_TOOLS_BIN="$TOOLS_BIN" -DHANGAR_PROM_BIN="$PROM_BIN" >/dev/null
ninja -C build-asan
scripts/coverage.sh --prepare build-asan # this run's counts only, from every uid
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE "e2e|pods"
echo "== coverage of that run"
scripts/coverage.sh --report-only build-asan

echo "== static analysis (started after lint)"
if ! wait "$analyze_pid"; then
        cat build-analysis/analyze.log
        echo "static analysis: findings above (scripts/analyze.sh)" >&2
        exit 1
fi
grep -E '^(PENDING|analyze:)' build-analysis/analyze.log

echo "== fuzzing"
scripts/fuzz.sh "${FUZZ_SECONDS:-30}"
echo "== all tests passed"
