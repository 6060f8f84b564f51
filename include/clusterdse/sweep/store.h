/* The HDF5 store of a sweep (one writer, serial HDF5 API). Knows no MPI.
 *
 * Layout (docs/store.md):
 *   /            attributes: format, tool_version, git_revision, created, job_name, job_path,
 *                space_size, ranks, mpi_library, hostnames, slurm_job_id, fingerprint,
 *                metric, store_mode, top, group_by, tokens, complete
 *   /job         the job text as given (a scalar string)
 *   /space/AXIS  the values of each axis (int64), attribute `position` = axis order
 *   /models, /systems  compound tables of what was evaluated
 *   /results     1-D extendible compound dataset, chunked, shuffle + deflate; columns are
 *                cdse_columns[] (the names of `eval --csv`); attribute rows_committed
 *   /top, /pareto  the same compound type: best per group, Pareto front
 *   /pareto_cost the same compound type: the front of time to train against cost to train,
 *                attribute `note` (its definition, or why it is empty)
 *   /counts      compound (name, count): evaluated, feasible, then every status (then pruned,
 *                when the job prunes; the root then has the attribute pruned = 1)
 *   /progress    compound (begin, end, rows, status[], pruned): completed index ranges
 *                (cdse_done)
 *
 * Crash safety: records and the ranges they complete reach the file in the same
 * cdse_store_commit (H5Fflush). The metadata cache does not evict between commits and file
 * space is never reused, so a process killed between commits leaves the last commit readable;
 * when a store is reopened for resume, /results rows past the last committed count are dropped
 * and the counts are summed from /progress. */
#ifndef CLUSTERDSE_STORE_H
#define CLUSTERDSE_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "clusterdse/model/fields.h"
#include "clusterdse/sweep/columns.h"

#define CDSE_STORE_FORMAT "clusterdse-store-1"

typedef struct cdse_store cdse_store;

/* Provenance known to the caller (the sweep). */
typedef struct cdse_store_meta {
    int ranks;
    char mpi_library[512];
    char hostnames[2048]; /* comma-separated, distinct */
    char slurm_job_id[64];
} cdse_store_meta;

typedef struct cdse_range {
    uint64_t begin, end; /* [begin, end) */
} cdse_range;

/* One row of /progress: a completed index range, the configurations in it by status, and the
 * number of /results rows when it was committed. At every commit the rows [0, rows) of /results
 * are exactly those of the ranges committed so far, which is what resume relies on. */
typedef struct cdse_done {
    uint64_t begin, end;
    uint64_t rows; /* filled by cdse_store_commit */
    uint64_t status[CDSE_ST_COUNT];
    uint64_t pruned; /* skipped by pruning: in the range, in no status */
} cdse_done;

/* Counts by status, plus totals. */
typedef struct cdse_counts {
    uint64_t evaluated;
    uint64_t feasible;
    uint64_t status[CDSE_ST_COUNT];
    uint64_t pruned; /* skipped by pruning (objective.prune): evaluated + pruned = done */
} cdse_counts;

/* Turns off HDF5's automatic error printing (errors are reported through cdse_diag), in the
 * calling thread and in every thread that reads a store afterwards. */
void cdse_store_quiet_hdf5(void);

/* One dataset of /space: the values of an axis, at its position. */
typedef struct cdse_store_axis {
    char name[32];       /* the dataset's name */
    size_t n;            /* values */
    const int64_t *ints; /* the values of an axis (NULL for a hardware axis in use) */
    const double *reals; /* a hardware axis in use: its values */
    const char *column;  /* a hardware axis in use: its column ... */
    const char *system;  /* ... and the system it applies to */
} cdse_store_axis;

/* A table the store writes as the compound type of a field table (/models, /systems). */
typedef struct cdse_store_table {
    const cdse_field_table *fields;
    const void *rows; /* n rows of fields->size bytes */
    size_t n;
} cdse_store_table;

/* The longest note of /pareto_cost, with its NUL. */
#define CDSE_STORE_NOTE_MAX 512

/* What a new store holds besides its rows, made by the sweep layer from the job
 * (cdse_store_describe, sweep.h): the store reads no job. Its strings and arrays are the
 * caller's, read only during cdse_store_create. The rows' layout is the column table
 * (columns.h); the names of the metric and of the store mode are those of
 * cdse_record_enum_tables. */
typedef struct cdse_store_desc {
    const char *job_name;
    const char *job_path; /* also the file --force never replaces */
    const char *job_text; /* /job */
    uint64_t space_size;
    uint64_t fingerprint;
    int metric;        /* code in cdse_record_enum_tables.metric */
    int mode;          /* code in cdse_record_enum_tables.store_mode */
    bool keep_results; /* whether the store has /results (the store mode keeps rows) */
    bool pruned;       /* the sweep prunes: the root attribute pruned, a /counts row */
    int top, group_by;
    double tokens;
    int n_axes;
    cdse_store_axis axis[CDSE_AXIS_COUNT];
    cdse_store_table models, systems;
    const char *model_name[CDSE_MAX_MODELS];
    const char *system_name[CDSE_MAX_SYSTEMS];
    int n_stacks; /* the stack column's names; CDSE_STACK_DEFAULT_LABEL follows them */
    const char *stack_name[CDSE_MAX_STACKS];
    char pareto_cost_note[CDSE_STORE_NOTE_MAX]; /* the `note` attribute of /pareto_cost */
} cdse_store_desc;

