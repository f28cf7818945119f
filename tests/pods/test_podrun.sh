#!/usr/bin/env bash
# shellcheck disable=SC2016,SC2317 # commands for the containers are single-quoted on purpose; helpers run via t_check
# The pod harness (tests/pods/podrun) on a real runtime: a sandbox pod goes
# through `hangar-webhook inject`, comes up as a multi-container pod, and the
# shape the design (docs/design/driver-sidecar.md) asks for is checked from inside each
# container with busybox:
#   - the agent (container "sandbox") runs as its uid, hangar-driver as 1001:1001;
#   - the driver can write hangar-home and hangar-ctl (memory-backed), its
#     root filesystem is read-only, CapEff is 0, no_new_privs is set;
#   - the agent sees hangar-home read-only and no hangar-ctl, and reads what
#     the driver wrote there;
#   - each container sees only its own processes; with shareProcessNamespace
#     true (set after injection) each sees the other's;
#   - the containers share loopback (busybox nc and httpd in the driver,
#     reached from the agent on 127.0.0.1);
#   - the project's dynamically linked binary runs inside;
#   - podrun itself: exec's exit status and --stdin, ps, logs, refused pods
#     (nothing created), an `up` failing half-way cleans up, `down` leaves no
#     process, mount or directory behind, and signals no process that only
#     took the pid of one of the pod's gone meanwhile.
# Where runsc (gVisor) and crun/runc differ, the check expects each runtime's
# own behaviour and says so (docs/pod-harness.md lists the differences).
# usage: test_podrun.sh PATH/TO/hangar-webhook RUNTIME [RUNTIME_BIN [FLAG...]]
#   RUNTIME: runsc, crun or runc; RUNTIME_BIN: another build of it (e.g. a
#   current runsc), FLAGs: extra global flags for it (--platform=systrap).
# Needs root, jq, busybox-static and the runtime. T_KEEP_TMP=1 keeps files.
WEBHOOK=$(realpath "$1")
RUNTIME=${2:-runsc}
RUNTIME_BIN=${3:-}
RT_OPTS=()
if [ -n "$RUNTIME_BIN" ]; then
        RT_OPTS=(--runtime-bin "$RUNTIME_BIN")
        for f in "${@:4}"; do RT_OPTS+=(--runtime-flag "$f"); done
fi
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_procctl_find # once here, not in each $(...) below
PODRUN=$HERE/podrun
t_begin "pod harness under $RUNTIME ($("${RUNTIME_BIN:-$RUNTIME}" --version 2>/dev/null | head -n 1)${RUNTIME_BIN:+, $RUNTIME_BIN ${*:4}})"

if [ "$(id -u)" != 0 ]; then t_fail "must run as root (the runtimes need it)"; t_end; fi
for tool in "${RUNTIME_BIN:-$RUNTIME}" jq busybox; do
        command -v "$tool" >/dev/null || { t_fail "$tool not found (scripts/install-deps.sh)"; t_end; }
done
# gvisor: 1 under runsc. gv2022: 1 under a 2022 release of runsc (Debian's),
# whose behaviour differs from a current one in places (docs/pod-harness.md).
gvisor=0 gv2022=0
if [ "$RUNTIME" = runsc ]; then
        gvisor=1
        rdate=$("${RUNTIME_BIN:-runsc}" --version 2>/dev/null | grep -oE '20[0-9]{6}' | head -n 1)
        [ -n "$rdate" ] && [ "$rdate" -lt 20230101 ] && gv2022=1
fi

# The project's binaries: the webhook's build directory, and the probe's if built.
BINS=(--bin "$(dirname "$WEBHOOK")")
[ -d "$(dirname "$WEBHOOK")/../probe" ] && BINS+=(--bin "$(realpath "$(dirname "$WEBHOOK")/../probe")")

PODS=()
pods_down() {
        local d
        for d in "${PODS[@]}"; do
                [ -e "$d" ] && "$PODRUN" down --dir "$d" >/dev/null 2>&1
        done
}
trap 't_main_shell || exit; pods_down; t_cleanup' EXIT

