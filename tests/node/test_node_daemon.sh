#!/usr/bin/env bash
# shellcheck disable=SC2016,SC1091,SC2094 # single-quoted container commands; testlib is sourced; out files read as they grow
# The driver's daemon the Kubernetes way, on the real node (scripts/node.sh),
# the chart installed in service mode with its defaults: one gVisor sandbox
# pod whose hangar-driver runs `hangar-driver serve` as PID 1.
#   - the injected startup and liveness probes (`hangar-driver ctl ping`)
#     pass: the container is started and Ready, restartCount 0;
#   - a terminal turn through kubectl exec as hangar: busybox vi on a pty in
#     the agent's container, the driver's tmux session from the example
#     image's tmux package; keys sent with `ctl send-keys` change `ctl
#     screen`, and `tmux capture-pane` agrees;
#   - the daemon's control socket made to fail (unlinked) mid-turn: the
#     liveness probe fails, the kubelet restarts the container (restartCount
#     1, an Unhealthy event), the relay of the turn in flight ends the
#     harness (125, driver-gone), and the next daemon starts clean: a new
#     instance id, the old relay.port and turn file gone; a relay with the
#     old turn's token and instance is refused, before and after the new
#     daemon starts its own turn, which runs to its end.
# One pod, one node start. usage:
#   test_node_daemon.sh K8S_BIN HANGAR_PROBE
# Needs root and the shared node (HANGAR_TEST_NODE_DIR, namespace "daemon"). T_KEEP_TMP=1 keeps the files.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/nodelib.sh"
t_begin "the driver's daemon on the node: probes, a terminal turn, a restart"

K8S_BIN=${1:-} PROBE=$(realpath -m "${2:-.}")
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$PROBE"
NS=daemon POD=box
CTL=/var/lib/hangar-ctl HOMEV=/var/lib/hangar
cd "$T_TMP" || exit 1
node_identity "$NS"
node_chart hangar "$NS"
logged() { "$@" >>helm.log 2>&1; }
t_check "helm install (the chart's defaults: the driver is hangar-driver serve, probes on)" \
	logged hangar_chart_install hangar "${NODE_CHART_ARGS[@]}"
t_check "the replicas patched the caBundle and the API server sends sandbox pods to the webhook" \
	hangar_chart_ready hangar "$NS" 60
node_chart_stop_unless_up

# in_agent / in_driver CMD...: kubectl exec as hangar's identity (the guard
# lets only it into hangar-driver); -i: stdin goes through.
in_agent() { kubectl exec -i -n "$NS" "$POD" -c sandbox --as "$HANGAR_ID" -- "$@"; }
in_driver() { kubectl exec -i -n "$NS" "$POD" -c hangar-driver --as "$HANGAR_ID" -- "$@"; }
ctl() { in_driver hangar-driver ctl "$@" </dev/null; }
driver_status() { # JSONPATH field of hangar-driver's containerStatus
	kubectl get pod -n "$NS" "$POD" -o json | jq -r --arg f "$1" \
		'.status.containerStatuses[] | select(.name == "hangar-driver") | .[$f]'
}
jq -n --arg ns "$NS" --arg n "$POD" '{apiVersion: "v1", kind: "Pod",
	metadata: {name: $n, namespace: $ns, labels: {"hangar.dev/sandbox": "true"}},
	spec: {runtimeClassName: "gvisor", terminationGracePeriodSeconds: 5,
		securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000},
		containers: [{name: "sandbox", image: "localhost/hangar-sandbox:dev", imagePullPolicy: "Never",
			command: ["sleep", "infinity"],
			securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]}}}]}}' >pod.json
t_check "the sandbox pod is created" t_wait_for "kubectl create -f pod.json >/dev/null 2>>create.err" 30
t0=$SECONDS
kubectl wait -n "$NS" --for=condition=Ready "pod/$POD" --timeout=300s >wait.log 2>&1
t_eq "the pod is Ready (both containers)" 0 "$?"
echo "  Ready in $((SECONDS - t0)) s"

echo "-- the injected probes"
kubectl get pod -n "$NS" "$POD" -o json >stored.json
drv='.spec.containers[] | select(.name == "hangar-driver")'
t_eq "hangar-driver's command is the daemon" '["hangar-driver","serve"]' "$(jq -c "$drv | .command" stored.json)"
t_eq "its startupProbe and livenessProbe exec ctl ping (periods 1 s, 10 s)" \
	'["hangar-driver","ctl","ping"] 1 ["hangar-driver","ctl","ping"] 10' \
	"$(jq -r "$drv"' | "\(.startupProbe.exec.command | tojson) \(.startupProbe.periodSeconds) \(.livenessProbe.exec.command | tojson) \(.livenessProbe.periodSeconds)"' stored.json)"
