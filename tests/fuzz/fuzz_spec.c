/* libFuzzer target: the turn spec (spec_parse). Properties checked, abort()
 * on violation:
 *   - a refused spec leaves *ret untouched and has a message whose code is
 *     the one returned;
 *   - an accepted spec has a turn id of 1-64 [A-Za-z0-9._-], a known mode,
 *     an absolute cwd, a non-empty script, input and run_key set, numbers in
 *     their documented ranges, settings absent or an object;
 *   - an accepted spec written back out as JSON parses to the same spec. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool turn_id_ok(const char *s)
{
        size_t n = strlen(s);
        if (n < 1 || n > 64)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
                            s[i]))
                        return false;
        return true;
}

static void check_valid(const turn_spec_t *s)
{
        if (!s->turn || !turn_id_ok(s->turn))
                abort();
        if ((unsigned)s->mode > TURN_MODE_GOVERNED || strcmp(spec_mode_name(s->mode), "?") == 0)
                abort();
        if (!s->cwd || s->cwd[0] != '/' || !s->script || s->script[0] == '\0' || !s->input ||
            !s->run_key)
                abort();
        if (s->connect_timeout_s < 1 || s->connect_timeout_s > 86400 ||
            s->handshake_timeout_ms < 50 || s->handshake_timeout_ms > 60000 || s->linger_s > 86400)
                abort();
        if (s->settings && !json_is_object(s->settings))
                abort();
}

static bool same(const turn_spec_t *a, const turn_spec_t *b)
{
        return strcmp(a->turn, b->turn) == 0 && a->mode == b->mode && strcmp(a->cwd, b->cwd) == 0 &&
               strcmp(a->script, b->script) == 0 && strcmp(a->input, b->input) == 0 &&
               a->close_stdin == b->close_stdin && strcmp(a->run_key, b->run_key) == 0 &&
               a->connect_timeout_s == b->connect_timeout_s &&
               a->handshake_timeout_ms == b->handshake_timeout_ms && a->linger_s == b->linger_s &&
               (a->settings ? b->settings && json_equal(a->settings, b->settings) : !b->settings);
}

/* Writes s back out as a spec and parses that again. */
static void check_round_trip(const turn_spec_t *s)
{
        _cleanup_json_ json_t *o =
            json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:I, s:I, s:I}", "turn", s->turn, "mode",
                      spec_mode_name(s->mode), "cwd", s->cwd, "script", s->script, "input",
                      s->input, "close_stdin", s->close_stdin, "run_key", s->run_key,
                      "connect_timeout_s", (json_int_t)s->connect_timeout_s, "handshake_timeout_ms",
                      (json_int_t)s->handshake_timeout_ms, "linger_s", (json_int_t)s->linger_s);
        if (!o)
                abort();
        if (s->settings && json_object_set(o, "settings", s->settings) < 0)
                abort();
        _cleanup_free_ char *text = json_dumps(o, JSON_COMPACT);
        if (!text)
                abort();
        turn_spec_t again;
        hg_error_t err = {0};
        if (spec_parse(text, strlen(text), &again, &err) != 0)
                abort();
        if (!same(s, &again))
                abort();
        spec_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        turn_spec_t s, before;
        memset(&s, 0x5a, sizeof(s));
        before = s;
        hg_error_t err = {0};
        int r = spec_parse((const char *)data, size, &s, &err);
        if (r < 0) {
                if (memcmp(&s, &before, sizeof(s)) != 0)
                        abort();
                if (r != -ENOMEM && (err.code != r || err.message[0] == '\0'))
                        abort();
                if (r != -EINVAL && r != -EFBIG && r != -ENOMEM)
                        abort();
                return 0;
        }
        if (r != 0)
                abort();
        check_valid(&s);
        check_round_trip(&s);
        spec_free(&s);
        spec_free(&s);
        if (s.turn || s.settings)
                abort();
        return 0;
}
