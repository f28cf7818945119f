/* Unit tests for driver/turn/approvals: finding approval requests in the
 * harness's stdout however it is chunked, ignoring everything else (other
 * lines, bad JSON, repeats, over-long lines, more than APPROVALS_MAX), the
 * exact response line a decision produces (without marking it decided
 * until the driver says so), the counts of requests past the limit and of
 * repeats, and the JSON listing. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "approvals.h"
#include "cleanup.h"
#include "unit.h"

/* What the callback saw, in order. */
typedef struct seen {
        char ids[8][APPROVALS_ID_MAX + 1];
        size_t n;
} seen_t;

static void on_request(void *userdata, const char *id, json_t *request)
{
        seen_t *s = userdata;
        ck_assert_ptr_nonnull(id);
        ck_assert(json_is_object(request));
        ck_assert_str_eq(json_string_value(json_object_get(request, "id")), id);
        if (s->n < 8)
                snprintf(s->ids[s->n], sizeof(s->ids[0]), "%s", id);
        s->n++;
}

static void scan_str(approvals_t *a, const char *text, seen_t *s)
{
        approvals_scan(a, (const uint8_t *)text, strlen(text), on_request, s);
}

static void init(approvals_t *a)
{
        ck_assert_int_eq(approvals_init(a), 0);
        ck_assert_uint_eq(a->n, 0);
        ck_assert_uint_eq(approvals_pending(a), 0);
}

START_TEST(one_request)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"r1\",\"tool\":\"bash\"}\n", &s);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_str_eq(s.ids[0], "r1");
        ck_assert_uint_eq(a.n, 1);
        ck_assert(approvals_is_pending(&a, "r1"));
        ck_assert(!approvals_is_pending(&a, "r2"));
        ck_assert_uint_eq(approvals_pending(&a), 1);
        ck_assert_json_eq_text(a.items[0].request,
                               "{\"type\":\"approval_request\",\"id\":\"r1\",\"tool\":\"bash\"}");
        approvals_free(&a);
        approvals_free(&a); /* twice is harmless */
}
END_TEST

START_TEST(line_split_across_chunks)
{
        static const char text[] = "{\"type\":\"approval_request\",\"id\":\"abc\"}\n"
                                   "{\"type\":\"approval_request\",\"id\":\"def\"}\n";
        size_t len = strlen(text);
        /* Every chunk size, from one byte at a time to all at once. */
        for (size_t chunk = 1; chunk <= len; chunk++) {
                approvals_t a;
                seen_t s = {0};
                init(&a);
                for (size_t off = 0; off < len; off += chunk) {
                        size_t n = len - off < chunk ? len - off : chunk;
                        approvals_scan(&a, (const uint8_t *)text + off, n, on_request, &s);
                }
                ck_assert_msg(s.n == 2, "chunk %zu: %zu requests", chunk, s.n);
                ck_assert_str_eq(s.ids[0], "abc");
                ck_assert_str_eq(s.ids[1], "def");
                approvals_free(&a);
        }
}
END_TEST

START_TEST(needs_the_newline)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"x\"}", &s);
        ck_assert_uint_eq(s.n, 0); /* not a line until its newline */
        scan_str(&a, "\n", &s);
        ck_assert_uint_eq(s.n, 1);
        approvals_free(&a);
}
END_TEST

START_TEST(other_lines_ignored)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a,
                 "plain output\n"
                 "\n"
                 "{\"type\":\"message\",\"id\":\"m1\"}\n"
                 "{\"type\":\"approval_response\",\"id\":\"m2\",\"decision\":\"approve\"}\n"
                 " {\"type\":\"approval_request\",\"id\":\"leading-space\"}\n"
                 "[{\"type\":\"approval_request\",\"id\":\"in-array\"}]\n"
                 "{\"id\":\"no-type\"}\n"
                 "{\"type\":\"approval_request\"}\n"
                 "{\"type\":\"approval_request\",\"id\":\"\"}\n"
                 "{\"type\":\"approval_request\",\"id\":7}\n"
                 "{\"type\":\"approval_request\",\"id\":null}\n"
                 "{\"type\":[\"approval_request\"],\"id\":\"t\"}\n"
                 "{\"type\":\"Approval_Request\",\"id\":\"case\"}\n",
                 &s);
        ck_assert_uint_eq(s.n, 0);
        ck_assert_uint_eq(a.n, 0);
        /* And a real one after all that. */
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"ok\"}\n", &s);
        ck_assert_uint_eq(s.n, 1);
        approvals_free(&a);
}
END_TEST

