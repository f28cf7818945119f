# shellcheck shell=bash
# Helpers shared by the grade suites (source after testlib.sh): a begin spec
# from a directory of hidden tests, and hangar's side of one grade.

# grade_spec ID TESTS_DIR CWD TIMEOUT_S ARGV_JSON [EXTRA_JSON]: a begin spec on stdout.
grade_spec() {
        local id=$1 dir=$2 cwd=$3 timeout=$4 argv=$5 extra=${6:-"{}"} f files='[]'
        while IFS= read -r f; do
                files=$(jq -c --arg p "${f#"$dir"/}" --arg d "$(base64 -w0 <"$f")" \
                        --argjson x "$([ -x "$f" ] && echo true || echo false)" \
                        '. + [{path: $p, data_base64: $d, exec: $x}]' <<<"$files")
        done < <(find "$dir" -type f | sort)
        jq -n --arg id "$id" --arg cwd "$cwd" --argjson t "$timeout" --argjson argv "$argv" \
                --argjson files "$files" --argjson extra "$extra" \
                '{grade: $id, tests: $files, argv: $argv, cwd: $cwd, timeout_s: $t,
                  report_max: 4096, connect_timeout_s: 120} + $extra'
}
