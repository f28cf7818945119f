#!/usr/bin/env bash
# images_inspect: each archive as the loaders see it. skopeo inspect reads it;
# skopeo copy verifies every blob; the index names it for ctr
# (io.containerd.image.name) and for skopeo/podman (ref.name); the labels are
# there with the pinned values; the user is not root; the entrypoints are the
# ones the chart and containerd expect; podman load (when podman is here)
# names it right.
# shellcheck disable=SC2016 # single-quoted bash -c scripts take their arguments positionally
OUT=$2
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/images/imagelib.sh
. "$(dirname "$0")/imagelib.sh"
im_need skopeo jq
im_inputs
created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)

t_begin images_inspect
while read -r ref digest archive; do
        echo "-- $ref"
        if ! skopeo inspect "oci-archive:$archive" >"$T_TMP/inspect.json" 2>"$T_TMP/err"; then
                t_fail "skopeo inspect oci-archive:$archive: $(cat "$T_TMP/err")"
                continue
        fi
        t_eq "skopeo's digest is images.list's" "$digest" "$(jq -r .Digest "$T_TMP/inspect.json")"
        t_check "skopeo inspect oci-archive:FILE:REF finds it by name" \
                im_quiet skopeo inspect "oci-archive:$archive:$ref"
        t_check "skopeo copy to an OCI layout verifies every blob" \
                skopeo copy --quiet "oci-archive:$archive" "oci:$T_TMP/copy:x"
        rm -rf "$T_TMP/copy"

        index=$(tar -xOf "$archive" index.json)
        t_eq "one manifest in index.json" 1 "$(jq '.manifests | length' <<<"$index")"
        t_eq "io.containerd.image.name (ctr import)" "$ref" \
                "$(jq -r '.manifests[0].annotations["io.containerd.image.name"]' <<<"$index")"
        t_eq "org.opencontainers.image.ref.name (skopeo, podman)" "$ref" \
                "$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' <<<"$index")"

        skopeo inspect --config "oci-archive:$archive" >"$T_TMP/config.json"
        for key in source version revision created title licenses; do
                v=$(jq -r --arg k "org.opencontainers.image.$key" '.config.Labels[$k] // ""' "$T_TMP/config.json")
                t_check "label org.opencontainers.image.$key present ($v)" test -n "$v"
        done
        labels() { jq -r --arg k "org.opencontainers.image.$1" '.config.Labels[$k] // ""' "$T_TMP/config.json"; }
        t_eq "revision label is the build's" "$HANGAR_IMAGE_REVISION" "$(labels revision)"
        t_eq "created label is SOURCE_DATE_EPOCH" "$created" "$(labels created)"
        t_eq "config created is SOURCE_DATE_EPOCH" "$created" "$(jq -r .created "$T_TMP/config.json")"
        t_eq "history is SOURCE_DATE_EPOCH" "$created" "$(jq -r '[.history[].created] | unique | join(",")' "$T_TMP/config.json")"
        t_eq "manifest annotations carry the same labels" "$(labels revision)" \
                "$(skopeo inspect --raw "oci-archive:$archive" | jq -r '.annotations["org.opencontainers.image.revision"]')"
        user=$(jq -r '.config.User // ""' "$T_TMP/config.json")
        uid=${user%%:*}
        t_check "user '$user' is set and numeric and not root" \
                bash -c '[[ $1 =~ ^[0-9]+$ ]] && [ "$1" -ne 0 ]' _ "$uid"
        ep=$(jq -c '[.config.Entrypoint, .config.Cmd]' "$T_TMP/config.json")
        case $ref in
        "$WEBHOOK_REF_PREFIX":*)
                t_eq "webhook version label and tag" "$VERSION $WEBHOOK_REF_PREFIX:$VERSION" "$(labels version) $ref"
                t_eq "webhook entrypoint and cmd" '[["/usr/bin/hangar-webhook"],["serve"]]' "$ep"
                t_eq "webhook user" 65532:65532 "$user"
                ;;
        "$SANDBOX_REF")
                t_eq "sandbox entrypoint and cmd" '[null,["sleep","infinity"]]' "$ep"
                t_eq "sandbox user (the agent)" 1000:1000 "$user"
                ;;
        "$PAUSE_REF")
                t_eq "pause entrypoint" '[["/pause"],null]' "$ep"
                ;;
        *) t_fail "unexpected ref $ref in images.list" ;;
        esac
