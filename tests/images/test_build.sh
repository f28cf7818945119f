#!/usr/bin/env bash
# images_build: scripts/build-images.sh into OUT/a with pinned inputs (HEAD's
# commit time and revision, written to OUT/inputs.env for the other tests);
# its last stdout lines are the three archives, named as the contract says.
BUILD_DIR=$1 OUT=$2
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/images/imagelib.sh
. "$(dirname "$0")/imagelib.sh"
im_need mmdebstrap umoci skopeo jq cpack

t_begin images_build
rm -rf "$OUT"
mkdir -p "$OUT"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
{
        echo "SOURCE_DATE_EPOCH=$(git -C "$REPO" log -1 --format=%ct)"
        echo "HANGAR_IMAGE_REVISION=$(git -C "$REPO" rev-parse HEAD)"
        echo "VERSION=$version"
} >"$OUT/inputs.env"
im_inputs

start=$SECONDS
if "$BUILD_IMAGES" --build-dir "$BUILD_DIR" --out "$OUT/a" >"$OUT/a.stdout" 2>"$OUT/a.stderr"; then
        t_check "build-images.sh succeeds ($((SECONDS - start))s)" true
else
        t_fail "build-images.sh failed:"
        tail -n 30 "$OUT/a.stderr"
        t_end
fi
mapfile -t last < <(tail -n 3 "$OUT/a.stdout")
t_eq "last stdout line 1 is the webhook archive" "$OUT/a/hangar-webhook-$version.oci.tar" "${last[0]:-}"
t_eq "last stdout line 2 is the sandbox archive" "$OUT/a/hangar-sandbox-dev.oci.tar" "${last[1]:-}"
t_eq "last stdout line 3 is the pause archive" "$OUT/a/pause-3.10.2.oci.tar" "${last[2]:-}"
for f in "${last[@]}"; do
        t_check "$(basename "$f") is a non-empty file" test -s "$f"
done
t_eq "images.list names the three refs" \
        "$WEBHOOK_REF_PREFIX:$version $SANDBOX_REF $PAUSE_REF" "$(cut -d' ' -f1 "$OUT/a/images.list" | paste -sd' ' -)"
for deb in hangar-sidecar hangar-webhook; do
        t_check "packages/${deb}_${version}_*.deb written" compgen -G "$OUT/a/packages/${deb}_${version}_*.deb"
done
grep 'build-images: .*: .* in [0-9]*s$\|done in' "$OUT/a.stderr"
t_end
