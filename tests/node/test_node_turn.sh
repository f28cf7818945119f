#!/usr/bin/env bash
# shellcheck disable=SC1091,SC2016 # testlib is sourced; single-quoted container commands
# `hangar turn run` and `hangar turn attach` (client/cmd_turn.c,
# docs/client.md) on the real node, the chart installed with its guard, as
# hangar's own identity, against gVisor pods the kubelet runs:
#   - an ask turn with one approval answered by a policy: the lines in
#     order (turn.started without the token, relay.ready, every event of
#     the driver's record once, with contiguous offsets, the final
#     turn.ended), the harness read the approval, 4 execs;
#   - a turn driven from stdin: a deny, a steer, a malformed command told
#     and ignored, --hold, then a run, a tree and the verify gate through
#     the turn, finish;
#   - a terminal turn: keys, the screen and a resize through the turn;
#   - the client SIGKILLed mid-turn, an approval asked while it was gone,
#     `turn attach --from` the last line it printed: nothing lost or
#     repeated (the record's seq 1..N exactly once across both);
#   - hostile bytes: a relay (the agent's own, --relay) that writes a forged
#     event line before its ready line (no token sent, the turn aborted,
#     75), one that writes a second ready line (aborted, 75), one that
#     writes 8 MiB without a newline (75, and the client not held by it);
#     a harness that prints forged event, ready and huge lines (they stay
#     in the log: one turn.ended, the driver's);
#   - failures, each its status: a spec the driver refuses (74), a turn
#     while another is in flight (74), a pod that is not there (68), attach
#     to a turn that is not the daemon's (74), bad arguments (64);
#   - the agent's container from the pod's hangar.dev/agent-container (no
#     -c), -c checked against the pod (69, 64), the relay's path said;
#   - `hangar grade`: a grade that passes (lines in order, no token,
#     isolated, the driver's record), one that fails (78), refusals (79:
#     a pod without the sidecar, an id used before, a turn in flight whose
#     harness goes on), a grader side whose first line is forged (80: no
#     token, sealed best_effort); a grade whose client was killed mid-way
#     (its exec lost) sealed by `hangar grade finish` (80, exec-lost), once;
#   - docs/client.md's Python example of `turn run`, run as the page has it;
#   - figures, printed, never asserted: execs per ask turn with one
#     approval, and the time to harness.started against a bare exec of the
#     same harness (kubectl exec and hangar exec into a pod without the
#     sidecar).
# usage: test_node_turn.sh K8S_BIN HANGAR
# Needs root and the shared node (HANGAR_TEST_NODE_DIR, namespace "turn").
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/../lib/doclib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/nodelib.sh"
t_begin "hangar turn run and attach on the node"
# A command written to a client that has ended is an error, not the end of the suite.
trap '' PIPE

K8S_BIN=${1:-} HANGAR=$(realpath -m "${2:-.}")
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$HANGAR"
NS=turn
cd "$T_TMP" || exit 1
node_identity "$NS"
node_chart hangar "$NS"
logged() { "$@" >>helm.log 2>&1; }
t_check "helm install (the chart's defaults)" logged hangar_chart_install hangar "${NODE_CHART_ARGS[@]}"
t_check "the replicas patched the caBundle and the API server sends sandbox pods to the webhook" \
	hangar_chart_ready hangar "$NS" 60

pod() { node_sandbox_pod "$NS" "$@"; }
pod box
pod plain 'del(.metadata.labels)'
# As agent-sandbox's templates name their containers: the agent named by
# the pod's hangar.dev/agent-container.
pod named '.metadata.annotations = {"hangar.dev/agent-container": "agent"} | .spec.containers[0].name = "agent"'
# As the webhook delivers the binaries into images without them: a volume
# hangar-bin that the agent's container mounts read-only at /opt/hangar.
# Here an init container writes into it hangar-relay, hangar-grade and
# hangar-probe (pod check runs the bundle's in the agent's container) that
# say they ran (into /tmp/bundle-used) and exec the image's own.
BUNDLE_INIT=$(cat <<'SH'
set -e
mkdir -p /mnt/b/bin
for p in relay grade probe; do
	printf '#!/bin/sh\necho bundle-%s >>/tmp/bundle-used\nexec /usr/bin/hangar-%s "$@"\n' "$p" "$p" >/mnt/b/bin/hangar-$p
	chmod 755 /mnt/b/bin/hangar-$p
done
SH
)
export BUNDLE_INIT
pod bundled '.spec.volumes = [{name: "hangar-bin", emptyDir: {}}]
	| .spec.initContainers = [{name: "copy-bin", image: "localhost/hangar-sandbox:dev", imagePullPolicy: "Never",
		command: ["sh", "-c", $ENV.BUNDLE_INIT], volumeMounts: [{name: "hangar-bin", mountPath: "/mnt/b"}],
		securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]}}}]
	| .spec.containers[0].volumeMounts = [{name: "hangar-bin", mountPath: "/opt/hangar", readOnly: true}]'
for p in box plain named bundled; do
	kubectl wait -n "$NS" --for=condition=Ready "pod/$p" --timeout=300s >>wait.log 2>&1
	t_eq "pod $p is Ready" 0 "$?"
done

