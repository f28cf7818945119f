#!/usr/bin/env bash
# The driver as a daemon on the host, without a pod: hangar-driver serve as
# uid 1001 (as the sidecar runs it), turns started with `ctl start`, the relay
# as uid 1000 with the token from the start reply. Then: a second start is
# refused while a turn is in flight; a watcher killed mid-turn reattaches with
# --from and, with what it had, has the whole log (the harness's known
# output); status and events by turn id; bad requests leave the daemon
# answering; SIGTERM mid-turn ends the turn recorded as driver-stopped;
# a daemon killed mid-turn: the relay ends the harness, a restarted daemon
# has a new instance id, removed the stale port and token, and runs the next
# turn clean. Quick, and sanitized in the ASan+UBSan build.
# usage: test_daemon_native.sh DRIVER RELAY
# shellcheck disable=SC2016,SC2094  # scripts for the harness; the relay's out file is read as it grows
DRIVER=$(realpath "$1")
RELAY=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/hostlib.sh"
host_unshared "$0" "$DRIVER" "$RELAY"
. "$HERE/../lib/testlib.sh"
t_begin "the driver's daemon on the host (serve + ctl start)"
host_turn_up "$DRIVER" "$RELAY"

spec() {
        jq -n --arg id "$1" --arg script "$2" --arg cwd "$T_TMP/turn" --argjson extra "${3:-{\}}" \
                '{turn: $id, mode: "ask", cwd: $cwd, script: $script, run_key: "KEY-\($id)",
                  linger_s: 30, connect_timeout_s: 30, handshake_timeout_ms: 500} + $extra'
}
relay_result() { tail -n 1 "$1.relay.out"; }
log_has() { grep -q -- "$1" home/run/log 2>/dev/null; }
state() { ctl status | jq -r .state; }

host_serve d1
t_eq "ping: the daemon answers, idle" "true idle" "$(jq -r '"\(.ok) \(.state)"' d1.ping)"
INSTANCE1=$(jq -r .instance d1.ping)
t_eq "an instance id (32 hex)" 32 "$(printf %s "$INSTANCE1" | tr -cd 0-9a-f | wc -c)"
SPID=$(cat d1.serve.pid)
t_eq "ping: no restore watch off gVisor, no restore" "unavailable 0" \
        "$(jq -r '"\(.restore_watch) \(.restores)"' d1.ping)"
# driver.cloneSafety required: a daemon that cannot see a restore does not
# start (it stops before it touches the control socket d1 holds).
env HANGAR_DRIVER_CLONE_SAFETY=required setpriv --reuid 1001 --regid 1001 --clear-groups -- \
        "$DRIVER" serve >cs.out 2>cs.err
t_eq "cloneSafety required, no restore watch: serve refuses to start (no-restore-signal)" "1 yes" \
        "$? $(grep -q 'no-restore-signal' cs.out cs.err && echo yes)"
env HANGAR_DRIVER_CLONE_SAFETY=maybe "$DRIVER" serve >cs2.out 2>cs2.err
t_check "cloneSafety: a value other than auto or required is an error" \
        sh -c "test $? -ne 0 && grep -q 'auto or required' cs2.err"
t_eq "... and the running daemon still answers, as before" "true $INSTANCE1" \
        "$(ctl ping | jq -r '"\(.ok) \(.instance)"')"
t_check "the daemon is non-dumpable: another uid-1001 process cannot read its /proc/PID/environ" \
        sh -c "! setpriv --reuid 1001 --regid 1001 --clear-groups -- cat /proc/$SPID/environ >/dev/null 2>&1"
t_check "ops that need a turn say there is none" \
        sh -c "setpriv --reuid 1001 --regid 1001 --clear-groups -- '$DRIVER' ctl watch 2>&1 | grep -q 'no turn yet'"

