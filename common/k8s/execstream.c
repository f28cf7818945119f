#include "execstream.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "jsonx.h"
#include "strparse.h"

/* A status nests four levels (status, details, causes, a cause). */
#define STATUS_MAX_DEPTH 8
/* Causes looked at for the exit code: a real status has one. */
#define STATUS_MAX_CAUSES 16

const char *exs_proto_name(exs_proto_t p)
{
        switch (p) {
        case EXS_PROTO_V4:
                return "v4.channel.k8s.io";
        case EXS_PROTO_V5:
                return "v5.channel.k8s.io";
        case EXS_PROTO_NONE:
        default:
                return "none";
        }
}

int exs_proto_parse(const char *name, size_t len, exs_proto_t *ret)
{
        static const exs_proto_t known[] = {EXS_PROTO_V5, EXS_PROTO_V4};
        for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
                const char *n = exs_proto_name(known[i]);
                if (len == strlen(n) && memcmp(name, n, len) == 0) {
                        *ret = known[i];
                        return 0;
                }
        }
        return -EPROTONOSUPPORT;
}

int exs_encode_close(exs_proto_t p, uint8_t ch, uint8_t ret_msg[2])
{
        if (p != EXS_PROTO_V5)
                return -EPROTONOSUPPORT;
        ret_msg[0] = EXS_CH_CLOSE;
        ret_msg[1] = ch;
        return 0;
}

size_t exs_encode_resize(uint16_t width, uint16_t height, uint8_t out[EXS_RESIZE_MAX])
{
        out[0] = EXS_CH_RESIZE;
        int n = snprintf((char *)out + 1, EXS_RESIZE_MAX - 1, "{\"Width\":%u,\"Height\":%u}",
                         (unsigned)width, (unsigned)height);
        return 1 + (size_t)n; /* at most 1 + 35 bytes: never truncated */
}

void exs_demux_init(exs_demux_t *d, exs_proto_t p)
{
        *d = (exs_demux_t){.proto = p};
}

void exs_demux_free(exs_demux_t *d)
{
        strbuf_free(&d->status);
}

int exs_demux_message(exs_demux_t *d, const uint8_t *msg, size_t len, int *ret_channel,
                      const uint8_t **ret_data, size_t *ret_len, hg_error_t *err)
{
        if (d->proto != EXS_PROTO_V4 && d->proto != EXS_PROTO_V5)
                return error_set(err, -EPROTO, "no exec subprotocol was agreed");
        if (len == 0)
                return error_set(err, -EPROTO, "an empty message: no channel byte");
        uint8_t ch = msg[0];
        const uint8_t *data = msg + 1;
        size_t n = len - 1;
        switch (ch) {
        case EXS_CH_STDOUT:
        case EXS_CH_STDERR:
                d->bytes[ch] += n;
                break;
        case EXS_CH_STATUS:
                if (n == 0)
                        break; /* "ready", or nothing yet */
                if (d->status_done)
                        return error_set(err, -EPROTO, "a second status message");
                if (n > EXS_MAX_STATUS_BYTES)
                        return error_set(err, -EPROTO, "a status of %zu bytes (at most %d)", n,
                                         EXS_MAX_STATUS_BYTES);
                if (strbuf_append(&d->status, (const char *)data, n) < 0)
                        return -ENOMEM;
                d->status_done = true;
                break;
        case EXS_CH_STDIN:
        case EXS_CH_RESIZE:
        case EXS_CH_CLOSE:
        default:
                return error_set(err, -EPROTO,
                                 "a message on channel %u, which a server never sends",
                                 (unsigned)ch);
        }
        d->messages++;
        *ret_channel = ch;
        *ret_data = ch == EXS_CH_STATUS ? NULL : data;
        *ret_len = ch == EXS_CH_STATUS ? 0 : n;
        return 0;
}

/* The exit code in details.causes[] ({"reason":"ExitCode","message":"N"}). */
static int exit_code_cause(json_t *status, int *ret_exit, hg_error_t *err)
{
        json_t *details = NULL, *causes = NULL;
        if (jsonx_member(status, "details", JSON_OBJECT, &details) < 0 ||
            jsonx_member(details, "causes", JSON_ARRAY, &causes) < 0)
                return error_set(err, -EPROTO, "a NonZeroExitCode status without details.causes");
        size_t n = json_array_size(causes);
        for (size_t i = 0; i < n && i < STATUS_MAX_CAUSES; i++) {
                json_t *cause = json_array_get(causes, i);
                const char *reason = NULL, *message = NULL;
                if (jsonx_string(cause, "reason", &reason) < 0 || strcmp(reason, "ExitCode") != 0)
                        continue;
                uint32_t code = 0;
                if (jsonx_string(cause, "message", &message) < 0 || parse_u32(message, &code) < 0 ||
                    code > 255)
                        return error_set(err, -EPROTO, "an ExitCode cause that is not 0..255");
                *ret_exit = (int)code;
                return 0;
        }
        return error_set(err, -EPROTO, "a NonZeroExitCode status without an ExitCode cause");
}

int exs_status_exit(const char *json, size_t len, int *ret_exit, hg_error_t *err)
{
        _cleanup_json_ json_t *status = NULL;
        hg_error_t perr = {0};
        if (jsonx_load(json, len, STATUS_MAX_DEPTH, &status, &perr) < 0)
                return error_set(err, -EPROTO, "the status is not JSON: %s", perr.message);
        const char *s = NULL, *reason = NULL, *message = NULL;
        if (!json_is_object(status) || jsonx_string(status, "status", &s) < 0)
                return error_set(err, -EPROTO, "the status is not a metav1.Status");
        if (strcmp(s, "Success") == 0) {
                *ret_exit = 0;
                return 0;
        }
        if (strcmp(s, "Failure") != 0)
                return error_set(err, -EPROTO, "a status that is neither Success nor Failure");
        if (jsonx_string(status, "reason", &reason) == 0 && strcmp(reason, "NonZeroExitCode") == 0)
                return exit_code_cause(status, ret_exit, err);
        if (jsonx_string(status, "message", &message) < 0 || !message[0])
                message = reason ? reason : "no message";
        return error_set(err, -ECANCELED, "the command did not run: %s", message);
}
