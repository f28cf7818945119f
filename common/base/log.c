#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "jsondump.h"

static _Atomic int min_level = LOG_LEVEL_INFO;

static const char *const level_names[] = {
    [LOG_LEVEL_DEBUG] = "debug",
    [LOG_LEVEL_INFO] = "info",
    [LOG_LEVEL_WARN] = "warn",
    [LOG_LEVEL_ERROR] = "error",
};

void log_set_level(log_level_t level)
{
        atomic_store(&min_level, (int)level);
}

bool log_enabled(log_level_t level)
{
        return (int)level >= atomic_load(&min_level);
}

int log_parse_level(const char *s, log_level_t *ret)
{
        for (size_t i = 0; i < ARRAY_SIZE(level_names); i++) {
                if (s && strcmp(s, level_names[i]) == 0) {
                        *ret = (log_level_t)i;
                        return 0;
                }
        }
        return -EINVAL;
}

static void format_timestamp(char *buf, size_t n)
{
        struct timespec ts;
        struct tm tm;
        (void)clock_gettime(CLOCK_REALTIME, &ts);
        (void)gmtime_r(&ts.tv_sec, &tm);
        size_t k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm);
        (void)snprintf(buf + k, n - k, ".%03ldZ", ts.tv_nsec / 1000000);
}

void log_event(log_level_t level, const char *msg, json_t *fields)
{
        _cleanup_json_ json_t *owned = fields;
        if ((int)level < atomic_load(&min_level))
                return;
        char ts[40];
        format_timestamp(ts, sizeof(ts));
        /* Fixed keys first so lines read well; then the caller's fields. */
        _cleanup_json_ json_t *line = json_pack("{s:s, s:s, s:s}", "ts", ts, "level",
                                                level_names[level], "msg", msg ? msg : "");
        if (!line && msg) {
                /* Not valid UTF-8: log it with every non-ASCII byte as '?'
                 * rather than drop the line. */
                _cleanup_free_ char *clean = strdup(msg);
                for (char *p = clean; p && *p; p++)
                        if ((unsigned char)*p >= 0x80)
                                *p = '?';
                line = json_pack("{s:s, s:s, s:s?}", "ts", ts, "level", level_names[level], "msg",
                                 clean);
        }
        if (!line)
                return;
        if (owned)
                (void)json_object_update_missing(line, owned);
        _cleanup_free_ char *text = jsondump(line);
        if (!text)
                return;
        size_t len = strlen(text);
        char *nl = realloc(text, len + 2);
        if (!nl)
                return;
        text = nl;
        text[len] = '\n';
        text[len + 1] = '\0';
        (void)fd_write_all(STDERR_FILENO, text, len + 1);
}

void log_msgf(log_level_t level, const char *fmt, ...)
{
        if ((int)level < atomic_load(&min_level))
                return;
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        utf8_trim_incomplete(msg);
        log_event(level, msg, NULL);
}