# hangar's identity: a token of its ServiceAccount, the cluster's CA.
node_identity_kubeconfig "$NS" hangar.kubeconfig
ADMIN_KUBECONFIG=$KUBECONFIG
export KUBECONFIG=$T_TMP/hangar.kubeconfig
H() { "$HANGAR" "$@"; }
in_c() { H exec "$NS/box" -c "$1" -- "${@:2}" </dev/null; }
ctl() { in_c hangar-driver hangar-driver ctl "$@"; }

H pod check "$NS/box" --mode required >check.jsonl 2>check.err
t_eq "the verdict, delivered to both daemons: split-active" "0 split-active" \
	"$? $(jq -r 'select(.event == "verdict") | .verdict' check.jsonl)"
in_c sandbox mkdir -p /tmp/turn

# spec ID SCRIPT [EXTRA_JSON]: a turn spec in ID.spec.
spec() {
	jq -n --arg id "$1" --arg script "$2" --argjson extra "${3:-{\}}" \
		'{turn: $id, mode: "ask", cwd: "/tmp/turn", script: $script, run_key: "KEY-\($id)",
		  linger_s: 60, connect_timeout_s: 60, close_stdin: false} + $extra' >"$1.spec"
}
# turn NAME ARGS...: hangar turn ARGS in the background, its stdin the fifo
# NAME.in (held open on descriptor TIN: say LINE writes a command), stdout
# NAME.jsonl, stderr NAME.err, pid in NAME.pid.
turn() {
	local name=$1
	shift
	mkfifo "$name.in"
	H turn "$@" <"$name.in" >"$name.jsonl" 2>"$name.err" &
	echo $! >"$name.pid"
	t_cleanup_pid "$(cat "$name.pid")"
	exec {TIN}>"$name.in"
}
say() { printf '%s\n' "$1" >&"$TIN"; }
hangup() { exec {TIN}>&-; }
has_line() { grep -q -- "$2" "$1.jsonl" 2>/dev/null; }
# contiguous FILE...: the turn.event lines of the files, in order, each
# beginning where the one before ended.
contiguous() {
	cat "$@" | jq -s -e '[.[] | select(.event == "turn.event")] as $e |
		($e | length) > 0 and ([range(1; $e | length)] | all($e[.].offset == $e[. - 1].next))' >/dev/null
}
records() { cat "$@" | jq -c 'select(.event == "turn.event") | .record'; }
# ended_lines NAME: how many turn.ended records, the last one's end, how
# many turn.ended lines of ours.
ended_lines() {
	echo "$(records "$1.jsonl" | jq -s '[.[] | select(.event == "turn.ended")] | length')" \
		"$(records "$1.jsonl" | jq -r 'select(.event == "turn.ended") | .end' | tail -n 1)" \
		"$(jq -s '[.[] | select(.event == "turn.ended")] | length' "$1.jsonl")"
}

echo "-- an ask turn, one approval answered by a policy"
spec ask 'echo "harness as $(id -u)"
echo "{\"type\": \"approval_request\", \"id\": \"deploy\", \"action\": \"kubectl apply\"}"
read -r answer
echo "got: $answer"'
turn ask run "$NS/box" --spec ask.spec --approvals approve
hangup
t_wait_pid ask.pid 120
t_eq "the turn ran: exit 0" 0 "$?"
t_eq "the lines: turn.started first, one relay.ready, turn.ended last" "turn.started 1 turn.ended" \
	"$(head -n 1 ask.jsonl | jq -r .event) $(grep -c '"event":"relay.ready"' ask.jsonl) $(tail -n 1 ask.jsonl | jq -r .event)"
t_eq "every line is protocol v1" "" "$(jq -c 'select(.v != 1)' ask.jsonl)"
t_eq "turn.started names the turn, port and instance, and carries no token" "ask true 32 false" \
	"$(jq -r 'select(.event == "turn.started") | "\(.turn) \(.port > 0) \(.instance | length) \(has("token"))"' ask.jsonl)"
t_eq "relay.ready is the relay's line: sealed, its sweep" "true true" \
	"$(jq -r 'select(.event == "relay.ready") | "\(.ready.sealed) \(.ready.sweep | type == "object")"' ask.jsonl)"
t_eq "the events, in the driver's order" \
	"relay.listening relay.connected relay.connected harness.started approval.requested approval.decided harness.exited turn.ended" \
	"$(records ask.jsonl | jq -r .event | grep -v '^harness.stdin' | xargs)"
t_check "... with contiguous offsets" contiguous ask.jsonl
t_eq "... the first at 0" 0 "$(jq -r 'select(.event == "turn.event") | .offset' ask.jsonl | head -n 1)"
ctl events --turn ask >ask.events
t_eq "... exactly the driver's record (ctl events), each once" "$(jq -c . ask.events)" "$(records ask.jsonl)"
t_eq "the policy approved: one ctl line, ok" "approve deploy true" \
	"$(jq -r 'select(.event == "ctl") | select(.op == "approve") | "\(.op) \(.id) \(.ok)"' ask.jsonl)"
t_eq "the last line: done, the harness exited 0, the relay done 0, exit 0" "done exited 0 done 0 0" \
	"$(tail -n 1 ask.jsonl | jq -r '"\(.end) \(.harness.end) \(.harness.value) \(.relay.relay) \(.relay_exit) \(.exit)"')"
