#include "checks.h"

#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "rbac.h"

typedef enum check_status {
        CHECK_FAIL,
        CHECK_UNKNOWN,
        CHECK_PASS,
} check_status_t;

typedef struct report {
        json_t *checks;
        bool failed;
        bool unknown;
} report_t;

const char *report_result_name(report_result_t r)
{
        switch (r) {
        case REPORT_PASS:
                return "pass";
        case REPORT_INCONCLUSIVE:
                return "inconclusive";
        case REPORT_FAIL:
        default:
                return "fail";
        }
}

static const char *status_name(check_status_t s)
{
        return s == CHECK_PASS ? "pass" : s == CHECK_UNKNOWN ? "unknown" : "fail";
}

/* Records one check. observed/expected are taken over (may be NULL). */
static void add(report_t *r, const char *name, bool required, check_status_t status,
                json_t *observed, json_t *expected, const char *source)
{
        json_t *c = json_pack("{s:s, s:b, s:s, s:o*, s:o*, s:s}", "name", name, "required",
                              required, "status", status_name(status), "observed", observed,
                              "expected", expected, "source", source);
        if (!c || json_array_append_new(r->checks, c) < 0) {
                r->unknown = true; /* could not even record it: not a pass */
                return;
        }
        if (required && status == CHECK_FAIL)
                r->failed = true;
        if (required && status == CHECK_UNKNOWN)
                r->unknown = true;
}

static json_t *hex(uint64_t v)
{
        char buf[24];
        (void)snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)v);
        return json_string(buf);
}

/* Supplementary groups, reported; not required: a pod-level fsGroup or
 * supplementalGroups legitimately puts both containers in one group, and
 * nothing of the driver's is reachable by group alone (hangar-ctl is not
 * mounted in the agent, its processes are in another PID namespace). The
 * agent sharing the driver's gid is still worth a "fail" an operator sees. */
static void check_groups(report_t *r, const hg_config_t *cfg, shape_role_t role,
                         const observation_t *o)
{
        char expected[64] = "any";
        if (role == SHAPE_ROLE_AGENT)
                (void)snprintf(expected, sizeof(expected), "not the driver's gid %u",
                               cfg->driver_gid);
        if (o->groups_errno) {
                char why[96];
                (void)snprintf(why, sizeof(why), "getgroups: %s (more than %d groups?)",
                               strerror(o->groups_errno), OBSERVE_MAX_GROUPS);
                add(r, "identity.groups", false, CHECK_UNKNOWN, json_string(why),
                    json_string(expected), "getgroups(2)");
                return;
        }
        json_t *list = json_array();
        bool has_driver_gid = false;
        for (size_t i = 0; i < o->ngroups; i++) {
                json_array_append_new(list, json_integer(o->groups[i]));
                has_driver_gid |= o->groups[i] == cfg->driver_gid;
        }
        bool fails = role == SHAPE_ROLE_AGENT && has_driver_gid;
        add(r, "identity.groups", false, fails ? CHECK_FAIL : CHECK_PASS, list,
            json_string(expected), "getgroups(2)");
}

