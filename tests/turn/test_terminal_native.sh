#!/usr/bin/env bash
# A terminal turn on the host, without a pod (docs/terminal.md): the daemon
# as uid 1001, the relay as uid 1000, the harness on a pty. `tty` names a
# pty, `stty size` is the size asked and follows ctl resize (SIGWINCH),
# Ctrl-C typed with ctl send-keys and ctl signal reach the foreground
# process group, the exit status is carried; busybox vi as the harness:
# keys sent through the driver change what ctl screen shows (with tmux:
# what tmux capture-pane shows too; and without tmux, the driver's own
# screen); approvals come from descriptor 3, never from the screen; the
# agent cannot reach the tmux socket or type into the driver's view.
# Quick, and sanitized in the ASan+UBSan build.
# usage: test_terminal_native.sh DRIVER RELAY
# shellcheck disable=SC2016,SC2094 # scripts for the harness; the relay's out file is read as it grows
DRIVER=$(realpath "$1")
RELAY=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/hostlib.sh"
host_unshared "$0" "$DRIVER" "$RELAY"
. "$HERE/../lib/testlib.sh"
t_begin "a terminal turn on the host (pty, screen, tmux)"
command -v busybox >/dev/null || { t_fail "busybox not found"; t_end; }
host_turn_up "$DRIVER" "$RELAY"

spec() {
        jq -n --arg id "$1" --arg script "$2" --arg cwd "$T_TMP/turn" --argjson extra "${3:-{\}}" \
                '{turn: $id, mode: "ask", cwd: $cwd, script: $script, run_key: "KEY-\($id)",
                  linger_s: 30, connect_timeout_s: 30, handshake_timeout_ms: 500,
                  close_stdin: false, terminal: {rows: 24, cols: 80, term: "xterm-256color"}} + $extra'
}
stop_serve() {
        t_signal TERM "$(cat "$1.serve.pid")"
        t_wait_pid "$1.serve.pid" 10
        t_eq "$1: SIGTERM: the daemon exits 0 (no sanitizer report)" "0 " \
                "$? $(grep -l 'Sanitizer' "$1.serve.err" 2>/dev/null)"
}
log_has() { grep -q -- "$1" home/run/log 2>/dev/null; }
screen_has() { ctl screen 2>/dev/null | grep -q -- "$1"; }
screen_lacks() { ! ctl screen 2>/dev/null | grep -q -- "$1"; }
harness_is() { [ "$(ctl status 2>/dev/null | jq -r '"\(.harness.end) \(.harness.value)"')" = "$1" ]; }
# count_row: the screen row (from 1) of the curses counter's count.
count_row() { ctl screen 2>/dev/null | grep -n '^    count=' | cut -d: -f1; }
TMUX_BIN=$(command -v tmux || true)
tmux_capture() { as_driver "$TMUX_BIN" -S ctl/tmux.sock capture-pane -p -t hangar; }

host_serve d1
# ---- bad terminal specs are refused ----
for bad in '{"rows": 1, "cols": 80, "term": "xterm"}' '{"rows": 24, "cols": 5000, "term": "xterm"}' \
        '{"rows": 24, "cols": 80, "term": "xterm;rm -rf /"}' '{"rows": 24, "cols": 80}' \
        '{"rows": 24, "cols": 80, "term": "xterm", "x": 1}' '{"rows": "24", "cols": 80, "term": "xterm"}'; do
        t_check "a bad terminal is refused: $bad" \
                sh -c "! setpriv --reuid 1001 --regid 1001 --clear-groups -- '$DRIVER' ctl start --spec - >/dev/null 2>&1 <<'EOF'
$(spec bad 'true' "{\"terminal\": $bad}")
EOF"
done

# ---- a pty: tty, stty size, resize, Ctrl-C, signals, exit status ----
SCRIPT='tty; echo "size=$(stty size)"; echo "TERM=$TERM"
trap '\''echo "winch=$(stty size)"'\'' WINCH
trap '\''echo got-usr1'\'' USR1
trap '\''echo got-int; exit 42'\'' INT
echo ready
while :; do sleep 0.1; done'
host_start t1 "$(spec t1 "$SCRIPT")"
t_check "the harness runs on the terminal" t_wait_for "log_has ready" 15
t_check "tty names a pty" grep -qE '^/dev/pts/[0-9]+' home/run/log
t_check "stty size is the size asked (24 80)" grep -q 'size=24 80' home/run/log
t_check "TERM is the spec's" grep -q 'TERM=xterm-256color' home/run/log
t_eq "status: a terminal, 24x80" "24 80 xterm-256color" \
        "$(ctl status | jq -r '"\(.terminal.rows) \(.terminal.cols) \(.terminal.term)"')"
t_check "ctl screen shows it" screen_has 'size=24 80'
ctl resize 30 100 >/dev/null
t_check "ctl resize: SIGWINCH reaches the harness, stty size follows (30 100)" \
        t_wait_for "log_has 'winch=30 100'" 10
