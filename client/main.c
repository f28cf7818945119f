/* hangar: hangar's side of the sidecar as a program. It speaks the
 * Kubernetes API itself (the credentials kubectl would use, pods/exec over
 * WebSocket) and prints what it did as JSON lines for hangar, which drives
 * it as a subprocess (docs/client.md). One file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

typedef struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        const char *summary;
} command_t;

static const command_t commands[] = {
    {"exec", cmd_exec, "run a command in a pod's container (pods/exec over WebSocket)"},
    {"pod", cmd_pod, "pod check NS/POD: the uid split's verdict, decided and delivered"},
    {"turn", cmd_turn, "turn run NS/POD --spec FILE | turn attach NS/POD --turn ID: a whole turn"},
    {"grade", cmd_grade, "grade NS/POD --spec FILE: one sealed grade, begin to its record"},
};

static void usage(FILE *f)
{
        fputs("usage: hangar COMMAND [ARGS]...   (hangar COMMAND --help)\n", f);
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
        fputs("  version  print hangar's version and protocol\n", f);
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                usage(stderr);
                return CLI_EXIT_USAGE;
        }
        if (strcmp(argv[1], "version") == 0) {
                printf("{\"v\":%d,\"event\":\"version\",\"version\":\"%s\"}\n",
                       CLI_PROTOCOL_VERSION, HANGAR_VERSION);
                return 0;
        }
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
                usage(stdout);
                return 0;
        }
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(argv[1], commands[i].name) == 0)
                        return commands[i].run(argc - 1, argv + 1);
        usage(stderr);
        return CLI_EXIT_USAGE;
}
