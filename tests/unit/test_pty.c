/* Unit tests for relay/pty: the TERM values allowed, and a real child on a
 * pty: its own session with the pty as its controlling terminal, the size
 * asked, TERM set and LINES/COLUMNS gone, descriptor 3 a socket, a resize
 * seen by the child, the signal characters taken out of the input and sent
 * as signals while ISIG is set. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "pty.h"
#include "unit.h"

START_TEST(term_values)
{
        ck_assert(frame_term_name_ok("xterm-256color"));
        ck_assert(frame_term_name_ok("vt100"));
        ck_assert(frame_term_name_ok("screen.xterm+new_1"));
        ck_assert(!frame_term_name_ok(NULL));
        ck_assert(!frame_term_name_ok(""));
        ck_assert(!frame_term_name_ok("-xterm"));
        ck_assert(!frame_term_name_ok(".xterm"));
        ck_assert(!frame_term_name_ok("xterm;id"));
        ck_assert(!frame_term_name_ok("x term"));
        ck_assert(!frame_term_name_ok("xterm\n"));
        char big[PTY_TERM_MAX + 2];
        memset(big, 'a', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        ck_assert(!frame_term_name_ok(big));
        big[PTY_TERM_MAX] = '\0';
        ck_assert(frame_term_name_ok(big));
}
END_TEST

/* Everything the child writes on its terminal until it exits (bounded). */
static char *read_all(int master, pid_t pid, int *ret_status)
{
        static char buf[16384];
        size_t len = 0;
        for (int i = 0; i < 500 && len + 1 < sizeof(buf); i++) {
                struct pollfd p = {.fd = master, .events = POLLIN};
                if (poll(&p, 1, 20) == 1) {
                        ssize_t n = read(master, buf + len, sizeof(buf) - 1 - len);
                        if (n > 0) {
                                len += (size_t)n;
                                continue;
                        }
                        if (n < 0 && errno == EAGAIN)
                                continue;
                        break; /* EIO: every slave descriptor closed */
                }
        }
        buf[len] = '\0';
        ck_assert_int_eq(waitpid(pid, ret_status, 0), pid);
        return buf;
}

START_TEST(child_on_a_pty)
{
        setenv("LINES", "5", 1);
        setenv("COLUMNS", "7", 1);
        char *argv[] = {"/bin/sh", "-c",
                        "tty; stty size; echo \"TERM=$TERM L=${LINES-unset} C=${COLUMNS-unset} "
                        "fd=$HANGAR_APPROVAL_FD\"; test -S /dev/fd/3 && echo sock",
                        NULL};
        pty_opts_t o = {.argv = argv, .cwd = "/", .rows = 33, .cols = 101, .term = "vt220"};
        pty_child_t c;
        hg_error_t err = {0};
        ck_assert_msg(pty_start(&o, &c, &err) == 0, "%s", err.message);
        int status = 0;
        char *out = read_all(c.master, c.pid, &status);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, out);
        ck_assert_msg(strstr(out, "/dev/pts/"), "%s", out);
        ck_assert_msg(strstr(out, "33 101"), "%s", out);
        ck_assert_msg(strstr(out, "TERM=vt220 L=unset C=unset fd=3"), "%s", out);
        ck_assert_msg(strstr(out, "sock"), "%s", out);
        (void)close(c.master);
        (void)close(c.side);
        o.term = "bad term";
        ck_assert_int_eq(pty_start(&o, &c, &err), -EINVAL);
}
END_TEST

START_TEST(resize_reaches_the_child)
{
        char *argv[] = {"/bin/sh", "-c",
                        "trap 'stty size; exit 0' WINCH; echo ready; while :; do sleep 0.05; done",
                        NULL};
        pty_opts_t o = {.argv = argv, .rows = 24, .cols = 80, .term = "xterm"};
        pty_child_t c;
        hg_error_t err = {0};
        ck_assert_msg(pty_start(&o, &c, &err) == 0, "%s", err.message);
        char buf[256];
        size_t len = 0;
        for (int i = 0; i < 200 && !strstr(buf, "ready"); i++) {
                struct pollfd p = {.fd = c.master, .events = POLLIN};
                if (poll(&p, 1, 20) == 1) {
                        ssize_t n = read(c.master, buf + len, sizeof(buf) - 1 - len);
                        if (n > 0)
                                len += (size_t)n;
                }
                buf[len] = '\0';
        }
        ck_assert_ptr_nonnull(strstr(buf, "ready"));
        ck_assert_int_eq(pty_resize(c.master, c.pid, 40, 120), 0);
        int status = 0;
        char *out = read_all(c.master, c.pid, &status);
        ck_assert_msg(strstr(out, "40 120"), "%s", out);
        (void)close(c.master);
        (void)close(c.side);
}
END_TEST

START_TEST(signal_characters)
{
        char *argv[] = {"/bin/sh", "-c",
                        "trap 'echo got-int; exit 5' INT; echo ready; while :; do sleep 0.05; done",
                        NULL};
        pty_opts_t o = {.argv = argv, .rows = 24, .cols = 80, .term = "xterm"};
        pty_child_t c;
        hg_error_t err = {0};
        ck_assert_msg(pty_start(&o, &c, &err) == 0, "%s", err.message);
        usleep(200000);
        /* Canonical mode, ISIG: ^C and ^\ go, the rest stays, in order. */
        unsigned char in[] = {'a', 0x03, 'b', 0x1c, 'c'};
        size_t n = sizeof(in);
        pty_input_signals(c.master, c.pid, in, &n);
        ck_assert_uint_eq(n, 3);
        ck_assert_mem_eq(in, "abc", 3);
        int status = 0;
        char *out = read_all(c.master, c.pid, &status);
        ck_assert_msg(WIFEXITED(status) || WIFSIGNALED(status), "%s", out);
        /* SIGINT first (the trap) or SIGQUIT: either way it was signalled. */
        ck_assert_msg(strstr(out, "got-int") || WIFSIGNALED(status), "%s", out);
        (void)close(c.master);
        (void)close(c.side);
        /* Raw mode: the bytes are keys. */
        int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        ck_assert_int_ge(m, 0);
        struct termios tio;
        ck_assert_int_eq(tcgetattr(m, &tio), 0);
        cfmakeraw(&tio);
        ck_assert_int_eq(tcsetattr(m, TCSANOW, &tio), 0);
        unsigned char raw[] = {0x03, 'x'};
        n = sizeof(raw);
        pty_input_signals(m, 0, raw, &n);
        ck_assert_uint_eq(n, 2);
        (void)close(m);
}
END_TEST

static Suite *pty_suite(void)
{
        Suite *s = suite_create("pty");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, term_values);
        tcase_add_test(tc, child_on_a_pty);
        tcase_add_test(tc, resize_reaches_the_child);
        tcase_add_test(tc, signal_characters);
        tcase_set_timeout(tc, 30);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(pty_suite());
}
