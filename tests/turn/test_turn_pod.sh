#!/usr/bin/env bash
# A turn under the sidecar in a real pod (tests/pods/podrun): the webhook's
# injected pod under runsc (GKE Sandbox) or crun, the probe's verdict
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
cd "$T_TMP" || exit 1
PODRUN="$HERE/../pods/podrun"
POD=$T_TMP/pod
HOME_DIR=/var/lib/hangar
CTL_DIR=/var/lib/hangar-ctl

cat >pod.yaml <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: turn-pod
  labels: {hangar.dev/sandbox: "true"}
spec:
  securityContext: {fsGroup: 1000}
  containers:
  - name: sandbox
    image: debian:12
    securityContext:
      runAsUser: 1000
      runAsGroup: 1000
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
EOF
HANGAR_K8S_DRIVER_SIDECAR=true "$WEBHOOK" inject -f pod.yaml >pod.json 2>inject.err ||
        { t_fail "hangar-webhook inject: $(cat inject.err)"; t_end; }

UP_ARGS=(--pod pod.json --dir "$POD" --runtime "$RUNTIME" -q
        --bin "$(dirname "$DRIVER")" --bin "$(dirname "$RELAY")" --bin "$(dirname "$PROBE")")
[ -n "$RUNTIME_BIN" ] && UP_ARGS+=(--runtime-bin "$RUNTIME_BIN" --runtime-flag=--platform=systrap)
if ! timeout 300 "$PODRUN" up "${UP_ARGS[@]}" >up.log 2>&1; then
        t_fail "podrun up: $(tail -n 5 up.log)"
        t_end
fi
down() { "$PODRUN" down --dir "$POD" >/dev/null 2>&1; }
trap 'down; t_cleanup' EXIT

in_driver() { "$PODRUN" exec --dir "$POD" hangar-driver -- "$@"; }
in_agent() { "$PODRUN" exec --dir "$POD" sandbox -- "$@"; }
ctl() { in_driver hangar-driver ctl "$@"; }

# ---- the verdict, as hangar delivers it (docs/probe.md) ----
in_agent hangar-probe check --role agent >agent.json
in_driver hangar-probe check --role driver >driver.json
"$PROBE" spec --pod-file pod.json >spec.json
for f in agent driver spec; do
        "$PODRUN" exec --dir "$POD" --stdin hangar-driver -- sh -c "cat >$CTL_DIR/$f.json" <$f.json
done
# deliver MODE: the probe's verdict under MODE into hangar-ctl and hangar-home.
deliver() {
        in_driver sh -c "hangar-probe verdict --mode $1 --spec $CTL_DIR/spec.json \
                --agent $CTL_DIR/agent.json --driver $CTL_DIR/driver.json \
                --write $CTL_DIR/verdict.json >/dev/null; cp $CTL_DIR/verdict.json $HOME_DIR/verdict.json"
}
deliver required
t_eq "the probe's verdict in hangar-ctl: split active" split-active \
        "$(in_driver cat $CTL_DIR/verdict.json | jq -r .verdict)"
t_eq "the relay's copy is readable by the agent" split-active \
        "$(in_agent cat $HOME_DIR/verdict.json | jq -r .verdict)"
in_agent mkdir -p /tmp/turn

