#!/usr/bin/env bash
# kubernetes-sigs/agent-sandbox on a node of scripts/node.sh: its four CRDs
# applied, its controller (core and extensions: Sandbox, SandboxTemplate,
# SandboxWarmPool, SandboxClaim) running. See docs/agent-sandbox.md.
#
#   scripts/agent-sandbox.sh install   NODE_DIR  apply the CRDs, start the controller, wait until it works
#   scripts/agent-sandbox.sh status    NODE_DIR  exit 0 only if the CRDs are there and the controller runs
#   scripts/agent-sandbox.sh uninstall NODE_DIR  delete every agent-sandbox object, stop the controller,
#                                               delete the CRDs (idempotent)
#
# The controller runs as a process on this host, not as a pod (upstream's
# own host-run development guide does the same), so no controller image has
# to be built and loaded and the pod list the hangar suites check holds
# sandbox pods only. It still has the identity of a real install: upstream's
# ServiceAccount agent-sandbox-system/agent-sandbox-controller, bound to
# upstream's two ClusterRoles, its token (kubectl create token, 48 h) in a
# kubeconfig of its own, NODE_DIR/agent-sandbox.kubeconfig; so its pod
# CREATEs and the UPDATEs of warm-pool adoption reach hangar's webhooks
# from that user, with upstream's RBAC. Leader election is off (one
# controller); metrics and the health endpoint are off (its /readyz is a
# ping and says nothing about the caches): it is ready when each of its four
# controllers logged "Starting workers", which controller-runtime does once
# that controller's caches are synced.
#
# Files in NODE_DIR: agent-sandbox.log (the controller's log, kept),
# agent-sandbox.pid and agent-sandbox.kubeconfig (while it runs). Binaries:
# $HANGAR_AGENT_SANDBOX_BIN (else scripts/agent-sandbox-tools.sh, building if
# missing; its CRDs in ../crds, its ClusterRoles in ../rbac), kubectl from
# $HANGAR_K8S_BIN (else scripts/k8s-tools.sh); the admin's NODE_DIR/kubeconfig
# for everything but the controller.
# Tunables: HANGAR_AGENT_SANDBOX_TIMEOUT (s, default 120).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
timeout=${HANGAR_AGENT_SANDBOX_TIMEOUT:-120}
# The controllers of `--extensions` mode, by the names controller-runtime logs.
controllers=(sandbox sandboxclaim sandboxwarmpool sandboxtemplate)
kinds=(sandboxclaims.extensions.agents.x-k8s.io sandboxwarmpools.extensions.agents.x-k8s.io
       sandboxtemplates.extensions.agents.x-k8s.io sandboxes.agents.x-k8s.io)

