/* Unit tests for driver/term/screen: what a full-screen program's bytes leave on
 * the grid (cursor moves, erase, scroll regions, the alternate screen,
 * autowrap, UTF-8), the answers to the terminal's queries, resize, and the
 * bounds. Expected screens are written out as text rows. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "screen.h"
#include "unit.h"

static void feed(screen_t *s, const char *text)
{
        screen_feed(s, (const uint8_t *)text, strlen(text));
}

static void open_screen(screen_t *s, unsigned rows, unsigned cols)
{
        ck_assert_int_eq(screen_init(s, rows, cols), 0);
}
#define _screen_ __attribute__((cleanup(screen_free)))

/* The screen's text must equal want. */
static void check_text(const screen_t *s, const char *want)
{
        size_t len = 0;
        _cleanup_free_ char *got = screen_text(s, &len);
        ck_assert_ptr_nonnull(got);
        ck_assert_uint_eq(len, strlen(got));
        ck_assert_msg(strcmp(got, want) == 0, "screen:\n%s---\nwant:\n%s---", got, want);
}

/* One step of a test: bytes fed (NULL: none), then the whole screen as
 * text rows. */
typedef struct {
        const char *feed;
        const char *want;
} step_t;

static void play_steps(screen_t *s, const step_t *steps, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                if (steps[i].feed)
                        feed(s, steps[i].feed);
                check_text(s, steps[i].want);
        }
}
/* PLAY(&s, {feed, want}, ...): each step in turn. */
#define PLAY(s, ...) \
        play_steps((s), (const step_t[]){__VA_ARGS__}, ARRAY_SIZE(((const step_t[]){__VA_ARGS__})))

START_TEST(bounds)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 1, 80), -EINVAL);
        ck_assert_int_eq(screen_init(&s, 24, 9), -EINVAL);
        ck_assert_int_eq(screen_init(&s, SCREEN_ROWS_MAX + 1, 80), -EINVAL);
        ck_assert_int_eq(screen_init(&s, 24, SCREEN_COLS_MAX + 1), -EINVAL);
        ck_assert_int_eq(screen_init(&s, 24, 80), 0);
        ck_assert_int_eq(screen_resize(&s, 0, 80), -EINVAL);
        ck_assert_uint_eq(s.rows, 24);
        screen_free(&s);
        screen_free(NULL);
}
END_TEST

START_TEST(plain_text_and_newlines)
{
        _screen_ screen_t s;
        open_screen(&s, 3, 10);
        PLAY(&s, {NULL, "\n\n\n"}, {"hello\r\nworld", "hello\nworld\n\n"},
             /* LF alone keeps the column (no onlcr in the model: the pty adds CR). */
             {"\nx", "hello\nworld\n     x\n"},
             /* Past the bottom: the top row scrolls away. */
             {"\r\nlast", "world\n     x\nlast\n"});
}
END_TEST

START_TEST(autowrap_and_pending_wrap)
{
        _screen_ screen_t s;
        open_screen(&s, 3, 10);
        feed(&s, "0123456789");
        PLAY(&s,
             /* The cursor waits at the last column: a CR now stays on this row. */
             {"\rA", "A123456789\n\n\n"}, {"\r0123456789B", "0123456789\nB\n\n"},
             /* DECAWM off: the last column is overwritten. */
             {"\x1b[?7l\x1b[3;1H0123456789XYZ", "0123456789\nB\n012345678Z\n"});
}
END_TEST

START_TEST(cursor_moves_and_erase)
{
        _screen_ screen_t s;
        open_screen(&s, 4, 10);
        feed(&s, "aaaaaaaaaa\r\nbbbbbbbbbb\r\ncccccccccc\r\ndddddddddd");
        PLAY(&s,
             {"\x1b[2;3H\x1b[K", "aaaaaaaaaa\nbb\ncccccccccc\ndddddddddd\n"}, /* row 2 from col 3 */
             {"\x1b[3;5H\x1b[1K",
              "aaaaaaaaaa\nbb\n     ccccc\ndddddddddd\n"}, /* row 3 up to col 5 */
             {"\x1b[1;1H\x1b[2K", "\nbb\n     ccccc\ndddddddddd\n"},
             {"\x1b[3;8H\x1b[J", "\nbb\n     cc\n\n"}, /* to the end of the screen */
             {"\x1b[H\x1b[2J", "\n\n\n\n"},
             /* Relative moves clamp at the edges. */
             {"\x1b[99B\x1b[99Cz\x1b[99A\x1b[99Dy\x1b[2;5Hq\x1b[Aw\x1b[2Bv\x1b[3Du",
              "y    w\n    q\n    u v\n         z\n"});
        ck_assert_uint_eq(screen_cell(&s, 0, 0), 'y');
        ck_assert_uint_eq(screen_cell(&s, 99, 99), ' ');
        /* CHA, VPA, ECH. */
        PLAY(&s, {"\x1b[2;1H0123456789\x1b[4G\x1b[3X\x1b[1dT",
                  "y  T w\n012   6789\n    u v\n         z\n"});
}
END_TEST

