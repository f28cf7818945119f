#!/usr/bin/env bash
# shellcheck disable=SC2016,SC1091 # single-quoted jq and container commands; testlib, nodelib, doclib are sourced
# hangar beside kubernetes-sigs/agent-sandbox v1.0.1 on the real node
# (docs/agent-sandbox.md), the chart installed with the page's values (the
# integration mode: pods selected by agents.x-k8s.io/sandbox-name-hash's
# presence, driver.uidSplit required), the suite's namespace opted in;
# every command the page gives is taken from it (tests/lib/doclib.sh) and
# run here:
#   - scripts/agent-sandbox.sh install: the CRDs, the controller on the host
#     as upstream's ServiceAccount, status says it runs;
#   - the page's SandboxTemplate (gVisor, the agent container `agent` named
#     by hangar.dev/agent-container, no hangar label) and SandboxWarmPool of
#     2: both warm pods injected when the pool fills, Running under gVisor,
#     hangar-driver Ready, the default container the agent's, the driver's
#     HANGAR_UID_SPLIT required;
#   - two SandboxClaims adopt the two warm pods (the same pods: uid kept);
#     the controller's adoption UPDATE passed hangar's guard (the pod's
#     labels now say claim-uid, not warm-pool-sandbox) and hangar's shape is
#     the same after it (containers, volumes, the driver's annotations);
#   - the pool refills with two new injected pods;
#   - each claimed pod: the driver answers (ctl ping as hangar's identity),
#     gVisor's kernel in the agent's container; the probe's verdict
#     (checks in both containers, the spec through the API) delivered and a
#     turn run through it as hangar runs one (ctl start, the relay in the
#     agent's container); exec without -c reaches the agent's container
#     (the default-container annotation: no "Defaulted container" note);
#   - a Sandbox whose pod fails the probe (its agent runs as the driver's
#     uid, its own environment says HANGAR_UID_SPLIT=off): injected and run
#     by the kubelet, and `ctl start` refuses the turn (required, 4);
#   - a Sandbox whose image has none of hangar's binaries (pause): injected
#     (the webhook cannot see the image's files), hangar-driver's failed
#     start named on its container status, the pod and Sandbox not Ready,
#     and `hangar-webhook audit` (the release's configuration) lists the pod
#     driver-failed with the runtime's words and what to do, exit 4; then
#     `audit --events` as the page's least-privileged ServiceAccount: without
#     the events rule it stops (exit 3) naming it, with it a Warning
#     HangarDriverFailed Event on the Sandbox (kubectl describe shows it),
#     counted again by a second run, untouched without --events; the chart's
#     audit.enabled CronJob, run once: Failed (a finding), not retried, its
#     log the report, the same Event counted a third time;
#   - suspend and resume a claimed Sandbox (the page's commands): the pod
#     deleted, a new one of the same name injected again, the old driver's
#     state gone (its files, the old turn unknown to the new daemon);
#   - templates out of hangar's shape (a container named hangar-driver; a
#     volume named hangar-home; an annotation naming a missing container, an
#     init container, hangar-driver; a default container of hangar-driver;
#     no annotation and no container `sandbox`): the pod is refused, the
#     webhook's reason on
#     the Sandbox's Ready condition; how often the controller retried in a
#     minute is printed (a figure, not asserted);
#   - an environment image without hangar's binaries (localhost/hangar-bare:dev,
#     busybox only) with the page's values for it (driver.binaries.from
#     initContainer, driver.nativeSidecar): a warm pool of 1 whose pod has
#     the copier and the driver as init containers (the driver a native
#     sidecar, restartPolicy Always) and is Ready; a claim adopts it, the
#     shape unchanged; the probe's verdict and a turn through the bundle;
#   - scripts/agent-sandbox.sh uninstall: no agent-sandbox object, pod,
#     CRD or controller process left.
# usage: test_agent_sandbox.sh K8S_BIN AGENT_SANDBOX_BIN HANGAR_PROBE HANGAR_WEBHOOK IMAGES_DIR
# (IMAGES_DIR: build-images.sh's, with its bin and bare archives.)
# Needs root and the shared node (HANGAR_TEST_NODE_DIR, namespace
# "agentsbx"); holds RESOURCE_LOCK node_chart. T_KEEP_TMP=1 keeps the files.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/nodelib.sh"
. "$HERE/../lib/doclib.sh"
t_begin "agent-sandbox v1.0.1 and hangar on the node: warm pool, claims, suspend, a refused template"

K8S_BIN=${1:-} AS_BIN=${2:-} PROBE=$(realpath -m "${3:-.}") WEBHOOK=$(realpath -m "${4:-.}")
IMAGES=$(realpath -m "${5:-.}")
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$AS_BIN/agent-sandbox-controller" "$PROBE" "$WEBHOOK"
node_archives "$IMAGES" 'hangar-bin-*' hangar-bare-dev
if [ -n "$MISSING" ]; then
	t_fail "missing:$MISSING (scripts/build-images.sh --build-dir BUILD bin bare)"
	t_end
fi
export HANGAR_AGENT_SANDBOX_BIN=$AS_BIN HANGAR_NODE_DIR=$D
NS=agentsbx PAGE=$ROOT/docs/agent-sandbox.md IMAGE=localhost/hangar-sandbox:dev
cd "$T_TMP" || exit 1
node_identity "$NS"
# (node_namespace opts it in; said here too, as docs/agent-sandbox.md asks)
kubectl label namespace "$NS" hangar.dev/injection=enabled --overwrite >/dev/null
node_chart hangar "$NS"
logged() { "$@" >>commands.log 2>&1; }

# page NAME: the page's block NAME in the suite's namespace and image (its
# text otherwise as the page has it), into NAME.page.
page() {
	doc_block "$PAGE" "$1" >"$1.page" || { t_fail "docs/agent-sandbox.md: no block $1"; return 1; }
	sed -i -e "s#namespace: sandboxes#namespace: $NS#; s#-n sandboxes #-n $NS #g" \
		-e "s#REGISTRY/agent-env:TAG#$IMAGE#" "$1.page"
}
page agent-sandbox-values
t_check "helm install (the page's values: selector Exists, uidSplit required)" \
	logged hangar_chart_install hangar "${NODE_CHART_ARGS[@]}" -f agent-sandbox-values.page
# (hangar_chart_ready's probe pod carries hangar.dev/sandbox, which this
# release does not select: a pod with agent-sandbox's label instead.)
asb_injected_dry() {
	kubectl create --dry-run=server -o json -f - 2>/dev/null <<POD | jq -e '.spec.containers | map(.name) | index("hangar-driver")' >/dev/null
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "asb-ready", "namespace": "$NS", "labels": {"agents.x-k8s.io/sandbox-name-hash": "0"},
   "annotations": {"hangar.dev/agent-container": "agent"}},
 "spec": {"containers": [{"name": "agent", "image": "$IMAGE", "command": ["sleep", "infinity"]}]}}
