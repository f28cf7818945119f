#include "grade_msg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "cleanup.h"
#include "jsonx.h"
#include "k8sname.h"
#include "scratch.h"

static const char *const reason_names[GRADE_R_COUNT] = {
    "trial-running",     "foreign-process",  "pid1-open",     "grader-traced",    "token-misused",
    "report-refused",    "split-not-active", "path-writable", "preload-writable", "record-failed",
    "grader-incomplete", "status-mismatch",  "sweep-failed",  "other-containers", "exec-lost",
};

const char *grade_reason_name(uint32_t bit)
{
        for (unsigned i = 0; i < GRADE_R_COUNT; i++)
                if (bit == (1u << i))
                        return reason_names[i];
        return NULL;
}

uint32_t grade_reason_bit(const char *name)
{
        for (unsigned i = 0; name && i < GRADE_R_COUNT; i++)
                if (strcmp(name, reason_names[i]) == 0)
                        return 1u << i;
        return 0;
}

json_t *grade_reasons_json(uint32_t reasons)
{
        json_t *a = json_array();
        for (unsigned i = 0; a && i < GRADE_R_COUNT; i++)
                if ((reasons & (1u << i)) && json_array_append_new(a, json_string(reason_names[i])))
                        return json_decref(a), NULL;
        return a;
}

/* Only the named members, each checked by the caller. */
static int only_members(json_t *o, const char *const *names, hg_error_t *err)
{
        const char *key;
        json_t *v;
        json_object_foreach (o, key, v) {
                bool known = false;
                for (size_t i = 0; names[i] && !known; i++)
                        known = strcmp(key, names[i]) == 0;
                if (!known)
                        return error_set(err, -EINVAL, "unknown member \"%.40s\"", key);
        }
        return 0;
}

static bool str_ok(json_t *v, size_t max)
{
        return json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) <= max &&
               strlen(json_string_value(v)) == json_string_length(v);
}

/* An optional unsigned member in [lo, hi]; def when absent. */
static int uint_member(json_t *o, const char *name, uint32_t lo, uint32_t hi, uint32_t def,
                       uint32_t *ret, hg_error_t *err)
{
        json_t *v = json_object_get(o, name);
        if (!v) {
                *ret = def;
                return 0;
        }
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
                return error_set(err, -EINVAL, "\"%s\" must be an integer %u-%u", name, lo, hi);
        *ret = (uint32_t)json_integer_value(v);
        return 0;
}

static bool component_ok(const char *s, size_t n)
{
        if (n == 0 || n > 64 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-' || c == '+'))
                        return false;
        }
        return true;
}

bool grade_path_ok(const char *path)
{
        if (!path || !*path || strlen(path) > GRADE_PATH_MAX)
                return false;
        unsigned depth = 0;
        for (const char *p = path;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);
                if (!component_ok(p, n) || ++depth > GRADE_PATH_DEPTH_MAX)
                        return false;
                if (!slash)
                        return true;
                p = slash + 1;
        }
}

/* An absolute path without "..", ".", empty components or NUL. */
static bool abs_path_ok(json_t *v)
{
        if (!str_ok(v, GRADE_CWD_MAX))
                return false;
        const char *s = json_string_value(v);
        if (s[0] != '/')
                return false;
        if (strcmp(s, "/") == 0)
                return true;
        for (const char *p = s + 1;;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);
                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (!slash)
                        return true;
                p = slash + 1;
        }
}

static int argv_member(json_t *o, const char ***ret_argv, size_t *ret_argc, hg_error_t *err)
{
        json_t *av = json_object_get(o, "argv");
        if (!json_is_array(av) || json_array_size(av) == 0 || json_array_size(av) > GRADE_ARGV_MAX)
                return error_set(err, -EINVAL, "\"argv\" must be 1-%u strings", GRADE_ARGV_MAX);
        size_t n = json_array_size(av);
        const char **argv = calloc(n + 1, sizeof(*argv));
        if (!argv)
                return error_set(err, -ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
                json_t *a = json_array_get(av, i);
                /* Arguments may be empty, the program not. */
                if (!json_is_string(a) || json_string_length(a) > GRADE_ARG_MAX ||
                    strlen(json_string_value(a)) != json_string_length(a) ||
                    (i == 0 && json_string_length(a) == 0)) {
                        free(argv);
                        return error_set(err, -EINVAL, "\"argv\"[%zu] must be a string", i);
                }
                argv[i] = json_string_value(a);
        }
        *ret_argv = argv;
        *ret_argc = n;
        return 0;
}

