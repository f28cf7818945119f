#!/usr/bin/env bash
# hangar-probe check --role agent: the API tokens in the agent's container
# and what a real kube-apiserver says they may do (credentials.service_account_token).
# The container is a private mount namespace: the service account's
# directory (token, ca.crt, namespace) on a tmpfs /run, an optional
# kubelet-style projected volume (..data) mounted on its own, and
# KUBERNETES_SERVICE_HOST/PORT pointing at the test API server.
#   - a service account with no RBAC: pass;
#   - each dangerous permission granted alone by a Role/RoleBinding (a
#     ClusterRole/ClusterRoleBinding for cluster-wide ones): fail, naming it;
#     the verdict gives agent-credentials-failed with the permission;
#   - a Role naming only this pod (resourceNames): fail with the bound token,
#     and with an unbound one when the hostname is the pod's name;
#   - the API server unreachable, or no address: inconclusive with the reason;
#     the verdict gives agent-credentials-inconclusive;
#   - no token mounted: pass, and says so;
#   - a projected token elsewhere, a token in an environment variable: found
#     and judged; a token of another audience: not accepted, so harmless.
# usage: test_probe_credentials.sh HANGAR_PROBE TOOLS_BIN
PROBE=$(realpath "$1")
TOOLS_BIN=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "hangar-probe check --role agent: the agent's API credentials (real API server)"
cd "$T_TMP" || exit 1
if [ -z "$TOOLS_BIN" ] || [ ! -x "$TOOLS_BIN/kube-apiserver" ]; then
        t_fail "kube-apiserver not found in '$TOOLS_BIN'"
        t_end
fi
HANGAR_K8S_BIN=$TOOLS_BIN "$ROOT/scripts/control-plane.sh" start "$T_TMP/cp" >cp.log 2>&1 || { cat cp.log; exit 1; }
trap 't_main_shell || exit; "$ROOT/scripts/control-plane.sh" stop "$T_TMP/cp" >/dev/null 2>&1; t_cleanup' EXIT
KC=$T_TMP/cp/kubeconfig
NS=sbx
K=("$TOOLS_BIN/kubectl" --kubeconfig "$KC")
KN=("${K[@]}" -n "$NS")
API_PORT=$(sed -n 's|^export HANGAR_APISERVER_URL=https://127.0.0.1:||p' "$T_TMP/cp/env")
CREDS=credentials.service_account_token
AGENT=system:serviceaccount:$NS:agent

"${K[@]}" create namespace "$NS" >/dev/null
"${KN[@]}" create serviceaccount agent >/dev/null
"${KN[@]}" create serviceaccount other >/dev/null
# The agent's pod, stored (no kubelet runs it): its tokens are bound to it.
printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"sandbox-1"},"spec":{"serviceAccountName":"agent","containers":[{"name":"sandbox","image":"x"}]}}' |
        "${KN[@]}" create -f - >/dev/null
POD_UID=$("${KN[@]}" get pod sandbox-1 -o jsonpath='{.metadata.uid}')

# sa_dir DIR TOKEN_ARGS...: a service account directory as the kubelet mounts it.
sa_dir() {
        local dir=$1
        shift
        mkdir -p "$dir"
        cp "$T_TMP/cp/pki/ca.crt" "$dir/ca.crt"
        "${KN[@]}" create token "$@" >"$dir/token" || return 1
        printf %s "$NS" >"$dir/namespace"
}
sa_dir sa-bound agent --bound-object-kind Pod --bound-object-name sandbox-1 --bound-object-uid "$POD_UID"
sa_dir sa-unbound agent
sa_dir sa-other other
sa_dir sa-audience agent --audience https://vault.example
# A projected volume as the kubelet writes it (..data and links through it).
projected() { # DIR SA_DIR
        mkdir -p "$1/..2026_12_02"
        cp "$2/token" "$2/ca.crt" "$1/..2026_12_02/"
        ln -sfn ..2026_12_02 "$1/..data"
        ln -sfn ..data/token "$1/token"
        ln -sfn ..data/ca.crt "$1/ca.crt"
}
projected vol-other sa-other
projected vol-audience sa-audience

