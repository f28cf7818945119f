#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "jsonx.h"
#include "k8sname.h"

int cli_exit_for(wsexec_failure_t f)
{
        switch (f) {
        case WSEXEC_CONNECT:
                return CLI_EXIT_CONNECT;
        case WSEXEC_REFUSED:
                return CLI_EXIT_REFUSED;
        case WSEXEC_NOT_FOUND:
                return CLI_EXIT_NOT_FOUND;
        case WSEXEC_NOT_RUNNABLE:
                return CLI_EXIT_NOT_RUNNABLE;
        case WSEXEC_SERVER:
                return CLI_EXIT_SERVER;
        case WSEXEC_PROTOCOL:
                return CLI_EXIT_PROTOCOL;
        case WSEXEC_NO_START:
                return CLI_EXIT_NO_START;
        case WSEXEC_OK: /* not a failure: the caller has the command's status */
        case WSEXEC_LOCAL:
        default:
                return CLI_EXIT_LOCAL;
        }
}

int cli_parse_target(const char *arg, char **ret_ns, char **ret_pod)
{
        const char *slash = strchr(arg, '/');
        if (!slash || strchr(slash + 1, '/'))
                return -EINVAL;
        _cleanup_free_ char *ns = strndup(arg, (size_t)(slash - arg));
        _cleanup_free_ char *pod = strdup(slash + 1);
        if (!ns || !pod)
                return -ENOMEM;
        if (!k8s_is_dns1123_label(ns) || !k8s_is_dns1123_subdomain(pod))
                return -EINVAL;
        *ret_ns = TAKE_PTR(ns);
        *ret_pod = TAKE_PTR(pod);
        return 0;
}

int cli_client(const cli_api_t *api, k8s_client_t **ret, hg_error_t *err)
{
        return k8s_client_new_kubectl(api->kubeconfig, api->context, ret, err);
}

bool cli_id_ok(const char *id)
{
        size_t n = id ? strlen(id) : 0;
        return n >= 1 && n <= 64 &&
               strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

int cli_read_pod(k8s_client_t *k, const char *ns, const char *name, json_t **ret, int *ret_exit,
                 hg_error_t *err)
{
        char path[512];
        (void)snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods/%s", ns, name);
        long status = 0;
        json_t *pod = NULL;
        if (k8s_request(k, "GET", path, NULL, NULL, &status, &pod, err) < 0) {
                *ret_exit = CLI_EXIT_CONNECT;
                return -EIO;
        }
        if (status == 200 && json_is_object(pod)) {
                *ret = pod;
                return 0;
        }
        char buf[32];
        (void)error_set(err, -EIO, "GET %s: %s", path,
                        k8s_status_message(pod, status, buf, sizeof(buf)));
        json_decref(pod);
        *ret_exit = status == 404                    ? CLI_EXIT_NOT_FOUND
                    : status == 401 || status == 403 ? CLI_EXIT_REFUSED
                                                     : CLI_EXIT_SERVER;
        return -EIO;
}

int cli_config(hg_config_t *cfg, const char *path, const char **sets, size_t n_sets,
               hg_error_t *err)
{
        if (!path)
                path = getenv("HANGAR_CONFIG");
        int r = config_load(cfg, path, err);
        if (r < 0) {
                *cfg = (hg_config_t){0};
                return r;
        }
        for (size_t i = 0; r == 0 && i < n_sets; i++)
                r = config_set(cfg, sets[i], err);
        if (r == 0)
                r = config_validate(cfg, err);
        return r;
}

void cli_error(const char *cmd, const char *fmt, ...)
{
        char msg[1024];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* The message may quote the API server or a container: no escape
         * sequences reach the terminal. */
        for (char *p = msg; *p; p++)
                if ((unsigned char)*p < 0x20 || *p == 0x7f)
                        *p = ' ';
        fprintf(stderr, "hangar %s: %s\n", cmd, msg);
}

int cli_emit(const char *event, json_t *obj)
{
        _cleanup_json_ json_t *line =
            json_pack("{s:i, s:s}", "v", CLI_PROTOCOL_VERSION, "event", event);
        _cleanup_json_ json_t *rest = obj;
        if (!line || !rest || json_object_update(line, rest) < 0)
                return -ENOMEM;
        _cleanup_free_ char *text = jsonx_dumps(line, JSON_COMPACT);
        if (!text)
                return -ENOMEM;
        if (puts(text) == EOF || fflush(stdout) == EOF)
                return -EIO;
        return 0;
}

int cli_load_spec(const char *path, size_t max, const char *kind, char **ret_text, size_t *ret_len,
                  char **ret_id, char *msg, size_t n)
{
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = file_read_bounded(path, max, &data, &len);
        if (r < 0) {
                (void)snprintf(msg, n, "cannot read the spec %s: %s", path, strerror(-r));
                return r;
        }
        _cleanup_json_ json_t *spec = NULL;
        hg_error_t err = {0};
        const char *id = NULL;
        if (jsonx_load(data, len, JSONX_MAX_DEPTH, &spec, &err) < 0 || !json_is_object(spec) ||
            jsonx_string(spec, kind, &id) < 0 || !id || !cli_id_ok(id)) {
                char none[64];
                (void)snprintf(none, sizeof(none), "no valid \"%s\"", kind);
                (void)snprintf(msg, n, "the spec %s is not a %s spec with a \"%s\" id: %s", path,
                               kind, kind, err.message[0] ? err.message : none);
                explicit_bzero(data, len);
                return -EINVAL;
        }
        *ret_id = strdup(id);
        if (!*ret_id) {
                explicit_bzero(data, len);
                return -ENOMEM;
        }
        *ret_text = TAKE_PTR(data);
        *ret_len = len;
        return 0;
}

int cli_memfd_with(const char *name, const char *text, size_t len)
{
        int fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fd_write_all(fd, text, len) < 0 || lseek(fd, 0, SEEK_SET) < 0) {
                int e = errno ? -errno : -EIO;
                (void)close(fd);
                return e;
        }
        return fd;
}
