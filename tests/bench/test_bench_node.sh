#!/usr/bin/env bash
# shellcheck disable=SC1091 # testlib, nodelib and benchlib are sourced
# bench/node.sh in its short mode (5 creates of each kind, 1 pod of each kind
# to Running, 2 turns, a busy turn of 2 MiB) on the node suites' shared node,
# with a chart release of this suite's own whose webhooks select the bench's
# namespace (hangar-bench) alone (RESOURCE_LOCK node_chart). Every section's
# rows with numbers that parse and their ratios: (a) creates, labelled
# against unlabelled (the reference); (b) to Running with and without the
# sidecar; (c) a turn's start through the daemon (ctl start, the relay with
# TOKEN INSTANCE, the ask answered, ctl finish) against one exec of the
# harness without the sidecar, and its exec count (4 fixed: ctl start, the
# relay, ctl approve, ctl finish; polls besides); (d) the pod's and the
# daemon's cost. The bench itself stops unless each labelled pod came back
# injected and each unlabelled one not, the verdict is split-active, and
# every turn ended with the relay's done line (status 0) and a
# harness.started. Nothing about speed is asserted.
# usage: test_bench_node.sh BUILD_DIR K8S_BIN (root, the shared node: HANGAR_TEST_NODE_DIR)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/../node/nodelib.sh"
. "$HERE/benchlib.sh"
t_begin "bench/node.sh, short, on the shared node: creates, Running, a turn through the daemon, the cost; every figure there"
BUILD=$(realpath -m "${1:-.}") K8S_BIN=${2:-}
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$BUILD/probe/hangar-probe"
cd "$T_TMP" || exit 1
NS=hangar-bench
node_chart bench "$NS"
logged() { "$@" >>helm.log 2>&1; }
t_check "helm install (service mode, the sidecar on; its webhooks select $NS alone)" \
	logged hangar_chart_install bench "${NODE_CHART_ARGS[@]}"
F=$BENCH_F
TURNS=2
BENCH_CREATES=5 BENCH_PODS=1 BENCH_TURNS=$TURNS BENCH_BUSY_MIB=2 BENCH_RELEASE=bench HANGAR_K8S_BIN=$K8S_BIN \
	bench_run node bash "$ROOT/bench/node.sh" "$BUILD" "$D"
# (a)
bench_section "^\(a\) pod create through the API server, 5 each, alternating \(ms; load $F $F $F after\)$"
bench_row "(a) the columns" "^p50 p99 mean$"
bench_row "(a) labelled pods: the webhook, injected" "^labelled: webhook, injected $F $F $F$"
A=("${ROW[@]}")
bench_row "(a) unlabelled pods (the reference)" "^unlabelled: not sent \(reference\) $F $F $F$"
B=("${ROW[@]}")
if bench_row "(a) ratios" "^ratio $F $F $F$"; then
	for i in 0 1 2; do bench_ratio "(a) ratio $((i + 1))" "${A[i]:-x}" "${B[i]:-x}" "${ROW[i]}"; done
fi
bench_row "(a) added by the webhook" "^added by the webhook $F $F $F$"
# (b)
bench_section "^\(b\) create to Running under gVisor, 1 each, alternating, one at a time \(ms; load $F $F $F after\)$"
bench_row "(b) with the sidecar" "^with the sidecar $F $F $F $F$"
A=("${ROW[@]}")
bench_row "(b) without (the reference)" "^without \(reference\) $F $F $F $F$"
B=("${ROW[@]}")
if bench_row "(b) ratios" "^ratio $F $F $F $F$"; then
	for i in 0 1 2 3; do bench_ratio "(b) ratio $((i + 1))" "${A[i]:-x}" "${B[i]:-x}" "${ROW[i]}"; done
fi
# (c)
bench_section "^\(c\) a turn's start through pods/exec, $TURNS turns \(ms since the first exec; load $F $F $F after\)$"
steps=("ctl start answered \(token, port, instance\)" "relay said ready" "token and instance written to the relay"
	"harness.started \(the daemon's event\)" "the approval request seen by ctl approvals"
	"harness exited \(after ctl approve\)" "turn over \(ctl finish, the relay's exec ended\)")
for s in "${steps[@]}"; do
	bench_row "(c) ${s//\\/}: p50, mean, max" "^$s $F $F $F$"
	[ "$s" != "${steps[3]}" ] || STARTED=("${ROW[@]}")
done
bench_row "(c) without the sidecar: one exec to the harness's line (the reference)" \
	"^without the sidecar: one exec to the harness's line $F $F $F$"
REF=("${ROW[@]}")
bench_row "(c) one kubectl exec of true" "^one kubectl exec of true \(hangar-driver\) $F $F $F$"
if bench_row "(c) ratios harness.started / the reference" "^ratio harness.started / without the sidecar $F $F $F$"; then
	for i in 0 1 2; do bench_ratio "(c) ratio $((i + 1))" "${STARTED[i]:-x}" "${REF[i]:-x}" "${ROW[i]}"; done
