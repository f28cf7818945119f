/* libFuzzer target: a sealed grade's messages (common/proto/grade_msg.h). The
 * first byte picks the parser, the rest is its input: 0 the begin spec, 1
 * the finish spec, 2 the grader side's findings, 3 its tree, 4 the driver's
 * go. Properties checked, abort() on violation:
 *   - a refused input has an error message whose code is the one returned;
 *   - an accepted begin spec has a valid id, 1..GRADE_ARGV_MAX arguments
 *     (NULL after the last, the first non-empty), test paths grade_path_ok
 *     accepts, within the counts and byte bounds, and its go (grade_go_json)
 *     parses back to the same id, cwd, argv, timeout and report cap;
 *   - an accepted finish has a status 0-255 and output within its bound,
 *     and its spec report judged into other-containers and split-not-active
 *     only, other-containers whenever it names a container or is null;
 *   - accepted findings claim only the grader side's reasons;
 *   - an accepted tree is 64 lowercase hex digits. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "grade_msg.h"
#include "jsonx.h"
#include "scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_refusal(int r, const hg_error_t *err)
{
        if (r != -ENOMEM && (err->code != r || err->message[0] == '\0'))
                abort();
}

static void spec_case(const char *text, size_t len)
{
        grade_spec_t s;
        hg_error_t err = {0};
        int r = grade_spec_parse(text, len, &s, &err);
        if (r < 0)
                return check_refusal(r, &err);
        if (!scratch_turn_id_valid(s.id) || s.argc < 1 || s.argc > GRADE_ARGV_MAX ||
            s.argv[s.argc] != NULL || !s.argv[0][0] || s.n_files > GRADE_FILES_MAX ||
            s.report_max > GRADE_REPORT_MAX || s.timeout_s < 1 || s.cwd[0] != '/')
                abort();
        size_t total = 0;
        for (size_t i = 0; i < s.n_files; i++) {
                if (!grade_path_ok(s.files[i].path))
                        abort();
                total += s.files[i].len;
        }
        if (total > GRADE_TESTS_BYTES_MAX)
                abort();
        _cleanup_json_ json_t *go = grade_go_json(&s, "/var/lib/hangar/grades/x/tests");
        _cleanup_free_ char *gt = go ? jsonx_dumps(go, JSON_COMPACT) : NULL;
        grade_go_t g;
        if (!gt || grade_go_parse(gt, strlen(gt), &g, &err) != 0 || !g.go ||
            strcmp(g.id, s.id) != 0 || strcmp(g.cwd, s.cwd) != 0 || g.argc != s.argc ||
            g.timeout_s != s.timeout_s || g.report_max != s.report_max)
                abort();
        for (size_t i = 0; i < s.argc; i++)
                if (strcmp(g.argv[i], s.argv[i]) != 0)
                        abort();
        grade_go_free(&g);
        grade_spec_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        const char *text = (const char *)data + 1;
        size_t len = size - 1;
        hg_error_t err = {0};
        int r;
        switch (data[0] % 5) {
        case 0:
                spec_case(text, len);
                break;
        case 1: {
                grade_finish_t f;
                if ((r = grade_finish_parse(text, len, &f, &err)) < 0)
                        return check_refusal(r, &err), 0;
                if (f.exit_status < 0 || f.exit_status > 255 || f.output_len > GRADE_OUTPUT_MAX ||
                    !scratch_turn_id_valid(f.id))
                        abort();
                if ((f.pod_reasons &
                     ~(uint32_t)(GRADE_R_OTHER_CONTAINERS | GRADE_R_SPLIT_NOT_ACTIVE)) ||
                    ((!f.other_containers || json_array_size(f.other_containers) > 0) !=
                     !!(f.pod_reasons & GRADE_R_OTHER_CONTAINERS)))
                        abort();
                grade_finish_free(&f);
                break;
        }
        case 2: {
                grade_findings_t f;
                if ((r = grade_findings_parse(text, len, &f, &err)) < 0)
                        return check_refusal(r, &err), 0;
                if ((f.reasons & ~(uint32_t)GRADE_SIDE_REASONS) || !json_is_object(f.sweep))
                        abort();
                grade_findings_free(&f);
                break;
        }
        case 3: {
                char hex[65];
                if ((r = grade_tree_parse(text, len, hex, &err)) < 0)
                        return check_refusal(r, &err), 0;
                if (strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64)
                        abort();
                break;
        }
        default: {
                grade_go_t g;
                if ((r = grade_go_parse(text, len, &g, &err)) < 0)
                        return check_refusal(r, &err), 0;
                if (g.go && (g.argc < 1 || g.argv[g.argc] != NULL || g.cwd[0] != '/' ||
                             g.tests[0] != '/' || g.report_max > GRADE_REPORT_MAX))
                        abort();
                if (!g.go && !g.reason)
                        abort();
                grade_go_free(&g);
                break;
        }
        }
        return 0;
}
