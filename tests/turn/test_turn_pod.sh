#!/usr/bin/env bash
# A turn under the sidecar in a real pod (tests/pods/podrun): the webhook's
# injected pod under runsc (GKE Sandbox) or crun (or, runtime "node", on the
# real node through the API server and the kubelet, tests/node/nodepod), the probe's verdict
# delivered to hangar-ctl and hangar-home, hangar-driver relay started in the
# hangar-driver container through exec, hangar-relay started in the agent's
# container as the agent with the token on stdin. Then: stdin, stdout,
# stderr, an approval, a steer command, a signal and the exit status all
# arrive; run requests (as the agent, from the turn's directory, 124 past
# their timeout); the control command sees status and events; the verdict
# gate refuses and falls back; killing the driver, the relay or the harness
# mid-turn ends each as docs/turn.md says, log and exit status kept.
# usage: test_turn_pod.sh WEBHOOK DRIVER RELAY PROBE [RUNTIME [RUNTIME_BIN]]
WEBHOOK=$(realpath "$1")
DRIVER=$(realpath "$2")
RELAY=$(realpath "$3")
PROBE=$(realpath "$4")
RUNTIME=${5:-runsc}
RUNTIME_BIN=${6:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "a turn under the sidecar in a real $RUNTIME pod"
EXTRA_BINS=()
. "$HERE/turnlib.sh"
turn_pod_up || t_end

cat >harness.sh <<'EOF'
read line
echo "input=$line uid=$(id -u) cwd=$(pwd)"
echo "to-stderr" >&2
echo '{"type":"approval_request","id":"a1","action":"deploy"}'
read resp
echo "response=$resp"
read steer
echo "steer=$steer"
trap 'echo got-int; exit 42' INT
echo ready-for-signal
while :; do sleep 0.1; done
EOF
spec main ask "$(cat harness.sh)" \
        '{"input": "hello-input\n", "close_stdin": false, "settings": {"model": "m-1"}}' >main.spec
start_driver main main.spec
t_wait_for "ctl status >/dev/null 2>&1" 30
# The live view: hangar watches the harness's terminal from the start.
"$PODRUN" exec --dir "$POD" hangar-driver -- hangar-driver ctl watch >watch.out 2>watch.err &
WATCH=$!
t_cleanup_pid $WATCH
start_relay main
t_check "the harness's stdin and stdout arrive (input, uid, cwd)" \
        t_wait_for "log_has 'input=hello-input uid=1000 cwd=/tmp/turn'" 30
t_check "its stderr arrives" log_has to-stderr
t_check "the approval request reaches the driver" \
        t_wait_for "ctl approvals | jq -e '.approvals[] | select(.id == \"a1\" and .state == \"pending\")' >/dev/null" 15
t_eq "status counts one pending approval" 1 "$(ctl status | jq -r .pending_approvals)"
ctl approve a1 >/dev/null
t_eq "hangar approves through ctl" 0 "$?"
t_check "the harness gets the decision on its stdin" \
        t_wait_for "log_has 'response={\"type\":\"approval_response\",\"id\":\"a1\",\"decision\":\"approve\"}'" 15
ctl steer "steer-text" >/dev/null
t_check "a steer command reaches the harness" t_wait_for "log_has steer=steer-text" 15
t_check "the command is kept in hangar-ctl's events" \
        sh -c "'$PODRUN' exec --dir '$POD' hangar-driver -- cat $CTL_DIR/events.jsonl | grep -q '\"event\":\"harness.steer\",\"text\":\"steer-text\"'"
t_wait_for "log_has ready-for-signal" 15
t_eq "status: running, both channels" "running true true" "$(ctl status | jq -r '"\(.state) \(.io) \(.ctl)"')"
ctl signal INT >/dev/null
t_check "the signal reaches the harness" t_wait_for "log_has got-int" 15
t_check "the exit status arrives (42)" \
        t_wait_for "[ \"\$(ctl status | jq -r .harness.value)\" = 42 ]" 15
# shellcheck disable=SC2016 # expanded by the run's shell
in_driver hangar-driver ctl run -- sh -c 'echo run-uid=$(id -u) run-cwd=$(pwd); exit 3' >run.out
t_eq "a run request after the exit: status 3" 3 "$?"
t_eq "it ran as the agent from the turn's directory" "run-uid=1000 run-cwd=/tmp/turn" "$(cat run.out)"
in_driver hangar-driver ctl run --timeout 1 -- sleep 30 >/dev/null
t_eq "a run request past its timeout returns 124" 124 "$?"
in_agent sh -c 'mkdir -p /tmp/turn/src/empty && echo hello >/tmp/turn/src/a.txt && ln -sf a.txt /tmp/turn/src/link'
ctl tree >tree1.json
t_eq "ctl tree: a hash by the agent, untrusted" "agent false 64" \
        "$(jq -r '"\(.by) \(.trusted) \(.tree.tree | length)"' tree1.json 2>/dev/null)"
in_agent chmod 755 /tmp/turn/src/a.txt
t_check "a mode change changes the tree" \
        sh -c "[ \"\$(jq -r .tree.tree tree1.json)\" != \"\$1\" ]" _ "$(ctl tree | jq -r .tree.tree)"
t_check "the manifest is in the agent's scratch directory" \
        in_agent test -f "$(jq -r .tree.manifest tree1.json)"
t_check "trees are recorded in hangar-ctl" \
        sh -c "'$PODRUN' exec --dir '$POD' hangar-driver -- cat $CTL_DIR/trees.jsonl | grep -q '\"by\":\"agent\",\"trusted\":false'"
in_driver hangar-driver ctl verify -- sh -c 'exit 5' >/dev/null 2>&1
t_eq "ctl verify: the check's status (5)" 5 "$?"
in_driver hangar-driver ctl verify --timeout 3 -- sleep 30 >/dev/null 2>&1
t_eq "a check that times out counts as 124" 124 "$?"
t_eq "the gate's rounds file is the agent's" "2 1000" \
        "$(in_agent sh -c 'cat /tmp/agent-home/.hangar-scratch/main/verify-rounds; stat -c %u /tmp/agent-home/.hangar-scratch/main/verify-rounds' | tr '\n' ' ' | sed 's/ $//')"
ctl events >events.jsonl
for e in relay.listening relay.connected harness.started approval.requested approval.decided \
        harness.signal harness.exited run.requested run.finished tree verify; do
        t_check "events: $e" grep -q "\"event\":\"$e\"" events.jsonl
done
if pods_exec_as_other_uid; then
        t_check "ctl from another uid is refused (SO_PEERCRED)" \
                sh -c "! '$PODRUN' exec --dir '$POD' --user 1002:1002 hangar-driver -- hangar-driver ctl status >/dev/null 2>&1"
else
        pods_skip "ctl from another uid is refused (SO_PEERCRED)" \
                "kubectl exec runs as the container's own user: no third uid in hangar-driver"
fi
ctl finish >/dev/null
t_wait_pid main.driver.pid 30
t_eq "the driver ends the turn: exit 0" 0 "$?"
t_eq "the driver's line says done, harness exited 42" "done 42" \
        "$(jq -r '"\(.end) \(.harness.value)"' main.driver.out 2>/dev/null)"
t_wait_pid main.relay.pid 30
t_eq "the relay exits as the harness did (42)" 42 "$?"
t_eq "the relay's line says done" "done" "$(relay_result main | jq -r .relay 2>/dev/null)"
t_eq "the relay said ready before it got the token" '"ready"' "$(head -n 1 main.relay.out | jq .relay)"
t_eq "exit.json in hangar-home, readable by the agent" "done exited 42" \
        "$(in_agent cat $HOME_DIR/run/exit.json | jq -r '"\(.end) \(.harness.end) \(.harness.value)"')"
echo $WATCH >watch.pid
t_wait_pid watch.pid 15
t_check "ctl watch saw the harness's output live, to the end" \
        sh -c "grep -q 'input=hello-input' watch.out && grep -q got-int watch.out"
t_eq "hangar's harness settings in hangar-home, readable by the agent" m-1 \
        "$(in_agent cat $HOME_DIR/harness-settings.json | jq -r .model)"
t_check "the turn's scratch directory is gone" in_agent sh -c '! test -e /tmp/agent-home/.hangar-scratch/main'
t_check "the run key stayed in hangar-ctl (mode 0600)" \
        sh -c "'$PODRUN' exec --dir '$POD' hangar-driver -- stat -c %a $CTL_DIR/run.key | grep -qx 600"
t_check "the agent has no hangar-ctl" sh -c "! '$PODRUN' exec --dir '$POD' sandbox -- ls $CTL_DIR >/dev/null 2>&1"
t_check "the run key appears nowhere in hangar-home" \
        sh -c "! '$PODRUN' exec --dir '$POD' sandbox -- grep -rq RUN-KEY-SECRET $HOME_DIR"

# ---- the gate ----
spec gate ask 'echo never' >gate.spec
deliver auto
in_driver sh -c "echo '{\"mode\":\"auto\",\"verdict\":\"single-user\",\"reasons\":[{\"code\":\"agent-failed\",\"detail\":\"test\"}]}' >$CTL_DIR/verdict.json; cp $CTL_DIR/verdict.json $HOME_DIR/verdict.json"
"$PODRUN" exec --dir "$POD" --stdin --env=HANGAR_UID_SPLIT=required hangar-driver -- \
        hangar-driver relay --spec - <gate.spec >gate.required.out 2>/dev/null
t_eq "required, pod not passing: the driver refuses (4)" 4 "$?"
t_eq "... and says why" "refused agent-failed" \
        "$(jq -r '"\(.driver) \(.reason | split(":")[0])"' gate.required.out)"
"$PODRUN" exec --dir "$POD" --stdin --env=HANGAR_UID_SPLIT=auto hangar-driver -- \
        hangar-driver relay --spec - <gate.spec >gate.auto.out 2>/dev/null
t_eq "auto, pod not passing: single-user (3)" 3 "$?"
t_eq "... with the verdict's reason" "single-user agent-failed" \
        "$(jq -r '"\(.driver) \(.reason | split(":")[0])"' gate.auto.out)"
"$PODRUN" exec --dir "$POD" --stdin --env=HANGAR_UID_SPLIT=off hangar-driver -- \
        hangar-driver relay --spec - <gate.spec >gate.off.out 2>/dev/null
t_eq "off: single-user (3), mode-off" "3 mode-off" "$? $(jq -r '.reason | split(":")[0]' gate.off.out)"
echo 0000 | "$PODRUN" exec --dir "$POD" --stdin --env=HANGAR_UID_SPLIT=required sandbox -- \
        hangar-relay >gate.relay.out 2>/dev/null
t_eq "the relay honours it too: refused (4) before reading a token" "4 refused" \
        "$? $(jq -r .relay gate.relay.out)"
deliver required
spec autoturn auto 'echo never' >auto.spec
"$PODRUN" exec --dir "$POD" --stdin hangar-driver -- hangar-driver relay --spec - <auto.spec \
        >auto.out 2>/dev/null
t_eq "an auto turn is not the sidecar's: single-user (3)" "3 auto-turn" \
        "$? $(jq -r '.reason | split(":")[0]' auto.out)"

# ---- failures mid-turn ----
# shellcheck disable=SC2016 # the harness's script
LOOP='echo started; i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done'
# Kill the driver: the relay stops the harness and exits; the log stays.
spec kdriver ask "$LOOP" >kdriver.spec
start_driver kdriver kdriver.spec
start_relay kdriver
t_check "the harness runs and logs" t_wait_for "log_has 'tick 2'" 30
# shellcheck disable=SC2016 # expanded by the container's shell
in_driver sh -c 'kill -9 $(pidof hangar-driver)'
t_wait_pid kdriver.relay.pid 30
t_eq "driver killed: the relay exits 125" 125 "$?"
t_eq "... saying the driver went away" driver-gone "$(relay_result kdriver | jq -r .end 2>/dev/null)"
t_check "... and the harness is gone from the agent's container" t_wait_for harness_gone 10
log_kept 'tick 2'
t_wait_pid kdriver.driver.pid 10

# Kill the relay: the harness dies with it; the driver records relay-lost.
spec krelay ask "$LOOP" >krelay.spec
start_driver krelay krelay.spec
start_relay krelay
t_check "the harness runs and logs" t_wait_for "log_has 'tick 2'" 30
# shellcheck disable=SC2016 # expanded by the container's shell
in_agent sh -c 'kill -9 $(pidof hangar-relay)'
t_wait_pid krelay.driver.pid 30
t_eq "relay killed: the driver ends the turn (1)" 1 "$?"
t_eq "... as relay-lost" relay-lost "$(jq -r .end krelay.driver.out 2>/dev/null)"
t_eq "... exit.json says so" relay-lost "$(in_agent cat $HOME_DIR/run/exit.json | jq -r .end)"
t_check "... the harness is gone too" t_wait_for harness_gone 10
log_kept 'tick 2'
t_wait_pid krelay.relay.pid 10

# Kill the harness: the relay reports SIGKILL; the turn ends normally.
spec kharness ask "$LOOP" '{"linger_s": 2}' >kharness.spec
start_driver kharness kharness.spec
start_relay kharness
t_check "the harness runs and logs" t_wait_for "log_has 'tick 2'" 30
t_check "the harness runs in the agent's container" sh -c "[ -n \"\$1\" ]" _ "$(harness_pids)"
in_agent kill -9 "$(harness_pids | head -n 1)"
t_wait_pid kharness.driver.pid 30
t_eq "harness killed: the turn ends (0)" 0 "$?"
t_eq "... the exit status says signal 9" "signaled 9" \
        "$(jq -r '"\(.harness.end) \(.harness.value)"' kharness.driver.out 2>/dev/null)"
t_wait_pid kharness.relay.pid 30
t_eq "... the relay exits 128+9" 137 "$?"
log_kept 'tick 2'
t_end
