#!/usr/bin/env bash
# scripts/before-enabling.sh (docs/probe.md, "Before enabling"): argument
# handling; then against a real kube-apiserver (scripts/control-plane.sh:
# etcd and kube-apiserver, no kubelet, so `kubectl exec` cannot work there):
#   - with the real kubectl: the API items pass (injected, spec), the exec
#     items fail with the API server's reason, the verdict is not
#     split-active, exit 1;
#   - with a kubectl whose `exec` goes to the pod harness (podrun exec into
#     the same injected pod running under RUNTIME) and everything else to the
#     real kubectl: every automated item passes, exit 0;
#   - the same with a shared PID namespace in both the stored pod and the
#     running one: spec, agent check and verdict fail, exit 1.
# usage: test_before_enabling.sh HANGAR_WEBHOOK HANGAR_PROBE TOOLS_BIN [RUNTIME [RUNTIME_BIN]]
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
TOOLS_BIN=${3:-}
RUNTIME=${4:-runsc}
RUNTIME_BIN=${5:-}
RT_OPTS=()
[ -n "$RUNTIME_BIN" ] && RT_OPTS=(--runtime-bin "$(realpath "$RUNTIME_BIN")" --runtime-flag=--platform=systrap)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SCRIPT=$ROOT/scripts/before-enabling.sh
PODRUN=$HERE/podrun
. "$HERE/../lib/testlib.sh"
t_begin "scripts/before-enabling.sh (real API server; exec through the pod harness under $RUNTIME)"
cd "$T_TMP" || exit 1

# Argument handling (no cluster needed).
rc_of() { "$@" >/dev/null 2>&1; echo $?; }
t_eq "no pod named: usage (2)" 2 "$(rc_of bash "$SCRIPT" --probe "$PROBE")"
t_eq "unknown option: usage (2)" 2 "$(rc_of bash "$SCRIPT" --probe "$PROBE" --frobnicate x pod)"
t_eq "two pods: usage (2)" 2 "$(rc_of bash "$SCRIPT" --probe "$PROBE" a b)"
t_eq "unreadable kubeconfig: 2" 2 "$(rc_of bash "$SCRIPT" --probe "$PROBE" --kubeconfig /nonexistent pod)"
t_eq "missing probe: 2" 2 "$(rc_of bash "$SCRIPT" --probe /nonexistent/hangar-probe pod)"
t_eq "missing kubectl: 2" 2 "$(rc_of bash "$SCRIPT" --probe "$PROBE" --kubectl /nonexistent/kubectl pod)"
t_check "--help prints the usage" bash -c "bash '$SCRIPT' --help 2>&1 | grep -q 'usage: scripts/before-enabling.sh'"

if [ -z "$TOOLS_BIN" ] || [ ! -x "$TOOLS_BIN/kube-apiserver" ] || [ ! -x "$TOOLS_BIN/kubectl" ]; then
        t_fail "kube-apiserver and kubectl not found in '$TOOLS_BIN' (scripts/k8s-tools.sh)"
        t_end
fi
[ "$(id -u)" = 0 ] || { t_fail "must run as root (the pod harness)"; t_end; }
HANGAR_K8S_BIN=$TOOLS_BIN "$ROOT/scripts/control-plane.sh" start "$T_TMP/cp" >cp.log 2>&1 || {
        t_fail "control plane did not start: $(tail -n 5 cp.log)"
        t_end
}
PODS=()
cleanup() {
        local d
        for d in "${PODS[@]}"; do [ -e "$d" ] && "$PODRUN" down --dir "$d" >/dev/null 2>&1; done
        "$ROOT/scripts/control-plane.sh" stop "$T_TMP/cp" >/dev/null 2>&1
        t_cleanup
}
trap 't_main_shell || exit; cleanup' EXIT
KC=$T_TMP/cp/kubeconfig
KUBECTL=$TOOLS_BIN/kubectl

cat >pod.yaml <<'POD'
apiVersion: v1
kind: Pod
metadata:
  name: sandbox-1
  namespace: dev
  labels: {hangar.dev/sandbox: "true"}
spec:
  runtimeClassName: gvisor
  securityContext: {fsGroup: 1000}
  containers:
  - name: sandbox
    image: debian:12
    securityContext:
      runAsUser: 1000
      runAsGroup: 1000
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
POD
"$WEBHOOK" inject -f pod.yaml >pod.json 2>/dev/null
jq '.metadata.name = "shared-1" | .spec.shareProcessNamespace = true' pod.json >shared.json
"$KUBECTL" --kubeconfig "$KC" create namespace dev >/dev/null
# Opted in to hangar (the chart's scope label), as a namespace of sandbox pods is.
"$KUBECTL" --kubeconfig "$KC" label namespace dev hangar.dev/injection=enabled >/dev/null
printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n' |
        "$KUBECTL" --kubeconfig "$KC" create -f - >/dev/null
for f in pod.json shared.json; do
        "$KUBECTL" --kubeconfig "$KC" create -f "$f" >/dev/null 2>>create.err || t_fail "kubectl create $f: $(cat create.err)"
done