up() { # POD.json DIR [podrun up options]
        local pod=$1 dir=$2
        shift 2
        PODS+=("$dir")
        "$PODRUN" up --pod "$pod" --dir "$dir" --runtime "$RUNTIME" "${RT_OPTS[@]}" "${BINS[@]}" "$@"
}
D=""
x() { "$PODRUN" exec --dir "$D" "$@"; } # x CONTAINER -- CMD...
# The real uids of every process a container can see in /proc.
uids_seen() {
        x "$1" -- sh -c 'for p in /proc/[0-9]*; do sed -n "s/^Uid:[[:space:]]*\([0-9]*\).*/\1/p" $p/status 2>/dev/null; done | sort -u | tr "\n" " "'
}
# The processes left by a pod: its runtime state root in a command line, or
# the processes it reported, each "PID:START" (a pid whose start time changed
# is another process's: pid_max may be 32768, and suites run side by side).
leftovers() { # DIR [PID:START]...
        local dir=$1 p
        shift
        for p in /proc/[0-9]*; do
                tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF -- "$dir/state" && echo "${p#/proc/}"
        done
        for p in "$@"; do
                t_procctl alive "$p" 2>/dev/null && echo "${p%%:*}"
        done
        return 0
}
# with_starts PID...: each running one as PID:START (hangar-procctl's record).
with_starts() {
        [ $# -gt 0 ] || return 0
        t_procctl ident "$@" | tr ' ' ':'
}

# down_beside_newcomer: down of the pod in $D, checked for what it signals.
# down waits (PODRUN_STOP_TIMEOUT) for the pod's processes, the runtime's and
# those with the pod's state root in their command line, then SIGKILLs what
# is left. One of them gone during the wait frees its pid; here it goes to
# an unrelated process at once (ns_last_pid), as a fork storm beside the
# teardown hands it out on a host with pid_max 32768 (another pod's gofer:
# under runsc its container stops). down must kill the process that stayed
# and leave the newcomer alone.
down_beside_newcomer() {
        local stays goes down newcomer="" rc
        sh -c 'sleep 120' stays "$D/state" &
        stays=$!
        t_cleanup_pid "$stays"
        sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done' goes "$T_TMP/reuse-go" "$D/state" &
        goes=$!
        t_cleanup_pid "$goes"
        PODRUN_STOP_TIMEOUT=10 "$PODRUN" down --dir "$D" >reuse-down.out 2>&1 &
        down=$!
        # its "== delete" lines come after it listed the pod's processes
        t_wait_for "grep -q '^== delete' '$D/logs/runtime.log' 2>/dev/null" 60 ||
                t_fail "down never deleted a container"
        touch "$T_TMP/reuse-go"
        wait "$goes"
        for _ in $(seq 100); do # other processes on the host may take the pid first
                echo $((goes - 1)) >/proc/sys/kernel/ns_last_pid 2>/dev/null || break
                sleep 300 &
                newcomer=$!
                [ "$newcomer" = "$goes" ] && break
                # KILL: a TERM before the child's exec would run this shell's
                # EXIT trap in it (testlib.sh's t_main_shell)
                kill -KILL "$newcomer"
                wait "$newcomer" 2>/dev/null
                newcomer=""
        done
        wait "$down"
        t_eq "down with a process outliving its wait succeeds" 0 "$?"
        wait "$stays" 2>/dev/null
        rc=$?
        t_eq "... it SIGKILLed the process that stayed" 137 "$rc"
        if [ -n "$newcomer" ]; then
                t_cleanup_pid "$newcomer"
                t_check "... and not the newcomer with the pid of one gone during the wait ($newcomer)" \
                        kill -0 "$newcomer"
        else
                echo "  SKIP the newcomer with a gone process's pid (could not be given pid $goes: ns_last_pid)"
        fi
}

cd "$T_TMP" || exit 1
# A sandbox pod as hangar creates it: the agent as 1000:1000, fsGroup 1000.
jq -n '{apiVersion: "v1", kind: "Pod",
        metadata: {name: "sandbox-pod", namespace: "hangar", labels: {"hangar.dev/sandbox": "true"}},
        spec: {securityContext: {fsGroup: 1000},
               containers: [{name: "sandbox", image: "us-docker.pkg.dev/hangar/envs/python:3.12",
                             command: ["python3", "-m", "envd"],
                             securityContext: {runAsUser: 1000, runAsGroup: 1000}}]}}' >pod.json
