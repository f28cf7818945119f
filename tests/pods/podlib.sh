# shellcheck shell=bash
# Shared by the pod suites (source after testlib.sh): how a suite's
# "RUNTIME [RUNTIME_BIN [FLAG...]]" arguments become podrun options, and the
# preflight every suite does.

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

# pods_preflight RUNTIME: root, the runtime, jq and busybox, or the suite
# fails saying what is missing.
pods_preflight() {
        local tool
        if [ "$(id -u)" != 0 ]; then t_fail "must run as root (the runtimes need it)"; t_end; fi
        for tool in "${RUNTIME_BIN:-$1}" jq busybox; do
                command -v "$tool" >/dev/null || { t_fail "$tool not found (scripts/install-deps.sh)"; t_end; }
        done
}
