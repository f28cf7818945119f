#!/usr/bin/env bash
# Static analysis of every C file the build compiles (product, tests, fuzz
# targets, bench): gcc's -fanalyzer and clang's static analyzer (clang-tidy's
# clang-analyzer-* checks), both driven by the build's compile_commands.json,
# so each file is analysed with the flags it is built with. Nothing is linked.
# Exits non-zero when either analyzer reports anything, listing each finding
# as FILE:LINE:COL: what [check]; the analyzers' full output (with the path
# that leads to each finding) is in BUILD_DIR/analyze/.
#
# A false positive is suppressed in the source, next to the line, with a
# comment saying why; never here. The one exception is the temporary list
# scripts/analyze-pending.txt: files being rewritten whose findings are
# reported as PENDING but do not fail the run. A finding is pending when its
# file or the file being compiled is on the list.
#
# Results are cached by what they depend on (ANALYZE_CACHE, default
# ~/.cache/hangar-analyze; off: ANALYZE_CACHE=off): the analyzer's own
# binaries and options, the file's flags, and the path and bytes of every file
# the translation unit reads, as that analyzer's compiler lists them (-M).
# An analysis whose inputs are all the same is the same analysis, so a file
# nothing it reads changed since is not analysed again (CI's warm run:
# docs/ci.md); a cached result is replayed with this tree's paths.
#
# usage: scripts/analyze.sh [--build-dir DIR] [--jobs N] [--only REGEX] [gcc|clang|all]
#   --only REGEX: just the files whose path (from the top) matches, e.g. after
#   fixing one: --only '^common/conf/config\.c$'
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build_dir=build-analysis
jobs=$(nproc)
which=all
only=''
while [ $# -gt 0 ]; do
        case "$1" in
        --build-dir) build_dir=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        gcc | clang | all) which=$1; shift ;;
        *) echo "usage: $0 [--build-dir DIR] [--jobs N] [--only REGEX] [gcc|clang|all]" >&2; exit 2 ;;
        esac
done
for tool in gcc clang-tidy python3; do
        if ! command -v "$tool" >/dev/null; then
                echo "analyze: $tool not found (scripts/install-deps.sh installs it)" >&2
                exit 2
        fi
done

# Only the compile commands are needed: configure, do not build.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
out=$build_dir/analyze
rm -rf "$out"
mkdir -p "$out/gcc" "$out/clang"

# One job per distinct (file, flags): replay.c is built once per fuzz target
# with the same flags and is analysed once. Each line: index, directory, file,
# the compiler's arguments without the compiler and its -o (shell-quoted),
# then the build's own arguments (clang-tidy reads those: the cache key's).
python3 - "$build_dir/compile_commands.json" "$root" "$only" >"$out/jobs.tsv" <<'EOF'
import json, os, re, shlex, sys
seen = set()
for e in json.load(open(sys.argv[1])):
    # tests/boundaries' probes are generated into the build directory and are
    # meant not to compile (a wrong include must be "not found"): not code.
    if "/tests/boundaries/boundary_" in e["file"]:
        continue
    if sys.argv[3] and not re.search(sys.argv[3], os.path.relpath(e["file"], sys.argv[2])):
        continue
    args = shlex.split(e["command"])
    if "-o" in args:
        i = args.index("-o")
        del args[i:i + 2]
    built = shlex.join(args[1:])
    # gcc's analyzer at -O0: at -O1 and above it follows the optimised code
    # and reports, for example, a cleanup variable's NULL initialiser as
    # missing (probe/observe.c's read_caps). _FORTIFY_SOURCE needs -O.
    args = [a for a in args if not (a.startswith("-O") or a.startswith("-D_FORTIFY_SOURCE"))]
    args.append("-O0")
    key = (e["file"], tuple(args))
    if key in seen:
        continue
    seen.add(key)
    print("\t".join([str(len(seen)), e["directory"], e["file"], shlex.join(args[1:]), built]))
EOF

