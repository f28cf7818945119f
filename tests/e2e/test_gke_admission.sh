#!/usr/bin/env bash
# Sandbox pods as GKE would store them, through a real kube-apiserver with
# hangar's chart installed. GKE Sandbox's admission writes gVisor mount hints
# (dev.gvisor.spec.mount.NAME.{share,type,options}) for a pod's emptyDirs;
# its code is not public, so it is stood in for by a MutatingAdmissionPolicy
# (in-process, as GKE's is taken to be) that writes what gVisor's shim
# expects of it: share "container" for a volume one container mounts, else
# "pod"; type "tmpfs" for a Memory emptyDir, else "bind"; options "rw"
# (docs/research/gke-sandbox-annotations.md). Its place relative to hangar's
# webhook is the variable:
#   before   reinvocationPolicy Never: it runs once, before every mutating
#            webhook, and sees the pod's own emptyDirs only;
#   both     IfNeeded: the API server calls it again after hangar's webhook
#            changed the pod, and it rewrites hangar's own six keys with
#            GKE's values (hangar-ctl share container, options rw);
#   after    a policy that writes only once hangar's volumes are there: a
#            writer ordered after hangar's webhook (as a webhook named after
#            it would be), which then reinvokes hangar's (IfNeeded); its
#            values agree with hangar's shape or change it.
# The same writer as a webhook (a small HTTPS server here), its configuration
# named to sort before or after hangar's, Never or IfNeeded, covers the case
# of a GKE webhook. What agrees with hangar's shape is admitted and stored; what would change
# how gVisor mounts hangar-home or hangar-ctl is refused by hangar, naming
# the annotation. A plain pod keeps GKE's hints untouched. No node runs here:
# the pods are stored, never started.
# usage: test_gke_admission.sh HANGAR_WEBHOOK TOOLS_BIN
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/doorslib.sh"
t_begin "GKE Sandbox's mount hints and hangar's webhook, through the real API server"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

# shellcheck disable=SC2119 # no control-plane options
doors_up
# GKE's gvisor RuntimeClass (its scheduling goes onto every pod using it).
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
scheduling:
  nodeSelector: {sandbox.gke.io/runtime: gvisor}
  tolerations: [{key: sandbox.gke.io/runtime, operator: Equal, value: gvisor, effect: NoSchedule}]
EOF

# A gVisor pod with emptyDirs of its own: workspace on disk (two containers
# in a sandbox pod: the agent and a reader), cache in memory (the agent).
gvisor_pod() { # NAME [LABEL_VALUE]
        jq -n --arg name "$1" --arg lv "${2:-true}" --arg ns $NS '{
                apiVersion: "v1", kind: "Pod",
                metadata: {name: $name, namespace: $ns, labels: {"hangar.dev/sandbox": $lv}},
                spec: {runtimeClassName: "gvisor",
                       securityContext: {runAsUser: 1000, runAsGroup: 1000},
                       volumes: [{name: "workspace", emptyDir: {}},
                                 {name: "cache", emptyDir: {medium: "Memory"}}],
                       containers: [
                         {name: "sandbox", image: "registry.example/agent-env:1.2",
                          volumeMounts: [{name: "workspace", mountPath: "/workspace"},
                                         {name: "cache", mountPath: "/cache"}]},
                         {name: "reader", image: "registry.example/reader:1",
                          securityContext: {runAsUser: 2000},
                          volumeMounts: [{name: "workspace", mountPath: "/w", readOnly: true}]}]}}'
}

# GKE's hints for every emptyDir the pod has when the policy runs.
GKE_HINTS='
          (has(object.metadata.annotations) ? [] : [JSONPatch{op: "add", path: "/metadata/annotations", value: {}}]) +
          variables.empty.map(v, JSONPatch{op: "add",
            path: "/metadata/annotations/" + jsonpatch.escapeKey("dev.gvisor.spec.mount." + v.name + ".share"),
            value: variables.users[variables.empty.indexOf(v)] == 1 ? "container" : "pod"}) +
          variables.empty.map(v, JSONPatch{op: "add",
            path: "/metadata/annotations/" + jsonpatch.escapeKey("dev.gvisor.spec.mount." + v.name + ".type"),
            value: has(v.emptyDir.medium) && v.emptyDir.medium == "Memory" ? "tmpfs" : "bind"}) +
          variables.empty.map(v, JSONPatch{op: "add",
            path: "/metadata/annotations/" + jsonpatch.escapeKey("dev.gvisor.spec.mount." + v.name + ".options"),
            value: "rw"})'

