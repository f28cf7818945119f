/* common/mount/mountinfo.c: proc(5)'s format, octal escapes, gVisor's variant,
 * per-mount read-only-ness, and malformed lines refused. */
#include "mountinfo.h"

#include "unit.h"

static mount_table_t parse_ok(const char *text)
{
        mount_table_t t = {0};
        hg_error_t err = {0};
        int r = mountinfo_parse(text, strlen(text), &t, &err);
        ck_assert_msg(r == 0, "parse failed: %s", err.message);
        return t;
}

static int parse_err(const char *text, hg_error_t *err)
{
        mount_table_t t = {0};
        int r = mountinfo_parse(text, strlen(text), &t, err);
        if (r == 0)
                mountinfo_free(&t);
        return r;
}

START_TEST(linux_lines)
{
        mount_table_t t = parse_ok(
            "22 27 0:21 / /proc rw,relatime - proc proc rw\n"
            "27 1 8:1 / / rw,relatime shared:1 master:2 - ext4 /dev/sda1 rw,errors=remount-ro\n"
            "40 27 0:40 / /var/lib/hangar ro,nosuid,nodev - tmpfs tmpfs rw,size=65536k\n");
        ck_assert_uint_eq(t.n, 3);
        ck_assert_uint_eq(t.entries[1].id, 27);
        ck_assert_uint_eq(t.entries[1].parent_id, 1);
        ck_assert_str_eq(t.entries[1].mount_point, "/");
        ck_assert_str_eq(t.entries[1].fstype, "ext4");
        ck_assert_str_eq(t.entries[1].source, "/dev/sda1");
        ck_assert_str_eq(t.entries[1].super_options, "rw,errors=remount-ro");
        ck_assert(!t.entries[1].read_only);
        /* Read-only is the per-mount option, even over a writable superblock. */
        ck_assert(t.entries[2].read_only);
        ck_assert_str_eq(t.entries[2].mount_options, "ro,nosuid,nodev");
        mountinfo_free(&t);
}
END_TEST

START_TEST(octal_escapes_decoded)
{
        mount_table_t t = parse_ok("30 27 0:50 /a\\040b /mnt/with\\040space\\011tab\\134 rw - "
                                   "tmpfs none\\040x rw\n");
        ck_assert_str_eq(t.entries[0].root, "/a b");
        ck_assert_str_eq(t.entries[0].mount_point, "/mnt/with space\ttab\\");
        ck_assert_str_eq(t.entries[0].source, "none x");
        mountinfo_free(&t);
}
END_TEST

START_TEST(gvisor_lines)
{
        /* gVisor: source "none", 9p root, and sometimes no super options. */
        mount_table_t t = parse_ok("1 0 0:1 / / ro - 9p none rw,trans=fd\n"
                                   "5 1 0:5 / /var/lib/hangar-ctl rw - tmpfs none \n"
                                   "6 1 0:6 / /var/lib/hangar rw - tmpfs none rw");
        ck_assert_uint_eq(t.n, 3);
        ck_assert(t.entries[0].read_only);
        ck_assert_str_eq(t.entries[0].source, "none");
        ck_assert_str_eq(t.entries[1].super_options, "");
        ck_assert_str_eq(mountinfo_find(&t, "/var/lib/hangar")->fstype, "tmpfs");
        mountinfo_free(&t);
}
END_TEST

START_TEST(nsfs_root_is_not_a_path)
{
        /* A pinned network namespace, as `ip netns add` or a CRI leaves on
         * the host: the root is the nsfs name, not a path. */
        mount_table_t t = parse_ok("27 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
                                   "88 27 0:4 net:[4026532328] /run/netns/a rw - nsfs nsfs rw\n");
        ck_assert_uint_eq(t.n, 2);
        ck_assert_str_eq(t.entries[1].root, "net:[4026532328]");
        ck_assert_str_eq(t.entries[1].fstype, "nsfs");
        mountinfo_free(&t);
}
END_TEST

