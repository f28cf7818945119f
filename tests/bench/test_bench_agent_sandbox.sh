#!/usr/bin/env bash
# shellcheck disable=SC1091 # testlib, nodelib and benchlib are sourced
# bench/agent-sandbox.sh in its short mode (one warm and one cold claim) on
# the node suites' shared node: agent-sandbox v1.0.1's controller installed
# by the bench, a chart release of this suite's own with docs/agent-sandbox.md's
# values (selector Exists, uidSplit required) whose webhooks select the
# bench's namespace alone (RESOURCE_LOCK node_chart), hangar's identity for
# the client. Every row of the table with numbers that parse, the ratio
# computed. The bench itself stops unless every claim became Ready, its pod
# passed `hangar pod check` and its turn ran to done with a harness.started.
# Nothing about speed is asserted. BENCH_CHECK_RUNS=N (default 1) runs N
# claims of each kind: the figures of docs/agent-sandbox.md.
# usage: test_bench_agent_sandbox.sh BUILD_DIR K8S_BIN AGENT_SANDBOX_BIN
#   (root, the shared node: HANGAR_TEST_NODE_DIR)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/../node/nodelib.sh"
. "$HERE/benchlib.sh"
. "$HERE/../lib/doclib.sh"
t_begin "bench/agent-sandbox.sh, short, on the shared node: claim to harness.started, warm and cold"
BUILD=$(realpath -m "${1:-.}") K8S_BIN=${2:-} AS_BIN=${3:-}
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$AS_BIN/agent-sandbox-controller" "$BUILD/client/hangar"
export HANGAR_AGENT_SANDBOX_BIN=$AS_BIN HANGAR_K8S_BIN=$K8S_BIN
cd "$T_TMP" || exit 1
NS=asb-bench
node_identity "$NS"
kubectl label namespace "$NS" hangar.dev/injection=enabled --overwrite >/dev/null
node_chart asbbench "$NS"
doc_block "$ROOT/docs/agent-sandbox.md" agent-sandbox-values >values.yaml
logged() { "$@" >>helm.log 2>&1; }
t_check "helm install (docs/agent-sandbox.md's values; its webhooks select $NS alone)" \
	logged hangar_chart_install asbbench "${NODE_CHART_ARGS[@]}" -f values.yaml
node_identity_kubeconfig "$NS" hangar.kubeconfig
F=$BENCH_F
RUNS=${BENCH_CHECK_RUNS:-1}
BENCH_RUNS=$RUNS BENCH_NS=$NS BENCH_KUBECONFIG=$T_TMP/hangar.kubeconfig \
	bench_run asb bash "$ROOT/bench/agent-sandbox.sh" "$BUILD" "$D"
bench_section "^claim to a turn's harness.started, $RUNS claims each, alternating \(ms since the claim's create; load $F $F $F after\)$"
bench_row "the columns" "^p50 mean max$"
for kind in warm cold; do
	bench_row "$kind: claim Ready" "^$kind: claim Ready $F $F $F$"
	bench_row "$kind: the verdict delivered" "^$kind: the verdict delivered \(pod check\) $F $F $F$"
	bench_row "$kind: harness.started" "^$kind: harness.started \(turn run\) $F $F $F$"
	if [ "$kind" = warm ]; then WARM=("${ROW[@]}"); else COLD=("${ROW[@]}"); fi
done
if bench_row "ratio cold / warm" "^ratio cold / warm, harness.started $F $F $F$"; then
	for i in 0 1 2; do bench_ratio "ratio $((i + 1))" "${COLD[i]:-x}" "${WARM[i]:-x}" "${ROW[i]}"; done
fi
bench_row "what the warm pool saves" "^what the warm pool saves, harness.started $F $F $F$"
t_end
