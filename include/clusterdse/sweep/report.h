/* Records as text: CSV, column values as text (names of models, systems and stacks from the job)
 * and the column reference; the column table itself is columns.h. */
#ifndef CLUSTERDSE_REPORT_H
#define CLUSTERDSE_REPORT_H

#include <stdio.h>

#include "clusterdse/config/job.h"
#include "clusterdse/model/record.h"
#include "clusterdse/sweep/columns.h"

/* The column table and the name tables handed to the store: clusterdse/sweep/columns.h. A
 * record (one evaluated configuration) and its evaluation are the model's:
 * clusterdse/model/record.h (cdse_record_eval on cdse_job_study(job)). */

/* Writes the value as text ("gpt3-175b", "selective", "0.4123", ...). */
void cdse_column_format(const cdse_column *column, const cdse_record *record, const cdse_job *job,
                        char *buf, size_t size);

void cdse_csv_header(FILE *out);
void cdse_csv_row(FILE *out, const cdse_record *record, const cdse_job *job);

/* The human table: clusterdse/sweep/table.h. */

/* Offload mask as text: "none", "weights", "activations+optimizer", ... (cdse_offload_enum) */
const char *cdse_offload_name(int offload);
/* Prints the column reference (name, unit, meaning), one column a line. */
void cdse_columns_print(FILE *out);
/* Prints the hardware keys' columns (one per row of CDSE_HW_KEYS, model/hardware.h) as a
 * markdown table (column, unit, meaning), in column order: docs/eval.md shows it regenerated. */
void cdse_columns_print_hardware(FILE *out);

#endif