/* Creates a new store at `path` holding what `desc` describes, written under `path`.tmp, which
 * it locks before anything is written and renames into place (docs/store.md, Writers and
 * readers). Refuses (CDSE_EEXIST) to overwrite an existing file unless `force`, and with
 * `force` replaces only a clusterdse store (a damaged one too), never desc->job_path nor another
 * file (CDSE_EINVAL). CDSE_EBUSY, with the lock named, while another sweep creates or writes
 * `path`; CDSE_EINVAL for a path of CDSE_PATH_MAX bytes or more. */
int cdse_store_create(const char *path, const cdse_store_desc *desc, const cdse_store_meta *meta,
                      bool force, cdse_store **store, cdse_diag *diag);

/* Opens an existing store. `writable` for resume (then /results is truncated to the committed
 * rows; CDSE_EBUSY while another sweep holds the writer's lock). A reader holds the store
 * against the writer's flushes until it closes it, waiting at most 60 s for one being flushed
 * (CDSE_EIO after that): it sees the last commit. Returns CDSE_EINVAL, with a message, for what
 * the user gave wrongly (a path that is missing or not a regular file, a file that is not HDF5,
 * an HDF5 file that is not a clusterdse store) and CDSE_EIO for a damaged store. */
int cdse_store_open(const char *path, bool writable, cdse_store **store, cdse_diag *diag);

/* The check cdse_store_open makes first, also for readers that do not open a store through
 * it: CDSE_EINVAL with a message naming `path` when it does not exist, cannot be reached or is
 * not a regular file (a FIFO would block HDF5's open forever), CDSE_EIO when stat fails
 * otherwise, else CDSE_OK. */
int cdse_store_check_path(const char *path, cdse_diag *diag);
/* cdse_store_check_path, then whether the file is HDF5: CDSE_EINVAL when it has no HDF5
 * signature (not a store at all), CDSE_EIO when it has one but HDF5 cannot read it (damaged).
 * Reads the file: call it inside the guard (cdse_store_guard_begin). */
int cdse_store_check_file(const char *path, cdse_diag *diag);
/* Whether `path` holds the HDF5 format signature (\211 H D F \r \n \032 \n) at offset 0 or at 512,
 * 1024, 2048, ... (HDF5 File Format Specification, "Format Signature"): a file without it is no
 * HDF5 file at all, one with it that HDF5 cannot open is damaged. */
bool cdse_store_has_hdf5_signature(const char *path);

/* HDF5 1.10 can crash or loop forever on a damaged file (global heap of variable-length
 * strings, compound conversion), below anything a caller can check. The store calls
 * `begin(path, ctx)` before each read of a store's content (open, cdse_store_rows,
 * cdse_store_read_*, cdse_store_job_text, cdse_store_has) and `end(ctx)` after it, so that the
 * program can turn a crash or a hang inside into a message and exit code of its own (the
 * command line: signal handlers and an alarm, src/cli/store_guard.c). NULL removes the guard.
 * Process-wide, like the signal handlers it serves. */
typedef struct cdse_store_read_guard {
    void (*begin)(const char *path, void *ctx);
    void (*end)(void *ctx);
    void *ctx;
} cdse_store_read_guard;
void cdse_store_set_read_guard(const cdse_store_read_guard *guard);
/* The guard around a read of another HDF5 file of the program (a probe store): `begin` before,
 * `end` after; nested pairs call the guard once. */
void cdse_store_guard_begin(const char *path);
void cdse_store_guard_end(void);

int cdse_store_close(cdse_store *store, cdse_diag *diag);
/* After a failed write: releases the handle without closing its HDF5 file. Closing would flush
 * the metadata of the unfinished commit (and, when a file-size limit failed the write, stop
 * part-way through that flush, leaving a file --resume cannot open); left unclosed, the file
 * stays as the last commit wrote it, as after a kill, and --resume continues it. HDF5 closes the
 * files still open when the process exits normally (its atexit handler), so the process must
 * then end with _exit. */
void cdse_store_abandon(cdse_store *store);
/* The statuses the store counts: CDSE_ST_COUNT, or fewer in a store made before a status was
 * appended (its /progress rows have fewer counts). */
int cdse_store_statuses(const cdse_store *store);

/* Root attributes. */
uint64_t cdse_store_fingerprint(const cdse_store *store);
int cdse_store_metric(const cdse_store *store);   /* code of cdse_record_enum_tables.metric */
int cdse_store_get_mode(const cdse_store *store); /* code of cdse_record_enum_tables.store_mode */
uint64_t cdse_store_space_size(const cdse_store *store);
bool cdse_store_complete(const cdse_store *store);

