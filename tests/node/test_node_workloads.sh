#!/usr/bin/env bash
# shellcheck disable=SC2016,SC1091 # single-quoted container commands; testlib is sourced
# Sandbox workloads on the real node (scripts/node.sh), the chart installed in
# service mode with the sidecar on, as scripts/local-run.sh installs it; all
# pods runtimeClassName gvisor, image localhost/hangar-sandbox:dev:
#   - a sandbox pod from a Deployment and a pod with its own native sidecar
#     (an initContainer with restartPolicy Always: a log shipper) run, pass
#     `hangar-probe check` in the agent's container and in hangar-driver
#     (exec as hangar's identity, the one the guard lists) and `hangar-probe
#     spec` against the API;
#   - a Job: with the default injection the driver is a regular container
#     (`hangar-driver serve`), so the agent's container ends and the Job does not
#     complete; with driver.nativeSidecar (helm upgrade) the driver is the
#     last init container with restartPolicy Always and the Job completes
#     (skipped, with its reason, in a tree without the option);
#   - the design's gVisor claims through pods/exec (kubelet + containerd
#     + containerd-shim-runsc-v1): separate PID namespaces, same uid for
#     ptrace and /proc/PID/mem, non-dumpable honoured (in a shared-PID pod),
#     read-only mounts per container, hangar-home shared at pod level,
#     hangar-ctl a tmpfs inside the sandbox (the webhook's
#     dev.gvisor.spec.mount.* annotations);
#   - hangar-ctl's sizeLimit (64Mi) filled from hangar-driver as uid 1001:
#     ENOSPC inside the sandbox (the tmpfs's size= from the webhook's mount
#     annotation), no eviction.
# The ptrace helper (tests/pods/attack_helper.c) is copied into the
# containers through kubectl exec.
# usage: test_node_workloads.sh K8S_BIN HANGAR_PROBE HANGAR_TEST_PTRACE
# Needs root and the shared node (HANGAR_TEST_NODE_DIR, namespace "workloads"). T_KEEP_TMP=1 keeps the files.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/nodelib.sh"
t_begin "sandbox workloads and gVisor's claims on the node"

K8S_BIN=${1:-}
PROBE=$(realpath -m "${2:-.}") HELPER=$(realpath -m "${3:-.}")
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$PROBE" "$HELPER"
NS=workloads
cd "$T_TMP" || exit 1
node_identity "$NS"
node_chart hangar "$NS"
t0=$SECONDS
# (helm's output in helm.log, the check's line in the test's output)
logged() { "$@" >>helm.log 2>&1; }
t_check "helm install (service mode, sidecar on, guard lists hangar's identity)" logged hangar_chart_install hangar "${NODE_CHART_ARGS[@]}"
echo "  chart installed in $((SECONDS - t0)) s"
t_check "the replicas patched the caBundle and the API server sends sandbox pods to the webhook" \
	hangar_chart_ready hangar "$NS" 60

