#!/usr/bin/env bash
# hangar-probe's in-container checks without a container runtime: each case
# builds the shape (or a broken one) natively with Linux namespaces
# (unshare: a private mount and PID namespace, tmpfs and bind mounts, a
# read-only root) and runs `hangar-probe check` as the role's uid with
# setpriv (no capabilities, no_new_privs), then checks the verdict and which
# check caught the fault. The same checks under gVisor (runsc) are the pod
# harness's job (tests/pods). Needs root.
# usage: test_probe_native.sh PATH/TO/hangar-probe
PROBE=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "hangar-probe check, shapes built natively with namespaces"
[ "$(id -u)" = 0 ] || { t_fail "needs root (unshare, mount)"; t_end; }

# The volumes live under the test's directory (configuration overrides), so
# nothing on the host is touched.
HOME_DIR=$T_TMP/hangar
CTL_DIR=$T_TMP/hangar-ctl
mkdir -p "$HOME_DIR" "$CTL_DIR" "$T_TMP/home-src"
chmod 755 "$T_TMP"
export HANGAR_HOME_PATH=$HOME_DIR HANGAR_CTL_PATH=$CTL_DIR

# run_case NAME ROLE UID SETUP [SETPRIV_EXTRA...]: SETUP is shell run as root
# (CAPS replaces the default "no capabilities at all" setpriv options, SUPP
# the default "no supplementary groups")
# inside the new namespaces before the probe replaces the shell (so the probe
# is PID 1 and sees no other process unless SETUP leaves one).
run_case() {
        local name=$1 role=$2 uid=$3 setup=$4
        shift 4
        unshare --mount --pid --fork --mount-proc sh -c "
                set -e
                mount --make-rprivate /
                $setup
                exec setpriv --reuid $uid --regid $uid ${SUPP:---clear-groups} \
                        ${CAPS:---inh-caps=-all --bounding-set=-all} --no-new-privs $* \
                        '$PROBE' check --role $role ${PROBE_ARGS:-}
        " >"$T_TMP/$name.json" 2>"$T_TMP/$name.err"
        echo $? >"$T_TMP/$name.rc"
}
result() { jq -r .result "$T_TMP/$1.json" 2>/dev/null; }
failed() { jq -r '[.checks[] | select(.required and .status == "fail") | .name] | join(",")' "$T_TMP/$1.json" 2>/dev/null; }

MOUNT_CTL="mount -t tmpfs -o size=64m tmpfs $CTL_DIR"
MOUNT_HOME_RW="mount --bind $T_TMP/home-src $HOME_DIR"
MOUNT_HOME_RO="mount --bind $T_TMP/home-src $HOME_DIR && mount -o remount,bind,ro $HOME_DIR"
ROOT_RO="mount -o remount,bind,ro /"

run_case driver-ok driver 1001 "$MOUNT_CTL; $MOUNT_HOME_RW; $ROOT_RO"
t_eq "driver in shape: pass" pass "$(result driver-ok)"
t_eq "driver in shape: exit 0" 0 "$(cat "$T_TMP/driver-ok.rc")"
t_eq "driver in shape: no required check fails" "" "$(failed driver-ok)"
t_check "driver report says where each fact was read" \
        bash -c "jq -e 'all(.checks[]; (.source | length) > 0 and has(\"observed\"))' '$T_TMP/driver-ok.json' >/dev/null"

run_case agent-ok agent 1000 "$MOUNT_HOME_RO"
t_eq "agent in shape: pass" pass "$(result agent-ok)"

# Each fault is caught by the check that should catch it.
expect_fail() { # CASE CHECK DESCRIPTION
        t_eq "$3: fail" fail "$(result "$1")"
        t_eq "$3: exit 1" 1 "$(cat "$T_TMP/$1.rc")"
        t_check "$3: caught by $2 (failed: $(failed "$1"))" grep -qw -- "$2" <<<"$(failed "$1" | tr ',' ' ')"
}
run_case driver-agent-uid driver 1000 "$MOUNT_CTL; $MOUNT_HOME_RW; $ROOT_RO"
expect_fail driver-agent-uid identity.driver_uid "driver with the agent's uid"
run_case driver-root driver 0 "$MOUNT_CTL; $MOUNT_HOME_RW; $ROOT_RO"
expect_fail driver-root identity.uid_not_root "driver as root"
run_case driver-writable-root driver 1001 "$MOUNT_CTL; $MOUNT_HOME_RW"
expect_fail driver-writable-root root_filesystem.read_only "driver with a writable root"
run_case driver-ctl-on-disk driver 1001 "mount --bind $T_TMP/home-src $CTL_DIR; $MOUNT_HOME_RW; $ROOT_RO"
expect_fail driver-ctl-on-disk mounts.hangar-ctl.memory "driver's hangar-ctl not in memory"
run_case driver-home-ro driver 1001 "$MOUNT_CTL; $MOUNT_HOME_RO; $ROOT_RO"
expect_fail driver-home-ro mounts.hangar-home "driver with hangar-home read-only"
run_case agent-with-ctl agent 1000 "$MOUNT_HOME_RO; $MOUNT_CTL"
expect_fail agent-with-ctl mounts.hangar-ctl "agent with hangar-ctl mounted"
run_case agent-home-rw agent 1000 "$MOUNT_HOME_RW"
expect_fail agent-home-rw mounts.hangar-home "agent with hangar-home read-write"
CAPS="--inh-caps=-all,+sys_ptrace --ambient-caps=+sys_ptrace --bounding-set=-all,+sys_ptrace" \
        run_case agent-ptrace agent 1000 "$MOUNT_HOME_RO"
