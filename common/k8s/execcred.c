#include "execcred.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "childreset.h"
#include "cleanup.h"
#include "jsonx.h"
#include "strbuf.h"

extern char **environ;

#define EXECCRED_V1ALPHA1 "client.authentication.k8s.io/v1alpha1"

/* ---- the user.exec stanza ------------------------------------------------ */

static void strv_free(char **v)
{
        if (!v)
                return;
        for (char **p = v; *p; p++)
                free(*p);
        free(v);
}

void execcred_config_free(execcred_config_t *cfg)
{
        if (!cfg)
                return;
        free(cfg->command);
        strv_free(cfg->args);
        strv_free(cfg->env);
        free(cfg->api_version);
        free(cfg->install_hint);
        *cfg = (execcred_config_t){0};
}

static void config_clearp(execcred_config_t *cfg)
{
        execcred_config_free(cfg);
}

/* An optional string member: 0 with *ret (NULL when absent), -EINVAL with
 * err set when it has another type. */
static int opt_string(json_t *obj, const char *key, const char **ret, hg_error_t *err)
{
        *ret = NULL;
        int r = jsonx_string(obj, key, ret);
        if (r == -EINVAL)
                return error_set(err, r, "exec: %s must be a string, not %s", key,
                                 jsonx_type_name(json_object_get(obj, key)));
        return 0;
}

