/* probe/checks.c: the judgements, on made-up observations (the native and
 * pod suites feed it real ones): a container in shape passes; each fault
 * fails the check that owns it; a required fact that could not be read is
 * inconclusive, never a pass; informative checks never decide. */
#include <linux/capability.h>

#include "checks.h"
#include "cleanup.h"
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
}

static void setup(void)
{
        ck_assert_int_eq(config_init_defaults(&cfg), 0);
        memset(&o, 0, sizeof(o));
}

static void teardown(void)
{
        mountinfo_free(&o.mounts);
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
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(checks_suite());
}
