/* Unit tests for common/log: each line one JSON object (ts, level, msg
 * first, then the caller's fields), escaping, level filtering. stderr is
 * pointed at a temporary file for the length of a test. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "log.h"
#include "unit.h"

static char dir[4096];
static char capture_path[4200];
static int saved_stderr = -1;

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
        (void)snprintf(capture_path, sizeof(capture_path), "%s/stderr", dir);
        int fd = open(capture_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
        ck_assert_int_ge(saved_stderr, 0);
        ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        close(fd);
        log_set_level(LOG_LEVEL_INFO);
}

static void teardown(void)
{
        if (saved_stderr >= 0) {
                (void)dup2(saved_stderr, STDERR_FILENO);
                close(saved_stderr);
                saved_stderr = -1;
        }
        unit_rmtree(dir);
}

/* Everything written to stderr since setup (malloc'd, NUL-terminated). */
/* noinline: gcc 12 at -O3 takes the inlined &data for the text and warns
 * (-Wdangling-pointer) on every pointer into it. */
__attribute__((noinline)) static char *captured(size_t *ret_len)
{
        char *data = NULL;
        size_t len = 0;
        ck_assert_int_eq(file_read_bounded(capture_path, 1 << 20, &data, &len), 0);
        if (ret_len)
                *ret_len = len;
        return data;
}

/* Number of '\n'-terminated lines captured; the capture must end on one. */
static size_t line_count(void)
{
        size_t len;
        _cleanup_free_ char *text = captured(&len);
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                n += text[i] == '\n';
        ck_assert_msg(len == 0 || text[len - 1] == '\n', "unterminated line: %s", text);
        return n;
}

/* Line i (0-based) of the capture parsed as JSON; each line must be exactly
 * one object and contain no raw control character. */
static json_t *line(size_t i)
{
        size_t len;
        _cleanup_free_ char *text = captured(&len);
        char *start = text;
        for (size_t k = 0; k < i; k++) {
                start = strchr(start, '\n');
                ck_assert_msg(start != NULL, "no line %zu in: %s", i, text);
                start++;
        }
        char *end = strchr(start, '\n');
        ck_assert_msg(end != NULL, "no line %zu in: %s", i, text);
        for (const char *p = start; p < end; p++)
                ck_assert_msg((unsigned char)*p >= 0x20, "raw control 0x%02x in line %zu",
                              (unsigned char)*p, i);
        json_error_t jerr;
        json_t *j = json_loadb(start, (size_t)(end - start), JSON_REJECT_DUPLICATES, &jerr);
        ck_assert_msg(j != NULL, "line %zu is not JSON (%s): %.*s", i, jerr.text,
                      (int)(end - start), start);
        ck_assert_msg(json_is_object(j), "line %zu is not an object", i);
        return j;
}

static const char *str_at(json_t *j, const char *key)
{
        const char *s = json_string_value(json_object_get(j, key));
        ck_assert_msg(s != NULL, "no string \"%s\"", key);
        return s;
}

/* The keys of obj in their order on the line, comma-joined into buf. */
static const char *key_order(json_t *obj, char *buf, size_t size)
{
        buf[0] = '\0';
        const char *key;
        json_t *v;
        size_t used = 0;
        json_object_foreach (obj, key, v) {
                int w = snprintf(buf + used, size - used, "%s%s", used ? "," : "", key);
                ck_assert(w > 0 && (size_t)w < size - used);
                used += (size_t)w;
        }
        return buf;
}

START_TEST(line_shape_and_field_order)
{
        json_t *fields = json_pack("{s:i, s:s, s:b}", "count", 3, "pod", "web-0", "ok", 1);
        log_event(LOG_LEVEL_INFO, "hello", fields);
        ck_assert_uint_eq(line_count(), 1);
        _unit_json_ json_t *j = line(0);
        char order[128];
        ck_assert_str_eq(key_order(j, order, sizeof(order)), "ts,level,msg,count,pod,ok");
        ck_assert_str_eq(str_at(j, "level"), "info");
        ck_assert_str_eq(str_at(j, "msg"), "hello");
        ck_assert_int_eq(json_integer_value(json_object_get(j, "count")), 3);
        ck_assert_str_eq(str_at(j, "pod"), "web-0");
        ck_assert(json_is_true(json_object_get(j, "ok")));
}
END_TEST

