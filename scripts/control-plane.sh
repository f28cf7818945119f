#!/usr/bin/env bash
# Runs a real Kubernetes control plane (etcd + kube-apiserver, no kubelet) on
# loopback for tests. See docs/control-plane.md.
#
#   scripts/control-plane.sh start  DIR [OPTION...]   start etcd + kube-apiserver, wait until ready
#   scripts/control-plane.sh stop   DIR   stop both (TERM, then KILL), remove temp data
#   scripts/control-plane.sh status DIR   show state; exit 0 only if both run and /readyz is ok
#
# start writes into DIR (created if missing):
#   kubeconfig        admin kubeconfig (client cert with O=system:masters)
#   env               shell-sourceable: KUBECONFIG, HANGAR_APISERVER_URL, pids, ...
#   pki/              CA, serving cert (SANs localhost/127.0.0.1), client CA, admin cert, SA keys
#   etcd.log, kube-apiserver.log
# Binaries: $HANGAR_K8S_BIN if set, else built/cached by scripts/k8s-tools.sh.
# Tunables: HANGAR_CP_START_TIMEOUT (s, default 120), HANGAR_CP_STOP_TIMEOUT (s, default 20).
# start's options (for a cluster with nodes, as scripts/node.sh runs it; without
# any, the API server is the test-only one above: loopback, no ServiceAccount
# admission, RBAC only):
#   --address IP        serve (bind and advertise) on IP instead of 127.0.0.1; IP joins
#                       the serving cert's SANs and the kubeconfig; a non-loopback IP
#                       keeps the lease endpoint reconciler (the kubernetes Service
#                       gets IP as its endpoint)
#   --port N            secure port N instead of a random free one
#   --service-accounts  keep the ServiceAccount admission plugin on (a
#                       kube-controller-manager must create the default accounts)
#   --kubelets          for nodes: Node,RBAC authorization, NodeRestriction, a kubelet
#                       client cert (pki/apiserver-kubelet-client.*, O=system:masters),
#                       kubelet serving certs checked against pki/ca.crt, InternalIP first
#   --apiserver-arg ARG one more kube-apiserver flag (repeatable)
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
start_timeout=${HANGAR_CP_START_TIMEOUT:-120}
stop_timeout=${HANGAR_CP_STOP_TIMEOUT:-20}

log() { echo "control-plane: $*" >&2; }
die() { echo "control-plane: error: $*" >&2; exit 1; }

usage() {
  sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# ---- process helpers ---------------------------------------------------------

# Each process is recorded in DIR/NAME.pid as "PID START" (its start time,
# field 22 of /proc/PID/stat) by hangar-procctl (scripts/procctl.sh), which
# later checks, waits for and signals it through a pidfd: a pid now another
# process's is never taken for ours or signalled.
procctl() {
  [ -n "${procctl_bin:-}" ] || procctl_bin=$("$script_dir/procctl.sh") || die "no hangar-procctl (scripts/procctl.sh)"
  "$procctl_bin" "$@"
}
proc_state() {
  sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1 || true
}
# is_ours NAME: the process recorded for NAME still runs.
is_ours() { [ -f "$dir/$1.pid" ] && procctl alive @"$dir/$1.pid"; }
# pid_of NAME: the pid recorded for NAME (for messages and DIR/env).
pid_of() { if [ -f "$dir/$1.pid" ]; then cut -d' ' -f1 "$dir/$1.pid"; fi; }

# stop_pid NAME: TERM, wait up to $stop_timeout s, then KILL.
stop_pid() {
  local name=$1 pid i
  is_ours "$name" || return 0
  pid=$(pid_of "$name")
  log "stopping $name (pid $pid)"
  procctl stop --grace "$stop_timeout" @"$dir/$name.pid" 2>&1 | sed 's/^/control-plane: /' >&2 || true
  ! is_ours "$name" || die "$name (pid $pid) did not exit"
  # Give its reaper (init) a moment, so pgrep sees no zombie after stop
  # (a look at /proc only: a reused pid makes this wait end later, no more).
  for ((i = 0; i < 50; i++)); do
    [ "$(proc_state "$pid")" = Z ] || break
    sleep 0.1
  done
}

log_tail() {
  local f=$1
  [ -f "$f" ] || return 0
  echo "----- last 40 lines of $f -----" >&2
  tail -n 40 "$f" >&2 || true
  echo "-----" >&2
}

# A TCP port on 127.0.0.1 that nothing listens on, below the Linux ephemeral
# range (32768+) so outgoing connections do not take it meanwhile.
pick_port() {
  local port i
  for ((i = 0; i < 200; i++)); do
    port=$((10000 + (RANDOM * 32768 + RANDOM) % 22000))
    case " ${used_ports:-} " in *" $port "*) continue ;; esac
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null \
       && { [ "$opt_address" = 127.0.0.1 ] || ! (exec 3<>"/dev/tcp/$opt_address/$port") 2>/dev/null; }; then
      used_ports="${used_ports:-} $port"
      echo "$port"
      return 0
    fi
  done
  die "no free port found"
}

