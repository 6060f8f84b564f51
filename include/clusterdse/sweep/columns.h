/* The column table of records (model/record.h): the record layout that CSV, tables and the HDF5
 * store share. Includes no configuration header, so that the store, which knows the model only
 * through this layout, stays clear of jobs (docs/architecture.md; tests/sh/include_graph.sh).
 * What needs the job to write a value as text (model, system and stack names) is report.h's. */
#ifndef CLUSTERDSE_COLUMNS_H
#define CLUSTERDSE_COLUMNS_H

#include <stddef.h>

#include "clusterdse/model/common.h"
#include "clusterdse/model/record.h"

typedef enum cdse_col_kind {
    CDSE_COL_U64 = 0, /* uint64_t */
    CDSE_COL_I32,     /* int32_t or int */
    CDSE_COL_BOOL,    /* bool, written as 0/1 */
    CDSE_COL_F64,     /* double */
    CDSE_COL_MODEL,   /* int32 index, written as the model name */
    CDSE_COL_SYSTEM,  /* int32 index, written as the system name */
    CDSE_COL_ENUM,    /* int code, written as its name in the column's `names` */
    CDSE_COL_STACK,   /* int32 index into the job's stacks (n_stacks: the built-in default),
                         written as the stack's name */
} cdse_col_kind;

/* How the stack column names the evaluator's built-in stack (a strategy without one). */
#define CDSE_STACK_DEFAULT_LABEL "default"

/* One output column: its name in CSV, tables and the HDF5 store (the contract), how to read it
 * from a record, and its meaning. */
typedef struct cdse_column {
    const char *name;
    int kind;      /* cdse_col_kind */
    size_t offset; /* offsetof(cdse_record, ...) */
    const char *unit;
    const char *help;
    const cdse_names *names; /* CDSE_COL_ENUM: the names of its codes */
} cdse_column;

extern const cdse_column cdse_columns[];
extern const int cdse_column_count;

/* The name tables the store is handed beside the columns, so that it names no enumeration of
 * the model or of the job itself (DESIGN.md: the store knows nothing of the model beyond the
 * record layout): the status column, whose names are the statuses /counts and /progress count
 * (code 0, ok, the feasible one; a store made before a status was appended knows the first
 * ones), the objective metrics, for its `metric` attribute, and the store modes
 * (objective.store), for its `store_mode` attribute. */
typedef struct cdse_record_enums {
    const cdse_column *status;
    const cdse_names *metric;
    const cdse_names *store_mode;
} cdse_record_enums;
extern const cdse_record_enums cdse_record_enum_tables;

const cdse_column *cdse_column_find(const char *name);
/* Numeric value of a column (enums as their integer code). */
double cdse_column_value(const cdse_column *column, const cdse_record *record);

#endif
