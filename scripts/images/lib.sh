# shellcheck shell=bash
# Helpers for scripts/build-images.sh: Debian root file systems (mmdebstrap,
# cached), reproducible layers (GNU tar) and OCI images (umoci), written as
# OCI archives. Sourced; expects from the caller:
#   IMG_CACHE   cache root (rootfs tarballs, downloaded .debs)
#   IMG_WORK    scratch directory (removed by the caller)
#   IMG_SDE     SOURCE_DATE_EPOCH: every timestamp in an image
#   IMG_SUITE, IMG_MIRROR, IMG_SECURITY_MIRROR   the Debian sources
#   IMG_REBUILD 1: build root file systems again even when cached
# Everything is logged to stderr.

# Bump when a rootfs recipe or its post-processing changes: new cache keys.
IMG_ROOTFS_RECIPE=4
# The root file systems' own epoch (bookworm's release day), independent of
# the images' SOURCE_DATE_EPOCH so that one cached rootfs serves any commit:
# whatever mmdebstrap and dpkg create is stamped with it, and files Debian
# ships keep their own (older) times. In an image, anything newer than this
# epoch was made by the image's build and gets IMG_SDE (img_normalize).
IMG_ROOTFS_EPOCH=1686355200

img_log() { echo "build-images: $*" >&2; }
img_die() { echo "build-images: error: $*" >&2; exit 1; }

img_sha256() { sha256sum | cut -d' ' -f1; }

# RFC 3339 UTC form of IMG_SDE, for OCI "created" fields and labels.
img_created() { date -u -d "@$IMG_SDE" +%Y-%m-%dT%H:%M:%SZ; }

img_sources() {
        printf '%s\n' \
                "deb $IMG_MIRROR $IMG_SUITE main" \
                "deb $IMG_MIRROR $IMG_SUITE-updates main" \
                "deb $IMG_SECURITY_MIRROR $IMG_SUITE-security main"
}

# What the Debian archive looked like when this machine last ran apt-get
# update: the Date of each InRelease file apt has for our sources. It stands
# for the snapshot in the cache key, so a cached rootfs is rebuilt once the
# machine has seen a newer archive (security updates), and reused until then.
img_snapshot() {
        local src host path f
        while read -r _ src suite _; do
                host=${src#*://}
                path="${host%/}_dists_${suite}_InRelease"
                f="/var/lib/apt/lists/${path//\//_}"
                if [ -r "$f" ]; then
                        echo "$suite $(sed -n 's/^Date: //p' "$f" | head -n1)"
                else
                        echo "$suite unknown"
                fi
        done <<<"$(img_sources)" # printf of fixed lines: cannot fail
}

# Package names of a .deb's Depends (versions and alternatives dropped: the
# rootfs gets the suite's current version, checked against the constraint by
# img_check_depends).
img_deb_depends_names() {
        dpkg-deb -f "$1" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/[[:space:]]//g' |
                grep -v '^$' | sort -u
}

# img_check_depends DEB PACKAGES_FILE: every Depends of DEB (first
# alternative) is in PACKAGES_FILE (name=version lines) at a version that
# satisfies its constraint.
img_check_depends() {
        local deb=$1 pkgs=$2 item name op ver have bad=0 depends
        # Read first: a .deb whose fields cannot be read fails the check.
        depends=$(dpkg-deb -f "$deb" Depends) || { img_log "$(basename "$deb"): cannot read Depends"; return 1; }
        [ -n "$depends" ] || { img_log "$(basename "$deb"): no Depends"; return 1; }
        while read -r item; do
                [ -n "$item" ] || continue
                item=${item%%|*}
                name=$(sed 's/(.*//; s/[[:space:]]//g' <<<"$item")
                have=$(sed -n "s/^${name}=//p" "$pkgs")
                if [ -z "$have" ]; then
                        img_log "$(basename "$deb"): Depends $name is not in the image"
                        bad=1
                        continue
                fi
                if [[ $item =~ \(([<>=]+)[[:space:]]*([^\)]+)\) ]]; then
                        op=${BASH_REMATCH[1]} ver=${BASH_REMATCH[2]}
                        case $op in
                        ">=") op=ge ;; "<=") op=le ;; "=") op=eq ;; ">>") op=gt ;; "<<") op=lt ;;
                        *) img_log "unknown version relation $op in $item"; bad=1; continue ;;
                        esac
                        if ! dpkg --compare-versions "$have" "$op" "${ver// /}"; then
                                img_log "$(basename "$deb"): Depends $item, image has $have"
                                bad=1
                        fi
                fi
        done <<<"${depends//,/$'\n'}"
        return "$bad"
}

