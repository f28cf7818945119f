#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pty.h"

static void close_fd(int *fd)
{
        if (*fd >= 0)
                (void)close(*fd);
        *fd = -1;
}

void harness_init(harness_t *h, const harness_term_t *term)
{
        h->child = (spawn_child_t){.in_fd = -1, .out_fd = -1, .err_fd = -1};
        h->term = term;
        h->side_wfd = -1;
        h->isig_emulated = false;
        h->side_len = h->stdin_len = 0;
        h->started = h->out_open = h->err_open = h->exit_sent = h->stdin_eof = false;
        h->end = (reaper_end_t){0};
        h->exit = (frame_exit_t){0};
}

/* The harness on a pty: master for io (read and, through a copy, write),
 * the approval socket for ASK (read) and ANSWER (through a copy, write). */
static int start_on_terminal(harness_t *h, char *const argv[], const char *cwd, hg_error_t *err)
{
        pty_opts_t o = {.argv = argv,
                        .cwd = cwd,
                        .rows = h->term->rows,
                        .cols = h->term->cols,
                        .term = h->term->term};
        pty_child_t pc;
        int r = pty_start(&o, &pc, err);
        if (r < 0)
                return r;
        int in = fcntl(pc.master, F_DUPFD_CLOEXEC, 3);
        int side_w = in < 0 ? -1 : fcntl(pc.side, F_DUPFD_CLOEXEC, 3);
        if (in < 0 || side_w < 0) {
                int e = errno;
                (void)kill(pc.pid, SIGKILL);
                (void)waitpid(pc.pid, NULL, 0);
                close_fd(&in);
                (void)close(pc.master);
                (void)close(pc.side);
                return error_set(err, -e, "fcntl: %s", strerror(e));
        }
        h->child =
            (spawn_child_t){.pid = pc.pid, .in_fd = in, .out_fd = pc.master, .err_fd = pc.side};
        h->side_wfd = side_w;
        h->isig_emulated = pc.isig_emulated;
        return 0;
}

int harness_start(harness_t *h, char *const argv[], const char *cwd, hg_error_t *err)
{
        spawn_opts_t o = {.argv = argv, .cwd = cwd};
        int r = h->term ? start_on_terminal(h, argv, cwd, err) : spawn_start(&o, &h->child, err);
        if (r < 0)
                return r;
        h->started = true;
        h->out_open = h->err_open = true;
        return 0;
}

bool harness_running(const harness_t *h)
{
        return h->started && !h->end.reaped;
}

void harness_write_stdin(harness_t *h)
{
        while (h->stdin_len > 0 && h->child.in_fd >= 0) {
                ssize_t n = write(h->child.in_fd, h->stdin_buf, h->stdin_len);
                if (n > 0) {
                        memmove(h->stdin_buf, h->stdin_buf + n, h->stdin_len - (size_t)n);
                        h->stdin_len -= (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                /* EPIPE: the harness closed its stdin; what is left has nowhere to go. */
                close_fd(&h->child.in_fd);
        }
        if (h->child.in_fd < 0)
                h->stdin_len = 0;
        else if (h->stdin_len == 0 && h->stdin_eof)
                close_fd(&h->child.in_fd);
}

void harness_stdin(harness_t *h, const uint8_t *data, size_t n)
{
        if (n == 0) {
                h->stdin_eof = true;
                /* A terminal's end of input is its EOF character. */
                if (h->term && h->child.in_fd >= 0) {
                        h->stdin_buf[0] = 0x04;
                        h->stdin_len = 1;
                }
        } else if (h->child.in_fd >= 0 && n <= sizeof(h->stdin_buf)) {
                memcpy(h->stdin_buf, data, n);
                h->stdin_len = n;
                if (h->term && h->isig_emulated && !h->end.reaped)
                        pty_input_signals(h->child.out_fd, h->child.pid, h->stdin_buf,
                                          &h->stdin_len);
        }
        harness_write_stdin(h);
}

void harness_write_side(harness_t *h)
{
        while (h->side_len > 0 && h->side_wfd >= 0) {
                ssize_t n = write(h->side_wfd, h->side_buf, h->side_len);
                if (n > 0) {
                        memmove(h->side_buf, h->side_buf + n, h->side_len - (size_t)n);
                        h->side_len -= (size_t)n;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return;
                close_fd(&h->side_wfd);
        }
        if (h->side_wfd < 0)
                h->side_len = 0;
}

void harness_answer(harness_t *h, const uint8_t *data, size_t n)
{
        if (h->side_wfd < 0)
                return;
        if (n > sizeof(h->side_buf) - h->side_len) {
                close_fd(&h->side_wfd);
                h->side_len = 0;
                return;
        }
        memcpy(h->side_buf + h->side_len, data, n);
        h->side_len += n;
        harness_write_side(h);
}

void harness_signal(harness_t *h, int signo)
{
        if (!harness_running(h))
                return;
        if (h->term)
                (void)pty_signal_foreground(h->child.out_fd, h->child.pid, signo);
        else
                (void)spawn_signal_group(h->child.pid, signo);
}

void harness_resize(harness_t *h, unsigned rows, unsigned cols)
{
        if (h->started && h->child.out_fd >= 0)
                (void)pty_resize(h->child.out_fd, h->end.reaped ? 0 : h->child.pid, rows, cols);
}

void harness_end_if_done(harness_t *h, conn_t *io, conn_t *ctl, int64_t now)
{
        if (!h->end.reaped || h->exit_sent)
                return;
        if ((h->out_open || h->err_open) && now < h->end.drain_ms)
                return;
        /* Past the grace a background process still holds the pipes: it goes. */
        (void)spawn_signal_group(h->child.pid, SIGKILL);
        close_fd(&h->child.out_fd);
        close_fd(&h->child.err_fd);
        close_fd(&h->child.in_fd);
        close_fd(&h->side_wfd);
        h->out_open = h->err_open = false;
        if (!conn_can_queue(io, 0) || !conn_can_queue(ctl, FRAME_EXIT_SIZE + FRAME_HEADER_SIZE))
                return;
        h->exit = reaper_exit(h->end.status, false);
        uint8_t e[FRAME_EXIT_SIZE];
        frame_exit_encode(&h->exit, e);
        (void)conn_queue(io, FRAME_STDOUT, NULL, 0, NULL, 0);
        (void)conn_queue(ctl, FRAME_STDERR, NULL, 0, NULL, 0);
        (void)conn_queue(ctl, FRAME_EXIT, e, sizeof(e), NULL, 0);
        h->exit_sent = true;
}

void harness_close(harness_t *h)
{
        close_fd(&h->child.in_fd);
        close_fd(&h->child.out_fd);
        close_fd(&h->child.err_fd);
        close_fd(&h->side_wfd);
}
