# shellcheck shell=bash
# The native turn suites' host layout (turn_native, daemon_native,
# terminal_native), sourced after testlib.sh, run as root from $T_TMP:
#   home/   hangar-home (uid 1001), seen by the agent read-only at
#           $AGENT_HOME_VIEW, a bind mount under a directory the agent owns
#           (an agent-writable ancestor, the case the relay checks for);
#   ctl/    hangar-ctl, a 64 MiB tmpfs, 0700 uid 1001;
#   turn/, agent-home/ the agent's (uid 1000);
#   bin/    copies of the binaries given, reachable by both uids.
# Exports HANGAR_HOME_PATH, HANGAR_CTL_PATH, HANGAR_UID_SPLIT=required and
# PATH with bin/ first; unmounts at exit. as_driver runs a command as uid
# 1001, ctl runs `$DRIVER ctl`.

# host_turn_setup BINARY...
host_turn_setup() {
        chmod 755 "$T_TMP"
        mkdir -p home ctl turn agent-home view/lib/home bin
        mount -t tmpfs -o size=64m,mode=0700 hangar-ctl ctl
        chown 1001:1001 home ctl
        chown 1000:1000 turn agent-home view view/lib
        chmod 700 ctl
        mount --bind home view/lib/home && mount -o remount,bind,ro view/lib/home
        AGENT_HOME_VIEW=$T_TMP/view/lib/home
        trap 'umount "$AGENT_HOME_VIEW" "$T_TMP/ctl" 2>/dev/null; t_cleanup' EXIT
        export HANGAR_HOME_PATH=$T_TMP/home HANGAR_CTL_PATH=$T_TMP/ctl HANGAR_UID_SPLIT=required
        cp "$@" bin/ && chmod 755 bin/*
        export PATH=$T_TMP/bin:$PATH
}

as_driver() { setpriv --reuid 1001 --regid 1001 --clear-groups -- "$@"; }
ctl() { as_driver "$DRIVER" ctl "$@"; }
