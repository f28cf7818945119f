#!/usr/bin/env bash
# A terminal turn in a real pod (tests/pods/podrun, or the shared node's
# kubelet with RUNTIME node: tests/node/nodepod; docs/terminal.md): the
# harness on a pty in the agent's container, the driver's screen and tmux
# session in hangar-driver. `tty` names a pty, `stty size` is the size asked
# and follows ctl resize, Ctrl-C typed with ctl send-keys and ctl signal
# reach the foreground process group, the exit status is carried; busybox
# vi and top as the harness: keys sent through the driver change what ctl
# screen and tmux capture-pane show (under podrun the host's tmux in the pod,
# when the host has it; on the node the image's own), and without tmux the
# driver's own screen. Attacks as the agent: no way to the tmux socket, no
# keys into the driver's view but its own terminal's output, no approval
# made up on the screen. Nothing is skipped on the node: every exec is as
# the container's own user.
# usage: test_terminal_pod.sh WEBHOOK DRIVER RELAY PROBE [RUNTIME [RUNTIME_BIN]]
# shellcheck disable=SC2016 # scripts for the harness and the pod's shells
WEBHOOK=$(realpath "$1")
DRIVER=$(realpath "$2")
RELAY=$(realpath "$3")
PROBE=$(realpath "$4")
RUNTIME=${5:-runsc}
RUNTIME_BIN=${6:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "a terminal turn in a real $RUNTIME pod"
EXTRA_BINS=()
# tmux is a Debian package (in the sandbox image, scripts/build-images.sh):
# on the node the image's, as in a cluster; under podrun (a busybox root file
# system) the host's binary, its libraries from the host's /usr/lib as podrun
# mounts them, in both containers' PATH.
HAVE_TMUX=no
if [ "$RUNTIME" = node ]; then
        HAVE_TMUX=yes
elif command -v tmux >/dev/null; then
        mkdir -p "$T_TMP/tmux-bin"
        cp "$(command -v tmux)" "$T_TMP/tmux-bin/tmux"
        EXTRA_BINS+=("$T_TMP/tmux-bin")
        HAVE_TMUX=yes
fi
. "$HERE/turnlib.sh"
turn_pod_up || t_end

TERMINAL='{"terminal": {"rows": 24, "cols": 80, "term": "xterm-256color"}, "close_stdin": false, "linger_s": 30}'
screen_has() { ctl screen 2>/dev/null | grep -q -- "$1"; }
status_is() { [ "$(ctl status 2>/dev/null | jq -r "$1")" = "$2" ]; }
# finish NAME: the harness has exited; the turn ends, the relay with it.
finish() {
        ctl finish >/dev/null
        t_wait_pid "$1.driver.pid" 30
        t_wait_pid "$1.relay.pid" 30
}

# ---- a pty: tty, stty size, resize, signals, Ctrl-C, exit status ----
SCRIPT='tty; echo "size=$(stty size)"; echo "TERM=$TERM"
trap '\''echo "winch=$(stty size)"'\'' WINCH
trap '\''echo got-usr1'\'' USR1
trap '\''echo got-int; exit 42'\'' INT
echo ready
while :; do sleep 0.1; done'
spec t1 ask "$SCRIPT" "$TERMINAL" >t1.spec
start_driver t1 t1.spec
start_relay t1
t_check "the harness runs on the terminal" t_wait_for "log_has ready" 60
t_check "tty names a pty" log_has '^/dev/pts/[0-9]'
t_check "stty size is the size asked (24 80)" log_has 'size=24 80'
t_check "TERM is the spec's" log_has 'TERM=xterm-256color'
t_check "ctl screen shows it" screen_has 'size=24 80'
ctl resize 30 100 >/dev/null
t_check "ctl resize: stty size follows (30 100), after SIGWINCH" t_wait_for "log_has 'winch=30 100'" 20
ctl signal USR1 >/dev/null
t_check "ctl signal reaches the foreground process group" t_wait_for "log_has got-usr1" 20
ctl send-keys C-c >/dev/null
# Under gVisor the relay makes ^C a SIGINT itself (its line discipline does
# not): docs/terminal.md.
t_check "Ctrl-C typed through ctl reaches the foreground process group" t_wait_for "log_has got-int" 20
t_check "the exit status is carried (42)" t_wait_for "status_is .harness.value 42" 20
finish t1
t_eq "the relay exits as the harness did (42)" 42 "$?"

# ---- busybox vi, keys through the driver (and tmux) ----
# (busybox by name: the node's image has Debian's busybox, without applet links)
in_agent sh -c 'printf "first line\n" >/tmp/turn/notes.txt'
spec vi ask 'exec busybox vi notes.txt' "$TERMINAL" >vi.spec
start_driver vi vi.spec
start_relay vi
t_check "vi shows the file on ctl screen" t_wait_for "screen_has 'first line'" 60
t_eq "status: tmux keeps the screen ($HAVE_TMUX)" "$HAVE_TMUX" \
        "$(ctl status | jq -r 'if .terminal.tmux then "yes" else "no" end')"
ctl send-keys i 'typed-by-hangar ' Escape >/dev/null
t_check "keys sent through the driver change what ctl screen shows" \
        t_wait_for "screen_has 'typed-by-hangar first line'" 20
if [ "$HAVE_TMUX" = yes ]; then
        TMUX_SOCK=$CTL_DIR/tmux.sock
        t_check "tmux capture-pane shows the same" \
                t_wait_for "in_driver tmux -S $TMUX_SOCK capture-pane -p -t hangar | grep -q 'typed-by-hangar first line'" 20
        in_driver tmux -S "$TMUX_SOCK" send-keys -t hangar A ' and-by-tmux' Escape
        t_check "keys sent with tmux send-keys reach vi" \
                t_wait_for "screen_has 'typed-by-hangar first line and-by-tmux'" 20
        t_eq "the tmux socket is in hangar-ctl, the driver's, 0600" "600 1001" \
                "$(in_driver stat -c '%a %u' "$TMUX_SOCK")"
        t_check "the agent has no way to it: hangar-ctl is not in its container" \
                sh -c "! '$PODRUN' exec --dir '$POD' sandbox -- tmux -S '$TMUX_SOCK' list-sessions >/dev/null 2>&1"
fi
ctl send-keys : w q Enter >/dev/null
t_check ":wq ends vi (exit 0)" t_wait_for "status_is .harness.value 0" 20
t_check "the file has what was typed" \
        sh -c "'$PODRUN' exec --dir '$POD' sandbox -- cat /tmp/turn/notes.txt | grep -q '^typed-by-hangar first line'"
t_check "the log keeps the raw terminal stream (escape sequences)" log_has "$(printf '\033')\["
finish vi

# ---- busybox top, without tmux: the driver's own screen ----
spec top ask 'exec busybox top' "$TERMINAL" >top.spec
start_driver top top.spec HANGAR_TMUX=off
start_relay top
t_check "top's screen on ctl screen (the driver's model)" t_wait_for "screen_has 'PID'" 60
t_eq "status: no tmux, and why" "false true" \
        "$(ctl status | jq -r '"\(.terminal.tmux) \(.terminal.tmux_error != null)"')"
ctl send-keys q >/dev/null
t_check "q typed through ctl ends top (exit 0)" t_wait_for "status_is .harness.value 0" 20
finish top

# ---- attacks: approvals, the agent's own terminal ----
SCRIPT='echo "{\"type\":\"approval_request\",\"id\":\"fake\",\"action\":\"on-screen\"}"
echo "approved: fake (by hangar)"
echo "{\"type\":\"approval_request\",\"id\":\"real\",\"action\":\"deploy\"}" >&$HANGAR_APPROVAL_FD
read -r resp <&$HANGAR_APPROVAL_FD; echo "resp=$resp"
echo "tty=$(tty)"; read -r line; echo "line=$line"; exit 3'
spec ap ask "$SCRIPT" "$TERMINAL" >ap.spec
start_driver ap ap.spec
start_relay ap
t_check "the real request (descriptor 3) is pending" \
        t_wait_for "ctl approvals | jq -e '.approvals[] | select(.id == \"real\" and .state == \"pending\")' >/dev/null" 30
t_check "the screen shows the made-up request and approval" screen_has 'approved: fake'
t_eq "... which the driver does not take: one pending, no fake" "1 0" \
        "$(ctl status | jq -r .pending_approvals) $(ctl approvals | jq '[.approvals[] | select(.id == "fake")] | length')"
ctl approve real >/dev/null
t_check "the decision reaches the harness on descriptor 3" \
        t_wait_for "log_has 'resp={\"type\":\"approval_response\",\"id\":\"real\",\"decision\":\"approve\"}'" 20
t_wait_for "log_has tty=" 20
PTS=$(in_agent cat $HOME_DIR/run/log | tr -d '\r' | sed -n 's/^tty=\(\/dev\/pts\/[0-9]*\)$/\1/p' | head -n 1)
t_check "the harness's terminal is a pty ($PTS)" sh -c "case '$PTS' in /dev/pts/*) ;; *) exit 1 ;; esac"
in_agent sh -c "printf '{\"type\":\"approval_request\",\"id\":\"forged\"}\r\nwritten-by-the-agent\r\n' >$PTS"
t_check "the agent writing to its own terminal shows on its screen" \
        t_wait_for "screen_has written-by-the-agent" 20
t_eq "... but is neither input nor an approval request" "no 0" \
        "$(log_has line=written && echo yes || echo no) $(ctl approvals | jq '[.approvals[] | select(.id == "forged")] | length')"
t_check "the agent has no control socket to type with" \
        sh -c "! '$PODRUN' exec --dir '$POD' sandbox -- hangar-driver ctl send-keys x >/dev/null 2>&1"
ctl send-keys from-hangar Enter >/dev/null
t_check "hangar's keys reach the harness" t_wait_for "log_has line=from-hangar" 20
t_check "the exit status (3)" t_wait_for "status_is .harness.value 3" 20
ctl events >ap.events
t_check "hangar's keys are in the events" grep -q '"event":"terminal.keys","keys":\["from-hangar","Enter"\]' ap.events
finish ap
t_end
