/* The fields of a model and of a system as data: name, kind, place in the struct. One table per
 * struct, named after the job-file keys the fields come from (models[].NAME, systems[].NAME), so
 * that what describes a model or a system (the store's /models and /systems, src/sweep/store.c)
 * follows the struct: a field added to the struct and its key is added here, and
 * tests/unit/test_store.c checks that every key of the job parser's tables is stored. */
#ifndef CLUSTERDSE_FIELDS_H
#define CLUSTERDSE_FIELDS_H

#include "clusterdse/model/hardware.h"
#include "clusterdse/model/workload.h"

typedef enum cdse_field_kind {
    CDSE_FIELD_INT = 0, /* int */
    CDSE_FIELD_DOUBLE,  /* double */
    CDSE_FIELD_BOOL,    /* bool */
    CDSE_FIELD_STRING,  /* char[size], NUL-terminated */
    CDSE_FIELD_RECORD,  /* a struct described by `record` */
} cdse_field_kind;

typedef struct cdse_field_table cdse_field_table;

typedef struct cdse_field {
    const char *name;
    int kind;                       /* cdse_field_kind */
    size_t offset;                  /* in the enclosing struct */
    size_t size;                    /* bytes of one element */
    int count;                      /* 1, or the length of a fixed array */
    const cdse_field_table *record; /* CDSE_FIELD_RECORD: the element's fields */
} cdse_field;

struct cdse_field_table {
    const char *name; /* the struct, for messages */
    size_t size;      /* sizeof the struct */
    int n;
    const cdse_field *fields;
};

extern const cdse_field_table cdse_model_fields; /* cdse_model */
/* cdse_system: its fields, and those of the hardware keys (CDSE_HW_KEYS) that no field above
 * holds, added when the program is loaded. */
const cdse_field_table *cdse_system_field_table(void);

#endif
