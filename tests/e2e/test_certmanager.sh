#!/usr/bin/env bash
# The chart's certificates.mode=certManager against real cert-manager: a real
# kube-apiserver + etcd, cert-manager's own CRDs, its controller and
# cainjector (built by scripts/certmanager-tools.sh) run as processes with
# the admin kubeconfig (no leader election), hangar-webhook run locally as
# the chart's Deployment would run it (its rendered config.yaml, the Secret
# published to files as the kubelet publishes a Secret volume).
#
# The chart is installed in service mode, as certManager mode requires. The
# API server reaches the Service through its endpoint: kube-apiserver runs
# with --enable-aggregator-routing (webhook calls go to an EndpointSlice
# address, not the ClusterIP, which nothing routes here), and the test writes
# the EndpointSlice a Service controller would write, pointing at the
# webhook on this host's non-loopback address (Endpoints may not be
# loopback). TLS is checked as in a cluster: server name
# FULLNAME.NAMESPACE.svc against the caBundle cainjector wrote.
#
# (a) the chart's self-signed chain; (b) an existing ClusterIssuer (a CA the
# admin made). For each: the serving certificate is issued into the Secret,
# cainjector writes the caBundle into both webhook configurations, the API
# server calls the webhook over it (sandbox pods injected). Before
# cainjector runs, sandbox pods are refused (failurePolicy Fail, untrusted
# certificate): the caBundle is what makes it work. Then a renewal forced
# short (duration 1h, renewBefore 59m50s: cert-manager's minimum duration is
# 1h; every ~10 s a new key and certificate) while pods are created: none is
# refused, the webhook loads each renewed pair, the caBundle stays.
# usage: test_certmanager.sh HANGAR_WEBHOOK TOOLS_BIN CERTMANAGER_BIN

# Helpers below run through t_check, t_wait_for (eval) and traps.
# shellcheck disable=SC2317
if [ $# -ne 3 ] || [ -z "$3" ]; then
        echo "usage: $0 HANGAR_WEBHOOK TOOLS_BIN CERTMANAGER_BIN (configure with -DHANGAR_CERTMANAGER_BIN=\$(scripts/certmanager-tools.sh | tail -n1))" >&2
        exit 1
fi
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
CM_BIN=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=../lib/testlib.sh source-path=SCRIPTDIR
. "$HERE/../lib/testlib.sh"
for b in cert-manager-controller cert-manager-cainjector; do
        [ -x "$CM_BIN/$b" ] || { echo "$CM_BIN/$b missing: run scripts/certmanager-tools.sh" >&2; exit 1; }
done
CM_VERSION=$(sed -n 's/^cert-manager=\([^ ]*\).*/\1/p' "$CM_BIN/../BUILD-INFO" 2>/dev/null)
t_begin "cert-manager ${CM_VERSION:-?} end to end (kube-apiserver $("$TOOLS_BIN/kube-apiserver" --version | awk '{print $2}'))"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH
CHART=$ROOT/charts/hangar-webhook
NS=hangar-system

# This host's first global IPv4 address: where the EndpointSlice points.
HOST_IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{sub("/.*", "", $4); print $4; exit}')
if [ -z "$HOST_IP" ]; then
        echo "no non-loopback IPv4 address on this host: an EndpointSlice may not point at loopback" >&2
        exit 1
fi

"$ROOT/scripts/control-plane.sh" start "$T_TMP/cp" --apiserver-arg --enable-aggregator-routing=true >cp.log 2>&1 ||
        { cat cp.log; exit 1; }
stop_cp() { "$ROOT/scripts/control-plane.sh" stop "$T_TMP/cp" >>cp.log 2>&1; }
# Our processes first (cert-manager would retry against a stopped API server).
trap 't_main_shell || exit; t_kill_registered; stop_cp; t_cleanup' EXIT
export KUBECONFIG=$T_TMP/cp/kubeconfig
for n in e2e "$NS" cert-manager; do kubectl create namespace "$n" >/dev/null; done
kubectl label namespace e2e hangar.dev/injection=enabled >/dev/null # opted in to hangar (the chart's scope)

# cert-manager's CRDs, then its controller.
kubectl apply -f "$CM_BIN/../crds/" >crds.log 2>&1 || { cat crds.log; exit 1; }
t_check "cert-manager's CRDs established" kubectl wait --for=condition=Established --timeout=60s \
        crd/certificates.cert-manager.io crd/certificaterequests.cert-manager.io crd/issuers.cert-manager.io \
        crd/clusterissuers.cert-manager.io
"$CM_BIN/cert-manager-controller" --kubeconfig "$KUBECONFIG" --cluster-resource-namespace cert-manager -v=2 \
        2>controller.log &
CM_PID=$!
t_cleanup_pid $CM_PID
start_cainjector() {
        "$CM_BIN/cert-manager-cainjector" --kubeconfig "$KUBECONFIG" -v=2 2>>cainjector.log &
        CAI_PID=$!
        t_cleanup_pid $CAI_PID
}

pod_manifest() { # NAME SELECTOR_KEY
        jq -n --arg name "$1" --arg key "$2" '{
                apiVersion: "v1", kind: "Pod",
                metadata: {name: $name, namespace: "e2e", labels: {($key): "true"}},
                spec: {containers: [{name: "sandbox", image: "registry.example/agent-env:1.2",
                        securityContext: {runAsUser: 1000, runAsGroup: 1000}}]}}'
}
injected() { # NAME: the stored pod has the sidecar
        [ "$(kubectl get pod -n e2e "$1" -o jsonpath='{.spec.containers[1].name}' 2>/dev/null)" = hangar-driver ]
}
b64_of() { kubectl get secret -n "$1" "$2" -o json 2>/dev/null | jq -r --arg k "$3" '.data[$k] // empty'; }

