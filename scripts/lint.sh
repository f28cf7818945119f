#!/usr/bin/env bash
# Static checks: on the C sources, calls STYLE.md bans (curl's checksrc idea)
# and clang-format conformance; on every tracked shell script (*.sh, or a sh
# or bash #! line), shellcheck with no finding at all (settings in
# .shellcheckrc and tests/.shellcheckrc; a deliberate finding is disabled in
# place, with the reason). Exits non-zero with each offence listed.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t sources < <(git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.c' -o -name '*.h') # lint:substitution find is the fallback
status=0

# No atoi/atol, bare strtol family, sscanf, sprintf, strcpy, strcat, strtok,
# gets or dup (use parse_*, snprintf, strbuf, F_DUPFD_CLOEXEC).
banned='\b(atoi|atol|atoll|strtol|strtoul|strtoll|strtoull|sscanf|sprintf|vsprintf|strcpy|strcat|strncat|strtok|gets|dup)[[:space:]]*\('
if hits=$(grep -nE "$banned" "${sources[@]}" | grep -v 'lint:allow'); then
        echo "lint: banned calls (see STYLE.md):"
        echo "$hits"
        status=1
fi

# The product serialises through jsonx_dumps: jansson 2.14's json_dumps can
# return text with a member missing after a failed allocation (common/base/jsonx.h).
# Tests may compare with json_dumps.
if hits=$(printf '%s\n' "${sources[@]}" | grep -E '^(common|driver|relay|grade|probe|webhook)/' |
        xargs grep -nE '\bjson_dumps[[:space:]]*\(' | grep -vE ':[0-9]+:[[:space:]]*(/\*|\*|//)' | grep -v 'lint:allow'); then
        echo "lint: json_dumps in the product (use jsonx_dumps):"
        echo "$hits"
        status=1
fi

# Descriptors are always close-on-exec. String literals and comments are
# blanked first so a mention like "open(2)" is not a call.
code_only() { sed -E 's/"([^"\\]|\\.)*"/""/g; s#/\*.*\*/##g; s#//.*$##; s#^\s*\*.*$##' "$1"; }
hits=""
for f in "${sources[@]}"; do
        found=$(code_only "$f" | grep -nE '(^|[^A-Za-z_])(socket|accept|pipe|open|openat|epoll_create1?)\(' |
                grep -vE 'CLOEXEC|accept4|lint:allow' | sed "s|^|$f:|" || true)
        [ -n "$found" ] && hits+="$found"$'\n'
done
if [ -n "$hits" ]; then
        echo "lint: descriptor opened without CLOEXEC:"
        printf '%s' "$hits"
        status=1
fi

if command -v clang-format >/dev/null; then
        for f in "${sources[@]}"; do
                if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
                        echo "lint: not clang-formatted: $f (run clang-format -i $f)"
                        status=1
                fi
        done
else
        echo "lint: clang-format missing (scripts/install-deps.sh installs it)"
        status=1
fi
# The chart README's values table is generated from values.yaml's comments.
scripts/chart-readme.sh --check >/dev/null || status=1
# Every command block of the README and docs/ is run by a test (taken from
# the page) or says why not (scripts/doc-commands.sh).
scripts/doc-commands.sh >/dev/null || { scripts/doc-commands.sh || true; status=1; }

mapfile -t shell_files < <({ git ls-files 2>/dev/null || find . -path './build*' -prune -o -type f -print | sed 's|^\./||'; } | while IFS= read -r f; do  # lint:substitution find is the fallback; the list is checked by shellcheck
        [ -f "$f" ] || continue
        case $f in
        *.sh) echo "$f" ;;
        *) if head -n 1 "$f" | grep -qE '^#!.*[/ ](ba)?sh([[:space:]]|$)'; then echo "$f"; fi ;;
        esac
done)
if command -v shellcheck >/dev/null; then
        # Two at a time: following the sourced libraries makes it a few CPU-seconds a file.
        if ! hits=$(printf '%s\0' "${shell_files[@]}" | xargs -0 -n 4 -P 2 shellcheck -f gcc 2>&1); then
                echo "lint: shellcheck findings (fix them, or disable one in place with the reason):"
                echo "$hits"
                status=1
        fi
else
        echo "lint: shellcheck missing (scripts/install-deps.sh installs it)"
        status=1
