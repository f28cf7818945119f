#!/usr/bin/env bash
# shellcheck disable=SC2016,SC1091,SC2153 # single-quoted container commands; testlib and DIR/env are sourced
# The one-node cluster of scripts/node.sh, for real (docs/node.md), on the
# node suites' shared node (the ctest fixture: tests/node/node_fixture.sh
# starts it, and its stop checks that nothing is left), in namespace
# "cluster" of its own:
#   - the node is Ready, kubelet v1.37.x on containerd
#     2.4.x, RuntimeClass gvisor (handler runsc) exists, the API server is
#     reached from the host's network namespace at the node's address, and
#     the node's network namespace has no default route;
#   - a runc pod and a runtimeClassName: gvisor pod, placed by the scheduler,
#     reach Running; the gVisor one runs under runsc (its dmesg is gVisor's,
#     runsc lists its sandbox), the runc one does not;
#   - kubectl exec from the host into both, with stdin, and exit statuses;
#   - a Deployment (controller-manager: ReplicaSet, EndpointSlice) behind a
#     Service, reached by the API server at the pod's IP (service proxy);
#   - a mutating admission webhook behind a Service, called by the API server
#     at its pod's IP (--enable-aggregator-routing; there is no kube-proxy);
#   - a pod reaches the API server through the kubernetes Service's ClusterIP
#     with its service-account token (ServiceAccount admission is on);
#   - a Job completes;
#   - a second node, whose start is killed half-way, is cleaned up by stop:
#     no process, mount, network namespace, link or cgroup left (the shared
#     node's own stop is checked the same way by node_down).
# usage: test_node.sh K8S_BIN NODE_BIN RUNSC PAUSE_ARCHIVE TEST_IMAGE
#   K8S_BIN: scripts/k8s-tools.sh's bin dir; NODE_BIN: scripts/node-tools.sh's;
#   RUNSC: a current runsc (tests/pods/build-runsc.sh); PAUSE_ARCHIVE: an OCI
#   archive of registry.k8s.io/pause:3.10.2 (for the second node); TEST_IMAGE:
#   an image the shared node has (the fixture loads build-images.sh's
#   hangar-sandbox), with sh, cat, wc, sleep, dmesg, chroot and busybox (for
#   httpd). The pods run as root (chroot, dmesg), whatever the image's user.
# The webhook pod runs the host's python3 (chroot into a read-only hostPath /).
# Needs root. T_KEEP_TMP=1 keeps the files.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/nodelib.sh"
t_begin "one-node cluster (scripts/node.sh)"

K8S_BIN=${1:-} NODE_BIN=${2:-} RUNSC=${3:-} PAUSE_ARCHIVE=${4:-} TEST_IMAGE=${5:-}
[ -r "$PAUSE_ARCHIVE" ] || { t_fail "missing: ${PAUSE_ARCHIVE:-(pause archive)} (see tests/node/CMakeLists.txt)"; t_end; }
[ -n "$TEST_IMAGE" ] || { t_fail "missing: the test image's name"; t_end; }
node_attach "$K8S_BIN" "$NODE_BIN/kubelet" "$RUNSC"
NODE=$NODE_SH
NS=cluster
KC=("$K8S_BIN/kubectl" --kubeconfig "$D/kubeconfig" --request-timeout 30s --cache-dir "$T_TMP/kube-cache" -n "$NS")
kc() { "${KC[@]}" "$@"; }
node_namespace "$NS"

KUBERNETES_SVC=10.0.0.1

# wait_running POD SECONDS: prints the seconds it took, fails after SECONDS.
wait_running() {
	local pod=$1 limit=$2 t0=$SECONDS phase
	while :; do
		phase=$(kc get pod "$pod" -o jsonpath='{.status.phase}' 2>/dev/null)
		[ "$phase" = Running ] && { echo $((SECONDS - t0)); return 0; }
		[ $((SECONDS - t0)) -lt "$limit" ] || return 1
		sleep 0.5
	done
}

echo "-- the node"
NETNS=$(cat "$D/node/netns")

t_eq "node hangar-node is Ready" True \
	"$(kc get node hangar-node -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
kv=$(kc get node hangar-node -o jsonpath='{.status.nodeInfo.kubeletVersion}')
t_check "kubelet is v1.37.x (got $kv)" grep -q '^v1\.37\.' <<<"$kv"
rv=$(kc get node hangar-node -o jsonpath='{.status.nodeInfo.containerRuntimeVersion}')
t_check "runtime is containerd 2.4.x (got $rv)" grep -q '^containerd://2\.4\.' <<<"$rv"
t_eq "node's InternalIP is the node address" "$HANGAR_NODE_IP" \
	"$(kc get node hangar-node -o jsonpath='{.status.addresses[?(@.type=="InternalIP")].address}')"
