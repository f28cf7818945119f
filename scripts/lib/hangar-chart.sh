# shellcheck shell=bash
# hangar's chart on a cluster, as a cluster admin installs it (service mode:
# the webhook as its 2-replica Deployment in hangar-system under restricted
# Pod Security, certificates made and the caBundle patched from inside its
# pods, the driver sidecar on, the guard listing hangar's identity), and
# hangar's own identity with what it may do in the sandboxes' namespace.
# Sourced by scripts/local-run.sh, bench/node.sh and tests/node/*.sh; kubectl
# and helm on PATH, KUBECONFIG set. Each function fails (non-zero, what went
# wrong on stderr) rather than going on with a half-installed chart.

hangar_chart_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../charts/hangar-webhook" && pwd)
# The identity hangar runs as (the chart's guard lets it exec into hangar-driver).
# shellcheck disable=SC2034 # used by the scripts that source this file
HANGAR_ID=system:serviceaccount:hangar:hangar

# hangar_system_namespace: the webhook's namespace, enforcing restricted Pod Security.
hangar_system_namespace() {
  kubectl create namespace hangar-system >/dev/null &&
    kubectl label namespace hangar-system pod-security.kubernetes.io/enforce=restricted >/dev/null
}

# The namespace label that opts a namespace in to hangar (the chart's
# scope.namespaceLabel): its webhooks see only namespaces carrying it.
# shellcheck disable=SC2034 # used by the scripts that source this file
HANGAR_SCOPE_LABEL=hangar.dev/injection=enabled

# hangar_sandbox_namespace NS: namespace NS, opted in to hangar (labelled
# $HANGAR_SCOPE_LABEL), as an admin makes one for sandbox pods.
hangar_sandbox_namespace() {
  kubectl create namespace "$1" >/dev/null &&
    kubectl label namespace "$1" "$HANGAR_SCOPE_LABEL" >/dev/null
}

# hangar_identity NS: namespace NS (opted in), and hangar's ServiceAccount
# (namespace hangar) that may read pods in NS and exec into them; nothing else.
hangar_identity() {
  local ns=$1
  hangar_sandbox_namespace "$ns" &&
    kubectl create namespace hangar >/dev/null &&
    kubectl create serviceaccount -n hangar hangar >/dev/null &&
    kubectl create role -n "$ns" hangar --verb=get,list,watch --resource=pods >/dev/null &&
    kubectl create role -n "$ns" hangar-exec --verb=get,create --resource=pods/exec >/dev/null &&
    kubectl create rolebinding -n "$ns" hangar --role=hangar --serviceaccount=hangar:hangar >/dev/null &&
    kubectl create rolebinding -n "$ns" hangar-exec --role=hangar-exec --serviceaccount=hangar:hangar >/dev/null
}

# hangar_chart_install RELEASE [HELM_ARG...]: helm install into hangar-system
# (which must exist), waiting until the replicas are Ready; HELM_ARGs after
# the defaults (driver sidecar on, the guard listing $HANGAR_ID). helm's
# output on stdout.
hangar_chart_install() {
  local release=$1
  shift
  helm install "$release" "$hangar_chart_dir" -n hangar-system --wait --timeout 5m \
    --set driverSidecar.enabled=true --set-json "guard.driverUsers=[\"$HANGAR_ID\"]" "$@"
}

# hangar_chart_bundle RELEASE: the caBundle of the release's
# MutatingWebhookConfiguration (base64; empty until a replica patches it).
hangar_chart_bundle() {
  local mwc
  mwc=$(kubectl get mutatingwebhookconfigurations -l "app.kubernetes.io/instance=$1" \
    -o jsonpath='{.items[0].metadata.name}') || return 1
  kubectl get mutatingwebhookconfiguration "$mwc" -o jsonpath='{.webhooks[0].clientConfig.caBundle}'
}

# hangar_chart_ready RELEASE NS [SECONDS]: waits (default 60 s) until the
# replicas patched the caBundle and the API server sends a labelled pod in
# NS to the webhook (a server-side dry run comes back with hangar-driver
# injected: a new webhook configuration takes the API server a moment).
hangar_chart_ready() {
  local release=$1 ns=$2 limit=${3:-60} t0=$SECONDS
  until [ -n "$(hangar_chart_bundle "$release" 2>/dev/null)" ]; do
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      echo "hangar-chart: the webhook's pods never patched the caBundle of release $release (${limit}s)" >&2
      return 1
    fi
    sleep 0.2
  done
  until kubectl create --dry-run=server -o json -f - 2>/dev/null <<POD | jq -e '.spec.containers | map(.name) | index("hangar-driver")' >/dev/null; do
{"apiVersion": "v1", "kind": "Pod",
 "metadata": {"name": "hangar-chart-ready", "namespace": "$ns", "labels": {"hangar.dev/sandbox": "true"}},
 "spec": {"containers": [{"name": "sandbox", "image": "localhost/hangar-sandbox:dev", "command": ["sleep", "infinity"]}]}}
POD
    if [ $((SECONDS - t0)) -ge "$limit" ]; then
      echo "hangar-chart: a labelled pod in $ns is not injected (${limit}s after the install)" >&2
      return 1
    fi
    sleep 0.3
  done
}