/* No two files where one is the other's directory, no duplicates. */
static int paths_distinct(const grade_file_t *files, size_t n, hg_error_t *err)
{
        for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                        if (i == j)
                                continue;
                        size_t li = strlen(files[i].path);
                        if (strncmp(files[i].path, files[j].path, li) == 0 &&
                            (files[j].path[li] == '\0' || files[j].path[li] == '/'))
                                return error_set(err, -EINVAL, "test path \"%s\" given twice",
                                                 files[i].path);
                }
        return 0;
}

void grade_spec_free(grade_spec_t *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n_files; i++)
                free(s->files[i].data);
        free(s->files);
        free(s->argv);
        json_decref(s->root);
        *s = (grade_spec_t){0};
}

static int go_fits(const grade_spec_t *s, hg_error_t *err);

int grade_spec_parse(const char *text, size_t len, grade_spec_t *ret, hg_error_t *err)
{
        static const char *const names[] = {
            "grade", "tests", "argv", "cwd", "timeout_s", "report_max", "connect_timeout_s", NULL};
        static const char *const file_names[] = {"path", "data_base64", "exec", NULL};
        if (len > GRADE_SPEC_MAX)
                return error_set(err, -E2BIG, "a grade spec is at most %u bytes", GRADE_SPEC_MAX);
        grade_spec_t s = {0};
        int r = jsonx_load(text, len, 4, &s.root, err);
        if (r < 0)
                return r;
        if (!json_is_object(s.root)) {
                r = error_set(err, -EINVAL, "a grade spec is a JSON object");
                goto fail;
        }
        if ((r = only_members(s.root, names, err)) < 0)
                goto fail;
        json_t *id = json_object_get(s.root, "grade");
        if (!json_is_string(id) || !scratch_turn_id_valid(json_string_value(id))) {
                r = error_set(err, -EINVAL, "\"grade\" must be 1-64 of [A-Za-z0-9._-]");
                goto fail;
        }
        s.id = json_string_value(id);
        json_t *cwd = json_object_get(s.root, "cwd");
        if (!abs_path_ok(cwd)) {
                r = error_set(err, -EINVAL, "\"cwd\" must be an absolute path without . or ..");
                goto fail;
        }
        s.cwd = json_string_value(cwd);
        if ((r = argv_member(s.root, &s.argv, &s.argc, err)) < 0)
                goto fail;
        if ((r = uint_member(s.root, "timeout_s", 1, GRADE_TIMEOUT_MAX_S, 600, &s.timeout_s, err)) <
                0 ||
            (r = uint_member(s.root, "report_max", 0, GRADE_REPORT_MAX, GRADE_REPORT_DEFAULT,
                             &s.report_max, err)) < 0 ||
            (r = uint_member(s.root, "connect_timeout_s", 1, 3600, 120, &s.connect_timeout_s,
                             err)) < 0 ||
            (r = go_fits(&s, err)) < 0)
                goto fail;
        json_t *tests = json_object_get(s.root, "tests");
        if (!json_is_array(tests) || json_array_size(tests) > GRADE_FILES_MAX) {
                r = error_set(err, -EINVAL, "\"tests\" must be an array of at most %u files",
                              GRADE_FILES_MAX);
                goto fail;
        }
        size_t n = json_array_size(tests), total = 0;
        if (n && !(s.files = calloc(n, sizeof(*s.files)))) {
                r = error_set(err, -ENOMEM, "out of memory");
                goto fail;
        }
        for (size_t i = 0; i < n; i++) {
                json_t *f = json_array_get(tests, i), *p, *d, *x;
                if (!json_is_object(f) || (r = only_members(f, file_names, err)) < 0) {
                        r = r < 0 ? r : error_set(err, -EINVAL, "a test file is an object");
                        goto fail;
                }
                p = json_object_get(f, "path");
                d = json_object_get(f, "data_base64");
                x = json_object_get(f, "exec");
                if (!json_is_string(p) || strlen(json_string_value(p)) != json_string_length(p) ||
                    !grade_path_ok(json_string_value(p))) {
                        r = error_set(err, -EINVAL,
                                      "tests[%zu]: \"path\" must be relative, components of "
                                      "[A-Za-z0-9._+-] (not . or ..), at most %u deep",
                                      i, GRADE_PATH_DEPTH_MAX);
                        goto fail;
                }
                if (!json_is_string(d) || (x && !json_is_boolean(x))) {
                        r = error_set(err, -EINVAL,
                                      "tests[%zu]: \"data_base64\" a string, \"exec\" a boolean",
                                      i);
                        goto fail;
                }
                /* Bounded before decoding: 3 bytes per 4 characters. */
                if (json_string_length(d) / 4 * 3 > GRADE_TESTS_BYTES_MAX - total) {
                        r = error_set(err, -E2BIG, "the tests are over %u bytes",
                                      GRADE_TESTS_BYTES_MAX);
                        goto fail;
                }
                grade_file_t *gf = &s.files[s.n_files];
                if ((r = base64_decode(json_string_value(d), &gf->data, &gf->len, err)) < 0) {
                        error_prefix(err, "tests[%zu]: ", i);
                        goto fail;
                }
                s.n_files++;
                total += gf->len;
                gf->path = json_string_value(p);
                gf->exec = json_is_true(x);
        }
        if ((r = paths_distinct(s.files, s.n_files, err)) < 0)
                goto fail;
        *ret = s;
        return 0;
fail:
        grade_spec_free(&s);
        return r;
}

