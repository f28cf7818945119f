#include "screen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLANK       0x20u
#define REPLACEMENT 0xfffdu
#define PARAM_MAX   65535u
#define TAB_WIDTH   8u

static uint32_t *grid_new(unsigned rows, unsigned cols)
{
        size_t n = (size_t)rows * cols;
        uint32_t *g = malloc(n * sizeof(*g));
        if (!g)
                return NULL;
        for (size_t i = 0; i < n; i++)
                g[i] = BLANK;
        return g;
}

static bool size_ok(unsigned rows, unsigned cols)
{
        return rows >= SCREEN_ROWS_MIN && rows <= SCREEN_ROWS_MAX && cols >= SCREEN_COLS_MIN &&
               cols <= SCREEN_COLS_MAX;
}

int screen_init(screen_t *s, unsigned rows, unsigned cols)
{
        if (!size_ok(rows, cols))
                return -EINVAL;
        *s = (screen_t){0};
        s->main = grid_new(rows, cols);
        s->alt = grid_new(rows, cols);
        if (!s->main || !s->alt) {
                free(s->main);
                free(s->alt);
                *s = (screen_t){0};
                return -ENOMEM;
        }
        s->rows = rows;
        s->cols = cols;
        s->grid = s->main;
        s->top = 0;
        s->bottom = rows - 1;
        s->autowrap = true;
        return 0;
}

void screen_free(screen_t *s)
{
        if (!s)
                return;
        free(s->main);
        free(s->alt);
        *s = (screen_t){0};
}

uint32_t screen_cell(const screen_t *s, unsigned row, unsigned col)
{
        if (row >= s->rows || col >= s->cols)
                return BLANK;
        return s->grid[(size_t)row * s->cols + col];
}

/* ---- grid operations (all bounds-checked by construction) ---- */

static uint32_t *row_ptr(screen_t *s, unsigned row)
{
        return s->grid + (size_t)row * s->cols;
}

static void clear_cells(screen_t *s, unsigned row, unsigned from, unsigned to /* exclusive */)
{
        if (row >= s->rows)
                return;
        if (to > s->cols)
                to = s->cols;
        uint32_t *r = row_ptr(s, row);
        for (unsigned c = from; c < to; c++)
                r[c] = BLANK;
}

static void clear_rows(screen_t *s, unsigned from, unsigned to /* exclusive */)
{
        for (unsigned r = from; r < to && r < s->rows; r++)
                clear_cells(s, r, 0, s->cols);
}

/* Moves rows [top, bottom] up by n (n blank rows enter at the bottom). */
static void scroll_up(screen_t *s, unsigned top, unsigned bottom, unsigned n)
{
        if (top > bottom || bottom >= s->rows)
                return;
        unsigned height = bottom - top + 1;
        if (n > height)
                n = height;
        if (n < height)
                memmove(row_ptr(s, top), row_ptr(s, top + n),
                        (size_t)(height - n) * s->cols * sizeof(uint32_t));
        clear_rows(s, bottom + 1 - n, bottom + 1);
}

static void scroll_down(screen_t *s, unsigned top, unsigned bottom, unsigned n)
{
        if (top > bottom || bottom >= s->rows)
                return;
        unsigned height = bottom - top + 1;
        if (n > height)
                n = height;
        if (n < height)
                memmove(row_ptr(s, top + n), row_ptr(s, top),
                        (size_t)(height - n) * s->cols * sizeof(uint32_t));
        clear_rows(s, top, top + n);
}

static void linefeed(screen_t *s)
{
        s->cur.wrap_pending = false;
        if (s->cur.row == s->bottom)
                scroll_up(s, s->top, s->bottom, 1);
        else if (s->cur.row + 1 < s->rows)
                s->cur.row++;
}

static void reverse_index(screen_t *s)
{
        s->cur.wrap_pending = false;
        if (s->cur.row == s->top)
                scroll_down(s, s->top, s->bottom, 1);
        else if (s->cur.row > 0)
                s->cur.row--;
}

static void put_char(screen_t *s, uint32_t cp)
{
        if (s->cur.wrap_pending) {
                s->cur.col = 0;
                linefeed(s);
        }
        row_ptr(s, s->cur.row)[s->cur.col] = cp;
        s->last_char = cp;
        if (s->cur.col + 1 >= s->cols)
                s->cur.wrap_pending = s->autowrap;
        else
                s->cur.col++;
}

