/* Unit tests for the control ops' table (driver/ctl/ctlops.c) and what is
 * read from it: every op has a row, a handler (driver/turn/turnops.c) and,
 * when the command line can give it, a synopsis docs/turn.md lists; and
 * `hangar-driver ctl` command lines (ctlargs.c) built into requests the
 * daemon's grammar (ctlreq_parse) accepts, or refused with the op's
 * synopsis: options in any order, given twice, missing values, "--" text
 * that stays text, a spec read from a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctlargs.h"
#include "ctlreq.h"
#include "fileio.h"
#include "turnops.h"
#include "unit.h"

START_TEST(every_op_has_a_row_and_a_handler)
{
        for (int op = 0; op < CTLREQ_OP_COUNT; op++) {
                const ctlop_t *o = ctlop_get((ctlreq_op_t)op);
                ck_assert_ptr_nonnull(o);
                ck_assert_msg(o->name && o->help && o->help[0], "op %d has no name or help", op);
                ck_assert_int_eq(ctlop_by_name(o->name), op);
                ck_assert_msg(turnops_handles((ctlreq_op_t)op), "op %s has no handler", o->name);
        }
        ck_assert_ptr_null(ctlop_get(CTLREQ_OP_COUNT));
        ck_assert_int_eq(ctlop_by_name("nope"), CTLREQ_OP_COUNT);
        ck_assert_int_eq(ctlop_by_name(NULL), CTLREQ_OP_COUNT);
        ck_assert(!turnops_handles(CTLREQ_OP_COUNT));
}
END_TEST

/* docs/turn.md's command reference names each op by its synopsis, in a
 * code span: a new op or member that the page does not show fails here. */
START_TEST(docs_list_every_synopsis)
{
        _cleanup_free_ char *doc = NULL;
        size_t len = 0;
        ck_assert_int_eq(file_read_bounded(HANGAR_DOCS_DIR "/turn.md", 1 << 20, &doc, &len), 0);
        for (int op = 0; op < CTLREQ_OP_COUNT; op++) {
                if (!ctlop_on_command_line((ctlreq_op_t)op))
                        continue;
                char synopsis[256], span[260];
                ck_assert_int_eq(ctlop_synopsis((ctlreq_op_t)op, synopsis, sizeof(synopsis)), 0);
                /* In a table cell a "|" is written "\|". */
                char escaped[256];
                size_t e = 0;
                for (const char *p = synopsis; *p && e + 2 < sizeof(escaped); p++) {
                        if (*p == '|')
                                escaped[e++] = '\\';
                        escaped[e++] = *p;
                }
                escaped[e] = '\0';
                snprintf(span, sizeof(span), "`%s`", escaped);
                ck_assert_msg(strstr(doc, span), "docs/turn.md does not list %s", span);
        }
}
END_TEST

START_TEST(synopses)
{
        char buf[256];
        ck_assert_int_eq(ctlop_synopsis(CTLREQ_EVENTS, buf, sizeof(buf)), 0);
        ck_assert_str_eq(buf, "events [--turn ID] [--from OFFSET] [--follow]");
        ck_assert_int_eq(ctlop_synopsis(CTLREQ_RUN, buf, sizeof(buf)), 0);
        ck_assert_str_eq(buf, "run [--timeout S] [--tail BYTES] -- CMD [ARG]...");
        ck_assert_int_eq(ctlop_synopsis(CTLREQ_GRADE_SHOW, buf, sizeof(buf)), 0);
        ck_assert_str_eq(buf, "grade show ID");
        ck_assert_int_eq(ctlop_synopsis(CTLREQ_RESIZE, buf, 10), -ENOSPC);
        ck_assert_int_eq(ctlop_synopsis(CTLREQ_OP_COUNT, buf, sizeof(buf)), -EINVAL);
        ck_assert(!ctlop_on_command_line(CTLREQ_TYPE));
}
END_TEST

/* Builds argv (NULL-terminated) into a request; checks the daemon's
 * grammar takes it and that it reads as want (a JSON literal). */
