#!/usr/bin/env bash
# images_reproducible: a second build with the same inputs, its Debian root
# file systems made again by mmdebstrap (--rebuild-rootfs), gives the same
# manifest digests and byte-identical archives; and a changed input (another
# SOURCE_DATE_EPOCH) gives another digest, so equal digests are not vacuous.
# On a difference it lists the files that differ between the two layers.
BUILD_DIR=$1 OUT=$2
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/images/imagelib.sh
. "$(dirname "$0")/imagelib.sh"
im_need mmdebstrap umoci jq
im_inputs

# layer_files ARCHIVE DIR: the archive's (single) layer unpacked into DIR.
layer_files() {
        local layout=$2.layout digest
        mkdir -p "$layout" "$2"
        tar -C "$layout" -xf "$1"
        digest=$(jq -r '.manifests[0].digest | sub("sha256:"; "")' "$layout/index.json")
        digest=$(jq -r '.layers[0].digest | sub("sha256:"; "")' "$layout/blobs/sha256/$digest")
        tar -C "$2" -xzf "$layout/blobs/sha256/$digest" --numeric-owner
}

explain() {
        local a=$T_TMP/$1.a b=$T_TMP/$1.b
        layer_files "$2" "$a"
        layer_files "$3" "$b"
        echo "  files that differ between the two builds of $1:"
        (cd "$a" && find . -printf '%p %m %U:%G %T@ %s %l\n' | sort) >"$a.list"
        (cd "$b" && find . -printf '%p %m %U:%G %T@ %s %l\n' | sort) >"$b.list"
        diff "$a.list" "$b.list" | head -n 20
        diff -rq --no-dereference "$a" "$b" | head -n 20
}

t_begin images_reproducible
start=$SECONDS
if "$BUILD_IMAGES" --build-dir "$BUILD_DIR" --out "$OUT/b" --rebuild-rootfs >"$OUT/b.stdout" 2>"$OUT/b.stderr"; then
        echo "  second build (rootfs made again): $((SECONDS - start))s"
elif grep -q 'apt download failed' "$OUT/b.stderr"; then
        # The archive refused the download (seen in CI, never when run by
        # hand; docs/ci.md). Said loudly, and the images are still built a
        # second time from the cached root file systems: everything above
        # the rootfs must come out byte for byte the same.
        echo "  WARNING: the root file systems could not be downloaded again (apt download failed, 3 tries);"
        echo "  WARNING: this run checks the images' assembly from the cached root file systems only"
        sed -n '/mmdebstrap failed/,$p' "$OUT/b.stderr" | head -n 60 | sed 's/^/  /'
        rm -rf "$OUT/b"
        if ! "$BUILD_IMAGES" --build-dir "$BUILD_DIR" --out "$OUT/b" >"$OUT/b.stdout" 2>"$OUT/b.stderr"; then
                t_fail "second build (cached rootfs) failed:"
                tail -n 30 "$OUT/b.stderr"
                t_end
        fi
else
        t_fail "second build failed:"
        tail -n 30 "$OUT/b.stderr"
        t_end
fi
for p in hangar-webhook hangar-sandbox; do
        if ! cmp -s "$OUT/a/$p.packages" "$OUT/b/$p.packages"; then
                echo "  note: Debian's archive changed between the builds ($p):"
                diff "$OUT/a/$p.packages" "$OUT/b/$p.packages" | head
        fi
done
while read -r ref digest archive; do
        b_digest=$(im_digest "$OUT/b" "$ref")
        t_eq "$ref: same manifest digest from both builds" "$digest" "$b_digest"
        b_archive=$(im_archive "$OUT/b" "$ref")
        if cmp -s "$archive" "$b_archive"; then
                t_check "$ref: archives byte-identical" true
        else
                t_fail "$ref: archives differ"
                explain "${ref//[\/:]/_}" "$archive" "$b_archive"
        fi
done <"$OUT/a/images.list"

# A changed input must change the digest (pause: the cheapest to build).
if SOURCE_DATE_EPOCH=$((SOURCE_DATE_EPOCH + 1)) "$BUILD_IMAGES" --build-dir "$BUILD_DIR" \
        --out "$OUT/c" pause >"$OUT/c.stdout" 2>"$OUT/c.stderr"; then
        c_digest=$(im_digest "$OUT/c" "$PAUSE_REF")
        a_digest=$(im_digest "$OUT/a" "$PAUSE_REF")
        t_check "another SOURCE_DATE_EPOCH gives another pause digest ($c_digest)" \
                test -n "$c_digest" -a "$c_digest" != "$a_digest"
else
        t_fail "pause build with another SOURCE_DATE_EPOCH failed"
        tail -n 20 "$OUT/c.stderr"
fi
t_end