# ---- a turn, a watcher dropped and reattached ----
# The harness's known output: 60 numbered lines, a pause for stdin, 60 more.
SCRIPT='for i in $(seq 1 60); do echo "line-$i"; sleep 0.05; done; read go; echo "go=$go"
for i in $(seq 61 120); do echo "line-$i"; sleep 0.02; done; exit 7'
seq 1 60 | sed 's/^/line-/' >want.log
echo go=now >>want.log
seq 61 120 | sed 's/^/line-/' >>want.log
host_start t1 "$(spec t1 "$SCRIPT" '{"close_stdin": false}')"
t_eq "ctl start: turn, token, port, instance" "t1 64 true $INSTANCE1" \
        "$(jq -r '"\(.turn) \(.token | length) \(.port > 0) \(.instance)"' t1.start)"
t_eq "a second start while it is in flight is refused" "1 yes" \
        "$(ctl start --spec - <<<"$(spec t2 'true')" >/dev/null 2>t2.err; echo "$? $(grep -q 'one turn at a time' t2.err && echo yes)")"
as_driver "$DRIVER" ctl watch --turn t1 >w1.out 2>/dev/null &
W1=$!
t_cleanup_pid $W1
t_check "the harness runs" t_wait_for "log_has line-20" 15
t_signal KILL "$W1"
wait $W1 2>/dev/null
# What the killed watcher had: the log's bytes, as they came.
cp w1.out w1.log
GOT=$(stat -c %s w1.log)
t_check "the killed watcher had part of the output ($GOT bytes)" test "$GOT" -gt 0
t_eq "status by turn id" "t1 running" "$(ctl status --turn t1 | jq -r '"\(.turn) \(.state)"')"
t_check "status for another turn id is refused" sh -c "! setpriv --reuid 1001 --regid 1001 --clear-groups -- '$DRIVER' ctl status --turn nope >/dev/null 2>&1"
t_wait_for "log_has line-60" 15
ctl steer now >/dev/null
as_driver "$DRIVER" ctl watch --turn t1 --from "$GOT" >w2.out 2>w2.err &
W2=$!
t_cleanup_pid $W2
t_check "the exit status arrives (7)" t_wait_for "[ \"\$(ctl status | jq -r .harness.value)\" = 7 ]" 20
ctl finish --turn t1 >/dev/null
t_wait_pid t1.relay.pid 15
t_eq "the relay exits as the harness did (7)" 7 "$?"
echo $W2 >w2.pid
t_wait_pid w2.pid 15
t_eq "the reattached watcher ends with the turn (exit 0)" 0 "$?"
cat w1.log w2.out >whole.log
t_check "what the two watchers got is the harness's whole output, nothing lost or doubled" \
        cmp -s want.log whole.log
t_eq "status after the end: ended, done" "ended done" "$(ctl status --turn t1 | jq -r '"\(.state) \(.end.end)"')"
t_check "a watch of the ended turn from 0 is the whole log" \
        sh -c "setpriv --reuid 1001 --regid 1001 --clear-groups -- '$DRIVER' ctl watch --turn t1 --from 0 | cmp -s - want.log"
EV=$(ctl events --turn t1)
N=$(printf '%s\n' "$EV" | wc -l)
OFF=$(printf '%s\n' "$EV" | head -n 3 | wc -c)
t_eq "events --from an offset: the rest, nothing lost" "$(printf '%s\n' "$EV" | tail -n +4)" \
        "$(ctl events --turn t1 --from "$OFF")"
t_check "the events have the whole turn ($N lines)" sh -c "printf '%s' \"\$1\" | grep -q '\"event\":\"turn.ended\"'" _ "$EV"
t_check "relay.port is gone once the turn ended" test ! -e home/relay.port
t_check "a watch past the log's end is refused" sh -c "! setpriv --reuid 1001 --regid 1001 --clear-groups -- '$DRIVER' ctl watch --from 999999 >/dev/null 2>&1"

# ---- events followed live (one request for the whole turn), a turn aborted ----
# hangar follows a turn's events with one `ctl events --follow` (the
# `hangar turn run` client) and ends a turn whose order broke with `ctl
# finish --abort`, in any state.
ctl events --turn t1 --follow >f0.out 2>f0.err
t_eq "events --follow of an ended turn: all of it, then the end (0)" "0 $(wc -c <ctl/events.jsonl)" \
        "$? $(wc -c <f0.out)"
