#!/usr/bin/env bash
# Installs the Debian packages hangar-sidecar needs to build, test and benchmark.
# Idempotent: packages already present are left alone. Run as root (CI and the
# dev machines are root); otherwise it uses sudo.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config
  libmicrohttpd-dev libgnutls28-dev libssl-dev libjansson-dev libyaml-dev
  libcurl4-openssl-dev check libwslay-dev
  # a compiler cache for CI's builds (scripts/test-all.sh: a warm run compiles
  # only what changed; docs/ci.md)
  ccache
  # checks: sanitizers, fuzzing, formatting, shell scripts (scripts/lint.sh),
  # static analysis (scripts/analyze.sh: clang-tidy), coverage (gcovr)
  clang clang-format libclang-rt-14-dev shellcheck clang-tidy gcovr
  # tests: TLS clients, JSON tools, container runtimes for real pods
  curl openssl jq runsc crun runc busybox-static
  # the one-node cluster (scripts/node.sh): CNI plugins, nft for its one DNAT, patch for the gVisor shim,
  # envsubst for its configuration templates (scripts/node/)
  containernetworking-plugins nftables patch gettext-base
  # an independent YAML reader for the inject tests (Debian's python3)
  python3-yaml
  # images and packages (scripts/build-images.sh)
  mmdebstrap umoci skopeo dpkg-dev
  # the sidecar binaries with their own loader and libraries (scripts/images/bundle.sh)
  patchelf
  # benchmarks (njs: bench/admission.sh's static webhook echoes the review's uid)
  wrk nginx-light libnginx-mod-http-js
  # control-plane tooling is built with Go (scripts/k8s-tools.sh)
  golang-go
)

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

missing=()
for p in "${packages[@]}"; do
  # golang-go is only a fallback: the dev machines already have a newer Go.
  if [ "$p" = golang-go ] && command -v go >/dev/null 2>&1; then continue; fi
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all packages present"
fi
