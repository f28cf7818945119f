/* hangar-probe: checks from inside a container that the driver sidecar's
 * shape holds. Subcommands:
 *   check --role agent|driver   one JSON report of this container
 * (the pod-spec check and the HANGAR_UID_SPLIT verdict come next: issue 4). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks.h"
#include "cleanup.h"
#include "config.h"
#include "observe.h"

/* Exit statuses scripts can act on. */
#define EXIT_PASS         0
#define EXIT_FAIL         1
#define EXIT_USAGE        2
#define EXIT_INCONCLUSIVE 3

static const char usage_text[] =
    "usage: hangar-probe check --role agent|driver [--config FILE]\n"
    "       hangar-probe version\n"
    "Prints one JSON report; exits 0 (pass), 1 (a required check failed),\n"
    "3 (inconclusive: a required check could not be read) or 2 (usage).\n"
    "The configuration is the webhook's (--config or HANGAR_CONFIG).\n";

static int cmd_check(int argc, char **argv)
{
        static const struct option opts[] = {{"role", required_argument, NULL, 'r'},
                                             {"config", required_argument, NULL, 'c'},
                                             {NULL, 0, NULL, 0}};
        const char *role_name = NULL, *config_path = getenv("HANGAR_CONFIG");
        int c;
        while ((c = getopt_long(argc, argv, "r:c:", opts, NULL)) != -1) {
                switch (c) {
                case 'r':
                        role_name = optarg;
                        break;
                case 'c':
                        config_path = optarg;
                        break;
                default:
                        fputs(usage_text, stderr);
                        return EXIT_USAGE;
                }
        }
        shape_role_t role;
        if (role_name && strcmp(role_name, "agent") == 0)
                role = SHAPE_ROLE_AGENT;
        else if (role_name && strcmp(role_name, "driver") == 0)
                role = SHAPE_ROLE_DRIVER;
        else {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        if (optind != argc) {
                fputs(usage_text, stderr);
                return EXIT_USAGE;
        }
        hg_config_t cfg;
        hg_error_t err = {0};
        if (config_load(&cfg, config_path, &err) < 0) {
                fprintf(stderr, "hangar-probe check: %s\n", err.message);
                return EXIT_USAGE;
        }
        observation_t o;
        observe_all(&o);
        report_result_t result = REPORT_FAIL;
        _cleanup_json_ json_t *report = checks_run(&cfg, role, &o, &result);
        observe_free(&o);
        config_free(&cfg);
        _cleanup_free_ char *text = report ? json_dumps(report, JSON_INDENT(2)) : NULL;
        if (!text) {
                fputs("hangar-probe check: out of memory\n", stderr);
                return EXIT_FAIL;
        }
        puts(text);
        switch (result) {
        case REPORT_PASS:
                return EXIT_PASS;
        case REPORT_INCONCLUSIVE:
                return EXIT_INCONCLUSIVE;
        case REPORT_FAIL:
        default:
                return EXIT_FAIL;
        }
}

int main(int argc, char **argv)
{
        if (argc >= 2 && strcmp(argv[1], "version") == 0) {
                printf("hangar-probe %s\n", HANGAR_VERSION);
                return EXIT_PASS;
        }
        if (argc >= 2 && strcmp(argv[1], "check") == 0)
                return cmd_check(argc - 1, argv + 1);
        fputs(usage_text, stderr);
        return EXIT_USAGE;
}
