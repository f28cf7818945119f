#!/usr/bin/env bash
# Builds a current runsc from the gVisor Go module (gvisor.dev/gvisor, whose
# module versions are commits of gVisor's "go" branch) through the Go module
# proxy, and prints the binary's path. Debian's runsc is a 2022 release; GKE
# runs a current one. Use it with
#   tests/pods/podrun up ... --runtime-bin "$(tests/pods/build-runsc.sh)" --runtime-flag=--platform=systrap
#   cmake -DHANGAR_RUNSC_CURRENT="$(tests/pods/build-runsc.sh)" ...   (test pods_runsc_current)
# usage: build-runsc.sh [VERSION]   (default: the version last checked here; or "latest")
# The binary is cached in ${HANGAR_CACHE:-~/.cache/hangar}/runsc/VERSION/.
# It must be static (CGO_ENABLED=0): runsc re-executes itself after
# pivot_root into an empty root, where a dynamic binary's loader is missing
# ("error executing umounter: fork/exec /proc/self/exe: no such file or directory").
set -euo pipefail

VERSION=${1:-v0.0.0-20260905035102-160fafc42237}
command -v go >/dev/null || { echo "build-runsc: go not found" >&2; exit 1; }
if [ "$VERSION" = latest ]; then
        VERSION=$(go list -m -f '{{.Version}}' gvisor.dev/gvisor@latest)
fi
CACHE=${HANGAR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar}/runsc/$VERSION
if [ ! -x "$CACHE/runsc" ]; then
        mkdir -p "$CACHE"
        echo "build-runsc: building gvisor.dev/gvisor/runsc@$VERSION (a few minutes)" >&2
        CGO_ENABLED=0 GOBIN="$CACHE" go install "gvisor.dev/gvisor/runsc@$VERSION" >&2
fi
echo "$CACHE/runsc"