POD
}
t_check "the API server sends pods with agent-sandbox's label in $NS to the webhook" t_wait_for asb_injected_dry 90
# hangar-probe spec judges a pod by the settings that injected it.
PROBE_SET=(--set driver.uidSplit=required)
# run_page NAME: the page's shell block NAME, in the tree (bash -eu, pipefail).
run_page() { page "$1" && (cd "$ROOT" && bash -euo pipefail "$T_TMP/$1.page") >"$1.out" 2>&1; }
# ls_pods: the agent-sandbox pods in NS (name uid), sorted.
ls_pods() {
	kubectl get pods -n "$NS" -l agents.x-k8s.io/sandbox-name-hash -o json |
		jq -r '.items[] | select(.metadata.deletionTimestamp == null) | "\(.metadata.name) \(.metadata.uid)"' | sort
}
# shape POD: hangar's part of the pod, one line (containers, hangar's volumes,
# the driver's annotations, runtime class): what an UPDATE must not change.
shape() {
	kubectl get pod -n "$NS" "$1" -o json | jq -c '{c: [.spec.containers[] | {name, image, command, securityContext}],
		v: [.spec.volumes[] | select(.name | startswith("hangar-"))], rc: .spec.runtimeClassName,
		a: (.metadata.annotations | with_entries(select(.key | startswith("hangar.dev/")))),
		l: .metadata.labels["agents.x-k8s.io/sandbox-name-hash"]}'
}
injected() { # POD: the driver's annotation and the containers, as the page's check prints them
	kubectl get pod -n "$NS" "$1" -o jsonpath='{.metadata.annotations.hangar\.dev/driver-sidecar}{" "}{.spec.containers[*].name}'
}
ready_all() { # POD: Running, every container ready
	kubectl get pod -n "$NS" "$1" -o json 2>/dev/null |
		jq -e '.status.phase == "Running" and ([.status.containerStatuses[]?.ready] | length == 2 and all)' >/dev/null
}
in_driver() { kubectl exec -i -n "$NS" "$1" -c hangar-driver --as "$HANGAR_ID" -- "${@:2}"; }
in_agent() { kubectl exec -i -n "$NS" "$1" -c agent --as "$HANGAR_ID" -- "${@:2}"; }
# hooklog NAME: the webhook replicas' logs (every review, JSON a line) into NAME.hook.
hooklog() {
	kubectl logs -n "$NODE_SYSTEM_NS" -l app.kubernetes.io/instance=hangar --tail=-1 --prefix=false \
		--max-log-requests 10 2>/dev/null | grep -F '"review"' >"$1.hook"
}
# turn POD SCRIPT [RELAY]: turn t1 in POD as hangar runs one: ctl start
# through exec into hangar-driver (the reply: token, instance), then RELAY
# (hangar-relay on the agent's PATH by default) through exec into the
# agent's container, TOKEN INSTANCE on its stdin after its ready line; waits
# for the relay (POD.turn.rc its exit status, POD.relay.out its lines).
turn() {
	local p=$1 spec start relay=${3:-hangar-relay}
	spec=$(jq -n --arg s "$2" '{turn: "t1", mode: "ask", cwd: "/tmp", script: $s, run_key: "RUN-KEY-t1",
		linger_s: 2, connect_timeout_s: 120}')
	start=$(in_driver "$p" hangar-driver ctl start --spec - <<<"$spec" 2>"$p.start.err")
	: >"$p.relay.out"
	{ t_wait_for "grep -q '\"relay\":' '$p.relay.out'" 120 && grep -q '"relay":"ready"' "$p.relay.out" &&
		jq -r '"\(.token) \(.instance)"' <<<"$start"; } |
		kubectl exec -i -n "$NS" "$p" -c agent --as "$HANGAR_ID" -- "$relay" \
			> >(exec cat >>"$p.relay.out") 2>"$p.relay.err" &
	echo $! >"$p.relay.pid"
	t_cleanup_pid "$(cat "$p.relay.pid")"
	t_wait_pid "$p.relay.pid" 180
	echo $? >"$p.turn.rc"
}
pool_ready() { [ "$(kubectl get sandboxwarmpool -n "$NS" "$1" -o jsonpath='{.status.readyReplicas}' 2>/dev/null)" = "$2" ]; }

echo "-- scripts/agent-sandbox.sh install (the page's commands)"
node_on_exit "cd '$ROOT' && scripts/agent-sandbox.sh uninstall '$D'"
run_page agent-sandbox-install
t_eq "the page's install commands exit 0" 0 "$?"
sed 's/^/    /' agent-sandbox-install.out
t_check "  status: the controller runs" grep -q "^agent-sandbox runs for $D (pid [0-9]*)" agent-sandbox-install.out
t_check "  it is v1.0.1's controller" grep -q 'ready in [0-9]*s: pid [0-9]*, v1.0.1' agent-sandbox-install.out
t_check "  running as upstream's ServiceAccount (a real install's identity)" \
	grep -q 'starting the controller as system:serviceaccount:agent-sandbox-system:agent-sandbox-controller ' agent-sandbox-install.out
t_check "  the four CRDs are served" logged kubectl get sandboxes.agents.x-k8s.io,sandboxtemplates.extensions.agents.x-k8s.io,sandboxwarmpools.extensions.agents.x-k8s.io,sandboxclaims.extensions.agents.x-k8s.io -n "$NS"
t_check "  a second install is refused while it runs" sh -c "! '$ROOT/scripts/agent-sandbox.sh' install '$D' 2>second.err && grep -q 'already runs' second.err"

echo "-- the page's SandboxTemplate and SandboxWarmPool of 2"
page agent-sandbox-template
t_check "the template and the pool are created" logged kubectl create -f agent-sandbox-template.page
t0=$SECONDS
t_check "the pool has 2 ready sandboxes" t_wait_for "pool_ready agent-pool 2" 400
echo "  filled in $((SECONDS - t0)) s"
ls_pods >warm.list
t_eq "two warm pods" 2 "$(wc -l <warm.list)"
mapfile -t WARM < <(cut -d' ' -f1 warm.list)
for p in "${WARM[@]}"; do
	t_eq "warm pod $p: injected when the pool filled" "injected agent hangar-driver" "$(injected "$p")"
	t_eq "  selected by agent-sandbox's own label (no hangar label); the agent named by the template" \
		"true false agent" "$(kubectl get pod -n "$NS" "$p" -o json | jq -r '.metadata | "\(.labels | has("agents.x-k8s.io/sandbox-name-hash")) \(.labels | has("hangar.dev/sandbox")) \(.annotations["hangar.dev/agent-container"])"')"
	t_eq "  the default container is the agent's; the driver's HANGAR_UID_SPLIT is required" "agent required" \
		"$(kubectl get pod -n "$NS" "$p" -o json | jq -r '"\(.metadata.annotations["kubectl.kubernetes.io/default-container"]) \(.spec.containers[] | select(.name == "hangar-driver") | .env[]? | select(.name == "HANGAR_UID_SPLIT") | .value)"')"
	t_check "  Running, both containers ready" ready_all "$p"
	t_eq "  gVisor, the warm-pool label" "gvisor true" \
		"$(kubectl get pod -n "$NS" "$p" -o json | jq -r '"\(.spec.runtimeClassName) \(.metadata.labels | has("agents.x-k8s.io/warm-pool-sandbox"))"')"
	t_eq "  agent-sandbox's template defaults: no token automount, public DNS only" "false None 8.8.8.8,1.1.1.1" \
		"$(kubectl get pod -n "$NS" "$p" -o json | jq -r '.spec | "\(.automountServiceAccountToken) \(.dnsPolicy) \(.dnsConfig.nameservers | join(","))"')"
	shape "$p" >"$p.shape.before"
