/* Unit tests for driver/ctl/ctlsock: the control socket is born 0600, a live
 * driver's socket is never taken over while a stale one is replaced, and
 * accept serves only the expected peer uid (SO_PEERCRED). */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctlsock.h"
#include "unit.h"

static char dir[4096];
static char path[4200];

static void setup(void)
{
        unit_mkdtemp(dir, sizeof(dir));
        (void)snprintf(path, sizeof(path), "%s/ctl.sock", dir);
}

static void teardown(void)
{
        unit_rmtree(dir);
}

static int listen_ok(void)
{
        int fd = -1;
        hg_error_t err = {0};
        ck_assert_msg(ctlsock_listen(path, &fd, &err) == 0, "%s", err.message);
        ck_assert_int_ge(fd, 0);
        return fd;
}

static int connect_ok(void)
{
        int fd = -1;
        hg_error_t err = {0};
        ck_assert_msg(ctlsock_connect(path, &fd, &err) == 0, "%s", err.message);
        ck_assert_int_ge(fd, 0);
        return fd;
}

START_TEST(listen_makes_0600_socket)
{
        /* Whatever the process umask, the socket is owner-only. */
        mode_t old = umask(0);
        _cleanup_close_ int fd = listen_ok();
        ck_assert_int_eq(umask(old), 0); /* and the umask is put back */
        struct stat st;
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 07777, 0600);
        ck_assert_uint_eq(st.st_uid, geteuid());
        ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
        ck_assert(fcntl(fd, F_GETFL) & O_NONBLOCK);
        int type = 0;
        socklen_t len = sizeof(type);
        ck_assert_int_eq(getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len), 0);
        ck_assert_int_eq(type, SOCK_STREAM);
}
END_TEST

START_TEST(second_listen_while_live_is_busy)
{
        _cleanup_close_ int fd = listen_ok();
        struct stat before, after;
        ck_assert_int_eq(lstat(path, &before), 0);
        int fd2 = 12345;
        hg_error_t err = {0};
        ck_assert_int_eq(ctlsock_listen(path, &fd2, &err), -EBUSY);
        ck_assert_int_eq(err.code, -EBUSY);
        ck_assert_msg(strstr(err.message, "another driver"), "message: %s", err.message);
        ck_assert_int_eq(fd2, 12345);
        /* The live socket is the same file, still answering. */
        ck_assert_int_eq(lstat(path, &after), 0);
        ck_assert_uint_eq(after.st_ino, before.st_ino);
        _cleanup_close_ int c = connect_ok();
        int sfd = -1;
        uid_t peer;
        /* The probe's own connection waits first, then this one. */
        ck_assert_int_eq(ctlsock_accept(fd, geteuid(), &sfd, &peer), 0);
        close(sfd);
        ck_assert_int_eq(ctlsock_accept(fd, geteuid(), &sfd, &peer), 0);
        ck_assert_int_eq(write(c, "x", 1), 1);
        char b = 0;
        for (int i = 0; i < 100 && read(sfd, &b, 1) != 1; i++)
                usleep(10000);
        ck_assert_int_eq(b, 'x');
        close(sfd);
}
END_TEST

