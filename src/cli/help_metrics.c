/* The metrics paragraph of the commands' --help, made from the job layer's metric table so that
 * a new metric is listed wherever --by takes one (tests/sh/reference_complete.sh). */
#include <stdio.h>
#include <string.h>

#include "clusterdse/config/job.h"
#include "commands.h"

void cdse_cli_print_metrics(FILE *out)
{
    const char *lead = "metrics (objective.metric, --by):";
    int column = fprintf(out, "%s", lead);
    for (int m = 0; m < CDSE_METRIC_COUNT; m++) {
        char word[64];
        snprintf(word, sizeof word, " %s (%s)%s", cdse_metric_name(m),
                 cdse_metric_higher_is_better(m) ? "higher" : "lower",
                 m + 1 < CDSE_METRIC_COUNT ? "," : "");
        if (column + (int)strlen(word) > 96)
            column = fprintf(out, "\n ");
        column += fprintf(out, "%s", word);
    }
    fputc('\n', out);
}
