/* Unit tests for driver/screen: what a full-screen program's bytes leave on
 * the grid (cursor moves, erase, scroll regions, the alternate screen,
 * autowrap, UTF-8), the answers to the terminal's queries, resize, and the
 * bounds. Expected screens are written out as text rows. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "screen.h"
#include "unit.h"

static void feed(screen_t *s, const char *text)
{
        screen_feed(s, (const uint8_t *)text, strlen(text));
}

/* The screen's text must equal want. */
static void check_text(const screen_t *s, const char *want)
{
        size_t len = 0;
        _cleanup_free_ char *got = screen_text(s, &len);
        ck_assert_ptr_nonnull(got);
        ck_assert_uint_eq(len, strlen(got));
        ck_assert_msg(strcmp(got, want) == 0, "screen:\n%s---\nwant:\n%s---", got, want);
}

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
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 3, 10), 0);
        check_text(&s, "\n\n\n");
        feed(&s, "hello\r\nworld");
        check_text(&s, "hello\nworld\n\n");
        /* LF alone keeps the column (no onlcr in the model: the pty adds CR). */
        feed(&s, "\nx");
        check_text(&s, "hello\nworld\n     x\n");
        /* Past the bottom: the top row scrolls away. */
        feed(&s, "\r\nlast");
        check_text(&s, "world\n     x\nlast\n");
        screen_free(&s);
}
END_TEST

START_TEST(autowrap_and_pending_wrap)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 3, 10), 0);
        feed(&s, "0123456789");
        /* The cursor waits at the last column: a CR now stays on this row. */
        feed(&s, "\rA");
        check_text(&s, "A123456789\n\n\n");
        feed(&s, "\r0123456789B");
        check_text(&s, "0123456789\nB\n\n");
        /* DECAWM off: the last column is overwritten. */
        feed(&s, "\x1b[?7l\x1b[3;1H0123456789XYZ");
        check_text(&s, "0123456789\nB\n012345678Z\n");
        screen_free(&s);
}
END_TEST

START_TEST(cursor_moves_and_erase)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 4, 10), 0);
        feed(&s, "aaaaaaaaaa\r\nbbbbbbbbbb\r\ncccccccccc\r\ndddddddddd");
        feed(&s, "\x1b[2;3H\x1b[K"); /* row 2 from col 3 */
        check_text(&s, "aaaaaaaaaa\nbb\ncccccccccc\ndddddddddd\n");
        feed(&s, "\x1b[3;5H\x1b[1K"); /* row 3 up to col 5 */
        check_text(&s, "aaaaaaaaaa\nbb\n     ccccc\ndddddddddd\n");
        feed(&s, "\x1b[1;1H\x1b[2K");
        check_text(&s, "\nbb\n     ccccc\ndddddddddd\n");
        feed(&s, "\x1b[3;8H\x1b[J"); /* to the end of the screen */
        check_text(&s, "\nbb\n     cc\n\n");
        feed(&s, "\x1b[H\x1b[2J");
        check_text(&s, "\n\n\n\n");
        /* Relative moves clamp at the edges. */
        feed(&s, "\x1b[99B\x1b[99Cz\x1b[99A\x1b[99Dy\x1b[2;5Hq\x1b[Aw\x1b[2Bv\x1b[3Du");
        check_text(&s, "y    w\n    q\n    u v\n         z\n");
        ck_assert_uint_eq(screen_cell(&s, 0, 0), 'y');
        ck_assert_uint_eq(screen_cell(&s, 99, 99), ' ');
        /* CHA, VPA, ECH. */
        feed(&s, "\x1b[2;1H0123456789\x1b[4G\x1b[3X\x1b[1dT");
        check_text(&s, "y  T w\n012   6789\n    u v\n         z\n");
        screen_free(&s);
}
END_TEST

