#include "treehash.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "cleanup.h"
#include "strbuf.h"

#define HASH_SIZE 32
#define READ_BUF  (128u * 1024u)

typedef struct walker {
        EVP_MD_CTX *md;
        uint8_t *buf;
        FILE *manifest;
        strbuf_t path; /* relative path of the directory being walked */
        treehash_stats_t stats;
        hg_error_t *err;
} walker_t;

typedef struct entry {
        char *name;
        const char *kind;
        mode_t mode;
        uint8_t hash[HASH_SIZE];
} entry_t;

/* The directory being walked, relative to the root ("" at the root). */
static const char *wpath(const walker_t *w)
{
        return w->path.data ? w->path.data : "";
}

static int digest_parts(walker_t *w, const void *a, size_t an, const void *b, size_t bn,
                        uint8_t out[HASH_SIZE])
{
        unsigned len = 0;
        if (EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1 ||
            EVP_DigestUpdate(w->md, a, an) != 1 || (bn && EVP_DigestUpdate(w->md, b, bn) != 1) ||
            EVP_DigestFinal_ex(w->md, out, &len) != 1 || len != HASH_SIZE)
                return error_set(w->err, -EIO, "SHA-256 failed");
        return 0;
}

static int hash_file(walker_t *w, int dirfd, const char *name, const struct stat *st,
                     uint8_t out[HASH_SIZE])
{
        _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        struct stat fst;
        if (fd < 0 || fstat(fd, &fst) < 0)
                return error_set(w->err, -errno, "%s/%s: %s", wpath(w), name, strerror(errno));
        if (!S_ISREG(fst.st_mode) || fst.st_ino != st->st_ino || fst.st_dev != st->st_dev)
                return error_set(w->err, -ESTALE, "%s/%s: changed while hashing", wpath(w), name);
        char head[64];
        int hn = snprintf(head, sizeof(head), "blob %llu", (unsigned long long)fst.st_size);
        unsigned len = 0;
        uint64_t total = 0;
        if (EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1 ||
            EVP_DigestUpdate(w->md, head, (size_t)hn + 1) != 1)
                return error_set(w->err, -EIO, "SHA-256 failed");
        for (;;) {
                ssize_t n = read(fd, w->buf, READ_BUF);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return error_set(w->err, -errno, "%s/%s: %s", wpath(w), name,
                                         strerror(errno));
                if (n == 0)
                        break;
                total += (uint64_t)n;
                if (EVP_DigestUpdate(w->md, w->buf, (size_t)n) != 1)
                        return error_set(w->err, -EIO, "SHA-256 failed");
        }
        /* The size in the header must be the size hashed. */
        if (total != (uint64_t)fst.st_size)
                return error_set(w->err, -ESTALE, "%s/%s: changed while hashing", wpath(w), name);
        if (EVP_DigestFinal_ex(w->md, out, &len) != 1 || len != HASH_SIZE)
                return error_set(w->err, -EIO, "SHA-256 failed");
        w->stats.files++;
        w->stats.bytes += total;
        return 0;
}

static int hash_link(walker_t *w, int dirfd, const char *name, const struct stat *st,
                     uint8_t out[HASH_SIZE])
{
        char target[PATH_MAX];
        ssize_t n = readlinkat(dirfd, name, target, sizeof(target));
        if (n < 0 || (size_t)n >= sizeof(target))
                return error_set(w->err, n < 0 ? -errno : -ENAMETOOLONG,
                                 "%s/%s: cannot read the link", wpath(w), name);
        (void)st;
        char head[64];
        int hn = snprintf(head, sizeof(head), "link %zd", n);
        w->stats.symlinks++;
        return digest_parts(w, head, (size_t)hn + 1, target, (size_t)n, out);
}

static int cmp_entry(const void *a, const void *b)
{
        return strcmp(((const entry_t *)a)->name, ((const entry_t *)b)->name);
}

static void hex_of(const uint8_t h[HASH_SIZE], char out[TREEHASH_HEX_LEN + 1])
{
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < HASH_SIZE; i++) {
                out[2 * i] = digits[h[i] >> 4];
                out[2 * i + 1] = digits[h[i] & 0xf];
        }
        out[TREEHASH_HEX_LEN] = '\0';
}

static void manifest_line(walker_t *w, const entry_t *e)
{
        if (!w->manifest)
                return;
        char hex[TREEHASH_HEX_LEN + 1];
        hex_of(e->hash, hex);
        fprintf(w->manifest, "%s %s %o %s%s%s\n", hex, e->kind, (unsigned)(e->mode & 07777),
                wpath(w), w->path.len ? "/" : "", e->name);
}

static int hash_dir(walker_t *w, int dirfd, unsigned depth, uint8_t out[HASH_SIZE]);

