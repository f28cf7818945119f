#!/usr/bin/env bash
# End to end against a real kube-apiserver + etcd: the chart installed in URL
# mode pointing at hangar-webhook running locally on TLS, pods created with
# kubectl, and what the API server stored checked against docs/design/driver-sidecar.md's
# table. Also: a privileged pod and an unlabelled pod untouched, a dry-run
# create injected, workloads injected offline and accepted, a denied pod's
# message, 200 pods in parallel, the webhook
# stopped (failurePolicy Fail, then Ignore), the certificate rotated while
# pods are created, and self-managed certificates (the webhook patches the
# caBundle itself and the API server then trusts it).
# usage: test_admission.sh HANGAR_WEBHOOK TOOLS_BIN
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "admission end to end (kube-apiserver $("$TOOLS_BIN/kube-apiserver" --version | awk '{print $2}'))"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH
CHART=$ROOT/charts/hangar-webhook

"$ROOT/scripts/control-plane.sh" start "$T_TMP/cp" >cp.log 2>&1 || { cat cp.log; exit 1; }
stop_cp() { "$ROOT/scripts/control-plane.sh" stop "$T_TMP/cp" >>cp.log 2>&1; }
trap 't_main_shell || exit; stop_cp; t_cleanup' EXIT
export KUBECONFIG=$T_TMP/cp/kubeconfig
kubectl create namespace e2e >/dev/null
kubectl label namespace e2e hangar.dev/injection=enabled >/dev/null # opted in to hangar (the chart's scope)
kubectl create namespace hangar-system >/dev/null

# The webhook, locally, on TLS, its pair published Secret-style.
"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 >/dev/null
mkdir -p secret && t_secret_publish secret pki
PORT=$(t_free_port)
cat >webhook.yaml <<CFG
driverSidecar: true
server: {address: 127.0.0.1, port: $PORT, certFile: $T_TMP/secret/tls.crt, keyFile: $T_TMP/secret/tls.key, certPollSeconds: 1}
CFG
start_webhook() {
        "$WEBHOOK" serve --config webhook.yaml 2>>webhook.log &
        WEBHOOK_PID=$!
        t_cleanup_pid $WEBHOOK_PID
        t_wait_for "curl -sf --cacert pki/ca.crt https://127.0.0.1:$PORT/readyz >/dev/null" 10
}
start_webhook || { cat webhook.log; exit 1; }

helm install hangar "$CHART" -n hangar-system --set webhook.url="https://127.0.0.1:$PORT/mutate" \
        --set webhook.caBundle="$(base64 -w0 pki/ca.crt)" --set driverSidecar.enabled=true >helm.log 2>&1 ||
        { cat helm.log; exit 1; }
MWC=$(kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/instance=hangar -o name)
t_check "the chart installed a MutatingWebhookConfiguration ($MWC)" test -n "$MWC"

pod_manifest() { # NAME [LABEL_VALUE] [EXTRA_SPEC_JSON]
        jq -n --arg name "$1" --arg lv "${2:-true}" --argjson extra "${3:-{\}}" '{
                apiVersion: "v1", kind: "Pod",
                metadata: {name: $name, namespace: "e2e", labels: {"hangar.dev/sandbox": $lv}},
                spec: ({containers: [{name: "sandbox", image: "registry.example/agent-env:1.2",
                        securityContext: {runAsUser: 1000, runAsGroup: 1000}}]} + $extra)}'
}
# The API server picks up a new webhook configuration after a moment.
t_check "webhook active (a dry-run sandbox pod comes back injected)" t_wait_for \
        "pod_manifest probe | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.containers | length == 2' >/dev/null" 30

