#!/usr/bin/env bash
# shellcheck disable=SC2016,SC1091 # single-quoted container commands; testlib is sourced
# Any environment image, on the real node (scripts/node.sh): the chart with
# driver.binaries.from initContainer delivers the bundle (docs/images.md)
# into a gVisor pod whose image is localhost/hangar-bare:dev (static busybox,
# no library at all):
#   - the pod is injected and Ready: hangar-bin copied the bundle and ended
#     before hangar-driver started (/opt/hangar/bin/hangar-driver serve);
#   - hangar-probe from the bundle in both containers (hangar-bin read-only
#     in each), the agent cannot write the binaries, `hangar-probe spec`
#     passes with the delivery set and the verdict is split-active;
#   - a turn (ctl start, then the bundle's relay in the agent's container),
#     a terminal turn (busybox vi in the driver's tmux, the bundle's tmux),
#     a grade (hangar grade, its grader side the bundle's: sealed, passed);
#   - the pod's start time and memory delivered against baked in: the same
#     pod on hangar's sandbox image (the .deb) with the binaries delivered,
#     then with the chart's default (agentImage); printed, not asserted.
# usage: test_node_bare.sh K8S_BIN HANGAR HANGAR_PROBE IMAGES_DIR
# Needs root, the shared node (HANGAR_TEST_NODE_DIR, namespace "bare") and
# build-images.sh's bin and bare archives in IMAGES_DIR.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/nodelib.sh"
t_begin "any environment image on the node: the binaries delivered into a busybox-only pod"

K8S_BIN=${1:-} HANGAR=$(realpath -m "${2:-.}") PROBE=$(realpath -m "${3:-.}") IMAGES=$(realpath -m "${4:-.}")
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$HANGAR" "$PROBE"
NS=bare CTL=/var/lib/hangar-ctl HOMEV=/var/lib/hangar
cd "$T_TMP" || exit 1
node_archives "$IMAGES" 'hangar-bin-*' hangar-bare-dev
if [ -n "$MISSING" ]; then
	t_fail "missing:$MISSING (scripts/build-images.sh --build-dir BUILD bin bare)"
	t_end
fi
t_check "the bundle and bare images are loaded into the node's containerd" \
	sh -c "'$ROOT/scripts/node.sh' load '$D' ${ARCHIVES[*]} >load.log 2>&1"