# policy NAME REINVOCATION CONDITION PATCH_EXPRESSION: a MutatingAdmissionPolicy
# (and its binding) for pods of the gvisor class in $NS meeting CONDITION.
policy() {
        cat <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: $1}
spec:
  failurePolicy: Fail
  reinvocationPolicy: $2
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS}}
  matchConditions:
    - name: gvisor
      expression: has(object.spec.runtimeClassName) && object.spec.runtimeClassName == 'gvisor'
    - name: when
      expression: ($3) || (has(object.metadata.labels) && 'gke-test/probe' in object.metadata.labels)
  variables:
    - name: empty
      expression: object.spec.volumes.filter(v, has(v.emptyDir))
    - name: users
      expression: >-
        variables.empty.map(v,
          object.spec.containers.filter(c, has(c.volumeMounts) && c.volumeMounts.exists(m, m.name == v.name)).size() +
          (has(object.spec.initContainers) ? object.spec.initContainers.filter(c, has(c.volumeMounts) && c.volumeMounts.exists(m, m.name == v.name)).size() : 0))
  mutations:
    - patchType: JSONPatch
      jsonPatch:
        expression: >-
$4
    - patchType: ApplyConfiguration
      applyConfiguration:
        expression: >-
          Object{metadata: Object.metadata{annotations: {"gke-test/policy": "$1"}}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: $1}
spec: {policyName: $1}
EOF
}

# in_force NAME: the policy the API server applies now, as a probe pod's dry
# run shows it ("" for none); the probe pod is no sandbox pod (hangar leaves
# it alone) and every policy here marks it.
in_force() {
        gvisor_pod probe false | jq '.metadata.labels["gke-test/probe"] = "1"' |
                kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -r '.metadata.annotations["gke-test/policy"] // ""'
}
# use_policy NAME REINVOCATION CONDITION PATCH: the only policy in force.
use_policy() {
        no_policy
        policy "$@" >"policy-$1.yaml"
        kubectl apply -f "policy-$1.yaml" >/dev/null || { t_check "policy $1 applied" false; return 1; }
        t_check "policy $1 in force" t_wait_for "policy_is $1" 30
}
policy_is() { [ "$(in_force)" = "$1" ]; }
no_policy() {
        kubectl delete mutatingadmissionpolicies,mutatingadmissionpolicybindings --all >/dev/null
        t_wait_for "policy_is ''" 30 || t_check "no policy in force" false
}
# says TEXT PATTERN...: TEXT holds every fixed string PATTERN.
says() {
        local text=$1 p
        shift
        for p in "$@"; do grep -qF -- "$p" <<<"$text" || return 1; done
}

# stored NAME KEY: the stored pod's annotation KEY ("" when absent).
stored() {
        kubectl get pod -n $NS "$1" -o json | jq -r --arg k "$2" '.metadata.annotations[$k] // ""'
}
created() { # NAME [LABEL_VALUE]: creates the pod; its output in created-NAME.out
        gvisor_pod "$1" "${2:-true}" | kubectl create -f - >"created-$1.out" 2>&1
}
CTL=dev.gvisor.spec.mount.hangar-ctl
HOME_=dev.gvisor.spec.mount.hangar-home
OWN=dev.gvisor.spec.mount.workspace
CTL_OPTIONS=rw,rprivate,size=67108864 # hangar's own, volumes.ctl.sizeLimit 64Mi

# --- before: the pod's own emptyDirs only; hangar's six are hangar's.
use_policy gke-before Never true "$GKE_HINTS"
created before
t_check "before: a sandbox pod with GKE's hints on its own emptyDirs is admitted ($(cat created-before.out))" \
        grep -q created created-before.out
