# shellcheck shell=bash
# What every node suite shares (source after testlib.sh, with ROOT set): the
# one node of the ctest fixture (node_up starts it, node_down stops it and
# checks nothing is left: tests/node/node_fixture.sh), found through
# HANGAR_TEST_NODE_DIR; a namespace of the suite's own; the chart's install
# and removal for the suites that need it; and what is run on the way out.
#
# A suite never starts or stops the shared node and never leaves anything on
# it: its namespaces are deleted, a chart it installed is uninstalled, and
# cluster-wide objects it made are deleted, on every exit (node_on_exit).
# Suites that change cluster-wide state (the chart's webhook configurations)
# hold a ctest RESOURCE_LOCK (tests/node/CMakeLists.txt says which).

NODE_SH=$ROOT/scripts/node.sh
# The namespaces the fixture makes once for everyone: the chart's, under
# restricted Pod Security, and hangar's own (its ServiceAccount, the identity
# every exec into hangar-driver uses: $HANGAR_ID of scripts/lib/hangar-chart.sh).
NODE_SYSTEM_NS=hangar-system
NODE_ID_NS=hangar

NODE_EXIT=()
# node_on_exit CMD: CMD (a string for eval) runs on exit, the last added first,
# before testlib's t_cleanup.
node_on_exit() { NODE_EXIT=("$1" "${NODE_EXIT[@]}"); }
node_exit() {
	local c
	t_main_shell || return 0 # (testlib.sh: a child before its exec)
	for c in "${NODE_EXIT[@]}"; do eval "$c" >>"$T_TMP/exit.log" 2>&1; done
	t_cleanup
}
trap 't_main_shell || exit; node_exit' EXIT

# node_attach K8S_BIN [EXECUTABLE...]: the suite's preflight (root, kubectl,
# the EXECUTABLEs it takes) and the shared node: KUBECONFIG, the node's env
# (source DIR/env: HANGAR_NODE_IP, HANGAR_APISERVER_PID, ...), D (its
# directory), PATH with kubectl and helm first. Fails the suite when the node
# does not run (outside ctest: tests/node/node_fixture.sh start DIR ...).
node_attach() {
	local k8s=$1 f missing=""
	shift
	if [ "$(id -u)" != 0 ]; then t_fail "must run as root (the node)"; t_end; fi
	for f in "$k8s/kubectl" "$@"; do [ -x "$f" ] || missing+=" ${f:-(a binary)}"; done
	if [ -n "$missing" ]; then t_fail "missing:$missing (see tests/node/CMakeLists.txt)"; t_end; fi
	D=${HANGAR_TEST_NODE_DIR:-}
	if [ -z "$D" ] || ! "$NODE_SH" status "$D" >"$T_TMP/node-status.log" 2>&1; then
		t_fail "the shared node does not run in ${D:-(HANGAR_TEST_NODE_DIR unset)}: ctest starts it (fixture node_up;" \
			"ctest -R NAME pulls it in), by hand: tests/node/node_fixture.sh start DIR ... ($(tail -n 1 "$T_TMP/node-status.log" 2>/dev/null))"
		t_end
	fi
	# shellcheck disable=SC1091 # written by node.sh start
	. "$D/env"
	export KUBECONFIG=$D/kubeconfig HANGAR_K8S_BIN=$k8s
	export PATH=$k8s:$PATH
	# helm's own state in the suite's T_TMP (nothing in ~/.config, ~/.cache)
	export HELM_CONFIG_HOME=$T_TMP/helm/config HELM_CACHE_HOME=$T_TMP/helm/cache HELM_DATA_HOME=$T_TMP/helm/data
	echo "  on the shared node in $D ($HANGAR_NODE_IP)"
}

# node_archives IMAGES_DIR NAME...: ARCHIVES, the OCI archives NAME.oci.tar
# (globs allowed) in IMAGES_DIR; "missing" in MISSING for each absent one.
node_archives() {
	local dir=$1 a f
	shift
	ARCHIVES=() MISSING=""
	for a in "$@"; do
		f=$(compgen -G "$dir/$a.oci.tar" | head -n 1)
		if [ -r "$f" ]; then ARCHIVES+=("$f"); else MISSING+=" $dir/$a.oci.tar"; fi
	done
}

# node_namespace NS [LABEL=VALUE...]: the suite's namespace, new (a
# namespace of the same name left by an earlier run is waited for until it is
# gone, 120 s at most), opted in to hangar (hangar.dev/injection=enabled, the
# chart's scope.namespaceLabel: the suites' namespaces hold sandbox pods, and
# a chart another suite installed refuses them anywhere else), labelled,
# deleted on exit.
node_namespace() {
	local ns=$1 l
	shift
	if kubectl get namespace "$ns" >/dev/null 2>&1; then
		echo "  namespace $ns is left from an earlier run: waiting for it to go"
		kubectl delete namespace "$ns" --wait=false >/dev/null 2>&1
		kubectl wait --for=delete "namespace/$ns" --timeout=120s >/dev/null 2>&1
	fi
	kubectl create namespace "$ns" >/dev/null || { t_fail "could not create namespace $ns"; t_end; }
	node_on_exit "kubectl delete namespace $ns --wait=false"
	for l in hangar.dev/injection=enabled "$@"; do kubectl label namespace "$ns" "$l" >/dev/null; done
}