/* Cursor positioning, clamped; in origin mode rows count from the region. */
static void move_to(screen_t *s, unsigned row, unsigned col)
{
        unsigned lo = s->cur.origin ? s->top : 0, hi = s->cur.origin ? s->bottom : s->rows - 1;
        row = row > hi - lo ? hi : lo + row;
        s->cur.row = row;
        s->cur.col = col >= s->cols ? s->cols - 1 : col;
        s->cur.wrap_pending = false;
}

static void set_row_rel(screen_t *s, int delta)
{
        /* CUU/CUD stop at the scroll region's edge when they start inside it. */
        unsigned lo = s->cur.row >= s->top ? s->top : 0;
        unsigned hi = s->cur.row <= s->bottom ? s->bottom : s->rows - 1;
        long r = (long)s->cur.row + delta;
        if (r < (long)lo)
                r = lo;
        if (r > (long)hi)
                r = hi;
        s->cur.row = (unsigned)r;
        s->cur.wrap_pending = false;
}

static void set_col_rel(screen_t *s, int delta)
{
        long c = (long)s->cur.col + delta;
        if (c < 0)
                c = 0;
        if (c >= (long)s->cols)
                c = s->cols - 1;
        s->cur.col = (unsigned)c;
        s->cur.wrap_pending = false;
}

static void reply(screen_t *s, const char *text)
{
        size_t n = strlen(text);
        if (n > sizeof(s->reply) - s->reply_len)
                return;
        memcpy(s->reply + s->reply_len, text, n);
        s->reply_len += n;
}

static void switch_alt(screen_t *s, bool on, bool save_cursor, bool clear)
{
        if (on == s->alt_active)
                return;
        if (on) {
                if (save_cursor)
                        s->saved_main = s->cur;
                s->grid = s->alt;
                s->alt_active = true;
                if (clear)
                        clear_rows(s, 0, s->rows);
        } else {
                if (clear)
                        clear_rows(s, 0, s->rows);
                s->grid = s->main;
                s->alt_active = false;
                if (save_cursor)
                        s->cur = s->saved_main;
        }
        if (s->cur.row >= s->rows)
                s->cur.row = s->rows - 1;
        if (s->cur.col >= s->cols)
                s->cur.col = s->cols - 1;
}

static void full_reset(screen_t *s)
{
        switch_alt(s, false, false, false);
        clear_rows(s, 0, s->rows);
        s->grid = s->main;
        for (size_t i = 0; i < (size_t)s->rows * s->cols; i++)
                s->alt[i] = BLANK;
        s->cur = s->saved_main = s->saved_alt = (screen_cursor_t){0};
        s->top = 0;
        s->bottom = s->rows - 1;
        s->autowrap = true;
        s->app_cursor = false;
}

bool screen_app_cursor(const screen_t *s)
{
        return s->app_cursor;
}

static void save_cursor(screen_t *s)
{
        if (s->alt_active)
                s->saved_alt = s->cur;
        else
                s->saved_main = s->cur;
}

static void restore_cursor(screen_t *s)
{
        s->cur = s->alt_active ? s->saved_alt : s->saved_main;
        if (s->cur.row >= s->rows)
                s->cur.row = s->rows - 1;
        if (s->cur.col >= s->cols)
                s->cur.col = s->cols - 1;
}

/* ---- CSI ---- */

static unsigned param(const screen_t *s, unsigned i, unsigned dflt)
{
        if (i >= s->nparams || s->params[i] == 0)
                return dflt;
        return s->params[i];
}

static void csi_mode(screen_t *s, bool set)
{
        for (unsigned i = 0; i < s->nparams || i == 0; i++) {
                unsigned m = i < s->nparams ? s->params[i] : 0;
                if (s->private_marker != '?')
                        continue; /* ANSI modes (insert, ...): not modelled */
                switch (m) {
                case 1:
                        s->app_cursor = set;
                        break;
                case 6:
                        s->cur.origin = set;
                        move_to(s, 0, 0);
                        break;
                case 7:
                        s->autowrap = set;
                        if (!set)
                                s->cur.wrap_pending = false;
                        break;
                case 47:
                case 1047:
                        switch_alt(s, set, false, !set && m == 1047);
                        break;
                case 1048:
                        if (set)
                                save_cursor(s);
                        else
                                restore_cursor(s);
                        break;
                case 1049:
                        switch_alt(s, set, true, true);
                        break;
                default:
                        break; /* cursor visibility, mouse, bracketed paste: display only */
                }
                if (i + 1 >= s->nparams)
                        break;
        }
}

