# shellcheck shell=bash
# Shared helpers for the shell test suites. Source it; then call t_begin NAME,
# t_check/t_fail as you go and t_end at the end (exit status = failures).
# Everything a suite starts is registered with t_cleanup_pid and killed on exit
# (if it is still the process registered: see t_procctl).

set -uo pipefail

T_NAME=""
T_FAILURES=0
T_CHECKS=0
T_PIDS=()       # registered processes (t_cleanup_pid)
T_PID_STARTS=() # their start times, index for index
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/hangar-test.XXXXXX")
# The suite's own shell. A child bash forks for `cmd &` keeps the EXIT trap
# until it execs cmd: a SIGTERM in that window (a suite killing what it just
# started) runs the trap in the child, which then stopped the suite's
# processes and removed T_TMP under the running suite. Every EXIT trap
# starts with `t_main_shell || exit`, and t_cleanup checks it too.
T_MAIN_PID=$BASHPID
t_main_shell() { [ "$BASHPID" = "$T_MAIN_PID" ]; }

# t_procctl ARGS...: hangar-procctl (scripts/procctl.sh). A process is named
# by its pid and its start time (field 22 of /proc/PID/stat): a background
# job that ended long ago was reaped by the shell at once, and on a host with
# a small pid_max (32768) and a fork storm beside it its pid soon belongs to
# another suite's process (another pod's runsc gofer: that pod's container
# stops with it). hangar-procctl reads the start time and signals through a
# pidfd, so nothing is signalled by pid alone.
t_procctl() {
        t_procctl_find || return 1
        "$T_PROCCTL" "$@"
}
# t_procctl_find: T_PROCCTL set in this shell (call it before a $(t_procctl ...)).
t_procctl_find() {
        [ -n "${T_PROCCTL:-}" ] ||
                T_PROCCTL=$("$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/procctl.sh")
}

# t_kill_registered [SIGNAL]: SIGNAL (TERM) to each registered process still
# the one registered (hangar-procctl: the same start time, through a pidfd),
# then waits for the suite's own children among those. Only those: `wait` on
# a registered pid now held by a later child of the suite would wait for it.
t_kill_registered() {
        local sig=${1:-TERM} i sent=()
        for i in "${!T_PIDS[@]}"; do
                if t_procctl signal "$sig" "${T_PIDS[i]}:${T_PID_STARTS[i]}" 2>/dev/null; then
                        sent+=("${T_PIDS[i]}")
                fi
        done
        for i in "${sent[@]+"${sent[@]}"}"; do
                wait "$i" 2>/dev/null
        done
        return 0
}

# t_signal SIGNAL PID: SIGNAL to PID, a process registered with
# t_cleanup_pid, only if it is still the one registered (hangar-procctl:
# the same start time, through a pidfd). 1 if PID was not registered or the
# process has ended.
t_signal() {
        local i
        # The latest registration first: an earlier process may have had the pid.
        for ((i = ${#T_PIDS[@]} - 1; i >= 0; i--)); do
                if [ "${T_PIDS[i]}" = "$2" ]; then
                        t_procctl signal "$1" "${T_PIDS[i]}:${T_PID_STARTS[i]}"
                        return
                fi
        done
        echo "t_signal: pid $2 was not registered (t_cleanup_pid)" >&2
        return 1
}

t_cleanup() {
        t_main_shell || return 0
        t_kill_registered TERM
        if [ "${T_KEEP_TMP:-0}" = 1 ] || [ "$T_FAILURES" -gt 0 ]; then
                echo "test files kept in $T_TMP"
        else
                rm -rf "$T_TMP"
        fi
}
trap 't_main_shell || exit; t_cleanup' EXIT

# t_cleanup_pid PID: killed at exit if still running then. Call it right
# after starting the process (its start time is read here); one already gone
# is not registered.
t_cleanup_pid() {
        local rec
        t_procctl_find || return 0
        rec=$("$T_PROCCTL" ident "$1") || return 0
        if [ -n "$rec" ]; then
                T_PIDS+=("$1")
                T_PID_STARTS+=("${rec#* }")
        fi
}

t_begin() { T_NAME=$1; echo "== $T_NAME"; }

# t_control_plane [ARGS...]: an etcd + kube-apiserver of the suite's own in
# $T_TMP/cp (scripts/control-plane.sh start ARGS, its output in
# $T_TMP/cp.log), stopped at exit before t_cleanup; KUBECONFIG names it. One
# that does not start ends the suite with its log.
# shellcheck disable=SC2120 # most suites pass no options
t_control_plane() {
        local script cp=$T_TMP/cp log=$T_TMP/cp.log
        script=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/control-plane.sh
        "$script" start "$cp" "$@" >"$log" 2>&1 || { cat "$log"; exit 1; }
        # shellcheck disable=SC2064 # the paths are known now, quoted by %q
        trap "t_main_shell || exit; $(printf '%q stop %q >>%q 2>&1' "$script" "$cp" "$log"); t_cleanup" EXIT
        export KUBECONFIG=$cp/kubeconfig
}

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
