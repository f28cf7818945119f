#!/usr/bin/env bash
# images_bundle: the sidecar's binaries for any environment image
# (scripts/images/bundle.sh, docs/images.md "Any environment image"). Builds
# the images bin (the bundle in /opt/hangar and a static busybox) and bare
# (busybox only, no library at all) twice: the same digests. Then: each
# bundled binary asks for the bundle's loader and library path and nothing
# else; every library's Debian package and copyright are there; bare has no
# shared object; under crun, bin's busybox copies the bundle out as uid 1001
# (what an init container does, each program mode 0555) and, in bare as
# the agent (1000) with that copy mounted read-only at /opt/hangar, every
# binary runs, tmux's detached session too.
# usage: test_bundle.sh BUILD_DIR
# shellcheck disable=SC2016 # sh -c scripts expand in the container
BUILD_DIR=$(realpath "$1")
OUT=""
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/images/imagelib.sh
. "$(dirname "$0")/imagelib.sh"
im_need umoci jq crun unshare patchelf readelf
t_begin images_bundle
BINARIES=(hangar-driver hangar-relay hangar-probe hangar-grade tmux)

build() { # OUT_DIR
        SOURCE_DATE_EPOCH=1700000000 HANGAR_IMAGE_REVISION=test "$BUILD_IMAGES" --build-dir "$BUILD_DIR" \
                --out "$1" bin bare >"$1.out" 2>"$1.log"
}
start=$SECONDS
if ! build "$T_TMP/a"; then
        t_fail "build-images.sh bin bare failed:"
        tail -n 20 "$T_TMP/a.log"
        t_end
fi
t_check "build-images.sh bin bare ($((SECONDS - start)) s)" true
build "$T_TMP/b" || t_fail "the second build failed: $(tail -n 5 "$T_TMP/b.log")"
VERSION=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
BIN_REF=localhost/hangar-bin:$VERSION BARE_REF=localhost/hangar-bare:dev
for ref in "$BIN_REF" "$BARE_REF"; do
        t_eq "$ref: the same digest from a second build" "$(im_digest "$T_TMP/a" "$ref")" "$(im_digest "$T_TMP/b" "$ref")"
done
im_unpack "$(im_archive "$T_TMP/a" "$BIN_REF")" "$BIN_REF" "$T_TMP/bin" || t_fail "umoci unpack bin"
im_unpack "$(im_archive "$T_TMP/a" "$BARE_REF")" "$BARE_REF" "$T_TMP/bare" || t_fail "umoci unpack bare"
B=$T_TMP/bin/rootfs R=$T_TMP/bare/rootfs

echo "-- the bundle"
t_eq "bin holds the bundle and busybox, nothing else" "bin/busybox opt/hangar" \
        "$(cd "$B" && find . -type f | sed 's|^\./||; s|^\(opt/hangar\)/.*|\1|' | sort -u | tr '\n' ' ' | sed 's/ $//')"
loader=$(cd "$B/opt/hangar/lib" && ls ld-linux-*)
t_check "the bundle's loader is executable (the kernel opens it as a program)" test -x "$B/opt/hangar/lib/$loader"
for b in "${BINARIES[@]}"; do
        f=$B/opt/hangar/bin/$b
        t_eq "$b: its program interpreter is the bundle's" "/opt/hangar/lib/$loader" "$(patchelf --print-interpreter "$f")"
        t_eq "$b: its library path is the bundle's, applied to libraries too (RPATH)" "RPATH /opt/hangar/lib" \
                "$(readelf -d "$f" | sed -n 's/.*(\(R[A-Z]*PATH\)).*\[\(.*\)\]/\1 \2/p')"
        for lib in $(patchelf --print-needed "$f"); do
                [ -f "$B/opt/hangar/lib/$lib" ] || t_fail "$b needs $lib, not in the bundle"
        done
