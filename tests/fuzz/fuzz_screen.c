/* libFuzzer target: the agent's terminal bytes through driver/term/screen. The
 * first two bytes choose the size (rows 2-33, cols 10-73); the rest is fed
 * in pieces whose sizes come from a generator seeded by the third byte, and
 * a byte 0xfe followed by two more asks for a resize in between. Checked,
 * abort() on violation:
 *   - the grid stays rows x cols, the cursor and the scroll region inside it;
 *   - the text is exactly rows lines, each of at most cols codepoints, valid
 *     UTF-8 with no control characters;
 *   - the replies stay within their buffer;
 *   - chunking does not matter: the same bytes fed in one piece (with the
 *     same resizes at the same places) give the same text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "screen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t rng_next(uint32_t *s)
{
        *s ^= *s << 13;
        *s ^= *s >> 17;
        *s ^= *s << 5;
        return *s;
}

static void check(const screen_t *s)
{
        if (s->rows < SCREEN_ROWS_MIN || s->cols < SCREEN_COLS_MIN || s->cur.row >= s->rows ||
            s->cur.col >= s->cols || s->top > s->bottom || s->bottom >= s->rows ||
            s->reply_len > SCREEN_REPLY_MAX || (s->grid != s->main && s->grid != s->alt))
                abort();
}

static void check_text(const char *t, size_t len, unsigned rows, unsigned cols)
{
        if (strlen(t) != len)
                abort();
        unsigned lines = 0, cps = 0;
        for (size_t i = 0; i < len;) {
                unsigned char c = (unsigned char)t[i];
                if (c == '\n') {
                        lines++;
                        cps = 0;
                        i++;
                        continue;
                }
                if (c < 0x20 || c == 0x7f)
                        abort();
                size_t k = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : 4;
                if ((c & 0xc0) == 0x80 || c >= 0xf8 || i + k > len)
                        abort();
                for (size_t j = 1; j < k; j++)
                        if (((unsigned char)t[i + j] & 0xc0) != 0x80)
                                abort();
                if (++cps > cols)
                        abort();
                i += k;
        }
        if (lines != rows || (len && t[len - 1] != '\n'))
                abort();
}

/* Feeds p[0..n) into s, honouring 0xfe resize markers, in pieces (when rng)
 * or whole between markers. */
static void run(screen_t *s, const uint8_t *p, size_t n, uint32_t *rng)
{
        size_t off = 0;
        while (off < n) {
                const uint8_t *m = memchr(p + off, 0xfe, n - off);
                size_t end = m ? (size_t)(m - p) : n;
                while (off < end) {
                        size_t k = end - off;
                        if (rng) {
                                size_t piece = 1 + rng_next(rng) % 64;
                                if (piece < k)
                                        k = piece;
                        }
                        screen_feed(s, p + off, k);
                        check(s);
                        off += k;
                }
                if (!m)
                        break;
                if (off + 2 < n) {
                        (void)screen_resize(s, SCREEN_ROWS_MIN + p[off + 1] % 32,
                                            SCREEN_COLS_MIN + p[off + 2] % 64);
                        check(s);
                }
                off += 3;
                s->reply_len = 0; /* taken by the driver */
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 3)
                return 0;
        unsigned rows = SCREEN_ROWS_MIN + data[0] % 32, cols = SCREEN_COLS_MIN + data[1] % 64;
        uint32_t rng = 0x9e3779b9u ^ ((uint32_t)data[2] * 0x01000193u);
        const uint8_t *p = data + 3;
        size_t n = size - 3;

        screen_t a, b;
        if (screen_init(&a, rows, cols) < 0)
                return 0;
        if (screen_init(&b, rows, cols) < 0) {
                screen_free(&a);
                return 0;
        }
        run(&a, p, n, &rng);
        run(&b, p, n, NULL);

        size_t la = 0, lb = 0;
        char *ta = screen_text(&a, &la), *tb = screen_text(&b, &lb);
        if (ta && tb) {
                check_text(ta, la, a.rows, a.cols);
                if (la != lb || memcmp(ta, tb, la) != 0)
                        abort();
        }
        free(ta);
        free(tb);
        screen_free(&a);
        screen_free(&b);
        return 0;
}