t_eq "before: injected" '["sandbox","reader","hangar-driver"]' \
        "$(kubectl get pod -n $NS before -o json | jq -c '[.spec.containers[].name]')"
t_eq "before: GKE's hint for the pod's workspace (two containers) kept" pod "$(stored before $OWN.share)"
t_eq "before: GKE's hint for the pod's Memory cache kept" tmpfs "$(stored before dev.gvisor.spec.mount.cache.type)"
t_eq "before: hangar-ctl's hints are hangar's" "pod tmpfs $CTL_OPTIONS" \
        "$(stored before $CTL.share) $(stored before $CTL.type) $(stored before $CTL.options)"
t_eq "before: GKE's scheduling from the RuntimeClass" gvisor \
        "$(kubectl get pod -n $NS before -o jsonpath='{.spec.nodeSelector.sandbox\.gke\.io/runtime}')"

# --- both: called again after hangar's webhook, GKE rewrites hangar's keys.
use_policy gke-both IfNeeded true "$GKE_HINTS"
created both
t_check "both: a sandbox pod is admitted with GKE's values for hangar's volumes ($(cat created-both.out))" \
        grep -q created created-both.out
t_eq "both: GKE's policy ran after hangar's webhook (hangar-ctl share container, options rw)" "container tmpfs rw" \
        "$(stored both $CTL.share) $(stored both $CTL.type) $(stored both $CTL.options)"
t_eq "both: hangar-home as GKE writes it" "pod bind rw" \
        "$(stored both $HOME_.share) $(stored both $HOME_.type) $(stored both $HOME_.options)"
t_eq "both: the pod's own hints are GKE's" "pod bind rw" \
        "$(stored both $OWN.share) $(stored both $OWN.type) $(stored both $OWN.options)"
t_eq "both: hangar-driver is there" 1 \
        "$(kubectl get pod -n $NS both -o json | jq '[.spec.containers[] | select(.name == "hangar-driver")] | length')"
created plain false
t_check "plain: a pod without the sandbox label is admitted ($(cat created-plain.out))" grep -q created created-plain.out
t_eq "plain: no hangar-driver, GKE's hint stored" "0 pod" \
        "$(kubectl get pod -n $NS plain -o json | jq -r '[([.spec.containers[] | select(.name == "hangar-driver")] | length), .metadata.annotations["dev.gvisor.spec.mount.workspace.share"]] | map(tostring) | join(" ")')"

# --- after: writers ordered after hangar's webhook, agreeing or not. A
# policy whose match fails on the first pass is not called again, so each
# of these runs on both passes and writes only once hangar's volumes are
# there: after hangar's webhook, which is then called again (IfNeeded).
# after_case NAME PATCH EXPECT KEY: EXPECT admitted, or refused naming KEY.
after_case() {
        local name=$1 patch=$2 expect=$3 key=$4
        use_policy "gke-after-$name" IfNeeded true "          (object.spec.volumes.exists(v, v.name == 'hangar-ctl') ? (
$patch
          ) : [])" || return
        gvisor_pod "after-$name" | kubectl create -f - >"after-$name.out" 2>&1
        local out
        out=$(cat "after-$name.out")
        if [ "$expect" = admitted ]; then
                t_check "after, $name: admitted (got: $(head -c 300 <<<"$out"))" grep -q created <<<"$out"
        else
                t_check "after, $name: refused by hangar naming $key (got: $(head -c 400 <<<"$out"))" \
                        says "$out" 'driver-sidecar.hangar.dev" denied the request' \
                        "marked hangar.dev/driver-sidecar: injected, but" "\"$key\""
                t_eq "after, $name: not stored" "" "$(kubectl get pod -n $NS "after-$name" -o name 2>/dev/null)"
        fi
}
set_to() { # KEY VALUE: a patch setting one annotation
        printf '          (has(object.metadata.annotations) ? [] : [JSONPatch{op: "add", path: "/metadata/annotations", value: {}}]) +
          [JSONPatch{op: "add", path: "/metadata/annotations/" + jsonpatch.escapeKey("%s"), value: "%s"}]' "$1" "$2"
}
after_case gke-hints "$GKE_HINTS" admitted ""
t_eq "after, gke-hints: GKE's values for hangar-ctl stored" "container rw" \
        "$(stored after-gke-hints $CTL.share) $(stored after-gke-hints $CTL.options)"