START_TEST(bad_json_ignored)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a,
                 "{\"type\":\"approval_request\",\"id\":\"a\"\n"               /* unterminated */
                 "{\"type\":\"approval_request\",\"id\":\"b\"} junk\n"         /* trailing */
                 "{\"type\":\"approval_request\",\"id\":\"c\",\"id\":\"d\"}\n" /* duplicate key */
                 "{\"type\":\"approval_request\",\"id\":\"e\\u0000f\"}\n"      /* NUL */
                 "{\"type\":\"approval_request\",\"id\":\"g\",}\n"             /* trailing comma */
                 "{'type':'approval_request','id':'h'}\n",
                 &s);
        /* Invalid UTF-8 in the id. */
        static const uint8_t bad_utf8[] = "{\"type\":\"approval_request\",\"id\":\"\xc3\x28\"}\n";
        approvals_scan(&a, bad_utf8, sizeof(bad_utf8) - 1, on_request, &s);
        /* Deeper than the parser allows. */
        char deep[200] = "{\"type\":\"approval_request\",\"id\":\"deep\",\"x\":";
        size_t off = strlen(deep);
        for (int i = 0; i < 20; i++)
                deep[off++] = '[';
        for (int i = 0; i < 20; i++)
                deep[off++] = ']';
        memcpy(deep + off, "}\n", 3);
        scan_str(&a, deep, &s);
        ck_assert_uint_eq(s.n, 0);
        ck_assert_uint_eq(a.n, 0);
        /* A CRLF line is still one request (trailing whitespace). */
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"crlf\"}\r\n", &s);
        ck_assert_uint_eq(s.n, 1);
        ck_assert(approvals_is_pending(&a, "crlf"));
        approvals_free(&a);
}
END_TEST

START_TEST(duplicate_id_ignored)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"same\",\"n\":1}\n", &s);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"same\",\"n\":2}\n", &s);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_uint_eq(a.n, 1);
        ck_assert_int_eq(json_integer_value(json_object_get(a.items[0].request, "n")), 1);
        /* Decided, then asked again: never re-opened. */
        _cleanup_free_ char *line = approvals_decide(&a, "same", false, "hangar");
        ck_assert_ptr_nonnull(line);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"same\",\"n\":3}\n", &s);
        ck_assert_uint_eq(s.n, 1);
        ck_assert(!approvals_is_pending(&a, "same"));
        ck_assert_int_eq(a.items[0].state, APPROVAL_DENIED);
        approvals_free(&a);
}
END_TEST

START_TEST(long_line_ignored)
{
        /* A request padded past APPROVALS_LINE_MAX is dropped whole, and the
         * line after it is read normally. */
        static const char head[] = "{\"type\":\"approval_request\",\"id\":\"long\",\"pad\":\"";
        static const char tail[] = "\"}\n";
        size_t total = APPROVALS_LINE_MAX + 10;
        _cleanup_free_ char *big = malloc(total + 1);
        ck_assert_ptr_nonnull(big);
        memset(big, 'p', total);
        memcpy(big, head, strlen(head));
        memcpy(big + total - strlen(tail), tail, strlen(tail));
        big[total] = '\0';
        approvals_t a;
        seen_t s = {0};
        init(&a);
        /* In uneven pieces. */
        for (size_t off = 0; off < total; off += 7777) {
                size_t n = total - off < 7777 ? total - off : 7777;
                approvals_scan(&a, (const uint8_t *)big + off, n, on_request, &s);
        }
        ck_assert_uint_eq(s.n, 0);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"next\"}\n", &s);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_str_eq(s.ids[0], "next");
        approvals_free(&a);
}
END_TEST

START_TEST(line_of_exactly_max_is_read)
{
        /* APPROVALS_LINE_MAX bytes before the newline: still a line. */
        static const char head[] = "{\"type\":\"approval_request\",\"id\":\"edge\",\"pad\":\"";
        static const char tail[] = "\"}";
        size_t total = APPROVALS_LINE_MAX;
        _cleanup_free_ char *big = malloc(total + 2);
        ck_assert_ptr_nonnull(big);
        memset(big, 'p', total);
        memcpy(big, head, strlen(head));
        memcpy(big + total - strlen(tail), tail, strlen(tail));
        big[total] = '\n';
        big[total + 1] = '\0';
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a, big, &s);
        ck_assert_uint_eq(s.n, 1);
        ck_assert_str_eq(s.ids[0], "edge");
        approvals_free(&a);
}
END_TEST