t_eq "RuntimeClass gvisor has handler runsc" runsc "$(kc get runtimeclass gvisor -o jsonpath='{.handler}')"
server=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.server}')
t_eq "the kubeconfig points at the node's address, not loopback" "https://$HANGAR_NODE_IP:6443" "$server"
t_check "the host reaches the API server (this shell is in the host's network namespace)" \
	curl -fsS -o /dev/null --max-time 10 --cacert "$D/pki/ca.crt" --cert "$D/pki/admin.crt" --key "$D/pki/admin.key" "$server/readyz"
t_check "this test runs in the host's network namespace, not the node's" \
	test "$(readlink /proc/self/ns/net)" != "$NETNS"
routes=$("$NODE" exec "$D" ip -4 route show)
t_check "no default route in the node's network namespace" bash -c '! grep -q "^default" <<<"$1"' _ "$routes"
t_check "the node's routes are its link and the pods' bridge only (got: $(tr '\n' ';' <<<"$routes"))" \
	bash -c '[ "$(grep -vc "dev eth0\|dev cni0" <<<"$1")" = 0 ]' _ "$routes"
t_check "ServiceAccount admission is on (the API server does not disable it)" \
	bash -c '! tr "\0" " " </proc/$1/cmdline | grep -q "disable-admission-plugins ServiceAccount"' _ "$HANGAR_APISERVER_PID"

echo "-- a runc pod and a gVisor pod"
# Both pods get the host's (static) kubectl read-only at /k8s: an in-cluster
# client that checks the API server's certificate.
pod_yaml() { # NAME RUNTIMECLASS
	cat <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app: $1}}
spec:
  ${2:+runtimeClassName: $2}
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 0, runAsGroup: 0}
  containers:
  - name: main
    image: $TEST_IMAGE
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    volumeMounts: [{name: k8s, mountPath: /k8s, readOnly: true}]
  volumes: [{name: k8s, hostPath: {path: "$K8S_BIN", type: Directory}}]