# The older driver, sleep infinity (no hangar-driver is mounted here for the
# default, hangar-driver serve): its sleep tells the driver's processes apart.
HANGAR_DRIVER_COMMAND='["sleep", "infinity"]' HANGAR_DRIVER_PROBES=false \
        "$WEBHOOK" inject -f pod.json >injected.json 2>inject.err
jqe() { jq -e "$@" >/dev/null; }
t_check "hangar-webhook inject adds the hangar-driver container" \
        jqe '[.spec.containers[].name] == ["sandbox", "hangar-driver"]' injected.json
jq '.spec.shareProcessNamespace = true' injected.json >shared.json

# ---------------------------------------------------------------- the pod
D=$T_TMP/pod
if ! up injected.json "$D" >up.out 2>up.err; then
        cat up.out up.err
        t_fail "podrun up of the injected pod"
        t_end
fi
t_check "podrun up: every container running" \
        jqe '[.containers[].status] == ["running", "running", "running"]' <("$PODRUN" ps --dir "$D" --json)
t_check "up names the command it could not run (python3 -> sleep)" grep -q 'python3 is not in the harness root filesystem' up.err

t_eq "agent runs as its uid" 1000 "$(x sandbox -- id -u)"
t_eq "agent runs as its gid" 1000 "$(x sandbox -- id -g)"
t_eq "driver runs as 1001" 1001 "$(x hangar-driver -- id -u)"
t_eq "driver's gid is 1001" 1001 "$(x hangar-driver -- id -g)"
t_eq "driver's groups: its own and the pod's fsGroup (supplementary, as the kubelet does)" \
        "1001 1000" "$(x hangar-driver -- id -G)"

t_check "driver writes hangar-home" x hangar-driver -- sh -c 'echo from-driver >/var/lib/hangar/note'
t_check "driver writes hangar-ctl" x hangar-driver -- sh -c 'echo key >/var/lib/hangar-ctl/run.key'
t_eq "hangar-ctl is memory-backed (tmpfs)" tmpfs \
        "$(x hangar-driver -- awk '$5 == "/var/lib/hangar-ctl" { split($0, a, " - "); split(a[2], b, " "); print b[1] }' /proc/self/mountinfo)"
err=$(x hangar-driver -- touch /var/tmp/driver-was-here 2>&1)
t_check "driver's root filesystem is read-only (write: $err)" grep -q 'Read-only file system' <<<"$err"
err=$(x hangar-driver -- touch /tmp/driver-was-here 2>&1)
if [ "$gvisor" = 1 ]; then
        t_check "runsc: /tmp is a tmpfs of its own, writable despite the read-only root ($err)" test -z "$err"
else
        t_check "driver's /tmp is read-only too ($err)" grep -q 'Read-only file system' <<<"$err"
fi
t_eq "driver's CapEff is 0" 0000000000000000 "$(x hangar-driver -- awk '/^CapEff:/{print $2}' /proc/self/status)"
t_eq "driver's bounding set is empty" 0000000000000000 "$(x hangar-driver -- awk '/^CapBnd:/{print $2}' /proc/self/status)"
nnp=$(x hangar-driver -- awk '/^NoNewPrivs:/{print $2}' /proc/self/status)
if [ "$gv2022" = 1 ]; then
        t_eq "runsc 2022: no NoNewPrivs line in /proc/self/status (read it with prctl)" "" "$nnp"
else
        t_eq "driver's NoNewPrivs is 1" 1 "$nnp"
fi
t_check "the project's binary runs in the driver (host libraries mounted)" \
        sh -c "'$PODRUN' exec --dir '$D' hangar-driver -- hangar-webhook version | grep -q '^hangar-webhook '"

err=$(x sandbox -- sh -c 'echo x >/var/lib/hangar/from-agent' 2>&1)
t_check "agent cannot write hangar-home ($err)" grep -q 'Read-only file system' <<<"$err"
t_check "agent's mountinfo shows hangar-home ro" \
        sh -c "'$PODRUN' exec --dir '$D' sandbox -- awk '\$5 == \"/var/lib/hangar\" { print \$6 }' /proc/self/mountinfo | grep -qE '(^|,)ro(,|$)'"
