/* Unit tests for driver/turn/turnstate: the turn's state machine. Every
 * transition from every state (allowed ones move, the rest change
 * nothing), the first end winning, each end reason with its text, the
 * connect, linger and drain deadlines, and the next deadline the loop
 * waits for. */
#include <stdint.h>
#include <string.h>

#include "cleanup.h"
#include "turnstate.h"
#include "unit.h"

static const turn_state_t all_states[] = {TURN_STATE_IDLE, TURN_STATE_WAITING, TURN_STATE_RUNNING,
                                          TURN_STATE_EXITED, TURN_STATE_ENDED};

static turnstate_t in_state(turn_state_t s)
{
        turnstate_t ts = {.state = s};
        return ts;
}

/* A turn that started at 1000 ms with a 120 s connect timeout. */
static turnstate_t waiting(void)
{
        turnstate_t ts;
        memset(&ts, 0x5a, sizeof(ts));
        turnstate_begin(&ts);
        turnstate_listening(&ts, 1000, 120);
        return ts;
}

static turnstate_t running(void)
{
        turnstate_t ts = waiting();
        ck_assert(turnstate_connected(&ts));
        return ts;
}

/* Exited at 5000 ms with linger_s. */
static turnstate_t exited(unsigned linger_s)
{
        turnstate_t ts = running();
        ck_assert(turnstate_exited(&ts, 5000, linger_s));
        return ts;
}

#define ck_assert_ended(ts, want_end, want_reason)              \
        do {                                                    \
                ck_assert_int_eq((ts).state, TURN_STATE_ENDED); \
                ck_assert_str_eq((ts).end, (want_end));         \
                ck_assert_str_eq((ts).reason, (want_reason));   \
                ck_assert(!turnstate_active(&(ts)));            \
        } while (0)

START_TEST(names)
{
        ck_assert_str_eq(turnstate_name(TURN_STATE_IDLE), "idle");
        ck_assert_str_eq(turnstate_name(TURN_STATE_WAITING), "waiting-for-relay");
        ck_assert_str_eq(turnstate_name(TURN_STATE_RUNNING), "running");
        ck_assert_str_eq(turnstate_name(TURN_STATE_EXITED), "harness-exited");
        ck_assert_str_eq(turnstate_name(TURN_STATE_ENDED), "ended");
        ck_assert_str_eq(turnstate_name((turn_state_t)99), "ended");
}
END_TEST

START_TEST(active_from_start_to_end)
{
        bool want[] = {false, true, true, true, false};
        for (size_t i = 0; i < ARRAY_SIZE(all_states); i++) {
                turnstate_t ts = in_state(all_states[i]);
                ck_assert_int_eq(turnstate_active(&ts), want[i]);
        }
}
END_TEST

START_TEST(begin_clears_the_last_turn)
{
        turnstate_t ts = exited(300);
        ts.finish_requested = ts.io_eof_seen = true;
        turnstate_end(&ts, "done", "finished by hangar");
        turnstate_begin(&ts);
        ck_assert_int_eq(ts.state, TURN_STATE_WAITING);
        ck_assert_str_eq(ts.end, "");
        ck_assert_str_eq(ts.reason, "");
        ck_assert(!ts.finish_requested && !ts.io_eof_seen);
        ck_assert_int_eq(ts.connect_deadline, 0);
        ck_assert_int_eq(ts.linger_deadline, 0);
        ck_assert_int_eq(ts.drain_deadline, 0);
        turnstate_listening(&ts, 7, 3);
        ck_assert_int_eq(ts.connect_deadline, 3007);
}
END_TEST

START_TEST(connected_only_from_waiting)
{
        for (size_t i = 0; i < ARRAY_SIZE(all_states); i++) {
                turnstate_t ts = in_state(all_states[i]);
                bool moved = turnstate_connected(&ts);
                ck_assert_int_eq(moved, all_states[i] == TURN_STATE_WAITING);
                ck_assert_int_eq(ts.state, moved ? TURN_STATE_RUNNING : all_states[i]);
        }
}
END_TEST

START_TEST(exited_only_from_running)
{
        for (size_t i = 0; i < ARRAY_SIZE(all_states); i++) {
                turnstate_t ts = in_state(all_states[i]);
                bool moved = turnstate_exited(&ts, 100, 1);
                ck_assert_int_eq(moved, all_states[i] == TURN_STATE_RUNNING);
                ck_assert_int_eq(ts.state, moved ? TURN_STATE_EXITED : all_states[i]);
                if (!moved)
                        ck_assert_int_eq(ts.linger_deadline, 0);
        }
}
END_TEST

