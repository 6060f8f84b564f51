/* Hardware axes of a job (internal to src/config): numeric keys of a system entry given as a
 * list. docs/job-file.md "Hardware axes". */
#ifndef CLUSTERDSE_CONFIG_HW_AXES_H
#define CLUSTERDSE_CONFIG_HW_AXES_H

#include "keys.h"

#include "clusterdse/config/job.h"

/* Where the hardware axes and the cluster sizes of the job being parsed were written, for the
 * messages of the checks that run after the tree changed: kept by the job parser for the time it
 * parses `systems` (parse_ctx.hw_sources). */
typedef struct cdse__written {
    char path[160];
    const char *file;
    int line;
} cdse__written;
struct cdse__hw_sources {
    cdse__written axis[CDSE_MAX_HW_AXES]; /* each hardware axis */
    struct {
        int n; /* sizes given; 0 = none */
        bool nodes;
        cdse__written at;
    } size[CDSE_MAX_SYSTEMS]; /* each system's gpus or nodes */
};

/* Records every sweepable key of the inline system entry `entry` (system `system` of the job)
 * that is given as a list, as an axis in job->hw_axis, and replaces the list in the tree by its
 * first value so that the entry parses as an ordinary profile. A list on a key that cannot be
 * swept, a list that is empty, longer than 64, not of numbers within the key's bounds or not
 * distinct, and a ninth axis are errors (file:line, key, what is allowed). */
int cdse__hw_extract(parse_ctx *ctx, config_setting_t *entry, int system, cdse_job *job);

/* Takes `gpus` or `nodes` (a number or a list) out of the inline system entry `entry` (system
 * `system`): the cluster sizes of that system (nodes are converted by cdse__sizes_check). */
int cdse__sizes_extract(parse_ctx *ctx, config_setting_t *entry, int system, cdse_job *job);

/* After the systems are parsed: every listed system gives sizes, the same number of values,
 * or none does; nodes become GPUs. */
int cdse__sizes_check(parse_ctx *ctx, const config_setting_t *systems, cdse_job *job);

/* After the job's systems are parsed: every value of every axis, alone and with every value of
 * each other axis, gives a valid system (cdse_system_check); the keys exist in the base
 * profile (a second network level, a memory tier); the job lists one system. */
int cdse__hw_check(parse_ctx *ctx, const config_setting_t *systems, const cdse_job *job);

/* Prints `body` (a system printed by the effective-job printer) with the values of the job's
 * hardware axes of system `system` as lists. */
void cdse__hw_print_body(FILE *out, const char *body, const cdse_job *job, int system);

#endif
