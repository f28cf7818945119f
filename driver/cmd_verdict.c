/* hangar-driver verdict: stores the uid split's verdict, read on stdin,
 * where the daemon reads it (hangar-ctl) and the relay reads it
 * (hangar-home). hangar (`hangar pod check`) runs it by one exec into
 * hangar-driver, the only container that may write either volume: the
 * agent's mounts hangar-home read-only and hangar-ctl not at all. It takes
 * the places from the driver's own configuration, never from the caller,
 * and it stores only a verdict hangar-probe could have made
 * (split_verdict_load): nothing the exec's caller sends can become another
 * file or a verdict the gate would misread. Being the driver's own binary,
 * it needs no shell in the image (the bundle's images have none). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cleanup.h"
#include "cmds.h"
#include "fileio.h"
#include "jsonx.h"
#include "layout.h"
#include "record.h"
#include "split.h"

#define VERDICT_FILE_MODE 0644 /* the relay runs as the agent: it must read it */

static const char usage[] =
    "usage: hangar-driver verdict [--config FILE] <VERDICT_JSON\n"
    "Stores the verdict of hangar-probe verdict, read on stdin, into hangar-home\n"
    "(for the relay) and then hangar-ctl (for the daemon), each by rename, mode 0644.\n"
    "Prints {\"verdict\":...,\"ctl\":PATH,\"home\":PATH}. Exit: 0 stored, 1 not stored\n"
    "(a write failed), 2 usage or not a verdict.\n";

/* Writes j as DIR/NAME by rename, its path in *ret_path; says why on stderr. */
static int store(const char *dir, const char *name, json_t *j, char **ret_path)
{
        int r = record_write_json(dir, name, j, VERDICT_FILE_MODE);
        if (r < 0) {
                fprintf(stderr, "hangar-driver verdict: %s/%s: %s\n", dir, name, strerror(-r));
                return r;
        }
        *ret_path = record_path(dir, name);
        return *ret_path ? 0 : -ENOMEM;
}

int cmd_verdict(int argc, char **argv)
{
        const char *config_path = getenv("HANGAR_CONFIG");
        if (argc == 3 && strcmp(argv[1], "--config") == 0)
                config_path = argv[2];
        else if (argc == 2 && strcmp(argv[1], "--help") == 0) {
                fputs(usage, stdout);
                return 0;
        } else if (argc != 1) {
                fputs(usage, stderr);
                return 2;
        }
        _cleanup_config_ hg_config_t cfg = {0};
        if (driver_load_config(config_path, &cfg) < 0)
                return 2;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = fd_read_bounded(STDIN_FILENO, SPLIT_VERDICT_MAX, &text, &len);
        if (r < 0) {
                fprintf(stderr, "hangar-driver verdict: stdin: %s\n",
                        r == -EFBIG ? "the verdict is over 64 KiB" : strerror(-r));
                return 2;
        }
        hg_error_t err = {0};
        _cleanup_json_ json_t *verdict = NULL;
        verdict_t v;
        if (split_verdict_load(text, len, &verdict, &v, &err) < 0) {
                fprintf(stderr, "hangar-driver verdict: not stored: %s\n", err.message);
                return 2;
        }
        /* The relay's first: the daemon's copy is never newer than the
         * relay's, so a half-done delivery leaves the daemon on the old one. */
        _cleanup_free_ char *home = NULL, *ctl = NULL;
        if (store(cfg.home_path, LAYOUT_HOME_VERDICT, verdict, &home) < 0 ||
            store(cfg.ctl_path, LAYOUT_CTL_VERDICT, verdict, &ctl) < 0)
                return 1;
        _cleanup_json_ json_t *line = json_pack("{s:s, s:s, s:s}", "verdict", split_verdict_name(v),
                                                "ctl", ctl, "home", home);
        _cleanup_free_ char *out = line ? jsonx_dumps(line, JSON_COMPACT) : NULL;
        if (!out || printf("%s\n", out) < 0 || fflush(stdout) != 0)
                return 1;
        return 0;
}