t_eq "status follows the resize" "30 100" "$(ctl status | jq -r '"\(.terminal.rows) \(.terminal.cols)"')"
ctl signal USR1 >/dev/null
t_check "ctl signal reaches the foreground process group" t_wait_for "log_has got-usr1" 10
ctl send-keys C-c >/dev/null
t_check "Ctrl-C typed through ctl reaches the foreground process group" t_wait_for "log_has got-int" 10
t_check "the exit status is carried (42)" t_wait_for "[ \"\$(ctl status | jq -r .harness.value)\" = 42 ]" 10
ctl finish >/dev/null
t_wait_pid t1.relay.pid 15
t_eq "the relay exits as the harness did (42)" 42 "$?"

# ---- busybox vi as the harness, keys through the driver ----
vi_turn() { # NAME TMUX(yes|no)
        local name=$1 with_tmux=$2
        printf 'first line\n' >turn/notes.txt
        chown 1000:1000 turn/notes.txt
        host_start "$name" "$(spec "$name" 'exec busybox vi notes.txt')"
        t_check "$name: vi shows the file on ctl screen" t_wait_for "screen_has 'first line'" 15
        t_check "$name: ... and its empty lines (~)" sh -c "ctl() { setpriv --reuid 1001 --regid 1001 --clear-groups -- '$DRIVER' ctl \"\$@\"; }; [ \"\$(ctl screen | grep -c '^~')\" -ge 10 ]"
        t_eq "$name: status says whether tmux keeps the screen" "$with_tmux" \
                "$(ctl status | jq -r 'if .terminal.tmux then "yes" else "no" end')"
        ctl send-keys i 'typed-by-hangar ' Escape >/dev/null
        t_check "$name: keys sent through the driver change the screen" \
                t_wait_for "screen_has 'typed-by-hangar first line'" 10
        if [ "$with_tmux" = yes ]; then
                t_check "$name: tmux capture-pane shows the same" \
                        sh -c "$(declare -f as_driver tmux_capture); TMUX_BIN='$TMUX_BIN'; tmux_capture | grep -q 'typed-by-hangar first line'"
                as_driver "$TMUX_BIN" -S ctl/tmux.sock send-keys -t hangar A ' and-by-tmux' Escape
                t_check "$name: keys sent with tmux send-keys reach vi" \
                        t_wait_for "screen_has 'typed-by-hangar first line and-by-tmux'" 10
                t_eq "$name: the tmux socket is the driver's, 0600" "600 1001" \
                        "$(stat -c '%a %u' ctl/tmux.sock)"
                t_check "$name: the agent cannot reach the tmux socket" \
                        sh -c "! HOME=/tmp setpriv --reuid 1000 --regid 1000 --clear-groups -- '$TMUX_BIN' -S '$T_TMP/ctl/tmux.sock' list-sessions >/dev/null 2>&1"
        fi
        ctl send-keys : w q Enter >/dev/null
        t_check "$name: :wq ends vi (exit 0)" t_wait_for "[ \"\$(ctl status | jq -r .harness.value)\" = 0 ]" 10
        t_check "$name: the file has what was typed" grep -q '^typed-by-hangar first line' turn/notes.txt
        t_check "$name: the log keeps the raw terminal stream (escape sequences)" \
                grep -q "$(printf '\033')\[" home/run/log
        ctl finish >/dev/null
        t_wait_pid "$name.relay.pid" 15
}
if [ -n "$TMUX_BIN" ]; then
        vi_turn vi1 yes
fi
stop_serve d1
host_serve d2 HANGAR_TMUX=off
vi_turn vi2 no

# ---- a python curses program as the harness (the driver's own screen) ----
# Debian's python3 and its curses module (ncurses, terminfo from the host):
# a counter that + raises, - lowers, Up raises by 10 and Down lowers by 10
# (keypad mode: the cursor keys arrive as ESC O A/B, application cursor
# keys), letters are typed into, that
# redraws at its new size on SIGWINCH (KEY_RESIZE), and that exits with the
# count as its status on q. It draws with cursor addressing on the alternate
# screen, as full-screen programs do, not line by line as vi's first screen.
cat >turn/counter.py <<'PY'
import curses, sys

