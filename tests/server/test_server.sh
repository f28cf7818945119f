#!/usr/bin/env bash
# The webhook's server over real TLS on loopback, driven with curl and
# openssl: every status code, readiness before and after a certificate,
# certificate rotation (Secret-style ..data swap and in-place rewrite) while
# requests flow with zero failures, a bad pair refused, slow clients cut off.
# usage: test_server.sh PATH/TO/hangar-webhook
WEBHOOK=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "webhook server over TLS"
cd "$T_TMP" || exit 1

secret_publish() { t_secret_publish secret "$1"; }

"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 --dns localhost >/dev/null || exit 1

# certs: never overwrites unless told, and never half: with any one file in
# the way nothing is written; the Service's DNS names come from --service.
mkdir -p certs-partial && : >certs-partial/tls.key
t_check "certs refuses when a file is in the way" bash -c "! '$WEBHOOK' certs --out-dir certs-partial --ip 127.0.0.1 2>/dev/null"
t_eq "... and writes nothing (no new CA beside an old pair)" "tls.key" "$(find certs-partial -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ' | sed 's/ $//')"
t_check "certs refuses to overwrite a whole set" bash -c "! '$WEBHOOK' certs --out-dir pki --ip 127.0.0.1 2>/dev/null"
"$WEBHOOK" certs --out-dir certs-svc --service hangar-webhook --namespace hangar-system >/dev/null
t_eq "certs --service/--namespace: the Service's DNS names" \
        "DNS:hangar-webhook, DNS:hangar-webhook.hangar-system, DNS:hangar-webhook.hangar-system.svc, DNS:hangar-webhook.hangar-system.svc.cluster.local" \
        "$(openssl x509 -in certs-svc/tls.crt -noout -ext subjectAltName 2>/dev/null | tail -1 | sed 's/^ *//')"
t_check "certs --force replaces the set" bash -c "'$WEBHOOK' certs --out-dir certs-svc --service hangar-webhook --namespace hangar-system --force >/dev/null"

# review (the server minus transport): malformed input is exit 1 with one
# line on stderr and nothing on stdout.
for bad in '{' '{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}' '[]' \
        '{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"a","uid":"b"}}'; do
        printf '%s' "$bad" | "$WEBHOOK" review >review.out 2>review.err
        rc=$?
        t_check "review refuses $(printf '%.40s' "$bad") (exit $rc: $(head -c 100 review.err))" \
                bash -c "[ $rc = 1 ] && [ ! -s review.out ] && [ \$(wc -l <review.err) = 1 ]"
done
# serve with a bad configuration: refuses to start, naming file, line and key.
printf 'server:\n  port: seventy\n' >bad-config.yaml
timeout 10 "$WEBHOOK" serve --config bad-config.yaml >/dev/null 2>serve-bad.err
rc=$?
t_check "serve with a bad config refuses to start (exit $rc: $(head -c 120 serve-bad.err))" \
        bash -c "[ $rc = 1 ] && grep -q 'bad-config.yaml:2' serve-bad.err && grep -q 'port' serve-bad.err"
mkdir -p secret

cat >config.yaml <<CFG
driverSidecar: true
server:
  address: 127.0.0.1
  port: 0
  healthPort: 0
  certFile: $T_TMP/secret/tls.crt
  keyFile: $T_TMP/secret/tls.key
  maxBodyBytes: 65536
  requestTimeoutSeconds: 2
  idleTimeoutSeconds: 8
  certPollSeconds: 1
  # The rotation below opens a TLS connection per request from four clients
  # as fast as they can: the protocol is tested here, the per-client limits
  # in test_wedge.sh.
  clientConnectRate: 0
CFG
HEALTH_PORT=$(t_free_port)
HANGAR_HEALTH_PORT=$HEALTH_PORT "$WEBHOOK" serve --config config.yaml 2>webhook.log &
WEBHOOK_PID=$!
t_cleanup_pid $WEBHOOK_PID
PORT=$(t_webhook_port webhook.log) || { cat webhook.log; exit 1; }
URL=https://127.0.0.1:$PORT
HURL=http://127.0.0.1:$HEALTH_PORT

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"; }

# No certificate yet: alive, not ready, and no TLS handshake succeeds.
t_eq "healthz before a certificate" 200 "$(code "$HURL/healthz")"
t_eq "readyz before a certificate" 503 "$(code "$HURL/readyz")"
t_check "TLS handshake fails without a certificate" \
        bash -c "! curl -s --max-time 3 -k '$URL/healthz' >/dev/null"

secret_publish pki
t_check "ready within the poll interval once the Secret appears" \
        t_wait_for "[ \"\$(code '$HURL/readyz')\" = 200 ]" 10