t_check "agent has no hangar-ctl" x sandbox -- sh -c '! test -e /var/lib/hangar-ctl'
t_eq "agent reads what the driver wrote in hangar-home" from-driver "$(x sandbox -- cat /var/lib/hangar/note)"
# The agent keeps containerd's default capabilities (the webhook leaves them).
# The 2022 runsc gives a non-root container's first process, and each process
# `runsc exec` starts, the spec's effective set as is (minus CAP_NET_RAW,
# dropped by runsc without --net-raw); Linux, and a current runsc, clear them
# at the runtime's execve for a non-root uid. An execve inside clears them on all.
capeff=$(x sandbox -- awk '/^CapEff:/{print $2}' /proc/1/status)
if [ "$gv2022" = 1 ]; then
        t_eq "runsc 2022: agent's main process (uid 1000) holds the default capabilities, minus NET_RAW" 00000000a80405fb "$capeff"
        t_eq "runsc 2022: so does a process runsc exec starts as uid 1000" 00000000a80405fb \
                "$(x sandbox -- awk '/^CapEff:/{print $2}' /proc/self/status)"
else
        t_eq "agent's main process (uid 1000) has no effective capabilities" 0000000000000000 "$capeff"
        t_eq "nor does a process $RUNTIME exec starts as uid 1000" 0000000000000000 \
                "$(x sandbox -- awk '/^CapEff:/{print $2}' /proc/self/status)"
fi
# (busybox sh runs its applets without an execve: name the binary to get one)
t_eq "a program the agent execs has no effective capabilities" 0000000000000000 \
        "$(x sandbox -- sh -c '/bin/busybox awk "/^CapEff:/{print \$2}" /proc/self/status; true')"
t_eq "agent's bounding set is containerd's default" \
        "$([ "$gvisor" = 1 ] && echo 00000000a80405fb || echo 00000000a80425fb)" \
        "$(x sandbox -- awk '/^CapBnd:/{print $2}' /proc/self/status)"

t_eq "agent sees only its own processes (uids in /proc)" "1000 " "$(uids_seen sandbox)"
t_eq "driver sees only its own processes (uids in /proc)" "1001 " "$(uids_seen hangar-driver)"
t_check "agent's ps does not show the driver's sleep" \
        sh -c "! '$PODRUN' exec --dir '$D' sandbox -- ps | grep -q 'sleep infinity'"

# Loopback: busybox nc (binds every address: the pod has loopback only) and
# httpd bound to 127.0.0.1 itself, in the driver; the agent connects.
# (Debian's busybox wget crashes with -T: timeout(1) bounds it instead.)
x hangar-driver -- sh -c '(nc -l -p 7070 -e echo hello-over-loopback </dev/null >/dev/null 2>&1 &);
        mkdir -p /var/lib/hangar/www && echo served >/var/lib/hangar/www/index.html &&
        (httpd -f -p 127.0.0.1:7071 -h /var/lib/hangar/www </dev/null >/dev/null 2>&1 &)'
# until_out EXPECTED CMD...: runs CMD until it prints EXPECTED (10 s at most); prints the last output.
until_out() {
        local want=$1 got=""
        shift
        for _ in $(seq 100); do
                got=$("$@" 2>&1) && [ "$got" = "$want" ] && break
                sleep 0.1
        done
        printf '%s' "$got"
}
t_eq "agent reaches the driver's nc listener on 127.0.0.1" hello-over-loopback \
        "$(until_out hello-over-loopback x sandbox -- sh -c 'nc 127.0.0.1 7070 </dev/null')"
t_eq "agent reaches the driver's httpd bound to 127.0.0.1" served \
        "$(until_out served x sandbox -- timeout 5 wget -q -O - http://127.0.0.1:7071/index.html)"

if [ "$gvisor" = 1 ]; then
        t_check "runsc: the kernel is gVisor (dmesg)" sh -c "'$PODRUN' exec --dir '$D' sandbox -- dmesg | grep -q 'Starting gVisor'"
else
        t_check "$RUNTIME: the kernel is the host's (no gVisor banner)" \
                sh -c "! '$PODRUN' exec --dir '$D' sandbox -- dmesg 2>/dev/null | grep -q 'Starting gVisor'"
fi