# in_pod OUT [SA_DIR|-] [VOLUME_DIR|-] [PORT|-|unset] [ENV=VALUE...]: runs
# `hangar-probe check --role agent` as the agent's container would, writing
# the report to OUT.json and stderr to OUT.err. The hostname is
# $POD_HOSTNAME (default not-the-pod), in its own UTS namespace.
in_pod() {
        local out=$1 sa=$2 vol=$3 port=$4
        shift 4
        local -a env=(env -u KUBECONFIG)
        case $port in
        unset) env+=(-u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT) ;;
        -) env+=(KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$API_PORT") ;;
        *) env+=(KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$port") ;;
        esac
        env+=("$@")
        # shellcheck disable=SC2016 # expanded by the shell inside the namespaces
        POD_HOSTNAME=${POD_HOSTNAME:-not-the-pod} unshare --mount --uts bash -c '
                hostname "$POD_HOSTNAME" && mount --make-rprivate / && mount -t tmpfs tmpfs /run || exit 99
                if [ "$0" != - ]; then
                        mkdir -p /run/secrets/kubernetes.io/serviceaccount &&
                                cp "$0"/* /run/secrets/kubernetes.io/serviceaccount/ || exit 99
                fi
                if [ "$1" != - ]; then
                        mkdir -p /run/projected && mount -t tmpfs tmpfs /run/projected &&
                                cp -a "$1"/. /run/projected/ || exit 99
                fi
                shift
                exec "$@" check --role agent
        ' "$sa" "$vol" "${env[@]}" "$PROBE" >"$out.json" 2>"$out.err"
}
# creds OUT JQ [JQ_ARGS...]: a jq expression on the report's credentials check.
creds() {
        local out=$1 expr=$2
        shift 2
        jq -r --arg n "$CREDS" "$@" ".checks[] | select(.name == \$n) | $expr" "$out.json" 2>/dev/null
}

# why OUT: the reasons the report gives for tokens it could not judge (for
# a failing check's message), prefixed with " why: ", or nothing.
why() {
        local r
        r=$(creds "$1" '[.observed.tokens[] | (.reason // empty), ((.unknown // [])[] | "\(.permission): \(.reason)")] | join("; ")')
        [ -n "$r" ] && printf ' (why: %s)' "$r"
}

# ---- no RBAC at all: pass ----
in_pod none-bound "$T_TMP/sa-bound" - -
t_eq "no RBAC: the check passes$(why none-bound)" pass "$(creds none-bound .status)"
t_eq "no RBAC: it is required" true "$(creds none-bound .required)"
t_eq "no RBAC: the token is the pod's, bound to sandbox-1" "$AGENT sandbox-1 $NS" \
        "$(creds none-bound '.observed.tokens[0] | "\(.user) \(.pod) \(.namespace)"')"
t_eq "no RBAC: nothing granted, nothing unknown" "0 0" \
        "$(creds none-bound '.observed.tokens[0] | "\(.granted | length) \(.unknown | length)"')"

# ---- each dangerous permission, granted alone ----
# LABEL (as the report names it) | verb | apiGroup | resource | scope
PERMISSIONS='create pods/exec|create||pods/exec|ns
get pods/exec|get||pods/exec|ns
create pods/attach|create||pods/attach|ns
get pods/attach|get||pods/attach|ns
create pods/portforward|create||pods/portforward|ns
get pods/portforward|get||pods/portforward|ns
update pods/ephemeralcontainers|update||pods/ephemeralcontainers|ns
patch pods/ephemeralcontainers|patch||pods/ephemeralcontainers|ns
create pods|create||pods|ns
update pods|update||pods|ns
patch pods|patch||pods|ns
update pods/status|update||pods/status|ns
patch pods/status|patch||pods/status|ns
create deployments.apps|create|apps|deployments|ns
update deployments.apps|update|apps|deployments|ns
patch deployments.apps|patch|apps|deployments|ns
create replicasets.apps|create|apps|replicasets|ns
update replicasets.apps|update|apps|replicasets|ns
patch replicasets.apps|patch|apps|replicasets|ns
create statefulsets.apps|create|apps|statefulsets|ns
update statefulsets.apps|update|apps|statefulsets|ns
patch statefulsets.apps|patch|apps|statefulsets|ns
create daemonsets.apps|create|apps|daemonsets|ns
update daemonsets.apps|update|apps|daemonsets|ns
patch daemonsets.apps|patch|apps|daemonsets|ns
create jobs.batch|create|batch|jobs|ns
update jobs.batch|update|batch|jobs|ns
patch jobs.batch|patch|batch|jobs|ns
create cronjobs.batch|create|batch|cronjobs|ns
update cronjobs.batch|update|batch|cronjobs|ns
patch cronjobs.batch|patch|batch|cronjobs|ns
create replicationcontrollers|create||replicationcontrollers|ns
update replicationcontrollers|update||replicationcontrollers|ns
patch replicationcontrollers|patch||replicationcontrollers|ns
create serviceaccounts/token|create||serviceaccounts/token|ns
impersonate serviceaccounts|impersonate||serviceaccounts|ns
impersonate users|impersonate||users|ns
impersonate groups|impersonate||groups|ns
impersonate users (cluster-wide)|impersonate||users|cluster
impersonate groups (cluster-wide)|impersonate||groups|cluster
impersonate serviceaccounts (cluster-wide)|impersonate||serviceaccounts|cluster
bind roles|bind|rbac.authorization.k8s.io|roles|ns
escalate roles|escalate|rbac.authorization.k8s.io|roles|ns
bind clusterroles|bind|rbac.authorization.k8s.io|clusterroles|cluster
escalate clusterroles|escalate|rbac.authorization.k8s.io|clusterroles|cluster
get nodes/proxy|get||nodes/proxy|cluster
create nodes/proxy|create||nodes/proxy|cluster'
# can_i VERB GROUP RESOURCE[/SUB] SCOPE [NAME]: the admin's view (kubectl auth can-i as the agent).
can_i() {
        local type=${3%%/*} sub=${3#*/} scope=(-n "$NS")
        [ "$sub" = "$3" ] && sub=""
        [ -n "$2" ] && type=$type.$2
        [ -n "${5:-}" ] && type=$type/$5
        [ "$4" = cluster ] && scope=(--all-namespaces)
        "${K[@]}" auth can-i "$1" "$type" ${sub:+--subresource="$sub"} --as="$AGENT" "${scope[@]}" >/dev/null 2>&1
}
# grant NAME VERB GROUP RESOURCE SCOPE [EXTRA_RULE_JSON]: a (Cluster)Role with one
# rule, bound to the agent.
grant() {
        local kind=Role bkind=RoleBinding meta="{\"name\":\"$1\",\"namespace\":\"$NS\"}"
        if [ "$5" = cluster ]; then kind=ClusterRole bkind=ClusterRoleBinding meta="{\"name\":\"$1\"}"; fi
        printf '{"apiVersion":"v1","kind":"List","items":[
                {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"%s","metadata":%s,
                 "rules":[{"apiGroups":["%s"],"resources":["%s"],"verbs":["%s"]%s}]},
                {"apiVersion":"rbac.authorization.k8s.io/v1","kind":"%s","metadata":%s,
                 "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"%s","name":"%s"},
                 "subjects":[{"kind":"ServiceAccount","name":"agent","namespace":"%s"}]}]}' \
                "$kind" "$meta" "$3" "$4" "$2" "${6:-}" "$bkind" "$meta" "$kind" "$1" "$NS" |
                "${K[@]}" apply -f - >/dev/null
}
revoke() { # NAME SCOPE
        if [ "$2" = cluster ]; then
                "${K[@]}" delete clusterrolebinding,clusterrole "$1" >/dev/null
        else
                "${KN[@]}" delete rolebinding,role "$1" >/dev/null
        fi
}
n=0
while IFS='|' read -r label verb group resource scope; do
        n=$((n + 1))
        grant "danger-$n" "$verb" "$group" "$resource" "$scope"
        if ! t_wait_for "can_i '$verb' '$group' '$resource' '$scope'" 10; then
                t_fail "$label: kubectl auth can-i never said yes (the grant is not live)"
                revoke "danger-$n" "$scope"
                continue
        fi
        in_pod "perm-$n" "$T_TMP/sa-bound" - -
        # shellcheck disable=SC2016 # \(...) and $l are jq's
        t_eq "$label granted: the check fails, naming it$(why "perm-$n")" "fail true" \
                "$(creds "perm-$n" '"\(.status) \(.observed.tokens[0].granted | index($l) != null)"' --arg l "$label")"
        revoke "danger-$n" "$scope"
        t_wait_for "! can_i '$verb' '$group' '$resource' '$scope'" 10 || t_fail "$label: revoked grant still live"
