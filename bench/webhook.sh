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
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WEBHOOK=$(realpath "${1:-$HERE/../build/webhook/hangar-webhook}")
DURATION=${2:-10}
for tool in wrk nginx jq curl; do
        command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin
        command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh"; exit 1; }
done
TMP=$(mktemp -d /tmp/hangar-bench.XXXXXX)
pids=()
cleanup() {
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        if [ -f "$TMP/nginx.pid" ]; then kill "$(cat "$TMP/nginx.pid")" 2>/dev/null || true; fi
        sleep 0.3
        rm -rf "$TMP"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

"$WEBHOOK" certs --out-dir "$TMP/pki" --ip 127.0.0.1 >/dev/null
REVIEW=$HERE/data/review-typical.json

# The webhook, one thread per CPU.
cat >"$TMP/webhook.yaml" <<CFG
driverSidecar: true
logLevel: warn
server: {address: 127.0.0.1, port: 0, certFile: $TMP/pki/tls.crt, keyFile: $TMP/pki/tls.key}
CFG
"$WEBHOOK" serve --config "$TMP/webhook.yaml" 2>"$TMP/webhook.log" &
WPID=$!
pids+=("$WPID")
for _ in $(seq 50); do grep -q '"port"' "$TMP/webhook.log" 2>/dev/null && break; sleep 0.1; done
# logLevel warn hides the "listening" line: find the port from the socket.
WPORT=$(ss -ltnpH | awk -v pid="pid=$WPID," '$0 ~ pid {split($4, a, ":"); print a[length(a)]}' | head -n 1)
for _ in $(seq 50); do curl -sf --cacert "$TMP/pki/ca.crt" "https://127.0.0.1:$WPORT/readyz" >/dev/null && break; sleep 0.1; done
ANSWER=$(curl -sf --cacert "$TMP/pki/ca.crt" -H 'Content-Type: application/json' --data-binary @"$REVIEW" "https://127.0.0.1:$WPORT/mutate")
jq -e '.response.patch' <<<"$ANSWER" >/dev/null || { echo "webhook did not inject the benchmark pod"; exit 1; }

# nginx with the same certificate, answering the webhook's answer verbatim.
NPORT=$(free_port)
mkdir -p "$TMP/nginx"
cat >"$TMP/nginx.conf" <<CONF
worker_processes auto;
pid $TMP/nginx.pid;
error_log $TMP/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $TMP/nginx/body;
    proxy_temp_path $TMP/nginx/proxy;
    fastcgi_temp_path $TMP/nginx/fastcgi;
    uwsgi_temp_path $TMP/nginx/uwsgi;
    scgi_temp_path $TMP/nginx/scgi;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$NPORT ssl;
        ssl_certificate $TMP/pki/tls.crt;
        ssl_certificate_key $TMP/pki/tls.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        location /mutate { default_type application/json; return 200 '$ANSWER'; }
    }
}
CONF
nginx -c "$TMP/nginx.conf" -p "$TMP/nginx"
for _ in $(seq 50); do curl -sfk "https://127.0.0.1:$NPORT/mutate" -X POST >/dev/null && break; sleep 0.1; done

cat >"$TMP/post.lua" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$REVIEW", "rb")
wrk.body = f:read("*a")
f:close()
LUA

# Peak RSS in KiB: the webhook process; nginx's master plus workers.
rss_of() { awk '/VmHWM/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
nginx_rss() {
        local total=0 p
        for p in $(cat "$TMP/nginx.pid") $(pgrep -P "$(cat "$TMP/nginx.pid")"); do
                total=$((total + $(rss_of "$p")))
        done
        echo "$total"
}
# "12.34us" / "1.20ms" / "2.00s" -> microseconds
to_us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n }'; }
run_wrk() { # URL CONNECTIONS -> "rps p50_us p99_us"
        local threads=$(($2 < 2 ? 1 : 2)) out
        out=$(wrk -t"$threads" -c"$2" -d"${DURATION}s" --latency -s "$TMP/post.lua" "$1")
        local rps p50 p99
        rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
        p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
        p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
        if grep -q "Non-2xx" <<<"$out"; then echo "non-2xx answers from $1" >&2; exit 1; fi
        echo "$rps $(to_us "$p50") $(to_us "$p99")"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

echo "hangar-webhook vs nginx, HTTPS keep-alive, ${DURATION}s per run, $(nproc) CPUs, body $(wc -c <"$REVIEW") B, answer ${#ANSWER} B"
printf '%-5s | %12s %12s %6s | %10s %10s %6s | %10s %10s %6s\n' conc "webhook r/s" "nginx r/s" ratio "wh p50us" "ng p50us" ratio "wh p99us" "ng p99us" ratio
for c in 1 8 32; do
        read -r wr w50 w99 < <(run_wrk "https://127.0.0.1:$WPORT/mutate" "$c")
        read -r nr n50 n99 < <(run_wrk "https://127.0.0.1:$NPORT/mutate" "$c")
        printf '%-5s | %12s %12s %6s | %10s %10s %6s | %10s %10s %6s\n' "$c" "$wr" "$nr" "$(ratio "$wr" "$nr")" \
                "$w50" "$n50" "$(ratio "$w50" "$n50")" "$w99" "$n99" "$(ratio "$w99" "$n99")"
done
wrss=$(rss_of "$WPID")
nrss=$(nginx_rss)
echo "peak RSS: webhook $((wrss / 1024)) MiB ($wrss KiB), nginx (all processes) $((nrss / 1024)) MiB ($nrss KiB), ratio $(ratio "$wrss" "$nrss")"

# Server-side review time (request body complete -> answer), from the
# webhook's own histogram sum/count, for a pod with 1500 env vars.
metric() { curl -s --cacert "$TMP/pki/ca.crt" "https://127.0.0.1:$WPORT/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
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
