/* The HANGAR_UID_SPLIT verdict: the pod's spec report and each container's
 * report, combined under a mode. A pure function of its inputs. */
#pragma once

#include <jansson.h>

typedef enum split_mode {
        SPLIT_OFF,      /* never split */
        SPLIT_AUTO,     /* split where the pod passes, else single-user with the reason */
        SPLIT_REQUIRED, /* split where the pod passes, else refuse */
} split_mode_t;

typedef enum verdict {
        VERDICT_REFUSED, /* first: a zeroed verdict fails closed */
        VERDICT_SINGLE_USER,
        VERDICT_SPLIT_ACTIVE,
} verdict_t;

int verdict_parse_mode(const char *s, split_mode_t *ret);
const char *verdict_mode_name(split_mode_t m);
const char *verdict_name(verdict_t v);

/* spec, agent, driver: the JSON reports (NULL if missing). Returns the
 * verdict object {"mode", "verdict", "reasons": [{"code", "detail"}]}. */
json_t *verdict_decide(split_mode_t mode, json_t *spec, json_t *agent, json_t *driver,
                       verdict_t *ret);
