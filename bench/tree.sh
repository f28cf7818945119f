#!/usr/bin/env bash
# Benchmark: `hangar-driver tree` (the end-of-turn tree hash: SHA-256 of
# every file, symlink and directory, and a manifest) against git hashing the
# same tree into a fresh repository (`git init -q && git add -A && git
# write-tree`: zlib-compressed loose objects and an index), in the same run.
# No pass or fail.
#
# The tree is synthetic and made once per run in a temporary directory: FILES
# files (default 30000) in directories nested three levels deep, sizes 0-16
# KiB (skewed small) cut from a block of source-like text generated from a
# fixed seed, a few symlinks and empty directories. 3 timed runs of each,
# alternating, with a fresh .git (removed between runs) and a fresh scratch
# directory for hangar's manifest; median wall time and the ratio git/hangar.
#   warm:    page cache warm (one untimed run of each first).
#   cold-ish: before every run the tree's file contents are dropped from the
#            page cache with posix_fadvise(DONTNEED) (no root needed; the
#            files are synced first so their pages are clean). Directory
#            entries and inodes stay cached: only file data is read cold.
#            Skipped on tmpfs, where there is no cold.
# usage: bench/tree.sh BUILD_DIR [FILES]   (BENCH_SEED: default 1)
#   The tree goes under $TMPDIR (default /tmp): TMPDIR=/dev/shm takes the
#   disk's file-creation cost out of git's figure.
set -euo pipefail
BUILD=$(realpath "${1:?usage: bench/tree.sh BUILD_DIR [FILES]}")
FILES=${2:-30000}
SEED=${BENCH_SEED:-1}
RUNS=3
DRIVER=$BUILD/driver/hangar-driver
[ -x "$DRIVER" ] || { echo "missing $DRIVER: ninja -C $BUILD hangar-driver"; exit 1; }
for tool in git python3 jq fincore; do
        command -v "$tool" >/dev/null || { echo "missing $tool: run scripts/install-deps.sh"; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/hangar-bench-tree.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
TREE=$TMP/tree
HANGAR_TREE="" GIT_TREE=""
# hangar's scratch directory and git's (absent) global config live here.
export HOME=$TMP/home GIT_CONFIG_NOSYSTEM=1 GIT_CEILING_DIRECTORIES=$TMP
mkdir -p "$HOME" "$TREE"

python3 - "$TREE" "$FILES" "$SEED" <<'PY'
import os, random, sys
root, files, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
# Source-like text: indented lines of words from a fixed vocabulary.
letters = "abcdefghijklmnopqrstuvwxyz_"
vocab = ["".join(rng.choice(letters) for _ in range(rng.randint(2, 12))) for _ in range(3000)]
punct = ["(", ");", " = ", ", ", " {", "}", " + ", "->", ".", " /* ", " */"]
lines, size = [], 0
while size < 4 << 20:
        words = [rng.choice(vocab) + (rng.choice(punct) if rng.random() < 0.4 else " ")
                 for _ in range(rng.randint(0, 12))]
        line = " " * (8 * rng.randint(0, 3)) + "".join(words).rstrip() + "\n"
        lines.append(line)
        size += len(line)
pool = "".join(lines).encode()
# Directories three levels deep: 10 x 10 x 10 below the root.
dirs = [""]
for a in range(10):
        dirs.append(f"d{a}")
        for b in range(10):
                dirs.append(f"d{a}/s{b}")
                for c in range(10):
                        dirs.append(f"d{a}/s{b}/t{c}")
for d in dirs[1:]:
        os.mkdir(os.path.join(root, d))
exts = [".c", ".h", ".py", ".go", ".md", ".txt", ".json"]
paths = []
for i in range(files):
        rel = os.path.join(rng.choice(dirs), f"f{i:05d}{rng.choice(exts)}")
        n = int(16384 * rng.random() ** 2)
        off = rng.randrange(len(pool) - n)
        with open(os.path.join(root, rel), "wb") as f:
                f.write(pool[off:off + n])
        paths.append(rel)
for k in range(20):
        d = rng.choice(dirs)
        target = os.path.relpath(os.path.join(root, rng.choice(paths)), os.path.join(root, d))
        os.symlink(target, os.path.join(root, d, f"link{k}"))
for k in range(10):
        os.mkdir(os.path.join(root, rng.choice(dirs), f"empty{k}"))
PY
sync -f "$TREE"

# Drops the tree's file contents from the page cache; prints the bytes still
# resident in a sample of 200 files (fincore), to show it took.
evict() {
        python3 - "$TREE" <<'PY'
import os, sys
for top, _, names in os.walk(sys.argv[1]):
        for n in names:
                p = os.path.join(top, n)
                if os.path.islink(p):
                        continue
                fd = os.open(p, os.O_RDONLY | os.O_CLOEXEC)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                os.close(fd)
PY
}
resident_sample() {
        find "$TREE" -type f | head -n 200 | xargs fincore --bytes --noheadings -o RES |
                awk '{ s += $1 } END { print s + 0 }'
}

now() { echo "${EPOCHREALTIME/./}"; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
secs() { awk -v us="$1" 'BEGIN { printf "%.3f", us / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

# One run of each; sets RESULT to the wall time in microseconds. Every run
# after the first must hash the tree as the first did (HANGAR_TREE, GIT_TREE:
# set by the untimed warm-ups), or the bench stops: a run that hashed
# something else measured something else.
run_hangar() {
        rm -rf "$HOME/.hangar-scratch"
        local t0 tree
        t0=$(now)
        "$DRIVER" tree --turn bench "$TREE" >"$TMP/hangar.out"
        RESULT=$(($(now) - t0))
        tree=$(jq -r .tree "$TMP/hangar.out")
        [ "${HANGAR_TREE:=$tree}" = "$tree" ] || { echo "hangar's tree hash changed: $tree, first $HANGAR_TREE" >&2; exit 1; }
}
run_git() {
        rm -rf "$TREE/.git"
        local t0 tree
        t0=$(now)
        (cd "$TREE" && git init -q && git add -A && git write-tree) >"$TMP/git.out"
        RESULT=$(($(now) - t0))
        rm -rf "$TREE/.git"
        tree=$(cat "$TMP/git.out")
        [ "${GIT_TREE:=$tree}" = "$tree" ] || { echo "git's tree id changed: $tree, first $GIT_TREE" >&2; exit 1; }
}

# A table of RUNS alternating runs; $1 names the cache state, $2 (optional)
# is run before each timed run.
measure() {
        local label=$1 before=${2:-true} i h=() g=() hm gm
        echo
        echo "$label: $RUNS runs each, alternating"
        printf '%-6s | %10s | %10s\n' run "hangar s" "git s"
        for i in $(seq "$RUNS"); do
                $before
                run_hangar
                h+=("$RESULT")
                $before
                run_git
                g+=("$RESULT")
                printf '%-6s | %10s | %10s\n' "$i" "$(secs "${h[-1]}")" "$(secs "${g[-1]}")"
        done
        hm=$(printf '%s\n' "${h[@]}" | median)
        gm=$(printf '%s\n' "${g[@]}" | median)
        printf '%-6s | %10s | %10s\n' median "$(secs "$hm")" "$(secs "$gm")"
        echo "ratio git/hangar: $(ratio "$gm" "$hm") (target: > 1, hangar faster)"
}

run_hangar
run_git # the warm-ups, untimed
# (captured, then read: through a process substitution a failing jq would go unnoticed)
counts=$(jq -r '"\(.files) \(.dirs) \(.symlinks) \(.bytes)"' "$TMP/hangar.out")
read -r files dirs links bytes <<<"$counts"
[ "$files" = "$FILES" ] || { echo "hangar counted $files files, expected $FILES" >&2; exit 1; }
FSTYPE=$(findmnt -no FSTYPE -T "$TMP" 2>/dev/null | head -n 1)
echo "hangar-driver tree vs git init + add -A + write-tree, $(nproc) CPUs, $(git --version), $TMP on $FSTYPE"
echo "load average at start: $(cut -d" " -f1-3 /proc/loadavg)"
echo "tree: $files files ($((bytes / 1048576)) MiB), $dirs directories (10 empty), $links symlinks, seed $SEED"
echo "tree hash $HANGAR_TREE, git tree $GIT_TREE (each the same in every run below)"
measure "warm cache"
[ "$FSTYPE" = tmpfs ] && { echo; echo "cold-ish: skipped (tmpfs)"; exit 0; }
evict
echo
echo "cold-ish check: $(resident_sample) bytes resident in 200 sample files after eviction"
measure "cold-ish cache (file contents evicted before each run)" evict