in_c sandbox cat /var/lib/hangar/run/log >ask.log
t_check "the harness read the approval (the run's log)" \
	grep -q '^got: {"type":"approval_response","id":"deploy","decision":"approve"}' ask.log
ASK_EXECS=$(tail -n 1 ask.jsonl | jq -r .execs)
t_eq "execs for the turn: ctl start (and its events), the relay, the approval, finish" 4 "$ASK_EXECS"

echo "-- a turn from stdin: deny, steer, a bad command, --hold, run and tree, finish"
spec steer 'echo "{\"type\": \"approval_request\", \"id\": \"rm\", \"action\": \"rm -rf\"}"
read -r answer; echo "got: $answer"
read -r steer; echo "steered: $steer"; exit 3'
turn steer run "$NS/box" --spec steer.spec --hold
t_check "the approval request arrives as an event" \
	t_wait_for "has_line steer '\"event\":\"approval.requested\"'" 90
say '{"deny": "rm"}'
t_check "... the deny is answered (a ctl line)" t_wait_for "has_line steer '\"op\":\"deny\",\"id\":\"rm\"'" 30
say 'this is not a command'
t_check "a malformed command: an input-error line, and the turn goes on" \
	t_wait_for "has_line steer '\"event\":\"input-error\"'" 30
say '{"steer": "left at the fork"}'
t_check "the harness exits after the steer (3)" \
	t_wait_for "has_line steer '\"event\":\"harness.exited\"'" 60
say '{"run": ["sh", "-c", "echo ran-as-$(id -u) in $(pwd)"]}'
t_check "a run through the turn (held open: --hold)" t_wait_for "has_line steer '\"op\":\"run\"'" 60
t_eq "... ran as the agent in the turn's directory" "ran-as-1000 in /tmp/turn 0" \
	"$(jq -r 'select(.event == "ctl" and .op == "run") | "\(.output_base64 | @base64d | rtrimstr("\n")) \(.exit)"' steer.jsonl)"
say '{"tree": true}'
t_check "a tree through the turn" t_wait_for "has_line steer '\"op\":\"tree\"'" 60
t_eq "... its reply ok" true "$(jq -r 'select(.event == "ctl" and .op == "tree") | .ok' steer.jsonl)"
say '{"verify": ["sh", "-c", "test -d /tmp/turn"]}'
t_check "the verify gate through the turn" t_wait_for "has_line steer '\"op\":\"verify\"'" 60
t_eq "... its check passed (exit 0)" "true 0" \
	"$(jq -r 'select(.event == "ctl" and .op == "verify") | "\(.ok) \(.exit)"' steer.jsonl)"
say '{"finish": true}'
hangup
t_wait_pid steer.pid 60
t_eq "finished from stdin: exit 0 (the turn is done), the harness's 3 in the last line" "0 done 3" \
	"$? $(tail -n 1 steer.jsonl | jq -r '"\(.end) \(.harness.value)"')"
in_c sandbox cat /var/lib/hangar/run/log >steer.log
t_eq "the harness read the deny and the steer" \
	'got: {"type":"approval_response","id":"rm","decision":"deny"}|steered: left at the fork' \
	"$(tail -n 2 steer.log | paste -sd'|')"
t_check "... events contiguous" contiguous steer.jsonl

echo "-- a terminal turn: keys, screen and resize through the turn"
spec term 'printf "term-ready\n"; read -r x; echo "typed: $x"; read -r y' \
	'{"terminal": {"rows": 24, "cols": 80, "term": "xterm-256color"}}'
turn term run "$NS/box" --spec term.spec
t_check "the terminal turn's harness runs" t_wait_for "has_line term '\"event\":\"harness.started\"'" 90
say '{"keys": ["from-keys", "Enter"]}'
t_check "keys sent through the turn (a ctl line, ok)" t_wait_for "has_line term '\"op\":\"send-keys\",.*\"ok\":true'" 30
screen_shows() {
	say '{"screen": true}'
	sleep 0.5
	jq -r 'select(.event == "ctl" and .op == "screen") | .screen' term.jsonl | grep -q 'typed: from-keys'
}
t_check "the screen, read through the turn, shows what the harness printed of them" t_wait_for screen_shows 30
say '{"resize": [30, 100]}'
t_check "a resize through the turn" t_wait_for "has_line term '\"op\":\"resize\",.*\"ok\":true'" 30
say '{"keys": ["done", "Enter"]}'
hangup
t_wait_pid term.pid 60
t_eq "the terminal turn ends done (0)" "0 done" "$? $(tail -n 1 term.jsonl | jq -r .end)"

echo "-- the client killed mid-turn, then turn attach --from"
spec away 'echo started; read -r go; echo "{\"type\": \"approval_request\", \"id\": \"away\"}"
read -r answer; echo "got: $answer"'
turn away run "$NS/box" --spec away.spec
t_check "the harness runs" t_wait_for "has_line away '\"event\":\"harness.started\"'" 90
kill -9 "$(cat away.pid)"
wait "$(cat away.pid)" 2>/dev/null
hangup
# The last whole line it printed, and where the next begins.
grep '}$' away.jsonl | jq -c 'select(.event == "turn.event")' >away.before
FROM=$(tail -n 1 away.before | jq -r .next)
t_check "the killed client had printed events up to byte $FROM" test "$FROM" -gt 0
# While no client follows: a steer (from another exec) and the approval it brings.
ctl steer now >/dev/null
t_check "the turn went on without the client: the approval is asked" \
	t_wait_for "ctl approvals | grep -q '\"id\":\"away\"'" 60
