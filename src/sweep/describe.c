/* What a new store holds besides its rows, from the job (cdse_store_describe, sweep.h): the
 * sweep layer reads the job, the store only this description (store.h), so that the store
 * includes no configuration header (docs/architecture.md, tests/sh/include_graph.sh). */
#include "clusterdse/sweep/sweep.h"

#include "clusterdse/sweep/topk.h"

#include <stdio.h>
#include <string.h>

_Static_assert(CDSE_STORE_NOTE_MAX >= CDSE_PARETO_COST_NOTE_MAX,
               "the store's note of /pareto_cost holds cdse_pareto_cost_note's");

/* The dataset of axis `a` in /space: its name, its values, and for a hardware axis in use its
 * column and the system it applies to. */
static void describe_axis(const cdse_job *job, int a, cdse_store_axis *axis)
{
    const char *name = cdse_axis_name(a);
    if (name == NULL || name[0] == '\0' || name[0] == '?')
        snprintf(axis->name, sizeof axis->name, "axis_%d", a);
    else
        snprintf(axis->name, sizeof axis->name, "%s", name);
    axis->n = (size_t)job->space.n[a];
    int h = a - CDSE_AXIS_HW0;
    const cdse_hw_axis *hw = h >= 0 && h < job->n_hw_axes ? &job->hw_axis[h] : NULL;
    if (hw != NULL) {
        axis->reals = hw->value;
        axis->column = cdse_hw_column(hw->key);
        axis->system = job->system[hw->system].name;
    } else {
        axis->ints = job->space.value[a];
    }
}

void cdse_store_describe(const cdse_job *job, cdse_store_desc *desc)
{
    memset(desc, 0, sizeof *desc);
    desc->job_name = job->name;
    desc->job_path = job->path;
    desc->job_text = job->text;
    desc->space_size = job->space.size;
    desc->fingerprint = job->fingerprint;
    desc->metric = job->objective.metric;
    desc->mode = job->objective.store;
    desc->keep_results = job->objective.store != CDSE_STORE_BEST;
    desc->pruned = job->objective.prune;
    desc->top = job->objective.top;
    desc->group_by = job->objective.group_by;
    desc->tokens = job->objective.tokens;
    desc->n_axes = CDSE_AXIS_COUNT;
    for (int a = 0; a < CDSE_AXIS_COUNT; a++)
        describe_axis(job, a, &desc->axis[a]);
    desc->models = (cdse_store_table){&cdse_model_fields, job->model, (size_t)job->n_models};
    desc->systems =
        (cdse_store_table){cdse_system_field_table(), job->system, (size_t)job->n_systems};
    for (int i = 0; i < job->n_models; i++)
        desc->model_name[i] = job->model[i].name;
    for (int i = 0; i < job->n_systems; i++)
        desc->system_name[i] = job->system[i].name;
    desc->n_stacks = job->n_stacks;
    for (int i = 0; i < job->n_stacks; i++)
        desc->stack_name[i] = job->stack[i].name;
    cdse_pareto_cost_note(job, desc->pareto_cost_note, sizeof desc->pareto_cost_note);
}