C=(--cacert pki/ca.crt)
# With a health port, the TLS listener serves reviews only (W10): what the
# health port answers is not reachable by whoever reaches the webhook.
t_eq "readyz is not served over TLS with a health port" 404 "$(code "${C[@]}" "$URL/readyz")"
t_eq "metrics are not served over TLS with a health port" 404 "$(code "${C[@]}" "$URL/metrics")"
t_eq "healthz is not served over TLS with a health port" 404 "$(code "${C[@]}" "$URL/healthz")"
t_check "TLS 1.1 refused" bash -c "! curl -s --max-time 3 --tls-max 1.1 --cacert pki/ca.crt '$URL/healthz'"
t_eq "TLS 1.2 accepted" 404 "$(code --tlsv1.2 --tls-max 1.2 "${C[@]}" "$URL/healthz")"

# A typical review (the fuzz corpus's sandbox pod).
REVIEW=$HERE/../fuzz/corpus/admission/inject.json
post() { curl -s --max-time 5 "${C[@]}" -H 'Content-Type: application/json' "$@" "$URL/mutate"; }
resp=$(post --data-binary @"$REVIEW")
t_eq "200 answer echoes the uid" u-1 "$(jq -r .response.uid <<<"$resp")"
t_eq "sandbox pod is injected" true "$(jq -r .response.allowed <<<"$resp")"
t_eq "patch type" JSONPatch "$(jq -r .response.patchType <<<"$resp")"
t_check "patch adds hangar-driver" bash -c "jq -r .response.patch <<<'$resp' | base64 -d | jq -e 'map(select(.path==\"/spec/containers/-\" and .value.name==\"hangar-driver\")) | length == 1' >/dev/null"

