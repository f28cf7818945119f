#!/usr/bin/env bash
# The "Before enabling" checklist of docs/probe.md, automated as far as the
# probe can go on a dev cluster. Given a sandbox pod already created with the
# webhook's injection on, it:
#   - reads the pod through the API (kubectl get) and checks the webhook
#     injected hangar-driver;
#   - runs `hangar-probe spec --name POD` here, against the API (the same
#     kubeconfig, context and namespace as kubectl);
#   - runs `hangar-probe check --role agent|driver` in the agent's container
#     and in hangar-driver through `kubectl exec` (the probe must be in the
#     image: --in-pod-probe);
#   - reports runtime.gvisor (must say gVisor when the pod asks for a gVisor
#     runtimeClassName, as on GKE Sandbox nodes);
#   - runs `hangar-probe verdict --mode required` here on the three reports,
#     which must say split-active;
# and prints the checklist: pass or FAIL per automated item, the others as
# manual steps. Exit status 0 when every automated item passes, 1 when one
# fails, 2 for usage.
#
# usage: scripts/before-enabling.sh [--kubeconfig FILE] [--context CTX] [--namespace NS]
#            [--probe PATH] [--kubectl PATH] [--in-pod-probe PATH] [--config FILE]
#            [--agent-container NAME] [--driver-container NAME] [--as USER] [--out DIR] POD
#   --kubeconfig    one kubeconfig file (default: $KUBECONFIG, a colon-separated list
#                   kubectl and hangar-probe merge the same way, else ~/.kube/config)
#   --context       the kubeconfig context (default: its current-context)
#   --namespace     default: the context's namespace, else "default"
#                   Every tool run here (kubectl get/exec, hangar-probe spec) gets the
#                   same --kubeconfig, --context and --namespace, so all of them talk
#                   to one cluster as one user. On GKE the kubeconfig's user runs
#                   gke-gcloud-auth-plugin (user.exec): hangar-probe runs it as kubectl
#                   does (gcloud container clusters get-credentials CLUSTER writes it).
#   --probe         the probe to run here (default: hangar-probe on PATH, else build/probe/hangar-probe)
#   --in-pod-probe  the probe's path inside the containers (default: hangar-probe)
#   --config        the webhook's configuration, for the spec check here
#                   (the containers use their own HANGAR_CONFIG)
#   --agent-container  default $HANGAR_AGENT_CONTAINER or "sandbox" (the webhook's default)
#   --as            the user the two kubectl execs impersonate: the chart's guard lets
#                   only guard.driverUsers exec into hangar-driver, so a cluster admin
#                   runs the checklist with --as one of them (hangar's own identity,
#                   e.g. system:serviceaccount:hangar:hangar)
#   --out           keep the reports (spec.json, agent.json, driver.json, verdict.json) there
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)

usage() {
        sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0" >&2
        exit 2
}
KUBECONFIG_FILE=""
NAMESPACE=""
CONTEXT=""
PROBE=""
KUBECTL=kubectl
IN_POD_PROBE=hangar-probe
CONFIG=""
AGENT=${HANGAR_AGENT_CONTAINER:-sandbox}
DRIVER=hangar-driver
OUT=""
EXEC_AS=()
POD=""
while [ $# -gt 0 ]; do
        case $1 in
        --kubeconfig) KUBECONFIG_FILE=${2:?--kubeconfig needs a file}; shift 2 ;;
        -n | --namespace) NAMESPACE=${2:?--namespace needs a name}; shift 2 ;;
        --context) CONTEXT=${2:?--context needs a name}; shift 2 ;;
        --probe) PROBE=${2:?--probe needs a path}; shift 2 ;;
        --kubectl) KUBECTL=${2:?--kubectl needs a path}; shift 2 ;;
        --in-pod-probe) IN_POD_PROBE=${2:?--in-pod-probe needs a path}; shift 2 ;;
        --config) CONFIG=${2:?--config needs a file}; shift 2 ;;
        --agent-container) AGENT=${2:?--agent-container needs a name}; shift 2 ;;
        --driver-container) DRIVER=${2:?--driver-container needs a name}; shift 2 ;;
        --out) OUT=${2:?--out needs a directory}; shift 2 ;;
        --as) EXEC_AS=(--as "${2:?--as needs a user}"); shift 2 ;;
        -h | --help) usage ;;
        --*=*) set -- "${1%%=*}" "${1#*=}" "${@:2}" ;;
        -*) echo "before-enabling: unknown option $1" >&2; usage ;;
        *)
                [ -z "$POD" ] || { echo "before-enabling: one pod only ($POD, $1)" >&2; usage; }
                POD=$1
                shift
                ;;
        esac