done

echo "-- two SandboxClaims adopt the warm pods"
page agent-sandbox-claim
sed 's/name: task-1/name: task-2/' agent-sandbox-claim.page >claim2.yaml
t_check "claim task-1 (the page's) and task-2 are created" logged kubectl create -f agent-sandbox-claim.page -f claim2.yaml
for c in task-1 task-2; do
	t_check "claim $c is Ready" logged kubectl wait -n "$NS" --for=condition=Ready "sandboxclaim/$c" --timeout=300s
done
CLAIMED=()
for c in task-1 task-2; do
	p=$(kubectl get sandboxclaim -n "$NS" "$c" -o jsonpath='{.status.sandbox.name}')
	CLAIMED+=("$p")
	t_check "claim $c took a warm pod ($p), not a cold one" grep -q "^$p " warm.list
	t_eq "  the same pod (uid kept): adopted, not made anew" "$(grep "^$p " warm.list)" "$p $(kubectl get pod -n "$NS" "$p" -o jsonpath='{.metadata.uid}')"
	# The adoption UPDATE (a metadata merge patch of the pod) went through
	# the guard: the labels it changes are changed.
	t_eq "  the adoption UPDATE passed the guard (claim-uid set, warm-pool-sandbox gone)" "true false" \
		"$(kubectl get pod -n "$NS" "$p" -o json | jq -r '.metadata.labels | "\(has("agents.x-k8s.io/claim-uid")) \(has("agents.x-k8s.io/warm-pool-sandbox"))"')"
	t_eq "  hangar's shape unchanged by it" "$(cat "$p.shape.before" 2>/dev/null)" "$(shape "$p")"
	t_check "  still Running, both containers ready" ready_all "$p"
done
t_eq "the two claims took the two warm pods" "$(cut -d' ' -f1 warm.list | tr '\n' ' ')" \
	"$(printf '%s\n' "${CLAIMED[@]}" | sort | tr '\n' ' ')"
if grep -q '"level":"error".*denied the request' "$D/agent-sandbox.log"; then
	t_fail "the controller's log has a denied request during adoption"
	grep '"level":"error".*denied the request' "$D/agent-sandbox.log" | tail -n 3
fi
hooklog adopt
for p in "${CLAIMED[@]}"; do
	grep -F "\"pod\":\"$p\"" adopt.hook | grep -F '"operation":"UPDATE"' >"$p.updates"
	echo "  the guard's reviews of $p's UPDATEs: $(wc -l <"$p.updates") ($(jq -r '"\(.decision)/\(.reason)"' "$p.updates" 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ',' | sed 's/,$//'))"
	t_check "  the guard reviewed an UPDATE of $p (the adoption) and allowed it" \
		sh -c "jq -e 'select(.decision != \"denied\" and .decision != \"rejected\")' '$p.updates' | grep -q ."
	t_eq "  ... and denied none" "" "$(jq -c 'select(.decision == "denied" or .decision == "rejected")' "$p.updates" 2>/dev/null)"
done
run_page agent-sandbox-check
t_eq "the page's check prints the claimed pod injected" "0 injected agent hangar-driver" "$? $(cat agent-sandbox-check.out)"

echo "-- the pool refills"
t_check "the pool is back to 2 ready sandboxes" t_wait_for "pool_ready agent-pool 2" 400
kubectl get pods -n "$NS" -l agents.x-k8s.io/warm-pool-sandbox -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' >refill.list
t_eq "two new warm pods" 2 "$(wc -l <refill.list)"
while read -r p; do
	t_check "new warm pod $p is none of the claimed" sh -c "! printf '%s\n' ${CLAIMED[*]} | grep -qx '$p'"
	t_eq "  injected" "injected agent hangar-driver" "$(injected "$p")"
	t_check "  Running, both containers ready" ready_all "$p"
done <refill.list

echo "-- each claimed pod: the driver, gVisor, the verdict, a turn, exec without -c"
for p in "${CLAIMED[@]}"; do
	t_eq "$p: hangar-driver answers (ctl ping as hangar's identity)" true \
		"$(in_driver "$p" hangar-driver ctl ping </dev/null | jq -r .ok)"
	t_check "  the agent's container runs on gVisor's kernel" sh -c "kubectl exec -n $NS $p -c agent --as $HANGAR_ID -- dmesg 2>/dev/null | grep -q gVisor"
	in_agent "$p" hangar-probe check --role agent </dev/null >"$p.agent.json" 2>"$p.agent.err"
	in_driver "$p" hangar-probe check --role driver </dev/null >"$p.driver.json" 2>"$p.driver.err"
	"$PROBE" spec "${PROBE_SET[@]}" --name "$p" --namespace "$NS" --kubeconfig "$KUBECONFIG" >"$p.spec.json" 2>"$p.spec.err"
	t_eq "  hangar-probe check (agent, driver) and spec on the adopted pod" "pass pass pass" \
		"$(jq -r .result "$p.agent.json") $(jq -r .result "$p.driver.json") $(jq -r .result "$p.spec.json")"
	for f in agent driver spec; do
		jq -r '.checks[]? | select(.status != "pass") | "    \(.status) \(.id): \(.detail // "" | .[0:160])"' "$p.$f.json" 2>/dev/null
	done
	"$PROBE" verdict --mode required --spec "$p.spec.json" --agent "$p.agent.json" --driver "$p.driver.json" \
		--write "$p.verdict.json" >/dev/null 2>&1
	t_eq "  the verdict: split-active" split-active "$(jq -r .verdict "$p.verdict.json" 2>/dev/null)"
	in_driver "$p" sh -c 'cat >/var/lib/hangar-ctl/verdict.json && cp /var/lib/hangar-ctl/verdict.json /var/lib/hangar/verdict.json' \
		<"$p.verdict.json"
	turn "$p" "echo turn-in-$p; id -u; exit 0"
	t_eq "  a turn through it as hangar runs one: the relay exits 0, done; the driver's record harness 0" \
		"0 done 0" "$(cat "$p.turn.rc") $(tail -n 1 "$p.relay.out" | jq -r .relay 2>/dev/null) $(in_driver "$p" hangar-driver ctl status --turn t1 </dev/null | jq -r .harness.value)"
	in_agent "$p" cat /var/lib/hangar/run/log </dev/null >"$p.run.log" 2>&1
	t_check "  its output is in the turn's log" grep -q "turn-in-$p" "$p.run.log"
	kubectl exec -n "$NS" "$p" -- sh -c 'cat /proc/1/cmdline | tr "\0" " "; id -u' >"$p.noc.out" 2>"$p.noc.err"
	t_eq "  exec without -c reaches the agent's container (sleep infinity, uid 1000)" "sleep infinity 1000" \
		"$(tr '\n' ' ' <"$p.noc.out" | sed 's/  */ /g; s/ $//')"
	t_check "  ... without kubectl's 'Defaulted container' note (the default-container annotation)" \
		sh -c "! grep -q 'Defaulted container' '$p.noc.err'"
