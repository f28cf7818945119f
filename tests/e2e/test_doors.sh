#!/usr/bin/env bash
# The doors into an injected pod after CREATE, attacked through a real
# kube-apiserver the way a user with ordinary namespace RBAC would: kubectl
# debug --target, ephemeral containers mounting hangar's volumes or running
# as the driver, kubectl set image, annotate, label, exec and attach into
# hangar-driver, port-forward. Every attack is run as "mallory", who holds a
# Role granting everything on pods and their subresources in the namespace
# (`kubectl --as`, so RBAC and admission see mallory, not the admin). Each
# attack must be refused with its reason; the same requests by the identity
# the chart lists (guard.driverUsers) pass admission. Exec and attach into
# hangar-driver are refused by the chart's ValidatingAdmissionPolicy (the
# API server itself) and never sent to the webhook. Also: `hangar-webhook
# review --validate` answers the server's reviews the same way, and with the
# webhook down the doors stay shut (failurePolicy Fail) while what is not
# hangar's goes on: exec and attach (the policy), UPDATEs and status writes
# of other pods (matchConditions, counted by the API server as exclusions),
# port-forward out of scope.
# No node runs here: an exec that passes admission then fails for want of a
# host, which tells it apart from a refusal.
# usage: test_doors.sh HANGAR_WEBHOOK TOOLS_BIN
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/doorslib.sh"
t_begin "doors after CREATE through the real API server"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

# shellcheck disable=SC2119 # the default control plane
doors_up
t_eq "the chart registered the doors' ValidatingWebhookConfiguration" \
        "updates.driver-sidecar.hangar.dev connect.driver-sidecar.hangar.dev status.driver-sidecar.hangar.dev creates.driver-sidecar.hangar.dev" \
        "$(kubectl get validatingwebhookconfigurations -l app.kubernetes.io/instance=hangar -o json |
                jq -r '[.items[0].webhooks[].name] | join(" ")')"

pod box | kubectl create -f - >/dev/null
pod plain false | kubectl create -f - >/dev/null
# A namespace that did not opt in (the chart's scope), with an ordinary pod.
kubectl create namespace elsewhere >/dev/null
pod bystander false | jq '.metadata.namespace = "elsewhere"' | kubectl create -f - >/dev/null
t_eq "the sandbox pod is injected" '["sandbox","hangar-driver"]' \
        "$(kubectl get pod -n $NS box -o json | jq -c '[.spec.containers[].name]')"
doors_wait

# admitted WHAT CMD...: admission lets it through (it may fail later for want of a node).
admitted() {
        local what=$1 out
        shift
        out=$("$@" 2>&1)
        # shellcheck disable=SC2016 # $1 is the inner shell's
        t_check "admitted: $what" bash -c '! grep -Eq "denied (the )?request" <<<"$1"' _ "$out"
}

# Ephemeral containers (what `kubectl debug` sends).
refused "kubectl debug --target=hangar-driver" ephemeral-container \
        kubectl debug -n $NS box --image=busybox --target=hangar-driver --profile=restricted "${M[@]}" -- true
ephemeral() { # NAME CONTAINER_JSON: the patch kubectl debug makes, written out
        jq -n --arg n "$1" --argjson c "$2" '{spec: {ephemeralContainers: [{name: $n, image: "busybox"} + $c]}}'
}
refused "ephemeral container mounting hangar-ctl" ephemeral-container \
        kubectl patch -n $NS pod box --subresource=ephemeralcontainers --type=strategic "${M[@]}" -p \
        "$(ephemeral e1 '{"volumeMounts":[{"name":"hangar-ctl","mountPath":"/x"}],"securityContext":{"allowPrivilegeEscalation":false}}')"
refused "ephemeral container mounting hangar-home read-only" ephemeral-container \
        kubectl patch -n $NS pod box --subresource=ephemeralcontainers --type=strategic "${M[@]}" -p \
        "$(ephemeral e2 '{"volumeMounts":[{"name":"hangar-home","mountPath":"/x","readOnly":true}],"securityContext":{"allowPrivilegeEscalation":false}}')"
