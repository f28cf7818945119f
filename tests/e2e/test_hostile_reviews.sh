#!/usr/bin/env bash
# The acceptance tester's cases beyond test_doors.sh and the manifests
# corpus, through a real kube-apiserver where one can say how it behaves,
# and straight at the webhook's HTTPS port where only a forger would send
# the review:
#   - exec/attach options as the API server builds them from odd queries
#     (container omitted or empty, given twice, percent-encoded, with a NUL)
#     and kubectl's default-container annotation pointed at hangar-driver;
#   - ephemeral containers after driver.uid/gid changed: a pod injected
#     before still runs its driver as the old ids (they were allowed);
#   - the driver as a native sidecar: exec without a container reaches the
#     agent, the doors still find the driver;
#   - pod shapes the corpus lacks (an image volume, a CSI ephemeral volume,
#     a subPathExpr, a projected volume named hangar-ctl), server-side apply
#     and dry-run updates of the driver, pods/binding;
#   - forged reviews: a port-forward naming "../../NS/pods/POD" (the webhook
#     read that other pod with its own credentials), a Content-Type with
#     junk after it (was accepted), malformed bodies (each a Status error,
#     the server still answering after them);
#   - hangar-webhook inject of a manifest whose hostNetwork is "true" (was
#     printed injected).
# usage: test_hostile_reviews.sh HANGAR_WEBHOOK TOOLS_BIN
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/doorslib.sh"
t_begin "hostile reviews and pod shapes through the real API server"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

# Offline first: inject reads a manifest as the review's reader reads a pod.
cat >wrong-type.yaml <<'EOF'
apiVersion: v1
kind: Pod
metadata: {name: p, labels: {hangar.dev/sandbox: "true"}}
spec:
  hostNetwork: "true"
  containers: [{name: sandbox, image: registry.example/agent-env:1.2}]
EOF
printf 'driverSidecar: true\n' >inject.yaml
"$WEBHOOK" inject -f wrong-type.yaml --config inject.yaml >inject.out 2>inject.err
t_eq "inject: hostNetwork \"true\" is an invalid pod, exit 1" 1 $?
t_check "inject: ... saying which member (got: $(head -c 200 inject.err))" \
        grep -q "spec.hostNetwork must be true or false" inject.err
t_check "inject: ... and prints nothing" test ! -s inject.out

# shellcheck disable=SC2119 # the default control plane
doors_up
pod box | kubectl create -f - >/dev/null
pod grouped true '{"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1001}' | kubectl create -f - >/dev/null
pod unbound false | kubectl create -f - >/dev/null
t_eq "the sandbox pods are injected, the driver as 1001" "1001 1001" \
        "$(kubectl get pods -n $NS box grouped -o json |
                jq -r '[.items[].spec.containers[] | select(.name == "hangar-driver") | .securityContext.runAsUser] | join(" ")')"
doors_wait

# admitted WHAT PATTERN CMD...: admission lets it through, and the API
# server's own answer (it fails later for want of a node) matches PATTERN.
admitted() {
        local what=$1 pattern=$2 out
        shift 2
        out=$("$@" 2>&1)
        if ! grep -q "denied the request\|failed calling webhook" <<<"$out" && grep -q -- "$pattern" <<<"$out"; then
                t_check "admitted: $what" true
        else
                t_check "admitted: $what (got: $(head -c 300 <<<"$out"))" false
        fi
}
# raw_exec POD QUERY: the POST kubectl exec makes, without the upgrade: the
# API server runs admission on the options its query decodes to, then finds
# the container (and, with no node, fails there).
raw_exec() { kubectl create --raw "/api/v1/namespaces/$NS/pods/$1/exec?$2" -f /dev/null "${M[@]}"; }

# The container as the API server reads it from the query: the first of
# two, percent-decoded; omitted or empty, it picks the only regular
# container or refuses. The guard judges the name the API server uses.
admitted "exec without a container: the API server refuses it itself (two containers)" \
        "a container name must be specified for pod box" raw_exec box "command=id"
admitted "exec with an empty container: the same" \
        "a container name must be specified for pod box" raw_exec box "command=id&container="
