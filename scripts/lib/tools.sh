# shellcheck shell=bash
# What scripts/k8s-tools.sh, scripts/node-tools.sh, scripts/prom-tools.sh and
# tests/pods/build-runsc.sh share: pinned Go modules built through the module
# proxy into a cache outside the tree, one build per key at a time (flock),
# each build made in a temporary directory and renamed into place when it is
# complete, so a present key is finished and never rebuilt.
#
# A script sources this file, calls tools_init, defines
#   cache_key            prints the key (the cached directory's name)
#   build_into BIN WORK  builds the binaries into BIN (WORK: scratch, removed after)
#   build_info           optional: lines for BUILD-INFO between key= and go=
#   precheck             optional: runs before the lock is taken (missing commands)
#   have_all DIR         optional: redefine if a key holds more than binaries in DIR
# and sets, after tools_init:
#   binaries=(...)       what DIR/bin must hold
#   tools_lock=NAME      lock file name in the cache root
#   tools_cold=TEXT      what a cold build costs (logged when one starts)
#   tools_what=TEXT      what is missing, for --print-bin-dir ("tools")
#   tools_prefix=PREFIX  the keys' prefix, for --prune ("k8s-")
#   tools_bin=SUBDIR     where in a key the binaries are (default bin; "" for
#                        the key's directory itself)
# then hands its arguments to tools_main. Nothing here is hashed into a key:
# each script's cache_key says what its key covers.

# tools_init NAME CACHE_ROOT [GO_CACHE_ROOT]: the log prefix, the root the
# keys are in, and the Go environment: module and build caches under
# GO_CACHE_ROOT (default CACHE_ROOT; shared by every key and script, so a
# module is downloaded and a package compiled once), no toolchain switching,
# the module cache writable so `rm -rf` on the cache root works, static
# binaries.
tools_init() {
  tools_name=$1
  cache_root=$2
  # Defaults; the script sets its own after tools_init.
  binaries=() tools_bin=bin tools_lock=.lock tools_cold="cold" tools_what=tools tools_prefix=$1-
  export GOMODCACHE="${3:-$cache_root}/gomod"
  export GOCACHE="${3:-$cache_root}/gocache"
  export GOTOOLCHAIN=local
  export GOFLAGS="-buildvcs=false -modcacherw"
  export CGO_ENABLED=0
  command -v go >/dev/null 2>&1 || die "go not found in PATH (needed to build the tools)"
}

log() { echo "$tools_name: $*" >&2; }
die() { echo "$tools_name: error: $*" >&2; exit 1; }

# step MSG: log MSG, and how long the previous step took ("" ends the last).
step_name="" step_start=0
step() {
  [ -z "$step_name" ] || log "  ...$step_name took $((SECONDS - step_start))s"
  step_name=$1 step_start=$SECONDS
  [ -z "$1" ] || log "$1"
}

# gomod_version FILE MODULE: the version of MODULE that go.mod FILE requires
# (plain text, so the warm path does not need the module cache).
gomod_version() {
  awk -v m="$2" '
    $1 == "require" && $2 == m { print $3; exit }
    $1 == m && $2 ~ /^v/ { print $2; exit }' "$1"
}

# gomod_download FIELD MODULE@VERSION: downloads the module through the proxy
# and prints FIELD of `go mod download -json` (Dir: the source; GoMod: its go.mod).
gomod_download() {
  go mod download -json "$2" | sed -n "s/^[[:space:]]*\"$1\": \"\\(.*\\)\",*\$/\\1/p"
}

# Kubernetes binaries: upstream's tags for release (non-debug) builds
# (hack/lib/golang.sh) and its version ldflags, the build date being the
# release's publication time on the proxy (reproducible builds). Part of the
# recipe of k8s-tools.sh and node-tools.sh (one set, so the packages they
# share compile once): a change here bumps RECIPE_REV in both.
# shellcheck disable=SC2034 # used by the scripts that source this file
k8s_tags=selinux,notest,grpcnotrace
# k8s_ldflags VERSION: run in a module that requires k8s.io/kubernetes VERSION.
k8s_ldflags() {
  local v=$1 minor build_date pkg flags="-s -w"
  minor=${v#v1.}; minor=${minor%%.*}
  build_date=$(go list -m -f '{{with .Time}}{{.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes)
  build_date=${build_date:-1970-01-01T00:00:00Z}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
  done
  echo "$flags"
}

have_all() {
  local b
  for b in "${binaries[@]}"; do [ -x "$1/$b" ] || return 1; done
}

# tools_bindir DIR: where the binaries of the key in DIR are.
tools_bindir() { echo "$1${tools_bin:+/$tools_bin}"; }

# tools_build: prints the bin dir of the current key, building it first if
# it is not there.
tools_build() {
  local key dir bin lock start
  key=$(cache_key)
  dir="$cache_root/$key"
  bin=$(tools_bindir "$dir")
  if have_all "$bin"; then
    echo "$bin"
    return 0
  fi
  if declare -F precheck >/dev/null; then precheck; fi
  mkdir -p "$cache_root"
  lock="$cache_root/$tools_lock"
  exec 9>"$lock"
  if ! flock -n 9; then
    log "waiting for another build holding $lock"
    flock 9
  fi
  # Another process may have finished the same key while we waited.
  if have_all "$bin"; then
    echo "$bin"
    return 0
  fi
  log "building $key ($tools_cold)"
  start=$(date +%s)
  # Global, not local: the EXIT trap may run after this function's frame is gone.
  tools_build_tmp="$cache_root/.build-$key.$$"
  rm -rf "$tools_build_tmp"
  mkdir -p "$(tools_bindir "$tools_build_tmp")" "$tools_build_tmp/work"
  trap 'rm -rf "$tools_build_tmp"' EXIT
  build_into "$(tools_bindir "$tools_build_tmp")" "$tools_build_tmp/work"
  rm -rf "$tools_build_tmp/work"
  {
    echo "key=$key"
    if declare -F build_info >/dev/null; then build_info; fi
    echo "go=$(go env GOVERSION)"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ) seconds=$(($(date +%s) - start))"
  } >"$tools_build_tmp/BUILD-INFO"
  rm -rf "$dir"
  mv "$tools_build_tmp" "$dir"
  trap - EXIT
  log "built in $(($(date +%s) - start))s: ${binaries[*]} in $bin"
  echo "$bin"
}

# tools_help: the script's header comment (from line 2 to the first line
# that is not a comment).
tools_help() {
  awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"
}

tools_main() {
  local dir key d
  case "${1:-}" in
    "" | build)
      tools_build ;;
    --print-bin-dir)
      dir=$(tools_bindir "$cache_root/$(cache_key)")
      have_all "$dir" || die "$tools_what not built yet: run $0 first ($dir)"
      echo "$dir" ;;
    --print-key)
      cache_key ;;
    --prune)
      key=$(cache_key)
      for d in "$cache_root/$tools_prefix"*; do
        if [ ! -d "$d" ] || [ "$(basename "$d")" = "$key" ]; then continue; fi
        log "removing $d"
        rm -rf "$d"
      done ;;
    -h | --help)
      tools_help ;;
    *)
      die "unknown argument '$1' (see --help)" ;;
  esac
}
