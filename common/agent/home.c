#include "home.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "mountinfo.h"

#define PATH_COMPONENT_MAX 255u

/* Walks path from "/" with openat(O_NOFOLLOW) per component. */
static int open_nofollow(const char *path, int flags, int *ret_fd, hg_error_t *err)
{
        if (path[0] != '/')
                return error_set(err, -EINVAL, "%s: not an absolute path", path);
        _cleanup_close_ int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return error_set(err, -errno, "/: %s", strerror(errno));
        const char *p = path;
        while (*p) {
                while (*p == '/')
                        p++;
                if (!*p)
                        break;
                size_t len = strcspn(p, "/");
                char name[PATH_COMPONENT_MAX + 1];
                if (len > PATH_COMPONENT_MAX)
                        return error_set(err, -ENAMETOOLONG, "%s: a component is too long", path);
                memcpy(name, p, len);
                name[len] = '\0';
                p += len;
                if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
                        return error_set(err, -EINVAL, "%s: \".\" or \"..\" in the path", path);
                bool last = strspn(p, "/") == strlen(p);
                int how = (last ? flags : O_RDONLY | O_DIRECTORY) | O_NOFOLLOW;
                int next = openat(fd, name, how | O_CLOEXEC);
                if (next < 0)
                        return error_set(
                            err, -errno, "%s: %s at \"%s\"%s", path, strerror(errno), name,
                            errno == ELOOP || errno == ENOTDIR ? " (a symlink or not a directory)"
                                                               : "");
                (void)close(fd);
                fd = next;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Read-only for this process: statvfs says so, or (gVisor 2022 does not
 * report a read-only bind mount in statvfs) the file system refuses a
 * write with EROFS. Any other answer (the directory created, EACCES,
 * EEXIST) proves nothing and is a no. */
static bool read_only_here(int fd)
{
        static const char probe[] = ".hangar-relay-ro-probe";
        struct statvfs vfs;
        if (fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
                return true;
        if (mkdirat(fd, probe, 0700) == 0) {
                (void)unlinkat(fd, probe, AT_REMOVEDIR);
                return false;
        }
        return errno == EROFS;
}

int home_open_with(const char *home, const char *mountinfo_path, int *ret_fd, hg_error_t *err)
{
        _cleanup_close_ int fd = -1;
        int r = open_nofollow(home, O_RDONLY | O_DIRECTORY, &fd, err);
        if (r < 0)
                return error_prefix(err, "hangar-home: ");
        if (!read_only_here(fd))
                return error_set(err, -EPERM,
                                 "hangar-home %s is writable here: not the read-only mount the "
                                 "driver writes (refusing to trust its files)",
                                 home);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        if ((r = file_read_bounded(mountinfo_path, MOUNTINFO_MAX_BYTES, &text, &len)) < 0)
                return error_set(err, r, "%s: %s", mountinfo_path, strerror(-r));
        mount_table_t table = {0};
        if (mountinfo_parse(text, len, &table, err) < 0)
                return error_prefix(err, "%s: ", mountinfo_path);
        const mount_entry_t *m = mountinfo_find(&table, home);
        bool ro = m && m->read_only;
        mountinfo_free(&table);
        if (!m)
                return error_set(err, -EPERM,
                                 "hangar-home %s is not a mount point here (an ancestor renamed "
                                 "aside?): refusing to trust its files",
                                 home);
        if (!ro)
                return error_set(err, -EPERM, "hangar-home %s is not mounted read-only here", home);
        /* The path still names what was opened (nothing moved meanwhile). */
        struct stat a, b;
        if (fstat(fd, &a) < 0 || stat(home, &b) < 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino)
                return error_set(err, -EPERM, "hangar-home %s changed while it was checked", home);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int home_open(const char *home, int *ret_fd, hg_error_t *err)
{
        return home_open_with(home, "/proc/self/mountinfo", ret_fd, err);
}

int home_read(int dirfd, const char *name, size_t max, char **ret_data, size_t *ret_len,
              hg_error_t *err)
{
        _cleanup_close_ int fd = -1;
        /* name's own components: no symlink in them either. */
        _cleanup_close_ int dir = -1;
        const char *slash = strrchr(name, '/');
        if (slash) {
                char sub[PATH_COMPONENT_MAX + 1];
                size_t n = (size_t)(slash - name);
                if (n == 0 || n > PATH_COMPONENT_MAX || memchr(name, '/', n))
                        return error_set(err, -EINVAL, "%s: one subdirectory at most", name);
                memcpy(sub, name, n);
                sub[n] = '\0';
                if ((dir = openat(dirfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
                        return error_set(err, -errno, "hangar-home/%s: %s", sub, strerror(errno));
        }
        const char *leaf = slash ? slash + 1 : name;
        fd = openat(dir >= 0 ? dir : dirfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return error_set(err, -errno, "hangar-home/%s: %s", name, strerror(errno));
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return error_set(err, -EINVAL, "hangar-home/%s: not a regular file", name);
        int r = fd_read_bounded(fd, max, ret_data, ret_len);
        if (r < 0)
                return error_set(err, r, "hangar-home/%s: %s", name, strerror(-r));
        return 0;
}