START_TEST(exit_deadlines)
{
        /* A linger past the drain grace: the drain waits as long. */
        turnstate_t ts = exited(300);
        ck_assert_int_eq(ts.linger_deadline, 5000 + 300000);
        ck_assert_int_eq(ts.drain_deadline, 5000 + 300000);
        /* linger 0: the turn is done at once, but the log's end still gets
         * the grace. */
        ts = exited(0);
        ck_assert_int_eq(ts.linger_deadline, 5000);
        ck_assert_int_eq(ts.drain_deadline, 5000 + TURNSTATE_DRAIN_GRACE_MS);
        ts = exited(1);
        ck_assert_int_eq(ts.drain_deadline, 5000 + TURNSTATE_DRAIN_GRACE_MS);
        ts = exited(2);
        ck_assert_int_eq(ts.drain_deadline, 5000 + TURNSTATE_DRAIN_GRACE_MS);
        ts = exited(3);
        ck_assert_int_eq(ts.drain_deadline, 8000);
}
END_TEST

START_TEST(first_end_wins)
{
        turnstate_t ts = running();
        turnstate_end(&ts, "relay-lost", "io closed before the harness's exit status");
        turnstate_end(&ts, "done", "linger elapsed");
        turnstate_end(&ts, "driver-stopped", "signal 15");
        ck_assert_ended(ts, "relay-lost", "io closed before the harness's exit status");
}
END_TEST

START_TEST(idle_never_ends)
{
        turnstate_t ts = in_state(TURN_STATE_IDLE);
        turnstate_end(&ts, "driver-stopped", "signal %u", 15u);
        ck_assert_int_eq(ts.state, TURN_STATE_IDLE);
        ck_assert_str_eq(ts.end, "");
}
END_TEST

START_TEST(end_from_each_active_state)
{
        turnstate_t all[] = {waiting(), running(), exited(10)};
        for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
                turnstate_end(&all[i], "driver-stopped", "signal %u", 15u);
                ck_assert_ended(all[i], "driver-stopped", "signal 15");
        }
}
END_TEST

START_TEST(end_text_is_bounded)
{
        turnstate_t ts = running();
        char long_end[100], long_reason[1000];
        memset(long_end, 'e', sizeof(long_end) - 1);
        long_end[sizeof(long_end) - 1] = '\0';
        memset(long_reason, 'r', sizeof(long_reason) - 1);
        long_reason[sizeof(long_reason) - 1] = '\0';
        turnstate_end(&ts, long_end, "%s", long_reason);
        ck_assert_int_eq(ts.state, TURN_STATE_ENDED);
        ck_assert_uint_eq(strlen(ts.end), sizeof(ts.end) - 1);
        ck_assert_uint_eq(strlen(ts.reason), sizeof(ts.reason) - 1);
}
END_TEST

START_TEST(never_connected)
{
        turnstate_t ts = waiting();
        turnstate_check_connect(&ts, 120999, 120);
        ck_assert_int_eq(ts.state, TURN_STATE_WAITING);
        turnstate_check_connect(&ts, 121000, 120);
        ck_assert_ended(ts, "relay-never-connected", "no relay within 120 s");
        /* Once running, the connect deadline means nothing. */
        ts = running();
        turnstate_check_connect(&ts, INT64_MAX, 120);
        ck_assert_int_eq(ts.state, TURN_STATE_RUNNING);
}
END_TEST

START_TEST(channel_closed_while_running)
{
        turnstate_t ts = running();
        turnstate_channel_closed(&ts, false);
        ck_assert_ended(ts, "relay-lost", "io closed before the harness's exit status");
        ts = running();
        turnstate_channel_closed(&ts, true);
        ck_assert_ended(ts, "relay-lost", "ctl closed before the harness's exit status");
}
END_TEST

START_TEST(channel_closed_after_exit)
{
        /* io closing after EXIT is the log's end, not the turn's. */
        turnstate_t ts = exited(300);
        turnstate_channel_closed(&ts, false);
        ck_assert_int_eq(ts.state, TURN_STATE_EXITED);
        /* ctl closing is the relay's own end of the turn. */
        turnstate_channel_closed(&ts, true);
        ck_assert_ended(ts, "done", "the relay closed ctl");
        /* Ended or waiting: nothing changes. */
        turnstate_channel_closed(&ts, true);
        ck_assert_ended(ts, "done", "the relay closed ctl");
        ts = waiting();
        turnstate_channel_closed(&ts, true);
        turnstate_channel_closed(&ts, false);
        ck_assert_int_eq(ts.state, TURN_STATE_WAITING);
}
END_TEST

