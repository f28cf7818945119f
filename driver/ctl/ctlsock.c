#include "ctlsock.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"

static int make_addr(const char *path, struct sockaddr_un *sa, hg_error_t *err)
{
        *sa = (struct sockaddr_un){.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof(sa->sun_path))
                return error_set(err, -ENAMETOOLONG, "%s: path too long for a socket", path);
        memcpy(sa->sun_path, path, strlen(path) + 1);
        return 0;
}

int ctlsock_connect(const char *path, int *ret_fd, hg_error_t *err)
{
        struct sockaddr_un sa;
        int r = make_addr(path, &sa, err);
        if (r < 0)
                return r;
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return error_set(err, -errno, "socket: %s", strerror(errno));
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return error_set(err, -errno, "%s: %s (is a turn running?)", path, strerror(errno));
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int ctlsock_listen(const char *path, int *ret_fd, hg_error_t *err)
{
        struct sockaddr_un sa;
        int r = make_addr(path, &sa, err);
        if (r < 0)
                return r;
        int probe = -1;
        if (ctlsock_connect(path, &probe, NULL) == 0) {
                (void)close(probe);
                return error_set(err, -EBUSY, "%s: another driver is running a turn", path);
        }
        (void)unlink(path); /* a stale socket from a driver that is gone */
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return error_set(err, -errno, "socket: %s", strerror(errno));
        mode_t old = umask(0177); /* the socket is born 0600 */
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
        int e = errno;
        umask(old);
        if (r < 0 || listen(fd, 16) < 0)
                return error_set(err, -(r < 0 ? e : errno), "%s: %s", path,
                                 strerror(r < 0 ? e : errno));
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int ctlsock_accept(int lfd, uid_t uid, int *ret_fd, uid_t *ret_peer_uid)
{
        _cleanup_close_ int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
                return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
                return -EPERM;
        *ret_peer_uid = cred.uid;
        if (cred.uid != uid)
                return -EPERM;
        *ret_fd = TAKE_FD(fd);
        return 0;
}
