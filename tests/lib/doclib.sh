# shellcheck shell=bash
# The commands the documentation tells a user to type, taken from the
# documentation itself, so that a test runs what the page says and a page
# that changes changes the test. A block is marked by the line
#   <!-- doc-test: NAME ... -->
# right before its fence (``` or ```sh, ```yaml, ...), indented as the fence.

# doc_block FILE NAME: the fenced block after FILE's marker NAME, with the
# fence's indentation removed; non-zero (and a message) when there is none.
doc_block() {
        local file=$1 name=$2
        awk -v tag="<!-- doc-test: $name " '
                index($0, tag) && !seen { want = 1; seen = 1; next }
                want == 1 && /^[ \t]*```/ { match($0, /^[ \t]*/); ind = RLENGTH; want = 2; next }
                want == 1 && !/^[ \t]*$/ { exit }
                want == 2 && /^[ \t]*```[ \t]*$/ { found = 1; exit }
                want == 2 { print substr($0, ind + 1) }
                END { exit !found }' "$file" || {
                echo "doclib: no block '$name' in $file (a '<!-- doc-test: $name -->' line right before a fence)" >&2
                return 1
        }
}

# doc_script FILE NAME OUT [SED-EXPR]...: the block NAME of FILE as a bash
# script in OUT, each SED-EXPR applied to it first (a page's placeholders,
# DIR or POD, become the test's own), run line by line under errexit and
# pipefail so that every command of the page must succeed. Run it with
# `bash OUT`; non-zero (and a message) when there is no such block.
doc_script() {
        local file=$1 name=$2 out=$3 text expr
        shift 3
        text=$(doc_block "$file" "$name") || return 1
        for expr in "$@"; do
                text=$(sed -e "$expr" <<<"$text") || return 1
        done
        printf 'set -euo pipefail\n%s\n' "$text" >"$out"
}