t_eq "the kubelet says: started, ready, no restart" "true true 0" \
	"$(kubectl get pod -n "$NS" "$POD" -o json | jq -r '.status.containerStatuses[] | select(.name == "hangar-driver") | "\(.started) \(.ready) \(.restartCount)"')"
t_eq "PID 1 of hangar-driver is hangar-driver serve" "hangar-driver serve" \
	"$(in_driver cat /proc/1/cmdline </dev/null | tr '\0' ' ' | sed 's/ $//')"
ctl ping >ping1.json
I1=$(jq -r .instance ping1.json)
t_eq "ctl ping: the daemon answers, idle, instance of 32 hex" "true idle 32" \
	"$(jq -r '"\(.ok) \(.state) \(.instance | length)"' ping1.json)"

echo "-- the verdict (probe checks, the spec through the API), delivered as hangar does"
in_agent hangar-probe check --role agent </dev/null >agent.json
in_driver hangar-probe check --role driver </dev/null >driver.json
"$PROBE" spec --name "$POD" --namespace "$NS" --kubeconfig "$KUBECONFIG" >spec.json 2>spec.err
t_eq "hangar-probe check and spec pass (the spec by the built-in defaults, the chart's)" "pass pass pass" \
	"$(jq -r .result agent.json) $(jq -r .result driver.json) $(jq -r .result spec.json)"
"$PROBE" verdict --mode required --spec spec.json --agent agent.json --driver driver.json --write verdict.json >/dev/null
t_eq "the verdict: split-active" split-active "$(jq -r .verdict verdict.json)"
in_driver sh -c "cat >$CTL/verdict.json && cp $CTL/verdict.json $HOMEV/verdict.json" <verdict.json
in_agent sh -c 'mkdir -p /tmp/turn && printf "first line\n" >/tmp/turn/notes.txt' </dev/null

# start NAME SPEC_JSON: ctl start through exec (the reply in NAME.start).
start() {
	in_driver hangar-driver ctl start --spec - <<<"$2" >"$1.start" 2>"$1.start.err"
}
# relay NAME LINE: hangar-relay through exec into the agent's container, in
# the background; LINE on its stdin only after its ready line (hangar's order).
relay() {
	: >"$1.relay.out"
	{ t_wait_for "grep -q '\"relay\":' '$1.relay.out'" 120 && grep -q '"relay":"ready"' "$1.relay.out" &&
		printf '%s\n' "$2"; } |
		kubectl exec -i -n "$NS" "$POD" -c sandbox --as "$HANGAR_ID" -- hangar-relay \
			> >(exec cat >>"$1.relay.out") 2>"$1.relay.err" &
	echo $! >"$1.relay.pid"
	t_cleanup_pid "$(cat "$1.relay.pid")"
}
last() { tail -n 1 "$1.relay.out"; }
screen_has() { ctl screen 2>/dev/null | grep -q -- "$1"; }
TMUX_SOCK=$CTL/tmux.sock
pane() { in_driver tmux -S "$TMUX_SOCK" capture-pane -p -t hangar </dev/null; }

echo "-- a terminal turn: busybox vi, the driver's tmux session"
spec_vi=$(jq -n '{turn: "vi", mode: "ask", cwd: "/tmp/turn", script: "exec busybox vi notes.txt",
	run_key: "RUN-KEY-vi", linger_s: 30, close_stdin: false, connect_timeout_s: 120,
	terminal: {rows: 24, cols: 80, term: "xterm-256color"}}')
start vi "$spec_vi"
t_eq "ctl start: the turn, its token, this instance" "vi 64 $I1" \
	"$(jq -r '"\(.turn) \(.token | length) \(.instance)"' vi.start)"
relay vi "$(jq -r '"\(.token) \(.instance)"' vi.start)"
t_check "vi shows the file on ctl screen" t_wait_for "screen_has 'first line'" 90
t_eq "the driver keeps a tmux session (the image's tmux)" true "$(ctl status | jq -r .terminal.tmux)"
ctl send-keys i 'typed-by-hangar ' Escape >/dev/null
t_check "keys sent through the driver change what ctl screen shows" \
	t_wait_for "screen_has 'typed-by-hangar first line'" 30
t_check "tmux capture-pane shows the same" t_wait_for "pane | grep -q 'typed-by-hangar first line'" 30
t_eq "... its first row is ctl screen's" "$(ctl screen | head -n 1 | sed 's/ *$//')" \
	"$(pane | head -n 1 | sed 's/ *$//')"
t_eq "the tmux socket is in hangar-ctl, the driver's, 0600" "600 1001" \
	"$(in_driver stat -c '%a %u' "$TMUX_SOCK" </dev/null)"