expect_fail agent-ptrace capabilities.effective "agent with CAP_SYS_PTRACE"
run_case agent-driver-uid agent 1001 "$MOUNT_HOME_RO"
expect_fail agent-driver-uid identity.agent_uid_differs "agent with the driver's uid"
# The driver's gid as a supplementary group (a pod-level fsGroup does this):
# reported, never failing the report.
SUPP="--groups 1001,4242" run_case agent-driver-group agent 1000 "$MOUNT_HOME_RO"
t_eq "agent in the driver's group: still pass" pass "$(result agent-driver-group)"
t_eq "agent in the driver's group: reported as a non-required failure" "false fail [1001,4242]" \
        "$(jq -r '.checks[] | select(.name == "identity.groups") | "\(.required) \(.status) \(.observed | tojson)"' \
                "$T_TMP/agent-driver-group.json" 2>/dev/null)"
t_eq "agent without supplementary groups: identity.groups passes" "pass []" \
        "$(jq -r '.checks[] | select(.name == "identity.groups") | "\(.status) \(.observed | tojson)"' \
                "$T_TMP/agent-ok.json" 2>/dev/null)"
# More groups than the probe reads: unknown, never an empty list.
SUPP="--groups $(seq -s, 2000 3100)" run_case agent-many-groups agent 1000 "$MOUNT_HOME_RO"
t_eq "agent in 1101 groups: identity.groups unknown, report still pass" "unknown pass" \
        "$(jq -r '"\(.checks[] | select(.name == "identity.groups") | .status) \(.result)"' \
                "$T_TMP/agent-many-groups.json" 2>/dev/null)"
# A shared PID namespace: another uid's process is visible (and reported
# with whether it could be signalled or its memory opened).
run_case agent-shared-pid agent 1000 "$MOUNT_HOME_RO; setpriv --reuid 1001 --regid 1001 --clear-groups sleep 30 &"
expect_fail agent-shared-pid processes.isolated "agent seeing the driver's process"
t_eq "the visible process could not be signalled" "Operation not permitted" \
        "$(jq -r '.checks[] | select(.name == "processes.isolated") | .observed[0].signal' "$T_TMP/agent-shared-pid.json")"
# Expected values from flags: the same driver, expected as uid 2001.
PROBE_ARGS="--set driver.uid=2001" run_case driver-set-uid driver 1001 "$MOUNT_CTL; $MOUNT_HOME_RW; $ROOT_RO"
expect_fail driver-set-uid identity.driver_uid "driver checked with --set driver.uid=2001"
t_eq "--set: the expected uid is the flag's" 2001 \
        "$(jq -r '.checks[] | select(.name == "identity.driver_uid") | .expected' "$T_TMP/driver-set-uid.json" 2>/dev/null)"
t_eq "--set with an unknown key is a usage error" 2 "$("$PROBE" check --role agent --set no.such=1 >/dev/null 2>&1; echo $?)"
t_eq "--set with a bad value is a usage error" 2 "$("$PROBE" check --role agent --set driver.uid=0 >/dev/null 2>&1; echo $?)"
# The same, with /proc mounted hidepid=1: the driver's process is listed but
# unreadable. Whose it is is unknown: inconclusive, never a pass.
run_case agent-hidepid agent 1000 "$MOUNT_HOME_RO; mount -o remount,hidepid=1 /proc; setpriv --reuid 1001 --regid 1001 --clear-groups sleep 30 &"
t_eq "agent seeing an unreadable process (hidepid=1): inconclusive" "inconclusive unknown unreadable" \
        "$(jq -r '"\(.result) " + (.checks[] | select(.name == "processes.isolated") | "\(.status) \(.observed[0].status)")' \
                "$T_TMP/agent-hidepid.json" 2>/dev/null)"
# no_new_privs off in the driver (allowPrivilegeEscalation true).
unshare --mount --pid --fork --mount-proc sh -c "
        set -e; mount --make-rprivate /; $MOUNT_CTL; $MOUNT_HOME_RW; $ROOT_RO
        exec setpriv --reuid 1001 --regid 1001 --clear-groups --inh-caps=-all --bounding-set=-all '$PROBE' check --role driver