# node_identity NS: NS (node_namespace) where hangar's identity may read pods
# and exec into them, as scripts/lib/hangar-chart.sh's hangar_identity grants
# it (the ServiceAccount itself is the fixture's).
node_identity() {
	local ns=$1
	node_namespace "$ns"
	if ! { kubectl create role -n "$ns" hangar --verb=get,list,watch --resource=pods >/dev/null &&
		kubectl create role -n "$ns" hangar-exec --verb=get,create --resource=pods/exec >/dev/null &&
		kubectl create rolebinding -n "$ns" hangar --role=hangar --serviceaccount="$NODE_ID_NS:hangar" >/dev/null &&
		kubectl create rolebinding -n "$ns" hangar-exec --role=hangar-exec --serviceaccount="$NODE_ID_NS:hangar" >/dev/null; }; then
		t_fail "could not give hangar's identity its roles in $ns"
		t_end
	fi
}

# node_sandbox_pod NS NAME [JQ_FILTER]: a gVisor sandbox pod in NS (the
# example image, uid 1000, no capabilities), changed by JQ_FILTER, written
# to NAME.json and created; hangar injects it when it keeps the sandbox label.
node_sandbox_pod() {
	jq -n --arg ns "$1" --arg n "$2" '{apiVersion: "v1", kind: "Pod",
		metadata: {name: $n, namespace: $ns, labels: {"hangar.dev/sandbox": "true"}},
		spec: {runtimeClassName: "gvisor", terminationGracePeriodSeconds: 2,
			securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000},
			containers: [{name: "sandbox", image: "localhost/hangar-sandbox:dev", imagePullPolicy: "Never",
				command: ["sleep", "infinity"],
				securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]}}}]}}' |
		jq "${3:-.}" >"$2.json"
	t_check "pod $2 is created" t_wait_for "kubectl create -f $2.json >/dev/null 2>>create.err" 30
}

# node_identity_kubeconfig NS FILE: a kubeconfig (mode 0600) of hangar's
# identity (a token of its ServiceAccount, an hour long, and the cluster's
# CA, from the current admin kubeconfig), its context's namespace NS.
node_identity_kubeconfig() {
	local admin server ca token
	admin=$(kubectl config view --raw --minify -o json)
	server=$(jq -r '.clusters[0].cluster.server' <<<"$admin")
	ca=$(jq -r '.clusters[0].cluster["certificate-authority-data"] // empty' <<<"$admin")
	[ -n "$ca" ] || ca=$(base64 -w0 <"$(jq -r '.clusters[0].cluster["certificate-authority"]' <<<"$admin")")
	token=$(kubectl create token hangar -n "$NODE_ID_NS" --duration=1h)
	jq -n --arg s "$server" --arg ca "$ca" --arg t "$token" --arg ns "$1" '{apiVersion: "v1", kind: "Config",
		clusters: [{name: "node", cluster: {server: $s, "certificate-authority-data": $ca}}],
		users: [{name: "hangar", user: {token: $t}}],
		contexts: [{name: "hangar", context: {cluster: "node", user: "hangar", namespace: $ns}}],
		"current-context": "hangar"}' >"$2"
	chmod 600 "$2"
}

# node_chart RELEASE NS: the suite installs the chart as RELEASE into
# hangar-system (the fixture's namespace; the suite holds RESOURCE_LOCK
# node_chart), with NODE_CHART_ARGS (helm flags) among its values: its
# webhooks select namespace NS alone (webhook.namespaceSelector, ANDed with
# the chart's own exclusions), so neither its mutating webhook nor its
# guard (failurePolicy Fail, on every exec) ever judges another suite's
# pod or exec, even while no replica answers. On exit it is uninstalled,
# and what the replicas wrote themselves (the self-managed certificates'
# Secret) deleted, so the next suite starts from no chart at all. Fails the
# suite if a release is already there (a suite outside the lock, or a
# killed one's leftover).
node_chart() {
	local left
	# shellcheck disable=SC2034 # the sourcing suite passes it to hangar_chart_install
	NODE_CHART_ARGS=(--set-json "webhook.namespaceSelector={\"matchExpressions\":[{\"key\":\"kubernetes.io/metadata.name\",\"operator\":\"In\",\"values\":[\"$2\"]}]}")
	left=$(helm list -n "$NODE_SYSTEM_NS" -q 2>/dev/null)
	if [ -n "$left" ]; then
		t_fail "a chart release is already installed on the shared node ($left): another suite outside RESOURCE_LOCK node_chart?"
		t_end
	fi
	# (the replicas' pods gone first: a replica still stopping could write the
	# Secret again)
	node_on_exit "helm uninstall $1 -n $NODE_SYSTEM_NS --wait --timeout 2m;
		kubectl wait --for=delete pod --all -n $NODE_SYSTEM_NS --timeout=90s;
		kubectl delete secret -n $NODE_SYSTEM_NS --all"
}