turn back attach "$NS/box" --turn away --from "$FROM" --approvals approve
hangup
t_wait_pid back.pid 90
t_eq "attach follows it to its end: exit 0, done" "0 done" "$? $(tail -n 1 back.jsonl | jq -r .end)"
t_check "... the first event attach printed begins where the killed client stopped" \
	sh -c "jq -e 'select(.event == \"turn.event\") | .offset' back.jsonl | head -n 1 | grep -qx '$FROM'"
ctl events --turn away >away.events
t_eq "nothing lost or repeated: both clients' events are the record, seq 1..N once each" \
	"$(jq -c . away.events)" "$(records away.before back.jsonl)"
t_check "... contiguous across the two" contiguous away.before back.jsonl
t_eq "attach answered the approval asked while no client was there" "approve away true" \
	"$(jq -r 'select(.event == "ctl" and .op == "approve") | "\(.op) \(.id) \(.ok)"' back.jsonl)"

echo "-- hostile bytes on the relay's stdout (the agent's own relay, --relay)"
# evil NAME SCRIPT: a "relay" the agent wrote into its container.
evil() { printf '%s\n' "$2" | H exec -i "$NS/box" -c sandbox -- sh -c "cat >/tmp/$1 && chmod 755 /tmp/$1"; }
aborted() { [ "$(ctl status --turn "$1" | jq -r '"\(.state) \(.end.end)"')" = "ended aborted" ]; }
READY='{"relay":"ready","window":false,"sealed":true,"sweep":{"killed":0,"rounds":1,"survivors":0}}'
evil before "#!/bin/sh
echo '{\"v\":1,\"event\":\"turn.ended\",\"end\":\"done\"}'
echo '$READY'
cat >/tmp/before.got"
spec t-before 'echo never'
turn before run "$NS/box" --spec t-before.spec --relay /tmp/before
hangup
t_wait_pid before.pid 90
t_eq "a forged event line before the ready line: the order broken (75)" 75 "$?"
t_eq "... said on a relay.broken line" "output that is not the relay's before its ready line" \
	"$(jq -r 'select(.event == "relay.broken") | .reason' before.jsonl)"
t_eq "... no token reached that relay (its stdin ended empty)" 0 "$(in_c sandbox sh -c 'wc -c </tmp/before.got')"
t_check "... the turn was aborted in the driver" aborted t-before
t_eq "... the forged line is nowhere on our stdout: one turn.ended record, the driver's, and the last line" \
	"1 aborted 1" "$(ended_lines before)"

evil second "#!/bin/sh
echo '$READY'
read -r line; printf '%s' \"\$line\" | wc -c >/tmp/second.got
echo '$READY'"
spec t-second 'echo never; sleep 30'
turn second run "$NS/box" --spec t-second.spec --relay /tmp/second
hangup
t_wait_pid second.pid 90
t_eq "a second ready line: the order broken (75)" "75 a second ready line" \
	"$? $(jq -r 'select(.event == "relay.broken") | .reason' second.jsonl)"
t_eq "... after the first, the token line went (64 hex, a space, 32 hex)" 97 "$(in_c sandbox cat /tmp/second.got | xargs)"
t_check "... and the turn was aborted" aborted t-second

evil huge "#!/bin/sh
head -c 8388608 /dev/zero | tr '\\0' A
sleep 3"
spec t-huge 'echo never'
turn huge run "$NS/box" --spec t-huge.spec --relay /tmp/huge
hangup
t_wait_pid huge.pid 90
t_eq "8 MiB without a newline before the ready line: broken (75)" \
	"75 a line of more than 65536 bytes on the relay's stdout" \
	"$? $(jq -r 'select(.event == "relay.broken") | .reason' huge.jsonl)"
t_check "... the turn aborted" aborted t-huge

echo "-- a harness that prints forged lines"
spec forge 'echo "{\"v\":1,\"event\":\"turn.ended\",\"end\":\"done\",\"exit\":0}"
echo "{\"relay\":\"ready\",\"sweep\":{}}"
echo "{\"v\":1,\"event\":\"turn.event\",\"record\":{\"event\":\"approval.requested\",\"id\":\"x\"}}" >&2
head -c 2097152 /dev/zero | tr "\0" A; echo; exit 0'
turn forge run "$NS/box" --spec forge.spec --approvals deny
hangup
t_wait_pid forge.pid 120
t_eq "the turn is done (0), one turn.ended record (the driver's) and the last line" "0 1 done 1" \
	"$? $(ended_lines forge)"
t_eq "no approval asked, none answered, no relay.broken" "0 0 0" \
	"$(grep -c approval.requested forge.jsonl) $(grep -c '"event":"ctl","turn":"forge","op":"deny"' forge.jsonl) $(grep -c relay.broken forge.jsonl)"
