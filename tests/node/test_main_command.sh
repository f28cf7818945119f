#!/usr/bin/env bash
# shellcheck disable=SC1091,SC2016 # testlib, nodelib and doclib are sourced; bash -c scripts in single quotes
# The README's main command as a new user types it, and the commands the docs
# give for the cluster it leaves up, all taken from the pages themselves
# (tests/lib/doclib.sh):
#   1. a clone of this tree (the working tree's files over it, so what is
#      about to be committed is what runs) in a directory only root can enter,
#      as `mktemp -d` makes one; README's first command, `scripts/local-run.sh`,
#      run there with its own build directory and state (HANGAR_LOCAL_DIR);
#   2. what it printed: the pod Running under gVisor with the sidecar, the
#      three probe results, the verdict, the ask turn's approval and its end,
#      each checked again against the cluster itself;
#   3. a second start while it runs is refused;
#   4. scripts/before-enabling.sh against the node's real kubelet (docs/probe.md):
#      every automated item passes with --as hangar's identity, and without it
#      the guard's refusal of the exec into hangar-driver is named;
#   5. docs/chart.md's quick start (install, the sandbox pod, the check)
#      after local-run's release is removed, the placeholders replaced with
#      the local image names;
#   6. the stop command local-run printed: nothing of the node left on the
#      host (processes, cgroups, network namespace, mounts, links, state),
#      the state directory gone, and a second stop a no-op;
#   7. a node that does not come up (its start deadline cut to a second):
#      the run stops there naming the step and its log, and stop cleans up.
# usage: test_main_command.sh K8S_BIN   (root; the tool caches warm: it runs
#   local-run.sh's own dependency steps, which take the cached tools)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/nodelib.sh"
. "$HERE/../lib/doclib.sh"
K8S_BIN=${1:?usage: test_main_command.sh K8S_BIN}
export PATH=$K8S_BIN:$PATH
t_begin "the README's main command from a clone, and the docs' commands on its cluster"
[ "$(id -u)" = 0 ] || { t_fail "must run as root (the node)"; t_end; }

# ---- 1. a clone, as a user makes one -----------------------------------------
WORK=$(mktemp -d /tmp/hangar-main-command.XXXXXX) # 0700: only root enters
node_on_exit "rm -rf '$WORK'"
CLONE=$WORK/hangar-sidecar
STATE=$WORK/state
git clone -q "$ROOT" "$CLONE" || { t_fail "git clone $ROOT"; t_end; }
# The working tree's files (tracked and new, not ignored) over the clone:
# without a commit in between, the change being made is what runs.
(cd "$ROOT" && git ls-files -z -co --exclude-standard | tar --null -T - -cf -) | tar -C "$CLONE" -xf - ||
        { t_fail "copying the working tree over the clone"; t_end; }
(cd "$ROOT" && git ls-files -z -d) | (cd "$CLONE" && xargs -0 -r rm -f)
t_eq "the clone's parent is 0700" 700 "$(stat -c %a "$WORK")"

doc_block "$CLONE/README.md" readme-commands >"$T_TMP/readme.sh" || t_fail "README.md has no marked command block"
mapfile -t commands < <(grep -v '^#' "$T_TMP/readme.sh" | grep -v '^[[:space:]]*$')
t_eq "the README gives two commands: the main job, then every test" \
        "scripts/local-run.sh|scripts/test-all.sh" "$(IFS='|'; echo "${commands[*]}")"
main=${commands[0]:-}
[ "$main" = scripts/local-run.sh ] || t_end

