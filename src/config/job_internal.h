/* The job parser, internal to src/config: what its three files share. job_entries.c: models,
 * pools, systems and stacks; job_space.c: the space and its feasibility checks; job.c:
 * metrics, the objective, the probe section, loading, the fingerprint and the printers. */
#ifndef CLUSTERDSE_CONFIG_JOB_INTERNAL_H
#define CLUSTERDSE_CONFIG_JOB_INTERNAL_H

#include "clusterdse/config/job.h"

#include "clusterdse/config/bands.h"
#include "clusterdse/config/probe_plan.h"
#include "clusterdse/config/stack.h"
#include "hw_axes.h"
#include "keys.h"
#include "clusterdse/config/datadir.h"

#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bounds of gpus (axes.h). */
#define MAX_GPUS ((double)CDSE_MAX_GPUS)

/* ---- job_entries.c ---- */
extern const key_table job__member_table;
extern const key_table job__model_table;
extern const char *const job__partition_names[]; /* systems[].partition (hardware.h) */
int job__parse_models(parse_ctx *ctx, const config_setting_t *setting, void *target,
                      const key_spec *key);
int job__parse_stacks(parse_ctx *ctx, const config_setting_t *setting, void *target,
                      const key_spec *key);
int job__parse_systems(parse_ctx *ctx, const config_setting_t *setting, void *target,
                       const key_spec *key);
extern const key_table job__pool_table;

/* ---- job_space.c ---- */
int job__parse_space(parse_ctx *ctx, const config_setting_t *setting, void *target,
                     const key_spec *key);
extern const key_table job__space_table;

/* ---- job.c ---- */
void job__print_seq_histogram(FILE *out, const void *target, const key_spec *key, int indent);

#endif