static void check_identity(report_t *r, const hg_config_t *cfg, shape_role_t role,
                           const observation_t *o)
{
        json_t *uids = json_pack("[i, i, i]", o->uid[0], o->uid[1], o->uid[2]);
        json_t *gids = json_pack("[i, i, i]", o->gid[0], o->gid[1], o->gid[2]);
        bool root = o->uid[0] == 0 || o->uid[1] == 0 || o->uid[2] == 0;
        bool root_gid = o->gid[0] == 0 || o->gid[1] == 0 || o->gid[2] == 0;
        add(r, "identity.uid_not_root", true, root ? CHECK_FAIL : CHECK_PASS, uids,
            json_string("real, effective and saved uid all non-zero"), "getresuid(2)");
        add(r, "identity.gid_not_root", true, root_gid ? CHECK_FAIL : CHECK_PASS, gids,
            json_string("real, effective and saved gid all non-zero"), "getresgid(2)");
        bool is_driver_uid = o->uid[0] == cfg->driver_uid && o->uid[1] == cfg->driver_uid &&
                             o->uid[2] == cfg->driver_uid;
        if (role == SHAPE_ROLE_DRIVER) {
                add(r, "identity.driver_uid", true, is_driver_uid ? CHECK_PASS : CHECK_FAIL,
                    json_integer(o->uid[1]), json_integer(cfg->driver_uid), "getresuid(2)");
                bool gid_ok = o->gid[1] == cfg->driver_gid;
                add(r, "identity.driver_gid", true, gid_ok ? CHECK_PASS : CHECK_FAIL,
                    json_integer(o->gid[1]), json_integer(cfg->driver_gid), "getresgid(2)");
        } else {
                bool shares = o->uid[0] == cfg->driver_uid || o->uid[1] == cfg->driver_uid ||
                              o->uid[2] == cfg->driver_uid;
                char expected[64];
                (void)snprintf(expected, sizeof(expected), "not the driver's uid %u",
                               cfg->driver_uid);
                add(r, "identity.agent_uid_differs", true, shares ? CHECK_FAIL : CHECK_PASS,
                    json_integer(o->uid[1]), json_string(expected), "getresuid(2)");
        }
        check_groups(r, cfg, role, o);
}

/* Capabilities that would let the agent reach the driver's processes or
 * files despite the split. */