START_TEST(id_length_limit)
{
        char id[APPROVALS_ID_MAX + 2];
        memset(id, 'i', sizeof(id) - 1);
        id[sizeof(id) - 1] = '\0';
        char line[APPROVALS_ID_MAX + 100];
        approvals_t a;
        seen_t s = {0};
        init(&a);
        /* APPROVALS_ID_MAX + 1 characters: ignored. */
        (void)snprintf(line, sizeof(line), "{\"type\":\"approval_request\",\"id\":\"%s\"}\n", id);
        scan_str(&a, line, &s);
        ck_assert_uint_eq(s.n, 0);
        /* Exactly APPROVALS_ID_MAX: taken. */
        id[APPROVALS_ID_MAX] = '\0';
        (void)snprintf(line, sizeof(line), "{\"type\":\"approval_request\",\"id\":\"%s\"}\n", id);
        scan_str(&a, line, &s);
        ck_assert_uint_eq(s.n, 1);
        ck_assert(approvals_is_pending(&a, id));
        ck_assert_uint_eq(strlen(a.items[0].id), APPROVALS_ID_MAX);
        approvals_free(&a);
}
END_TEST

START_TEST(decide_response_line)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a,
                 "{\"type\":\"approval_request\",\"id\":\"x\"}\n"
                 "{\"type\":\"approval_request\",\"id\":\"y\"}\n",
                 &s);
        ck_assert_uint_eq(approvals_pending(&a), 2);
        _cleanup_free_ char *line = approvals_decide(&a, "x", true, "hangar");
        ck_assert_ptr_nonnull(line);
        ck_assert_str_eq(
            line, "{\"type\":\"approval_response\",\"id\":\"x\",\"decision\":\"approve\"}\n");
        ck_assert(!approvals_is_pending(&a, "x"));
        ck_assert_uint_eq(approvals_pending(&a), 1);
        ck_assert_int_eq(a.items[0].state, APPROVAL_APPROVED);
        ck_assert_str_eq(a.items[0].by, "hangar");

        _cleanup_free_ char *deny = approvals_decide(&a, "y", false, "driver");
        ck_assert_ptr_nonnull(deny);
        ck_assert_str_eq(deny,
                         "{\"type\":\"approval_response\",\"id\":\"y\",\"decision\":\"deny\"}\n");
        ck_assert_int_eq(a.items[1].state, APPROVAL_DENIED);
        ck_assert_uint_eq(approvals_pending(&a), 0);

        /* Twice, or an id never asked: nothing to send. */
        ck_assert_ptr_null(approvals_decide(&a, "x", true, "hangar"));
        ck_assert_ptr_null(approvals_decide(&a, "x", false, "hangar"));
        ck_assert_ptr_null(approvals_decide(&a, "nope", true, "hangar"));
        ck_assert_ptr_null(approvals_decide(&a, "", true, "hangar"));
        ck_assert_int_eq(a.items[0].state, APPROVAL_APPROVED);
        ck_assert_str_eq(a.items[0].by, "hangar");
        approvals_free(&a);
}
END_TEST

static void *failing_malloc(size_t n)
{
        (void)n;
        return NULL;
}

/* Regression test (this was a bug, now fixed): approvals_decide marked the
 * request decided before building the line, so running out of memory
 * returned NULL (nothing sent to the harness) with the request no longer
 * pending: the harness waited forever and a retry was refused. */
START_TEST(decide_out_of_memory_stays_pending)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"x\"}\n", &s);
        json_set_alloc_funcs(failing_malloc, free);
        char *line = approvals_decide(&a, "x", true, "hangar");
        json_set_alloc_funcs(malloc, free);
        ck_assert_ptr_null(line);
        ck_assert(approvals_is_pending(&a, "x"));
        ck_assert_str_eq(a.items[0].by, "");
        /* Once memory is back, the same decision goes through. */
        line = approvals_decide(&a, "x", true, "hangar");
        ck_assert_ptr_nonnull(line);
        ck_assert(!approvals_is_pending(&a, "x"));
        free(line);
        approvals_free(&a);
}
END_TEST

