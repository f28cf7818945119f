# shellcheck shell=bash
# The sidecar's binaries as a bundle that runs on any Linux root file system
# (busybox only, another libc, distroless): each binary with the dynamic
# loader and the shared libraries it was linked against, its program
# interpreter and library path rewritten to PREFIX (patchelf), so nothing is
# taken from the image it runs in. docs/images.md ("Any environment image")
# has the why, and the sizes of this against static linking.
#
#   PREFIX/bin/{hangar-driver,hangar-relay,hangar-probe,hangar-grade}
#   PREFIX/lib/ld-linux-*.so.*, PREFIX/lib/LIB.so.N (each by its SONAME)
#   PREFIX/share/doc/PACKAGE/copyright (the Debian package of each library)
#   PREFIX/bundle.packages (PACKAGE=VERSION of each library, sorted)
#
# Sourced by scripts/build-images.sh (image "bin"); needs ldd, patchelf,
# dpkg-query, strip. Same binaries and host packages give the same bytes.

BUNDLE_BINARIES=(driver/hangar-driver relay/hangar-relay probe/hangar-probe grade/hangar-grade)
# Programs of the host's Debian the driver runs, bundled the same way:
# tmux for terminal turns (the driver looks for it beside its own program
# when the image has none on its PATH).
BUNDLE_HOST_PROGRAMS=(/usr/bin/tmux)

# bundle_libs BINARY...: the resolved paths of every shared library the
# binaries load (the loader included), one per line, sorted. ldd's "not
# found" is an error: a bundle missing a library would fail only in the pod.
bundle_libs() {
        local b out
        for b in "$@"; do
                out=$(ldd "$b") || img_die "ldd $b failed"
                if grep -q 'not found' <<<"$out"; then
                        img_die "$b: a library is not found: $(grep 'not found' <<<"$out" | head -n 1)"
                fi
                awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }' <<<"$out"
        done | sort -u
}

# img_bundle BUILD_DIR ROOT PREFIX: writes the bundle into ROOT/PREFIX.
img_bundle() {
        local build=$1 prefix=$3 dest="$2$3" b lib name loader="" pkg
        command -v patchelf >/dev/null || img_die "patchelf not found (scripts/install-deps.sh installs it)"
        local -a bins=()
        for b in "${BUNDLE_BINARIES[@]}"; do
                [ -x "$build/$b" ] || img_die "$build/$b missing: build first"
                bins+=("$build/$b")
        done
        for b in "${BUNDLE_HOST_PROGRAMS[@]}"; do
                [ -x "$b" ] || img_die "$b missing (scripts/install-deps.sh installs it)"
                bins+=("$b")
        done
        mkdir -p "$dest/bin" "$dest/lib" "$dest/share/doc"
        local libs
        libs=$(bundle_libs "${bins[@]}") || exit 1
        : >"$dest/bundle.packages.tmp"
        while IFS= read -r lib; do
                [ -n "$lib" ] || continue
                # By the name the loader asks for (the SONAME), the file behind
                # any symlink copied.
                name=$(patchelf --print-soname "$lib" 2>/dev/null) || name=""
                [ -n "$name" ] || name=$(basename "$lib")
                cp -L "$lib" "$dest/lib/$name"
                chmod 0444 "$dest/lib/$name"
                # The kernel opens the program interpreter as it opens a
                # program: it must be executable.
                case $name in ld-linux*) loader=$name && chmod 0555 "$dest/lib/$name" ;; *) ;; esac
                pkg=$(dpkg-query -S "$(readlink -f "$lib")" 2>/dev/null | head -n 1 | cut -d: -f1) ||
                        pkg=""
                [ -n "$pkg" ] || pkg=$(dpkg-query -S "$lib" 2>/dev/null | head -n 1 | cut -d: -f1) || pkg=""
                [ -n "$pkg" ] || img_die "$lib belongs to no Debian package: cannot name its licence"
                dpkg-query -W -f='${Package}=${Version}\n' "$pkg" >>"$dest/bundle.packages.tmp"
                if [ -f "/usr/share/doc/$pkg/copyright" ]; then
                        mkdir -p "$dest/share/doc/$pkg"
                        cp "/usr/share/doc/$pkg/copyright" "$dest/share/doc/$pkg/copyright"
                fi
        done <<<"$libs"
        # tmux needs a UTF-8 locale: glibc's C.UTF-8 (libc-bin's), found
        # through LOCPATH, which the driver sets for the bundle's tmux.
        if [ -d /usr/lib/locale/C.utf8 ]; then
                mkdir -p "$dest/lib/locale"
                cp -R /usr/lib/locale/C.utf8 "$dest/lib/locale/C.utf8"
                chmod -R a-w,a+rX "$dest/lib/locale/C.utf8"
                dpkg-query -W -f='${Package}=${Version}\n' libc-bin >>"$dest/bundle.packages.tmp"
                mkdir -p "$dest/share/doc/libc-bin"
                cp /usr/share/doc/libc-bin/copyright "$dest/share/doc/libc-bin/copyright"
        else
                img_die "/usr/lib/locale/C.utf8 missing (libc-bin): tmux needs a UTF-8 locale"
        fi
        sort -u "$dest/bundle.packages.tmp" >"$dest/bundle.packages"
        rm -f "$dest/bundle.packages.tmp"
        [ -n "$loader" ] || img_die "no dynamic loader among the libraries"
        for b in "${bins[@]}"; do
                name=$(basename "$b")
                # Stripped as the .deb's are (a quarter of the size); the
                # build tree keeps the symbols.
                strip --strip-unneeded -o "$dest/bin/$name" "$b" || img_die "strip $name failed"
                chmod 0755 "$dest/bin/$name"
                # DT_RPATH (not RUNPATH): it also applies to the libraries'
                # own dependencies, so none is looked up in the image.
                patchelf --set-interpreter "$prefix/lib/$loader" --force-rpath --set-rpath "$prefix/lib" \
                        "$dest/bin/$name" || img_die "patchelf $name failed"
                # Read and run, never written: the copy an init container
                # makes keeps the mode (docs/images.md).
                chmod 0555 "$dest/bin/$name"
        done
}