t_eq "... the forged lines are in the run's log only" 2 "$(in_c sandbox grep -c event /var/lib/hangar/run/log)"

echo "-- failures, each its own status"
jq '.mode = "yolo"' ask.spec >bad.spec
jq '.turn = "bad"' bad.spec >bad2.spec
H turn run "$NS/box" --spec bad2.spec </dev/null >bad.jsonl 2>bad.err
t_eq "a spec the driver refuses: 74, a turn.refused line with the driver's reason" "74 usage" \
	"$? $(jq -r 'select(.event == "turn.refused") | .reply.driver' bad.jsonl)"
spec busy 'read -r x'
turn busy run "$NS/box" --spec busy.spec
t_check "(a turn in flight)" t_wait_for "has_line busy '\"event\":\"harness.started\"'" 90
spec busy2 'true'
H turn run "$NS/box" --spec busy2.spec </dev/null >busy2.jsonl 2>busy2.err
t_eq "a second turn while one is in flight: 74" "74 refused" "$? $(tail -n 1 busy2.jsonl | jq -r .kind)"
busy_running() { ctl status --turn busy | grep -q '"state":"running"'; }
t_check "... its relay, waiting for its own turn, swept nothing: the one in flight goes on" busy_running
H turn attach "$NS/box" --turn nope </dev/null >nope.jsonl 2>nope.err
t_eq "attach to a turn that is not the daemon's: 74, the driver's words" "74 refused" \
	"$? $(tail -n 1 nope.jsonl | jq -r .kind)"
say '{"signal": "KILL"}'
hangup
t_wait_pid busy.pid 60
t_eq "the busy turn, signalled from stdin: done, the harness killed (9)" "0 signaled 9" \
	"$? $(tail -n 1 busy.jsonl | jq -r '"\(.harness.end) \(.harness.value)"')"
H turn run "$NS/gone" --spec ask.spec </dev/null >gone.jsonl 2>gone.err
t_eq "a pod that is not there: 68" 68 "$?"
H turn run "$NS/box" --spec missing.spec </dev/null 2>/dev/null
t_eq "a spec that cannot be read: usage (64)" 64 "$?"
H turn run "$NS/box" </dev/null 2>/dev/null
t_eq "no --spec: usage (64)" 64 "$?"
H turn attach "$NS/box" --turn ok --from -3 </dev/null 2>/dev/null
t_eq "a negative --from: usage (64)" 64 "$?"
H turn attach "$NS/box" --turn 'not/an id' --kubeconfig "$T_TMP/missing" </dev/null 2>/dev/null
t_eq "a turn id that is not one: usage (64), before any credential is read" 64 "$?"

echo "-- the agent's container and the relay's path from the pod"
H pod check "$NS/named" --mode required >named-check.jsonl 2>named-check.err
t_eq "(the verdict delivered in the pod naming its agent 'agent')" 0 "$?"
H exec "$NS/named" -c agent -- mkdir -p /tmp/turn </dev/null
spec named-t 'echo "harness as $(id -u)"'
H turn run "$NS/named" --spec named-t.spec </dev/null >named-t.jsonl 2>named-t.err
t_eq "a turn with no -c in a pod whose annotation names 'agent': done (0), the relay in 'agent', from PATH" \
	"0 agent hangar-relay done" \
	"$? $(jq -r 'select(.event == "turn.started") | "\(.agent.container) \(.agent.relay)"' named-t.jsonl) $(tail -n 1 named-t.jsonl | jq -r .end)"
t_eq "... turn.started carries no token" false "$(jq -r 'select(.event == "turn.started") | has("token")' named-t.jsonl)"
jq '.turn = "named-c"' named-t.spec >named-c.spec
H turn run "$NS/named" --spec named-c.spec -c sandbox </dev/null >named-c.jsonl 2>named-c.err
t_eq "-c naming a container the pod does not have: 69, no relay started, the turn the start began aborted" \
	"69 0 aborted null" \
	"$? $(grep -c relay.ready named-c.jsonl) $(tail -n 1 named-c.jsonl | jq -r .end) $(jq -c 'select(.event == "turn.started") | .agent' named-c.jsonl)"
t_check "... the driver's record says why" sh -c "tail -n 1 named-c.jsonl | jq -r .reason | grep -q 'no container \"sandbox\"'"
H turn run "$NS/box" --spec named-t.spec -c hangar-driver </dev/null 2>/dev/null
t_eq "-c hangar-driver: usage (64)" 64 "$?"
t_eq "the box pod's turns ran in its default container, 'sandbox'" "sandbox hangar-relay" \
	"$(jq -r 'select(.event == "turn.started") | "\(.agent.container) \(.agent.relay)"' ask.jsonl)"

echo "-- the relay's and the grader side's path: hangar-bin at /opt/hangar"
H pod check "$NS/bundled" --mode required >bundled-check.jsonl 2>bundled-check.err
t_eq "(the verdict delivered in the pod mounting hangar-bin)" 0 "$?"
H exec "$NS/bundled" -c sandbox -- mkdir -p /tmp/turn </dev/null
spec bundled-t 'echo "harness as $(id -u)"'
H turn run "$NS/bundled" --spec bundled-t.spec </dev/null >bundled-t.jsonl 2>bundled-t.err
t_eq "a turn in a pod whose agent mounts hangar-bin at /opt/hangar: done (0), the bundle's relay" \
	"0 sandbox /opt/hangar/bin/hangar-relay done" \
	"$? $(jq -r 'select(.event == "turn.started") | "\(.agent.container) \(.agent.relay)"' bundled-t.jsonl) $(tail -n 1 bundled-t.jsonl | jq -r .end)"