done
[ -n "$POD" ] || { echo "before-enabling: no pod named" >&2; usage; }
if [ -z "$PROBE" ]; then
        PROBE=$(command -v hangar-probe || echo "$HERE/../build/probe/hangar-probe")
fi
[ -x "$PROBE" ] || { echo "before-enabling: hangar-probe not found ($PROBE): --probe PATH" >&2; exit 2; }
command -v "$KUBECTL" >/dev/null || { echo "before-enabling: kubectl not found ($KUBECTL): --kubectl PATH" >&2; exit 2; }
command -v jq >/dev/null || { echo "before-enabling: jq not found" >&2; exit 2; }
if [ -n "$KUBECONFIG_FILE" ] && [ ! -r "$KUBECONFIG_FILE" ]; then
        echo "before-enabling: kubeconfig $KUBECONFIG_FILE not readable" >&2
        exit 2
fi
if [ -n "$CONFIG" ] && [ ! -r "$CONFIG" ]; then
        echo "before-enabling: config $CONFIG not readable" >&2
        exit 2
fi

if [ -n "$OUT" ]; then
        mkdir -p "$OUT" || exit 2
        W=$OUT
else
        W=$(mktemp -d "${TMPDIR:-/tmp}/hangar-before-enabling.XXXXXX")
        trap 'rm -rf "$W"' EXIT
fi
# The same kubeconfig, context and namespace for every tool; without
# --kubeconfig each reads $KUBECONFIG (or ~/.kube/config) itself.
API=()
[ -n "$KUBECONFIG_FILE" ] && API+=(--kubeconfig "$KUBECONFIG_FILE")
[ -n "$CONTEXT" ] && API+=(--context "$CONTEXT")
[ -n "$NAMESPACE" ] && API+=(--namespace "$NAMESPACE")
K=("$KUBECTL" "${API[@]}")
P_API=("${API[@]}")
P_CFG=()
[ -n "$CONFIG" ] && P_CFG+=(--config "$CONFIG")

LINES=()
FAILED=0
item() { # STATUS TEXT [DETAIL]
        local tag
        case $1 in
        pass) tag="[pass]  " ;;
        fail) tag="[FAIL]  "; FAILED=$((FAILED + 1)) ;;
        manual) tag="[manual]" ;;
        *) tag="[$1]" ;;
        esac
        LINES+=("$tag $2${3:+ ($3)}")
}
one_line() { tr '\n' ' ' <"$1" | sed 's/  */ /g; s/ $//' | cut -c1-200; }
failed_checks() { jq -r '[.checks[] | select(.required and .status != "pass") | .name] | join(", ")' "$1" 2>/dev/null; }

item manual "1. Chart installed with driverSidecar.enabled=false: hangar_webhook_reviews_total{reason=\"injection-disabled\"} counts the sandbox pods (read the webhook's /metrics)"

# 2. The pod, through the API: injected, and its spec in shape.
# Without --namespace, the context's (both tools read it the same way): the
# pod's own says which it was.
NS=${NAMESPACE:-"(the context's namespace)"}
if "${K[@]}" get pod "$POD" -o json >"$W/pod.json" 2>"$W/get.err"; then
        NS=$(jq -r --arg ns "$NS" '.metadata.namespace // $ns' "$W/pod.json")
        status=$(jq -r '.metadata.annotations["hangar.dev/driver-sidecar"] // "no annotation"' "$W/pod.json")
        has_driver=$(jq -r --arg d "$DRIVER" 'any(.spec.containers[]; .name == $d)' "$W/pod.json")
        if [ "$status" = injected ] && [ "$has_driver" = true ]; then
                item pass "2a. Sidecar on: the webhook injected $DRIVER into $NS/$POD"
        else
                item fail "2a. Sidecar on: the webhook injected $DRIVER into $NS/$POD" \
                        "annotation: $status, $DRIVER container: $has_driver; is driverSidecar.enabled true and the pod a sandbox pod?"
        fi
        RUNTIME_CLASS=$(jq -r '.spec.runtimeClassName // ""' "$W/pod.json")
        NODE=$(jq -r '.spec.nodeName // ""' "$W/pod.json")
