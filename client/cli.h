/* What the `hangar` subcommands share: exit statuses, the NS/POD target,
 * the API client found as kubectl finds it, the protocol's JSON lines and
 * errors told on stderr without the server's control characters. */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "config.h"
#include "error.h"
#include "k8sclient.h"
#include "wsexec.h"

/* The protocol's version: every JSON line says it ("v"). */
#define CLI_PROTOCOL_VERSION 1

/* Exit statuses of hangar itself (docs/client.md). `hangar exec` exits with
 * the command's own status when the command ran; these are for when it did
 * not, or could not be followed to its end. */
enum {
        CLI_EXIT_USAGE = 64,
        CLI_EXIT_CONFIG = 65,       /* no kubeconfig, bad credentials, plugin failed */
        CLI_EXIT_CONNECT = 66,      /* the API server not reached, the connection lost */
        CLI_EXIT_REFUSED = 67,      /* 401/403: RBAC or hangar's exec guard */
        CLI_EXIT_NOT_FOUND = 68,    /* 404: the pod (or namespace) is not there */
        CLI_EXIT_NOT_RUNNABLE = 69, /* 400: no such container, or not running */
        CLI_EXIT_SERVER = 70,       /* another answer of the API server */
        CLI_EXIT_PROTOCOL = 71,     /* the server broke the exec protocol */
        CLI_EXIT_NO_START = 72,     /* the command could not be started in the container */
        CLI_EXIT_LOCAL = 73,        /* our side: output unwritable, out of memory */
};

int cli_exit_for(wsexec_failure_t f);

/* Options every subcommand that talks to the API takes. */
typedef struct cli_api {
        const char *kubeconfig;
        const char *context;
} cli_api_t;

/* "NS/POD" into its two names (each a DNS-1123 label/subdomain). */
int cli_parse_target(const char *arg, char **ret_ns, char **ret_pod);
/* The API client as kubectl finds its configuration (k8s_client_new_kubectl). */
int cli_client(const cli_api_t *api, k8s_client_t **ret, hg_error_t *err);

/* A turn or grade id as the driver takes it: 1-64 of [A-Za-z0-9._-]. */
bool cli_id_ok(const char *id);
/* The pod through the API (GET pods/NAME): 0 and the pod, or <0 with the
 * exit status for why in *ret_exit and err. */
int cli_read_pod(k8s_client_t *k, const char *ns, const char *name, json_t **ret, int *ret_exit,
                 hg_error_t *err);
/* The sidecar's settings hangar checks pods against: FILE (else
 * $HANGAR_CONFIG, else the defaults), then each KEY=VALUE of sets. 0, or
 * <0 with err. */
int cli_config(hg_config_t *cfg, const char *path, const char **sets, size_t n_sets,
               hg_error_t *err);

/* A turn's or grade's spec from path (at most max bytes), checked enough to
 * know its id: a JSON object whose member kind ("turn", "grade") is an id
 * (cli_id_ok). 0 with the text (the caller wipes it: a turn's holds the run
 * key), its length and the id; or <0 with why in msg. */
int cli_load_spec(const char *path, size_t max, const char *kind, char **ret_text, size_t *ret_len,
                  char **ret_id, char *msg, size_t n);
/* text in a fresh memfd at offset 0, for an exec's stdin: the fd or -errno. */
int cli_memfd_with(const char *name, const char *text, size_t len);

/* "hangar CMD: message" on stderr, control characters replaced. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One JSON line on stdout (compact, flushed), the version and event first;
 * steals obj. Returns 0 or -EIO. */
int cli_emit(const char *event, json_t *obj);

int cmd_exec(int argc, char **argv);
int cmd_pod(int argc, char **argv);
int cmd_turn(int argc, char **argv);
int cmd_grade(int argc, char **argv);
