#include "selfcert.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base64.h"
#include "carotation.h"
#include "certgen.h"
#include "cleanup.h"
#include "fileio.h"
#include "jsondump.h"
#include "jsonx.h"
#include "k8sclient.h"
#include "log.h"
#include "metrics.h"
#include "strbuf.h"
#include "strparse.h"

#define SECRET_KEYS_CA_CRT  "ca.crt"
#define SECRET_KEYS_CA_KEY  "ca.key"
#define SECRET_KEYS_TLS_CRT "tls.crt"
#define SECRET_KEYS_TLS_KEY "tls.key"
/* A CA rotation in progress: the next CA, staged (trusted, not yet signing),
 * and the previous one, still trusted for one overlap after the switch. */
#define SECRET_KEYS_NEXT_CRT       "ca-next.crt"
#define SECRET_KEYS_NEXT_KEY       "ca-next.key"
#define SECRET_KEYS_NEXT_SINCE     "ca-next.since"
#define SECRET_KEYS_PREVIOUS_CRT   "ca-previous.crt"
#define SECRET_KEYS_PREVIOUS_SINCE "ca-previous.since"
#define MAX_CONFLICT_ROUNDS        4
#define MAX_NAMES                  40

struct selfcert {
        const webhook_settings_t *cfg;
        k8s_client_t *k8s;
        char namespace[64];
        /* Sized for the longest names Kubernetes allows (63 + 253 + the rest). */
        char secret_path[384];
        char webhook_path[384];
        char validating_path[384]; /* "" when there is none to patch */
        /* The certificate's names: Service names, then tls.dnsNames. */
        char service_names[4][320];
        const char *dns[MAX_NAMES];
        const char *ips[MAX_NAMES];
        certgen_request_t req;
};

typedef struct secret_pems {
        ca_set_t cas;
        certgen_pem_t leaf;
        char *resource_version;
} secret_pems_t;

static void secret_pems_free(secret_pems_t *s)
{
        ca_set_free(&s->cas);
        certgen_pem_free(&s->leaf);
        free(s->resource_version);
        memset(s, 0, sizeof(*s));
}

void selfcert_free(selfcert_t *sc)
{
        if (!sc)
                return;
        k8s_client_free(sc->k8s);
        free(sc);
}

