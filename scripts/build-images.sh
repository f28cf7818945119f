#!/usr/bin/env bash
# Builds hangar-sidecar's container images offline and reproducibly, from
# Debian packages (mmdebstrap) and our own .debs (CPack), made into OCI images
# with umoci; nothing comes FROM a registry. docs/images.md has the why.
#
#   scripts/build-images.sh [--build-dir DIR] [--out DIR] [--cache DIR]
#                           [--rebuild-rootfs] [--prune] [webhook|sandbox|pause|bin|bare]...
#
# Images (all by default), written as OCI archives into the output dir:
#   webhook  localhost/hangar-webhook:VERSION   hangar-webhook-VERSION.oci.tar
#   sandbox  localhost/hangar-sandbox:dev       hangar-sandbox-dev.oci.tar
#   pause    registry.k8s.io/pause:3.10.2       pause-3.10.2.oci.tar
#   bin      localhost/hangar-bin:VERSION       hangar-bin-VERSION.oci.tar (built on request)
#            the sidecar's binaries as a bundle in /opt/hangar (scripts/images/bundle.sh),
#            for pods whose image lacks them, and busybox to copy it out
#   bare     localhost/hangar-bare:dev          hangar-bare-dev.oci.tar (built on request)
#            an environment image with no Debian library: busybox (static) only
# plus packages/hangar-{sidecar,webhook}_VERSION_ARCH.deb, NAME.packages (the
# Debian packages in each image, name=version) and images.list (REF DIGEST
# ARCHIVE per line). The last lines on stdout are the archives' paths, one per
# line; everything else goes to stderr. An archive loads with
#   ctr -n k8s.io images import FILE     skopeo copy oci-archive:FILE ...
#   podman load -i FILE
#
# Inputs (flags win over the environment):
#   --build-dir, HANGAR_BUILD_DIR   a configured and built CMake build dir (default: build)
#   --out, HANGAR_IMAGES_OUT        output dir (default: BUILD_DIR/images)
#   --cache, HANGAR_IMAGES_CACHE    rootfs and .deb cache
#                                   (default: ${XDG_CACHE_HOME:-$HOME/.cache}/hangar-images)
#   --rebuild-rootfs                run mmdebstrap even when the rootfs is cached
#   --prune                         afterwards, delete cached root file systems this
#                                   run did not use (other keys: older snapshots, recipes;
#                                   with a subset of the images, the others' too)
#   SOURCE_DATE_EPOCH               every timestamp in the images (default: HEAD's commit time)
#   HANGAR_IMAGE_REVISION           revision label (default: git HEAD)
#   HANGAR_IMAGE_SOURCE             source label (default: git remote origin, else NOASSERTION)
#   HANGAR_IMAGE_LICENSES           licenses label, SPDX (default: NOASSERTION)
#   HANGAR_DEBIAN_SUITE, HANGAR_DEBIAN_MIRROR, HANGAR_DEBIAN_SECURITY_MIRROR
#                                   (default: bookworm, http://deb.debian.org/debian{,-security})
# Same inputs (binaries, SOURCE_DATE_EPOCH, labels, Debian package versions)
# give the same image digests. Needs root (mmdebstrap --mode=root, chroot).
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$script_dir/.." && pwd)
# shellcheck source=scripts/images/lib.sh
. "$script_dir/images/lib.sh"
# shellcheck source=scripts/images/bundle.sh
. "$script_dir/images/bundle.sh"

build_dir=${HANGAR_BUILD_DIR:-$repo/build}
out_dir=${HANGAR_IMAGES_OUT:-}
IMG_CACHE=${HANGAR_IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/hangar-images}
IMG_REBUILD=0
prune=0
images=()
while [ $# -gt 0 ]; do
        case $1 in
        --build-dir) build_dir=$2; shift 2 ;;
        --out) out_dir=$2; shift 2 ;;
        --cache) IMG_CACHE=$2; shift 2 ;;
        --rebuild-rootfs) IMG_REBUILD=1; shift ;;
        --prune) prune=1; shift ;;
        webhook | sandbox | pause | bin | bare) images+=("$1"); shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) img_die "unknown argument '$1' (see --help)" ;;
        esac