# The analyzers' options (part of the cache key).
GCC_OPTS='-fanalyzer -Wno-error'
TIDY_CHECKS='-*,clang-analyzer-*,-clang-analyzer-optin.performance.Padding,-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling,-clang-analyzer-unix.Malloc'
TIDY_EXTRA='-Wno-unknown-warning-option -U_FORTIFY_SOURCE'
# The analyzers themselves, by content (a package upgrade is a new analyzer).
tool_id() { # TOOL
        case "$1" in
        gcc) sha256sum "$(readlink -f "$(command -v gcc)")" "$(gcc -print-prog-name=cc1)" ;;
        clang) sha256sum "$(readlink -f "$(command -v clang-tidy)")" "$(readlink -f "$(command -v clang)")" ;;
        esac | cut -d' ' -f1 | tr '\n' ' '
}
cache=${ANALYZE_CACHE:-$HOME/.cache/hangar-analyze}

# cache_key TOOL DIR FILE CMD BUILT: the key of this analysis, or status 1 (not
# cached) when the files it reads cannot be listed. The list is the one the
# analyzer's compiler makes with the analyzer's flags (gcc's with the gcc
# analysis's, clang's with the build's, as clang-tidy reads them); each file
# by path and content, so a changed comment (a NOLINT) or column is a new key.
cache_key() {
        local tool=$1 dir=$2 file=$3 cmd=$4 built=$5 deps d
        local - # a file that cannot be read is no key; -M's words are not globs
        set -f -o pipefail
        case "$tool" in
        gcc) deps=$(cd "$dir" && eval "gcc $cmd -M" 2>/dev/null) || return 1 ;;
        clang) deps=$(cd "$dir" && eval "clang $built $TIDY_EXTRA -M" 2>/dev/null) || return 1 ;;
        esac
        {
                echo "$tool ${TOOL_IDS[$tool]}"
                echo "$GCC_OPTS | $TIDY_CHECKS | $TIDY_EXTRA | $cmd | $built"
                # clang-tidy reads a .clang-tidy from the file's directory up.
                d=$(dirname "$file")
                while :; do
                        [ ! -f "$d/.clang-tidy" ] || { echo "$d/.clang-tidy"; cat "$d/.clang-tidy"; }
                        [ "$d" != / ] || break
                        d=$(dirname "$d")
                done
                # -M's rule: "x.o: a.c b.h \" lines; every word but the target.
                # shellcheck disable=SC2086 # -M's words, one path each
                printf '%s\n' $deps | grep -v -e ':$' -e '^\\$' | (cd "$dir" && xargs -r -d '\n' sha256sum --)
        } | sed "s|$root|@ROOT@|g" | sha256sum | cut -d' ' -f1
}

# Runs one analyzer on one job line; its output goes to $out/<tool>/<index>.log
# and its exit status to <index>.rc (a file that does not compile is a finding).
run_one() {
        local tool=$1 line=$2 idx dir file cmd built rc=0 key=""
        IFS=$'\t' read -r idx dir file cmd built <<<"$line"
        local log=$out/$tool/$idx.log
        echo "$file" >"$out/$tool/$idx.file"
        if [ "$cache" != off ] && key=$(cache_key "$tool" "$dir" "$file" "$cmd" "$built") &&
                [ -f "$cache/$tool/$key.rc" ] && [ -f "$cache/$tool/$key.log" ]; then
                sed "s|@ROOT@|$root|g" "$cache/$tool/$key.log" >"$log"
                cp "$cache/$tool/$key.rc" "$out/$tool/$idx.rc"
                echo "$idx" >>"$out/$tool/cached"
                return
        fi
        case "$tool" in
        gcc)
                # -Wno-error: every warning is reported and counted, not only the first.
                (cd "$dir" && eval "gcc $cmd $GCC_OPTS -o /dev/null") >"$log" 2>&1 || rc=$?
                ;;
        clang)
                # Three checks are off. optin.performance.Padding is about a
                # struct's layout, not a bug. DeprecatedOrUnsafeBufferHandling asks for
                # C11 Annex K (memcpy_s and friends), which glibc does not have.
                # unix.Malloc: clang's analyzer (14 and every release since)
                # does not model __attribute__((cleanup)), STYLE.md's way of
                # freeing, so it reports every _cleanup_free_ variable as a
                # leak; gcc -fanalyzer (above) follows cleanups and checks
                # leaks, double frees and use after free, and LeakSanitizer
                # runs in the ASan+UBSan stage. -U_FORTIFY_SOURCE: glibc's
                # fortified vsnprintf wrappers make clang's va_list check see
                # every va_start'ed list as uninitialised.
                local extra
                read -r -a extra <<<"$TIDY_EXTRA"
                clang-tidy -p "$build_dir" --quiet --checks="$TIDY_CHECKS" --header-filter="^$root/" \
                        "${extra[@]/#/--extra-arg=}" "$file" >"$log" 2>&1 || rc=$?
                ;;
        esac
        echo "$rc" >"$out/$tool/$idx.rc"
        # Kept for the next run: a finished analysis (0, or 1: findings or a
        # file that does not compile), not one a signal or a crash ended.
        if [ -n "$key" ] && { [ "$rc" = 0 ] || [ "$rc" = 1 ]; }; then
                mkdir -p "$cache/$tool"
                sed "s|$root|@ROOT@|g" "$log" >"$cache/$tool/$key.log.$$"
                echo "$rc" >"$cache/$tool/$key.rc.$$"
                mv "$cache/$tool/$key.log.$$" "$cache/$tool/$key.log"
                mv "$cache/$tool/$key.rc.$$" "$cache/$tool/$key.rc"
        fi
}
export -f run_one cache_key
export out build_dir root cache GCC_OPTS TIDY_CHECKS TIDY_EXTRA

