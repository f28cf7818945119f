/* webhook/ownerevent.c's Event: what `hangar-webhook audit --events` posts
 * on a driver-failed pod's controller owner. Posting it (and counting it
 * again) runs against the node's API server in node_agent_sandbox. */
#include "ownerevent.h"

#include <errno.h>
#include <string.h>

#include "unit.h"

#define OWNER                                                                    \
        "{\"apiVersion\": \"agents.x-k8s.io/v1beta1\", \"kind\": \"Sandbox\", "  \
        "\"name\": \"box\", \"uid\": \"0b0c0d0e-1111-2222-3333-444455556666\", " \
        "\"controller\": true, \"blockOwnerDeletion\": true}"
#define OTHER                                                                  \
        "{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"name\": \"cm\", " \
        "\"uid\": \"9a9a9a9a-0000-0000-0000-000000000000\"}"

/* A stored pod with these ownerReferences (a JSON array, or NULL). */
static json_t *pod_owned_by(const char *refs)
{
        char text[1024];
        (void)snprintf(text, sizeof(text),
                       "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": "
                       "\"box\", \"namespace\": \"sbx\", \"uid\": "
                       "\"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\"%s%s}}",
                       refs ? ", \"ownerReferences\": " : "", refs ? refs : "");
        return unit_json(text);
}

START_TEST(event_on_the_controller_owner)
{
        _unit_json_ json_t *pod = pod_owned_by("[" OTHER ", " OWNER "]");
        owner_event_t who;
        hg_error_t err = {0};
        /* 2026-12-07T19:00:00Z */
        _unit_json_ json_t *ev =
            owner_event_build(pod, "hangar-driver cannot start", 1796670000, &who, &err);
        ck_assert_ptr_nonnull(ev);
        ck_assert_str_eq(who.kind, "Sandbox");
        ck_assert_str_eq(who.name, "box");
        ck_assert_int_eq(who.action, OWNER_EVENT_NONE);
        ck_assert_json_eq_text(
            ev, "{\"apiVersion\": \"v1\", \"kind\": \"Event\", \"metadata\": {\"name\": "
                "\"hangar-driver-failed.aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\", \"namespace\": "
                "\"sbx\"}, \"involvedObject\": {\"apiVersion\": \"agents.x-k8s.io/v1beta1\", "
                "\"kind\": \"Sandbox\", \"name\": \"box\", \"namespace\": \"sbx\", \"uid\": "
                "\"0b0c0d0e-1111-2222-3333-444455556666\"}, \"reason\": \"HangarDriverFailed\", "
                "\"message\": \"pod box: hangar-driver cannot start\", \"type\": \"Warning\", "
                "\"source\": {\"component\": \"hangar-webhook\"}, \"firstTimestamp\": "
                "\"2026-12-07T19:00:00Z\", \"lastTimestamp\": \"2026-12-07T19:00:00Z\", "
                "\"count\": 1}");
}
END_TEST

START_TEST(no_controller_owner_is_enoent)
{
        owner_event_t who;
        hg_error_t err = {0};
        _unit_json_ json_t *bare = pod_owned_by(NULL);
        ck_assert_ptr_null(owner_event_build(bare, "m", 0, &who, &err));
        ck_assert_int_eq(err.code, -ENOENT);
        /* An owner that is not the controller is not told. */
        err = (hg_error_t){0};
        _unit_json_ json_t *other = pod_owned_by("[" OTHER "]");
        ck_assert_ptr_null(owner_event_build(other, "m", 0, &who, &err));
        ck_assert_int_eq(err.code, -ENOENT);
        /* Posting for such a pod sends nothing and is not an error (no
         * client is needed to know it). */
        err = (hg_error_t){0};
        ck_assert_int_eq(owner_event_post(NULL, other, "m", 0, &who, &err), 0);
        ck_assert_int_eq(who.action, OWNER_EVENT_NONE);
        ck_assert_int_eq(err.code, 0);
        ck_assert_str_eq(owner_event_action_name(who.action), "none");
}
END_TEST

START_TEST(malformed_pods_and_owners_are_refused)
{
        owner_event_t who;
        hg_error_t err = {0};
        /* An owner without a uid cannot be named by an Event. */
        _unit_json_ json_t *pod = pod_owned_by(
            "[{\"apiVersion\": \"v1\", \"kind\": \"X\", \"name\": \"x\", \"controller\": true}]");
        ck_assert_ptr_null(owner_event_build(pod, "m", 0, &who, &err));
        ck_assert_int_eq(err.code, -EINVAL);
        ck_assert_msg_has(err, "lacks apiVersion, kind, name or uid");
        /* A uid that is not a DNS label would make a bad Event name. */
        err = (hg_error_t){0};
        _unit_json_ json_t *bad_uid =
            unit_json("{\"metadata\": {\"name\": \"p\", \"namespace\": \"sbx\", \"uid\": \"a/b\", "
                      "\"ownerReferences\": [" OWNER "]}}");
        ck_assert_ptr_null(owner_event_build(bad_uid, "m", 0, &who, &err));
        ck_assert_int_eq(err.code, -EINVAL);
        ck_assert_int_eq(owner_event_post(NULL, bad_uid, "m", 0, &who, &err), -EINVAL);
        _unit_json_ json_t *not_obj = unit_json("[]");
        ck_assert_ptr_null(owner_event_build(not_obj, "m", 0, &who, &err));
}
END_TEST

START_TEST(long_messages_are_cut_at_a_character)
{
        _unit_json_ json_t *pod = pod_owned_by("[" OWNER "]");
        /* "pod box: " is 9 bytes; then 2-byte characters across the limit. */
        char msg[2 * OWNER_EVENT_MESSAGE_MAX + 1];
        size_t n = 0;
        while (n + 2 < sizeof(msg)) {
                msg[n++] = (char)0xC3;
                msg[n++] = (char)0xA9; /* é */
        }
        msg[n] = '\0';
        owner_event_t who;
        hg_error_t err = {0};
        _unit_json_ json_t *ev = owner_event_build(pod, msg, 0, &who, &err);
        ck_assert_ptr_nonnull(ev);
        const char *got = json_string_value(json_object_get(ev, "message"));
        size_t len = strlen(got);
        ck_assert_uint_le(len, OWNER_EVENT_MESSAGE_MAX);
        ck_assert_uint_ge(len, OWNER_EVENT_MESSAGE_MAX - 1);
        /* The last character is whole: the cut fell before its first byte. */
        ck_assert_int_eq((unsigned char)got[len - 1], 0xA9);
        ck_assert_str_eq(json_string_value(json_object_get(ev, "firstTimestamp")),
                         "1970-01-01T00:00:00Z");
}
END_TEST

static Suite *ownerevent_suite(void)
{
        Suite *s = suite_create("ownerevent");
        TCase *tc = tcase_create("core");
        tcase_add_test(tc, event_on_the_controller_owner);
        tcase_add_test(tc, no_controller_owner_is_enoent);
        tcase_add_test(tc, malformed_pods_and_owners_are_refused);
        tcase_add_test(tc, long_messages_are_cut_at_a_character);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(ownerevent_suite());
}