EOF
}
pod_yaml plain "" | kc apply -f - >/dev/null
pod_yaml sandboxed gvisor | kc apply -f - >/dev/null
if s=$(wait_running plain 180); then t_check "runc pod Running (${s} s)" true; else t_fail "runc pod not Running: $(kc describe pod plain | tail -n 15)"; fi
if s=$(wait_running sandboxed 240); then t_check "gVisor pod Running (${s} s)" true; else t_fail "gVisor pod not Running: $(kc describe pod sandboxed | tail -n 15)"; fi
t_eq "the scheduler placed the runc pod" hangar-node "$(kc get pod plain -o jsonpath='{.spec.nodeName}')"
t_eq "the scheduler placed the gVisor pod" hangar-node "$(kc get pod sandboxed -o jsonpath='{.spec.nodeName}')"
gv_dmesg=$(kc exec sandboxed -- dmesg 2>&1)
t_check "the gVisor pod's dmesg is gVisor's ($(head -n 1 <<<"$gv_dmesg"))" grep -q 'Starting gVisor' <<<"$gv_dmesg"
plain_dmesg=$(kc exec plain -- dmesg 2>&1)
t_check "the runc pod's dmesg is not gVisor's" bash -c '! grep -q "Starting gVisor" <<<"$1"' _ "$plain_dmesg"
sandbox_id=$(kc get pod sandboxed -o jsonpath='{.status.containerStatuses[0].containerID}')
sandbox_id=${sandbox_id#containerd://}
runsc_list=$("$NODE" exec "$D" "$HANGAR_RUNSC_CURRENT" --root /run/containerd/runsc/k8s.io list 2>&1)
t_check "runsc lists the gVisor pod's container" grep -q "^${sandbox_id:-none}" <<<"$runsc_list"
t_check "runsc does not list the runc pod's container" \
	bash -c '! grep -q "^$1" <<<"$2"' _ "$(kc get pod plain -o jsonpath='{.status.containerStatuses[0].containerID}' | sed 's|containerd://||')" "$runsc_list"

echo "-- kubectl exec from the host, with stdin"
for pod in plain sandboxed; do
	word="hangar-$pod-$RANDOM$RANDOM"
	got=$(printf '%s\n' "$word" | kc exec -i "$pod" -- cat 2>&1)
	t_eq "$pod: stdin comes back through exec" "$word" "$got"
	got=$(printf 'line1\nline2\n' | kc exec -i "$pod" -- sh -c 'wc -l' 2>&1 | tr -d ' ')
	t_eq "$pod: two lines of stdin counted inside" 2 "$got"
	kc exec "$pod" -- sh -c 'exit 7' >/dev/null 2>&1
	t_eq "$pod: exec's exit status comes back" 7 "$?"
done

echo "-- a Service whose endpoint the API server reaches"
token="served-$RANDOM$RANDOM"
kc apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 1
      securityContext: {runAsUser: 0, runAsGroup: 0}
      containers:
      - name: httpd
        image: $TEST_IMAGE
        imagePullPolicy: Never
        command: ["sh", "-c", "mkdir -p /tmp/www && echo $token >/tmp/www/index.html && exec busybox httpd -f -p 8080 -h /tmp/www"]
        ports: [{containerPort: 8080}]
        readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
EOF
if t_wait_for '[ -n "$(kc get endpointslices -l kubernetes.io/service-name=web -o jsonpath="{.items[*].endpoints[?(@.conditions.ready==true)].addresses[0]}" 2>/dev/null)" ]' 180; then
	t_check "the Deployment's pod is a ready endpoint of Service web (EndpointSlice)" true
else
	t_fail "no ready endpoint for Service web: $(kc get pods -l app=web -o wide 2>&1 | tail -n 3)"
fi
ep=$(kc get endpointslices -l kubernetes.io/service-name=web -o jsonpath='{.items[0].endpoints[0].addresses[0]}' 2>/dev/null)
t_check "the endpoint is a pod address ($ep) in 10.244.0.0/24" grep -q '^10\.244\.0\.' <<<"$ep"
got=$(kc get --raw "/api/v1/namespaces/$NS/services/http:web:80/proxy/index.html" 2>&1)
t_eq "the API server reaches the Service's pod (service proxy)" "$token" "$got"

echo "-- an admission webhook Service called by the API server at its pod's IP"
# The webhook: a few lines of the host's python3 (the pod chroots into the
# host's root, read-only), TLS with a certificate for hook.$NS.svc.
H=$T_TMP/hook
mkdir -p "$H"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=hook-ca \
	-keyout "$H/ca.key" -out "$H/ca.crt" -addext basicConstraints=critical,CA:TRUE 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=hook.$NS.svc" \
	-keyout "$H/tls.key" -out "$H/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:hook.%s.svc\nextendedKeyUsage=serverAuth\n' "$NS" >"$H/ext"
openssl x509 -req -in "$H/tls.csr" -CA "$H/ca.crt" -CAkey "$H/ca.key" -CAcreateserial -days 1 \
	-extfile "$H/ext" -out "$H/tls.crt" 2>/dev/null
chmod 644 "$H/tls.key"
mark="hooked-$RANDOM$RANDOM"
cat >"$H/hook.py" <<EOF
import base64, http.server, json, ssl, sys
class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        patch = [{"op": "add", "path": "/metadata/labels/hooked", "value": "$mark"}]
        body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                           "response": {"uid": review["request"]["uid"], "allowed": True,
                                        "patchType": "JSONPatch",
                                        "patch": base64.b64encode(json.dumps(patch).encode()).decode()}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("reviewed", review["request"]["name"], flush=True)
server = http.server.HTTPServer(("0.0.0.0", 8443), Hook)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain("$H/tls.crt", "$H/tls.key")
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print("listening", flush=True)
server.serve_forever()
EOF
# The configuration is cluster-wide: it selects this namespace only, and
# goes on exit.
node_on_exit "kubectl delete mutatingwebhookconfiguration node-test-hook"
kc apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: hook, labels: {app: hook}}
spec:
  terminationGracePeriodSeconds: 1
  securityContext: {runAsUser: 0, runAsGroup: 0}
  containers:
  - name: hook
    image: $TEST_IMAGE
    imagePullPolicy: Never
    command: ["sh", "-c", "exec chroot /host python3 $H/hook.py"]
    readinessProbe: {tcpSocket: {port: 8443}, periodSeconds: 1}
    volumeMounts: [{name: host, mountPath: /host, readOnly: true}]
  volumes: [{name: host, hostPath: {path: /, type: Directory}}]
---
apiVersion: v1
kind: Service
metadata: {name: hook}
spec:
  selector: {app: hook}
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: node-test-hook}
webhooks:
- name: hook.node-test.hangar.dev
  objectSelector: {matchLabels: {hook-me: "yes"}}
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $NS}}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  clientConfig:
    service: {name: hook, namespace: $NS, path: /mutate, port: 443}
    caBundle: $(base64 -w0 "$H/ca.crt")
  failurePolicy: Fail
  sideEffects: None
  admissionReviewVersions: [v1]
  timeoutSeconds: 10
EOF
if t_wait_for '[ -n "$(kc get endpointslices -l kubernetes.io/service-name=hook -o jsonpath="{.items[*].endpoints[?(@.conditions.ready==true)].addresses[0]}" 2>/dev/null)" ]' 180; then
	t_check "the webhook pod is a ready endpoint of Service hook" true