refused "ephemeral container as the driver's uid" ephemeral-container \
        kubectl patch -n $NS pod box --subresource=ephemeralcontainers --type=strategic "${M[@]}" -p \
        "$(ephemeral e3 '{"securityContext":{"runAsUser":1001,"allowPrivilegeEscalation":false}}')"
refused "ephemeral container as root" ephemeral-container \
        kubectl patch -n $NS pod box --subresource=ephemeralcontainers --type=strategic "${M[@]}" -p \
        "$(ephemeral e4 '{"securityContext":{"runAsUser":0,"allowPrivilegeEscalation":false}}')"
refused "ephemeral container adding SYS_PTRACE" ephemeral-container \
        kubectl patch -n $NS pod box --subresource=ephemeralcontainers --type=strategic "${M[@]}" -p \
        "$(ephemeral e5 '{"securityContext":{"capabilities":{"add":["SYS_PTRACE"]},"allowPrivilegeEscalation":false}}')"
refused "privileged ephemeral container" ephemeral-container \
        kubectl patch -n $NS pod box --subresource=ephemeralcontainers --type=strategic "${M[@]}" -p \
        "$(ephemeral e6 '{"securityContext":{"privileged":true}}')"
refused "ephemeral container free to escalate (setuid in its image)" ephemeral-container \
        kubectl debug -n $NS box --image=busybox "${M[@]}" -- true
admitted "kubectl debug --profile=restricted beside the agent, as the pod's uid" \
        kubectl debug -n $NS box --image=busybox --profile=restricted --container=dbg "${M[@]}" -- true
t_eq "the harmless ephemeral container is stored" dbg \
        "$(kubectl get pod -n $NS box -o json | jq -r '[.spec.ephemeralContainers[]?.name] | join(",")')"
admitted "kubectl debug --target on a pod without the sidecar" \
        kubectl debug -n $NS plain --image=busybox --target=sandbox "${M[@]}" -- true

# UPDATE: the driver, the image it runs, hangar's record and label.
refused "kubectl set image hangar-driver" driver-changed \
        kubectl set image -n $NS pod/box hangar-driver=registry.example/evil:1 "${M[@]}"
refused "kubectl set image of the agent (the driver runs the agent's image)" driver-changed \
        kubectl set image -n $NS pod/box sandbox=registry.example/agent-env:2 "${M[@]}"
refused "hangar's own identity cannot change the driver either" driver-changed \
        kubectl set image -n $NS pod/box hangar-driver=registry.example/evil:1 "${H[@]}"
refused "removing the injected annotation" hangar-metadata \
        kubectl annotate -n $NS pod box hangar.dev/driver-sidecar- "${M[@]}"
refused "rewriting the reason annotation" hangar-metadata \
        kubectl annotate -n $NS pod box hangar.dev/driver-sidecar-reason=x --overwrite "${M[@]}"
refused "removing the sandbox label" hangar-metadata \
        kubectl label -n $NS pod box hangar.dev/sandbox- "${M[@]}"
refused "forging the injected annotation on a plain pod" hangar-metadata \
        kubectl annotate -n $NS pod plain hangar.dev/driver-sidecar=injected "${M[@]}"
refused "resizing hangar-driver" driver-changed \
        kubectl patch -n $NS pod box --subresource=resize --type=strategic "${M[@]}" -p \
        '{"spec":{"containers":[{"name":"hangar-driver","resources":{"requests":{"cpu":"10m"}}}]}}'
admitted "an unrelated label on the injected pod" kubectl label -n $NS pod box team=a "${M[@]}"

# pods/status: the API server keeps the spec but takes the labels and
# annotations a status write carries.
status_patch() { kubectl patch -n $NS pod "$1" --subresource=status --type=merge "${M[@]}" -p "$2"; }
refused "clearing the injected annotation through pods/status" hangar-metadata \
        status_patch box '{"metadata":{"annotations":{"hangar.dev/driver-sidecar":null}}}'
refused "dropping the sandbox label through pods/status" hangar-metadata \
        status_patch box '{"metadata":{"labels":{"hangar.dev/sandbox":null}}}'