# node_chart_stop_unless_up: after a suite's install and readiness checks,
# ends the suite if one failed, with why: the replicas' pods, their
# containers' last end and logs. Without a webhook every later check fails
# too and waits out its own deadline (node_daemon went on 15 minutes after
# an install whose replicas exited on a config key their image did not
# know, and its log never said so).
node_chart_stop_unless_up() {
	local pod
	[ "$T_FAILURES" -gt 0 ] || return 0
	echo "  the chart is not up: the replicas in $NODE_SYSTEM_NS, then the suite stops"
	kubectl get pods -n "$NODE_SYSTEM_NS" -o wide 2>&1 | sed 's/^/    /'
	for pod in $(kubectl get pods -n "$NODE_SYSTEM_NS" -o name 2>/dev/null); do
		kubectl get -n "$NODE_SYSTEM_NS" "$pod" -o json 2>/dev/null |
			jq -r '.status.containerStatuses[]? | "    \(.name): \(.state | keys[0]), restarts \(.restartCount), last end \(.lastState.terminated // {} | tojson)"'
		kubectl logs -n "$NODE_SYSTEM_NS" "$pod" --all-containers --tail=5 2>&1 | sed "s|^|    $pod: |"
		kubectl logs -n "$NODE_SYSTEM_NS" "$pod" --all-containers --previous --tail=5 2>/dev/null | sed "s|^|    $pod (previous): |"
	done
	t_end
}

# node_assert_clean DIR ID NETNS WHAT [HIDDEN_BEFORE_FILE]: what a stopped
# node must not leave (every check says what it found). ID: the node's id
# (node_id), NETNS: its network namespace (net:[INODE]) or "";
# HIDDEN_BEFORE_FILE: the host paths of NODE_HIDDEN that existed before the
# node started (one a line), which stay.
NODE_HIDDEN=(/run/containerd /var/lib/kubelet /var/log/pods /var/log/containers /var/lib/cni)
node_id() { printf '%s' "$(cd "$1" && pwd -P)" | sha256sum | cut -c1-8; }
# node_describe_proc PID: one line saying what a process left behind is (its
# parent, cgroup and command line), so that a failed check names its cause.
node_describe_proc() {
	local ppid cg cmd
	ppid=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f2)
	cg=$(grep -m 1 -E "^[0-9]+:(memory|pids)?:" "/proc/$1/cgroup" 2>/dev/null)
	cmd=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | cut -c1-200)
	echo "$1 (parent ${ppid:-?}, cgroup ${cg:-?}: ${cmd:-?})"
}
node_assert_clean() {
	local dir=$1 id=$2 netns=$3 what=$4 before=${5:-} found p h
	found=$(for p in /proc/[0-9]*; do
		if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF -- "$dir/"; then echo "${p#/proc/}"; fi
	done)
	t_eq "$what: no process names $dir" "" "$found"
	found=$(grep -l "/hangar-node-$id" /proc/[0-9]*/cgroup 2>/dev/null)
	t_eq "$what: no process in cgroup hangar-node-$id" "" "$found"
	if [ -n "$netns" ]; then
		found=$(for p in /proc/[0-9]*; do
			[ "$(readlink "$p/ns/net" 2>/dev/null)" != "$netns" ] || node_describe_proc "${p#/proc/}"
		done)
		t_eq "$what: no process in the node's network namespace $netns" "" "$found"
		found=$(awk -v i="${netns//[^0-9]/}" '$0 ~ "net:\\[" i "\\]"' /proc/self/mountinfo)
		t_eq "$what: the node's network namespace is not bind-mounted" "" "$found"
	fi
	found=$(grep -E "$dir/|hangar-node| (/run/containerd|/var/lib/kubelet|/var/log/pods|/var/log/containers|/var/lib/cni)[ /]" /proc/self/mountinfo)
	t_eq "$what: no mount of the node in /proc/self/mountinfo" "" "$found"
	found=$(ip -o link show 2>/dev/null | grep -E "hgn-$id|cni0" || true)
	t_eq "$what: no link hgn-$id or cni0 on the host" "" "$found"
	found=$(for h in /sys/fs/cgroup/*/; do [ ! -d "$h/hangar-node-$id" ] || echo "$h/hangar-node-$id"; done)
	t_eq "$what: no cgroup hangar-node-$id in any hierarchy" "" "$found"
	# (unless it was there before, or another node, e.g. scripts/local-run.sh's
	# or a second build's, still mounts there)
	found=$(for p in "${NODE_HIDDEN[@]}"; do
		{ [ -n "$before" ] && grep -qxF "$p" "$before"; } || [ ! -e "$p" ] ||
			grep -qsF " $p " /proc/[0-9]*/mountinfo || echo "$p"
	done)
	t_eq "$what: no mount point left on the host (${NODE_HIDDEN[*]})" "" "$found"
	found=$(ls -A "$dir/node" 2>/dev/null)
	t_eq "$what: the node's state under $dir/node is gone" "" "$found"
}