fi
if bench_row "(c) execs per turn: fixed and polls" \
	"^execs per turn \(the first\): $F: $F fixed \(ctl approve x1, ctl finish x1, ctl start x1, hangar-relay x1\), $F polls every 0.1 s \(ctl approvals x[0-9]+, ctl status x[0-9]+\)$"; then
	t_eq "(c) execs: 4 fixed, and the total is fixed + polls" "4 $((ROW[1] + ROW[2]))" "${ROW[1]} ${ROW[0]}"
fi
bench_row "(c) without the sidecar: 1 exec" "^without the sidecar: 1 exec \(the harness in the agent's container\)$"
# (d); gVisor does not report VmHWM (n/a)
bench_section "^\(d\) what the sidecar costs"
for r in "pod cgroup memory.usage_in_bytes, idle \(MiB\)" "of which total_rss \(MiB\)" "of which total_cache \(MiB\)"; do
	bench_row "(d) ${r//\\/}: with, without (the reference), ratio" "^$r $F $F $F$" &&
		bench_ratio "(d) ${r//\\/}: ratio" "${ROW[0]}" "${ROW[1]}" "${ROW[2]}"
done
bench_row "(d) the pod while the daemon waits in a turn" \
	"^pod memory, the driver waiting in a turn, usage / rss / cache $F / $F / $F$"
bench_row "(d) the pod after the busy turn" "^pod memory after the busy turn, usage / rss / cache \(MiB\) $F / $F / $F$"
bench_row "(d) the pod's peak over the busy turn" "^pod peak memory over the busy turn, max_usage \(MiB\) $F$"
bench_row "(d) the pod's CPU over the busy turn" "^pod CPU over the busy turn \(cpuacct, whole sandbox\) $F s in $F s = ([0-9]+)m$"
bench_row "(d) the daemon waiting on an approval" \
	"^the driver process, waiting on an approval: VmRSS / VmHWM $F / [^ ]+ MiB$"
bench_row "(d) the daemon's CPU over 10 s waiting" "^its CPU over 10 s waiting \(utime\+stime\) $F ticks \($F%\)$"
bench_row "(d) the daemon after the busy turn, and the log it wrote" \
	"^the driver after the busy turn \($F MiB log\): VmRSS / VmHWM $F / [^ ]+ MiB$" &&
	t_eq "(d) the busy turn's log: its 2 MiB of output" 2.0 "${ROW[0]}"
bench_row "(d) the daemon's CPU over the busy turn" "^its CPU over the busy turn \(utime\+stime\) $F ticks = $F s \($F% of $F s\)$"
BUSY_S=${ROW[1]:-x}
bench_row "(d) the daemon's CPU per MiB of output" "^its CPU per MiB of harness output \(busy turn, ms/MiB\) $F$" &&
	t_check "(d) CPU per MiB = the busy turn's CPU / 2 MiB (${ROW[0]})" awk -v s="$BUSY_S" -v m="${ROW[0]}" \
		'BEGIN { x = s * 1000 / 2 - m; exit !(x < 5.01 && x > -5.01) }'
# (e)
bench_section "^\(e\) the same turn through the client \(hangar turn run --approvals approve\), $TURNS turns \(ms; load $F $F $F after\)$"
bench_row "(e) hangar turn run to harness.started: p50, mean, max" "^hangar turn run to harness.started $F $F $F$"
C=("${ROW[@]}")
bench_row "(e) a bare hangar exec without the sidecar (the reference)" "^bare hangar exec: the harness's line, no sidecar $F $F $F$"
HB=("${ROW[@]}")
bench_row "(e) a bare kubectl exec without the sidecar" "^bare kubectl exec: the harness's line, no sidecar $F $F $F$"
KB=("${ROW[@]}")
if bench_row "(e) ratios to the bare hangar exec" "^ratio turn run / bare hangar exec $F $F $F$"; then
	for i in 0 1 2; do bench_ratio "(e) ratio to hangar exec $((i + 1))" "${C[i]:-x}" "${HB[i]:-x}" "${ROW[i]}"; done
fi
if bench_row "(e) ratios to the bare kubectl exec" "^ratio turn run / bare kubectl exec $F $F $F$"; then
	for i in 0 1 2; do bench_ratio "(e) ratio to kubectl exec $((i + 1))" "${C[i]:-x}" "${KB[i]:-x}" "${ROW[i]}"; done
fi
bench_row "(e) execs per ask turn with one approval, per turn" \
	"^execs per ask turn with one approval \(hangar turn run, per turn\): $F $F$"
bench_section
# (the pod's own cgroup first: the sandbox's processes, the containers' empty)
bench_row "the host's view of the pod with the sidecar: its cgroup's tasks and memory" "^with sidecar: pod[^ ]*:tasks=([0-9]+):([0-9.]+)MiB"
bench_row "the host's view of the pod without it: its cgroup's tasks and memory" "^without: pod[^ ]*:tasks=([0-9]+):([0-9.]+)MiB"
t_end
