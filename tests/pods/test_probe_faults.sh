#!/usr/bin/env bash
# The probe's fault matrix in real pods. Each fault is applied with jq to the
# webhook's injected pod (`hangar-webhook inject`), the pod is run with the
# pod harness, `hangar-probe check` runs in both containers, `hangar-probe
# spec --pod-file` reads the faulty pod, and the verdict must be `refused`
# under required and `single-user` (with the right reason codes) under auto.
# Each fault must trip the check that names it (the names are those of
# tests/probe/test_probe_native.sh, which builds the same faults natively).
#
# Faults: driver with the agent's uid; driver as root; agent with hangar-ctl;
# agent with hangar-home read-write; shared PID namespace; agent with
# CAP_SYS_PTRACE; driver with allowPrivilegeEscalation; driver with a
# writable root; a privileged driver and a privileged agent (privileged with
# allowPrivilegeEscalation false is rejected by the API server: podrun
# refuses it the same way, nothing runs, and the verdict has no container
# reports); and the spec saying "in shape" while the running pod is not (the
# unmodified pod's spec with the driver-uid fault's reports): the checks from
# inside catch it alone.
#
# Where a runtime genuinely lets a fault through the inside checks, the test
# expects that and says why (the spec still catches it, so the verdict is the
# same):
#   - agent with CAP_SYS_PTRACE, privileged agent: Linux (crun, runc) and a
#     current runsc clear a non-root process's permitted and effective sets
#     at execve (the capability is only in the bounding set, which the agent
#     checks do not require, and no_new_privs or the absence of file
#     capabilities keeps it there). Only the 2022 runsc (Debian's) hands the
#     spec's effective set to every process it execs, so only there the
#     agent's own check fails (docs/pod-harness.md, "What matters for the probe").
#   - driver with allowPrivilegeEscalation true: the 2022 runsc ignores
#     noNewPrivileges false ("PR_SET_NO_NEW_PRIVS is assumed to always be
#     set"), so there the driver still has no_new_privs 1 (the fault is
#     harmless) and only the spec sees it. A current runsc honours it.
#   - runtime.privileged: no runtime here produces the full effective mask
#     (runsc drops NET_RAW even when privileged; crun is capped by the host's
#     bounding set; a non-root process has none), so the check also fails on
#     CAP_SYS_ADMIN in the bounding set, which privileged leaves behind in
#     every runtime and no default set holds.
#
# usage: test_probe_faults.sh HANGAR_WEBHOOK HANGAR_PROBE [RUNTIME [RUNTIME_BIN [FLAG...]]]
#   RUNTIME runsc (default), crun or runc; RUNTIME_BIN another build of it (a
#   current runsc from tests/pods/build-runsc.sh), FLAGs extra global flags
#   for it (default --platform=systrap for a runsc RUNTIME_BIN).
# Needs root, jq, busybox-static and the runtime. T_KEEP_TMP=1 keeps files.
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
RUNTIME=${3:-runsc}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/podlib.sh"
pods_runtime_opts "$RUNTIME" "${@:4}"
PODRUN=$HERE/podrun
t_begin "hangar-probe fault matrix in real pods under $RUNTIME ($("${RUNTIME_BIN:-$RUNTIME}" --version 2>/dev/null | head -n 1)${RUNTIME_BIN:+, $RUNTIME_BIN})"
pods_preflight "$RUNTIME"
# gv2022: Debian's 2022 runsc, which gives exec'd non-root processes the
# spec's capabilities and sets no_new_privs on every process whatever the spec says.
gv2022=0
if [ "$RUNTIME" = runsc ]; then
        rdate=$("${RUNTIME_BIN:-runsc}" --version 2>/dev/null | grep -oE '20[0-9]{6}' | head -n 1)
        [ -n "$rdate" ] && [ "$rdate" -lt 20230101 ] && gv2022=1
fi
cd "$T_TMP" || exit 1
BINS=(--bin "$(dirname "$WEBHOOK")" --bin "$(dirname "$PROBE")")

PODS=()
pods_down() {
        local d
        for d in "${PODS[@]}"; do
                [ -e "$d" ] && "$PODRUN" down --dir "$d" >/dev/null 2>&1
        done
}
trap 't_main_shell || exit; pods_down; t_cleanup' EXIT

cp "$HERE/fixtures/sandbox-pod.yaml" pod.yaml
"$WEBHOOK" inject -f pod.yaml >pod.json 2>inject.err
t_eq "the webhook injected the driver" injected "$(jq -r '.metadata.annotations["hangar.dev/driver-sidecar"]' pod.json 2>/dev/null)"
"$PROBE" spec --pod-file pod.json >ok.spec.json
t_eq "the unmodified injected pod's spec passes" pass "$(jq -r .result ok.spec.json)"