done <"$OUT/a/images.list"

# The chart runs the image's entrypoint with its own args: the first must be
# the serve command the image's Cmd names, and no command: may replace it.
deployment=$REPO/charts/hangar-webhook/templates/deployment.yaml
t_check "chart's container args start with serve" grep -q 'args: \["serve"' "$deployment"
t_check "chart sets no command: (the image's entrypoint runs)" \
        bash -c '! grep -q "^ *command:" "$1"' _ "$deployment"
t_eq "chart's runAsUser is the image's user" 65532 \
        "$(sed -n 's/^ *runAsUser: \([0-9]*\)$/\1/p' "$deployment" | sort -u | paste -sd, -)"
values=$REPO/charts/hangar-webhook/values.yaml
t_eq "chart's default image repository" "$WEBHOOK_REF_PREFIX" \
        "$(sed -n '/^image:/,/^[a-z]/s/^  repository: //p' "$values")"

if command -v podman >/dev/null 2>&1; then
        store=$T_TMP/podman
        pm() { podman --root "$store/root" --runroot "$store/run" --storage-driver vfs "$@"; }
        while read -r ref digest archive; do
                if pm load -q -i "$archive" >"$T_TMP/load.out" 2>&1; then
                        t_check "podman load $(basename "$archive")" true
                else
                        t_fail "podman load $(basename "$archive"): $(cat "$T_TMP/load.out")"
                fi
                t_check "podman names it $ref" bash -c 'grep -qxF "$1" <(podman --root "$2/root" --runroot "$2/run" --storage-driver vfs images --format "{{.Repository}}:{{.Tag}}")' _ "$ref" "$store"
        done <"$OUT/a/images.list"
        pm rmi -a -f >/dev/null 2>&1
        rm -rf "$store" 2>/dev/null
else
        echo "  (podman not installed: podman load not checked)"
fi

# ctr images import into a private containerd (its own root, state and
# socket; stopped at the end), when containerd and ctr are here: on PATH, in
# HANGAR_CONTAINERD_BIN, or the node tools' cache (scripts/node-tools).
ctr_dir=${HANGAR_CONTAINERD_BIN:-}
if [ -z "$ctr_dir" ]; then
        if command -v ctr >/dev/null 2>&1 && command -v containerd >/dev/null 2>&1; then
                ctr_dir=$(dirname "$(command -v ctr)")
        else
                for d in "${HANGAR_TOOLS_CACHE:-$HOME/.cache/hangar-tools}"/node-*/bin; do
                        [ -x "$d/ctr" ] && [ -x "$d/containerd" ] && ctr_dir=$d
                done
        fi
fi
if [ -n "$ctr_dir" ]; then
        c=$T_TMP/containerd
        mkdir -p "$c"
        cat >"$c/config.toml" <<EOF
version = 3
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images",
                    "io.containerd.podsandbox.controller.v1.podsandbox", "io.containerd.sandbox.controller.v1.shim"]
[grpc]
  address = "$c/sock"
[ttrpc]
  address = "$c/sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""
EOF
        "$ctr_dir/containerd" --config "$c/config.toml" >"$c/log" 2>&1 &
        cpid=$!
        t_cleanup_pid "$cpid"
        ctr() { "$ctr_dir/ctr" --address "$c/sock" --namespace k8s.io "$@"; }
        if t_wait_for "ctr version >/dev/null 2>&1" 20; then
                while read -r ref digest archive; do
                        t_check "ctr images import $(basename "$archive")" im_quiet ctr images import "$archive"
                        t_eq "ctr names it $ref with the archive's digest" "$ref $digest" \
                                "$(ctr images ls | awk -v r="$ref" '$1 == r { print $1, $3 }')"
                done <"$OUT/a/images.list"
        else
                t_fail "private containerd did not start: $(tail -n 5 "$c/log")"
        fi
        t_signal TERM "$cpid"
        wait "$cpid" 2>/dev/null
        t_check "no mount left under the private containerd" bash -c '! grep -q " $1/" /proc/mounts' _ "$c"
else
        echo "  (containerd and ctr not found: ctr images import not checked)"
fi
t_end
