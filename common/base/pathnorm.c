#include "pathnorm.h"

#include <errno.h>
#include <string.h>

int pathnorm_canonical(const char *path, char *out, size_t size)
{
        if (size < 2) {
                if (size)
                        out[0] = '\0';
                return -ENAMETOOLONG;
        }
        size_t len = 0;
        out[0] = '\0';
        while (*path) {
                while (*path == '/')
                        path++;
                size_t seg = strcspn(path, "/");
                if (seg == 0)
                        break;
                if (seg == 1 && path[0] == '.') {
                        /* "." changes nothing */
                } else if (seg == 2 && path[0] == '.' && path[1] == '.') {
                        /* Back to the previous '/'; at the root, stays there. */
                        while (len > 0 && out[len - 1] != '/')
                                len--;
                        if (len > 0)
                                len--;
                        out[len] = '\0';
                } else if (len + 1 + seg < size) {
                        out[len++] = '/';
                        memcpy(out + len, path, seg);
                        len += seg;
                        out[len] = '\0';
                } else {
                        /* Dropping the segment would make another path of it. */
                        out[0] = '\0';
                        return -ENAMETOOLONG;
                }
                path += seg;
        }
        if (len == 0) {
                out[0] = '/';
                out[1] = '\0';
        }
        return 0;
}

int pathnorm_within(const char *path, const char *root)
{
        char p[PATHNORM_MAX], r[PATHNORM_MAX];
        if (pathnorm_canonical(path, p, sizeof(p)) < 0 ||
            pathnorm_canonical(root, r, sizeof(r)) < 0)
                return -ENAMETOOLONG;
        size_t n = strlen(r);
        if (n == 1) /* everything is within "/" */
                return 1;
        return strncmp(p, r, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

bool pathnorm_is_canonical(const char *path)
{
        char c[PATHNORM_MAX];
        return path[0] == '/' && pathnorm_canonical(path, c, sizeof(c)) == 0 &&
               strcmp(c, path) == 0;
}
