/* common/proto/treehash.c: the hash against the format in treehash.h computed here
 * with OpenSSL directly, and what must (and must not) change it: contents,
 * modes, empty directories, symlink targets, ".git"; special files never
 * opened; nothing outside the root read; the depth limit. */
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>

#include <openssl/evp.h>

#include "treehash.h"
#include "unit.h"

static char root[PATH_MAX];

static void setup(void)
{
        unit_mkdtemp(root, sizeof(root));
}

static void teardown(void)
{
        unit_rmtree(root);
}

/* path under root */
static const char *at(const char *rel)
{
        static char buf[2][PATH_MAX];
        static int which;
        which ^= 1;
        (void)snprintf(buf[which], sizeof(buf[which]), "%s/%s", root, rel);
        return buf[which];
}

static void write_file(const char *rel, const char *text, mode_t mode)
{
        int fd = open(at(rel), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        ck_assert_int_eq(chmod(at(rel), mode), 0); /* whatever the umask */
}

static void hash_of(const char *dir, char hex[TREEHASH_HEX_LEN + 1])
{
        hg_error_t err = {0};
        treehash_stats_t st;
        int r = treehash_compute(dir, NULL, hex, &st, &err);
        ck_assert_msg(r == 0, "treehash failed (%d): %s", r, err.message);
}

static void sha256(const void *data, size_t len, unsigned char out[32])
{
        unsigned int n = 0;
        ck_assert_int_eq(EVP_Digest(data, len, out, &n, EVP_sha256(), NULL), 1);
        ck_assert_uint_eq(n, 32);
}

static void to_hex(const unsigned char h[32], char out[65])
{
        for (int i = 0; i < 32; i++)
                (void)snprintf(out + 2 * i, 3, "%02x", h[i]);
}

START_TEST(matches_the_documented_format)
{
        /* root: file "a" ("hi\n", 0644), empty dir "d" (0755), link "l" -> "a" */
        write_file("a", "hi\n", 0644);
        ck_assert_int_eq(mkdir(at("d"), 0755), 0);
        ck_assert_int_eq(chmod(at("d"), 0755), 0);
        ck_assert_int_eq(symlink("a", at("l")), 0);

        unsigned char blob[32], tree_d[32], link[32], top[32];
        sha256("blob 3\0hi\n", 10, blob);
        sha256("tree 0\0", 7, tree_d);
        sha256("link 1\0a", 8, link);
        struct stat lst;
        ck_assert_int_eq(lstat(at("l"), &lst), 0);
        unsigned char buf[512];
        size_t n = 0;
        memcpy(buf + n, "tree 3\0", 7), n += 7;
        memcpy(buf + n, "blob 644 a\0", 11), n += 11;
        memcpy(buf + n, blob, 32), n += 32;
        memcpy(buf + n, "tree 755 d\0", 11), n += 11;
        memcpy(buf + n, tree_d, 32), n += 32;
        char line[32];
        int ln = snprintf(line, sizeof(line), "link %o l", (unsigned)(lst.st_mode & 07777));
        memcpy(buf + n, line, (size_t)ln + 1), n += (size_t)ln + 1;
        memcpy(buf + n, link, 32), n += 32;
        sha256(buf, n, top);
        char want[65], got[TREEHASH_HEX_LEN + 1];
        to_hex(top, want);
        hash_of(root, got);
        ck_assert_str_eq(got, want);
}
END_TEST

START_TEST(what_changes_the_hash)
{
        char base[TREEHASH_HEX_LEN + 1], h[TREEHASH_HEX_LEN + 1];
        ck_assert_int_eq(mkdir(at("src"), 0755), 0);
        write_file("src/main.c", "int main(void) { return 0; }\n", 0644);
        hash_of(root, base);
        hash_of(root, h);
        ck_assert_str_eq(h, base); /* deterministic */

        ck_assert_int_eq(mkdir(at("empty"), 0755), 0);
        hash_of(root, h);
        ck_assert_str_ne(h, base); /* an empty directory counts */
        ck_assert_int_eq(rmdir(at("empty")), 0);
        hash_of(root, h);
        ck_assert_str_eq(h, base);

        ck_assert_int_eq(chmod(at("src/main.c"), 0755), 0);
        hash_of(root, h);
        ck_assert_str_ne(h, base); /* the mode counts */
        ck_assert_int_eq(chmod(at("src/main.c"), 0644), 0);

        write_file("src/main.c", "int main(void) { return 1; }\n", 0644);
        hash_of(root, h);
        ck_assert_str_ne(h, base); /* contents, same size */
        write_file("src/main.c", "int main(void) { return 0; }\n", 0644);

        /* .git is skipped, as git does. */
        ck_assert_int_eq(mkdir(at(".git"), 0755), 0);
        write_file(".git/HEAD", "ref: refs/heads/main\n", 0644);
        hash_of(root, h);
        ck_assert_str_eq(h, base);
}
END_TEST

START_TEST(links_never_followed_nothing_outside_read)
{
        char outside[PATH_MAX], h1[TREEHASH_HEX_LEN + 1], h2[TREEHASH_HEX_LEN + 1];
        unit_mkdtemp(outside, sizeof(outside));
        char secret[PATH_MAX + 16];
        (void)snprintf(secret, sizeof(secret), "%s/secret", outside);
        int fd = open(secret, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "one", 3), 3);
        close(fd);
        ck_assert_int_eq(symlink(secret, at("to-file")), 0);
        ck_assert_int_eq(symlink(outside, at("to-dir")), 0);
        hash_of(root, h1);
        /* What the links point at changes; the tree's hash does not. */
        fd = open(secret, O_WRONLY | O_TRUNC | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "two!", 4), 4);
        close(fd);
        hash_of(root, h2);
        ck_assert_str_eq(h1, h2);
        /* A link's target text does change it. */
        ck_assert_int_eq(unlink(at("to-file")), 0);
        ck_assert_int_eq(symlink("/etc/passwd", at("to-file")), 0);
        hash_of(root, h2);
        ck_assert_str_ne(h1, h2);
        unit_rmtree(outside);
}
END_TEST