jq '.turn = "bundled-r"' bundled-t.spec >bundled-r.spec
H turn run "$NS/bundled" --spec bundled-r.spec --relay hangar-relay </dev/null >bundled-r.jsonl 2>bundled-r.err
t_eq "... --relay overrides it" "0 hangar-relay" \
	"$? $(jq -r 'select(.event == "turn.started") | .agent.relay' bundled-r.jsonl)"

echo "-- hangar grade: a grade that passes, one that fails, refusals, a grader side out of order"
# The hidden tests: a runner that checks the workspace's answer and reports.
mkdir -p gtests
cat >gtests/run.sh <<'SH'
ans=$(cat answer.txt 2>/dev/null)
want=$(cat "$HANGAR_GRADE_TESTS/expected")
echo "answer=$ans want=$want"
if [ "$ans" = "$want" ]; then r=pass; st=0; else r=fail; st=1; fi
printf '{"result": "%s"}' "$r" >"$HANGAR_GRADE_REPORT"
exit $st
SH
echo 42 >gtests/expected
# gspec ID ANSWER: a workspace /tmp/ID in the agent's container holding
# ANSWER, and the grade's begin spec in ID.gspec.
gspec() {
	in_c sandbox sh -c "rm -rf /tmp/$1 && mkdir -p /tmp/$1 && echo $2 >/tmp/$1/answer.txt"
	jq -n --arg id "$1" --arg run "$(base64 -w0 <gtests/run.sh)" --arg exp "$(base64 -w0 <gtests/expected)" \
		'{grade: $id, tests: [{path: "run.sh", data_base64: $run, exec: true},
		                      {path: "expected", data_base64: $exp, exec: false}],
		  argv: ["/bin/sh", "-c", ". \"$HANGAR_GRADE_TESTS/run.sh\""], cwd: "/tmp/\($id)",
		  timeout_s: 60, report_max: 4096, connect_timeout_s: 60}' >"$1.gspec"
}
gline() { jq -c "select(.event == \"$2\")" "$1.jsonl"; }
gspec g-pass 42
H grade "$NS/box" --spec g-pass.gspec </dev/null >g-pass.jsonl 2>g-pass.err
t_eq "a grade that passes: exit 0" 0 "$?"
t_eq "the lines in order" "spec spec.before grade.begun grader.ready grader.ended spec grade.sealed" \
	"$(jq -r 'if .event == "spec" and .stage == "before" then "spec spec.before" else .event end' g-pass.jsonl | xargs)"
t_eq "every line is protocol v1" "" "$(jq -c 'select(.v != 1)' g-pass.jsonl)"
t_eq "grade.begun names the port, the tests' hash and the agent's container, and carries no token" \
	"true 64 sandbox hangar-grade false" \
	"$(gline g-pass grade.begun | jq -r '"\(.port > 0) \(.tests_sha256 | length) \(.container) \(.grader) \(has("token"))"')"
t_eq "grader.ready is hangar-grade's ready line, with its sweep" "ready true" \
	"$(gline g-pass grader.ready | jq -r '"\(.ready.grade) \(.ready.findings.sweep | type == "object")"')"
t_eq "grader.ended: the exec's status 0, the token sent after the ready line, the side done" "0 true done" \
	"$(gline g-pass grader.ended | jq -r '"\(.exit_status) \(.token_sent) \(.side.grade)"')"
t_eq "the last line: sealed, isolated, no reason, the report, proven, 3 execs, exit 0" \
	"true isolated [] pass true 3 0" \
	"$(tail -n 1 g-pass.jsonl | jq -c -r '"\(.record.sealed) \(.trust) \(.reasons) \(.record.report.result) \(.proven) \(.execs) \(.exit)"')"
t_eq "... the record is the driver's (ctl grade show)" "$(ctl grade show g-pass | jq -c .grade)" \
	"$(tail -n 1 g-pass.jsonl | jq -c .record)"
t_eq "... the output hangar passed in is the exec's stdout (its bytes)" \
	"$(gline g-pass grader.ended | jq .output_bytes)" "$(tail -n 1 g-pass.jsonl | jq .record.output_bytes)"
t_eq "... no other container beside the agent's" "[]" "$(tail -n 1 g-pass.jsonl | jq -c .record.other_containers)"

gspec g-fail 41
H grade "$NS/box" --spec g-fail.gspec </dev/null >g-fail.jsonl 2>g-fail.err
t_eq "a grade that fails: exit 78, sealed, the grader's 1 and its report" "78 true 1 fail" \
	"$? $(tail -n 1 g-fail.jsonl | jq -r '"\(.record.sealed) \(.exit_status) \(.record.report.result)"')"

