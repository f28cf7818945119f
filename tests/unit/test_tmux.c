/* Unit tests for driver/term/tmux: send-keys arguments as a terminal's bytes
 * (named keys, C-/M- prefixes, literal text, the bounds; the cursor keys
 * in application cursor-key mode), and tmux itself
 * when it is installed: a server on a private socket, a pane's screen,
 * keys typed into it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "tmux.h"
#include "unit.h"

static size_t enc(char *const *keys, size_t n, uint8_t *out)
{
        size_t len = 0;
        hg_error_t err = {0};
        ck_assert_msg(tmux_keys_encode(keys, n, out, TMUX_KEYS_MAX, &len, &err) == 0, "%s",
                      err.message);
        return len;
}

START_TEST(named_and_literal)
{
        uint8_t out[TMUX_KEYS_MAX];
        char *k1[] = {"ls -l", "Enter"};
        ck_assert_uint_eq(enc(k1, 2, out), 6);
        ck_assert_mem_eq(out, "ls -l\r", 6);
        char *k2[] = {"C-c", "C-[", "M-x", "C-M-a", "Up", "F5", "BSpace", "Escape", "Space"};
        size_t n = enc(k2, 9, out);
        const char want[] = "\x03\x1b\x1bx\x1b\x01\x1b[A\x1b[15~\x7f\x1b ";
        ck_assert_uint_eq(n, sizeof(want) - 1);
        ck_assert_mem_eq(out, want, n);
        /* Not a key name: typed as it is. */
        char *k3[] = {"C-", "Enterx", "C-ab", "\xc3\xa9"};
        n = enc(k3, 4, out);
        ck_assert_uint_eq(n, strlen("C-EnterxC-ab\xc3\xa9"));
        ck_assert_mem_eq(out, "C-EnterxC-ab\xc3\xa9", n);
}
END_TEST

/* In application cursor-key mode the cursor keys are SS3 (ESC O), the
 * others as ever; normal mode is tmux_keys_encode's. */
START_TEST(application_cursor_mode)
{
        uint8_t out[TMUX_KEYS_MAX];
        char *keys[] = {"Up", "Down", "Right", "Left", "Home", "End", "F5", "Enter", "x"};
        size_t len = 0;
        hg_error_t err = {0};
        ck_assert_int_eq(tmux_keys_encode_mode(keys, 9, true, out, sizeof(out), &len, &err), 0);
        const char app[] = "\x1bOA\x1bOB\x1bOC\x1bOD\x1bOH\x1bOF\x1b[15~\rx";
        ck_assert_uint_eq(len, sizeof(app) - 1);
        ck_assert_mem_eq(out, app, len);
        ck_assert_int_eq(tmux_keys_encode_mode(keys, 9, false, out, sizeof(out), &len, &err), 0);
        const char normal[] = "\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F\x1b[15~\rx";
        ck_assert_uint_eq(len, sizeof(normal) - 1);
        ck_assert_mem_eq(out, normal, len);
}
END_TEST

START_TEST(refused)
{
        uint8_t out[TMUX_KEYS_MAX];
        size_t len = 0;
        hg_error_t err = {0};
        ck_assert_int_eq(tmux_keys_encode(NULL, 0, out, sizeof(out), &len, &err), -EINVAL);
        char *empty[] = {""};
        ck_assert_int_eq(tmux_keys_encode(empty, 1, out, sizeof(out), &len, &err), -EINVAL);
        char *bad[] = {"\xff\xfe"};
        ck_assert_int_eq(tmux_keys_encode(bad, 1, out, sizeof(out), &len, &err), -EINVAL);
        char *cut[] = {"a\xe2\x94"};
        ck_assert_int_eq(tmux_keys_encode(cut, 1, out, sizeof(out), &len, &err), -EINVAL);
        char *many[TMUX_KEY_ARGS_MAX + 1];
        for (size_t i = 0; i <= TMUX_KEY_ARGS_MAX; i++)
                many[i] = "a";
        ck_assert_int_eq(
            tmux_keys_encode(many, TMUX_KEY_ARGS_MAX + 1, out, sizeof(out), &len, &err), -E2BIG);
        _cleanup_free_ char *big = malloc(TMUX_KEYS_MAX + 2);
        ck_assert_ptr_nonnull(big);
        memset(big, 'x', TMUX_KEYS_MAX + 1);
        big[TMUX_KEYS_MAX + 1] = '\0';
        char *k[] = {big};
        ck_assert_int_eq(tmux_keys_encode(k, 1, out, sizeof(out), &len, &err), -E2BIG);
        ck_assert_ptr_nonnull(strstr(err.message, "at most"));
}
END_TEST

/* A real tmux server, when the image has tmux: a pane running cat, keys
 * sent, the screen captured. Skipped (passes) without tmux. */
START_TEST(real_tmux)
{
        const char *tmux = tmux_find();
        if (!tmux)
                return;
        char dir[] = "/tmp/hangar-tmux-XXXXXX";
        ck_assert_ptr_nonnull(mkdtemp(dir));
        char sock[128];
        snprintf(sock, sizeof(sock), "%s/tmux.sock", dir);
        hg_error_t err = {0};
        char *start[] = {"new-session", "-d", "-s", "t", "-x", "40", "-y", "5", "cat", NULL};
        ck_assert_int_eq(tmux_run(tmux, sock, start, NULL, NULL, &err), 0);
        char *keys[] = {"send-keys", "-t", "t", "hello", "Enter", NULL};
        ck_assert_int_eq(tmux_run(tmux, sock, keys, NULL, NULL, &err), 0);
        _cleanup_free_ char *out = NULL;
        size_t len = 0;
        for (int i = 0; i < 50; i++) {
                free(out);
                out = NULL;
                char *cap[] = {"capture-pane", "-p", "-t", "t", NULL};
                ck_assert_int_eq(tmux_run(tmux, sock, cap, &out, &len, &err), 0);
                if (strstr(out, "hello\nhello"))
                        break;
                usleep(50000);
        }
        ck_assert_msg(strstr(out, "hello\nhello") != NULL, "pane: %s", out);
        char *kill[] = {"kill-server", NULL};
        (void)tmux_run(tmux, sock, kill, NULL, NULL, &err);
        (void)unlink(sock);
        (void)rmdir(dir);
}
END_TEST

static Suite *tmux_suite(void)
{
        Suite *s = suite_create("tmux");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, named_and_literal);
        tcase_add_test(tc, refused);
        tcase_add_test(tc, application_cursor_mode);
        tcase_add_test(tc, real_tmux);
        tcase_set_timeout(tc, 30);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(tmux_suite());
}