# jq helpers for the faults: driver(f), agent(f) apply f to that container.
JQDEFS='def driver(f): .spec.containers |= map(if .name == "hangar-driver" then f else . end);
        def agent(f): .spec.containers |= map(if .name == "sandbox" then f else . end);'

# run_fault NAME JQ_FILTER: the faulty pod NAME.json, its spec report, and
# (when podrun runs it) NAME.{agent,driver}.json with .rc, and NAME.up.rc.
run_fault() {
        local name=$1 dir=$T_TMP/pod-$1 rc
        jq "$JQDEFS $2" pod.json >"$name.json" || { t_fail "$name: jq filter failed"; return 1; }
        "$PROBE" spec --pod-file "$name.json" >"$name.spec.json"
        echo $? >"$name.spec.rc"
        PODS+=("$dir")
        timeout 300 "$PODRUN" up -q --pod "$name.json" --dir "$dir" --runtime "$RUNTIME" "${RT_OPTS[@]}" \
                "${BINS[@]}" >"$name.up.log" 2>&1
        rc=$?
        echo "$rc" >"$name.up.rc"
        [ "$rc" = 0 ] || return 0
        "$PODRUN" exec --timeout 60 --dir "$dir" sandbox -- hangar-probe check --role agent >"$name.agent.json" 2>"$name.agent.err"
        echo $? >"$name.agent.rc"
        "$PODRUN" exec --timeout 60 --dir "$dir" hangar-driver -- hangar-probe check --role driver >"$name.driver.json" 2>"$name.driver.err"
        echo $? >"$name.driver.rc"
        "$PODRUN" down --dir "$dir" >/dev/null 2>&1 || t_fail "$name: podrun down failed"
}
# A fault pod that must run: fails the test (and skips its checks) when up failed.
ran() {
        [ "$(cat "$1.up.rc")" = 0 ] && return 0
        t_fail "$1: podrun up failed ($(cat "$1.up.rc")): $(tail -n 3 "$1.up.log" | tr '\n' ' ')"
        return 1
}
failed() { jq -r '[.checks[] | select(.required and .status != "pass") | .name] | join(",")' "$1" 2>/dev/null; }
spec_failed() { jq -r '[.checks[] | select(.status != "pass") | .code] | unique | join(",")' "$1" 2>/dev/null; }
# has_bounding REPORT BIT: the capability numbered BIT is in the bounding set reported.
has_bounding() {
        local b
        b=$(jq -r '.checks[] | select(.name == "capabilities.bounding") | .observed' "$1" 2>/dev/null)
        [ "$b" = all ] && return 0
        [[ $b == 0x* ]] && (((b >> $2) & 1))
}
observed() { jq -c --arg n "$2" '.checks[] | select(.name == $n) | .observed' "$1" 2>/dev/null; }

# caught NAME ROLE CHECK...: the role's report fails (exit 1) and each CHECK is among its failed ones.
caught() {
        local name=$1 role=$2 c list
        shift 2
        list=$(failed "$name.$role.json")
        t_eq "$name: $role check fails (exit 1)" "fail 1" "$(jq -r .result "$name.$role.json" 2>/dev/null) $(cat "$name.$role.rc")"
        for c in "$@"; do
                t_check "$name: caught inside the $role by $c (failed: $list)" grep -qw -- "$c" <<<"${list//,/ }"
        done
}
# passes NAME ROLE: the role's report passes.
passes() {
        t_eq "$1: $2 check passes ($(failed "$1.$2.json"))" "pass 0" \
                "$(jq -r .result "$1.$2.json" 2>/dev/null) $(cat "$1.$2.rc")"
}
# spec_caught NAME CODE...: the spec report fails (exit 1) with each CODE.
spec_caught() {
        local name=$1 c list
        shift
        list=$(spec_failed "$name.spec.json")
        t_eq "$name: spec fails (exit 1)" "fail 1" "$(jq -r .result "$name.spec.json" 2>/dev/null) $(cat "$name.spec.rc")"
        for c in "$@"; do
                t_check "$name: spec finding $c (failed: $list)" grep -qw -- "$c" <<<"${list//,/ }"
        done
}
# verdicts NAME REASONS [SPEC_REPORT]: required refuses (exit 4) and auto is
# single-user (exit 1), both with exactly REASONS (sorted, comma-separated).
verdict() { # MODE SPEC AGENT DRIVER -> "verdict exit reasons"
        local out rc
        out=$("$PROBE" verdict --mode "$1" --spec "$2" --agent "$3" --driver "$4" 2>/dev/null)
        rc=$?
        echo "$(jq -r .verdict <<<"$out") $rc $(jq -r '[.reasons[].code] | sort | join(",")' <<<"$out")"
}
verdicts() {
        local name=$1 reasons=$2 spec=${3:-$1.spec.json}
        t_eq "$name: required refuses" "refused 4 $reasons" \
                "$(verdict required "$spec" "$name.agent.json" "$name.driver.json")"
        t_eq "$name: auto keeps the sandbox single-user" "single-user 1 $reasons" \
                "$(verdict auto "$spec" "$name.agent.json" "$name.driver.json")"
}

