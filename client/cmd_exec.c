/* hangar exec NS/POD [-c CONTAINER] [-i] -- CMD...: one command in a
 * container through pods/exec (common/k8s/wsexec.c), its stdout and stderr
 * apart on ours, stdin forwarded with -i and its end passed on (v5's close
 * signal), and the command's exit status as ours. When the command did not
 * run to a status, one of hangar's own statuses (cli.h) and the reason. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "cli.h"
#include "fileio.h"

static const char usage_text[] =
    "usage: hangar exec NS/POD [-c CONTAINER] [-i] [--protocol v4|v5] [--kubeconfig FILE]\n"
    "                   [--context NAME] -- CMD [ARG]...\n"
    "Runs CMD in the pod's container through the Kubernetes API (pods/exec over WebSocket).\n"
    "Exits with CMD's status, or with hangar's own (docs/client.md) when CMD did not run.\n"
    "--protocol offers one exec subprotocol alone (default: v5.channel.k8s.io, then v4).\n";

/* stdout and stderr to ours, whole (a pipe that blocks slows the server). */
static int to_fds(void *ud, int channel, const uint8_t *data, size_t len)
{
        (void)ud;
        return fd_write_all(channel == 1 ? STDOUT_FILENO : STDERR_FILENO, data, len);
}

int cmd_exec(int argc, char **argv)
{
        static const struct option opts[] = {{"container", required_argument, NULL, 'c'},
                                             {"stdin", no_argument, NULL, 'i'},
                                             {"kubeconfig", required_argument, NULL, 'k'},
                                             {"context", required_argument, NULL, 'x'},
                                             {"protocol", required_argument, NULL, 'p'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
        cli_api_t api = {0};
        const char *container = NULL;
        bool in = false;
        exs_proto_t only = EXS_PROTO_NONE;
        if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
                fputs(usage_text, stdout);
                return 0;
        }
        /* The command is everything after "--", never read as options. */
        int dashes = 1;
        while (dashes < argc && strcmp(argv[dashes], "--") != 0)
                dashes++;
        if (dashes + 1 >= argc) {
                fputs(usage_text, stderr);
                return CLI_EXIT_USAGE;
        }
        int c;
        while ((c = getopt_long(dashes, argv, "c:ih", opts, NULL)) != -1) {
                switch (c) {
                case 'c':
                        container = optarg;
                        break;
                case 'i':
                        in = true;
                        break;
                case 'k':
                        api.kubeconfig = optarg;
                        break;
                case 'x':
                        api.context = optarg;
                        break;
                case 'p':
                        if (strcmp(optarg, "v4") == 0) {
                                only = EXS_PROTO_V4;
                        } else if (strcmp(optarg, "v5") == 0) {
                                only = EXS_PROTO_V5;
                        } else {
                                fputs(usage_text, stderr);
                                return CLI_EXIT_USAGE;
                        }
                        break;
                case 'h':
                        fputs(usage_text, stdout);
                        return 0;
                default:
                        fputs(usage_text, stderr);
                        return CLI_EXIT_USAGE;
                }
        }
        if (optind != dashes - 1) { /* exactly one operand: the target */
                fputs(usage_text, stderr);
                return CLI_EXIT_USAGE;
        }
        const char *target = argv[optind];
        _cleanup_free_ char *ns = NULL, *pod = NULL;
        if (cli_parse_target(target, &ns, &pod) < 0) {
                cli_error("exec", "target must be NS/POD (Kubernetes names): '%s'", target);
                return CLI_EXIT_USAGE;
        }
        hg_error_t err = {0};
        k8s_client_t *k = NULL;
        if (cli_client(&api, &k, &err) < 0) {
                cli_error("exec", "%s", err.message);
                return CLI_EXIT_CONFIG;
        }
        /* A reader of our output that goes away is an error, not a signal. */
        signal(SIGPIPE, SIG_IGN);
        wsexec_request_t req = {.ns = ns,
                                .pod = pod,
                                .container = container,
                                .argv = argv + dashes + 1,
                                .stdin_open = in,
                                .only = only};
        wsexec_io_t io = {.in_fd = STDIN_FILENO, .output = to_fds};
        wsexec_result_t res = {0};
        int r = wsexec_run(k, &req, &io, &res, &err);
        k8s_client_free(k);
        if (res.stdin_unclosed)
                cli_error("exec",
                          "the server speaks %s only: the command was not told that stdin ended",
                          exs_proto_name(res.proto));
        if (r == 0 && res.failure == WSEXEC_OK)
                return res.exit_code;
        cli_error("exec", "%s: %s", wsexec_failure_name(res.failure), err.message);
        return cli_exit_for(res.failure);
}
