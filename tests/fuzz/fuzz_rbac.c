/* libFuzzer target: the API server's answers about a token, as the probe
 * reads them (probe/rbac.c). Input: one byte choosing the reader ('r' the
 * SelfSubjectReview, anything else the SelfSubjectAccessReview), one byte
 * choosing the HTTP status, then the body as the client would parse it.
 * A "yes" or "no" must be exactly what the body says; a 401 is the only
 * rejection; every other outcome says why; a read identity is the body's. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "rbac.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const long statuses[] = {201, 200, 401, 403, 500, 0};

static json_t *at(json_t *j, const char *a, const char *b, const char *c)
{
        j = json_object_get(j, a);
        j = b ? json_object_get(j, b) : j;
        return c ? json_object_get(j, c) : j;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 2)
                return 0;
        bool self = data[0] == 'r';
        long status = statuses[(data[1] - '0' + 256u) % (sizeof(statuses) / sizeof(statuses[0]))];
        json_t *body = NULL;
        hg_error_t err = {0};
        if (size > 2)
                (void)jsonx_load((const char *)data + 2, size - 2, JSONX_MAX_DEPTH, &body, &err);
        error_clear(&err);
        if (self) {
                rbac_identity_t id;
                int r = rbac_parse_ssr(status, body, &id, &err);
                if (r == 0) {
                        const char *user =
                            json_string_value(at(body, "status", "userInfo", "username"));
                        if (!user || strcmp(user, id.username) != 0 || !id.username[0] ||
                            (status != 200 && status != 201))
                                abort();
                        size_t n = strlen(id.sa_namespace);
                        if (n &&
                            (strncmp(user, "system:serviceaccount:", 22) != 0 ||
                             strncmp(user + 22, id.sa_namespace, n) != 0 || user[22 + n] != ':'))
                                abort();
                        json_t *pods = at(body, "status", "userInfo", "extra");
                        pods = json_object_get(pods, "authentication.kubernetes.io/pod-name");
                        const char *pod = json_string_value(json_array_get(pods, 0));
                        if (strcmp(id.pod_name, pod ? pod : "") != 0)
                                abort();
                } else if ((r == -EACCES) != (status == 401) || !err.message[0]) {
                        abort();
                }
        } else {
                rbac_answer_t a = rbac_parse_ssar(status, body, &err);
                json_t *allowed = at(body, "status", "allowed", NULL);
                switch (a) {
                case RBAC_ALLOWED:
                        if (!json_is_true(allowed) || (status != 200 && status != 201))
                                abort();
                        break;
                case RBAC_DENIED:
                        if (!json_is_false(allowed) || (status != 200 && status != 201))
                                abort();
                        break;
                case RBAC_REJECTED:
                        if (status != 401)
                                abort();
                        break;
                case RBAC_UNEXPECTED:
                        if (!err.message[0] || status == 401)
                                abort();
                        break;
                default:
                        abort();
                }
        }
        json_decref(body);
        return 0;
}
