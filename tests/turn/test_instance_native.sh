#!/usr/bin/env bash
# The relay checks the daemon's instance, on the host (no pod): hangar
# writes the token and the instance id that `ctl start` replied with on the
# relay's stdin ("TOKEN INSTANCE\n"); the relay, once it has them, reads
# hangar-home's port and turn file again and connects only if they are that
# instance's, unchanged. Cases: a wrong instance and malformed lines are
# refused without a connection (the turn still waits; the right line then
# runs it); a daemon killed with a turn waiting leaves its port and turn
# file, the next daemon (a new instance) removes both, and a relay with the
# old turn's token and instance is refused, before and after that daemon
# started a turn of its own; a daemon replaced while the relay waits for
# its token is noticed. And the gap the instance check cannot see: the
# daemon dead, its port and turn file still in place, the agent listening
# on that port (hangar-test-attack squat): the relay for the old turn passes
# the instance check, connects, and must refuse the listener because it
# cannot prove it holds the token (125 driver-unproven), having sent it one
# HELLO (a channel and a random nonce) and nothing else. And a keep_processes
# turn whose token a thief used first, on io and ctl: the relay coming
# second is told so (125 token-taken), the driver ends the turn
# token-misused; a relay that finds no listener at all stays 125 failed
# (connection refused). Quick, and sanitized in the ASan+UBSan build.
# usage: test_instance_native.sh DRIVER RELAY ATTACK
# shellcheck disable=SC2016,SC2094 # scripts for the harness; the relay's out file is read as it grows
DRIVER=$(realpath "$1")
RELAY=$(realpath "$2")
ATTACK=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/hostlib.sh"
host_unshared "$0" "$DRIVER" "$RELAY" "$ATTACK"
. "$HERE/../lib/testlib.sh"
t_begin "the relay refuses a daemon that is not the instance that started its turn"
host_turn_up "$DRIVER" "$RELAY" "$ATTACK"
ATTACK=$T_TMP/bin/$(basename "$ATTACK")

spec() { # ID [EXTRA_JSON]
        jq -n --arg id "$1" --arg cwd "$T_TMP/turn" --argjson extra "${2:-{\}}" \
                '{turn: $id, mode: "ask", cwd: $cwd, script: "echo ran-\($id)", run_key: "KEY-\($id)",
                  linger_s: 5, connect_timeout_s: 60, handshake_timeout_ms: 500} + $extra'
}
serve() { # NAME: the daemon in the background; its instance in NAME.instance
        host_serve "$1"
        jq -r .instance "$1.ping" >"$1.instance"
}
start() { # NAME [EXTRA_JSON]: ctl start; the reply in NAME.start
        spec "$1" "${2:-}" | ctl start --spec - >"$1.start" 2>"$1.start.err" ||
                t_fail "$1: ctl start: $(cat "$1.start.err")"
}
# relay NAME LINE: hangar-relay as the agent (uid 1000), LINE written on its
# stdin only after its ready line, as hangar does. Waits for it to end;
# its exit status in NAME.rc, its last line in NAME.out.
relay() {
        : >"$1.out"
        { t_wait_for "grep -q '\"relay\":' '$1.out'" 30 && grep -q '"relay":"ready"' "$1.out" &&
                printf '%s\n' "$2"; } |
                HOME=$T_TMP/agent-home HANGAR_HOME_PATH=$AGENT_HOME_VIEW \
                        setpriv --reuid 1000 --regid 1000 --clear-groups -- "$RELAY" >"$1.out" 2>"$1.err"
        echo $? >"$1.rc"
}
# relay_held NAME: hangar-relay as the agent (uid 1000) in the background,
# its stdin the fifo NAME.in held open on descriptor 7 until relay_give (the
# line comes when the case says, not at the ready line); its pid in RPID.
relay_held() {
        mkfifo "$1.in"
        : >"$1.out"
        HOME=$T_TMP/agent-home HANGAR_HOME_PATH=$AGENT_HOME_VIEW \
                setpriv --reuid 1000 --regid 1000 --clear-groups -- "$RELAY" <"$1.in" >"$1.out" 2>"$1.err" &
        RPID=$!
        t_cleanup_pid $RPID
        exec 7>"$1.in"
}
# relay_give NAME LINE: LINE on the held relay's stdin, then its end; waits
# for the relay, its exit status in NAME.rc.
relay_give() {
        printf '%s\n' "$2" >&7
        exec 7>&-
        wait "$RPID"
        echo $? >"$1.rc"
}
# daemon_down SIGNAL NAME: the daemon serve NAME started, signalled, gone.
daemon_down() {
        t_signal "$1" "$(cat "$2.serve.pid")"
        t_wait_for "! kill -0 $(cat "$2.serve.pid") 2>/dev/null" 10
}
outcome() { echo "$(cat "$1.rc") $(tail -n 1 "$1.out" | jq -r '"\(.relay) \(.reason)"')"; }
events_has() { grep -q "\"event\":\"$1\"" home/run/events.jsonl ctl/events.jsonl 2>/dev/null; }
state() { ctl status | jq -r .state; }

