#!/usr/bin/env bash
# Which operations a ValidatingAdmissionPolicy is evaluated for, on the real
# kube-apiserver the tests run (the chart's policies rely on it: its
# driver-exec policy holds the exec and attach doors in-process, with no
# webhook call). In a scratch namespace a policy refuses every operation on
# pods and their exec, attach and portforward subresources, naming in its
# message the operation, the subresource, the options' container and the
# requester: CREATE, UPDATE, DELETE and CONNECT (exec, attach, portforward)
# must each be refused with exactly that message. Namespaces outside the
# binding are not affected (the control). No node runs here: an exec that
# passes admission then fails for want of a host.
# usage: test_vap_ops.sh TOOLS_BIN
TOOLS_BIN=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "ValidatingAdmissionPolicy: the operations the real API server evaluates it for"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

t_control_plane
for ns in scratch control; do kubectl create namespace $ns >/dev/null; done
pod() { # NAME NAMESPACE
        jq -n --arg n "$1" --arg ns "$2" '{apiVersion: "v1", kind: "Pod", metadata: {name: $n, namespace: $ns},
                spec: {containers: [{name: "a", image: "registry.example/a:1"}, {name: "b", image: "registry.example/b:1"}]}}'
}
for ns in scratch control; do
        pod target $ns | kubectl create -f - >/dev/null
        pod doomed $ns | kubectl create -f - >/dev/null
done

# has() on every optional field: request.subResource is empty on CREATE of
# pods, object is null on DELETE, and only exec/attach options carry a container.
kubectl apply -f - >/dev/null <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vap-ops}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        resources: ["pods", "pods/exec", "pods/attach", "pods/portforward"]
        operations: ["CREATE", "UPDATE", "DELETE", "CONNECT"]
  validations:
    - expression: "false"
      messageExpression: >-
        'vap-ops op=' + request.operation +
        ' sub=' + (has(request.subResource) ? request.subResource : '') +
        ' container=' + (object != null && has(object.container) ? object.container : '') +
        ' user=' + request.userInfo.username
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vap-ops}
spec:
  policyName: vap-ops
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: scratch}}
EOF
# A new policy reaches the API server's informers after a moment.
t_check "the policy is active" t_wait_for \
        "grep -q 'vap-ops op=CREATE' <<<\"\$(pod probe scratch | kubectl create --dry-run=server -f - 2>&1)\"" 30

# refused_by_policy WHAT MESSAGE CMD...: CMD is refused by the policy with MESSAGE.
refused_by_policy() {
        local what=$1 msg=$2 out
        shift 2
        out=$("$@" 2>&1)
        # shellcheck disable=SC2016 # $1 and $2 are the inner shell's
        t_check "$what: refused, '$msg' (got: $(head -c 300 <<<"$out"))" bash -c \
                'grep -q "ValidatingAdmissionPolicy .vap-ops. with binding .vap-ops. denied request" <<<"$1" && grep -qF -- "$2" <<<"$1"' \
                _ "$out" "$msg"
}
refused_by_policy CREATE "vap-ops op=CREATE sub= container= user=" kubectl create -f <(pod new scratch)
refused_by_policy UPDATE "vap-ops op=UPDATE sub= container= user=" kubectl label pod -n scratch target x=y
refused_by_policy DELETE "vap-ops op=DELETE sub= container= user=" kubectl delete pod -n scratch doomed --wait=false
refused_by_policy "CONNECT exec" "vap-ops op=CONNECT sub=exec container=b user=" kubectl exec -n scratch target -c b -- true
refused_by_policy "CONNECT exec without a container" "vap-ops op=CONNECT sub=exec container= user=" \
        kubectl get --raw "/api/v1/namespaces/scratch/pods/target/exec?command=true&stdout=true"
refused_by_policy "CONNECT attach" "vap-ops op=CONNECT sub=attach container=a user=" kubectl attach -n scratch target -c a
refused_by_policy "CONNECT portforward" "vap-ops op=CONNECT sub=portforward container= user=" \
        kubectl get --raw "/api/v1/namespaces/scratch/pods/target/portforward?ports=1"
kubectl create role -n scratch execer --verb=get,create --resource=pods,pods/exec >/dev/null
kubectl create rolebinding -n scratch execer --role=execer --user=mallory >/dev/null
out=$(kubectl exec -n scratch target -c b --as mallory -- true 2>&1)
t_check "the requester is the one kubectl --as names (got: $(head -c 200 <<<"$out"))" grep -q "user=mallory" <<<"$out"

# The control: the same requests outside the binding's namespace pass admission.
for cmd in "kubectl label pod -n control target x=y" "kubectl exec -n control target -c b -- true" \
        "kubectl attach -n control target -c a" "kubectl get --raw /api/v1/namespaces/control/pods/target/portforward?ports=1" \
        "kubectl delete pod -n control doomed --wait=false"; do
        out=$($cmd 2>&1)
        # shellcheck disable=SC2016 # $1 is the inner shell's
        t_check "outside the binding: '$cmd' is not refused by the policy" bash -c '! grep -q vap-ops <<<"$1"' _ "$out"
done
t_check "... and the pod there was updated (the control's UPDATE was admitted)" \
        bash -c "[ \"\$(kubectl get pod -n control target -o jsonpath='{.metadata.labels.x}')\" = y ]"
t_end
