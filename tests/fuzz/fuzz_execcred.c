/* libFuzzer target: what a credential plugin prints (common/k8s/execcred.c), as
 * client-go's exec protocol reads it, and the RFC 3339 times in it. Input:
 * one byte choosing what the kubeconfig asks for ('1' v1, 'b' v1beta1) or
 * 'T' for a time alone, then the plugin's stdout (or the time). A credential
 * accepted must be exactly what the JSON says (read again with jansson): the
 * asked apiVersion, kind ExecCredential, a token and/or both halves of a
 * certificate pair, a token fit for a header, an expiry after now that is
 * the timestamp's; a refusal says why and leaves the output alone. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "execcred.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NOW ((time_t)1767312000) /* 2026-01-02T00:00:00Z */

static const char *status_string(json_t *status, const char *key)
{
        const char *s = json_string_value(json_object_get(status, key));
        return s && s[0] ? s : NULL;
}

static void same(const char *got, const char *want)
{
        if (!got || !want) {
                if (got != want)
                        abort();
        } else if (strcmp(got, want) != 0) {
                abort();
        }
}

static void check_time(const char *s)
{
        time_t t;
        if (execcred_parse_time(s, &t) < 0)
                return;
        /* Back to text and parsed again: the same instant. */
        struct tm tm;
        char text[64];
        if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 < 0 || tm.tm_year + 1900 > 9999)
                return; /* an offset carried it out of four-digit years */
        (void)snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                       tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
        time_t again;
        if (execcred_parse_time(text, &again) < 0 || again != t)
                abort();
        /* Without fraction or offset, that text is the input. */
        if (strlen(s) == 20 && s[19] == 'Z' && strcmp(text, s) != 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        if (data[0] == 'T') {
                char *s = strndup((const char *)data + 1, size - 1);
                if (s)
                        check_time(s);
                free(s);
                return 0;
        }
        const char *version = data[0] == 'b' ? EXECCRED_API_V1BETA1 : EXECCRED_API_V1;
        const char *body = (const char *)data + 1;
        size_t len = size - 1;
        execcred_t sentinel = {.token = (char *)"sentinel", .expiry = 7};
        execcred_t c = sentinel;
        hg_error_t err = {0};
        int r = execcred_parse(body, len, version, NOW, &c, &err);
        if (r < 0) {
                if (err.code >= 0 || !err.message[0] || memcmp(&c, &sentinel, sizeof(c)) != 0)
                        abort();
                return 0;
        }
        if (!c.token && !c.cert_pem)
                abort();
        if (!c.cert_pem != !c.key_pem)
                abort();
        for (const char *p = c.token; p && *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        abort();
        json_error_t jerr;
        json_t *j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        if (j) {
                const char *v = json_string_value(json_object_get(j, "apiVersion"));
                const char *k = json_string_value(json_object_get(j, "kind"));
                if (!v || strcmp(v, version) != 0 || !k || strcmp(k, EXECCRED_KIND) != 0)
                        abort();
                json_t *status = json_object_get(j, "status");
                same(c.token, status_string(status, "token"));
                same(c.cert_pem, status_string(status, "clientCertificateData"));
                same(c.key_pem, status_string(status, "clientKeyData"));
                const char *exp = status_string(status, "expirationTimestamp");
                time_t t = 0;
                if (exp ? execcred_parse_time(exp, &t) < 0 || t != c.expiry || t <= NOW
                        : c.expiry != 0)
                        abort();
                json_decref(j);
        }
        execcred_clear(&c);
        return 0;
}