static const struct {
        int cap;
        const char *name;
} agent_forbidden[] = {
    {CAP_SYS_PTRACE, "CAP_SYS_PTRACE"},
    {CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
    {CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE"},
    {CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH"},
    {CAP_FOWNER, "CAP_FOWNER"},
    {CAP_KILL, "CAP_KILL"},
    {CAP_SETUID, "CAP_SETUID"},
    {CAP_SETGID, "CAP_SETGID"},
};

static void check_caps(report_t *r, shape_role_t role, const observation_t *o)
{
        static const char *const names[CAP_SET_COUNT] = {
            [CAP_SET_INHERITABLE] = "capabilities.inheritable",
            [CAP_SET_PERMITTED] = "capabilities.permitted",
            [CAP_SET_EFFECTIVE] = "capabilities.effective",
            [CAP_SET_BOUNDING] = "capabilities.bounding",
            [CAP_SET_AMBIENT] = "capabilities.ambient",
        };
        for (cap_set_t s = 0; s < CAP_SET_COUNT; s++) {
                const fact_u64_t *f = &o->cap[s];
                const char *source = f->derived              ? f->derived
                                     : s == CAP_SET_BOUNDING ? "prctl(PR_CAPBSET_READ)"
                                     : s == CAP_SET_AMBIENT  ? "prctl(PR_CAP_AMBIENT)"
                                                             : "capget(2)";
                /* Required where a known value would be: every set for the
                 * driver, permitted/effective/ambient for the agent. */
                bool required = role == SHAPE_ROLE_DRIVER ||
                                (s != CAP_SET_BOUNDING && s != CAP_SET_INHERITABLE);
                if (!f->known) {
                        add(r, names[s], required, CHECK_UNKNOWN, json_string(f->error), NULL,
                            source);
                        continue;
                }
                json_t *observed = hex(f->value);
                if (o->cap_full.known && f->value == o->cap_full.value) {
                        json_decref(observed);
                        observed = json_string("all (the full mask from cap_last_cap)");
                }
                if (role == SHAPE_ROLE_DRIVER) {
                        /* drop: [ALL]: nothing in any set. */
                        add(r, names[s], true, f->value == 0 ? CHECK_PASS : CHECK_FAIL, observed,
                            hex(0), source);
                        continue;
                }
                if (s == CAP_SET_BOUNDING || s == CAP_SET_INHERITABLE) {
                        add(r, names[s], false, CHECK_PASS, observed, NULL, source);
                        continue;
                }
                const char *bad = NULL;
                for (size_t i = 0; i < ARRAY_SIZE(agent_forbidden) && !bad; i++)
                        if (f->value & (UINT64_C(1) << agent_forbidden[i].cap))
                                bad = agent_forbidden[i].name;
                add(r, names[s], true, bad ? CHECK_FAIL : CHECK_PASS, observed,
                    json_string("none of CAP_SYS_PTRACE, SYS_ADMIN, DAC_OVERRIDE, "
                                "DAC_READ_SEARCH, FOWNER, KILL, SETUID, SETGID"),
                    source);
        }
}

static void check_flags(report_t *r, shape_role_t role, const observation_t *o)
{
        const fact_u64_t *nnp = &o->no_new_privs;
        bool driver = role == SHAPE_ROLE_DRIVER;
        /* gVisor's /proc/self/status has no NoNewPrivs line: prctl is the source. */
        add(r, "no_new_privs", driver,
            !nnp->known                    ? CHECK_UNKNOWN
            : (!driver || nnp->value == 1) ? CHECK_PASS
                                           : CHECK_FAIL,
            nnp->known ? json_integer((json_int_t)nnp->value) : json_string(nnp->error),
            driver ? json_integer(1) : NULL, "prctl(PR_GET_NO_NEW_PRIVS)");
        const struct {
                const char *name;
                const fact_u64_t *f;
                const char *source;
        } info[] = {
            {"dumpable", &o->dumpable, "prctl(PR_GET_DUMPABLE)"},
            {"seccomp_mode", &o->seccomp, "prctl(PR_GET_SECCOMP) (gVisor's filter is invisible)"},
            {"yama_ptrace_scope", &o->ptrace_scope, "/proc/sys/kernel/yama/ptrace_scope"},
        };
        for (size_t i = 0; i < ARRAY_SIZE(info); i++) {
                const fact_u64_t *f = info[i].f;
                add(r, info[i].name, false, f->known ? CHECK_PASS : CHECK_UNKNOWN,
                    f->known ? json_integer((json_int_t)f->value)
                             : json_string(f->error[0] ? f->error : "absent"),
                    NULL, info[i].source);
        }
}

static void check_root(report_t *r, shape_role_t role, const observation_t *o)
{
        bool driver = role == SHAPE_ROLE_DRIVER;
        const mount_entry_t *root = o->mounts_known ? mountinfo_find(&o->mounts, "/") : NULL;
        json_t *observed = json_pack(
            "{s:o, s:o, s:o}", "statvfs_rdonly",
            o->root_statvfs_ro.known ? json_boolean(o->root_statvfs_ro.value)
                                     : json_string(o->root_statvfs_ro.error),
            "write_attempt",
            json_string(!o->root_write_errno.known  ? "not tried"
                        : o->root_write_errno.value ? strerror((int)o->root_write_errno.value)
                                                    : "succeeded"),
            "mountinfo", root ? json_string(root->mount_options) : json_null());
        /* The write attempt decides when it can: EROFS passes, success fails.
         * A non-root uid in a root-owned / gets EACCES first (gVisor checks
         * permissions before read-only-ness), so then the per-mount "ro" of
         * / in mountinfo decides; statvfs is not trusted alone (gVisor's
         * does not set ST_RDONLY). */
        check_status_t s = CHECK_UNKNOWN;
        if (o->root_write_errno.known) {
                uint64_t e = o->root_write_errno.value;
                if (e == EROFS)
                        s = CHECK_PASS;
                else if (e == 0)
                        s = CHECK_FAIL;
                else if ((e == EACCES || e == EPERM) && root)
                        s = root->read_only ? CHECK_PASS : CHECK_FAIL;
        }
        if (!driver)
                s = CHECK_PASS; /* the agent's root is its own business */
        add(r, "root_filesystem.read_only", driver, s, observed,
            driver ? json_string("read-only: creating a file in / fails with EROFS") : NULL,
            "statvfs(2), open(2) in /, /proc/self/mountinfo");
}

static void check_mounts(report_t *r, const hg_config_t *cfg, shape_role_t role,
                         const observation_t *o)
{
        for (shape_volume_t v = 0; v < SHAPE_VOLUME_COUNT; v++) {
                if (!shape_volume_used(cfg, v))
                        continue; /* hangar-bin, where the binaries are the image's */
                shape_access_t want = shape_mount_access(role, v);
                char name[64];
                (void)snprintf(name, sizeof(name), "mounts.%s", shape_volume_name(v));
                const char *path = shape_volume_path(cfg, v);
                if (!o->mounts_known) {
                        add(r, name, true, CHECK_UNKNOWN, json_string(o->mounts_error),
                            json_string(shape_access_name(want)), "/proc/self/mountinfo");
                        continue;
                }
                const mount_entry_t *m = mountinfo_find(&o->mounts, path);
                shape_access_t have = !m             ? SHAPE_ACCESS_ABSENT
                                      : m->read_only ? SHAPE_ACCESS_READ_ONLY
                                                     : SHAPE_ACCESS_READ_WRITE;
                bool ok = want == SHAPE_ACCESS_UNCHECKED || want == have;
                json_t *observed =
                    m ? json_pack("{s:s, s:s, s:s, s:s}", "path", path, "access",
                                  shape_access_name(have), "fstype", m->fstype, "options",
                                  m->mount_options)
                      : json_pack("{s:s, s:s}", "path", path, "access", shape_access_name(have));
                add(r, name, want != SHAPE_ACCESS_UNCHECKED, ok ? CHECK_PASS : CHECK_FAIL, observed,
                    json_string(shape_access_name(want)), "/proc/self/mountinfo");
                /* hangar-ctl holds secrets: in memory, never on the node's disk. */
                /* What the driver runs, delivered: nobody's to write, in both. */
                if (v == SHAPE_VOLUME_BIN && m && shape_copies_binaries(cfg))
                        add(r, "mounts.hangar-bin.memory", true,
                            strcmp(m->fstype, "tmpfs") == 0 ? CHECK_PASS : CHECK_FAIL,
                            json_string(m->fstype), json_string("tmpfs"), "/proc/self/mountinfo");
                if (v == SHAPE_VOLUME_CTL && role == SHAPE_ROLE_DRIVER && m)
                        add(r, "mounts.hangar-ctl.memory", true,
                            strcmp(m->fstype, "tmpfs") == 0 ? CHECK_PASS : CHECK_FAIL,
                            json_string(m->fstype), json_string("tmpfs"), "/proc/self/mountinfo");
        }
}

static void check_processes(report_t *r, const observation_t *o)
{
        if (!o->procs_known) {
                add(r, "processes.isolated", true, CHECK_UNKNOWN, json_string("/proc unreadable"),
                    NULL, "/proc");
                return;
        }
        json_t *seen = json_array();
        for (size_t i = 0; i < o->nprocs; i++) {
                const other_process_t *p = &o->procs[i];
                json_array_append_new(
                    seen,
                    json_pack("{s:i, s:i, s:s, s:s}", "pid", (int)p->pid, "uid", (int)p->uid,
                              "signal", p->signal_errno ? strerror(p->signal_errno) : "allowed",
                              "mem_open",
                              p->mem_open_errno ? strerror(p->mem_open_errno) : "allowed"));
        }
        for (size_t i = 0; i < o->nunreadable; i++)
                json_array_append_new(seen, json_pack("{s:i, s:s}", "pid", (int)o->unreadable[i],
                                                      "status", "unreadable"));
        add(r, "processes.isolated", true,
            o->nprocs > 0        ? CHECK_FAIL
            : o->nunreadable > 0 ? CHECK_UNKNOWN
                                 : CHECK_PASS,
            seen, json_string("no process of another uid visible (own PID namespace)"),
            "/proc/*/status, kill(pid, 0), open(/proc/PID/mem)");
}

static void check_runtime(report_t *r, const observation_t *o)
{
        bool uname_gvisor =
            strstr(o->uname_release, "gvisor") != NULL || strcmp(o->uname_release, "4.4.0") == 0;
        const mount_entry_t *root = o->mounts_known ? mountinfo_find(&o->mounts, "/") : NULL;
        bool mounts_gvisor = root && strcmp(root->source, "none") == 0;
        int signals = uname_gvisor + o->kernel_log_gvisor + mounts_gvisor;
        add(r, "runtime.gvisor", false, CHECK_PASS,
            json_pack("{s:s, s:b, s:b, s:b, s:b}", "uname_release", o->uname_release,
                      "uname_says_gvisor", uname_gvisor, "kernel_log_says_gvisor",
                      o->kernel_log_gvisor, "root_source_none", mounts_gvisor, "gvisor",
                      signals >= 2),
            NULL, "uname(2), klogctl(2), /proc/self/mountinfo");
        /* Privileged, or as good as: every capability in the effective set, or
         * CAP_SYS_ADMIN in the bounding set. A runtime never grants a whole
         * full mask (runsc keeps NET_RAW back, crun is capped by the host),
         * and a non-root process in a privileged container has an empty
         * effective set; but no container's default set holds SYS_ADMIN, so
         * its presence in the bounding set is what privileged leaves behind. */
        const uint64_t sys_admin = UINT64_C(1) << 21;
        bool eff_full = o->cap[CAP_SET_EFFECTIVE].known && o->cap_full.known &&
                        o->cap[CAP_SET_EFFECTIVE].value == o->cap_full.value;
        bool bnd_admin =
            o->cap[CAP_SET_BOUNDING].known && (o->cap[CAP_SET_BOUNDING].value & sys_admin) != 0;
        bool known = o->cap[CAP_SET_EFFECTIVE].known && o->cap[CAP_SET_BOUNDING].known;
        add(r, "runtime.privileged", true,
            eff_full || bnd_admin ? CHECK_FAIL
            : known               ? CHECK_PASS
                                  : CHECK_UNKNOWN,
            json_pack("{s:b, s:b}", "effective_full", eff_full, "bounding_sys_admin", bnd_admin),
            json_pack("{s:b, s:b}", "effective_full", 0, "bounding_sys_admin", 0),
            "capget(2) and PR_CAPBSET_READ against cap_last_cap");
}

/* One token: what the API server said it may do. A question it answered
 * "yes" fails; one it did not answer plainly, or could not be asked, is
 * unknown; a token the API server does not accept (401) can do nothing
 * there. */
static check_status_t judge_token(const creds_token_t *t, json_t *obj)
{
        hg_error_t err = {0};
        rbac_identity_t id;
        const char *why = NULL;
        int r = 0;
        if (t->reviewed && t->review.transport_failed) {
                (void)error_set(&err, -EIO, "the API server cannot be reached: %s",
                                t->review.error);
                why = err.message;
        } else if (t->reviewed &&
                   (r = rbac_parse_ssr(t->review.status, t->review.body, &id, &err)) == 0) {
                json_object_set_new(obj, "user", json_string(id.username));
                if (id.pod_name[0])
                        json_object_set_new(obj, "pod", json_string(id.pod_name));
        } else if (t->reviewed && r == -EACCES) {
                json_object_set_new(obj, "accepted", json_false());
                json_object_set_new(obj, "reason", json_string(err.message));
                return CHECK_PASS;
        } else if (t->reviewed) {
                why = err.message;
        }
        if (!why && t->unasked[0])
                why = t->unasked;
        else if (!why && !t->reviewed)
                why = "not asked";
        if (why) {
                json_object_set_new(obj, "reason", json_string(why));
                return CHECK_UNKNOWN;
        }
        json_object_set_new(obj, "namespace", json_string(t->namespace));
        if (t->pod[0])
                json_object_set_new(obj, "asked_about_pod",
                                    json_pack("{s:s, s:s}", "name", t->pod, "from", t->pod_source));
        json_object_set_new(obj, "namespace_source", json_string(t->namespace_source));
        json_t *granted = json_array(), *unknown = json_array();
        json_object_set_new(obj, "granted", granted);
        json_object_set_new(obj, "unknown", unknown);
        for (size_t i = 0; i < t->nasked; i++) {
                char label[400];
                rbac_query_label(&t->queries[i], t->pod, label, sizeof(label));
                const creds_reply_t *rep = &t->replies[i];
                hg_error_t qerr = {0};
                rbac_answer_t a = rep->transport_failed
                                      ? RBAC_UNEXPECTED
                                      : rbac_parse_ssar(rep->status, rep->body, &qerr);
                if (rep->transport_failed)
                        (void)error_set(&qerr, -EIO, "no answer: %s", rep->error);
                switch (a) {
                case RBAC_ALLOWED:
                        json_array_append_new(granted, json_string(label));
                        break;
                case RBAC_DENIED:
                        break;
                case RBAC_REJECTED:
                case RBAC_UNEXPECTED:
                default:
                        json_array_append_new(unknown, json_pack("{s:s, s:s}", "permission", label,
                                                                 "reason", qerr.message));
                        break;
                }
        }
        if (t->nasked < t->nqueries) {
                char msg[160];
                (void)snprintf(msg, sizeof(msg),
                               "%zu questions not asked: the API server stopped answering",
                               t->nqueries - t->nasked);
                json_array_append_new(
                    unknown, json_pack("{s:s, s:s}", "permission", "(the rest)", "reason", msg));
        }
        if (t->nqueries == 0)
                json_array_append_new(unknown, json_pack("{s:s, s:s}", "permission", "(all)",
                                                         "reason", "no question was asked"));
        if (json_array_size(granted) > 0)
                return CHECK_FAIL;
        return json_array_size(unknown) > 0 ? CHECK_UNKNOWN : CHECK_PASS;
}

/* The agent's API credentials (docs/probe.md, "RBAC"): no token found
 * passes; every token found must be unable to do any of rbac_permissions. */
static void check_credentials(report_t *r, const observation_t *o)
{
        const char *name = "credentials.service_account_token";
        const char *source = "the service account's directory, kubelet volumes, environment; "
                             "SelfSubjectReview and SelfSubjectAccessReview";
        json_t *expected = json_string(
            "no token, or none that may exec, attach or port-forward into the pod, add "
            "ephemeral containers, create or update pods or pod-creating workloads, mint "
            "service-account tokens, impersonate, bind or escalate roles, or proxy to nodes");
        const creds_observation_t *c = &o->creds;
        if (!c->observed) {
                add(r, name, true, CHECK_UNKNOWN, json_string("not looked for"), expected, source);
                return;
        }
        json_t *tokens = json_array();
        check_status_t worst = CHECK_PASS;
        for (size_t i = 0; i < c->ntokens; i++) {
                const creds_token_t *t = &c->tokens[i];
                json_t *obj = json_pack("{s:s, s:b, s:s}", "source", t->source, "standard",
                                        t->standard, "ca", t->ca_source);
                check_status_t s = obj ? judge_token(t, obj) : CHECK_UNKNOWN;
                json_object_set_new(obj, "status", json_string(status_name(s)));
                json_array_append_new(tokens, obj);
                if (s < worst) /* fail < unknown < pass */
                        worst = s;
        }
        if (c->search_error[0] && worst == CHECK_PASS)
                worst = CHECK_UNKNOWN;
        json_t *observed =
            json_pack("{s:b, s:i, s:o}", "standard_token_mounted", c->standard_mounted,
                      "volumes_searched", (json_int_t)c->volumes_searched, "tokens", tokens);
        if (observed && c->search_error[0])
                json_object_set_new(observed, "search_error", json_string(c->search_error));
        add(r, name, true, worst, observed, expected, source);
}

json_t *checks_run(const hg_config_t *cfg, shape_role_t role, const observation_t *o,
                   report_result_t *ret_result)
{
        report_t r = {.checks = json_array()};
        if (!r.checks)
                return NULL;
        check_identity(&r, cfg, role, o);
        check_caps(&r, role, o);
        check_flags(&r, role, o);
        check_root(&r, role, o);
        check_mounts(&r, cfg, role, o);
        check_processes(&r, o);
        check_runtime(&r, o);
        if (role == SHAPE_ROLE_AGENT)
                check_credentials(&r, o);
        report_result_t result = r.failed    ? REPORT_FAIL
                                 : r.unknown ? REPORT_INCONCLUSIVE
                                             : REPORT_PASS;
        *ret_result = result;
        return json_pack("{s:s, s:s, s:o}", "role", shape_role_name(role), "result",
                         report_result_name(result), "checks", r.checks);
}
