#include "record.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "jsonx.h"
#include "layout.h"

char *record_path(const char *dir, const char *name)
{
        char *p = NULL;
        return asprintf(&p, "%s/%s", dir, name) < 0 ? NULL : p;
}

int record_open(record_t *r, const char *home, const char *ctl)
{
        record_t n = {.events_fd = -1, .log_fd = -1};
        _cleanup_free_ char *events = record_path(ctl, LAYOUT_CTL_EVENTS);
        _cleanup_free_ char *log = record_path(home, LAYOUT_HOME_LOG);
        n.home = strdup(home);
        n.ctl = strdup(ctl);
        if (!events || !log || !n.home || !n.ctl) {
                record_close(&n);
                return -ENOMEM;
        }
        n.events_fd =
            open(events, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        /* A new file, not the old one truncated: truncating a large log
         * makes the file system write it all out first. */
        (void)unlink(log);
        n.log_fd =
            open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (n.events_fd < 0 || n.log_fd < 0) {
                int e = -errno;
                record_close(&n);
                return e;
        }
        *r = n;
        return 0;
}

void record_close(record_t *r)
{
        if (r->events_fd >= 0)
                (void)close(r->events_fd);
        if (r->log_fd >= 0)
                (void)close(r->log_fd);
        free(r->home);
        free(r->ctl);
        *r = (record_t){.events_fd = -1, .log_fd = -1};
}

/* One whole line or nothing: a write that fails part-way (hangar-ctl full)
 * is cut back, so a reader never sees a torn line. */
static int append_line(int fd, char *text)
{
        struct stat st;
        if (fd < 0)
                return -EBADF;
        if (fstat(fd, &st) < 0)
                return -errno;
        size_t len = strlen(text);
        text[len] = '\n'; /* replaces the NUL: one write per line */
        int r = fd_write_all(fd, text, len + 1);
        text[len] = '\0';
        if (r < 0)
                (void)!ftruncate(fd, st.st_size);
        return r;
}

int record_event(record_t *r, const char *event, json_t *fields)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        _cleanup_json_ json_t *j =
            json_pack("{s:I, s:f, s:s}", "seq", (json_int_t)(r->seq + 1), "ts",
                      (double)ts.tv_sec + ts.tv_nsec / 1e9, "event", event);
        if (j && fields && json_object_update(j, fields) < 0)
                json_decref(TAKE_PTR(j));
        json_decref(fields);
        _cleanup_free_ char *text = j ? jsonx_dumps(j, JSON_COMPACT) : NULL;
        if (!text)
                return -ENOMEM;
        int e = append_line(r->events_fd, text);
        if (e < 0)
                return e;
        r->seq++;
        r->appends++;
        return 0;
}

int record_log(record_t *r, const void *data, size_t n)
{
        if (r->log_fd < 0)
                return -EBADF;
        int e = n ? fd_write_all(r->log_fd, data, n) : 0;
        if (e == 0 && n)
                r->appends++;
        return e;
}

int record_logv(record_t *r, const struct iovec *iov, int n)
{
        if (r->log_fd < 0)
                return -EBADF;
        /* Past a short write the rest goes piece by piece (a rare case: a
         * regular file writes it all or fails). */
        size_t done = 0;
        ssize_t w = 0;
        while ((w = writev(r->log_fd, iov, n)) < 0 && errno == EINTR)
                ;
        if (w < 0)
                return -errno;
        done = (size_t)w;
        for (int i = 0; i < n; i++) {
                if (done >= iov[i].iov_len) {
                        done -= iov[i].iov_len;
                        continue;
                }
                int e = fd_write_all(r->log_fd, (const char *)iov[i].iov_base + done,
                                     iov[i].iov_len - done);
                if (e < 0)
                        return e;
                done = 0;
        }
        r->appends++;
        return 0;
}

int record_append_json(const char *dir, const char *name, json_t *j)
{
        _cleanup_free_ char *path = record_path(dir, name);
        _cleanup_free_ char *text = j ? jsonx_dumps(j, JSON_COMPACT) : NULL;
        if (!path || !text)
                return -ENOMEM;
        _cleanup_close_ int fd =
            open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        return append_line(fd, text);
}

int record_write_json(const char *dir, const char *name, json_t *j, unsigned mode)
{
        _cleanup_free_ char *path = record_path(dir, name);
        _cleanup_free_ char *text = j ? jsonx_dumps(j, JSON_COMPACT) : NULL;
        if (!path || !text)
                return -ENOMEM;
        return file_replace(path, text, strlen(text), (mode_t)mode);
}