static void csi_dispatch(screen_t *s, uint8_t final)
{
        unsigned n1 = param(s, 0, 1);
        if (s->intermediate) {
                /* DECSCUSR (CSI q with space) and the like: display only. */
                return;
        }
        if (s->private_marker && s->private_marker != '?') {
                /* CSI > c (secondary DA), CSI > m (modifyOtherKeys): answered only
                 * for DA, ignored otherwise. */
                if (final == 'c' && s->private_marker == '>')
                        reply(s, "\x1b[>0;0;0c");
                return;
        }
        if (s->private_marker == '?' && final != 'h' && final != 'l')
                return; /* DECSED, DECRQM, ...: not modelled */
        switch (final) {
        case 'A':
                set_row_rel(s, -(int)n1);
                break;
        case 'B':
        case 'e':
                set_row_rel(s, (int)n1);
                break;
        case 'C':
        case 'a':
                set_col_rel(s, (int)n1);
                break;
        case 'D':
                set_col_rel(s, -(int)n1);
                break;
        case 'E':
                set_row_rel(s, (int)n1);
                s->cur.col = 0;
                break;
        case 'F':
                set_row_rel(s, -(int)n1);
                s->cur.col = 0;
                break;
        case 'G':
        case '`':
                s->cur.col = n1 - 1 >= s->cols ? s->cols - 1 : n1 - 1;
                s->cur.wrap_pending = false;
                break;
        case 'd': {
                unsigned col = s->cur.col;
                move_to(s, n1 - 1, col);
                break;
        }
        case 'H':
        case 'f':
                move_to(s, param(s, 0, 1) - 1, param(s, 1, 1) - 1);
                break;
        case 'J': {
                unsigned m = s->nparams ? s->params[0] : 0;
                if (m == 0) {
                        clear_cells(s, s->cur.row, s->cur.col, s->cols);
                        clear_rows(s, s->cur.row + 1, s->rows);
                } else if (m == 1) {
                        clear_rows(s, 0, s->cur.row);
                        clear_cells(s, s->cur.row, 0, s->cur.col + 1);
                } else if (m == 2 || m == 3) {
                        clear_rows(s, 0, s->rows);
                }
                break;
        }
        case 'K': {
                unsigned m = s->nparams ? s->params[0] : 0;
                if (m == 0)
                        clear_cells(s, s->cur.row, s->cur.col, s->cols);
                else if (m == 1)
                        clear_cells(s, s->cur.row, 0, s->cur.col + 1);
                else if (m == 2)
                        clear_cells(s, s->cur.row, 0, s->cols);
                break;
        }
        case 'L':
                if (s->cur.row >= s->top && s->cur.row <= s->bottom) {
                        scroll_down(s, s->cur.row, s->bottom, n1);
                        s->cur.col = 0;
                        s->cur.wrap_pending = false;
                }
                break;
        case 'M':
                if (s->cur.row >= s->top && s->cur.row <= s->bottom) {
                        scroll_up(s, s->cur.row, s->bottom, n1);
                        s->cur.col = 0;
                        s->cur.wrap_pending = false;
                }
                break;
        case 'P': {
                uint32_t *r = row_ptr(s, s->cur.row);
                unsigned left = s->cols - s->cur.col;
                unsigned k = n1 > left ? left : n1;
                memmove(r + s->cur.col, r + s->cur.col + k, (size_t)(left - k) * sizeof(*r));
                clear_cells(s, s->cur.row, s->cols - k, s->cols);
                s->cur.wrap_pending = false;
                break;
        }
        case '@': {
                uint32_t *r = row_ptr(s, s->cur.row);
                unsigned left = s->cols - s->cur.col;
                unsigned k = n1 > left ? left : n1;
                memmove(r + s->cur.col + k, r + s->cur.col, (size_t)(left - k) * sizeof(*r));
                clear_cells(s, s->cur.row, s->cur.col, s->cur.col + k);
                s->cur.wrap_pending = false;
                break;
        }
        case 'X': {
                unsigned to = s->cur.col + (n1 > s->cols ? s->cols : n1);
                clear_cells(s, s->cur.row, s->cur.col, to);
                break;
        }
        case 'S':
                scroll_up(s, s->top, s->bottom, n1);
                break;
        case 'T':
                if (s->nparams <= 1) /* with more, it is mouse tracking's */
                        scroll_down(s, s->top, s->bottom, n1);
                break;
        case 'b': {
                unsigned k = n1 > s->cols * s->rows ? s->cols * s->rows : n1;
                for (unsigned i = 0; i < k && s->last_char; i++)
                        put_char(s, s->last_char);
                break;
        }
        case 'r': {
                unsigned top = param(s, 0, 1), bottom = param(s, 1, s->rows);
                if (bottom > s->rows)
                        bottom = s->rows;
                if (top < bottom) {
                        s->top = top - 1;
                        s->bottom = bottom - 1;
                        move_to(s, 0, 0);
                }
                break;
        }
        case 's':
                save_cursor(s);
                break;
        case 'u':
                restore_cursor(s);
                break;
        case 'h':
                csi_mode(s, true);
                break;
        case 'l':
                csi_mode(s, false);
                break;
        case 'n':
                if (s->nparams && s->params[0] == 6) {
                        char buf[32];
                        unsigned row = s->cur.row + 1 - (s->cur.origin ? s->top : 0);
                        (void)snprintf(buf, sizeof(buf), "\x1b[%u;%uR", row, s->cur.col + 1);
                        reply(s, buf);
                } else if (s->nparams && s->params[0] == 5) {
                        reply(s, "\x1b[0n");
                }
                break;
        case 'c':
                if (!s->nparams || s->params[0] == 0)
                        reply(s, "\x1b[?62;22c");
                break;
        default:
                break; /* SGR (m), window ops (t), tab clears (g), ...: display only */
        }
}

