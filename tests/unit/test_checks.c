/* probe/checks.c: the judgements, on made-up observations (the native and
 * pod suites feed it real ones): a container in shape passes; each fault
 * fails the check that owns it; a required fact that could not be read is
 * inconclusive, never a pass; informative checks never decide. The agent's
 * credentials are judged on made-up API answers (tests/probe feeds real ones). */
#include <linux/capability.h>

#include "checks.h"
#include "cleanup.h"
#include "k8sclient.h"
#include "rbac.h"
#include "unit.h"

static hg_config_t cfg;
static observation_t o;

#define FULL_MASK UINT64_C(0x1ffffffffff) /* cap_last_cap 40 */

static void known(fact_u64_t *f, uint64_t v)
{
        f->known = true;
        f->value = v;
}

static void unknown(fact_u64_t *f, const char *why)
{
        f->known = false;
        (void)snprintf(f->error, sizeof(f->error), "%s", why);
}

static void set_mounts(const char *text)
{
        mountinfo_free(&o.mounts);
        hg_error_t err = {0};
        ck_assert_int_eq(mountinfo_parse(text, strlen(text), &o.mounts, &err), 0);
        o.mounts_known = true;
}

static void in_shape(uint32_t uid)
{
        mountinfo_free(&o.mounts);
        creds_free(&o.creds);
        memset(&o, 0, sizeof(o));
        for (int i = 0; i < 3; i++)
                o.uid[i] = uid, o.gid[i] = uid;
        for (int s = 0; s < CAP_SET_COUNT; s++)
                known(&o.cap[s], 0);
        known(&o.cap_full, FULL_MASK);
        known(&o.no_new_privs, 1);
        known(&o.dumpable, 1);
        known(&o.seccomp, 0);
        known(&o.ptrace_scope, 1);
        known(&o.root_statvfs_ro, 1);
        known(&o.root_write_errno, uid == 1001 ? EROFS : 0);
        o.procs_known = true;
        (void)snprintf(o.uname_release, sizeof(o.uname_release), "6.1.0");
}

static void driver_in_shape(void)
{
        in_shape(1001);
        set_mounts("1 0 8:1 / / ro - ext4 /dev/sda1 rw\n"
                   "2 1 0:5 / /var/lib/hangar rw - ext4 /dev/sda1 rw\n"
                   "3 1 0:6 / /var/lib/hangar-ctl rw - tmpfs tmpfs rw,size=65536k\n");
}

static void agent_in_shape(void)
{
        in_shape(1000);
        set_mounts("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                   "2 1 0:5 / /var/lib/hangar ro - ext4 /dev/sda1 rw\n");
        o.creds.observed = true; /* looked for tokens, found none */
}

static void setup(void)
{
        ck_assert_int_eq(config_init_defaults(&cfg), 0);
        memset(&o, 0, sizeof(o));
}

static void teardown(void)
{
        mountinfo_free(&o.mounts);
        creds_free(&o.creds);
        config_free(&cfg);
}

/* Runs the checks; returns the result and the named check's status. */
static report_result_t judge(shape_role_t role, const char *name, char status[16])
{
        report_result_t result;
        _unit_json_ json_t *report = checks_run(&cfg, role, &o, &result);
        ck_assert_ptr_nonnull(report);
        status[0] = '\0';
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(report, "checks"), i, c) {
                if (name && strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
                        (void)snprintf(status, 16, "%s",
                                       json_string_value(json_object_get(c, "status")));
        }
        if (name)
                ck_assert_msg(status[0], "no check named %s", name);
        return result;
}

/* Whether the named check is required in role's report. */
static bool required(shape_role_t role, const char *name)
{
        report_result_t result;
        _unit_json_ json_t *report = checks_run(&cfg, role, &o, &result);
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(report, "checks"), i, c) {
                if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
                        return json_is_true(json_object_get(c, "required"));
        }
        ck_abort_msg("no check named %s", name);
        return false;
}

#define ck_judged(role, name, want_result, want_status)                                       \
        do {                                                                                  \
                char st_[16];                                                                 \
                report_result_t r_ = judge(role, name, st_);                                  \
                ck_assert_msg(r_ == (want_result) && strcmp(st_, want_status) == 0,           \
                              "%s: got %s/%s, want %s/%s", name, report_result_name(r_), st_, \
                              report_result_name(want_result), want_status);                  \
        } while (0)