START_TEST(insert_delete)
{
        _screen_ screen_t s;
        open_screen(&s, 4, 10);
        feed(&s, "0123456789\r\n1\r\n2\r\n3");
        PLAY(&s, {"\x1b[1;3H\x1b[2P", "01456789\n1\n2\n3\n"},
             {"\x1b[1;3H\x1b[3@", "01   45678\n1\n2\n3\n"},
             {"\x1b[2;1H\x1b[L", "01   45678\n\n1\n2\n"}, {"\x1b[1;1H\x1b[2M", "1\n2\n\n\n"});
}
END_TEST

START_TEST(scroll_region)
{
        _screen_ screen_t s;
        open_screen(&s, 5, 10);
        feed(&s, "top\r\n1\r\n2\r\n3\r\nbottom");
        PLAY(&s,
             /* Region rows 2-4: a linefeed at row 4 scrolls only the region. */
             {"\x1b[2;4r\x1b[4;1H\nnew", "top\n2\n3\nnew\nbottom\n"},
             /* Reverse index at the region's top scrolls it down. */
             {"\x1b[2;1H\x1bMins", "top\nins\n2\n3\nbottom\n"},
             /* SU / SD inside the region. */
             {"\x1b[S", "top\n2\n3\n\nbottom\n"}, {"\x1b[2T", "top\n\n\n2\nbottom\n"},
             /* Origin mode: CUP counts from the region's top. */
             {"\x1b[?6h\x1b[1;1Ho", "top\no\n\n2\nbottom\n"},
             {"\x1b[?6l\x1b[r\x1b[5;1H\nend", "o\n\n2\nbottom\nend\n"});
}
END_TEST

START_TEST(alternate_screen)
{
        _screen_ screen_t s;
        open_screen(&s, 3, 10);
        feed(&s, "$ vi file\r\n");
        PLAY(&s, {"\x1b[?1049h\x1b[H\x1b[2Jediting\r\n~\r\n~", "editing\n~\n~\n"});
        ck_assert(s.alt_active);
        PLAY(&s, {"\x1b[?1049l", "$ vi file\n\n\n"});
        ck_assert_uint_eq(s.cur.row, 1);
        ck_assert_uint_eq(s.cur.col, 0);
        /* Leaving 1049 cleared the alternate grid; 47 neither clears nor
         * saves the cursor, so what is written there stays for next time. */
        PLAY(&s, {"\x1b[?47h", "\n\n\n"}, {"\x1b[Hkept\x1b[?47l", "$ vi file\n\n\n"},
             {"\x1b[?47h", "kept\n\n\n"},
             {"\x1b[?47l\x1b"
              "c",
              "\n\n\n"});
}
END_TEST

START_TEST(save_restore_cursor)
{
        _screen_ screen_t s;
        open_screen(&s, 3, 10);
        PLAY(&s, {"\x1b[2;4H\x1b"
                  "7\x1b[Hab\x1b"
                  "8X\x1b[3;2H\x1b[sY\x1b[1;9H\x1b[uZ",
                  "ab\n   X\n Z\n"}); /* Z where the saved cursor was: on Y */
}
END_TEST

START_TEST(tabs_and_backspace)
{
        _screen_ screen_t s;
        open_screen(&s, 2, 20);
        PLAY(&s, {"a\tb\tc\bC\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\bZ", "Z       b       C\n\n"},
             {"\r\n\t\t\t\tX", "Z       b       C\n                   X\n"});
}
END_TEST

START_TEST(sgr_osc_dcs_ignored)
{
        _screen_ screen_t s;
        open_screen(&s, 2, 20);
        PLAY(&s,
             {"\x1b[1;31;48;5;200mred\x1b[0m \x1b]0;title\x07t\x1b]2;x\x1b\\u"
              "\x1bPq#0;2;0;0;0\x1b\\v\x1b(B\x1b)0w\x1b[?25l\x1b[>4;1m\x1b[ q.",
              "red tuvw.\n\n"},
             /* CAN aborts a sequence; its bytes after are text. */
             {"\x1b[12\x18"
              "a",
              "red tuvw.a\n\n"});
}
END_TEST

