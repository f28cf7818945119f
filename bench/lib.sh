# shellcheck shell=bash
# What the benchmarks share: for the HTTPS ones (bench/webhook.sh,
# bench/kyverno.sh) the tools check, nginx serving a static answer as the
# ceiling, wrk posting one AdmissionReview over keep-alive connections, and
# the figures' arithmetic; for the native turn ones (bench/relay.sh,
# bench/driver-output.sh) the host's layout and the relay run in hangar's
# order (at the end). Sourced; the caller has `set -euo pipefail`.

# bench_need TOOL...: each on PATH (/usr/sbin added for nginx), or exit.
bench_need() {
        local tool
        for tool in "$@"; do
                command -v "$tool" >/dev/null || PATH=$PATH:/usr/sbin
                command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh"; exit 1; }
        done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# bench_wait SECONDS CMD...: poll CMD every 0.1 s until it succeeds; 1 if it never does.
bench_wait() {
        local deadline=$((SECONDS + $1))
        shift
        until "$@" >/dev/null 2>&1; do
                ((SECONDS < deadline)) || return 1
                sleep 0.1
        done
}

# bench_nginx_start DIR PKI_DIR ANSWER [LOCATION [MAIN [HTTP]]]: nginx (Debian's
# nginx-light) on a free loopback port with PKI_DIR's tls.crt/tls.key,
# answering ANSWER verbatim to /mutate, or doing LOCATION's directives there
# instead; MAIN and HTTP are more lines for the main and http contexts (a
# module to load, its settings). Its files in DIR/nginx*. Sets NPORT. Stop it
# with bench_nginx_stop DIR.
bench_nginx_start() {
        local dir=$1 pki=$2 answer=$3
        local location=${4:-"default_type application/json; return 200 '$answer';"} main=${5:-} http=${6:-}
        NPORT=$(free_port)
        mkdir -p "$dir/nginx"
        cat >"$dir/nginx.conf" <<CONF
$main
worker_processes auto;
pid $dir/nginx.pid;
error_log $dir/nginx/error.log;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path $dir/nginx/body;
    proxy_temp_path $dir/nginx/proxy;
    fastcgi_temp_path $dir/nginx/fastcgi;
    uwsgi_temp_path $dir/nginx/uwsgi;
    scgi_temp_path $dir/nginx/scgi;
    keepalive_requests 1000000;
$http
    server {
        listen 127.0.0.1:$NPORT ssl;
        ssl_certificate $pki/tls.crt;
        ssl_certificate_key $pki/tls.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        location /mutate { $location }
    }
}
CONF
        nginx -c "$dir/nginx.conf" -p "$dir/nginx"
        bench_wait 5 curl -sfk "https://127.0.0.1:$NPORT/mutate" -X POST ||
                { echo "nginx not answering on $NPORT" >&2; exit 1; }
}
bench_nginx_stop() {
        if [ -f "$1/nginx.pid" ]; then kill "$(cat "$1/nginx.pid")" 2>/dev/null || true; fi
}

