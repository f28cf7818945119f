# shellcheck shell=bash
# The native suites' host layout (turn_native, daemon_native, instance_native,
# terminal_native, grade_native), run as root from $T_TMP:
#   home/   hangar-home (uid 1001), seen by the agent read-only at
#           $AGENT_HOME_VIEW, a bind mount under a directory the agent owns
#           (an agent-writable ancestor, the case the relay checks for);
#   ctl/    hangar-ctl, a 64 MiB tmpfs, 0700 uid 1001;
#   turn/, agent-home/ the agent's (uid 1000);
#   bin/    copies of the binaries given, reachable by both uids.
#
# A suite's preamble:
#   HERE=$(cd "$(dirname "$0")" && pwd)
#   . "$HERE/../turn/hostlib.sh"
#   host_unshared "$0" "$@"          # before testlib: it execs
#   . "$HERE/../lib/testlib.sh"
#   t_begin "..."
#   host_turn_up BINARY...           # the layout, split-active delivered
# host_unshared is the one part that runs before testlib.sh (which makes
# T_TMP when sourced); everything else needs it.

# host_unshared SCRIPT ARG...: as root, the suite again in a mount namespace
# of its own (hangar-home's read-only bind mount and hangar-ctl's tmpfs are
# the suite's alone, and go with it); returns when that is done already or
# not root (host_turn_up then fails the suite).
host_unshared() {
        if [ "${HANGAR_NATIVE_UNSHARED:-}" != 1 ] && [ "$(id -u)" = 0 ]; then
                HANGAR_NATIVE_UNSHARED=1 exec unshare --mount --propagation private -- bash "$@"
        fi
}