tools=(gcc clang)
[ "$which" = all ] || tools=("$which")
declare -A TOOL_IDS
for tool in "${tools[@]}"; do
        TOOL_IDS[$tool]=$(tool_id "$tool")
done
# Bash cannot export an array: each tool's id goes to the jobs as a string.
for tool in "${tools[@]}"; do
        start=$(date +%s)
        # shellcheck disable=SC2016 # $1, $2 and $3 are the child shell's, expanded there
        nice -n 10 xargs -d '\n' -P "$jobs" -I{} bash -c 'declare -A TOOL_IDS=(["$1"]="$2"); run_one "$1" "$3"' _ \
                "$tool" "${TOOL_IDS[$tool]}" {} <"$out/jobs.tsv"
        cached=0
        [ ! -f "$out/$tool/cached" ] || cached=$(wc -l <"$out/$tool/cached")
        echo "analyze: $tool over $(wc -l <"$out/jobs.tsv") files in $(($(date +%s) - start)) s ($cached of them cached)"
done

# Collects the findings, splits them into failing and pending, prints both.
python3 - "$root" "$out" scripts/analyze-pending.txt "$only" "${tools[@]}" <<'EOF'
import os, re, sys
root, out, pending_path, only, tools = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
pending = {}
if os.path.exists(pending_path):
    for n, line in enumerate(open(pending_path), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, 1)
        if len(parts) < 2:
            sys.exit(f"analyze: {pending_path}:{n}: '{parts[0]}' has no reason")
        pending[parts[0]] = parts[1]

def rel(p):
    p = os.path.normpath(os.path.join(root, p))
    return os.path.relpath(p, root)

diag = re.compile(r"^(\S+?):(\d+):(\d+): (warning|error): (.*)$")
found, failing, pend, used = set(), [], [], set()
for tool in tools:
    d = os.path.join(out, tool)
    for name in sorted(os.listdir(d)):
        if not name.endswith(".log"):
            continue
        idx = name[:-4]
        tu = rel(open(os.path.join(d, idx + ".file")).read().strip())
        rc = open(os.path.join(d, idx + ".rc")).read().strip()
        hits = []
        for line in open(os.path.join(d, name), errors="replace"):
            m = diag.match(line.rstrip("\n"))
            if m:
                hits.append(f"{rel(m.group(1))}:{m.group(2)}:{m.group(3)}: {m.group(5)}")
        if rc != "0" and not hits:
            hits.append(f"{tu}:0:0: {tool} failed (exit {rc}); see {d}/{name}")
        for h in hits:
            key = (tool, h)
            if key in found:
                continue
            found.add(key)
            where = h.split(":", 1)[0]
            hit = [p for p in (where, tu) if p in pending]
            entry = f"{tool}: {h}" + (f"  (compiling {tu})" if where != tu else "")
            if hit:
                used.add(hit[0])
                pend.append(entry)
            else:
                failing.append(entry)
for e in pend:
    print("PENDING", e)
for p in sorted(set(pending) - used) if not only else []:
    print(f"analyze: {p} is on {pending_path} but has no finding now: take it off the list")
for e in failing:
    print(e)
print(f"analyze: {len(failing)} finding(s), {len(pend)} pending in {len(used)} listed file(s)")
sys.exit(1 if failing else 0)
EOF