START_TEST(insert_delete)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 4, 10), 0);
        feed(&s, "0123456789\r\n1\r\n2\r\n3");
        feed(&s, "\x1b[1;3H\x1b[2P");
        check_text(&s, "01456789\n1\n2\n3\n");
        feed(&s, "\x1b[1;3H\x1b[3@");
        check_text(&s, "01   45678\n1\n2\n3\n");
        feed(&s, "\x1b[2;1H\x1b[L");
        check_text(&s, "01   45678\n\n1\n2\n");
        feed(&s, "\x1b[1;1H\x1b[2M");
        check_text(&s, "1\n2\n\n\n");
        screen_free(&s);
}
END_TEST

START_TEST(scroll_region)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 5, 10), 0);
        feed(&s, "top\r\n1\r\n2\r\n3\r\nbottom");
        /* Region rows 2-4: a linefeed at row 4 scrolls only the region. */
        feed(&s, "\x1b[2;4r\x1b[4;1H\nnew");
        check_text(&s, "top\n2\n3\nnew\nbottom\n");
        /* Reverse index at the region's top scrolls it down. */
        feed(&s, "\x1b[2;1H\x1bMins");
        check_text(&s, "top\nins\n2\n3\nbottom\n");
        /* SU / SD inside the region. */
        feed(&s, "\x1b[S");
        check_text(&s, "top\n2\n3\n\nbottom\n");
        feed(&s, "\x1b[2T");
        check_text(&s, "top\n\n\n2\nbottom\n");
        /* Origin mode: CUP counts from the region's top. */
        feed(&s, "\x1b[?6h\x1b[1;1Ho");
        check_text(&s, "top\no\n\n2\nbottom\n");
        feed(&s, "\x1b[?6l\x1b[r\x1b[5;1H\nend");
        check_text(&s, "o\n\n2\nbottom\nend\n");
        screen_free(&s);
}
END_TEST

START_TEST(alternate_screen)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 3, 10), 0);
        feed(&s, "$ vi file\r\n");
        feed(&s, "\x1b[?1049h\x1b[H\x1b[2Jediting\r\n~\r\n~");
        check_text(&s, "editing\n~\n~\n");
        ck_assert(s.alt_active);
        feed(&s, "\x1b[?1049l");
        check_text(&s, "$ vi file\n\n\n");
        ck_assert_uint_eq(s.cur.row, 1);
        ck_assert_uint_eq(s.cur.col, 0);
        /* Leaving 1049 cleared the alternate grid; 47 neither clears nor
         * saves the cursor, so what is written there stays for next time. */
        feed(&s, "\x1b[?47h");
        check_text(&s, "\n\n\n");
        feed(&s, "\x1b[Hkept\x1b[?47l");
        check_text(&s, "$ vi file\n\n\n");
        feed(&s, "\x1b[?47h");
        check_text(&s, "kept\n\n\n");
        feed(&s, "\x1b[?47l\x1b"
                 "c");
        check_text(&s, "\n\n\n");
        screen_free(&s);
}
END_TEST

START_TEST(save_restore_cursor)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 3, 10), 0);
        feed(&s, "\x1b[2;4H\x1b"
                 "7\x1b[Hab\x1b"
                 "8X\x1b[3;2H\x1b[sY\x1b[1;9H\x1b[uZ");
        check_text(&s, "ab\n   X\n Z\n"); /* Z where the saved cursor was: on Y */
        screen_free(&s);
}
END_TEST

START_TEST(tabs_and_backspace)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 2, 20), 0);
        feed(&s, "a\tb\tc\bC\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\b\bZ");
        check_text(&s, "Z       b       C\n\n");
        feed(&s, "\r\n\t\t\t\tX");
        check_text(&s, "Z       b       C\n                   X\n");
        screen_free(&s);
}
END_TEST

START_TEST(sgr_osc_dcs_ignored)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 2, 20), 0);
        feed(&s, "\x1b[1;31;48;5;200mred\x1b[0m \x1b]0;title\x07t\x1b]2;x\x1b\\u"
                 "\x1bPq#0;2;0;0;0\x1b\\v\x1b(B\x1b)0w\x1b[?25l\x1b[>4;1m\x1b[ q.");
        check_text(&s, "red tuvw.\n\n");
        /* CAN aborts a sequence; its bytes after are text. */
        feed(&s, "\x1b[12\x18"
                 "a");
        check_text(&s, "red tuvw.a\n\n");
        screen_free(&s);
}
END_TEST

