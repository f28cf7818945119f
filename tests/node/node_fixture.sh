#!/usr/bin/env bash
# shellcheck disable=SC1091,SC2016 # testlib and nodelib are sourced; bash -c scripts in single quotes
# The shared node of the node suites (ctest fixture "node": node_up is its
# FIXTURES_SETUP, node_down its FIXTURES_CLEANUP, tests/node/CMakeLists.txt).
#   start: a node in DIR (scripts/node.sh start, docs/node.md) with
#     build-images.sh's pause, sandbox and webhook archives from IMAGES_DIR,
#     what every suite uses made once (hangar-system under restricted Pod
#     Security, hangar's ServiceAccount in namespace hangar), Ready. A node
#     left in DIR by a run that was killed is stopped first.
#   stop: what the suites left on it (a namespace, a chart release, a
#     webhook configuration: each suite removes its own, so any is a check
#     that fails), then node.sh stop, and nothing left of the node on the
#     host: no process, cgroup, network namespace, mount, link, mount point
#     or state; a second stop is a no-op and status says stopped. ctest runs
#     it even when a suite failed or node_up did.
# usage: node_fixture.sh start DIR K8S_BIN NODE_BIN RUNSC IMAGES_DIR
#        node_fixture.sh stop DIR K8S_BIN
# By hand, to run a suite outside ctest:
#   tests/node/node_fixture.sh start /tmp/n K8S_BIN NODE_BIN RUNSC BUILD/images
#   HANGAR_TEST_NODE_DIR=/tmp/n bash tests/node/test_node_daemon.sh ...
#   tests/node/node_fixture.sh stop /tmp/n K8S_BIN
# Needs root.
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/nodelib.sh"
ACTION=${1:-} DIR=${2:-} K8S_BIN=${3:-}
if [ "$(id -u)" != 0 ]; then t_begin "the shared node: $ACTION"; t_fail "must run as root (namespaces, cgroups, links)"; t_end; fi
[ -n "$DIR" ] || { t_begin "the shared node"; t_fail "usage: node_fixture.sh start|stop DIR K8S_BIN ..."; t_end; }
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd -P)
export HANGAR_K8S_BIN=$K8S_BIN PATH=$K8S_BIN:$PATH KUBECONFIG=$DIR/kubeconfig
export HELM_CONFIG_HOME=$T_TMP/helm/config HELM_CACHE_HOME=$T_TMP/helm/cache HELM_DATA_HOME=$T_TMP/helm/data
KC=(kubectl --request-timeout 30s --cache-dir "$T_TMP/kube-cache")

start() {
	local node_bin=${4:-} runsc=${5:-} images=${6:-} f missing="" t0
	t_begin "the shared node: start (scripts/node.sh start $DIR)"
	for f in "$K8S_BIN/kubectl" "$node_bin/kubelet" "$runsc"; do [ -x "$f" ] || missing+=" ${f:-(a binary)}"; done
	node_archives "$images" pause-3.10.2 hangar-sandbox-dev 'hangar-webhook-*'
	missing+=$MISSING
	if [ -n "$missing" ]; then t_fail "missing:$missing (see tests/node/CMakeLists.txt)"; t_end; fi
	export HANGAR_NODE_BIN=$node_bin HANGAR_RUNSC_CURRENT=$runsc
	"$NODE_SH" stop "$DIR" >>"$DIR/fixture-stop.log" 2>&1 # a killed run's node, if any
	# The host paths the node hides under tmpfs that exist before it starts
	# stay after it stops (node_down checks the others are gone).
	for f in "${NODE_HIDDEN[@]}"; do [ ! -e "$f" ] || echo "$f"; done >"$DIR/hidden-before"
	t0=$SECONDS
	if ! "$NODE_SH" start "$DIR" "${ARCHIVES[@]}" >"$DIR/fixture-start.log" 2>&1; then
		t_fail "node.sh start failed:"
		tail -n 60 "$DIR/fixture-start.log"
		t_end
	fi
	echo "  node started in $((SECONDS - t0)) s ($(sed -n 's/^export HANGAR_NODE_IP=//p' "$DIR/env"))"
	t_eq "node hangar-node is Ready" True \
		"$("${KC[@]}" get node hangar-node -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}')"
	t_check "namespace $NODE_SYSTEM_NS, restricted Pod Security (the chart's)" bash -c \
		'"${@:2}" create namespace "$1" >/dev/null && "${@:2}" label namespace "$1" pod-security.kubernetes.io/enforce=restricted >/dev/null' \
		_ "$NODE_SYSTEM_NS" "${KC[@]}"
	t_check "namespace $NODE_ID_NS and hangar's ServiceAccount" bash -c \
		'"${@:2}" create namespace "$1" >/dev/null && "${@:2}" create serviceaccount -n "$1" hangar >/dev/null' \
		_ "$NODE_ID_NS" "${KC[@]}"
	t_end
}

stop() {
	local id netns t0 left
	t_begin "the shared node: stop, nothing left (scripts/node.sh stop $DIR)"
	id=$(node_id "$DIR")
	netns=$(cat "$DIR/node/netns" 2>/dev/null)
	if "$NODE_SH" status "$DIR" >/dev/null 2>&1; then
		# Every suite removes what it made, even when it fails.
		left=$("${KC[@]}" get namespaces -o json | jq -r --arg keep "default kube-system kube-public kube-node-lease $NODE_SYSTEM_NS $NODE_ID_NS" \
			'.items[] | select(.status.phase == "Active") | .metadata.name | select(. as $n | $keep | split(" ") | index($n) | not)' | tr '\n' ' ')
		t_eq "no suite left a namespace behind" "" "${left% }"
		left=$("${KC[@]}" get pods -n "$NODE_SYSTEM_NS" -o name 2>/dev/null; helm list -A -q 2>/dev/null)
		t_eq "no suite left the chart installed (release, pods in $NODE_SYSTEM_NS)" "" "$(tr '\n' ' ' <<<"$left" | sed 's/ *$//')"
		left=$("${KC[@]}" get mutatingwebhookconfigurations,validatingwebhookconfigurations -o name 2>/dev/null | tr '\n' ' ')
		t_eq "no suite left a webhook configuration" "" "${left% }"
	else
		echo "  the node was not running (node_up failed, or it was stopped already)"
	fi
	t0=$SECONDS
	"$NODE_SH" stop "$DIR" >"$DIR/fixture-stop.log" 2>&1
	t_eq "node.sh stop exits 0" 0 "$?"
	echo "  node stopped in $((SECONDS - t0)) s"
	node_assert_clean "$DIR" "$id" "$netns" "after stop" "$DIR/hidden-before"
	"$NODE_SH" stop "$DIR" >>"$DIR/fixture-stop.log" 2>&1
	t_eq "a second stop exits 0" 0 "$?"
	t_check "status reports a stopped node" bash -c '! "$1" status "$2" >/dev/null 2>&1' _ "$NODE_SH" "$DIR"
	t_end
}

case $ACTION in
start) start "$@" ;;
stop) stop ;;
*) t_begin "the shared node"; t_fail "usage: node_fixture.sh start|stop DIR K8S_BIN ..."; t_end ;;
esac