# podrun itself
x sandbox -- sh -c 'exit 7'
t_eq "exec returns the command's exit status" 7 "$?"
t_eq "exec --stdin passes stdin through" "through stdin" "$(echo 'through stdin' | x --stdin sandbox -- cat)"
t_eq "exec --user overrides the uid" 0 "$(x --user 0:0 sandbox -- id -u)"
x sandbox -- sh -c 'echo to-a-file; echo to-stderr >&2' >exec.out 2>exec.err
t_eq "exec into regular files: stdout" to-a-file "$(cat exec.out)"
t_eq "exec into regular files: stderr" to-stderr "$(cat exec.err)"
t_check "logs of a container" "$PODRUN" logs --dir "$D" hangar-driver
t_check "spec shows the driver's config.json (noNewPrivileges, read-only root)" \
        sh -c "'$PODRUN' spec --dir '$D' hangar-driver | jq -e '.process.noNewPrivileges and .root.readonly' >/dev/null"

# shellcheck disable=SC2046 # pids, one a word
pids=$(with_starts $("$PODRUN" ps --dir "$D" --json | jq -r '.containers[].pid | select(. > 0)'))
"$PODRUN" down --dir "$D" >down.out 2>&1
t_eq "down succeeds" 0 "$?"
t_check "down removed the directory" test ! -e "$D"
# shellcheck disable=SC2086
t_eq "down left no process" "" "$(leftovers "$D" $pids | tr '\n' ' ')"
t_eq "down left no mount" 0 "$(grep -cF "$D" /proc/self/mountinfo)"
"$PODRUN" down --dir "$D" >/dev/null 2>&1
t_eq "down again is a no-op" 0 "$?"

# ---------------------------------------------------------------- shareProcessNamespace: true
D=$T_TMP/shared
if up shared.json "$D" >up2.out 2>up2.err; then
        t_check "shared PID namespace: agent sees the driver's processes" \
                sh -c "'$PODRUN' exec --dir '$D' sandbox -- ps | grep -q 'sleep infinity'"
        t_check "shared PID namespace: driver sees the agent's processes" \
                sh -c "'$PODRUN' exec --dir '$D' hangar-driver -- ps | grep -q 'sleep 1000000'"
        t_eq "shared PID namespace: agent sees uids 1000 and 1001 (and the pause's 65535, but under runsc 2022)" \
                "$([ "$gv2022" = 1 ] && echo "1000 1001 " || echo "1000 1001 65535 ")" "$(uids_seen sandbox)"
        "$PODRUN" down --dir "$D" >/dev/null 2>&1
        t_check "down (shared pod)" test ! -e "$D"
else
        cat up2.out up2.err
        t_fail "podrun up of the shared pod"
fi

# ---------------------------------------------------------------- more of the pod's fields
# An init container (runs to completion first), a native sidecar, a Memory
# emptyDir with a size, env and workingDir, added and dropped capabilities, a
# privileged container.
jq -n '{apiVersion: "v1", kind: "Pod", metadata: {name: "fields"},
        spec: {securityContext: {runAsUser: 2000, runAsGroup: 2000, fsGroup: 3000},
               initContainers: [
                 {name: "init", image: "x", command: ["sh", "-c", "echo init-ran; id -u >/work/init-uid"],
                  volumeMounts: [{name: "work", mountPath: "/work"}]},
                 {name: "side", image: "x", restartPolicy: "Always", command: ["sh", "-c", "echo side-up; exec sleep 1000000"]}],
               containers: [
                 {name: "app", image: "x", workingDir: "/srv/app", env: [{name: "GREETING", value: "hi there"}],
                  volumeMounts: [{name: "work", mountPath: "/work", readOnly: true}, {name: "mem", mountPath: "/mem"}]},
                 {name: "netadm", image: "x", securityContext: {runAsUser: 0, capabilities: {drop: ["ALL"], add: ["NET_ADMIN", "sys_ptrace"]}}},
                 {name: "priv", image: "x", securityContext: {privileged: true, runAsUser: 0}}],
               volumes: [{name: "work", emptyDir: {}}, {name: "mem", emptyDir: {medium: "Memory", sizeLimit: "8Mi"}}]}}' >fields.json