# 1. The driver with the agent's uid.
run_fault driver-agent-uid 'driver(.securityContext.runAsUser = 1000)'
if ran driver-agent-uid; then
        caught driver-agent-uid driver identity.driver_uid
        passes driver-agent-uid agent
        spec_caught driver-agent-uid spec.driver
        verdicts driver-agent-uid driver-failed,spec-failed
        # 10. The spec says "in shape" (the unmodified injected pod) while the
        # pod that runs is not: only the checks from inside can see it.
        verdicts driver-agent-uid driver-failed ok.spec.json
fi

# 2. The driver as root (runAsNonRoot removed, or the kubelet would not start it).
run_fault driver-root 'driver(.securityContext.runAsUser = 0 | del(.securityContext.runAsNonRoot))'
if ran driver-root; then
        caught driver-root driver identity.uid_not_root identity.driver_uid
        passes driver-root agent
        spec_caught driver-root spec.driver
        verdicts driver-root driver-failed,spec-failed
fi
# As the kubelet does, podrun does not start a runAsNonRoot container as root.
run_fault driver-root-nonroot 'driver(.securityContext.runAsUser = 0)'
t_eq "driver as root with runAsNonRoot kept: not started (podrun exit 2, as the kubelet)" 2 \
        "$(cat driver-root-nonroot.up.rc)"
t_check "driver as root with runAsNonRoot kept: no pod directory left" test ! -e "$T_TMP/pod-driver-root-nonroot"

# 3. The agent with hangar-ctl mounted.
run_fault agent-with-ctl 'agent(.volumeMounts += [{name: "hangar-ctl", mountPath: "/var/lib/hangar-ctl"}])'
if ran agent-with-ctl; then
        caught agent-with-ctl agent mounts.hangar-ctl
        passes agent-with-ctl driver
        spec_caught agent-with-ctl spec.mount
        verdicts agent-with-ctl agent-failed,spec-failed
fi

# 4. The agent with hangar-home read-write.
run_fault agent-home-rw 'agent(.volumeMounts |= map(if .name == "hangar-home" then del(.readOnly) else . end))'
if ran agent-home-rw; then
        caught agent-home-rw agent mounts.hangar-home
        passes agent-home-rw driver
        spec_caught agent-home-rw spec.mount
        verdicts agent-home-rw agent-failed,spec-failed
fi

# 5. A shared PID namespace: each container sees the other's processes.
run_fault shared-pid '.spec.shareProcessNamespace = true'
if ran shared-pid; then
        caught shared-pid agent processes.isolated
        caught shared-pid driver processes.isolated
        t_check "shared-pid: the agent sees a process of the driver's uid 1001" \
                jq -e '.checks[] | select(.name == "processes.isolated") | any(.observed[]; .uid == 1001)' shared-pid.agent.json >/dev/null
        t_eq "shared-pid: the agent could not signal any process it saw" "Operation not permitted" \
                "$(jq -r '[.checks[] | select(.name == "processes.isolated") | .observed[].signal] | unique | join(",")' shared-pid.agent.json)"
        spec_caught shared-pid spec.share-process-namespace
        verdicts shared-pid agent-failed,driver-failed,spec-failed
fi

# 6. The agent with CAP_SYS_PTRACE added.
run_fault agent-ptrace 'agent(.securityContext.capabilities.add = ["SYS_PTRACE"])'
if ran agent-ptrace; then
        # The fault reached the container: the capability is in the bounding set (bit 19).
        t_check "agent-ptrace: CAP_SYS_PTRACE is in the agent's bounding set ($(observed agent-ptrace.agent.json capabilities.bounding))" \
                has_bounding agent-ptrace.agent.json 19
        if [ "$gv2022" = 1 ]; then
                # runsc 2022 gives the exec'd process the spec's effective set.
                caught agent-ptrace agent capabilities.effective capabilities.permitted
                verdicts agent-ptrace agent-failed,spec-failed
        else
                # Cleared at execve for a non-root uid: the agent cannot use it,
                # and only the spec sees the fault.
                passes agent-ptrace agent
                t_eq "agent-ptrace: $RUNTIME clears the agent's effective set at execve" 0x0000000000000000 \
                        "$(jq -r '.checks[] | select(.name == "capabilities.effective") | .observed' agent-ptrace.agent.json)"
                verdicts agent-ptrace spec-failed
        fi
        passes agent-ptrace driver
        spec_caught agent-ptrace spec.agent-capabilities