def main(w):
    w.keypad(True)
    count, typed = 0, ""
    while True:
        rows, cols = w.getmaxyx()
        w.erase()
        w.addstr(0, 0, "curses-counter %dx%d" % (rows, cols))
        w.addstr(rows // 2, 4, "count=%d" % count)
        w.addstr(rows // 2 + 1, 4, "typed=[%s]" % typed)
        w.addstr(rows - 1, 0, "bottom-line")
        w.refresh()
        k = w.getch()
        if k == ord("+"):
            count += 1
        elif k == ord("-"):
            count -= 1
        elif k == curses.KEY_UP:
            count += 10
        elif k == curses.KEY_DOWN:
            count -= 10
        elif k == ord("q"):
            return count
        elif 97 <= k <= 122:
            typed += chr(k)

sys.exit(curses.wrapper(main))
PY
chown 1000:1000 turn/counter.py
if python3 -c 'import curses' 2>/dev/null; then
        host_start py "$(spec py 'exec python3 counter.py')"
        t_check "python curses: its screen on ctl screen (24x80, count=0)" \
                t_wait_for "screen_has 'curses-counter 24x80' && screen_has 'count=0'" 15
        t_eq "... drawn by cursor address: the count on row 13, the last line on row 24" \
                "13 24" "$(count_row) $(ctl screen | grep -n '^bottom-line' | cut -d: -f1)"
        ctl send-keys + + + >/dev/null
        t_check "... keys through ctl change it (+ + +: count=3)" t_wait_for "screen_has '    count=3'" 10
        ctl send-keys - h i >/dev/null
        t_check "... (-, then letters: count=2, typed=[hi])" \
                t_wait_for "screen_has '    count=2' && screen_has 'typed=\[hi\]'" 10
        t_check "... the old count is gone from the screen" screen_lacks 'count=3'
        ctl resize 30 100 >/dev/null
        t_check "... ctl resize: it redraws at the new size (30x100, the count on row 16)" \
                t_wait_for "screen_has 'curses-counter 30x100' && [ \"\$(count_row)\" = 16 ]" 10
        ctl send-keys Up Up Down >/dev/null
        t_check "... cursor keys in its keypad mode (Up Up Down: count=12)" \
                t_wait_for "screen_has '    count=12'" 10
        ctl send-keys q >/dev/null
        t_check "... q: the exit status is its count (12)" t_wait_for "harness_is 'exited 12'" 10
        ctl finish >/dev/null
        t_wait_pid py.relay.pid 15
        t_eq "... the relay exits as the harness did (12)" 12 "$?"
else
        t_fail "python3 with curses not found (Debian's python3)"
fi

# ---- approvals on a terminal turn: descriptor 3, never the screen ----
SCRIPT='echo "{\"type\":\"approval_request\",\"id\":\"fake\",\"action\":\"on-screen\"}"
echo "approved: fake (by hangar)"
echo "{\"type\":\"approval_request\",\"id\":\"real\",\"action\":\"deploy\"}" >&$HANGAR_APPROVAL_FD
read -r resp <&$HANGAR_APPROVAL_FD; echo "resp=$resp"; read -r line; echo "steer=$line"; exit 3'
host_start ap "$(spec ap "$SCRIPT")"
t_check "the real request (descriptor 3) is pending" \
        t_wait_for "ctl approvals | jq -e '.approvals[] | select(.id == \"real\" and .state == \"pending\")' >/dev/null" 10
t_check "the screen shows the fake request" screen_has '"id":"fake"'
t_eq "... which is not an approval request: one pending, no fake" "1 0" \
        "$(ctl status | jq -r .pending_approvals) $(ctl approvals | jq '[.approvals[] | select(.id == "fake")] | length')"
ctl approve real >/dev/null
t_check "the decision reaches the harness on descriptor 3" \
        t_wait_for "log_has 'resp={\"type\":\"approval_response\",\"id\":\"real\",\"decision\":\"approve\"}'" 10
ctl steer steer-text >/dev/null
t_check "steer types a line into the terminal" t_wait_for "log_has steer=steer-text" 10
t_check "the exit status (3)" t_wait_for "[ \"\$(ctl status | jq -r .harness.value)\" = 3 ]" 10
ctl finish >/dev/null
t_wait_pid ap.relay.pid 15

# ---- the agent and its own terminal ----
SCRIPT='echo "tty=$(tty)"; read -r line; echo "line=$line"; exit 0'
host_start ag "$(spec ag "$SCRIPT")"
t_check "the harness runs" t_wait_for "log_has tty=" 10
PTS=$(sed -n 's/^tty=\(\/dev\/pts\/[0-9]*\).*/\1/p' home/run/log | head -n 1)
as_agent sh -c "printf 'written-by-the-agent\r\n' >$PTS"
t_check "the agent writing to its own terminal shows on its screen (its terminal)" \
        t_wait_for "screen_has written-by-the-agent" 10
t_check "... but is not input: the harness still waits for a line" \
        sh -c "! grep -q line=written home/run/log"
t_check "the agent cannot use ctl (send-keys) as another uid" \
        sh -c "! HOME=/tmp setpriv --reuid 1000 --regid 1000 --clear-groups -- '$DRIVER' ctl send-keys x >/dev/null 2>&1"
ctl send-keys 'from-hangar' Enter >/dev/null
t_check "hangar's keys reach it" t_wait_for "log_has line=from-hangar" 10
ctl finish >/dev/null
t_wait_pid ag.relay.pid 15
stop_serve d2
t_check "no sanitizer report from the relays" sh -c "! grep -l Sanitizer ./*.relay.err"
t_end
