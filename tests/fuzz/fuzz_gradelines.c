/* libFuzzer target: the bytes a grade brings back to `hangar grade`
 * (client/gradelines.c) and the pod JSON it reads its agent from
 * (client/podagent.c). Input: one byte (bits 0-1: the grader side's stdout
 * through gradewatch, its stderr's last line through gradeside_outcome, or
 * the rest as a pod's JSON through podagent_resolve, with and without an
 * override; the other bits: the chunk size, 0 = all at once), then the
 * bytes. Invariants: READY and BROKEN are final; READY holds a ready line
 * with findings, BROKEN says why and holds nothing; the first line kept is
 * within its bound; an outcome is an object with a "grade" string; an
 * agent resolved is a container name, never hangar-driver, and the
 * programs' paths are the bundle's or the bare names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "gradelines.h"
#include "podagent.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void stdout_bytes(const uint8_t *data, size_t size, size_t chunk)
{
        gradewatch_t w;
        gradewatch_init(&w);
        gradewatch_state_t last = GRADEWATCH_WAITING;
        for (size_t i = 0; i < size; i += chunk) {
                size_t n = size - i < chunk ? size - i : chunk;
                int s = gradewatch_feed(&w, data + i, n);
                if (s < 0)
                        break;
                if (last != GRADEWATCH_WAITING && s != (int)last)
                        abort();
                last = (gradewatch_state_t)s;
                if (w.first.len > GRADEWATCH_LINE_MAX)
                        abort();
        }
        gradewatch_state_t s = gradewatch_end(&w);
        if (s == GRADEWATCH_WAITING)
                abort();
        if (s == GRADEWATCH_READY &&
            (!w.ready ||
             strcmp(json_string_value(json_object_get(w.ready, "grade")), "ready") != 0 ||
             !json_is_object(json_object_get(w.ready, "findings"))))
                abort();
        if (s == GRADEWATCH_BROKEN && (w.ready || !w.why[0] || w.first.len))
                abort();
        gradewatch_free(&w);
}

static void stderr_bytes(const uint8_t *data, size_t size)
{
        json_t *o = gradeside_outcome((const char *)data, size);
        if (o && !json_is_string(json_object_get(o, "grade")))
                abort();
        json_decref(o);
}

static void pod_bytes(const uint8_t *data, size_t size)
{
        json_error_t e;
        json_t *pod = json_loadb((const char *)data, size, JSON_DECODE_ANY, &e);
        if (!pod)
                return;
        static hg_config_t cfg;
        static int have;
        if (!have)
                have = config_init_defaults(&cfg) == 0 ? 1 : -1;
        if (have < 0)
                abort();
        static const char *const overrides[] = {NULL, "sandbox", "hangar-driver", "agent"};
        for (size_t i = 0; i < sizeof(overrides) / sizeof(overrides[0]); i++) {
                podagent_t a;
                char why[256], path[256];
                if (podagent_resolve(&cfg, pod, overrides[i], &a, why, sizeof(why)) < 0)
                        continue;
                if (!a.container[0] || strcmp(a.container, "hangar-driver") == 0 ||
                    strchr(a.container, '/'))
                        abort();
                const char *p = podagent_program(&a, "hangar-relay", NULL, path, sizeof(path));
                if (strcmp(p, a.bundle ? "/opt/hangar/bin/hangar-relay" : "hangar-relay") != 0)
                        abort();
        }
        json_decref(pod);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1)
                return 0;
        unsigned mode = data[0] & 3;
        size_t chunk = data[0] >> 2;
        data++, size--;
        if (chunk == 0)
                chunk = size ? size : 1;
        if (mode == 0 || mode == 3)
                stdout_bytes(data, size, chunk);
        else if (mode == 1)
                stderr_bytes(data, size);
        else
                pod_bytes(data, size);
        return 0;
}
