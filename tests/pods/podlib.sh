# shellcheck shell=bash
ROOT_DIR_PODS=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Shared by the pod suites (source after testlib.sh): how a suite's
# "RUNTIME [RUNTIME_BIN [FLAG...]]" arguments become podrun options, and the
# preflight every suite does. RUNTIME "node" is the node backend: the pod
# through the API server and kubelet of the node suites' shared node
# (tests/node/nodepod in podrun's place, HANGAR_TEST_NODE_DIR; the suites
# that source tests/turn/turnlib.sh get it from there).

# pods_runtime_opts RUNTIME [RUNTIME_BIN [FLAG...]]: sets RUNTIME_BIN (made
# absolute) and RT_OPTS, the `podrun up` options for that runtime build. A
# current runsc without flags gets --platform=systrap (ptrace is slow there).
pods_runtime_opts() {
        local runtime=$1 f flags
        RUNTIME_BIN=${2:-}
        RT_OPTS=()
        [ -n "$RUNTIME_BIN" ] || return 0
        RUNTIME_BIN=$(realpath "$RUNTIME_BIN")
        RT_OPTS=(--runtime-bin "$RUNTIME_BIN")
        flags=("${@:3}")
        [ ${#flags[@]} -eq 0 ] && [ "$runtime" = runsc ] && flags=(--platform=systrap)
        for f in "${flags[@]}"; do RT_OPTS+=(--runtime-flag "$f"); done
}

# pods_preflight RUNTIME: root, the runtime, jq and busybox (the node
# backend: jq and the shared node), or the suite fails saying what is missing.
pods_preflight() {
        local tool
        if [ "$(id -u)" != 0 ]; then t_fail "must run as root (the runtimes need it)"; t_end; fi
        if [ "$1" = node ]; then
                command -v jq >/dev/null || { t_fail "jq not found (scripts/install-deps.sh)"; t_end; }
                if ! "$ROOT_DIR_PODS/scripts/node.sh" status "${HANGAR_TEST_NODE_DIR:-/nonexistent}" >/dev/null 2>&1; then
                        t_fail "the node backend needs the shared node (HANGAR_TEST_NODE_DIR=${HANGAR_TEST_NODE_DIR:-unset}):" \
                                "ctest starts it (fixture node_up), by hand tests/node/node_fixture.sh start"
                        t_end
                fi
                return 0
        fi
        for tool in "${RUNTIME_BIN:-$1}" jq busybox; do
                command -v "$tool" >/dev/null || { t_fail "$tool not found (scripts/install-deps.sh)"; t_end; }
        done
}

# pods_exec_as_other_uid: whether exec --user UID works on this backend
# (podrun: yes; the node: no, kubectl exec runs as the container's user).
pods_exec_as_other_uid() { [ "${RUNTIME:-}" != node ]; }
# pods_skip WHAT WHY: a case this backend cannot run, said as such (never a
# silent pass); docs/node.md and tests/README.md list them.
pods_skip() { echo "  SKIP $1 (on the ${RUNTIME:-?} backend: $2)"; }
