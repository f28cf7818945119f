#!/usr/bin/env bash
# A real one-node Kubernetes cluster on this machine: etcd + kube-apiserver
# (scripts/control-plane.sh), kube-controller-manager, kube-scheduler,
# containerd (runc, and gVisor's runsc as RuntimeClass "gvisor"), CNI bridge
# networking and a kubelet, all inside a network + mount namespace of their
# own. Nothing routes off the machine. See docs/node.md.
#
#   scripts/node.sh start  DIR [ARCHIVE...]  start it, load the OCI archives, wait until Ready
#   scripts/node.sh stop   DIR               stop everything and clean up (idempotent)
#   scripts/node.sh status DIR               exit 0 only if every part runs and the node is Ready
#   scripts/node.sh load   DIR ARCHIVE...    import OCI image archives into the node's containerd
#   scripts/node.sh exec   DIR CMD...        run CMD inside the node's namespaces (debugging)
#
# From the host: KUBECONFIG=DIR/kubeconfig kubectl ... (exec included), or
# `source DIR/env`. The API server listens on 198.18.N.2:6443 (N = 0 for the
# first node on the machine), reached over a veth pair from the host's
# 198.18.N.1.
# Binaries: $HANGAR_K8S_BIN (else scripts/k8s-tools.sh), $HANGAR_NODE_BIN (else
# scripts/node-tools.sh), $HANGAR_RUNSC_CURRENT (else tests/pods/build-runsc.sh);
# runc and the CNI plugins from Debian (scripts/install-deps.sh).
# Tunables: HANGAR_NODE_START_TIMEOUT (s, default 300), HANGAR_NODE_STOP_TIMEOUT
# (s, default 20), HANGAR_NODE_VERBOSITY (kubelet/containerd log level, default 2).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$script_dir/.." && pwd)
start_timeout=${HANGAR_NODE_START_TIMEOUT:-300}
stop_timeout=${HANGAR_NODE_STOP_TIMEOUT:-20}
verbosity=${HANGAR_NODE_VERBOSITY:-2}

# ---- fixed facts of the node (docs/node.md lists them) ----------------------
NODE_NAME=hangar-node
NET_PREFIX=198.18          # RFC 2544 benchmarking range: 198.18.N.0/30 per node
API_PORT=6443
SERVICE_CIDR=10.0.0.0/24   # as scripts/control-plane.sh
KUBERNETES_SVC_IP=10.0.0.1
POD_CIDR=10.244.0.0/24     # on bridge cni0 inside the node's network namespace
POD_GATEWAY=10.244.0.1
PAUSE_IMAGE=registry.k8s.io/pause:3.10.2   # containerd v2.4.2's sandbox image
# Paths the kubelet, containerd and the CNI plugins use whatever the
# configuration says: each gets a tmpfs inside the node's mount namespace.
HIDDEN_PATHS=(/run/containerd /var/lib/kubelet /var/log/pods /var/log/containers /var/lib/cni)
MOUNT_POINT_MARK=.hangar-node-mount-point

log() { echo "node: $*" >&2; }
die() { echo "node: error: $*" >&2; exit 1; }