admitted "container=sandbox&container=hangar-driver: the API server uses the first" \
        "pod box does not have a host assigned" raw_exec box "command=id&container=sandbox&container=hangar-driver"
refused "container=hangar-driver&container=sandbox: the first is the driver" driver-exec \
        raw_exec box "command=id&container=hangar-driver&container=sandbox"
refused "container=hangar%2Ddriver (percent-encoded)" driver-exec raw_exec box "command=id&container=hangar%2Ddriver"
out=$(raw_exec box "command=id&container=hangar-driver%00" 2>&1)
# The driver-exec policy compares the name exactly, as the API server does:
# "hangar-driver\0" is not the driver, and no container has that name.
t_check "container=hangar-driver%00: not the driver's name, the API server refuses it itself (got: $(head -c 200 <<<"$out" | tr -d '\0'))" \
        grep -aq 'container hangar-driver.* is not valid for pod box' <<<"$out"
# Anyone who may patch the pod can point kubectl's default container at the
# driver (over the agent the webhook named there): kubectl then names it,
# and the guard refuses.
kubectl annotate --overwrite -n $NS pod box kubectl.kubernetes.io/default-container=hangar-driver "${M[@]}" >/dev/null
refused "kubectl exec without -c after default-container=hangar-driver" driver-exec \
        kubectl exec -n $NS box "${M[@]}" -- id
refused "kubectl attach without -c after default-container=hangar-driver" driver-exec \
        kubectl attach -n $NS box "${M[@]}"

# Updates: server-side apply and a dry run are updates like any other.
jq -n --arg ns $NS '{apiVersion: "v1", kind: "Pod", metadata: {name: "box", namespace: $ns},
        spec: {containers: [{name: "hangar-driver", image: "registry.example/evil:1"}]}}' >ssa.json
refused "server-side apply of the driver's image" driver-changed \
        kubectl apply --server-side --force-conflicts --field-manager=mallory -f ssa.json "${M[@]}"
refused "kubectl set image --dry-run=server of the driver" driver-changed \
        kubectl set image -n $NS pod/box hangar-driver=registry.example/evil:1 --dry-run=server "${M[@]}"
# pods/binding places a pod; it changes nothing of its shape.
jq -n '{apiVersion: "v1", kind: "Binding", metadata: {name: "unbound"}, target: {apiVersion: "v1", kind: "Node", name: "node-a"}}' >binding.json
admitted "pods/binding of a pod (not a door)" "" \
        kubectl create --raw "/api/v1/namespaces/$NS/pods/unbound/binding" -f binding.json "${M[@]}"
t_eq "... the binding was stored" node-a "$(kubectl get pod -n $NS unbound -o jsonpath='{.spec.nodeName}')"

# Pod shapes the corpus lacks: each puts something of the agent's at or
# under hangar's paths, or a volume by hangar's name.
shaped() { # NAME JQ_FILTER: the sandbox pod, changed
        pod "$1" | jq "$2" | kubectl create -f - "${M[@]}"
}
refused "an image volume at /var/lib/hangar/tools in the agent" "which hangar reserves" \
        shaped iv '.spec.volumes = [{name: "tools", image: {reference: "registry.example/tools:1"}}] |
                .spec.containers[0].volumeMounts = [{name: "tools", mountPath: "/var/lib/hangar/tools"}]'
refused "a CSI ephemeral volume at /var/lib//hangar-ctl/. in the agent" "which hangar reserves" \
        shaped csi '.spec.volumes = [{name: "s", csi: {driver: "secrets-store.csi.k8s.io"}}] |
                .spec.containers[0].volumeMounts = [{name: "s", mountPath: "/var/lib//hangar-ctl/."}]'
# shellcheck disable=SC2016 # $(POD_NAME) is the kubelet's, not the shell's
refused "an emptyDir by subPathExpr at /var/lib/hangar in the agent" "which hangar reserves" \
        shaped sub '.spec.volumes = [{name: "w", emptyDir: {}}] |
                .spec.containers[0].volumeMounts = [{name: "w", mountPath: "/var/lib/hangar", subPathExpr: "$(POD_NAME)"}]'