serve d1
I1=$(cat d1.instance)
start t1
T1=$(jq -r .token t1.start)
t_eq "ctl start's reply names the instance (ping's)" "$I1" "$(jq -r .instance t1.start)"
t_eq "ctl token's reply names it too" "$I1 $(jq -r .gen t1.start)" "$(ctl token | jq -r '"\(.instance) \(.gen)"')"
OTHER=$(printf '%032x' 7)
relay wrong "$T1 $OTHER"
t_check "a wrong instance id: refused, 125 driver-instance ($(outcome wrong))" \
        grep -q "^125 driver-instance .*daemon $I1's, not $OTHER's" <<<"$(outcome wrong)"
for bad in "$T1  $I1" "$T1 ${I1^^}" "$T1 ${I1:0:31}" "$T1 ${I1}0" "$T1 $I1 x" "$T1 " "$T1"$'\t'"$I1"; do
        relay bad "$bad"
        t_check "a malformed line ([${bad:60}]): refused, 125 failed ($(outcome bad))" \
                grep -q '^125 failed stdin: ' <<<"$(outcome bad)"
done
t_eq "... none of them connected: the turn still waits for its relay" waiting-for-relay "$(state)"
t_check "... no relay.connected, no relay.rejected" sh -c "! grep -qE 'relay\.(connected|rejected)' home/run/events.jsonl ctl/events.jsonl 2>/dev/null"
relay right "$T1 $I1"
t_eq "the right instance: the turn runs (exit 0, done)" "0 done" "$(cat right.rc) $(tail -n 1 right.out | jq -r .relay)"
t_check "... the harness ran" grep -q ran-t1 home/run/log
ctl finish >/dev/null 2>&1
t_wait_for "[ \"\$(ctl status | jq -r .state)\" = ended ]" 20
start t1b
relay legacy "$(jq -r .token t1b.start)"
t_eq "the token alone (no instance): the turn runs, as before" "0 done" \
        "$(cat legacy.rc) $(tail -n 1 legacy.out | jq -r .relay)"
t_wait_for "[ \"\$(ctl status | jq -r .state)\" = ended ]" 20

# ---- a daemon killed with a turn waiting for its relay ----
start t2
T2=$(jq -r .token t2.start)
daemon_down 9 d1
t_check "the killed daemon left its port and its turn file" test -e home/relay.port -a -e home/run/turn.json
# The moment before the kubelet restarts it: the agent listens on the dead
# daemon's port, and a relay for t2 comes (hangar started it just before
# the daemon died). The port and turn file are still instance I1's: the
# instance check passes, and only the driver's proof stands between the
# relay and the agent's listener.
OLDPORT=$(cat home/relay.port)
as_agent "$ATTACK" "$OLDPORT" squat 30 "$T2" >squat.out 2>&1 &
SQUAT=$!
t_wait_for "grep -q '^bound $OLDPORT\$' squat.out" 10 ||
        t_fail "the agent could not bind the dead daemon's port $OLDPORT: $(cat squat.out)"
relay gap "$T2 $I1"
wait $SQUAT
t_check "the agent on the dead daemon's port: refused, 125 driver-unproven ($(outcome gap))" \
        grep -q '^125 driver-unproven io channel: the listener on the port failed the proof' <<<"$(outcome gap)"
t_eq "... the listener got one HELLO and nothing it could answer with (no PROOF, no token)" \
        hello-only "$(tail -n 1 squat.out)"
t_check "... the relay's stderr says why" grep -q 'driver-unproven\|did not prove\|failed the proof' gap.err
serve d2
I2=$(cat d2.instance)
t_check "the next daemon is a new instance ($I2)" test "$I2" != "$I1"
t_check "... it removed the old port and turn file" test ! -e home/relay.port -a ! -e home/run/turn.json
relay gone "$T2 $I1"
t_check "a relay for the old turn finds no port: refused ($(outcome gone))" \
        grep -q '^125 failed .*relay.port' <<<"$(outcome gone)"
start t3
relay stale "$T2 $I1"
t_check "... and once the new daemon runs a turn: refused, 125 driver-instance ($(outcome stale))" \
        grep -q "^125 driver-instance .*daemon $I2's, not $I1's" <<<"$(outcome stale)"
