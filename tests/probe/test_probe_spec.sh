#!/usr/bin/env bash
# hangar-probe spec: a pod's spec against the shape the webhook injects.
# The webhook's own output passes; each fault the design cares about,
# written into that output, fails with the right code; and the same check
# reads pods through a real kube-apiserver (libcurl, kubeconfig).
# usage: test_probe_spec.sh HANGAR_WEBHOOK HANGAR_PROBE TOOLS_BIN
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
TOOLS_BIN=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "hangar-probe spec (files and the real API)"
cd "$T_TMP" || exit 1

# The manifest sets no runAsUser: its image's USER decides, which no spec
# shows, so it fails (on the uid alone) until the pod says who it runs as.
"$WEBHOOK" inject -f "$ROOT/tests/golden/cases/existing-volumes/pod.yaml" >no-uid.json 2>/dev/null
"$PROBE" spec --pod-file no-uid.json >no-uid.report.json
t_eq "the webhook's output without a runAsUser fails (exit 1)" 1 "$?"
t_eq "... on the agent's unknown uid alone" spec.agent-uid \
        "$(jq -r '[.checks[] | select(.status == "fail") | .code] | unique | join(",")' no-uid.report.json)"
jq '.spec.securityContext.runAsUser = 1000' no-uid.json >injected.json
"$PROBE" spec --pod-file injected.json >ok.json
t_eq "the webhook's output with the pod's runAsUser passes (exit 0)" 0 "$?"
t_eq "the webhook's output passes" pass "$(jq -r .result ok.json)"
for c in "$ROOT"/tests/golden/cases/*/expected.json; do
        name=$(basename "$(dirname "$c")")
        status=$(jq -r '.metadata.annotations["hangar.dev/driver-sidecar"] // "none"' "$c")
        [ "$status" = injected ] || continue
        cfg=$(dirname "$c")/config.yaml
        [ -f "$cfg" ] || cfg=$ROOT/tests/golden/default-config.yaml
        # Those without the pod's uid get one (the uid rule is above).
        jq '.spec.securityContext.runAsUser //= 1000' "$c" >"golden-$name.json"
        t_eq "golden $name (injected) passes" pass \
                "$("$PROBE" spec --pod-file "golden-$name.json" --config "$cfg" | jq -r .result)"
done

# fault NAME JQ_EDIT EXPECTED_CODE
fault() {
        jq "$2" injected.json >"$1.pod.json"
        "$PROBE" spec --pod-file "$1.pod.json" >"$1.json"
        local rc=$?
        t_eq "$1: exit 1" 1 "$rc"
        t_check "$1: caught as $3" \
                bash -c "jq -e '[.checks[] | select(.status == \"fail\") | .code] | index(\"$3\")' '$1.json' >/dev/null"
}
D='(.spec.containers[] | select(.name == "hangar-driver"))'
A='(.spec.containers[] | select(.name == "sandbox"))'
fault driver-agent-uid "$D.securityContext.runAsUser = 1000" spec.driver
fault driver-root "$D.securityContext.runAsUser = 0" spec.driver
fault driver-escalation "$D.securityContext.allowPrivilegeEscalation = true" spec.driver
fault driver-writable-root "$D.securityContext.readOnlyRootFilesystem = false" spec.driver
fault driver-caps "$D.securityContext.capabilities = {add: [\"SYS_ADMIN\"]}" spec.driver
fault driver-caps-added "$D.securityContext.capabilities.add = [\"SYS_PTRACE\"]" spec.driver
fault driver-proc-unmasked "$D.securityContext.procMount = \"Unmasked\"" spec.driver
fault agent-with-ctl "$A.volumeMounts += [{name: \"hangar-ctl\", mountPath: \"/ctl\"}]" spec.mount
fault agent-home-rw "($A.volumeMounts[] | select(.name == \"hangar-home\")).readOnly = false" spec.mount
fault shared-pid ".spec.shareProcessNamespace = true" spec.share-process-namespace
fault host-pid ".spec.hostPID = true" spec.host-pid
fault agent-ptrace "$A.securityContext.capabilities = {add: [\"SYS_PTRACE\"]}" spec.agent-capabilities
fault privileged "$A.securityContext.privileged = true" spec.privileged
fault agent-as-driver "$A.securityContext.runAsUser = 1001" spec.agent-uid
fault ctl-on-disk "(.spec.volumes[] | select(.name == \"hangar-ctl\")).emptyDir = {}" spec.volume
fault no-driver "del($D)" spec.no-driver
fault init-mounts-ctl ".spec.initContainers = [{name: \"i\", image: \"x\", volumeMounts: [{name: \"hangar-ctl\", mountPath: \"/c\"}]}]" spec.mount
# The driver in any other member than its mounts.
fault driver-command "$D.command = [\"sh\", \"-c\", \"x\"]" spec.driver
fault driver-args "$D.args = [\"x\"]" spec.driver
fault driver-poststart "$D.lifecycle = {postStart: {exec: {command: [\"sh\"]}}}" spec.driver
fault driver-liveness "$D.livenessProbe = {exec: {command: [\"sh\"]}}" spec.driver
fault driver-env "$D.env = [{name: \"LD_PRELOAD\", value: \"/tmp/x.so\"}]" spec.driver
fault driver-envfrom "$D.envFrom = [{secretRef: {name: \"s\"}}]" spec.driver
fault driver-workdir "$D.workingDir = \"/tmp\"" spec.driver
fault driver-stdin "$D.stdin = true | $D.tty = true" spec.driver
fault driver-ports "$D.ports = [{containerPort: 80}]" spec.driver
fault driver-image "$D.image = \"evil:1\"" spec.driver
fault other-writes-home ".spec.containers += [{name: \"o\", image: \"x\", securityContext: {runAsUser: 2000}, volumeMounts: [{name: \"hangar-home\", mountPath: \"/h\"}]}]" spec.mount
fault init-reads-home ".spec.initContainers = [{name: \"i\", image: \"x\", securityContext: {runAsUser: 2000}, volumeMounts: [{name: \"hangar-home\", mountPath: \"/h\", readOnly: true}]}]" spec.mount
fault ephemeral-targets-driver ".spec.ephemeralContainers = [{name: \"dbg\", image: \"x\", targetContainerName: \"hangar-driver\", securityContext: {runAsUser: 2000}}]" spec.target-driver
fault other-as-driver ".spec.containers += [{name: \"o\", image: \"x\", securityContext: {runAsUser: 1001}}]" spec.uid
fault init-as-root ".spec.initContainers = [{name: \"i\", image: \"x\", securityContext: {runAsUser: 0}}]" spec.uid
fault agent-no-uid "del(.spec.securityContext.runAsUser)" spec.agent-uid
fault other-caps ".spec.containers += [{name: \"o\", image: \"x\", securityContext: {runAsUser: 2000, capabilities: {add: [\"NET_ADMIN\"]}}}]" spec.capabilities
fault host-network ".spec.hostNetwork = true" spec.host-network
fault host-ipc ".spec.hostIPC = true" spec.host-ipc

t_eq "unreadable pod file: inconclusive (3)" 3 "$("$PROBE" spec --pod-file /nonexistent >/dev/null 2>&1; echo $?)"

# Through a real API server: the stored pod, read with the admin kubeconfig.
if [ -z "$TOOLS_BIN" ] || [ ! -x "$TOOLS_BIN/kube-apiserver" ]; then
        t_fail "kube-apiserver not found in '$TOOLS_BIN'"
        t_end
fi
HANGAR_K8S_BIN=$TOOLS_BIN "$ROOT/scripts/control-plane.sh" start "$T_TMP/cp" >cp.log 2>&1 || { cat cp.log; exit 1; }
trap 't_main_shell || exit; "$ROOT/scripts/control-plane.sh" stop "$T_TMP/cp" >/dev/null 2>&1; t_cleanup' EXIT
KC=$T_TMP/cp/kubeconfig
printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n' |
        "$TOOLS_BIN/kubectl" --kubeconfig "$KC" create -f - >/dev/null
jq '.metadata.name = "in-shape" | .metadata.namespace = "default"' injected.json |
        "$TOOLS_BIN/kubectl" --kubeconfig "$KC" create -f - >/dev/null
jq '.metadata.name = "out-of-shape" | .metadata.namespace = "default"' shared-pid.pod.json |
        "$TOOLS_BIN/kubectl" --kubeconfig "$KC" create -f - >/dev/null
t_eq "API: stored injected pod passes" pass \
        "$("$PROBE" spec --name in-shape --namespace default --kubeconfig "$KC" | jq -r .result)"
t_eq "API: stored pod out of shape fails" fail \
        "$("$PROBE" spec --name out-of-shape --namespace default --kubeconfig "$KC" | jq -r .result)"
t_eq "API: missing pod is inconclusive (3)" 3 \
        "$("$PROBE" spec --name nope --namespace default --kubeconfig "$KC" >/dev/null 2>api.err; echo $?)"
t_check "API: missing pod says why ($(cat api.err))" grep -q "not found" api.err

# In a cluster: no kubeconfig, the pod's service account instead (token, CA
# and namespace in the standard directory, set up in a private mount
# namespace over a tmpfs /run) and KUBERNETES_SERVICE_HOST/PORT. RBAC lets
# "prober" get pods and nothing else; "nobody" may do nothing.
K=("$TOOLS_BIN/kubectl" --kubeconfig "$KC" -n default)
"${K[@]}" create serviceaccount prober >/dev/null
"${K[@]}" create serviceaccount nobody >/dev/null
"${K[@]}" create role pod-reader --verb=get --resource=pods >/dev/null
"${K[@]}" create rolebinding prober --role=pod-reader --serviceaccount=default:prober >/dev/null
API_PORT=$(sed -n 's|^export HANGAR_APISERVER_URL=https://127.0.0.1:||p' "$T_TMP/cp/env")
for sa in prober nobody; do
        mkdir -p "sa-$sa"
        cp "$T_TMP/cp/pki/ca.crt" "sa-$sa/ca.crt"
        "${K[@]}" create token "$sa" >"sa-$sa/token"
        printf default >"sa-$sa/namespace"
done
in_cluster() { # SA ARGS...: hangar-probe spec ARGS as a pod of service account SA
        local sa=$1
        shift
        # shellcheck disable=SC2016 # expanded by the shell inside the namespace
        unshare --mount bash -c '
                mount --make-rprivate / && mount -t tmpfs tmpfs /run &&
                mkdir -p /run/secrets/kubernetes.io/serviceaccount &&
                cp "$0"/* /run/secrets/kubernetes.io/serviceaccount/ &&
                exec env -u KUBECONFIG KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$1" "$2" spec "${@:3}"
        ' "$T_TMP/sa-$sa" "$API_PORT" "$PROBE" "$@"
}
t_eq "in cluster: the service account reads the stored pod (its namespace by default)" pass \
        "$(in_cluster prober --name in-shape 2>in-cluster.err | jq -r .result 2>/dev/null)"
t_eq "in cluster: a pod out of shape fails" fail \
        "$(in_cluster prober --name out-of-shape --namespace default 2>/dev/null | jq -r .result 2>/dev/null)"
in_cluster nobody --name in-shape >/dev/null 2>forbidden.err
t_eq "in cluster: a service account without RBAC is inconclusive (3)" 3 $?
t_check "... and says the API server refused it ($(head -c 160 forbidden.err))" grep -qi "forbidden\|403" forbidden.err
t_end
