#!/usr/bin/env bash
# hangar-driver verdict on the host, in the native suites' layout (uid 1001's
# hangar-ctl and hangar-home, the agent's read-only view of hangar-home):
# what `hangar pod check` runs in hangar-driver to hand the probe's verdict
# to both daemons without a shell. A verdict is stored in both volumes,
# 0644, owned by the driver's uid, the relay's copy first; anything that is
# not a verdict hangar-probe could make is refused and changes nothing; the
# places are the driver's configuration's, a planted symlink is replaced and
# never followed, and the agent (hangar-home read-only) cannot store one.
# Quick.
# usage: test_verdict_native.sh DRIVER
DRIVER=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/hostlib.sh"
host_unshared "$0" "$DRIVER"
. "$HERE/../lib/testlib.sh"
t_begin "hangar-driver verdict: the probe's verdict into both volumes, checked"
host_turn_up "$DRIVER"

# deliver NAME TEXT [AS]: TEXT on hangar-driver verdict's stdin as the
# driver (or AS); exit status, stdout and stderr in NAME.*.
deliver() {
	local as=${3:-as_driver}
	printf '%s' "$2" | "$as" "$DRIVER" verdict >"$1.out" 2>"$1.err"
	echo $? >"$1.rc"
}
stat_of() { stat -c '%a %u:%g' "$1"; }

V_SPLIT='{"mode":"required","verdict":"split-active","reasons":[]}'
deliver split "$V_SPLIT"
t_eq "split-active stored: exit 0" 0 "$(cat split.rc)"
t_eq "... the reply names both files" \
	"{\"verdict\":\"split-active\",\"ctl\":\"$T_TMP/ctl/verdict.json\",\"home\":\"$T_TMP/home/verdict.json\"}" \
	"$(cat split.out)"
t_eq "... hangar-ctl's copy is the verdict" "$V_SPLIT" "$(cat ctl/verdict.json)"
t_eq "... hangar-home's copy is the same" "$V_SPLIT" "$(cat home/verdict.json)"
t_eq "... hangar-ctl's 0644, the driver's uid" "644 1001:1001" "$(stat_of ctl/verdict.json)"
t_eq "... hangar-home's 0644, the driver's uid" "644 1001:1001" "$(stat_of home/verdict.json)"
t_eq "... the agent reads it through its read-only view" "$V_SPLIT" \
	"$(as_agent cat "$AGENT_HOME_VIEW/verdict.json")"
t_check "... no temporary file left behind" \
	sh -c "! ls -A ctl home | grep -q tmp"

V_AUTO='{"mode":"auto","verdict":"single-user","reasons":[{"code":"agent-failed","detail":"agent out of shape: identity.uid_distinct"}]}'
deliver auto "$V_AUTO"
t_eq "a single-user verdict replaces it: exit 0" 0 "$(cat auto.rc)"
t_eq "... in hangar-ctl" "$V_AUTO" "$(cat ctl/verdict.json)"
t_eq "... and hangar-home" "$V_AUTO" "$(cat home/verdict.json)"

# Refused, each with exit 2, both copies left as they were.
refused() { # NAME TEXT EXPECTED_STDERR
	deliver "$1" "$2"
	t_eq "$1: refused, exit 2" 2 "$(cat "$1.rc")"
	t_check "... says why: $3" grep -qF -- "$3" "$1.err"
	t_eq "... hangar-ctl's copy unchanged" "$V_AUTO" "$(cat ctl/verdict.json)"
	t_eq "... hangar-home's unchanged" "$V_AUTO" "$(cat home/verdict.json)"
}
refused notjson 'split-active' "not stored"
refused empty '' "not stored"
refused array '[]' 'not a verdict'
refused extra '{"mode":"auto","verdict":"split-active","reasons":[],"path":"/etc"}' 'not a verdict'
refused nomode '{"verdict":"split-active","reasons":[],"x":1}' '"mode" is not off, auto or required'
refused badname '{"mode":"auto","verdict":"split","reasons":[]}' '"verdict" is not split-active'
refused splitreason '{"mode":"auto","verdict":"split-active","reasons":[{"code":"spec-failed"}]}' \
	'a split-active verdict with some reasons'
refused noreason '{"mode":"auto","verdict":"single-user","reasons":[]}' \
	'a single-user verdict with no reasons'
refused refusedauto '{"mode":"auto","verdict":"refused","reasons":[{"code":"spec-failed"}]}' \
	'a refused verdict cannot come of mode auto'
refused offsplit '{"mode":"off","verdict":"split-active","reasons":[]}' \
	'a split-active verdict cannot come of mode off'
refused badcode '{"mode":"auto","verdict":"single-user","reasons":[{"code":"../x"}]}' 'reason 0 is not'
refused numdetail '{"mode":"auto","verdict":"single-user","reasons":[{"code":"a","detail":1}]}' 'reason 0 is not'
refused oversize "$(head -c 70000 /dev/zero | tr '\0' ' ')" 'the verdict is over 64 KiB'

# The places are the configuration's: a symlink planted where the verdict
# goes is replaced, its target untouched.
as_driver sh -c 'echo target >ctl/elsewhere && rm ctl/verdict.json && ln -s elsewhere ctl/verdict.json'
deliver symlink "$V_SPLIT"
t_eq "a symlink at hangar-ctl's verdict: stored, exit 0" 0 "$(cat symlink.rc)"
t_check "... the link was replaced by a file" test -f ctl/verdict.json -a ! -L ctl/verdict.json
t_eq "... its target untouched" target "$(cat ctl/elsewhere)"

# Who may write where: the agent, whose hangar-home is read-only, stores
# nothing; the relay's copy goes first, so hangar-ctl's is untouched too.
printf '%s' "$V_AUTO" | HANGAR_HOME_PATH=$AGENT_HOME_VIEW as_agent "$DRIVER" verdict \
	>agent.out 2>agent.err
echo $? >agent.rc
t_eq "the agent cannot store a verdict: exit 1" 1 "$(cat agent.rc)"
t_check "... it says where and why" grep -qF "$AGENT_HOME_VIEW/verdict.json: Read-only file system" agent.err
t_eq "... hangar-home's copy unchanged" "$V_SPLIT" "$(cat home/verdict.json)"
t_eq "... hangar-ctl's unchanged" "$V_SPLIT" "$(cat ctl/verdict.json)"


as_driver "$DRIVER" verdict extra </dev/null >usage2.out 2>usage2.err
t_eq "an argument it does not take: exit 2" 2 "$?"
t_check "... with the usage" grep -q 'usage: hangar-driver verdict' usage2.err
t_end