t_check "... it never connected (no relay.rejected for the new turn)" \
        sh -c "! grep -q 'relay.rejected' home/run/events.jsonl ctl/events.jsonl 2>/dev/null"
relay t3 "$(jq -r .token t3.start) $I2"
t_eq "the new turn runs clean with its own token and instance" "0 done" "$(cat t3.rc) $(tail -n 1 t3.out | jq -r .relay)"
t_wait_for "[ \"\$(ctl status | jq -r .state)\" = ended ]" 20

# ---- the daemon replaced while the relay waits for its token ----
start t4
T4=$(jq -r .token t4.start)
relay_held t4
t_check "the relay read t4's port and turn file and says ready" t_wait_for "grep -q '\"relay\":\"ready\"' t4.out" 30
daemon_down 9 d2
serve d3
start t5
relay_give t4 "$T4 $I2"
t_check "the token arrives after a restart: refused, 125 driver-instance ($(outcome t4))" \
        grep -q "^125 driver-instance .*daemon $(cat d3.instance)'s, not $I2's" <<<"$(outcome t4)"
t_eq "... the new daemon's turn still waits for its own relay" waiting-for-relay "$(state)"
daemon_down TERM d3

# ---- keep_processes: a thief with the token takes io and ctl first ----
# The gap docs/security-model.md describes for "keep_processes": true (no
# sweep: an agent process that read the token, here played by the suite,
# which knows it, completes io and ctl before the relay). The driver keeps
# its listener for the turn: the relay, coming second, is told TAKEN after
# its proof checks and exits 125 token-taken (not failed), and the driver
# records the replay and ends the turn token-misused, the thief's
# connections with it.
serve d4
I4=$(cat d4.instance)
start t6 '{"keep_processes": true}'
T6=$(jq -r .token t6.start)
: >t6.thief
as_agent "$ATTACK" "$(jq -r .port t6.start)" take "$T6" 30 >t6.thief 2>&1 &
THIEF=$!
t_cleanup_pid $THIEF
t_check "the thief took io and ctl with the token" t_wait_for "grep -q '^both\$' t6.thief" 10
t_eq "... the driver runs the turn for it" running "$(state)"
t_eq "... the listener keeps the token meanwhile (root finds it in the daemon's memory)" present \
        "$(host_mem_has "$(cat d4.serve.pid)" "$T6")"
relay t6 "$T6 $I4"
t_check "the relay coming second: 125 token-taken, said on io ($(outcome t6))" \
        grep -q '^125 token-taken io channel: the driver says the token was already used' <<<"$(outcome t6)"
t_check "... its stderr says so" grep -q 'token was already used' t6.err
t_eq "... its line keeps the sweep's report (kept: skipped)" "false keep-processes" \
        "$(tail -n 1 t6.out | jq -r '"\(.sealed) \(.sweep.skipped)"')"
t_check "... the turn ends token-misused" t_wait_for "[ \"\$(state)\" = ended ]" 10
t_eq "... as ctl status and exit.json say" "token-misused token-misused" \
        "$(ctl status | jq -r .end.end) $(jq -r .end home/run/exit.json)"
t_check "... the replay recorded: relay.rejected replayed, io already taken" \
        grep -q '"event":"relay.rejected".*"reason":"replayed","detail":"io already taken"' ctl/events.jsonl
t_eq "... two channels connected, the thief's" 2 "$(grep -c '"event":"relay.connected"' ctl/events.jsonl)"
wait $THIEF
t_eq "... and the driver closed the thief's connections at the turn's end" "both closed" \
        "$(tr '\n' ' ' <t6.thief | sed 's/ $//')"
t_eq "the token is wiped from the daemon's memory at the turn's end (root reads it all)" absent \
        "$(host_mem_has "$(cat d4.serve.pid)" "$T6")"

# A relay that still finds the port after the listener is gone (its daemon
# killed while the relay waited for its token; the port and turn file stay,
# so the instance check passes) is refused by the kernel: that stays
# "failed", with connect's reason, not token-taken.
start t7
T7=$(jq -r .token t7.start)
P7=$(jq -r .port t7.start)
relay_held t7
t_check "the relay for t7 says ready" t_wait_for "grep -q '\"relay\":\"ready\"' t7.out" 30
daemon_down 9 d4
relay_give t7 "$T7 $I4"
t_check "no listener on the port: 125 failed, connection refused ($(outcome t7))" \
        grep -q "^125 failed io channel: connect to 127.0.0.1:$P7: Connection refused" <<<"$(outcome t7)"
t_end