after_case ctl-bind "$(set_to $CTL.type bind)" refused $CTL.type
after_case ctl-shared "$(set_to $CTL.share shared)" refused $CTL.share
after_case ctl-ro "$(set_to $CTL.options ro)" refused $CTL.options
after_case ctl-size "$(set_to $CTL.options rw,size=4096)" refused $CTL.options
after_case home-container "$(set_to $HOME_.share container)" admitted ""
after_case home-shared "$(set_to $HOME_.share shared)" refused $HOME_.share
after_case home-tmpfs "$(set_to $HOME_.type tmpfs)" refused $HOME_.type
after_case ctl-force-shared "$(set_to dev.gvisor.empty-dir.hangar-ctl.force-shared true)" refused \
        dev.gvisor.empty-dir.hangar-ctl.force-shared
after_case ctl-source "$(set_to $CTL.source /var/lib/kubelet/pods/x/volumes/kubernetes.io~empty-dir/hangar-ctl)" \
        refused $CTL.source
after_case runsc-flag "$(set_to dev.gvisor.flag.network host)" refused dev.gvisor.flag.network
after_case ctl-share-removed \
        "          (has(object.metadata.annotations) && '$CTL.share' in object.metadata.annotations ? [JSONPatch{op: \"remove\", path: \"/metadata/annotations/\" + jsonpatch.escapeKey('$CTL.share')}] : [])" \
        refused $CTL.share

# --- GKE's writer as a webhook: a second mutating webhook whose
# configuration sorts before ("aa-") or after ("zz-") hangar's, so the API
# server calls it before or after hangar's webhook, with either
# reinvocationPolicy. It writes the same values as the policy above; its mode
# "ctl-bind" also sets hangar-ctl's type to bind once hangar-ctl is there.
no_policy
cat >gke_hints_webhook.py <<'PY'
import base64, json, ssl, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def hints(pod, name, mode):
    spec = pod.get("spec", {})
    if spec.get("runtimeClassName") != "gvisor":
        return []
    ops = [] if "annotations" in pod.get("metadata", {}) else [
        {"op": "add", "path": "/metadata/annotations", "value": {}}]
    def put(key, value):
        ops.append({"op": "add", "value": value,
                    "path": "/metadata/annotations/" + key.replace("~", "~0").replace("/", "~1")})
    put("gke-test/webhook", name)
    containers = spec.get("containers", []) + spec.get("initContainers", [])
    for v in spec.get("volumes", []):
        if "emptyDir" not in v:
            continue
        users = sum(any(m.get("name") == v["name"] for m in c.get("volumeMounts", [])) for c in containers)
        base = "dev.gvisor.spec.mount." + v["name"]
        put(base + ".share", "container" if users == 1 else "pod")
        put(base + ".type", "tmpfs" if v["emptyDir"].get("medium") == "Memory" else "bind")
        put(base + ".options", "rw")
        if mode == "ctl-bind" and v["name"] == "hangar-ctl":
            put(base + ".type", "bind")
    return ops

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _, _, name, mode = self.path.split("?")[0].split("/")  # the API server adds ?timeout=
        request = review["request"]
        response = {"uid": request["uid"], "allowed": True}
        ops = hints(request["object"], name, mode)
        if ops:
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(ops).encode()).decode()
        body = json.dumps({"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
                           "response": response}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
PY
GKE_PORT=$(t_free_port)
python3 gke_hints_webhook.py "$GKE_PORT" pki/tls.crt pki/tls.key 2>gke-webhook.log &
t_cleanup_pid $!
CA=$(base64 -w0 pki/ca.crt)
wh_in_force() {
        gvisor_pod probe false | jq '.metadata.labels["gke-test/probe"] = "1"' |
                kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -r '.metadata.annotations["gke-test/webhook"] // ""'
}
webhook_is() { [ "$(wh_in_force)" = "$1" ]; }
# use_webhook NAME REINVOCATION MODE: GKE's stand-in webhook, the only one.
use_webhook() {
        kubectl delete mutatingwebhookconfigurations -l gke-test=1 >/dev/null
        kubectl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: $1, labels: {gke-test: "1"}}
webhooks:
  - name: hints.gke-test.example
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    reinvocationPolicy: $2
    timeoutSeconds: 5
    clientConfig: {url: "https://127.0.0.1:$GKE_PORT/mutate/$1/$3", caBundle: "$CA"}
    rules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS}}
