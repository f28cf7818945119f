# shellcheck shell=bash
# The fixture the suites attacking the doors share (test_doors.sh,
# test_hostile_reviews.sh). Source it after tests/lib/testlib.sh, in $T_TMP,
# with WEBHOOK (the hangar-webhook binary) and ROOT set and the tools on PATH;
# then doors_up. It gives:
#   - a control plane of the suite's own (t_control_plane), namespaces $NS
#     and hangar-system;
#   - "mallory" and hangar's identity ($HANGAR) each holding a Role granting
#     everything on pods and their subresources in $NS; M and H, kubectl's
#     --as for each;
#   - the webhook's own ServiceAccount, allowed to get pods, and a kubeconfig
#     with its token: the webhook reads pods (port-forward) as it would in
#     the cluster;
#   - the webhook serving on $PORT (write_config, start_webhook,
#     restart_webhook), registered by the chart with the driver sidecar on and
#     $HANGAR as guard.driverUsers, and taking reviews;
#   - pod, to write a sandbox pod, doors_wait, and refused, which counts the
#     attacks (ATTACKS) and those refused (HELD).

NS=sandboxes
HANGAR=system:serviceaccount:hangar:hangar
# shellcheck disable=SC2034 # for the suites that source this
M=(--as mallory)
# shellcheck disable=SC2034 # the same
H=(--as "$HANGAR")
ATTACKS=0
HELD=0
WEBHOOK_PID=
PORT=

doors_rbac() {
        kubectl create namespace $NS >/dev/null
        kubectl label namespace $NS hangar.dev/injection=enabled >/dev/null # opted in to hangar (the chart's scope)
        kubectl create namespace hangar-system >/dev/null
        kubectl apply -f - >/dev/null <<EOF
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-admin, namespace: $NS}
rules:
  - apiGroups: [""]
    resources: [pods, pods/exec, pods/attach, pods/portforward, pods/ephemeralcontainers, pods/resize, pods/log, pods/status, pods/binding]
    verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: pod-admin, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-admin}
subjects:
  - {kind: User, name: mallory, apiGroup: rbac.authorization.k8s.io}
  - {kind: User, name: "$HANGAR", apiGroup: rbac.authorization.k8s.io}
EOF
        kubectl create serviceaccount -n hangar-system hangar-webhook >/dev/null
        kubectl create clusterrole hangar-webhook-pods --verb=get --resource=pods >/dev/null
        kubectl create clusterrolebinding hangar-webhook-pods --clusterrole=hangar-webhook-pods \
                --serviceaccount=hangar-system:hangar-webhook >/dev/null
        local server token
        server=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
        kubectl config view --minify --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
                base64 -d >apiserver-ca.crt
        token=$(kubectl create token -n hangar-system hangar-webhook --duration=1h)
        cat >webhook-kubeconfig <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$server", certificate-authority: "$T_TMP/apiserver-ca.crt"}}]
users: [{name: u, user: {token: "$token"}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
EOF
}

# write_config [SETTINGS...]: the webhook's configuration, extra lines added.
write_config() {
        {
                echo "driverSidecar: true"
                echo "guard: {driverUsers: [\"$HANGAR\"]}"
                echo "kubeconfig: $T_TMP/webhook-kubeconfig"
                echo "server: {address: 127.0.0.1, port: $PORT, certFile: $T_TMP/pki/tls.crt, keyFile: $T_TMP/pki/tls.key}"
                printf '%s\n' "$@"
        } >webhook.yaml
}
start_webhook() {
        "$WEBHOOK" serve --config webhook.yaml 2>>webhook.log &
        WEBHOOK_PID=$!
        t_cleanup_pid $WEBHOOK_PID
        t_wait_for "curl -sf --cacert pki/ca.crt https://127.0.0.1:$PORT/readyz >/dev/null" 10
}
restart_webhook() { # SETTINGS...: the same port, new settings
        t_signal TERM "$WEBHOOK_PID"
        wait "$WEBHOOK_PID" 2>/dev/null
        write_config "$@"
        start_webhook || { cat webhook.log; exit 1; }
}

pod() { # NAME [LABEL_VALUE [POD_SECURITY_CONTEXT]]
        local sc=${3:-}
        [ -n "$sc" ] || sc='{"runAsUser": 1000, "runAsGroup": 1000}'
        jq -n --arg name "$1" --arg lv "${2:-true}" --arg ns $NS --argjson sc "$sc" '{
                apiVersion: "v1", kind: "Pod",
                metadata: {name: $name, namespace: $ns, labels: {"hangar.dev/sandbox": $lv}},
                spec: {securityContext: $sc,
                       containers: [{name: "sandbox", image: "registry.example/agent-env:1.2"}]}}'
}

# doors_up [CONTROL_PLANE_ARGS...]: everything above, up to a webhook the
# API server calls (the arguments go to scripts/control-plane.sh start).
doors_up() {
        t_control_plane "$@"
        doors_rbac
        "$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 >/dev/null
        PORT=$(t_free_port)
        write_config
        start_webhook || { cat webhook.log; exit 1; }
        helm install hangar "$ROOT/charts/hangar-webhook" -n hangar-system \
                --set webhook.url="https://127.0.0.1:$PORT/mutate" --set webhook.caBundle="$(base64 -w0 pki/ca.crt)" \
                --set driverSidecar.enabled=true --set-json "guard.driverUsers=[\"$HANGAR\"]" >helm.log 2>&1 ||
                { cat helm.log; exit 1; }
        t_check "webhook active" t_wait_for \
                "pod probe | kubectl create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.containers | length == 2' >/dev/null" 30
}

# doors_wait: the validating configuration and the driver-exec policy take
# a moment to be picked up, like the mutating configuration; a port-forward
# (the webhook's) and an exec (the policy's) into the injected pod box change
# nothing while it waits (an UPDATE admitted before the configuration is
# active would).
doors_wait() {
        t_check "doors active" t_wait_for \
                "kubectl get --raw /api/v1/namespaces/$NS/pods/box/portforward?ports=1 --as mallory >doors-wait.out 2>&1; grep -q port-forward doors-wait.out &&
                kubectl exec -n $NS box -c hangar-driver --as mallory -- true >doors-wait.out 2>&1; grep -q driver-exec doors-wait.out" 30 ||
                cat doors-wait.out
}

# refused WHAT REASON CMD...: the request is refused by the webhook ("denied
# the request") or by one of the chart's policies ("denied request"), naming
# REASON.
refused() {
        local what=$1 reason=$2 out
        shift 2
        ATTACKS=$((ATTACKS + 1))
        out=$("$@" 2>&1)
        if grep -Eq "denied (the )?request" <<<"$out" && grep -qi -- "$reason" <<<"$out"; then
                HELD=$((HELD + 1))
                t_check "refused: $what" true
        else
                t_check "refused: $what (got: $(head -c 300 <<<"$out"))" false
        fi
}