START_TEST(linger_elapsed)
{
        turnstate_t ts = exited(10); /* linger until 15000, drain until 15000 */
        turnstate_check_linger(&ts, 14999, true);
        ck_assert_int_eq(ts.state, TURN_STATE_EXITED);
        /* Past the linger with the log's end not yet in: still waiting. */
        ts.drain_deadline = 16000;
        turnstate_check_linger(&ts, 15000, true);
        ck_assert_int_eq(ts.state, TURN_STATE_EXITED);
        turnstate_check_linger(&ts, 16000, true);
        ck_assert_ended(ts, "done", "linger elapsed");
}
END_TEST

START_TEST(finished_by_hangar)
{
        turnstate_t ts = exited(300);
        ts.finish_requested = true;
        /* The log's end not in yet, io still open, before the drain: wait. */
        turnstate_check_linger(&ts, 6000, true);
        ck_assert_int_eq(ts.state, TURN_STATE_EXITED);
        ts.io_eof_seen = true;
        turnstate_check_linger(&ts, 6000, true);
        ck_assert_ended(ts, "done", "finished by hangar");
        /* io already gone: the log is as whole as it gets. */
        ts = exited(300);
        ts.finish_requested = true;
        turnstate_check_linger(&ts, 6000, false);
        ck_assert_ended(ts, "done", "finished by hangar");
}
END_TEST

START_TEST(linger_only_when_exited)
{
        turnstate_t all[] = {waiting(), running()};
        for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
                turn_state_t before = all[i].state;
                all[i].finish_requested = all[i].io_eof_seen = true;
                turnstate_check_linger(&all[i], INT64_MAX, false);
                ck_assert_int_eq(all[i].state, before);
        }
}
END_TEST

START_TEST(next_deadline)
{
        turnstate_t ts = waiting(); /* connect by 121000 */
        ck_assert_int_eq(turnstate_next_deadline(&ts, INT64_MAX), 121000);
        ck_assert_int_eq(turnstate_next_deadline(&ts, 3000), 3000); /* a handshake's */
        ck_assert_int_eq(turnstate_next_deadline(&ts, 200000), 121000);
        /* Running: nothing moves the turn by itself. */
        ts = running();
        ck_assert_int_eq(turnstate_next_deadline(&ts, 3000), INT64_MAX);
        /* Exited: the linger, or the drain while the log's end is awaited. */
        ts = exited(300);
        ts.drain_deadline = 7000;
        ck_assert_int_eq(turnstate_next_deadline(&ts, 3000), 7000);
        ts.io_eof_seen = true;
        ck_assert_int_eq(turnstate_next_deadline(&ts, 3000), 5000 + 300000);
        turnstate_t idle = in_state(TURN_STATE_IDLE), ended = in_state(TURN_STATE_ENDED);
        ck_assert_int_eq(turnstate_next_deadline(&idle, 0), INT64_MAX);
        ck_assert_int_eq(turnstate_next_deadline(&ended, 0), INT64_MAX);
}
END_TEST

/* A whole turn, as the daemon drives it. */
START_TEST(whole_turn)
{
        turnstate_t ts = waiting();
        turnstate_check_connect(&ts, 2000, 120);
        ck_assert(turnstate_connected(&ts));
        ck_assert(!turnstate_connected(&ts)); /* a second time: no */
        turnstate_check_linger(&ts, 3000, true);
        ck_assert_int_eq(ts.state, TURN_STATE_RUNNING);
        ck_assert(turnstate_exited(&ts, 4000, 0));
        ck_assert(!turnstate_exited(&ts, 4001, 0)); /* a second EXIT moves nothing */
        ts.io_eof_seen = true;
        turnstate_check_linger(&ts, 4000, true);
        ck_assert_ended(ts, "done", "linger elapsed");
}
END_TEST

static Suite *turnstate_suite(void)
{
        Suite *s = suite_create("turnstate");
        TCase *tc = tcase_create("turnstate");
        tcase_add_test(tc, names);
        tcase_add_test(tc, active_from_start_to_end);
        tcase_add_test(tc, begin_clears_the_last_turn);
        tcase_add_test(tc, connected_only_from_waiting);
        tcase_add_test(tc, exited_only_from_running);
        tcase_add_test(tc, exit_deadlines);
        tcase_add_test(tc, first_end_wins);
        tcase_add_test(tc, idle_never_ends);
        tcase_add_test(tc, end_from_each_active_state);
        tcase_add_test(tc, end_text_is_bounded);
        tcase_add_test(tc, never_connected);
        tcase_add_test(tc, channel_closed_while_running);
        tcase_add_test(tc, channel_closed_after_exit);
        tcase_add_test(tc, linger_elapsed);
        tcase_add_test(tc, finished_by_hangar);
        tcase_add_test(tc, linger_only_when_exited);
        tcase_add_test(tc, next_deadline);
        tcase_add_test(tc, whole_turn);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return unit_run(turnstate_suite());
}