START_TEST(in_shape_passes)
{
        driver_in_shape();
        ck_judged(SHAPE_ROLE_DRIVER, "identity.driver_uid", REPORT_PASS, "pass");
        agent_in_shape();
        ck_judged(SHAPE_ROLE_AGENT, "identity.agent_uid_differs", REPORT_PASS, "pass");
}
END_TEST

START_TEST(unknown_is_never_a_pass)
{
        driver_in_shape();
        o.mounts_known = false;
        (void)snprintf(o.mounts_error, sizeof(o.mounts_error), "mountinfo unreadable");
        ck_judged(SHAPE_ROLE_DRIVER, "mounts.hangar-ctl", REPORT_INCONCLUSIVE, "unknown");
        driver_in_shape();
        unknown(&o.no_new_privs, "prctl failed");
        ck_judged(SHAPE_ROLE_DRIVER, "no_new_privs", REPORT_INCONCLUSIVE, "unknown");
        /* The agent's capability sets count too. */
        agent_in_shape();
        unknown(&o.cap[CAP_SET_EFFECTIVE], "capget failed");
        ck_judged(SHAPE_ROLE_AGENT, "capabilities.effective", REPORT_INCONCLUSIVE, "unknown");
        ck_assert(required(SHAPE_ROLE_AGENT, "capabilities.effective"));
        ck_assert(!required(SHAPE_ROLE_AGENT, "capabilities.bounding"));
        agent_in_shape();
        o.procs_known = false;
        ck_judged(SHAPE_ROLE_AGENT, "processes.isolated", REPORT_INCONCLUSIVE, "unknown");
        /* Informative facts unknown: still a pass. */
        agent_in_shape();
        unknown(&o.ptrace_scope, "absent");
        o.groups_errno = EINVAL;
        ck_judged(SHAPE_ROLE_AGENT, "yama_ptrace_scope", REPORT_PASS, "unknown");
        ck_judged(SHAPE_ROLE_AGENT, "identity.groups", REPORT_PASS, "unknown");
}
END_TEST

START_TEST(capabilities)
{
        /* The agent may keep harmless capabilities, not those reaching across. */
        agent_in_shape();
        known(&o.cap[CAP_SET_EFFECTIVE], UINT64_C(1) << CAP_NET_BIND_SERVICE);
        ck_judged(SHAPE_ROLE_AGENT, "capabilities.effective", REPORT_PASS, "pass");
        static const int forbidden[] = {CAP_SYS_PTRACE,      CAP_SYS_ADMIN, CAP_DAC_OVERRIDE,
                                        CAP_DAC_READ_SEARCH, CAP_FOWNER,    CAP_KILL,
                                        CAP_SETUID,          CAP_SETGID};
        for (size_t i = 0; i < ARRAY_SIZE(forbidden); i++) {
                agent_in_shape();
                known(&o.cap[CAP_SET_PERMITTED], UINT64_C(1) << forbidden[i]);
                ck_judged(SHAPE_ROLE_AGENT, "capabilities.permitted", REPORT_FAIL, "fail");
        }
        /* The driver keeps nothing, in any set. */
        driver_in_shape();
        known(&o.cap[CAP_SET_AMBIENT], UINT64_C(1) << CAP_NET_BIND_SERVICE);
        ck_judged(SHAPE_ROLE_DRIVER, "capabilities.ambient", REPORT_FAIL, "fail");
        /* SYS_ADMIN left in the bounding set is what privileged leaves. */
        agent_in_shape();
        known(&o.cap[CAP_SET_BOUNDING], UINT64_C(1) << CAP_SYS_ADMIN);
        ck_judged(SHAPE_ROLE_AGENT, "runtime.privileged", REPORT_FAIL, "fail");
        agent_in_shape();
        known(&o.cap[CAP_SET_EFFECTIVE], FULL_MASK);
        ck_judged(SHAPE_ROLE_AGENT, "runtime.privileged", REPORT_FAIL, "fail");
}
END_TEST