BUNDLE=$(basename "$(compgen -G "$IMAGES/hangar-bin-*.oci.tar" | head -n 1)" .oci.tar)
BUNDLE=localhost/hangar-bin:${BUNDLE#hangar-bin-}
node_identity "$NS"
node_chart hangar "$NS"
logged() { "$@" >>helm.log 2>&1; }
DELIVER=(--set driver.binaries.from=initContainer --set driver.binaries.bundle.repository="${BUNDLE%:*}"
	--set driver.binaries.bundle.tag="${BUNDLE##*:}")
t_check "helm install (driver.binaries.from initContainer, $BUNDLE)" \
	logged hangar_chart_install hangar "${NODE_CHART_ARGS[@]}" "${DELIVER[@]}"
t_check "the replicas patched the caBundle and the API server sends sandbox pods to the webhook" \
	hangar_chart_ready hangar "$NS" 60
node_chart_stop_unless_up

# ms: milliseconds since the epoch.
ms() { date +%s%3N; }
# ready POD: created (POD.json) to Ready, in ms into POD.ready_ms.
ready() {
	local t0
	t0=$(ms)
	kubectl wait -n "$NS" --for=condition=Ready "pod/$1" --timeout=300s >>wait.log 2>&1
	t_eq "pod $1 is Ready" 0 "$?"
	echo $(($(ms) - t0)) >"$1.ready_ms"
}
CG=hangar-node-$(node_id "$D")
mem_mib() { # POD: its memory cgroup's usage in MiB (cgroup v1, the host's view)
	local uid d
	uid=$(kubectl get pod -n "$NS" "$1" -o jsonpath='{.metadata.uid}')
	d=$(find "/sys/fs/cgroup/memory/$CG" -maxdepth 3 -type d -name "pod$uid" 2>/dev/null | head -n 1)
	if [ -z "$d" ]; then echo "?"; return; fi
	awk '{ printf "%.1f", $1 / 1048576 }' "$d/memory.usage_in_bytes"
}
pod_bare() { # NAME: the busybox-only pod
	node_sandbox_pod "$NS" "$1" '.spec.containers[0].image = "localhost/hangar-bare:dev"
		| .spec.containers[0].command = ["/bin/busybox", "sleep", "infinity"]'
}

echo "-- the pod: injected, the copy first, Ready"
pod_bare box
ready box
kubectl get pod -n "$NS" box -o json >box.json
t_eq "hangar-bin copied the bundle and ended (0), then hangar-driver started" "0 true" \
	"$(jq -r '(.status.initContainerStatuses[] | select(.name == "hangar-bin") | .state.terminated) as $c
		| (.status.containerStatuses[] | select(.name == "hangar-driver") | .state.running.startedAt) as $d
		| "\($c.exitCode) \($c.finishedAt <= $d)"' box.json)"
t_eq "hangar-driver runs the bundle's daemon" '["/opt/hangar/bin/hangar-driver","serve"]' \
	"$(jq -c '.spec.containers[] | select(.name == "hangar-driver") | .command' box.json)"

in_agent() { kubectl exec -i -n "$NS" box -c sandbox --as "$HANGAR_ID" -- "$@"; }
in_driver() { kubectl exec -i -n "$NS" box -c hangar-driver --as "$HANGAR_ID" -- "$@"; }
ctl() { in_driver hangar-driver ctl "$@" </dev/null; }
t_eq "the image has no library: no /lib, no /usr/lib in the agent's container" "none" \
	"$(in_agent sh -c 'ls /lib /usr/lib 2>/dev/null || echo none' </dev/null)"

echo "-- hangar-probe from the bundle, in both containers"
in_driver hangar-probe check --role driver </dev/null >driver.json
in_agent /opt/hangar/bin/hangar-probe check --role agent --set driver.binaries.from=initContainer \
	</dev/null >agent.json
t_eq "check passes in both (the driver's through its PATH)" "pass pass" \
	"$(jq -r .result driver.json) $(jq -r .result agent.json)"
t_eq "hangar-bin is read-only in both, a tmpfs" "read-only tmpfs read-only tmpfs" \
	"$(for f in driver agent; do jq -r '[.checks[] | select(.name == "mounts.hangar-bin") | .observed.access,
		.observed.fstype] | join(" ")' $f.json; done | xargs)"
t_check "the agent cannot write the binaries (read-only, and 0555)" \
	in_agent sh -c '! (echo x >/opt/hangar/bin/hangar-relay) 2>/dev/null && ! busybox touch /opt/hangar/x 2>/dev/null &&
		busybox test -x /opt/hangar/bin/hangar-relay' </dev/null
t_eq "the copy is the driver's uid's, mode 0555" "-r-xr-xr-x 1001" \
	"$(in_agent ls -ln /opt/hangar/bin/hangar-driver </dev/null | awk '{print $1, $3}')"
node_identity_kubeconfig "$NS" hangar.kubeconfig
H() { KUBECONFIG=$T_TMP/hangar.kubeconfig HANGAR_DRIVER_BINARIES_FROM=initContainer \
	HANGAR_DRIVER_BUNDLE_IMAGE="$BUNDLE" "$HANGAR" "$@"; }
"$PROBE" spec --name box --namespace "$NS" --kubeconfig "$KUBECONFIG" --set driver.binaries.from=initContainer \
	--set driver.binaries.bundleImage="$BUNDLE" >spec.json 2>spec.err