# img_std_fds_only CMD...: run CMD with only descriptors 0-2 open.
# mmdebstrap hands apt a hook `cat >&FD` with FD the lowest descriptor free
# when it makes its pipe, and apt runs it with /bin/sh: dash reads one digit
# after `>&`, so the download fails whenever that pipe lands above 9. What
# we inherit (our cache lock on 9, a test runner's descriptors) decides
# where it lands; closing them all keeps the pipe's number low.
img_std_fds_only() {
        (
                local fd
                for fd in /proc/self/fd/*; do
                        fd=${fd##*/}
                        [ "$fd" -gt 2 ] && eval "exec $fd>&-"
                done
                exec "$@"
        )
}

# img_rootfs NAME VARIANT PACKAGE...: prints the path of a cached rootfs
# tarball (mmdebstrap VARIANT of IMG_SUITE plus PACKAGEs), building it when
# its key is not cached (or IMG_REBUILD=1). Beside it, NAME-KEY.packages lists
# name=version of every package in it. The key covers the recipe, the
# variant, the sorted package list, the sources, mmdebstrap's version and the
# archive snapshot (img_snapshot). Downloaded .debs are kept in
# IMG_CACHE/debs and offered to later builds (apt checks their hashes).
img_rootfs() {
        local name=$1 variant=$2
        shift 2
        local pkgs key base dir tarball list
        pkgs=$(printf '%s\n' "$@" | sort -u | paste -sd, -)
        key=$({
                echo "recipe $IMG_ROOTFS_RECIPE"
                echo "variant $variant"
                echo "packages $pkgs"
                img_sources
                mmdebstrap --version
                img_snapshot
        } | img_sha256 | cut -c1-16)
        base="$IMG_CACHE/rootfs/$name-$key"
        tarball="$base.tar" list="$base.packages"
        echo "$tarball" >>"$IMG_WORK/rootfs-used"
        if [ "${IMG_REBUILD:-0}" != 1 ] && [ -s "$tarball" ] && [ -s "$list" ]; then
                img_log "$name: cached rootfs $tarball"
                echo "$tarball"
                return 0
        fi
        img_log "$name: mmdebstrap --variant=$variant $IMG_SUITE (+ $pkgs)"
        mkdir -p "$IMG_CACHE/rootfs" "$IMG_CACHE/debs"
        dir="$IMG_WORK/mmdebstrap-$name"
        rm -rf "$dir"
        local hooks=()
        if [ "$variant" != extract ]; then
                # Offer the cached .debs; in extract mode everything in the
                # archive directory would be unpacked, so it downloads (small).
                # Merged /usr from the start, as Debian installs it (without
                # the hook apt picks usrmerge, which converts and needs perl).
                hooks=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
                        --setup-hook="mkdir -p \"\$1/var/cache/apt/archives\" && find '$IMG_CACHE/debs' -maxdepth 1 -name '*.deb' -exec cp -l -t \"\$1/var/cache/apt/archives\" {} +")
        fi
        local sources t0=$SECONDS attempt
        mapfile -t sources <<<"$(img_sources)"
        # Up to three tries: a download from the archive fails now and then
        # (CI saw "apt download failed" once); apt checks every .deb's hash,
        # so a retry cannot change what is built, only whether it is.
        # mmdebstrap's and apt's own words go to a log per try (its --quiet
        # hid apt's error, leaving only "apt download failed"); a failed
        # try prints the log's end, so the cause is on record.
        local log
        for attempt in 1 2 3; do
                rm -rf "$dir"
                log=$IMG_WORK/mmdebstrap-$name.try$attempt.log
                SOURCE_DATE_EPOCH=$IMG_ROOTFS_EPOCH img_std_fds_only nice -n 10 mmdebstrap --verbose --mode=root --variant="$variant" \
                        --format=directory --skip=cleanup/apt/cache --skip=essential/unlink \
                        --include="$pkgs" "${hooks[@]}" "$IMG_SUITE" "$dir" "${sources[@]}" >"$log" 2>&1 && break
                img_log "$name: mmdebstrap failed (try $attempt of 3); the end of its log ($log):"
                grep -v '^I: \|^Get:\|^Hit:\|^Ign:\|^Unpacking\|^Selecting\|^Setting up\|^Preparing' "$log" | tail -n 40 >&2
                [ "$attempt" -lt 3 ] || img_die "mmdebstrap failed for $name (3 tries)"
                img_log "$name: again in $((attempt * 10))s"
                sleep $((attempt * 10))
        done
        img_log "$name: mmdebstrap took $((SECONDS - t0))s"

        if [ "$variant" = extract ]; then
                # No dpkg database in an extracted tree: record each package's
                # control data where scanners look for it (as distroless does).
                mkdir -p "$dir/var/lib/dpkg/status.d"
                local deb p
                : >"$list.tmp"
                for deb in "$dir"/var/cache/apt/archives/*.deb; do
                        p=$(dpkg-deb -f "$deb" Package)
                        dpkg-deb -f "$deb" >"$dir/var/lib/dpkg/status.d/$p"
                        echo "$p=$(dpkg-deb -f "$deb" Version)" >>"$list.tmp"
                done
                sort -o "$list.tmp" "$list.tmp"
        else
                dpkg-query --admindir="$dir/var/lib/dpkg" -W -f='${Package}=${Version}\n' |
                        sort >"$list.tmp"
        fi
        local f
        for f in "$dir"/var/cache/apt/archives/*.deb; do
                [ -e "$f" ] || continue
                if [ "$f" -ef "$IMG_CACHE/debs/${f##*/}" ]; then
                        rm -f "$f" # offered by the setup hook (a hard link)
                else
                        mv -f "$f" "$IMG_CACHE/debs/"
                fi
        done
        rm -rf "$dir/var/cache/apt/archives/partial"
        find "$dir" -newermt "@$IMG_ROOTFS_EPOCH" -print0 | xargs -0r touch -h -d "@$IMG_ROOTFS_EPOCH"
        tar -C "$dir" --sort=name --numeric-owner --xattrs --format=posix \
                --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
                -cf "$tarball.tmp" . || img_die "cannot write $tarball"
        rm -rf "$dir"
        mv -f "$list.tmp" "$list"
        mv -f "$tarball.tmp" "$tarball"
        echo "$tarball"
}

