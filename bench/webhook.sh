#!/usr/bin/env bash
# Benchmark: hangar-webhook against nginx on the same machine in the same run.
# Both serve HTTPS (TLS 1.3, the same ECDSA P-256 certificate) over keep-alive
# connections; wrk posts a typical sandbox-pod AdmissionReview (bench/data,
# a defaulted pod as the API server sends it, ~3 KB). nginx answers a static
# body of the webhook's answer size: the ceiling for one HTTPS request and
# answer here. Prints requests/s, p50/p99 latency and peak RSS per
# concurrency, with each figure's ratio to nginx's, then the server-side time
# to review a pod with 1500 env vars.
# usage: bench/webhook.sh [PATH/TO/hangar-webhook] [SECONDS_PER_RUN]
#   SECONDS_PER_RUN defaults to 10; 1 is the short mode (tests/bench).
set -euo pipefail
case "${1:-}" in
-h | --help)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
        exit 0
        ;;
esac
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib.sh
. "$HERE/lib.sh"
WEBHOOK=$(realpath "${1:-$HERE/../build/webhook/hangar-webhook}")
DURATION=${2:-10}
bench_need wrk nginx jq curl python3
TMP=$(mktemp -d /tmp/hangar-bench.XXXXXX)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        bench_nginx_stop "$TMP"
        sleep 0.3
        rm -rf "$TMP"
}
trap cleanup EXIT

"$WEBHOOK" certs --out-dir "$TMP/pki" --ip 127.0.0.1 >/dev/null
REVIEW=$HERE/data/review-typical.json

# The webhook, one thread per CPU, with its health port as the chart runs
# it: the HTTPS port serves reviews only, readiness and metrics are read on
# the health port.
HPORT=$(free_port)
cat >"$TMP/webhook.yaml" <<CFG
driverSidecar: true
logLevel: warn
server: {address: 127.0.0.1, port: 0, healthPort: $HPORT, certFile: $TMP/pki/tls.crt, keyFile: $TMP/pki/tls.key}
CFG
"$WEBHOOK" serve --config "$TMP/webhook.yaml" 2>"$TMP/webhook.log" &
WPID=$!
pids+=("$WPID")
for _ in $(seq 50); do grep -q '"port"' "$TMP/webhook.log" 2>/dev/null && break; sleep 0.1; done
# logLevel warn hides the "listening" line: find the port from the socket.
WPORT=$(ss -ltnpH | awk -v pid="pid=$WPID," -v hp=":$HPORT" '$0 ~ pid && $4 !~ hp"$" {split($4, a, ":"); print a[length(a)]}' | head -n 1)
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$HPORT/readyz" >/dev/null && break; sleep 0.1; done
ANSWER=$(curl -sf --cacert "$TMP/pki/ca.crt" -H 'Content-Type: application/json' --data-binary @"$REVIEW" "https://127.0.0.1:$WPORT/mutate")
jq -e '.response.patch' <<<"$ANSWER" >/dev/null || { echo "webhook did not inject the benchmark pod"; exit 1; }

# nginx with the same certificate, answering the webhook's answer verbatim.
bench_nginx_start "$TMP" "$TMP/pki" "$ANSWER"
bench_wrk_script "$REVIEW" "$TMP/post.lua"

echo "hangar-webhook vs nginx, HTTPS keep-alive, ${DURATION}s per run, $(nproc) CPUs, body $(wc -c <"$REVIEW") B, answer ${#ANSWER} B"
printf '%-5s | %12s %12s %6s | %10s %10s %6s | %10s %10s %6s\n' conc "webhook r/s" "nginx r/s" ratio "wh p50us" "ng p50us" ratio "wh p99us" "ng p99us" ratio
for c in 1 8 32; do
        w=$(run_wrk "$TMP/post.lua" "$DURATION" "https://127.0.0.1:$WPORT/mutate" "$c")
        n=$(run_wrk "$TMP/post.lua" "$DURATION" "https://127.0.0.1:$NPORT/mutate" "$c")
        read -r wr w50 w99 <<<"$w"
        read -r nr n50 n99 <<<"$n"
        printf '%-5s | %12s %12s %6s | %10s %10s %6s | %10s %10s %6s\n' "$c" "$wr" "$nr" "$(ratio "$wr" "$nr")" \
                "$w50" "$n50" "$(ratio "$w50" "$n50")" "$w99" "$n99" "$(ratio "$w99" "$n99")"
done
wrss=$(rss_of "$WPID")
nrss=$(bench_nginx_rss "$TMP")
echo "peak RSS: webhook $((wrss / 1024)) MiB ($wrss KiB), nginx (all processes) $((nrss / 1024)) MiB ($nrss KiB), ratio $(ratio "$wrss" "$nrss")"

# Server-side review time (request body complete -> answer), from the
# webhook's own histogram sum/count, for a pod with 1500 env vars.
metric() { curl -s "http://127.0.0.1:$HPORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
s0=$(metric hangar_webhook_review_duration_seconds_sum)
c0=$(metric hangar_webhook_review_duration_seconds_count)
for _ in $(seq 50); do
        curl -s --cacert "$TMP/pki/ca.crt" -H 'Content-Type: application/json' \
                --data-binary @"$HERE/data/review-1500-env.json" "https://127.0.0.1:$WPORT/mutate" -o /dev/null
done
s1=$(metric hangar_webhook_review_duration_seconds_sum)
c1=$(metric hangar_webhook_review_duration_seconds_count)
awk -v s="$(awk -v a="$s1" -v b="$s0" 'BEGIN {print a - b}')" -v n="$((c1 - c0))" \
        'BEGIN { printf "1500-env pod (%d B): mean server-side review time %.3f ms over %d reviews\n", 0, s / n * 1000, n }' |
        sed "s/(0 B)/($(wc -c <"$HERE/data/review-1500-env.json") B)/"
