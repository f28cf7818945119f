/* The fixture the tests of the webhook's decisions share (admission,
 * hostile, inject): the default settings with the driver sidecar on, made
 * fresh for each test in cfg, and a cleanup attribute for an admission
 * outcome. Static like unit.h: each test is its own executable. */
#pragma once

#include "admission.h"
#include "settings.h"
#include "unit.h"

static webhook_settings_t cfg;

/* For tcase_add_checked_fixture: check runs them in each test's child. */
static inline void sidecar_cfg_setup(void)
{
        ck_assert_int_eq(settings_init_defaults(&cfg), 0);
        cfg.driver_sidecar = true;
}

static inline void sidecar_cfg_teardown(void)
{
        settings_free(&cfg);
}

static inline void unit_outcome_freep(admission_outcome_t *o)
{
        admission_outcome_free(o);
}
#define _outcome_ __attribute__((cleanup(unit_outcome_freep)))