refused "a projected volume named hangar-ctl" "which hangar reserves" \
        shaped proj '.spec.volumes = [{name: "hangar-ctl", projected: {sources: [{serviceAccountToken: {path: "t"}}]}}]'

# Forged reviews, straight at the webhook: only a forger sends these, and
# the answer must still be the fail-closed one.
post() { # PATH CONTENT_TYPE FILE: prints "HTTP_CODE KIND MESSAGE"
        curl -s --cacert pki/ca.crt -o answer.json -w '%{http_code}' -H "Content-Type: $2" \
                --data-binary @"$3" "https://127.0.0.1:$PORT$1"
        echo " $(jq -r '"\(.kind) \(.message // .response.auditAnnotations.reason)"' answer.json 2>/dev/null)"
}
forged_pf() { # NAMESPACE NAME USER: a port-forward review
        jq -n --arg ns "$1" --arg n "$2" --arg u "$3" '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
                request: {uid: "f1", kind: {group: "", version: "v1", kind: "PodPortForwardOptions"},
                resource: {group: "", version: "v1", resource: "pods"}, subResource: "portforward",
                namespace: $ns, name: $n, operation: "CONNECT", userInfo: {username: $u}, object: {ports: [1]}}}'
}
forged_pf default "../../$NS/pods/box" "$HANGAR" >pf-traversal.json
post /validate application/json pf-traversal.json >/dev/null
t_eq "a port-forward naming default/../../$NS/pods/box is refused, not judged on $NS/box" \
        "false pod-unknown" "$(jq -r '.response | "\(.allowed) \(.auditAnnotations.reason)"' answer.json)"
t_check "... saying the name is none" grep -q "is not a namespace and pod name" answer.json
kubectl get pod -n $NS box -o json >stored.json
t_eq "review --validate --pod answers it as the server does" \
        "false pod-unknown" "$("$WEBHOOK" review --validate --pod stored.json --config webhook.yaml <pf-traversal.json |
                jq -r '.response | "\(.allowed) \(.auditAnnotations.reason)"')"
forged_pf $NS "box?watch=1" "$HANGAR" >pf-query.json
post /validate application/json pf-query.json >/dev/null
t_eq "a port-forward naming box?watch=1 is refused the same way" "false pod-unknown" \
        "$(jq -r '.response | "\(.allowed) \(.auditAnnotations.reason)"' answer.json)"
forged_pf $NS box "$HANGAR" >pf-listed.json
post /validate application/json pf-listed.json >/dev/null
t_eq "the same review naming $NS/box by the listed identity is allowed (the lookup works)" \
        "true listed-identity" "$(jq -r '.response | "\(.allowed) \(.auditAnnotations.reason)"' answer.json)"

pod ct | jq '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {uid: "c1",
        kind: {group: "", version: "v1", kind: "Pod"}, resource: {group: "", version: "v1", resource: "pods"},
        operation: "CREATE", namespace: "sandboxes", object: .}}' >good-review.json
t_eq "Content-Type application/json; charset=utf-8 is taken" "200 AdmissionReview injected" \
        "$(post /mutate 'application/json; charset=utf-8' good-review.json)"
t_eq "Content-Type 'application/json junk' is refused" "415 Status Content-Type must be application/json" \
        "$(post /mutate 'application/json junk' good-review.json)"
head -c 200 good-review.json >truncated.json
printf '{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {"uid": "\xff"}}' >latin.json
{ printf '%.0s[' $(seq 70); printf '%.0s]' $(seq 70); } >deep.json
jq -c '.request.uid = "x"' good-review.json | sed 's/"uid":"x"/"uid":"x","uid":"y"/' >duplicate.json
head -c 3200000 /dev/zero | tr '\0' ' ' >oversize.json
for bad in truncated:400 latin:400 deep:400 duplicate:400 oversize:413; do
        for path in /mutate /validate; do
                got=$(post $path application/json "${bad%%:*}.json")
                t_check "$path: ${bad%%:*} body is ${bad#*:} with a Status (got: $got)" \
                        grep -q "^${bad#*:} Status ." <<<"$got"
        done
