#include "wsupgrade.h"

#include <ctype.h>
#include <limits.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include "base64.h"
#include "cleanup.h"
#include "strparse.h"

/* RFC 6455 section 1.3: appended to the key before hashing. */
static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

int wsup_key_new(char ret_key[WSUP_KEY_LEN + 1])
{
        unsigned char raw[16];
        if (RAND_bytes(raw, sizeof(raw)) != 1)
                return -EIO;
        size_t n = base64_encode_into(ret_key, raw, sizeof(raw));
        ret_key[n] = '\0';
        return 0;
}

void wsup_accept_for(const char *key, char ret_accept[WSUP_ACCEPT_LEN + 1])
{
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int len = 0;
        char text[WSUP_KEY_LEN + sizeof(ws_guid)];
        size_t kn = strnlen(key, WSUP_KEY_LEN);
        memcpy(text, key, kn);
        memcpy(text + kn, ws_guid, sizeof(ws_guid) - 1);
        if (EVP_Digest(text, kn + sizeof(ws_guid) - 1, digest, &len, EVP_sha1(), NULL) != 1)
                len = 0; /* an accept no server can match: the 101 is refused */
        size_t n = base64_encode_into(ret_accept, digest, len);
        ret_accept[n] = '\0';
}

int wsup_request(strbuf_t *out, const char *host, const char *target, const char *key,
                 exs_proto_t only, const char *bearer, const char *const *extra_headers)
{
        int r = strbuf_printf(out,
                              "GET %s HTTP/1.1\r\n"
                              "Host: %s\r\n"
                              "User-Agent: hangar/%s\r\n"
                              "Connection: Upgrade\r\n"
                              "Upgrade: websocket\r\n"
                              "Sec-WebSocket-Version: 13\r\n"
                              "Sec-WebSocket-Key: %s\r\n"
                              "Sec-WebSocket-Protocol: %s%s%s\r\n",
                              target, host, HANGAR_VERSION, key,
                              exs_proto_name(only == EXS_PROTO_V4 ? EXS_PROTO_V4 : EXS_PROTO_V5),
                              only == EXS_PROTO_NONE ? ", " : "",
                              only == EXS_PROTO_NONE ? exs_proto_name(EXS_PROTO_V4) : "");
        if (r == 0 && bearer)
                r = strbuf_printf(out, "Authorization: Bearer %s\r\n", bearer);
        for (size_t i = 0; r == 0 && extra_headers && extra_headers[i]; i++)
                r = strbuf_printf(out, "%s\r\n", extra_headers[i]);
        if (r == 0)
                r = strbuf_puts(out, "\r\n");
        return r;
}

/* A header's value, trimmed: the span [*v, *v + *vn). */
typedef struct header {
        const char *name;
        size_t name_len;
        const char *value;
        size_t value_len;
} header_t;

static bool name_is(const header_t *h, const char *name)
{
        return h->name_len == strlen(name) && strncasecmp(h->name, name, h->name_len) == 0;
}

static bool value_is(const header_t *h, const char *v)
{
        return h->value_len == strlen(v) && strncasecmp(h->value, v, h->value_len) == 0;
}

/* Whether a comma-separated token list (Connection) holds token. */
static bool list_has(const char *v, size_t n, const char *token)
{
        size_t tn = strlen(token);
        size_t i = 0;
        while (i < n) {
                while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
                        i++;
                size_t start = i;
                while (i < n && v[i] != ',')
                        i++;
                size_t end = i;
                while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
                        end--;
                if (end - start == tn && strncasecmp(v + start, token, tn) == 0)
                        return true;
        }
        return false;
}

/* One "Name: value" line (no CRLF). Names are tokens; values have no
 * control characters but tab. A line starting with white space is the
 * obsolete folding, refused. */
static int parse_header(const char *line, size_t n, header_t *h)
{
        const char *colon = memchr(line, ':', n);
        if (!colon || colon == line)
                return -EPROTO;
        for (const char *p = line; p < colon; p++)
                if (!isgraph((unsigned char)*p))
                        return -EPROTO;
        const char *v = colon + 1, *end = line + n;
        for (const char *p = v; p < end; p++)
                if ((unsigned char)*p < 0x20 && *p != '\t')
                        return -EPROTO;
                else if (*p == 0x7f)
                        return -EPROTO;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;
        *h = (header_t){line, (size_t)(colon - line), v, (size_t)(end - v)};
        return 0;
}