int selfcert_new(const webhook_settings_t *cfg, selfcert_t **ret, hg_error_t *err)
{
        selfcert_t *sc = calloc(1, sizeof(*sc));
        if (!sc)
                return -ENOMEM;
        sc->cfg = cfg;
        int r = k8s_client_new(cfg->kubeconfig, &sc->k8s, err);
        if (r < 0) {
                free(sc);
                return r;
        }
        /* The Secret lives in tls.secretNamespace, else the pod's namespace
         * (POD_NAMESPACE from the downward API, or the client's). */
        const char *ns =
            cfg->tls_secret_namespace[0] ? cfg->tls_secret_namespace : getenv("POD_NAMESPACE");
        if (!ns || !ns[0])
                ns = k8s_client_namespace(sc->k8s);
        if (strlen(ns) >= sizeof(sc->namespace)) {
                selfcert_free(sc);
                return error_set(err, -ENAMETOOLONG, "namespace '%.64s...' is too long", ns);
        }
        (void)snprintf(sc->namespace, sizeof(sc->namespace), "%s", ns);
        int w = snprintf(sc->secret_path, sizeof(sc->secret_path),
                         "/api/v1/namespaces/%s/secrets/%s", sc->namespace, cfg->tls_secret_name);
        int w2 = snprintf(sc->webhook_path, sizeof(sc->webhook_path),
                          "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/%s",
                          cfg->tls_webhook_config);
        int w3 =
            snprintf(sc->validating_path, sizeof(sc->validating_path),
                     "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/%s",
                     cfg->tls_validating_config);
        if (w < 0 || (size_t)w >= sizeof(sc->secret_path) || w2 < 0 ||
            (size_t)w2 >= sizeof(sc->webhook_path) || w3 < 0 ||
            (size_t)w3 >= sizeof(sc->validating_path)) {
                selfcert_free(sc);
                return error_set(err, -ENAMETOOLONG,
                                 "tls.secretName or tls.webhookConfigName "
                                 "is too long");
        }
        if (!cfg->tls_webhook_config[0])
                sc->webhook_path[0] = '\0'; /* nothing to patch */
        if (!cfg->tls_validating_config[0])
                sc->validating_path[0] = '\0';
        size_t nd = 0;
        if (cfg->tls_service_name[0]) {
                static const char *const suffixes[] = {"", ".svc", ".svc.cluster.local"};
                (void)snprintf(sc->service_names[0], sizeof(sc->service_names[0]), "%s",
                               cfg->tls_service_name);
                for (size_t i = 0; i < ARRAY_SIZE(suffixes); i++)
                        (void)snprintf(sc->service_names[i + 1], sizeof(sc->service_names[i + 1]),
                                       "%s.%s%s", cfg->tls_service_name, sc->namespace,
                                       suffixes[i]);
                for (size_t i = 0; i < ARRAY_SIZE(sc->service_names); i++)
                        sc->dns[nd++] = sc->service_names[i];
        }
        for (size_t i = 0; i < cfg->tls_dns_names.n && nd + 1 < MAX_NAMES; i++)
                sc->dns[nd++] = cfg->tls_dns_names.items[i];
        for (size_t i = 0; i < cfg->tls_ip_addresses.n && i + 1 < MAX_NAMES; i++)
                sc->ips[i] = cfg->tls_ip_addresses.items[i];
        sc->req = (certgen_request_t){
            .common_name = nd ? sc->dns[0] : sc->ips[0],
            .dns_names = sc->dns,
            .ip_addresses = sc->ips,
            .days = cfg->tls_leaf_days,
        };
        *ret = sc;
        return 0;
}

static int secret_field(json_t *data, const char *key, char **ret, hg_error_t *err)
{
        const char *b64;
        if (jsonx_string(data, key, &b64) < 0)
                return error_set(err, -EINVAL, "the Secret has no %s: it is not hangar's", key);
        int r = base64_decode(b64, ret, NULL, err);
        return r < 0 ? error_prefix(err, "Secret key %s: ", key) : 0;
}

/* An optional key: *ret NULL when absent. */
static int secret_field_optional(json_t *data, const char *key, char **ret, hg_error_t *err)
{
        *ret = NULL;
        return json_object_get(data, key) ? secret_field(data, key, ret, err) : 0;
}

static int secret_time(json_t *data, const char *key, int64_t *ret, hg_error_t *err)
{
        _cleanup_free_ char *text = NULL;
        int r = secret_field(data, key, &text, err);
        if (r == 0 && parse_i64(text, ret) < 0)
                r = error_set(err, -EINVAL, "Secret key %s: not a time", key);
        return r;
}

/* The rotation's keys, which come in pairs: a half-written rotation is not
 * guessed at. */
static int decode_rotation(json_t *data, secret_pems_t *ret, hg_error_t *err)
{
        ca_set_t *c = &ret->cas;
        int r = secret_field_optional(data, SECRET_KEYS_NEXT_CRT, &c->next.cert, err);
        if (r == 0)
                r = secret_field_optional(data, SECRET_KEYS_NEXT_KEY, &c->next.key, err);
        if (r == 0 && !c->next.cert != !c->next.key)
                r = error_set(err, -EINVAL, "the Secret has only half of the next CA");
        if (r == 0 && c->next.cert)
                r = secret_time(data, SECRET_KEYS_NEXT_SINCE, &c->next_since, err);
        if (r == 0)
                r = secret_field_optional(data, SECRET_KEYS_PREVIOUS_CRT, &c->previous, err);
        if (r == 0 && c->previous)
                r = secret_time(data, SECRET_KEYS_PREVIOUS_SINCE, &c->previous_since, err);
        return r;
}