refused "forging the injected annotation on a plain pod through pods/status" hangar-metadata \
        status_patch plain '{"metadata":{"annotations":{"hangar.dev/driver-sidecar":"injected"}}}'
admitted "a status write (what the kubelet sends)" \
        status_patch box '{"status":{"conditions":[{"type":"doors.example/checked","status":"True"}]}}'
admitted "an unrelated label through pods/status" status_patch box '{"metadata":{"labels":{"team":"b"}}}'
t_eq "hangar's record and label are as injected" "injected true" \
        "$(kubectl get pod -n $NS box -o json | jq -r '"\(.metadata.annotations["hangar.dev/driver-sidecar"]) \(.metadata.labels["hangar.dev/sandbox"])"')"

# gVisor's annotations: the webhook writes dev.gvisor.spec.mount.hangar-{ctl,home}.*
# on a gVisor pod (hangar-ctl a tmpfs inside the sandbox), and the kubelet hands
# the pod's annotations as they are then to every sandbox it makes for it (one
# that died is made again), so they, and every dev.gvisor.* one, are fixed.
kubectl apply -f - >/dev/null <<EOF
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
EOF
pod gbox | jq '.spec.runtimeClassName = "gvisor"' | kubectl create -f - >/dev/null
gvisor_annotations() {
        kubectl get pod -n $NS gbox -o json |
                jq -c '.metadata.annotations | with_entries(select(.key | startswith("dev.gvisor.")))'
}
GVISOR_AS_INJECTED=$(gvisor_annotations)
t_eq "the gVisor pod carries hangar's mount annotations" "tmpfs bind" \
        "$(jq -r '"\(.["dev.gvisor.spec.mount.hangar-ctl.type"]) \(.["dev.gvisor.spec.mount.hangar-home.type"])"' <<<"$GVISOR_AS_INJECTED")"
refused "kubectl annotate --overwrite: hangar-ctl's mount type bind (the gofer would serve it from the node)" hangar-metadata \
        kubectl annotate -n $NS pod gbox --overwrite dev.gvisor.spec.mount.hangar-ctl.type=bind "${M[@]}"
refused "removing hangar-home's share annotation" hangar-metadata \
        kubectl annotate -n $NS pod gbox dev.gvisor.spec.mount.hangar-home.share- "${M[@]}"
refused "a new mount hint naming hangar-ctl's host directory" hangar-metadata \
        kubectl annotate -n $NS pod gbox \
        "dev.gvisor.spec.mount.evil.source=/var/lib/kubelet/pods/x/volumes/kubernetes.io~empty-dir/hangar-ctl" "${M[@]}"
refused "a runsc flag annotation" hangar-metadata \
        kubectl annotate -n $NS pod gbox dev.gvisor.flag.directfs=false "${M[@]}"
refused "kubectl patch of hangar-ctl's mount options (its size= gone)" hangar-metadata \
        kubectl patch -n $NS pod gbox --type=merge "${M[@]}" -p \
        '{"metadata":{"annotations":{"dev.gvisor.spec.mount.hangar-ctl.options":"rw"}}}'
refused "hangar-ctl's mount type through pods/status" hangar-metadata \
        status_patch gbox '{"metadata":{"annotations":{"dev.gvisor.spec.mount.hangar-ctl.type":"bind"}}}'
refused "hangar's own identity cannot change them either" hangar-metadata \
        kubectl annotate -n $NS pod gbox --overwrite dev.gvisor.spec.mount.hangar-ctl.type=bind "${H[@]}"
refused "a dev.gvisor annotation on the injected runc pod" hangar-metadata \
        kubectl annotate -n $NS pod box dev.gvisor.spec.mount.hangar-ctl.type=bind "${M[@]}"
admitted "an unrelated annotation on the gVisor pod" \
        kubectl annotate -n $NS pod gbox team.example/owner=a "${M[@]}"
admitted "dev.gvisor annotations on a pod without the sidecar" \
        kubectl annotate -n $NS pod plain dev.gvisor.flag.directfs=false "${M[@]}"