done

echo "-- suspend and resume the first claim's sandbox (the page's commands)"
P=${CLAIMED[0]}
old_uid=$(kubectl get pod -n "$NS" "$P" -o jsonpath='{.metadata.uid}')
in_driver "$P" sh -c 'echo before-suspend >/var/lib/hangar/marker && echo before-suspend >/var/lib/hangar-ctl/marker' </dev/null
t_eq "a mark in hangar-home and hangar-ctl before suspending" "before-suspend" \
	"$(in_driver "$P" cat /var/lib/hangar/marker </dev/null)"
run_page agent-sandbox-suspend
rc=$?
t_eq "the page's suspend and resume commands exit 0" 0 "$rc"
[ "$rc" = 0 ] || cat agent-sandbox-suspend.out
# (the page waited for Suspended=True, then for Ready)
t_eq "the Sandbox's Suspended condition after the resume" "False NotSuspended" \
	"$(kubectl get sandbox -n "$NS" "$P" -o json | jq -r '.status.conditions[] | select(.type == "Suspended") | "\(.status) \(.reason)"')"
t_check "a new pod of the same name, Running, both ready" t_wait_for "ready_all $P" 300
new_uid=$(kubectl get pod -n "$NS" "$P" -o jsonpath='{.metadata.uid}')
t_check "  not the old one (uid $old_uid)" test "$new_uid" != "$old_uid" -a -n "$new_uid"
t_eq "  injected again at its CREATE" "injected agent hangar-driver" "$(injected "$P")"
t_eq "  hangar's shape as before" "$(cat "$P.shape.before" 2>/dev/null)" "$(shape "$P")"
t_eq "  the old driver's state is gone (hangar-home and hangar-ctl new)" "gone gone" \
	"$(in_driver "$P" sh -c 'for f in /var/lib/hangar/marker /var/lib/hangar-ctl/marker; do [ -e $f ] && echo kept || echo gone; done' </dev/null | tr '\n' ' ' | sed 's/ $//')"
t_eq "  the new driver answers" true "$(in_driver "$P" hangar-driver ctl ping </dev/null | jq -r .ok)"
in_driver "$P" hangar-driver ctl status --turn t1 </dev/null >t1-after.out 2>&1
t_eq "  and knows nothing of the old turn t1 (ctl status --turn t1 fails)" "1 no" \
	"$? $(grep -q '"harness"' t1-after.out && echo yes || echo no)"
t_eq "  nor the agent's side: the old turn's run/log is gone" gone \
	"$(in_agent "$P" sh -c 'test -e /var/lib/hangar/run/log && echo kept || echo gone' </dev/null)"
t_check "  the claim is Ready again" logged kubectl wait -n "$NS" --for=condition=Ready sandboxclaim/task-1 --timeout=120s

echo "-- a pod that fails the probe, under driver.uidSplit required"
# Its agent runs as the driver's uid and group (no split is possible), and
# its own environment asks for HANGAR_UID_SPLIT=off: the driver's gate is
# the chart's, and the pod cannot loosen it.
jq -n --arg ns "$NS" --arg img "$IMAGE" '{apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox",
	metadata: {name: "split-fail", namespace: $ns},
	spec: {podTemplate: {metadata: {annotations: {"hangar.dev/agent-container": "agent"}},
		spec: {runtimeClassName: "gvisor", terminationGracePeriodSeconds: 5,
			containers: [{name: "agent", image: $img, command: ["sleep", "infinity"],
				securityContext: {runAsUser: 1001, runAsGroup: 1001},
				env: [{name: "HANGAR_UID_SPLIT", value: "off"}]}]}}}}' >split-fail.json
t_check "the Sandbox is created" logged kubectl create -f split-fail.json
t_check "its pod is injected and the kubelet runs it (both containers ready)" t_wait_for "ready_all split-fail" 300
# (the daemon is not dumpable: its /proc/1/environ is closed even to its
# own uid; an exec into the container gets the same environment)
t_eq "  the agent's environment says off, the driver container's required" "off required" \
	"$(in_agent split-fail printenv HANGAR_UID_SPLIT </dev/null) $(in_driver split-fail printenv HANGAR_UID_SPLIT </dev/null)"
in_agent split-fail hangar-probe check --role agent </dev/null >split-fail.agent.json 2>split-fail.agent.err
in_driver split-fail hangar-probe check --role driver </dev/null >split-fail.driver.json 2>split-fail.driver.err
"$PROBE" spec "${PROBE_SET[@]}" --name split-fail --namespace "$NS" --kubeconfig "$KUBECONFIG" >split-fail.spec.json 2>split-fail.spec.err
t_eq "  hangar-probe spec fails it" fail "$(jq -r .result split-fail.spec.json 2>/dev/null)"
jq -r '.checks[]? | select(.status != "pass") | "    \(.status) \(.code // .id): \(.detail // "" | .[0:160])"' split-fail.spec.json 2>/dev/null | head -n 3
"$PROBE" verdict --mode required --spec split-fail.spec.json --agent split-fail.agent.json --driver split-fail.driver.json \
	--write split-fail.verdict.json >/dev/null 2>&1
t_eq "  the verdict under required: refused" refused "$(jq -r .verdict split-fail.verdict.json 2>/dev/null)"
in_driver split-fail sh -c 'cat >/var/lib/hangar-ctl/verdict.json && cp /var/lib/hangar-ctl/verdict.json /var/lib/hangar/verdict.json' \
	<split-fail.verdict.json
jq -n '{turn: "t1", mode: "ask", cwd: "/tmp", script: "id -u", run_key: "RUN-KEY-t1", linger_s: 2}' >split-fail.spec-turn.json
in_driver split-fail hangar-driver ctl start --spec - <split-fail.spec-turn.json >split-fail.start.out 2>split-fail.start.err
rc=$?
echo "  ctl start: exit $rc, $(head -c 300 split-fail.start.out)"
t_eq "  ctl start refuses the turn (exit 4, driver refused)" "4 refused false" \
	"$rc $(jq -r '"\(.driver) \(.ok)"' split-fail.start.out 2>/dev/null)"
t_check "  no turn was started (ctl status --turn t1 knows none)" sh -c \
	"! kubectl exec -i -n $NS split-fail -c hangar-driver --as $HANGAR_ID -- hangar-driver ctl status --turn t1 </dev/null 2>/dev/null | grep -q '\"harness\"'"
logged kubectl delete sandbox -n "$NS" split-fail --wait=false

