#!/usr/bin/env bash
# The webhook's /metrics as Prometheus reads it: the real hangar-webhook on
# TLS, driven with reviews of every outcome (injected, skipped, denied, a
# malformed one, a wrong content type, an unknown path), scraped on the
# health port and on HTTPS, and each scrape passed through `promtool check
# metrics` (the exposition format and Prometheus' naming lint: HELP and TYPE,
# _total on counters, base units). The counters must say what was sent, the
# readiness and certificate gauges what the server holds. With TOOLS_BIN (a
# real kube-apiserver, scripts/control-plane.sh) the self-managed mode's
# series too: the CA's expiry, the caBundle in sync, its patches counted, and
# a failed sync showing as out of sync.
# usage: test_metrics.sh PATH/TO/hangar-webhook PROM_BIN [TOOLS_BIN]
#   PROM_BIN: directory with promtool (scripts/prom-tools.sh --print-bin-dir)
#   TOOLS_BIN: directory with kubectl, kube-apiserver, etcd (optional)
WEBHOOK=$(realpath "$1")
PROM_BIN=${2:-}
TOOLS=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "webhook metrics: promtool check metrics on real scrapes"

PROMTOOL=$PROM_BIN/promtool
if [ -z "$PROM_BIN" ] || [ ! -x "$PROMTOOL" ]; then
        t_fail "promtool not found in '$PROM_BIN': configure with -DHANGAR_PROM_BIN=\"\$(scripts/prom-tools.sh --print-bin-dir)\""
        t_end
fi
cd "$T_TMP" || exit 1
CORPUS=$HERE/../fuzz/corpus/admission

# metric_value FILE SERIES: the value of the line "SERIES VALUE", or "absent".
metric_value() {
        awk -v s="$2" '$1 == s { print $2; found = 1; exit } END { if (!found) print "absent" }' "$1"
}

# promtool_ok DESCRIPTION FILE: the scrape in FILE passes promtool check metrics.
promtool_ok() {
        T_CHECKS=$((T_CHECKS + 1))
        if "$PROMTOOL" check metrics <"$2" >promtool.out 2>&1; then
                echo "  ok   $1"
        else
                echo "  FAIL $1"
                sed 's/^/       /' promtool.out
                T_FAILURES=$((T_FAILURES + 1))
        fi
}

# ---- 1. static serving pair: every outcome of a review ------------------------
echo "-- reviews of every outcome, then the scrape"
"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 --days 30 >/dev/null || exit 1
mkdir -p secret
t_secret_publish secret pki
HEALTH_PORT=$(t_free_port)
cat >config.yaml <<CFG
driverSidecar: true
server:
  address: 127.0.0.1
  port: 0
  healthPort: $HEALTH_PORT
  certFile: $T_TMP/secret/tls.crt
  keyFile: $T_TMP/secret/tls.key
  certPollSeconds: 1
CFG
"$WEBHOOK" serve --config config.yaml 2>webhook.log &
t_cleanup_pid $!
PORT=$(t_webhook_port webhook.log) || { t_fail "the webhook did not start: $(cat webhook.log)"; t_end; }
URL=https://127.0.0.1:$PORT
HURL=http://127.0.0.1:$HEALTH_PORT
t_check "ready" t_wait_for "curl -sf '$HURL/readyz' >/dev/null" 10
review() { # FILE: POSTs it to /mutate, prints the HTTP status
        curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert pki/ca.crt \
                -H 'Content-Type: application/json' --data-binary @"$1" "$URL/mutate"
}
t_eq "an injected review" 200 "$(review "$CORPUS/inject.json")"
t_eq "another injected review" 200 "$(review "$CORPUS/inject.json")"
t_eq "a skipped review (pod not selected)" 200 "$(review "$CORPUS/unselected.json")"
t_eq "a skipped review (privileged container)" 200 "$(review "$CORPUS/privileged.json")"
t_eq "a denied review (conflicting pod)" 200 "$(review "$CORPUS/conflict.json")"
t_eq "a malformed review" 400 "$(review "$CORPUS/garbage.json")"
t_eq "a wrong content type" 415 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert pki/ca.crt \
        -H 'Content-Type: text/plain' --data-binary @"$CORPUS/inject.json" "$URL/mutate")"
