#!/usr/bin/env bash
# Builds a current runsc from the gVisor Go module (gvisor.dev/gvisor, whose
# module versions are commits of gVisor's "go" branch) through the Go module
# proxy, and prints the binary's path. Debian's runsc is a 2022 release; GKE
# runs a current one. Use it with
#   tests/pods/podrun up ... --runtime-bin "$(tests/pods/build-runsc.sh)" --runtime-flag=--platform=systrap
#   cmake -DHANGAR_RUNSC_CURRENT="$(tests/pods/build-runsc.sh)" ...   (test pods_runsc_current)
# usage: build-runsc.sh [VERSION]   (default: the version last checked here; or "latest")
# The binary is cached in ${HANGAR_CACHE:-~/.cache/hangar}/runsc/VERSION/;
# the Go module and build caches are scripts/k8s-tools.sh's (in
# ${HANGAR_TOOLS_CACHE:-~/.cache/hangar-tools}), where scripts/node-tools.sh
# downloads the same gVisor module for its shim. scripts/lib/tools.sh: one
# build at a time, renamed into place when complete.
# It must be static (CGO_ENABLED=0): runsc re-executes itself after
# pivot_root into an empty root, where a dynamic binary's loader is missing
# ("error executing umounter: fork/exec /proc/self/exe: no such file or directory").
set -euo pipefail

# scripts/node-tools.sh reads the default version from this line: keep its form.
VERSION=${1:-v0.0.0-20260905035102-160fafc42237}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/lib/tools.sh
. "$here/../../scripts/lib/tools.sh"
tools_init build-runsc "${HANGAR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar}/runsc" \
        "${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}"
binaries=(runsc)
tools_bin=""
tools_lock=.lock
tools_cold="a few minutes"
if [ "$VERSION" = latest ]; then
        VERSION=$(go list -m -f '{{.Version}}' gvisor.dev/gvisor@latest)
fi
# A module version (vX.Y.Z, a pseudo-version included), never an option or a
# path: it names the cache directory.
[[ $VERSION =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
        die "'$VERSION' is not a module version (usage: build-runsc.sh [VERSION|latest])"

cache_key() { echo "$VERSION"; }
build_into() {
        log "building gvisor.dev/gvisor/runsc@$VERSION"
        GOBIN="$1" go install "gvisor.dev/gvisor/runsc@$VERSION" >&2
}
build_info() { echo "gvisor=$VERSION"; }

echo "$(tools_build)/runsc"