H grade "$NS/plain" --spec g-fail.gspec </dev/null >g-plain.jsonl 2>g-plain.err
t_eq "a pod out of shape (no sidecar): refused (79) before anything ran" "79 fail out-of-shape 0" \
	"$? $(gline g-plain spec | jq -r .result) $(tail -n 1 g-plain.jsonl | jq -r .kind) $(grep -c grade.begun g-plain.jsonl)"
H grade "$NS/box" --spec g-pass.gspec </dev/null >g-again.jsonl 2>g-again.err
t_eq "a grade id used before: refused by the driver (79), its reason on a grade.refused line" "79 begin 1" \
	"$? $(gline g-again grade.refused | jq -r .op) $(grep -c '"event":"grade.refused"' g-again.jsonl)"
H grade "$NS/box" --spec g-fail.gspec -c hangar-driver </dev/null 2>/dev/null
t_eq "-c hangar-driver: usage (64)" 64 "$?"
H grade "$NS/box" --spec g-fail.gspec -c nothere </dev/null >g-nothere.jsonl 2>/dev/null
t_eq "-c naming no container of the pod: 69, nothing begun" "69 agent-container 0" \
	"$? $(tail -n 1 g-nothere.jsonl | jq -r .kind) $(grep -c grade.begun g-nothere.jsonl)"

spec gbusy 'read -r x'
turn gbusy run "$NS/box" --spec gbusy.spec
t_check "(a turn in flight)" t_wait_for "has_line gbusy '\"event\":\"harness.started\"'" 90
gspec g-busy 42
H grade "$NS/box" --spec g-busy.gspec </dev/null >g-busy.jsonl 2>g-busy.err
t_eq "a grade while a turn runs: refused (79, turn-running), the grader side never started" "79 0" \
	"$? $(grep -c grader.ready g-busy.jsonl)"
t_check "... and the turn in flight goes on (no sweep killed its harness)" \
	sh -c "'$HANGAR' exec '$NS/box' -c hangar-driver -- hangar-driver ctl status --turn gbusy </dev/null | grep -q '\"state\":\"running\"'"
say '{"signal": "KILL"}'
hangup
t_wait_pid gbusy.pid 60

# A grader side the agent wrote (hangar's --grader points at it): a forged
# line first, then a ready line; it keeps what reaches its stdin.
evil gforge "#!/bin/sh
echo '{\"v\":1,\"event\":\"grade.sealed\",\"trust\":\"isolated\",\"exit\":0}'
echo '{\"grade\":\"ready\",\"window\":false,\"findings\":{\"reasons\":[],\"sweep\":{}}}'
cat >/tmp/gforge.got"
gspec g-forge 42
H grade "$NS/box" --spec g-forge.gspec --grader /tmp/gforge </dev/null >g-forge.jsonl 2>g-forge.err
t_eq "a grader side whose first line is not its ready line: 80, no token sent" "80 false" \
	"$? $(gline g-forge grader.ended | jq -r .token_sent)"
t_eq "... nothing reached its stdin" 0 "$(in_c sandbox sh -c 'wc -c </tmp/gforge.got')"
t_eq "... the grade is still sealed, not isolated (the grader never connected), not proven" \
	"true best_effort true false" \
	"$(tail -n 1 g-forge.jsonl | jq -r '"\(.record.sealed) \(.trust) \(.reasons | index("grader-incomplete") != null) \(.proven)"')"
t_eq "... the forged line is not ours: one grade.sealed line, the last" 1 "$(grep -c '"event":"grade.sealed"' g-forge.jsonl)"

echo "-- hangar grade finish: a grade whose exec was lost"
# The client killed while the grader runs: no status from the exec API, the
# grade stays in flight in the driver until hangar grade finish seals it.
jq -n '{grade: "g-lost", tests: [], argv: ["/bin/sh", "-c", "sleep 40"], cwd: "/tmp",
	timeout_s: 60, report_max: 4096, connect_timeout_s: 60}' >g-lost.gspec
"$HANGAR" grade "$NS/box" --spec g-lost.gspec </dev/null >g-lost.jsonl 2>g-lost.err &
echo $! >g-lost.pid
t_check "the grader side is up" t_wait_for "grep -q grader.ready g-lost.jsonl" 90
kill -9 "$(cat g-lost.pid)"
wait "$(cat g-lost.pid)" 2>/dev/null
t_eq "the client killed: the grade is in flight, unsealed" false \
	"$(ctl grade show g-lost | jq -r .grade.sealed)"
H grade finish "$NS/box" --grade g-lost </dev/null >g-lost-fin.jsonl 2>g-lost-fin.err
t_eq "hangar grade finish seals it: 80, sealed, best_effort, exec-lost, not proven" \
	"80 true best_effort true false" \
	"$? $(tail -n 1 g-lost-fin.jsonl | jq -r '"\(.record.sealed) \(.trust) \(.reasons | index("exec-lost") != null) \(.proven)"')"
t_eq "... its lines: the pod's spec check after, then the sealed grade" "spec after|grade.sealed" \
	"$(jq -r '"\(.event)\(if .stage then " " + .stage else "" end)"' g-lost-fin.jsonl | paste -sd'|')"
