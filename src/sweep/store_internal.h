/* The HDF5 store, internal to src/sweep: what its three files share. store_schema.c: the
 * row layout, the HDF5 types of the tables and small HDF5 helpers; store_write.c: creating a
 * store and committing to it; store.c: opening, reading and the guarded entry points. */
#ifndef CLUSTERDSE_SWEEP_STORE_INTERNAL_H
#define CLUSTERDSE_SWEEP_STORE_INTERNAL_H

#include "clusterdse/sweep/store.h"

#include "clusterdse/model/fields.h"
#include "clusterdse/sweep/fault.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>
#include <zlib.h>

#include "store_lock.h"

#ifndef CDSE_VERSION
#define CDSE_VERSION "0"
#endif
#ifndef CDSE_GIT_REV
#define CDSE_GIT_REV "unknown"
#endif

/* Rows per HDF5 chunk of /results: 1024 rows of ~270 bytes is ~280 KB before compression,
 * within the chunk sizes the HDF5 guide suggests (10 KiB to a few MiB); small enough that the
 * rows a chunk of work leaves over (less than one HDF5 chunk) stay few. */
#define STORE_RESULTS_CHUNK_ROWS 1024
#define STORE_SMALL_CHUNK_ROWS   256
/* The group of the copies that commits write before putting them in place (commit_table). */
#define STAGING "staging"
/* zlib level 1: the fastest; shuffled records compress several-fold already. */
#define STORE_DEFLATE_LEVEL  1
#define STORE_COUNT_NAME_LEN 32
/* A table read in one piece (/progress, /top, /pareto) may take at most this much memory; a
 * larger extent is damage (docs/store.md). */
#define STORE_READ_BUDGET ((uint64_t)1 << 30)
/* How long a command that reads a store waits while the store's sweep holds readers back for a
 * commit: the flush itself lasts milliseconds (docs/store.md, Crash safety), but the sweep
 * first waits for the commands that already read the store to close it. */
#define STORE_READER_WAIT_S 60
/* The longest root attribute string read (the host list is the longest written, 2 KiB). */
#define STORE_STRING_MAX 65536
/* zlib's deflate expands at most 1032:1 (zlib technical details, "Maximum compression
 * factor"): a compressed table cannot hold more bytes of rows than this times the file. */
#define STORE_DEFLATE_MAX_RATIO 1032
/* What a user can do about a damaged store, ending each message that reports one. */
#define STORE_DAMAGED_HINT                                                                         \
    ": `clusterdse sweep JOB -o STORE --resume` recovers a store cut short by a kill or a full "   \
    "disk (it drops what the last commit did not cover); a store damaged anywhere else must be "   \
    "swept again (--force)"

struct cdse_store {
    /* The writer's exclusive flock on the file (store_lock.h), on a descriptor open for reading
     * and writing that also takes the readers' exclusion for each flush; for a reader, the
     * descriptor of its hold against flushes (store__hold_for_reading); -1 without one. */
    int lock_fd;
    hid_t file;
    hid_t row_type; /* packed compound of cdse_columns[], memory and file */
    hid_t results;  /* -1 when the job stores only the best */
    bool writable;
    uint64_t rows;          /* current extent of /results */
    uint64_t progress_rows; /* current extent of /progress */
    bool progress_filtered; /* /progress has filters (a checksum: stores made before) */
    char swapped[32];       /* the table whose old copy a failed commit left in /staging/swap */
    int statuses; /* statuses the store knows (its status enumeration, the counts of a /progress
                     row): fewer in stores made before a status was appended, whose codes are
                     the first ones */
    uint64_t fingerprint;
    uint64_t space_size;
    int metric;
    int mode;
    bool complete;
    int n_models, n_systems;
    char model_name[CDSE_MAX_MODELS][CDSE_NAME_MAX];
    char system_name[CDSE_MAX_SYSTEMS][CDSE_NAME_MAX];
    /* The stack column's names: the job's stacks, then CDSE_STACK_DEFAULT_LABEL (/stacks). */
    int n_stack_names;
    char stack_name[CDSE_MAX_STACKS + 1][CDSE_NAME_MAX];
    char path[CDSE_PATH_MAX];
};

/* How a table's chunks are filtered (create_table). */
enum {
    TABLE_DEFLATE = 1,  /* shuffle + deflate */
    TABLE_CHECKSUM = 2, /* HDF5's Fletcher-32 per chunk, verified on every read */
};
/* /top, /pareto, /pareto_cost */
#define BEST_FILTERS (TABLE_DEFLATE | TABLE_CHECKSUM)

typedef struct count_row {
    char name[STORE_COUNT_NAME_LEN];
    uint64_t count;
} count_row;

/* Rows of /counts: evaluated, feasible, every status, and pruned when the job prunes. */
#define COUNT_ROWS(pruned) (2 + CDSE_ST_COUNT + ((pruned) ? 1 : 0))

/* A row of a table of names (/stacks; the `name` member of /models and /systems). */
typedef struct name_row {
    char name[CDSE_NAME_MAX];
} name_row;

/* ---- store_schema.c ---- */
int store__attr_read(hid_t obj, const char *name, hid_t type, void *value);
int store__attr_read_string(hid_t obj, const char *name, char *out, size_t size);
int store__attr_string(hid_t obj, const char *name, const char *value);
int store__attr_write(hid_t obj, const char *name, hid_t type, const void *value);
int store__checked_rows(const cdse_store *s, hid_t d, const char *name, size_t row_size,
                        uint64_t *rows, cdse_diag *diag);
hid_t store__compound_of(const cdse_field_table *table);
hid_t store__count_type(void);
void store__counts_rows(const cdse_counts *counts, int statuses, bool pruned, count_row *rows);
hid_t store__create_table(hid_t loc, const char *name, hid_t type, hsize_t chunk_rows, int filters);
hid_t store__file_access(void);
int store__file_statuses(hid_t file);
hid_t store__fixed_string_type(size_t size);
int store__hold_metadata_until_flush(hid_t file);
void store__iso_time_now(char *buf, size_t size);
hid_t store__open_table(hid_t loc, const char *name);
hid_t store__range_type(int statuses);
char *store__read_string(hid_t obj, bool is_attr, size_t max_size);
hid_t store__row_type(const cdse_store *s);
hid_t store__string_type(size_t size);
int store__table_read(hid_t d, hid_t type, uint64_t start, size_t n, void *data);
uint64_t store__table_rows(hid_t d);
int store__table_write(hid_t d, hid_t type, uint64_t start, size_t n, const void *data);
int store__write_fixed_table(hid_t loc, const char *name, hid_t type, size_t n, const void *data);

/* ---- store_write.c ---- */
int store__commit_table(cdse_store *store, const char *name, hid_t type, hsize_t chunk_rows,
                        int filters, size_t n, const void *rows);
int store__lock_path(const char *path);
uint64_t store__root_checksum(uint64_t fingerprint, uint64_t space_size, int metric, int mode,
                              int complete);
cdse_store *store__alloc(void);
void store__free(cdse_store *s);
void store__writer_admit(const cdse_store *s);
void store__writer_exclude(const cdse_store *s);
herr_t store__writer_flush(cdse_store *s);

/* ---- store.c ---- */
void store__guard_begin(const char *path);
void store__guard_end(void);
const char *store__io_cause(char *buf, size_t size);
hid_t store__name_type(void);

#endif