START_TEST(fifos_are_special_never_opened)
{
        /* Opening a fifo with no writer would block the walk forever. */
        ck_assert_int_eq(mkfifo(at("pipe"), 0644), 0);
        char h[TREEHASH_HEX_LEN + 1];
        hg_error_t err = {0};
        treehash_stats_t st;
        ck_assert_int_eq(treehash_compute(root, NULL, h, &st, &err), 0);
        ck_assert_uint_eq(st.specials, 1);
        ck_assert_uint_eq(st.files, 0);
}
END_TEST

START_TEST(manifest_lists_every_entry)
{
        ck_assert_int_eq(mkdir(at("d"), 0755), 0);
        write_file("d/f", "x", 0600);
        char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        ck_assert_ptr_nonnull(m);
        char h[TREEHASH_HEX_LEN + 1];
        hg_error_t err = {0};
        treehash_stats_t st;
        ck_assert_int_eq(treehash_compute(root, m, h, &st, &err), 0);
        fclose(m);
        ck_assert_msg(strstr(text, " blob 600 d/f\n") && strstr(text, " tree 755 d\n"),
                      "manifest: %s", text);
        ck_assert_uint_eq(st.files, 1);
        ck_assert_uint_eq(st.bytes, 1);
        free(text);
}
END_TEST

START_TEST(depth_limit)
{
        int dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dfd, 0);
        /* Deeper than the limit, built with mkdirat so no path gets long. */
        for (int i = 0; i <= TREEHASH_MAX_DEPTH + 1; i++) {
                ck_assert_int_eq(mkdirat(dfd, "d", 0755), 0);
                int sub = openat(dfd, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                ck_assert_int_ge(sub, 0);
                close(dfd);
                dfd = sub;
        }
        close(dfd);
        char h[TREEHASH_HEX_LEN + 1];
        hg_error_t err = {0};
        treehash_stats_t st;
        ck_assert_int_lt(treehash_compute(root, NULL, h, &st, &err), 0);
        ck_assert_msg(strstr(err.message, "deep"), "message: %s", err.message);
}
END_TEST

static Suite *treehash_suite(void)
{
        Suite *s = suite_create("treehash");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, matches_the_documented_format);
        tcase_add_test(tc, what_changes_the_hash);
        tcase_add_test(tc, links_never_followed_nothing_outside_read);
        tcase_add_test(tc, fifos_are_special_never_opened);
        tcase_add_test(tc, manifest_lists_every_entry);
        tcase_add_test(tc, depth_limit);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(treehash_suite());
}