START_TEST(utf8)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 2, 10), 0);
        feed(&s, "h\xc3\xa9llo \xe2\x94\x80\xf0\x9f\x98\x80");
        check_text(&s, "h\xc3\xa9llo \xe2\x94\x80\xf0\x9f\x98\x80\n\n");
        /* A cut sequence, a stray continuation, an overlong form, a surrogate. */
        feed(&s, "\r\n\xc3x\x80\xc0\xaf\xed\xa0\x80");
        check_text(&s, "h\xc3\xa9llo \xe2\x94\x80\xf0\x9f\x98\x80\n"
                       "\xef\xbf\xbdx\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\n");
        /* Split across feeds. */
        screen_t t;
        ck_assert_int_eq(screen_init(&t, 2, 10), 0);
        const char *e = "\xe2\x94\x80";
        for (int i = 0; i < 3; i++)
                screen_feed(&t, (const uint8_t *)e + i, 1);
        check_text(&t, "\xe2\x94\x80\n\n");
        screen_free(&t);
        screen_free(&s);
}
END_TEST

START_TEST(queries_answered)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 5, 20), 0);
        feed(&s, "\x1b[3;7H\x1b[6n\x1b[5n\x1b[c");
        ck_assert_uint_eq(s.reply_len, strlen("\x1b[3;7R\x1b[0n\x1b[?62;22c"));
        ck_assert_mem_eq(s.reply, "\x1b[3;7R\x1b[0n\x1b[?62;22c", s.reply_len);
        /* Bounded: a flood of queries fills the buffer and no more. */
        for (int i = 0; i < 100; i++)
                feed(&s, "\x1b[6n");
        ck_assert_uint_le(s.reply_len, SCREEN_REPLY_MAX);
        screen_free(&s);
}
END_TEST

START_TEST(resize)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 4, 10), 0);
        feed(&s, "row1\r\nrow2\r\nrow3\r\nrow4 long");
        ck_assert_int_eq(screen_resize(&s, 6, 12), 0);
        check_text(&s, "row1\nrow2\nrow3\nrow4 long\n\n\n");
        ck_assert_uint_eq(s.cur.row, 3);
        /* Shrinking below the cursor drops rows from the top. */
        ck_assert_int_eq(screen_resize(&s, 2, 10), 0);
        check_text(&s, "row3\nrow4 long\n");
        ck_assert_uint_eq(s.cur.row, 1);
        ck_assert_uint_eq(s.bottom, 1);
        feed(&s, "\r\nnext");
        check_text(&s, "row4 long\nnext\n");
        screen_free(&s);
}
END_TEST

/* DECCKM: the harness's cursor-key mode, for the keys hangar types
 * (tmux_keys_encode_mode); set and reset, a reset (RIS) clears it, other
 * private modes in the same sequence do not hide it. */
START_TEST(application_cursor_keys)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 4, 10), 0);
        ck_assert(!screen_app_cursor(&s));
        feed(&s, "\x1b[?1h\x1b=");
        ck_assert(screen_app_cursor(&s));
        feed(&s, "\x1b[?1l");
        ck_assert(!screen_app_cursor(&s));
        feed(&s, "\x1b[?1049;1h");
        ck_assert(screen_app_cursor(&s));
        feed(&s, "\x1b"
                 "c");
        ck_assert(!screen_app_cursor(&s));
        feed(&s, "\x1b[1h"); /* an ANSI mode 1, not DECCKM */
        ck_assert(!screen_app_cursor(&s));
        screen_free(&s);
}
END_TEST

START_TEST(huge_parameters_and_many)
{
        screen_t s;
        ck_assert_int_eq(screen_init(&s, 3, 10), 0);
        feed(&s, "\x1b[99999999999999999999;99999999999999999999Hx");
        check_text(&s, "\n\n         x\n");
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
        feed(&s, "y\x1b[99999999L\x1b[99999999@\x1b[99999999P\x1b[99999999b");
        check_text(&s, "yyyyyyyyyy\nyyyyyyyyyy\nyyyyyyyyyy\n");
        screen_free(&s);
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