void grade_finish_free(grade_finish_t *f)
{
        if (!f)
                return;
        free(f->output);
        json_decref(f->root);
        *f = (grade_finish_t){0};
}

/* The spec check's report hangar passes in at finish, judged: the
 * containers that may have run beside the agent's during the grade (the
 * probe lists them: regular containers but the agent's and the driver,
 * restartable init containers, ephemeral containers), and whether the pod
 * still has the sidecar's shape. hangar's word, like the exit status: what
 * is checked is that it is a spec report whole, not a made-up one. */
static int judge_spec_report(json_t *rep, grade_finish_t *f, hg_error_t *err)
{
        if (json_is_null(rep)) {
                /* The pod could not be read: nobody knows what ran beside it. */
                f->pod_reasons = GRADE_R_OTHER_CONTAINERS;
                return 0;
        }
        if (!json_is_object(rep) || json_object_get(rep, "role"))
                return error_set(err, -EINVAL,
                                 "\"spec_report\" must be hangar-probe spec's report, or null");
        json_t *checks = json_object_get(rep, "checks");
        json_t *others = json_object_get(rep, "other_containers");
        const char *result = NULL;
        if (jsonx_string(rep, "result", &result) < 0 || !json_is_array(checks) ||
            json_array_size(checks) == 0)
                return error_set(err, -EINVAL, "\"spec_report\" has no result or no checks");
        bool failed = false;
        size_t i;
        json_t *c;
        json_array_foreach (checks, i, c) {
                const char *st = NULL;
                if (jsonx_string(c, "status", &st) < 0 ||
                    (strcmp(st, "pass") != 0 && strcmp(st, "fail") != 0))
                        return error_set(err, -EINVAL,
                                         "a check of \"spec_report\" is neither pass nor fail");
                failed = failed || strcmp(st, "fail") == 0;
        }
        if (strcmp(result, failed ? "fail" : "pass") != 0)
                return error_set(err, -EINVAL, "\"spec_report\" says %.10s but its checks say %s",
                                 result, failed ? "fail" : "pass");
        if (!json_is_array(others) || json_array_size(others) > GRADE_CONTAINERS_MAX)
                return error_set(err, -EINVAL,
                                 "\"spec_report\" has no \"other_containers\" list of at most %u "
                                 "(a probe older than the list?)",
                                 GRADE_CONTAINERS_MAX);
        json_array_foreach (others, i, c) {
                if (!str_ok(c, 63) || !k8s_is_dns1123_label(json_string_value(c)))
                        return error_set(err, -EINVAL,
                                         "\"other_containers\" must be container names");
        }
        if (failed)
                f->pod_reasons |= GRADE_R_SPLIT_NOT_ACTIVE;
        if (json_array_size(others) > 0)
                f->pod_reasons |= GRADE_R_OTHER_CONTAINERS;
        f->other_containers = others;
        return 0;
}

