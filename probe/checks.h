/* Judgements: one container's observations against the sidecar's shape
 * (common/pod/shape.c, from the same configuration the webhook uses). Every check
 * is pass, fail or unknown, with what was observed, what was expected and
 * where it was read. A required check that is unknown makes the report
 * inconclusive, never a pass. */
#pragma once

#include <jansson.h>

#include "config.h"
#include "observe.h"
#include "shape.h"

typedef enum report_result {
        REPORT_FAIL,         /* first: a zeroed result fails closed */
        REPORT_INCONCLUSIVE, /* no required check failed, but one is unknown */
        REPORT_PASS,
} report_result_t;

const char *report_result_name(report_result_t r);

/* Builds the JSON report for role (SHAPE_ROLE_AGENT or SHAPE_ROLE_DRIVER). */
json_t *checks_run(const hg_config_t *cfg, shape_role_t role, const observation_t *o,
                   report_result_t *ret_result);