echo "-- the daemon's control socket fails mid-turn: the kubelet restarts the container"
in_driver rm "$CTL/ctl.sock" </dev/null
ping_fails() { ! ctl ping >/dev/null 2>&1; }
t_check "ctl ping fails now (what the liveness probe runs)" ping_fails
t0=$SECONDS
t_check "the liveness probe fails and the kubelet restarts hangar-driver (restartCount 1)" \
	t_wait_for '[ "$(driver_status restartCount)" = 1 ]' 120
echo "  restarted $((SECONDS - t0)) s after the socket went"
t_check "an Unhealthy event: the liveness probe failed" \
	sh -c "kubectl get events -n $NS --field-selector involvedObject.name=$POD,reason=Unhealthy -o json | jq -e '[.items[] | select(.message | test(\"Liveness probe failed\"))] | length > 0' >/dev/null"
t_wait_pid vi.relay.pid 60
t_eq "the relay of the turn in flight ended the harness: 125, driver-gone" "125 driver-gone" \
	"$? $(last vi | jq -r .relay)"
t_check "... vi is gone from the agent's container" \
	t_wait_for "! in_agent ps -eo args </dev/null | grep -q '^busybox vi'" 20
# The kubelet counts the restart before its status names the container
# that ended (lastState.terminated), and `logs --previous` finds no
# container until it does ("previous terminated container not found", CI
# session 10): wait for that record, then read the log it names. Under
# gVisor the container's stdout reaches its log file through the shim after
# the process is gone, so the log is read until its last line is there.
t_check "the kubelet recorded the old container's end (lastState.terminated)" \
	t_wait_for '[ -n "$(driver_status lastState | jq -r ".terminated.containerID // empty" 2>/dev/null)" ]' 60
old_log_done() {
	kubectl logs -n "$NS" "$POD" -c hangar-driver --previous >previous.log 2>&1 &&
		grep -q 'turn vi ended as driver-stopped' previous.log
}
t_wait_for old_log_done 30
t_check "the old daemon's log: its instance, and the turn ended as driver-stopped" \
	sh -c "grep -q 'instance $I1' previous.log && grep -q 'turn vi ended as driver-stopped' previous.log"
t_check "hangar-driver is Ready again (the startup probe passed)" t_wait_for '[ "$(driver_status ready)" = true ]' 120

echo "-- the next daemon starts clean"
ctl ping >ping2.json
I2=$(jq -r .instance ping2.json)
t_check "a new instance id ($I2, was $I1), idle" \
	sh -c "[ '$(jq -r .state ping2.json)' = idle ] && [ ${#I2} = 32 ] && [ '$I2' != '$I1' ]"
t_check "the old relay.port and turn file are gone" \
	in_agent sh -c "! test -e $HOMEV/relay.port && ! test -e $HOMEV/run/turn.json" </dev/null
relay old "$(jq -r '"\(.token) \(.instance)"' vi.start)"
t_wait_pid old.relay.pid 120
t_check "a relay with the old turn's token and instance: refused, no port ($(last old | jq -r .reason))" \
	sh -c "tail -n 1 old.relay.out | jq -e '.relay == \"failed\" and (.reason | test(\"relay.port\"))' >/dev/null"
start t2 "$(jq -n '{turn: "t2", mode: "ask", cwd: "/tmp/turn", script: "echo clean-turn; exit 3",
	run_key: "RUN-KEY-t2", linger_s: 2, connect_timeout_s: 120}')"
t_eq "the next turn starts on the new instance" "t2 $I2" "$(jq -r '"\(.turn) \(.instance)"' t2.start)"
relay stale "$(jq -r .token vi.start) $I1"
t_wait_pid stale.relay.pid 120
t_check "... a relay with the old token and instance now: refused, driver-instance" \
	sh -c "tail -n 1 stale.relay.out | jq -e '.relay == \"driver-instance\"' >/dev/null"
relay t2 "$(jq -r '"\(.token) \(.instance)"' t2.start)"
t_wait_pid t2.relay.pid 120
t_eq "the next turn runs to its end: the relay exits 3, done, the driver's record harness 3" "3 done 3" \
	"$? $(last t2 | jq -r .relay) $(ctl status --turn t2 | jq -r .harness.value)"
log_has() { local log; log=$(in_agent cat "$HOMEV/run/log" </dev/null); grep -q -- "$1" <<<"$log"; }
t_check "... its log has its output" log_has clean-turn
t_eq "restartCount stays 1" 1 "$(driver_status restartCount)"
t_check "helm uninstall" logged helm uninstall hangar -n hangar-system --wait --timeout 2m
t_end
