/* Unit tests for driver/ctl/ctlclient: one client of the control socket, over a
 * real socket pair. A request is read to the peer's EOF across many reads,
 * up to CTLSOCK_REQUEST_MAX and refused past it; a reply is one JSON line,
 * an out-of-memory line when there is no reply; a stream sends a file up to
 * its size at the request and then closes; a watcher follows a growing log
 * and closes only once the log is done; a peer gone closes the client; the
 * slots, poll events and the error reply. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cleanup.h"
#include "ctlclient.h"
#include "ctlsock.h"
#include "unit.h"

/* c on one end of a socket pair; returns the other (hangar's side). */
static int open_client(ctlclient_t *c)
{
        int fds[2];
        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds),
                         0);
        ctlclient_init(c);
        c->used = true;
        c->fd = fds[0];
        c->state = CTLCLIENT_READING;
        return fds[1];
}

/* Everything the peer can read now, until EOF if the client closed. */
static size_t drain(int peer, char *buf, size_t cap, bool *ret_eof)
{
        size_t len = 0;
        *ret_eof = false;
        for (;;) {
                ssize_t n = read(peer, buf + len, cap - len);
                if (n > 0) {
                        len += (size_t)n;
                        ck_assert_uint_lt(len, cap);
                        continue;
                }
                if (n == 0)
                        *ret_eof = true;
                break;
        }
        buf[len] = '\0';
        return len;
}

/* The peer reads want, then (check_eof) end of file: the client closed.
 * The peer is closed after. */
static void assert_peer_got(int peer, const char *want, bool check_eof)
{
        char buf[256];
        bool eof;
        drain(peer, buf, sizeof(buf), &eof);
        if (check_eof)
                ck_assert(eof);
        ck_assert_str_eq(buf, want);
        close(peer);
}

START_TEST(read_until_eof)
{
        ctlclient_t c;
        int peer = open_client(&c);
        ck_assert_int_eq(ctlclient_read(&c), 0); /* nothing yet */
        ck_assert_int_eq(write(peer, "{\"op\":", 6), 6);
        ck_assert_int_eq(ctlclient_read(&c), 0);
        ck_assert_int_eq(write(peer, "\"ping\"}", 7), 7);
        ck_assert_int_eq(ctlclient_read(&c), 0); /* no EOF: more may come */
        shutdown(peer, SHUT_WR);
        ck_assert_int_eq(ctlclient_read(&c), 1);
        ck_assert_uint_eq(c.in_len, 13);
        ck_assert(memcmp(c.in, "{\"op\":\"ping\"}", 13) == 0);
        ctlclient_close(&c);
        ck_assert(!c.used);
        ck_assert_int_eq(c.fd, -1);
        ck_assert_ptr_null(c.in);
        close(peer);
}
END_TEST

/* A peer that writes without end: the buffer grows to the bound and no
 * further. */
START_TEST(request_bounded)
{
        ctlclient_t c;
        int peer = open_client(&c);
        static char chunk[65536];
        memset(chunk, 'x', sizeof(chunk));
        size_t sent = 0;
        int r = 0;
        while (sent <= CTLSOCK_REQUEST_MAX) {
                ssize_t n = write(peer, chunk, sizeof(chunk));
                if (n > 0)
                        sent += (size_t)n;
                r = ctlclient_read(&c);
                if (r != 0)
                        break;
        }
        ck_assert_int_eq(r, -EFBIG);
        ck_assert_uint_eq(c.in_cap, CTLSOCK_REQUEST_MAX);
        ck_assert_uint_eq(c.in_len, CTLSOCK_REQUEST_MAX);
        ctlclient_close(&c);
        close(peer);
}
END_TEST

/* Just under the bound, then EOF: a whole request. */
START_TEST(request_at_bound)
{
        ctlclient_t c;
        int peer = open_client(&c);
        static char chunk[65536];
        memset(chunk, 'y', sizeof(chunk));
        size_t sent = 0;
        while (sent < CTLSOCK_REQUEST_MAX - 1) {
                size_t want = CTLSOCK_REQUEST_MAX - 1 - sent;
                ssize_t n = write(peer, chunk, want < sizeof(chunk) ? want : sizeof(chunk));
                if (n > 0)
                        sent += (size_t)n;
                ck_assert_int_eq(ctlclient_read(&c), 0);
        }
        shutdown(peer, SHUT_WR);
        ck_assert_int_eq(ctlclient_read(&c), 1);
        ck_assert_uint_eq(c.in_len, CTLSOCK_REQUEST_MAX - 1);
        ctlclient_close(&c);
        close(peer);
}
END_TEST

START_TEST(reply_one_line)
{
        ctlclient_t c;
        int peer = open_client(&c);
        ctlclient_reply(&c, unit_json("{\"ok\":true,\"n\":1}"));
        ck_assert_int_eq(c.state, CTLCLIENT_REPLYING);
        ck_assert_int_eq(ctlclient_poll_events(&c), POLLOUT);
        ctlclient_write(&c, false);
        ck_assert(!c.used); /* all out: closed */
        assert_peer_got(peer, "{\"ok\":true,\"n\":1}\n", true);
}
END_TEST

START_TEST(reply_without_memory)
{
        ctlclient_t c;
        int peer = open_client(&c);
        ctlclient_reply(&c, NULL);
        ctlclient_write(&c, false);
        assert_peer_got(peer, "{\"ok\":false,\"error\":\"out of memory\"}\n", false);
}
END_TEST