/* The Secret's PEMs and resourceVersion from a GET answer. */
static int decode_secret(json_t *secret, secret_pems_t *ret, hg_error_t *err)
{
        json_t *data = json_object_get(secret, "data");
        const char *rv;
        if (jsonx_string(json_object_get(secret, "metadata"), "resourceVersion", &rv) < 0)
                return error_set(err, -EINVAL, "the Secret has no resourceVersion");
        int r = secret_field(data, SECRET_KEYS_CA_CRT, &ret->cas.ca.cert, err);
        if (r == 0)
                r = secret_field(data, SECRET_KEYS_CA_KEY, &ret->cas.ca.key, err);
        if (r == 0)
                r = secret_field(data, SECRET_KEYS_TLS_CRT, &ret->leaf.cert, err);
        if (r == 0)
                r = secret_field(data, SECRET_KEYS_TLS_KEY, &ret->leaf.key, err);
        if (r == 0)
                r = decode_rotation(data, ret, err);
        if (r == 0 && !(ret->resource_version = strdup(rv)))
                r = -ENOMEM;
        return r;
}

static int add_data(json_t *data, const char *key, const char *text)
{
        _cleanup_free_ char *b64 = base64_encode(text, strlen(text));
        return b64 && json_object_set_new(data, key, json_string(b64)) == 0 ? 0 : -ENOMEM;
}

static int add_time(json_t *data, const char *key, int64_t t)
{
        char text[24];
        (void)snprintf(text, sizeof(text), "%lld", (long long)t);
        return add_data(data, key, text);
}

/* The Secret's data: the CA and the serving pair, and a rotation's keys
 * when one is under way. */
static int add_pems(json_t *data, const secret_pems_t *p)
{
        const ca_set_t *c = &p->cas;
        int r = add_data(data, SECRET_KEYS_CA_CRT, c->ca.cert);
        if (r == 0)
                r = add_data(data, SECRET_KEYS_CA_KEY, c->ca.key);
        if (r == 0)
                r = add_data(data, SECRET_KEYS_TLS_CRT, p->leaf.cert);
        if (r == 0)
                r = add_data(data, SECRET_KEYS_TLS_KEY, p->leaf.key);
        if (r == 0 && c->next.cert) {
                r = add_data(data, SECRET_KEYS_NEXT_CRT, c->next.cert);
                if (r == 0)
                        r = add_data(data, SECRET_KEYS_NEXT_KEY, c->next.key);
                if (r == 0)
                        r = add_time(data, SECRET_KEYS_NEXT_SINCE, c->next_since);
        }
        if (r == 0 && c->previous) {
                r = add_data(data, SECRET_KEYS_PREVIOUS_CRT, c->previous);
                if (r == 0)
                        r = add_time(data, SECRET_KEYS_PREVIOUS_SINCE, c->previous_since);
        }
        return r;
}

static json_t *secret_json(const selfcert_t *sc, const secret_pems_t *p)
{
        _cleanup_json_ json_t *s = json_pack(
            "{s:s, s:s, s:{s:s, s:s, s:{s:s}}, s:s, s:{}}", "apiVersion", "v1", "kind", "Secret",
            "metadata", "name", sc->cfg->tls_secret_name, "namespace", sc->namespace, "labels",
            "app.kubernetes.io/managed-by", "hangar-webhook", "type", "Opaque", "data");
        if (!s || add_pems(json_object_get(s, "data"), p) < 0)
                return NULL;
        if (p->resource_version &&
            json_object_set_new(json_object_get(s, "metadata"), "resourceVersion",
                                json_string(p->resource_version)) < 0)
                return NULL;
        return TAKE_PTR(s);
}