START_TEST(utf8)
{
        _screen_ screen_t s;
        open_screen(&s, 2, 10);
        PLAY(&s,
             {"h\xc3\xa9llo \xe2\x94\x80\xf0\x9f\x98\x80",
              "h\xc3\xa9llo \xe2\x94\x80\xf0\x9f\x98\x80\n\n"},
             /* A cut sequence, a stray continuation, an overlong form, a surrogate. */
             {"\r\n\xc3x\x80\xc0\xaf\xed\xa0\x80",
              "h\xc3\xa9llo \xe2\x94\x80\xf0\x9f\x98\x80\n"
              "\xef\xbf\xbdx\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n"});
        /* Split across feeds. */
        _screen_ screen_t t;
        open_screen(&t, 2, 10);
        const char *e = "\xe2\x94\x80";
        for (int i = 0; i < 3; i++)
                screen_feed(&t, (const uint8_t *)e + i, 1);
        check_text(&t, "\xe2\x94\x80\n\n");
}
END_TEST

START_TEST(queries_answered)
{
        _screen_ screen_t s;
        open_screen(&s, 5, 20);
        feed(&s, "\x1b[3;7H\x1b[6n\x1b[5n\x1b[c");
        ck_assert_uint_eq(s.reply_len, strlen("\x1b[3;7R\x1b[0n\x1b[?62;22c"));
        ck_assert_mem_eq(s.reply, "\x1b[3;7R\x1b[0n\x1b[?62;22c", s.reply_len);
        /* Bounded: a flood of queries fills the buffer and no more. */
        for (int i = 0; i < 100; i++)
                feed(&s, "\x1b[6n");
        ck_assert_uint_le(s.reply_len, SCREEN_REPLY_MAX);
}
END_TEST

START_TEST(resize)
{
        _screen_ screen_t s;
        open_screen(&s, 4, 10);
        feed(&s, "row1\r\nrow2\r\nrow3\r\nrow4 long");
        ck_assert_int_eq(screen_resize(&s, 6, 12), 0);
        check_text(&s, "row1\nrow2\nrow3\nrow4 long\n\n\n");
        ck_assert_uint_eq(s.cur.row, 3);
        /* Shrinking below the cursor drops rows from the top. */
        ck_assert_int_eq(screen_resize(&s, 2, 10), 0);
        check_text(&s, "row3\nrow4 long\n");
        ck_assert_uint_eq(s.cur.row, 1);
        ck_assert_uint_eq(s.bottom, 1);
        PLAY(&s, {"\r\nnext", "row4 long\nnext\n"});
}
END_TEST

/* DECCKM: the harness's cursor-key mode, for the keys hangar types
 * (tmux_keys_encode_mode); set and reset, a reset (RIS) clears it, other
 * private modes in the same sequence do not hide it. */
START_TEST(application_cursor_keys)
{
        static const struct {
                const char *feed;
                bool app_cursor;
        } steps[] = {
            {"", false},
            {"\x1b[?1h\x1b=", true},
            {"\x1b[?1l", false},
            {"\x1b[?1049;1h", true},
            {"\x1b"
             "c",
             false},
            {"\x1b[1h", false}, /* an ANSI mode 1, not DECCKM */
        };
        _screen_ screen_t s;
        open_screen(&s, 4, 10);
        for (size_t i = 0; i < ARRAY_SIZE(steps); i++) {
                feed(&s, steps[i].feed);
                ck_assert_msg(screen_app_cursor(&s) == steps[i].app_cursor, "step %zu", i);
        }
}
END_TEST

START_TEST(huge_parameters_and_many)
{
        _screen_ screen_t s;
        open_screen(&s, 3, 10);
        PLAY(&s, {"\x1b[99999999999999999999;99999999999999999999Hx", "\n\n         x\n"});
        char many[512];
        size_t n = 0;
        many[n++] = '\x1b';
        many[n++] = '[';
        for (int i = 0; i < 100; i++) {
                many[n++] = '1';
                many[n++] = ';';
        }
        many[n++] = 'H';
        many[n] = '\0';
        feed(&s, many);
        PLAY(&s, {"y\x1b[99999999L\x1b[99999999@\x1b[99999999P\x1b[99999999b",
                  "yyyyyyyyyy\nyyyyyyyyyy\nyyyyyyyyyy\n"});
}
END_TEST

static Suite *screen_suite(void)
{
        Suite *s = suite_create("screen");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, bounds);
        tcase_add_test(tc, plain_text_and_newlines);
        tcase_add_test(tc, autowrap_and_pending_wrap);
        tcase_add_test(tc, cursor_moves_and_erase);
        tcase_add_test(tc, insert_delete);
        tcase_add_test(tc, scroll_region);
        tcase_add_test(tc, alternate_screen);
        tcase_add_test(tc, save_restore_cursor);
        tcase_add_test(tc, tabs_and_backspace);
        tcase_add_test(tc, sgr_osc_dcs_ignored);
        tcase_add_test(tc, utf8);
        tcase_add_test(tc, queries_answered);
        tcase_add_test(tc, resize);
        tcase_add_test(tc, huge_parameters_and_many);
        tcase_add_test(tc, application_cursor_keys);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(screen_suite());
}
