#!/usr/bin/env bash
# daemon_bundle_native: the daemon suite (test_daemon_native.sh) again with
# the bundled driver and relay (scripts/images/bundle.sh): the loader and
# libraries of their own at /opt/hangar, as a pod whose image lacks them
# gets them. In a private mount namespace with a tmpfs over /opt, so the
# host's /opt is untouched. images_bundle proves the bundle needs nothing
# from the image; this proves a whole turn (serve, ctl, the relay's sealed
# start, the token, signals, a restarted daemon) runs on it.
# usage: test_bundle_native.sh BUILD_DIR
BUILD_DIR=$(realpath "$1")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
if [ "${HANGAR_BUNDLE_UNSHARED:-}" != 1 ]; then
        [ "$(id -u)" = 0 ] || { echo "needs root (a mount namespace of its own)"; exit 1; }
        HANGAR_BUNDLE_UNSHARED=1 exec unshare --mount --propagation private -- bash "$0" "$@"
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/hangar-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
# shellcheck source=scripts/images/lib.sh
. "$ROOT/scripts/images/lib.sh"
# shellcheck source=scripts/images/bundle.sh
. "$ROOT/scripts/images/bundle.sh"
( img_bundle "$BUILD_DIR" "$work/root" /opt/hangar ) || { echo "the bundle could not be made"; exit 1; }
if ! { mount -t tmpfs -o mode=0755 bundle-opt /opt && mkdir /opt/hangar &&
        mount --bind "$work/root/opt/hangar" /opt/hangar && mount -o remount,bind,ro /opt/hangar; }; then
        echo "cannot mount the bundle at /opt/hangar"
        exit 1
fi
[ "$(patchelf --print-interpreter /opt/hangar/bin/hangar-driver)" = /opt/hangar/lib/ld-linux-x86-64.so.2 ] ||
        { echo "the bundled driver does not use the bundle's loader"; exit 1; }
# The suite's own mount namespace is this one (it unshares only when not
# told it already runs in one).
HANGAR_NATIVE_UNSHARED=1 bash "$HERE/test_daemon_native.sh" /opt/hangar/bin/hangar-driver /opt/hangar/bin/hangar-relay