/* Sends the Secret (POST to create, PUT to update): 0 when stored, -EAGAIN on
 * a conflict (someone else got there first), <0 otherwise. */
static int store_secret(selfcert_t *sc, const secret_pems_t *p, bool create, hg_error_t *err)
{
        _cleanup_json_ json_t *s = secret_json(sc, p);
        _cleanup_free_ char *body = s ? jsondump(s) : NULL;
        if (!body)
                return -ENOMEM;
        char collection[192];
        (void)snprintf(collection, sizeof(collection), "/api/v1/namespaces/%s/secrets",
                       sc->namespace);
        long status;
        _cleanup_json_ json_t *answer = NULL;
        int r = k8s_request(sc->k8s, create ? "POST" : "PUT", create ? collection : sc->secret_path,
                            NULL, body, &status, &answer, err);
        explicit_bzero(body, strlen(body));
        if (r < 0)
                return r;
        if (status == 200 || status == 201)
                return 0;
        if (status == 409)
                return -EAGAIN;
        char buf[32];
        return error_set(err, -EIO, "%s Secret %s/%s: %s", create ? "creating" : "updating",
                         sc->namespace, sc->cfg->tls_secret_name,
                         k8s_status_message(answer, status, buf, sizeof(buf)));
}

/* Logs a rotation step (every step is worth an operator's eye). */
static void log_step(const selfcert_t *sc, ca_step_t step)
{
        static const char *const what[] = {
            [CA_STEP_STAGED] = "staging a new CA beside the expiring one",
            [CA_STEP_SWITCHED] = "switching to the new CA",
            [CA_STEP_RETIRED] = "retiring the previous CA",
            [CA_STEP_REPLACED] = "the CA had expired: replaced without an overlap",
        };
        if (step == CA_STEP_NONE)
                return;
        log_event(step == CA_STEP_REPLACED ? LOG_LEVEL_WARN : LOG_LEVEL_INFO, what[step],
                  json_pack("{s:s, s:s, s:I}", "namespace", sc->namespace, "secret",
                            sc->cfg->tls_secret_name, "overlapSeconds",
                            (json_int_t)settings_ca_overlap_seconds(sc->cfg)));
}

/* Reads the Secret (status 200 answer) and brings it up to date: the CA's
 * rotation, then the serving pair. *ret_dirty says whether it must be
 * written back. */
static int refresh_secret(selfcert_t *sc, json_t *answer, secret_pems_t *p, bool *ret_dirty,
                          hg_error_t *err)
{
        int64_t now = (int64_t)time(NULL);
        int64_t renew_at = now + (int64_t)sc->cfg->tls_renew_before_days * 86400;
        int r = decode_secret(answer, p, err);
        if (r == 0)
                r = certgen_check_ca(&p->cas.ca, err);
        if (r == 0 && p->cas.next.cert)
                r = certgen_check_ca(&p->cas.next, err);
        int step = r < 0 ? r : carotation_step(sc->cfg, &p->cas, now, err);
        if (step < 0)
                return error_prefix(err, "Secret %s/%s: ", sc->namespace, sc->cfg->tls_secret_name);
        log_step(sc, (ca_step_t)step);
        hg_error_t why = {0};
        r = certgen_leaf_current(&p->cas.ca, p->leaf.cert, &sc->req, renew_at, &why);
        if (r < 0) {
                *err = why;
                return r;
        }
        bool renew = r == 1;
        if (renew) {
                log_event(LOG_LEVEL_INFO, "renewing the serving certificate",
                          json_pack("{s:s}", "reason", why.message));
                certgen_pem_free(&p->leaf);
                r = certgen_serving(&p->cas.ca, &sc->req, &p->leaf, err);
                if (r < 0)
                        return r;
        }
        *ret_dirty = step != CA_STEP_NONE || renew;
        return 0;
}

