#!/usr/bin/env bash
# Followers wake on change: `ctl events --follow` and `ctl watch` streams
# are served when the daemon appends to the events or the log (it is their
# one writer), not on a timer. A harness emits a burst of approval requests
# (deny-risky: each is requested and decided, two events) and output lines;
# followers started before the burst, during it, after it and after the
# turn ended, and one resumed from an offset, each end with the turn and
# have exactly the file: nothing lost, nothing repeated. While nothing is
# written the daemon sleeps with followers attached: its voluntary context
# switches over 2 s stay few (a 100 ms poll made about 20; a count, not a
# time). usage: test_follow_native.sh DRIVER RELAY (root)
# shellcheck disable=SC2016 # scripts for the harness
DRIVER=$(realpath "$1")
RELAY=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/hostlib.sh"
host_unshared "$0" "$DRIVER" "$RELAY"
. "$HERE/../lib/testlib.sh"
t_begin "followers of the events and the log wake on change: before, during and after a burst"
host_turn_up "$DRIVER" "$RELAY"

N=120
# The harness waits for go1, emits N approval requests and N output lines
# in bursts of 10 (a short sleep between), says burst-done, waits for go2.
HARNESS='while [ ! -e go1 ]; do sleep 0.05; done
i=0
while [ $i -lt '$N' ]; do
        echo "{\"type\": \"approval_request\", \"id\": \"r$i\"}"
        echo "line $i"
        i=$((i + 1))
        [ $((i % 10)) != 0 ] || sleep 0.05
done
echo burst-done
while [ ! -e go2 ]; do sleep 0.05; done'
spec=$(jq -nc --arg script "$HARNESS" --arg cwd "$T_TMP/turn" \
        '{turn: "burst", mode: "deny-risky", cwd: $cwd, script: $script, run_key: "k", close_stdin: false, linger_s: 1}')

host_serve d1 || t_end
SPID=$(cat d1.serve.pid)
# follow NAME CMD...: a follower as the driver's uid, in the background.
follow() {
        local name=$1
        shift
        as_driver "$DRIVER" ctl "$@" >"$name.out" 2>"$name.err" &
        echo $! >"$name.pid"
        t_cleanup_pid "$(cat "$name.pid")"
}
events_lines() { wc -l <ctl/events.jsonl; }
ctxt() { awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$SPID/status"; }

host_start burst "$spec" || t_end
t_check "the harness started" t_wait_for "grep -q harness.started ctl/events.jsonl" 20
follow before events --turn burst --follow
follow wbefore watch
t_check "the followers before the burst have the events so far" \
        t_wait_for "grep -q harness.started before.out" 10

# Idle with followers attached: nothing written, the daemon sleeps.
sleep 0.5
c0=$(ctxt)
sleep 2
c1=$(ctxt)
t_check "nothing written, followers attached: the daemon sleeps (under 8 wake-ups in 2 s: $((c1 - c0)))" \
        test $((c1 - c0)) -lt 8

touch turn/go1
t_check "the burst has begun" t_wait_for "grep -q '\"id\":\"r3\"' ctl/events.jsonl" 20
follow during events --turn burst --follow
follow wduring watch
t_check "the burst is over" t_wait_for "grep -q burst-done home/run/log && [ \$(grep -c approval.decided ctl/events.jsonl) = $N ]" 60
follow after events --turn burst --follow
OFF=$(head -n 5 ctl/events.jsonl | wc -c)
follow from events --turn burst --from "$OFF" --follow
t_check "the followers after the burst have caught up" \
        t_wait_for "[ \$(grep -c approval.decided after.out) = $N ] && [ \$(grep -c approval.decided from.out) = $N ]" 20
t_check "the turn is still running: no follower has ended" \
        sh -c 'for f in before during after from wbefore wduring; do kill -0 "$(cat $f.pid)" || exit 1; done'

touch turn/go2
t_wait_pid burst.relay.pid 30
t_eq "the harness ended well (0)" 0 "$?"
t_check "the turn ended" t_wait_for "[ \"\$(ctl status --turn burst | jq -r .state)\" = ended ]" 30
follow ended events --turn burst --follow
for f in before during after from wbefore wduring ended; do
        t_wait_pid "$f.pid" 20
        t_eq "follower $f ends with the turn (0)" 0 "$?"
done
# The CLI prints what the stream carries after its header: the file's bytes.
for f in before during after ended; do
        t_check "follower $f ($(wc -l <"$f.out") events): exactly the file, nothing lost or repeated" \
                cmp -s "$f.out" ctl/events.jsonl
done
t_check "the follower from byte $OFF: exactly the file from there" \
        bash -c "cmp -s from.out <(tail -c +$((OFF + 1)) ctl/events.jsonl)"
t_eq "the events: $N requested and $N decided, one turn.ended" "$N $N 1" \
        "$(grep -c approval.requested ctl/events.jsonl) $(grep -c approval.decided ctl/events.jsonl) $(grep -c turn.ended ctl/events.jsonl)"
for f in wbefore wduring; do
        t_check "log watcher $f: exactly the log" cmp -s "$f.out" home/run/log
done
t_eq "the log: $N lines and burst-done" "$N 1" "$(grep -c '^line ' home/run/log) $(grep -c '^burst-done$' home/run/log)"
t_end
