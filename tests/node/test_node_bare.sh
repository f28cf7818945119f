#!/usr/bin/env bash
# shellcheck disable=SC2016,SC1091 # single-quoted container commands; testlib is sourced
# Any environment image, on the real node (scripts/node.sh): the chart
# delivers the bundle (docs/images.md) into a gVisor pod whose image is
# localhost/hangar-bare:dev (static busybox, no library at all), first with
# driver.binaries.from initContainer, then with imageVolume:
#   - the pod is injected and Ready: hangar-bin copied the bundle and ended
#     before hangar-driver started (/opt/hangar/bin/hangar-driver serve);
#     with imageVolume no init container, the volume the bundle image itself;
#   - hangar-probe from the bundle in both containers (hangar-bin read-only
#     in each), the agent cannot write the binaries, `hangar-probe spec`
#     passes with the delivery set and the verdict is split-active;
#   - a turn (ctl start, then the bundle's relay in the agent's container)
#     and a grade (hangar grade, its grader side the bundle's: sealed,
#     passed) in each mode; a terminal turn (busybox vi in the driver's
#     tmux, the bundle's tmux) with initContainer;
#   - the pod's start time and memory delivered (both ways) against baked
#     in: the same pod on hangar's sandbox image (the .deb) with the
#     binaries delivered, then with the chart's default (agentImage);
#     printed, not asserted.
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

# The pod every helper below works on, and how its binaries came (the
# chart's driver.binaries.from when it was created).
POD=box FROM=initContainer
in_agent() { kubectl exec -i -n "$NS" "$POD" -c sandbox --as "$HANGAR_ID" -- "$@"; }
in_driver() { kubectl exec -i -n "$NS" "$POD" -c hangar-driver --as "$HANGAR_ID" -- "$@"; }
ctl() { in_driver hangar-driver ctl "$@" </dev/null; }
node_identity_kubeconfig "$NS" hangar.kubeconfig
H() { KUBECONFIG=$T_TMP/hangar.kubeconfig HANGAR_DRIVER_BINARIES_FROM=$FROM \
	HANGAR_DRIVER_BUNDLE_IMAGE="$BUNDLE" "$HANGAR" "$@"; }

# probe_both FSTYPE OWNER: hangar-probe from the bundle in both containers
# of POD, hangar-bin read-only there (FSTYPE), its programs OWNER's and 0555,
# not writable by the agent; the spec check, the verdict, hangar pod check.
probe_both() {
	echo "-- hangar-probe from the bundle, in both containers ($POD, $FROM)"
	t_eq "the image has no library: no /lib, no /usr/lib in the agent's container" "none" \
		"$(in_agent sh -c 'ls /lib /usr/lib 2>/dev/null || echo none' </dev/null)"
	in_driver hangar-probe check --role driver </dev/null >"$POD.driver.json"
	in_agent /opt/hangar/bin/hangar-probe check --role agent --set driver.binaries.from="$FROM" \
		</dev/null >"$POD.agent.json"
	t_eq "check passes in both (the driver's through its PATH)" "pass pass" \
		"$(jq -r .result "$POD.driver.json") $(jq -r .result "$POD.agent.json")"
	t_eq "hangar-bin is read-only in both, $1" "read-only $1 read-only $1" \
		"$(for f in driver agent; do jq -r '[.checks[] | select(.name == "mounts.hangar-bin") | .observed.access,
			.observed.fstype] | join(" ")' "$POD.$f.json"; done | xargs)"
	t_check "the agent cannot write the binaries (read-only, and 0555)" \
		in_agent sh -c '! (echo x >/opt/hangar/bin/hangar-relay) 2>/dev/null && ! busybox touch /opt/hangar/x 2>/dev/null &&
			busybox test -x /opt/hangar/bin/hangar-relay' </dev/null
	t_eq "the programs are uid $2's, mode 0555" "-r-xr-xr-x $2" \
		"$(in_agent ls -ln /opt/hangar/bin/hangar-driver </dev/null | awk '{print $1, $3}')"
	"$PROBE" spec --name "$POD" --namespace "$NS" --kubeconfig "$KUBECONFIG" --set driver.binaries.from="$FROM" \
		--set driver.binaries.bundleImage="$BUNDLE" >"$POD.spec.json" 2>"$POD.spec.err"
	t_eq "hangar-probe spec (delivery set) passes on the stored pod" pass "$(jq -r .result "$POD.spec.json")"
	"$PROBE" verdict --mode required --spec "$POD.spec.json" --agent "$POD.agent.json" --driver "$POD.driver.json" \
		--write "$POD.verdict.json" >/dev/null
	t_eq "the verdict: split-active" split-active "$(jq -r .verdict "$POD.verdict.json")"
	in_driver sh -c "cat >$CTL/verdict.json && busybox cp $CTL/verdict.json $HOMEV/verdict.json" <"$POD.verdict.json"
	t_check "... delivered to both volumes (with the image's busybox)" \
		in_agent busybox test -s "$HOMEV/verdict.json" </dev/null
	H pod check "$NS/$POD" --mode required >"$POD.podcheck.jsonl" 2>"$POD.podcheck.err"
	t_eq "hangar pod check on the busybox-only pod: split-active (0), every step passing" \
		"0 spec pass|check pass|check pass|verdict split-active" \
		"$? $(jq -r '"\(.event) \(.result // .verdict)"' "$POD.podcheck.jsonl" | paste -sd'|')"
	t_eq "... the agent's check was the bundle's probe (its report's role)" "agent sandbox agent" \
		"$(jq -r 'select(.event == "check" and .role == "agent") | "\(.role) \(.container) \(.report.role)"' \
			"$POD.podcheck.jsonl")"
}