/* Makes sure the Secret holds a CA and a current serving pair; returns them. */
static int ensure_secret(selfcert_t *sc, secret_pems_t *ret, hg_error_t *err)
{
        for (int round = 0; round < MAX_CONFLICT_ROUNDS; round++) {
                secret_pems_t p = {0};
                long status;
                _cleanup_json_ json_t *answer = NULL;
                int r =
                    k8s_request(sc->k8s, "GET", sc->secret_path, NULL, NULL, &status, &answer, err);
                if (r < 0)
                        return r;
                bool create = status == 404, dirty = true;
                if (create) {
                        r = certgen_ca("hangar-webhook CA", sc->cfg->tls_ca_days, &p.cas.ca, err);
                        if (r == 0)
                                r = certgen_serving(&p.cas.ca, &sc->req, &p.leaf, err);
                        if (r == 0)
                                log_event(LOG_LEVEL_INFO, "creating the certificate Secret",
                                          json_pack("{s:s, s:s}", "namespace", sc->namespace,
                                                    "secret", sc->cfg->tls_secret_name));
                } else if (status == 200) {
                        r = refresh_secret(sc, answer, &p, &dirty, err);
                } else {
                        char buf[32];
                        return error_set(err, -EIO, "reading Secret %s/%s: %s", sc->namespace,
                                         sc->cfg->tls_secret_name,
                                         k8s_status_message(answer, status, buf, sizeof(buf)));
                }
                if (r == 0 && dirty)
                        r = store_secret(sc, &p, create, err);
                if (r == 0) {
                        *ret = p;
                        return 0;
                }
                secret_pems_free(&p);
                if (r != -EAGAIN)
                        return r;
                /* Another replica created or renewed it first: use theirs. */
        }
        return error_set(err, -EAGAIN, "Secret %s/%s kept changing; trying again later",
                         sc->namespace, sc->cfg->tls_secret_name);
}

/* Writes path unless it already holds exactly data. 1 if written. */
static int write_if_changed(const char *path, const char *data, mode_t mode, hg_error_t *err)
{
        _cleanup_free_ char *have = NULL;
        size_t len;
        if (file_read_bounded(path, 1 << 20, &have, &len) == 0 && len == strlen(data) &&
            memcmp(have, data, len) == 0)
                return 0;
        int r = file_write_atomic(path, data, strlen(data), mode, 0);
        if (r < 0)
                return error_set(err, r, "cannot write %s: %s", path, strerror(-r));
        return 1;
}

/* Points every webhook of the configuration at path (kind, name: for
 * messages) at our CA, guarded by the configuration's resourceVersion:
 * -EAGAIN when another writer (the other replica) changed it in between. */