START_TEST(decide_escapes_id)
{
        /* An id that needs JSON escaping comes back escaped, still one line. */
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"a\\\"b\\nc\\\\d\"}\n", &s);
        ck_assert_uint_eq(s.n, 1);
        ck_assert(approvals_is_pending(&a, "a\"b\nc\\d"));
        _cleanup_free_ char *line = approvals_decide(&a, "a\"b\nc\\d", true, "hangar");
        ck_assert_ptr_nonnull(line);
        ck_assert_str_eq(line, "{\"type\":\"approval_response\",\"id\":\"a\\\"b\\nc\\\\d\","
                               "\"decision\":\"approve\"}\n");
        ck_assert_ptr_eq(strchr(line, '\n'), line + strlen(line) - 1);
        approvals_free(&a);
}
END_TEST

START_TEST(decided_by_is_bounded)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"x\"}\n", &s);
        _cleanup_free_ char *line =
            approvals_decide(&a, "x", true, "a-very-long-name-for-who-decided");
        ck_assert_ptr_nonnull(line);
        ck_assert_uint_eq(strlen(a.items[0].by), sizeof(a.items[0].by) - 1);
        ck_assert_int_eq(strncmp(a.items[0].by, "a-very-long-name", sizeof(a.items[0].by) - 1), 0);
        approvals_free(&a);
}
END_TEST

START_TEST(max_requests)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        char line[128];
        for (unsigned i = 0; i < APPROVALS_MAX + 5; i++) {
                (void)snprintf(line, sizeof(line),
                               "{\"type\":\"approval_request\",\"id\":\"r%u\"}\n", i);
                scan_str(&a, line, &s);
        }
        ck_assert_uint_eq(a.n, APPROVALS_MAX);
        ck_assert_uint_eq(s.n, APPROVALS_MAX);
        ck_assert_uint_eq(approvals_pending(&a), APPROVALS_MAX);
        (void)snprintf(line, sizeof(line), "r%u", APPROVALS_MAX - 1);
        ck_assert(approvals_is_pending(&a, line));
        (void)snprintf(line, sizeof(line), "r%u", APPROVALS_MAX);
        ck_assert(!approvals_is_pending(&a, line));
        ck_assert_ptr_null(approvals_decide(&a, line, true, "hangar"));
        /* Deciding frees no slot: the record keeps every request. */
        _cleanup_free_ char *r0 = approvals_decide(&a, "r0", true, "hangar");
        ck_assert_ptr_nonnull(r0);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"late\"}\n", &s);
        ck_assert_uint_eq(a.n, APPROVALS_MAX);
        ck_assert_uint_eq(approvals_pending(&a), APPROVALS_MAX - 1);
        approvals_free(&a);
}
END_TEST

/* The response line changes nothing: the driver records the decision and
 * makes room for it before it marks the request (a decision it
 * could not deliver must stay pending for hangar to retry). */
START_TEST(response_line_leaves_pending)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"p\"}\n", &s);
        _cleanup_free_ char *line = approvals_response_line(&a, "p", true);
        ck_assert_str_eq(line, "{\"type\":\"approval_response\",\"id\":\"p\",\"decision\":"
                               "\"approve\"}\n");
        ck_assert(approvals_is_pending(&a, "p"));
        ck_assert_uint_eq(approvals_pending(&a), 1);
        ck_assert_ptr_null(approvals_response_line(&a, "nope", true));
        ck_assert_int_eq(approvals_set_state(&a, "p", APPROVAL_APPROVED, "hangar"), 0);
        ck_assert(!approvals_is_pending(&a, "p"));
        ck_assert_str_eq(a.items[0].by, "hangar");
        ck_assert_ptr_null(approvals_response_line(&a, "p", false)); /* decided: no line */
        /* Undone (the record could not be written): pending again, no "by". */
        ck_assert_int_eq(approvals_set_state(&a, "p", APPROVAL_PENDING, "hangar"), 0);
        ck_assert(approvals_is_pending(&a, "p"));
        ck_assert_str_eq(a.items[0].by, "");
        ck_assert_int_eq(approvals_set_state(&a, "nope", APPROVAL_DENIED, "x"), -ENOENT);
        approvals_free(&a);
}
END_TEST

