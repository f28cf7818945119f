#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

int fd_read_bounded(int fd, size_t max, char **ret_data, size_t *ret_len)
{
        size_t cap = 4096, len = 0;
        _cleanup_free_ char *buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                if (len + 1 >= cap) {
                        /* len > max below enforces the bound; this only
                         * stops the buffer growing far past it. */
                        if (cap - 1 > max)
                                return -EFBIG;
                        size_t ncap = cap * 2;
                        char *p = realloc(buf, ncap);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        cap = ncap;
                }
                ssize_t n = read(fd, buf + len, cap - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len > max)
                        return -EFBIG;
        }
        buf[len] = '\0';
        *ret_data = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int file_read_bounded(const char *path, size_t max, char **ret_data, size_t *ret_len)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return fd_read_bounded(fd, max, ret_data, ret_len);
}

int fd_write_all(int fd, const void *buf, size_t n)
{
        const char *p = buf;
        while (n > 0) {
                ssize_t w = write(fd, p, n);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                n -= (size_t)w;
        }
        return 0;
}

static int write_atomic(const char *path, const void *data, size_t n, mode_t mode, int exclusive,
                        bool durable)
{
        size_t plen = strlen(path);
        _cleanup_free_ char *tmp = malloc(plen + sizeof(".tmp.XXXXXX"));
        if (!tmp)
                return -ENOMEM;
        memcpy(tmp, path, plen);
        memcpy(tmp + plen, ".tmp.XXXXXX", sizeof(".tmp.XXXXXX"));
        _cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = 0;
        if (fchmod(fd, mode) < 0 || (r = fd_write_all(fd, data, n)) < 0 ||
            (durable && fsync(fd) < 0)) {
                r = r < 0 ? r : -errno;
                (void)unlink(tmp);
                return r;
        }
        if (exclusive) {
                /* link() fails if path exists: no window where another writer's
                 * file could be replaced. */
                if (link(tmp, path) < 0) {
                        r = -errno;
                        (void)unlink(tmp);
                        return r;
                }
                (void)unlink(tmp);
                return 0;
        }
        if (rename(tmp, path) < 0) {
                r = -errno;
                (void)unlink(tmp);
                return r;
        }
        return 0;
}

int file_write_atomic(const char *path, const void *data, size_t n, mode_t mode, int exclusive)
{
        return write_atomic(path, data, n, mode, exclusive, true);
}

int file_replace(const char *path, const void *data, size_t n, mode_t mode)
{
        return write_atomic(path, data, n, mode, 0, false);
}