# relay NAME LINE: the bundle's hangar-relay in POD's agent container, LINE
# on its stdin after its ready line (hangar's order); its output in
# POD.NAME.relay.out, its pid in POD.NAME.relay.pid.
relay() {
	local f=$POD.$1
	: >"$f.relay.out"
	{ t_wait_for "grep -q '\"relay\":' '$f.relay.out'" 120 && grep -q '"relay":"ready"' "$f.relay.out" &&
		printf '%s\n' "$2"; } |
		kubectl exec -i -n "$NS" "$POD" -c sandbox --as "$HANGAR_ID" -- /opt/hangar/bin/hangar-relay \
			> >(exec cat >>"$f.relay.out") 2>"$f.relay.err" &
	echo $! >"$f.relay.pid"
	t_cleanup_pid "$(cat "$f.relay.pid")"
}
last() { tail -n 1 "$POD.$1.relay.out"; }

# a_turn: ctl start and the bundle's relay in POD, the turn to its end.
a_turn() {
	echo "-- a turn: ctl start, the bundle's relay ($POD)"
	in_agent sh -c 'mkdir -p /tmp/turn && printf "first line\n" >/tmp/turn/notes.txt' </dev/null
	in_driver hangar-driver ctl start --spec - >"$POD.t1.start" 2>"$POD.t1.start.err" <<<"$(jq -n '{turn: "t1",
		mode: "ask", cwd: "/tmp/turn", script: "echo bare-turn; exit 3", run_key: "KEY-t1", linger_s: 2,
		connect_timeout_s: 120}')"
	t_eq "ctl start: the turn and its token" "t1 64" "$(jq -r '"\(.turn) \(.token | length)"' "$POD.t1.start")"
	relay t1 "$(jq -r '"\(.token) \(.instance)"' "$POD.t1.start")"
	t_wait_pid "$POD.t1.relay.pid" 120
	t_eq "the turn runs to its end: the relay exits 3, done; the driver's record harness 3" "3 done 3" \
		"$? $(last t1 | jq -r .relay) $(ctl status --turn t1 | jq -r .harness.value)"
	t_check "... its log has its output" sh -c "kubectl exec -n $NS $POD -c sandbox --as $HANGAR_ID -- cat $HOMEV/run/log |
		grep -q bare-turn"
}

# a_grade: hangar grade on POD, its grader side the bundle's, sealed, passed.
mkdir -p gtests
cat >gtests/run.sh <<'SH'
ans=$(cat answer.txt)
want=$(cat "$HANGAR_GRADE_TESTS/expected")
if [ "$ans" = "$want" ]; then r=pass; st=0; else r=fail; st=1; fi
printf '{"result": "%s"}' "$r" >"$HANGAR_GRADE_REPORT"
exit $st
SH
echo 42 >gtests/expected
jq -n --arg run "$(base64 -w0 <gtests/run.sh)" --arg exp "$(base64 -w0 <gtests/expected)" \
	'{grade: "g1", tests: [{path: "run.sh", data_base64: $run, exec: true},
	                       {path: "expected", data_base64: $exp, exec: false}],
	  argv: ["/bin/sh", "-c", ". \"$HANGAR_GRADE_TESTS/run.sh\""], cwd: "/tmp/g1",
	  timeout_s: 60, report_max: 4096, connect_timeout_s: 60}' >g1.gspec
a_grade() {
	echo "-- a grade: hangar grade, the bundle's grader side ($POD)"
	in_agent sh -c 'rm -rf /tmp/g1 && mkdir -p /tmp/g1 && echo 42 >/tmp/g1/answer.txt' </dev/null
	H grade "$NS/$POD" --spec g1.gspec </dev/null >"$POD.g1.jsonl" 2>"$POD.g1.err"
	t_eq "the grade passes (0), sealed, the bundle's grader side, the report" \
		"0 /opt/hangar/bin/hangar-grade true pass" \
		"$? $(jq -r 'select(.event == "grade.begun") | .grader' "$POD.g1.jsonl") $(tail -n 1 "$POD.g1.jsonl" |
			jq -r '"\(.record.sealed) \(.record.report.result)"')"
}

