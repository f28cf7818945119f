#!/usr/bin/env bash
# shellcheck disable=SC2016,SC1091 # single-quoted xargs commands; testlib is sourced
# The webhook's availability on the real node (scripts/node.sh, docs/node.md;
# the node suites' shared node, namespace "avail"), the chart installed in
# service mode (2 replicas, self-managed certificates)
# as scripts/local-run.sh installs it. Sandbox pods are created in parallel
# batches (5 pods per kubectl, 4 kubectl at a time, paced so the creates span
# the disruption) while:
#   1. a CA rotation runs in the in-cluster replicas: the chart starts from a
#      Secret whose CA has 1 day left (renewBeforeDays 30), caOverlapSeconds
#      30: the replicas stage a new CA, switch to it and retire the old one,
#      each step checked in the Secret and the caBundle;
#   2. one of the two webhook pods is deleted (kubectl delete pod), then,
#      once its replacement is Ready, the other one; each goes only after the
#      chart's preStop sleep (without it, 1 of 450 creates in a trial was
#      refused: "dial tcp POD:8443: connect: connection refused");
#   3. `helm upgrade` rolls the Deployment (a changed podAnnotation).
# Each round: 200 creates (the rotation round: 200 over the rotation), 0
# failed, all 200 injected (hangar-driver in the stored pod), and the creates
# went on until after the disruption was over (else the round proves
# nothing). The pods carry a scheduling gate: admission is what is tested, so
# they stay Pending (never scheduled, nothing started) and are deleted after
# each round.
# usage: test_node_availability.sh K8S_BIN HANGAR_WEBHOOK
#   HANGAR_WEBHOOK: the built binary (for `certs`); the images are the
#   fixture's (tests/node/node_fixture.sh).
# Needs root and the shared node (HANGAR_TEST_NODE_DIR). T_KEEP_TMP=1 keeps the files.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/nodelib.sh"
t_begin "webhook availability on the node (pod deleted, helm upgrade, CA rotation)"

K8S_BIN=${1:-} WEBHOOK=$(realpath -m "${2:-.}")
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$WEBHOOK"
NS=avail
REL=hangar
FULL=hangar-webhook   # fullnameOverride: the Service, Deployment and Secret names
SECRET=$FULL-tls
OVERLAP=40
cd "$T_TMP" || exit 1
node_namespace "$NS"
node_chart "$REL" "$NS"

# batches PREFIX N: N pod manifests in lists of 5 (one kubectl create each).
batches() {
	local prefix=$1 n=$2 b i
	mkdir -p "$prefix"
	for ((b = 1; b <= n / 5; b++)); do
		for ((i = 5 * b - 4; i <= 5 * b; i++)); do
			jq -n --arg n "$prefix-$i" --arg r "$prefix" --arg ns "$NS" '{apiVersion: "v1", kind: "Pod",
			metadata: {name: $n, namespace: $ns, labels: {"hangar.dev/sandbox": "true", "hangar.dev/round": $r}},
			spec: {runtimeClassName: "gvisor", schedulingGates: [{name: "hangar.dev/admission-only"}],
				securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000},
				containers: [{name: "sandbox", image: "localhost/hangar-sandbox:dev", imagePullPolicy: "Never",
					command: ["sleep", "infinity"],
					securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]}}}]}}'
		done | jq -s '{apiVersion: "v1", kind: "List", items: .}' >"$prefix/$b.json"
	done
}
# ---- round 1: a CA rotation by the replicas ----------------------------------
batches rot 200
batches warm 5
# A Secret as the webhook writes it, whose CA expires in a day: inside the
# default 30-day renewal window, so the replicas rotate it as soon as they run.
"$WEBHOOK" certs --out-dir oldca --service "$FULL" --namespace hangar-system --ca-days 1 --days 1 >/dev/null
kubectl create secret generic "$SECRET" -n hangar-system --from-file=ca.crt=oldca/ca.crt \
	--from-file=ca.key=oldca/ca.key --from-file=tls.crt=oldca/tls.crt --from-file=tls.key=oldca/tls.key >/dev/null
t0=$SECONDS
hangar_chart_install "$REL" "${NODE_CHART_ARGS[@]}" --set fullnameOverride="$FULL" \
	--set server.certPollSeconds=1 --set certificates.selfManaged.syncSeconds=1 \
	--set certificates.selfManaged.caOverlapSeconds=$OVERLAP >helm.log 2>&1
t_check "helm install --wait: both replicas Ready ($((SECONDS - t0)) s)" \
	test "$(kubectl get deploy -n hangar-system "$FULL" -o jsonpath='{.status.readyReplicas}')" = 2