int grade_finish_parse(const char *text, size_t len, grade_finish_t *ret, hg_error_t *err)
{
        static const char *const names[] = {"grade", "exit_status", "output_base64", "spec_report",
                                            NULL};
        if (len > GRADE_SPEC_MAX)
                return error_set(err, -E2BIG, "a finish spec is at most %u bytes", GRADE_SPEC_MAX);
        grade_finish_t f = {0};
        /* The spec report's checks are objects in an array in it: depth 4. */
        int r = jsonx_load(text, len, 4, &f.root, err);
        if (r < 0)
                return r;
        json_t *id, *st, *out, *rep;
        if (!json_is_object(f.root) || (r = only_members(f.root, names, err)) < 0) {
                r = r < 0 ? r : error_set(err, -EINVAL, "a finish spec is a JSON object");
                goto fail;
        }
        id = json_object_get(f.root, "grade");
        st = json_object_get(f.root, "exit_status");
        out = json_object_get(f.root, "output_base64");
        if (!json_is_string(id) || !scratch_turn_id_valid(json_string_value(id))) {
                r = error_set(err, -EINVAL, "\"grade\" must be 1-64 of [A-Za-z0-9._-]");
                goto fail;
        }
        if (!json_is_null(st) &&
            (!json_is_integer(st) || json_integer_value(st) < 0 || json_integer_value(st) > 255)) {
                r = error_set(err, -EINVAL,
                              "\"exit_status\" must be an integer 0-255, or null (the exec lost)");
                goto fail;
        }
        if (!json_is_string(out) || json_string_length(out) / 4 * 3 > GRADE_OUTPUT_MAX) {
                r = error_set(err, -EINVAL, "\"output_base64\" must be base64 of at most %u bytes",
                              GRADE_OUTPUT_MAX);
                goto fail;
        }
        rep = json_object_get(f.root, "spec_report");
        if (!rep) {
                r = error_set(err, -EINVAL,
                              "\"spec_report\" is required: the pod's spec check after the "
                              "grader's exec ended, or null");
                goto fail;
        }
        if ((r = judge_spec_report(rep, &f, err)) < 0)
                goto fail;
        if ((r = base64_decode(json_string_value(out), &f.output, &f.output_len, err)) < 0)
                goto fail;
        f.id = json_string_value(id);
        f.exec_lost = json_is_null(st);
        f.exit_status = f.exec_lost ? -1 : (int)json_integer_value(st);
        *ret = f;
        return 0;
fail:
        grade_finish_free(&f);
        return r;
}

static int load_object(const void *p, size_t n, unsigned depth, json_t **ret, hg_error_t *err)
{
        if (n > GRADE_MSG_MAX)
                return error_set(err, -E2BIG, "a grade message is at most %u bytes", GRADE_MSG_MAX);
        json_t *j = NULL;
        int r = jsonx_load(p, n, depth, &j, err);
        if (r < 0)
                return r;
        if (!json_is_object(j)) {
                json_decref(j);
                return error_set(err, -EINVAL, "a grade message is a JSON object");
        }
        *ret = j;
        return 0;
}

void grade_findings_free(grade_findings_t *f)
{
        if (!f)
                return;
        json_decref(f->root);
        *f = (grade_findings_t){0};
}

int grade_findings_parse(const void *p, size_t n, grade_findings_t *ret, hg_error_t *err)
{
        static const char *const names[] = {"reasons", "sweep", NULL};
        grade_findings_t f = {0};
        int r = load_object(p, n, 3, &f.root, err);
        if (r < 0)
                return r;
        json_t *reasons = json_object_get(f.root, "reasons"), *v;
        size_t i;
        if ((r = only_members(f.root, names, err)) < 0)
                goto fail;
        if (!json_is_array(reasons) || json_array_size(reasons) > GRADE_R_COUNT) {
                r = error_set(err, -EINVAL, "\"reasons\" must be an array of reason codes");
                goto fail;
        }
        json_array_foreach (reasons, i, v) {
                uint32_t bit = grade_reason_bit(json_string_value(v));
                if (!bit || !(bit & GRADE_SIDE_REASONS) || (f.reasons & bit)) {
                        r = error_set(err, -EINVAL,
                                      "\"reasons\"[%zu] is not a grader side's reason "
                                      "(or repeated)",
                                      i);
                        goto fail;
                }
                f.reasons |= bit;
        }
        f.sweep = json_object_get(f.root, "sweep");
        if (!json_is_object(f.sweep)) {
                r = error_set(err, -EINVAL, "\"sweep\" must be an object");
                goto fail;
        }
        *ret = f;
        return 0;
fail:
        grade_findings_free(&f);
        return r;
}

int grade_tree_parse(const void *p, size_t n, char ret_hex[65], hg_error_t *err)
{
        static const char *const names[] = {"tree", NULL};
        _cleanup_json_ json_t *j = NULL;
        int r = load_object(p, n, 1, &j, err);
        if (r < 0)
                return r;
        if ((r = only_members(j, names, err)) < 0)
                return r;
        json_t *t = json_object_get(j, "tree");
        if (!json_is_string(t) || json_string_length(t) != 64 ||
            strspn(json_string_value(t), "0123456789abcdef") != 64)
                return error_set(err, -EINVAL, "\"tree\" must be 64 lowercase hex digits");
        memcpy(ret_hex, json_string_value(t), 65);
        return 0;
}