/* ---- the byte-level parser ---- */

static void csi_begin(screen_t *s)
{
        s->ps = SCREEN_CSI;
        s->nparams = 0;
        s->param_started = false;
        s->private_marker = 0;
        s->intermediate = 0;
        memset(s->params, 0, sizeof(s->params));
}

static void esc_dispatch(screen_t *s, uint8_t b)
{
        s->ps = SCREEN_GROUND;
        switch (b) {
        case '[':
                csi_begin(s);
                break;
        case ']':
        case 'P':
        case 'X':
        case '^':
        case '_':
                s->ps = SCREEN_STRING;
                break;
        case '(':
        case ')':
        case '*':
        case '+':
        case '-':
        case '.':
        case '/':
        case '#':
        case '%':
        case ' ':
                s->ps = SCREEN_ESC_SKIP;
                s->intermediate = b;
                break;
        case '7':
                save_cursor(s);
                break;
        case '8':
                restore_cursor(s);
                break;
        case 'D':
                linefeed(s);
                break;
        case 'E':
                s->cur.col = 0;
                linefeed(s);
                break;
        case 'M':
                reverse_index(s);
                break;
        case 'c':
                full_reset(s);
                break;
        case '\x1b':
                s->ps = SCREEN_ESC;
                break;
        default:
                break; /* keypad modes (= >), HTS (H), ...: nothing to model */
        }
}

static void control(screen_t *s, uint8_t b)
{
        switch (b) {
        case '\b':
                if (s->cur.col > 0)
                        s->cur.col--;
                s->cur.wrap_pending = false;
                break;
        case '\t': {
                unsigned next = (s->cur.col / TAB_WIDTH + 1) * TAB_WIDTH;
                s->cur.col = next >= s->cols ? s->cols - 1 : next;
                s->cur.wrap_pending = false;
                break;
        }
        case '\n':
        case '\v':
        case '\f':
                linefeed(s);
                break;
        case '\r':
                s->cur.col = 0;
                s->cur.wrap_pending = false;
                break;
        case 0x1b:
                s->ps = SCREEN_ESC;
                break;
        case 0x18: /* CAN */
        case 0x1a: /* SUB */
                s->ps = SCREEN_GROUND;
                break;
        default:
                break; /* NUL, BEL, SO, SI, ...: nothing on the grid */
        }
}

