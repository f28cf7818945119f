#!/usr/bin/env bash
# Builds and caches Kyverno's admission controller (cmd/kyverno) and its CRDs,
# for bench/kyverno.sh (the peer policy engine, side by side with
# hangar-webhook; not part of CI).
#
#   scripts/kyverno-tools.sh                 build if needed; last stdout line is the bin dir
#   scripts/kyverno-tools.sh --print-bin-dir print the bin dir (fails if not built yet)
#   scripts/kyverno-tools.sh --print-key     print the cache key
#   scripts/kyverno-tools.sh --prune         remove cached builds of other keys
#
# Cache: ${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}/
#   kyverno-<key>/bin/kyverno              the admission controller
#   kyverno-<key>/crds/<group>/*.yaml      the module's config/crds (bin/../crds)
#   gomod/  GOMODCACHE      gocache/  GOCACHE   (shared with scripts/k8s-tools.sh)
# The key is derived from the pinned version, the Go version and a hash of
# this script (the recipe); a present key is never rebuilt. Build output goes
# to stderr; only the bin dir goes to stdout.
#
# No wrapper module: cmd/kyverno is a package of github.com/kyverno/kyverno
# itself (one module), so the build runs in a copy of that module's source
# from the proxy, with upstream's own go.mod and go.sum (its replace directive
# included, which a wrapper module would not inherit). Kyverno is a large
# build (2970 packages for cmd/kyverno at v1.19.1): it runs at nice 19 with
# one package at a time (-p 1), so it does not starve the machine's other
# work. HANGAR_KYVERNO_JOBS=N compiles N at a time (still at nice 19: on an
# otherwise idle machine, or one whose other work should win anyway); the
# binary is the same, so it is not part of the key.
set -euo pipefail

# ---- pinned version --------------------------------------------------------
# Bump: `go list -m -versions github.com/kyverno/kyverno`, change it here,
# then run bench/kyverno.sh (it checks the stored pods match before timing).
KYVERNO_VERSION=v1.19.1

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/tools.sh
. "$script_dir/lib/tools.sh"
tools_init kyverno-tools "${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}"
jobs=${HANGAR_KYVERNO_JOBS:-1}
[[ "$jobs" =~ ^[1-9][0-9]*$ ]] || die "HANGAR_KYVERNO_JOBS must be a positive number, not '$jobs'"
export GOFLAGS="$GOFLAGS -p=$jobs"
binaries=(kyverno)
# The CRD groups the admission controller's informers wait for (kyverno.io,
# policies.kyverno.io) and the report kinds it writes (reports.kyverno.io,
# wgpolicyk8s.io): all of the module's config/crds.
crd_groups=(kyverno policies.kyverno.io reports policyreport)
tools_lock=.lock-kyverno
tools_cold="cold: 30 min or more on 2 cores at nice 19, -p $jobs"
tools_what=kyverno
tools_prefix=kyverno-

cache_key() {
  local h
  h=$(sha256sum <"${BASH_SOURCE[0]}" | cut -c1-10)
  echo "kyverno-$KYVERNO_VERSION-$(go env GOVERSION)-$h"
}

# A key holds the CRDs too (bin/../crds/<group>/).
have_all() {
  local g
  [ -x "$1/kyverno" ] || return 1
  for g in "${crd_groups[@]}"; do
    compgen -G "$1/../crds/$g/*.yaml" >/dev/null || return 1
  done
}

build_into() {
  local out="$1" work="$2" src g
  step "downloading github.com/kyverno/kyverno@$KYVERNO_VERSION"
  src=$(cd "$work" && gomod_download Dir "github.com/kyverno/kyverno@$KYVERNO_VERSION")
  if [ -z "$src" ] || [ ! -f "$src/go.mod" ]; then
    die "could not fetch github.com/kyverno/kyverno@$KYVERNO_VERSION"
  fi
  cp -r "$src" "$work/src"
  chmod -R u+w "$work/src"
  cd "$work/src"
  step "downloading its dependencies (go.sum-checked)"
  go mod download
  step "building kyverno $KYVERNO_VERSION (cmd/kyverno)"
  # As upstream's Makefile stamps a release build.
  nice -n 19 go build -p "$jobs" -trimpath \
    -ldflags "-s -w -X github.com/kyverno/kyverno/pkg/version.BuildVersion=$KYVERNO_VERSION" \
    -o "$out/kyverno" ./cmd/kyverno
  step ""
  for g in "${crd_groups[@]}"; do
    [ -d "config/crds/$g" ] || die "no config/crds/$g in $src"
    mkdir -p "$out/../crds/$g"
    cp config/crds/"$g"/*.yaml "$out/../crds/$g/"
  done
  chmod -R u+w "$out/../crds"
}

build_info() {
  echo "kyverno=$KYVERNO_VERSION (cmd/kyverno; CRDs from config/crds)"
}

tools_main "$@"
