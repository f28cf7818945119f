#!/usr/bin/env bash
# Port-forward lookups off the webhook's workers (W13 of
# docs/research/guard-safe-by-default.md; webhook/podlookup.c). The webhook
# reads the pod a port-forward names from the API server; here it reads it
# through a TCP proxy (freeze_proxy.py) in front of the real kube-apiserver,
# which SIGUSR1 freezes. With the webhook on two workers and the reads
# frozen:
#   - port-forwards sent by the API server are refused (pod-unknown) before
#     its 5 s timeout: the lookup's deadline, not the API server's, ends them
#     (fail closed, never "failed calling webhook");
#   - sandbox pods created meanwhile are injected and admitted: /mutate and
#     /validate reviews are answered while every lookup hangs (before, the
#     lookups held both workers and every connection on them);
#   - more port-forward reviews than the lane queues are refused at once,
#     named;
#   - the webhook stops cleanly with lookups in flight;
#   - thawed, a port-forward by hangar's identity is admitted again.
# usage: test_lookup_lane.sh HANGAR_WEBHOOK TOOLS_BIN
WEBHOOK=$(realpath "$1")
TOOLS_BIN=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/doorslib.sh"
t_begin "port-forward lookups on their own lane, the API server frozen"
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

# shellcheck disable=SC2119 # the default control plane
doors_up
pod box | kubectl create -f - >/dev/null
doors_wait

# The webhook's reads go through the proxy (its kubeconfig is read afresh
# for every lookup), the webhook on two workers.
APISERVER=$(kubectl config view --minify -o jsonpath='{.clusters[0].cluster.server}')
APIPORT=${APISERVER##*:}
python3 "$HERE/freeze_proxy.py" 127.0.0.1 "$APIPORT" proxy.port &
PROXY_PID=$!
t_cleanup_pid $PROXY_PID
t_wait_for "[ -s proxy.port ]" 10 || { echo "the proxy did not start"; exit 1; }
sed -i "s#server: \"$APISERVER\"#server: \"https://127.0.0.1:$(cat proxy.port)\"#" webhook-kubeconfig
t_check "the webhook's kubeconfig names the proxy" grep -q "127.0.0.1:$(cat proxy.port)" webhook-kubeconfig
# shellcheck disable=SC2119 # no settings beyond the environment's
HANGAR_THREADS=2 restart_webhook

portforward() { # AS...: a port-forward to box, admitted by admission only
        kubectl get --raw "/api/v1/namespaces/$NS/pods/box/portforward?ports=1" "$@" 2>&1
}
out=$(portforward "${H[@]}")
t_check "through the proxy: a port-forward by hangar's identity is admitted (got: $(head -c 200 <<<"$out"))" \
        grep -q "does not have a host assigned" <<<"$out"
out=$(portforward "${M[@]}")
t_check "through the proxy: mallory's is refused, port-forward (got: $(head -c 200 <<<"$out"))" \
        grep -q "port-forward" <<<"$out"

t_signal USR1 "$PROXY_PID"
# Six port-forwards by hangar's identity, which only a read pod admits.
for i in 1 2 3 4 5 6; do
        portforward "${H[@]}" >"pf-$i.out" &
        echo $! >"pf-$i.pid"
done
sleep 1
# Meanwhile, sandbox pods: each a /mutate and a /validate review.
created=0
for i in 1 2 3 4 5 6; do
        if pod "meanwhile-$i" | kubectl create --dry-run=server -o json -f - 2>"create-$i.err" |
                jq -e '[.spec.containers[].name] | index("hangar-driver") != null' >/dev/null; then
                created=$((created + 1))
        fi
done
t_eq "lookups frozen: every sandbox pod created meanwhile is injected and admitted ($(head -c 200 create-1.err))" \
        6 "$created"
for i in 1 2 3 4 5 6; do
        t_wait_pid "pf-$i.pid" 30
done
# shellcheck disable=SC2016 # $f is the inner shell's
t_check "lookups frozen: the port-forwards are refused by the webhook, pod-unknown (got: $(head -c 300 pf-1.out))" \
        bash -c 'for f in pf-*.out; do grep -q "denied the request" "$f" && grep -q "pod-unknown" "$f" || exit 1; done'
t_check "... never left to the API server's timeout" \
        bash -c '! grep -l "failed calling webhook" pf-*.out'
t_check "... the webhook says why: the read ran out of time" \
        bash -c 'jq -c "select(.msg == \"review\" and .reason == \"pod-unknown\") | .detail" webhook.log | grep -q "Timeout was reached\|no time left"'

# More port-forward reviews than the lane queues (2 reading, 64 waiting),
# straight at the webhook with the API server's longest timeout here (10 s,
# the webhook's request timeout), so that all are sent while the first
# lookups still hang: the rest are refused at once, named.
jq -n '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {
        uid: "pf", kind: {group: "", version: "v1", kind: "PodPortForwardOptions"}, resource: {group: "", version: "v1", resource: "pods"},
        subResource: "portforward", namespace: "sandboxes", name: "box", operation: "CONNECT",
        userInfo: {username: "system:serviceaccount:hangar:hangar"}, object: {ports: [1]}}}' >pf-review.json
mkdir -p flood
for i in $(seq 1 80); do
        curl -s --max-time 20 --cacert pki/ca.crt -H 'Content-Type: application/json' --data-binary @pf-review.json \
                "https://127.0.0.1:$PORT/validate?timeout=10s" >"flood/$i.json" &
done
wait_flood() { [ "$(jq -s 'length' flood/*.json 2>/dev/null)" = 80 ]; }
t_check "a flood of 80 frozen lookups: all answered" t_wait_for wait_flood 40
t_eq "... every one refused" 0 "$(jq -s '[.[] | select(.response.allowed != false)] | length' flood/*.json)"
queued_out=$(jq -s '[.[] | select(.response.status.message | test("too many port-forward lookups in flight"))] | length' flood/*.json)
t_check "... some beyond the lane's queue refused as such ($queued_out of 80, 14 if all came in time)" \
        test "$queued_out" -ge 1

# Stopping with lookups in flight: no lookup may keep a connection
# suspended past the stop (libmicrohttpd aborts on one), nor the stop wait
# on the frozen API server beyond the lookup's deadline.
curl -s --max-time 30 --cacert pki/ca.crt -H 'Content-Type: application/json' --data-binary @pf-review.json \
        "https://127.0.0.1:$PORT/validate?timeout=5s" >stopping.json &
echo $! >stopping.pid
sleep 1
t_signal TERM "$WEBHOOK_PID"
wait "$WEBHOOK_PID"
t_eq "stopped with a lookup in flight: exit 0" 0 $?
t_wait_pid stopping.pid 30
t_check "... the review in flight was let go, answered or closed, not held ($(head -c 200 stopping.json))" \
        test $? != 255

t_signal USR2 "$PROXY_PID"
start_webhook || { cat webhook.log; exit 1; }
out=$(portforward "${H[@]}")
t_check "thawed: a port-forward by hangar's identity is admitted again (got: $(head -c 200 <<<"$out"))" \
        grep -q "does not have a host assigned" <<<"$out"
t_end