static void csi_byte(screen_t *s, uint8_t b)
{
        if (b >= '0' && b <= '9') {
                if (s->nparams == 0)
                        s->nparams = 1;
                if (s->nparams <= SCREEN_PARAMS_MAX) {
                        uint32_t *p = &s->params[s->nparams - 1];
                        *p = *p * 10 + (b - '0');
                        if (*p > PARAM_MAX)
                                *p = PARAM_MAX;
                }
                s->param_started = true;
        } else if (b == ';' || b == ':') {
                if (s->nparams == 0)
                        s->nparams = 1;
                if (s->nparams < SCREEN_PARAMS_MAX + 1)
                        s->nparams++;
        } else if (b >= '<' && b <= '?') {
                if (s->nparams == 0 && !s->param_started)
                        s->private_marker = b;
        } else if (b >= 0x20 && b <= 0x2f) {
                s->intermediate = b;
        } else if (b >= 0x40 && b <= 0x7e) {
                if (s->nparams > SCREEN_PARAMS_MAX)
                        s->nparams = SCREEN_PARAMS_MAX;
                s->ps = SCREEN_GROUND;
                csi_dispatch(s, b);
        } else if (b == 0x1b) {
                s->ps = SCREEN_ESC;
        } else if (b == 0x18 || b == 0x1a) {
                s->ps = SCREEN_GROUND;
        } else if (b < 0x20) {
                control(s, b); /* C0 inside CSI acts and the sequence goes on */
                if (s->ps != SCREEN_GROUND)
                        s->ps = SCREEN_CSI;
        }
        /* 0x7f and bytes >= 0x80 inside CSI: ignored */
}

/* One codepoint of text (after UTF-8 decoding). */
static void text(screen_t *s, uint32_t cp)
{
        if (cp < 0x20) {
                control(s, (uint8_t)cp);
                return;
        }
        if (cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
                return; /* DEL, C1 codepoints: nothing shown */
        if ((cp >= 0x300 && cp <= 0x36f) || cp == 0x200b || cp == 0x200d || cp == 0xfe0f)
                return; /* combining and zero-width: not modelled */
        put_char(s, cp);
}

static void utf8_byte(screen_t *s, uint8_t b)
{
        if (s->utf8_need) {
                if ((b & 0xc0) == 0x80) {
                        s->utf8_cp = (s->utf8_cp << 6) | (b & 0x3f);
                        if (--s->utf8_need == 0) {
                                uint32_t cp = s->utf8_cp;
                                if (cp < s->utf8_min || cp > 0x10ffff ||
                                    (cp >= 0xd800 && cp <= 0xdfff))
                                        cp = REPLACEMENT;
                                text(s, cp);
                        }
                        return;
                }
                /* A sequence cut short: show that, then take b afresh. */
                s->utf8_need = 0;
                text(s, REPLACEMENT);
        }
        if (b < 0x80)
                text(s, b);
        else if ((b & 0xe0) == 0xc0)
                s->utf8_cp = b & 0x1f, s->utf8_need = 1, s->utf8_min = 0x80;
        else if ((b & 0xf0) == 0xe0)
                s->utf8_cp = b & 0x0f, s->utf8_need = 2, s->utf8_min = 0x800;
        else if ((b & 0xf8) == 0xf0)
                s->utf8_cp = b & 0x07, s->utf8_need = 3, s->utf8_min = 0x10000;
        else
                text(s, REPLACEMENT);
}

void screen_feed(screen_t *s, const uint8_t *p, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                uint8_t b = p[i];
                switch (s->ps) {
                case SCREEN_GROUND:
                        if (b == 0x1b && s->utf8_need) {
                                s->utf8_need = 0;
                                text(s, REPLACEMENT);
                        }
                        utf8_byte(s, b);
                        break;
                case SCREEN_ESC:
                        if (b < 0x20 && b != 0x1b)
                                control(s, b);
                        else
                                esc_dispatch(s, b);
                        break;
                case SCREEN_ESC_SKIP:
                        s->ps = SCREEN_GROUND;
                        if (b == '8' && s->intermediate == '#') {
                                /* DECALN: the screen filled with E */
                                for (unsigned r = 0; r < s->rows; r++)
                                        for (unsigned c = 0; c < s->cols; c++)
                                                row_ptr(s, r)[c] = 'E';
                        }
                        break;
                case SCREEN_CSI:
                        csi_byte(s, b);
                        break;
                case SCREEN_STRING:
                        if (b == 0x07 || b == 0x18 || b == 0x1a)
                                s->ps = SCREEN_GROUND;
                        else if (b == 0x1b)
                                s->ps = SCREEN_STRING_ESC;
                        break;
                case SCREEN_STRING_ESC:
                        if (b == '\\')
                                s->ps = SCREEN_GROUND;
                        else if (b != 0x1b)
                                s->ps = SCREEN_STRING;
                        break;
                default:
                        s->ps = SCREEN_GROUND;
                        break;
                }
        }
}