echo "-- an environment image without hangar's binaries: what the pod and the Sandbox show"
# registry.k8s.io/pause (the node has it: the kubelet's sandbox image) has
# /pause and nothing else: the agent runs, hangar-driver's command is not
# there. The webhook cannot see an image's files at admission; the kubelet
# reports the failed start on the driver's container status.
NOBIN_IMAGE=registry.k8s.io/pause:3.10.2
jq -n --arg ns "$NS" --arg img "$NOBIN_IMAGE" '{apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox",
	metadata: {name: "no-binaries", namespace: $ns},
	spec: {podTemplate: {metadata: {annotations: {"hangar.dev/agent-container": "agent"}},
		spec: {runtimeClassName: "gvisor", terminationGracePeriodSeconds: 5,
			containers: [{name: "agent", image: $img}]}}}}' >no-binaries.json
t_check "the Sandbox is created" logged kubectl create -f no-binaries.json
# driver_failure: the driver container's failed start, "REASON MESSAGE", once the kubelet has one.
# In CrashLoopBackOff the waiting message is only the back-off's; the
# runtime's words are then on the last state (as audit reads them).
driver_failure() {
	kubectl get pod -n "$NS" no-binaries -o json 2>/dev/null | jq -r '.status.containerStatuses[]? |
		select(.name == "hangar-driver") |
		(if .state.waiting.reason == "CrashLoopBackOff" and (.lastState.terminated.message // "") != ""
		 then {reason: .state.waiting.reason, message: .lastState.terminated.message}
		 else (.state.waiting // .lastState.terminated // .state.terminated) end) |
		select(. != null and (.message // "") != "") | "\(.reason) \(.message)"'
}
t_check "its pod is injected (the webhook cannot know the image lacks the binaries)" \
	t_wait_for "[ \"\$(injected no-binaries 2>/dev/null)\" = 'injected agent hangar-driver' ]" 120
t_check "the kubelet reports hangar-driver's failed start on its container status" \
	t_wait_for "driver_failure | grep -q ." 180
driver_failure | head -n 1 >no-binaries.failure
echo "  hangar-driver: $(cut -c1-300 no-binaries.failure)"
t_check "  the message names the missing command (hangar-driver, not found)" \
	sh -c "grep -qi 'hangar-driver' no-binaries.failure && grep -Eqi 'not found|no such file' no-binaries.failure"
t_eq "  the pod is not Ready, the agent's container runs" "False true" \
	"$(kubectl get pod -n "$NS" no-binaries -o json | jq -r '"\(.status.conditions[]? | select(.type == "Ready") | .status) \(.status.containerStatuses[]? | select(.name == "agent") | .state.running != null)"')"
kubectl get sandbox -n "$NS" no-binaries -o json | jq -r '.status.conditions[]? | select(.type == "Ready") |
	"  the Sandbox: Ready \(.status) \(.reason) \(.message[0:200])"'
t_eq "  the Sandbox is not Ready" False \
	"$(kubectl get sandbox -n "$NS" no-binaries -o json | jq -r '.status.conditions[]? | select(.type == "Ready") | .status')"
# The audit with the release's configuration, as docs/chart.md runs it.
kubectl get configmap -n "$NODE_SYSTEM_NS" -l app.kubernetes.io/instance=hangar \
	-o jsonpath='{.items[0].data.config\.yaml}' >release-config.yaml
"$WEBHOOK" audit --config release-config.yaml -n "$NS" -o json >audit.json 2>audit.err
t_eq "hangar-webhook audit: exits 4 (a driver that cannot start)" 4 "$?"
jq -r '.pods[] | select(.name == "no-binaries") | "\(.state) \(.code) \(.reason)"' audit.json >audit.line
echo "  audit: $(cut -c1-400 audit.line)"
# (RunContainerError while the kubelet retries; CrashLoopBackOff in its
# back-off, the runtime's words then on the last state)
t_check "  it lists the pod driver-failed, the kubelet's reason as the code" \
	grep -Eq '^driver-failed (RunContainerError|CreateContainerError|StartError|CrashLoopBackOff) ' audit.line
t_check "  with the runtime's words (hangar-driver not found) and what to do" \
	sh -c "grep -qi 'hangar-driver' audit.line && grep -Eqi 'not found|no such file' audit.line && grep -q \"lacks hangar's binaries\" audit.line"
t_eq "  the running sandbox pods are not listed as failed" 1 "$(jq '[.pods[] | select(.state == "driver-failed")] | length' audit.json)"
echo "-- the reason on the Sandbox: hangar-webhook audit --events, as the page's least-privileged identity"
page agent-sandbox-audit-rbac
sed -i "s#\[sandboxes\]#[$NS]#" agent-sandbox-audit-rbac.page
t_check "the page's ServiceAccount, Role and RoleBinding for the audit are created" \
	logged kubectl create -f agent-sandbox-audit-rbac.page
# audit_as OUT [ARGS...]: the audit with the release's configuration as
# hangar-audit (a token of it), JSON into OUT; its exit status into OUT.rc.
audit_kubeconfig() {
	local admin
	admin=$(kubectl config view --raw --minify -o json)
	jq -n --argjson a "$admin" --arg t "$(kubectl create token hangar-audit -n "$NS" --duration=10m)" --arg ns "$NS" \
		'{apiVersion: "v1", kind: "Config", clusters: [$a.clusters[0] | .name = "node"],
		  users: [{name: "audit", user: {token: $t}}],
		  contexts: [{name: "audit", context: {cluster: "node", user: "audit", namespace: $ns}}],
		  "current-context": "audit"}' >audit.kubeconfig
	chmod 600 audit.kubeconfig
}
audit_as() {
	local out=$1
	shift
	"$WEBHOOK" audit --config release-config.yaml --kubeconfig audit.kubeconfig -n "$NS" -o json "$@" \
		>"$out" 2>"$out.err"
	echo $? >"$out.rc"
}
audit_kubeconfig
# Without the events rule first: --events fails closed, saying what is missing.
kubectl get role -n "$NS" hangar-audit -o json |
	jq '.rules |= map(select(.resources != ["events"]))' | kubectl replace -f - >>commands.log 2>&1
audit_as noevents.json --events
t_eq "without events in its Role: audit --events exits 3" 3 "$(cat noevents.json.rc)"
t_check "  saying the identity needs create, get and patch on events" \
	grep -q "needs create, get and patch on events" noevents.json.err
echo "  $(cut -c1-300 noevents.json.err)"
t_check "the page's Role again" logged kubectl replace -f agent-sandbox-audit-rbac.page
audit_as events1.json --events
t_eq "audit --events: exits 4 (the pod is still driver-failed), an Event created on its Sandbox" \
	"4 created Sandbox no-binaries" \
	"$(cat events1.json.rc) $(jq -r '.pods[] | select(.name == "no-binaries") | .event | "\(.action) \(.kind) \(.name)"' events1.json)"
t_eq "  only driver-failed pods are told" 1 "$(jq '[.pods[] | select(.event)] | length' events1.json)"
kubectl describe sandbox -n "$NS" no-binaries >describe1.txt
sed -n '/^Events:/,$p' describe1.txt | cut -c1-240 | sed 's/^/    /'
t_check "kubectl describe sandbox: a Warning HangarDriverFailed from hangar-webhook" \
	grep -Eq '^ +Warning +HangarDriverFailed +.* hangar-webhook +pod no-binaries: hangar-driver cannot start' describe1.txt
t_check "  with the runtime's words and what to do" \
	sh -c "sed -n '/^Events:/,\$p' describe1.txt | tr -s ' \n' ' ' | grep -Eqi 'not found|no such file' &&
		sed -n '/^Events:/,\$p' describe1.txt | tr -s ' \n' ' ' | grep -q \"lacks hangar's binaries\""
audit_as events2.json --events
t_eq "a second audit --events: the same Event, counted again" "4 updated" \
	"$(cat events2.json.rc) $(jq -r '.pods[] | select(.name == "no-binaries") | .event.action' events2.json)"
t_eq "  one HangarDriverFailed Event on the Sandbox, count 2" "1 2" \
	"$(kubectl get events -n "$NS" --field-selector involvedObject.kind=Sandbox,involvedObject.name=no-binaries,reason=HangarDriverFailed -o json |
		jq -r '"\(.items | length) \(.items[0].count)"')"
audit_as plain.json
t_eq "  without --events no Event is touched (still count 2)" "4 2" \
	"$(cat plain.json.rc) $(kubectl get events -n "$NS" --field-selector involvedObject.name=no-binaries,reason=HangarDriverFailed -o jsonpath='{.items[0].count}')"
echo "-- the chart's scheduled audit (audit.enabled): its CronJob's run, in the cluster"
# (a schedule that does not come during the suite: the run is made by hand)
t_check "helm upgrade with audit.enabled" logged helm upgrade hangar "$ROOT/charts/hangar-webhook" -n "$NODE_SYSTEM_NS" \
	--reuse-values --set audit.enabled=true --set audit.schedule="0 0 1 1 *" --wait --timeout 3m
CJ=$(kubectl get cronjob -n "$NODE_SYSTEM_NS" -l app.kubernetes.io/instance=hangar,app.kubernetes.io/component=audit \
	-o jsonpath='{.items[0].metadata.name}')
t_check "a run of its CronJob ($CJ) is created" logged kubectl create job -n "$NODE_SYSTEM_NS" audit-now --from="cronjob/$CJ"
node_on_exit "kubectl delete job -n $NODE_SYSTEM_NS audit-now --wait=true --timeout=60s"
job_ended() {
	kubectl get job -n "$NODE_SYSTEM_NS" audit-now -o json 2>/dev/null |
		jq -r '.status.conditions[]? | select((.type == "Failed" or .type == "Complete") and .status == "True") | .type' | grep .
}
t_check "  it ends" t_wait_for "job_ended >/dev/null" 180
# (it finds the pod driver-failed: the run ends Failed, the report in its log)
t_eq "  Failed, not retried (a finding), its log the JSON report" "Failed 1" \
	"$(job_ended | head -n 1) $(kubectl get job -n "$NODE_SYSTEM_NS" audit-now -o jsonpath='{.status.failed}')"
kubectl logs -n "$NODE_SYSTEM_NS" job/audit-now >cronaudit.json 2>cronaudit.err
t_eq "  as the chart's ServiceAccount it counted the Sandbox's Event again" "updated Sandbox no-binaries" \
	"$(jq -r '.pods[] | select(.namespace == "'"$NS"'" and .name == "no-binaries") | .event | "\(.action) \(.kind) \(.name)"' cronaudit.json 2>/dev/null)"
t_eq "  one HangarDriverFailed Event on the Sandbox, count 3" "1 3" \
	"$(kubectl get events -n "$NS" --field-selector involvedObject.kind=Sandbox,involvedObject.name=no-binaries,reason=HangarDriverFailed -o json |
		jq -r '"\(.items | length) \(.items[0].count)"')"
logged kubectl delete job -n "$NODE_SYSTEM_NS" audit-now --wait=true --timeout=60s
logged kubectl delete -f agent-sandbox-audit-rbac.page --wait=false
logged kubectl delete sandbox -n "$NS" no-binaries --wait=false

echo "-- templates out of hangar's shape: refused, the reason on the Sandbox"
# A container named hangar-driver (through a warm pool), a volume named
# hangar-home (through a claim's cold start: a pool of 0), and a bare Sandbox
# whose agent container is named `agent`, as upstream's examples name theirs
# (hangar's agentContainer is one name for the cluster: `sandbox`).
jq -n --arg ns "$NS" --arg img "$IMAGE" '
	def tmpl($name; $extra): {apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "SandboxTemplate",
		metadata: {name: $name, namespace: $ns},
		spec: {podTemplate: {metadata: {labels: {"hangar.dev/sandbox": "true"}},
			spec: ({runtimeClassName: "gvisor", terminationGracePeriodSeconds: 5,
				securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000},
				containers: [{name: "sandbox", image: $img, command: ["sleep", "infinity"]}]} * $extra)}}};
	def pool($name; $n): {apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "SandboxWarmPool",
		metadata: {name: $name, namespace: $ns}, spec: {replicas: $n, sandboxTemplateRef: {name: $name}}};
	tmpl("bad-driver"; {containers: [{name: "sandbox", image: $img, command: ["sleep", "infinity"]},
		{name: "hangar-driver", image: $img, command: ["sleep", "infinity"]}]}),
	pool("bad-driver"; 1),
	tmpl("bad-home"; {volumes: [{name: "hangar-home", emptyDir: {}}]}),
	pool("bad-home"; 0),
	{apiVersion: "extensions.agents.x-k8s.io/v1beta1", kind: "SandboxClaim",
		metadata: {name: "bad-home", namespace: $ns}, spec: {warmPoolRef: {name: "bad-home"}}},
	{apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox", metadata: {name: "bad-agent", namespace: $ns},
		spec: {podTemplate: {metadata: {labels: {"hangar.dev/sandbox": "true"}},
			spec: {runtimeClassName: "gvisor", containers: [{name: "agent", image: $img, command: ["sleep", "infinity"]}]}}}},
	def sbx($name; $ann; $extra): {apiVersion: "agents.x-k8s.io/v1beta1", kind: "Sandbox",
		metadata: {name: $name, namespace: $ns},
		spec: {podTemplate: {metadata: {annotations: $ann},
			spec: ({runtimeClassName: "gvisor", terminationGracePeriodSeconds: 5,
				containers: [{name: "agent", image: $img, command: ["sleep", "infinity"]}]} + $extra)}}};
	sbx("bad-ann-missing"; {"hangar.dev/agent-container": "python"}; {}),
	sbx("bad-ann-init"; {"hangar.dev/agent-container": "setup"};
		{initContainers: [{name: "setup", image: $img, command: ["true"]}]}),
	sbx("bad-ann-driver"; {"hangar.dev/agent-container": "hangar-driver"}; {}),
	sbx("bad-default-driver"; {"hangar.dev/agent-container": "agent",
		"kubectl.kubernetes.io/default-container": "hangar-driver"}; {})' >bad.json
t_check "the two templates, their pools, a claim and five Sandboxes are created" logged kubectl create -f bad.json
# bad_sandbox NAME KIND: the Sandbox the pool or claim NAME made (for a Sandbox, NAME itself).
bad_sandbox() {
	if [ "$2" = Sandbox ]; then kubectl get sandbox -n "$NS" "$1" -o jsonpath='{.metadata.name}' 2>/dev/null; return; fi
	kubectl get sandboxes -n "$NS" -o json | jq -r --arg o "$1" --arg k "$2" \
		'.items[] | select(.metadata.ownerReferences[]? | .kind == $k and .name == $o) | .metadata.name' | head -n 1
}
ready_msg() {
	kubectl get sandbox -n "$NS" "$1" -o json 2>/dev/null |
		jq -r '.status.conditions[]? | select(.type == "Ready") | "\(.status) \(.reason) \(.message)"'
}
for b in "bad-driver SandboxWarmPool hangar-driver" "bad-home SandboxClaim hangar-home" 'bad-agent Sandbox "sandbox" (the agentContainer setting)' \
	'bad-ann-missing Sandbox no container named "python" (annotation hangar.dev/agent-container)' \
	'bad-ann-init Sandbox names "setup", which is in spec.initContainers' \
	'bad-ann-driver Sandbox annotation hangar.dev/agent-container names "hangar-driver"' \
	'bad-default-driver Sandbox kubectl.kubernetes.io/default-container names "hangar-driver"'; do
	read -r name kind what <<<"$b"
	t_check "$name: the $kind is there (a Sandbox)" t_wait_for "[ -n \"\$(bad_sandbox $name $kind)\" ]" 60
	s=$(bad_sandbox "$name" "$kind")
	s=${s:-none}
	t_check "  its Ready condition is False, ReconcilerError, with hangar's denial" \
		t_wait_for "ready_msg $s | grep -q '^False ReconcilerError .*denied the request'" 60
	ready_msg "$s" >"$name.ready"
	echo "  Ready: $(cut -c1-400 "$name.ready")"
	t_check "  the reason names $what" grep -qF "$what" "$name.ready"
	t_eq "  no pod was made for it" "" "$(kubectl get pod -n "$NS" "$s" -o name 2>/dev/null)"
	kubectl get events -n "$NS" --field-selector "involvedObject.name=$s" -o json |
		jq -r '.items[] | "\(.type) \(.reason) \(.count // 1) \(.message)"' >"$name.events"
	echo "  events on the Sandbox: $(wc -l <"$name.events")$( [ -s "$name.events" ] && echo ": $(head -n 3 "$name.events" | cut -c1-200)")"
done
t_eq "the claim on the refused template mirrors the reason" "False" \
	"$(kubectl get sandboxclaim -n "$NS" bad-home -o json | jq -r '.status.conditions[]? | select(.type == "Ready") | .status')"
kubectl get sandboxclaim -n "$NS" bad-home -o json | jq -r '.status.conditions[]? | select(.type == "Ready") | "  claim Ready: \(.reason) \(.message[0:300])"'
# The retries: each is a pod CREATE the controller sends and the webhook
# refuses; the controller logs each as a Reconciler error of the Sandbox.
retries() { grep -F '"msg":"Reconciler error"' "$D/agent-sandbox.log" | grep -cF "\"name\":\"$1\""; }
sd=$(bad_sandbox bad-driver SandboxWarmPool) sh_=$(bad_sandbox bad-home SandboxClaim)
# The webhook's side: its CREATE reviews of that pod name, denied.
denials() { grep -F "\"pod\":\"$2\"" "$1.hook" | grep -F '"operation":"CREATE"' | grep -cF '"decision":"denied"'; }
hooklog bad0
a0=$(retries "$sd") b0=$(retries "$sh_") t0=$SECONDS
sleep 60
hooklog bad1
a1=$(retries "$sd") b1=$(retries "$sh_")
echo "  retries in $((SECONDS - t0)) s: $((a1 - a0)) for $sd (warm pool; $a1 since it was made)," \
	"$((b1 - b0)) for $sh_ (claim, cold; $b1 since it was made)"
echo "  the webhook's denied CREATEs in that minute: $(($(denials bad1 "$sd") - $(denials bad0 "$sd"))) of $sd," \
	"$(($(denials bad1 "$sh_") - $(denials bad0 "$sh_"))) of $sh_ ($(denials bad1 "$sd") and $(denials bad1 "$sh_") in all)"
t_check "the controller retried (the refusal is not silent)" test "$a1" -gt 0 -a "$b1" -gt 0
t_check "the pool's Sandbox is still the same (not deleted and remade within a minute)" \
	test "$(bad_sandbox bad-driver SandboxWarmPool)" = "$sd"

echo "-- an image without hangar's binaries: the page's delivery values, native sidecars, a warm pool"
# (the refused templates' retries stop first: they are not this part's)
logged kubectl delete -f bad.json --wait=false
t_check "the bundle and bare images are loaded into the node's containerd" \
	sh -c "'$ROOT/scripts/node.sh' load '$D' ${ARCHIVES[*]} >>commands.log 2>&1"
BUNDLE=$(basename "${ARCHIVES[0]}" .oci.tar)
page agent-sandbox-values-bare
sed -i -e "s#REGISTRY/hangar-bin#localhost/hangar-bin#; s#tag: \"0.1.0\"#tag: \"${BUNDLE#hangar-bin-}\"#" \
	agent-sandbox-values-bare.page
t_check "helm upgrade with the page's values for such images (initContainer, nativeSidecar)" \
	logged helm upgrade hangar "$ROOT/charts/hangar-webhook" -n "$NODE_SYSTEM_NS" --reuse-values \
	-f agent-sandbox-values-bare.page --wait --timeout 3m
# A dry-run pod comes back with the copier and the driver as init containers
# once every replica injects that way.
asb_delivered_dry() {
	kubectl create --dry-run=server -o json -f - 2>/dev/null <<POD | jq -e '[.spec.initContainers[]?.name] == ["hangar-bin", "hangar-driver"]' >/dev/null
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "asb-ready", "namespace": "$NS", "labels": {"agents.x-k8s.io/sandbox-name-hash": "0"},
   "annotations": {"hangar.dev/agent-container": "agent"}},
 "spec": {"containers": [{"name": "agent", "image": "$IMAGE", "command": ["sleep", "infinity"]}]}}