t_eq "hangar-probe spec (delivery set) passes on the stored pod" pass "$(jq -r .result spec.json)"
"$PROBE" verdict --mode required --spec spec.json --agent agent.json --driver driver.json --write verdict.json >/dev/null
t_eq "the verdict: split-active" split-active "$(jq -r .verdict verdict.json)"
in_driver sh -c "cat >$CTL/verdict.json && busybox cp $CTL/verdict.json $HOMEV/verdict.json" <verdict.json
t_check "... delivered to both volumes (with the image's busybox)" \
	in_agent busybox test -s "$HOMEV/verdict.json" </dev/null
H pod check "$NS/box" --mode required >podcheck.jsonl 2>podcheck.err
t_eq "hangar pod check on the busybox-only pod: split-active (0), every step passing" \
	"0 spec pass|check pass|check pass|verdict split-active" \
	"$? $(jq -r '"\(.event) \(.result // .verdict)"' podcheck.jsonl | paste -sd'|')"
t_eq "... the agent's check was the bundle's probe (its report's role)" "agent sandbox agent" \
	"$(jq -r 'select(.event == "check" and .role == "agent") | "\(.role) \(.container) \(.report.role)"' podcheck.jsonl)"

echo "-- a turn: ctl start, the bundle's relay"
# relay NAME LINE: the bundle's hangar-relay in the agent's container, LINE
# on its stdin after its ready line (hangar's order).
relay() {
	: >"$1.relay.out"
	{ t_wait_for "grep -q '\"relay\":' '$1.relay.out'" 120 && grep -q '"relay":"ready"' "$1.relay.out" &&
		printf '%s\n' "$2"; } |
		kubectl exec -i -n "$NS" box -c sandbox --as "$HANGAR_ID" -- /opt/hangar/bin/hangar-relay \
			> >(exec cat >>"$1.relay.out") 2>"$1.relay.err" &
	echo $! >"$1.relay.pid"
	t_cleanup_pid "$(cat "$1.relay.pid")"
}
last() { tail -n 1 "$1.relay.out"; }
in_agent sh -c 'mkdir -p /tmp/turn && printf "first line\n" >/tmp/turn/notes.txt' </dev/null
in_driver hangar-driver ctl start --spec - >t1.start 2>t1.start.err <<<"$(jq -n '{turn: "t1", mode: "ask",
	cwd: "/tmp/turn", script: "echo bare-turn; exit 3", run_key: "KEY-t1", linger_s: 2, connect_timeout_s: 120}')"
t_eq "ctl start: the turn and its token" "t1 64" "$(jq -r '"\(.turn) \(.token | length)"' t1.start)"
relay t1 "$(jq -r '"\(.token) \(.instance)"' t1.start)"
t_wait_pid t1.relay.pid 120
t_eq "the turn runs to its end: the relay exits 3, done; the driver's record harness 3" "3 done 3" \
	"$? $(last t1 | jq -r .relay) $(ctl status --turn t1 | jq -r .harness.value)"
t_check "... its log has its output" sh -c "kubectl exec -n $NS box -c sandbox --as $HANGAR_ID -- cat $HOMEV/run/log | grep -q bare-turn"

echo "-- a terminal turn: busybox vi in the bundle's tmux"
screen_has() { ctl screen 2>/dev/null | grep -q -- "$1"; }
in_driver hangar-driver ctl start --spec - >vi.start 2>vi.start.err <<<"$(jq -n '{turn: "vi", mode: "ask",
	cwd: "/tmp/turn", script: "exec busybox vi notes.txt", run_key: "KEY-vi", linger_s: 30, close_stdin: false,
	connect_timeout_s: 120, terminal: {rows: 24, cols: 80, term: "xterm-256color"}}')"
t_eq "ctl start: the terminal turn" vi "$(jq -r .turn vi.start)"
relay vi "$(jq -r '"\(.token) \(.instance)"' vi.start)"
t_check "vi shows the file on ctl screen" t_wait_for "screen_has 'first line'" 90
t_eq "the driver keeps a tmux session" true "$(ctl status | jq -r .terminal.tmux)"
t_eq "... the bundle's tmux (the image has none)" "/opt/hangar/bin/tmux" \
	"$(in_driver sh -c 'for p in /proc/[0-9]*; do case $(busybox tr "\0" " " <$p/cmdline 2>/dev/null) in *tmux*-S*) busybox readlink $p/exe; break ;; esac; done' </dev/null)"