host_start ab "$(spec ab 'echo started; while :; do sleep 0.1; done')"
as_driver "$DRIVER" ctl events --turn ab --follow >fab.out 2>fab.err &
FAB=$!
t_cleanup_pid $FAB
t_check "the follower sees the harness start as it happens" \
        t_wait_for "grep -q '\"event\":\"harness.started\"' fab.out" 15
t_check "the turn is still running: the follower has not ended" kill -0 $FAB
ctl finish --turn ab --abort "the relay's order broke" >abort.out
t_eq "finish --abort while the harness runs: ok" true "$(jq -r .ok abort.out)"
echo $FAB >fab.pid
t_wait_pid fab.pid 15
t_eq "... the follower ends with the turn (0)" 0 "$?"
t_check "... having every event, the last turn.ended aborted, as the file has them" \
        sh -c "cmp -s fab.out ctl/events.jsonl && tail -n 1 fab.out | jq -e '.event == \"turn.ended\" and .end == \"aborted\" and (.reason | test(\"order broke\"))' >/dev/null"
t_wait_pid ab.relay.pid 15
t_eq "... the relay ends the harness: 125 driver-gone" "125 driver-gone" "$? $(relay_result ab | jq -r .end)"
ctl start --spec - <<<"$(spec ab2 'true')" >ab2.start 2>ab2.err
t_eq "a turn waiting for its relay (no token sent) ..." "ab2 waiting-for-relay" "$(jq -r .turn ab2.start) $(state)"
ctl finish --abort "output before the relay's ready line" >/dev/null
t_eq "... is ended by finish --abort: aborted, its port gone" "ended aborted absent" \
        "$(ctl status --turn ab2 | jq -r '"\(.state) \(.end.end)"') $(test -e home/relay.port && echo present || echo absent)"
t_check "finish --abort of an ended turn is refused" sh -c "! setpriv --reuid 1001 --regid 1001 --clear-groups -- '$DRIVER' ctl finish --abort again >/dev/null 2>&1"

# ---- ctl start --follow: the reply, then the turn's events, one request ----
as_driver "$DRIVER" ctl start --spec - --follow <<<"$(spec sf 'echo followed; exit 4' '{"linger_s": 1}')" \
        >sf.out 2>sf.err &
SF=$!
t_cleanup_pid $SF
echo $SF >sf.pid
t_check "start --follow: the reply line comes first" t_wait_for "grep -q '^{' sf.out" 10
t_eq "... the reply: ok, the turn, its token" "true sf 64" \
        "$(head -n 1 sf.out | jq -r '"\(.ok) \(.turn) \(.token | length)"')"
host_relay sf "$(head -n 1 sf.out | jq -r '"\(.token) \(.instance)"')"
t_wait_pid sf.relay.pid 20
t_eq "... the turn runs (4)" 4 "$?"
t_wait_pid sf.pid 20
t_eq "... and the stream ends with the turn (0)" 0 "$?"
t_check "... after the reply, every event of the turn, as the file has them" \
        sh -c "tail -n +2 sf.out | cmp -s - ctl/events.jsonl && tail -n 1 sf.out | grep -q '\"event\":\"turn.ended\"'"

# ---- the run log's cap (log_max_mib): counted past it, approvals still read ----
FLOOD='head -c 3145728 /dev/zero | tr "\0" x; echo; head -c 100000 /dev/zero | tr "\0" y >&2
echo "{\"type\": \"approval_request\", \"id\": \"after-flood\"}"
read -r a; case "$a" in *approve*) exit 0 ;; *) exit 9 ;; esac'
host_start cap "$(spec cap "$FLOOD" '{"log_max_mib": 1, "close_stdin": false, "linger_s": 1}')"
t_check "past the cap, the approval request is still read" \
        t_wait_for "ctl approvals | grep -q '\"id\":\"after-flood\"'" 20