done
t_eq "the server still answers after them" "200 AdmissionReview injected" \
        "$(post /mutate application/json good-review.json)"

# driver.uid and driver.gid change (an upgrade): pods injected before keep
# their driver as 1001, and an ephemeral container as 1001, or in gid 1001,
# was allowed, the guard comparing only the configured ids.
restart_webhook "driver: {uid: 2001, gid: 2001}"
# The API server's next review reaches the new process (a kept-alive
# connection to the old one is gone): a dry-run pod shows the new uid.
t_check "webhook restarted with driver.uid 2001" t_wait_for \
        "pod probe | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.containers[-1].securityContext.runAsUser == 2001' >/dev/null" 30
ephemeral() { # POD NAME SECURITY_CONTEXT
        jq -n --arg n "$2" --argjson sc "$3" \
                '{spec: {ephemeralContainers: [{name: $n, image: "busybox", securityContext: ($sc + {allowPrivilegeEscalation: false})}]}}' >ephemeral.json
        kubectl patch -n "$NS" pod "$1" --subresource=ephemeralcontainers --type=strategic "${M[@]}" \
                --patch-file ephemeral.json
}
refused "ephemeral container as the old driver's uid, after driver.uid changed" ephemeral-container \
        ephemeral box e1 '{"runAsUser": 1001}'
refused "ephemeral container in the old driver's gid, after driver.gid changed" ephemeral-container \
        ephemeral box e2 '{"runAsUser": 3000, "runAsGroup": 1001}'
refused "ephemeral container in a pod whose fsGroup is the old driver's gid" ephemeral-container \
        ephemeral grouped e3 '{"runAsUser": 3000, "runAsGroup": 3000}'
refused "ephemeral container as the configured uid still" ephemeral-container \
        ephemeral box e4 '{"runAsUser": 2001}'
admitted "an ephemeral container of its own ids beside the old driver" "" \
        ephemeral box e5 '{"runAsUser": 3000, "runAsGroup": 3000}'
pod box2 | kubectl create -f - >/dev/null
t_eq "a pod injected now runs its driver as 2001" 2001 \
        "$(kubectl get pod -n $NS box2 -o json | jq -r '.spec.containers[] | select(.name == "hangar-driver") | .securityContext.runAsUser')"
admitted "in that pod, 1001 is nobody's: an ephemeral container as 1001 passes" "" \
        ephemeral box2 e6 '{"runAsUser": 1001, "runAsGroup": 1001}'
t_eq "the ephemeral containers stored are the harmless ones" "box:e5 box2:e6" \
        "$(kubectl get pods -n $NS box box2 -o json | jq -r '[.items[] | .metadata.name as $p | .spec.ephemeralContainers[]?.name | "\($p):\(.)"] | join(" ")')"

# The driver as a native sidecar: an init container, so exec without a
# container picks the agent (the only regular one); the doors find it.
restart_webhook "driver: {nativeSidecar: true}"
t_check "webhook restarted with driver.nativeSidecar" t_wait_for \
        "pod probe | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.initContainers[-1].name == \"hangar-driver\"' >/dev/null" 30
pod nat | kubectl create -f - >/dev/null
t_eq "the native sidecar is the last init container" hangar-driver \
        "$(kubectl get pod -n $NS nat -o json | jq -r '.spec.initContainers[-1].name')"
admitted "exec without a container into the native-sidecar pod: the API server picks the agent" \
        "pod nat does not have a host assigned" raw_exec nat "command=id"
refused "exec -c hangar-driver into the native sidecar" driver-exec raw_exec nat "command=id&container=hangar-driver"
refused "port-forward to the native-sidecar pod" port-forward \
        kubectl get --raw "/api/v1/namespaces/$NS/pods/nat/portforward?ports=1" "${M[@]}"
refused "kubectl debug --target=hangar-driver (the native sidecar)" ephemeral-container \
        kubectl debug -n $NS nat --image=busybox --target=hangar-driver --profile=restricted "${M[@]}" -- true

echo "  attacks through the API server: $ATTACKS tried, $HELD held"
t_eq "every attack held" "$ATTACKS" "$HELD"
t_end