START_TEST(stale_socket_replaced)
{
        /* A socket file whose listener is gone (a driver that died). */
        int old = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(old, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        memcpy(sa.sun_path, path, strlen(path) + 1);
        ck_assert_int_eq(bind(old, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(old, 1), 0);
        close(old);
        struct stat st;
        ck_assert_int_eq(lstat(path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));

        _cleanup_close_ int fd = listen_ok();
        _cleanup_close_ int c = connect_ok();
        ck_assert_int_ge(c, 0);
        int sfd = -1;
        uid_t peer = (uid_t)-1;
        ck_assert_int_eq(ctlsock_accept(fd, geteuid(), &sfd, &peer), 0);
        close(sfd);
}
END_TEST

START_TEST(accept_same_uid)
{
        _cleanup_close_ int fd = listen_ok();
        _cleanup_close_ int c = connect_ok();
        int sfd = -1;
        uid_t peer = (uid_t)-1;
        ck_assert_int_eq(ctlsock_accept(fd, geteuid(), &sfd, &peer), 0);
        ck_assert_int_ge(sfd, 0);
        ck_assert_uint_eq(peer, geteuid());
        ck_assert(fcntl(sfd, F_GETFD) & FD_CLOEXEC);
        ck_assert(fcntl(sfd, F_GETFL) & O_NONBLOCK);
        /* A working connection: a request one way, an answer the other. */
        ck_assert_int_eq(write(c, "{}", 2), 2);
        ck_assert_int_eq(shutdown(c, SHUT_WR), 0);
        char buf[8];
        for (int i = 0; i < 100; i++) {
                ssize_t n = read(sfd, buf, sizeof(buf));
                if (n == 2)
                        break;
                usleep(10000);
        }
        ck_assert_int_eq(memcmp(buf, "{}", 2), 0);
        ck_assert_int_eq(write(sfd, "ok", 2), 2);
        ck_assert_int_eq(read(c, buf, sizeof(buf)), 2);
        close(sfd);
}
END_TEST

START_TEST(accept_other_uid_refused)
{
        _cleanup_close_ int fd = listen_ok();
        _cleanup_close_ int c = connect_ok();
        int sfd = 12345;
        uid_t peer = (uid_t)-1;
        uid_t other = geteuid() == 4242 ? 4243 : 4242;
        ck_assert_int_eq(ctlsock_accept(fd, other, &sfd, &peer), -EPERM);
        ck_assert_int_eq(sfd, 12345);
        /* The connection is closed: the client reads EOF. */
        char b;
        ck_assert_int_eq(read(c, &b, 1), 0);
        /* The next one, from the right uid, is still served. */
        _cleanup_close_ int c2 = connect_ok();
        ck_assert_int_ge(c2, 0);
        ck_assert_int_eq(ctlsock_accept(fd, geteuid(), &sfd, &peer), 0);
        close(sfd);
}
END_TEST

START_TEST(accept_nothing_waiting)
{
        _cleanup_close_ int fd = listen_ok();
        int sfd = 12345;
        uid_t peer = 777;
        ck_assert_int_eq(ctlsock_accept(fd, geteuid(), &sfd, &peer), -EAGAIN);
        ck_assert_int_eq(sfd, 12345);
        ck_assert_uint_eq(peer, 777);
        /* Not a socket at all: an error, not a hang. */
        ck_assert_int_lt(ctlsock_accept(-1, geteuid(), &sfd, &peer), 0);
}
END_TEST

START_TEST(connect_errors)
{
        int fd = 12345;
        hg_error_t err = {0};
        ck_assert_int_eq(ctlsock_connect(path, &fd, &err), -ENOENT);
        ck_assert_int_eq(fd, 12345);
        ck_assert_msg(strstr(err.message, path), "message: %s", err.message);
        /* A path too long for sun_path, both ways. */
        char long_path[200];
        memset(long_path, 'p', sizeof(long_path) - 1);
        long_path[0] = '/';
        long_path[sizeof(long_path) - 1] = '\0';
        ck_assert_int_eq(ctlsock_connect(long_path, &fd, &err), -ENAMETOOLONG);
        ck_assert_int_eq(ctlsock_listen(long_path, &fd, &err), -ENAMETOOLONG);
        ck_assert_int_eq(err.code, -ENAMETOOLONG);
        ck_assert_int_eq(fd, 12345);
        /* A directory that does not exist. */
        char missing[4300];
        (void)snprintf(missing, sizeof(missing), "%s/no/such/dir/ctl.sock", dir);
        ck_assert_int_eq(ctlsock_listen(missing, &fd, &err), -ENOENT);
        ck_assert_int_eq(fd, 12345);
}
END_TEST

static Suite *ctlsock_suite(void)
{
        Suite *s = suite_create("ctlsock");
        TCase *tc = tcase_create("ctlsock");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, listen_makes_0600_socket);
        tcase_add_test(tc, second_listen_while_live_is_busy);
        tcase_add_test(tc, stale_socket_replaced);
        tcase_add_test(tc, accept_same_uid);
        tcase_add_test(tc, accept_other_uid_refused);
        tcase_add_test(tc, accept_nothing_waiting);
        tcase_add_test(tc, connect_errors);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(ctlsock_suite());
}
