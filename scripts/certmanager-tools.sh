#!/usr/bin/env bash
# Builds and caches cert-manager's controller and cainjector, and fetches its
# CRDs, for tests/e2e/test_certmanager.sh (the chart's certManager mode
# against a real kube-apiserver).
#
#   scripts/certmanager-tools.sh                 build if needed; last stdout line is the bin dir
#   scripts/certmanager-tools.sh --print-bin-dir print the bin dir (fails if not built yet)
#   scripts/certmanager-tools.sh --print-key     print the cache key
#   scripts/certmanager-tools.sh --prune         remove cached builds of other keys
#   scripts/certmanager-tools.sh --regen-gomod   maintainer: rewrite scripts/certmanager-tools/go.mod
#                                                and go.sum for CERT_MANAGER_VERSION (after a bump)
#
# Cache: ${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}/
#   certmanager-<key>/bin/{cert-manager-controller,cert-manager-cainjector}
#   certmanager-<key>/crds/*.yaml          the module's deploy/crds (bin/../crds)
#   gomod/  GOMODCACHE      gocache/  GOCACHE   (shared with scripts/k8s-tools.sh)
# The key is derived from the pinned version, the Go version and a hash of the
# wrapper module (go.mod, go.sum, the two main packages) and of the recipe; a
# present key is never rebuilt. Build output goes to stderr; only the bin dir
# goes to stdout.
#
# Why a wrapper module: upstream's main packages are nested modules
# (cmd/controller, cmd/cainjector) that the Go module proxy does not serve;
# only github.com/cert-manager/cert-manager itself is. scripts/certmanager-tools/
# holds two small entry points that run that module's control loops and
# injectors (see their package comments and docs/chart.md).
set -euo pipefail

# ---- pinned version --------------------------------------------------------
# Bump: `go list -m -versions github.com/cert-manager/cert-manager`, change it
# here, run --regen-gomod, then ctest -R e2e_certmanager.
CERT_MANAGER_VERSION=v1.21.2
RECIPE_REV=1 # bump when the build flags below change

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mod_dir="$script_dir/certmanager-tools"
# shellcheck source=lib/tools.sh
. "$script_dir/lib/tools.sh"
# The module and build caches k8s-tools.sh uses (shared downloads).
tools_init certmanager-tools "${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}"
binaries=(cert-manager-controller cert-manager-cainjector)
crds=(cert-manager.io_certificaterequests.yaml cert-manager.io_certificates.yaml
      cert-manager.io_clusterissuers.yaml cert-manager.io_issuers.yaml
      acme.cert-manager.io_challenges.yaml acme.cert-manager.io_orders.yaml)
# Its own lock: a k8s-tools build holding .lock need not hold this one up.
tools_lock=.lock-certmanager
tools_cold="cold: several minutes on 2 cores"
tools_what=cert-manager
tools_prefix=certmanager-

cache_key() {
  local pinned gov h
  if [ ! -f "$mod_dir/go.mod" ] || [ ! -f "$mod_dir/go.sum" ]; then
    die "$mod_dir/go.mod or go.sum missing (run $0 --regen-gomod)"
  fi
  pinned=$(gomod_version "$mod_dir/go.mod" github.com/cert-manager/cert-manager)
  [ "$pinned" = "$CERT_MANAGER_VERSION" ] \
    || die "scripts/certmanager-tools/go.mod pins cert-manager ${pinned:-?}, script pins $CERT_MANAGER_VERSION (run $0 --regen-gomod)"
  gov=$(go env GOVERSION)
  h=$( { cat "$mod_dir/go.mod" "$mod_dir/go.sum" "$mod_dir/controller/main.go" "$mod_dir/cainjector/main.go"
         echo "recipe=$RECIPE_REV"; } | sha256sum | cut -c1-10)
  echo "certmanager-$CERT_MANAGER_VERSION-$gov-$h"
}

# A key holds the CRDs too (bin/../crds).
have_all() {
  local b c
  for b in "${binaries[@]}"; do [ -x "$1/$b" ] || return 1; done
  for c in "${crds[@]}"; do [ -f "$1/../crds/$c" ] || return 1; done
}

regen_gomod() {
  local go_line
  go_line=$(gomod_download GoMod "github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION" | xargs grep -m1 '^go ')
  [ -n "$go_line" ] || die "could not fetch go.mod of github.com/cert-manager/cert-manager@$CERT_MANAGER_VERSION"
  {
    echo "// Wrapper module for scripts/certmanager-tools.sh: entry points for"
    echo "// cert-manager's controller and cainjector, built against the pinned"
    echo "// github.com/cert-manager/cert-manager module (its own cmd/* modules are not"
    echo "// on the Go module proxy). Regenerate go.sum: scripts/certmanager-tools.sh --regen-gomod"
    echo "module hangar-sidecar/certmanager-tools"
    echo
    echo "$go_line"
    echo
    echo "require github.com/cert-manager/cert-manager $CERT_MANAGER_VERSION"
  } >"$mod_dir/go.mod"
  rm -f "$mod_dir/go.sum"
  log "go mod tidy (downloads the dependency graph)"
  (cd "$mod_dir" && go mod tidy)
  log "go.mod regenerated for cert-manager $CERT_MANAGER_VERSION"
}

build_into() {
  local out="$1" src ldflags c
  cd "$mod_dir"
  log "downloading modules"
  go mod download
  src=$(go list -m -f '{{.Dir}}' github.com/cert-manager/cert-manager)
  [ -d "$src/deploy/crds" ] || die "no deploy/crds in $src"
  # As upstream's make/ stamps a release build.
  ldflags="-s -w -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$CERT_MANAGER_VERSION"
  ldflags+=" -X github.com/cert-manager/cert-manager/pkg/util.AppGitCommit=$CERT_MANAGER_VERSION"
  log "building cert-manager-controller and cert-manager-cainjector $CERT_MANAGER_VERSION"
  nice -n 10 go build -p 2 -trimpath -ldflags "$ldflags" -o "$out/cert-manager-controller" ./controller
  nice -n 10 go build -p 2 -trimpath -ldflags "$ldflags" -o "$out/cert-manager-cainjector" ./cainjector
  mkdir -p "$out/../crds"
  for c in "${crds[@]}"; do
    cp "$src/deploy/crds/$c" "$out/../crds/$c"
  done
  chmod -R u+w "$out/../crds"
}

build_info() {
  echo "cert-manager=$CERT_MANAGER_VERSION (controller, cainjector; CRDs from deploy/crds)"
}

case "${1:-}" in
  --regen-gomod) regen_gomod ;;
  *) tools_main "$@" ;;
esac