log() { echo "agent-sandbox: $*" >&2; }
die() { echo "agent-sandbox: error: $*" >&2; exit 1; }
usage() {
  sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

setup() {
  dir=$(cd "$1" 2>/dev/null && pwd) || die "no node directory $1"
  [ -f "$dir/kubeconfig" ] || die "$dir/kubeconfig missing: not a node of scripts/node.sh"
  pidfile=$dir/agent-sandbox.pid logfile=$dir/agent-sandbox.log ctlconfig=$dir/agent-sandbox.kubeconfig
  if [ -n "${HANGAR_K8S_BIN:-}" ]; then k8s_bin=$HANGAR_K8S_BIN
  else k8s_bin=$("$script_dir/k8s-tools.sh" --print-bin-dir); fi
  [ -x "$k8s_bin/kubectl" ] || die "$k8s_bin/kubectl missing (HANGAR_K8S_BIN or scripts/k8s-tools.sh)"
}
kctl() { "$k8s_bin/kubectl" --kubeconfig "$dir/kubeconfig" --request-timeout 20s "$@"; }
# Upstream's names (k8s/controller.yaml, k8s/extensions.yaml): the
# ClusterRoles and their bindings are named alike.
sa_ns=agent-sandbox-system sa=agent-sandbox-controller
roles=(agent-sandbox-controller agent-sandbox-controller-extensions)

# identity RBAC_DIR: the controller's ServiceAccount, upstream's ClusterRoles
# bound to it, and a kubeconfig with its token (mode 0600).
identity() {
  local rbac=$1 r token server ca
  kctl get namespace "$sa_ns" >/dev/null 2>&1 || kctl create namespace "$sa_ns" >/dev/null
  kctl get serviceaccount -n "$sa_ns" "$sa" >/dev/null 2>&1 || kctl create serviceaccount -n "$sa_ns" "$sa" >/dev/null
  kctl apply -f "$rbac" >/dev/null
  for r in "${roles[@]}"; do
    kctl create clusterrolebinding "$r" --clusterrole="$r" --serviceaccount="$sa_ns:$sa" \
      --dry-run=client -o yaml | kctl apply -f - >/dev/null
  done
  token=$(kctl create token -n "$sa_ns" "$sa" --duration=48h) || return 1
  server=$(kctl config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kctl config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
  [ -n "$token" ] && [ -n "$server" ] && [ -n "$ca" ] || return 1
  (umask 077 && cat >"$ctlconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: node, cluster: {server: "$server", certificate-authority-data: "$ca"}}]
users: [{name: $sa, user: {token: "$token"}}]
contexts: [{name: $sa, context: {cluster: node, user: $sa}}]
current-context: $sa
EOF
  )
}

# controller_pid: the pid of the controller this script started for the
# node, if it still runs (a recycled pid is not it: its command line must name
# the controller and this node's kubeconfig).
controller_pid() {
  local pid
  pid=$(cat "$pidfile" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "^[^ ]*/agent-sandbox-controller --kubeconfig=$ctlconfig " \
    || return 1
  echo "$pid"
}

# started_all: each controller of `controllers` logged "Starting workers"
# since the last start (the log starts anew on each install).
started_all() {
  local c
  for c in "${controllers[@]}"; do
    grep -F '"msg":"Starting workers"' "$logfile" 2>/dev/null | grep -qF "\"controller\":\"$c\"" || return 1
  done
}

install() {
  local bin crds rbac t0 pid who
  if [ -n "${HANGAR_AGENT_SANDBOX_BIN:-}" ]; then bin=$HANGAR_AGENT_SANDBOX_BIN
  else bin=$("$script_dir/agent-sandbox-tools.sh" | tail -n 1); fi
  crds=$bin/../crds rbac=$bin/../rbac
  [ -x "$bin/agent-sandbox-controller" ] || die "$bin/agent-sandbox-controller missing (scripts/agent-sandbox-tools.sh)"
  compgen -G "$crds/*.yaml" >/dev/null || die "no CRDs in $crds (scripts/agent-sandbox-tools.sh)"
  compgen -G "$rbac/*.yaml" >/dev/null || die "no ClusterRoles in $rbac (scripts/agent-sandbox-tools.sh)"
  if pid=$(controller_pid); then die "the controller already runs for $dir (pid $pid): uninstall first"; fi
  log "applying the CRDs ($crds)"
  # Server-side: the Sandbox and SandboxTemplate CRDs are ~200 kB each, too
  # big for client-side apply's last-applied annotation.
  kctl apply --server-side --force-conflicts -f "$crds" >/dev/null
  # (kubectl wait fails at once, rather than waiting, on a CRD whose status
  # has no conditions yet: so it is asked again until the deadline)
  t0=$SECONDS
  until kctl wait --for condition=Established --timeout 5s "${kinds[@]/#/crd/}" >/dev/null 2>&1; do
    [ $((SECONDS - t0)) -lt "$timeout" ] || die "the CRDs are not Established after ${timeout}s"
    sleep 0.5
  done
  log "its ServiceAccount $sa_ns/$sa, upstream's ClusterRoles bound to it ($rbac)"
  identity "$rbac" || die "could not make the controller's identity and kubeconfig ($ctlconfig)"
  who=$("$k8s_bin/kubectl" --kubeconfig "$ctlconfig" auth whoami -o jsonpath='{.status.userInfo.username}' 2>/dev/null) || who=""
  [ "$who" = "system:serviceaccount:$sa_ns:$sa" ] || die "$ctlconfig authenticates as '${who:-nobody}', not $sa_ns/$sa"
  log "starting the controller as $who (log: $logfile)"
  # Its own session: not in the caller's process group, so a shell's ^C or a
  # test's cleanup of its children does not take it; uninstall stops it. The
  # pid is written by the process that then becomes the controller (setsid
  # forks when it would lead a group: $! is not always it), and the
  # controller is looked for until it has exec'd.
  rm -f "$pidfile"
  # shellcheck disable=SC2016 # the inner shell expands $$ and $1
  setsid bash -c 'echo $$ >"$1" && shift && exec "$@"' agent-sandbox "$pidfile" \
    "$bin/agent-sandbox-controller" --kubeconfig="$ctlconfig" --extensions \
    --leader-elect=false --metrics-bind-address=0 --health-probe-bind-address=0 \
    </dev/null >"$logfile" 2>&1 &
  t0=$SECONDS
  until controller_pid >/dev/null; do
    [ $((SECONDS - t0)) -lt 10 ] || die "the controller did not start in 10s: $(tail -n 3 "$logfile")"
    sleep 0.1
  done
  until started_all; do
    if ! controller_pid >/dev/null; then
      rm -f "$pidfile"
      die "the controller exited: $(tail -n 3 "$logfile")"
    fi
    if [ $((SECONDS - t0)) -ge "$timeout" ]; then
      die "the controller's ${controllers[*]} did not all start their workers in ${timeout}s (see $logfile)"
    fi
    sleep 0.5
  done
  log "ready in $((SECONDS - t0))s: pid $(cat "$pidfile"), $("$bin/agent-sandbox-controller" --version 2>/dev/null |
    sed -n 's/^agent-sandbox-controller, version \([^ ]*\).*/\1/p')"
}

status() {
  local pid k
  pid=$(controller_pid) || { echo "the controller does not run for $dir"; return 1; }
  for k in "${kinds[@]}"; do
    kctl get crd "$k" >/dev/null 2>&1 || { echo "CRD $k missing"; return 1; }
  done
  started_all || { echo "the controller (pid $pid) has not started all its workers"; return 1; }
  echo "agent-sandbox runs for $dir (pid $pid)"
}

# uninstall: the objects first, while the controller still runs (the pods,
# Services and PVCs it made are owned by their Sandbox and go with it), then
# the controller, its identity, then the CRDs. Each step runs even if an earlier one failed;
# the exit status says whether all did.
uninstall() {
  local rc=0 pid k i
  if kctl get crd "${kinds[@]}" >/dev/null 2>&1; then
    for k in "${kinds[@]}"; do
      kctl delete "$k" --all -A --wait=true --timeout "${timeout}s" >/dev/null 2>&1 || rc=1
    done
  fi
  if pid=$(controller_pid); then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
      controller_pid >/dev/null || break
      sleep 0.1
    done
    if controller_pid >/dev/null; then
      log "the controller (pid $pid) did not stop in 10s: killing it"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
    fi
    controller_pid >/dev/null && { log "the controller (pid $pid) still runs"; rc=1; }
  fi
  rm -f "$pidfile" "$ctlconfig"
  kctl delete clusterrolebinding "${roles[@]}" --ignore-not-found >/dev/null || rc=1
  kctl delete clusterrole "${roles[@]}" --ignore-not-found >/dev/null || rc=1
  kctl delete namespace "$sa_ns" --ignore-not-found --wait=true --timeout "${timeout}s" >/dev/null || rc=1
  kctl delete crd "${kinds[@]}" --ignore-not-found --wait=true --timeout "${timeout}s" >/dev/null || rc=1
  [ "$rc" = 0 ] || die "uninstall did not finish cleanly"
  log "uninstalled from $dir"
}

[ $# = 2 ] || usage
setup "$2"
case "$1" in
  install) install ;;
  status) status ;;
  uninstall) uninstall ;;
  *) usage ;;
esac
