#!/usr/bin/env bash
# The webhook's memory with its connection table full, for the chart's
# memory limit (docs/chart.md, "Memory"). Starts hangar-webhook
# with the chart's server settings (maxConnections 512, 128 per client) and
# fills the client table from 8 sources (bench/webhook_memory.py):
#   idle    512 kept-alive TLS connections, one review answered on each;
#   bodies  512 connections each holding all but the last byte of a
#           maxBodyBytes body (3 MiB): the most a client can make it buffer;
#   reviews 512 connections each sending a whole review of just under
#           3 MiB: the decisions' own memory (server.threads workers, 0:
#           one per CPU; set HANGAR_THREADS to compare);
#   bodies+reviews  both at once (each half the table, PER_SOURCE / 2).
# Prints the webhook's VmRSS (sampled while the table is held) and VmHWM
# for each, and the baseline after start. A measurement, not a test: it
# asserts nothing (bench/ only).
# usage: bench/webhook-memory.sh BUILD_DIR [SOURCES PER_SOURCE]
set -euo pipefail
BUILD=$(realpath "$1")
SOURCES=${2:-8}
PER=${3:-64}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
WEBHOOK=$BUILD/webhook/hangar-webhook
TMP=$(mktemp -d)
PID=
cleanup() {
        [ -z "$PID" ] || kill "$PID" 2>/dev/null || true
        rm -rf "$TMP"
}
trap cleanup EXIT
"$WEBHOOK" certs --out-dir "$TMP/pki" --ip 127.0.0.1 >/dev/null
cat >"$TMP/config.yaml" <<CFG
driverSidecar: true
server: {address: 127.0.0.1, port: 0, healthPort: 0, certFile: $TMP/pki/tls.crt, keyFile: $TMP/pki/tls.key}
CFG
kib() { awk -v k="$2" '$1 == k":" {print $2}' "/proc/$1/status"; }

run() { # MODE [MODE2]: MODE2 at the same time, from the same sources
        "$WEBHOOK" serve --config "$TMP/config.yaml" 2>"$TMP/webhook.log" &
        PID=$!
        local port
        for _ in $(seq 1 100); do
                port=$(grep -o '"msg":"listening".*"port":[0-9]*' "$TMP/webhook.log" 2>/dev/null | grep -o '"port":[0-9]*' | head -n1 | cut -d: -f2) || true
                [ -n "$port" ] && break
                sleep 0.1
        done
        sleep 1
        local base peak=0 rss line per=$PER total=$((SOURCES * PER))
        [ -z "${2:-}" ] || per=$((PER / 2))
        base=$(kib "$PID" VmRSS)
        python3 "$HERE/webhook_memory.py" "$port" "$1" "$SOURCES" "$per" 8 \
                "$ROOT/tests/fuzz/corpus/admission/inject.json" >"$TMP/client.out" &
        local client=$! client2=
        if [ -n "${2:-}" ]; then
                python3 "$HERE/webhook_memory.py" "$port" "$2" "$SOURCES" "$per" 8 \
                        "$ROOT/tests/fuzz/corpus/admission/inject.json" >"$TMP/client2.out" &
                client2=$!
        fi
        while kill -0 "$client" 2>/dev/null || { [ -n "$client2" ] && kill -0 "$client2" 2>/dev/null; }; do
                rss=$(kib "$PID" VmRSS)
                [ "$rss" -gt "$peak" ] && peak=$rss
                sleep 0.2
        done
        wait "$client" || true
        [ -z "$client2" ] || wait "$client2" || true
        line=$(head -n1 "$TMP/client.out")
        [ -z "$client2" ] || line="$line + $(head -n1 "$TMP/client2.out" | cut -d' ' -f2)"
        printf '%-14s %s of %s connections held: VmRSS after start %s KiB, held %s KiB (peak sampled), VmHWM %s KiB\n' \
                "$1${2:++$2}" "${line#open }" "$total" "$base" "$peak" "$(kib "$PID" VmHWM)"
        kill "$PID"
        wait "$PID" 2>/dev/null || true
        PID=
}
run idle
run bodies
run reviews
run bodies reviews
