#!/usr/bin/env bash
# `hangar-webhook inject` over the manifests an admin applies: a multi-document
# stream, every workload kind with a pod template, Lists (v1 and typed), stdin.
# Each template must come out exactly as `inject` of a Pod made from it (the
# Pod path is the one the golden cases check against kubectl's JSON Patch);
# other kinds pass through byte for byte; a denied template fails the whole
# run with nothing printed.
# usage: test_inject_manifests.sh HANGAR_WEBHOOK
WEBHOOK=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "hangar-webhook inject over manifests"
cd "$T_TMP" || exit 1

# A pod template as YAML, indented by $1 spaces; $2 = the container's image.
template() {
        local pad
        pad=$(printf '%*s' "$1" '')
        sed "s/^/$pad/" <<EOF
template:
  metadata:
    labels: {app: x, hangar.dev/sandbox: "true"}
  spec:
    containers:
    - name: sandbox
      image: $2
      securityContext: {runAsUser: 1000}
EOF
}
{
        printf -- '---\n# a Service: not ours\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\nspec: {ports: [{port: 80}]}\n'
        for k in apps/v1:Deployment apps/v1:StatefulSet apps/v1:DaemonSet apps/v1:ReplicaSet v1:ReplicationController batch/v1:Job; do
                printf -- '---\napiVersion: %s\nkind: %s\nmetadata: {name: w-%s}\nspec:\n' "${k%%:*}" "${k#*:}" "${k#*:}"
                template 2 "img/${k#*:}:1"
        done
        printf -- '---\napiVersion: batch/v1\nkind: CronJob\nmetadata: {name: nightly}\nspec:\n  schedule: "0 0 * * *"\n  jobTemplate:\n    spec:\n'
        template 6 img/CronJob:1
        printf -- '---\napiVersion: v1\nkind: Pod\nmetadata: {name: plain}\nspec:\n  containers: [{name: app, image: nginx}]\n---\n'
} >stream.yaml

"$WEBHOOK" inject -f stream.yaml >out.json 2>out.err
t_eq "a stream of 9 manifests: exit 0" 0 $?
t_eq "several in, one v1 List out, in order" \
        "v1 List Service Deployment StatefulSet DaemonSet ReplicaSet ReplicationController Job CronJob Pod" \
        "$(jq -r '[.apiVersion, .kind, (.items[].kind)] | join(" ")' out.json 2>/dev/null)"
t_eq "the Service passes through untouched" '{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}' \
        "$(jq -c '.items[0]' out.json 2>/dev/null)"
t_check "the unselected Pod is named on stderr with why" \
        grep -q '^hangar-webhook inject: document 9: Pod plain: not injected (not-selected)' out.err
/usr/bin/python3 -c 'import json, sys, yaml; json.dump([d for d in yaml.safe_load_all(open(sys.argv[1])) if d], open(sys.argv[2], "w"))' \
        stream.yaml in.json || t_fail "PyYAML could not read the stream"
t_check "... and comes out unchanged (the webhook never sees unlabelled pods)" \
        diff <(jq -S '.[8]' in.json) <(jq -S '.items[8]' out.json)