t_eq "the gVisor pod's dev.gvisor.* annotations are as injected" "$GVISOR_AS_INJECTED" "$(gvisor_annotations)"

# CREATE of a copy: kubectl debug --copy-to drops the labels and annotations
# (so the mutating webhook never sees it) and shares the PID namespace, with
# a debug container beside the copied hangar-driver.
refused "kubectl debug --copy-to --share-processes (a copy of hangar-driver, unlabelled)" conflict \
        kubectl debug -n $NS box --copy-to=box-copy --image=busybox --share-processes --attach=false "${M[@]}" -- true
refused "kubectl debug --copy-to --share-processes=false (still hangar-driver without its record)" conflict \
        kubectl debug -n $NS box --copy-to=box-copy2 --image=busybox --share-processes=false --attach=false "${M[@]}" -- true
refused "kubectl debug --copy-to --keep-labels (the mutating webhook's conflict)" "which hangar reserves" \
        kubectl debug -n $NS box --copy-to=box-copy3 --keep-labels --image=busybox --attach=false "${M[@]}" -- true
refused "a copy marked injected with hangar-ctl on the node's disk" conflict \
        bash -c "kubectl get pod -n $NS box -o json | jq 'del(.metadata.labels, .metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.managedFields, .spec.ephemeralContainers, .status) | .metadata.name = \"box-host\" | .spec.volumes |= map(if .name == \"hangar-ctl\" then {name, hostPath: {path: \"/tmp/hangar-ctl\"}} else . end)' | kubectl create -f - --as mallory"
t_eq "no copy was stored" "" \
        "$(kubectl get pods -n $NS -o json | jq -r '[.items[].metadata.name | select(startswith("box-"))] | join(" ")')"
admitted "kubectl debug --copy-to of a pod without the sidecar" \
        kubectl debug -n $NS plain --copy-to=plain-copy --image=busybox --share-processes --attach=false "${M[@]}" -- true
t_eq "the driver's image is unchanged" registry.example/agent-env:1.2 \
        "$(kubectl get pod -n $NS box -o json | jq -r '.spec.containers[] | select(.name=="hangar-driver") | .image')"

# CONNECT: exec, attach (the driver-exec policy), port-forward (the webhook).
refused "kubectl exec -c hangar-driver" driver-exec kubectl exec -n $NS box -c hangar-driver "${M[@]}" -- id
refused "kubectl exec -c hangar-driver with stdin" driver-exec \
        kubectl exec -i -n $NS box -c hangar-driver "${M[@]}" -- sh </dev/null
refused "kubectl attach -c hangar-driver" driver-exec kubectl attach -n $NS box -c hangar-driver "${M[@]}"
refused "cluster-admin too (not listed)" driver-exec kubectl exec -n $NS box -c hangar-driver -- id
refused "port-forward to the injected pod (the driver's loopback)" port-forward \
        kubectl get --raw "/api/v1/namespaces/$NS/pods/box/portforward?ports=1" "${M[@]}"
admitted "kubectl exec -c sandbox (the agent's own container)" kubectl exec -n $NS box -c sandbox "${M[@]}" -- id
admitted "exec -c hangar-driver by hangar's listed identity" \
        kubectl exec -n $NS box -c hangar-driver "${H[@]}" -- id
admitted "port-forward by hangar's listed identity" \
        kubectl get --raw "/api/v1/namespaces/$NS/pods/box/portforward?ports=1" "${H[@]}"
admitted "port-forward to a pod without the sidecar" \
        kubectl get --raw "/api/v1/namespaces/$NS/pods/plain/portforward?ports=1" "${M[@]}"
out=$(kubectl exec -n $NS box "${M[@]}" -- id 2>&1)
# shellcheck disable=SC2016 # $1 is the inner shell's
t_check "exec without -c on an injected pod: kubectl picks the agent (first container)" \
        bash -c '! grep -q "denied the request" <<<"$1"' _ "$out"