/* Model and system names (index = the code used in the model / system columns). */
int cdse_store_n_models(const cdse_store *store);
const char *cdse_store_model_name(const cdse_store *store, int i);
int cdse_store_n_systems(const cdse_store *store);
const char *cdse_store_system_name(const cdse_store *store, int i);
/* The stacks the store's rows name (/stacks): the job's stacks; stack code n_stacks is the
 * built-in (CDSE_STACK_DEFAULT_LABEL). */
int cdse_store_n_stacks(const cdse_store *store);
const char *cdse_store_stack_name(const cdse_store *store, int i);

/* The job text (malloc'd, NUL-terminated). */
int cdse_store_job_text(cdse_store *store, char **text, cdse_diag *diag);
/* The root attribute job_path (the job file the sweep read; relative names in the job resolve
 * against it) into out; "" when the store has none. */
int cdse_store_job_path(cdse_store *store, char *out, size_t size, cdse_diag *diag);

/* Packed rows: the in-memory layout of the compound type (column order of cdse_columns). */
size_t cdse_store_row_size(void);
void cdse_store_pack(const cdse_record *record, void *row);
void cdse_store_unpack(const void *row, cdse_record *record);

/* Appends packed rows to /results (not yet committed). */
int cdse_store_append(cdse_store *store, const void *rows, size_t n, cdse_diag *diag);

/* Rows per HDF5 chunk of /results. */
size_t cdse_store_chunk_rows(void);
/* Bytes a compressed chunk may take at most. */
size_t cdse_store_chunk_bound(void);
/* Compresses exactly cdse_store_chunk_rows() packed rows the way the filter pipeline of
 * /results does (shuffle, then deflate), so that any rank can prepare chunks and the writer only
 * copies bytes. `scratch` holds chunk_rows x row_size bytes, `out` cdse_store_chunk_bound().
 * Returns the compressed size, 0 on failure. No HDF5 call: safe on any rank. */
size_t cdse_store_compress_chunk(const void *rows, void *scratch, void *out);
/* The inverse: `rows` receives cdse_store_chunk_rows() packed rows. Returns 0 or -1. */
int cdse_store_decompress_chunk(const void *data, size_t size, void *scratch, void *rows);
/* Writes packed rows at [start, start + n) of /results, extending it as needed. Writing again
 * over rows already committed is allowed only with the same rows (a partial chunk filled up). */
int cdse_store_write_rows(cdse_store *store, uint64_t start, const void *rows, size_t n,
                          cdse_diag *diag);
/* Writes one compressed chunk (cdse_store_compress_chunk) at row `start`, a multiple of
 * cdse_store_chunk_rows(), extending /results. */
int cdse_store_write_chunk(cdse_store *store, uint64_t start, const void *data, size_t size,
                           cdse_diag *diag);

/* The best-so-far a commit writes: /top, /pareto and /pareto_cost, each replaced whole. */
typedef struct cdse_best_rows {
    const cdse_record *top;
    size_t n_top;
    const cdse_record *pareto;
    size_t n_pareto;
    const cdse_record *pareto_cost; /* written only to stores that have /pareto_cost */
    size_t n_pareto_cost;
} cdse_best_rows;

/* Makes everything appended so far durable together with the completed ranges `done`
 * (appended to /progress), the counts and the current /top, /pareto and /pareto_cost, in one
 * flush. The ranges are written last: a commit that fails part-way (and is flushed by the close)
 * leaves /progress as the last whole commit left it. */
int cdse_store_commit(cdse_store *store, cdse_done *done, size_t n_done, const cdse_counts *counts,
                      const cdse_best_rows *best, cdse_diag *diag);

/* Marks the store complete (all of the space evaluated) and flushes. */
int cdse_store_set_complete(cdse_store *store, cdse_diag *diag);

/* Reading back (resume, top). Arrays are malloc'd; the caller frees them. */
int cdse_store_read_progress(cdse_store *store, cdse_done **done, size_t *n, cdse_diag *diag);
/* The counts of the committed ranges (the sum over /progress). */
void cdse_store_sum_counts(const cdse_done *done, size_t n, cdse_counts *counts);
int cdse_store_read_counts(cdse_store *store, cdse_counts *counts, cdse_diag *diag);
/* Whether the store holds the dataset ("results" is absent with objective.store = "best"). */
bool cdse_store_has(cdse_store *store, const char *dataset);

/* The `note` attribute of /pareto_cost (what it holds, or why it is empty) into buf; an empty
 * string when the store has none (made before /pareto_cost existed). */
void cdse_store_pareto_cost_note(cdse_store *store, char *buf, size_t size);

/* Number of rows of "results", "top", "pareto" or "pareto_cost" (0 if the dataset does not
 * exist). */
int cdse_store_rows(cdse_store *store, const char *dataset, uint64_t *n, cdse_diag *diag);
/* Reads rows [start, start + n) of a dataset as packed rows. */
int cdse_store_read_rows(cdse_store *store, const char *dataset, uint64_t start, size_t n,
                         void *rows, cdse_diag *diag);

#endif
