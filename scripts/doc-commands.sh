#!/usr/bin/env bash
# Every command the documentation tells a user to type is either run by a
# test or says why it cannot be run here. A command block is a fence whose
# info string is sh, bash, shell or console, or a bare fence whose first line
# starts like a command (scripts/, kubectl, helm, cmake, ...). Right before
# its fence a block carries one of
#   <!-- doc-test: NAME (who runs it) -->   a test takes it with doc_block ... NAME
#   <!-- doc-not-run: WHY -->               e.g. needs GKE, a registry, a synopsis
# A doc-test NAME that no file under tests/ takes is an error too: the page
# would claim a test that does not exist.
#
# usage: scripts/doc-commands.sh [--list]
#   (none)   check; exit 1 with each unmarked block or unknown NAME listed
#   --list   print every block: FILE:LINE STATE NAME-OR-REASON
set -euo pipefail
cd "$(dirname "$0")/.."

list=false
case ${1:-} in
--list) list=true ;;
"") ;;
*)
        echo "usage: scripts/doc-commands.sh [--list]" >&2
        exit 2
        ;;
esac

pages=$(git ls-files 'README.md' 'docs/*.md' 'docs/**/*.md' 'charts/*/README.md' 2>/dev/null | sort -u) ||
        pages=$(find README.md docs charts -name '*.md' | sort -u)
[ -n "$pages" ] || {
        echo "doc-commands: no pages found" >&2
        exit 1
}

# One line per command block: FILE LINE STATE ARG, where STATE is test,
# not-run or none. awk keeps the last non-blank line before each fence.
# shellcheck disable=SC2086 # the page list is word-split on purpose (paths without blanks)
blocks=$(awk '
        FNR == 1 { inside = 0; prev = "" }
        /^[ \t]*```/ {
                if (inside) { inside = 0; next }
                inside = 1
                info = $0; sub(/^[ \t]*```[ \t]*/, "", info); sub(/[ \t].*/, "", info)
                cmd = (info == "sh" || info == "bash" || info == "shell" || info == "console")
                if (!cmd && info == "") {
                        if ((getline first) > 0) {
                                if (first ~ /^[ \t]*(\$ |scripts\/|tests\/|build\/|kubectl |helm |cmake |ninja |ctest |sudo |skopeo |ctr |podman |gcloud |export |python3 |bash |hangar(-[a-z]+)? )/) cmd = 1
                                if (first ~ /^[ \t]*```/) inside = 0
                        }
                }
                if (cmd) {
                        state = "none"; arg = "-"
                        if (match(prev, /<!-- doc-test: [A-Za-z0-9_-]+/)) { state = "test"; arg = substr(prev, RSTART + 15, RLENGTH - 15) }
                        else if (match(prev, /<!-- doc-not-run: .*-->/)) { state = "not-run"; arg = substr(prev, RSTART + 18, RLENGTH - 22) }
                        print FILENAME, FNR, state, arg
                }
                prev = ""
                next
        }
        !inside && !/^[ \t]*$/ { prev = $0 }
' $pages)

status=0
n_test=0
n_not=0
while read -r file line state arg; do
        [ -n "$file" ] || continue
        case $state in
        test)
                n_test=$((n_test + 1))
                # Taken directly (doc_block FILE NAME) or through a suite's
                # helper that passes the name on: the name is in a test file.
                if ! grep -rqwF -- "$arg" tests; then
                        echo "doc-commands: $file:$line: doc-test '$arg' is taken by no test (doc_block FILE $arg)"
                        status=1
                fi
                ;;
        not-run) n_not=$((n_not + 1)) ;;
        *)
                echo "doc-commands: $file:$line: a command block with no '<!-- doc-test: NAME -->' or '<!-- doc-not-run: WHY -->' line before its fence"
                status=1
                ;;
        esac
        if $list; then echo "$file:$line $state $arg"; fi
done <<<"$blocks"
if [ "$status" -eq 0 ]; then
        echo "doc-commands: $((n_test + n_not)) command blocks: $n_test run by tests, $n_not not run here (each says why)"
fi
exit "$status"