# Every refusal is counted under its reason and logged; exec and attach by
# the API server, whose policy decided them without calling the webhook.
metrics=$(curl -sf --cacert pki/ca.crt "https://127.0.0.1:$PORT/metrics")
for reason in ephemeral-container driver-changed hangar-metadata port-forward conflict; do
        t_check "metric counts $reason refusals" \
                grep -Eq "hangar_webhook_reviews_total\{decision=\"denied\",reason=\"$reason\"\} [1-9]" <<<"$metrics"
        t_check "log line for a $reason refusal" grep -q "\"reason\":\"$reason\"" webhook.log
done
t_eq "no exec or attach reached the webhook (the policy holds them)" "" \
        "$(grep '"msg":"review"' webhook.log | jq -r 'select(.operation == "CONNECT") | .detail // ""' | grep -E '^(hangar driver-exec|exec |attach )')"
apiserver_metric() { # NAME MATCH: the sum of the API server's series NAME{...MATCH...}
        kubectl get --raw /metrics | grep -E "^$1\{" | grep -F -- "$2" | awk '{s += $NF} END {print s + 0}'
}
t_check "the API server counts the policy's exec and attach refusals (apiserver_validating_admission_policy_check_total)" \
        test "$(apiserver_metric apiserver_validating_admission_policy_check_total 'policy="hangar-hangar-webhook-driver-exec"' |
                cut -d. -f1)" -ge 4

# `review --validate` answers a review exactly as /validate did: the server's
# own review of an ephemeral container, captured with a second webhook config
# pointing at a recorder would need more machinery, so build the review the
# API server sends (operation, subresource, userInfo, object and oldObject).
kubectl get pod -n $NS box -o json >stored.json
kubectl get pod -n $NS gbox -o json >gstored.json
jq -n --slurpfile p stored.json '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {
        uid: "r1", kind: {group: "", version: "v1", kind: "Pod"}, resource: {group: "", version: "v1", resource: "pods"},
        subResource: "ephemeralcontainers", namespace: "sandboxes", name: "box", operation: "UPDATE",
        userInfo: {username: "mallory", groups: ["system:authenticated"]},
        object: ($p[0] | .spec.ephemeralContainers += [{name: "x", image: "busybox", targetContainerName: "hangar-driver"}]),
        oldObject: $p[0]}}' >ephemeral-review.json
t_eq "review --validate refuses the ephemeral container as the server did" "false ephemeral-container" \
        "$("$WEBHOOK" review --validate --config webhook.yaml <ephemeral-review.json | jq -r '.response | "\(.allowed) \(.auditAnnotations.reason)"')"
curl -s --cacert pki/ca.crt -H 'Content-Type: application/json' --data-binary @ephemeral-review.json \
        "https://127.0.0.1:$PORT/validate" | jq -S . >server-answer.json
"$WEBHOOK" review --validate --config webhook.yaml <ephemeral-review.json | jq -S . >offline-answer.json
t_check "review --validate and /validate give the same answer" cmp -s server-answer.json offline-answer.json
# The same for a copy's CREATE and a status write clearing the record.
jq -n --slurpfile p stored.json '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {
        uid: "r3", kind: {group: "", version: "v1", kind: "Pod"}, resource: {group: "", version: "v1", resource: "pods"},
        namespace: "sandboxes", name: "copy", operation: "CREATE", userInfo: {username: "mallory"},
        object: ($p[0] | del(.metadata.labels, .metadata.annotations, .spec.ephemeralContainers) | .spec.shareProcessNamespace = true)}}' >copy-review.json
jq -n --slurpfile p stored.json '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {
        uid: "r4", kind: {group: "", version: "v1", kind: "Pod"}, resource: {group: "", version: "v1", resource: "pods"},
        subResource: "status", namespace: "sandboxes", name: "box", operation: "UPDATE", userInfo: {username: "mallory"},
        object: ($p[0] | del(.metadata.annotations["hangar.dev/driver-sidecar"])), oldObject: $p[0]}}' >status-review.json
