#!/usr/bin/env bash
# Clones are not twins (docs/turn.md, "Clones"; design C3-C6 in
# docs/research/guard-safe-by-default.md): the webhook's injected pod with
# hangar-driver serve under runsc, a turn started, the whole sandbox
# checkpointed with --leave-running (tests/pods/podrun checkpoint) and
# restored twice (podrun restore: the sandbox and each container, runsc's
# RestoreSubcontainer), as GKE Pod Snapshots and warm pools restore many
# sandboxes from one snapshot. Fails if the checkpointed pod's turn does not
# go on (it is no clone), if a clone's instance id equals the other's or
# the original's, if a clone's pre-checkpoint turn does not end `restored`
# or its turn files stay, if a relay with the pre-checkpoint token and
# instance reaches a harness in a clone (with no turn there, and with a new
# turn waiting), if the new turns' tokens in two clones are equal (or equal
# the original's); then a grade begun in a clone, that clone checkpointed
# and restored again: the grade must answer `restored` in the clone of the
# clone, which counts two restores.
# usage: test_clones.sh WEBHOOK DRIVER RELAY PROBE [RUNTIME [RUNTIME_BIN [FLAG...]]]
# shellcheck disable=SC2016  # scripts for the containers' shells
WEBHOOK=$(realpath "$1")
DRIVER=$(realpath "$2")
RELAY=$(realpath "$3")
PROBE=$(realpath "$4")
RUNTIME=${5:-runsc}
RUNTIME_BIN=${6:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/../grade/gradelib.sh"
t_begin "clones of one checkpoint are not twins ($RUNTIME${RUNTIME_BIN:+ $RUNTIME_BIN})"
if [ "$RUNTIME" != runsc ]; then
        t_fail "checkpoint and restore need runsc (got $RUNTIME)"
        t_end
fi
EXTRA_BINS=()
export HANGAR_DRIVER_COMMAND='["hangar-driver", "serve"]' HANGAR_DRIVER_PROBES=true
. "$HERE/../turn/turnlib.sh"
turn_pod_up || t_end
CLONES=()
clones_down() {
        local c
        for c in "${CLONES[@]}"; do "$PODRUN" down --dir "$c" >/dev/null 2>&1; done
}
trap 't_main_shell || exit; clones_down; down; t_cleanup' EXIT

# ctl_in DIR ARGS...: hangar-driver ctl in that pod's driver.
ctl_in() { "$PODRUN" exec --dir "$1" hangar-driver -- hangar-driver ctl "${@:2}"; }
field() { ctl_in "$1" "$2" | jq -r "$3"; }

# relay_in DIR NAME "TOKEN INSTANCE": hangar-relay in that pod's agent, given
# that line once it is ready (hangar's order); its exit status in NAME.rc.
relay_in() {
        local dir=$1 name=$2 line=$3
        : >"$name.relay.out"
        { t_wait_for "grep -q '\"relay\":' '$name.relay.out'" 60 &&
                grep -q '"relay":"ready"' "$name.relay.out" && printf '%s\n' "$line"; } |
                timeout 120 "$PODRUN" exec --dir "$dir" --stdin sandbox -- hangar-relay \
                        > >(exec cat >>"$name.relay.out") 2>"$name.relay.err"
        echo $? >"$name.rc"
        t_wait_for "tail -n 1 '$name.relay.out' | grep -qv '\"relay\":\"ready\"'" 10
}
# no_harness DIR: no harness.started in that pod's events (whatever turn).
no_harness() { ! ctl_in "$1" events 2>/dev/null | grep -q '"event":"harness.started"'; }

# ---- the original: a turn waiting for its relay, then the checkpoint ----
ctl_in "$POD" ping >orig.ping
I0=$(jq -r .instance orig.ping)
t_eq "the original daemon: a restore watch, no restore yet" "available 0" \
        "$(jq -r '"\(.restore_watch) \(.restores)"' orig.ping)"
spec t1 ask 'echo started; sleep 600' '{"connect_timeout_s": 900}' >t1.spec
"$PODRUN" exec --dir "$POD" --stdin hangar-driver -- hangar-driver ctl start --spec - <t1.spec >t1.start 2>t1.start.err
t_eq "ctl start: a turn waiting for its relay, in the original instance" "t1 $I0" \
        "$(jq -r '"\(.turn) \(.instance)"' t1.start 2>/dev/null)"
T0=$(jq -r .token t1.start)
T0_NS=$(date +%s%N)
if ! "$PODRUN" checkpoint --dir "$POD" --image "$T_TMP/image" --leave-running >ckpt.log 2>&1; then
        t_fail "podrun checkpoint: $(tail -n 5 ckpt.log)"
        t_end
fi
echo "  (podrun checkpoint --leave-running: $((($(date +%s%N) - T0_NS) / 1000000)) ms," \
        "image $(du -sk "$T_TMP/image" | cut -f1) KiB)"
t_eq "the checkpointed pod goes on: its turn waits, same instance, no restore (resume)" \
        "waiting-for-relay $I0 0" "$(field "$POD" status '"\(.state) \(.instance) \(.restores)"')"

# ---- two clones of the one image ----
for n in 1 2; do
        C=$T_TMP/clone$n
        CLONES+=("$C")
        T0_NS=$(date +%s%N)
        if ! "$PODRUN" restore --from "$POD" --dir "$C" --image "$T_TMP/image" -q >"restore$n.log" 2>&1; then
                t_fail "podrun restore (clone $n): $(tail -n 5 "restore$n.log")"
                t_end
        fi
        echo "  (podrun restore, clone $n: $((($(date +%s%N) - T0_NS) / 1000000)) ms)"
        t_check "clone $n: the daemon saw its restore" \
                t_wait_for "ctl_in '$C' ping 2>/dev/null | jq -e '.restores == 1' >/dev/null" 60
        ctl_in "$C" status >"clone$n.status"
        t_eq "clone $n: its turn t1 ended restored; the watch waits for the next" \
                "t1 ended restored available" \
                "$(jq -r '"\(.turn) \(.state) \(.end.end) \(.restore_watch)"' "clone$n.status")"
        t_eq "clone $n: t1's port, turn file and token are gone" "gone" \
                "$("$PODRUN" exec --dir "$C" hangar-driver -- sh -c \
                        "ls $HOME_DIR/port $HOME_DIR/turn.json $CTL_DIR/token 2>/dev/null || echo gone")"
        ctl_in "$C" events >"clone$n.events"
        t_check "clone $n: the restore is an event of t1, naming the original instance" \
                grep -q "\"event\":\"driver.restored\".*\"old_instance\":\"$I0\"" "clone$n.events"
done
I1=$(jq -r .instance clone1.status)
I2=$(jq -r .instance clone2.status)
t_check "the clones' instance ids are 32 hex digits" \
        sh -c "echo '$I1 $I2' | grep -Eqx '[0-9a-f]{32} [0-9a-f]{32}'"
t_check "the clones' instance ids differ" test "$I1" != "$I2"
t_check "... and differ from the original's" sh -c "test '$I1' != '$I0' && test '$I2' != '$I0'"

# ---- a relay from before the checkpoint, in a clone ----
relay_in "$T_TMP/clone1" old1 "$T0 $I0"
t_eq "clone 1, no turn: the pre-checkpoint relay fails (125): no port" "125 failed" \
        "$(cat old1.rc) $(tail -n 1 old1.relay.out | jq -r .relay)"
t_check "... and no harness started" no_harness "$T_TMP/clone1"

# ---- new turns in each clone: their own tokens ----
# Clone 1's waits 10 s for a relay (then a grade may begin there, below);
# clone 2's long, for the relays with the old token.
TIMEOUTS=(0 10 900)
for n in 1 2; do
        C=$T_TMP/clone$n
        spec t2 ask 'echo started; sleep 600' "{\"connect_timeout_s\": ${TIMEOUTS[$n]}}" >"c$n.t2.spec"
        "$PODRUN" exec --dir "$C" --stdin hangar-driver -- hangar-driver ctl start --spec - <"c$n.t2.spec" >"c$n.t2.start"
        t_eq "clone $n: a new turn starts in the clone's instance" "t2 $(eval echo "\$I$n")" \
                "$(jq -r '"\(.turn) \(.instance)"' "c$n.t2.start" 2>/dev/null)"
done
K1=$(jq -r .token c1.t2.start)
K2=$(jq -r .token c2.t2.start)
t_check "the clones' new tokens are 64 hex digits" sh -c "echo '$K1 $K2' | grep -Eqx '[0-9a-f]{64} [0-9a-f]{64}'"
t_check "the clones' new tokens differ" test "$K1" != "$K2"
t_check "... and differ from the original's" sh -c "test '$K1' != '$T0' && test '$K2' != '$T0'"
relay_in "$T_TMP/clone2" old2 "$T0 $I0"
t_eq "clone 2, t2 waiting: the pre-checkpoint token and instance fail the relay (125)" \
        "125 driver-instance" "$(cat old2.rc) $(tail -n 1 old2.relay.out | jq -r .relay)"
relay_in "$T_TMP/clone2" old3 "$T0 $I2"
t_eq "clone 2: the old token with the clone's own instance fails too (125): no proof" \
        "125 driver-unproven" "$(cat old3.rc) $(tail -n 1 old3.relay.out | jq -r .relay)"
t_eq "... t2 still waits for its own relay" "waiting-for-relay" "$(field "$T_TMP/clone2" status .state)"
t_check "... and no harness started" no_harness "$T_TMP/clone2"

# ---- a grade begun before a checkpoint: a clone of clone 1 ----
C1=$T_TMP/clone1 C3=$T_TMP/clone3
t_check "clone 1: t2 ends (no relay), so a grade may begin" \
        t_wait_for "ctl_in '$C1' status 2>/dev/null | jq -e '.state == \"ended\"' >/dev/null" 60
mkdir -p tests1
echo 'echo graded' >tests1/run.sh
grade_spec g1 tests1 /tmp/turn 30 '["/bin/true"]' >g1.spec
"$PODRUN" exec --dir "$C1" --stdin hangar-driver -- hangar-driver ctl grade begin --spec - <g1.spec >g1.begin 2>g1.begin.err
t_eq "clone 1: grade g1 begins" "true g1" "$(jq -r '"\(.ok) \(.grade)"' g1.begin 2>/dev/null)"
if ! "$PODRUN" checkpoint --dir "$C1" --image "$T_TMP/image2" --leave-running >ckpt2.log 2>&1; then
        t_fail "podrun checkpoint of clone 1: $(tail -n 5 ckpt2.log)"
        t_end
fi
CLONES+=("$C3")
if ! "$PODRUN" restore --from "$C1" --dir "$C3" --image "$T_TMP/image2" -q >restore3.log 2>&1; then
        t_fail "podrun restore (clone 3, of clone 1): $(tail -n 5 restore3.log)"
        t_end
fi
t_check "clone 3: the daemon saw its restore (its second: clone 1's, then its own)" \
        t_wait_for "ctl_in '$C3' ping 2>/dev/null | jq -e '.restores == 2' >/dev/null" 60
I3=$(field "$C3" ping .instance)
t_check "clone 3's instance differs from clone 1's and the original's" \
        sh -c "test '$I3' != '$I1' && test '$I3' != '$I0'"
t_eq "clone 3: g1 answers restored" "restored" "$(ctl_in "$C3" grade show g1 | jq -r .grade.state)"
"$PROBE" spec --pod-file pod.json >g1.specrep
jq -n --slurpfile rep g1.specrep '{grade: "g1", exit_status: 0, output_base64: "", spec_report: $rep[0]}' >g1.finish
"$PODRUN" exec --dir "$C3" --stdin hangar-driver -- hangar-driver ctl grade finish --spec - <g1.finish >g1.finished 2>&1
t_check "clone 3: g1 cannot be finished: it is restored" grep -q 'restored: the grade began before' g1.finished
t_eq "clone 1 (checkpointed, left running): g1 still waits for its grader side" "listening 1" \
        "$(ctl_in "$C1" grade show g1 | jq -r .grade.state) $(field "$C1" ping .restores)"
t_end
