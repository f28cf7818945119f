/* Unit tests for common/wire/reseed (design C2 in
 * docs/research/guard-safe-by-default.md): clones of one process, made
 * without runsc. The test becomes PID 1 of a new PID namespace, warms
 * OpenSSL's DRBGs, then makes two children, each PID 1 of its own new PID
 * namespace: both see getpid() == 1, the parent's pid, so OpenSSL sees no
 * fork, exactly as in two sandboxes restored from one checkpoint. Each
 * child draws from RAND_bytes before and after hg_rand_reseed, and a token
 * (kernel bytes, kernrand.h). Fails if the clones' draws differ before the
 * reseed (then OpenSSL learnt to see such clones: say so, and this test's
 * premise is gone), are equal after it, or their tokens are equal.
 * Without the right to make a PID namespace the program exits 77
 * (ctest: skipped) with the reason. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "fileio.h"
#include "reseed.h"
#include "token.h"
#include "unit.h"

#define DRAW 32

typedef struct clone_draw {
        int32_t pid;
        int32_t reseed;
        uint8_t before[DRAW];
        uint8_t after[DRAW];
        uint8_t token[FRAME_TOKEN_SIZE];
} clone_draw_t;

/* A new PID namespace for this process's next child: as root plainly, or
 * else inside a new user namespace. */
static int new_pid_namespace(void)
{
        if (unshare(CLONE_NEWPID) == 0)
                return 0;
        return unshare(CLONE_NEWUSER | CLONE_NEWPID) == 0 ? 0 : -errno;
}

/* Waits for pid; its exit status, or -1 if it did not exit normally. */
static int wait_status(pid_t pid)
{
        int st = 0;
        while (waitpid(pid, &st, 0) < 0)
                if (errno != EINTR)
                        return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The clone: PID 1 of its own namespace, with the parent's DRBG state. */
static _Noreturn void clone_main(int out)
{
        clone_draw_t d = {.pid = (int32_t)getpid()};
        token_t t;
        if (RAND_bytes(d.before, DRAW) != 1 || token_generate(&t) < 0)
                _exit(3);
        memcpy(d.token, t.bytes, sizeof(d.token));
        d.reseed = hg_rand_reseed(1);
        if (RAND_bytes(d.after, DRAW) != 1)
                _exit(4);
        _exit(fd_write_all(out, &d, sizeof(d)) == 0 ? 0 : 5);
}

/* Makes one clone: a child that takes a new PID namespace and forks the
 * clone into it (only a child of the unsharer is in the new namespace). */
static int spawn_clone(int out)
{
        pid_t mid = fork();
        if (mid < 0)
                return -errno;
        if (mid == 0) {
                if (new_pid_namespace() < 0)
                        _exit(6);
                pid_t c = fork();
                if (c < 0)
                        _exit(7);
                if (c == 0)
                        clone_main(out);
                _exit(wait_status(c) == 0 ? 0 : 8);
        }
        return wait_status(mid) == 0 ? 0 : -EIO;
}

/* PID 1 of the first namespace: warms the DRBGs (so their state exists to
 * be copied), then makes the two clones. */
static _Noreturn void parent_main(int out)
{
        uint8_t warm[DRAW];
        if (getpid() != 1 || RAND_bytes(warm, DRAW) != 1)
                _exit(9);
        _exit(spawn_clone(out) == 0 && spawn_clone(out) == 0 ? 0 : 10);
}

START_TEST(clones_differ_only_after_reseed)
{
        int p[2];
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid_t top = fork();
        ck_assert_int_ge(top, 0);
        if (top == 0) {
                (void)close(p[0]);
                if (new_pid_namespace() < 0)
                        _exit(11);
                pid_t c = fork();
                if (c < 0)
                        _exit(12);
                if (c == 0)
                        parent_main(p[1]);
                _exit(wait_status(c));
        }
        (void)close(p[1]);
        int st = wait_status(top);
        clone_draw_t d[2];
        char *buf = NULL;
        size_t got = 0;
        ck_assert_int_eq(fd_read_bounded(p[0], sizeof(d), &buf, &got), 0);
        (void)close(p[0]);
        ck_assert_msg(st == 0, "the clones' processes failed (status %d)", st);
        ck_assert_uint_eq(got, sizeof(d));
        memcpy(d, buf, sizeof(d));
        free(buf);
        for (int i = 0; i < 2; i++) {
                ck_assert_msg(d[i].pid == 1, "clone %d is pid %d, not 1", i, (int)d[i].pid);
                ck_assert_msg(d[i].reseed == 0, "hg_rand_reseed failed in clone %d: %d", i,
                              (int)d[i].reseed);
        }
        ck_assert_msg(memcmp(d[0].before, d[1].before, DRAW) == 0,
                      "the clones drew different bytes before any reseed: OpenSSL now tells "
                      "such clones apart by itself; this test's premise (docs/turn.md, "
                      "\"Clones\") no longer holds");
        ck_assert_msg(memcmp(d[0].after, d[1].after, DRAW) != 0,
                      "the clones draw the same bytes after hg_rand_reseed");
        ck_assert_msg(memcmp(d[0].after, d[0].before, DRAW) != 0, "the draws repeat");
        ck_assert_msg(memcmp(d[0].token, d[1].token, FRAME_TOKEN_SIZE) != 0,
                      "the clones made the same token: tokens are not the kernel's");
}
END_TEST

START_TEST(reseed_twice)
{
        uint8_t a[DRAW], b[DRAW];
        ck_assert_int_eq(hg_rand_reseed(1), 0);
        ck_assert_int_eq(RAND_bytes(a, DRAW), 1);
        ck_assert_int_eq(hg_rand_reseed(2), 0);
        ck_assert_int_eq(RAND_bytes(b, DRAW), 1);
        ck_assert(memcmp(a, b, DRAW) != 0);
}
END_TEST

/* Whether this process may make a PID namespace (in a throw-away child). */
static const char *namespaces_refused(void)
{
        pid_t c = fork();
        if (c < 0)
                return "fork failed";
        if (c == 0)
                _exit(new_pid_namespace() == 0 ? 0 : 1);
        return wait_status(c) == 0 ? NULL
                                   : "the kernel refuses new PID namespaces to this process "
                                     "(neither CLONE_NEWPID nor CLONE_NEWUSER|CLONE_NEWPID)";
}

int main(void)
{
        const char *why = namespaces_refused();
        if (why) {
                printf("test_reseed: skipped: %s\n", why);
                return 77;
        }
        Suite *s = suite_create("reseed");
        TCase *tc = tcase_create("reseed");
        tcase_add_test(tc, clones_differ_only_after_reseed);
        tcase_add_test(tc, reseed_twice);
        suite_add_tcase(s, tc);
        return unit_run(s);
}