fi
# Scripts a user or CI runs fail loudly: `set -o pipefail` does not reach a
# process substitution, so a failing command that feeds one (`<(...)` after a `<`) would go
# unnoticed. Capture into a variable or a file first (its status checked),
# or say on the line why a failure there cannot hide anything
# (`# lint:substitution WHY`). Test suites check what they read instead.
if hits=$(printf '%s\n' "${shell_files[@]}" | grep -E '^(scripts|bench)/' |
        xargs grep -nE '<[[:space:]]*<\(' | grep -v 'lint:substitution'); then
        echo "lint: process substitution hides its command's failure (scripts/lint.sh says what to do):"
        echo "$hits"
        status=1
fi
# No pid signalled by number in shell: a pid gone a moment ago is soon
# another process's on a host with a small pid_max. Use hangar-procctl
# (scripts/procctl.sh; t_cleanup_pid + t_signal in tests/lib/testlib.sh).
# What cannot, yet, is counted per file in scripts/lint-kill.allow, with why;
# a file with more such lines than its count is refused. `kill -0` is a look.
kill_re='(^|[^A-Za-z_-])kill([[:space:]]+-[-A-Za-z0-9"$]+)*[[:space:]]+("?\$|[0-9])'
declare -A kill_allowed=()
while read -r f n _; do
        case $f in '#'* | '') continue ;; esac
        kill_allowed[$f]=$n
done <scripts/lint-kill.allow
hits=""
for f in "${shell_files[@]}"; do
        found=$(grep -nE "$kill_re" "$f" | grep -vE 'kill[[:space:]]+-0([[:space:]]|$)' || true)
        [ -n "$found" ] || continue
        if [ "$(wc -l <<<"$found")" -gt "${kill_allowed[$f]:-0}" ]; then
                hits+="$(awk -v f="$f" '{ print f ":" $0 }' <<<"$found")"$'\n'
        fi
done
if [ -n "$hits" ]; then
        echo "lint: a pid signalled by number (use hangar-procctl, or count it in scripts/lint-kill.allow with why):"
        printf '%s' "$hits"
        status=1
fi
# The repository explains itself: code, tests and docs cite docs/design/
# and the other pages, not the design's source documents, notes or issue
# numbers kept outside it. docs/status.md and docs/changelog.md are the
# exception: the state and history of the issue tracker's issues, by number.
outside='design page|seed 0[0-9]|\bissue [0-9]+|\.\./shared/|KAN-[0-9]' # lint:allow the pattern itself
if hits=$(git ls-files 2>/dev/null | grep -vE '^docs/(status|changelog)\.md$' |
        xargs -r grep -nIE "$outside" 2>/dev/null | grep -v 'lint:allow'); then
        echo "lint: a reference to something outside the repository (cite docs/design/ or the page that says it):"
        echo "$hits"
        status=1
fi
# Commit messages (from the commit that brought this check on): a subject
# of at most 72 characters, the why in a body after a blank line. Older
# history is left as it is, and so are the four subjects that landed on
# main in session 11 before .githooks/commit-msg checked each commit as it
# is made (`git config core.hooksPath .githooks`): history on main is not
# rewritten.
commit_base=c3f7548
landed_long=" 77f343305064db5a18fa005e2221f95b1e76fb15 ab25e1d090516972ea167234cbeaf0ec3ee0a871 7844b618cf1b0a4fd174e55447a2718c266d0dfd d4e64a623eeefbb799e25af7131242e44ddb352d "
if git rev-parse --verify -q "$commit_base^{commit}" >/dev/null 2>&1; then
        hits=""
        for c in $(git rev-list "$commit_base..HEAD"); do
                [[ $landed_long != *" $c "* ]] || continue
                subject=$(git log -1 --format=%s "$c")
                second=$(git log -1 --format=%B "$c" | sed -n 2p)
                [ "${#subject}" -le 72 ] || hits+="$(git log -1 --format=%h "$c"): subject of ${#subject} characters (72 at most)"$'\n'
                [ -z "$second" ] || hits+="$(git log -1 --format=%h "$c"): no blank line after the subject"$'\n'
        done
        if [ -n "$hits" ]; then
                echo "lint: commit messages (git commit --amend, or rebase, before pushing):"
                printf '%s' "$hits"
                status=1
        fi
fi
[ "$status" -eq 0 ] && echo "lint: ${#sources[@]} C files and ${#shell_files[@]} shell scripts clean"
exit "$status"