static void grid_copy(uint32_t *to, unsigned rows, unsigned cols, const uint32_t *from,
                      unsigned orows, unsigned ocols)
{
        unsigned r_n = rows < orows ? rows : orows, c_n = cols < ocols ? cols : ocols;
        for (unsigned r = 0; r < r_n; r++)
                memcpy(to + (size_t)r * cols, from + (size_t)r * ocols, c_n * sizeof(*to));
}

static void clamp_cursor(screen_cursor_t *c, unsigned rows, unsigned cols)
{
        if (c->row >= rows)
                c->row = rows - 1;
        if (c->col >= cols)
                c->col = cols - 1;
        c->wrap_pending = false;
}

int screen_resize(screen_t *s, unsigned rows, unsigned cols)
{
        if (!size_ok(rows, cols))
                return -EINVAL;
        uint32_t *m = grid_new(rows, cols), *a = grid_new(rows, cols);
        if (!m || !a) {
                free(m);
                free(a);
                return -ENOMEM;
        }
        /* A shrink keeps the rows around the cursor on the visible grid, as
         * terminals do: the top rows scroll away first. */
        unsigned shift = 0;
        if (rows < s->rows && s->cur.row >= rows)
                shift = s->cur.row - rows + 1;
        const uint32_t *vis = s->grid + (size_t)shift * s->cols;
        uint32_t *new_vis = s->alt_active ? a : m;
        const uint32_t *other = s->alt_active ? s->main : s->alt;
        uint32_t *new_other = s->alt_active ? m : a;
        grid_copy(new_vis, rows, cols, vis, s->rows - shift, s->cols);
        grid_copy(new_other, rows, cols, other, s->rows, s->cols);
        free(s->main);
        free(s->alt);
        s->main = m;
        s->alt = a;
        s->grid = s->alt_active ? a : m;
        s->cur.row -= shift;
        s->rows = rows;
        s->cols = cols;
        clamp_cursor(&s->cur, rows, cols);
        clamp_cursor(&s->saved_main, rows, cols);
        clamp_cursor(&s->saved_alt, rows, cols);
        s->top = 0;
        s->bottom = rows - 1;
        return 0;
}

static size_t utf8_put(uint32_t cp, char *out)
{
        if (cp < 0x80) {
                out[0] = (char)cp;
                return 1;
        }
        if (cp < 0x800) {
                out[0] = (char)(0xc0 | (cp >> 6));
                out[1] = (char)(0x80 | (cp & 0x3f));
                return 2;
        }
        if (cp < 0x10000) {
                out[0] = (char)(0xe0 | (cp >> 12));
                out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
                out[2] = (char)(0x80 | (cp & 0x3f));
                return 3;
        }
        out[0] = (char)(0xf0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[3] = (char)(0x80 | (cp & 0x3f));
        return 4;
}

char *screen_text(const screen_t *s, size_t *ret_len)
{
        size_t cap = (size_t)s->rows * ((size_t)s->cols * 4 + 1) + 1;
        char *out = malloc(cap);
        if (!out)
                return NULL;
        size_t len = 0;
        for (unsigned r = 0; r < s->rows; r++) {
                const uint32_t *row = s->grid + (size_t)r * s->cols;
                unsigned end = s->cols;
                while (end > 0 && row[end - 1] == BLANK)
                        end--;
                for (unsigned c = 0; c < end; c++)
                        len += utf8_put(row[c], out + len);
                out[len++] = '\n';
        }
        out[len] = '\0';
        if (ret_len)
                *ret_len = len;
        return out;
}
