/* The HANGAR_UID_SPLIT verdict: the pod's spec report and each container's
 * report, combined under a mode. A pure function of its inputs. */
#pragma once

#include <jansson.h>

#include "split.h"

/* spec, agent, driver: the JSON reports (NULL if missing). Returns the
 * verdict object {"mode", "verdict", "reasons": [{"code", "detail"}]}. */
json_t *verdict_decide(split_mode_t mode, json_t *spec, json_t *agent, json_t *driver,
                       verdict_t *ret);