" >"$T_TMP/driver-nnp.json" 2>/dev/null
echo $? >"$T_TMP/driver-nnp.rc"
expect_fail driver-nnp no_new_privs "driver with privilege escalation allowed"

t_eq "usage error exits 2" 2 "$("$PROBE" check --role nobody >/dev/null 2>&1; echo $?)"

# The verdict, from these reports and the spec of an injected pod (a golden
# output of the webhook) or of the same pod before injection.
# The golden pod has the default paths, not this test's temporary ones.
GOLDEN=$HERE/../golden/cases/basic
SPEC="env -u HANGAR_HOME_PATH -u HANGAR_CTL_PATH $PROBE spec"
$SPEC --pod-file "$GOLDEN/expected.json" >"$T_TMP/spec-ok.json"
$SPEC --pod-file "$GOLDEN/pod.yaml" >"$T_TMP/spec-bad.json"
jq '.result = "inconclusive" | (.checks[] | select(.name == "no_new_privs")).status = "unknown"' \
        "$T_TMP/driver-ok.json" >"$T_TMP/driver-unknown.json"
# Reports that must not be believed: a doctored result, no checks.
jq '.result = "pass"' "$T_TMP/driver-root.json" >"$T_TMP/driver-doctored.json"
jq '.checks = []' "$T_TMP/driver-ok.json" >"$T_TMP/driver-empty.json"
verdict() { # MODE SPEC AGENT DRIVER -> prints "verdict exit reason-codes"
        local out rc
        out=$("$PROBE" verdict --mode "$1" --spec "$T_TMP/$2.json" --agent "$T_TMP/$3.json" \
                --driver "$T_TMP/$4.json" 2>/dev/null)
        rc=$?
        echo "$(jq -r .verdict <<<"$out") $rc $(jq -r '[.reasons[].code] | join(",")' <<<"$out")"
}
t_eq "auto, pod in shape: split active" "split-active 0 " "$(verdict auto spec-ok agent-ok driver-ok)"
t_eq "required, pod in shape: split active" "split-active 0 " "$(verdict required spec-ok agent-ok driver-ok)"
t_eq "off: never split" "single-user 1 mode-off" "$(verdict off spec-ok agent-ok driver-ok)"
t_eq "auto, driver as root: single-user, says why" "single-user 1 driver-failed" \
        "$(verdict auto spec-ok agent-ok driver-root)"
t_eq "required, driver as root: refused" "refused 4 driver-failed" \
        "$(verdict required spec-ok agent-ok driver-root)"
t_eq "required, spec out of shape: refused" "refused 4 spec-failed" \
        "$(verdict required spec-bad agent-ok driver-ok)"
t_eq "auto, agent seeing the driver: single-user" "single-user 1 agent-failed" \
        "$(verdict auto spec-ok agent-shared-pid driver-ok)"
t_eq "required, inconclusive driver report: refused, never split" "refused 4 driver-inconclusive" \
        "$(verdict required spec-ok agent-ok driver-unknown)"
t_eq "required, agent and driver reports swapped: refused" "refused 4 agent-report-invalid,driver-report-invalid" \
        "$(verdict required spec-ok driver-ok agent-ok)"
t_eq "required, driver's report given twice: refused" "refused 4 agent-report-invalid" \
        "$(verdict required spec-ok driver-ok driver-ok)"
t_eq "required, a failing report doctored to pass: refused" "refused 4 driver-report-invalid" \
        "$(verdict required spec-ok agent-ok driver-doctored)"
t_eq "required, a report with no checks: refused" "refused 4 driver-report-invalid" \
        "$(verdict required spec-ok agent-ok driver-empty)"
t_eq "required, the agent's report given as the spec: refused" "refused 4 spec-report-invalid" \
        "$(verdict required agent-ok agent-ok driver-ok)"
t_eq "auto, missing agent report: single-user" "single-user 1 agent-report-missing" \
        "$(verdict auto spec-ok nonexistent driver-ok)"
t_check "a failing reason names the checks that failed" bash -c "'$PROBE' verdict --mode auto \
        --spec '$T_TMP/spec-ok.json' --agent '$T_TMP/agent-ok.json' --driver '$T_TMP/driver-root.json' |
        jq -e '.reasons[0].detail | contains(\"identity.uid_not_root\")' >/dev/null"
HANGAR_UID_SPLIT=required "$PROBE" verdict --spec "$T_TMP/spec-ok.json" --agent "$T_TMP/agent-ok.json" \
        --driver "$T_TMP/driver-ok.json" --write "$T_TMP/verdict.json" >"$T_TMP/verdict.out"
t_eq "mode from HANGAR_UID_SPLIT, verdict written" required/split-active \
        "$(jq -r '.mode + "/" + .verdict' "$T_TMP/verdict.json")"
t_eq "bad mode is a usage error" 2 "$("$PROBE" verdict --mode sometimes >/dev/null 2>&1; echo $?)"
t_end
