#!/usr/bin/env bash
# shellcheck disable=SC2016 # commands for the containers are single-quoted on purpose
# Each claim of the design's "What gVisor gives" (docs/design/driver-sidecar.md) as a test in
# a real pod built from the webhook's output (`hangar-webhook inject`), run
# by the pod harness. The attempts are made from inside the containers by a
# test-only helper (tests/pods/attack_helper.c, `hangar-test-ptrace`: busybox
# has no ptrace tool), mounted with podrun --bin.
#   a  a container without a shared PID namespace gets its own: from the
#      agent no process of the driver is visible in /proc, kill(pid, 0) over
#      pids 1..65536 reaches only the agent's own processes (no EPERM, which
#      would reveal another uid's), and kill(SIGKILL) and PTRACE_ATTACH of the
#      driver's process (by the pid its own namespace gives it) fail, the
#      process living on;
#   b  ptrace and /proc/PID/mem need the same uid: in a shared-PID variant of
#      the pod (shareProcessNamespace set after the webhook), the agent cannot
#      open /proc/PID/mem of the driver's process nor PTRACE_ATTACH it, while
#      it can both (and read the memory) for a dumpable process of its own
#      uid; every target sets PR_SET_PTRACER_ANY, so Yama is not what decides;
#   b3 "or CAP_SYS_PTRACE": in the shared-PID variant with CAP_SYS_PTRACE
#      added to the agent (what spec.agent-capabilities forbids), the agent
#      can PTRACE_ATTACH the driver's process exactly when the capability is
#      in its effective set (runsc 2022 hands it to exec'd processes; Linux
#      and a current runsc clear it at execve for a non-root uid);
#   b2 Yama defaults to scope 1: the scope reads 1 and a same-uid process
#      that is not a descendant and did not set PR_SET_PTRACER cannot be
#      attached (under crun the host's Yama decides, recorded not asserted as a claim);
#   c  non-dumpable is honoured: a same-uid process that called
#      prctl(PR_SET_DUMPABLE, 0) cannot be opened through /proc/PID/mem nor
#      attached;
#   d  read-only mounts per container: the agent's write to hangar-home fails
#      with EROFS (mountinfo "ro") while the driver writes the same volume
#      ("rw");
#   e  emptyDirs shared at pod level: the agent reads what the driver wrote
#      there after both started. Whether the volume is a sandbox-internal
#      tmpfs is the GKE shim's doing (podrun models it per runsc release):
#      the file system types are recorded, not asserted.
# Every claim is asserted under every runtime (they are Linux's semantics
# too; crun is the comparison), and the result is printed per claim: holds,
# does not hold, not applicable (the condition cannot arise in that runtime:
# no Yama in the host kernel; CAP_SYS_PTRACE never effective), or could not
# be checked (the pod or a precondition failed).
# CLAIMS_OUT=FILE also writes the table there.
# usage: test_gvisor_claims.sh HANGAR_WEBHOOK HANGAR_PROBE [RUNTIME [RUNTIME_BIN [FLAG...]]]
#   RUNTIME runsc (default) or crun/runc; RUNTIME_BIN another build of it (a
#   current runsc: tests/pods/build-runsc.sh), FLAGs extra global flags for it
#   (default --platform=systrap for a runsc RUNTIME_BIN). The helper is
#   $HANGAR_TEST_PTRACE, by default the build tree's tests/pods/bin/hangar-test-ptrace
#   beside HANGAR_PROBE's.
# Needs root, jq, busybox-static and the runtime. T_KEEP_TMP=1 keeps files.
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
RUNTIME=${3:-runsc}
HELPER=${HANGAR_TEST_PTRACE:-$(dirname "$PROBE")/../tests/pods/bin/hangar-test-ptrace}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/podlib.sh"
pods_runtime_opts "$RUNTIME" "${@:4}"
PODRUN=$HERE/podrun
RT_VERSION="$("${RUNTIME_BIN:-$RUNTIME}" --version 2>/dev/null | head -n 1)"
t_begin "gVisor's claims (the design's) in real pods under $RUNTIME ($RT_VERSION${RUNTIME_BIN:+, $RUNTIME_BIN})"
pods_preflight "$RUNTIME"
[ -x "$HELPER" ] || { t_fail "helper $HELPER not built (ninja hangar-test-ptrace)"; t_end; }
HELPER=$(realpath "$HELPER")
cd "$T_TMP" || exit 1
BINS=(--bin "$(dirname "$WEBHOOK")" --bin "$(dirname "$PROBE")" --bin "$(dirname "$HELPER")")