# The UPDATE kubectl annotate --overwrite sends for hangar-ctl's mount type.
jq -n --slurpfile p gstored.json '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {
        uid: "r5", kind: {group: "", version: "v1", kind: "Pod"}, resource: {group: "", version: "v1", resource: "pods"},
        namespace: "sandboxes", name: "gbox", operation: "UPDATE", userInfo: {username: "mallory"},
        object: ($p[0] | .metadata.annotations["dev.gvisor.spec.mount.hangar-ctl.type"] = "bind"), oldObject: $p[0]}}' >gvisor-review.json
for r in copy:conflict status:hangar-metadata gvisor:hangar-metadata; do
        t_eq "review --validate refuses the ${r%%:*} review" "false ${r#*:}" \
                "$("$WEBHOOK" review --validate --config webhook.yaml <"${r%%:*}-review.json" | jq -r '.response | "\(.allowed) \(.auditAnnotations.reason)"')"
        curl -s --cacert pki/ca.crt -H 'Content-Type: application/json' --data-binary @"${r%%:*}-review.json" \
                "https://127.0.0.1:$PORT/validate" | jq -S . >"${r%%:*}-server.json"
        "$WEBHOOK" review --validate --config webhook.yaml <"${r%%:*}-review.json" | jq -S . >"${r%%:*}-offline.json"
        t_check "... as /validate does" cmp -s "${r%%:*}-server.json" "${r%%:*}-offline.json"
done
jq -n --slurpfile p stored.json '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {
        uid: "r2", kind: {group: "", version: "v1", kind: "PodPortForwardOptions"}, resource: {group: "", version: "v1", resource: "pods"},
        subResource: "portforward", namespace: "sandboxes", name: "box", operation: "CONNECT",
        userInfo: {username: "mallory"}, object: {ports: [1]}}}' >pf-review.json
t_eq "review --validate --pod refuses the port-forward" "false port-forward" \
        "$("$WEBHOOK" review --validate --pod stored.json --config webhook.yaml <pf-review.json | jq -r '.response | "\(.allowed) \(.auditAnnotations.reason)"')"
t_eq "review --validate without the pod refuses it as undecidable" "false pod-unknown" \
        "$("$WEBHOOK" review --validate --config webhook.yaml <pf-review.json | jq -r '.response | "\(.allowed) \(.auditAnnotations.reason)"')"

# The webhook down: the doors stay shut (failurePolicy Fail), for everyone.
EXCLUDED_BEFORE=$(apiserver_metric apiserver_admission_match_condition_exclusions_total 'name="updates.driver-sidecar.hangar.dev"')
STATUS_EXCLUDED_BEFORE=$(apiserver_metric apiserver_admission_match_condition_exclusions_total 'name="status.driver-sidecar.hangar.dev"')
t_signal TERM "$WEBHOOK_PID"
wait "$WEBHOOK_PID" 2>/dev/null
# exec and attach: the policy, in the API server, decides them as before.
refused "webhook down: kubectl exec -c hangar-driver by an unlisted user" "hangar driver-exec: exec into hangar-driver" \
        kubectl exec -n $NS box -c hangar-driver "${M[@]}" -- id
refused "webhook down: kubectl attach -c hangar-driver by an unlisted user" "hangar driver-exec: attach into hangar-driver" \
        kubectl attach -n $NS box -c hangar-driver "${M[@]}"
# (admitted: the exec then fails for want of a node)
out=$(kubectl exec -n $NS box -c hangar-driver "${H[@]}" -- id 2>&1)
t_check "webhook down: hangar's identity still execs into hangar-driver (got: $(head -c 200 <<<"$out"))" \
        grep -q "does not have a host assigned" <<<"$out"