START_TEST(root_filesystem)
{
        driver_in_shape();
        known(&o.root_write_errno, 0); /* a file was created in / */
        ck_judged(SHAPE_ROLE_DRIVER, "root_filesystem.read_only", REPORT_FAIL, "fail");
        /* EACCES before EROFS (gVisor): the per-mount "ro" decides. */
        driver_in_shape();
        known(&o.root_write_errno, EACCES);
        ck_judged(SHAPE_ROLE_DRIVER, "root_filesystem.read_only", REPORT_PASS, "pass");
        set_mounts("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                   "2 1 0:5 / /var/lib/hangar rw - ext4 /dev/sda1 rw\n"
                   "3 1 0:6 / /var/lib/hangar-ctl rw - tmpfs tmpfs rw\n");
        ck_judged(SHAPE_ROLE_DRIVER, "root_filesystem.read_only", REPORT_FAIL, "fail");
        /* Never tried: unknown. */
        driver_in_shape();
        unknown(&o.root_write_errno, "not tried");
        ck_judged(SHAPE_ROLE_DRIVER, "root_filesystem.read_only", REPORT_INCONCLUSIVE, "unknown");
}
END_TEST

START_TEST(mounts)
{
        driver_in_shape();
        set_mounts("1 0 8:1 / / ro - ext4 /dev/sda1 rw\n"
                   "2 1 0:5 / /var/lib/hangar rw - ext4 /dev/sda1 rw\n"
                   "3 1 8:1 / /var/lib/hangar-ctl rw - ext4 /dev/sda1 rw\n");
        ck_judged(SHAPE_ROLE_DRIVER, "mounts.hangar-ctl.memory", REPORT_FAIL, "fail");
        agent_in_shape();
        set_mounts("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                   "2 1 0:5 / /var/lib/hangar ro - ext4 /dev/sda1 rw\n"
                   "3 1 0:6 / /var/lib/hangar-ctl rw - tmpfs tmpfs rw\n");
        ck_judged(SHAPE_ROLE_AGENT, "mounts.hangar-ctl", REPORT_FAIL, "fail");
        /* The last mount at a path is the one seen: remounted read-write. */
        agent_in_shape();
        set_mounts("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                   "2 1 0:5 / /var/lib/hangar ro - ext4 /dev/sda1 rw\n"
                   "3 1 0:5 / /var/lib/hangar rw - ext4 /dev/sda1 rw\n");
        ck_judged(SHAPE_ROLE_AGENT, "mounts.hangar-home", REPORT_FAIL, "fail");
}
END_TEST

START_TEST(processes_and_identity)
{
        agent_in_shape();
        o.nprocs = 1;
        o.procs[0] = (other_process_t){.pid = 7, .uid = 1001, .signal_errno = EPERM};
        ck_judged(SHAPE_ROLE_AGENT, "processes.isolated", REPORT_FAIL, "fail");
        agent_in_shape();
        o.nunreadable = 1;
        o.unreadable[0] = 7;
        ck_judged(SHAPE_ROLE_AGENT, "processes.isolated", REPORT_INCONCLUSIVE, "unknown");
        /* The agent with the driver's uid as its saved uid only. */
        agent_in_shape();
        o.uid[2] = 1001;
        ck_judged(SHAPE_ROLE_AGENT, "identity.agent_uid_differs", REPORT_FAIL, "fail");
        /* In the driver's group: reported, never deciding. */
        agent_in_shape();
        o.groups[0] = 1001;
        o.ngroups = 1;
        ck_judged(SHAPE_ROLE_AGENT, "identity.groups", REPORT_PASS, "fail");
        driver_in_shape();
        o.gid[1] = 0;
        ck_judged(SHAPE_ROLE_DRIVER, "identity.gid_not_root", REPORT_FAIL, "fail");
}
END_TEST

/* ---- the agent's credentials, on made-up API answers ---- */

#define SSR_OF(user, extra)                                                                \
        "{\"kind\": \"SelfSubjectReview\", \"apiVersion\": \"authentication.k8s.io/v1\", " \
        "\"status\": {\"userInfo\": {\"username\": \"" user "\"" extra "}}}"
#define SSAR(status) "{\"kind\": \"SelfSubjectAccessReview\", \"status\": " status "}"