static void built(const char *want, const char *const *words)
{
        int argc = 0;
        while (words[argc])
                argc++;
        json_t *req = NULL;
        ctlreq_op_t op;
        hg_error_t err = {0};
        int r = ctlargs_build(argc, (char *const *)words, &req, &op, &err);
        ck_assert_msg(r == 0, "refused %s: %s", words[0], err.message);
        _cleanup_json_ json_t *expect = unit_json(want);
        ck_assert_msg(json_equal(req, expect), "%s: got %s", want, unit_dump(req));
        _cleanup_free_ char *text = json_dumps(req, JSON_COMPACT);
        ctlreq_t q;
        ck_assert_msg(ctlreq_parse(text, strlen(text), &q, &err) == 0, "%s: %s", text, err.message);
        ck_assert_int_eq(q.op, op);
        ctlreq_free(&q);
        json_decref(req);
}

static void refused(int want, const char *needle, const char *const *words)
{
        int argc = 0;
        while (words[argc])
                argc++;
        json_t *req = NULL;
        ctlreq_op_t op = CTLREQ_PING;
        hg_error_t err = {0};
        int r = ctlargs_build(argc, (char *const *)words, &req, &op, &err);
        ck_assert_msg(r == want, "%s: %d, wanted %d (%s)", words[0] ?: "(none)", r, want,
                      err.message);
        ck_assert_ptr_null(req);
        ck_assert_msg(strstr(err.message, needle), "\"%s\" lacks \"%s\"", err.message, needle);
}

#define W(...) ((const char *const[]){__VA_ARGS__, NULL})

START_TEST(command_lines)
{
        built("{\"op\":\"ping\"}", W("ping"));
        built("{\"op\":\"status\",\"turn\":\"t1\"}", W("status", "--turn", "t1"));
        built("{\"op\":\"events\",\"turn\":\"t1\",\"from\":12,\"follow\":true}",
              W("events", "--follow", "--from", "12", "--turn", "t1"));
        built("{\"op\":\"finish\",\"turn\":\"t1\",\"abort\":\"why not\"}",
              W("finish", "--turn", "t1", "--abort", "why not"));
        built("{\"op\":\"approve\",\"id\":\"a1\"}", W("approve", "a1"));
        /* Text that looks like an option is text: steer takes no option. */
        built("{\"op\":\"steer\",\"text\":\"--turn x\"}", W("steer", "--turn x"));
        built("{\"op\":\"steer\",\"text\":\"--follow\"}", W("steer", "--follow"));
        built("{\"op\":\"run\",\"timeout_s\":5,\"tail_max\":10,\"argv\":[\"sh\",\"-c\",\"--\"]}",
              W("run", "--tail", "10", "--timeout", "5", "--", "sh", "-c", "--"));
        built("{\"op\":\"verify\",\"argv\":[\"true\"]}", W("verify", "--", "true"));
        built("{\"op\":\"tree\",\"timeout_s\":3}", W("tree", "--timeout", "3"));
        built("{\"op\":\"send-keys\",\"turn\":\"t\",\"keys\":[\"--x\",\"Enter\"]}",
              W("send-keys", "--turn", "t", "--x", "Enter"));
        built("{\"op\":\"send-keys\",\"keys\":[\"C-c\"]}", W("send-keys", "C-c"));
        built("{\"op\":\"resize\",\"rows\":24,\"cols\":80}", W("resize", "24", "80"));
        built("{\"op\":\"grade-show\",\"grade\":\"g1\"}", W("grade", "show", "g1"));

        refused(-ENOENT, "no op \"nope\"", W("nope"));
        refused(-ENOENT, "no op \"type\"", W("type")); /* the pane's own */
        refused(-ENOENT, "no op \"grade\"", W("grade", "peek"));
        refused(-ENOENT, "no op", W(NULL));
        refused(-EINVAL, "usage: hangar-driver ctl ping", W("ping", "x"));
        refused(-EINVAL, "approve ID", W("approve"));
        refused(-EINVAL, "approve ID", W("approve", "a", "b"));
        refused(-EINVAL, "[--from OFFSET]", W("events", "--from", "-1"));
        refused(-EINVAL, "[--from OFFSET]", W("events", "--from"));
        refused(-EINVAL, "[--turn ID]", W("status", "--turn", "a", "--turn", "b"));
        refused(-EINVAL, "-- CMD [ARG]...", W("run", "ls"));
        refused(-EINVAL, "-- CMD [ARG]...", W("run", "--"));
        refused(-EINVAL, "[--tail BYTES]", W("run", "--timeout", "x", "--", "ls"));
        refused(-EINVAL, "ROWS COLS", W("resize", "24"));
        refused(-EINVAL, "ROWS COLS", W("resize", "24", "x"));
        refused(-EINVAL, "start --spec FILE|-", W("start"));
        refused(-EINVAL, "start --spec FILE|-", W("start", "--follow"));
        refused(-ENOENT, "/nonexistent/spec", W("start", "--spec", "/nonexistent/spec"));
}
END_TEST

