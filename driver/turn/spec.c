#include "spec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"
#include "scratch.h"
#include "token.h"

static const char *const mode_names[] = {[TURN_MODE_AUTO] = "auto",
                                         [TURN_MODE_ASK] = "ask",
                                         [TURN_MODE_DENY_RISKY] = "deny-risky",
                                         [TURN_MODE_GOVERNED] = "governed"};

const char *spec_mode_name(turn_mode_t m)
{
        return (unsigned)m < ARRAY_SIZE(mode_names) ? mode_names[m] : "?";
}

/* A string member: required or with a default; NUL bytes rejected. */
static int get_string(json_t *o, const char *key, const char *dflt, char **ret, hg_error_t *err)
{
        json_t *v = json_object_get(o, key);
        const char *s = dflt;
        if (v) {
                if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
                        return error_set(err, -EINVAL, "\"%s\" must be a string without NUL", key);
                s = json_string_value(v);
        } else if (!dflt)
                return error_set(err, -EINVAL, "\"%s\" is required", key);
        if (!(*ret = strdup(s)))
                return -ENOMEM;
        return 0;
}

static int get_u32(json_t *o, const char *key, uint32_t dflt, uint32_t min, uint32_t max,
                   uint32_t *ret, hg_error_t *err)
{
        json_t *v = json_object_get(o, key);
        if (!v) {
                *ret = dflt;
                return 0;
        }
        if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
                return error_set(err, -EINVAL, "\"%s\" must be an integer from %u to %u", key, min,
                                 max);
        *ret = (uint32_t)json_integer_value(v);
        return 0;
}

int spec_parse(const char *text, size_t len, turn_spec_t *ret, hg_error_t *err)
{
        static const char *const known[] = {"turn",
                                            "mode",
                                            "cwd",
                                            "script",
                                            "input",
                                            "close_stdin",
                                            "run_key",
                                            "settings",
                                            "connect_timeout_s",
                                            "handshake_timeout_ms",
                                            "linger_s",
                                            "terminal",
                                            "keep_processes",
                                            "log_max_mib"};
        if (len > SPEC_MAX_BYTES)
                return error_set(err, -EFBIG, "the turn spec is over %u bytes", SPEC_MAX_BYTES);
        _cleanup_json_ json_t *o = NULL;
        int r = jsonx_load(text, len, 16, &o, err);
        if (r < 0)
                return r;
        if (!json_is_object(o))
                return error_set(err, -EINVAL, "the turn spec must be a JSON object");
        const char *key;
        json_t *v;
        json_object_foreach (o, key, v) {
                bool ok = false;
                for (size_t i = 0; i < ARRAY_SIZE(known); i++)
                        ok = ok || strcmp(key, known[i]) == 0;
                if (!ok)
                        return error_set(err, -EINVAL, "unknown member \"%.40s\"", key);
        }
        turn_spec_t s = {0};
        _cleanup_free_ char *mode = NULL;
        if ((r = get_string(o, "turn", NULL, &s.turn, err)) < 0 ||
            (r = get_string(o, "mode", NULL, &mode, err)) < 0 ||
            (r = get_string(o, "cwd", NULL, &s.cwd, err)) < 0 ||
            (r = get_string(o, "script", NULL, &s.script, err)) < 0 ||
            (r = get_string(o, "input", "", &s.input, err)) < 0 ||
            (r = get_string(o, "run_key", "", &s.run_key, err)) < 0 ||
            (r = get_u32(o, "connect_timeout_s", 120, 1, 86400, &s.connect_timeout_s, err)) < 0 ||
            (r = get_u32(o, "handshake_timeout_ms", 2000, 50, 60000, &s.handshake_timeout_ms,
                         err)) < 0 ||
            (r = get_u32(o, "linger_s", 300, 0, 86400, &s.linger_s, err)) < 0 ||
            (r = get_u32(o, "log_max_mib", SPEC_LOG_MAX_MIB_DEFAULT, 1, SPEC_LOG_MAX_MIB_MAX,
                         &s.log_max_mib, err)) < 0)
                goto fail;
        r = -EINVAL;
        if (!scratch_turn_id_valid(s.turn)) {
                error_set(err, r, "\"turn\" must be 1-64 of [A-Za-z0-9._-]");
                goto fail;
        }
        bool found = false;
        for (size_t i = 0; i < ARRAY_SIZE(mode_names); i++)
                if (strcmp(mode, mode_names[i]) == 0) {
                        s.mode = (turn_mode_t)i;
                        found = true;
                }
        if (!found) {
                error_set(err, r, "\"mode\" must be auto, ask, deny-risky or governed");
                goto fail;
        }
        if (s.cwd[0] != '/') {
                error_set(err, r, "\"cwd\" must be an absolute path");
                goto fail;
        }
        if (!s.script[0]) {
                error_set(err, r, "\"script\" must not be empty");
                goto fail;
        }
        json_t *cs = json_object_get(o, "close_stdin");
        if (cs && !json_is_boolean(cs)) {
                error_set(err, r, "\"close_stdin\" must be true or false");
                goto fail;
        }
        s.close_stdin = cs ? json_is_true(cs) : true;
        json_t *kp = json_object_get(o, "keep_processes");
        if (kp && !json_is_boolean(kp)) {
                error_set(err, r, "\"keep_processes\" must be true or false");
                goto fail;
        }
        s.keep_processes = kp && json_is_true(kp);
        json_t *settings = json_object_get(o, "settings");
        if (settings && !json_is_object(settings)) {
                error_set(err, r, "\"settings\" must be an object");
                goto fail;
        }
        s.settings = json_incref(settings);
        if ((r = terminal_spec_parse(json_object_get(o, "terminal"), &s.terminal, err)) < 0)
                goto fail;
        *ret = s;
        return 0;
fail:
        spec_free(&s);
        return r;
}

int spec_parse_wipe(char *text, size_t len, turn_spec_t *ret, hg_error_t *err)
{
        int r = spec_parse(text, len, ret, err);
        token_wipe(text, len);
        return r;
}

void spec_free(turn_spec_t *s)
{
        free(s->turn);
        free(s->cwd);
        free(s->script);
        free(s->input);
        if (s->run_key)
                token_wipe(s->run_key, strlen(s->run_key));
        free(s->run_key);
        json_decref(s->settings);
        *s = (turn_spec_t){0};
}
