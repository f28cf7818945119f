#!/usr/bin/env bash
# Builds and caches kubernetes-sigs/agent-sandbox's controller and its CRDs,
# for scripts/agent-sandbox.sh and tests/node/test_agent_sandbox.sh (hangar
# beside agent-sandbox's Sandbox, SandboxTemplate, SandboxWarmPool and
# SandboxClaim on the one-node cluster; docs/agent-sandbox.md).
#
#   scripts/agent-sandbox-tools.sh                 build if needed; last stdout line is the bin dir
#   scripts/agent-sandbox-tools.sh --print-bin-dir print the bin dir (fails if not built yet)
#   scripts/agent-sandbox-tools.sh --print-key     print the cache key
#   scripts/agent-sandbox-tools.sh --prune         remove cached builds of other keys
#
# Cache: ${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}/
#   agent-sandbox-<key>/bin/agent-sandbox-controller  the controller (core and extensions)
#   agent-sandbox-<key>/crds/*.yaml                   the module's k8s/crds (bin/../crds)
#   agent-sandbox-<key>/rbac/*.yaml                   its ClusterRoles, k8s/*rbac.generated.yaml (bin/../rbac)
#   gomod/  GOMODCACHE      gocache/  GOCACHE         (shared with scripts/k8s-tools.sh)
# The key is derived from the pinned version, the Go version and a hash of
# this script (the recipe); a present key is never rebuilt. Build output goes
# to stderr; only the bin dir goes to stdout. Offline once the module cache
# holds the module and its dependencies (GOFLAGS=-mod=mod is not used: the
# build reads upstream's own go.sum).
#
# No wrapper module: cmd/agent-sandbox-controller is a package of
# sigs.k8s.io/agent-sandbox itself (one module, no replace directives), so the
# build runs in a copy of that module's source from the proxy, with
# upstream's own go.mod and go.sum. The main package is a directory of four
# files (main.go alone does not build).
set -euo pipefail

# ---- pinned version --------------------------------------------------------
# Bump: `go list -m -versions sigs.k8s.io/agent-sandbox`, change it here, read
# the CRDs and controller again (docs/agent-sandbox.md), then
# ctest -R node_agent_sandbox.
AGENT_SANDBOX_VERSION=v1.0.1

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/tools.sh
. "$script_dir/lib/tools.sh"
tools_init agent-sandbox-tools "${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}"
binaries=(agent-sandbox-controller)
# Core (agents.x-k8s.io) and the three extension kinds the --extensions
# controllers watch.
crds=(agents.x-k8s.io_sandboxes.yaml
      extensions.agents.x-k8s.io_sandboxclaims.yaml
      extensions.agents.x-k8s.io_sandboxtemplates.yaml
      extensions.agents.x-k8s.io_sandboxwarmpools.yaml)
# The ClusterRoles of the core and extensions controllers (what upstream's
# Deployment runs with; scripts/agent-sandbox.sh binds them to its
# ServiceAccount).
rbac=(rbac.generated.yaml extensions-rbac.generated.yaml)
tools_lock=.lock-agent-sandbox
tools_cold="cold: several minutes on 2 cores at nice 10"
tools_what=agent-sandbox
tools_prefix=agent-sandbox-

cache_key() {
  local h
  h=$(sha256sum <"${BASH_SOURCE[0]}" | cut -c1-10)
  echo "agent-sandbox-$AGENT_SANDBOX_VERSION-$(go env GOVERSION)-$h"
}

# A key holds the CRDs and ClusterRoles too (bin/../crds, bin/../rbac).
have_all() {
  local c
  [ -x "$1/agent-sandbox-controller" ] || return 1
  for c in "${crds[@]}"; do [ -f "$1/../crds/$c" ] || return 1; done
  for c in "${rbac[@]}"; do [ -f "$1/../rbac/$c" ] || return 1; done
}

build_into() {
  local out="$1" work="$2" src info date c ldflags
  step "downloading sigs.k8s.io/agent-sandbox@$AGENT_SANDBOX_VERSION"
  src=$(cd "$work" && gomod_download Dir "sigs.k8s.io/agent-sandbox@$AGENT_SANDBOX_VERSION")
  info=$(cd "$work" && gomod_download Info "sigs.k8s.io/agent-sandbox@$AGENT_SANDBOX_VERSION")
  if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
    die "could not fetch sigs.k8s.io/agent-sandbox@$AGENT_SANDBOX_VERSION"
  fi
  cp -r "$src" "$work/src"
  chmod -R u+w "$work/src"
  cd "$work/src"
  step "downloading its dependencies (go.sum-checked)"
  go mod download
  step "building agent-sandbox-controller $AGENT_SANDBOX_VERSION"
  # As upstream's Makefile stamps a release build (internal/version), the
  # build date being the release's publication time on the proxy, the commit
  # unknown (the module zip has none): `agent-sandbox-controller --version`.
  date=$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$info" 2>/dev/null)
  ldflags="-s -w -X sigs.k8s.io/agent-sandbox/internal/version.gitVersion=$AGENT_SANDBOX_VERSION"
  ldflags+=" -X sigs.k8s.io/agent-sandbox/internal/version.buildDate=${date:-unknown}"
  nice -n 10 go build -p 2 -trimpath -ldflags "$ldflags" \
    -o "$out/agent-sandbox-controller" ./cmd/agent-sandbox-controller
  step ""
  mkdir -p "$out/../crds"
  for c in "${crds[@]}"; do
    [ -f "k8s/crds/$c" ] || die "no k8s/crds/$c in $src"
    cp "k8s/crds/$c" "$out/../crds/$c"
  done
  mkdir -p "$out/../rbac"
  for c in "${rbac[@]}"; do
    [ -f "k8s/$c" ] || die "no k8s/$c in $src"
    cp "k8s/$c" "$out/../rbac/$c"
  done
  chmod -R u+w "$out/../crds" "$out/../rbac"
  # Out of WORK, which is removed next (BUILD-INFO runs go env after that).
  cd /
}

build_info() {
  echo "agent-sandbox=$AGENT_SANDBOX_VERSION (cmd/agent-sandbox-controller; CRDs from k8s/crds, ClusterRoles from k8s)"
}

tools_main "$@"
