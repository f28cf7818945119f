#!/usr/bin/env bash
# Prints the path of hangar-procctl (tests/tools/procctl), the process
# control the shell harnesses use instead of signalling pids by number:
# $HANGAR_PROCCTL if set (a build dir's tests/tools/procctl/hangar-procctl),
# else one built with cc from this tree's sources into
# ${XDG_CACHE_HOME:-~/.cache}/hangar/procctl/HASH/ (HASH: of the sources and
# the flags), once; later calls find it there. Concurrent first calls each
# build and rename into place: the last rename wins, every one is whole.
#
#   scripts/procctl.sh          the path on stdout
set -euo pipefail

if [ -n "${HANGAR_PROCCTL:-}" ]; then
  [ -x "$HANGAR_PROCCTL" ] || { echo "procctl: HANGAR_PROCCTL=$HANGAR_PROCCTL is not executable" >&2; exit 1; }
  echo "$HANGAR_PROCCTL"
  exit 0
fi
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$repo/tests/tools/procctl
sources=("$src"/main.c "$src"/procid.c "$src"/procstop.c "$src"/procfind.c "$src"/procstart.c
         "$repo"/common/base/strparse.c)
flags=(-std=gnu17 -O2 -D_GNU_SOURCE -D_FORTIFY_SOURCE=2 -Wall -Wextra -Werror -Wformat=2 -Wshadow
       -Werror=switch-default -I"$src" -I"$repo"/common/base)
# cleanup.h includes jansson.h (for its JSON helper); nothing is linked from it.
read -r -a jansson <<<"$(pkg-config --cflags jansson 2>/dev/null || true)"
hash=$(cat "${sources[@]}" "$src"/*.h "$repo"/common/base/cleanup.h "$repo"/common/base/strparse.h \
       <(printf '%s\n' "${flags[@]}") | sha256sum | cut -c1-16)
dir=${XDG_CACHE_HOME:-$HOME/.cache}/hangar/procctl/$hash
bin=$dir/hangar-procctl
if [ ! -x "$bin" ]; then
  mkdir -p "$dir"
  tmp=$(mktemp "$dir/.build.XXXXXX")
  if ! cc "${flags[@]}" ${jansson[@]+"${jansson[@]}"} -o "$tmp" "${sources[@]}" >&2; then
    rm -f "$tmp"
    echo "procctl: cannot build $bin (cc, libjansson-dev: scripts/install-deps.sh)" >&2
    exit 1
  fi
  chmod 755 "$tmp"
  mv -f "$tmp" "$bin"
fi
echo "$bin"