/* A token found and asked about, every answer a plain "no". */
static creds_token_t *token(const char *source, const char *pod)
{
        creds_token_t *t = &o.creds.tokens[o.creds.ntokens++];
        (void)snprintf(t->source, sizeof(t->source), "%s", source);
        t->reviewed = true;
        t->review.status = 201;
        t->review.body = unit_json(SSR_OF("system:serviceaccount:sbx:agent", ""));
        (void)snprintf(t->namespace, sizeof(t->namespace), "sbx");
        (void)snprintf(t->pod, sizeof(t->pod), "%s", pod ? pod : "");
        t->nqueries = rbac_queries(pod != NULL, t->queries);
        t->nasked = t->nqueries;
        for (size_t i = 0; i < t->nqueries; i++) {
                t->replies[i].status = 201;
                t->replies[i].body = unit_json(SSAR("{\"allowed\": false}"));
        }
        return t;
}

/* Replaces the answer to the question labelled label (as reports name it). */
static void answer(creds_token_t *t, const char *label, long status, const char *body)
{
        for (size_t i = 0; i < t->nqueries; i++) {
                char l[400];
                rbac_query_label(&t->queries[i], t->pod, l, sizeof(l));
                if (strcmp(l, label) != 0)
                        continue;
                json_decref(t->replies[i].body);
                t->replies[i].status = status;
                t->replies[i].body = body ? unit_json(body) : NULL;
                return;
        }
        ck_abort_msg("no question labelled %s", label);
}

/* The credentials check of the agent's report (a new reference). */
static json_t *credentials(report_result_t *ret_result)
{
        _unit_json_ json_t *report = checks_run(&cfg, SHAPE_ROLE_AGENT, &o, ret_result);
        size_t i;
        json_t *c;
        json_array_foreach (json_object_get(report, "checks"), i, c)
                if (strcmp(json_string_value(json_object_get(c, "name")),
                           "credentials.service_account_token") == 0)
                        return json_incref(c);
        ck_abort_msg("no credentials check");
        return NULL;
}

/* The first token's member key, as JSON text. */
static char *token_member(json_t *check, const char *key)
{
        json_t *t =
            json_array_get(json_object_get(json_object_get(check, "observed"), "tokens"), 0);
        json_t *m = json_object_get(t, key);
        return m ? json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("(none)");
}

#define CREDS "credentials.service_account_token"

START_TEST(credentials_no_token_or_harmless)
{
        agent_in_shape();
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_PASS, "pass");
        ck_assert(required(SHAPE_ROLE_AGENT, CREDS));
        token(K8S_SA_DIR "/token", "sandbox-1");
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_PASS, "pass");
        report_result_t res;
        _unit_json_ json_t *c = credentials(&res);
        _cleanup_free_ char *user = token_member(c, "user");
        ck_assert_str_eq(user, "\"system:serviceaccount:sbx:agent\"");
        /* A token the API server does not accept can do nothing there. */
        agent_in_shape();
        creds_token_t *t = token("/var/run/vault/token", NULL);
        json_decref(t->review.body);
        t->review.status = 401;
        t->review.body = unit_json("{\"kind\": \"Status\", \"message\": \"Unauthorized\"}");
        t->nasked = 0;
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_PASS, "pass");
        /* The driver's report has no such check: its token is hangar's business. */
        driver_in_shape();
        report_result_t dres;
        _unit_json_ json_t *d = checks_run(&cfg, SHAPE_ROLE_DRIVER, &o, &dres);
        _cleanup_free_ char *text = json_dumps(d, JSON_COMPACT);
        ck_assert_ptr_null(strstr(text, CREDS));
}
END_TEST

/* Each dangerous permission, granted alone, fails the check naming it. */
START_TEST(credentials_each_permission_fails)
{
        for (size_t p = 0; p < rbac_permission_count; p++) {
                agent_in_shape();
                creds_token_t *t = token(K8S_SA_DIR "/token", NULL);
                answer(t, rbac_permissions[p].label, 201, SSAR("{\"allowed\": true}"));
                ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_FAIL, "fail");
                report_result_t res;
                _unit_json_ json_t *c = credentials(&res);
                _cleanup_free_ char *granted = token_member(c, "granted");
                char want[200];
                (void)snprintf(want, sizeof(want), "[\"%s\"]", rbac_permissions[p].label);
                ck_assert_str_eq(granted, want);
        }
        /* Granted only on this pod, by name. */
        agent_in_shape();
        creds_token_t *t = token(K8S_SA_DIR "/token", "sandbox-1");
        answer(t, "create pods/exec on pod sandbox-1", 201, SSAR("{\"allowed\": true}"));
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_FAIL, "fail");
        report_result_t res;
        _unit_json_ json_t *c = credentials(&res);
        _cleanup_free_ char *granted = token_member(c, "granted");
        ck_assert_str_eq(granted, "[\"create pods/exec on pod sandbox-1\"]");
}
END_TEST

