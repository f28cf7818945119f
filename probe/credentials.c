#include "credentials.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"
#include "fileio.h"
#include "k8sclient.h"
#include "k8sname.h"

extern char **environ;

#define MAX_VOLUME_ENTRIES 256 /* files looked at in one kubelet volume */

bool creds_looks_like_token(const char *s, size_t n)
{
        if (n < 8 || n > CREDS_TOKEN_MAX || strncmp(s, "eyJ", 3) != 0)
                return false;
        size_t dots = 0, seg = 0;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (c == '.') {
                        if (seg == 0)
                                return false;
                        dots++;
                        seg = 0;
                        continue;
                }
                bool b64url = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                              (c >= '0' && c <= '9') || c == '-' || c == '_';
                if (!b64url)
                        return false;
                seg++;
        }
        return dots == 2 && seg > 0;
}

/* A token being looked at: its value (wiped when done) and how to send it. */
typedef struct candidate {
        char *value;
        bool from_file; /* re-read from the source path per request */
        char ca[320];
} candidate_t;

typedef struct search {
        creds_observation_t *o;
        candidate_t c[CREDS_MAX_TOKENS];
} search_t;

static void wipe(char *s)
{
        if (s) {
                explicit_bzero(s, strlen(s));
                free(s);
        }
}

/* Trailing whitespace (a file written with a newline) is not the token's. */
static size_t trimmed(const char *s, size_t n)
{
        while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
                n--;
        return n;
}

static bool exists(const char *path)
{
        struct stat st;
        return stat(path, &st) == 0;
}

/* Adds a token (taking value over; NULL when it could not be read, with why
 * in unasked), unless the same value was already found elsewhere. */
static void add(search_t *s, const char *source, bool standard, char *value, bool from_file,
                const char *ca_dir, const char *unasked)
{
        creds_observation_t *o = s->o;
        for (size_t i = 0; value && i < o->ntokens; i++)
                if (s->c[i].value && strcmp(s->c[i].value, value) == 0) {
                        wipe(value);
                        return;
                }
        if (o->ntokens == CREDS_MAX_TOKENS) {
                (void)snprintf(
                    o->search_error, sizeof(o->search_error),
                    "more than %d tokens found; %s and any later ones were not asked about",
                    CREDS_MAX_TOKENS, source);
                wipe(value);
                return;
        }
        creds_token_t *t = &o->tokens[o->ntokens];
        candidate_t *c = &s->c[o->ntokens];
        o->ntokens++;
        (void)snprintf(t->source, sizeof(t->source), "%s", source);
        t->standard = standard;
        c->value = value;
        c->from_file = from_file;
        /* The CA beside the token (a projected volume carries ca.crt), else
         * the service account's. */
        char ca[320];
        (void)snprintf(ca, sizeof(ca), "%s/ca.crt", ca_dir ? ca_dir : K8S_SA_DIR);
        if (ca_dir && !exists(ca))
                (void)snprintf(ca, sizeof(ca), "%s/ca.crt", K8S_SA_DIR);
        (void)snprintf(c->ca, sizeof(c->ca), "%s", ca);
        (void)snprintf(t->ca_source, sizeof(t->ca_source), "%s", ca);
        if (unasked)
                (void)snprintf(t->unasked, sizeof(t->unasked), "%s", unasked);
}

/* Reads path if it is a regular file of token size: 0 and *ret, -ENOENT if
 * absent, -EFBIG/-EINVAL when it is not a token's, else -errno. */