usage() {
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---- state of one node, all under DIR ----------------------------------------
# DIR/node/      state: pids, namespace ids, configs, pki, containerd's root
# DIR/*.log      logs (kept by stop)
set_paths() {
  dir=$1
  st="$dir/node"
  node_id=$(printf '%s' "$dir" | sha256sum | cut -c1-8)
  cgroup_name="hangar-node-$node_id"
  veth_host="hgn-$node_id"
}

# Each process the node starts is recorded in DIR/node/NAME.pid as "PID
# START" (its start time, field 22 of /proc/PID/stat) by hangar-procctl
# (scripts/procctl.sh), which later checks, waits for and signals it through
# a pidfd: a pid now another process's is never taken for ours or signalled.
procctl() {
  [ -n "${procctl_bin:-}" ] || procctl_bin=$("$script_dir/procctl.sh") || die "no hangar-procctl (scripts/procctl.sh)"
  "$procctl_bin" "$@"
}

# is_ours NAME: the process recorded for NAME still runs.
is_ours() { [ -f "$st/$1.pid" ] && procctl alive @"$st/$1.pid"; }

# read_pid NAME: the pid recorded for NAME (for nsenter and messages).
read_pid() { if [ -f "$st/$1.pid" ]; then cut -d' ' -f1 "$st/$1.pid"; fi; }

holder_pid() {
  is_ours holder || return 1
  read_pid holder
}

# in_node CMD...: run CMD in the node's network and mount namespaces.
in_node() {
  local h
  h=$(holder_pid) || die "the node in $dir is not running"
  nsenter -t "$h" --net --mount -- "$@"
}

log_tail() {
  [ -f "$1" ] || return 0
  echo "----- last 40 lines of $1 -----" >&2
  tail -n 40 "$1" >&2 || true
  echo "-----" >&2
}

# render TEMPLATE OUT [NAME=VALUE...]: scripts/node/TEMPLATE with each
# ${NAME} of the node's facts (and of the pairs given) replaced, written to
# OUT. Only those names are replaced (envsubst with a list), and a template
# that names one not given is refused rather than written with a hole.
render() {
  local name=$1 tpl=$script_dir/node/$1 out=$2 names n
  shift 2
  local -a vars=(
    NODE_DIR="$dir" STATE_DIR="$st" NODE_IP="${node_ip:-}" API_PORT="$API_PORT"
    POD_CIDR="$POD_CIDR" POD_GATEWAY="$POD_GATEWAY" SERVICE_CIDR="$SERVICE_CIDR"
    KUBERNETES_SVC_IP="$KUBERNETES_SVC_IP" PAUSE_IMAGE="$PAUSE_IMAGE" CGROUP_NAME="$cgroup_name"
    RUNSC_BIN="${runsc_bin:-}" RUNC_BIN="${runc_bin:-}" "$@")
  [ -f "$tpl" ] || die "template $tpl missing"
  local -a given=("${vars[@]%%=*}")
  names=" ${given[*]} "
  # shellcheck disable=SC2016 # ${NAME} is the templates' syntax (envsubst's), not the shell's
  for n in $(grep -o '\${[A-Za-z_][A-Za-z_0-9]*}' "$tpl" | tr -d '${}' | sort -u); do
    [[ $names == *" $n "* ]] || die "template $name names \${$n}, which the node does not give"
  done
  # shellcheck disable=SC2016 # the list of names envsubst replaces, in its syntax
  env "${vars[@]}" envsubst "$(printf '${%s} ' "${given[@]}")" <"$tpl" >"$out" || die "could not write $out"
}

# launch NAME CMD...: start CMD detached in the node's namespaces, output to
# DIR/NAME.log, recorded in DIR/node/NAME.pid. nsenter execs CMD itself, so
# the record is CMD's.
launch() {
  local name=$1 h
  shift
  h=$(holder_pid) || die "the node's namespaces are gone"
  echo "# $(date -u +%FT%TZ) $*" >>"$dir/$name.log"
  procctl start --out "$dir/$name.log" --err "$dir/$name.log" --record "$st/$name.pid" -- \
    nsenter -t "$h" --net --mount -- "$@" >/dev/null || die "could not start $name"
}

# wait_for DESC PIDNAME CMD...: poll CMD until it succeeds; fail if the
# process PIDNAME dies or the start timeout passes.
wait_for() {
  local desc=$1 name=$2
  shift 2
  while ! "$@" >/dev/null 2>&1; do
    if [ -n "$name" ] && ! is_ours "$name"; then
      log_tail "$dir/$name.log"
      die "$desc: $name exited (log: $dir/$name.log)"
    fi
    if ((SECONDS >= deadline)); then
      [ -z "$name" ] || log_tail "$dir/$name.log"
      die "$desc: not ready after ${start_timeout}s"
    fi
    sleep 0.5
  done
}

# stop_procs NAME...: TERM them all, wait up to $stop_timeout s, then KILL
# (hangar-procctl stop, each the very process recorded).
stop_procs() {
  local name recs=()
  for name in "$@"; do
    is_ours "$name" || continue
    log "stopping $name (pid $(read_pid "$name"))"
    recs+=(@"$st/$name.pid")
  done
  [ ${#recs[@]} -gt 0 ] || return 0
  procctl stop --grace "$stop_timeout" "${recs[@]}" 2>&1 | sed 's/^/node: /' >&2 || true
}

# ---- binaries -----------------------------------------------------------------

find_bins() {
  if [ -n "${HANGAR_K8S_BIN:-}" ]; then k8s_bin=$HANGAR_K8S_BIN
  else k8s_bin=$("$script_dir/k8s-tools.sh" | tail -n 1); fi
  if [ -n "${HANGAR_NODE_BIN:-}" ]; then node_bin=$HANGAR_NODE_BIN
  else node_bin=$("$script_dir/node-tools.sh" | tail -n 1); fi
  if [ -n "${HANGAR_RUNSC_CURRENT:-}" ]; then runsc_bin=$HANGAR_RUNSC_CURRENT
  else runsc_bin=$("$repo_dir/tests/pods/build-runsc.sh" | tail -n 1); fi
  local b
  for b in etcd kube-apiserver kubectl; do
    [ -x "$k8s_bin/$b" ] || die "$k8s_bin/$b missing (HANGAR_K8S_BIN or scripts/k8s-tools.sh)"
  done
  for b in kubelet kube-scheduler kube-controller-manager containerd ctr \
           containerd-shim-runc-v2 containerd-shim-runsc-v1; do
    [ -x "$node_bin/$b" ] || die "$node_bin/$b missing (HANGAR_NODE_BIN or scripts/node-tools.sh)"
  done
  [ -x "$runsc_bin" ] || die "runsc not found at $runsc_bin (HANGAR_RUNSC_CURRENT or tests/pods/build-runsc.sh)"
  runc_bin=$(command -v runc) || die "runc not found (scripts/install-deps.sh)"
  for b in bridge host-local loopback; do
    [ -x "/usr/lib/cni/$b" ] || die "/usr/lib/cni/$b missing (containernetworking-plugins, scripts/install-deps.sh)"
  done
}

check_host() {
  [ "$(id -u)" = 0 ] || die "must run as root (namespaces, cgroups, network devices)"
  local c
  for c in unshare nsenter ip nft openssl curl sha256sum envsubst; do
    command -v "$c" >/dev/null 2>&1 || die "$c not found (scripts/install-deps.sh)"
  done
  [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] \
    || die "no cgroup hierarchy under /sys/fs/cgroup"
}

# ---- namespaces, mounts, network ---------------------------------------------

start_namespaces() {
  # The holder keeps the namespaces alive; everything else joins them. Its
  # argv[0] names DIR, for a reader of ps.
  # shellcheck disable=SC2016 # $1 is expanded by the inner bash
  procctl start --record "$st/holder.pid" -- unshare --net --mount --propagation slave -- \
    bash -c 'exec -a "hangar-node-ns $1/" sleep infinity' _ "$dir" >/dev/null ||
    die "could not start the namespaces' holder"
  local h self_net i
  h=$(read_pid holder)
  self_net=$(readlink /proc/self/ns/net)
  for ((i = 0; i < 100; i++)); do
    if is_ours holder && [ "$(readlink "/proc/$h/ns/net" 2>/dev/null)" != "$self_net" ]; then break; fi
    sleep 0.05
  done
  is_ours holder || die "could not create the node's namespaces"
  readlink "/proc/$h/ns/net" >"$st/netns"
  readlink "/proc/$h/ns/mnt" >"$st/mntns"

  # tmpfs over the paths the components use regardless of their configuration.
  # A path missing on the host needs a mount point: it is created with a
  # marker file in it (hidden by the tmpfs), and recorded first, so a stop
  # removes it even after a failed start (see remove_mount_points).
  local p
  : >"$st/created-dirs"
  for p in "${HIDDEN_PATHS[@]}"; do
    if [ ! -e "$p" ]; then
      # record every level that does not exist yet, deepest last
      local q=$p stack=()
      while [ ! -e "$q" ]; do stack=("$q" "${stack[@]}"); q=$(dirname "$q"); done
      printf '%s\n' "${stack[@]}" >>"$st/created-dirs"
      mkdir -p "$p"
      : >"$p/$MOUNT_POINT_MARK"
    fi
    nsenter -t "$h" --mount -- mount -t tmpfs -o mode=0755,nosuid,nodev "hangar-node" "$p"
  done
}

# 198.18.N.0/30 for the first N whose host address is free.
pick_net() {
  local n used
  used=$(ip -4 -o addr show 2>/dev/null || true)
  for ((n = 0; n < 256; n++)); do
    if ! grep -qF " $NET_PREFIX.$n.1/" <<<"$used"; then
      echo "$n"
      return 0
    fi
  done
  die "no free $NET_PREFIX.N.0/30 for the node's link"
}

start_network() {
  local h n
  h=$(holder_pid)
  n=$(pick_net)
  echo "$n" >"$st/net-index"
  host_ip="$NET_PREFIX.$n.1"
  node_ip="$NET_PREFIX.$n.2"
  echo "$node_ip" >"$st/node-ip"
  # The link: hgn-ID on the host, eth0 in the node. No IPv6 on either end.
  ip link add "$veth_host" type veth peer name eth0 netns "$h"
  sysctl -qw "net.ipv6.conf.$veth_host.disable_ipv6=1" 2>/dev/null || true
  ip addr add "$host_ip/30" dev "$veth_host"
  ip link set "$veth_host" up
  nsenter -t "$h" --net -- sh -ec "
    sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 2>/dev/null || true
    ip link set lo up
    ip addr add $node_ip/30 dev eth0
    ip link set eth0 up"
  # No default route in the node; its only rules (scripts/node/nftables.nft):
  # the kubernetes Service's ClusterIP goes to the API server (there is no
  # kube-proxy), and nothing is forwarded but pod to pod.
  render nftables.nft "$st/nftables.nft"
  nsenter -t "$h" --net -- nft -f "$st/nftables.nft"
}

# ---- certificates and configuration -------------------------------------------

# node_cert NAME CA SUBJECT EXT: a key pair signed by CA (pki/CA.{crt,key}).
node_cert() {
  local name=$1 ca=$2 subj=$3 ext=$4 p="$st/pki" cp="$dir/pki"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$p/$name.key" -out "$p/$name.csr" -subj "$subj" 2>>"$p/openssl.log"
  printf '%b\n' "$ext" >"$p/$name.ext"
  openssl x509 -req -in "$p/$name.csr" -CA "$cp/$ca.crt" -CAkey "$cp/$ca.key" -CAcreateserial \
    -CAserial "$p/$ca.srl" -days 365 -extfile "$p/$name.ext" -out "$p/$name.crt" 2>>"$p/openssl.log"
  rm -f "$p/$name.csr" "$p/$name.ext"
  chmod 600 "$p/$name.key"
}

# kubeconfig NAME: DIR/node/NAME.kubeconfig with pki/NAME's client cert.
kubeconfig() {
  (umask 077; render component.kubeconfig "$st/$1.kubeconfig" COMPONENT="$1")
}

node_pki() {
  mkdir -p "$st/pki"
  chmod 700 "$st/pki"
  local client="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth"
  node_cert kubelet-serving ca "/CN=$NODE_NAME" \
    "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:$NODE_NAME,IP:$node_ip"
  node_cert kubelet client-ca "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
  node_cert kube-controller-manager client-ca "/CN=system:kube-controller-manager" "$client"
  node_cert kube-scheduler client-ca "/CN=system:kube-scheduler" "$client"
  local n
  for n in kubelet kube-controller-manager kube-scheduler; do kubeconfig "$n"; done
}

# The configurations, from the templates in scripts/node/ (docs/node.md).
write_configs() {
  mkdir -p "$st/cni" "$st/containerd"
  render 10-hangar.conflist "$st/cni/10-hangar.conflist"
  # runsc as containerd's gVisor shim runs it (the shim reads this file).
  render runsc.toml "$st/runsc.toml"
  render containerd.toml "$st/containerd.toml"
  render kubelet.yaml "$st/kubelet.yaml"
}

# ---- cgroups ---------------------------------------------------------------------

# Every hierarchy dir under /sys/fs/cgroup (v1 controllers, named ones, the
# v2 one at unified/, or a pure v2 mount itself).
cgroup_hierarchies() {
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo /sys/fs/cgroup; return; fi
  local d
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    [ -L "$d" ] && continue   # cpu,cpuacct style symlinks
    { [ -f "$d/cgroup.procs" ] || [ -f "$d/tasks" ]; } && echo "$d"
  done
}

make_cgroups() {
  local h
  while read -r h; do
    mkdir -p "$h/$cgroup_name"
    if [ -f "$h/cpuset.cpus" ]; then
      cat "$h/cpuset.cpus" >"$h/$cgroup_name/cpuset.cpus"
      cat "$h/cpuset.mems" >"$h/$cgroup_name/cpuset.mems"
    fi
  done < <(cgroup_hierarchies)  # lint:substitution reads /proc/self/mountinfo or our own file
}

# ---- start ---------------------------------------------------------------------

started_ok=0
on_start_exit() {
  local rc=$?
  [ "$started_ok" = 1 ] && return 0
  trap - EXIT
  log "start failed (exit $rc): stopping what was started"
  cmd_stop >&2 || true
  exit "$rc"
}

kctl() { "$k8s_bin/kubectl" --kubeconfig "$dir/kubeconfig" --request-timeout 10s "$@"; }

node_ready() {
  [ "$(kctl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

cmd_start() {
  local archives=("$@")
  check_host
  if holder_pid >/dev/null; then die "a node is already running in $dir (stop it first)"; fi
  if [ -d "$st" ]; then
    log "cleaning up what a previous run left in $dir"
    cmd_stop >&2
  fi
  find_bins
  local a
  for a in ${archives[@]+"${archives[@]}"}; do [ -r "$a" ] || die "cannot read image archive $a"; done
  mkdir -p "$st"
  local f
  for f in containerd kubelet kube-controller-manager kube-scheduler node-start; do : >"$dir/$f.log"; done
  deadline=$((SECONDS + start_timeout))
  trap on_start_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  log "namespaces, mounts and the link"
  # What stop may kill in the node's network namespace (see node_procs).
  printf '%s\n' "$node_bin" "$k8s_bin" "$runsc_bin" "$runc_bin" >"$st/bins"
  start_namespaces
  start_network
  log "node $NODE_NAME at $node_ip (host side $host_ip, link $veth_host)"

  log "etcd + kube-apiserver (scripts/control-plane.sh)"
  in_node env HANGAR_K8S_BIN="$k8s_bin" HANGAR_CP_START_TIMEOUT="$start_timeout" \
    "$script_dir/control-plane.sh" start "$dir" --address "$node_ip" --port "$API_PORT" \
    --service-accounts --kubelets --apiserver-arg --enable-aggregator-routing=true \
    >>"$dir/node-start.log" 2>&1 || { log_tail "$dir/node-start.log"; die "control plane did not start"; }

  node_pki
  write_configs

  log "containerd"
  launch containerd env PATH="$node_bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "$node_bin/containerd" --config "$st/containerd.toml" --log-level "$([ "$verbosity" -ge 4 ] && echo debug || echo info)"
  wait_for "containerd" containerd in_node "$node_bin/ctr" --address /run/containerd/containerd.sock version
  if [ "${#archives[@]}" -gt 0 ]; then cmd_load "${archives[@]}"; fi

  log "kube-controller-manager, kube-scheduler"
  launch kube-controller-manager "$node_bin/kube-controller-manager" \
    --kubeconfig "$st/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig "$st/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig "$st/kube-controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 \
    --leader-elect=false \
    --use-service-account-credentials=true \
    --service-account-private-key-file "$dir/pki/sa.key" \
    --root-ca-file "$dir/pki/ca.crt" \
    --service-cluster-ip-range "$SERVICE_CIDR" \
    --controllers '*' \
    --v "$verbosity"
  launch kube-scheduler "$node_bin/kube-scheduler" \
    --kubeconfig "$st/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig "$st/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig "$st/kube-scheduler.kubeconfig" \
    --bind-address 127.0.0.1 \
    --leader-elect=false \
    --v "$verbosity"

  log "kubelet"
  make_cgroups
  launch kubelet "$node_bin/kubelet" \
    --config "$st/kubelet.yaml" \
    --kubeconfig "$st/kubelet.kubeconfig" \
    --hostname-override "$NODE_NAME" \
    --node-ip "$node_ip" \
    --v "$verbosity"

  wait_for "node $NODE_NAME Ready" kubelet node_ready
  wait_for "ServiceAccount default/default" kube-controller-manager kctl get serviceaccount default
  wait_for "ConfigMap default/kube-root-ca.crt" kube-controller-manager kctl get configmap kube-root-ca.crt
  kctl apply -f "$script_dir/node/runtimeclass.yaml" >>"$dir/node-start.log" 2>&1 ||
    die "could not create RuntimeClass gvisor"
  {
    printf 'export HANGAR_NODE_DIR=%q\n' "$dir"
    printf 'export HANGAR_NODE_NAME=%q\n' "$NODE_NAME"
    printf 'export HANGAR_NODE_IP=%q\n' "$node_ip"
    printf 'export HANGAR_NODE_BIN=%q\n' "$node_bin"
    printf 'export HANGAR_RUNSC_CURRENT=%q\n' "$runsc_bin"
  } >>"$dir/env"
  started_ok=1
  trap - EXIT INT TERM
  log "node $NODE_NAME Ready in $((start_timeout - (deadline - SECONDS)))s; from this shell:"
  log "  export KUBECONFIG=$dir/kubeconfig   (or: source $dir/env)"
  log "  scripts/node.sh load $dir IMAGE.tar ...;  scripts/node.sh stop $dir"
}

# ---- load / exec ---------------------------------------------------------------

cmd_load() {
  [ $# -gt 0 ] || usage
  local a abs
  [ -n "${node_bin:-}" ] || node_bin=$(sed -n 's/^export HANGAR_NODE_BIN=//p' "$dir/env" 2>/dev/null || true)
  [ -n "$node_bin" ] || node_bin=$("$script_dir/node-tools.sh" --print-bin-dir)
  for a in "$@"; do
    abs=$(cd "$(dirname "$a")" && pwd -P)/$(basename "$a")
    [ -r "$abs" ] || die "cannot read image archive $a"
    log "importing $a"
    in_node "$node_bin/ctr" --address /run/containerd/containerd.sock -n k8s.io \
      images import "$abs" >&2 || die "ctr images import $a failed"
  done
}

cmd_exec() {
  [ $# -gt 0 ] || usage
  local nb
  nb=$(sed -n 's/^export HANGAR_NODE_BIN=//p' "$dir/env" 2>/dev/null || true)
  in_node env PATH="${nb:+$nb:}/usr/sbin:/usr/bin:/sbin:/bin" "$@"
}

# ---- stop ------------------------------------------------------------------------

# The mount points a node created on the host (they hold the marker and
# nothing else), unless another node still mounts something there: removing
# a directory that is a mount point in another mount namespace detaches that
# mount, which would break the other node. The last node to stop removes them,
# whichever created them. Then the parent levels this node created, if empty.
remove_mount_points() {
  local p d
  for p in "${HIDDEN_PATHS[@]}"; do
    [ -f "$p/$MOUNT_POINT_MARK" ] || continue
    [ "$(ls -A "$p")" = "$MOUNT_POINT_MARK" ] || { log "warning: $p has more than the marker: left in place"; continue; }
    if grep -qsF " $p " /proc/[0-9]*/mountinfo; then
      log "$p is a mount point of another node: left for the last one to stop"
      continue
    fi
    rm -f "$p/$MOUNT_POINT_MARK"
    rmdir "$p" 2>/dev/null || log "warning: could not remove $p"
  done
  if [ -f "$st/created-dirs" ]; then
    while read -r d; do
      if [ -z "$d" ] || [ ! -d "$d" ]; then continue; fi
      case " ${HIDDEN_PATHS[*]} " in *" $d "*) continue ;; esac
      rmdir "$d" 2>/dev/null || true
    done < <(tac "$st/created-dirs")  # lint:substitution reads /proc/self/mountinfo or our own file
  fi
}

# Records of this node's processes ("PID START" a line): the ones in its
# network namespace and either in its mount namespace or running one of the
# node's binaries (containerd's shims make mount namespaces of their own and
# are reparented to init), the ones in a cgroup under its cgroupRoot, the ones
# recorded at start (here and by control-plane.sh), and every descendant of
# those (shims, runsc's sandbox and gofer, containers). Never this script or
# its ancestors. hangar-procctl reads each process through a pidfd, so what
# it matched is the process the record names.
node_procs() {
  local netns=$1 mntns=$2 n args=(--cgroup "$cgroup_name" --descendants)
  if [ -n "$netns" ]; then
    args+=(--netns "$netns")
    [ -z "$mntns" ] || args+=(--mntns "$mntns")
    if [ -f "$st/bins" ]; then
      while read -r n; do [ -z "$n" ] || args+=(--exe "$n"); done <"$st/bins"
    fi
  fi
  for n in holder containerd kubelet kube-controller-manager kube-scheduler; do
    args+=(--seed @"$st/$n.pid")
  done
  for n in etcd kube-apiserver; do args+=(--seed @"$dir/$n.pid"); done
  procctl find "${args[@]}"
}

cmd_stop() {
  local netns="" mntns="" found="" all="" i n p
  [ -f "$st/netns" ] && netns=$(cat "$st/netns")
  [ -f "$st/mntns" ] && mntns=$(cat "$st/mntns")
  # Graceful first: the kubelet (so it restarts nothing), the controllers,
  # containerd, then the control plane.
  stop_procs kubelet kube-scheduler kube-controller-manager
  stop_procs containerd
  if [ -f "$dir/kube-apiserver.pid" ] || [ -f "$dir/etcd.pid" ]; then
    "$script_dir/control-plane.sh" stop "$dir" >>"$dir/node-stop.log" 2>&1 || true
  fi
  # Then everything else of the node: shims, sandboxes, containers, the holder.
  # SIGKILL at once (hangar-procctl stop --no-term --grace 0), then look
  # again: a shim or container may have started meanwhile.
  for ((i = 0; i < 50; i++)); do
    found=$(node_procs "$netns" "$mntns") || { log "warning: could not list the node's processes"; found=""; }
    [ -n "$found" ] || break
    [ "$i" -gt 0 ] || log "killing the node's remaining processes: $(cut -d' ' -f1 <<<"$found" | tr '\n' ' ')"
    all+=" $(cut -d' ' -f1 <<<"$found" | tr '\n' ' ')"
    procctl stop --no-term --grace 0 --kill-wait 2 @- <<<"$found" 2>/dev/null || true
  done
  [ -z "$found" ] || log "warning: processes still alive: $(cut -d' ' -f1 <<<"$found" | tr '\n' ' ')"
  # Let init reap them, so no zombie of ours is left and the cgroups empty
  # (only a look at /proc: a pid taken by another process meanwhile makes
  # this wait end later, never a signal).
  for ((i = 0; i < 50; i++)); do
    n=0
    for p in $all; do [ ! -e "/proc/$p" ] || n=1; done
    [ "$n" = 0 ] && break
    sleep 0.1
  done

  # Cgroups: depth first, retried while the last tasks leave.
  local hier left
  for ((i = 0; i < 50; i++)); do
    left=0
    while read -r hier; do
      [ -d "$hier/$cgroup_name" ] || continue
      find "$hier/$cgroup_name" -depth -type d -exec rmdir {} + 2>/dev/null || true
      [ ! -d "$hier/$cgroup_name" ] || left=1
    done < <(cgroup_hierarchies)  # lint:substitution reads /proc/self/mountinfo or our own file
    [ "$left" = 0 ] && break
    sleep 0.1
  done
  [ "$left" = 0 ] || log "warning: cgroup $cgroup_name could not be removed everywhere"

  # The link would go with the node's network namespace, but the kernel frees
  # that seconds after its last process: delete it now.
  if ip link show "$veth_host" >/dev/null 2>&1; then
    ip link del "$veth_host" 2>/dev/null || log "warning: could not delete link $veth_host"
  fi

  remove_mount_points
  rm -rf "$st"
  rm -f "$dir/env"
  log "stopped; logs kept in $dir/*.log"
}

# ---- status ---------------------------------------------------------------------

cmd_status() {
  local rc=0 n
  if ! holder_pid >/dev/null; then echo "namespaces: gone"; rc=1; else echo "namespaces: held by pid $(holder_pid)"; fi
  for n in containerd kubelet kube-controller-manager kube-scheduler; do
    if is_ours "$n"; then echo "$n: running (pid $(read_pid "$n"))"; else echo "$n: stopped"; rc=1; fi
  done
  "$script_dir/control-plane.sh" status "$dir" || rc=1
  if [ "$rc" = 0 ]; then
    k8s_bin=$(sed -n 's/^export HANGAR_K8S_BIN=//p' "$dir/env")
    if node_ready; then echo "node $NODE_NAME: Ready ($(cat "$st/node-ip"))"; else echo "node $NODE_NAME: not Ready"; rc=1; fi
  fi
  return "$rc"
}

# ---- main ------------------------------------------------------------------------

[ $# -ge 2 ] || usage
cmd=$1 arg=$2
shift 2
case "$cmd" in
  start) mkdir -p "$arg" || die "cannot create $arg" ;;
  stop | status | load | exec) ;;
  *) usage ;;
esac
if [ ! -d "$arg" ]; then
  case "$cmd" in
    stop) log "$arg does not exist: nothing to stop"; exit 0 ;;
    status) echo "namespaces: gone"; exit 1 ;;
    *) die "$arg does not exist" ;;
  esac
fi
set_paths "$(cd "$arg" && pwd -P)"
case "$cmd" in
  start) cmd_start "$@" ;;
  stop) [ $# -eq 0 ] || usage; cmd_stop ;;
  status) [ $# -eq 0 ] || usage; cmd_status ;;
  load) cmd_load "$@" ;;
  exec) cmd_exec "$@" ;;
esac
