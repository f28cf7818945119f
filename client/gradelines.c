#include "gradelines.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cleanup.h"
#include "jsonx.h"

/* The ready line's findings hold the sweep's report: a few levels. */
#define READY_DEPTH_MAX 6

void gradewatch_init(gradewatch_t *w)
{
        *w = (gradewatch_t){.state = GRADEWATCH_WAITING};
}

static int broken(gradewatch_t *w, const char *why)
{
        w->state = GRADEWATCH_BROKEN;
        (void)snprintf(w->why, sizeof(w->why), "%s", why);
        strbuf_free(&w->first);
        return (int)w->state;
}

/* The first line, whole: hangar-grade's ready line or not. */
static int judge_first(gradewatch_t *w)
{
        json_t *j = NULL;
        hg_error_t err = {0};
        const char *grade = NULL;
        if (jsonx_load(w->first.data ? w->first.data : "", w->first.len, READY_DEPTH_MAX, &j,
                       &err) < 0 ||
            !json_is_object(j) || jsonx_string(j, "grade", &grade) < 0 || !grade) {
                json_decref(j);
                return broken(w, "the grader side's first line is not its ready line");
        }
        if (strcmp(grade, "ready") != 0 || !json_is_object(json_object_get(j, "findings"))) {
                json_decref(j);
                return broken(w, "the grader side's first line is not a ready line with its "
                                 "findings");
        }
        w->ready = j;
        w->state = GRADEWATCH_READY;
        strbuf_free(&w->first);
        return (int)w->state;
}

int gradewatch_feed(gradewatch_t *w, const uint8_t *data, size_t n)
{
        if (w->state != GRADEWATCH_WAITING)
                return (int)w->state;
        const uint8_t *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (w->first.len + take > GRADEWATCH_LINE_MAX)
                return broken(w, "a first line of more than 65536 bytes on the grader side's "
                                 "stdout");
        if (strbuf_append(&w->first, (const char *)data, take) < 0)
                return -ENOMEM;
        return nl ? judge_first(w) : (int)w->state;
}

gradewatch_state_t gradewatch_end(gradewatch_t *w)
{
        if (w->state == GRADEWATCH_WAITING)
                (void)broken(w, w->first.len ? "the grader side's stdout ended inside its first "
                                               "line"
                                             : "the grader side ended without a ready line");
        return w->state;
}

void gradewatch_free(gradewatch_t *w)
{
        strbuf_free(&w->first);
        json_decref(w->ready);
        w->ready = NULL;
}

json_t *gradeside_outcome(const char *text, size_t len)
{
        if (!text)
                return NULL;
        while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
                len--;
        const char *start = text + len;
        while (start > text && start[-1] != '\n')
                start--;
        json_t *j = NULL;
        hg_error_t err = {0};
        const char *grade = NULL;
        if (jsonx_load(start, (size_t)(text + len - start), 4, &j, &err) < 0 ||
            !json_is_object(j) || jsonx_string(j, "grade", &grade) < 0 || !grade) {
                json_decref(j);
                return NULL;
        }
        return j;
}