/* The grader side gets the spec's argv and cwd in one go message of at most
 * GRADE_MSG_MAX bytes: a spec whose go would not fit, with the tests
 * directory at its longest, could never start and is refused up front. */
static int go_fits(const grade_spec_t *s, hg_error_t *err)
{
        char longest[GRADE_TESTS_DIR_MAX + 1];
        memset(longest, 'x', GRADE_TESTS_DIR_MAX);
        longest[0] = '/';
        longest[GRADE_TESTS_DIR_MAX] = '\0';
        _cleanup_json_ json_t *go = grade_go_json(s, longest);
        _cleanup_free_ char *text = go ? jsonx_dumps(go, JSON_COMPACT) : NULL;
        if (!text)
                return error_set(err, -ENOMEM, "out of memory");
        size_t n = strlen(text);
        if (n > GRADE_MSG_MAX)
                return error_set(err, -E2BIG,
                                 "\"argv\" and \"cwd\" make the grader's start message %zu "
                                 "bytes, more than its %u",
                                 n, GRADE_MSG_MAX);
        return 0;
}

json_t *grade_go_json(const grade_spec_t *s, const char *tests_dir)
{
        json_t *av = json_array();
        for (size_t i = 0; av && i < s->argc; i++)
                if (json_array_append_new(av, json_string(s->argv[i])) < 0)
                        return json_decref(av), NULL;
        return av ? json_pack("{s:b, s:s, s:s, s:s, s:o, s:I, s:I}", "go", 1, "grade", s->id,
                              "tests", tests_dir, "cwd", s->cwd, "argv", av, "timeout_s",
                              (json_int_t)s->timeout_s, "report_max", (json_int_t)s->report_max)
                  : NULL;
}

void grade_go_free(grade_go_t *g)
{
        if (!g)
                return;
        free(g->argv);
        json_decref(g->root);
        *g = (grade_go_t){0};
}

int grade_go_parse(const void *p, size_t n, grade_go_t *ret, hg_error_t *err)
{
        static const char *const go_names[] = {"go",   "grade",     "tests",      "cwd",
                                               "argv", "timeout_s", "report_max", NULL};
        static const char *const no_names[] = {"go", "reason", NULL};
        grade_go_t g = {0};
        int r = load_object(p, n, 2, &g.root, err);
        if (r < 0)
                return r;
        json_t *go = json_object_get(g.root, "go");
        if (!json_is_boolean(go)) {
                r = error_set(err, -EINVAL, "\"go\" must be a boolean");
                goto fail;
        }
        g.go = json_is_true(go);
        if (!g.go) {
                json_t *why = json_object_get(g.root, "reason");
                if ((r = only_members(g.root, no_names, err)) < 0)
                        goto fail;
                if (!str_ok(why, 256)) {
                        r = error_set(err, -EINVAL, "\"reason\" must be a string");
                        goto fail;
                }
                g.reason = json_string_value(why);
                *ret = g;
                return 0;
        }
        if ((r = only_members(g.root, go_names, err)) < 0)
                goto fail;
        json_t *id = json_object_get(g.root, "grade"), *tests = json_object_get(g.root, "tests"),
               *cwd = json_object_get(g.root, "cwd");
        if (!json_is_string(id) || !scratch_turn_id_valid(json_string_value(id)) ||
            !abs_path_ok(tests) || !abs_path_ok(cwd)) {
                r = error_set(err, -EINVAL, "\"grade\", \"tests\", \"cwd\" malformed");
                goto fail;
        }
        if ((r = argv_member(g.root, &g.argv, &g.argc, err)) < 0 ||
            (r = uint_member(g.root, "timeout_s", 1, GRADE_TIMEOUT_MAX_S, 0, &g.timeout_s, err)) <
                0 ||
            (r = uint_member(g.root, "report_max", 0, GRADE_REPORT_MAX, 0, &g.report_max, err)) < 0)
                goto fail;
        if (!json_object_get(g.root, "timeout_s") || !json_object_get(g.root, "report_max")) {
                r = error_set(err, -EINVAL, "\"timeout_s\" and \"report_max\" are required");
                goto fail;
        }
        g.id = json_string_value(id);
        g.tests = json_string_value(tests);
        g.cwd = json_string_value(cwd);
        *ret = g;
        return 0;
fail:
        grade_go_free(&g);
        return r;
}