static int dup_string(const char *s, char **ret)
{
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* args: a list of strings. */
static int parse_args(json_t *exec, char ***ret, hg_error_t *err)
{
        json_t *list = NULL;
        int r = jsonx_member(exec, "args", JSON_ARRAY, &list);
        if (r == -EINVAL)
                return error_set(err, r, "exec: args must be a list of strings");
        size_t n = r == 0 ? json_array_size(list) : 0;
        if (n > EXECCRED_MAX_ARGS)
                return error_set(err, -E2BIG, "exec: more than %d args", EXECCRED_MAX_ARGS);
        char **v = calloc(n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const char *s = json_string_value(json_array_get(list, i));
                if (!s) {
                        strv_free(v);
                        return error_set(err, -EINVAL, "exec: args[%zu] must be a string", i);
                }
                if (!(v[i] = strdup(s))) {
                        strv_free(v);
                        return -ENOMEM;
                }
        }
        *ret = v;
        return 0;
}

/* env: a list of {name, value}, both strings; NAME=VALUE each. */
static int parse_env(json_t *exec, char ***ret, hg_error_t *err)
{
        json_t *list = NULL;
        int r = jsonx_member(exec, "env", JSON_ARRAY, &list);
        if (r == -EINVAL)
                return error_set(err, r, "exec: env must be a list of {name, value}");
        size_t n = r == 0 ? json_array_size(list) : 0;
        if (n > EXECCRED_MAX_ARGS)
                return error_set(err, -E2BIG, "exec: more than %d env entries", EXECCRED_MAX_ARGS);
        char **v = calloc(n + 1, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_t *e = json_array_get(list, i);
                const char *name = NULL, *value = NULL;
                if (jsonx_string(e, "name", &name) < 0 || jsonx_string(e, "value", &value) < 0 ||
                    !name[0] || strchr(name, '=')) {
                        strv_free(v);
                        return error_set(err, -EINVAL,
                                         "exec: env[%zu] must have a name (no '=') and a string "
                                         "value",
                                         i);
                }
                strbuf_t sb = {0};
                if (strbuf_printf(&sb, "%s=%s", name, value) < 0 || !(v[i] = strbuf_take(&sb))) {
                        strbuf_free(&sb);
                        strv_free(v);
                        return -ENOMEM;
                }
        }
        *ret = v;
        return 0;
}

static int parse_interactive(json_t *exec, const char *api_version, execcred_interactive_t *ret,
                             hg_error_t *err)
{
        const char *mode;
        int r = opt_string(exec, "interactiveMode", &mode, err);
        if (r < 0)
                return r;
        if (!mode || !mode[0]) {
                /* v1 makes the mode explicit; v1beta1 defaulted it. */
                if (strcmp(api_version, EXECCRED_API_V1) == 0)
                        return error_set(err, -EINVAL,
                                         "exec: interactiveMode must be set for %s (Never or "
                                         "IfAvailable)",
                                         api_version);
                *ret = EXECCRED_INTERACTIVE_IF_AVAILABLE;
                return 0;
        }
        if (strcmp(mode, "Never") == 0)
                *ret = EXECCRED_INTERACTIVE_NEVER;
        else if (strcmp(mode, "IfAvailable") == 0)
                *ret = EXECCRED_INTERACTIVE_IF_AVAILABLE;
        else if (strcmp(mode, "Always") == 0)
                return error_set(err, -EINVAL,
                                 "exec: interactiveMode Always needs a terminal for the plugin, "
                                 "and hangar never has one to give it: use a plugin or login that "
                                 "runs with Never or IfAvailable");
        else
                return error_set(err, -EINVAL,
                                 "exec: interactiveMode \"%.64s\" is not Never, IfAvailable or "
                                 "Always",
                                 mode);
        return 0;
}

int execcred_config_parse(json_t *exec, const char *dir, execcred_config_t *ret, hg_error_t *err)
{
        _cleanup_(config_clearp) execcred_config_t c = {0};
        if (!json_is_object(exec))
                return error_set(err, -EINVAL, "exec must be an object, not %s",
                                 jsonx_type_name(exec));
        const char *command, *api_version, *hint;
        int r = opt_string(exec, "command", &command, err);
        if (r == 0)
                r = opt_string(exec, "apiVersion", &api_version, err);
        if (r == 0)
                r = opt_string(exec, "installHint", &hint, err);
        if (r < 0)
                return r;
        if (!command || !command[0])
                return error_set(err, -EINVAL, "exec: command must be set");
        if (!api_version || !api_version[0])
                return error_set(err, -EINVAL, "exec: apiVersion must be set (%s)",
                                 EXECCRED_API_V1);
        if (strcmp(api_version, EXECCRED_V1ALPHA1) == 0)
                return error_set(err, -EINVAL,
                                 "exec: apiVersion %s is no longer supported (kubectl dropped it "
                                 "in 1.24): use %s",
                                 api_version, EXECCRED_API_V1);
        if (strcmp(api_version, EXECCRED_API_V1) != 0 &&
            strcmp(api_version, EXECCRED_API_V1BETA1) != 0)
                return error_set(err, -EINVAL, "exec: apiVersion \"%.80s\" is not %s or %s",
                                 api_version, EXECCRED_API_V1, EXECCRED_API_V1BETA1);
        r = parse_interactive(exec, api_version, &c.interactive, err);
        if (r < 0)
                return r;
        json_t *pci = json_object_get(exec, "provideClusterInfo");
        if (pci && !json_is_null(pci) && !json_is_boolean(pci))
                return error_set(err, -EINVAL, "exec: provideClusterInfo must be true or false");
        c.provide_cluster_info = json_is_true(pci);
        r = parse_args(exec, &c.args, err);
        if (r == 0)
                r = parse_env(exec, &c.env, err);
        if (r < 0)
                return r;
        /* A command with a '/' that is not absolute is relative to the
         * kubeconfig that names it; a bare name is looked up on PATH. */
        if (strchr(command, '/') && command[0] != '/' && dir) {
                strbuf_t sb = {0};
                if (strbuf_printf(&sb, "%s/%s", dir, command) < 0 ||
                    !(c.command = strbuf_take(&sb))) {
                        strbuf_free(&sb);
                        return -ENOMEM;
                }
        } else if (dup_string(command, &c.command) < 0) {
                return -ENOMEM;
        }
        if (dup_string(api_version, &c.api_version) < 0 ||
            dup_string(hint && hint[0] ? hint : NULL, &c.install_hint) < 0)
                return -ENOMEM;
        *ret = c;
        /* Read by the cleanup, which clang's analyzer does not model. */
        c = (execcred_config_t){0}; /* NOLINT(clang-analyzer-deadcode.DeadStores) */
        return 0;
}

/* ---- KUBERNETES_EXEC_INFO -------------------------------------------------- */

char *execcred_exec_info(const execcred_config_t *cfg, json_t *cluster)
{
        _cleanup_json_ json_t *spec = json_object();
        if (!spec || json_object_set_new(spec, "interactive", json_false()) < 0)
                return NULL;
        if (cfg->provide_cluster_info && cluster && json_object_set(spec, "cluster", cluster) < 0)
                return NULL;
        _cleanup_json_ json_t *j = json_object();
        if (!j || json_object_set_new(j, "apiVersion", json_string(cfg->api_version)) < 0 ||
            json_object_set_new(j, "kind", json_string(EXECCRED_KIND)) < 0 ||
            json_object_set(j, "spec", spec) < 0)
                return NULL;
        return jsonx_dumps(j, JSON_COMPACT);
}

/* ---- the ExecCredential a plugin prints ------------------------------------ */

void execcred_clear(execcred_t *c)
{
        if (!c)
                return;
        char *secrets[] = {c->token, c->cert_pem, c->key_pem};
        for (size_t i = 0; i < ARRAY_SIZE(secrets); i++) {
                if (secrets[i]) {
                        explicit_bzero(secrets[i], strlen(secrets[i]));
                        free(secrets[i]);
                }
        }
        *c = (execcred_t){0};
}

static void execcred_clearp(execcred_t *c)
{
        execcred_clear(c);
}

/* n decimal digits at s, into *ret. */
static bool digits(const char *s, int n, int *ret)
{
        int v = 0;
        for (int i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return false;
                v = v * 10 + (s[i] - '0');
        }
        *ret = v;
        return true;
}

static int days_in_month(int year, int month)
{
        static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        return month == 2 && leap ? 29 : days[month - 1];
}

int execcred_parse_time(const char *s, time_t *ret)
{
        /* YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM), as Go's RFC 3339
         * parser (metav1.Time) reads it. */
        int year, mon, day, hour, min, sec;
        if (!s || strlen(s) < 20 || !digits(s, 4, &year) || s[4] != '-' ||
            !digits(s + 5, 2, &mon) || s[7] != '-' || !digits(s + 8, 2, &day) || s[10] != 'T' ||
            !digits(s + 11, 2, &hour) || s[13] != ':' || !digits(s + 14, 2, &min) || s[16] != ':' ||
            !digits(s + 17, 2, &sec))
                return -EINVAL;
        if (mon < 1 || mon > 12 || day < 1 || day > days_in_month(year, mon) || hour > 23 ||
            min > 59 || sec > 59)
                return -EINVAL;
        const char *p = s + 19;
        if (*p == '.') {
                const char *f = ++p;
                while (*p >= '0' && *p <= '9')
                        p++;
                if (p == f)
                        return -EINVAL;
        }
        long offset = 0;
        if (*p == 'Z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                int oh, om;
                if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 ||
                    om > 59)
                        return -EINVAL;
                offset = (oh * 3600L + om * 60L) * (*p == '-' ? -1 : 1);
                p += 6;
        } else {
                return -EINVAL;
        }
        if (*p)
                return -EINVAL;
        struct tm tm = {.tm_year = year - 1900,
                        .tm_mon = mon - 1,
                        .tm_mday = day,
                        .tm_hour = hour,
                        .tm_min = min,
                        .tm_sec = sec};
        time_t t = timegm(&tm);
        if (t == (time_t)-1 && !(year == 1969 && mon == 12 && day == 31))
                return -EINVAL;
        *ret = t - offset;
        return 0;
}

