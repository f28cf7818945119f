#!/usr/bin/env bash
# shellcheck disable=SC1091,SC2016 # testlib is sourced; t_wait_for conditions are single-quoted
# `helm test` of the chart on the real node (scripts/node.sh; the node
# suites' shared node), the chart in service mode with the sidecar on and
# tests.namespace=helmtest, a
# namespace that enforces Pod Security "restricted" (the injected dry-run
# pod must pass it):
#   - a good install: `helm test` passes; its pod ran the webhook's image
#     (`hangar-webhook test-injection`) under restricted Pod Security in
#     hangar-system; its pod, ServiceAccount, Role and RoleBinding are gone
#     afterwards (hook-succeeded); nothing was stored in helmtest;
#   - the namespace no longer selected (webhook.namespaceSelector): `helm
#     test` fails and the failed pod's log says the API server did not call
#     the webhook;
#   - no replica answering (failurePolicy Fail): `helm test` fails with the
#     API server's refusal;
#   - back to good: `helm test` passes again (the failed run's objects
#     replaced: before-hook-creation).
# usage: test_node_helmtest.sh K8S_BIN
# Needs root and the shared node (HANGAR_TEST_NODE_DIR). T_KEEP_TMP=1 keeps the files.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/nodelib.sh"
t_begin "helm test of the chart on the node"

K8S_BIN=${1:-}
node_attach "$K8S_BIN" "$K8S_BIN/helm"
NS=helmtest
REL=hangar
FULL=hangar-hangar-webhook
cd "$T_TMP" || exit 1
node_namespace "$NS" pod-security.kubernetes.io/enforce=restricted
node_chart "$REL" "$NS"
t0=$SECONDS
logged() { "$@" >>helm.log 2>&1; }
t_check "helm install (service mode, sidecar on, tests.namespace=$NS)" \
	logged hangar_chart_install "$REL" "${NODE_CHART_ARGS[@]}" --set tests.namespace="$NS"
t_check "the replicas patched the caBundle" t_wait_for '[ -n "$(hangar_chart_bundle "$REL" 2>/dev/null)" ]' 60
echo "  chart installed in $((SECONDS - t0)) s"

helm_test() { # OUT: runs helm test, prints its exit status
	helm test "$REL" -n hangar-system --timeout 2m >"$1" 2>&1
	echo $?
}
# A new webhook configuration takes the API server a moment: the first test
# may come too early, so it is run until it passes (at most 60 s).
t0=$SECONDS
until [ "$(helm_test good.out)" = 0 ] || [ $((SECONDS - t0)) -ge 60 ]; do sleep 2; done
t_check "helm test passes on a good install ($((SECONDS - t0)) s)" grep -q 'Phase:.*Succeeded' good.out
grep -q 'Phase:.*Succeeded' good.out || sed 's/^/       /' good.out
test_objects() {
	kubectl get pod,serviceaccount -n hangar-system -o name 2>/dev/null | grep -- "$FULL-test"
	kubectl get role,rolebinding -n "$NS" -o name 2>/dev/null | grep -- "$FULL-test"
}
t_check "the test pod, its ServiceAccount, Role and RoleBinding are deleted once it passed" \
	t_wait_for '[ -z "$(test_objects)" ]' 30
t_eq "nothing was stored in $NS (a dry run)" "" "$(kubectl get pods -n "$NS" -o name)"

echo "-- the namespace not selected any more"
t_check "helm upgrade: webhook.namespaceSelector needs a label $NS lacks" logged \
	helm upgrade "$REL" "$hangar_chart_dir" -n hangar-system --reuse-values --wait --timeout 3m \
	--set-json 'webhook.namespaceSelector={"matchLabels":{"hangar.dev/sandboxes":"enabled"}}'
t0=$SECONDS
until [ "$(helm_test unselected.out)" != 0 ] || [ $((SECONDS - t0)) -ge 60 ]; do sleep 2; done
t_check "helm test fails" grep -Eq 'Phase:.*Failed|failed' unselected.out
kubectl logs -n hangar-system "$FULL-test-injection" >unselected.log 2>&1
t_check "its pod's log says the API server did not call the webhook" \
	grep -q 'the API server did not call the webhook for it' unselected.log
sed 's/^/       /' unselected.log | head -n 3
t_check "the failed test's pod is kept for its log" kubectl get pod -n hangar-system "$FULL-test-injection" -o name

echo "-- no replica answering (failurePolicy Fail)"
# (Setting the selector back to {} would not do it: --reuse-values merges
# maps, so the old matchLabels would stay. The namespace gets the label.)
t_check "the namespace selected again (it gets the selector's label)" \
	kubectl label namespace "$NS" hangar.dev/sandboxes=enabled
t_check "the Deployment scaled to 0, its pods gone" bash -c \
	"kubectl scale -n hangar-system deployment/$FULL --replicas=0 >/dev/null && kubectl wait -n hangar-system --for=delete pod -l app.kubernetes.io/component=admission-webhook --timeout=90s >/dev/null"
t_eq "helm test fails" 1 "$(helm_test down.out)"
kubectl logs -n hangar-system "$FULL-test-injection" >down.log 2>&1
t_check "its pod's log has the API server's refusal (the webhook could not be called)" \
	grep -Eq 'refused \(HTTP 500\).*failed calling webhook' down.log
sed 's/^/       /' down.log | head -n 3

echo "-- good again"
t_check "the Deployment scaled back to 2 and Available" bash -c \
	"kubectl scale -n hangar-system deployment/$FULL --replicas=2 >/dev/null && kubectl rollout status -n hangar-system deployment/$FULL --timeout=120s >/dev/null"
t0=$SECONDS
until [ "$(helm_test again.out)" = 0 ] || [ $((SECONDS - t0)) -ge 60 ]; do sleep 2; done
t_check "helm test passes again (the failed run's pod replaced)" grep -q 'Phase:.*Succeeded' again.out
# helm deletes a passed hook's objects as it returns; the pod may still be
# terminating for a moment.
t_check "and its objects are gone again" t_wait_for \
	'[ -z "$(test_objects)" ]' 30
t_check "helm uninstall" logged helm uninstall "$REL" -n hangar-system --wait --timeout 2m
t_end