static int patch_ca_bundle_once(selfcert_t *sc, const char *path_of_config, const char *kind,
                                const char *name, const char *ca_pem, hg_error_t *err)
{
        long status;
        _cleanup_json_ json_t *mwc = NULL;
        int r = k8s_request(sc->k8s, "GET", path_of_config, NULL, NULL, &status, &mwc, err);
        if (r < 0)
                return r;
        char buf[32];
        if (status != 200)
                return error_set(err, -EIO, "reading %s %s: %s", kind, name,
                                 k8s_status_message(mwc, status, buf, sizeof(buf)));
        _cleanup_free_ char *bundle = base64_encode(ca_pem, strlen(ca_pem));
        const char *rv;
        if (!bundle)
                return -ENOMEM;
        if (jsonx_string(json_object_get(mwc, "metadata"), "resourceVersion", &rv) < 0)
                return error_set(err, -EINVAL, "the webhook configuration has no resourceVersion");
        _cleanup_json_ json_t *ops = json_pack("[{s:s, s:s, s:s}]", "op", "test", "path",
                                               "/metadata/resourceVersion", "value", rv);
        size_t i;
        json_t *w;
        json_array_foreach (json_object_get(mwc, "webhooks"), i, w) {
                const char *have = "";
                (void)jsonx_string(json_object_get(w, "clientConfig"), "caBundle", &have);
                if (strcmp(have, bundle) == 0)
                        continue;
                char path[64];
                (void)snprintf(path, sizeof(path), "/webhooks/%zu/clientConfig/caBundle", i);
                if (json_array_append_new(ops, json_pack("{s:s, s:s, s:s}", "op", "add", "path",
                                                         path, "value", bundle)) < 0)
                        return -ENOMEM;
        }
        if (json_array_size(ops) == 1)
                return 0; /* every webhook already trusts our CA */
        _cleanup_free_ char *body = jsondump(ops);
        _cleanup_json_ json_t *answer = NULL;
        r = k8s_request(sc->k8s, "PATCH", path_of_config, "application/json-patch+json", body,
                        &status, &answer, err);
        if (r < 0)
                return r;
        /* The resourceVersion test failed (422), or a conflict (409): read
         * again and redo it against what is there now. */
        if (status == 409 || status == 422)
                return error_set(err, -EAGAIN, "patching the caBundle of %s %s: %s", kind, name,
                                 k8s_status_message(answer, status, buf, sizeof(buf)));
        if (status != 200)
                return error_set(err, -EIO, "patching the caBundle of %s %s: %s", kind, name,
                                 k8s_status_message(answer, status, buf, sizeof(buf)));
        metrics_record_ca_bundle_update();
        log_event(LOG_LEVEL_INFO, "caBundle updated",
                  json_pack("{s:s, s:s, s:I}", "kind", kind, "webhookConfiguration", name,
                            "webhooks", (json_int_t)(json_array_size(ops) - 1)));
        return 0;
}

static int patch_ca_bundle(selfcert_t *sc, const char *path_of_config, const char *kind,
                           const char *name, const char *ca_pem, hg_error_t *err)
{
        int r = -EAGAIN;
        for (int round = 0; r == -EAGAIN && round < MAX_CONFLICT_ROUNDS; round++)
                r = patch_ca_bundle_once(sc, path_of_config, kind, name, ca_pem, err);
        return r;
}

int selfcert_sync(selfcert_t *sc, hg_error_t *err)
{
        secret_pems_t p = {0};
        int r = ensure_secret(sc, &p, err);
        if (r != 0) { /* 0 or -errno; anything else would be a failure too */
                metrics_record_ca_bundle(false, (int64_t)time(NULL));
                return r;
        }
        int64_t ca_not_after;
        if (certgen_not_after(p.cas.ca.cert, &ca_not_after) == 0)
                metrics_record_ca(ca_not_after);
        /* Key first: the store refuses a certificate whose key has not arrived. */
        int changed = write_if_changed(sc->cfg->key_file, p.leaf.key, 0600, err);
        int changed_cert =
            changed < 0 ? changed : write_if_changed(sc->cfg->cert_file, p.leaf.cert, 0644, err);
        r = changed < 0 ? changed : changed_cert;
        if (r >= 0 && (sc->webhook_path[0] || sc->validating_path[0])) {
                /* What the API server trusts: the signing CA, and during a
                 * rotation the next or the previous one. */
                _cleanup_free_ char *bundle = carotation_bundle(&p.cas);
                int pr = bundle ? 0 : -ENOMEM;
                if (pr == 0 && sc->webhook_path[0])
                        pr = patch_ca_bundle(sc, sc->webhook_path, "MutatingWebhookConfiguration",
                                             sc->cfg->tls_webhook_config, bundle, err);
                if (pr == 0 && sc->validating_path[0])
                        pr = patch_ca_bundle(sc, sc->validating_path,
                                             "ValidatingWebhookConfiguration",
                                             sc->cfg->tls_validating_config, bundle, err);
                if (pr < 0)
                        r = pr;
        }
        secret_pems_free(&p);
        metrics_record_ca_bundle(r >= 0, (int64_t)time(NULL));
        if (r < 0)
                return r;
        return changed || changed_cert ? 1 : 0;
}