# x POD CONTAINER CMD...: exec as hangar's identity (the guard refuses anyone
# else into hangar-driver).
# An exec the runtime never started ("failed to exec in container": containerd's
# task call timed out on a loaded machine) is tried again, up to three times:
# the command did not run, so trying again cannot run it twice. x takes no
# stdin (it could not be given twice); xin POD CONTAINER CMD... feeds stdin once.
x() {
	local pod=$1 c=$2 try rc err
	shift 2
	err=$(mktemp)
	for try in 1 2 3; do
		rc=0
		kubectl exec -n "$NS" "$pod" -c "$c" --as "$HANGAR_ID" -- "$@" </dev/null 2>"$err" || rc=$?
		if [ "$rc" -eq 0 ] || [ "$try" -eq 3 ] || ! grep -q 'failed to exec in container' "$err"; then
			break
		fi
		echo "  note exec into $pod/$c not started (try $try): $(tail -n 1 "$err")" >&2
		sleep 2
	done
	cat "$err" >&2
	rm -f "$err"
	return "$rc"
}
xin() { local pod=$1 c=$2; shift 2; kubectl exec -i -n "$NS" "$pod" -c "$c" --as "$HANGAR_ID" -- "$@"; }
jget() { jq -r "$1" <<<"$2" 2>/dev/null; }
# The agent's part of a sandbox pod spec (JSON), extra spec fields merged in.
spec() { # EXTRA_JSON
	jq -n --argjson extra "${1:-{\}}" '{runtimeClassName: "gvisor", terminationGracePeriodSeconds: 2,
	securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000},
	containers: [{name: "sandbox", image: "localhost/hangar-sandbox:dev", imagePullPolicy: "Never",
		command: ["sleep", "infinity"],
		securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]}}}]} * $extra'
}
create() { # NAME EXTRA_SPEC_JSON
	jq -n --arg n "$1" --arg ns "$NS" --argjson s "$(spec "${2:-{\}}")" '{apiVersion: "v1", kind: "Pod",
	metadata: {name: $n, namespace: $ns, labels: {"hangar.dev/sandbox": "true"}}, spec: $s}' |
		kubectl create -f - >/dev/null 2>>create.err
}
# The first create may race the API server's view of the new configuration.
t_check "the webhook admits sandbox pods" t_wait_for 'create split' 30
# The shared-PID variant of claims b and c: the webhook turns
# shareProcessNamespace off, and a stored pod cannot be changed, so this pod
# is made by hand in the injected shape (agent uid 1000, a second container
# uid 1001) without the sandbox label, one PID namespace for both.
jq -n --arg ns "$NS" --argjson s "$(spec '{"shareProcessNamespace": true}')" '{apiVersion: "v1", kind: "Pod",
	metadata: {name: "shared", namespace: $ns}, spec: ($s | .containers += [.containers[0] | .name = "other" |
		.securityContext.runAsUser = 1001 | .securityContext.runAsGroup = 1001])}' |
	kubectl create -f - >/dev/null 2>>create.err || t_fail "shared-PID pod refused: $(tail -n 1 create.err)"
create nativesc '{"initContainers": [{"name": "log-shipper", "image": "localhost/hangar-sandbox:dev",
	"imagePullPolicy": "Never", "restartPolicy": "Always",
	"command": ["sh", "-c", "while :; do date >>/tmp/shipped; sleep 1; done"],
	"securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}' ||
	t_fail "pod with a native sidecar refused: $(tail -n 1 create.err)"
jq -n --arg ns "$NS" --argjson s "$(spec)" '{apiVersion: "apps/v1", kind: "Deployment",
	metadata: {name: "agents", namespace: $ns},
	spec: {replicas: 1, selector: {matchLabels: {app: "agents"}},
		template: {metadata: {labels: {app: "agents", "hangar.dev/sandbox": "true"}}, spec: $s}}}' |
	kubectl create -f - >/dev/null 2>>create.err || t_fail "Deployment refused: $(tail -n 1 create.err)"
# The Job's agent runs the probe once and ends.
jq -n --arg ns "$NS" --argjson s "$(spec '{"restartPolicy": "Never"}')" '{apiVersion: "batch/v1", kind: "Job",
	metadata: {name: "once", namespace: $ns},
	spec: {backoffLimit: 0, template: {metadata: {labels: {"hangar.dev/sandbox": "true"}},
		spec: ($s | .containers[0].command = ["sh", "-c", "hangar-probe check --role agent; echo agent-done"])}}}' |
	kubectl create -f - >/dev/null 2>>create.err || t_fail "Job refused: $(tail -n 1 create.err)"

t0=$SECONDS
kubectl wait -n "$NS" --for=condition=Ready pod/split pod/nativesc pod/shared --timeout=300s >wait.log 2>&1
kubectl wait -n "$NS" --for=condition=Available deploy/agents --timeout=120s >>wait.log 2>&1
echo "  pods Ready in $((SECONDS - t0)) s"
DEP=$(kubectl get pods -n "$NS" -l app=agents -o jsonpath='{.items[0].metadata.name}')