# rss_of PID [FIELD]: VmHWM (peak) or FIELD of /proc/PID/status, in KiB.
rss_of() { awk -v f="${2:-VmHWM}:" '$1 == f {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
# bench_nginx_rss DIR: peak RSS of nginx's master plus its workers, KiB.
bench_nginx_rss() {
        local total=0 p
        for p in $(cat "$1/nginx.pid") $(pgrep -P "$(cat "$1/nginx.pid")"); do
                total=$((total + $(rss_of "$p")))
        done
        echo "$total"
}

# bench_wrk_script REVIEW OUT: a wrk script posting REVIEW as JSON.
bench_wrk_script() {
        cat >"$2" <<LUA
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$1", "rb")
wrk.body = f:read("*a")
f:close()
LUA
}

# "12.34us" / "1.20ms" / "2.00s" -> microseconds
to_us() { awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n }'; }

# run_wrk SCRIPT SECONDS URL CONNECTIONS -> "rps p50_us p99_us". Non-2xx
# answers end the benchmark; socket errors (wrk's timeouts: no answer in 2 s)
# are said on stderr, and only answered requests count in req/s.
run_wrk() {
        local threads=$(($4 < 2 ? 1 : 2)) out rps p50 p99
        out=$(wrk -t"$threads" -c"$4" -d"${2}s" --latency -s "$1" "$3")
        rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
        p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
        p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
        if grep -q "Non-2xx" <<<"$out"; then echo "non-2xx answers from $3" >&2; exit 1; fi
        if grep -q "Socket errors" <<<"$out"; then echo "c=$4 $3: $(grep "Socket errors" <<<"$out")" >&2; fi
        echo "$rps $(to_us "$p50") $(to_us "$p99")"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# ---- the host laid out for a turn (bench/relay.sh, bench/driver-output.sh) ----
# These run the daemon and the relay natively, as the native suites lay a
# turn out (tests/turn/hostlib.sh): hangar-home (uid 1001) seen by the agent
# (uid 1000) read-only, hangar-ctl a tmpfs, the split-active verdict there.
BENCH_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# bench_die MESSAGE: stops the bench, saying which one.
bench_die() { echo "bench/$(basename "$0"): $*" >&2; exit 1; }
# bench_median: the median of the numbers on stdin, one a line.
bench_median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# bench_moved_all FILE BYTES: FILE is exactly BYTES long and nothing but zero bytes, or the bench stops.
bench_moved_all() {
        local got
        got=$(stat -c %s "$1")
        [ "$got" = "$2" ] || bench_die "$1: $got bytes, expected $2"
        [ "$(tr -d '\0' <"$1" | head -c 1 | wc -c)" = 0 ] || bench_die "$1: not only zero bytes"
}

# bench_host_check BUILD BIN...: each BIN built, and root, or exit saying how.
bench_host_check() {
        local build=$1 bin names
        shift
        names=$(for bin in "$@"; do basename "$bin"; done | xargs)
        for bin in "$@"; do
                [ -x "$bin" ] || { echo "missing $bin: ninja -C $build $names"; exit 1; }
        done
        [ "$(id -u)" = 0 ] ||
                { echo "bench/$(basename "$0"): needs root (two uids, a read-only bind mount, a PID namespace)"; exit 1; }
        bench_need jq setpriv unshare
}

# bench_host_up SCRIPT_ARG...: the script again in a mount namespace of its
# own (given the script's own arguments), then testlib's T_TMP (removed at
# exit with the bench's processes and mounts) and the layout with the
# binaries of the array BINS copied into it (DRIVER and RELAY name the
# copies; hostlib's as_driver, as_agent, ctl, host_serve). hostlib's teardown
# runs at exit without errexit (its kill of a pid already gone would end it
# before the unmounts). Sets LOOPCOPY (the copy of hangar-bench-loopcopy),
# LOG (the run log) and RAW_OUT (the reference's file beside it).
bench_host_up() {
        # shellcheck source=../tests/turn/hostlib.sh
        . "$BENCH_LIB_DIR/../tests/turn/hostlib.sh"
        host_unshared "$0" "$@"
        # shellcheck source=../tests/lib/testlib.sh
        . "$BENCH_LIB_DIR/../tests/lib/testlib.sh"
        host_turn_up "${BINS[@]}"
        trap 'set +e; host_teardown' EXIT
        # shellcheck disable=SC2034 # the caller's
        LOOPCOPY=$T_TMP/bin/hangar-bench-loopcopy LOG=$T_TMP/home/run/log RAW_OUT=$T_TMP/home/run/raw.out
        as_driver mkdir -p home/run
}

# bench_relay NAME LINE: hangar-relay as the agent in a PID namespace of its
# own (PID 1 a root shell waiting for it: the container's command, so its
# sealed start really sweeps, and only its own container), in hangar's
# order: LINE (`TOKEN INSTANCE`) on its stdin only once it said ready. Its
# stdin and stdout are FIFOs, so the token follows the ready line at once (no
# polling in a timed path). Returns when the relay is gone; NAME.relay.out
# has its lines, READY_US the time from the call to its ready line. A relay
# that did not end with done and the harness's status 0 stops the bench.
bench_relay() {
        local name=$1 line=$2 t0 ready pid to from status=0
        rm -f "$name.relay.in" "$name.relay.fifo"
        mkfifo "$name.relay.in" "$name.relay.fifo"
        t0=${EPOCHREALTIME/./}
        HOME=$T_TMP/agent-home HANGAR_HOME_PATH=$AGENT_HOME_VIEW \
                unshare --pid --fork --mount-proc --kill-child -- bash -c '"$@"; exit $?' pid1 \
                setpriv --reuid 1000 --regid 1000 --clear-groups -- "$RELAY" \
                <"$name.relay.in" >"$name.relay.fifo" 2>"$name.relay.err" &
        pid=$!
        t_cleanup_pid "$pid"
        exec {to}>"$name.relay.in" {from}<"$name.relay.fifo"
        IFS= read -r ready <&"$from" || ready=""
        # shellcheck disable=SC2034 # the caller's (bench/relay.sh)
        READY_US=$((${EPOCHREALTIME/./} - t0))
        printf '%s\n' "$ready" >"$name.relay.out"
        [[ $ready == *'"relay":"ready"'* ]] && printf '%s\n' "$line" >&"$to"
        cat <&"$from" >>"$name.relay.out"
        exec {to}>&- {from}<&-
        wait "$pid" || status=$?
        jq -se 'last | .relay == "done" and .harness_value == 0' "$name.relay.out" >/dev/null 2>&1 ||
                bench_die "$name: the relay exited $status: $(tail -n 1 "$name.relay.out") $(head -c 300 "$name.relay.err")"
}