done <<<"$PERMISSIONS"

# Everything allowed (cluster-admin): every question is a yes, and the
# questions are exactly this test's list (the probe asks no fewer).
"${K[@]}" create clusterrolebinding agent-admin --clusterrole=cluster-admin --serviceaccount="$NS:agent" >/dev/null
t_wait_for "can_i create '' pods/exec ns" 10
in_pod admin "$T_TMP/sa-unbound" - -
t_eq "cluster-admin: the questions asked are exactly the list above, each a yes$(why admin)" \
        "$(cut -d'|' -f1 <<<"$PERMISSIONS" | sort | tr '\n' ,)" \
        "$(creds admin '.observed.tokens[0].granted[] | select(contains(" on pod ") | not)' | sort | tr '\n' ,)"
PER_POD='create pods/exec
get pods/exec
create pods/attach
get pods/attach
create pods/portforward
get pods/portforward
update pods/ephemeralcontainers
patch pods/ephemeralcontainers
update pods
patch pods
update pods/status
patch pods/status'
# shellcheck disable=SC2016,SC2001 # sed appends to each line (its $ is the end of a line)
t_eq "... and the pod's own subresources and updates again, naming it (the hostname, for an unbound token)" \
        "$(sed 's/$/ on pod not-the-pod/' <<<"$PER_POD" | sort | tr '\n' ,)" \
        "$(creds admin '.observed.tokens[0].granted[] | select(contains(" on pod "))' | sort | tr '\n' ,)"