# wait_until DESC NAME LOG CMD...: poll CMD until it succeeds; fail if the
# process NAME dies or $start_timeout passes.
wait_until() {
  local desc=$1 name=$2 logf=$3
  shift 3
  local deadline=$((SECONDS + start_timeout))
  while ! "$@" >/dev/null 2>&1; do
    if ! is_ours "$name"; then
      log_tail "$logf"
      die "$desc: $name exited (log: $logf)"
    fi
    if ((SECONDS >= deadline)); then
      log_tail "$logf"
      die "$desc: not ready after ${start_timeout}s (log: $logf)"
    fi
    sleep 0.25
  done
}

# ---- certificates ------------------------------------------------------------

gen_pki() {
  local p=$1
  mkdir -p "$p"
  chmod 700 "$p"
  local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  (
    cd "$p"
    # Serving CA and serving cert (the API server's TLS identity).
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=hangar-test-serving-ca" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req "${ec[@]}" -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver"
    local san="DNS:localhost,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.0.0.1"
    [ "$opt_address" = 127.0.0.1 ] || san+=",IP:$opt_address"
    cat >apiserver.ext <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$san
EOF
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial \
      -days 365 -extfile apiserver.ext -out apiserver.crt
    # Client CA and the admin client cert (O=system:masters: full access under RBAC).
    openssl req -x509 "${ec[@]}" -keyout client-ca.key -out client-ca.crt -days 3650 \
      -subj "/CN=hangar-test-client-ca" \
      -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign"
    openssl req "${ec[@]}" -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=hangar-admin"
    cat >admin.ext <<'EOF'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
EOF
    openssl x509 -req -in admin.csr -CA client-ca.crt -CAkey client-ca.key -CAcreateserial \
      -days 365 -extfile admin.ext -out admin.crt
    if [ "$opt_kubelets" = 1 ]; then
      # The API server's identity towards kubelets (exec, logs, port-forward).
      openssl req "${ec[@]}" -keyout apiserver-kubelet-client.key -out apiserver-kubelet-client.csr \
        -subj "/O=system:masters/CN=kube-apiserver-kubelet-client"
      openssl x509 -req -in apiserver-kubelet-client.csr -CA client-ca.crt -CAkey client-ca.key \
        -CAcreateserial -days 365 -extfile admin.ext -out apiserver-kubelet-client.crt
    fi
    # Service-account token signing key pair.
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
    openssl pkey -in sa.key -pubout -out sa.pub
    rm -f ./*.csr ./*.ext ./*.srl
    chmod 600 ./*.key
  ) >/dev/null 2>"$p/openssl.log" || { cat "$p/openssl.log" >&2; die "certificate generation failed"; }
}

write_kubeconfig() {
  local f=$1 url=$2 p=$3
  local b64=(base64 -w0)
  umask 077
  cat >"$f" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: hangar-test
  cluster:
    server: $url
    certificate-authority-data: $("${b64[@]}" "$p/ca.crt")
users:
- name: hangar-admin
  user:
    client-certificate-data: $("${b64[@]}" "$p/admin.crt")
    client-key-data: $("${b64[@]}" "$p/admin.key")
contexts:
- name: hangar-test
  context:
    cluster: hangar-test
    user: hangar-admin
    namespace: default
current-context: hangar-test
EOF
}

# ---- start / stop / status ---------------------------------------------------

etcd_pid="" apiserver_pid="" started_ok=0

on_start_exit() {
  local rc=$?
  [ "$started_ok" = 1 ] && return 0
  log "start failed (exit $rc): stopping what was started"
  stop_pid kube-apiserver || true
  stop_pid etcd || true
  rm -rf "$dir/etcd-data" "$dir/pki" "$dir/env" "$dir/kubeconfig" "$dir"/*.pid
  exit "$rc"
}

# launch NAME LOG CMD...: start CMD detached (no stdin, output to LOG),
# recorded in DIR/NAME.pid (the binary itself: no wrapper).
launch() {
  local name=$1 logf=$2
  shift 2
  echo "# $(date -u +%FT%TZ) $*" >>"$logf"
  procctl start --out "$logf" --err "$logf" --record "$dir/$name.pid" -- "$@" >/dev/null ||
    die "could not start $name"
}

port_conflict() { grep -qiE 'address already in use|bind: address' "$1" 2>/dev/null; }

cmd_start() {
  local bin etcd_port api_port attempt logf
  mkdir -p "$dir"
  if is_ours etcd || is_ours kube-apiserver; then
    die "a control plane is already running in $dir (stop it first)"
  fi
  etcd_pid="" apiserver_pid=""
  if [ -e "$dir/env" ] || [ -e "$dir/etcd-data" ]; then
    log "removing stale state of a previous run in $dir"
  fi
  rm -rf "$dir/etcd-data" "$dir/pki" "$dir/env" "$dir/kubeconfig" "$dir"/*.pid
  : >"$dir/etcd.log"
  : >"$dir/kube-apiserver.log"

  if [ -n "${HANGAR_K8S_BIN:-}" ]; then
    bin=$HANGAR_K8S_BIN
  else
    bin=$("$script_dir/k8s-tools.sh" | tail -n 1)
  fi
  local b
  for b in etcd kube-apiserver kubectl; do
    [ -x "$bin/$b" ] || die "$bin/$b missing (HANGAR_K8S_BIN or scripts/k8s-tools.sh)"
  done

  trap on_start_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM

  gen_pki "$dir/pki"
  local p="$dir/pki"

  # etcd (retry with new ports if one was taken between pick and bind).
  logf="$dir/etcd.log"
  for attempt in 1 2 3; do
    etcd_port=$(pick_port)
    launch etcd "$logf" "$bin/etcd" \
      --data-dir "$dir/etcd-data" \
      --listen-client-urls "http://127.0.0.1:$etcd_port" \
      --advertise-client-urls "http://127.0.0.1:$etcd_port" \
      --listen-peer-urls "http://127.0.0.1:0" \
      --unsafe-no-fsync
    etcd_pid=$(pid_of etcd)
    local deadline=$((SECONDS + start_timeout))
    while ! curl -fsS --max-time 2 "http://127.0.0.1:$etcd_port/health" 2>/dev/null | grep -q '"health":"true"'; do
      if ! is_ours etcd; then break; fi
      ((SECONDS < deadline)) || { log_tail "$logf"; die "etcd: not healthy after ${start_timeout}s (log: $logf)"; }
      sleep 0.2
    done
    is_ours etcd && break
    if port_conflict "$logf" && [ "$attempt" -lt 3 ]; then
      log "etcd: port $etcd_port taken, retrying"
      rm -rf "$dir/etcd-data"
      continue
    fi
    log_tail "$logf"
    die "etcd exited during startup (log: $logf)"
  done
  log "etcd ready on 127.0.0.1:$etcd_port (pid $etcd_pid)"

  # kube-apiserver: the fixed flags, then what the options add.
  local -a api_opts=()
  # v1.37's lease reconciler refuses a loopback advertise address (see docs/control-plane.md).
  case "$opt_address" in 127.*) api_opts+=(--endpoint-reconciler-type none) ;; esac
  if [ "$opt_kubelets" = 1 ]; then
    api_opts+=(--authorization-mode "Node,RBAC"
               --enable-admission-plugins NodeRestriction
               --kubelet-client-certificate "$p/apiserver-kubelet-client.crt"
               --kubelet-client-key "$p/apiserver-kubelet-client.key"
               --kubelet-certificate-authority "$p/ca.crt"
               --kubelet-preferred-address-types "InternalIP,Hostname")
  else
    api_opts+=(--authorization-mode RBAC)
  fi
  [ "$opt_service_accounts" = 1 ] || api_opts+=(--disable-admission-plugins ServiceAccount)
  api_opts+=(${opt_apiserver_args[@]+"${opt_apiserver_args[@]}"})
  logf="$dir/kube-apiserver.log"
  local url
  for attempt in 1 2 3; do
    if [ -n "$opt_port" ]; then api_port=$opt_port; else api_port=$(pick_port); fi
    url="https://$opt_address:$api_port"
    launch kube-apiserver "$logf" "$bin/kube-apiserver" \
      --etcd-servers "http://127.0.0.1:$etcd_port" \
      --cert-dir "$p" \
      --tls-cert-file "$p/apiserver.crt" \
      --tls-private-key-file "$p/apiserver.key" \
      --client-ca-file "$p/client-ca.crt" \
      --secure-port "$api_port" \
      --bind-address "$opt_address" \
      --advertise-address "$opt_address" \
      --service-cluster-ip-range 10.0.0.0/24 \
      --allow-privileged=true \
      --service-account-issuer https://kubernetes.default.svc.cluster.local \
      --service-account-key-file "$p/sa.pub" \
      --service-account-signing-key-file "$p/sa.key" \
      "${api_opts[@]}"
    apiserver_pid=$(pid_of kube-apiserver)
    # Give a bind failure a moment to show before polling readiness.
    sleep 1
    if ! is_ours kube-apiserver; then
      if port_conflict "$logf" && [ "$attempt" -lt 3 ] && [ -z "$opt_port" ]; then
        log "kube-apiserver: port $api_port taken, retrying"
        continue
      fi
      log_tail "$logf"
      die "kube-apiserver exited during startup (log: $logf)"
    fi
    break
  done

  write_kubeconfig "$dir/kubeconfig" "$url" "$p"
  local kc=("$bin/kubectl" --kubeconfig "$dir/kubeconfig" --request-timeout 5s)
  wait_until "kube-apiserver /readyz" kube-apiserver "$logf" \
    curl -fsS --max-time 5 --cacert "$p/ca.crt" --cert "$p/admin.crt" --key "$p/admin.key" "$url/readyz"
  wait_until "namespace default" kube-apiserver "$logf" "${kc[@]}" get namespace default

  {
    printf 'export HANGAR_CP_DIR=%q\n' "$dir"
    printf 'export KUBECONFIG=%q\n' "$dir/kubeconfig"
    printf 'export HANGAR_APISERVER_URL=%q\n' "$url"
    printf 'export HANGAR_APISERVER_CA=%q\n' "$p/ca.crt"
    printf 'export HANGAR_ETCD_URL=%q\n' "http://127.0.0.1:$etcd_port"
    printf 'export HANGAR_APISERVER_PID=%q\n' "$apiserver_pid"
    printf 'export HANGAR_ETCD_PID=%q\n' "$etcd_pid"
    printf 'export HANGAR_K8S_BIN=%q\n' "$bin"
  } >"$dir/env.tmp"
  mv "$dir/env.tmp" "$dir/env"
  started_ok=1
  trap - EXIT INT TERM
  log "kube-apiserver ready at $url (pid $apiserver_pid); source $dir/env"
}

cmd_stop() {
  # API server first, so it does not log etcd connection errors while exiting.
  stop_pid kube-apiserver
  stop_pid etcd
  rm -rf "$dir/etcd-data" "$dir/pki" "$dir/env" "$dir/kubeconfig" "$dir"/*.pid
  log "stopped; logs kept in $dir/*.log"
}

cmd_status() {
  local rc=0 url=""
  if is_ours etcd; then echo "etcd: running (pid $(pid_of etcd))"; else echo "etcd: stopped"; rc=1; fi
  if is_ours kube-apiserver; then
    echo "kube-apiserver: running (pid $(pid_of kube-apiserver))"
  else
    echo "kube-apiserver: stopped"; rc=1
  fi
  if [ "$rc" = 0 ] && [ -f "$dir/env" ]; then
    url=$(sed -n 's/^export HANGAR_APISERVER_URL=//p' "$dir/env")
    if curl -fsS --max-time 5 --cacert "$dir/pki/ca.crt" --cert "$dir/pki/admin.crt" \
         --key "$dir/pki/admin.key" "$url/readyz" >/dev/null 2>&1; then
      echo "readyz: ok ($url)"
      echo "kubeconfig: $dir/kubeconfig"
    else
      echo "readyz: failing ($url)"; rc=1
    fi
  elif [ "$rc" = 0 ]; then
    echo "env: missing (start still in progress or failed)"; rc=1
  fi
  return "$rc"
}

# start's options (see the header).
opt_address=127.0.0.1 opt_port="" opt_service_accounts=0 opt_kubelets=0
opt_apiserver_args=()
[ $# -ge 2 ] || usage
if [ "$1" = start ]; then
  cmd=$1 dir_arg=$2
  shift 2
  while [ $# -gt 0 ]; do
    case "$1" in
      --address) [ $# -ge 2 ] || usage; opt_address=$2; shift 2 ;;
      --port) [ $# -ge 2 ] || usage; opt_port=$2; shift 2 ;;
      --service-accounts) opt_service_accounts=1; shift ;;
      --kubelets) opt_kubelets=1; shift ;;
      --apiserver-arg) [ $# -ge 2 ] || usage; opt_apiserver_args+=("$2"); shift 2 ;;
      *) log "unknown option '$1'"; usage ;;
    esac
  done
  [[ "$opt_address" =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "--address wants an IPv4 address, not '$opt_address'"
  [ -z "$opt_port" ] || [[ "$opt_port" =~ ^[1-9][0-9]{0,4}$ ]] || die "--port wants a port number, not '$opt_port'"
  set -- "$cmd" "$dir_arg"
fi
[ $# -eq 2 ] || usage
command -v openssl >/dev/null || die "openssl not found"
command -v curl >/dev/null || die "curl not found"
if [ "$1" = start ]; then
  mkdir -p "$2" || die "cannot create $2"
fi
if [ ! -d "$2" ]; then
  case "$1" in
    stop) log "$2 does not exist: nothing to stop"; exit 0 ;;
    status) echo "etcd: stopped"; echo "kube-apiserver: stopped"; exit 1 ;;
    *) usage ;;
  esac
fi
dir=$(cd "$2" && pwd -P)

case "$1" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) usage ;;
esac