START_TEST(timestamp_is_utc_milliseconds_now)
{
        /* clock_gettime, as the log's own clock: time(2) reads the kernel's
         * coarse clock, a tick behind, so a line at .006 s could be "after"
         * a t1 still in the previous second. */
        struct timespec a, b;
        clock_gettime(CLOCK_REALTIME, &a);
        log_event(LOG_LEVEL_WARN, "tick", NULL);
        clock_gettime(CLOCK_REALTIME, &b);
        time_t t0 = a.tv_sec, t1 = b.tv_sec;
        _unit_json_ json_t *j = line(0);
        const char *ts = str_at(j, "ts");
        /* 2024-01-02T03:04:05.678Z */
        ck_assert_uint_eq(strlen(ts), 24);
        const char *shape = "dddd-dd-ddTdd:dd:dd.dddZ";
        for (size_t i = 0; i < 24; i++) {
                if (shape[i] == 'd')
                        ck_assert_msg(ts[i] >= '0' && ts[i] <= '9', "ts %s at %zu", ts, i);
                else
                        ck_assert_msg(ts[i] == shape[i], "ts %s at %zu", ts, i);
        }
        struct tm tm = {0};
        const char *rest = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm);
        ck_assert_ptr_nonnull(rest);
        time_t when = timegm(&tm);
        ck_assert_msg(when >= t0 - 1 && when <= t1, "ts %s is not now", ts);
}
END_TEST

START_TEST(each_call_one_line)
{
        log_event(LOG_LEVEL_INFO, "one", NULL);
        log_msgf(LOG_LEVEL_WARN, "two %d %s", 2, "words");
        log_error("three");
        log_warn("four");
        log_info("five");
        ck_assert_uint_eq(line_count(), 5);
        static const char *const msgs[] = {"one", "two 2 words", "three", "four", "five"};
        static const char *const levels[] = {"info", "warn", "error", "warn", "info"};
        for (size_t i = 0; i < 5; i++) {
                _unit_json_ json_t *j = line(i);
                ck_assert_str_eq(str_at(j, "msg"), msgs[i]);
                ck_assert_str_eq(str_at(j, "level"), levels[i]);
                ck_assert_uint_eq(json_object_size(j), 3);
        }
}
END_TEST

START_TEST(caller_cannot_override_fixed_keys)
{
        log_event(LOG_LEVEL_ERROR, "real",
                  json_pack("{s:s, s:s, s:s, s:i}", "msg", "fake", "level", "debug", "ts",
                            "1970-01-01T00:00:00.000Z", "extra", 1));
        _unit_json_ json_t *j = line(0);
        ck_assert_str_eq(str_at(j, "msg"), "real");
        ck_assert_str_eq(str_at(j, "level"), "error");
        ck_assert_str_ne(str_at(j, "ts"), "1970-01-01T00:00:00.000Z");
        ck_assert_int_eq(json_integer_value(json_object_get(j, "extra")), 1);
        ck_assert_uint_eq(json_object_size(j), 4);
}
END_TEST

START_TEST(control_characters_escaped)
{
        /* Every C0 control, quotes and backslashes, in the message and in a
         * field: the line stays one line and reads back exactly. */
        char hostile[64];
        size_t n = 0;
        for (unsigned c = 1; c < 0x20; c++)
                hostile[n++] = (char)c;
        memcpy(hostile + n, "\"\\\x7f end", 7);
        n += 7;
        hostile[n] = '\0';
        log_event(LOG_LEVEL_WARN, hostile, json_pack("{s:s}", "detail", hostile));
        log_msgf(LOG_LEVEL_WARN, "user said %s", "line1\nline2\r\x1b[31mred");
        ck_assert_uint_eq(line_count(), 2);
        _unit_json_ json_t *j = line(0);
        ck_assert_str_eq(str_at(j, "msg"), hostile);
        ck_assert_str_eq(str_at(j, "detail"), hostile);
        _unit_json_ json_t *k = line(1);
        ck_assert_str_eq(str_at(k, "msg"), "user said line1\nline2\r\x1b[31mred");
        _cleanup_free_ char *raw = captured(NULL);
        ck_assert_ptr_nonnull(strstr(raw, "line1\\nline2\\r\\u001B[31mred"));
}
END_TEST

START_TEST(null_message_and_fields)
{
        log_event(LOG_LEVEL_INFO, NULL, NULL);
        _unit_json_ json_t *j = line(0);
        ck_assert_str_eq(str_at(j, "msg"), "");
        ck_assert_uint_eq(json_object_size(j), 3);
}
END_TEST

START_TEST(level_filtering)
{
        /* Default: info and up. */
        log_event(LOG_LEVEL_DEBUG, "d0", NULL);
        log_event(LOG_LEVEL_INFO, "i0", NULL);
        log_set_level(LOG_LEVEL_WARN);
        log_event(LOG_LEVEL_INFO, "i1", json_pack("{s:s}", "dropped", "fields are freed"));
        log_msgf(LOG_LEVEL_INFO, "i2 %d", 2);
        log_event(LOG_LEVEL_WARN, "w1", NULL);
        log_event(LOG_LEVEL_ERROR, "e1", NULL);
        log_set_level(LOG_LEVEL_ERROR);
        log_warn("w2");
        log_error("e2");
        log_set_level(LOG_LEVEL_DEBUG);
        log_msgf(LOG_LEVEL_DEBUG, "d1");
        ck_assert_uint_eq(line_count(), 5);
        static const char *const want[][2] = {
            {"i0", "info"}, {"w1", "warn"}, {"e1", "error"}, {"e2", "error"}, {"d1", "debug"}};
        for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
                _unit_json_ json_t *j = line(i);
                ck_assert_str_eq(str_at(j, "msg"), want[i][0]);
                ck_assert_str_eq(str_at(j, "level"), want[i][1]);
        }
}
END_TEST