t_eq "an unknown path" 404 "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$HURL/nope")"
# The log's decisions, in order: what the counters below must add up to.
t_eq "the log's decisions" "injected injected skipped skipped denied rejected" \
        "$(jq -r 'select(.msg == "review") | .decision' webhook.log | tr '\n' ' ' | sed 's/ $//')"

curl -sf --max-time 5 -D health.headers "$HURL/metrics" -o health.prom || t_fail "no scrape on the health port"
promtool_ok "promtool check metrics: health-port scrape" health.prom
t_check "Content-Type is the text format" grep -qi '^content-type: text/plain; version=0.0.4' health.headers

M=health.prom
t_eq "injected counted" 2 "$(metric_value $M 'hangar_webhook_reviews_total{decision="injected",reason="injected"}')"
t_eq "injections_total agrees" 2 "$(metric_value $M hangar_webhook_injections_total)"
t_eq "skipped (not selected) counted" 1 "$(metric_value $M 'hangar_webhook_reviews_total{decision="skipped",reason="not-selected"}')"
t_eq "skipped (privileged) counted" 1 "$(metric_value $M 'hangar_webhook_skips_total{reason="privileged-container"}')"
t_eq "denied counted" 1 "$(awk '$1 ~ /^hangar_webhook_reviews_total\{decision="denied"/ { n += $2 } END { print n + 0 }' $M)"
t_eq "bad request counted" 1 "$(metric_value $M 'hangar_webhook_errors_total{kind="bad_request"}')"
t_eq "wrong content type counted" 1 "$(metric_value $M 'hangar_webhook_errors_total{kind="unsupported_media_type"}')"
t_eq "unknown path counted" 1 "$(metric_value $M 'hangar_webhook_errors_total{kind="not_found"}')"
# With a health port, metrics are served there only (not to whoever reaches
# the webhook's HTTPS port).
t_eq "no /metrics over HTTPS with a health port" 404 \
        "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert pki/ca.crt "$URL/metrics")"
# Answered reviews are timed; the 400 and the 415 are not reviews.
t_eq "latency histogram counts the 5 answered reviews" 5 "$(metric_value $M hangar_webhook_review_duration_seconds_count)"
t_eq "+Inf bucket equals the count" 5 "$(metric_value $M 'hangar_webhook_review_duration_seconds_bucket{le="+Inf"}')"
t_check "buckets reach 30 s (webhook.timeoutSeconds' maximum)" grep -q '^hangar_webhook_review_duration_seconds_bucket{le="30"} ' $M
t_eq "ready gauge" 1 "$(metric_value $M hangar_webhook_ready)"
NOT_AFTER=$(date -d "$(openssl x509 -in pki/tls.crt -noout -enddate | cut -d= -f2)" +%s)
t_eq "serving certificate expiry is the leaf's notAfter" "$NOT_AFTER" "$(metric_value $M hangar_webhook_cert_not_after_seconds)"
t_eq "one pair loaded" 1 "$(metric_value $M hangar_webhook_cert_reloads_total)"
t_check "build_info carries the version" grep -Eq '^hangar_webhook_build_info\{version="[^"]+"\} 1$' $M
t_eq "no self-managed series outside the self-managed mode" absent "$(metric_value $M hangar_webhook_ca_bundle_in_sync)"

# A refused pair: counted, the gauge and readiness unchanged.
mkdir -p bad && cp pki/tls.crt bad/tls.crt && "$WEBHOOK" certs --out-dir other --ip 127.0.0.1 >/dev/null &&
        cp other/tls.key bad/tls.key
t_secret_publish secret bad
t_check "a mismatched pair is refused and counted" \
        t_wait_for "curl -s '$HURL/metrics' | grep -q '^hangar_webhook_errors_total{kind=\"cert_reload\"} 1$'" 10