/* "HTTP/1.1 101 Switching Protocols": the three-digit status. */
static int parse_status_line(const char *line, size_t n, int *ret)
{
        static const char prefix[] = "HTTP/1.";
        if (n < sizeof(prefix) - 1 + 5 || memcmp(line, prefix, sizeof(prefix) - 1) != 0 ||
            (line[7] != '0' && line[7] != '1') || line[8] != ' ')
                return -EPROTO;
        int status = 0;
        for (size_t i = 9; i < 12; i++) {
                if (!isdigit((unsigned char)line[i]))
                        return -EPROTO;
                status = status * 10 + (line[i] - '0');
        }
        if (n > 12 && line[12] != ' ')
                return -EPROTO;
        if (status < 100)
                return -EPROTO;
        *ret = status;
        return 0;
}

int wsup_parse_head(const char *buf, size_t n, const char *key, exs_proto_t only,
                    wsup_answer_t *ret, hg_error_t *err)
{
        size_t scan = n < WSUP_MAX_HEAD ? n : WSUP_MAX_HEAD;
        const char *end = memmem(buf, scan, "\r\n\r\n", 4);
        if (!end)
                return n >= WSUP_MAX_HEAD
                           ? error_set(err, -EPROTO, "the answer's head is over %d bytes",
                                       WSUP_MAX_HEAD)
                           : -EAGAIN;
        size_t head_len = (size_t)(end - buf) + 4;
        if (memchr(buf, '\0', head_len))
                return error_set(err, -EPROTO, "a NUL byte in the answer's head");
        wsup_answer_t a = {.content_length = -1};
        a.head_len = head_len;
        const char *line = buf;
        const char *eol = memmem(line, head_len, "\r\n", 2);
        if (parse_status_line(line, (size_t)(eol - line), &a.status) < 0)
                return error_set(err, -EPROTO, "not an HTTP/1.1 status line");
        bool upgrade = false, connection = false, chunked = false;
        const char *accept = NULL, *proto = NULL;
        size_t accept_len = 0, proto_len = 0;
        int n_accept = 0, n_proto = 0, n_length = 0, n_te = 0;
        for (line = eol + 2; line < end + 2; line = eol + 2) {
                eol = memmem(line, (size_t)(end + 2 - line), "\r\n", 2);
                if (eol == line)
                        break;
                header_t h;
                if (parse_header(line, (size_t)(eol - line), &h) < 0)
                        return error_set(err, -EPROTO, "a malformed header line in the answer");
                if (name_is(&h, "Upgrade")) {
                        upgrade = value_is(&h, "websocket");
                } else if (name_is(&h, "Connection")) {
                        connection = connection || list_has(h.value, h.value_len, "upgrade");
                } else if (name_is(&h, "Sec-WebSocket-Accept")) {
                        accept = h.value, accept_len = h.value_len, n_accept++;
                } else if (name_is(&h, "Sec-WebSocket-Protocol")) {
                        proto = h.value, proto_len = h.value_len, n_proto++;
                } else if (name_is(&h, "Content-Length")) {
                        char num[24];
                        uint64_t v = 0;
                        if (h.value_len == 0 || h.value_len >= sizeof(num))
                                return error_set(err, -EPROTO, "a bad Content-Length");
                        memcpy(num, h.value, h.value_len);
                        num[h.value_len] = '\0';
                        if (parse_u64(num, &v) < 0 || v > (uint64_t)LONG_MAX)
                                return error_set(err, -EPROTO, "a bad Content-Length");
                        a.content_length = (long)v;
                        n_length++;
                } else if (name_is(&h, "Transfer-Encoding")) {
                        chunked = value_is(&h, "chunked");
                        n_te++;
                        if (!chunked)
                                return error_set(err, -EPROTO,
                                                 "a Transfer-Encoding other than chunked");
                }
        }
        if (n_accept > 1 || n_proto > 1 || n_length > 1 || n_te > 1)
                return error_set(err, -EPROTO, "a header of the answer is repeated");
        if (chunked && n_length)
                return error_set(err, -EPROTO, "both Content-Length and chunked");
        a.chunked = chunked;
        if (a.status == 101) {
                char want[WSUP_ACCEPT_LEN + 1];
                wsup_accept_for(key, want);
                if (!upgrade || !connection)
                        return error_set(err, -EPROTO, "a 101 without Upgrade: websocket");
                if (!accept || accept_len != WSUP_ACCEPT_LEN ||
                    memcmp(accept, want, accept_len) != 0)
                        return error_set(err, -EPROTO, "a 101 whose Sec-WebSocket-Accept is wrong");
                if (!proto || exs_proto_parse(proto, proto_len, &a.proto) < 0 ||
                    (only != EXS_PROTO_NONE && a.proto != only))
                        return error_set(
                            err, -EPROTO, "a 101 without one of the subprotocols offered (%s, %s)",
                            exs_proto_name(EXS_PROTO_V5), exs_proto_name(EXS_PROTO_V4));
        }
        *ret = a;
        return 0;
}