# Publishes Secret NS/$1 (tls.crt, tls.key) into directory $2 the way the
# kubelet updates a Secret volume (atomic ..data swap), each time it changes;
# one line per published certificate's serial in $2.serials.
secret_volume() {
        local last="" json crt key
        mkdir -p "$2" "$2.src"
        while :; do
                # One read: the pair of one revision, never a mix of two.
                json=$(kubectl get secret -n "$NS" "$1" -o json 2>/dev/null)
                crt=$(jq -r '.data["tls.crt"] // empty' <<<"$json" 2>/dev/null)
                key=$(jq -r '.data["tls.key"] // empty' <<<"$json" 2>/dev/null)
                if [ -n "$crt" ] && [ -n "$key" ] && [ "$crt" != "$last" ]; then
                        base64 -d <<<"$crt" >"$2.src/tls.crt"
                        base64 -d <<<"$key" >"$2.src/tls.key"
                        t_secret_publish "$2" "$2.src"
                        openssl x509 -in "$2.src/tls.crt" -noout -serial >>"$2.serials"
                        openssl pkey -in "$2.src/tls.key" -pubout | sha256sum >>"$2.keys"
                        last=$crt
                fi
                sleep 1
        done
}

# Installs release $1 in certManager mode (extra --set flags after it), runs
# the webhook for it from the chart's own config.yaml, and points its
# Service at the webhook. Sets FULL, PORT, KEY (the release's selector key).
install_release() {
        local rel=$1
        shift
        PORT=$(t_free_port)
        KEY=hangar.dev/$rel
        helm install "$rel" "$CHART" -n "$NS" --set certificates.mode=certManager --set driverSidecar.enabled=true \
                --set selector.key="$KEY" --set server.port="$PORT" --set server.healthPort="$(t_free_port)" \
                --set server.certPollSeconds=1 "$@" >>helm.log 2>&1 || { tail -n 20 helm.log; return 1; }
        FULL=$(kubectl get service -n "$NS" -l app.kubernetes.io/instance="$rel" -o jsonpath='{.items[0].metadata.name}')
        [ -n "$FULL" ] || { echo "release $rel rendered no Service" >&2; return 1; }
        # The Deployment's process, outside a pod: its config, its Secret volume.
        kubectl get configmap -n "$NS" "$FULL" -o jsonpath='{.data.config\.yaml}' |
                sed "s#^  address: \"0.0.0.0\"\$#  address: \"$HOST_IP\"#; s#/etc/hangar-webhook/tls/#$T_TMP/$rel-tls/#" \
                        >"$rel.yaml"
        grep -q "address: \"$HOST_IP\"" "$rel.yaml" || { echo "could not rewrite $rel.yaml" >&2; return 1; }
        secret_volume "$FULL-tls" "$rel-tls" &
        t_cleanup_pid $!
        # The EndpointSlice a Service controller would write.
        kubectl apply -f - >/dev/null <<EOF
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: $FULL-local
  namespace: $NS
  labels: {kubernetes.io/service-name: $FULL}
addressType: IPv4
ports: [{name: https, port: $PORT, protocol: TCP}]
endpoints: [{addresses: ["$HOST_IP"], conditions: {ready: true}}]
EOF
}
start_webhook() { # RELEASE: once its pair is published
        t_wait_for "[ -e $1-tls/tls.crt ]" 60 || return 1
        "$WEBHOOK" serve --config "$1.yaml" 2>>"$1-webhook.log" &
        t_cleanup_pid $!
        t_wait_for "curl -s -k https://$HOST_IP:$PORT/readyz >/dev/null" 15
}
cert_ready() { # NAME
        [ "$(kubectl get certificate -n "$NS" "$1" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}
bundles() { # FULL: the caBundles of all webhooks of both configurations, one a line
        kubectl get mutatingwebhookconfiguration "$1" -o json | jq -r '.webhooks[].clientConfig.caBundle // ""'
        kubectl get validatingwebhookconfiguration "$1" -o json | jq -r '.webhooks[].clientConfig.caBundle // ""'
}
all_bundles_are() { # FULL B64
        local b n=0
        while read -r b; do
                [ "$b" = "$2" ] || return 1
                n=$((n + 1))
        done < <(bundles "$1")
        [ "$n" -ge 3 ] # one mutating webhook, two doors
}

# ---- (a) the chart's self-signed chain ---------------------------------------
install_release selfsigned || exit 1
A=$FULL
A_PORT=$PORT
A_KEY=$KEY
t_eq "the chart made the chain: selfSigned Issuer, CA Certificate, CA Issuer, serving Certificate" \
        "$A-ca $A-serving / $A-ca $A-selfsigned" \
        "$(kubectl get certificates -n "$NS" -o jsonpath='{.items[*].metadata.name}') / $(kubectl get issuers -n "$NS" -o jsonpath='{.items[*].metadata.name}')"
t_check "the CA Certificate is issued (Ready)" t_wait_for "cert_ready $A-ca" 60
t_check "the serving Certificate is issued (Ready)" t_wait_for "cert_ready $A-serving" 60
b64_of "$NS" "$A-ca" tls.crt | base64 -d >a-ca.crt
b64_of "$NS" "$A-tls" tls.crt | base64 -d >a-serving.crt
t_check "the CA is a CA (basicConstraints CA:TRUE)" \
        bash -c "openssl x509 -in a-ca.crt -noout -ext basicConstraints | grep -q 'CA:TRUE'"
t_check "the serving certificate in $A-tls is signed by the chart's CA" openssl verify -CAfile a-ca.crt a-serving.crt
t_eq "the serving certificate names the Service" \
        "DNS:$A, DNS:$A.$NS, DNS:$A.$NS.svc, DNS:$A.$NS.svc.cluster.local" \
        "$(openssl x509 -in a-serving.crt -noout -ext subjectAltName | tail -n1 | sed 's/^ *//')"
t_eq "the Secret carries the CA for cainjector (ca.crt)" "$(base64 -w0 a-ca.crt)" "$(b64_of "$NS" "$A-tls" ca.crt)"
t_check "the webhook serves the issued pair" start_webhook selfsigned

# Before cainjector runs: the configurations have no caBundle, and the API
# server (failurePolicy Fail) refuses sandbox pods rather than trust nothing.
t_eq "without cainjector: no caBundle in either configuration" "" "$(bundles "$A" | tr -d '\n')"
if pod_manifest pre-inject "$A_KEY" | kubectl create -f - >/dev/null 2>pre.err; then
        t_fail "a sandbox pod was created with no caBundle (the API server cannot have verified the webhook)"
else
        t_check "without cainjector: sandbox pod refused ($(head -c 160 pre.err))" \
                grep -q 'failed calling webhook.*x509' pre.err
fi

start_cainjector
A_CA=$(base64 -w0 a-ca.crt)
t_check "cainjector wrote the CA into the Mutating and both Validating webhooks" t_wait_for "all_bundles_are $A '$A_CA'" 60
t_check "the API server calls the webhook over it: a sandbox pod is injected" t_wait_for \
        "pod_manifest a-1 '$A_KEY' | kubectl create -f - >/dev/null 2>&1" 30
t_check "... stored with hangar-driver" injected a-1
t_check "TLS as the API server checks it: server name $A.$NS.svc against the caBundle" bash -c \
        "openssl s_client -connect $HOST_IP:$A_PORT -servername $A.$NS.svc -verify_hostname $A.$NS.svc \
         -CAfile a-ca.crt -verify_return_error </dev/null >sclient.log 2>&1"
# The doors (ValidatingWebhookConfiguration, /validate) over the same
# caBundle: a port-forward to the injected pod by a user allowed
# pods/portforward is refused by the webhook itself (port-forward, or
# pod-unknown where it cannot read the pod), not by a TLS failure. (Exec
# into hangar-driver is the chart's ValidatingAdmissionPolicy's, in the API
# server: it never calls the webhook.)
kubectl create role -n e2e pod-exec --verb='*' --resource=pods,pods/exec,pods/portforward >/dev/null
kubectl create rolebinding -n e2e pod-exec --role=pod-exec --user=mallory >/dev/null
t_check "the doors too: a port-forward to the injected pod refused by the webhook" t_wait_for \
        "kubectl get --raw /api/v1/namespaces/e2e/pods/a-1/portforward?ports=1 --as mallory >door.out 2>&1; grep -Eq 'denied the request.*(port-forward|pod-unknown)' door.out" 30 ||
        head -c 300 door.out

# Renewal forced short while pods are created: duration 1h (cert-manager's
# minimum), renewBefore 59m50s (over its 5m minimum): a new key and
# certificate about every 10 s.
serial0=$(openssl x509 -in a-serving.crt -noout -serial)
loaded0=$(grep -c "serving certificate loaded" selfsigned-webhook.log)
: >renew.fail
creator() { # PREFIX SECONDS
        local i=0 end=$(($(date +%s) + $2))
        while [ "$(date +%s)" -lt "$end" ]; do
                i=$((i + 1))
                pod_manifest "$1-$i" "$A_KEY" | kubectl create -f - >/dev/null 2>>renew.err || echo "$1-$i" >>renew.fail
        done
}
# First a request, so that no connection in the API server's pool has sat
# idle for the webhook's idle timeout (server.requestTimeoutSeconds, 10 s;
# the API server keeps idle connections 90 s): a create racing that close
# fails with EOF. That is a keep-alive issue of the webhook's own (seen here
# once, at load 18, 10.3 s after the previous call), not a renewal one.
t_check "webhook reachable just before the renewal" t_wait_for \
        "pod_manifest warm '$A_KEY' | kubectl create --dry-run=server -f - >/dev/null 2>&1" 20
# Pods are created from before the switch to the short certificate on.
creator renew-a 50 &
C1=$!
creator renew-b 50 &
C2=$!
t_cleanup_pid $C1
t_cleanup_pid $C2
helm upgrade selfsigned "$CHART" -n "$NS" --reuse-values --set certificates.certManager.duration=1h \
        --set certificates.certManager.renewBefore=59m50s >>helm.log 2>&1 || tail -n 20 helm.log
t_check "the short Certificate is issued (duration 1h in the Secret's certificate)" t_wait_for \
        "b64_of $NS $A-tls tls.crt | base64 -d | openssl x509 -noout -checkend 3660 >/dev/null; [ \$? = 1 ]" 40
wait $C1 $C2
renewed_pods=$(kubectl get pods -n e2e -o json | jq '[.items[] | select(.metadata.name | startswith("renew-"))] | length')
serials=$(sort -u selfsigned-tls.serials | grep -vc "$serial0")
loaded=$(($(grep -c "serving certificate loaded" selfsigned-webhook.log) - loaded0))
t_eq "renewal: zero refused creates ($renewed_pods created; $(head -c 200 renew.err))" 0 "$(wc -l <renew.fail)"
t_check "renewal: pods were created throughout ($renewed_pods)" test "$renewed_pods" -gt 20
t_eq "renewal: all of them injected" "$renewed_pods" \
        "$(kubectl get pods -n e2e -o json | jq '[.items[] | select(.metadata.name | startswith("renew-")) | select(.spec.containers[1].name == "hangar-driver")] | length')"
t_check "renewal: cert-manager issued several new certificates meanwhile ($serials)" test "$serials" -ge 3
t_check "renewal: the webhook reloaded the renewed pairs ($loaded loads for $serials certificates, polled each second)" test "$loaded" -ge 3
t_eq "renewal: a new key with each certificate (rotationPolicy Always)" "$(sort -u selfsigned-tls.serials | wc -l)" \
        "$(sort -u selfsigned-tls.keys | wc -l)"
t_check "renewal: the caBundle stayed the chart's CA" all_bundles_are "$A" "$A_CA"
cert_rev=$(kubectl get certificate -n "$NS" "$A-serving" -o jsonpath='{.status.revision}')
t_check "renewal: the Certificate's revision rose with each issuance (revision $cert_rev)" test "${cert_rev:-0}" -ge 4
# Back to the defaults: one more issuance, then quiet.
helm upgrade selfsigned "$CHART" -n "$NS" --reuse-values --set certificates.certManager.duration=2160h \
        --set certificates.certManager.renewBefore=720h >>helm.log 2>&1 || tail -n 20 helm.log
t_check "back to duration 2160h: reissued and Ready" t_wait_for \
        "cert_ready $A-serving && b64_of $NS $A-tls tls.crt | base64 -d | openssl x509 -noout -checkend 86400 >/dev/null" 60

# ---- (b) an existing issuer: the admin's CA as a ClusterIssuer ---------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=admin-ca" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout admin-ca.key -out admin-ca.crt 2>/dev/null
kubectl create secret tls admin-ca -n cert-manager --cert=admin-ca.crt --key=admin-ca.key >/dev/null
kubectl apply -f - >/dev/null <<EOF
apiVersion: cert-manager.io/v1
kind: ClusterIssuer
metadata: {name: admin-ca}
spec: {ca: {secretName: admin-ca}}
EOF
install_release existing --set certificates.certManager.issuerRef.name=admin-ca \
        --set certificates.certManager.issuerRef.kind=ClusterIssuer || exit 1
B=$FULL
B_KEY=$KEY
t_eq "with an issuerRef the chart makes only the serving Certificate" "$B-serving" \
        "$(kubectl get certificates -n "$NS" -l app.kubernetes.io/instance=existing -o jsonpath='{.items[*].metadata.name}')"
t_check "the serving Certificate is issued by the ClusterIssuer (Ready)" t_wait_for "cert_ready $B-serving" 60
b64_of "$NS" "$B-tls" tls.crt | base64 -d >b-serving.crt
t_check "the serving certificate is signed by the admin's CA" openssl verify -CAfile admin-ca.crt b-serving.crt
t_check "the webhook serves it" start_webhook existing
B_CA=$(base64 -w0 admin-ca.crt)
t_check "cainjector wrote the admin's CA into both configurations" t_wait_for "all_bundles_are $B '$B_CA'" 60
t_check "the API server calls the webhook over it: a sandbox pod is injected" t_wait_for \
        "pod_manifest b-1 '$B_KEY' | kubectl create -f - >/dev/null 2>&1" 30
t_check "... stored with hangar-driver" injected b-1
t_check "the first release is untouched (its caBundle still its own CA)" all_bundles_are "$A" "$A_CA"

crs=$(kubectl get certificaterequests -n "$NS" -o json)
bad=$(jq -r '[.items[] | select(any(.status.conditions[]?; (.type == "Ready" and .reason == "Failed")
        or ((.type == "Denied" or .type == "InvalidRequest") and .status == "True"))) | .metadata.name] | join(" ")' <<<"$crs")
t_eq "no CertificateRequest failed, was denied or invalid (of $(jq '.items | length' <<<"$crs"))" "" "$bad"
t_eq "every CertificateRequest was approved (cert-manager's approver)" "" \
        "$(jq -r '[.items[] | select(all(.status.conditions[]?; .type != "Approved" or .status != "True"))
                | .metadata.name] | join(" ")' <<<"$crs")"
# Older ones are deleted: revisionHistoryLimit defaults to 1 since cert-manager 1.18.
t_eq "the latest CertificateRequest of each of the three Certificates is kept" 3 "$(jq '.items | length' <<<"$crs")"
t_check "cert-manager's controller and cainjector are still running" bash -c \
        "kill -0 $CM_PID && kill -0 $CAI_PID"
t_end