else
	t_fail "webhook pod not ready: $(kc logs hook 2>&1 | tail -n 5)"
fi
hooked_pod() {
	kc create --dry-run=server -o 'jsonpath={.metadata.labels.hooked}' -f - 2>&1 <<EOF
apiVersion: v1
kind: Pod
metadata: {name: to-hook, labels: {hook-me: "yes"}}
spec: {containers: [{name: c, image: $TEST_IMAGE, imagePullPolicy: Never}]}
EOF
}
# A new webhook configuration takes a moment to be picked up.
t_wait_for '[ "$(hooked_pod)" = "$mark" ]' 60
t_eq "a pod created through the API server comes back patched by the webhook" "$mark" "$(hooked_pod)"
t_check "the webhook pod logged the review" grep -q "reviewed to-hook" <<<"$(kc logs hook 2>&1)"
kc delete mutatingwebhookconfiguration node-test-hook >/dev/null

echo "-- a pod reaches the API server through the kubernetes Service"
t_eq "the kubernetes Service's endpoint is the API server on the node's address" "$HANGAR_NODE_IP:6443" \
	"$(kc get endpointslices -n default -l kubernetes.io/service-name=kubernetes -o jsonpath='{.items[0].endpoints[0].addresses[0]}:{.items[0].ports[0].port}')"
kc create role pod-reader --verb=get --resource=pods >/dev/null
kc create rolebinding pod-reader --role=pod-reader --serviceaccount="$NS:default" >/dev/null
tok=$(kc exec plain -- cat /var/run/secrets/kubernetes.io/serviceaccount/token 2>/dev/null)
t_check "the runc pod has a service-account token mounted (a JWT)" grep -Eq '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$' <<<"$tok"
for pod in plain sandboxed; do
	t_eq "$pod: sees the kubernetes Service in its environment" "$KUBERNETES_SVC:443" \
		"$(kc exec "$pod" -- sh -c 'echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT' 2>&1)"
	# kubectl in the pod: in-cluster config (10.0.0.1:443, the token, the CA).
	got=$(kc exec "$pod" -- /k8s/kubectl get pod "$pod" -o 'jsonpath={.metadata.name}' 2>&1)
	t_eq "$pod: reads its own pod through the kubernetes Service with its token" "$pod" "$got"
	got=$(kc exec "$pod" -- /k8s/kubectl get secrets 2>&1)
	t_check "$pod: is refused what its account may not do, as that account" \
		grep -q "forbidden.*system:serviceaccount:$NS:default" <<<"$got"
done

echo "-- a Job completes"
kc create job once --image="$TEST_IMAGE" -- true >/dev/null
kc patch job once --type=json -p '[{"op":"add","path":"/spec/template/spec/containers/0/imagePullPolicy","value":"Never"}]' >/dev/null 2>&1 || true
if t_wait_for '[ "$(kc get job once -o jsonpath="{.status.succeeded}" 2>/dev/null)" = 1 ]' 120; then
	t_check "Job once succeeded" true
else
	t_fail "Job once did not succeed: $(kc get pods -l job-name=once 2>&1 | tail -n 2)"
fi

echo "-- a second node whose start is killed half-way, then stop"
export HANGAR_NODE_BIN=$NODE_BIN HANGAR_RUNSC_CURRENT=$RUNSC
D2=$T_TMP/half
node_on_exit "$NODE stop $D2" # (a no-op once the check below stopped it)
"$NODE" start "$D2" "$PAUSE_ARCHIVE" >"$T_TMP/half.log" 2>&1 &
half=$!
t_cleanup_pid "$half"
# Kill it once containerd runs (pods can not be there yet; namespaces, link,
# control plane and mounts are).
if t_wait_for '[ -s "$D2/node/containerd.pid" ] && grep -q "importing\|kube-controller-manager" "$T_TMP/half.log"' 240; then
	NETNS2=$(cat "$D2/node/netns")
	t_signal KILL "$half"
	wait "$half" 2>/dev/null
	t_check "the half-started node's containerd still runs after its start was killed" \
		t_procctl alive @"$D2/node/containerd.pid"
	"$NODE" stop "$D2" >"$T_TMP/half-stop.log" 2>&1
	t_eq "stop of the half-started node exits 0" 0 "$?"
	node_assert_clean "$D2" "$(node_id "$D2")" "$NETNS2" "half-started"
else
	t_signal KILL "$half" 2>/dev/null
	t_fail "the second start did not get as far as containerd: $(tail -n 5 "$T_TMP/half.log")"
	"$NODE" stop "$D2" >/dev/null 2>&1
fi

t_end