/* Decodes chunks from buf into out. -EAGAIN: not all there yet. */
static int dechunk(const char *buf, size_t n, strbuf_t *out, hg_error_t *err)
{
        size_t i = 0;
        for (;;) {
                const char *eol = memmem(buf + i, n - i, "\r\n", 2);
                if (!eol)
                        return n - i > 64 ? error_set(err, -EPROTO, "a chunk size line too long")
                                          : -EAGAIN;
                size_t size = 0, digits = 0;
                const char *p = buf + i;
                for (; p < eol && isxdigit((unsigned char)*p); p++, digits++) {
                        if (digits >= 8)
                                return error_set(err, -EPROTO, "a chunk too large");
                        size = size * 16 + (size_t)(isdigit((unsigned char)*p)
                                                        ? *p - '0'
                                                        : tolower((unsigned char)*p) - 'a' + 10);
                }
                if (digits == 0 || (p < eol && *p != ';'))
                        return error_set(err, -EPROTO, "a malformed chunk size");
                i = (size_t)(eol - buf) + 2;
                if (size == 0)
                        return 0; /* trailers, if any, are not needed */
                if (n - i < size + 2)
                        return -EAGAIN;
                if (buf[i + size] != '\r' || buf[i + size + 1] != '\n')
                        return error_set(err, -EPROTO, "a chunk not ended by CRLF");
                size_t room = out->len < WSUP_MAX_BODY ? WSUP_MAX_BODY - out->len : 0;
                if (strbuf_append(out, buf + i, size < room ? size : room) < 0)
                        return -ENOMEM;
                i += size + 2;
        }
}

int wsup_body(const char *buf, size_t n, bool eof, const wsup_answer_t *a, strbuf_t *ret,
              hg_error_t *err)
{
        _cleanup_strbuf_ strbuf_t body = {0};
        int r = 0;
        if (a->chunked) {
                r = dechunk(buf, n, &body, err);
                if (r == -EAGAIN && eof)
                        return error_set(err, -EPROTO, "the answer's chunked body was cut short");
                if (r < 0 && r != -EAGAIN)
                        return r;
                if (r == -EAGAIN && body.len < WSUP_MAX_BODY)
                        return -EAGAIN;
        } else if (a->content_length >= 0) {
                size_t want = (size_t)a->content_length;
                if (n < want && !eof && n < WSUP_MAX_BODY)
                        return -EAGAIN;
                if (n < want && eof)
                        return error_set(err, -EPROTO, "the answer's body was cut short");
                if (want > n)
                        want = n;
                r = strbuf_append(&body, buf, want < WSUP_MAX_BODY ? want : WSUP_MAX_BODY);
        } else {
                if (!eof && n < WSUP_MAX_BODY)
                        return -EAGAIN;
                r = strbuf_append(&body, buf, n < WSUP_MAX_BODY ? n : WSUP_MAX_BODY);
        }
        if (r < 0)
                return r;
        if (!body.data && strbuf_puts(&body, "") < 0)
                return -ENOMEM;
        strbuf_free(ret);
        *ret = body;
        body = (strbuf_t){0};
        return 0;
}