POD
}
t_check "pods come back with hangar-bin and hangar-driver as init containers" t_wait_for asb_delivered_dry 90
page agent-sandbox-template-bare
sed -i "s#REGISTRY/any-env:TAG#localhost/hangar-bare:dev#" agent-sandbox-template-bare.page
t_check "the page's template of an image without hangar's binaries and its pool of 1 are created" \
	logged kubectl create -f agent-sandbox-template-bare.page
# delivered_ready POD: Running, the agent ready, the driver (a native sidecar) started and ready.
delivered_ready() {
	kubectl get pod -n "$NS" "$1" -o json 2>/dev/null | jq -e '.status.phase == "Running"
		and ([.status.containerStatuses[]? | select(.name == "agent") | .ready] == [true])
		and ([.status.initContainerStatuses[]? | select(.name == "hangar-driver") | .ready] == [true])' >/dev/null
}
# dshape POD: hangar's part of a delivered pod, one line (as shape, with the init containers).
dshape() {
	kubectl get pod -n "$NS" "$1" -o json | jq -c '{i: [.spec.initContainers[] | {name, image, command, restartPolicy,
		securityContext}], c: [.spec.containers[] | {name, image, command}],
		v: [.spec.volumes[] | select(.name | startswith("hangar-"))], rc: .spec.runtimeClassName,
		a: (.metadata.annotations | with_entries(select(.key | startswith("hangar.dev/"))))}'
}
t_check "the pool has 1 ready sandbox" t_wait_for "pool_ready any-pool 1" 400
BW=$(kubectl get pods -n "$NS" -l agents.x-k8s.io/warm-pool-sandbox -o json |
	jq -r '.items[] | select(.metadata.ownerReferences[]?.kind == "Sandbox") | .metadata.name' |
	while read -r p; do [ "$(kubectl get pod -n "$NS" "$p" -o jsonpath='{.spec.containers[0].image}')" = localhost/hangar-bare:dev ] && echo "$p"; done | head -n 1)
