#include "restore.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int restore_watch_open_proc(void *ctx)
{
        (void)ctx;
        int fd = open(RESTORE_WATCH_PATH, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

static void drop_fd(restore_watch_t *w)
{
        if (w->fd >= 0)
                (void)close(w->fd);
        w->fd = -1;
        w->len = 0;
}

/* A fresh descriptor for the next checkpoint. */
static int reopen(restore_watch_t *w)
{
        drop_fd(w);
        int fd = w->opener(w->opener_ctx);
        if (fd < 0) {
                w->open_errno = -fd;
                w->state = (fd == -ENOENT || fd == -ENOTDIR) ? RESTORE_WATCH_UNAVAILABLE
                                                             : RESTORE_WATCH_BROKEN;
                return fd;
        }
        w->fd = fd;
        w->state = RESTORE_WATCH_AVAILABLE;
        w->open_errno = 0;
        return 0;
}

int restore_watch_start(restore_watch_t *w, restore_opener_t opener, void *ctx)
{
        *w = (restore_watch_t){.fd = -1, .opener = opener, .opener_ctx = ctx};
        int r = reopen(w);
        return r < 0 && w->state == RESTORE_WATCH_UNAVAILABLE ? 0 : r;
}

int restore_watch_fd(const restore_watch_t *w)
{
        return w->state == RESTORE_WATCH_AVAILABLE ? w->fd : -1;
}

static restore_event_t classify(const char *line, size_t len)
{
        static const struct {
                const char *text;
                restore_event_t ev;
        } known[] = {
            {"restore\n", RESTORE_EV_RESTORED},
            {"resume\n", RESTORE_EV_RESUMED},
            {"error\n", RESTORE_EV_FAILED},
        };
        for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                if (len == strlen(known[i].text) && memcmp(line, known[i].text, len) == 0)
                        return known[i].ev;
        return RESTORE_EV_UNKNOWN;
}

static restore_event_t broken(restore_watch_t *w, int e)
{
        drop_fd(w);
        w->state = RESTORE_WATCH_BROKEN;
        w->open_errno = e;
        return RESTORE_EV_UNKNOWN;
}

restore_event_t restore_watch_read(restore_watch_t *w)
{
        if (w->state != RESTORE_WATCH_AVAILABLE || w->fd < 0)
                return RESTORE_EV_NONE;
        for (;;) {
                if (w->len == sizeof(w->buf))
                        return broken(w, EPROTO);
                ssize_t n = read(w->fd, w->buf + w->len, sizeof(w->buf) - w->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return RESTORE_EV_NONE;
                if (n < 0)
                        return broken(w, errno);
                if (n == 0)
                        return broken(w, EPROTO); /* EOF before a whole line */
                w->len += (size_t)n;
                char *nl = memchr(w->buf, '\n', w->len);
                if (!nl)
                        continue;
                restore_event_t ev = classify(w->buf, w->len);
                if (ev == RESTORE_EV_UNKNOWN)
                        return broken(w, EPROTO);
                if (ev == RESTORE_EV_RESTORED)
                        w->restores++;
                else
                        w->resumes++;
                /* The answer is read once; the next checkpoint needs a new
                 * descriptor. A failed reopen leaves the state saying why. */
                (void)reopen(w);
                return ev;
        }
}

const char *restore_watch_state_name(restore_watch_state_t s)
{
        switch (s) {
        case RESTORE_WATCH_AVAILABLE:
                return "available";
        case RESTORE_WATCH_UNAVAILABLE:
                return "unavailable";
        case RESTORE_WATCH_BROKEN:
        default:
                return "broken";
        }
}

void restore_watch_close(restore_watch_t *w)
{
        drop_fd(w);
}