D=$T_TMP/fields
if up fields.json "$D" >up3.out 2>up3.err; then
        t_eq "init container ran to completion before the others" 2000 "$(x app -- cat /work/init-uid)"
        t_check "init container's status" grep -q 'init .*exited(0)' up3.out
        t_eq "init container's output in its log" init-ran "$("$PODRUN" logs --dir "$D" init)"
        t_eq "native sidecar's output in its log" side-up "$("$PODRUN" logs --dir "$D" side)"
        t_eq "workingDir and env" "/srv/app hi there" "$(x app -- sh -c 'echo "$(pwd) $GREETING"')"
        if [ "$gvisor" = 1 ] && [ "$gv2022" = 0 ]; then
                # the shim's model: every emptyDir lives in the sandbox; the host directory's mode is not seen
                t_eq "runsc: a disk emptyDir is the sandbox's (1777 root, fsGroup not applied)" "drwxrwxrwt 0 0" \
                        "$(x app -- stat -c '%A %u %g' /work)"
        else
                t_eq "fsGroup owns the emptyDir (setgid)" "drwxrwsrwx 3000" "$(x app -- stat -c '%A %g' /work)"
        fi
        if [ "$gvisor" = 1 ]; then
                t_eq "runsc: a Memory emptyDir is the sandbox's tmpfs (1777, owner $([ "$gv2022" = 1 ] && echo "65535 as the pause" || echo root), no size limit)" \
                        "drwxrwxrwt $([ "$gv2022" = 1 ] && echo 65535 || echo 0)" "$(x app -- stat -c '%A %u' /mem)"
        else
                t_eq "Memory emptyDir: tmpfs of sizeLimit 8Mi" 8192 "$(x app -- df -k /mem | awk 'NR == 2 {print $2}')"
        fi
        t_eq "capabilities: drop ALL, add NET_ADMIN and sys_ptrace" 0000000000081000 \
                "$(x netadm -- awk '/^CapBnd:/{print $2}' /proc/self/status)"
        privbnd=$(x priv -- awk '/^CapBnd:/{print $2}' /proc/self/status)
        if [ "$gvisor" = 1 ]; then
                # 2022: up to CAP_AUDIT_READ, the last it knows; current: all 41
                t_eq "runsc: privileged gets every capability runsc knows but NET_RAW" \
                        "$([ "$gv2022" = 1 ] && echo 0000003fffffdfff || echo 000001ffffffdfff)" "$privbnd"
        else
                t_eq "privileged gets every capability of the host" "$(awk '/^CapBnd:/{print $2}' /proc/self/status)" "$privbnd"
        fi
        sysopts=$(x priv -- awk '$5 == "/sys" { print $6 }' /proc/self/mountinfo)
        t_check "privileged: /sys is read-write ($sysopts)" grep -qE '(^|,)rw(,|$)' <<<"$sysopts"
        down_beside_newcomer
        t_check "down (fields pod)" test ! -e "$D"
else
        cat up3.out up3.err
        t_fail "podrun up of the fields pod"
fi

# ---------------------------------------------------------------- refusals and failures
jq '.spec.volumes += [{name: "host", hostPath: {path: "/etc"}}]' injected.json >hostpath.json
D=$T_TMP/refused
up hostpath.json "$D" >refused.out 2>refused.err
t_eq "a hostPath volume is refused (status 2)" 2 "$?"
t_check "the refusal names the field" grep -q 'spec.volumes\[2\].hostPath: refused' refused.err
t_check "nothing created for a refused pod" test ! -e "$D"
jq '.spec.hostNetwork = true | .spec.volumes += [{name: "cm", configMap: {name: "x"}}]
    | .spec.containers[0].securityContext += {runAsNonRoot: true, runAsUser: 0}' injected.json >hostnet.json
up hostnet.json "$D" >/dev/null 2>refused2.err
t_check "hostNetwork refused, named" grep -q 'spec.hostNetwork: refused' refused2.err
t_check "an unknown volume type refused, named" grep -q 'spec.volumes\[2\].configMap: refused' refused2.err
t_check "runAsNonRoot with uid 0 refused, named" grep -q 'spec.containers\[0\].securityContext.runAsNonRoot: refused' refused2.err

D=$T_TMP/halfway
PODRUN_TEST_FAIL_AFTER=1 up injected.json "$D" >halfway.out 2>halfway.err
t_check "an up failing half-way fails" test "$?" -ne 0
t_check "... says it cleans up" grep -q 'up failed: taking the pod down' halfway.err
t_check "... and leaves no directory" test ! -e "$D"
t_eq "... and no process" "" "$(leftovers "$D" | tr '\n' ' ')"

t_end