static int read_small_file(const char *path, char **ret, size_t *ret_len)
{
        /* O_NONBLOCK: a fifo planted where a file was is not waited on. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        if (fd < 0)
                return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if (st.st_size > CREDS_TOKEN_MAX)
                return -EFBIG;
        return fd_read_bounded(fd, CREDS_TOKEN_MAX, ret, ret_len);
}

/* A file that may hold a token: added when it looks like one. */
static void consider_file(search_t *s, const char *path, const char *ca_dir)
{
        char *text = NULL;
        size_t len = 0;
        /* !text: read_small_file sets it whenever it returns >= 0, but an
         * analyzer cannot tell that its -errno is negative. */
        if (read_small_file(path, &text, &len) < 0 || !text)
                return; /* not a readable token-sized file: not a token */
        len = trimmed(text, len);
        text[len] = '\0';
        if (!creds_looks_like_token(text, len)) {
                wipe(text);
                return;
        }
        add(s, path, false, text, true, ca_dir, NULL);
}

static void search_standard(search_t *s)
{
        const char *path = K8S_SA_DIR "/token";
        char *text = NULL;
        size_t len = 0;
        int r = read_small_file(path, &text, &len);
        if (r == -ENOENT || r == -ENOTDIR)
                return;
        s->o->standard_mounted = true;
        if (r >= 0 && !text) /* cannot happen (see consider_file); for the analyzer */
                r = -EIO;
        if (r < 0) {
                char why[192];
                (void)snprintf(why, sizeof(why), "cannot read %s: %s", path, strerror(-r));
                add(s, path, true, NULL, true, K8S_SA_DIR, why);
                return;
        }
        text[trimmed(text, len)] = '\0';
        /* Whatever its shape, the file at the standard path is the pod's token. */
        add(s, path, true, text, true, K8S_SA_DIR, NULL);
}

static bool under(const char *path, const char *dir)
{
        size_t n = strlen(dir);
        return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Every kubelet-written volume (its directory holds "..data") and every
 * file mounted on its own. */
static void search_mounts(search_t *s, const mount_table_t *mounts)
{
        for (size_t i = 0; i < mounts->n; i++) {
                const char *mp = mounts->entries[i].mount_point;
                if (strcmp(mp, "/") == 0 || under(mp, "/proc") || under(mp, "/sys") ||
                    under(mp, "/dev"))
                        continue;
                struct stat st;
                if (stat(mp, &st) < 0)
                        continue; /* covered by a later mount, or gone */
                if (S_ISREG(st.st_mode)) {
                        consider_file(s, mp, NULL);
                        continue;
                }
                char data[4200];
                (void)snprintf(data, sizeof(data), "%s/..data", mp);
                struct stat dst;
                if (!S_ISDIR(st.st_mode) || lstat(data, &dst) < 0)
                        continue;
                s->o->volumes_searched++;
                DIR *d = opendir(mp);
                if (!d) {
                        (void)snprintf(s->o->search_error, sizeof(s->o->search_error),
                                       "cannot list the volume at %s: %s", mp, strerror(errno));
                        continue;
                }
                struct dirent *e;
                size_t seen = 0;
                while ((e = readdir(d)) != NULL) {
                        if (e->d_name[0] == '.')
                                continue; /* ..data and the timestamped directories */
                        if (++seen > MAX_VOLUME_ENTRIES) {
                                (void)snprintf(s->o->search_error, sizeof(s->o->search_error),
                                               "the volume at %s has more than %d files", mp,
                                               MAX_VOLUME_ENTRIES);
                                break;
                        }
                        char path[4400];
                        (void)snprintf(path, sizeof(path), "%s/%s", mp, e->d_name);
                        consider_file(s, path, mp);
                }
                closedir(d);
        }
}

static void search_environment(search_t *s)
{
        for (char **e = environ; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                if (!eq || !creds_looks_like_token(eq + 1, strlen(eq + 1)))
                        continue;
                char source[320];
                (void)snprintf(source, sizeof(source), "environment variable %.*s", (int)(eq - *e),
                               *e);
                char *value = strdup(eq + 1);
                if (!value) {
                        (void)snprintf(s->o->search_error, sizeof(s->o->search_error),
                                       "out of memory");
                        return;
                }
                add(s, source, false, value, false, NULL, NULL);
        }
}

/* An answer that says "not now" (priority and fairness, an overloaded or
 * restarting server): asked again, twice at most, a moment apart. */
static bool transient(long status)
{
        return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

static bool send(k8s_client_t *k, const char *path, char *body, creds_reply_t *reply)
{
        hg_error_t err = {0};
        int r = body ? 0 : -ENOMEM;
        for (int attempt = 0; r == 0 && attempt < 3; attempt++) {
                if (attempt > 0) {
                        json_decref(reply->body);
                        reply->body = NULL;
                        (void)usleep(250 * 1000);
                }
                r = k8s_request(k, "POST", path, NULL, body, &reply->status, &reply->body, &err);
                if (r == 0 && !transient(reply->status))
                        break;
        }
        free(body);
        if (r < 0) {
                reply->transport_failed = true;
                (void)snprintf(reply->error, sizeof(reply->error), "%s",
                               err.message[0] ? err.message : strerror(-r));
                return false;
        }
        return true;
}

/* Asks the API server who the token is, then each question, in the pod's
 * namespace. Stops at the first request without an answer (an unreachable
 * server would otherwise cost a timeout per question). */
static void ask(creds_token_t *t, const candidate_t *c)
{
        if (t->unasked[0])
                return;
        if (!exists(c->ca)) {
                (void)snprintf(t->unasked, sizeof(t->unasked),
                               "no CA bundle to verify the API server with (%s)", c->ca);
                return;
        }
        k8s_client_t *k = NULL;
        hg_error_t err = {0};
        if (k8s_client_new_in_cluster(c->from_file ? t->source : NULL,
                                      c->from_file ? NULL : c->value, c->ca, &k, &err) < 0) {
                (void)snprintf(t->unasked, sizeof(t->unasked), "%s", err.message);
                return;
        }
        t->reviewed = true;
        rbac_identity_t id;
        char host[256] = "";
        if (!send(k, RBAC_SSR_PATH, rbac_ssr_body(), &t->review) ||
            rbac_parse_ssr(t->review.status, t->review.body, &id, NULL) < 0)
                goto out;
        if (k8s_client_namespace_known(k)) {
                (void)snprintf(t->namespace, sizeof(t->namespace), "%s", k8s_client_namespace(k));
                (void)snprintf(t->namespace_source, sizeof(t->namespace_source), "%s",
                               K8S_SA_DIR "/namespace");
        } else if (id.sa_namespace[0]) {
                (void)snprintf(t->namespace, sizeof(t->namespace), "%s", id.sa_namespace);
                (void)snprintf(t->namespace_source, sizeof(t->namespace_source),
                               "the token's service account");
        } else {
                (void)snprintf(t->unasked, sizeof(t->unasked),
                               "the pod's namespace is unknown (no %s/namespace, and the token "
                               "is not a service account's)",
                               K8S_SA_DIR);
                goto out;
        }
        /* The pod's name: the one the token is bound to, else the hostname
         * (the kubelet's default for it, unless spec.hostname says otherwise;
         * a wrong guess only asks about a name no rule grants). */
        if (id.pod_name[0]) {
                (void)snprintf(t->pod, sizeof(t->pod), "%s", id.pod_name);
                (void)snprintf(t->pod_source, sizeof(t->pod_source), "the token's bound pod");
        } else if (gethostname(host, sizeof(host) - 1) == 0 && k8s_is_dns1123_subdomain(host)) {
                (void)snprintf(t->pod, sizeof(t->pod), "%s", host);
                (void)snprintf(t->pod_source, sizeof(t->pod_source), "the hostname");
        }
        t->nqueries = rbac_queries(t->pod[0] != '\0', t->queries);
        for (size_t i = 0; i < t->nqueries; i++) {
                t->nasked = i + 1;
                if (!send(k, RBAC_SSAR_PATH, rbac_ssar_body(&t->queries[i], t->namespace, t->pod),
                          &t->replies[i]))
                        break;
        }
out:
        k8s_client_free(k);
}

void creds_observe(const mount_table_t *mounts, creds_observation_t *o)
{
        memset(o, 0, sizeof(*o));
        o->observed = true;
        search_t s = {.o = o};
        search_standard(&s);
        if (mounts)
                search_mounts(&s, mounts);
        else
                (void)snprintf(o->search_error, sizeof(o->search_error),
                               "the mount table is unreadable: volumes not searched");
        search_environment(&s);
        for (size_t i = 0; i < o->ntokens; i++) {
                ask(&o->tokens[i], &s.c[i]);
                wipe(s.c[i].value);
        }
}

void creds_free(creds_observation_t *o)
{
        for (size_t i = 0; i < o->ntokens; i++) {
                creds_token_t *t = &o->tokens[i];
                json_decref(t->review.body);
                t->review.body = NULL;
                for (size_t q = 0; q < RBAC_MAX_QUERIES; q++) { /* not only the asked */
                        json_decref(t->replies[q].body);
                        t->replies[q].body = NULL;
                }
        }
}