t_check "a warm pod of the image without binaries ($BW)" test -n "$BW"
kubectl get pod -n "$NS" "$BW" -o json >"$BW.json"
t_eq "  injected: the copier, then hangar-driver a native sidecar (init, restartPolicy Always); agent alone in containers" \
	"injected hangar-bin: hangar-driver:Always agent" \
	"$(jq -r '"\(.metadata.annotations["hangar.dev/driver-sidecar"]) \([.spec.initContainers[] | "\(.name):\(.restartPolicy // "")"] | join(" ")) \([.spec.containers[].name] | join(" "))"' "$BW.json")"
t_eq "  the driver runs the bundle's daemon" '["/opt/hangar/bin/hangar-driver","serve"]' \
	"$(jq -c '.spec.initContainers[] | select(.name == "hangar-driver") | .command' "$BW.json")"
t_check "  Running, the agent and the driver ready" t_wait_for "delivered_ready $BW" 120
t_eq "  the copy ended (0) before the driver started" "0 true" \
	"$(kubectl get pod -n "$NS" "$BW" -o json | jq -r '(.status.initContainerStatuses[] | select(.name == "hangar-bin") | .state.terminated) as $c
		| (.status.initContainerStatuses[] | select(.name == "hangar-driver") | .state.running.startedAt) as $d
		| "\($c.exitCode) \($c.finishedAt <= $d)"')"
