#!/usr/bin/env bash
# A turn on the host, without a pod: hangar-driver relay as one uid and
# hangar-relay as another (setpriv), hangar-home and hangar-ctl as plain
# directories. Quick, and it runs in the ASan+UBSan build too, so the
# driver's and the relay's loops are sanitized end to end (the pod suites
# run the same flows under runsc/crun/runc).
# usage: test_turn_native.sh DRIVER RELAY ATTACK
DRIVER=$(realpath "$1")
RELAY=$(realpath "$2")
ATTACK=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "a turn on the host (driver uid 1001, relay uid 1000)"
cd "$T_TMP" || exit 1
[ "$(id -u)" = 0 ] || { t_fail "needs root (setpriv to two uids)"; t_end; }
chmod 755 "$T_TMP"
mkdir -p home ctl turn agent-home
chown 1001:1001 home ctl
chown 1000:1000 turn agent-home
chmod 700 ctl
export HANGAR_HOME_PATH=$T_TMP/home HANGAR_CTL_PATH=$T_TMP/ctl HANGAR_UID_SPLIT=required
as_driver() { setpriv --reuid 1001 --regid 1001 --clear-groups -- "$@"; }
as_agent() { HOME=$T_TMP/agent-home setpriv --reuid 1000 --regid 1000 --clear-groups -- "$@"; }
ctl() { as_driver "$DRIVER" ctl "$@"; }
verdict() {
        as_driver sh -c "echo '{\"verdict\":\"$1\",\"reasons\":[{\"code\":\"$2\"}]}' | tee ctl/verdict.json >home/verdict.json"
}
verdict split-active none
# The binaries must be reachable by both uids (the tree and gate commands
# run as the agent through the relay).
mkdir -p bin && cp "$DRIVER" "$RELAY" "$ATTACK" bin/ && chmod 755 bin/*
export PATH=$T_TMP/bin:$PATH
DRIVER=$T_TMP/bin/hangar-driver
RELAY=$T_TMP/bin/hangar-relay

spec() {
        jq -n --arg id "$1" --arg script "$2" --arg cwd "$T_TMP/turn" --argjson extra "${3:-{\}}" \
                '{turn: $id, mode: "ask", cwd: $cwd, script: $script, run_key: "KEY-\($id)",
                  linger_s: 30, connect_timeout_s: 30, handshake_timeout_ms: 500} + $extra'
}
# start_driver NAME SPEC_JSON; start_relay NAME. setpriv execs, so $! is the
# driver's (the relay's) own pid.
start_driver() {
        echo "$2" >"$1.spec"
        setpriv --reuid 1001 --regid 1001 --clear-groups -- "$DRIVER" relay --spec - <"$1.spec" \
                >"$1.driver.out" 2>"$1.driver.err" &
        echo $! >"$1.driver.pid"
        t_cleanup_pid "$(cat "$1.driver.pid")"
        t_wait_for "ctl token >$1.token 2>/dev/null" 10 || { t_fail "$1: no token"; return 1; }
}
start_relay() {
        HOME=$T_TMP/agent-home setpriv --reuid 1000 --regid 1000 --clear-groups -- "$RELAY" \
                <<<"$(jq -r .token "$1.token")" >"$1.relay.out" 2>"$1.relay.err" &
        echo $! >"$1.relay.pid"
        t_cleanup_pid "$(cat "$1.relay.pid")"
}
start() { start_driver "$1" "$2" && start_relay "$1"; }
log_has() { grep -q -- "$1" home/run/log 2>/dev/null; }

# ---- the main turn ----
SCRIPT='read l; echo "in=$l uid=$(id -u)"; echo err >&2
echo "{\"type\":\"approval_request\",\"id\":\"q\"}"; read r; echo "resp=$r"
trap "echo got-term; exit 5" TERM; echo ready; while :; do sleep 0.1; done'
start_driver main "$(spec main "$SCRIPT" '{"input": "hi\n", "close_stdin": false}')"
PORT=$(jq -r .port main.token)
t_eq "a wrong token is dropped" closed "$(as_agent "$ATTACK" "$PORT" wrong)"
t_eq "a stalled connection is dropped" closed "$(as_agent "$ATTACK" "$PORT" stall 3)"
t_eq "junk is dropped" closed "$(as_agent "$ATTACK" "$PORT" garbage)"
start_relay main
t_check "stdin, stdout, the agent's uid" t_wait_for "log_has 'in=hi uid=1000'" 10
t_check "stderr" t_wait_for "log_has err" 10
t_eq "a third connection is refused" refused "$(as_agent "$ATTACK" "$PORT" none)"
t_eq "the wrong token attempts were recorded" 1 "$(ctl events | grep -c '"reason":"bad-token"')"
t_check "the approval request" t_wait_for "ctl approvals | jq -e '.approvals[0].id == \"q\"' >/dev/null" 10
t_check "the agent cannot use ctl (SO_PEERCRED, and no access)" \
        sh -c "! HOME=/tmp setpriv --reuid 1000 --regid 1000 --clear-groups -- '$DRIVER' ctl status >/dev/null 2>&1"
ctl approve q >/dev/null
t_check "the decision reaches the harness" t_wait_for "log_has 'resp=.*approve'" 10
t_wait_for "log_has ready" 10
ctl signal TERM >/dev/null
t_check "the signal and the exit status (5)" \
        t_wait_for "[ \"\$(ctl status | jq -r .harness.value)\" = 5 ]" 10
as_driver "$DRIVER" ctl run --timeout 1 -- sleep 10 >/dev/null
t_eq "a run request past its timeout: 124" 124 "$?"
mkdir -p turn/src && echo x >turn/src/f && ln -sf /etc/shadow turn/src/evil && chown -R 1000:1000 turn
t_eq "a tree hash, by the agent, untrusted" "agent false 1" \
        "$(ctl tree | jq -r '"\(.by) \(.trusted) \(.tree.files)"')"
as_driver "$DRIVER" ctl verify -- sh -c 'exit 4' >/dev/null
t_eq "the verify gate's status" 4 "$?"
t_eq "its rounds file is the agent's" "1 1000" \
        "$(cat agent-home/.hangar-scratch/main/verify-rounds) $(stat -c %u agent-home/.hangar-scratch/main/verify-rounds)"
ctl finish >/dev/null
t_wait_pid main.driver.pid 10
t_eq "the driver ends: done, harness 5" "0 done 5" "$? $(jq -r '"\(.end) \(.harness.value)"' main.driver.out)"
t_wait_pid main.relay.pid 10
t_eq "the relay exits 5" 5 "$?"
t_check "the scratch directory is removed" test ! -e agent-home/.hangar-scratch/main
t_eq "secrets are 0600 in hangar-ctl" "600 600" "$(stat -c %a ctl/run.key ctl/relay.token | tr '\n' ' ' | sed 's/ $//')"
t_check "the agent cannot read the run key" sh -c "! HOME=/tmp setpriv --reuid 1000 --regid 1000 --clear-groups -- cat ctl/run.key 2>/dev/null"

# ---- approvals: deny-risky, and a harness that cannot hear ----
ASK='echo "{\"type\":\"approval_request\",\"id\":\"r\"}"; read -r a; echo "answer=$a"; sleep 0.5'
start dr "$(spec dr "$ASK" '{"mode": "deny-risky", "close_stdin": false, "linger_s": 1}')"
t_check "deny-risky: the driver denies the request itself" \
        t_wait_for "log_has 'answer=.*\"decision\":\"deny\"'" 10
t_eq "... recorded as decided by the driver" "denied driver" \
        "$(jq -r '.[0] | "\(.state) \(.by)"' ctl/approvals.json)"
t_wait_pid dr.driver.pid 10
t_wait_pid dr.relay.pid 10
start cs "$(spec cs 'echo "{\"type\":\"approval_request\",\"id\":\"c\"}"; sleep 3' '{"linger_s": 1}')"
t_wait_for "ctl approvals | jq -e '.approvals[0].id == \"c\"' >/dev/null" 10
t_check "approving for a harness whose stdin is closed is an error" \
        sh -c "! setpriv --reuid 1001 --regid 1001 --clear-groups -- '$DRIVER' ctl approve c 2>cs.err && grep -q 'stdin is closed' cs.err"
t_eq "... and the request stays pending" pending "$(ctl approvals | jq -r '.approvals[0].state')"
t_wait_pid cs.driver.pid 15
t_wait_pid cs.relay.pid 10

# ---- failures ----
LOOP='i=0; while :; do echo tick $i; i=$((i+1)); sleep 0.1; done'
start kd "$(spec kd "$LOOP")"
t_wait_for "log_has 'tick 3'" 10
kill -9 "$(cat kd.driver.pid)"
t_wait_pid kd.relay.pid 10
t_eq "driver killed: the relay exits 125, driver-gone" "125 driver-gone" "$? $(jq -r .end kd.relay.out)"
t_check "... the log stays" log_has 'tick 3'
start kr "$(spec kr "$LOOP")"
t_wait_for "log_has 'tick 3'" 10
kill -9 "$(cat kr.relay.pid)"
t_wait_pid kr.driver.pid 10
t_eq "relay killed: the driver ends as relay-lost (1)" "1 relay-lost" "$? $(jq -r .end kr.driver.out)"
t_eq "... exit.json says so" relay-lost "$(jq -r .end home/run/exit.json)"
t_check "... no harness left" t_wait_for "! pgrep -f '$T_TMP/home/run/script' >/dev/null" 5

# ---- nobody connects ----
setpriv --reuid 1001 --regid 1001 --clear-groups -- "$DRIVER" relay --spec - \
        <<<"$(spec nc 'true' '{"connect_timeout_s": 1}')" >nc.out 2>/dev/null
t_eq "no relay within connect_timeout_s: 1, relay-never-connected" "1 relay-never-connected" \
        "$? $(jq -r .end nc.out)"
t_eq "... exit.json says so" relay-never-connected "$(jq -r .end home/run/exit.json)"

# ---- the gate ----
verdict refused agent-failed
as_driver "$DRIVER" relay --spec - <<<"$(spec g 'true')" >g.out 2>/dev/null
t_eq "required and a refused verdict: 4, with the reason" "4 agent-failed" \
        "$? $(jq -r '.reason | split(":")[0]' g.out)"
echo 00 | as_agent "$RELAY" >gr.out 2>/dev/null
t_eq "the relay refuses too (4)" 4 "$?"
t_end