echo "-- the probe in a Deployment's pod and in a pod with its own native sidecar"
for pod in "$DEP" nativesc; do
	t_eq "$pod: hangar-driver injected, runtimeClassName gvisor" "true gvisor" \
		"$(kubectl get pod -n "$NS" "$pod" -o json | jq -r '[any(.spec.containers[]; .name == "hangar-driver"), .spec.runtimeClassName] | join(" ")')"
	a=$(x "$pod" sandbox hangar-probe check --role agent 2>/dev/null)
	t_eq "$pod: hangar-probe check in the agent's container" pass "$(jget .result "$a")"
	d=$(x "$pod" hangar-driver hangar-probe check --role driver 2>/dev/null)
	t_eq "$pod: hangar-probe check in hangar-driver (exec as $HANGAR_ID)" pass "$(jget .result "$d")"
	s=$("$PROBE" spec --name "$pod" --namespace "$NS" --kubeconfig "$KUBECONFIG" 2>/dev/null)
	t_eq "$pod: hangar-probe spec through the API" pass "$(jget .result "$s")"
	t_eq "$pod: the agent runs under gVisor" true \
		"$(jget '.checks[] | select(.name == "runtime.gvisor") | .observed.gvisor' "$a")"
done
t_check "nativesc: the pod's own native sidecar runs beside the agent and the driver" \
	t_wait_for '[ "$(x nativesc log-shipper sh -c "cat /tmp/shipped 2>/dev/null | wc -l")" -ge 2 ]' 20
t_check "exec into hangar-driver without hangar's identity is refused by the guard" \
	bash -c '! kubectl exec -n "$1" "$2" -c hangar-driver -- true 2>/dev/null' _ "$NS" "$DEP"

echo "-- a Job"
JOBPOD=$(kubectl get pods -n "$NS" -l job-name=once -o jsonpath='{.items[0].metadata.name}')
t_check "the Job's agent container ran the probe and ended with 0" t_wait_for \
	'[ "$(kubectl get pod -n $NS $JOBPOD -o jsonpath="{.status.containerStatuses[?(@.name==\"sandbox\")].state.terminated.exitCode}")" = 0 ]' 120
t_eq "the Job's agent passed hangar-probe check" pass \
	"$(kubectl logs -n "$NS" "$JOBPOD" -c sandbox | head -n -1 | jq -r .result 2>/dev/null)"
t_eq "the Job's hangar-driver passes hangar-probe check" pass \
	"$(jget .result "$(x "$JOBPOD" hangar-driver hangar-probe check --role driver 2>/dev/null)")"
sleep 10
t_eq "default injection (driver a regular container, hangar-driver serve): the Job's pod stays Running, its driver running" \
	"Running running" "$(kubectl get pod -n "$NS" "$JOBPOD" -o json |
		jq -r '[.status.phase, (.status.containerStatuses[] | select(.name == "hangar-driver") | .state | keys[0])] | join(" ")')"
t_eq "default injection: the Job does not complete (no Complete condition 10 s after its agent ended)" "" \
	"$(kubectl get job -n "$NS" once -o jsonpath='{.status.conditions[?(@.type=="Complete")].status}')"