START_TEST(credentials_unknown_is_never_a_pass)
{
        /* Not looked for at all. */
        agent_in_shape();
        o.creds.observed = false;
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_INCONCLUSIVE, "unknown");
        /* The API server unreachable. */
        agent_in_shape();
        creds_token_t *t = token(K8S_SA_DIR "/token", NULL);
        t->review.transport_failed = true;
        (void)snprintf(t->review.error, sizeof(t->review.error), "Couldn't connect to server");
        t->nasked = 0;
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_INCONCLUSIVE, "unknown");
        report_result_t res;
        _unit_json_ json_t *c = credentials(&res);
        _cleanup_free_ char *reason = token_member(c, "reason");
        ck_assert_str_eq(reason,
                         "\"the API server cannot be reached: Couldn't connect to server\"");
        /* Nothing could be asked (no address, no CA). */
        agent_in_shape();
        t = token(K8S_SA_DIR "/token", NULL);
        t->reviewed = false;
        (void)snprintf(t->unasked, sizeof(t->unasked), "not in a cluster");
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_INCONCLUSIVE, "unknown");
        /* Each kind of answer that is not a plain yes or no. */
        static const struct {
                long status;
                const char *body;
        } odd[] = {
            {403, "{\"kind\": \"Status\", \"message\": \"forbidden\"}"},
            {500, NULL},
            {401, "{\"kind\": \"Status\"}"},
            {201, "{\"kind\": \"Status\", \"status\": {\"allowed\": false}}"},
            {201, SSAR("{}")},
            {201, SSAR("{\"allowed\": \"no\"}")},
            {201, SSAR("{\"allowed\": true, \"denied\": true}")},
            {201, SSAR("{\"allowed\": false, \"evaluationError\": \"role x not found\"}")},
        };
        for (size_t i = 0; i < ARRAY_SIZE(odd); i++) {
                agent_in_shape();
                t = token(K8S_SA_DIR "/token", NULL);
                answer(t, "create pods/exec", odd[i].status, odd[i].body);
                ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_INCONCLUSIVE, "unknown");
        }
        /* The API server stopped answering part-way. */
        agent_in_shape();
        t = token(K8S_SA_DIR "/token", NULL);
        t->nasked = 3;
        t->replies[2].transport_failed = true;
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_INCONCLUSIVE, "unknown");
        /* Unexpected review answers. */
        agent_in_shape();
        t = token(K8S_SA_DIR "/token", NULL);
        json_decref(t->review.body);
        t->review.body = unit_json("{\"kind\": \"SelfSubjectReview\", \"status\": {}}");
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_INCONCLUSIVE, "unknown");
        /* A place that could not be searched. */
        agent_in_shape();
        (void)snprintf(o.creds.search_error, sizeof(o.creds.search_error),
                       "mount table unreadable");
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_INCONCLUSIVE, "unknown");
        /* A yes anywhere beats an unknown elsewhere. */
        agent_in_shape();
        t = token(K8S_SA_DIR "/token", NULL);
        answer(t, "create pods", 500, NULL);
        t = token("environment variable TOKEN", NULL);
        answer(t, "impersonate users (cluster-wide)", 201, SSAR("{\"allowed\": true}"));
        ck_judged(SHAPE_ROLE_AGENT, CREDS, REPORT_FAIL, "fail");
}
END_TEST

static Suite *checks_suite(void)
{
        Suite *s = suite_create("checks");
        TCase *tc = tcase_create("core");
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, in_shape_passes);
        tcase_add_test(tc, unknown_is_never_a_pass);
        tcase_add_test(tc, capabilities);
        tcase_add_test(tc, root_filesystem);
        tcase_add_test(tc, mounts);
        tcase_add_test(tc, processes_and_identity);
        tcase_add_test(tc, credentials_no_token_or_harmless);
        tcase_add_test(tc, credentials_each_permission_fails);
        tcase_add_test(tc, credentials_unknown_is_never_a_pass);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(checks_suite());
}