dshape "$BW" >"$BW.shape.before"
sed 's/name: task-1/name: any-task/; s/name: agent-pool/name: any-pool/' agent-sandbox-claim.page >claim-any.yaml
t_check "a claim on that pool is created and Ready" sh -c "kubectl create -f claim-any.yaml >>commands.log 2>&1 &&
	kubectl wait -n $NS --for=condition=Ready sandboxclaim/any-task --timeout=300s >>commands.log 2>&1"
t_eq "  it adopted the warm pod" "$BW" "$(kubectl get sandboxclaim -n "$NS" any-task -o jsonpath='{.status.sandbox.name}')"
t_eq "  the adoption UPDATE passed the guard; hangar's shape, the copier and the native sidecar unchanged" \
	"true $(cat "$BW.shape.before")" \
	"$(kubectl get pod -n "$NS" "$BW" -o json | jq -r '.metadata.labels | has("agents.x-k8s.io/claim-uid")') $(dshape "$BW")"
in_agent "$BW" /opt/hangar/bin/hangar-probe check --role agent --set driver.binaries.from=initContainer \
	</dev/null >"$BW.agent.json" 2>"$BW.agent.err"
in_driver "$BW" hangar-probe check --role driver </dev/null >"$BW.driver.json" 2>"$BW.driver.err"
"$PROBE" spec "${PROBE_SET[@]}" --set driver.binaries.from=initContainer --set driver.nativeSidecar=true \
	--set driver.binaries.bundleImage="localhost/hangar-bin:${BUNDLE#hangar-bin-}" \
	--name "$BW" --namespace "$NS" --kubeconfig "$KUBECONFIG" >"$BW.spec.json" 2>"$BW.spec.err"
t_eq "  hangar-probe (the bundle's) check in both containers, spec on the adopted pod" "pass pass pass" \
	"$(jq -r .result "$BW.agent.json") $(jq -r .result "$BW.driver.json") $(jq -r .result "$BW.spec.json")"
for f in agent driver spec; do
	jq -r '.checks[]? | select(.status != "pass") | "    \(.status) \(.id // .name): \(.detail // "" | .[0:160])"' "$BW.$f.json" 2>/dev/null
done
"$PROBE" verdict --mode required --spec "$BW.spec.json" --agent "$BW.agent.json" --driver "$BW.driver.json" \
	--write "$BW.verdict.json" >/dev/null 2>&1
t_eq "  the verdict: split-active" split-active "$(jq -r .verdict "$BW.verdict.json" 2>/dev/null)"
in_driver "$BW" sh -c 'cat >/var/lib/hangar-ctl/verdict.json && busybox cp /var/lib/hangar-ctl/verdict.json /var/lib/hangar/verdict.json' \
	<"$BW.verdict.json"
turn "$BW" "echo turn-in-$BW; id -u; exit 0" /opt/hangar/bin/hangar-relay
t_eq "  a turn through the bundle's relay: exits 0, done; the driver's record harness 0" \
	"0 done 0" "$(cat "$BW.turn.rc") $(tail -n 1 "$BW.relay.out" | jq -r .relay 2>/dev/null) $(in_driver "$BW" hangar-driver ctl status --turn t1 </dev/null | jq -r .harness.value)"
in_agent "$BW" cat /var/lib/hangar/run/log </dev/null >"$BW.run.log" 2>&1
t_check "  its output is in the turn's log (uid 1000)" sh -c "grep -q 'turn-in-$BW' '$BW.run.log' && grep -qx 1000 '$BW.run.log'"

echo "-- scripts/agent-sandbox.sh uninstall (the page's command)"
run_page agent-sandbox-uninstall
rc=$?
t_eq "the page's uninstall command exits 0" 0 "$rc"
[ "$rc" = 0 ] || cat agent-sandbox-uninstall.out
t_eq "no agent-sandbox pod left in $NS" "" "$(ls_pods)"
t_check "no agent-sandbox CRD left" sh -c "! kubectl get crd -o name | grep -q 'agents.x-k8s.io'"
t_check "no agent-sandbox-system namespace, ClusterRole or binding left" sh -c \
	"! kubectl get namespace agent-sandbox-system >/dev/null 2>&1 && ! kubectl get clusterrole,clusterrolebinding -o name | grep -q agent-sandbox-controller"
t_check "no controller kubeconfig left in the node's directory" test ! -e "$D/agent-sandbox.kubeconfig"
t_check "status says it does not run" sh -c "! '$ROOT/scripts/agent-sandbox.sh' status '$D' >/dev/null"
t_eq "no controller process names the node's directory" "" \
	"$(for p in /proc/[0-9]*; do { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q "agent-sandbox-controller .*$D/" && echo "${p#/proc/}"; done)"
t_end