/* Requests past the limit and repeated ids are counted, not silently dropped. */
START_TEST(over_limit_and_duplicates_counted)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        char line[128];
        for (unsigned i = 0; i < APPROVALS_MAX + 7; i++) {
                (void)snprintf(line, sizeof(line),
                               "{\"type\":\"approval_request\",\"id\":\"r%u\"}\n", i);
                scan_str(&a, line, &s);
        }
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"r1\"}\n", &s);
        scan_str(&a, "{\"type\":\"approval_request\",\"id\":\"r2\"}\n", &s);
        ck_assert_uint_eq(a.n, APPROVALS_MAX);
        ck_assert_uint_eq(a.over_limit, 7);
        ck_assert_uint_eq(a.duplicates, 2);
        /* Not requests at all are not counted. */
        scan_str(&a, "{\"type\":\"other\",\"id\":\"r1\"}\nplain text\n", &s);
        ck_assert_uint_eq(a.over_limit, 7);
        ck_assert_uint_eq(a.duplicates, 2);
        approvals_free(&a);
}
END_TEST

START_TEST(json_listing)
{
        approvals_t a;
        seen_t s = {0};
        init(&a);
        _cleanup_json_ json_t *empty = approvals_json(&a);
        ck_assert_json_eq_text(empty, "[]");
        scan_str(&a,
                 "{\"type\":\"approval_request\",\"id\":\"a\",\"tool\":\"rm\"}\n"
                 "{\"type\":\"approval_request\",\"id\":\"b\"}\n"
                 "{\"type\":\"approval_request\",\"id\":\"c\"}\n",
                 &s);
        free(approvals_decide(&a, "a", true, "hangar"));
        free(approvals_decide(&a, "b", false, "driver"));
        _cleanup_json_ json_t *j = approvals_json(&a);
        ck_assert_json_eq_text(
            j, "[{\"id\":\"a\",\"state\":\"approved\",\"by\":\"hangar\","
               "\"request\":{\"type\":\"approval_request\",\"id\":\"a\",\"tool\":\"rm\"}},"
               "{\"id\":\"b\",\"state\":\"denied\",\"by\":\"driver\","
               "\"request\":{\"type\":\"approval_request\",\"id\":\"b\"}},"
               "{\"id\":\"c\",\"state\":\"pending\",\"by\":\"\","
               "\"request\":{\"type\":\"approval_request\",\"id\":\"c\"}}]");
        /* The listing shares the requests; it outlives the tracker safely. */
        approvals_free(&a);
        ck_assert_str_eq(json_string_value(json_object_get(
                             json_object_get(json_array_get(j, 0), "request"), "tool")),
                         "rm");
}
END_TEST

START_TEST(scan_without_callback)
{
        approvals_t a;
        init(&a);
        static const char text[] = "{\"type\":\"approval_request\",\"id\":\"q\"}\n";
        approvals_scan(&a, (const uint8_t *)text, strlen(text), NULL, NULL);
        ck_assert(approvals_is_pending(&a, "q"));
        approvals_scan(&a, (const uint8_t *)text, 0, NULL, NULL);
        ck_assert_uint_eq(a.n, 1);
        approvals_free(&a);
}
END_TEST

static Suite *approvals_suite(void)
{
        Suite *s = suite_create("approvals");
        TCase *tc = tcase_create("scan");
        tcase_add_test(tc, one_request);
        tcase_add_test(tc, line_split_across_chunks);
        tcase_add_test(tc, needs_the_newline);
        tcase_add_test(tc, other_lines_ignored);
        tcase_add_test(tc, bad_json_ignored);
        tcase_add_test(tc, duplicate_id_ignored);
        tcase_add_test(tc, long_line_ignored);
        tcase_add_test(tc, line_of_exactly_max_is_read);
        tcase_add_test(tc, id_length_limit);
        tcase_add_test(tc, max_requests);
        tcase_add_test(tc, scan_without_callback);
        suite_add_tcase(s, tc);
        tc = tcase_create("decide");
        tcase_add_test(tc, decide_response_line);
        tcase_add_test(tc, decide_out_of_memory_stays_pending);
        tcase_add_test(tc, decide_escapes_id);
        tcase_add_test(tc, decided_by_is_bounded);
        tcase_add_test(tc, json_listing);
        tcase_add_test(tc, response_line_leaves_pending);
        tcase_add_test(tc, over_limit_and_duplicates_counted);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(approvals_suite());
}