# The native-sidecar injection (driver.nativeSidecar): the driver is the last
# init container with restartPolicy Always, so the Job completes.
if grep -q nativeSidecar "$ROOT/common/conf/config.c"; then
	t_check "helm upgrade --set driver.nativeSidecar=true" logged helm upgrade hangar "$hangar_chart_dir" \
		-n hangar-system --reuse-values --wait --timeout 5m --set driver.nativeSidecar=true
	job() { # NAME
		jq -n --arg ns "$NS" --arg n "$1" --argjson s "$(spec '{"restartPolicy": "Never"}')" '{apiVersion: "batch/v1", kind: "Job",
		metadata: {name: $n, namespace: $ns},
		spec: {backoffLimit: 0, template: {metadata: {labels: {"hangar.dev/sandbox": "true"}},
			spec: ($s | .containers[0].command = ["sh", "-c", "hangar-probe check --role agent; echo agent-done"])}}}' |
			kubectl create -f - >/dev/null 2>>create.err
	}
	# The old replicas may still answer for a moment after the rollout.
	t0=$SECONDS
	t_check "a Job admitted with the native-sidecar injection" t_wait_for 'job once-native && 
		[ "$(kubectl get pods -n $NS -l job-name=once-native -o json | jq -r ".items[0].spec.initContainers[-1] | .name + \" \" + .restartPolicy")" = "hangar-driver Always" ] ||
		{ kubectl delete job -n $NS once-native --wait=true >/dev/null 2>&1; false; }' 60
	t_check "the Job completes (native sidecar): condition Complete" kubectl wait -n "$NS" --for=condition=Complete job/once-native --timeout=180s
	echo "  the native-sidecar Job completed $((SECONDS - t0)) s after its create"
	NPOD=$(kubectl get pods -n "$NS" -l job-name=once-native -o jsonpath='{.items[0].metadata.name}')
	t_eq "the native-sidecar Job's agent passed hangar-probe check" pass \
		"$(kubectl logs -n "$NS" "$NPOD" -c sandbox | head -n -1 | jq -r .result 2>/dev/null)"
	t_eq "its pod Succeeded, hangar-driver was stopped by the kubelet after the agent" "Succeeded terminated" \
		"$(kubectl get pod -n "$NS" "$NPOD" -o json | jq -r '[.status.phase, (.status.initContainerStatuses[] | select(.name == "hangar-driver") | .state | keys[0])] | join(" ")')"
else
	echo "  SKIP TODO: a Job completing with the native-sidecar injection: no nativeSidecar in common/conf/config.c yet"
fi

echo "-- gVisor's claims through pods/exec (kubelet + containerd + containerd-shim-runsc-v1)"
declare -A CLAIM
claim() { # ID FAILURES_BEFORE
	if [ "$T_FAILURES" -gt "$2" ]; then CLAIM[$1]="does not hold"; else CLAIM[$1]=holds; fi
}
for c in sandbox hangar-driver; do
	xin split "$c" sh -c 'cat >/tmp/hangar-test-ptrace && chmod 755 /tmp/hangar-test-ptrace' <"$HELPER"
done
H=/tmp/hangar-test-ptrace
f=$T_FAILURES
t_eq "d: the driver writes hangar-home" ok "$(x split hangar-driver $H write /var/lib/hangar/from-driver)"
t_eq "d: the agent's write to hangar-home fails with EROFS" EROFS "$(x split sandbox $H write /var/lib/hangar/from-agent)"
mnt_opts='awk -v p=/var/lib/hangar "\$5 == p {print \$6}" /proc/self/mountinfo'
t_eq "d: the same volume is ro in the agent's mountinfo, rw in the driver's" "ro rw" \
	"$(x split sandbox sh -c "$mnt_opts" | cut -d, -f1) $(x split hangar-driver sh -c "$mnt_opts" | cut -d, -f1)"
t_eq "d: the agent has no hangar-ctl" absent "$(x split sandbox sh -c 'test -e /var/lib/hangar-ctl && echo present || echo absent')"
claim d "$f"
f=$T_FAILURES
t_eq "e: the agent reads what the driver wrote to hangar-home" "written by 1001" "$(x split sandbox cat /var/lib/hangar/from-driver)"
fstype='awk -v p=PATH "\$5 == p { for (i = 7; i <= NF; i++) if (\$i == \"-\") { print \$(i+1); exit } }" /proc/self/mountinfo'
FS_HOME=$(x split sandbox sh -c "${fstype/PATH//var/lib/hangar}")
FS_CTL=$(x split hangar-driver sh -c "${fstype/PATH//var/lib/hangar-ctl}")
t_eq "e: hangar-home and hangar-ctl are sandbox-internal tmpfs (dev.gvisor.spec.mount.* annotations)" "tmpfs tmpfs" "$FS_HOME $FS_CTL"
t_eq "e: the pod carries the webhook's gVisor mount annotations" 2 \
	"$(kubectl get pod -n "$NS" split -o json | jq '[.metadata.annotations | keys[] | select(test("^dev.gvisor.spec.mount.hangar-(home|ctl).share$"))] | length')"