"${K[@]}" delete clusterrolebinding agent-admin >/dev/null
t_wait_for "! can_i create '' pods/exec ns" 10

# The verdict wires it: the first permission's report, required mode.
"$PROBE" verdict --mode required --spec /dev/null --agent perm-1.json --driver /dev/null >verdict-granted.json 2>/dev/null
t_eq "verdict (required) with a token that may exec: refused" refused "$(jq -r .verdict verdict-granted.json)"
t_eq "... with reason agent-credentials-failed naming create pods/exec" true \
        "$(jq '[.reasons[] | select(.code == "agent-credentials-failed") | .detail | contains("create pods/exec")] | any' verdict-granted.json)"

# The admin's one-liner (docs/probe.md, RBAC) shows the same grant.
grant exec-list create "" pods/exec ns
t_wait_for "can_i create '' pods/exec ns" 10
t_check "kubectl auth can-i --list shows pods/exec for the agent" \
        bash -c "'${K[0]}' --kubeconfig '$KC' auth can-i --list --as=$AGENT -n $NS | grep -q '^pods/exec '"
revoke exec-list ns

# ---- a Role naming only this pod ----
grant named create "" pods/exec ns ',"resourceNames":["sandbox-1"]'
t_wait_for "can_i create '' pods/exec ns sandbox-1" 10
in_pod named-bound "$T_TMP/sa-bound" - -
t_eq "exec granted on this pod by name, bound token: fail naming the pod" "fail create pods/exec on pod sandbox-1" \
        "$(creds named-bound '"\(.status) \(.observed.tokens[0].granted | join(","))"')"
POD_HOSTNAME=sandbox-1 in_pod named-unbound "$T_TMP/sa-unbound" - -
t_eq "... an unbound token: the pod's name from the hostname, fail naming it" \
        "fail create pods/exec on pod sandbox-1 the hostname" \
        "$(creds named-unbound '"\(.status) \(.observed.tokens[0].granted | join(",")) \(.observed.tokens[0].asked_about_pod.from)"')"