curl -sf --max-time 5 "$HURL/metrics" -o refused.prom
promtool_ok "promtool check metrics: after a refused pair" refused.prom
t_eq "still ready on the old pair" 1 "$(metric_value refused.prom hangar_webhook_ready)"
t_eq "expiry of the pair still in use" "$NOT_AFTER" "$(metric_value refused.prom hangar_webhook_cert_not_after_seconds)"

# Not ready: no certificate at all.
HEALTH2=$(t_free_port)
sed -e "s|$T_TMP/secret/|$T_TMP/none/|" -e "s|healthPort: $HEALTH_PORT|healthPort: $HEALTH2|" config.yaml >config-none.yaml
"$WEBHOOK" serve --config config-none.yaml 2>webhook-none.log &
t_cleanup_pid $!
t_webhook_port webhook-none.log >/dev/null || t_fail "the certificate-less webhook did not start"
curl -sf --max-time 5 "http://127.0.0.1:$HEALTH2/metrics" -o none.prom || t_fail "no scrape without a certificate"
promtool_ok "promtool check metrics: before any certificate" none.prom
t_eq "not ready without a certificate" 0 "$(metric_value none.prom hangar_webhook_ready)"
t_eq "no expiry without a certificate" 0 "$(metric_value none.prom hangar_webhook_cert_not_after_seconds)"

# ---- 2. self-managed certificates against a real kube-apiserver ---------------
if [ -z "$TOOLS" ]; then
        echo "-- self-managed series: skipped (no TOOLS_BIN with kube-apiserver, etcd, kubectl)"
        t_end
fi
echo "-- self-managed series against a real kube-apiserver"
KUBECTL=$TOOLS/kubectl
CP=$T_TMP/cp
# shellcheck disable=SC2317 # called from the EXIT trap
cp_stop() { "$ROOT/scripts/control-plane.sh" stop "$CP" >"$T_TMP/cp-stop.log" 2>&1 || cat "$T_TMP/cp-stop.log"; }
trap 't_main_shell || exit; cp_stop; t_cleanup' EXIT
if ! HANGAR_K8S_BIN=$TOOLS "$ROOT/scripts/control-plane.sh" start "$CP" >cp-start.log 2>&1; then
        t_fail "control plane did not start: $(tail -n 20 cp-start.log)"
        t_end