ctl send-keys i 'typed-in-bare ' Escape >/dev/null
t_check "keys sent through the driver change what ctl screen shows" \
	t_wait_for "screen_has 'typed-in-bare first line'" 30
ctl send-keys ':q!' Enter >/dev/null
t_wait_pid vi.relay.pid 120
t_eq "vi quits, the turn ends" "done" "$(last vi | jq -r .relay)"

echo "-- a grade: hangar grade, the bundle's grader side"
mkdir -p gtests
cat >gtests/run.sh <<'SH'
ans=$(cat answer.txt)
want=$(cat "$HANGAR_GRADE_TESTS/expected")
if [ "$ans" = "$want" ]; then r=pass; st=0; else r=fail; st=1; fi
printf '{"result": "%s"}' "$r" >"$HANGAR_GRADE_REPORT"
exit $st
SH
echo 42 >gtests/expected
in_agent sh -c 'rm -rf /tmp/g1 && mkdir -p /tmp/g1 && echo 42 >/tmp/g1/answer.txt' </dev/null
jq -n --arg run "$(base64 -w0 <gtests/run.sh)" --arg exp "$(base64 -w0 <gtests/expected)" \
	'{grade: "g1", tests: [{path: "run.sh", data_base64: $run, exec: true},
	                       {path: "expected", data_base64: $exp, exec: false}],
	  argv: ["/bin/sh", "-c", ". \"$HANGAR_GRADE_TESTS/run.sh\""], cwd: "/tmp/g1",
	  timeout_s: 60, report_max: 4096, connect_timeout_s: 60}' >g1.gspec
H grade "$NS/box" --spec g1.gspec </dev/null >g1.jsonl 2>g1.err
t_eq "the grade passes (0), sealed, the bundle's grader side, the report" \
	"0 /opt/hangar/bin/hangar-grade true pass" \
	"$? $(jq -r 'select(.event == "grade.begun") | .grader' g1.jsonl) $(tail -n 1 g1.jsonl | jq -r '"\(.record.sealed) \(.record.report.result)"')"
BARE_MS=$(cat box.ready_ms) BARE_MIB=$(mem_mib box)

echo "-- start time and memory: delivered against baked in (hangar's sandbox image)"
node_sandbox_pod "$NS" delivered
ready delivered
sleep 20
DELIVERED_MIB=$(mem_mib delivered)
t_check "helm upgrade to the default (driver.binaries.from agentImage)" \
	logged helm upgrade hangar "$ROOT/charts/hangar-webhook" -n "$NODE_SYSTEM_NS" --reuse-values \
	--set driver.binaries.from=agentImage --wait --timeout 3m
jq '.metadata.name = "dry"' delivered.json >dry.json
t_check "pods come back injected without hangar-bin" t_wait_for \
	"kubectl create --dry-run=server -o json -f dry.json 2>/dev/null | jq -e '(.spec.containers | length == 2) and ((.spec.initContainers // []) | length == 0)' >/dev/null" 60
node_sandbox_pod "$NS" baked
ready baked
t_eq "the baked pod has no hangar-bin" "" \
	"$(kubectl get pod -n "$NS" baked -o json | jq -r '.spec.initContainers // [] | .[].name')"
sleep 20
BAKED_MIB=$(mem_mib baked)
echo "  create to Ready: bare delivered $BARE_MS ms; sandbox image delivered $(cat delivered.ready_ms) ms," \
	"baked in $(cat baked.ready_ms) ms"
echo "  pod memory 20 s after Ready (memory.usage_in_bytes): bare delivered $BARE_MIB MiB (after its turns);" \
	"sandbox image delivered $DELIVERED_MIB MiB, baked in $BAKED_MIB MiB"
t_check "helm uninstall" logged helm uninstall hangar -n "$NODE_SYSTEM_NS" --wait --timeout 2m
t_end