# img_unpack_rootfs TARBALL DIR: a fresh tree from a cached rootfs, without
# device nodes (the runtime provides /dev).
img_unpack_rootfs() {
        rm -rf "$2"
        mkdir -p "$2"
        tar -C "$2" -xpf "$1" --numeric-owner --xattrs --exclude='./dev/*' ||
                img_die "cannot unpack $1"
        chmod 0755 "$2"
}

# img_normalize DIR: removes what differs between two builds of the same
# inputs, and stamps what the image's build made (newer than
# IMG_ROOTFS_EPOCH) with IMG_SDE.
img_normalize() {
        local d=$1
        # The runtime writes these (kubelet mounts resolv.conf, hostname, hosts).
        rm -f "$d/etc/resolv.conf" "$d/etc/hostname"
        [ ! -e "$d/etc/machine-id" ] || : >"$d/etc/machine-id"
        rm -f "$d/var/lib/dbus/machine-id"
        # ld.so finds every library in the default multiarch paths without it.
        rm -f "$d/etc/ld.so.cache" "$d/var/cache/ldconfig/aux-cache"
        # Logs, apt's lists and caches, backups of the databases.
        [ ! -d "$d/var/log" ] || find "$d/var/log" -type f -delete
        if [ -d "$d/var/lib/apt" ]; then
                rm -rf "$d/var/lib/apt/lists" "$d/var/cache/apt"
                mkdir -p "$d/var/lib/apt/lists/partial"
        fi
        rm -f "$d"/var/cache/debconf/*-old "$d"/var/lib/dpkg/*-old
        rm -f "$d"/etc/passwd- "$d"/etc/group- "$d"/etc/shadow- "$d"/etc/gshadow-
        # Byte-compiled Python differs between runs (marshal's reference
        # flags, set order); Python compiles in memory when they are absent.
        find "$d" -type d -name __pycache__ -prune -exec rm -rf {} +
        [ ! -d "$d/tmp" ] || find "$d/tmp" -mindepth 1 -delete
        [ ! -d "$d/run" ] || find "$d/run" -mindepth 1 -delete
        mkdir -p "$d/tmp" "$d/dev" "$d/proc" "$d/sys"
        chmod 1777 "$d/tmp"
        chmod 0755 "$d"
        find "$d" -newermt "@$IMG_ROOTFS_EPOCH" -print0 | xargs -0r touch -h -d "@$IMG_SDE"
}

# img_layer DIR TAR: DIR as an uncompressed layer tarball, entries sorted,
# owners numeric, no atime/ctime, no pid in pax header names.
img_layer() {
        tar -C "$1" --sort=name --numeric-owner --format=posix \
                --mtime="@$IMG_SDE" --clamp-mtime \
                --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
                -cf "$2" . || img_die "cannot write layer $2"
}

# img_passwd DIR LINE...: appends passwd lines (name:x:uid:gid:gecos:home:shell)
# with matching group, shadow and gshadow entries, creating the files when
# missing.
img_passwd() {
        local d=$1 line name uid gid home
        shift
        mkdir -p "$d/etc"
        touch "$d/etc/passwd" "$d/etc/group" "$d/etc/shadow" "$d/etc/gshadow"
        chmod 0640 "$d/etc/shadow" "$d/etc/gshadow"
        for line in "$@"; do
                IFS=: read -r name _ uid gid _ home _ <<<"$line"
                echo "$line" >>"$d/etc/passwd"
                grep -q "^[^:]*:[^:]*:$gid:" "$d/etc/group" || echo "$name:x:$gid:" >>"$d/etc/group"
                echo "$name:!:::::::" >>"$d/etc/shadow"
                echo "$name:!::" >>"$d/etc/gshadow"
                if [ "$uid" != 0 ] && [ "${home#/home/}" != "$home" ]; then
                        mkdir -p "$d$home"
                        chown "$uid:$gid" "$d$home"
                        chmod 0750 "$d$home"
                fi
        done
}

# img_oci NAME REF LAYER_TAR ARCHIVE CONFIG_ARGS...: an OCI image of one layer,
# its config from the umoci config flags given, written as an OCI archive
# (a tar of an image layout) whose index names it REF in both annotations
# containerd and the containers tools read:
#   io.containerd.image.name           ctr images import
#   org.opencontainers.image.ref.name  skopeo/podman (oci-archive:FILE:REF)
# Prints the manifest digest.
img_oci() {
        local name=$1 ref=$2 layer=$3 archive=$4
        shift 4
        local layout="$IMG_WORK/oci-$name" created
        created=$(img_created)
        rm -rf "$layout"
        umoci init --layout "$layout" >&2
        umoci new --image "$layout:build" >&2
        umoci raw add-layer --image "$layout:build" --history.created="$created" \
                --history.created_by="scripts/build-images.sh ($name)" "$layer" >&2
        umoci config --image "$layout:build" --no-history --created="$created" \
                --architecture="$(dpkg --print-architecture)" --os=linux "$@" >&2
        umoci gc --layout "$layout" >&2
        local digest
        digest=$(jq -r '.manifests[0].digest' "$layout/index.json")
        [ "$(jq '.manifests | length' "$layout/index.json")" = 1 ] ||
                img_die "$name: expected one manifest in the layout"
        jq -c --arg ref "$ref" \
                '.manifests[0].annotations = {"io.containerd.image.name": $ref,
                                              "org.opencontainers.image.ref.name": $ref}' \
                "$layout/index.json" >"$layout/index.json.new"
        mv "$layout/index.json.new" "$layout/index.json"
        mkdir -p "$(dirname "$archive")"
        tar -C "$layout" --sort=name --owner=0 --group=0 --numeric-owner --format=gnu \
                --mode=a+rX --mtime="@$IMG_SDE" -cf "$archive.tmp" oci-layout index.json blobs ||
                img_die "cannot write $archive"
        mv -f "$archive.tmp" "$archive"
        rm -rf "$layout"
        echo "$digest"
}
