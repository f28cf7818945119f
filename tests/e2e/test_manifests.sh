#!/usr/bin/env bash
# Realistic sandbox pods through a real kube-apiserver with the webhook on
# (installed by the chart, URL mode): native sidecars, projected and
# downward-API volumes, scheduling and probes, generateName, pod-level
# security contexts, ephemeral volumes (tests/e2e/manifests/). Each manifest
# is created twice, once selected and once not; after the API server's own
# defaulting on both, the injected pod's spec minus exactly what the webhook
# adds must equal the plain pod's spec: "everything else byte for byte".
# The stored injected pod must pass `hangar-probe spec`.
# usage: test_manifests.sh HANGAR_WEBHOOK HANGAR_PROBE TOOLS_BIN
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
TOOLS_BIN=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "real manifests through the API server and the webhook"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

t_control_plane
kubectl create namespace zoo >/dev/null
kubectl label namespace zoo hangar.dev/injection=enabled >/dev/null # opted in to hangar (the chart's scope)
kubectl create namespace hangar-system >/dev/null
printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n' |
        kubectl create -f - >/dev/null

"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 >/dev/null
PORT=$(t_free_port)
cat >webhook.yaml <<CFG
driverSidecar: true
server: {address: 127.0.0.1, port: $PORT, certFile: $T_TMP/pki/tls.crt, keyFile: $T_TMP/pki/tls.key}
CFG
"$WEBHOOK" serve --config webhook.yaml 2>webhook.log &
t_cleanup_pid $!
t_wait_for "curl -sf --cacert pki/ca.crt https://127.0.0.1:$PORT/readyz >/dev/null" 10 || { cat webhook.log; exit 1; }
helm install hangar "$ROOT/charts/hangar-webhook" -n hangar-system --set webhook.url="https://127.0.0.1:$PORT/mutate" \
        --set webhook.caBundle="$(base64 -w0 pki/ca.crt)" --set driverSidecar.enabled=true >helm.log 2>&1 ||
        { cat helm.log; exit 1; }
probe_pod='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"probe","namespace":"zoo","labels":{"hangar.dev/sandbox":"true"}},"spec":{"containers":[{"name":"sandbox","image":"i:1"}]}}'
t_check "webhook active" t_wait_for \
        "echo '$probe_pod' | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.containers | length == 2' >/dev/null" 30

# What the webhook adds, taken away again: the driver container, the two
# volumes, the agent's hangar-home mount, shareProcessNamespace. Arrays the
# removal leaves empty were absent before.
STRIP='.spec
        | .containers |= map(select(.name != "hangar-driver")
                | if .name == "sandbox" then (.volumeMounts |= ((. // []) | map(select(.name != "hangar-home")))) else . end
                | if .volumeMounts == [] then del(.volumeMounts) else . end)
        | .volumes |= (. // [] | map(select(.name != "hangar-home" and .name != "hangar-ctl")))
        | if .volumes == [] then del(.volumes) else . end
        | del(.shareProcessNamespace)'
for m in "$HERE"/manifests/*.yaml; do
        name=$(basename "$m" .yaml)
        kubectl create -n zoo --dry-run=client -o json -f "$m" >"$name.json" || { t_fail "$name: not a manifest"; continue; }
        # The same pod, not selected: the webhook never sees it.
        jq '.metadata.labels["hangar.dev/sandbox"] = "false" |
            if .metadata.name then .metadata.name += "-plain" else .metadata.generateName += "plain-" end' \
                "$name.json" >"$name.plain.json"
        if ! kubectl create -n zoo -o json -f "$name.json" >"$name.stored.json" 2>"$name.err"; then
                t_fail "$name: the API server refused the injected pod: $(head -c 300 "$name.err")"
                continue
        fi
        kubectl create -n zoo -o json -f "$name.plain.json" >"$name.plain.stored.json" 2>>"$name.err" ||
                { t_fail "$name: plain pod refused: $(head -c 300 "$name.err")"; continue; }
        t_eq "$name: injected" injected \
                "$(jq -r '.metadata.annotations["hangar.dev/driver-sidecar-reason"]' "$name.stored.json")"
        t_eq "$name: the driver is the last container, in the agent's image" \
                "$(jq -r '.spec.containers[] | select(.name == "sandbox") | .image' "$name.stored.json")" \
                "$(jq -r '.spec.containers[-1] | select(.name == "hangar-driver") | .image' "$name.stored.json")"
        t_eq "$name: shareProcessNamespace false" false "$(jq -r '.spec.shareProcessNamespace' "$name.stored.json")"
        t_check "$name: the rest of the spec is the plain pod's, after the API server's defaulting on both" \
                diff -u <(jq -S "$STRIP" "$name.plain.stored.json") <(jq -S "$STRIP" "$name.stored.json")
        # (kubectl's default container: the manifest's own, else the agent's)
        DC=kubectl.kubernetes.io/default-container
        t_check "$name: annotations are the manifest's plus the webhook's two and the default container" \
                diff -u <(jq -S --arg dc "$DC" '.metadata.annotations // {} | .[$dc] //= "sandbox"' "$name.plain.stored.json") \
                <(jq -S '.metadata.annotations | with_entries(select(.key | (startswith("hangar.dev/") or startswith("dev.gvisor.spec.mount.hangar-")) | not))' "$name.stored.json")
        # Under gVisor, also the shim's mount annotations for hangar's two volumes.
        want_gvisor=0
        [ "$(jq -r '.spec.runtimeClassName // ""' "$name.stored.json")" = gvisor ] && want_gvisor=6
        t_eq "$name: gVisor's mount annotations for hangar's volumes when under gVisor" "$want_gvisor" \
                "$(jq '[.metadata.annotations | keys[] | select(startswith("dev.gvisor.spec.mount.hangar-"))] | length' "$name.stored.json")"
        "$PROBE" spec --pod-file "$name.stored.json" >"$name.spec.json" 2>&1
        t_eq "$name: the stored pod passes hangar-probe spec" pass "$(jq -r .result "$name.spec.json" 2>/dev/null)"
done
t_end