ctl approve after-flood >/dev/null
t_wait_pid cap.relay.pid 20
t_eq "... and answered: the harness exits 0" 0 "$?"
t_eq "the log holds exactly the cap (1 MiB)" 1048576 "$(stat -c %s home/run/log)"
# (3 MiB and its newline, 100000 on stderr, the 50-byte request line)
t_eq "... the rest is counted: status capped.log_dropped" $((3145728 + 1 + 100000 + 50 - 1048576)) \
        "$(ctl status --turn cap | jq -r .capped.log_dropped)"
t_eq "... one record.capped event says so (run.log, the limit in bytes)" "1 run.log 1048576" \
        "$(grep -c '"event":"record.capped"' ctl/events.jsonl) $(jq -r 'select(.event == "record.capped") | "\(.what) \(.limit)"' ctl/events.jsonl)"
ctl start --spec - <<<"$(spec cap2 'true' '{"log_max_mib": 0}')" >/dev/null 2>cap2.err
t_check "log_max_mib out of its bounds (0) is refused" grep -q 'log_max_mib' cap2.err

# ---- the relay started before ctl start (`hangar turn run` starts both together) ----
# relay_for NAME ID: the relay as the agent with --turn ID --wait-port 20,
# its stdin the fifo NAME.in (held open on descriptor RIN).
relay_for() {
        mkfifo "$1.in"
        HOME=$T_TMP/agent-home HANGAR_HOME_PATH=$AGENT_HOME_VIEW \
                setpriv --reuid 1000 --regid 1000 --clear-groups -- "$RELAY" --turn "$2" --wait-port 20 \
                <"$1.in" >"$1.relay.out" 2>"$1.relay.err" &
        echo $! >"$1.relay.pid"
        t_cleanup_pid "$(cat "$1.relay.pid")"
        exec {RIN}>"$1.in"
}
relay_for early w1
sleep 0.5
t_eq "a relay for turn w1 before its start: waiting, nothing said yet" "running 0" \
        "$(kill -0 "$(cat early.relay.pid)" && echo running) $(wc -c <early.relay.out)"
ctl start --spec - <<<"$(spec w1 'echo early-relay; exit 5' '{"linger_s": 1}')" >w1.start
t_check "... once the turn is started, the relay says ready" t_wait_for "grep -q '\"relay\":\"ready\"' early.relay.out" 15
jq -r '"\(.token) \(.instance)"' w1.start >&"$RIN"
exec {RIN}>&-
t_wait_pid early.relay.pid 20
t_eq "... and runs the turn: exit 5, done" "5 done" "$? $(relay_result early | jq -r .relay)"
host_start w2 "$(spec w2 'read -r x; echo w2-done' '{"close_stdin": false}')"
t_check "a turn in flight (w2)" t_wait_for "[ \"\$(state)\" = running ]" 15
relay_for other w3
sleep 0.5
t_eq "a relay for turn w3 while w2 holds the files: it waits, no ready line" "running 0" \
        "$(kill -0 "$(cat other.relay.pid)" && echo running) $(wc -c <other.relay.out)"
exec {RIN}>&-
t_wait_pid other.relay.pid 10
t_eq "... hangar ends its stdin (w3 refused): it ends at once, 125, and says why" "125 failed yes" \
        "$? $(relay_result other | jq -r .relay) $(relay_result other | jq -r .reason | grep -q 'hangar gave up' && echo yes)"
t_eq "... the turn in flight goes on" running "$(state)"
ctl steer go >/dev/null
t_wait_for "[ \"\$(state)\" = harness-exited ]" 15
ctl finish --turn w2 >/dev/null
t_wait_pid w2.relay.pid 20
t_eq "... to its end (0)" 0 "$?"
relay_for late w9
exec {RIN}>&-
t_wait_pid late.relay.pid 10
t_eq "a relay whose turn never comes, its stdin ended: 125 at once" 125 "$?"