PODS=()
pods_down() {
        local d
        for d in "${PODS[@]}"; do
                [ -e "$d" ] && "$PODRUN" down --dir "$d" >/dev/null 2>&1
        done
}
trap 't_main_shell || exit; pods_down; t_cleanup' EXIT

# Claims: each one's failures are counted between claim_begin and claim_end.
declare -A CLAIM_TEXT CLAIM_STATE CLAIM_NOTE CLAIM_NA
CLAIMS=(a b b2 b3 c d e)
CLAIM_TEXT[a]="own PID namespace per container: cannot see, signal or trace the driver"
CLAIM_TEXT[b]="ptrace and /proc/PID/mem need the same uid"
CLAIM_TEXT[b3]="CAP_SYS_PTRACE (when effective) overrides the uid check"
CLAIM_TEXT[b2]="Yama ptrace scope 1 by default"
CLAIM_TEXT[c]="non-dumpable honoured"
CLAIM_TEXT[d]="read-only mounts per container (agent EROFS, driver writes)"
CLAIM_TEXT[e]="emptyDir shared at pod level"
for c in "${CLAIMS[@]}"; do CLAIM_STATE[$c]="could not be checked (not reached)"; done
CUR="" CUR_FAILURES=0
claim_begin() {
        CUR=$1 CUR_FAILURES=$T_FAILURES
        CLAIM_STATE[$CUR]=checking
        echo "-- claim $1: ${CLAIM_TEXT[$1]}"
}
# CLAIM_NA[c]: the claim's condition cannot arise in this runtime (its checks
# still ran and passed); CLAIM_NOTE[c]: a qualifier printed after "holds".
claim_end() {
        if [ "${CLAIM_STATE[$CUR]}" = checking ]; then
                if [ "$T_FAILURES" -gt "$CUR_FAILURES" ]; then
                        CLAIM_STATE[$CUR]="does not hold"
                elif [ -n "${CLAIM_NA[$CUR]:-}" ]; then
                        CLAIM_STATE[$CUR]="not applicable: ${CLAIM_NA[$CUR]}"
                else
                        CLAIM_STATE[$CUR]=holds
                fi
        fi
}
# unchecked CLAIM... REASON: a precondition failed (counted as a test failure).
unchecked() {
        local reason=${*: -1} c
        for c in "${@:1:$#-1}"; do CLAIM_STATE[$c]="could not be checked: $reason"; done
        t_fail "claims ${*:1:$#-1}: could not be checked: $reason"
}
note() { echo "  note $*"; }

cp "$HERE/fixtures/sandbox-pod.yaml" pod.yaml
"$WEBHOOK" inject -f pod.yaml >pod.json 2>inject.err
t_eq "the webhook injected the driver" injected "$(jq -r '.metadata.annotations["hangar.dev/driver-sidecar"]' pod.json 2>/dev/null)"

up() { # NAME POD.json
        local dir=$T_TMP/pod-$1
        PODS+=("$dir")
        timeout 300 "$PODRUN" up -q --pod "$2" --dir "$dir" --runtime "$RUNTIME" "${RT_OPTS[@]}" "${BINS[@]}" \
                >"$1.up.log" 2>&1
}
A=$T_TMP/pod-split
B=$T_TMP/pod-shared
x() { # DIR CONTAINER CMD...: run in the container
        local dir=$1 ctr=$2
        shift 2
        "$PODRUN" exec --timeout 120 --dir "$dir" "$ctr" -- "$@"
}
jget() { jq -r "$1" <<<"$2" 2>/dev/null; }
# Every result other than "ok" counts as "failed" for the claims.
denied() { [ -n "$1" ] && [ "$1" != ok ] && [ "$1" != null ]; }