START_TEST(enabled_matches_filtering)
{
        static const log_level_t all[] = {LOG_LEVEL_DEBUG, LOG_LEVEL_INFO, LOG_LEVEL_WARN,
                                          LOG_LEVEL_ERROR};
        for (size_t m = 0; m < ARRAY_SIZE(all); m++) {
                log_set_level(all[m]);
                for (size_t l = 0; l < ARRAY_SIZE(all); l++) {
                        ck_assert_msg(log_enabled(all[l]) == (l >= m), "level %zu at minimum %zu",
                                      l, m);
                        /* And it agrees with what is written. */
                        size_t before = line_count();
                        log_event(all[l], "probe", NULL);
                        ck_assert_uint_eq(line_count(), before + (l >= m ? 1 : 0));
                }
        }
}
END_TEST

START_TEST(parse_level)
{
        static const struct {
                const char *s;
                log_level_t l;
        } ok[] = {{"debug", LOG_LEVEL_DEBUG},
                  {"info", LOG_LEVEL_INFO},
                  {"warn", LOG_LEVEL_WARN},
                  {"error", LOG_LEVEL_ERROR}};
        for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
                log_level_t l = (log_level_t)99;
                ck_assert_int_eq(log_parse_level(ok[i].s, &l), 0);
                ck_assert_int_eq(l, ok[i].l);
        }
        static const char *const bad[] = {"",      "INFO",  "Info",  "warning", "err",
                                          "info ", " info", "trace", "fatal",   "debug\n"};
        for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
                log_level_t l = LOG_LEVEL_WARN;
                ck_assert_msg(log_parse_level(bad[i], &l) == -EINVAL, "accepted '%s'", bad[i]);
                ck_assert_int_eq(l, LOG_LEVEL_WARN);
        }
        log_level_t l = LOG_LEVEL_ERROR;
        ck_assert_int_eq(log_parse_level(NULL, &l), -EINVAL);
        ck_assert_int_eq(l, LOG_LEVEL_ERROR);
}
END_TEST

START_TEST(long_message_truncated)
{
        /* log_msgf formats into 1024 bytes: longer text is cut, not lost. */
        char big[3000];
        memset(big, 'x', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        log_msgf(LOG_LEVEL_INFO, "%s", big);
        _unit_json_ json_t *j = line(0);
        ck_assert_uint_eq(strlen(str_at(j, "msg")), 1023);
        /* log_event has no such limit. */
        log_event(LOG_LEVEL_INFO, big, NULL);
        _unit_json_ json_t *k = line(1);
        ck_assert_str_eq(str_at(k, "msg"), big);
}
END_TEST

/* Regression test (this was a bug, now fixed): log_msgf cuts its text at 1023 bytes wherever that
 * falls; inside a multi-byte UTF-8 character the cut leaves invalid UTF-8, json_pack then refuses
 * the message, and log_event drops the whole line silently. */
START_TEST(truncation_keeps_the_line_with_utf8)
{
        char big[1100];
        memset(big, 'a', 1022);
        memcpy(big + 1022, "\xc3\xa9 tail", 8); /* 'e-acute' straddles byte 1023 */
        log_msgf(LOG_LEVEL_ERROR, "%s", big);
        ck_assert_msg(line_count() == 1, "the error line was dropped");
        _unit_json_ json_t *j = line(0);
        const char *msg = str_at(j, "msg");
        ck_assert_int_eq(strncmp(msg, big, 1022), 0);
}
END_TEST

static Suite *log_suite(void)
{
        Suite *s = suite_create("log");
        TCase *tc = tcase_create("lines");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, line_shape_and_field_order);
        tcase_add_test(tc, timestamp_is_utc_milliseconds_now);
        tcase_add_test(tc, each_call_one_line);
        tcase_add_test(tc, caller_cannot_override_fixed_keys);
        tcase_add_test(tc, control_characters_escaped);
        tcase_add_test(tc, null_message_and_fields);
        tcase_add_test(tc, long_message_truncated);
        tcase_add_test(tc, truncation_keeps_the_line_with_utf8);
        suite_add_tcase(s, tc);
        tc = tcase_create("levels");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, level_filtering);
        tcase_add_test(tc, enabled_matches_filtering);
        tcase_add_test(tc, parse_level);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(log_suite());
}
