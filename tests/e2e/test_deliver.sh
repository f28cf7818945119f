#!/usr/bin/env bash
# Delivered binaries (driver.binaries.from initContainer) through a real
# kube-apiserver: the webhook injects the init container hangar-bin, the
# memory volume hangar-bin and its read-only mounts at /opt/hangar, the
# driver runs /opt/hangar/bin/hangar-driver; the pod as the API server
# stores it passes `hangar-probe spec` (delivery set) and fails it without
# hangar-bin. The guard admits the injected pod's own updates and refuses
# what would let anyone but the copier write the binaries: another image
# for hangar-bin (kubectl set image), an ephemeral container mounting the
# volume; CREATE refuses a pod that brings a container of that name, a
# forged "injected" pod whose copier runs another image, and one whose
# other container mounts the volume writable. With the driver a native
# sidecar, hangar-bin comes first in initContainers. Every attack as
# "mallory" (a Role granting everything on pods in the namespace).
# No node runs here (tests/node/test_node_bare.sh runs the pods).
# usage: test_deliver.sh HANGAR_WEBHOOK TOOLS_BIN HANGAR_PROBE
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
PROBE=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/doorslib.sh"
t_begin "delivered binaries through the real API server"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

# shellcheck disable=SC2119 # the default control plane
doors_up
BUNDLE=localhost/hangar-bin:e2e
DELIVER="driver: {binaries: {from: initContainer, bundleImage: \"$BUNDLE\"}}"
restart_webhook "$DELIVER"
t_check "the webhook delivers (a dry-run sandbox pod comes back with hangar-bin)" t_wait_for \
        "pod probe | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.initContainers[0].name == \"hangar-bin\"' >/dev/null" 30

echo "-- the stored pod"
pod box | kubectl create -f - >/dev/null
kubectl get pod -n $NS box -o json >box.json
drv='.spec.containers[] | select(.name == "hangar-driver")'
agent='.spec.containers[] | select(.name == "sandbox")'
t_eq "hangar-bin: the bundle image, busybox's cp into /mnt/hangar-bin" \
        "$BUNDLE [\"/bin/busybox\",\"cp\",\"-R\",\"/opt/hangar/.\",\"/mnt/hangar-bin/\"]" \
        "$(jq -r '.spec.initContainers[] | select(.name == "hangar-bin") | "\(.image) \(.command | tojson)"' box.json)"
t_eq "hangar-bin: the driver's uid, no capabilities, a read-only root" "1001 true [\"ALL\"]" \
        "$(jq -r '.spec.initContainers[0].securityContext | "\(.runAsUser) \(.readOnlyRootFilesystem) \(.capabilities.drop | tojson)"' box.json)"
t_eq "the volume hangar-bin is in memory" '{"medium":"Memory","sizeLimit":"64Mi"}' \
        "$(jq -c '.spec.volumes[] | select(.name == "hangar-bin") | .emptyDir' box.json)"
t_eq "hangar-driver and the agent mount it read-only at /opt/hangar" "/opt/hangar true /opt/hangar true" \
        "$(jq -r "[($drv), ($agent)] | map(.volumeMounts[] | select(.name == \"hangar-bin\") | \"\(.mountPath) \(.readOnly)\") | join(\" \")" box.json)"
t_eq "the driver runs the bundle's program, its probes too" \
        '["/opt/hangar/bin/hangar-driver","serve"] /opt/hangar/bin/hangar-driver' \
        "$(jq -r "$drv | \"\(.command | tojson) \(.livenessProbe.exec.command[0])\"" box.json)"

echo "-- hangar-probe spec on the stored pod"
jq_true() { jq -e "$2" "$1" >/dev/null; } # FILE FILTER
"$PROBE" spec --name box --namespace $NS --set driver.binaries.from=initContainer --set driver.binaries.bundleImage=$BUNDLE >spec.json 2>spec.err
t_eq "with driver.binaries.from initContainer: every sidecar check passes" "" \
        "$(jq -r '.checks[] | select(.status == "fail") | .code + ": " + .detail' spec.json 2>&1 | head -n 3)"
