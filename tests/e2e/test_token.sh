#!/usr/bin/env bash
# The agent's service-account token through a real kube-apiserver with the
# ServiceAccount admission plugin on (control-plane.sh --service-accounts):
# the plugin mounts the pod's token in every container before the webhook
# runs, and again on the reinvocation after the webhook added hangar-driver.
# Two releases of the chart (each its own selector and local webhook):
#   keep (the default): the stored agent keeps its token mount;
#   remove: the stored agent has no mount of the token, the other containers
#           keep theirs, the agent's other mounts are untouched.
# In both the stored hangar-driver mounts only its two volumes (no token),
# and the stored pod passes `hangar-probe spec`. The webhook's configuration
# is the one the chart rendered into its ConfigMap.
# usage: test_token.sh HANGAR_WEBHOOK HANGAR_PROBE TOOLS_BIN
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
TOOLS_BIN=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "the agent's service-account token (ServiceAccount admission plugin on)"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH
CHART=$ROOT/charts/hangar-webhook
TOKEN_DIR=/var/run/secrets/kubernetes.io/serviceaccount

t_control_plane --service-accounts
kubectl create namespace tok >/dev/null
kubectl label namespace tok hangar.dev/injection=enabled >/dev/null # opted in to hangar (the chart's scope)
kubectl create namespace hangar-system >/dev/null
# No controller-manager here: the accounts the plugin looks up are made by hand.
kubectl create serviceaccount default -n tok >/dev/null
kubectl create serviceaccount agent -n tok >/dev/null

"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 >/dev/null
# mode SELECTOR_KEY [HELM_ARGS...]: a release with that selector and
# agentServiceAccountToken mode, its webhook run locally on the
# configuration the chart rendered.
release() {
        local mode=$1 key=$2 port
        shift 2
        port=$(t_free_port)
        helm install "tok-$mode" "$CHART" -n hangar-system --set webhook.url="https://127.0.0.1:$port/mutate" \
                --set webhook.caBundle="$(base64 -w0 pki/ca.crt)" --set driverSidecar.enabled=true \
                --set selector.key="$key" --set driverSidecar.agentServiceAccountToken="$mode" "$@" >>helm.log 2>&1 ||
                { cat helm.log; exit 1; }
        kubectl get configmap -n hangar-system -l app.kubernetes.io/instance="tok-$mode" \
                -o jsonpath='{.items[0].data.config\.yaml}' >"chart-$mode.yaml"
        # The chart's file, but serving here (URL mode) on this pair.
        sed -e "s#^  address: .*#  address: \"127.0.0.1\"#" -e "s#^  port: .*#  port: $port#" \
                -e "s#^  healthPort: .*#  healthPort: 0#" \
                -e "s#^  certFile: .*#  certFile: $T_TMP/pki/tls.crt#" -e "s#^  keyFile: .*#  keyFile: $T_TMP/pki/tls.key#" \
                -e '/^tls:/,$d' "chart-$mode.yaml" >"webhook-$mode.yaml"
        "$WEBHOOK" serve --config "webhook-$mode.yaml" 2>"webhook-$mode.log" &
        t_cleanup_pid $!
        t_wait_for "curl -sf --cacert pki/ca.crt https://127.0.0.1:$port/readyz >/dev/null" 10 ||
                { cat "webhook-$mode.log"; exit 1; }
}
# keep also asks for its driver's CPU as 0.05, which the API server stores
# as 50m: the reinvocation's spec check compares quantities by value.
release keep hangar.dev/sandbox --set-string driver.resources.requests.cpu=0.05
release remove hangar.dev/notoken
t_eq "the chart renders agentServiceAccountToken: keep by default... " '"keep"' \
        "$(sed -n 's/^agentServiceAccountToken: //p' chart-keep.yaml)"
t_eq "... and remove when asked" '"remove"' "$(sed -n 's/^agentServiceAccountToken: //p' chart-remove.yaml)"