START_TEST(spec_from_a_file)
{
        char dir[64];
        unit_mkdtemp(dir, sizeof(dir));
        const char *path = unit_write_file(dir, "spec", "{\"turn\":\"t1\"}\n");
        built("{\"op\":\"start\",\"spec\":\"{\\\"turn\\\":\\\"t1\\\"}\\n\",\"follow\":true}",
              W("start", "--spec", path, "--follow"));
        built("{\"op\":\"grade-begin\",\"spec\":\"{\\\"turn\\\":\\\"t1\\\"}\\n\"}",
              W("grade", "begin", "--spec", path));
        const char *bad = unit_write_file(dir, "bad", "\xff\xfe");
        refused(-EINVAL, "not UTF-8", W("start", "--spec", bad));
        unit_rmtree(dir);
}
END_TEST

START_TEST(json_end)
{
        ck_assert_uint_eq(ctlargs_json_end("{}", 2), 2);
        ck_assert_uint_eq(ctlargs_json_end(" \n{\"a\":[1,{}]}\ntrailing", 23), 14);
        ck_assert_uint_eq(ctlargs_json_end("{\"a\":\"}\"}", 9), 9);       /* a } in a string */
        ck_assert_uint_eq(ctlargs_json_end("{\"a\":\"\\\"}\"}", 11), 11); /* an escaped quote */
        ck_assert_uint_eq(ctlargs_json_end("{\"a\":\"\\\\\"}", 10), 10);  /* an escaped backslash */
        ck_assert_uint_eq(ctlargs_json_end("{\"a\":1", 6), 0);            /* not whole yet */
        ck_assert_uint_eq(ctlargs_json_end("{\"a\":\"}", 7), 0);          /* still in the string */
        ck_assert_uint_eq(ctlargs_json_end("\"x\"", 3), 0);               /* not an object */
        ck_assert_uint_eq(ctlargs_json_end("", 0), 0);
        ck_assert_uint_eq(ctlargs_json_end("   ", 3), 0);
        ck_assert_uint_eq(ctlargs_json_end("[[]]", 4), 4);
}
END_TEST

/* From stdin, the spec is taken once whole: the writer has not closed
 * its end (hangar's exec would still owe the close signal). */
START_TEST(stdin_spec_without_its_end)
{
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        static const char spec[] = "{\"turn\":\"t1\",\n \"cwd\":\"/w\"}\n";
        ck_assert_int_eq(write(p[1], spec, sizeof(spec) - 1), (ssize_t)sizeof(spec) - 1);
        ck_assert_int_eq(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
        char *text = NULL;
        size_t len = 0;
        ck_assert_int_eq(ctlargs_read_text("-", 1024, &text, &len), 0);
        ck_assert_str_eq(text, spec);
        free(text);
        /* Past the bound: refused, whole or not. */
        char big[64];
        memset(big, ' ', sizeof(big));
        big[0] = '{';
        ck_assert_int_eq(write(p[1], big, sizeof(big)), (ssize_t)sizeof(big));
        ck_assert_int_eq(ctlargs_read_text("-", 32, &text, &len), -EFBIG);
        close(p[1]);
        close(p[0]);
}
END_TEST

static Suite *ctlops_suite(void)
{
        Suite *s = suite_create("ctlops");
        TCase *tc = tcase_create("ctlops");
        tcase_add_test(tc, every_op_has_a_row_and_a_handler);
        tcase_add_test(tc, docs_list_every_synopsis);
        tcase_add_test(tc, synopses);
        tcase_add_test(tc, command_lines);
        tcase_add_test(tc, spec_from_a_file);
        tcase_add_test(tc, json_end);
        tcase_add_test(tc, stdin_spec_without_its_end);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(ctlops_suite());
}