done
while IFS='=' read -r pkg _; do
        [ -f "$B/opt/hangar/share/doc/$pkg/copyright" ] || t_fail "no copyright for $pkg in the bundle"
done <"$B/opt/hangar/bundle.packages"
t_check "bundle.packages names libc6 and libssl3" \
        sh -c "grep -q '^libc6=' '$B/opt/hangar/bundle.packages' && grep -q '^libssl3=' '$B/opt/hangar/bundle.packages'"
t_eq "bare has no shared object and no loader" "" "$(cd "$R" && find . -name '*.so*' -o -name 'ld-linux*')"

echo "-- the init container's copy, then the binaries in bare (crun)"
mkdir -p "$T_TMP/volume"
chown 1001:1001 "$T_TMP/volume"
IM_CRUN_MOUNTS=$(jq -cn --arg src "$T_TMP/volume" '[{destination: "/mnt/hangar-bin", type: "bind", source: $src,
        options: ["rbind", "rw"]}]') in_crun "$T_TMP/bin" /bin/busybox cp -R /opt/hangar/. /mnt/hangar-bin/ >"$T_TMP/cp.out" 2>&1
t_eq "bin's busybox copies the bundle out as 1001" 0 "$?"
t_eq "... every file, the same bytes" "$(cd "$B/opt/hangar" && find . -type f -exec sha256sum {} + | sort)" \
        "$(cd "$T_TMP/volume" && find . -type f -exec sha256sum {} + | sort)"
t_check "... the loader still executable" test -x "$T_TMP/volume/lib/$loader"
for b in "${BINARIES[@]}"; do
        t_eq "... $b: the copy is 1001's, mode 0555 (nobody's to write)" "1001 555" \
                "$(stat -c '%u %a' "$T_TMP/volume/bin/$b")"
done
export IM_CRUN_MOUNTS
IM_CRUN_MOUNTS=$(jq -cn --arg src "$T_TMP/volume" '[{destination: "/opt/hangar", type: "bind", source: $src,
        options: ["rbind", "ro"]}]')
t_eq "in bare as the agent: hangar-driver version" "hangar-driver $VERSION" \
        "$(in_crun "$T_TMP/bare" /opt/hangar/bin/hangar-driver version 2>&1)"
t_eq "in bare as the agent: hangar-probe version" "hangar-probe $VERSION" \
        "$(in_crun "$T_TMP/bare" /opt/hangar/bin/hangar-probe version 2>&1)"
t_check "in bare as the agent: hangar-relay --help" \
        im_quiet in_crun "$T_TMP/bare" /opt/hangar/bin/hangar-relay --help
# hangar-grade has no --help: an unknown option prints its usage (after
# every library was loaded) and exits non-zero.
t_check "in bare as the agent: hangar-grade runs (its usage for an unknown option)" \
        grep -q '^usage: hangar-grade ' <<<"$(in_crun "$T_TMP/bare" /opt/hangar/bin/hangar-grade --help 2>&1)"
# Terminal turns: the bundle's tmux in an image with none, no terminfo
# either (the driver's sessions are detached), its UTF-8 locale the
# bundle's (LOCPATH, as the driver sets it for this tmux).
t_eq "in bare: the bundle's tmux runs a detached session and lists it" "t" \
        "$(in_crun "$T_TMP/bare" sh -c 'cd /tmp && export LOCPATH=/opt/hangar/lib/locale && /opt/hangar/bin/tmux -S /tmp/s -f /dev/null new-session -d -s t "sleep 30" &&
                /opt/hangar/bin/tmux -S /tmp/s list-sessions -F "#{session_name}"; /opt/hangar/bin/tmux -S /tmp/s kill-server' 2>&1)"
t_eq "in bare: the agent is uid 1000 and there is no libc" "uid=1000 none" \
        "$(in_crun "$T_TMP/bare" sh -c 'echo "uid=$(id -u) $(ls /lib /usr/lib 2>/dev/null || echo none)"' 2>&1)"
t_end
