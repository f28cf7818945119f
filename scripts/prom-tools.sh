#!/usr/bin/env bash
# Builds and caches promtool (github.com/prometheus/prometheus/cmd/promtool),
# which the metrics tests use to check the webhook's exposition
# (`promtool check metrics`) and the chart's alerts (`promtool check rules`,
# `promtool test rules`), and fetches the Prometheus Operator's
# ServiceMonitor and PrometheusRule CRDs (from its Go module) so the API
# server can validate the chart's objects.
#
#   scripts/prom-tools.sh                 build if needed; last stdout line is the bin dir
#   scripts/prom-tools.sh --print-bin-dir print the bin dir (fails if not built yet)
#   scripts/prom-tools.sh --print-key     print the cache key
#   scripts/prom-tools.sh --prune         remove cached promtool builds of other keys
#
# Cache: ${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}/
#   prom-<key>/bin/promtool                finished binary
#   prom-<key>/crds/*.yaml                 the operator's CRDs (bin/../crds)
#   gomod/  GOMODCACHE      gocache/  GOCACHE   (shared with scripts/k8s-tools.sh)
# The key is derived from the pinned version, the Go version and the build
# recipe; a present key is never rebuilt. Build output goes to stderr; only
# the bin dir goes to stdout.
set -euo pipefail

# ---- pinned version --------------------------------------------------------
# Go module versions of Prometheus are v0.<major*100+minor>.<patch>:
# v0.316.0 is Prometheus 3.16.0. Bump: `go list -m -versions
# github.com/prometheus/prometheus`, change it here, run the metrics suite.
PROM_MODULE_VERSION=v0.316.0
# github.com/prometheus-operator/prometheus-operator: only its CRDs are used.
OPERATOR_VERSION=v0.85.0
RECIPE_REV=2 # bump when the build flags below change

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/tools.sh
. "$script_dir/lib/tools.sh"
# The module and build caches k8s-tools.sh uses (shared downloads).
tools_init prom-tools "${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}"
binaries=(promtool)
# Its own lock: a k8s-tools build holding .lock need not hold this one up.
tools_lock=.lock-prom
tools_cold="cold: a few minutes on 2 cores"
tools_what=promtool
tools_prefix=prom-

# The Prometheus release a module version stands for: v0.316.2 -> 3.16.2.
prom_release() {
  local v=${PROM_MODULE_VERSION#v0.} minor_all patch
  minor_all=${v%%.*}
  patch=${v#*.}
  echo "$((minor_all / 100)).$((minor_all % 100)).$patch"
}

cache_key() {
  local gov h
  gov=$(go env GOVERSION)
  h=$(echo "recipe=$RECIPE_REV prometheus=$PROM_MODULE_VERSION operator=$OPERATOR_VERSION" | sha256sum | cut -c1-10)
  echo "prom-$PROM_MODULE_VERSION-$gov-$h"
}

crds=(monitoring.coreos.com_servicemonitors.yaml monitoring.coreos.com_prometheusrules.yaml)
# A key holds the CRDs too (bin/../crds).
have_all() {
  local b c
  for b in "${binaries[@]}"; do [ -x "$1/$b" ] || return 1; done
  for c in "${crds[@]}"; do [ -f "$1/../crds/$c" ] || return 1; done
}

build_into() {
  local out="$1" ldflags cv=github.com/prometheus/common/version
  # As upstream's .promu.yml stamps releases, minus the build host. The
  # service-discovery plugins are left out (remove_all_sd): promtool's
  # metrics and rules commands need none of them, and they are most of the
  # dependency graph (cloud SDKs).
  ldflags="-s -w -X $cv.Version=$(prom_release) -X $cv.Revision=$PROM_MODULE_VERSION"
  ldflags+=" -X $cv.Branch=HEAD -X $cv.BuildUser=hangar-sidecar -X $cv.BuildDate=00000000-00:00:00"
  cd /
  log "go install github.com/prometheus/prometheus/cmd/promtool@$PROM_MODULE_VERSION"
  GOBIN="$out" go install -p 2 -trimpath -tags remove_all_sd -ldflags "$ldflags" \
    "github.com/prometheus/prometheus/cmd/promtool@$PROM_MODULE_VERSION"
  local op_dir c
  log "fetching the Prometheus Operator $OPERATOR_VERSION CRDs"
  op_dir=$(gomod_download Dir "github.com/prometheus-operator/prometheus-operator@$OPERATOR_VERSION")
  [ -d "$op_dir" ] || die "could not fetch github.com/prometheus-operator/prometheus-operator@$OPERATOR_VERSION"
  mkdir -p "$out/../crds"
  for c in "${crds[@]}"; do
    cp "$op_dir/example/prometheus-operator-crd/$c" "$out/../crds/$c"
  done
  "$out/promtool" --version >&2
}

build_info() {
  echo "prometheus=$PROM_MODULE_VERSION ($(prom_release))"
  echo "prometheus-operator=$OPERATOR_VERSION (CRDs)"
}

tools_main "$@"