# measured NAME: hangar's sandbox image as pod NAME under the chart's
# current delivery, created to Ready, then its memory 20 s later (NAME.mib).
measured() {
	node_sandbox_pod "$NS" "$1"
	ready "$1"
	sleep 20
	mem_mib "$1" >"$1.mib"
}

# deliver FROM JQ: helm upgrade to driver.binaries.from FROM, then wait until
# a dry-run create of a sandbox pod comes back injected as JQ says (the
# replicas roll over one by one: until then some still inject the old way).
deliver() {
	t_check "helm upgrade to driver.binaries.from $1" \
		logged helm upgrade hangar "$ROOT/charts/hangar-webhook" -n "$NODE_SYSTEM_NS" --reuse-values \
		--set driver.binaries.from="$1" --wait --timeout 3m
	jq '.metadata.name = "dry"' delivered.json >dry.json
	t_check "pods come back injected for $1" t_wait_for \
		"kubectl create --dry-run=server -o json -f dry.json 2>/dev/null | jq -e --arg b '$BUNDLE' '$2' >/dev/null" 60
	FROM=$1
}

echo "-- initContainer: the pod injected, the copy first, Ready"
pod_bare box
ready box
kubectl get pod -n "$NS" box -o json >box.json
t_eq "hangar-bin copied the bundle and ended (0), then hangar-driver started" "0 true" \
	"$(jq -r '(.status.initContainerStatuses[] | select(.name == "hangar-bin") | .state.terminated) as $c
		| (.status.containerStatuses[] | select(.name == "hangar-driver") | .state.running.startedAt) as $d
		| "\($c.exitCode) \($c.finishedAt <= $d)"' box.json)"
t_eq "hangar-driver runs the bundle's daemon" '["/opt/hangar/bin/hangar-driver","serve"]' \
	"$(jq -c '.spec.containers[] | select(.name == "hangar-driver") | .command' box.json)"
# (the copy is a tmpfs inside the sandbox, the driver's uid's)
probe_both tmpfs 1001
a_turn

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
t_wait_pid box.vi.relay.pid 120
t_eq "vi quits, the turn ends" "done" "$(last vi | jq -r .relay)"
a_grade
mem_mib box >box.mib

echo "-- start time and memory, initContainer: hangar's sandbox image"
measured delivered

echo "-- imageVolume: the bundle image itself as the volume, no copy"
deliver imageVolume '((.spec.initContainers // []) | length == 0)
	and ([.spec.volumes[] | select(.name == "hangar-bin") | .image.reference] == [$b])'
POD=vol
pod_bare vol
ready vol
kubectl get pod -n "$NS" vol -o json >vol.json
t_eq "no init container; hangar-bin is the bundle image, mounted at its opt/hangar in both" \
	"0 $BUNDLE opt/hangar opt/hangar" \
	"$(jq -r '[(.spec.initContainers // [] | length), (.spec.volumes[] | select(.name == "hangar-bin") | .image.reference),
		(.spec.containers[].volumeMounts[] | select(.name == "hangar-bin") | .subPath)] | join(" ")' vol.json)"
t_eq "hangar-driver runs the bundle's daemon, Ready" '["/opt/hangar/bin/hangar-driver","serve"] true' \
	"$(jq -c '.spec.containers[] | select(.name == "hangar-driver") | .command' vol.json) $(jq -r '.status.containerStatuses[]
		| select(.name == "hangar-driver") | .ready' vol.json)"
# (the image's snapshot through gVisor's gofer: not in the pod's memory; the
# image's own files, root's)
probe_both 9p 0
a_turn
a_grade
mem_mib vol >vol.mib

echo "-- start time and memory, imageVolume: hangar's sandbox image"
measured volume

echo "-- start time and memory, baked in (the default, agentImage)"
deliver agentImage '(.spec.containers | length == 2) and ((.spec.initContainers // []) | length == 0)
	and ([.spec.volumes[] | select(.name == "hangar-bin")] == [])'
measured baked
t_eq "the baked pod has no hangar-bin" "" \
	"$(kubectl get pod -n "$NS" baked -o json | jq -r '.spec.initContainers // [] | .[].name')"
echo "  create to Ready: bare pod initContainer $(cat box.ready_ms) ms, imageVolume $(cat vol.ready_ms) ms;" \
	"sandbox image initContainer $(cat delivered.ready_ms) ms, imageVolume $(cat volume.ready_ms) ms," \
	"baked in $(cat baked.ready_ms) ms"
echo "  pod memory (memory.usage_in_bytes): bare pod after its turns and grade, initContainer $(cat box.mib) MiB," \
	"imageVolume $(cat vol.mib) MiB; sandbox image 20 s after Ready, initContainer $(cat delivered.mib) MiB," \
	"imageVolume $(cat volume.mib) MiB, baked in $(cat baked.mib) MiB"
t_check "helm uninstall" logged helm uninstall hangar -n "$NODE_SYSTEM_NS" --wait --timeout 2m
t_end