START_TEST(reply_replaces)
{
        ctlclient_t c;
        int peer = open_client(&c);
        ctlclient_reply(&c, unit_json("{\"first\":1}"));
        ctlclient_reply(&c, ctlclient_error("no turn \"%s\" here", "t-1"));
        ctlclient_write(&c, false);
        assert_peer_got(peer, "{\"ok\":false,\"error\":\"no turn \\\"t-1\\\" here\"}\n", false);
}
END_TEST

START_TEST(peer_gone)
{
        ctlclient_t c;
        int peer = open_client(&c);
        close(peer);
        ctlclient_reply(&c, unit_json("{\"ok\":true}"));
        ctlclient_write(&c, false);
        ck_assert(!c.used);
}
END_TEST

/* A file with text in it, open for reading. */
static int temp_file(const char *text)
{
        char path[] = "/tmp/hangar-unit-ctlclient.XXXXXX";
        int fd = mkostemp(path, O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        unlink(path);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        return fd;
}

START_TEST(stream_to_size_at_request)
{
        ctlclient_t c;
        int peer = open_client(&c);
        int fd = temp_file("line1\nline2\nline3\n");
        ctlclient_reply(&c, unit_json("{\"ok\":true,\"stream\":\"events\"}"));
        c.stream_fd = fd;
        c.stream_end = 12; /* the size when asked: the third line came later */
        c.watch_off = 6;   /* from byte 6 */
        c.state = CTLCLIENT_STREAMING;
        for (int i = 0; i < 10 && c.used; i++)
                ctlclient_write(&c, false);
        ck_assert(!c.used);
        assert_peer_got(peer, "{\"ok\":true,\"stream\":\"events\"}\nline2\n", true);
}
END_TEST

START_TEST(watch_follows_the_log)
{
        ctlclient_t c;
        int peer = open_client(&c);
        int fd = temp_file("hello ");
        ctlclient_reply(&c, unit_json("{\"ok\":true,\"stream\":\"log\"}"));
        c.stream_fd = fd;
        c.state = CTLCLIENT_WATCHING;
        for (int i = 0; i < 5; i++)
                ctlclient_write(&c, false);
        ck_assert(c.used); /* the log may grow: kept */
        ck_assert_int_eq(write(fd, "world\n", 6), 6);
        for (int i = 0; i < 5; i++)
                ctlclient_write(&c, false);
        ck_assert(c.used);
        /* The turn ended: what is left goes, then the watcher closes. */
        ck_assert_int_eq(write(fd, "bye\n", 4), 4);
        for (int i = 0; i < 5 && c.used; i++)
                ctlclient_write(&c, true);
        ck_assert(!c.used);
        assert_peer_got(peer, "{\"ok\":true,\"stream\":\"log\"}\nhello world\nbye\n", true);
}
END_TEST

START_TEST(slots_and_events)
{
        ctlclient_t cs[3];
        for (size_t i = 0; i < 3; i++)
                ctlclient_init(&cs[i]);
        ck_assert_ptr_eq(ctlclient_free_slot(cs, 3), &cs[0]);
        cs[0].used = cs[1].used = true;
        ck_assert_ptr_eq(ctlclient_free_slot(cs, 3), &cs[2]);
        cs[2].used = true;
        ck_assert_ptr_null(ctlclient_free_slot(cs, 3));
        cs[1].used = false;
        ck_assert_int_eq(ctlclient_poll_events(&cs[1]), 0); /* unused */
        cs[0].state = CTLCLIENT_READING;
        ck_assert_int_eq(ctlclient_poll_events(&cs[0]), POLLIN);
        cs[0].state = CTLCLIENT_WAIT_RUN;
        ck_assert_int_eq(ctlclient_poll_events(&cs[0]), 0);
        cs[0].state = CTLCLIENT_WATCHING; /* nothing to send yet */
        ck_assert_int_eq(ctlclient_poll_events(&cs[0]), 0);
        cs[0].out_len = 3;
        ck_assert_int_eq(ctlclient_poll_events(&cs[0]), POLLOUT);
}
END_TEST

START_TEST(error_reply)
{
        _unit_json_ json_t *e = ctlclient_error("%u run requests are waiting", 64u);
        ck_assert_json_eq_text(e, "{\"ok\":false,\"error\":\"64 run requests are waiting\"}");
        /* Long text is cut, never overrun. */
        char big[2000];
        memset(big, 'z', sizeof(big) - 1);
        big[sizeof(big) - 1] = '\0';
        _unit_json_ json_t *l = ctlclient_error("%s", big);
        ck_assert_uint_eq(strlen(json_string_value(json_object_get(l, "error"))),
                          ERROR_MESSAGE_MAX - 1);
}
END_TEST

static Suite *ctlclient_suite(void)
{
        Suite *s = suite_create("ctlclient");
        TCase *tc = tcase_create("ctlclient");
        tcase_add_test(tc, read_until_eof);
        tcase_add_test(tc, request_bounded);
        tcase_add_test(tc, request_at_bound);
        tcase_add_test(tc, reply_one_line);
        tcase_add_test(tc, reply_without_memory);
        tcase_add_test(tc, reply_replaces);
        tcase_add_test(tc, peer_gone);
        tcase_add_test(tc, stream_to_size_at_request);
        tcase_add_test(tc, watch_follows_the_log);
        tcase_add_test(tc, slots_and_events);
        tcase_add_test(tc, error_reply);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        signal(SIGPIPE, SIG_IGN);
        return unit_run(ctlclient_suite());
}
