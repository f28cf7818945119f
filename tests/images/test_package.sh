#!/usr/bin/env bash
# images_package: the Debian packages. Their control fields and contents;
# every shared library a binary needs belongs to a package its Depends names
# (checked against this machine's dpkg database); and hangar-sidecar added to
# a clean minimal Debian rootfs (mmdebstrap's minbase, as debian:bookworm-slim)
# by the Dockerfile docs/images.md gives, taken from the page and applied step
# by step (tests/images/imagelib.sh, im_dockerfile): it runs there, apt pulled
# in everything it needs.
# shellcheck disable=SC2016 # single-quoted bash -c scripts take their arguments positionally
OUT=$2
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/images/imagelib.sh
. "$(dirname "$0")/imagelib.sh"
# shellcheck source=tests/lib/doclib.sh
. "$(dirname "$0")/../lib/doclib.sh"
im_need mmdebstrap dpkg-deb readelf ldconfig
im_inputs
arch=$(dpkg --print-architecture)
sidecar_deb=$OUT/a/packages/hangar-sidecar_${VERSION}_$arch.deb
webhook_deb=$OUT/a/packages/hangar-webhook_${VERSION}_$arch.deb

depends_names() {
        dpkg-deb -f "$1" Depends | sed 's/[,|]/\n/g' | sed 's/(.*//; s/[[:space:]]//g' | grep -v '^$' | sort -u
}

# owner_of SONAME: the Debian package holding this machine's copy of it.
owner_of() {
        local path real p
        path=$(ldconfig -p | awk -v s="$1" '$1 == s && /x86-64/ { print $NF; exit }')
        [ -n "$path" ] || return 1
        real=$(readlink -f "$path")
        for p in "$path" "$real" "${path#/usr}" "${real#/usr}" "/usr$path" "/usr$real"; do
                dpkg -S "$p" 2>/dev/null | head -n1 | cut -d: -f1 && return 0
        done
        return 1
}

t_begin images_package
for deb in "$sidecar_deb" "$webhook_deb"; do
        name=$(basename "$deb" | cut -d_ -f1)
        echo "-- $name"
        [ -s "$deb" ] || { t_fail "$deb missing"; continue; }
        t_eq "Package" "$name" "$(dpkg-deb -f "$deb" Package)"
        t_eq "Version is the project's" "$VERSION" "$(dpkg-deb -f "$deb" Version)"
        t_eq "Architecture" "$arch" "$(dpkg-deb -f "$deb" Architecture)"
        for field in Maintainer Description Depends Section Priority; do
                t_check "$field set ($(dpkg-deb -f "$deb" "$field" | head -n1))" test -n "$(dpkg-deb -f "$deb" "$field")"
        done
        case $name in
        hangar-sidecar) want="./usr/bin/hangar-driver ./usr/bin/hangar-grade ./usr/bin/hangar-probe ./usr/bin/hangar-relay" ;;
        *) want="./usr/bin/hangar-webhook" ;;
        esac
        t_eq "files" "$want" "$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ { print $6 }' | sort | paste -sd' ' -)"
        x=$T_TMP/$name
        dpkg-deb -x "$deb" "$x"
        deps=$(depends_names "$deb")
        for bin in "$x"/usr/bin/*; do
                t_check "$(basename "$bin") stripped" bash -c 'file "$1" | grep -q ", stripped"' _ "$bin"
                for so in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
                        pkg=$(owner_of "$so") || { t_fail "$(basename "$bin"): no package on this machine holds $so"; continue; }
                        t_check "$(basename "$bin") needs $so: $pkg is in Depends" grep -qxF "$pkg" <<<"$deps"
                done
        done
done

echo "-- hangar-sidecar into a clean rootfs, by docs/images.md's Dockerfile"
cache=${HANGAR_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar-images}
mkdir -p "$cache/debs"
root=$T_TMP/clean
start=$SECONDS
# apt retries a failed download (the archive refuses one now and then), in
# mmdebstrap's own runs and, kept in the rootfs, in the Dockerfile's.
if SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH mmdebstrap --quiet --mode=root --variant=minbase \
        --aptopt='Acquire::Retries "3"' \
        --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
        --setup-hook="mkdir -p \"\$1/var/cache/apt/archives\" && find '$cache/debs' -maxdepth 1 -name '*.deb' -exec cp -l -t \"\$1/var/cache/apt/archives\" {} +" \
        bookworm "$root" \
        "deb http://deb.debian.org/debian bookworm main" \
        "deb http://deb.debian.org/debian bookworm-updates main" \
        "deb http://deb.debian.org/debian-security bookworm-security main" >"$T_TMP/mmdebstrap.log" 2>&1; then
        t_check "mmdebstrap --variant=minbase ($((SECONDS - start))s)" true
else
        t_fail "mmdebstrap --variant=minbase failed:"
        tail -n 20 "$T_TMP/mmdebstrap.log"
        t_end
fi
t_check "the clean rootfs has no hangar-sidecar yet" test ! -e "$root/usr/bin/hangar-driver"
doc_block "$REPO/docs/images.md" images-add-binaries >"$T_TMP/Dockerfile" || t_end
deb_name=$(basename "$sidecar_deb")
t_check "docs/images.md's Dockerfile names this build's package ($deb_name)" grep -q "COPY $deb_name " "$T_TMP/Dockerfile"
mkdir -p "$T_TMP/context"
cp "$sidecar_deb" "$T_TMP/context/"
if im_dockerfile "$T_TMP/Dockerfile" "$T_TMP/context" "$root" >"$T_TMP/dockerfile.log" 2>&1; then
        t_check "docs/images.md's Dockerfile applies ($((SECONDS - start))s in all)" true
else
        t_fail "docs/images.md's Dockerfile failed:"
        tail -n 30 "$T_TMP/dockerfile.log"
fi
t_eq "its user for the driver's uid" "hangar-driver:1001" "$(chroot "$root" getent passwd 1001 | cut -d: -f1,3)"
t_check "the package file is removed, as the Dockerfile says" test ! -e "$root/tmp/$deb_name"
t_eq "hangar-sidecar installed" "install ok installed" \
        "$(chroot "$root" dpkg-query -W -f='${Status}' hangar-sidecar 2>&1)"
for dep in $(depends_names "$sidecar_deb"); do
        t_eq "Depends $dep installed by apt" "install ok installed" \
                "$(chroot "$root" dpkg-query -W -f='${Status}' "$dep" 2>&1)"
done
t_eq "hangar-probe version in the clean rootfs" "hangar-probe $VERSION" "$(chroot "$root" hangar-probe version 2>&1)"
t_eq "hangar-driver version in the clean rootfs" "hangar-driver $VERSION" "$(chroot "$root" hangar-driver version 2>&1)"
t_check "hangar-relay --help in the clean rootfs" im_quiet chroot "$root" hangar-relay --help
# ld.so --list exits non-zero when a library is missing, or prints "not found".
for b in hangar-probe hangar-driver hangar-relay hangar-grade; do
        if out=$(chroot "$root" /lib64/ld-linux-x86-64.so.2 --list "/usr/bin/$b" 2>&1) &&
                ! grep -q "not found" <<<"$out"; then
                t_check "$b: every library found in the clean rootfs" true
        else
                t_fail "$b: libraries missing in the clean rootfs: $out"
        fi
done
t_end