out=$(kubectl exec -n $NS box -c sandbox "${H[@]}" -- id 2>&1)
t_check "webhook down: ... and into the agent's container" grep -q "does not have a host assigned" <<<"$out"
out=$(kubectl exec -n $NS box -c sandbox "${M[@]}" -- id 2>&1)
t_check "webhook down: anyone's exec into the agent's container is admitted" grep -q "does not have a host assigned" <<<"$out"
out=$(kubectl exec -n $NS box "${M[@]}" -- id 2>&1)
t_check "webhook down: exec without -c is admitted (kubectl picks the agent)" grep -q "does not have a host assigned" <<<"$out"
out=$(kubectl get --raw "/api/v1/namespaces/$NS/pods/box/portforward?ports=1" "${H[@]}" 2>&1)
t_check "webhook down: port-forward in an opted-in namespace fails closed, for everyone" grep -q "failed calling webhook" <<<"$out"
out=$(kubectl get --raw "/api/v1/namespaces/elsewhere/pods/bystander/portforward?ports=1" 2>&1)
t_check "webhook down: port-forward in a namespace out of scope is not sent (got: $(head -c 200 <<<"$out"))" \
        grep -q "does not have a host assigned" <<<"$out"
out=$(kubectl set image -n $NS pod/box hangar-driver=registry.example/evil:1 "${M[@]}" 2>&1)
t_check "webhook down: set image fails closed" grep -q "failed calling webhook" <<<"$out"
out=$(status_patch box '{"metadata":{"annotations":{"hangar.dev/driver-sidecar":null}}}' 2>&1)
t_check "webhook down: clearing the record through pods/status fails closed" grep -q "failed calling webhook" <<<"$out"
out=$(kubectl annotate -n $NS pod gbox --overwrite dev.gvisor.spec.mount.hangar-ctl.type=bind "${M[@]}" 2>&1)
t_check "webhook down: hangar-ctl's mount annotation fails closed" grep -q "failed calling webhook" <<<"$out"
out=$(kubectl debug -n $NS box --copy-to=box-down --image=busybox --attach=false "${M[@]}" -- true 2>&1)
t_check "webhook down: a copy of hangar-driver fails closed" grep -q "failed calling webhook" <<<"$out"
# Only what hangar guards waits for the webhook: the kubelet's status
# writes and pods without hangar-driver are not sent (matchConditions).
out=$(status_patch box '{"status":{"conditions":[{"type":"doors.example/down","status":"True"}]}}' 2>&1)
# shellcheck disable=SC2016 # $1 is the inner shell's
t_check "webhook down: a status write still goes through (got: $(head -c 200 <<<"$out"))" \
        bash -c '! grep -q "failed calling webhook" <<<"$1"' _ "$out"
out=$(pod plain-down false | kubectl create -f - "${M[@]}" 2>&1)
t_check "webhook down: a pod without hangar-driver is still created (got: $(head -c 200 <<<"$out"))" \
        grep -q "created" <<<"$out"
# UPDATEs and label-changing status writes of a pod that is not hangar's are
# never sent (matchConditions on oldObject): the API server counts each as
# an exclusion of the entry.
out=$(kubectl label -n $NS pod plain team=down "${M[@]}" 2>&1)
t_check "webhook down: an UPDATE of a pod without hangar's record or driver goes through (got: $(head -c 200 <<<"$out"))" \
        grep -q "labeled" <<<"$out"
out=$(status_patch plain '{"metadata":{"labels":{"team":"status-down"}}}' 2>&1)
t_check "webhook down: a label-changing status write of that pod goes through (got: $(head -c 200 <<<"$out"))" \
        grep -q "patched" <<<"$out"
t_check "the API server counted the UPDATE as excluded from updates.* (apiserver_admission_match_condition_exclusions_total)" \
        test "$(apiserver_metric apiserver_admission_match_condition_exclusions_total 'name="updates.driver-sidecar.hangar.dev"')" -gt "$EXCLUDED_BEFORE"
t_check "... and the status write from status.*" \
        test "$(apiserver_metric apiserver_admission_match_condition_exclusions_total 'name="status.driver-sidecar.hangar.dev"')" -gt "$STATUS_EXCLUDED_BEFORE"
out=$(kubectl label -n $NS pod box downtime=yes "${M[@]}" 2>&1)
t_check "webhook down: the same UPDATE of the injected pod fails closed" grep -q "failed calling webhook" <<<"$out"

echo "  attacks through the API server: $ATTACKS tried, $HELD held"
t_eq "every attack held" "$ATTACKS" "$HELD"
t_end