# Every template equals inject of the Pod made from the input's template
# (the input read with an independent YAML reader, PyYAML, above), as its controller would
# create it: the template's metadata and spec.
i=0
for kind in Deployment StatefulSet DaemonSet ReplicaSet ReplicationController Job CronJob; do
        i=$((i + 1))
        case $kind in CronJob) p=.spec.jobTemplate.spec.template ;; *) p=.spec.template ;; esac
        jq "{apiVersion: \"v1\", kind: \"Pod\"} + (.[$i] | $p)" in.json >"pod-$kind.json"
        "$WEBHOOK" inject -f "pod-$kind.json" 2>/dev/null | jq -S '{metadata, spec}' >"want-$kind.json"
        jq -S ".items[$i] | $p" out.json >"got-$kind.json"
        t_check "$kind: its template is what inject makes of the Pod" diff -u "want-$kind.json" "got-$kind.json"
        t_eq "$kind: the template has the sidecar, in the agent's image" "sandbox hangar-driver img/$kind:1" \
                "$(jq -r "(.items[$i] | $p.spec.containers | map(.name) | join(\" \")) + \" \" + (.items[$i] | $p.spec.containers[1].image)" out.json 2>/dev/null)"
        t_eq "$kind: everything outside the template unchanged" \
                "$(jq -S ".[$i] | del($p)" in.json)" "$(jq -S ".items[$i] | del($p)" out.json)"
done

# Reinvocation: injecting the output again changes nothing.
"$WEBHOOK" inject -f out.json >again.json 2>/dev/null
t_check "injecting the output again changes nothing" diff -u <(jq -S . out.json) <(jq -S . again.json)

# One manifest in, that manifest out (not a List); stdin with -f -.
jq '.[1]' in.json | "$WEBHOOK" inject -f - >one.json 2>/dev/null
t_eq "one Deployment from stdin: a Deployment out" "Deployment 2" \
        "$(jq -r '"\(.kind) \(.spec.template.spec.containers | length)"' one.json 2>/dev/null)"

# Lists: a v1 List (kubectl get -o yaml) and a typed PodList whose items
# carry no kind (as the API serves them); Lists within Lists.
jq '{apiVersion: "v1", kind: "List", items: [.[1], {apiVersion: "v1", kind: "List", items: [.[7]]}]}' in.json >list.json
"$WEBHOOK" inject -f list.json >list.out 2>/dev/null
t_eq "a List: its items injected, nested ones too" "2 2" \
        "$(jq -r '"\(.items[0].spec.template.spec.containers | length) \(.items[1].items[0].spec.jobTemplate.spec.template.spec.containers | length)"' list.out 2>/dev/null)"
jq '{apiVersion: "v1", kind: "PodList", items: [{metadata: {name: "p", labels: {"hangar.dev/sandbox": "true"}},
        spec: {containers: [{name: "sandbox", image: "i:1"}]}}]}' -n >podlist.json
"$WEBHOOK" inject -f podlist.json >podlist.out 2>/dev/null
t_eq "a PodList: items without kind are Pods" "Pod sandbox hangar-driver" \
        "$(jq -r '.items[0] | "\(.kind) \(.spec.containers | map(.name) | join(" "))"' podlist.out 2>/dev/null)"

# A template the webhook denies: nothing printed, one line naming it.
jq '.[1].spec.template.spec.volumes = [{name: "hangar-ctl", emptyDir: {}}] | {apiVersion: "v1", kind: "List", items: .}' \
        in.json >deny.json
"$WEBHOOK" inject -f deny.json >deny.out 2>deny.err
t_eq "a denied template: exit 1" 1 $?
t_eq "... nothing on stdout" 0 "$(wc -c <deny.out)"
t_check "... one line naming the workload and the clash ($(head -c 150 deny.err))" \
        bash -c "[ \$(wc -l <deny.err) = 1 ] && grep -q 'item 2: Deployment w-Deployment: the pod already has a volume named \"hangar-ctl\"' deny.err"

# Malformed: each a one-line error and exit 1, nothing on stdout.
bad() { # DESCRIPTION FILE EXPECTED-TEXT
        "$WEBHOOK" inject -f "$2" >bad.out 2>bad.err
        local rc=$?
        t_check "$1: exit 1, nothing printed, says \"$3\" ($(head -c 120 bad.err))" \
                bash -c "[ $rc = 1 ] && [ ! -s bad.out ] && [ \$(wc -l <bad.err) = 1 ] && grep -qF -- '$3' bad.err"
}
printf -- '---\n---\n# nothing\n' >empty.yaml
bad "only empty documents" empty.yaml "no manifest"
printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1}\n' >notemplate.yaml
bad "a Deployment without a pod template" notemplate.yaml "Deployment d: no pod template"
printf 'apiVersion: v1\nkind: List\nitems: {a: 1}\n' >baditems.yaml
bad "a List whose items are not a list" baditems.yaml "items is not a list"
printf -- '- a\n- b\n' >notobject.yaml
bad "a document that is not an object" notobject.yaml "not a Kubernetes object"
for i in $(seq 1 1025); do printf -- '---\nkind: ConfigMap\n'; done >many.yaml
bad "more than 1024 documents" many.yaml "more than 1024 YAML documents"
jq -n 'reduce range(6) as $i ({apiVersion: "v1", kind: "List", items: []}; {apiVersion: "v1", kind: "List", items: [.]})' >deep.json
bad "Lists nested too deep" deep.json "nested more than"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: x, image: y}]}\n---\nkind: [\n' >broken.yaml
bad "a broken second document" broken.yaml "YAML error"
t_end