t_eq "... no status the exec API gave: the grader side's own word or none, said so" true \
	"$(tail -n 1 g-lost-fin.jsonl | jq '.record.exit_status_from == "grader-side" or (.record.exit_status_from == "none" and .record.exit_status == null)')"
t_eq "... the driver's record is the same (ctl grade show)" "$(ctl grade show g-lost | jq -c .grade)" \
	"$(tail -n 1 g-lost-fin.jsonl | jq -c .record)"
H grade finish "$NS/box" --grade g-lost </dev/null >g-lost-again.jsonl 2>/dev/null
t_eq "finishing it again: refused by the driver (79)" "79 finish" \
	"$? $(gline g-lost-again grade.refused | jq -r .op)"
H grade finish "$NS/box" --grade g-lost --spec g-lost.gspec </dev/null 2>/dev/null
t_eq "grade finish with a spec: usage (64)" 64 "$?"
gspec g-after 42
H grade "$NS/box" --spec g-after.gspec </dev/null >g-after.jsonl 2>g-after.err
t_eq "a grade after it: sealed and passed (0)" 0 "$?"

gspec g-bundled 42
H exec "$NS/bundled" -c sandbox -- sh -c 'mkdir -p /tmp/g-bundled && echo 42 >/tmp/g-bundled/answer.txt' </dev/null
H grade "$NS/bundled" --spec g-bundled.gspec </dev/null >g-bundled.jsonl 2>g-bundled.err
t_eq "a grade in the pod mounting hangar-bin: sealed, passed (0), the bundle's grader side" \
	"0 /opt/hangar/bin/hangar-grade true" \
	"$? $(gline g-bundled grade.begun | jq -r .grader) $(tail -n 1 g-bundled.jsonl | jq -r .record.sealed)"
t_eq "... the bundle's probe, relay and grader side are the ones that ran" "bundle-grade bundle-probe bundle-relay" \
	"$(H exec "$NS/bundled" -c sandbox -- sort -u /tmp/bundle-used </dev/null | xargs)"

echo "-- docs/client.md's Python example of turn run"
doc_block "$ROOT/docs/client.md" client-turn-python >turn_example.py || t_fail "no client-turn-python block in docs/client.md"
PATH=$(dirname "$HANGAR"):$PATH HANGAR_POD="$NS/box" python3 turn_example.py >turn_example.out 2>turn_example.err
t_eq "the example runs (0)" 0 "$?"
t_eq "... and prints what the page says it prints" \
	"asked: deploy|got: {\"type\":\"approval_response\",\"id\":\"deploy\",\"decision\":\"approve\"}|ended: done, harness exited 0" \
	"$(paste -sd'|' turn_example.out)"

echo "-- docs/client.md's Python example of grade"
doc_block "$ROOT/docs/client.md" client-grade-python >grade_example.py || t_fail "no client-grade-python block in docs/client.md"
PATH=$(dirname "$HANGAR"):$PATH HANGAR_POD="$NS/box" python3 grade_example.py >grade_example.out 2>grade_example.err
t_eq "the example runs (0)" 0 "$?"
t_eq "... and prints what the page says it prints" "exit 0: pass, trust isolated" "$(cat grade_example.out)"

echo "-- figures (printed, not asserted)"
# The time to harness.started: hangar turn run (its elapsed_ms on the
# event) against one bare exec that starts the same harness (a first line
# on stdout) in the pod without the sidecar, kubectl and hangar side by side.
first_line_ms() {
	python3 - "$@" <<'PY'
import subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
p.stdout.readline()
print(int((time.monotonic() - t0) * 1000))
p.wait()
PY
}
starts=() bare_k=() bare_h=()
for i in 1 2 3; do
	spec "fig$i" 'echo started'
	H turn run "$NS/box" --spec "fig$i.spec" --timing </dev/null >"fig$i.jsonl" 2>"fig$i.err"
	st=$?
	starts+=("$(jq -r 'select(.event == "turn.event" and .record.event == "harness.started") | .elapsed_ms' "fig$i.jsonl")")
	[ -n "${starts[-1]}" ] || echo "  figures: fig$i has no harness.started (exit $st): $(tail -n 1 "fig$i.jsonl") $(head -c 300 "fig$i.err")"
	jq -c -r 'select(.event == "timing") | "  figures: turn run \(.turn)'"'"'s steps (ms): \(.ms | to_entries | map("\(.key) \(.value)") | join(", "))"' "fig$i.jsonl"
	bare_k+=("$(KUBECONFIG=$ADMIN_KUBECONFIG first_line_ms kubectl exec -n "$NS" plain -c sandbox -- sh -c 'echo started')")
	bare_h+=("$(first_line_ms "$HANGAR" exec "$NS/plain" -c sandbox -- sh -c 'echo started')")
done
echo "  figures: execs per ask turn with one approval (hangar turn run): $ASK_EXECS"
echo "  figures: hangar turn run to harness.started (ms): ${starts[*]}"
echo "  figures: bare kubectl exec to the harness's first line, no sidecar (ms): ${bare_k[*]}"
echo "  figures: bare hangar exec to the harness's first line, no sidecar (ms): ${bare_h[*]}"

export KUBECONFIG=$ADMIN_KUBECONFIG
t_check "helm uninstall" logged helm uninstall hangar -n hangar-system --wait --timeout 2m
t_end