fi
# shellcheck source=/dev/null # written by control-plane.sh start
. "$CP/env"
K=("$KUBECTL" --request-timeout 20s --cache-dir "$T_TMP/kubecache")
NS=hangar-metrics
MWC=hangar-metrics-test
"${K[@]}" create namespace "$NS" >/dev/null
# A webhook configuration for the webhook to keep trusting its CA: nothing
# matches it (an objectSelector no pod has), so it gates nothing here.
cat >mwc.json <<JSON
{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
 "metadata": {"name": "$MWC"},
 "webhooks": [{"name": "metrics-test.hangar.dev", "admissionReviewVersions": ["v1"],
   "sideEffects": "None", "failurePolicy": "Ignore", "timeoutSeconds": 2,
   "objectSelector": {"matchLabels": {"hangar.dev/never": "true"}},
   "clientConfig": {"url": "https://127.0.0.1:9/mutate"},
   "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}
JSON
"${K[@]}" apply -f mwc.json >/dev/null || t_fail "webhook configuration refused"
SM_HEALTH=$(t_free_port)
mkdir -p sm-tls
cat >sm-config.yaml <<CFG
server:
  address: 127.0.0.1
  port: 0
  healthPort: $SM_HEALTH
  certFile: $T_TMP/sm-tls/tls.crt
  keyFile: $T_TMP/sm-tls/tls.key
  certPollSeconds: 1
kubeconfig: $KUBECONFIG
tls:
  mode: selfManaged
  secretName: hangar-metrics-tls
  webhookConfigName: $MWC
  serviceName: hangar-metrics
  syncSeconds: 2
CFG
SM_T0=$(date +%s)
POD_NAMESPACE=$NS "$WEBHOOK" serve --config sm-config.yaml 2>sm-webhook.log &
SM_PID=$!
t_cleanup_pid $SM_PID
t_webhook_port sm-webhook.log >/dev/null || t_fail "self-managed webhook did not start: $(cat sm-webhook.log)"
SMURL=http://127.0.0.1:$SM_HEALTH/metrics
t_check "ready once its certificate is in place" t_wait_for "curl -sf http://127.0.0.1:$SM_HEALTH/readyz >/dev/null" 30
curl -sf --max-time 5 "$SMURL" -o sm.prom || t_fail "no scrape in self-managed mode"
promtool_ok "promtool check metrics: self-managed scrape" sm.prom
"${K[@]}" get secret -n "$NS" hangar-metrics-tls -o json | jq -r '.data["ca.crt"]' | base64 -d >sm-ca.crt
CA_NOT_AFTER=$(date -d "$(openssl x509 -in sm-ca.crt -noout -enddate | cut -d= -f2)" +%s)
t_eq "CA expiry is the Secret's CA's notAfter" "$CA_NOT_AFTER" "$(metric_value sm.prom hangar_webhook_ca_not_after_seconds)"
t_eq "caBundle in sync" 1 "$(metric_value sm.prom hangar_webhook_ca_bundle_in_sync)"
SYNCED=$(metric_value sm.prom hangar_webhook_ca_bundle_synced_timestamp_seconds)
# Not "within N seconds of now" (a loaded machine stretches any N): the
# time is this webhook's (not before it started, not after the scrape), and
# the sync goes on (every syncSeconds): a later scrape has a later time.
t_check "last in-sync time is this webhook's: after its start, not after the scrape ($SYNCED)" \
        test "${SYNCED%.*}" -ge "$SM_T0" -a "${SYNCED%.*}" -le "$(date +%s)"
synced_later() {
        curl -sf --max-time 5 "$SMURL" -o sm-later.prom &&
                [ "$(metric_value sm-later.prom hangar_webhook_ca_bundle_synced_timestamp_seconds | cut -d. -f1)" -gt "${SYNCED%.*}" ]
}
t_check "... and the sync goes on: a later scrape's time is later" t_wait_for synced_later 60
t_eq "the empty caBundle patched once" 1 "$(metric_value sm.prom hangar_webhook_ca_bundle_updates_total)"

# Something else blanks the caBundle: the next sync puts it back, counted.
"${K[@]}" patch mutatingwebhookconfiguration "$MWC" --type=json \
        -p '[{"op":"remove","path":"/webhooks/0/clientConfig/caBundle"}]' >/dev/null 2>&1
t_check "a blanked caBundle is patched back and counted" \
        t_wait_for "curl -s '$SMURL' | grep -q '^hangar_webhook_ca_bundle_updates_total 2$'" 20

# The configuration gone: syncs fail, and the gauge says so.
"${K[@]}" delete mutatingwebhookconfiguration "$MWC" >/dev/null
t_check "a failing sync shows as out of sync" \
        t_wait_for "curl -s '$SMURL' | grep -q '^hangar_webhook_ca_bundle_in_sync 0$'" 20
curl -sf --max-time 5 "$SMURL" -o sm-fail.prom
promtool_ok "promtool check metrics: while syncs fail" sm-fail.prom
FAIL_TS=$(metric_value sm-fail.prom hangar_webhook_ca_bundle_synced_timestamp_seconds)
sleep 6 # at least one more round: a failed sync is retried after 5 s
curl -sf --max-time 5 "$SMURL" -o sm-fail2.prom
t_check "the last in-sync time ($FAIL_TS) stays behind while they fail" bash -c \
        "[ '$FAIL_TS' != absent ] && [ '$FAIL_TS' = '$(metric_value sm-fail2.prom hangar_webhook_ca_bundle_synced_timestamp_seconds)' ]"
t_eq "still out of sync" 0 "$(metric_value sm-fail2.prom hangar_webhook_ca_bundle_in_sync)"
"${K[@]}" apply -f mwc.json >/dev/null
t_check "back in sync once the configuration is back" \
        t_wait_for "curl -s '$SMURL' | grep -q '^hangar_webhook_ca_bundle_in_sync 1$'" 20
t_signal TERM "$SM_PID"
wait "$SM_PID" 2>/dev/null
t_end
