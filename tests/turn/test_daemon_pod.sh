#!/usr/bin/env bash
# The driver as the sidecar's daemon in a real pod (tests/pods/podrun under
# runsc or crun, or the shared node's kubelet with RUNTIME node:
# tests/node/nodepod): the webhook's injected pod with driver.command
# hangar-driver serve and the probes on (podrun runs no probes; the kubelet
# runs them, and the pod is Ready only once the startup probe passed: here
# the probe's command is also run by hand). hangar-driver serve is the
# container's PID 1; a turn is
# `ctl start` (one exec into hangar-driver) plus the relay (one exec into the
# agent's container). Mid-turn, hangar's exec clients of `ctl watch` and of
# the relay are killed; a new exec reattaches with `ctl watch --from` and,
# with what the first watcher had, gets the harness's whole known output;
# the turn finishes and its events are all there. SIGTERM to PID 1 during a
# turn ends the turn recorded as driver-stopped, and the relay ends the
# harness; on the node the kubelet then restarts hangar-driver, and the next
# daemon is a new instance, idle. (A daemon killed outright, and a restarted
# daemon refusing stale state, are in test_daemon_native.sh and, through the
# kubelet's liveness probe, tests/node/test_node_daemon.sh: PID 1 cannot be
# SIGKILLed from inside its namespace, and podrun restarts no container.)
# Nothing is skipped on the node: every exec is as the container's own user.
# usage: test_daemon_pod.sh WEBHOOK DRIVER RELAY PROBE [RUNTIME [RUNTIME_BIN]]
# shellcheck disable=SC2016  # scripts for the harness and the containers' shells
WEBHOOK=$(realpath "$1")
DRIVER=$(realpath "$2")
RELAY=$(realpath "$3")
PROBE=$(realpath "$4")
RUNTIME=${5:-runsc}
RUNTIME_BIN=${6:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "the driver's daemon as the sidecar's PID 1 in a real $RUNTIME pod"
EXTRA_BINS=()
# The default driver (the chart's too): the daemon as the container's
# command, probes on; said here since turnlib.sh's own is the older one.
export HANGAR_DRIVER_COMMAND='["hangar-driver", "serve"]' HANGAR_DRIVER_PROBES=true
. "$HERE/turnlib.sh"
turn_pod_up || t_end
# kill_client PID: hangar's exec client gone, as when its connection to the
# API server drops: the podrun process and the runtime's exec client under it
# (on the node: nodepod and its kubectl exec), and the pipe's reader.
kill_client() {
        local c
        for c in $(ps -o pid= --ppid "$1"); do kill_client "$c"; done
        kill -9 "$1" 2>/dev/null
}

t_eq "the injected driver runs hangar-driver serve" '["hangar-driver","serve"]' \
        "$(jq -c '.spec.containers[] | select(.name == "hangar-driver") | .command' pod.json)"
PROBE_CMD=$(jq -r '.spec.containers[] | select(.name == "hangar-driver") | .livenessProbe.exec.command | join(" ")' pod.json)
t_eq "its liveness probe is ctl ping" "hangar-driver ctl ping" "$PROBE_CMD"
t_eq "... and so is its startup probe" "$PROBE_CMD" \
        "$(jq -r '.spec.containers[] | select(.name == "hangar-driver") | .startupProbe.exec.command | join(" ")' pod.json)"
t_eq "PID 1 in hangar-driver is the daemon" "hangar-driver serve" \
        "$(in_driver cat /proc/1/cmdline | tr '\0' ' ' | sed 's/ $//')"
# shellcheck disable=SC2086  # the probe's command, word by word
in_driver $PROBE_CMD >ping.json
t_eq "the probe's command passes (exit 0, the daemon answers, idle)" "0 true idle 1" \
        "$? $(jq -r '"\(.ok) \(.state) \(.pid)"' ping.json)"
# The restore watch (docs/turn.md, "Clones"): crun has no gVisor, Debian's
# runsc (2022) no /proc/gvisor/checkpoint; a current runsc has it
# (tests/pods/test_clones.sh proves what it does there).
if [ "$RUNTIME" = crun ] || { [ "$RUNTIME" = runsc ] && [ -z "$RUNTIME_BIN" ]; }; then
        t_eq "no restore watch under $RUNTIME${RUNTIME_BIN:+ $RUNTIME_BIN} (unavailable), no restore" \
                "unavailable 0" "$(jq -r '"\(.restore_watch) \(.restores)"' ping.json)"
else
        echo "  (restore watch under $RUNTIME: $(jq -r .restore_watch ping.json))"
fi

# ---- a turn: ctl start, the relay; exec clients killed mid-turn ----
SCRIPT='for i in $(seq 1 80); do echo "line-$i"; sleep 0.05; done; read go; echo "go=$go"
for i in $(seq 81 160); do echo "line-$i"; sleep 0.03; done; exit 7'
{ seq 1 80 | sed 's/^/line-/'; echo go=now; seq 81 160 | sed 's/^/line-/'; } >want.log
spec t1 ask "$SCRIPT" '{"close_stdin": false}' >t1.spec
T0=$(date +%s%N)
"$PODRUN" exec --dir "$POD" --stdin hangar-driver -- hangar-driver ctl start --spec - <t1.spec >t1.start 2>t1.start.err
t_eq "ctl start: exit 0, the turn, a token, the port" "0 t1 64 true" \
        "$? $(jq -r '"\(.turn) \(.token | length) \(.port > 0)"' t1.start 2>/dev/null)"
# hangar's line on the relay's stdin: the token and the daemon's instance.
TOKEN=$(jq -r '"\(.token) \(.instance)"' t1.start)
: >t1.relay.out
{ t_wait_for "grep -q '\"relay\":' t1.relay.out" 120 &&
        grep -q '"relay":"ready"' t1.relay.out && printf '%s\n' "$TOKEN"; } |
        "$PODRUN" exec --dir "$POD" --stdin sandbox -- hangar-relay > >(exec cat >>t1.relay.out) 2>t1.relay.err &
RELAY_EXEC=$!
t_cleanup_pid $RELAY_EXEC
t_check "harness.started" t_wait_for "ctl events | grep -q '\"event\":\"harness.started\"'" 60
MS=$((($(date +%s%N) - T0) / 1000000))
echo "  (ctl start to harness.started seen: ${MS} ms)"
# A pipe, as hangar reads it (podrun buffers output bound for a file).
("$PODRUN" exec --dir "$POD" hangar-driver -- hangar-driver ctl watch --turn t1 2>w1.err | cat >w1.out) &
W1=$!
t_cleanup_pid $W1
t_check "the harness runs" t_wait_for "log_has line-20" 30
t_check "the watcher sees it" t_wait_for "grep -q line-10 w1.out" 15
kill_client $W1
wait $W1 2>/dev/null
sleep 1
GOT=$(stat -c %s w1.out)
t_check "the killed watcher had part of the output ($GOT bytes)" test "$GOT" -gt 0
t_eq "the turn goes on without the watcher's exec client" "t1 running" \
        "$(ctl status --turn t1 | jq -r '"\(.turn) \(.state)"')"
t_check "a second start while it is in flight is refused" \
        sh -c "spec() { :; }; ! '$PODRUN' exec --dir '$POD' --stdin hangar-driver -- hangar-driver ctl start --spec - <t1.spec >/dev/null 2>&1"
t_wait_for "log_has line-80" 30
ctl steer now >/dev/null
("$PODRUN" exec --dir "$POD" hangar-driver -- hangar-driver ctl watch --turn t1 --from "$GOT" 2>w2.err | cat >w2.out) &
W2=$!
t_cleanup_pid $W2
t_check "the harness's exit status arrives (7)" \
        t_wait_for "[ \"\$(ctl status --turn t1 | jq -r .harness.value)\" = 7 ]" 60
ctl finish --turn t1 >/dev/null
wait $RELAY_EXEC 2>/dev/null
echo $W2 >w2.pid
t_wait_pid w2.pid 30
t_eq "the reattached watcher ends with the turn (exit 0)" 0 "$?"
cat w1.out w2.out >whole.log
t_check "the two watchers together got the whole known output, nothing lost or doubled" \
        cmp -s want.log whole.log
t_eq "the turn ended done, harness 7" "ended done 7" \
        "$(ctl status --turn t1 | jq -r '"\(.state) \(.end.end) \(.harness.value)"')"
ctl events --turn t1 >events.jsonl
for e in relay.listening relay.connected harness.started harness.steer harness.exited turn.ended; do
        t_check "events: $e" grep -q "\"event\":\"$e\"" events.jsonl
done
t_check "relay.port is gone once the turn ended" in_agent sh -c '! test -e /var/lib/hangar/relay.port'
t_check "the relay left nothing of the harness" t_wait_for harness_gone 15

# ---- the relay's exec client killed mid-turn ----
LOOP='echo started; i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done'
spec kr ask "$LOOP" >kr.spec
"$PODRUN" exec --dir "$POD" --stdin hangar-driver -- hangar-driver ctl start --spec - <kr.spec >kr.start
TOKEN=$(jq -r '"\(.token) \(.instance)"' kr.start)
: >kr.relay.out
{ t_wait_for "grep -q '\"relay\":' kr.relay.out" 120 &&
        grep -q '"relay":"ready"' kr.relay.out && printf '%s\n' "$TOKEN"; } |
        "$PODRUN" exec --dir "$POD" --stdin sandbox -- hangar-relay > >(exec cat >>kr.relay.out) 2>kr.relay.err &
KR=$!
t_cleanup_pid $KR
t_check "a turn runs" t_wait_for "log_has 'tick 5'" 60
kill_client $KR
wait $KR 2>/dev/null
sleep 2
# What the runtime does with the relay when its exec client goes is the
# runtime's (docs/turn.md says what each did); the record holds either way.
KR_STATE=$(ctl status --turn kr | jq -r '"\(.state) \(.end.end // "")"')
echo "  (relay's exec client killed: the turn is $KR_STATE)"
if [ "${KR_STATE%% *}" != ended ]; then
        t_check "the turn goes on with the relay's exec client gone" t_wait_for "log_has 'tick 12'" 30
        ctl signal KILL >/dev/null
        t_wait_for "[ \"\$(ctl status --turn kr | jq -r .state)\" = harness-exited ]" 30
        ctl finish --turn kr >/dev/null
fi
t_check "the turn ends, recorded" t_wait_for "[ \"\$(ctl status --turn kr | jq -r .state)\" = ended ]" 30
("$PODRUN" exec --dir "$POD" hangar-driver -- hangar-driver ctl watch --turn kr --from 0 | cat >kr.watch) &
echo $! >kr.watch.pid
t_wait_pid kr.watch.pid 30
in_agent cat $HOME_DIR/run/log >kr.log
t_check "a new exec's watch --from 0 has the whole log ($(wc -l <kr.log) lines)" cmp -s kr.log kr.watch
t_check "... and the events end with turn.ended" \
        sh -c "'$PODRUN' exec --dir '$POD' hangar-driver -- hangar-driver ctl events --turn kr | tail -n 1 | grep -q '\"event\":\"turn.ended\"'"
t_check "no harness left" t_wait_for harness_gone 15

# ---- the next turn, and SIGTERM to PID 1 in the middle of it ----
spec t2 ask "$LOOP" >t2.spec
"$PODRUN" exec --dir "$POD" --stdin hangar-driver -- hangar-driver ctl start --spec - <t2.spec >t2.start
t_eq "the next turn starts (same instance)" "t2 $(jq -r .instance ping.json)" "$(jq -r '"\(.turn) \(.instance)"' t2.start)"
TOKEN=$(jq -r '"\(.token) \(.instance)"' t2.start)
: >t2.relay.out
{ t_wait_for "grep -q '\"relay\":' t2.relay.out" 120 &&
        grep -q '"relay":"ready"' t2.relay.out && printf '%s\n' "$TOKEN"; } |
        "$PODRUN" exec --dir "$POD" --stdin sandbox -- hangar-relay > >(exec cat >>t2.relay.out) 2>t2.relay.err &
echo $! >t2.relay.pid
t_cleanup_pid "$(cat t2.relay.pid)"
t_check "it runs" t_wait_for "log_has 'tick 3'" 60
# (On the node, an exec into the container whose PID 1 it ends may itself be
# cut, by kubectl's account; its effect is what the next check sees.)
NODEPOD_ERRORS=$T_TMP/restart-exec-errors in_driver kill -TERM 1
t_check "SIGTERM to PID 1: the turn is recorded as ended, driver-stopped" \
        t_wait_for "[ \"\$(in_agent cat $HOME_DIR/run/exit.json 2>/dev/null | jq -r .end)\" = driver-stopped ]" 20
t_wait_pid t2.relay.pid 30
t_eq "... the relay ends the harness: 125 driver-gone" "125 driver-gone" \
        "$? $(relay_result t2 | jq -r .end 2>/dev/null)"
t_check "... no harness left" t_wait_for harness_gone 15
log_kept 'tick 3'
if [ "$RUNTIME" = node ]; then
        # The pod's restartPolicy (Always): the kubelet starts the daemon
        # again. Execs into the container while it restarts fail by
        # themselves (no container to exec in): logged apart, not counted.
        next_daemon() {
                NODEPOD_ERRORS=$T_TMP/restart-exec-errors ctl ping >ping2.json 2>/dev/null &&
                        [ "$(jq -r .instance ping2.json)" != "$(jq -r .instance ping.json)" ]
        }
        t_check "the kubelet restarts hangar-driver: a new daemon answers ctl ping" t_wait_for next_daemon 120
        t_eq "... a new instance, idle, PID 1" "32 idle 1" \
                "$(jq -r '"\(.instance | length) \(.state) \(.pid)"' ping2.json)"
fi
t_end