# The host paths the node hides under tmpfs that exist before it starts
# stay after it stops (as the shared node's fixture records them).
for p in "${NODE_HIDDEN[@]}"; do [ ! -e "$p" ] || echo "$p"; done >"$T_TMP/hidden-before"
# CI's compiler cache, when scripts/test-all.sh turned it on: paths taken
# relative to this clone, so the clone's build hits what an earlier run of
# this test compiled (docs/ci.md). The command itself is the README's.
[ -z "${CCACHE_BASEDIR:-}" ] || export CCACHE_BASEDIR=$CLONE
export HELM_CONFIG_HOME=$T_TMP/helm/config HELM_CACHE_HOME=$T_TMP/helm/cache HELM_DATA_HOME=$T_TMP/helm/data
# Stopped on the way out whatever happened (a no-op once stopped).
node_on_exit "cd '$CLONE' && HANGAR_LOCAL_DIR='$STATE' scripts/local-run.sh stop"
echo "  running '$main' in $CLONE (its output: $T_TMP/main.out)"
t0=$SECONDS
(cd "$CLONE" && HANGAR_LOCAL_DIR=$STATE timeout 2400 "$main") >"$T_TMP/main.out" 2>&1
rc=$?
echo "  it exited $rc after $((SECONDS - t0)) s"
# Colours off for matching (the script bolds its step titles).
sed 's/\x1b\[[0-9;]*m//g' "$T_TMP/main.out" >"$T_TMP/main.txt"
t_eq "$main exits 0" 0 "$rc"
if [ "$rc" != 0 ]; then
        tail -n 60 "$T_TMP/main.txt"
        for f in "$STATE"/logs/*.log; do [ -s "$f" ] && { echo "---- $f"; tail -n 15 "$f"; }; done
        t_end
fi

# ---- 2. what it printed, and the cluster itself ----------------------------
summary() { awk -v k="$1" '/^== summary/ { on = 1; next } /^== / { on = 0 } on && $1 == k { $1 = ""; sub(/^ +/, ""); print }' "$T_TMP/main.txt"; }
t_eq "summary: the pod" "sandboxes/agent-sandbox Running, runtimeClassName gvisor, containers sandbox,hangar-driver" \
        "$(summary pod)"
t_eq "summary: the three probes" "spec pass, agent pass, driver pass" "$(summary probes)"
t_eq "summary: the verdict" split-active "$(summary verdict)"
t_eq "summary: the approval" "deploy approved" "$(summary approval)"
t_eq "summary: the turn's end" "local-1 ended, harness exited 0, relay done (exit 0)" "$(summary turn)"
t_check "it printed gVisor's kernel for the sandbox" grep -q '^  the sandbox kernel: .*gVisor' "$T_TMP/main.txt"
t_check "it printed how to stop it" grep -qx 'Stop everything with:  scripts/local-run.sh stop' "$T_TMP/main.txt"

export KUBECONFIG=$STATE/kubeconfig
HANGAR_ID=system:serviceaccount:hangar:hangar
kubectl get pod -n sandboxes agent-sandbox -o json >"$T_TMP/pod.json"
t_eq "the cluster: the pod Running on gVisor with both containers" "Running gvisor sandbox,hangar-driver" \
        "$(jq -r '"\(.status.phase) \(.spec.runtimeClassName) \([.spec.containers[].name] | join(","))"' "$T_TMP/pod.json")"
t_eq "the cluster: both containers ready" "true true" \
        "$(jq -r '[.status.containerStatuses[] | .ready] | map(tostring) | join(" ")' "$T_TMP/pod.json")"
t_eq "the cluster: the verdict the driver reads" split-active \
        "$(kubectl exec -n sandboxes agent-sandbox -c hangar-driver --as "$HANGAR_ID" -- cat /var/lib/hangar-ctl/verdict.json | jq -r .verdict)"
t_eq "the cluster: the turn as the daemon recorded it" "ended exited 0" \
        "$(kubectl exec -n sandboxes agent-sandbox -c hangar-driver --as "$HANGAR_ID" -- hangar-driver ctl status --turn local-1 |
                jq -r '"\(.state) \(.harness.end) \(.harness.value)"')"

# ---- 3. a second start while it runs -----------------------------------------
(cd "$CLONE" && HANGAR_LOCAL_DIR=$STATE scripts/local-run.sh) >"$T_TMP/again.out" 2>&1
t_eq "a second start while it runs exits 1" 1 "$?"
t_check "  and says to stop first" grep -q "run 'scripts/local-run.sh stop' first" "$T_TMP/again.out"

# ---- 4. the admin's checklist against the node's kubelet -------------------
BE=("$CLONE/scripts/before-enabling.sh" --namespace sandboxes --probe "$CLONE/build/probe/hangar-probe")
"${BE[@]}" --as "$HANGAR_ID" --out "$T_TMP/be" agent-sandbox >"$T_TMP/be.out" 2>&1
rc=$?
t_eq "before-enabling.sh --as hangar's identity: every automated item passes" 0 "$rc"
[ "$rc" = 0 ] || cat "$T_TMP/be.out"
t_eq "  its checklist has no FAIL" 0 "$(grep -c '\[FAIL\]' "$T_TMP/be.out")"
t_check "  and says gVisor for the pod" grep -q '\[pass\] *3c. runtime.gvisor says gVisor' "$T_TMP/be.out"
"${BE[@]}" agent-sandbox >"$T_TMP/be-admin.out" 2>&1
t_eq "before-enabling.sh as the admin alone: the exec into hangar-driver is refused (exit 1)" 1 "$?"
t_check "  and the guard is named with what to do" grep -q 'the guard lets only guard.driverUsers exec into hangar-driver: --as' \
        "$T_TMP/be-admin.out"

# ---- 5. docs/chart.md's quick start ------------------------------------------
t_check "local-run's release removed" helm uninstall hangar -n hangar-system --wait
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$CLONE/build/CMakeCache.txt")
doc_block "$CLONE/docs/chart.md" chart-quickstart-install >"$T_TMP/install.sh" || t_fail "docs/chart.md: no install block"
t_check "the quick start installs the image of this version ($version)" grep -q "image.tag=$version" "$T_TMP/install.sh"
sed -i 's#LOCATION-docker.pkg.dev/PROJECT/REPO/hangar-webhook#localhost/hangar-webhook#' "$T_TMP/install.sh"
(cd "$CLONE" && bash -euo pipefail "$T_TMP/install.sh") >"$T_TMP/install.out" 2>&1
rc=$?
t_eq "docs/chart.md: the install commands exit 0" 0 "$rc"
[ "$rc" = 0 ] || tail -n 20 "$T_TMP/install.out"
# The page's namespace, opted in: local-run made sandboxes (its create is
# skipped) and labelled it; the label is taken off so the page's own
# command is what puts it back.
doc_block "$CLONE/docs/chart.md" chart-quickstart-namespace >"$T_TMP/namespace.sh" || t_fail "docs/chart.md: no namespace block"
t_check "the quick start opts the namespace in (hangar.dev/injection=enabled)" \
        grep -q "kubectl label namespace sandboxes hangar.dev/injection=enabled" "$T_TMP/namespace.sh"
sed -i 's#^kubectl create namespace \(.*\)$#kubectl get namespace \1 >/dev/null 2>\&1 || &#' "$T_TMP/namespace.sh"
kubectl label namespace sandboxes hangar.dev/injection- >/dev/null
(cd "$CLONE" && bash -euo pipefail "$T_TMP/namespace.sh") >"$T_TMP/namespace.out" 2>&1
t_eq "docs/chart.md: the namespace commands exit 0" 0 "$?"
t_eq "  the namespace is opted in" enabled \
        "$(kubectl get namespace sandboxes -o jsonpath='{.metadata.labels.hangar\.dev/injection}')"
doc_block "$CLONE/docs/chart.md" chart-quickstart-pod >"$T_TMP/pod.yaml" || t_fail "docs/chart.md: no pod block"
sed -i 's#REGISTRY/agent-env:TAG#localhost/hangar-sandbox:dev#' "$T_TMP/pod.yaml"
# A new webhook configuration reaches the API server after a moment.
t_check "docs/chart.md: its sandbox pod is created" \
        t_wait_for "kubectl create -f '$T_TMP/pod.yaml' >'$T_TMP/create.out' 2>&1" 60
doc_block "$CLONE/docs/chart.md" chart-quickstart-check >"$T_TMP/check.sh" || t_fail "docs/chart.md: no check block"
(cd "$CLONE" && bash -euo pipefail "$T_TMP/check.sh") >"$T_TMP/check.out" 2>&1
t_eq "docs/chart.md: the check command exits 0" 0 "$?"
t_eq "  it shows the injected annotation" injected \
        "$(head -n 1 "$T_TMP/check.out" | jq -r '.["hangar.dev/driver-sidecar"]' 2>/dev/null)"
t_eq "  and both containers, as the page says" "sandbox hangar-driver" "$(sed -n 2p "$T_TMP/check.out")"

# ---- 6. the stop command it printed ------------------------------------------
stop_cmd=$(sed -n 's/^Stop everything with: *//p' "$T_TMP/main.txt")
read -r -a stop_words <<<"$stop_cmd"
[ ${#stop_words[@]} -gt 0 ] || stop_words=(false) # nothing printed: the check above failed
id=$(node_id "$STATE")
netns=$(cat "$STATE/node/netns" 2>/dev/null)
(cd "$CLONE" && HANGAR_LOCAL_DIR=$STATE "${stop_words[@]}") >"$T_TMP/stop.out" 2>&1
rc=$?
t_eq "'$stop_cmd' exits 0" 0 "$rc"
[ "$rc" = 0 ] || cat "$T_TMP/stop.out"
node_assert_clean "$STATE" "$id" "$netns" "after stop" "$T_TMP/hidden-before"
t_check "the state directory is gone" test ! -e "$STATE"
(cd "$CLONE" && HANGAR_LOCAL_DIR=$STATE "${stop_words[@]}") >"$T_TMP/stop2.out" 2>&1
t_eq "a second stop exits 0" 0 "$?"

# ---- 7. a cluster that does not come up --------------------------------------
# node.sh's deadline for the node to start, cut to a second: the run stops
# at that step, names it and its log, and stop cleans up what it started.
(cd "$CLONE" && HANGAR_LOCAL_DIR=$STATE HANGAR_NODE_START_TIMEOUT=1 "$main") >"$T_TMP/fail.out" 2>&1
t_eq "a node that does not come up: the main command exits 1" 1 "$?"
t_check "  naming the step and its log" grep -q \
        "(step \"starting a one-node cluster.*log: $STATE/logs/node-start.log" "$T_TMP/fail.out"
# Which wait the one second ends depends on the load: the node's own, or
# the control plane's within it (etcd's health at load 24); each says so.
t_check "  with the end of that log" grep -qE "not (ready|healthy) after 1s" "$T_TMP/fail.out"
id=$(node_id "$STATE")
netns=$(cat "$STATE/node/netns" 2>/dev/null)
(cd "$CLONE" && HANGAR_LOCAL_DIR=$STATE "${stop_words[@]}") >"$T_TMP/stop3.out" 2>&1
t_eq "  and stop exits 0" 0 "$?"
node_assert_clean "$STATE" "$id" "$netns" "after the failed start's stop" "$T_TMP/hidden-before"
t_check "  the state directory is gone" test ! -e "$STATE"
t_end
