# shellcheck shell=bash
# Shared by the images suite. Source after tests/lib/testlib.sh with
# BUILD_DIR and OUT set. images_build writes OUT/inputs.env (the pinned
# SOURCE_DATE_EPOCH, revision and version) and OUT/a (the archives).

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Used by the scripts that source this.
# shellcheck disable=SC2034
{
        BUILD_IMAGES=$REPO/scripts/build-images.sh
        WEBHOOK_REF_PREFIX=localhost/hangar-webhook
        SANDBOX_REF=localhost/hangar-sandbox:dev
        PAUSE_REF=registry.k8s.io/pause:3.10.2
}

im_need() {
        local tool
        for tool in "$@"; do
                command -v "$tool" >/dev/null 2>&1 || { echo "missing $tool (scripts/install-deps.sh)"; exit 1; }
        done
        [ "$(id -u)" -eq 0 ] || { echo "needs root"; exit 1; }
}

im_inputs() {
        [ -s "$OUT/inputs.env" ] || { echo "no $OUT/inputs.env: run images_build first"; exit 1; }
        # shellcheck source=/dev/null
        . "$OUT/inputs.env"
        export SOURCE_DATE_EPOCH HANGAR_IMAGE_REVISION
}

# im_quiet CMD...: CMD with its stdout discarded (for t_check, whose own
# line must still show).
im_quiet() { "$@" >/dev/null; }

# im_archive DIR REF: the archive images.list in DIR names for REF.
im_archive() { awk -v r="$2" '$1 == r { print $3 }' "$1/images.list"; }
im_digest() { awk -v r="$2" '$1 == r { print $2 }' "$1/images.list"; }

# im_unpack ARCHIVE REF BUNDLE: an OCI runtime bundle (config.json + rootfs).
im_unpack() {
        local layout
        layout=$(mktemp -d "$T_TMP/layout.XXXXXX")
        tar -C "$layout" -xf "$1" || return 1
        umoci unpack --image "$layout:$2" "$3" >/dev/null || return 1
        rm -rf "$layout"
}

# im_dockerfile FILE CONTEXT ROOT: the Dockerfile FILE applied to the root
# file system ROOT as a builder would, for the instructions the docs use:
# FROM (ROOT stands for it), COPY SRC DEST (from CONTEXT), USER NAME (the
# user of the RUNs after it) and RUN (through /bin/sh -c in a chroot of ROOT
# with /proc mounted); anything else is an error. Continuation lines are
# joined and comments dropped. Each RUN's output goes to stdout; the first
# instruction that fails ends it, non-zero.
im_dockerfile() {
        local file=$1 ctx=$2 root=$3 user=root line op args rc=0
        local -a steps
        mapfile -t steps < <(sed -e '/^[[:space:]]*#/d' "$file" | awk '/\\$/ { sub(/\\$/, ""); printf "%s", $0; next } { print }' |
                grep -v '^[[:space:]]*$')
        [ "${#steps[@]}" -gt 0 ] || { echo "im_dockerfile: no instruction in $file"; return 1; }
        mount -t proc proc "$root/proc" || return 1
        for line in "${steps[@]}"; do
                read -r op args <<<"$line"
                echo "-> $op $args"
                case ${op^^} in
                FROM) ;;
                COPY)
                        local src dest
                        read -r src dest <<<"$args"
                        [[ $dest == */ ]] && dest+=$(basename "$src")
                        cp "$ctx/$src" "$root/$dest" || { rc=1; break; }
                        ;;
                USER) user=$args ;;
                RUN)
                        if [ "$user" = root ]; then
                                chroot "$root" /bin/sh -c "$args" || { rc=1; break; }
                        else
                                chroot --userspec="$user" "$root" /bin/sh -c "$args" || { rc=1; break; }
                        fi
                        ;;
                *) echo "im_dockerfile: $op is not supported"; rc=1; break ;;
                esac
        done
        umount "$root/proc"
        return "$rc"
}

# crun with its own state root and no cgroups. crun refuses a hybrid cgroup
# host whose cgroup2 hierarchy has controllers even then, so there it runs in
# a private mount namespace without /sys/fs/cgroup/unified (as tests/pods/podrun).
crun_() {
        if [ -r /sys/fs/cgroup/unified/cgroup.controllers ] &&
                [ -n "$(tr -d '[:space:]' </sys/fs/cgroup/unified/cgroup.controllers)" ]; then
                unshare --mount --propagation private sh -c \
                        'umount -l /sys/fs/cgroup/unified 2>/dev/null; exec "$@"' crun \
                        crun --root "$T_TMP/crun" --cgroup-manager=disabled "$@"
        else
                crun --root "$T_TMP/crun" --cgroup-manager=disabled "$@"
        fi
}

# in_crun BUNDLE ARGS...: runs ARGS in a container of the bundle (its user,
# env and root from the image), read-only root and a tmpfs /tmp as a pod
# would have, plus the OCI mounts in IM_CRUN_MOUNTS (a JSON array); prints
# the output.
in_crun() {
        local bundle=$1 id
        shift
        id=hangar-img-test-$$-$RANDOM
        # Each run from the image's own config, not the last run's.
        [ -f "$bundle/config.json.image" ] || cp "$bundle/config.json" "$bundle/config.json.image"
        jq --argjson extra "${IM_CRUN_MOUNTS:-[]}" '.process.args = $ARGS.positional | .process.terminal = false
            | .root.readonly = true
            | .mounts += [{destination: "/tmp", type: "tmpfs", source: "tmpfs",
                           options: ["nosuid", "nodev", "mode=1777"]}] + $extra' --args -- \
                "$@" <"$bundle/config.json.image" >"$bundle/config.json" || return 1
        crun_ run --bundle "$bundle" "$id" </dev/null
}