pod() { # NAME SELECTOR_KEY
        jq -n --arg n "$1" --arg k "$2" '{apiVersion: "v1", kind: "Pod",
                metadata: {name: $n, namespace: "tok", labels: {($k): "true"}},
                spec: {serviceAccountName: "agent", securityContext: {runAsUser: 1000, runAsGroup: 1000},
                       initContainers: [{name: "fetch", image: "registry.example/fetch:1"}],
                       containers: [{name: "helper", image: "registry.example/helper:1"},
                                    {name: "sandbox", image: "registry.example/agent-env:1.2",
                                     volumeMounts: [{name: "work", mountPath: "/work"}]}],
                       volumes: [{name: "work", emptyDir: {}}]}}'
}
for key in hangar.dev/sandbox hangar.dev/notoken; do
        t_check "webhook for $key active" t_wait_for \
                "pod probe-x '$key' | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.containers | length == 3' >/dev/null" 30
done

mounts_of() { # STORED CONTAINER: its mounts as "name path ro" lines
        jq -r --arg c "$2" '(.spec.containers + .spec.initContainers)[] | select(.name == $c)
                | .volumeMounts[]? | "\(.name) \(.mountPath) \(.readOnly // false)"' "$1"
}
token_mounts() { # STORED CONTAINER: how many of its mounts are the token's
        mounts_of "$1" "$2" | awk -v d="$TOKEN_DIR" '$1 ~ /^kube-api-access-/ || $2 == d' | wc -l
}
for mode in keep remove; do
        key=hangar.dev/sandbox
        [ "$mode" = remove ] && key=hangar.dev/notoken
        pod "$mode-1" "$key" | kubectl create -f - >/dev/null 2>"$mode.err" || { t_fail "$mode: pod refused: $(cat "$mode.err")"; continue; }
        kubectl get pod -n tok "$mode-1" -o json >"$mode.json"
        t_eq "$mode: injected" injected "$(jq -r '.metadata.annotations["hangar.dev/driver-sidecar-reason"]' "$mode.json")"
        vol=$(jq -r '.spec.volumes[].name | select(startswith("kube-api-access-"))' "$mode.json")
        t_check "$mode: the plugin gave the pod its token volume ($vol)" test -n "$vol"
        t_eq "$mode: the helper keeps its token mount" 1 "$(token_mounts "$mode.json" helper)"
        t_eq "$mode: the init container keeps its token mount" 1 "$(token_mounts "$mode.json" fetch)"
        t_eq "$mode: hangar-driver mounts its two volumes and no token" \
                "hangar-home /var/lib/hangar false|hangar-ctl /var/lib/hangar-ctl false" \
                "$(mounts_of "$mode.json" hangar-driver | paste -sd'|')"
        # The API server called the webhook again after its plugins re-ran
        # (the driver's token mount came back then, and went again).
        t_check "$mode: the reinvocation took the plugin's mount out of the driver again" \
                grep -q "the service-account token's mounts taken out again" "webhook-$mode.log"
        "$PROBE" spec --pod-file "$mode.json" --config "chart-$mode.yaml" >"$mode.spec.json"
        t_eq "$mode: the stored pod passes hangar-probe spec" pass "$(jq -r .result "$mode.spec.json")"
done
t_eq "keep: the driver's CPU request 0.05 was stored as 50m (and the reinvocation allowed it)" 50m \
        "$(jq -r '.spec.containers[] | select(.name == "hangar-driver") | .resources.requests.cpu' keep.json)"
t_eq "keep: the agent keeps its token mount" 1 "$(token_mounts keep.json sandbox)"
t_eq "remove: the agent has no mount of the token" 0 "$(token_mounts remove.json sandbox)"
t_eq "remove: nothing of the agent's is at the token's directory" "" \
        "$(mounts_of remove.json sandbox | awk '{print $2}' | grep -F "$TOKEN_DIR" || true)"
t_eq "remove: the agent's other mounts are as they were, plus hangar-home read-only" \
        "work /work false|hangar-home /var/lib/hangar true" "$(mounts_of remove.json sandbox | paste -sd'|')"
t_eq "remove: the agent's other mounts are the keep pod's, less the token" \
        "$(mounts_of keep.json sandbox | grep -v kube-api-access- | paste -sd'|')" \
        "$(mounts_of remove.json sandbox | paste -sd'|')"
t_end