done
[ ${#images[@]} -gt 0 ] || images=(webhook sandbox pause)

[ "$(id -u)" -eq 0 ] || img_die "needs root (mmdebstrap --mode=root, chroot, file owners)"
for tool in mmdebstrap umoci jq dpkg-deb dpkg-shlibdeps cpack gcc tar unshare chroot flock; do
        command -v "$tool" >/dev/null 2>&1 || img_die "$tool not found (scripts/install-deps.sh installs it)"
done
[ -f "$build_dir/CMakeCache.txt" ] || img_die "$build_dir is not a CMake build dir (--build-dir)"
build_dir=$(cd "$build_dir" && pwd)
out_dir=${out_dir:-$build_dir/images}
mkdir -p "$out_dir" "$IMG_CACHE/tmp"
out_dir=$(cd "$out_dir" && pwd)
IMG_CACHE=$(cd "$IMG_CACHE" && pwd)

IMG_SUITE=${HANGAR_DEBIAN_SUITE:-bookworm}
IMG_MIRROR=${HANGAR_DEBIAN_MIRROR:-http://deb.debian.org/debian}
IMG_SECURITY_MIRROR=${HANGAR_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
IMG_SDE=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || true)}
[[ $IMG_SDE =~ ^[0-9]+$ ]] || img_die "SOURCE_DATE_EPOCH unset and no git history to take it from"
revision=${HANGAR_IMAGE_REVISION:-$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)}
source_url=${HANGAR_IMAGE_SOURCE:-$(git -C "$repo" config --get remote.origin.url 2>/dev/null || echo NOASSERTION)}
licenses=${HANGAR_IMAGE_LICENSES:-NOASSERTION}
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build_dir/CMakeCache.txt")
[ -n "$version" ] || img_die "no CMAKE_PROJECT_VERSION in $build_dir/CMakeCache.txt"
arch=$(dpkg --print-architecture)
export IMG_CACHE IMG_SDE IMG_SUITE IMG_MIRROR IMG_SECURITY_MIRROR IMG_REBUILD

# One build at a time per cache (the rootfs and .deb caches are shared).
exec 9>"$IMG_CACHE/.lock"
flock -w 3600 9 || img_die "another build holds $IMG_CACHE/.lock"
IMG_WORK=$(mktemp -d "$IMG_CACHE/tmp/build.XXXXXX")
export IMG_WORK
trap 'rm -rf "$IMG_WORK"' EXIT
start=$SECONDS
img_log "version $version, revision $revision, SOURCE_DATE_EPOCH $IMG_SDE ($(img_created))"

# The labels every image carries, in its config and as manifest annotations.
# img_labels ARRAY TITLE VERSION DESCRIPTION: umoci's arguments for them, into ARRAY.
img_labels() {
        local -n into=$1
        local k v
        shift
        into=()
        while IFS='=' read -r k v; do
                into+=("--config.label=$k=$v" "--manifest.annotation=$k=$v")
        done <<EOF
org.opencontainers.image.title=$1
org.opencontainers.image.version=$2
org.opencontainers.image.description=$3
org.opencontainers.image.source=$source_url
org.opencontainers.image.revision=$revision
org.opencontainers.image.created=$(img_created)
org.opencontainers.image.licenses=$licenses
org.opencontainers.image.vendor=hangar-sidecar
EOF
}
std_path=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# ---- the Debian packages ----------------------------------------------------
packages() {
        local bin
        for bin in webhook/hangar-webhook driver/hangar-driver relay/hangar-relay grade/hangar-grade probe/hangar-probe; do
                [ -x "$build_dir/$bin" ] || img_die "$build_dir/$bin missing: build first (ninja -C $build_dir hangar-shipped)"
        done
        img_log "packages: cpack -G DEB"
        rm -rf "$IMG_WORK/cpack"
        (cd "$build_dir" && SOURCE_DATE_EPOCH=$IMG_SDE cpack -G DEB -B "$IMG_WORK/cpack") >&2 ||
                img_die "cpack failed"
        mkdir -p "$out_dir/packages"
        rm -f "$out_dir"/packages/*.deb
        mv "$IMG_WORK"/cpack/*.deb "$out_dir/packages/"
        sidecar_deb="$out_dir/packages/hangar-sidecar_${version}_${arch}.deb"
        webhook_deb="$out_dir/packages/hangar-webhook_${version}_${arch}.deb"
        if [ ! -s "$sidecar_deb" ] || [ ! -s "$webhook_deb" ]; then
                img_die "cpack did not write the expected .debs"
        fi
}

# Drops documentation but keeps each package's copyright file.
prune_docs() {
        local d=$1
        find "$d/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete 2>/dev/null || true
        find "$d/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
        rm -rf "$d/usr/share/man" "$d/usr/share/info" "$d/usr/share/lintian" "$d/usr/share/locale"
}

# ---- webhook: the webhook binary and only the libraries it needs ------------
image_webhook() {
        local rootfs root="$IMG_WORK/root-webhook" list
        # shellcheck disable=SC2046 # one package name per word
        rootfs=$(img_rootfs webhook extract $(img_deb_depends_names "$webhook_deb"))
        list=${rootfs%.tar}.packages
        img_check_depends "$webhook_deb" "$list" || img_die "webhook rootfs does not satisfy hangar-webhook's Depends"
        img_unpack_rootfs "$rootfs" "$root"
        dpkg-deb -x "$webhook_deb" "$root"
        dpkg-deb -f "$webhook_deb" >"$root/var/lib/dpkg/status.d/hangar-webhook"
        { cat "$list"; echo "hangar-webhook=$version"; } | sort >"$out_dir/hangar-webhook.packages"
        prune_docs "$root"
        # No package manager, no mirror configuration, no charset converters
        # (nothing here calls iconv; UTF-8 and ASCII are built into glibc).
        rm -rf "$root/etc/apt" "$root/etc/dpkg" "$root/etc/fstab" "$root/var/lib/apt" \
                "$root/var/cache" "$root/var/log" "$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/gconv"
        img_passwd "$root" root:x:0:0:root:/root:/usr/sbin/nologin \
                nonroot:x:65532:65532:nonroot:/home/nonroot:/usr/sbin/nologin
        printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$root/etc/nsswitch.conf"
        # The chart mounts config.yaml and tls/ here.
        mkdir -p "$root/etc/hangar-webhook"
        img_normalize "$root"
        img_layer "$root" "$IMG_WORK/layer-webhook.tar"
        local -a labels
        img_labels labels hangar-webhook "$version" \
                "hangar-sidecar's mutating admission webhook (hangar-webhook serve)"
        ref[webhook]="localhost/hangar-webhook:$version"
        archive[webhook]="$out_dir/hangar-webhook-$version.oci.tar"
        digest[webhook]=$(img_oci webhook "${ref[webhook]}" "$IMG_WORK/layer-webhook.tar" "${archive[webhook]}" \
                --config.user=65532:65532 --config.workingdir=/ --config.env="$std_path" \
                --config.entrypoint=/usr/bin/hangar-webhook --config.cmd=serve \
                --config.exposedports=8443/tcp --config.stopsignal=SIGTERM "${labels[@]}")
        rm -rf "$root" "$IMG_WORK/layer-webhook.tar"
}

# ---- sandbox: an example environment image with hangar-sidecar installed ----
image_sandbox() {
        local rootfs root="$IMG_WORK/root-sandbox" list
        # Installed from the rootfs cache; the package itself is added by apt
        # below, its Depends already present (so no download, and the cached
        # rootfs does not change with every build of our binaries).
        # shellcheck disable=SC2046 # one package name per word
        rootfs=$(img_rootfs sandbox apt bash busybox ca-certificates procps python3 tmux \
                $(img_deb_depends_names "$sidecar_deb"))
        list=${rootfs%.tar}.packages
        img_check_depends "$sidecar_deb" "$list" || img_die "sandbox rootfs does not satisfy hangar-sidecar's Depends"
        img_unpack_rootfs "$rootfs" "$root"
        cp "$sidecar_deb" "$root/tmp/hangar-sidecar.deb"
        # A private mount namespace: /dev and /proc vanish with it.
        # shellcheck disable=SC2016 # expanded by the inner shell
        unshare --mount --propagation private sh -euc '
                mount --rbind /dev "$1/dev"
                mount -t proc proc "$1/proc"
                DEBIAN_FRONTEND=noninteractive chroot "$1" apt-get install --yes \
                        -o Dpkg::Use-Pty=0 -o APT::Sandbox::User=root /tmp/hangar-sidecar.deb
        ' sh "$root" >&2 || img_die "apt-get install hangar-sidecar.deb failed in the sandbox rootfs"
        rm -f "$root/tmp/hangar-sidecar.deb"
        dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Package}=${Version}\n' |
                sort >"$out_dir/hangar-sandbox.packages"
        # The agent (1000) and the driver's uid (1001, driver.uid's default),
        # so both have names in ps, ls and id.
        img_passwd "$root" agent:x:1000:1000:agent:/home/agent:/bin/bash \
                hangar-driver:x:1001:1001:hangar driver:/var/lib/hangar:/usr/sbin/nologin
        img_normalize "$root"
        img_layer "$root" "$IMG_WORK/layer-sandbox.tar"
        local -a labels
        img_labels labels hangar-sandbox "$version" \
                "Example agent environment: Debian $IMG_SUITE, bash, busybox, python3, tmux and hangar-sidecar (hangar-driver, hangar-relay, hangar-grade, hangar-probe)"
        ref[sandbox]="localhost/hangar-sandbox:dev"
        archive[sandbox]="$out_dir/hangar-sandbox-dev.oci.tar"
        digest[sandbox]=$(img_oci sandbox "${ref[sandbox]}" "$IMG_WORK/layer-sandbox.tar" "${archive[sandbox]}" \
                --config.user=1000:1000 --config.workingdir=/home/agent \
                --config.env="$std_path" --config.env=LANG=C.UTF-8 \
                --config.cmd=sleep --config.cmd=infinity "${labels[@]}")
        rm -rf "$root" "$IMG_WORK/layer-sandbox.tar"
}

# ---- pause: the pod sandbox's first process ---------------------------------
image_pause() {
        local root="$IMG_WORK/root-pause"
        rm -rf "$root"
        mkdir -p "$root"
        chmod 0755 "$root"
        nice -n 10 gcc -std=gnu17 -Os -static -s -Wall -Wextra -Werror -Wformat=2 -Wshadow \
                -Werror=switch-default -Wstrict-prototypes -Wmissing-prototypes \
                -o "$root/pause" "$script_dir/images/pause.c" >&2 || img_die "cannot build pause.c"
        chmod 0755 "$root/pause"
        touch -h -d "@$IMG_SDE" "$root/pause" "$root"
        img_layer "$root" "$IMG_WORK/layer-pause.tar"
        : >"$out_dir/pause.packages"
        local -a labels
        img_labels labels pause 3.10.2 \
                "hangar-sidecar's own pause program (scripts/images/pause.c), named as containerd's sandbox image"
        ref[pause]="registry.k8s.io/pause:3.10.2"
        archive[pause]="$out_dir/pause-3.10.2.oci.tar"
        digest[pause]=$(img_oci pause "${ref[pause]}" "$IMG_WORK/layer-pause.tar" "${archive[pause]}" \
                --config.user=65535:65535 --config.workingdir=/ --config.env="$std_path" \
                --config.entrypoint=/pause "${labels[@]}")
        rm -rf "$root" "$IMG_WORK/layer-pause.tar"
}

# ---- bin: the sidecar's binaries for any environment image ------------------
# The bundle (loader and libraries of its own) in /opt/hangar, where the pod
# mounts it; busybox (static) in /bin only to copy the bundle out in an init
# container. Nothing else: no shell on a PATH, no package database.
image_bin() {
        local root="$IMG_WORK/root-bin"
        rm -rf "$root"
        mkdir -p "$root/bin"
        chmod 0755 "$root"
        img_bundle "$build_dir" "$root" /opt/hangar
        install -m 0755 /bin/busybox "$root/bin/busybox"
        # ldd fails on a static executable: a dynamic busybox would need the
        # libc this image does not have.
        ! ldd /bin/busybox >/dev/null 2>&1 || img_die "/bin/busybox is not static (install busybox-static)"
        {
                cat "$root/opt/hangar/bundle.packages"
                dpkg-query -W -f='${Package}=${Version}\n' busybox-static
        } | sort -u >"$out_dir/hangar-bin.packages"
        img_normalize "$root"
        img_layer "$root" "$IMG_WORK/layer-bin.tar"
        local -a labels
        img_labels labels hangar-bin "$version" \
                "hangar-sidecar's binaries with their own loader and libraries (/opt/hangar), for any environment image"
        ref[bin]="localhost/hangar-bin:$version"
        archive[bin]="$out_dir/hangar-bin-$version.oci.tar"
        digest[bin]=$(img_oci bin "${ref[bin]}" "$IMG_WORK/layer-bin.tar" "${archive[bin]}" \
                --config.user=1001:1001 --config.workingdir=/ --config.env=PATH=/opt/hangar/bin \
                --config.entrypoint=/bin/busybox "${labels[@]}")
        rm -rf "$root" "$IMG_WORK/layer-bin.tar"
}

# ---- bare: an environment image without any of Debian's libraries -----------
# What an admin's own image may be: busybox (static), the agent's and the
# driver's users, no libc. The tests run the bundle in it.
image_bare() {
        local root="$IMG_WORK/root-bare" applet
        rm -rf "$root"
        mkdir -p "$root"/{bin,etc,tmp,home,var/lib,proc,sys,dev}
        chmod 0755 "$root"
        chmod 1777 "$root/tmp"
        ! ldd /bin/busybox >/dev/null 2>&1 || img_die "/bin/busybox is not static (install busybox-static)"
        install -m 0755 /bin/busybox "$root/bin/busybox"
        for applet in sh ls cat id sleep env ps true false echo mkdir rm; do
                ln -s busybox "$root/bin/$applet"
        done
        img_passwd "$root" root:x:0:0:root:/root:/bin/sh agent:x:1000:1000:agent:/home/agent:/bin/sh \
                hangar-driver:x:1001:1001:hangar driver:/var/lib/hangar:/bin/false
        dpkg-query -W -f='${Package}=${Version}\n' busybox-static >"$out_dir/hangar-bare.packages"
        img_normalize "$root"
        img_layer "$root" "$IMG_WORK/layer-bare.tar"
        local -a labels
        img_labels labels hangar-bare dev "An environment image with no Debian library: busybox (static) only"
        ref[bare]="localhost/hangar-bare:dev"
        archive[bare]="$out_dir/hangar-bare-dev.oci.tar"
        digest[bare]=$(img_oci bare "${ref[bare]}" "$IMG_WORK/layer-bare.tar" "${archive[bare]}" \
                --config.user=1000:1000 --config.workingdir=/home/agent --config.env=PATH=/bin \
                --config.cmd=sleep --config.cmd=infinity "${labels[@]}")
        rm -rf "$root" "$IMG_WORK/layer-bare.tar"
}

declare -A ref digest archive
needs_packages=0
for image in "${images[@]}"; do
        case $image in webhook | sandbox) needs_packages=1 ;; *) ;; esac
done
[ "$needs_packages" = 0 ] || packages

archives=()
: >"$out_dir/images.list.tmp"
for image in "${images[@]}"; do
        t0=$SECONDS
        "image_$image"
        printf '%s %s %s\n' "${ref[$image]}" "${digest[$image]}" "${archive[$image]}" >>"$out_dir/images.list.tmp"
        img_log "$image: ${ref[$image]} ${digest[$image]} $(du -h "${archive[$image]}" | cut -f1) in $((SECONDS - t0))s"
        archives+=("${archive[$image]}")
done
mv -f "$out_dir/images.list.tmp" "$out_dir/images.list"
if [ "$prune" = 1 ]; then
        for f in "$IMG_CACHE"/rootfs/*.tar; do
                [ -e "$f" ] || continue
                if ! grep -qxF "$f" "$IMG_WORK/rootfs-used" 2>/dev/null; then
                        img_log "prune: $f"
                        rm -f "$f" "${f%.tar}.packages"
                fi
        done
fi
img_log "done in $((SECONDS - start))s; archives:"
printf '%s\n' "${archives[@]}"
