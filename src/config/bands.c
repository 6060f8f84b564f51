/* The band table (calibration/bands.cfg): one key table for an entry, read by the engine. */
#include "clusterdse/config/bands.h"

#include <stdlib.h>
#include <string.h>

#include "keys.h"

typedef struct band_entry {
    char stack[CDSE_NAME_MAX];
    char generation[16];
    int rows;
    double mean, low, high;
} band_entry;

static const key_spec entry_keys[] = {
    {.name = "stack",
     .type = KEY_STRING,
     .offset = offsetof(band_entry, stack),
     .size = CDSE_NAME_MAX,
     .required = true,
     .help = "a stack profile's name, or \"*\" (every stack and generation without a row)"},
    {.name = "generation",
     .type = KEY_STRING,
     .offset = offsetof(band_entry, generation),
     .size = 16,
     .required = true,
     .help = "ampere, hopper, blackwell, cdna3, other, or \"*\""},
    {.name = "rows",
     .type = KEY_INT,
     .offset = offsetof(band_entry, rows),
     .min = 0,
     .max = INT_MAX_D,
     .required = true,
     .help = "validation rows of the group"},
    FLOAT_KEY(band_entry, "mean", mean, -10, false, 10, true, 0, "", "mean ln(measured/predicted)"),
    FLOAT_KEY(band_entry, "low", low, 0, true, 1e3, true, 0, "", "low factor on the time"),
    FLOAT_KEY(band_entry, "high", high, 0, true, 1e3, true, 0, "", "high factor on the time"),
};
static const key_table entry_table = {"bands[]", entry_keys,
                                      (int)(sizeof entry_keys / sizeof entry_keys[0])};

#define MAX_BANDS 256

/* Fills the job's factors from the entries (the pooled row "*" is entries[pooled]). */
static void apply(const band_entry *entries, int n, int pooled, cdse_job *job)
{
    for (int k = 0; k <= job->n_stacks; k++) {
        const char *stack = k < job->n_stacks ? job->stack[k].name : cdse_stack_default.name;
        for (int s = 0; s < job->n_systems; s++) {
            const char *generation = cdse_gpu_generation(job->system[s].gpu);
            int e = pooled;
            for (int i = 0; i < n; i++)
                if (strcmp(entries[i].stack, stack) == 0 &&
                    strcmp(entries[i].generation, generation) == 0)
                    e = i;
            job->band_low[k][s] = entries[e].low;
            job->band_high[k][s] = entries[e].high;
        }
    }
}

int cdse_bands_apply(const char *path, cdse_job *job, cdse_diag *diag)
{
    char *text;
    int rc = cdse__read_file_diag(path, "band table", &text, diag);
    if (rc != 0)
        return rc;
    parse_ctx ctx = {.file = path, .job_path = path, .diag = diag};
    config_t cfg;
    rc = cdse__read_config(&ctx, text, &cfg);
    free(text);
    if (rc != 0)
        return rc;
    static band_entry entries[MAX_BANDS];
    const config_setting_t *list = config_lookup(&cfg, "bands");
    int n = list != NULL ? config_setting_length(list) : 0, pooled = -1;
    if (list == NULL || !config_setting_is_list(list) || n < 1 || n > MAX_BANDS)
        rc = cdse__key_fail(&ctx, list != NULL ? list : config_root_setting(&cfg), "bands", NULL,
                            "a list of 1 to 256 groups { stack; generation; rows; mean; low; "
                            "high; } (calibration/bands.cfg)",
                            "missing or not such a list");
    for (int i = 0; rc == 0 && i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(list, (unsigned)i);
        rc = cdse__parse_group(&ctx, e, &entry_table, &entries[i], true);
        if (rc == 0 && !(entries[i].low <= entries[i].high))
            rc = cdse__key_fail(&ctx, e, "low", e, "low <= high", "%g above high %g",
                                entries[i].low, entries[i].high);
        if (rc == 0 && strcmp(entries[i].stack, "*") == 0)
            pooled = i;
    }
    if (rc == 0 && pooled < 0)
        rc = cdse__key_fail(&ctx, list, NULL, list,
                            "a row { stack = \"*\"; generation = \"*\"; ... }",
                            "no row \"*\" for the stacks and generations without rows");
    if (rc == 0)
        apply(entries, n, pooled, job);
    config_destroy(&cfg);
    return rc;
}