EOF
        t_check "webhook $1 in force" t_wait_for "webhook_is $1" 30
}
HANGAR_CONFIG=$(kubectl get mutatingwebhookconfigurations -l app.kubernetes.io/instance=hangar -o jsonpath='{.items[0].metadata.name}')
t_eq "hangar's configuration ($HANGAR_CONFIG) sorts between aa- and zz-" "aa-gke $HANGAR_CONFIG zz-gke" \
        "$(printf '%s\n' zz-gke "$HANGAR_CONFIG" aa-gke | LC_ALL=C sort | paste -sd' ')"

use_webhook zz-gke-after Never gke
created wh-after
t_check "webhook after hangar's: admitted ($(cat created-wh-after.out))" grep -q created created-wh-after.out
t_eq "webhook after hangar's: GKE's values on hangar-ctl stored" "container tmpfs rw" \
        "$(stored wh-after $CTL.share) $(stored wh-after $CTL.type) $(stored wh-after $CTL.options)"
use_webhook zz-gke-after-bind Never ctl-bind
out=$(gvisor_pod wh-after-bind | kubectl create -f - 2>&1)
t_check "webhook after hangar's writing hangar-ctl type bind: refused by hangar naming it (got: $(head -c 300 <<<"$out"))" \
        says "$out" 'driver-sidecar.hangar.dev" denied the request' "\"$CTL.type\""
use_webhook aa-gke-before IfNeeded gke
created wh-before
t_check "webhook before hangar's, IfNeeded: admitted ($(cat created-wh-before.out))" grep -q created created-wh-before.out
t_eq "webhook before hangar's, IfNeeded: called again after it (GKE's values on hangar-ctl)" "container rw" \
        "$(stored wh-before $CTL.share) $(stored wh-before $CTL.options)"
use_webhook aa-gke-before-never Never gke
created wh-never
t_check "webhook before hangar's, Never: admitted ($(cat created-wh-never.out))" grep -q created created-wh-never.out
t_eq "webhook before hangar's, Never: hangar's values stay, the pod's own are GKE's" "pod $CTL_OPTIONS pod" \
        "$(stored wh-never $CTL.share) $(stored wh-never $CTL.options) $(stored wh-never $OWN.share)"
kubectl delete mutatingwebhookconfigurations -l gke-test=1 >/dev/null
t_wait_for "webhook_is ''" 30 || t_check "no stand-in webhook in force" false

# The guard alone (the validating webhook) judges the stored pod the same
# way: a copy of the refused pod, created with the mutating webhook's
# policy on the copy's side (already injected), is refused by creates.*.
no_policy
kubectl get pod -n $NS both -o json |
        jq '{apiVersion, kind, metadata: {name: "copy", namespace: .metadata.namespace, annotations: (.metadata.annotations | .["dev.gvisor.spec.mount.hangar-ctl.type"] = "bind")}, spec: .spec}' >copy.json
out=$(kubectl create -f copy.json 2>&1)
t_check "the guard: a copy marked injected with hangar-ctl type bind is refused naming the key (got: $(head -c 400 <<<"$out"))" \
        says "$out" "denied the request: hangar conflict" "as it would be stored" "\"$CTL.type\""
jq '.metadata.name = "copy-ok" | .metadata.annotations["dev.gvisor.spec.mount.hangar-ctl.type"] = "tmpfs"' copy.json >copy-ok.json
out=$(kubectl create -f copy-ok.json 2>&1)
t_check "the guard: the same copy with GKE's agreeing values is admitted (got: $(head -c 300 <<<"$out"))" grep -q created <<<"$out"
t_end