else
        item fail "2a. Sidecar on: the webhook injected $DRIVER into $NS/$POD" "kubectl get: $(one_line "$W/get.err")"
        RUNTIME_CLASS="" NODE=""
fi
"$PROBE" spec --name "$POD" "${P_API[@]}" "${P_CFG[@]}" >"$W/spec.json" 2>"$W/spec.err"
rc=$?
case $rc in
0) item pass "2b. hangar-probe spec --name $POD --namespace $NS passes" ;;
1) item fail "2b. hangar-probe spec --name $POD --namespace $NS passes" \
        "failed: $(jq -r '[.checks[] | select(.status != "pass") | .code + ": " + .detail] | join("; ")' "$W/spec.json")" ;;
*) item fail "2b. hangar-probe spec --name $POD --namespace $NS passes" "exit $rc: $(one_line "$W/spec.err")" ;;
esac

# 3. Inside each container, through kubectl exec.
check_in() { # ROLE CONTAINER NUMBER
        local role=$1 ctr=$2 n=$3 rc res
        "${K[@]}" exec "${EXEC_AS[@]}" "$POD" -c "$ctr" -- "$IN_POD_PROBE" check --role "$role" >"$W/$role.json" 2>"$W/$role.err"
        rc=$?
        res=$(jq -r '.result // empty' "$W/$role.json" 2>/dev/null)
        if [ "$res" = pass ] && [ "$rc" = 0 ]; then
                item pass "$n. hangar-probe check --role $role passes in container $ctr"
        elif [ -n "$res" ]; then
                item fail "$n. hangar-probe check --role $role passes in container $ctr" \
                        "$res, exit $rc; failed: $(failed_checks "$W/$role.json")"
        else
                rm -f "$W/$role.json" # no report: the verdict says it is missing
                local hint=""
                grep -q 'hangar-driver' "$W/$role.err" && grep -qi 'denied\|forbidden' "$W/$role.err" &&
                        [ ${#EXEC_AS[@]} = 0 ] && hint="; the guard lets only guard.driverUsers exec into $ctr: --as one of them"
                item fail "$n. hangar-probe check --role $role passes in container $ctr" \
                        "no report: kubectl exec exit $rc: $(one_line "$W/$role.err")$hint"
        fi
}
check_in agent "$AGENT" 3a
check_in driver "$DRIVER" 3b
gv=$(jq -r '.checks[] | select(.name == "runtime.gvisor") | .observed.gvisor' "$W/driver.json" 2>/dev/null)
case $RUNTIME_CLASS in
*gvisor* | *runsc* | *sandbox*)
        if [ "$gv" = true ]; then
                item pass "3c. runtime.gvisor says gVisor (runtimeClassName $RUNTIME_CLASS)"
        else
                item fail "3c. runtime.gvisor says gVisor (runtimeClassName $RUNTIME_CLASS)" "observed: ${gv:-no driver report}"
        fi
        ;;
*)
        item info "3c. runtime.gvisor: ${gv:-unknown} (the pod's runtimeClassName is '${RUNTIME_CLASS}': not GKE Sandbox, so not required)"
        ;;
esac

# 4. The verdict under required.
"$PROBE" verdict --mode required --spec "$W/spec.json" --agent "$W/agent.json" --driver "$W/driver.json" \
        >"$W/verdict.json" 2>"$W/verdict.err"
rc=$?
v=$(jq -r '.verdict // empty' "$W/verdict.json" 2>/dev/null)
if [ "$v" = split-active ] && [ "$rc" = 0 ]; then
        item pass "4. hangar-probe verdict --mode required says split-active"
else
        item fail "4. hangar-probe verdict --mode required says split-active" \
                "${v:-no verdict} (exit $rc): $(jq -r '[.reasons[]? | .code + (if .detail then " " + .detail else "" end)] | join("; ")' "$W/verdict.json" 2>/dev/null)"
fi

item manual "5. Only then set HANGAR_UID_SPLIT=auto; set required once every node pool passes this checklist"

echo "Before enabling the driver sidecar: pod $NS/$POD${NODE:+ on node $NODE}"
printf '  %s\n' "${LINES[@]}"
[ -n "$OUT" ] && echo "reports in $OUT"
if [ "$FAILED" -gt 0 ]; then
        echo "$FAILED automated item(s) failed: do not enable"
        exit 1
fi
echo "every automated item passes; do the manual steps"
exit 0