/* A string member of status that counts only when not empty (client-go
 * tests each with == ""). Wrong type: -EINVAL with err set. */
static int status_string(json_t *status, const char *key, const char **ret, hg_error_t *err)
{
        int r = opt_string(status, key, ret, err);
        if (r < 0)
                return error_set(err, r, "status.%s must be a string", key);
        if (*ret && !(*ret)[0])
                *ret = NULL;
        return 0;
}

/* A bearer token goes into an HTTP header: no control characters, or a
 * plugin could add headers of its own. */
static bool header_safe(const char *s)
{
        for (const unsigned char *p = (const unsigned char *)s; *p; p++)
                if (*p < 0x20 || *p == 0x7f)
                        return false;
        return true;
}

int execcred_parse(const char *buf, size_t len, const char *api_version, time_t now,
                   execcred_t *ret, hg_error_t *err)
{
        if (len == 0)
                return error_set(err, -EINVAL, "printed nothing on stdout");
        _cleanup_json_ json_t *j = NULL;
        int r = jsonx_load(buf, len, JSONX_MAX_DEPTH, &j, err);
        if (r == -ENOMEM) /* not the plugin's fault: no "bad JSON" */
                return error_set(err, r, "out of memory reading its ExecCredential");
        if (r < 0)
                return error_prefix(err, "printed bad JSON, not an ExecCredential: ");
        if (!json_is_object(j))
                return error_set(err, -EINVAL, "printed %s, not an ExecCredential object",
                                 jsonx_type_name(j));
        const char *got_version, *kind;
        if (jsonx_string(j, "apiVersion", &got_version) < 0)
                return error_set(err, -EINVAL, "the ExecCredential has no apiVersion (want %s)",
                                 api_version);
        if (strcmp(got_version, api_version) != 0)
                return error_set(err, -EINVAL,
                                 "the ExecCredential is apiVersion \"%.80s\", but the kubeconfig "
                                 "asks for %s",
                                 got_version, api_version);
        if (jsonx_string(j, "kind", &kind) < 0)
                kind = "";
        if (strcmp(kind, EXECCRED_KIND) != 0)
                return error_set(err, -EINVAL, "the answer is kind \"%.64s\", not %s", kind,
                                 EXECCRED_KIND);
        json_t *status = NULL;
        r = jsonx_member(j, "status", JSON_OBJECT, &status);
        if (r < 0)
                return error_set(err, -EINVAL,
                                 r == -EINVAL ? "the ExecCredential's status is not an object"
                                              : "the ExecCredential has no status");
        const char *token, *cert, *key, *expiry;
        r = status_string(status, "token", &token, err);
        if (r == 0)
                r = status_string(status, "clientCertificateData", &cert, err);
        if (r == 0)
                r = status_string(status, "clientKeyData", &key, err);
        if (r == 0)
                r = status_string(status, "expirationTimestamp", &expiry, err);
        if (r < 0)
                return r;
        if (!token && !cert && !key)
                return error_set(err, -EINVAL,
                                 "the ExecCredential's status has no token and no client "
                                 "certificate");
        if (!cert != !key)
                return error_set(err, -EINVAL, "the ExecCredential's status has %s without %s",
                                 cert ? "clientCertificateData" : "clientKeyData",
                                 cert ? "clientKeyData" : "clientCertificateData");
        if (token && !header_safe(token))
                return error_set(err, -EINVAL, "the token has control characters");
        time_t exp = 0;
        if (expiry) {
                if (execcred_parse_time(expiry, &exp) < 0)
                        return error_set(err, -EINVAL,
                                         "status.expirationTimestamp \"%.64s\" is not an RFC 3339 "
                                         "time",
                                         expiry);
                if (exp <= now) {
                        struct tm tm;
                        char at[32] = "?";
                        time_t t = now;
                        if (gmtime_r(&t, &tm))
                                (void)strftime(at, sizeof(at), "%Y-%m-%dT%H:%M:%SZ", &tm);
                        return error_set(err, -EKEYEXPIRED,
                                         "the credential expired at %.64s (now %s): the plugin "
                                         "gave a stale credential",
                                         expiry, at);
                }
        }
        _cleanup_(execcred_clearp) execcred_t c = {.expiry = exp};
        if (dup_string(token, &c.token) < 0 || dup_string(cert, &c.cert_pem) < 0 ||
            dup_string(key, &c.key_pem) < 0)
                return -ENOMEM;
        *ret = c;
        c = (execcred_t){0}; /* NOLINT(clang-analyzer-deadcode.DeadStores): the cleanup reads it */
        return 0;
}

