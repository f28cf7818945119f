#!/usr/bin/env bash
# No client can wedge the webhook (docs/webhook.md "Connections"):
# a stand-in API server on 127.0.0.1 sends reviews all along (a kept-alive
# connection and a new one each second, as client-go does) while hostile
# clients from 127.0.0.2-127.0.0.9 hoard keep-alives (W1, W2), never finish
# a handshake or trickle one (W3), trickle headers (W4) or bodies (W5), never
# read an answer (W6), or flood connects (W8). Each row fails if a stand-in
# review fails or goes unanswered for the API server's 10 s, if the stand-in
# got no review through during the row, or if the row's counter stays flat.
# No timing is asserted: deadlines are generous bounds that only the bug
# (a connection held until the idle timeout, 60 s here) would cross. W7:
# peak RSS under 80 MiB (a 200-connection table here); W9: with
# trustedClientCIDRs, the trusted source keeps its connection; W10: the
# health port's probe is answered while the HTTPS port is hoarded.
# usage: test_wedge.sh PATH/TO/hangar-webhook
WEBHOOK=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "webhook connection limits under hostile clients"
cd "$T_TMP" || exit 1

"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 >/dev/null || exit 1
mkdir -p secret standin
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
  requestTimeoutSeconds: 4
  idleTimeoutSeconds: 60
  headerTimeoutSeconds: 2
  maxConnections: 200
  reservedConnections: 16
  maxConnectionsPerClient: 100
  maxIdlePerClient: 10
  maxIdleConnections: 60
  clientConnectRate: 100
CFG
# A trusted CIDR with host bits (a typo for 10.0.0.0/8?) is refused, named.
HANGAR_TRUSTED_CLIENT_CIDRS='["10.0.0.1/8"]' timeout 10 "$WEBHOOK" serve --config config.yaml >/dev/null 2>bad-cidr.err
rc=$?
t_check "a bad server.trustedClientCIDRs entry refuses to start (exit $rc: $(head -c 160 bad-cidr.err))" \
        bash -c "[ $rc = 1 ] && grep -q 'trustedClientCIDRs' bad-cidr.err && grep -q '10.0.0.1/8' bad-cidr.err"
"$WEBHOOK" serve --config config.yaml 2>webhook.log &
WEBHOOK_PID=$!
t_cleanup_pid $WEBHOOK_PID
PORT=$(t_webhook_port webhook.log) || { cat webhook.log; exit 1; }
HURL=http://127.0.0.1:$HEALTH_PORT
t_check "ready" t_wait_for "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$HURL/readyz')\" = 200 ]" 30

REVIEW=$HERE/../fuzz/corpus/admission/inject.json
HC=(python3 "$HERE/hostile_client.py" "$PORT")
# The sum of the metric lines matching $1 (an awk regex on the whole line).
metric() { curl -s --max-time 10 "$HURL/metrics" | RE=$1 awk '$0 ~ ENVIRON["RE"] {s += $NF} END {print s + 0}'; }
answered() { wc -l <standin/ok; }
failed() { wc -l <standin/failures; }
: >standin/ok
: >standin/failures

"${HC[@]}" standin "$REVIEW" standin &
STANDIN_PID=$!
t_cleanup_pid $STANDIN_PID
t_check "the stand-in API server's reviews are answered" t_wait_for "[ \"\$(answered)\" -ge 10 ]" 30

# row NAME COUNTER_REGEX COMMAND...: runs the hostile load (it prints a
# summary), then checks the counter moved and the stand-in went on.
row() {
        local name=$1 counter=$2
        shift 2
        local before ok_before out
        before=$(metric "$counter")
        ok_before=$(answered)
        out=$("$@" 2>&1 | tr '\n' ' ')
        ROW_OUT=$out
        # The stand-in gets a review through after the load too.
        t_wait_for "[ \"\$(answered)\" -gt $((ok_before + 3)) ]" 30
        local during=$(($(answered) - ok_before))
        t_check "$name: reviews from 127.0.0.1 kept being answered ($during during; $out)" \
                test "$(answered)" -gt "$((ok_before + 3))"
        t_check "$name: $counter moved (was $before)" t_wait_for "[ \$(metric '$counter') -gt $before ]" 10
        t_eq "$name: no stand-in review failed" 0 "$(failed)"
}
# Whether every "closed C of N" in a row's output has C = N (and there is one).
all_closed() { grep -Eo 'closed [0-9]+ of [0-9]+' <<<"$ROW_OUT" | awk '{n++} $2 != $4 {bad=1} END {exit bad || n == 0}'; }

keepalive_eight() {
        local pids=() i
        for i in 2 3 4 5 6 7 8 9; do
                "${HC[@]}" keepalive "127.0.0.$i" 300 "$REVIEW" 5 &
                pids+=($!)
        done
        wait "${pids[@]}"
}
hello_and_silent() {
        "${HC[@]}" hello 127.0.0.4 20 30 &
        local p=$!
        "${HC[@]}" silent 127.0.0.3 150 30
        wait "$p"
}