/* Reads, sorts and hashes the entries of dirfd (which it takes over). */
static int hash_dir(walker_t *w, int dirfd, unsigned depth, uint8_t out[HASH_SIZE])
{
        if (depth > TREEHASH_MAX_DEPTH) {
                (void)close(dirfd);
                /* The reason first: the path may fill the message. */
                return error_set(w->err, -ELOOP, "deeper than %u directories: %s",
                                 TREEHASH_MAX_DEPTH, wpath(w));
        }
        DIR *d = fdopendir(dirfd);
        if (!d) {
                (void)close(dirfd);
                return error_set(w->err, -errno, "%s: %s", wpath(w), strerror(errno));
        }
        entry_t *entries = NULL;
        size_t n = 0, cap = 0;
        int r = 0;
        struct dirent *de;
        errno = 0;
        while ((de = readdir(d))) {
                const char *name = de->d_name;
                if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, ".git") == 0)
                        continue;
                if (n == cap) {
                        size_t ncap = cap ? cap * 2 : 32;
                        entry_t *ne = realloc(entries, ncap * sizeof(*ne));
                        if (!ne) {
                                r = -ENOMEM;
                                goto out;
                        }
                        entries = ne, cap = ncap;
                }
                char *copy = strdup(name);
                if (!copy) {
                        r = -ENOMEM;
                        goto out;
                }
                entries[n++] = (entry_t){.name = copy};
        }
        if (errno) {
                r = error_set(w->err, -errno, "%s: %s", wpath(w), strerror(errno));
                goto out;
        }
        if (n > 1) /* an empty directory has no array at all: qsort(NULL) is undefined */
                qsort(entries, n, sizeof(*entries), cmp_entry);

        for (size_t i = 0; i < n; i++) {
                entry_t *e = &entries[i];
                struct stat st;
                if (fstatat(dirfd, e->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        r = error_set(w->err, -errno, "%s/%s: %s", wpath(w), e->name,
                                      strerror(errno));
                        goto out;
                }
                e->mode = st.st_mode;
                if (S_ISREG(st.st_mode)) {
                        e->kind = "blob";
                        r = hash_file(w, dirfd, e->name, &st, e->hash);
                } else if (S_ISLNK(st.st_mode)) {
                        e->kind = "link";
                        r = hash_link(w, dirfd, e->name, &st, e->hash);
                } else if (S_ISDIR(st.st_mode)) {
                        e->kind = "tree";
                        int sub =
                            openat(dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        size_t saved = w->path.len;
                        if (sub < 0) {
                                r = error_set(w->err, -errno, "%s/%s: %s", wpath(w), e->name,
                                              strerror(errno));
                                goto out;
                        }
                        if ((w->path.len && strbuf_append(&w->path, "/", 1) < 0) ||
                            strbuf_append(&w->path, e->name, strlen(e->name)) < 0) {
                                (void)close(sub);
                                r = -ENOMEM;
                                goto out;
                        }
                        r = hash_dir(w, sub, depth + 1, e->hash);
                        strbuf_truncate(&w->path, saved);
                } else {
                        char head[64];
                        int hn = snprintf(head, sizeof(head), "special %o", (unsigned)st.st_mode);
                        e->kind = "special";
                        w->stats.specials++;
                        r = digest_parts(w, head, (size_t)hn + 1, NULL, 0, e->hash);
                }
                if (r < 0)
                        goto out;
                manifest_line(w, e);
        }

        /* The directory's own object. */
        {
                char head[64];
                int hn = snprintf(head, sizeof(head), "tree %zu", n);
                unsigned len = 0;
                if (EVP_DigestInit_ex(w->md, EVP_sha256(), NULL) != 1 ||
                    EVP_DigestUpdate(w->md, head, (size_t)hn + 1) != 1) {
                        r = error_set(w->err, -EIO, "SHA-256 failed");
                        goto out;
                }
                for (size_t i = 0; i < n; i++) {
                        char line[64];
                        int ln = snprintf(line, sizeof(line), "%s %o ", entries[i].kind,
                                          (unsigned)(entries[i].mode & 07777));
                        if (EVP_DigestUpdate(w->md, line, (size_t)ln) != 1 ||
                            EVP_DigestUpdate(w->md, entries[i].name, strlen(entries[i].name) + 1) !=
                                1 ||
                            EVP_DigestUpdate(w->md, entries[i].hash, HASH_SIZE) != 1) {
                                r = error_set(w->err, -EIO, "SHA-256 failed");
                                goto out;
                        }
                }
                if (EVP_DigestFinal_ex(w->md, out, &len) != 1 || len != HASH_SIZE)
                        r = error_set(w->err, -EIO, "SHA-256 failed");
                w->stats.dirs++;
        }
out:
        for (size_t i = 0; i < n; i++)
                free(entries[i].name);
        free(entries);
        closedir(d);
        return r;
}

int treehash_compute(const char *root, FILE *manifest, char ret_hex[TREEHASH_HEX_LEN + 1],
                     treehash_stats_t *ret_stats, hg_error_t *err)
{
        /* The root itself may be reached through a symlink (the caller named
         * it); nothing below it is. */
        int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return error_set(err, -errno, "%s: %s", root, strerror(errno));
        walker_t w = {.manifest = manifest, .err = err};
        w.md = EVP_MD_CTX_new();
        w.buf = malloc(READ_BUF);
        int r = 0;
        if (!w.md || !w.buf) {
                (void)close(fd);
                r = error_set(err, -ENOMEM, "out of memory");
                goto out;
        }
        uint8_t h[HASH_SIZE];
        if ((r = hash_dir(&w, fd, 0, h)) < 0) {
                if (r == -ENOMEM)
                        error_set(err, r, "out of memory");
                goto out;
        }
        hex_of(h, ret_hex);
        *ret_stats = w.stats;
out:
        EVP_MD_CTX_free(w.md);
        free(w.buf);
        strbuf_free(&w.path);
        return r;
}
