/* An error that carries a human-readable reason along with its -errno code,
 * for failures whose explanation must reach a person: a webhook's deny
 * message, a config error naming file, line and key (crun's libcrun_error_t
 * pattern). Functions still return the code; the struct is the last argument
 * and may be NULL when the caller only wants the code. */
#pragma once

#include <errno.h>
#include <stddef.h>

#define ERROR_MESSAGE_MAX 512

typedef struct hg_error {
        int code;                        /* negative errno, 0 when unset */
        char message[ERROR_MESSAGE_MAX]; /* one line, no trailing newline */
} hg_error_t;

/* Records code and a formatted message in err (if not NULL) and returns
 * code, which must be negative, so callers can `return error_set(...)`. */
int error_set(hg_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The same call, with its "always negative" visible at the call site: a
 * static analyzer (gcc -fanalyzer, clang's) sees one translation unit at a
 * time, so without this it follows `r = f(); if (r < 0) return r;` as if
 * f's `return error_set(...)` could succeed, and reports a NULL or
 * uninitialised output on that path that cannot happen. (error_set) still
 * names the function itself. */
#define error_set(...)                                       \
        __extension__({                                      \
                int error_set_r_ = (error_set)(__VA_ARGS__); \
                error_set_r_ < 0 ? error_set_r_ : -EINVAL;   \
        })

/* Prefixes the message already in err with a formatted context, keeping the
 * code: "file.yaml:3: " + "expected an integer". Returns err->code. */
int error_prefix(hg_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void error_clear(hg_error_t *err);