# host_turn_setup BINARY...: the layout above. Exports HANGAR_HOME_PATH,
# HANGAR_CTL_PATH, HANGAR_UID_SPLIT=required and PATH with bin/ first;
# unmounts at exit.
host_turn_setup() {
        chmod 755 "$T_TMP"
        mkdir -p home ctl turn agent-home view/lib/home bin
        mount -t tmpfs -o size=64m,mode=0700 hangar-ctl ctl
        chown 1001:1001 home ctl
        chown 1000:1000 turn agent-home view view/lib
        chmod 700 ctl
        mount --bind home view/lib/home && mount -o remount,bind,ro view/lib/home
        AGENT_HOME_VIEW=$T_TMP/view/lib/home
        trap 't_main_shell || exit; host_teardown' EXIT
        export HANGAR_HOME_PATH=$T_TMP/home HANGAR_CTL_PATH=$T_TMP/ctl HANGAR_UID_SPLIT=required
        cp "$@" bin/ && chmod 755 bin/*
        export PATH=$T_TMP/bin:$PATH
}

# At exit: the suite's processes first (a daemon still in hangar-ctl keeps
# its tmpfs busy, and T_TMP could not be removed), then the mounts, then
# testlib's cleanup.
host_teardown() {
        t_kill_registered TERM
        umount "$AGENT_HOME_VIEW" "$T_TMP/ctl" 2>/dev/null
        t_cleanup
}

# host_turn_up BINARY...: from $T_TMP (root, or the suite fails), the layout
# with the binaries given; DRIVER, RELAY and GRADE then name the copies in
# bin/ (those given), and the verdict in hangar-ctl and hangar-home is
# split-active, as hangar delivers it.
host_turn_up() {
        cd "$T_TMP" || exit 1
        [ "$(id -u)" = 0 ] || { t_fail "needs root (setpriv to two uids, mounts)"; t_end; }
        host_turn_setup "$@"
        [ ! -e bin/hangar-driver ] || DRIVER=$T_TMP/bin/hangar-driver
        [ ! -e bin/hangar-relay ] || RELAY=$T_TMP/bin/hangar-relay
        # shellcheck disable=SC2034 # the suite's, when it gave hangar-grade
        [ ! -e bin/hangar-grade ] || GRADE=$T_TMP/bin/hangar-grade
        host_verdict split-active
}

# host_verdict VERDICT [REASON_CODE]: the probe's verdict, as hangar writes it
# (hangar-ctl, and the relay's copy in hangar-home).
host_verdict() {
        local reasons='[]'
        [ -z "${2:-}" ] || reasons="[{\"code\":\"$2\"}]"
        as_driver sh -c "echo '{\"verdict\":\"$1\",\"reasons\":$reasons}' | tee ctl/verdict.json >home/verdict.json"
}

as_driver() { setpriv --reuid 1001 --regid 1001 --clear-groups -- "$@"; }
ctl() { as_driver "$DRIVER" ctl "$@"; }
# as_agent CMD...: CMD as the agent (uid 1000), its HOME and its read-only
# view of hangar-home.
as_agent() {
        HOME=$T_TMP/agent-home HANGAR_HOME_PATH=$AGENT_HOME_VIEW \
                setpriv --reuid 1000 --regid 1000 --clear-groups -- "$@"
}

# host_serve NAME [ENV...]: hangar-driver serve as uid 1001 in the background
# (setpriv execs: NAME.serve.pid is the daemon's), its stderr in
# NAME.serve.err, waited for until ctl ping answers (its reply in NAME.ping).
host_serve() {
        local name=$1
        shift
        env "$@" setpriv --reuid 1001 --regid 1001 --clear-groups -- "$DRIVER" serve 2>"$name.serve.err" &
        echo $! >"$name.serve.pid"
        t_cleanup_pid "$(cat "$name.serve.pid")"
        t_wait_for "ctl ping >$name.ping 2>/dev/null" 10 ||
                { t_fail "$name: the daemon never answered: $(head -c 300 "$name.serve.err")"; return 1; }
}

# host_relay NAME TOKEN_LINE: the relay as the agent in the background, in
# hangar's order (docs/protocol.md): TOKEN_LINE on its stdin only after its
# ready line. Its stdout in NAME.relay.out, its pid (setpriv execs) in
# NAME.relay.pid.
host_relay() {
        : >"$1.relay.out"
        # shellcheck disable=SC2094 # deliberate: the token goes in once the relay wrote "ready" to that file
        { t_wait_for "grep -q '\"relay\":' '$1.relay.out'" 30 &&
                grep -q '"relay":"ready"' "$1.relay.out" && printf '%s\n' "$2"; } |
                HOME=$T_TMP/agent-home HANGAR_HOME_PATH=$AGENT_HOME_VIEW \
                        setpriv --reuid 1000 --regid 1000 --clear-groups -- "$RELAY" \
                        >"$1.relay.out" 2>"$1.relay.err" &
        echo $! >"$1.relay.pid"
        t_cleanup_pid "$(cat "$1.relay.pid")"
}

# host_mem_has PID HEX: "present" when the process's memory (read as root)
# holds the token HEX, as bytes or as hex; "absent" otherwise.
host_mem_has() {
        python3 - "$1" "$2" <<'PY'
import re, sys
pid, hexs = sys.argv[1], sys.argv[2]
needles = [bytes.fromhex(hexs), hexs.encode()]
found = False
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
    for line in maps:
        m = re.match(r"([0-9a-f]+)-([0-9a-f]+) r", line)
        if not m or "[vvar]" in line or "[vsyscall]" in line:
            continue
        a, b = int(m.group(1), 16), int(m.group(2), 16)
        # Mappings of terabytes are ASan's shadow (in the sanitized build):
        # never the heap, and too large to read. The rest in 16 MiB pieces,
        # overlapping so a needle across two pieces is still seen.
        if b - a > 4 << 30:
            continue
        step = 16 << 20
        for start in range(a, b, step):
            try:
                mem.seek(start)
                data = mem.read(min(step + 64, b - start))
            except OSError:
                break
            if any(n in data for n in needles):
                found = True
                break
print("present" if found else "absent")
PY
}

# host_start NAME SPEC_JSON: ctl start (the reply, with the token, in
# NAME.start), then host_relay with its token.
host_start() {
        echo "$2" >"$1.spec"
        ctl start --spec - <"$1.spec" >"$1.start" 2>"$1.start.err" ||
                { t_fail "$1: ctl start: $(cat "$1.start.err")"; return 1; }
        host_relay "$1" "$(jq -r .token "$1.start")"
}
