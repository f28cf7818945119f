#include "scratch.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

bool scratch_turn_id_valid(const char *turn)
{
        size_t n = turn ? strlen(turn) : 0;
        if (n == 0 || n > 64 || strcmp(turn, ".") == 0 || strcmp(turn, "..") == 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = turn[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-'))
                        return false;
        }
        return true;
}

int scratch_path(const char *turn, char **ret, hg_error_t *err)
{
        const char *home = getenv("HOME");
        if (!scratch_turn_id_valid(turn))
                return error_set(err, -EINVAL, "not a turn id");
        if (!home || home[0] != '/')
                return error_set(err, -EINVAL, "HOME is not an absolute path");
        if (asprintf(ret, "%s/%s/%s", home, SCRATCH_DIR_NAME, turn) < 0)
                return error_set(err, -ENOMEM, "out of memory");
        return 0;
}

int scratch_create(const char *turn, char **ret_path, hg_error_t *err)
{
        _cleanup_free_ char *path = NULL;
        int r = scratch_path(turn, &path, err);
        if (r < 0)
                return r;
        char *slash = strrchr(path, '/');
        *slash = '\0';
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return error_set(err, -errno, "%s: %s", path, strerror(errno));
        *slash = '/';
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return error_set(err, -errno, "%s: %s", path, strerror(errno));
        *ret_path = TAKE_PTR(path);
        return 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        (void)remove(path);
        return 0;
}

int scratch_remove(const char *turn)
{
        _cleanup_free_ char *path = NULL;
        int r = scratch_path(turn, &path, NULL);
        if (r < 0)
                return r;
        /* FTW_PHYS: symlinks are removed, never followed; FTW_DEPTH: children first. */
        if (nftw(path, remove_one, 16, FTW_PHYS | FTW_DEPTH | FTW_MOUNT) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}