MWC=$(kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/instance=$REL -o jsonpath='{.items[0].metadata.name}')
bundle_certs() {
	kubectl get mutatingwebhookconfiguration "$MWC" -o jsonpath='{.webhooks[0].clientConfig.caBundle}' |
		base64 -d 2>/dev/null | grep -c 'BEGIN CERTIFICATE'
}
secret_key() {
	kubectl get secret -n hangar-system "$SECRET" -o json | jq -r --arg k "$1" '.data[$k] // empty' | base64 -d
}
webhook_pods() { kubectl get pods -n hangar-system -l app.kubernetes.io/instance=$REL -o name; }

# load PREFIX N SPAN: creates the N pods, a batch every SPAN/(N/5) s, 4 at a
# time; each batch's stdout, stderr and end time in PREFIX/. The last 4
# batches wait for PREFIX.over (disruption_over PREFIX, once the round's
# disruption is over), so some creates always come after it, however long
# it takes: at load 39 a rollout took 95 s and a fixed span of creates ended
# before it did. Run it in the background.
load() {
	local prefix=$1 n=$2 span=$3 b gap
	gap=$(awk -v s="$span" -v n="$n" 'BEGIN { printf "%.3f", s / (n / 5) }')
	for ((b = 1; b <= n / 5; b++)); do
		if [ "$b" -gt $((n / 5 - 4)) ]; then
			while [ ! -e "$prefix.over" ]; do sleep 0.2; done
		fi
		echo "$prefix/$b.json"
		sleep "$gap"
	done | xargs -P 4 -I{} sh -c 'kubectl create --request-timeout 60s -f "$1" >"$1.out" 2>"$1.err"; date +%s.%N >"$1.end"' _ {}
}
# disruption_over PREFIX: the time it is called, for the checks; lets the
# last batches of load PREFIX go.
disruption_over() {
	now
	: >"$1.over"
}
created() { cat "$1"/*.out 2>/dev/null | grep -c ' created$'; }
last_end() { sort -n "$1"/*.end 2>/dev/null | tail -n 1; }
now() { date +%s.%N; }
after() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a > b) }'; } # A > B (epoch seconds)
# check_round PREFIX WHAT: 0 failed of 200, all injected.
check_round() {
	local prefix=$1 what=$2 ok errs
	ok=$(created "$prefix")
	errs=$(cat "$prefix"/*.err 2>/dev/null | grep -v '^Warning' | sort | uniq -c | sort -rn | head -n 3 | cut -c1-300)
	t_eq "$what: failed creates $((200 - ok))/200${errs:+ ($errs)}" 0 $((200 - ok))
	t_eq "$what: all created pods were injected (hangar-driver stored)" "$ok" \
		"$(kubectl get pods -n "$NS" -l "hangar.dev/round=$prefix" -o json |
			jq '[.items[] | select(any(.spec.containers[]; .name == "hangar-driver"))] | length')"
	echo "  $what: $ok created, creates from $(sort -n "$prefix"/*.end | head -n 1 | cut -c1-14) to $(last_end "$prefix" | cut -c1-14)"
	kubectl delete pods -n "$NS" -l "hangar.dev/round=$prefix" --wait=false >/dev/null 2>&1
}

echo "-- round 1: CA rotation by the replicas, under load"
# The replicas stage the new CA as soon as they run and switch one overlap
# later: the staged CA is read first (the wait and the read are one step),
# and everything slow (the manifests) was made before the install, so on a
# loaded machine the rotation cannot run ahead of what watches it.
staged() { secret_key ca-next.crt >newca.crt && [ -s newca.crt ]; }
t_check "rotation: a new CA is staged beside the expiring one" t_wait_for staged 20
t_wait_for '[ "$(bundle_certs)" -ge 1 ]' 30
# The first create may race the API server's view of the new configuration.
t_check "a sandbox pod is admitted after install" \
	t_wait_for 'kubectl create -f warm/1.json >/dev/null 2>&1' 30
kubectl delete pods -n "$NS" -l hangar.dev/round=warm --wait=false >/dev/null
load_start=$(now)
load rot 200 $((2 * OVERLAP + 10)) &
LOAD=$!
t_cleanup_pid $LOAD
switched_in() {
	secret_key ca-previous.crt | cmp -s - oldca/ca.crt && secret_key ca.crt >current.crt && [ -s current.crt ] &&
		! cmp -s current.crt oldca/ca.crt
}
t_check "rotation: a new CA is switched in, the old one kept as previous" t_wait_for switched_in $((3 * OVERLAP))
switched=$(now)
t_check "rotation: the CA switched in is the one staged" cmp -s current.crt newca.crt
t_check "rotation: one overlap later the old CA is retired from the Secret and the caBundle" t_wait_for \
	'[ -z "$(secret_key ca-previous.crt)" ] && [ "$(bundle_certs)" = 1 ]' $((3 * OVERLAP))
retired=$(disruption_over rot)
wait $LOAD
t_eq "rotation: the caBundle is the new CA alone" "$(base64 -w0 current.crt)" \
	"$(kubectl get mutatingwebhookconfiguration "$MWC" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
t_check "rotation: the switch came after the creates began (it ran under load)" after "$switched" "$load_start"
t_check "rotation: creates went on after the old CA was retired" after "$(last_end rot)" "$retired"
secret_key tls.crt >leaf.crt
t_check "rotation: the serving certificate is signed by the new CA" openssl verify -CAfile current.crt leaf.crt
check_round rot "rotation"
kubectl logs -n hangar-system -l app.kubernetes.io/instance=$REL --tail=-1 >rotation.log 2>&1
t_check "rotation: the replicas logged staging, switching and retiring" bash -c \
	'grep -q "staging a new CA" rotation.log && grep -q "switching to the new CA" rotation.log && grep -q "retiring the previous CA" rotation.log'

echo "-- round 2: a webhook pod deleted, then the other one"
# One of the two at a time (the replacement Ready in between): each deletion
# is one chance for a review to reach a pod that has stopped answering.
batches del 200
mapfile -t before < <(webhook_pods)
t_eq "two webhook pods" 2 "${#before[@]}"
# The chart's preStop sleep (Kubernetes 1.30+) keeps the pod answering while
# the endpoints drop it.
drain=$(kubectl get deploy -n hangar-system "$FULL" -o jsonpath='{.spec.template.spec.containers[0].lifecycle.preStop.sleep.seconds}')
t_check "the chart gives the webhook a preStop sleep on Kubernetes 1.30+ (${drain:-none} s)" test "${drain:-0}" -ge 1
load del 200 40 &
LOAD=$!
t_cleanup_pid $LOAD
t_wait_for '[ "$(created del)" -ge 20 ]' 20
for victim in "${before[@]}"; do
	victim=${victim#pod/}
	deleted=$(now)
	kubectl delete pod -n hangar-system "$victim" --wait=false >/dev/null
	t_check "$victim: deleted and gone" t_wait_for '! kubectl get pod -n hangar-system "$victim" >/dev/null 2>&1' 60
	gone=$(now)
	echo "  $victim: gone $(awk -v a="$gone" -v b="$deleted" 'BEGIN { printf "%.1f", a - b }') s after the delete, $(created del) pods created so far"
	t_check "$victim: stayed for its preStop sleep before it went" \
		after "$gone" "$(awk -v d="$deleted" -v s="${drain:-0}" 'BEGIN { printf "%.3f", d + s }')"
	t_check "the Deployment is back at 2 ready replicas" t_wait_for \
		'[ "$(kubectl get deploy -n hangar-system $FULL -o jsonpath={.status.readyReplicas})" = 2 ]' 60
done
disruption_over del >/dev/null
wait $LOAD
t_check "creates went on after the second deleted pod was gone" after "$(last_end del)" "$gone"
check_round del "pods deleted"

echo "-- round 3: helm upgrade rolls the Deployment"
batches upg 200
mapfile -t before < <(webhook_pods)
load upg 200 45 &
LOAD=$!
t_cleanup_pid $LOAD
t_wait_for '[ "$(created upg)" -ge 20 ]' 20
t0=$SECONDS
# (helm's output in helm.log, the check's line in the test's output)
logged() { "$@" >>helm.log 2>&1; }
t_check "helm upgrade (a changed podAnnotation) --wait" logged helm upgrade "$REL" "$hangar_chart_dir" \
	-n hangar-system --reuse-values --wait --timeout 5m --set-string podAnnotations.hangar\\.dev/roll=1
all_gone() {
	local p
	for p in "$@"; do ! kubectl get -n hangar-system "$p" >/dev/null 2>&1 || return 1; done
}
t_check "every old webhook pod is gone" t_wait_for 'all_gone "${before[@]}"' 60
rolled=$(disruption_over upg)
echo "  the rollout took $((SECONDS - t0)) s"
wait $LOAD
t_check "creates went on after the rollout ended" after "$(last_end upg)" "$rolled"
check_round upg "helm upgrade"
mapfile -t after_pods < <(webhook_pods)
t_check "the webhook pods were all replaced (${before[*]} -> ${after_pods[*]})" bash -c \
	'for p in "${@:2}"; do [[ " $1 " != *" $p "* ]] || exit 1; done' _ "${before[*]}" "${after_pods[@]}"

t_check "helm uninstall" logged helm uninstall "$REL" -n hangar-system --wait --timeout 2m
t_end
