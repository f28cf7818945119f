/* Structured logs: one JSON object per line on stderr, written with a single
 * write() so lines from different threads never interleave. Untrusted strings
 * go in as JSON values, so jansson escapes quotes and control characters. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

typedef enum log_level {
        LOG_LEVEL_DEBUG,
        LOG_LEVEL_INFO,
        LOG_LEVEL_WARN,
        LOG_LEVEL_ERROR,
} log_level_t;

void log_set_level(log_level_t level);
/* Whether a line at level would be written: skip building one that would not. */
bool log_enabled(log_level_t level);
/* Parses "debug", "info", "warn" or "error"; -EINVAL otherwise. */
int log_parse_level(const char *s, log_level_t *ret);

/* Logs msg with the members of fields (may be NULL), which it takes over. */
void log_event(log_level_t level, const char *msg, json_t *fields);
void log_msgf(log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_info(...)  log_msgf(LOG_LEVEL_INFO, __VA_ARGS__)
#define log_warn(...)  log_msgf(LOG_LEVEL_WARN, __VA_ARGS__)
#define log_error(...) log_msgf(LOG_LEVEL_ERROR, __VA_ARGS__)