"$PROBE" spec --name box --namespace $NS >spec-baked.json 2>spec-baked.err
t_check "read as agentImage, the same pod is out of shape (the driver's command, hangar-bin's mounts)" \
        jq_true spec-baked.json '[.checks[] | select(.status == "fail" and .code == "spec.driver")] | length > 0'
kubectl get pod -n $NS box -o json | jq 'del(.spec.initContainers[0])' >no-copier.json
"$PROBE" spec --pod-file no-copier.json --set driver.binaries.from=initContainer --set driver.binaries.bundleImage=$BUNDLE >spec-no-copier.json 2>&1
t_check "a pod without hangar-bin's init container is out of shape (spec.no-bin-copier)" \
        jq_true spec-no-copier.json '[.checks[] | select(.code == "spec.no-bin-copier" and .status == "fail")] | length == 1'

echo "-- the guard, after CREATE"
doors_wait
refused "kubectl set image of hangar-bin" driver-changed \
        kubectl set image -n $NS pod/box hangar-bin=attacker.example/bin:1 "${M[@]}"
refused "the same by hangar's own identity" driver-changed \
        kubectl set image -n $NS pod/box hangar-bin=attacker.example/bin:1 "${H[@]}"
refused "an ephemeral container mounting hangar-bin read-only" ephemeral-container \
        kubectl patch -n $NS pod box --subresource=ephemeralcontainers --type=strategic "${M[@]}" -p \
        '{"spec":{"ephemeralContainers":[{"name":"e1","image":"busybox","volumeMounts":[{"name":"hangar-bin","mountPath":"/x","readOnly":true}],"securityContext":{"allowPrivilegeEscalation":false}}]}}'
t_check "an ordinary update of the injected pod passes (a label of the user's)" \
        sh -c "kubectl label -n $NS pod box team=blue --as mallory >/dev/null"
t_eq "hangar-bin is as injected after all that" "$BUNDLE" \
        "$(kubectl get pod -n $NS box -o jsonpath='{.spec.initContainers[0].image}')"

echo "-- CREATE"
pod own-bin | jq '.spec.initContainers = [{name: "hangar-bin", image: "attacker.example/bin:1", command: ["true"]}]' >own-bin.json
refused "a pod bringing a container named hangar-bin" "reserves for the init container" \
        kubectl create -f own-bin.json "${M[@]}"
jq '.metadata = {name: "forged", namespace: .metadata.namespace, labels: .metadata.labels, annotations: .metadata.annotations}
        | del(.status) | .spec.initContainers[0].image = "attacker.example/bin:1"' box.json >forged.json
refused "a pod marked injected whose hangar-bin runs another image" "hangar-bin.image differs" \
        kubectl create -f forged.json "${M[@]}"
jq '.metadata = {name: "writer", namespace: .metadata.namespace, labels: .metadata.labels, annotations: .metadata.annotations}
        | del(.status) | .spec.containers += [{name: "helper", image: "registry.example/agent-env:1.2",
          volumeMounts: [{name: "hangar-bin", mountPath: "/tools"}]}]' box.json >writer.json
refused "a pod marked injected whose other container mounts hangar-bin writable" "mounts hangar-bin read-write" \
        kubectl create -f writer.json "${M[@]}"

echo "-- a native sidecar: the copy first"
restart_webhook "driver: {nativeSidecar: true, binaries: {from: initContainer, bundleImage: \"$BUNDLE\"}}"
t_check "native sidecar pods come back injected" t_wait_for \
        "pod probe2 | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.initContainers | length == 2' >/dev/null" 30
pod native | kubectl create -f - >/dev/null
t_eq "initContainers: hangar-bin, then hangar-driver (restartPolicy Always)" "hangar-bin: hangar-driver:Always" \
        "$(kubectl get pod -n $NS native -o json | jq -r '[.spec.initContainers[] | "\(.name):\(.restartPolicy // "")"] | join(" ")')"
t_eq "attacks refused: $HELD of $ATTACKS" "$ATTACKS" "$HELD"
t_end
