#include "error.h"

#include "strbuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int(error_set)(hg_error_t *err, int code, const char *fmt, ...)
{
        if (code >= 0)
                code = -EINVAL; /* a success code here is a caller bug: fail closed */
        if (!err)
                return code;
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(err->message, sizeof(err->message), fmt, ap);
        va_end(ap);
        utf8_trim_incomplete(err->message);
        err->code = code;
        return code;
}

int error_prefix(hg_error_t *err, const char *fmt, ...)
{
        if (!err)
                return -EINVAL;
        char prefix[ERROR_MESSAGE_MAX];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(prefix, sizeof(prefix), fmt, ap);
        va_end(ap);
        char joined[ERROR_MESSAGE_MAX];
        (void)snprintf(joined, sizeof(joined), "%s%s", prefix, err->message);
        memcpy(err->message, joined, sizeof(err->message));
        utf8_trim_incomplete(err->message);
        if (err->code >= 0)
                err->code = -EINVAL;
        return err->code;
}

void error_clear(hg_error_t *err)
{
        if (!err)
                return;
        err->code = 0;
        err->message[0] = '\0';
}