/* ---- running the plugin ---------------------------------------------------- */

/* A plugin's stderr for a message: control characters and runs of spaces as
 * one space, trimmed, at most max bytes (whole UTF-8 characters). */
static void clean_excerpt(const char *in, size_t len, char *out, size_t max)
{
        size_t o = 0;
        bool space = true; /* drops leading spaces */
        for (size_t i = 0; i < len && o + 1 < max; i++) {
                unsigned char ch = (unsigned char)in[i];
                if (ch < 0x20 || ch == 0x7f || ch == ' ') {
                        if (!space)
                                out[o++] = ' ';
                        space = true;
                        continue;
                }
                out[o++] = (char)ch;
                space = false;
        }
        while (o > 0 && out[o - 1] == ' ')
                o--;
        out[o] = '\0';
        utf8_trim_incomplete(out);
}

static bool is_executable_file(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Where the command is: as written when it has a '/', else the first
 * executable regular file of that name in an absolute PATH directory (Go's
 * exec.LookPath refuses results relative to the working directory too). */
static int find_command(const execcred_config_t *cfg, char **ret, hg_error_t *err)
{
        char hint[200] = "";
        if (cfg->install_hint)
                clean_excerpt(cfg->install_hint, strlen(cfg->install_hint), hint, sizeof(hint));
        if (strchr(cfg->command, '/')) {
                struct stat st;
                if (stat(cfg->command, &st) < 0)
                        return error_set(err, -ENOENT, "exec plugin %.200s: %s%s%s", cfg->command,
                                         strerror(errno), hint[0] ? ": " : "", hint);
                if (!is_executable_file(cfg->command))
                        return error_set(err, -EACCES, "exec plugin %.200s: not an executable file",
                                         cfg->command);
                *ret = strdup(cfg->command);
                return *ret ? 0 : -ENOMEM;
        }
        const char *path = getenv("PATH");
        if (!path || !path[0])
                path = "/bin:/usr/bin";
        for (const char *p = path; *p;) {
                size_t n = strcspn(p, ":");
                if (n > 0 && p[0] == '/') {
                        strbuf_t sb = {0};
                        if (strbuf_printf(&sb, "%.*s/%s", (int)n, p, cfg->command) < 0)
                                return -ENOMEM;
                        if (is_executable_file(sb.data)) {
                                *ret = strbuf_take(&sb);
                                return *ret ? 0 : -ENOMEM;
                        }
                        strbuf_free(&sb);
                }
                p += n + (p[n] == ':');
        }
        return error_set(err, -ENOENT, "exec plugin %.200s not found on PATH%s%s", cfg->command,
                         hint[0] ? ": " : "", hint);
}

/* NAME of a NAME=VALUE entry equals the name of entry e. */
static bool same_name(const char *a, const char *e)
{
        size_t n = strcspn(e, "=");
        return strncmp(a, e, n) == 0 && a[n] == '=';
}

/* The plugin's environment: ours, then the stanza's env (the later of two
 * entries with one name wins, as os/exec keeps the last), then
 * KUBERNETES_EXEC_INFO. The strings are borrowed but the last, which goes
 * to *ret_info. */
static int build_env(const execcred_config_t *cfg, const char *exec_info, char ***ret,
                     char **ret_info)
{
        size_t n_env = 0, n_cfg = 0;
        while (environ && environ[n_env])
                n_env++;
        while (cfg->env && cfg->env[n_cfg])
                n_cfg++;
        _cleanup_free_ char **v = calloc(n_env + n_cfg + 2, sizeof(*v));
        strbuf_t info = {0};
        if (!v || strbuf_printf(&info, "%s=%s", EXECCRED_ENV_INFO, exec_info) < 0)
                return -ENOMEM;
        size_t o = 0;
        for (size_t i = 0; i < n_env; i++) {
                bool replaced = same_name(environ[i], info.data);
                for (size_t k = 0; !replaced && k < n_cfg; k++)
                        replaced = same_name(environ[i], cfg->env[k]);
                if (!replaced && strchr(environ[i], '='))
                        v[o++] = environ[i];
        }
        for (size_t i = 0; i < n_cfg; i++) {
                bool later = same_name(cfg->env[i], info.data);
                for (size_t k = i + 1; !later && k < n_cfg; k++)
                        later = same_name(cfg->env[i], cfg->env[k]);
                if (!later)
                        v[o++] = cfg->env[i];
        }
        if (!(*ret_info = strbuf_take(&info)))
                return -ENOMEM;
        v[o++] = *ret_info;
        *ret = TAKE_PTR(v);
        return 0;
}

static int move_fd(int fd, int target)
{
        if (fd == target)
                return fcntl(fd, F_SETFD, 0);
        return dup2(fd, target);
}

/* In the child, async-signal-safe only: its own process group (a timeout
 * kills what it started too), death with us, clean signals, stdio, no other
 * descriptor, exec. */
static _Noreturn void child_exec(const char *path, char **argv, char **envp, pid_t parent,
                                 int in_fd, int out_fd, int err_fd)
{
        child_reset(parent);
        /* A descriptor sitting on another's stdio number (we ran with 0, 1 or
         * 2 closed) first goes above 2, so no dup2 below overwrites it. */
        int fds[3] = {in_fd, out_fd, err_fd};
        for (int t = 0; t < 3; t++) {
                if (fds[t] < 3 && fds[t] != t) {
                        int moved = fcntl(fds[t], F_DUPFD_CLOEXEC, 3);
                        if (moved < 0)
                                _exit(127);
                        fds[t] = moved;
                }
        }
        if (move_fd(fds[0], 0) < 0 || move_fd(fds[1], 1) < 0 || move_fd(fds[2], 2) < 0)
                _exit(127);
        if (close_range(3, ~0u, 0) < 0) {
                long max = sysconf(_SC_OPEN_MAX);
                for (long fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
                        (void)close((int)fd);
        }
        execve(path, argv, envp);
        static const char msg[] = "hangar: cannot execute the exec plugin\n";
        (void)!write(2, msg, sizeof(msg) - 1);
        _exit(127);
}

static long long now_ms(void)
{
        struct timespec ts;
        (void)clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

typedef struct collected {
        strbuf_t out;
        char err[EXECCRED_STDERR_KEEP];
        size_t err_len;
        bool timed_out, too_big;
        int status;
} collected_t;

/* Reads the child's stdout (bounded) and stderr (the head kept) until both
 * close, then reaps it; past the deadline or the bound it is killed. */
static int collect(pid_t pid, int out_fd, int err_fd, long long deadline, collected_t *c)
{
        struct pollfd p[2] = {{.fd = out_fd, .events = POLLIN}, {.fd = err_fd, .events = POLLIN}};
        int r = 0;
        while ((p[0].fd >= 0 || p[1].fd >= 0) && !c->too_big) {
                long long left = deadline - now_ms();
                if (left <= 0) {
                        c->timed_out = true;
                        break;
                }
                int n = poll(p, 2, (int)(left > 1000000 ? 1000000 : left));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = -errno;
                        break;
                }
                for (int i = 0; i < 2; i++) {
                        if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                                continue;
                        char buf[16384];
                        ssize_t got = read(p[i].fd, buf, sizeof(buf));
                        if (got < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (got <= 0) {
                                p[i].fd = -1; /* closed by the caller */
                                continue;
                        }
                        if (i == 0) {
                                if (c->out.len + (size_t)got > EXECCRED_MAX_OUTPUT) {
                                        c->too_big = true;
                                        break;
                                }
                                if (strbuf_append(&c->out, buf, (size_t)got) < 0) {
                                        r = -ENOMEM;
                                        c->too_big = true;
                                        break;
                                }
                        } else {
                                size_t keep = sizeof(c->err) - c->err_len;
                                keep = (size_t)got < keep ? (size_t)got : keep;
                                memcpy(c->err + c->err_len, buf, keep);
                                c->err_len += keep;
                        }
                        explicit_bzero(buf, sizeof(buf));
                }
        }
        if (c->timed_out || c->too_big || r < 0) {
                (void)kill(-pid, SIGKILL);
                (void)kill(pid, SIGKILL);
        }
        /* Both closed: it is exiting (or left a child holding them, which
         * the deadline catches). */
        for (;;) {
                pid_t w = waitpid(pid, &c->status, WNOHANG);
                if (w == pid)
                        break;
                if (w < 0 && errno != EINTR) {
                        if (r == 0)
                                r = -errno;
                        break;
                }
                if (w == 0 && now_ms() >= deadline && !c->timed_out) {
                        c->timed_out = true;
                        (void)kill(-pid, SIGKILL);
                        (void)kill(pid, SIGKILL);
                }
                (void)poll(NULL, 0, 10);
        }
        return r;
}

int execcred_run(const execcred_config_t *cfg, const char *exec_info, int timeout_ms,
                 execcred_t *ret, hg_error_t *err)
{
        _cleanup_free_ char *path = NULL;
        int r = find_command(cfg, &path, err);
        if (r < 0)
                return r;
        size_t n_args = 0;
        while (cfg->args && cfg->args[n_args])
                n_args++;
        _cleanup_free_ char **argv = calloc(n_args + 2, sizeof(*argv));
        if (!argv)
                return -ENOMEM;
        argv[0] = cfg->command;
        for (size_t i = 0; i < n_args; i++)
                argv[i + 1] = cfg->args[i];
        _cleanup_free_ char **envp = NULL;
        _cleanup_free_ char *info = NULL;
        if (build_env(cfg, exec_info, &envp, &info) < 0)
                return -ENOMEM;

        _cleanup_close_ int in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int out_p[2] = {-1, -1}, err_p[2] = {-1, -1};
        if (in_fd < 0 || pipe2(out_p, O_CLOEXEC) < 0)
                return error_set(err, -errno, "exec plugin %.200s: %s", cfg->command,
                                 strerror(errno));
        _cleanup_close_ int out_r = out_p[0], out_w = out_p[1];
        if (pipe2(err_p, O_CLOEXEC) < 0)
                return error_set(err, -errno, "exec plugin %.200s: %s", cfg->command,
                                 strerror(errno));
        _cleanup_close_ int err_r = err_p[0], err_w = err_p[1];

        pid_t parent;
        long long deadline = now_ms() + timeout_ms;
        pid_t pid = fork_blocked(&parent);
        if (pid == 0)
                child_exec(path, argv, envp, parent, in_fd, out_w, err_w);
        if (pid < 0)
                return error_set(err, -errno, "exec plugin %.200s: fork: %s", cfg->command,
                                 strerror(errno));
        (void)setpgid(pid, pid);
        (void)close(TAKE_FD(out_w));
        (void)close(TAKE_FD(err_w));
        (void)close(TAKE_FD(in_fd));

        collected_t c = {0};
        r = collect(pid, out_r, err_r, deadline, &c);
        char excerpt[320];
        clean_excerpt(c.err, c.err_len, excerpt, sizeof(excerpt));
        if (c.timed_out)
                r = error_set(err, -ETIMEDOUT,
                              "exec plugin %.200s did not answer within %.1f s (killed)%s%s",
                              cfg->command, timeout_ms / 1000.0, excerpt[0] ? ": " : "", excerpt);
        else if (c.too_big)
                r = error_set(err, r < 0 ? r : -EFBIG,
                              "exec plugin %.200s printed more than %d bytes", cfg->command,
                              EXECCRED_MAX_OUTPUT);
        else if (r < 0)
                r = error_set(err, r, "exec plugin %.200s: %s", cfg->command, strerror(-r));
        else if (WIFSIGNALED(c.status))
                r = error_set(err, -EIO, "exec plugin %.200s was killed by signal %d%s%s",
                              cfg->command, WTERMSIG(c.status), excerpt[0] ? ": " : "", excerpt);
        else if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0)
                r = error_set(err, -EIO, "exec plugin %.200s exited with status %d: %s",
                              cfg->command, WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1,
                              excerpt[0] ? excerpt : "(nothing on stderr)");
        else {
                r = execcred_parse(c.out.data ? c.out.data : "", c.out.len, cfg->api_version,
                                   time(NULL), ret, err);
                if (r < 0)
                        (void)error_prefix(err, "exec plugin %.200s: ", cfg->command);
        }
        if (c.out.data)
                explicit_bzero(c.out.data, c.out.len);
        strbuf_free(&c.out);
        explicit_bzero(c.err, sizeof(c.err));
        return r;
}
