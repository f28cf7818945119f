# shellcheck shell=bash
# Shared helpers for the shell test suites. Source it; then call t_begin NAME,
# t_check/t_fail as you go and t_end at the end (exit status = failures).
# Everything a suite starts is registered with t_cleanup_pid and killed on exit.

set -uo pipefail

T_NAME=""
T_FAILURES=0
T_CHECKS=0
T_PIDS=()
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hangar-test.XXXXXX")

t_cleanup() {
        local pid
        for pid in "${T_PIDS[@]}"; do
                kill "$pid" 2>/dev/null
        done
        for pid in "${T_PIDS[@]}"; do
                wait "$pid" 2>/dev/null
        done
        if [ "${T_KEEP_TMP:-0}" = 1 ] || [ "$T_FAILURES" -gt 0 ]; then
                echo "test files kept in $T_TMP"
        else
                rm -rf "$T_TMP"
        fi
}
trap t_cleanup EXIT

t_cleanup_pid() { T_PIDS+=("$1"); }

t_begin() { T_NAME=$1; echo "== $T_NAME"; }

# t_check DESCRIPTION COMMAND...: passes when the command succeeds.
t_check() {
        local what=$1
        shift
        T_CHECKS=$((T_CHECKS + 1))
        if "$@"; then
                echo "  ok   $what"
        else
                echo "  FAIL $what"
                T_FAILURES=$((T_FAILURES + 1))
        fi
}

# t_eq DESCRIPTION EXPECTED ACTUAL
t_eq() {
        T_CHECKS=$((T_CHECKS + 1))
        if [ "$2" = "$3" ]; then
                echo "  ok   $1"
        else
                echo "  FAIL $1: expected [$2], got [$3]"
                T_FAILURES=$((T_FAILURES + 1))
        fi
}

t_fail() {
        T_CHECKS=$((T_CHECKS + 1))
        T_FAILURES=$((T_FAILURES + 1))
        echo "  FAIL $*"
}

t_end() {
        echo "$T_NAME: $T_CHECKS checks, $T_FAILURES failed"
        [ "$T_CHECKS" -gt 0 ] || { echo "no checks ran"; exit 1; }
        [ "$T_FAILURES" -eq 0 ]
        exit $?
}

# t_wait_pid PIDFILE SECONDS: waits for the background job whose pid is in
# PIDFILE; returns its exit status, or 255 if it is still running after SECONDS.
t_wait_pid() {
        local pid i
        pid=$(cat "$1")
        for ((i = 0; i < $2 * 10; i++)); do
                if ! kill -0 "$pid" 2>/dev/null; then
                        wait "$pid"
                        return $?
                fi
                sleep 0.1
        done
        return 255
}

# Waits up to $2 seconds (default 10) for command $1 (a string for eval) to succeed.
t_wait_for() {
        # A deadline, not a count of tries: a condition that takes seconds
        # itself (an exec into a gVisor pod) must not stretch the wait.
        local cond=$1 end=$((SECONDS + ${2:-10}))
        while :; do
                eval "$cond" && return 0
                [ "$SECONDS" -lt "$end" ] || return 1
                sleep 0.1
        done
}

# The port a hangar-webhook logged in its "listening" line (log file $1).
t_webhook_port() {
        t_wait_for "grep -q '\"msg\":\"listening\"' '$1'" 10 || return 1
        grep '"msg":"listening"' "$1" | head -n 1 | jq -r "${2:-.port}"
}

# A Kubernetes Secret volume in directory $1: files are symlinks through
# ..data, which the kubelet swaps atomically to a new timestamped directory
# on update. Publishes tls.crt and tls.key from directory $2.
t_secret_publish() {
        local dir=$1 src=$2 gen
        gen="..$(date +%s%N)"
        mkdir -p "$dir/$gen"
        cp "$src/tls.crt" "$src/tls.key" "$dir/$gen/"
        ln -sfn "$gen" "$dir/..data_tmp"
        mv -T "$dir/..data_tmp" "$dir/..data"
        ln -sfn ..data/tls.crt "$dir/tls.crt"
        ln -sfn ..data/tls.key "$dir/tls.key"
}

# A free TCP port on loopback.
t_free_port() {
        python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