START_TEST(find_takes_the_last_mount)
{
        mount_table_t t = parse_ok("1 0 0:1 / / rw - ext4 /dev/a rw\n"
                                   "2 1 0:2 / /x rw - tmpfs tmpfs rw\n"
                                   "3 1 0:3 / /x ro - tmpfs tmpfs rw\n");
        ck_assert_uint_eq(mountinfo_find(&t, "/x")->id, 3);
        ck_assert(mountinfo_find(&t, "/x")->read_only);
        ck_assert_ptr_null(mountinfo_find(&t, "/y"));
        mountinfo_free(&t);
}
END_TEST

START_TEST(has_option_is_exact)
{
        ck_assert(mountinfo_has_option("rw,nosuid,ro", "ro"));
        ck_assert(mountinfo_has_option("ro", "ro"));
        ck_assert(!mountinfo_has_option("rw,errors=remount-ro", "ro"));
        ck_assert(!mountinfo_has_option("rom", "ro"));
        ck_assert(!mountinfo_has_option("", "ro"));
}
END_TEST

START_TEST(malformed_refused)
{
        static const char *const bad[] = {
            "22 27 0:21 / /proc rw,relatime proc proc rw\n",     /* no separator */
            "22 27 0:21 / /proc rw - proc\n",                    /* too few after "-" */
            "x 27 0:21 / /proc rw - proc proc rw\n",             /* id not a number */
            "22 27 021 / /proc rw - proc proc rw\n",             /* bad major:minor */
            "22 27 0:21 / proc rw - proc proc rw\n",             /* relative mount point */
            "22  27 0:21 / /proc rw - proc proc rw\n",           /* empty field */
            "22 27 0:21 / /p\\04 rw - proc proc rw\n",           /* short escape */
            "22 27 0:21 / /p\\089 rw - proc proc rw\n",          /* not octal */
            "22 27 0:21 / /p\\000 rw - proc proc rw\n",          /* NUL escape */
            "22 27 0:21 / /proc rw - proc proc rw extra more\n", /* too many */
            "22 27 0:21 / /proc rw - proc proc\n",               /* no super options at all */
            "99999999999 27 0:21 / /proc rw - proc proc rw\n",   /* overflow */
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                hg_error_t err = {0};
                ck_assert_msg(parse_err(bad[i], &err) < 0, "accepted: %s", bad[i]);
                ck_assert_msg(strstr(err.message, "line 1") != NULL, "message: %s", err.message);
        }
}
END_TEST

START_TEST(error_names_the_line)
{
        hg_error_t err = {0};
        ck_assert_int_lt(parse_err("1 0 0:1 / / rw - ext4 /dev/a rw\nbroken\n", &err), 0);
        ck_assert_ptr_nonnull(strstr(err.message, "line 2"));
}
END_TEST

START_TEST(embedded_nul_refused)
{
        static const char text[] = "1 0 0:1 / / rw - ext4 /dev/a rw\n2 1 0:2 / /\0x rw - a b c\n";
        mount_table_t t = {0};
        hg_error_t err = {0};
        ck_assert_int_lt(mountinfo_parse(text, sizeof(text) - 1, &t, &err), 0);
}
END_TEST

static Suite *mountinfo_suite(void)
{
        Suite *s = suite_create("mountinfo");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, linux_lines);
        tcase_add_test(tc, octal_escapes_decoded);
        tcase_add_test(tc, gvisor_lines);
        tcase_add_test(tc, nsfs_root_is_not_a_path);
        tcase_add_test(tc, find_takes_the_last_mount);
        tcase_add_test(tc, has_option_is_exact);
        tcase_add_test(tc, malformed_refused);
        tcase_add_test(tc, error_names_the_line);
        tcase_add_test(tc, embedded_nul_refused);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(mountinfo_suite());
}
