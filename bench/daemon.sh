#!/usr/bin/env bash
# Benchmark: a turn's start, before and after the driver's daemon, in real
# pods (tests/pods/podrun) under crun and runsc. No pass or fail.
#
#   before: `hangar-driver relay --spec -` in an exec of its own (it runs the
#           turn in that exec's foreground), `ctl token` polled through execs
#           (every 100 ms) until the driver serves it, then hangar-relay in an
#           exec into the agent's container, the token written after its
#           ready line;
#   after:  `hangar-driver ctl start --spec -` to the daemon (whose reply has
#           the token), then hangar-relay the same way.
#
# The daemon is the sidecar's PID 1 in a real pod; here the pod runs the
# older `sleep infinity` sidecar so that both ways run in one pod, and the
# daemon is started once, by an exec not counted. Per turn: the execs made
# until the driver's harness.started event, and the time from the first exec
# to that event (the event's timestamp is the driver's clock, the host's wall
# clock under both runtimes). BENCH_TURNS (5) turns each way, alternating;
# median, mean and max in ms. The token goes to the relay as hangar writes it
# (`TOKEN INSTANCE`: the relay checks the daemon's instance before it
# connects), and every turn must have run to the relay's done line with exit
# 0; the relay's own sweep (the sealed start) is printed from its ready line.
# usage: bench/daemon.sh BUILD_DIR   (needs root, jq, busybox, crun and/or runsc)
#   BENCH_RUNTIMES: default "crun runsc" (Debian's runsc, --platform=ptrace).
#   BENCH_RUNSC_CURRENT=PATH: also a current runsc build (tests/pods/build-runsc.sh)
#     with --platform=systrap, shown as runsc-current.
set -euo pipefail
BUILD=$(realpath "${1:?usage: bench/daemon.sh BUILD_DIR}")
TURNS=${BENCH_TURNS:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
PODRUN=$HERE/../tests/pods/podrun
WEBHOOK=$BUILD/webhook/hangar-webhook
for bin in "$WEBHOOK" "$BUILD/driver/hangar-driver" "$BUILD/relay/hangar-relay"; do
        [ -x "$bin" ] || { echo "missing $bin: ninja -C $BUILD hangar-webhook hangar-driver hangar-relay"; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench/daemon.sh: needs root (the runtimes)"; exit 1; }
command -v jq >/dev/null || { echo "missing jq: run scripts/install-deps.sh"; exit 1; }
TMP=$(mktemp -d /tmp/hangar-bench-daemon.XXXXXX)
chmod 755 "$TMP"
PODS=()
cleanup() {
        local d
        for d in "${PODS[@]}"; do "$PODRUN" down --dir "$d" >/dev/null 2>&1 || true; done
        rm -rf "$TMP"
}
trap cleanup EXIT
now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }
die() { echo "bench/daemon.sh: $*" >&2; exit 1; }
stats() { sort -n | awk '{ v[NR] = $1; s += $1 } END {
        if (!NR) { printf "%8s %8s %8s", "n/a", "n/a", "n/a"; exit }
        m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
        printf "%8d %8d %8d", m, s / NR, v[NR] }'; }

cp "$HERE/../tests/pods/fixtures/sandbox-pod.yaml" "$TMP/pod.yaml"
HANGAR_K8S_DRIVER_SIDECAR=true HANGAR_DRIVER_COMMAND='["sleep", "infinity"]' HANGAR_DRIVER_PROBES=false \
        "$WEBHOOK" inject -f "$TMP/pod.yaml" >"$TMP/pod.json"
SCRIPT='echo started; sleep 0.3'
echo "bench/daemon.sh: $BUILD, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the start"

RUNTIMES=${BENCH_RUNTIMES:-crun runsc}
if [ -n "${BENCH_RUNSC_CURRENT:-}" ]; then RUNTIMES+=" runsc-current"; fi
for rt in $RUNTIMES; do
        dir=$TMP/pod-$rt
        PODS+=("$dir")
        rt_opts=(--runtime "$rt")
        if [ "$rt" = runsc-current ]; then
                rt_opts=(--runtime runsc --runtime-bin "$(realpath "$BENCH_RUNSC_CURRENT")" --runtime-flag --platform=systrap)
        fi
        echo "$rt: $("${rt_opts[3]:-${rt_opts[1]}}" --version 2>/dev/null | head -n 1)"
        if ! "$PODRUN" up -q --pod "$TMP/pod.json" --dir "$dir" "${rt_opts[@]}" \
                --bin "$BUILD/driver" --bin "$BUILD/relay" >"$TMP/$rt.up.log" 2>&1; then
                echo "podrun up under $rt failed: $(tail -n 3 "$TMP/$rt.up.log")" >&2
                continue
        fi
        x_driver() { "$PODRUN" exec --dir "$dir" hangar-driver -- "$@"; }
        x_agent() { "$PODRUN" exec --dir "$dir" sandbox -- "$@"; }
        x_driver sh -c 'echo "{\"verdict\":\"split-active\",\"reasons\":[]}" | tee /var/lib/hangar-ctl/verdict.json >/var/lib/hangar/verdict.json'
        x_agent mkdir -p /tmp/turn
        spec() { jq -n --arg id "$1" --arg s "$SCRIPT" '{turn: $id, mode: "ask", cwd: "/tmp/turn",
                script: $s, run_key: "k", linger_s: 1, connect_timeout_s: 60}'; }
        # relay_turn NAME REPLY: the relay; after its ready line, the token and
        # the daemon's instance from REPLY (ctl token's or ctl start's answer)
        # as hangar writes them. Waits for the relay to end.
        relay_turn() {
                local line
                line="$(jq -r '"\(.token) \(.instance)"' "$2")"
                : >"$TMP/$1.relay"
                { while ! grep -q '"relay":' "$TMP/$1.relay"; do sleep 0.02; done
                  grep -q '"relay":"ready"' "$TMP/$1.relay" && printf '%s\n' "$line"; } |
                        "$PODRUN" exec --dir "$dir" --stdin sandbox -- hangar-relay > >(exec cat >>"$TMP/$1.relay") 2>/dev/null
        }
        # turn_done NAME T0: the turn ran (the relay's done line, exit 0, and a
        # harness.started of this turn); prints "ms-to-started sweep-ms".
        turn_done() {
                local started sweep
                if ! jq -se 'map(select(.relay == "done" and .harness_value == 0)) | length == 1' \
                        "$TMP/$1.relay" >/dev/null 2>&1; then
                        echo "turn $1 under $rt did not end well: $(tail -n 2 "$TMP/$1.relay")" >&2
                        exit 1
                fi
                # events.jsonl is the current turn's (truncated when one starts).
                started=$(x_driver cat /var/lib/hangar-ctl/events.jsonl |
                        jq -r 'select(.event == "harness.started") | .ts * 1000 | floor' | tail -n 1)
                if [ -z "$started" ] || [ "$started" -lt "$2" ]; then
                        echo "turn $1 under $rt: no harness.started after its first exec" >&2
                        exit 1
                fi
                sweep=$(grep -m1 '"relay":"ready"' "$TMP/$1.relay" | jq -r '.sweep.elapsed_ms // "n/a"')
                echo "$((started - $2)) $sweep"
        }
        : >"$TMP/$rt.before" && : >"$TMP/$rt.after"
        for ((i = 1; i <= TURNS; i++)); do
                # before: the driver in an exec's foreground, ctl token polled.
                spec "b$i" >"$TMP/spec"
                execs=1
                t0=$(now_ms)
                "$PODRUN" exec --dir "$dir" --stdin hangar-driver -- hangar-driver relay --spec - \
                        <"$TMP/spec" >"$TMP/b$i.driver" 2>&1 &
                dpid=$!
                until x_driver hangar-driver ctl token >"$TMP/b$i.token" 2>/dev/null; do
                        execs=$((execs + 1)); sleep 0.1
                        [ "$execs" -lt 600 ] || die "turn b$i under $rt: no token after $execs execs: $(tail -n 3 "$TMP/b$i.driver")"
                done
                execs=$((execs + 2)) # the token's exec, and the relay's
                relay_turn "b$i" "$TMP/b$i.token"
                wait "$dpid" || true
                # (turn_done's figures captured first: as an argument of echo
                # its failure would pass unseen)
                done_line=$(turn_done "b$i" "$t0")
                echo "$execs $done_line" >>"$TMP/$rt.before"
                # after: the daemon (its start not counted: the sidecar's PID 1
                # in a real pod), then ctl start. It stops again after the
                # turn, for the next relay-mode turn needs the control socket.
                "$PODRUN" exec --dir "$dir" hangar-driver -- hangar-driver serve >/dev/null 2>&1 &
                daemon=$!
                t_ping=$SECONDS
                until x_driver hangar-driver ctl ping >/dev/null 2>&1; do
                        sleep 0.1
                        [ $((SECONDS - t_ping)) -lt 120 ] || die "the daemon under $rt never answered ctl ping"
                done
                spec "a$i" >"$TMP/spec"
                t0=$(now_ms)
                "$PODRUN" exec --dir "$dir" --stdin hangar-driver -- hangar-driver ctl start --spec - \
                        <"$TMP/spec" >"$TMP/a$i.start"
                relay_turn "a$i" "$TMP/a$i.start"
                done_line=$(turn_done "a$i" "$t0")
                echo "2 $done_line" >>"$TMP/$rt.after"
                # shellcheck disable=SC2016 # the container's shell expands it
                x_driver sh -c 'kill -TERM $(pidof hangar-driver)' || true
                wait "$daemon" || true
        done
        echo "$rt: $TURNS turns each way (ms from the first exec to harness.started), load $(cut -d' ' -f1-3 /proc/loadavg)"
        printf '  %-44s %6s %8s %8s %8s | %s\n' "" execs median mean max "relay sweep ms (median, max)"
        for way in before after; do
                what="before: relay --spec -, ctl token, relay"
                [ "$way" = after ] && what="after: ctl start (serve), relay"
                printf '  %-44s %6s %s | %s\n' "$what" "$(awk '{ print $1 }' "$TMP/$rt.$way" | sort -n | tail -n 1)" \
                        "$(awk '{ print $2 }' "$TMP/$rt.$way" | stats)" \
                        "$(awk '$3 != "n/a" { print $3 }' "$TMP/$rt.$way" | stats | awk '{ print $1 ", " $3 }')"
        done
        # Turn i before and turn i after ran back to back: their ratio cancels
        # the machine's drift between pairs.
        printf '  after/before, median of the %d paired ratios: %s\n' "$TURNS" \
                "$(paste -d' ' "$TMP/$rt.before" "$TMP/$rt.after" | awk '{ printf "%.4f\n", $5 / $2 }' | sort -n |
                        awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"
done