t_eq "wrong content type is 415" 415 "$(code "${C[@]}" -H 'Content-Type: text/plain' --data-binary @"$REVIEW" "$URL/mutate")"
t_eq "missing content type is 415" 415 "$(code "${C[@]}" -H 'Content-Type:' --data-binary @"$REVIEW" "$URL/mutate")"
t_eq "application/json; charset=utf-8 accepted" 200 "$(code "${C[@]}" -H 'Content-Type: application/json; charset=utf-8' --data-binary @"$REVIEW" "$URL/mutate")"
head -c 70000 /dev/zero | tr '\0' ' ' >big.json
t_eq "body over maxBodyBytes is 413 (declared length)" 413 "$(code "${C[@]}" -H 'Content-Type: application/json' --data-binary @big.json "$URL/mutate")"
t_eq "body over maxBodyBytes is 413 (chunked)" 413 "$(code "${C[@]}" -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @big.json "$URL/mutate")"
for bad in '' '{' '[]' '{"a":1,"a":2}' \
        '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"kind":{"kind":"Pod"},"operation":"CREATE"}}' \
        '{"apiVersion":"admission.k8s.io/v1","kind":"Pod","request":{"uid":"x"}}' \
        '{"apiVersion":"v1","kind":"AdmissionReview","request":{"uid":"x"}}' \
        "$(printf '%0.s[' $(seq 1 100))"; do
        body=$(post -w '\n%{http_code}' --data-binary "$bad")
        status=${body##*$'\n'}
        msg=$(head -n 1 <<<"$body" | jq -r .message 2>/dev/null)
        t_eq "malformed review is 400: ${bad:0:40}" 400 "$status"
        t_check "400 says why (${msg:0:60})" test -n "$msg" -a "$msg" != null
done
t_eq "unknown path is 404" 404 "$(code "${C[@]}" "$URL/nope")"
t_eq "GET /mutate is 405" 405 "$(code "${C[@]}" "$URL/mutate")"
t_eq "/mutate is not served on the health port" 404 "$(code -H 'Content-Type: application/json' --data-binary @"$REVIEW" "$HURL/mutate")"

# A client that stops sending is cut off by the idle timeout (2 s here); one
# that trickles bytes under it is cut off by the request deadline with a 408.
SLOW="python3 $HERE/slow_client.py"
out=$($SLOW "$PORT" stall)
t_check "stalled request cut off by the idle timeout ($out)" grep -Eq '^closed [2-5]\.' <<<"$out"
out=$($SLOW "$PORT" trickle)
# The 408 may be lost to a reset if the client keeps sending as the server
# closes; what matters is that the connection ends at the deadline.
t_check "trickled request cut off at the deadline ($out)" grep -Eq '^(status 408|closed) [2-5]\.' <<<"$out"
# Between reviews a kept-alive connection waits the idle timeout (8 s here),
# not the request deadline: the API server reuses an idle connection for up
# to 90 s and does not resend a POST that meets a closed one.
out=$($SLOW "$PORT" idle "$REVIEW" 4)
t_eq "a kept-alive connection idle past the request deadline still takes the next review" \
        "first 200 again 200" "$out"
# A new connection that sends nothing after its handshake is what the API
# server's client pools when it dialed for a review another connection took:
# it waits the idle timeout too (a close at the request deadline made a
# review sent on it in that moment fail with EOF), and no longer.
out=$($SLOW "$PORT" silent)
t_check "a new connection that sends nothing waits the idle timeout, then is closed ($out)" \
        grep -Eq '^closed ([89]|1[0-1])\.' <<<"$out"
out=$($SLOW "$PORT" huge)
t_check "a declared 1 GB body is refused at once, unread ($out)" grep -Eq '^status 413 [01]\.' <<<"$out"
# The 408 path and the reaper race for the trickled body: either counts.
t_check "deadline counted as a timeout or an expired body" bash -c "curl -s '$HURL/metrics' | grep -Eq 'errors_total\{kind=\"timeout\"\} [1-9]|connections_expired_total\{listener=\"https\",phase=\"body\"\} [1-9]'"

# Rotation while requests flow: several clients, each request a new TLS
# handshake, while the leaf is replaced (same CA) both ways a cluster does it.
: >failures
: >successes
client() {
        local end=$(($(date +%s) + 8))
        while [ "$(date +%s)" -lt "$end" ]; do
                if post --data-binary @"$REVIEW" | grep -q '"uid":"u-1"'; then
                        echo . >>successes
                else
                        echo . >>failures
                fi
        done
}
for _ in 1 2 3 4; do client & t_cleanup_pid $!; done
serials=()
for _ in 1 2 3; do
        sleep 1.2
        "$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 --dns localhost --reuse-ca >/dev/null
        serials+=("$(openssl x509 -in pki/tls.crt -noout -serial)")
        secret_publish pki
done
sleep 1.5
# In-place rewrite (not a Secret): key and cert land at different moments.
"$WEBHOOK" certs --out-dir plain --ip 127.0.0.1 --dns localhost >/dev/null
cp pki/ca.crt pki/ca.key plain/ 2>/dev/null
"$WEBHOOK" certs --out-dir plain --ip 127.0.0.1 --dns localhost --reuse-ca >/dev/null
wait_clients() { sleep 7; }
wait_clients
served=$(echo | openssl s_client -connect 127.0.0.1:"$PORT" -CAfile pki/ca.crt 2>/dev/null | openssl x509 -noout -serial)
t_eq "the newest leaf is served after rotation" "${serials[-1]}" "$served"
t_eq "zero failed requests during rotation ($(wc -l <successes) succeeded)" 0 "$(wc -l <failures)"
t_check "requests really flowed during rotation" test "$(wc -l <successes)" -gt 20

# A bad pair (key from another certificate) is refused; the old one stays.
reloads_before=$(curl -s "$HURL/metrics" | awk '/^hangar_webhook_cert_reloads_total/ {print $2}')
"$WEBHOOK" certs --out-dir other --ip 127.0.0.1 >/dev/null
mkdir -p bad && cp pki/tls.crt bad/ && cp other/tls.key bad/
secret_publish bad
t_check "mismatched pair is logged as refused" \
        t_wait_for "grep -q 'does not match the certificate' webhook.log" 10
t_eq "still ready with the old pair" 200 "$(code "$HURL/readyz")"
t_eq "still serving with the old pair" u-1 "$(post --data-binary @"$REVIEW" | jq -r .response.uid)"
t_eq "no reload counted for the bad pair" "$reloads_before" "$(curl -s "$HURL/metrics" | awk '/^hangar_webhook_cert_reloads_total/ {print $2}')"
t_check "refusal counted in metrics" bash -c "curl -s '$HURL/metrics' | grep -q 'errors_total{kind=\"cert_reload\"} [1-9]'"

t_check "one JSON log line per review with uid and decision" \
        bash -c "grep '\"msg\":\"review\"' webhook.log | jq -e 'select(.uid==\"u-1\" and .decision==\"injected\" and .namespace==\"default\" and .pod==\"p\")' >/dev/null"
t_check "every log line is JSON" bash -c "jq -e . webhook.log >/dev/null"

# SIGTERM: a clean exit; under ASan/LSan a leak or error would fail it here.
t_signal TERM "$WEBHOOK_PID"
wait "$WEBHOOK_PID"
t_eq "exits 0 on SIGTERM (no sanitizer findings)" 0 "$?"
t_check "no sanitizer report in the log" bash -c "! grep -q Sanitizer webhook.log"
t_end