# A sandbox pod: stored exactly per the design's table.
pod_manifest sandbox-1 | kubectl create -f - >/dev/null
kubectl get pod -n e2e sandbox-1 -o json >stored.json
q() { jq -r "$@" stored.json; }
t_eq "containers: agent then hangar-driver" '["sandbox","hangar-driver"]' "$(q -c '[.spec.containers[].name]' | tr -d ' ')"
D='.spec.containers[1]'
t_eq "driver runs the agent's image" registry.example/agent-env:1.2 "$(q "$D.image")"
t_eq "driver uid 1001" 1001 "$(q "$D.securityContext.runAsUser")"
t_eq "driver gid 1001" 1001 "$(q "$D.securityContext.runAsGroup")"
t_eq "driver runAsNonRoot" true "$(q "$D.securityContext.runAsNonRoot")"
t_eq "driver allowPrivilegeEscalation false" false "$(q "$D.securityContext.allowPrivilegeEscalation")"
t_eq "driver read-only root" true "$(q "$D.securityContext.readOnlyRootFilesystem")"
t_eq "driver drops ALL capabilities" '["ALL"]' "$(q -c "$D.securityContext.capabilities.drop")"
t_eq "driver requests 50m / 64Mi" 50m/64Mi "$(q "$D.resources.requests.cpu + \"/\" + $D.resources.requests.memory")"
t_eq "driver mounts home and ctl read-write" \
        '[["hangar-home","/var/lib/hangar",false],["hangar-ctl","/var/lib/hangar-ctl",false]]' \
        "$(q -c "[$D.volumeMounts[] | [.name, .mountPath, (.readOnly // false)]]")"
t_eq "agent mounts hangar-home read-only, never hangar-ctl" '[["hangar-home","/var/lib/hangar",true]]' \
        "$(q -c '[.spec.containers[0].volumeMounts[] | select(.name | startswith("hangar")) | [.name, .mountPath, .readOnly]]')"
t_eq "hangar-home is an emptyDir" '{}' "$(q -c '.spec.volumes[] | select(.name=="hangar-home") | .emptyDir')"
t_eq "hangar-ctl is in memory, 64Mi" '{"medium":"Memory","sizeLimit":"64Mi"}' \
        "$(q -c '.spec.volumes[] | select(.name=="hangar-ctl") | .emptyDir')"
t_eq "shareProcessNamespace false" false "$(q .spec.shareProcessNamespace)"
t_eq "annotation says injected" injected "$(q '.metadata.annotations["hangar.dev/driver-sidecar"]')"

# A privileged (heavy) pod: no sidecar, a warning for whoever created it.
pod_manifest heavy true '{"containers":[{"name":"sandbox","image":"docker:dind","securityContext":{"privileged":true}}]}' |
        kubectl create -f - >/dev/null 2>heavy.err
t_eq "privileged pod keeps its one container" '["sandbox"]' "$(kubectl get pod -n e2e heavy -o json | jq -c '[.spec.containers[].name]')"
t_eq "privileged pod annotated with why" privileged-container \
        "$(kubectl get pod -n e2e heavy -o json | jq -r '.metadata.annotations["hangar.dev/driver-sidecar-reason"]')"
t_check "kubectl shows the warning" grep -q "driver sidecar not injected" heavy.err

# An unlabelled pod never reaches the webhook (objectSelector) and is untouched.
pod_manifest web false | kubectl create -f - >/dev/null
t_eq "unlabelled pod untouched" '["sandbox"] null' \
        "$(kubectl get pod -n e2e web -o json | jq -c '[.spec.containers[].name], .metadata.annotations' | tr '\n' ' ' | sed 's/ $//')"

# A dry-run create is injected too (sideEffects None).
t_eq "dry-run create injected" hangar-driver \
        "$(pod_manifest dry | kubectl create --dry-run=server -o json -f - | jq -r '.spec.containers[1].name')"
t_check "dry-run stored nothing" bash -c "! kubectl get pod -n e2e dry >/dev/null 2>&1"

# Workloads injected offline (`inject`, like istioctl kube-inject): the API
# server accepts the injected Deployment and CronJob, and a pod made from the
# stored template, as the ReplicaSet controller would make it, goes through
# the webhook untouched (already injected: never a second sidecar).
cat >workloads.yaml <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: agents}
spec:
  selector: {matchLabels: {app: agents}}
  template:
    metadata: {labels: {app: agents, hangar.dev/sandbox: "true"}}
    spec:
      containers: [{name: sandbox, image: registry.example/agent-env:1.2}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        metadata: {labels: {hangar.dev/sandbox: "true"}}
        spec:
          restartPolicy: Never
          containers: [{name: sandbox, image: registry.example/agent-env:1.2}]
EOF
"$WEBHOOK" inject -f workloads.yaml >workloads.json 2>workloads.err
t_check "inject: the API server accepts the injected Deployment and CronJob" \
        kubectl create -n e2e -f workloads.json -o name
t_eq "the stored Deployment's template has the sidecar" "sandbox hangar-driver" \
        "$(kubectl get deployment -n e2e agents -o json | jq -r '.spec.template.spec.containers | map(.name) | join(" ")')"
t_eq "the stored CronJob's template has the sidecar" "sandbox hangar-driver" \
        "$(kubectl get cronjob -n e2e nightly -o json | jq -r '.spec.jobTemplate.spec.template.spec.containers | map(.name) | join(" ")')"
kubectl get deployment -n e2e agents -o json |
        jq '{apiVersion: "v1", kind: "Pod", metadata: (.spec.template.metadata + {name: "from-template", namespace: "e2e"}),
             spec: .spec.template.spec}' | kubectl create -f - >/dev/null
t_eq "a pod from the injected template: stored as made, one sidecar" "sandbox hangar-driver injected" \
        "$(kubectl get pod -n e2e from-template -o json | jq -r '(.spec.containers | map(.name) | join(" ")) + " " + .metadata.annotations["hangar.dev/driver-sidecar-reason"]')"

# A pod the webhook denies gets its message.
if pod_manifest clash true '{"volumes":[{"name":"hangar-home","emptyDir":{}}]}' | kubectl create -f - 2>deny.err >/dev/null; then
        t_fail "a pod with its own hangar-home volume was created"
else
        t_check "denied with the webhook's message ($(head -c 160 deny.err))" \
                grep -q 'denied the request: the pod already has a volume named "hangar-home"' deny.err
fi

# Annotations a pod brings at CREATE hold for its life (dev.gvisor.* is fixed
# after CREATE): a gVisor hint for a hangar volume beyond the webhook's own, a
# hint's source at a hangar volume, a runsc flag, AppArmor for the driver other
# than runtime/default. The API server copies such an annotation onto the
# container's profile field (shown on a pod the webhook skips), so on the
# injected driver it would be the driver's profile: refused, naming the key.
pod_manifest aa-web false '{"containers":[{"name":"web","image":"img:1"}]}' |
        jq '.metadata.annotations = {"container.apparmor.security.beta.kubernetes.io/web": "unconfined"}' |
        kubectl create --dry-run=server -o json -f - >aa-web.json
t_eq "the API server copies an AppArmor annotation onto its container" Unconfined \
        "$(jq -r '.spec.containers[0].securityContext.appArmorProfile.type' aa-web.json)"
n=0
for ann in '"container.apparmor.security.beta.kubernetes.io/hangar-driver": "unconfined"' \
        '"dev.gvisor.spec.mount.hangar-ctl.x.type": "bind"' \
        '"dev.gvisor.spec.mount.data.source": "/var/lib/kubelet/pods/u/volumes/kubernetes.io~empty-dir/hangar-ctl"' \
        '"dev.gvisor.flag.network": "host"' \
        '"container.apparmor.security.beta.kubernetes.io/hangar-driver": "runtime/default"'; do
        n=$((n + 1))
        key=${ann%%\":*}
        key=${key#\"}
        if pod_manifest "brings-$n" true | jq ".metadata.annotations = {$ann}" |
                kubectl create -f - 2>brings.err >/dev/null; then
                t_fail "a pod bringing $key was created"
        else
                t_check "a pod bringing $key denied ($(head -c 200 brings.err))" \
                        grep -qF "denied the request: annotation \"$key\"" brings.err
        fi
done
# A pod-level RuntimeDefault (the driver's too, it sets none of its own) and
# a hint for the pod's own volume: injected. A pod-level Unconfined: refused.
pod_manifest aa-default true '{"securityContext":{"appArmorProfile":{"type":"RuntimeDefault"}}}' |
        jq '.metadata.annotations = {"dev.gvisor.spec.mount.data.share": "pod"}' |
        kubectl create -o json -f - >aa-default.json 2>aa-default.err
t_eq "a pod-level RuntimeDefault and a hint for the pod's own volume: injected ($(head -c 200 aa-default.err))" \
        "injected none" \
        "$(jq -r '.metadata.annotations["hangar.dev/driver-sidecar"] + " " +
                ((.spec.containers[] | select(.name == "hangar-driver") | .securityContext.appArmorProfile.type) // "none")' aa-default.json)"
if pod_manifest aa-unconfined true '{"securityContext":{"appArmorProfile":{"type":"Unconfined"}}}' |
        kubectl create -f - 2>aa-unconfined.err >/dev/null; then
        t_fail "a pod with a pod-level Unconfined AppArmor profile was injected"
else
        t_check "a pod-level Unconfined AppArmor profile denied ($(head -c 200 aa-unconfined.err))" \
                grep -qF 'spec.securityContext.appArmorProfile applies to hangar-driver' aa-unconfined.err
fi
# A copy of an injected pod (get | create) carrying one is refused too.
kubectl get pod -n e2e sandbox-1 -o json | jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .status)
        | .metadata.name = "copy-hint" | .metadata.annotations["dev.gvisor.spec.mount.hangar-home.x.type"] = "bind"' >copy-hint.json
if kubectl create -f copy-hint.json 2>copy-hint.err >/dev/null; then
        t_fail "a copy of an injected pod with a hangar-home hint was created"
else
        t_check "a copy of an injected pod with a hangar-home hint denied ($(head -c 200 copy-hint.err))" \
                grep -qF 'annotation "dev.gvisor.spec.mount.hangar-home.x.type"' copy-hint.err
fi

# A pod claiming to be injected (our annotation, a hangar-driver container)
# whose mounts are not the shape's is denied, not waved through.
forged='{"containers":[{"name":"sandbox","image":"img:1","volumeMounts":[{"name":"hangar-ctl","mountPath":"/x"}]},
        {"name":"hangar-driver","image":"img:1"}],"volumes":[{"name":"hangar-ctl","emptyDir":{}}]}'
if pod_manifest forged true "$forged" | jq '.metadata.annotations = {"hangar.dev/driver-sidecar": "injected"}' |
        kubectl create -f - 2>forged.err >/dev/null; then
        t_fail "a pod with a forged injected annotation and hangar-ctl in the agent was created"
else
        t_check "forged injected pod denied ($(head -c 200 forged.err))" \
                grep -q 'is marked hangar.dev/driver-sidecar: injected, but hangar-driver.command is missing (spec.driver)' forged.err
fi
# ... and so is one whose hangar-driver is not the shape's in another member:
# the whole spec check, not only the mounts (here: args run by the driver).
kubectl get pod -n e2e sandbox-1 -o json | jq 'del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .status)
        | .metadata.name = "forged-args" | (.spec.containers[] | select(.name == "hangar-driver")).args = ["-c", "id"]' >forged-args.json
if kubectl create -f forged-args.json 2>forged-args.err >/dev/null; then
        t_fail "a pod marked injected whose driver has args was created"
else
        t_check "forged driver (args) denied ($(head -c 200 forged-args.err))" \
                grep -q 'hangar-driver.args is not part of the shape (only the API server.s defaults may be added) (spec.driver)' forged-args.err
fi
# A pod on the node's network: no sidecar, a warning, the reason recorded.
pod_manifest hostnet true '{"hostNetwork":true}' | kubectl create -f - >/dev/null 2>hostnet.err
t_eq "hostNetwork pod keeps its one container, annotated host-network" '["sandbox"] host-network' \
        "$(kubectl get pod -n e2e hostnet -o json | jq -r '(.spec.containers | map(.name) | tojson) + " " + .metadata.annotations["hangar.dev/driver-sidecar-reason"]')"
t_check "kubectl shows the hostNetwork warning" grep -q "driver sidecar not injected: the pod shares the node's network namespace" hostnet.err

# 200 sandbox pods created in parallel: all injected, none failed.
mkdir -p many
for i in $(seq 1 200); do pod_manifest "many-$i" >"many/$i.json"; done
printf '%s\0' many/*.json | xargs -0 -P 16 -I{} sh -c 'kubectl create -f {} >/dev/null 2>>many.err || echo fail >>many.fail'
t_eq "200 parallel creates, none failed" 0 "$( [ -f many.fail ] && wc -l <many.fail || echo 0)"
t_eq "200 parallel pods all injected" 200 \
        "$(kubectl get pods -n e2e -o json | jq '[.items[] | select(.metadata.name | startswith("many-")) | select(.spec.containers[1].name == "hangar-driver")] | length')"

# Certificate rotated (same CA, Secret-style swap) while pods are created.
: >rot.fail
creator() { # PREFIX
        local i=0 end=$(($(date +%s) + 8))
        while [ "$(date +%s)" -lt "$end" ]; do
                i=$((i + 1))
                pod_manifest "$1-$i" | kubectl create -f - >/dev/null 2>>rot.err || echo "$1-$i" >>rot.fail
        done
}
for c in a b c; do creator "rot-$c" & t_cleanup_pid $!; done
for _ in 1 2 3; do
        sleep 2
        "$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 --reuse-ca >/dev/null
        t_secret_publish secret pki
done
sleep 4
rotated=$(kubectl get pods -n e2e -o json | jq '[.items[] | select(.metadata.name | startswith("rot-"))] | length')
t_eq "zero failed creates during rotation" 0 "$(wc -l <rot.fail)"
t_check "pods were created during rotation ($rotated)" test "$rotated" -gt 10
t_eq "all of them injected" "$rotated" \
        "$(kubectl get pods -n e2e -o json | jq '[.items[] | select(.metadata.name | startswith("rot-")) | select(.spec.containers[1].name == "hangar-driver")] | length')"
t_check "the rotated certificates were loaded" test "$(grep -c "serving certificate loaded" webhook.log)" -ge 4

# Webhook stopped: failurePolicy Fail refuses sandbox pods, others are fine.
t_signal TERM "$WEBHOOK_PID"; wait "$WEBHOOK_PID" 2>/dev/null
if pod_manifest down-1 | kubectl create -f - >/dev/null 2>down.err; then
        t_fail "a sandbox pod was created while the webhook was down under failurePolicy Fail"
else
        t_check "Fail: sandbox pod refused while the webhook is down ($(head -c 120 down.err))" \
                grep -q 'failed calling webhook' down.err
fi
pod_manifest down-web false | kubectl create -f - >/dev/null
t_check "Fail: unlabelled pods still start" bash -c "kubectl get pod -n e2e down-web -o name >/dev/null"
helm upgrade hangar "$CHART" -n hangar-system --reuse-values --set webhook.failurePolicy=Ignore >>helm.log 2>&1
t_check "Ignore: sandbox pod starts while the webhook is down" t_wait_for \
        "pod_manifest down-2 | kubectl create -f - >/dev/null 2>&1" 20
t_eq "Ignore: ... without the sidecar (the probe's job to refuse it)" '["sandbox"]' \
        "$(kubectl get pod -n e2e down-2 -o json | jq -c '[.spec.containers[].name]')"
helm upgrade hangar "$CHART" -n hangar-system --reuse-values --set webhook.failurePolicy=Fail >>helm.log 2>&1
start_webhook
t_check "webhook back: sandbox pods injected again" t_wait_for \
        "pod_manifest back | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.containers | length == 2' >/dev/null" 20

# Self-managed certificates: a second release (own selector) whose caBundle
# starts wrong; the webhook, given the admin kubeconfig, keeps its CA in a
# Secret and patches the caBundle, and the API server then trusts it.
SM_PORT=$(t_free_port)
helm install selfmanaged "$CHART" -n hangar-system --set webhook.url="https://127.0.0.1:$SM_PORT/mutate" \
        --set webhook.caBundle="$(base64 -w0 pki/ca.crt)" --set selector.key=hangar.dev/selfmanaged \
        --set driverSidecar.enabled=true >>helm.log 2>&1 || { tail helm.log; }
SM_MWC=$(kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/instance=selfmanaged -o jsonpath='{.items[0].metadata.name}')
# Both configurations' caBundle (same name): the doors' CREATE entry is
# called for every pod injected, so the pod needs both to trust the webhook.
cat >selfmanaged.yaml <<CFG
driverSidecar: true
selector: {key: hangar.dev/selfmanaged, value: "true"}
server: {address: 127.0.0.1, port: $SM_PORT, certFile: $T_TMP/sm-tls.crt, keyFile: $T_TMP/sm-tls.key, certPollSeconds: 1}
tls: {mode: selfManaged, secretNamespace: hangar-system, secretName: sm-tls, webhookConfigName: $SM_MWC, validatingWebhookConfigName: $SM_MWC, ipAddresses: [127.0.0.1], syncSeconds: 2}
kubeconfig: $KUBECONFIG
CFG
"$WEBHOOK" serve --config selfmanaged.yaml 2>selfmanaged.log &
SM_PID=$!
t_cleanup_pid $SM_PID
t_check "self-managed: Secret created with CA and pair" t_wait_for \
        "kubectl get secret -n hangar-system sm-tls -o json 2>/dev/null | jq -e '.data | has(\"ca.crt\") and has(\"ca.key\") and has(\"tls.crt\") and has(\"tls.key\")' >/dev/null" 15
sm_ca=$(kubectl get secret -n hangar-system sm-tls -o jsonpath='{.data.ca\.crt}')
t_check "self-managed: caBundle patched to the Secret's CA" t_wait_for \
        "[ \"\$(kubectl get mutatingwebhookconfiguration $SM_MWC -o jsonpath='{.webhooks[0].clientConfig.caBundle}')\" = '$sm_ca' ]" 15
sm_pod() { jq -n --arg n "$1" '{apiVersion:"v1",kind:"Pod",metadata:{name:$n,namespace:"e2e",labels:{"hangar.dev/selfmanaged":"true"}},spec:{containers:[{name:"sandbox",image:"img:1"}]}}'; }
t_check "self-managed: the API server trusts it (pod injected)" t_wait_for \
        "sm_pod sm-1 | kubectl create -f - >/dev/null 2>&1" 20
t_eq "self-managed: stored pod has the sidecar" hangar-driver \
        "$(kubectl get pod -n e2e sm-1 -o jsonpath='{.spec.containers[1].name}')"
# A second replica agrees: same Secret, no caBundle change, same CA.
SM2_PORT=$(t_free_port)
sed "s/port: $SM_PORT/port: $SM2_PORT/; s#$T_TMP/sm-tls#$T_TMP/sm2-tls#g" selfmanaged.yaml >selfmanaged2.yaml
rv_before=$(kubectl get mutatingwebhookconfiguration "$SM_MWC" -o jsonpath='{.metadata.resourceVersion}')
"$WEBHOOK" serve --config selfmanaged2.yaml 2>selfmanaged2.log &
t_cleanup_pid $!
t_check "second replica serves the same pair" t_wait_for "cmp -s $T_TMP/sm-tls.crt $T_TMP/sm2-tls.crt" 15
sleep 3
t_eq "second replica left the caBundle alone" "$rv_before" \
        "$(kubectl get mutatingwebhookconfiguration "$SM_MWC" -o jsonpath='{.metadata.resourceVersion}')"
t_check "second replica did not create a CA" bash -c "! grep -q 'creating the certificate Secret' selfmanaged2.log"

# Renewal: a serving certificate inside the renewal window (1 day left,
# renewBeforeDays 30) is replaced in the Secret by one replica; the CA and
# so the caBundle stay; both replicas end up serving the renewed pair.
mkdir -p short
kubectl get secret -n hangar-system sm-tls -o jsonpath='{.data.ca\.crt}' | base64 -d >short/ca.crt
kubectl get secret -n hangar-system sm-tls -o jsonpath='{.data.ca\.key}' | base64 -d >short/ca.key
"$WEBHOOK" certs --out-dir short --reuse-ca --days 1 --ip 127.0.0.1 >/dev/null
short_serial=$(openssl x509 -in short/tls.crt -noout -serial)
kubectl patch secret -n hangar-system sm-tls --type=merge -p "{\"data\":{\"tls.crt\":\"$(base64 -w0 short/tls.crt)\",\"tls.key\":\"$(base64 -w0 short/tls.key)\"}}" >/dev/null
renewed() {
        kubectl get secret -n hangar-system sm-tls -o jsonpath='{.data.tls\.crt}' | base64 -d >renewed.crt
        [ "$(openssl x509 -in renewed.crt -noout -serial)" != "$short_serial" ] &&
                openssl x509 -in renewed.crt -noout -checkend $((60 * 86400)) >/dev/null
}
t_check "a pair inside the renewal window is renewed in the Secret" t_wait_for renewed 20
t_check "the renewed pair is signed by the same CA" bash -c "openssl verify -CAfile short/ca.crt renewed.crt >/dev/null"
t_eq "the caBundle did not change" "$sm_ca" \
        "$(kubectl get mutatingwebhookconfiguration "$SM_MWC" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
t_check "both replicas serve the renewed pair" \
        t_wait_for "cmp -s renewed.crt $T_TMP/sm-tls.crt && cmp -s renewed.crt $T_TMP/sm2-tls.crt" 20
t_check "a renewal was logged" bash -c "grep -hq 'renewing the serving certificate' selfmanaged.log selfmanaged2.log"
t_check "sandbox pods still admitted after the renewal" t_wait_for "sm_pod sm-2 | kubectl create -f - >/dev/null 2>&1" 20

# A CA rotation with zero failed requests: a third release whose Secret
# starts with a CA inside the renewal window (1 day left, 30 to renew). Two
# replicas stage a new CA beside it (caBundle trusts both), switch to it one
# overlap later (the old one still trusted), retire the old one after another
# overlap; sandbox pods are created the whole time.
ROT_PORT=$(t_free_port)
ROT2_PORT=$(t_free_port)
"$WEBHOOK" certs --out-dir oldca --ca-days 1 --days 1 --ip 127.0.0.1 >/dev/null
helm install rotating "$CHART" -n hangar-system --set webhook.url="https://127.0.0.1:$ROT_PORT/mutate" \
        --set webhook.caBundle="$(base64 -w0 oldca/ca.crt)" --set selector.key=hangar.dev/rotating \
        --set driverSidecar.enabled=true >>helm.log 2>&1 || tail helm.log
ROT_MWC=$(kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/instance=rotating -o jsonpath='{.items[0].metadata.name}')
kubectl create secret generic rot-tls -n hangar-system --from-file=ca.crt=oldca/ca.crt --from-file=ca.key=oldca/ca.key \
        --from-file=tls.crt=oldca/tls.crt --from-file=tls.key=oldca/tls.key >/dev/null
for n in 1 2; do
        port=$ROT_PORT
        [ "$n" = 2 ] && port=$ROT2_PORT
        cat >"rot$n.yaml" <<CFG
driverSidecar: true
selector: {key: hangar.dev/rotating, value: "true"}
server: {address: 127.0.0.1, port: $port, certFile: $T_TMP/rot$n.crt, keyFile: $T_TMP/rot$n.key, certPollSeconds: 1}
tls: {mode: selfManaged, secretNamespace: hangar-system, secretName: rot-tls, webhookConfigName: $ROT_MWC, validatingWebhookConfigName: $ROT_MWC, ipAddresses: [127.0.0.1], syncSeconds: 1, caOverlapSeconds: 8}
kubeconfig: $KUBECONFIG
CFG
done
rot_pod() { jq -n --arg n "$1" '{apiVersion:"v1",kind:"Pod",metadata:{name:$n,namespace:"e2e",labels:{"hangar.dev/rotating":"true"}},spec:{containers:[{name:"sandbox",image:"img:1"}]}}'; }
secret_key() { kubectl get secret -n hangar-system rot-tls -o json | jq -r --arg k "$1" '.data[$k] // empty' | base64 -d; }
bundle_certs() { kubectl get mutatingwebhookconfiguration "$ROT_MWC" -o jsonpath='{.webhooks[0].clientConfig.caBundle}' | base64 -d | grep -c 'BEGIN CERTIFICATE'; }
: >rotca.fail
rot_creator() { # PREFIX SECONDS
        local i=0 end=$(($(date +%s) + $2))
        while [ "$(date +%s)" -lt "$end" ]; do
                i=$((i + 1))
                rot_pod "$1-$i" | kubectl create -f - >/dev/null 2>>rotca.err || echo "$1-$i" >>rotca.fail
        done
}
"$WEBHOOK" serve --config rot1.yaml 2>rot1.log &
t_cleanup_pid $!
"$WEBHOOK" serve --config rot2.yaml 2>rot2.log &
t_cleanup_pid $!
# The creators start once both replicas answer: a create sent before a
# replica listens is refused by the kernel, which is not the rotation's doing.
t_check "rotation: both replicas answer" t_wait_for \
        "curl -sfk https://127.0.0.1:$ROT_PORT/readyz >/dev/null && curl -sfk https://127.0.0.1:$ROT2_PORT/readyz >/dev/null" 15
rot_creator rotca-a 30 &
ROT_CREATORS=($!)
rot_creator rotca-b 30 &
ROT_CREATORS+=($!)
t_cleanup_pid "${ROT_CREATORS[0]}"
t_cleanup_pid "${ROT_CREATORS[1]}"
# The staged phase lasts one overlap (8 s): what is checked of it comes from
# one read of the Secret. Reads one after another (each a kubectl, seconds
# at load 38) straddled the switch, and the serving pair read last had
# already been reissued by the new CA.
staged_read() {
        kubectl get secret -n hangar-system rot-tls -o json >staged.json &&
                jq -e '.data["ca-next.crt"] // empty' staged.json >/dev/null
}
staged_key() { jq -r --arg k "$1" '.data[$k] // empty' staged.json | base64 -d; }
t_check "rotation: a new CA is staged beside the expiring one" t_wait_for staged_read 15
staged_key ca-next.crt >newca.crt
staged_key tls.crt >staged.crt
t_check "rotation: while staged, caBundle trusts both CAs" t_wait_for "[ \"\$(bundle_certs)\" = 2 ]" 10
t_check "rotation: the old CA still signs while staged" openssl verify -CAfile oldca/ca.crt staged.crt
t_check "rotation: one overlap later the new CA signs and the old one is 'previous'" t_wait_for \
        "secret_key ca.crt | cmp -s - newca.crt && secret_key ca-previous.crt | cmp -s - oldca/ca.crt" 20
secret_key tls.crt >switched.crt
t_check "rotation: the serving pair is reissued by the new CA" openssl verify -CAfile newca.crt switched.crt
t_check "rotation: both replicas serve the new pair" \
        t_wait_for "cmp -s switched.crt $T_TMP/rot1.crt && cmp -s switched.crt $T_TMP/rot2.crt" 15
t_check "rotation: one more overlap and the old CA is retired from the Secret and caBundle" t_wait_for \
        "[ -z \"\$(secret_key ca-previous.crt)\" ] && [ \"\$(bundle_certs)\" = 1 ]" 25
t_eq "rotation: caBundle is the new CA" "$(base64 -w0 newca.crt)" \
        "$(kubectl get mutatingwebhookconfiguration "$ROT_MWC" -o jsonpath='{.webhooks[0].clientConfig.caBundle}')"
wait "${ROT_CREATORS[@]}"
rotated_pods=$(kubectl get pods -n e2e -o json | jq '[.items[] | select(.metadata.name | startswith("rotca-"))] | length')
t_eq "rotation: zero failed creates during the rotation ($rotated_pods created; $(head -c 200 rotca.err))" 0 "$(wc -l <rotca.fail)"
t_check "rotation: pods were created throughout ($rotated_pods)" test "$rotated_pods" -gt 20
t_check "rotation: each step was logged" bash -c "cat rot1.log rot2.log | grep -q 'staging a new CA' &&
        cat rot1.log rot2.log | grep -q 'switching to the new CA' && cat rot1.log rot2.log | grep -q 'retiring the previous CA'"

t_end