fi

# 7. The driver with allowPrivilegeEscalation true.
run_fault driver-escalation 'driver(.securityContext.allowPrivilegeEscalation = true)'
if ran driver-escalation; then
        if [ "$gv2022" = 1 ]; then
                # runsc 2022 ignores noNewPrivileges false ("PR_SET_NO_NEW_PRIVS
                # is assumed to always be set"), so the fault does not reach the
                # driver and only the spec sees it. A current runsc honours it.
                passes driver-escalation driver
                t_eq "driver-escalation: runsc 2022 sets no_new_privs anyway" 1 \
                        "$(observed driver-escalation.driver.json no_new_privs)"
                verdicts driver-escalation spec-failed
        else
                caught driver-escalation driver no_new_privs
                verdicts driver-escalation driver-failed,spec-failed
        fi
        passes driver-escalation agent
        spec_caught driver-escalation spec.driver
fi

# 8. The driver with a writable root filesystem.
run_fault driver-writable-root 'driver(.securityContext.readOnlyRootFilesystem = false)'
if ran driver-writable-root; then
        caught driver-writable-root driver root_filesystem.read_only
        passes driver-writable-root agent
        spec_caught driver-writable-root spec.driver
        verdicts driver-writable-root driver-failed,spec-failed
fi

# 9. A privileged container. With allowPrivilegeEscalation false kept (the
# webhook sets it), the API server rejects the pod: podrun refuses it, nothing
# runs, and the verdict has only the spec report.
run_fault privileged-invalid 'driver(.securityContext.privileged = true)'
t_eq "privileged with allowPrivilegeEscalation false: refused before anything runs (podrun exit 2)" 2 \
        "$(cat privileged-invalid.up.rc)"
t_check "privileged-invalid: podrun names the field" grep -q 'allowPrivilegeEscalation false is invalid' privileged-invalid.up.log
t_check "privileged-invalid: no pod directory left" test ! -e "$T_TMP/pod-privileged-invalid"
spec_caught privileged-invalid spec.privileged
verdicts privileged-invalid agent-report-missing,driver-report-missing,spec-failed

# A valid privileged driver (allowPrivilegeEscalation true, as Kubernetes requires).
run_fault privileged-driver 'driver(.securityContext.privileged = true | .securityContext.allowPrivilegeEscalation = true)'
if ran privileged-driver; then
        # runsc 2022 gives the exec'd process the effective set and sets
        # no_new_privs anyway (fault 7); the others have the capabilities in
        # the bounding set only, and no no_new_privs.
        if [ "$gv2022" = 1 ]; then
                caught privileged-driver driver runtime.privileged capabilities.bounding capabilities.effective capabilities.permitted
        else
                caught privileged-driver driver runtime.privileged capabilities.bounding no_new_privs
        fi
        echo "  note privileged-driver: runtime.privileged observed $(observed privileged-driver.driver.json runtime.privileged)," \
                "effective $(observed privileged-driver.driver.json capabilities.effective)," \
                "bounding $(observed privileged-driver.driver.json capabilities.bounding)"
        passes privileged-driver agent
        spec_caught privileged-driver spec.privileged spec.driver
        verdicts privileged-driver driver-failed,spec-failed
fi

# A privileged agent (the webhook does not inject into such a pod; here it is
# made privileged after injection).
run_fault privileged-agent 'agent(.securityContext.privileged = true | .securityContext.allowPrivilegeEscalation = true)'
if ran privileged-agent; then
        t_check "privileged-agent: CAP_SYS_ADMIN is in the agent's bounding set ($(observed privileged-agent.agent.json capabilities.bounding))" \
                has_bounding privileged-agent.agent.json 21
        if [ "$gv2022" = 1 ]; then
                caught privileged-agent agent runtime.privileged capabilities.effective capabilities.permitted
        else
                # Nothing effective after execve as uid 1000 (as for
                # CAP_SYS_PTRACE), but SYS_ADMIN stays in the bounding set.
                caught privileged-agent agent runtime.privileged
        fi
        verdicts privileged-agent agent-failed,spec-failed
        echo "  note privileged-agent: runtime.privileged observed $(observed privileged-agent.agent.json runtime.privileged)," \
                "effective $(observed privileged-agent.agent.json capabilities.effective)"
        passes privileged-agent driver
        spec_caught privileged-agent spec.privileged
fi
t_end