line() { grep -F -- "$2" "$1" | head -n 1; }
# 1. The real kubectl: no kubelet, so exec fails.
bash "$SCRIPT" --kubeconfig "$KC" -n dev --probe "$PROBE" --kubectl "$KUBECTL" --out "$T_TMP/r1" sandbox-1 >r1.out 2>&1
t_eq "no kubelet: exit 1" 1 "$?"
t_check "no kubelet: 2a injected passes" grep -q '^  \[pass\]   2a\.' r1.out
t_check "no kubelet: 2b spec through the API passes" grep -q '^  \[pass\]   2b\. hangar-probe spec --name sandbox-1 --namespace dev' r1.out
t_check "no kubelet: 3a agent check fails, no report ($(line r1.out 3a.))" grep -q '^  \[FAIL\]   3a\..*no report: kubectl exec' r1.out
t_check "no kubelet: 3b driver check fails" grep -q '^  \[FAIL\]   3b\.' r1.out
t_check "no kubelet: 3c gVisor not shown (runtimeClassName gvisor)" grep -q '^  \[FAIL\]   3c\.' r1.out
t_check "no kubelet: 4 verdict refused, reports missing ($(line r1.out '4.'))" \
        grep -q '^  \[FAIL\]   4\..*refused.*agent-report-missing' r1.out
t_check "manual steps printed" bash -c "[ \$(grep -c '^  \[manual\]' r1.out) = 2 ]"
t_eq "the spec report is kept with --out" pass "$(jq -r .result r1/spec.json 2>/dev/null)"
bash "$SCRIPT" --kubeconfig "$KC" -n dev --probe "$PROBE" --kubectl "$KUBECTL" nope >r0.out 2>&1
t_eq "missing pod: exit 1" 1 "$?"
t_check "missing pod: 2a and 2b fail" bash -c "grep -q '^  \[FAIL\]   2a\..*NotFound\|not found' r0.out && grep -q '^  \[FAIL\]   2b\.' r0.out"

# 2. A kubectl whose exec runs in the pod harness (the pod running under RUNTIME).
cat >kubectl-shim <<SHIM
#!/usr/bin/env bash
# exec POD -c CONTAINER -- CMD... -> podrun exec into \$PODRUN_DIR; the rest -> the real kubectl.
for a in "\$@"; do
        if [ "\$a" = exec ]; then
                ctr="" cmd=()
                while [ \$# -gt 0 ]; do
                        case \$1 in
                        -c) ctr=\$2; shift 2 ;;
                        --) shift; cmd=("\$@"); break ;;
                        *) shift ;;
                        esac
                done
                exec "$PODRUN" exec --dir "\$PODRUN_DIR" "\$ctr" -- "\${cmd[@]}"
        fi
done
exec "$KUBECTL" "\$@"
SHIM
chmod +x kubectl-shim
BINS=(--bin "$(dirname "$WEBHOOK")" --bin "$(dirname "$PROBE")")
run_with_pod() { # NAME POD.json STORED_NAME -> NAME.out, NAME.rc
        local dir=$T_TMP/pod-$1
        PODS+=("$dir")
        if ! timeout 300 "$PODRUN" up -q --pod "$2" --dir "$dir" --runtime "$RUNTIME" "${RT_OPTS[@]}" "${BINS[@]}" \
                >"$1.up.log" 2>&1; then
                t_fail "$1: podrun up failed: $(tail -n 3 "$1.up.log")"
                return 1
        fi
        PODRUN_DIR=$dir bash "$SCRIPT" --kubeconfig "$KC" -n dev --probe "$PROBE" --kubectl "$T_TMP/kubectl-shim" \
                "$3" >"$1.out" 2>&1
        echo $? >"$1.rc"
        "$PODRUN" down --dir "$dir" >/dev/null 2>&1
}
if run_with_pod inshape pod.json sandbox-1; then
        t_eq "pod in shape: exit 0 ($(grep FAIL inshape.out | tr '\n' ' '))" 0 "$(cat inshape.rc)"
        for n in 2a 2b 3a 3b 4; do
                t_check "pod in shape: item $n passes" grep -q "^  \[pass\]   $n\." inshape.out
        done
        if [ "$RUNTIME" = runsc ]; then
                t_check "pod in shape under runsc: 3c runtime.gvisor says gVisor" grep -q '^  \[pass\]   3c\.' inshape.out
        else
                t_check "pod under $RUNTIME with runtimeClassName gvisor: 3c fails" grep -q '^  \[FAIL\]   3c\.' inshape.out
        fi
        t_check "pod in shape: says every automated item passes" grep -q 'every automated item passes' inshape.out
fi
if run_with_pod shared shared.json shared-1; then
        t_eq "shared PID namespace: exit 1" 1 "$(cat shared.rc)"
        t_check "shared PID namespace: 2b spec fails with spec.share-process-namespace" \
                grep -q '^  \[FAIL\]   2b\..*spec.share-process-namespace' shared.out
        t_check "shared PID namespace: 3a agent fails processes.isolated" grep -q '^  \[FAIL\]   3a\..*processes.isolated' shared.out
        t_check "shared PID namespace: 4 refused" grep -q '^  \[FAIL\]   4\. .*refused' shared.out
        t_check "shared PID namespace: says do not enable" grep -q 'do not enable' shared.out
fi
t_end