row "W1 one source hoarding 1000 keep-alives" \
        'keepalive_declined_total\{listener="https",reason="client-idle"\}' \
        "${HC[@]}" keepalive 127.0.0.2 1000 "$REVIEW" 5
# W10: the health port has its own table; the kubelet's probe is answered
# while one source holds the HTTPS port's.
"${HC[@]}" keepalive 127.0.0.2 300 "$REVIEW" 8 >w10.out &
W10=$!
t_wait_for "grep -q connected w10.out" 120
t_eq "W10 /readyz on the health port answered while a source hoards HTTPS connections" 200 \
        "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$HURL/readyz")"
wait "$W10"
row "W2 eight sources hoarding keep-alives" \
        'connections_(evicted_total\{listener="https"|refused_total\{listener="https",reason="per-client")' \
        keepalive_eight
# W3-W6: every hostile connection is closed by the server within 30 s,
# where the bug held it until the idle timeout (60 s) or for ever.
row "W3 handshakes never finished or trickled" \
        'connections_expired_total\{listener="https",phase="headers"\}' \
        hello_and_silent
t_check "W3 all closed by the server ($ROW_OUT)" all_closed
row "W4 slowloris headers" 'connections_expired_total\{listener="https",phase="headers"\}' \
        "${HC[@]}" headers 127.0.0.5 60 30
t_check "W4 all closed by the server ($ROW_OUT)" all_closed
# The reaper and the 408 on the next chunk race for a trickled body.
row "W5 slowloris bodies" \
        'connections_expired_total\{listener="https",phase="body"\}|errors_total\{kind="timeout"\}' \
        "${HC[@]}" body 127.0.0.6 40 30
t_check "W5 all closed by the server ($ROW_OUT)" all_closed
row "W6 answers never read" 'connections_expired_total\{listener="https",phase="answer"\}' \
        "${HC[@]}" unread 127.0.0.7 4 "$REVIEW" 30
t_check "W6 all closed by the server ($ROW_OUT)" all_closed
row "W8 connect flood" 'connections_refused_total\{listener="https",reason="rate"\}' \
        "${HC[@]}" flood 127.0.0.9 2000

# W7: the memory the tables cost with every row's connections behind them.
# An ASan build's shadow memory and quarantine are not the webhook's.
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$WEBHOOK_PID/status")
if grep -aq __asan_init "$WEBHOOK"; then
        echo "  skip W7 peak RSS (${hwm} KiB): an AddressSanitizer build"
else
        t_check "W7 peak RSS under 80 MiB after every row (${hwm} KiB)" test "$hwm" -lt $((80 * 1024))
fi
touch standin/stop
wait "$STANDIN_PID"
t_eq "no stand-in review failed in all ($(answered) answered)" 0 "$(failed)"
[ "$(failed)" = 0 ] || head -5 standin/failures
t_check "review log lines name the peer" \
        bash -c "grep '\"msg\":\"review\"' webhook.log | jq -e 'select(.peer==\"127.0.0.1\")' >/dev/null"
t_check "limited clients are logged, at most once a minute" \
        bash -c "[ \$(grep -c '\"msg\":\"clients limited\"' webhook.log) -ge 1 ]"

t_signal TERM "$WEBHOOK_PID"
wait "$WEBHOOK_PID"
t_eq "exits 0 on SIGTERM (no sanitizer findings)" 0 "$?"
t_check "no sanitizer report in the log" bash -c "! grep -q Sanitizer webhook.log"

# W9: with the API server's address trusted, its connections are always
# kept alive, even while other sources hoard the table; every other source
# is asked to close after each answer.
HEALTH2=$(t_free_port)
HANGAR_TRUSTED_CLIENT_CIDRS='["127.0.0.1/32"]' HANGAR_HEALTH_PORT=$HEALTH2 \
        "$WEBHOOK" serve --config config.yaml 2>webhook-trusted.log &
T_PID=$!
t_cleanup_pid $T_PID
PORT2=$(t_webhook_port webhook-trusted.log) || { cat webhook-trusted.log; exit 1; }
t_wait_for "curl -sf http://127.0.0.1:$HEALTH2/readyz >/dev/null" 30
HC2=(python3 "$HERE/hostile_client.py" "$PORT2")
"${HC2[@]}" keepalive 127.0.0.2 150 "$REVIEW" 3 >hoard.out &
HOARD=$!
t_eq "W9 the trusted source is never asked to close" "asked to close 0 of 200" \
        "$("${HC2[@]}" kept 127.0.0.1 200 "$REVIEW")"
wait "$HOARD"
t_check "W9 every answer to an untrusted source asks it to close ($(cat hoard.out))" \
        grep -Eq 'answered ([1-9][0-9]*), asked to close \1$' hoard.out
t_signal TERM "$T_PID"
wait "$T_PID"
t_eq "exits 0 on SIGTERM (trusted CIDRs)" 0 "$?"
t_end