# ---------------------------------------------------------------------------
# The pod as injected (each container its own PID namespace): a, d, e.
# ---------------------------------------------------------------------------
if up split pod.json; then
        t_eq "the kernel the claims are checked against is gVisor's under runsc only" \
                "$([ "$RUNTIME" = runsc ] && echo true || echo false)" \
                "$(x "$A" sandbox hangar-probe check --role agent | jq -r '.checks[] | select(.name == "runtime.gvisor") | .observed.gvisor')"

        claim_begin d
        t_eq "driver writes hangar-home" ok "$(x "$A" hangar-driver hangar-test-ptrace write /var/lib/hangar/from-driver)"
        t_eq "agent's write to hangar-home fails with EROFS" EROFS \
                "$(x "$A" sandbox hangar-test-ptrace write /var/lib/hangar/from-agent)"
        mnt_opts='awk -v p=/var/lib/hangar "\$5 == p {print \$6}" /proc/self/mountinfo'
        t_eq "the same volume: \"ro\" in the agent's mountinfo, \"rw\" in the driver's" "ro rw" \
                "$(x "$A" sandbox sh -c "$mnt_opts" | cut -d, -f1) $(x "$A" hangar-driver sh -c "$mnt_opts" | cut -d, -f1)"
        t_eq "driver writes hangar-ctl" ok "$(x "$A" hangar-driver hangar-test-ptrace write /var/lib/hangar-ctl/from-driver)"
        t_eq "agent has no hangar-ctl" absent "$(x "$A" sandbox sh -c 'test -e /var/lib/hangar-ctl && echo present || echo absent')"
        claim_end

        claim_begin e
        t_eq "agent reads what the driver wrote to hangar-home (one volume for the pod)" "written by 1001" \
                "$(x "$A" sandbox cat /var/lib/hangar/from-driver)"
        t_eq "a second write by the driver is seen at once by the agent" "written by 1001" \
                "$(x "$A" hangar-driver hangar-test-ptrace write /var/lib/hangar/later >/dev/null; x "$A" sandbox cat /var/lib/hangar/later)"
        fstype='awk -v p=PATH "\$5 == p { for (i = 7; i <= NF; i++) if (\$i == \"-\") { print \$(i+1); exit } }" /proc/self/mountinfo'
        FS_HOME=$(x "$A" sandbox sh -c "${fstype/PATH//var/lib/hangar}")
        FS_HOME_DRIVER=$(x "$A" hangar-driver sh -c "${fstype/PATH//var/lib/hangar}")
        FS_CTL=$(x "$A" hangar-driver sh -c "${fstype/PATH//var/lib/hangar-ctl}")
        note "file systems: hangar-home $FS_HOME (agent), $FS_HOME_DRIVER (driver); hangar-ctl $FS_CTL (driver)"
        t_eq "hangar-ctl (medium Memory) is a tmpfs" tmpfs "$FS_CTL"
        claim_end

        claim_begin a
        # The driver's process gets a pid above any the agent's namespace has
        # used (100 short-lived processes first), so its number names nothing there.
        PD=$(x "$A" hangar-driver sh -c 'i=0; while [ $i -lt 100 ]; do /bin/busybox true; i=$((i + 1)); done
                hangar-test-ptrace target --pidfile /var/lib/hangar-ctl/target.pid --seconds 600 </dev/null >/dev/null 2>&1 &
                i=0; while [ ! -s /var/lib/hangar-ctl/target.pid ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
                cat /var/lib/hangar-ctl/target.pid')
        if [[ $PD =~ ^[0-9]+$ ]]; then
                t_check "the driver sees its own processes (uid 1001, pid $PD among them)" \
                        grep -q "^$PD 1001 " <<<"$(x "$A" hangar-driver hangar-test-ptrace ps)"
                ps_agent=$(x "$A" sandbox hangar-test-ptrace ps)
                t_eq "the agent's /proc lists only uid 1000 ($(tr '\n' ';' <<<"$ps_agent"))" 1000 \
                        "$(awk '{print $2}' <<<"$ps_agent" | sort -u | tr '\n' ' ' | sed 's/ $//')"
                scan=$(x "$A" sandbox hangar-test-ptrace scan 65536)
                t_eq "kill(pid, 0) over 1..65536 from the agent: no EPERM (no other uid's process)" 0 "$(jget .eperm "$scan")"
                t_eq "kill(pid, 0) over 1..65536 from the agent: only uid 1000 answers" 1000 \
                        "$(jget '[.exists[].uid] | unique | map(tostring) | join(" ")' "$scan")"
                t_eq "the driver's pid $PD names nothing in the agent's namespace" false \
                        "$(jq -r --argjson p "$PD" 'any(.exists[]; .pid == $p)' <<<"$scan" 2>/dev/null)"
                t_eq "kill(driver's pid, SIGKILL) from the agent fails" ESRCH "$(x "$A" sandbox hangar-test-ptrace kill "$PD")"
                atk=$(x "$A" sandbox hangar-test-ptrace attack "$PD")
                t_check "PTRACE_ATTACH and /proc/PID/mem of the driver's pid fail from the agent ($atk)" \
                        bash -c "[ '$(jget .attach "$atk")' = ESRCH ] && [ '$(jget .mem_open "$atk")' = ENOENT ]"
                t_eq "the driver's process lives on" "$PD alive" \
                        "$(x "$A" hangar-driver cat /var/lib/hangar-ctl/target.pid) $(x "$A" hangar-driver sh -c "test -d /proc/$PD && echo alive")"
        else
                unchecked a "the driver's target process did not start ($PD)"
        fi
        claim_end
        "$PODRUN" down --dir "$A" >/dev/null 2>&1 || t_fail "podrun down (split pod) failed"
else
        unchecked a d e "podrun up failed: $(tail -n 3 split.up.log | tr '\n' ' ')"
fi

# ---------------------------------------------------------------------------
# A shared-PID variant (shareProcessNamespace set after the webhook, which
# turns it off): the processes see each other, so uid, dumpable and Yama decide.
# ---------------------------------------------------------------------------
# start FLAGS PIDFILE (sh -c "$start" - FLAGS PIDFILE): a target in the
# background; prints its pid once it has written it.
start='hangar-test-ptrace target $1 --pidfile $2 --seconds 600 </dev/null >/dev/null 2>&1 &
       i=0; while [ ! -s $2 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done; cat $2'
ok_pid() { [[ $1 =~ ^[0-9]+$ ]]; }
jq '.spec.shareProcessNamespace = true' pod.json >shared.json
if up shared shared.json; then
        # The driver's target (uid 1001, dumpable, any ptracer as far as Yama goes).
        P_OTHER=$(x "$B" hangar-driver sh -c "$start" - --ptracer-any /var/lib/hangar-ctl/other.pid)
        P_SAME=$(x "$B" sandbox sh -c "$start" - --ptracer-any /tmp/same.pid)
        P_NODUMP=$(x "$B" sandbox sh -c "$start" - "--nondumpable --ptracer-any" /tmp/nodump.pid)
        P_YAMA=$(x "$B" sandbox sh -c "$start" - "" /tmp/yama.pid)
        note "targets: driver's $P_OTHER; agent's dumpable $P_SAME, non-dumpable $P_NODUMP, no PR_SET_PTRACER $P_YAMA"

        claim_begin b
        if ok_pid "$P_OTHER" && ok_pid "$P_SAME"; then
                atk=$(x "$B" sandbox hangar-test-ptrace attack "$P_OTHER")
                note "agent -> driver's process: $atk"
                t_eq "the agent sees the driver's process (shared namespace: the precondition)" 1001 "$(jget .uid "$atk")"
                t_check "agent cannot open /proc/$P_OTHER/mem of uid 1001 ($(jget .mem_open "$atk"))" denied "$(jget .mem_open "$atk")"
                t_check "agent cannot PTRACE_ATTACH uid 1001's process ($(jget .attach "$atk"))" denied "$(jget .attach "$atk")"
                t_check "agent cannot signal it either ($(jget .signal "$atk"))" denied "$(jget .signal "$atk")"
                atk=$(x "$B" sandbox hangar-test-ptrace attack "$P_SAME")
                note "agent -> its own uid's dumpable process: $atk"
                t_eq "same uid, dumpable: /proc/PID/mem opens and reads, PTRACE_ATTACH stops it" "ok ok ok stopped" \
                        "$(jget '[.mem_open, .mem_read, .attach, .after_attach] | join(" ")' "$atk")"
        else
                unchecked b "a target did not start (driver's: $P_OTHER, agent's: $P_SAME)"
        fi
        claim_end

        claim_begin c
        if ok_pid "$P_NODUMP"; then
                atk=$(x "$B" sandbox hangar-test-ptrace attack "$P_NODUMP")
                note "agent -> its own uid's non-dumpable process: $atk"
                t_eq "the non-dumpable target is the agent's uid" 1000 "$(jget .uid "$atk")"
                t_check "same uid, non-dumpable: /proc/PID/mem does not open ($(jget .mem_open "$atk"))" denied "$(jget .mem_open "$atk")"
                t_check "same uid, non-dumpable: PTRACE_ATTACH fails ($(jget .attach "$atk"))" denied "$(jget .attach "$atk")"
        else
                unchecked c "the non-dumpable target did not start ($P_NODUMP)"
        fi
        claim_end

        claim_begin b2
        SCOPE=$(x "$B" sandbox sh -c 'cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none')
        if ok_pid "$P_YAMA"; then
                atk=$(x "$B" sandbox hangar-test-ptrace attack "$P_YAMA")
                note "Yama scope $SCOPE; agent -> its own uid's process without PR_SET_PTRACER: $atk"
                if [ "$RUNTIME" = runsc ]; then
                        t_eq "gVisor's Yama scope is 1" 1 "$SCOPE"
                fi
                if [ "$SCOPE" = 1 ] || [ "$SCOPE" = 2 ] || [ "$SCOPE" = 3 ]; then
                        t_check "scope $SCOPE: same uid, not a descendant, no PR_SET_PTRACER: PTRACE_ATTACH fails ($(jget .attach "$atk"))" \
                                denied "$(jget .attach "$atk")"
                else
                        # No Yama in the kernel (the host's, under crun): attach is allowed.
                        t_eq "no Yama (scope $SCOPE): same uid, dumpable: PTRACE_ATTACH works" ok "$(jget .attach "$atk")"
                        CLAIM_NA[b2]="the kernel has no Yama (scope $SCOPE); attach allowed, as expected"
                fi
        else
                unchecked b2 "the target did not start ($P_YAMA)"
        fi
        claim_end
        "$PODRUN" down --dir "$B" >/dev/null 2>&1 || t_fail "podrun down (shared pod) failed"
else
        unchecked b b2 c "podrun up failed: $(tail -n 3 shared.up.log | tr '\n' ' ')"
fi

# The same with CAP_SYS_PTRACE added to the agent: the exception to claim b.
jq '.spec.shareProcessNamespace = true
    | .spec.containers |= map(if .name == "sandbox" then .securityContext.capabilities.add = ["SYS_PTRACE"] else . end)' \
        pod.json >ptrace.json
C=$T_TMP/pod-ptrace
if up ptrace ptrace.json; then
        claim_begin b3
        P_OTHER=$(x "$C" hangar-driver sh -c "$start" - --ptracer-any /var/lib/hangar-ctl/other.pid)
        if ok_pid "$P_OTHER"; then
                atk=$(x "$C" sandbox hangar-test-ptrace attack "$P_OTHER")
                note "agent with CAP_SYS_PTRACE added -> driver's process: $atk"
                t_eq "the target is the driver's (uid 1001)" 1001 "$(jget .uid "$atk")"
                eff=$(jget .attacker_sys_ptrace "$atk")
                if [ "$eff" = true ]; then
                        t_eq "CAP_SYS_PTRACE effective in the agent's process: PTRACE_ATTACH of uid 1001 works" \
                                "ok stopped" "$(jget '.attach + " " + .after_attach' "$atk")"
                        CLAIM_NOTE[b3]="(effective in exec'd processes: the agent can attach the driver)"
                elif [ "$eff" = false ]; then
                        t_check "CAP_SYS_PTRACE not effective (cleared at execve): PTRACE_ATTACH of uid 1001 fails ($(jget .attach "$atk"))" \
                                denied "$(jget .attach "$atk")"
                        CLAIM_NA[b3]="CAP_SYS_PTRACE is cleared at execve for uid 1000 (attach fails: the agent cannot use it)"
                else
                        unchecked b3 "the attacker's CapEff could not be read"
                fi
        else
                unchecked b3 "the driver's target did not start ($P_OTHER)"
        fi
        claim_end
        "$PODRUN" down --dir "$C" >/dev/null 2>&1 || t_fail "podrun down (ptrace pod) failed"
else
        unchecked b3 "podrun up failed: $(tail -n 3 ptrace.up.log | tr '\n' ' ')"
fi

{
        echo "claims under $RUNTIME ($RT_VERSION${RUNTIME_BIN:+, $RUNTIME_BIN})"
        for c in "${CLAIMS[@]}"; do
                printf '  %-3s %-72s %s\n' "$c" "${CLAIM_TEXT[$c]}" "${CLAIM_STATE[$c]}${CLAIM_NOTE[$c]:+ ${CLAIM_NOTE[$c]}}"
        done
        [ -n "${FS_HOME:-}" ] && echo "  (hangar-home: $FS_HOME in the agent, $FS_HOME_DRIVER in the driver; hangar-ctl: $FS_CTL)"
} | tee claims.txt
[ -n "${CLAIMS_OUT:-}" ] && cp claims.txt "$CLAIMS_OUT"
t_end