# ---- one turn ----
# spec ID MODE SCRIPT [EXTRA_JSON]: a turn spec on stdout.
spec() {
        jq -n --arg id "$1" --arg mode "$2" --arg script "$3" --argjson extra "${4:-{\}}" \
                '{turn: $id, mode: $mode, cwd: "/tmp/turn", script: $script,
                  run_key: "RUN-KEY-SECRET-\($id)", linger_s: 60, connect_timeout_s: 60} + $extra'
}
# start_driver NAME SPEC_FILE [ENV...]: hangar-driver relay in the background.
start_driver() {
        local name=$1 specf=$2
        shift 2
        "$PODRUN" exec --dir "$POD" --stdin "${@/#/--env=}" hangar-driver -- \
                hangar-driver relay --spec - <"$specf" >"$name.driver.out" 2>"$name.driver.err" &
        echo $! >"$name.driver.pid"
        t_cleanup_pid "$(cat "$name.driver.pid")"
}
# start_relay NAME [ENV...]: the token from ctl, hangar-relay as the agent.
start_relay() {
        local name=$1 token
        shift
        t_wait_for "ctl token >$name.token.json 2>/dev/null" 30 ||
                { t_fail "$name: the driver never served a token: $(cat "$name.driver.err")"; return 1; }
        token=$(jq -r .token "$name.token.json")
        printf '%s\n' "$token" | "$PODRUN" exec --dir "$POD" --stdin "${@/#/--env=}" sandbox -- \
                hangar-relay >"$name.relay.out" 2>"$name.relay.err" &
        echo $! >"$name.relay.pid"
        t_cleanup_pid "$(cat "$name.relay.pid")"
}
log_has() { in_agent cat $HOME_DIR/run/log 2>/dev/null | grep -q -- "$1"; }
# log_kept TEXT: a check that the run's log (read by the agent) still has TEXT.
log_kept() {
        if log_has "$1"; then
                t_eq "... the log is kept" kept kept
        else
                t_fail "... the log is kept: no [$1] in: $(in_agent tail -n 3 $HOME_DIR/run/log 2>&1 | tr '\n' '|')"
        fi
}
# The harness's processes in the agent's container (busybox has no pgrep).
harness_pids() {
        in_agent sh -c 'for d in /proc/[0-9]*; do
                case "$(tr "\0" " " <$d/cmdline 2>/dev/null)" in "/bin/sh /var/lib/hangar/run/script ") echo ${d#/proc/} ;; esac
        done'
}
harness_gone() { [ -z "$(harness_pids)" ]; }
wait_pid() { # wait_pid PIDFILE SECONDS: the exit status, or 255 on timeout
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
spec main ask "$(cat harness.sh)" '{"input": "hello-input\n", "close_stdin": false}' >main.spec
start_driver main main.spec
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
t_wait_for "log_has ready-for-signal" 15
t_eq "status: running, both channels" "running true true" "$(ctl status | jq -r '"\(.state) \(.io) \(.ctl)"')"
ctl signal INT >/dev/null
t_check "the signal reaches the harness" t_wait_for "log_has got-int" 15
t_check "the exit status arrives (42)" \
        t_wait_for "[ \"\$(ctl status | jq -r .harness.value)\" = 42 ]" 15
in_driver hangar-driver ctl run -- sh -c 'echo run-uid=$(id -u) run-cwd=$(pwd); exit 3' >run.out
t_eq "a run request after the exit: status 3" 3 "$?"
t_eq "it ran as the agent from the turn's directory" "run-uid=1000 run-cwd=/tmp/turn" "$(cat run.out)"
in_driver hangar-driver ctl run --timeout 1 -- sleep 30 >/dev/null
t_eq "a run request past its timeout returns 124" 124 "$?"
ctl events >events.jsonl
for e in relay.listening relay.connected harness.started approval.requested approval.decided \
        harness.signal harness.exited run.requested run.finished; do
        t_check "events: $e" grep -q "\"event\":\"$e\"" events.jsonl
done
t_check "ctl from another uid is refused (SO_PEERCRED)" \
        sh -c "! '$PODRUN' exec --dir '$POD' --user 1002:1002 hangar-driver -- hangar-driver ctl status >/dev/null 2>&1"
ctl finish >/dev/null
wait_pid main.driver.pid 30
t_eq "the driver ends the turn: exit 0" 0 "$?"
t_eq "the driver's line says done, harness exited 42" "done 42" \
        "$(jq -r '"\(.end) \(.harness.value)"' main.driver.out 2>/dev/null)"
wait_pid main.relay.pid 30
t_eq "the relay exits as the harness did (42)" 42 "$?"
t_eq "the relay's line says done" done "$(jq -r .relay main.relay.out 2>/dev/null)"
t_eq "exit.json in hangar-home, readable by the agent" "done exited 42" \
        "$(in_agent cat $HOME_DIR/run/exit.json | jq -r '"\(.end) \(.harness.end) \(.harness.value)"')"
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
LOOP='echo started; i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.2; done'
# Kill the driver: the relay stops the harness and exits; the log stays.
spec kdriver ask "$LOOP" >kdriver.spec
start_driver kdriver kdriver.spec
start_relay kdriver
t_check "the harness runs and logs" t_wait_for "log_has 'tick 2'" 30
in_driver sh -c 'kill -9 $(pidof hangar-driver)'
wait_pid kdriver.relay.pid 30
t_eq "driver killed: the relay exits 125" 125 "$?"
t_eq "... saying the driver went away" driver-gone "$(jq -r .end kdriver.relay.out 2>/dev/null)"
t_check "... and the harness is gone from the agent's container" t_wait_for harness_gone 10
log_kept 'tick 2'
wait_pid kdriver.driver.pid 10

# Kill the relay: the harness dies with it; the driver records relay-lost.
spec krelay ask "$LOOP" >krelay.spec
start_driver krelay krelay.spec
start_relay krelay
t_check "the harness runs and logs" t_wait_for "log_has 'tick 2'" 30
in_agent sh -c 'kill -9 $(pidof hangar-relay)'
wait_pid krelay.driver.pid 30
t_eq "relay killed: the driver ends the turn (1)" 1 "$?"
t_eq "... as relay-lost" relay-lost "$(jq -r .end krelay.driver.out 2>/dev/null)"
t_eq "... exit.json says so" relay-lost "$(in_agent cat $HOME_DIR/run/exit.json | jq -r .end)"
t_check "... the harness is gone too" t_wait_for harness_gone 10
log_kept 'tick 2'
wait_pid krelay.relay.pid 10

# Kill the harness: the relay reports SIGKILL; the turn ends normally.
spec kharness ask "$LOOP" '{"linger_s": 2}' >kharness.spec
start_driver kharness kharness.spec
start_relay kharness
t_check "the harness runs and logs" t_wait_for "log_has 'tick 2'" 30
t_check "the harness runs in the agent's container" sh -c "[ -n \"\$1\" ]" _ "$(harness_pids)"
in_agent kill -9 $(harness_pids | head -n 1)
wait_pid kharness.driver.pid 30
t_eq "harness killed: the turn ends (0)" 0 "$?"
t_eq "... the exit status says signal 9" "signaled 9" \
        "$(jq -r '"\(.harness.end) \(.harness.value)"' kharness.driver.out 2>/dev/null)"
wait_pid kharness.relay.pid 30
t_eq "... the relay exits 128+9" 137 "$?"
log_kept 'tick 2'
t_end
