#include "turnstate.h"

#include <stdarg.h>
#include <stdio.h>

const char *turnstate_name(turn_state_t s)
{
        switch (s) {
        case TURN_STATE_IDLE:
                return "idle";
        case TURN_STATE_WAITING:
                return "waiting-for-relay";
        case TURN_STATE_RUNNING:
                return "running";
        case TURN_STATE_EXITED:
                return "harness-exited";
        case TURN_STATE_ENDED:
        default:
                return "ended";
        }
}

bool turnstate_active(const turnstate_t *ts)
{
        return ts->state == TURN_STATE_WAITING || ts->state == TURN_STATE_RUNNING ||
               ts->state == TURN_STATE_EXITED;
}

void turnstate_begin(turnstate_t *ts)
{
        *ts = (turnstate_t){.state = TURN_STATE_WAITING};
}

void turnstate_listening(turnstate_t *ts, int64_t now, unsigned connect_timeout_s)
{
        ts->connect_deadline = now + (int64_t)connect_timeout_s * 1000;
}

void turnstate_end(turnstate_t *ts, const char *end, const char *fmt, ...)
{
        if (!turnstate_active(ts))
                return;
        snprintf(ts->end, sizeof(ts->end), "%s", end);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ts->reason, sizeof(ts->reason), fmt, ap);
        va_end(ap);
        ts->state = TURN_STATE_ENDED;
}

void turnstate_restored(turnstate_t *ts, uint64_t restores, const char *old_instance)
{
        turnstate_end(ts, "restored",
                      "the sandbox was restored from a checkpoint (restore %llu); the turn "
                      "began in instance %s",
                      (unsigned long long)restores, old_instance);
}

bool turnstate_connected(turnstate_t *ts)
{
        if (ts->state != TURN_STATE_WAITING)
                return false;
        ts->state = TURN_STATE_RUNNING;
        return true;
}

bool turnstate_exited(turnstate_t *ts, int64_t now, unsigned linger_s)
{
        if (ts->state != TURN_STATE_RUNNING)
                return false;
        ts->linger_deadline = now + (int64_t)linger_s * 1000;
        ts->drain_deadline = ts->linger_deadline > now + TURNSTATE_DRAIN_GRACE_MS
                                 ? ts->linger_deadline
                                 : now + TURNSTATE_DRAIN_GRACE_MS;
        ts->state = TURN_STATE_EXITED;
        return true;
}

void turnstate_channel_closed(turnstate_t *ts, bool is_ctl)
{
        const char *what = is_ctl ? "ctl closed" : "io closed";
        if (ts->state == TURN_STATE_RUNNING)
                turnstate_end(ts, "relay-lost", "%s before the harness's exit status", what);
        else if (is_ctl && ts->state == TURN_STATE_EXITED)
                turnstate_end(ts, "done", "the relay closed ctl");
}

void turnstate_check_connect(turnstate_t *ts, int64_t now, unsigned connect_timeout_s)
{
        if (ts->state == TURN_STATE_WAITING && now >= ts->connect_deadline)
                turnstate_end(ts, "relay-never-connected", "no relay within %u s",
                              connect_timeout_s);
}

void turnstate_check_linger(turnstate_t *ts, int64_t now, bool io_open)
{
        if (ts->state != TURN_STATE_EXITED || !(ts->finish_requested || now >= ts->linger_deadline))
                return;
        if (ts->io_eof_seen || !io_open || now >= ts->drain_deadline)
                turnstate_end(ts, "done", "%s",
                              ts->finish_requested ? "finished by hangar" : "linger elapsed");
}

int64_t turnstate_next_deadline(const turnstate_t *ts, int64_t listener_deadline)
{
        int64_t deadline = INT64_MAX;
        if (ts->state == TURN_STATE_WAITING) {
                deadline = ts->connect_deadline;
                if (listener_deadline < deadline)
                        deadline = listener_deadline;
        }
        if (ts->state == TURN_STATE_EXITED && ts->linger_deadline < deadline)
                deadline = ts->linger_deadline;
        if (ts->state == TURN_STATE_EXITED && !ts->io_eof_seen && ts->drain_deadline < deadline)
                deadline = ts->drain_deadline;
        return deadline;
}
