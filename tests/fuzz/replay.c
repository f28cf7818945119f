/* Replays fuzz corpora through a target as an ordinary test: every file under
 * the directories given is fed to LLVMFuzzerTestOneInput once. Built without
 * libFuzzer, so CI checks the corpus with gcc and the sanitizers too. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "fileio.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_dir(const char *dir, size_t *count)
{
        DIR *d = opendir(dir);
        if (!d) {
                fprintf(stderr, "replay: cannot open %s\n", dir);
                return -1;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                char path[4096];
                (void)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
                _cleanup_free_ char *buf = NULL;
                size_t len;
                if (file_read_bounded(path, 16 << 20, &buf, &len) < 0) {
                        fprintf(stderr, "replay: cannot read %s\n", path);
                        closedir(d);
                        return -1;
                }
                (void)LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
                (*count)++;
        }
        closedir(d);
        return 0;
}

int main(int argc, char **argv)
{
        size_t count = 0;
        for (int i = 1; i < argc; i++)
                if (replay_dir(argv[i], &count) < 0)
                        return 1;
        if (count == 0) {
                fprintf(stderr, "replay: no inputs\n");
                return 1;
        }
        printf("replay: %zu inputs, no failures\n", count);
        return 0;
}