POD_HOSTNAME=elsewhere in_pod named-elsewhere "$T_TMP/sa-unbound" - -
t_eq "... an unbound token in a pod whose hostname is not its name: the named grant is not seen (documented limit)" \
        "pass elsewhere" "$(creds named-elsewhere '"\(.status) \(.observed.tokens[0].asked_about_pod.name)"')"
revoke named ns

# ---- the API server unreachable, or no address ----
CLOSED=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
in_pod unreachable "$T_TMP/sa-bound" - "$CLOSED"
t_eq "API server unreachable: inconclusive (unknown)" unknown "$(creds unreachable .status)"
t_eq "... with the reason ($(creds unreachable '.observed.tokens[0].reason' | head -c 120))" true \
        "$(creds unreachable '.observed.tokens[0].reason | test("cannot be reached")')"
"$PROBE" verdict --mode required --spec /dev/null --agent unreachable.json --driver /dev/null >verdict-unreachable.json 2>/dev/null
t_eq "verdict with the API server unreachable: agent-credentials-inconclusive, refused" "refused true" \
        "$(jq -r '"\(.verdict) \([.reasons[].code] | index("agent-credentials-inconclusive") != null)"' verdict-unreachable.json)"
"$PROBE" verdict --mode auto --spec /dev/null --agent unreachable.json --driver /dev/null >verdict-unreachable-auto.json 2>/dev/null
t_eq "... under auto: single-user" single-user "$(jq -r .verdict verdict-unreachable-auto.json)"
in_pod no-address "$T_TMP/sa-bound" - unset
t_eq "no KUBERNETES_SERVICE_HOST: inconclusive" unknown "$(creds no-address .status)"
t_eq "... saying so" true "$(creds no-address '.observed.tokens[0].reason | test("KUBERNETES_SERVICE_HOST")')"

# ---- no token mounted ----
in_pod no-token - - -
t_eq "no token mounted: pass, and says none is mounted" "pass false 0" \
        "$(creds no-token '"\(.status) \(.observed.standard_token_mounted) \(.observed.tokens | length)"')"

# ---- tokens elsewhere ----
# "other" may exec; the agent's own account still may not.
"${KN[@]}" create role other-exec --verb=create --resource=pods/exec >/dev/null
"${KN[@]}" create rolebinding other-exec --role=other-exec --serviceaccount="$NS:other" >/dev/null
t_wait_for "'${K[0]}' --kubeconfig '$KC' -n $NS auth can-i create pods --subresource=exec --as=system:serviceaccount:$NS:other >/dev/null 2>&1" 10
in_pod projected "$T_TMP/sa-bound" "$T_TMP/vol-other" -
t_eq "a projected token of another account that may exec: fail, found in its volume$(why projected)" \
        "fail /run/projected/token system:serviceaccount:$NS:other create pods/exec,create pods/exec on pod not-the-pod" \
        "$(creds projected '"\(.status) " + (.observed.tokens[] | select(.status == "fail") | "\(.source) \(.user) \(.granted | join(","))")')"
t_eq "... the pod's own token beside it still passes" pass \
        "$(creds projected '.observed.tokens[] | select(.standard) | .status')"
in_pod env-token "$T_TMP/sa-bound" - - "AGENT_TOKEN=$(cat sa-other/token)"
t_eq "a token in an environment variable that may exec: fail, named$(why env-token)" \
        "fail environment variable AGENT_TOKEN" \
        "$(creds env-token '"\(.status) " + (.observed.tokens[] | select(.status == "fail") | .source)')"
in_pod audience "$T_TMP/sa-bound" "$T_TMP/vol-audience" -
t_eq "a token for another audience: not accepted by the API server, so harmless (pass)$(why audience)" "pass false" \
        "$(creds audience '"\(.status) " + (.observed.tokens[] | select(.source == "/run/projected/token") | "\(.accepted)")')"
t_end
