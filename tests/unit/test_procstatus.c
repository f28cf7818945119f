/* probe/procstatus.c: the fields the probe reads from /proc/PID/status,
 * absent ones left unknown (gVisor has no NoNewPrivs line), and
 * capmask_full from cap_last_cap. */
#include "procstatus.h"

#include "unit.h"

static const char linux_status[] = "Name:\tcat\n"
                                   "Umask:\t0022\n"
                                   "State:\tR (running)\n"
                                   "Uid:\t1000\t1001\t1002\t1003\n"
                                   "Gid:\t2000\t2001\t2002\t2003\n"
                                   "Groups:\t4 24 27 \n"
                                   "CapInh:\t0000000000000000\n"
                                   "CapPrm:\t000001ffffffffff\n"
                                   "CapEff:\t0000000000080000\n"
                                   "CapBnd:\t000001ffffffffff\n"
                                   "CapAmb:\t0000000000000000\n"
                                   "NoNewPrivs:\t1\n"
                                   "Seccomp:\t2\n"
                                   "Seccomp_filters:\t1\n";

START_TEST(linux_fields)
{
        proc_status_t st;
        hg_error_t err = {0};
        ck_assert_int_eq(procstatus_parse(linux_status, strlen(linux_status), &st, &err), 0);
        ck_assert(st.have_uid && st.have_gid && st.have_groups);
        ck_assert_uint_eq(st.uid[0], 1000);
        ck_assert_uint_eq(st.uid[3], 1003);
        ck_assert_uint_eq(st.gid[1], 2001);
        ck_assert_uint_eq(st.ngroups, 3);
        ck_assert_uint_eq(st.groups[2], 27);
        ck_assert_uint_eq(st.cap[CAP_SET_PERMITTED], 0x1ffffffffffULL);
        ck_assert_uint_eq(st.cap[CAP_SET_EFFECTIVE], 0x80000ULL); /* CAP_SYS_PTRACE */
        ck_assert(st.have_no_new_privs);
        ck_assert_uint_eq(st.no_new_privs, 1);
        ck_assert_uint_eq(st.seccomp, 2);
}
END_TEST

START_TEST(gvisor_without_no_new_privs)
{
        static const char text[] = "Uid:\t1001\t1001\t1001\t1001\nGid:\t1001\t1001\t1001\t1001\n"
                                   "Groups:\t\nCapEff:\t0000000000000000\nSeccomp:\t0\n";
        proc_status_t st;
        hg_error_t err = {0};
        ck_assert_int_eq(procstatus_parse(text, strlen(text), &st, &err), 0);
        ck_assert(!st.have_no_new_privs); /* unknown, never read as 0 */
        ck_assert(st.have_groups);
        ck_assert_uint_eq(st.ngroups, 0);
        ck_assert(st.have_cap[CAP_SET_EFFECTIVE]);
        ck_assert(!st.have_cap[CAP_SET_BOUNDING]);
}
END_TEST

START_TEST(malformed_known_lines_refused)
{
        static const char *const bad[] = {
            "Uid:\t1\t2\t3\n",              /* three ids */
            "Uid:\t1\t2\t3\t4\t5\n",        /* five */
            "Gid:\t1\tx\t3\t4\n",           /* not a number */
            "CapEff:\t00000000000000000\n", /* 17 hex digits */
            "CapEff:\t0000zz0000000000\n",  /* not hex */
            "CapEff:\t\n",                  /* empty */
            "NoNewPrivs:\t-1\n",            /* negative */
            "Uid:\t99999999999\t0\t0\t0\n", /* overflow */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                proc_status_t st;
                hg_error_t err = {0};
                ck_assert_msg(procstatus_parse(bad[i], strlen(bad[i]), &st, &err) < 0,
                              "accepted: %s", bad[i]);
                ck_assert_ptr_nonnull(strstr(err.message, "line 1"));
        }
}
END_TEST

START_TEST(unknown_lines_ignored)
{
        static const char text[] = "Whatever: 1 2 3\nno colon here\nUid:\t5\t5\t5\t5\n";
        proc_status_t st;
        hg_error_t err = {0};
        ck_assert_int_eq(procstatus_parse(text, strlen(text), &st, &err), 0);
        ck_assert_uint_eq(st.uid[2], 5);
}
END_TEST

START_TEST(full_mask_from_cap_last_cap)
{
        uint64_t m;
        hg_error_t err = {0};
        ck_assert_int_eq(capmask_full("40\n", &m, &err), 0);
        ck_assert_uint_eq(m, 0x1ffffffffffULL);
        ck_assert_int_eq(capmask_full("37", &m, &err), 0);
        ck_assert_uint_eq(m, 0x3fffffffffULL);
        ck_assert_int_eq(capmask_full("63\n", &m, &err), 0);
        ck_assert_uint_eq(m, UINT64_MAX);
        ck_assert_int_eq(capmask_full("0\n", &m, &err), 0);
        ck_assert_uint_eq(m, 1);
        ck_assert_int_lt(capmask_full("64\n", &m, &err), 0);
        ck_assert_int_lt(capmask_full("", &m, &err), 0);
        ck_assert_int_lt(capmask_full("40\n\n", &m, &err), 0);
        ck_assert_int_lt(capmask_full("4x\n", &m, &err), 0);
        ck_assert_int_lt(capmask_full("-1\n", &m, &err), 0);
}
END_TEST

START_TEST(set_names)
{
        ck_assert_str_eq(cap_set_name(CAP_SET_AMBIENT), "ambient");
        ck_assert_str_eq(cap_set_name(CAP_SET_BOUNDING), "bounding");
}
END_TEST

static Suite *procstatus_suite(void)
{
        Suite *s = suite_create("procstatus");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, linux_fields);
        tcase_add_test(tc, gvisor_without_no_new_privs);
        tcase_add_test(tc, malformed_known_lines_refused);
        tcase_add_test(tc, unknown_lines_ignored);
        tcase_add_test(tc, full_mask_from_cap_last_cap);
        tcase_add_test(tc, set_names);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(procstatus_suite());
}