claim e "$f"
f=$T_FAILURES
PD=$(x split hangar-driver sh -c 'i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i + 1)); done
	/tmp/hangar-test-ptrace target --pidfile /var/lib/hangar-ctl/target.pid --seconds 600 </dev/null >/dev/null 2>&1 &
	i=0; while [ ! -s /var/lib/hangar-ctl/target.pid ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	cat /var/lib/hangar-ctl/target.pid')
if [[ $PD =~ ^[0-9]+$ ]]; then
	ps_agent=$(x split sandbox $H ps)
	t_eq "a: the agent's /proc lists only uid 1000" 1000 "$(awk '{print $2}' <<<"$ps_agent" | sort -u | tr '\n' ' ' | sed 's/ $//')"
	scan=$(x split sandbox $H scan 65536)
	t_eq "a: kill(pid, 0) over 1..65536 from the agent: no EPERM" 0 "$(jget .eperm "$scan")"
	t_eq "a: kill(driver's pid $PD, SIGKILL) from the agent fails" ESRCH "$(x split sandbox $H kill "$PD")"
	atk=$(x split sandbox $H attack "$PD")
	t_eq "a: PTRACE_ATTACH and /proc/PID/mem of the driver's pid fail from the agent" "ESRCH ENOENT" \
		"$(jget '[.attach, .mem_open] | join(" ")' "$atk")"
	t_check "a: the driver's process lives on" x split hangar-driver test -d "/proc/$PD"
else
	t_fail "a: the driver's target process did not start ($PD)"
fi
claim a "$f"
# b, c: in the shared-PID pod, where the processes see each other, so the
# uid, dumpability and Yama decide. Every target sets PR_SET_PTRACER_ANY.
for c in sandbox other; do
	xin shared "$c" sh -c 'cat >/tmp/hangar-test-ptrace && chmod 755 /tmp/hangar-test-ptrace' <"$HELPER"
done
start='/tmp/hangar-test-ptrace target $1 --pidfile $2 --seconds 600 </dev/null >/dev/null 2>&1 &
	i=0; while [ ! -s $2 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done; cat $2'
P_OTHER=$(x shared other sh -c "$start" - --ptracer-any /tmp/other.pid)
P_SAME=$(x shared sandbox sh -c "$start" - --ptracer-any /tmp/same.pid)
P_NODUMP=$(x shared sandbox sh -c "$start" - "--nondumpable --ptracer-any" /tmp/nodump.pid)
f=$T_FAILURES
if [[ $P_OTHER =~ ^[0-9]+$ ]] && [[ $P_SAME =~ ^[0-9]+$ ]] && [[ $P_NODUMP =~ ^[0-9]+$ ]]; then
	atk=$(x shared sandbox $H attack "$P_OTHER")
	echo "  note agent -> uid 1001's process: $atk"
	t_eq "b: the agent sees uid 1001's process (shared namespace: the precondition)" 1001 "$(jget .uid "$atk")"
	t_check "b: the agent cannot open /proc/$P_OTHER/mem of uid 1001 ($(jget .mem_open "$atk"))" \
		bash -c '[ -n "$1" ] && [ "$1" != ok ] && [ "$1" != null ]' _ "$(jget .mem_open "$atk")"
	t_eq "b: nor PTRACE_ATTACH nor signal it" "EPERM EPERM" "$(jget '[.attach, .signal] | join(" ")' "$atk")"
	t_eq "b: same uid, dumpable: /proc/PID/mem opens and reads, PTRACE_ATTACH stops it" "ok ok ok stopped" \
		"$(jget '[.mem_open, .mem_read, .attach, .after_attach] | join(" ")' "$(x shared sandbox $H attack "$P_SAME")")"
	claim b "$f"
	f=$T_FAILURES
	atk=$(x shared sandbox $H attack "$P_NODUMP")
	t_eq "c: same uid, non-dumpable: /proc/PID/mem EACCES, PTRACE_ATTACH EPERM" "EACCES EPERM" \
		"$(jget '[.mem_open, .attach] | join(" ")' "$atk")"
	claim c "$f"
else
	t_fail "b, c: the targets did not start ($P_OTHER, $P_SAME, $P_NODUMP)"
	CLAIM[b]="could not be checked" CLAIM[c]="could not be checked"
fi

echo "-- hangar-ctl's sizeLimit (64Mi), filled from hangar-driver as uid 1001"
# hangar-ctl is a tmpfs inside the sandbox (the mount annotations), so the
# host directory the kubelet measures for the sizeLimit stays empty and the
# kubelet cannot enforce it; the webhook puts the size in the tmpfs's mount
# options (dev.gvisor.spec.mount.hangar-ctl.options size=...), so the sandbox
# refuses writes past it: ENOSPC for the driver, no eviction.
t_eq "the webhook set hangar-ctl's sizeLimit to 64Mi" 64Mi \
	"$(kubectl get pod -n "$NS" split -o json | jq -r '.spec.volumes[] | select(.name == "hangar-ctl") | .emptyDir.sizeLimit')"
echo "  hangar-ctl's mount options: $(kubectl get pod -n "$NS" split -o json | jq -r '.metadata.annotations["dev.gvisor.spec.mount.hangar-ctl.options"] // "none"')"
echo "  df in the sandbox: $(x split hangar-driver df -m /var/lib/hangar-ctl | tail -n 1)"
fill=$(x split hangar-driver sh -c 'id -u; dd if=/dev/zero of=/var/lib/hangar-ctl/fill bs=1M count=100 2>&1; echo "exit $?"
	du -m /var/lib/hangar-ctl/fill | cut -f1' 2>&1)
echo "  dd: $(tr '\n' ';' <<<"$fill")"
t_eq "the fill ran as uid 1001" 1001 "$(sed -n 1p <<<"$fill")"
t_check "writing 100 MiB to hangar-ctl fails with ENOSPC" grep -q 'No space left on device' <<<"$fill"
t_check "dd's status is a failure" bash -c '! grep -qx "exit 0" <<<"$1"' _ "$fill"
used=$(tail -n 1 <<<"$fill")
t_check "at most 64 MiB went in (du: ${used} MiB)" bash -c '[[ $1 =~ ^[0-9]+$ ]] && [ "$1" -le 64 ] && [ "$1" -ge 32 ]' _ "$used"
host_dir=$(kubectl get pod -n "$NS" split -o jsonpath='{.metadata.uid}')
host_dir=/var/lib/kubelet/pods/$host_dir/volumes/kubernetes.io~empty-dir/hangar-ctl
t_eq "the kubelet's view: hangar-ctl's host directory holds nothing ($host_dir)" 0 \
	"$("$NODE_SH" exec "$D" sh -c "du -sm '$host_dir' | cut -f1" 2>/dev/null)"
sleep 10
t_eq "10 s later the pod still runs: no eviction (the sandbox refused the bytes)" "Running -" \
	"$(kubectl get pod -n "$NS" split -o json | jq -r '[.status.phase, (.status.reason // "-")] | join(" ")')"
t_check "the driver writes hangar-ctl again once the fill is removed" \
	x split hangar-driver sh -c 'rm /var/lib/hangar-ctl/fill && echo ok >/var/lib/hangar-ctl/after-fill'
echo "  events: $(kubectl get events -n "$NS" --field-selector involvedObject.name=split -o json | jq -r '[.items[] | .reason] | unique | join(",")')"

echo "-- claims on the real node (kubelet + containerd + containerd-shim-runsc-v1, runsc $(basename "$(dirname "$HANGAR_RUNSC_CURRENT")"))"
for c in a b c d e; do printf '  %s  %s\n' "$c" "${CLAIM[$c]:-not reached}"; done
t_check "helm uninstall" logged helm uninstall hangar -n hangar-system --wait --timeout 2m
t_end