# ---- bad requests ----
for req in 'junk' '{"op":"nope"}' '{"op":"ping","extra":1}' '{"op":"start","spec":"{}"}' '[1,2]' ''; do
        printf '%s' "$req" | as_driver /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(sys.stdin.buffer.read()); s.shutdown(1)
print(s.recv(65536).decode().strip())' ctl/ctl.sock >bad.out 2>&1
        t_eq "a bad request ($req) gets an error reply" false "$(jq -r .ok bad.out 2>/dev/null)"
done
t_eq "... and the daemon still answers" true "$(ctl ping | jq -r .ok)"
t_check "the agent cannot reach the control socket" \
        sh -c "! HOME=/tmp setpriv --reuid 1000 --regid 1000 --clear-groups -- '$DRIVER' ctl ping >/dev/null 2>&1"

# ---- the next turn, then SIGTERM in the middle of one ----
LOOP='echo started; i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.1; done'
host_start t3 "$(spec t3 "$LOOP")"
t_check "the next turn runs" t_wait_for "log_has 'tick 3'" 15
t_signal TERM "$SPID"
t_wait_pid d1.serve.pid 10
t_eq "SIGTERM: the daemon exits 0" 0 "$?"
t_eq "... the turn is recorded as ended: driver-stopped" driver-stopped "$(jq -r .end home/run/exit.json)"
t_check "... with a turn.ended event" grep -q '"event":"turn.ended","end":"driver-stopped"' ctl/events.jsonl
t_wait_pid t3.relay.pid 10
t_eq "... the relay ends the harness: 125 driver-gone" "125 driver-gone" "$? $(relay_result t3 | jq -r .end)"
t_check "... no harness left" t_wait_for "! pgrep -f '$AGENT_HOME_VIEW/run/script' >/dev/null" 5
t_check "... the socket is removed" test ! -e ctl/ctl.sock

# ---- a daemon killed in the middle of a turn ----
host_serve d2
INSTANCE2=$(jq -r .instance d2.ping)
host_start t4 "$(spec t4 "$LOOP")"
t_check "a turn runs" t_wait_for "log_has 'tick 3'" 15
t_signal KILL "$(cat d2.serve.pid)"
t_wait_pid t4.relay.pid 10
t_eq "daemon killed: the relay ends the harness, 125 driver-gone" "125 driver-gone" "$? $(relay_result t4 | jq -r .end)"
t_check "... no harness left" t_wait_for "! pgrep -f '$AGENT_HOME_VIEW/run/script' >/dev/null" 5
t_check "... it left a stale socket and port" sh -c "test -S ctl/ctl.sock && test -e home/relay.port"
STALE_PORT=$(cat home/relay.port)
host_serve d3
INSTANCE3=$(jq -r .instance d3.ping)
t_check "the restarted daemon has a new instance id" test "$INSTANCE3" != "$INSTANCE2"
t_check "... it removed the stale port and token" sh -c "test ! -e home/relay.port && test ! -e ctl/relay.token"
t_eq "... and kept no state of the old turn" idle "$(state)"
host_start t5 "$(spec t5 'echo clean-turn; exit 3' '{"linger_s": 1}')"
t_wait_pid t5.relay.pid 20
t_eq "the next turn runs clean (3)" 3 "$?"
t_check "... its port is its own" sh -c "[ \"\$(jq -r .port t5.start)\" != '$STALE_PORT' ] || true"
t_check "... its log has only its output" sh -c "grep -qx clean-turn home/run/log && ! grep -q tick home/run/log"
t_eq "... recorded as done" "done" "$(jq -r .end home/run/exit.json)"

# ---- one-shot relay: the same daemon, one turn ----
t_signal TERM "$(cat d3.serve.pid)"
t_wait_pid d3.serve.pid 10
setpriv --reuid 1001 --regid 1001 --clear-groups -- "$DRIVER" relay --spec - \
        <<<"$(spec nc 'true' '{"connect_timeout_s": 1}')" >nc.out 2>/dev/null
t_eq "hangar-driver relay (one turn, no relay): 1, relay-never-connected" "1 relay-never-connected" \
        "$? $(jq -r .end nc.out)"
t_end
