/* The HDF5 store: schema, append, commit (flush), and reading back for resume and `top`. */
#define _GNU_SOURCE /* renameat2 (glibc 2.28) */
#include "clusterdse/sweep/store.h"

#include "clusterdse/model/fields.h"
#include "clusterdse/sweep/fault.h"
#include "clusterdse/sweep/topk.h"

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

/* The program's guard around reads of file content (cdse_store_set_read_guard); nested reads
 * (an open reads /progress) call it once. */
static cdse_store_read_guard read_guard;
static int read_depth;

void cdse_store_set_read_guard(const cdse_store_read_guard *guard)
{
    memset(&read_guard, 0, sizeof read_guard);
    if (guard != NULL)
        read_guard = *guard;
}

/* Set by cdse_store_quiet_hdf5: HDF5's automatic error printing is a setting of each thread
 * (its error stacks are per thread), so it is turned off again in whichever thread reads (top
 * reads blocks of rows in a thread of its own). */
static volatile int hdf5_quiet;

static void guard_begin(const char *path)
{
    if (hdf5_quiet)
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (read_depth++ == 0 && read_guard.begin != NULL)
        read_guard.begin(path, read_guard.ctx);
}

static void guard_end(void)
{
    if (--read_depth == 0 && read_guard.end != NULL)
        read_guard.end(read_guard.ctx);
}

void cdse_store_guard_begin(const char *path)
{
    guard_begin(path);
}

void cdse_store_guard_end(void)
{
    guard_end();
}

void cdse_store_quiet_hdf5(void)
{
    /* CDSE_HDF5_ERRORS=1 keeps HDF5's own error stacks, for debugging. */
    if (getenv("CDSE_HDF5_ERRORS") == NULL) {
        hdf5_quiet = 1;
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    }
}

/* The operating system's words for why the last HDF5 call failed: HDF5's file driver records
 * them in its error stack ("..., errno = 28, error message = 'No space left on device', ...");
 * errno otherwise. */
static herr_t find_os_message(unsigned n, const H5E_error2_t *err, void *data)
{
    (void)n;
    char *out = data;
    const char *key = "error message = '";
    const char *at = err->desc != NULL ? strstr(err->desc, key) : NULL;
    if (at != NULL && out[0] == '\0') {
        at += strlen(key);
        const char *end = strchr(at, '\'');
        size_t len = end != NULL ? (size_t)(end - at) : strlen(at);
        if (len > 127)
            len = 127;
        memcpy(out, at, len);
        out[len] = '\0';
    }
    return 0;
}

static const char *io_cause(char *buf, size_t size)
{
    char found[128] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, find_os_message, found);
    if (found[0] != '\0')
        snprintf(buf, size, "%s", found);
    else if (errno != 0)
        snprintf(buf, size, "%s", strerror(errno));
    else
        snprintf(buf, size, "an HDF5 error (CDSE_HDF5_ERRORS=1 shows it)");
    return buf;
}

/* ---- row layout ---------------------------------------------------------------------------- */

static size_t kind_size(int kind)
{
    switch (kind) {
    case CDSE_COL_U64:
    case CDSE_COL_F64:
        return 8;
    case CDSE_COL_I32:
        return 4;
    default:
        return 1; /* bool and enumerations (an int code below 128): one byte */
    }
}

size_t cdse_store_row_size(void)
{
    size_t size = 0;
    for (int c = 0; c < cdse_column_count; c++)
        size += kind_size(cdse_columns[c].kind);
    return size;
}

void cdse_store_pack(const cdse_record *record, void *row)
{
    const unsigned char *rec = (const unsigned char *)record;
    unsigned char *p = row;
    for (int c = 0; c < cdse_column_count; c++) {
        const cdse_column *col = &cdse_columns[c];
        const unsigned char *field = rec + col->offset;
        switch (col->kind) { /* constant sizes: the copies are inlined, not library calls */
        case CDSE_COL_U64:
        case CDSE_COL_F64:
            memcpy(p, field, 8);
            break;
        case CDSE_COL_I32:
            memcpy(p, field, 4);
            break;
        case CDSE_COL_BOOL: {
            bool b;
            memcpy(&b, field, sizeof b);
            *p = b ? 1 : 0;
            break;
        }
        default: { /* an int (or int32_t) enumeration code, small by construction */
            int32_t v;
            memcpy(&v, field, sizeof v);
            *p = (unsigned char)(int8_t)v;
            break;
        }
        }
        p += kind_size(col->kind);
    }
}

void cdse_store_unpack(const void *row, cdse_record *record)
{
    memset(record, 0, sizeof *record);
    unsigned char *rec = (unsigned char *)record;
    const unsigned char *p = row;
    for (int c = 0; c < cdse_column_count; c++) {
        const cdse_column *col = &cdse_columns[c];
        unsigned char *field = rec + col->offset;
        switch (col->kind) {
        case CDSE_COL_U64:
        case CDSE_COL_F64:
            memcpy(field, p, 8);
            break;
        case CDSE_COL_I32:
            memcpy(field, p, 4);
            break;
        case CDSE_COL_BOOL: {
            bool b = *p != 0;
            memcpy(field, &b, sizeof b);
            break;
        }
        default: {
            int32_t v = (int8_t)*p;
            memcpy(field, &v, sizeof v);
            break;
        }
        }
        p += kind_size(col->kind);
    }
}

/* An int8-based enumeration; names that repeat get a "#code" suffix so the type stays valid. */
static hid_t enum_type(const char *const *names, int n)
{
    hid_t t = H5Tenum_create(H5T_NATIVE_INT8);
    for (int i = 0; i < n; i++) {
        int8_t v = (int8_t)i;
        if (H5Tenum_insert(t, names[i], &v) < 0) {
            char alt[CDSE_NAME_MAX + 8];
            snprintf(alt, sizeof alt, "%s#%d", names[i], i);
            H5Tenum_insert(t, alt, &v);
        }
    }
    return t;
}

/* h5py reads an int8 enumeration of FALSE = 0, TRUE = 1 as numpy bool. */
static hid_t bool_type(void)
{
    static const char *const names[] = {"FALSE", "TRUE"};
    return enum_type(names, 2);
}

static hid_t column_type(const cdse_column *col, const cdse_store *s)
{
    const char *names[CDSE_MAX_MODELS > CDSE_MAX_SYSTEMS ? CDSE_MAX_MODELS : CDSE_MAX_SYSTEMS];
    switch (col->kind) {
    case CDSE_COL_U64:
        return H5Tcopy(H5T_NATIVE_UINT64);
    case CDSE_COL_I32:
        return H5Tcopy(H5T_NATIVE_INT32);
    case CDSE_COL_F64:
        return H5Tcopy(H5T_NATIVE_DOUBLE);
    case CDSE_COL_BOOL:
        return bool_type();
    case CDSE_COL_MODEL:
        for (int i = 0; i < s->n_models; i++)
            names[i] = s->model_name[i];
        return enum_type(names, s->n_models);
    case CDSE_COL_SYSTEM:
        for (int i = 0; i < s->n_systems; i++)
            names[i] = s->system_name[i];
        return enum_type(names, s->n_systems);
    case CDSE_COL_STACK:
        for (int i = 0; i < s->n_stack_names; i++)
            names[i] = s->stack_name[i];
        return enum_type(names, s->n_stack_names);
    case CDSE_COL_ENUM:
        /* The column's names; the status column has the statuses this store knows (fewer in a
         * store made before a status was appended). */
        return enum_type(col->names->name,
                         col->names == &cdse_status_enum ? s->statuses : col->names->n);
    default:
        return H5Tcopy(H5T_NATIVE_INT8);
    }
}

/* The packed compound type of a row, with the model and system names of this store. */
static hid_t row_type(const cdse_store *s)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, cdse_store_row_size());
    size_t offset = 0;
    for (int c = 0; c < cdse_column_count; c++) {
        hid_t mt = column_type(&cdse_columns[c], s);
        H5Tinsert(t, cdse_columns[c].name, offset, mt);
        H5Tclose(mt);
        offset += kind_size(cdse_columns[c].kind);
    }
    return t;
}

/* ---- small helpers ------------------------------------------------------------------------- */

static int attr_write(hid_t obj, const char *name, hid_t type, const void *value)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = H5Aexists(obj, name) > 0
                  ? H5Aopen(obj, name, H5P_DEFAULT)
                  : H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = a < 0 ? -1 : H5Awrite(a, type, value);
    if (a >= 0)
        H5Aclose(a);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

static hid_t vlen_string_type(void)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

/* Strings are stored fixed-length (the exact size, NUL-terminated, UTF-8): variable-length
 * ones live in HDF5's global heap, which has no checksum and whose damage crashes or hangs
 * libhdf5 1.10 (fuzz findings H1-H4). Stores written before read as well (read_string). */
static hid_t fixed_string_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size > 0 ? size : 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

static int attr_string(hid_t obj, const char *name, const char *value)
{
    hid_t t = fixed_string_type(strlen(value) + 1);
    int rc = attr_write(obj, name, t, value);
    H5Tclose(t);
    return rc;
}

/* A string of either kind (fixed-length, or variable-length in stores of before) from an
 * attribute (is_attr) or a scalar dataset, into a new buffer; NULL if it cannot be read or
 * is longer than max_size. */
static char *read_string(hid_t obj, bool is_attr, size_t max_size)
{
    hid_t ftype = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
    char *out = NULL;
    if (ftype >= 0 && H5Tget_class(ftype) == H5T_STRING) {
        bool vlen = H5Tis_variable_str(ftype) > 0;
        size_t size = vlen ? 0 : H5Tget_size(ftype);
        hid_t t = vlen ? vlen_string_type() : fixed_string_type(size + 1);
        char *value = NULL, *fixed = vlen || size > max_size ? NULL : calloc(1, size + 1);
        void *buf = vlen ? (void *)&value : (void *)fixed;
        herr_t rc = buf == NULL ? -1
                    : is_attr   ? H5Aread(obj, t, buf)
                                : H5Dread(obj, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        if (rc >= 0 && vlen && value != NULL && strlen(value) <= max_size)
            out = strdup(value);
        else if (rc >= 0 && !vlen)
            out = fixed, fixed = NULL;
        if (value != NULL)
            H5free_memory(value);
        free(fixed);
        H5Tclose(t);
    }
    if (ftype >= 0)
        H5Tclose(ftype);
    return out;
}

static int attr_read(hid_t obj, const char *name, hid_t type, void *value)
{
    if (H5Aexists(obj, name) <= 0)
        return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return -1;
    herr_t rc = H5Aread(a, type, value);
    H5Aclose(a);
    return rc < 0 ? -1 : 0;
}

static int attr_read_string(hid_t obj, const char *name, char *out, size_t size)
{
    out[0] = '\0';
    if (H5Aexists(obj, name) <= 0)
        return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return -1;
    char *value = read_string(a, true, STORE_STRING_MAX);
    H5Aclose(a);
    if (value == NULL)
        return -1;
    snprintf(out, size, "%s", value);
    free(value);
    return 0;
}

static void iso_time_now(char *buf, size_t size)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* How a table's chunks are filtered (create_table). */
enum {
    TABLE_DEFLATE = 1,  /* shuffle + deflate */
    TABLE_CHECKSUM = 2, /* HDF5's Fletcher-32 per chunk, verified on every read */
};
/* /top, /pareto, /pareto_cost */
#define BEST_FILTERS (TABLE_DEFLATE | TABLE_CHECKSUM)

/* A 1-D chunked, extendible dataset of `type` with the filters of `filters` (TABLE_*). Tables
 * rewritten whole at every commit carry a checksum; /results is written as compressed chunks of
 * our own (H5Dwrite_chunk, below) and goes without; /progress, which grows inside its last chunk
 * commit after commit, goes without filters, so that adding rows writes only their bytes (a
 * filtered chunk is rewritten whole, the committed rows with it; see commit_table). */
static hid_t create_table(hid_t loc, const char *name, hid_t type, hsize_t chunk_rows, int filters)
{
    hsize_t dims = 0, maxdims = H5S_UNLIMITED;
    hid_t space = H5Screate_simple(1, &dims, &maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk_rows);
    H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
    if (filters & TABLE_DEFLATE) {
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, STORE_DEFLATE_LEVEL);
    }
    if (filters & TABLE_CHECKSUM)
        H5Pset_fletcher32(dcpl);
    /* No raw-data chunk cache: a chunk is compressed and written during H5Dwrite, so that the
     * flush of a commit writes only metadata and lasts a few milliseconds. */
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(dapl, 0, 0, 1.0);
    hid_t d = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, dapl);
    H5Pclose(dapl);
    H5Pclose(dcpl);
    H5Sclose(space);
    return d;
}

/* Writes rows [start, start + n) of a 1-D dataset, extending it to start + n. */
static int table_write(hid_t d, hid_t type, uint64_t start, size_t n, const void *data)
{
    hsize_t end = start + n, offset = start, count = n;
    if (H5Dset_extent(d, &end) < 0)
        return -1;
    if (n == 0)
        return 0;
    hid_t fspace = H5Dget_space(d);
    hid_t mspace = H5Screate_simple(1, &count, NULL);
    herr_t rc = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &offset, NULL, &count, NULL);
    if (rc >= 0)
        rc = H5Dwrite(d, type, mspace, fspace, H5P_DEFAULT, data);
    H5Sclose(mspace);
    H5Sclose(fspace);
    return rc < 0 ? -1 : 0;
}

static int table_read(hid_t d, hid_t type, uint64_t start, size_t n, void *data)
{
    if (n == 0)
        return 0;
    hsize_t offset = start, count = n;
    hid_t fspace = H5Dget_space(d);
    hid_t mspace = H5Screate_simple(1, &count, NULL);
    herr_t rc = H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &offset, NULL, &count, NULL);
    if (rc >= 0)
        rc = H5Dread(d, type, mspace, fspace, H5P_DEFAULT, data);
    H5Sclose(mspace);
    H5Sclose(fspace);
    return rc < 0 ? -1 : 0;
}

static uint64_t table_rows(hid_t d)
{
    hsize_t dims = 0;
    hid_t space = H5Dget_space(d);
    if (space >= 0 && H5Sget_simple_extent_ndims(space) == 1)
        H5Sget_simple_extent_dims(space, &dims, NULL);
    if (space >= 0)
        H5Sclose(space);
    return dims;
}

/* Whether a dataset creation property list has the filter `id` in its pipeline: each filter
 * asked in turn (H5Pget_filter_by_id2 reports a filter that is absent as an error, which HDF5
 * prints on every read of an unfiltered table unless its messages are off). */
static bool has_filter(hid_t dcpl, H5Z_filter_t id)
{
    int n = H5Pget_nfilters(dcpl);
    for (int i = 0; i < n; i++) {
        unsigned flags = 0, config = 0;
        size_t n_values = 0;
        if (H5Pget_filter2(dcpl, (unsigned)i, &flags, &n_values, NULL, 0, NULL, &config) == id)
            return true;
    }
    return false;
}

/* The rows a 1-D table claims, checked against what the file can hold (its size, times
 * deflate's largest ratio for compressed tables, plus one chunk of rows an interrupted write may
 * have announced) and the read budget, so that a damaged extent is reported instead of
 * allocated. */
static int checked_rows(const cdse_store *s, hid_t d, const char *name, size_t row_size,
                        uint64_t *rows, cdse_diag *diag)
{
    *rows = table_rows(d);
    hsize_t file_size = 0;
    H5Fget_filesize(s->file, &file_size);
    hid_t dcpl = H5Dget_create_plist(d);
    bool compressed = dcpl >= 0 && has_filter(dcpl, H5Z_FILTER_DEFLATE);
    hsize_t chunk = 0;
    if (dcpl >= 0 && H5Pget_layout(dcpl) == H5D_CHUNKED)
        H5Pget_chunk(dcpl, 1, &chunk);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    uint64_t room = (uint64_t)file_size * (compressed ? STORE_DEFLATE_MAX_RATIO : 1) / row_size;
    if (*rows > room + chunk || *rows > STORE_READ_BUDGET / row_size) {
        cdse_diag_set(
            diag,
            "%s: a damaged store: /%s claims %llu rows of %zu bytes in a file of %llu "
            "bytes (at most %llu rows fit; reads are limited to %llu MiB)" STORE_DAMAGED_HINT,
            s->path, name, (unsigned long long)*rows, row_size, (unsigned long long)file_size,
            (unsigned long long)(room + chunk), (unsigned long long)(STORE_READ_BUDGET >> 20));
        return CDSE_EIO;
    }
    return CDSE_OK;
}

/* Opens a table without a raw-data chunk cache (see create_table). */
static hid_t open_table(hid_t loc, const char *name)
{
    hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
    H5Pset_chunk_cache(dapl, 0, 0, 1.0);
    hid_t d = H5Dopen2(loc, name, dapl);
    H5Pclose(dapl);
    return d;
}

/* The statuses a /progress row of the file counts (the length of its `status` array), when
 * fewer than CDSE_ST_COUNT: a store made before a status was appended. CDSE_ST_COUNT otherwise
 * (a damaged type is then reported by the read). */
static int file_statuses(hid_t file)
{
    int n = CDSE_ST_COUNT;
    hid_t d = open_table(file, "progress");
    hid_t t = d >= 0 ? H5Dget_type(d) : -1;
    int i = t >= 0 ? H5Tget_member_index(t, "status") : -1;
    hid_t a = i >= 0 ? H5Tget_member_type(t, (unsigned)i) : -1;
    hsize_t dim = 0;
    if (a >= 0 && H5Tget_class(a) == H5T_ARRAY && H5Tget_array_ndims(a) == 1 &&
        H5Tget_array_dims2(a, &dim) == 1 && dim >= 1 && dim < CDSE_ST_COUNT)
        n = (int)dim;
    if (a >= 0)
        H5Tclose(a);
    if (t >= 0)
        H5Tclose(t);
    if (d >= 0)
        H5Dclose(d);
    return n;
}

/* File access: no sieve buffer, so raw data (of /counts too) reaches the file during H5Dwrite,
 * before the metadata that makes it visible is flushed. HDF5's file locking is off: the writer
 * holds its own flock (lock_writer), and a store whose writer was killed keeps the "open for
 * writing" flag of its superblock, which HDF5 refuses while its locking is on. */
static hid_t file_access(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_sieve_buf_size(fapl, 0);
    H5Pset_file_locking(fapl, 0, 1);
    return fapl;
}

/* Dirty metadata stays in memory until H5Fflush, so that the file on disk always holds the last
 * commit (HDF5 User's Guide, "Metadata Caching in HDF5": evictions_enabled). */
static int hold_metadata_until_flush(hid_t file)
{
    H5AC_cache_config_t config;
    memset(&config, 0, sizeof config);
    config.version = H5AC__CURR_CACHE_CONFIG_VERSION;
    if (H5Fget_mdc_config(file, &config) < 0)
        return -1;
    config.evictions_enabled = 0;
    config.incr_mode = H5C_incr__off;
    config.flash_incr_mode = H5C_flash_incr__off;
    config.decr_mode = H5C_decr__off;
    return H5Fset_mdc_config(file, &config) < 0 ? -1 : 0;
}

/* ---- the tables of models, systems, counts and progress ------------------------------------ */

static hid_t string_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    return t;
}

static hid_t array_type(hid_t base, hsize_t n)
{
    return H5Tarray_create2(base, 1, &n);
}

#define INSERT(t, s, field, type) H5Tinsert(t, #field, HOFFSET(s, field), type)

static hid_t compound_of(const cdse_field_table *table);

/* The HDF5 type of one field of a field table (clusterdse/model/fields.h). */
static hid_t field_type(const cdse_field *field)
{
    hid_t base;
    switch (field->kind) {
    case CDSE_FIELD_INT:
        base = H5Tcopy(H5T_NATIVE_INT);
        break;
    case CDSE_FIELD_DOUBLE:
        base = H5Tcopy(H5T_NATIVE_DOUBLE);
        break;
    case CDSE_FIELD_BOOL:
        base = bool_type();
        break;
    case CDSE_FIELD_STRING:
        base = string_type(field->size);
        break;
    default:
        base = compound_of(field->record);
        break;
    }
    if (field->count == 1)
        return base;
    hid_t array = array_type(base, (hsize_t)field->count);
    H5Tclose(base);
    return array;
}

/* /models and /systems: one compound member per field of the model layer's field tables, so
 * that every field of cdse_model and cdse_system is stored, under its job-file key. */
static hid_t compound_of(const cdse_field_table *table)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, table->size);
    for (int i = 0; i < table->n; i++) {
        hid_t member = field_type(&table->fields[i]);
        H5Tinsert(t, table->fields[i].name, table->fields[i].offset, member);
        H5Tclose(member);
    }
    return t;
}

typedef struct count_row {
    char name[STORE_COUNT_NAME_LEN];
    uint64_t count;
} count_row;

static hid_t count_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(count_row));
    hid_t name = string_type(STORE_COUNT_NAME_LEN);
    INSERT(t, count_row, name, name);
    INSERT(t, count_row, count, H5T_NATIVE_UINT64);
    H5Tclose(name);
    return t;
}

/* A /progress row with the counts of the first `statuses` statuses (the rest of cdse_done.status
 * is not read or written). */
static hid_t range_type(int statuses)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cdse_done));
    hid_t st = array_type(H5T_NATIVE_UINT64, (hsize_t)statuses);
    INSERT(t, cdse_done, begin, H5T_NATIVE_UINT64);
    INSERT(t, cdse_done, end, H5T_NATIVE_UINT64);
    INSERT(t, cdse_done, rows, H5T_NATIVE_UINT64);
    INSERT(t, cdse_done, status, st);
    INSERT(t, cdse_done, pruned, H5T_NATIVE_UINT64);
    H5Tclose(st);
    return t;
}

static int write_fixed_table(hid_t loc, const char *name, hid_t type, size_t n, const void *data)
{
    hsize_t dims = n;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    /* One chunk with a Fletcher-32 checksum (a filter needs a chunked layout). */
    hsize_t chunk = n > 0 ? n : 1;
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 1, &chunk);
    H5Pset_fletcher32(dcpl);
    hid_t d = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    herr_t rc = d < 0 ? -1 : H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
    if (d >= 0)
        H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
    return rc < 0 ? -1 : 0;
}

/* Rows of /counts: evaluated, feasible, every status, and pruned when the job prunes. */
#define COUNT_ROWS(pruned) (2 + CDSE_ST_COUNT + ((pruned) ? 1 : 0))

/* The rows of a store that counts `statuses` statuses (fewer than CDSE_ST_COUNT in a store made
 * before a status was appended): `pruned` follows the last of them. */
static void counts_rows(const cdse_counts *counts, int statuses, bool pruned, count_row *rows)
{
    memset(rows, 0, (size_t)(2 + statuses + (pruned ? 1 : 0)) * sizeof *rows);
    if (pruned) {
        snprintf(rows[2 + statuses].name, sizeof rows[0].name, "pruned");
        rows[2 + statuses].count = counts->pruned;
    }
    snprintf(rows[0].name, sizeof rows[0].name, "evaluated");
    rows[0].count = counts->evaluated;
    snprintf(rows[1].name, sizeof rows[1].name, "feasible");
    rows[1].count = counts->feasible;
    for (int st = 0; st < statuses; st++) {
        snprintf(rows[2 + st].name, sizeof rows[2 + st].name, "%s", cdse_status_name(st));
        rows[2 + st].count = counts->status[st];
    }
}

/* ---- create -------------------------------------------------------------------------------- */

/* A checksum (64-bit FNV-1a) of the root attributes that readers act on: the fingerprint,
 * space size, metric, store mode and completeness. Written with them (the same object header),
 * verified when a store is opened: a damaged attribute is reported as damage instead of being
 * believed ("made by a different job", a wrong space size). Stores without it predate it. */
static uint64_t root_checksum(uint64_t fingerprint, uint64_t space_size, int metric, int mode,
                              int complete)
{
    uint64_t words[5] = {fingerprint, space_size, (uint64_t)metric, (uint64_t)mode,
                         (uint64_t)complete};
    uint64_t hash = 0xcbf29ce484222325ull;
    const unsigned char *bytes = (const unsigned char *)words;
    for (size_t i = 0; i < sizeof words; i++)
        hash = (hash ^ bytes[i]) * 0x100000001b3ull;
    return hash;
}

static int write_root_checksum(hid_t file, const cdse_store *s, int complete)
{
    uint64_t sum = root_checksum(s->fingerprint, s->space_size, s->metric, s->mode, complete);
    return attr_write(file, "checksum", H5T_NATIVE_UINT64, &sum);
}

static int write_root_attrs(hid_t file, const cdse_job *job, const cdse_store_meta *meta)
{
    char created[32];
    iso_time_now(created, sizeof created);
    uint64_t size = job->space.size, fp = job->fingerprint;
    int ranks = meta->ranks, top = job->objective.top, group_by = job->objective.group_by;
    double tokens = job->objective.tokens;
    int complete = 0;
    int mode = job->objective.store;
    int rc = 0;
    rc |= attr_string(file, "format", CDSE_STORE_FORMAT);
    rc |= attr_string(file, "tool_version", CDSE_VERSION);
    rc |= attr_string(file, "git_revision", CDSE_GIT_REV);
    rc |= attr_string(file, "created", created);
    rc |= attr_string(file, "job_name", job->name);
    rc |= attr_string(file, "job_path", job->path);
    rc |= attr_write(file, "space_size", H5T_NATIVE_UINT64, &size);
    rc |= attr_write(file, "ranks", H5T_NATIVE_INT, &ranks);
    rc |= attr_string(file, "mpi_library", meta->mpi_library);
    rc |= attr_string(file, "hostnames", meta->hostnames);
    rc |= attr_string(file, "slurm_job_id", meta->slurm_job_id);
    rc |= attr_write(file, "fingerprint", H5T_NATIVE_UINT64, &fp);
    rc |= attr_string(file, "metric", cdse_metric_name(job->objective.metric));
    rc |= attr_string(file, "store_mode",
                      cdse_store_mode_names[mode >= 0 && mode < CDSE_STORE_MODES ? mode : 0]);
    rc |= attr_write(file, "top", H5T_NATIVE_INT, &top);
    rc |= attr_write(file, "group_by", H5T_NATIVE_INT, &group_by);
    rc |= attr_write(file, "tokens", H5T_NATIVE_DOUBLE, &tokens);
    rc |= attr_write(file, "complete", H5T_NATIVE_INT, &complete);
    int pruned = 1; /* only pruned sweeps have it: other stores keep their layout */
    if (job->objective.prune)
        rc |= attr_write(file, "pruned", H5T_NATIVE_INT, &pruned);
    return rc;
}

static int write_job_text(hid_t file, const cdse_job *job)
{
    const char *text = job->text ? job->text : "";
    hid_t t = fixed_string_type(strlen(text) + 1);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t d = H5Dcreate2(file, "job", t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = d < 0 ? -1 : H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text);
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(space);
    H5Tclose(t);
    return rc < 0 ? -1 : 0;
}

static int write_space(hid_t file, const cdse_job *job)
{
    hid_t g = H5Gcreate2(file, "space", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        return -1;
    int rc = 0;
    uint64_t size = job->space.size;
    rc |= attr_write(g, "size", H5T_NATIVE_UINT64, &size);
    for (int a = 0; a < CDSE_AXIS_COUNT && rc == 0; a++) {
        hsize_t n = (hsize_t)job->space.n[a];
        hid_t space = H5Screate_simple(1, &n, NULL);
        char name[32];
        const char *axis = cdse_axis_name(a);
        if (axis == NULL || axis[0] == '\0' || axis[0] == '?')
            snprintf(name, sizeof name, "axis_%d", a);
        else
            snprintf(name, sizeof name, "%s", axis);
        /* A hardware axis in use holds its values, the column and the system it applies to. */
        int h = a - CDSE_AXIS_HW0;
        const cdse_hw_axis *hw = h >= 0 && h < job->n_hw_axes ? &job->hw_axis[h] : NULL;
        hid_t type = hw ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
        const void *values = hw ? (const void *)hw->value : (const void *)job->space.value[a];
        hid_t d = H5Dcreate2(g, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d < 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
            rc = -1;
        if (d >= 0) {
            rc |= attr_write(d, "position", H5T_NATIVE_INT, &a);
            if (hw != NULL) {
                rc |= attr_string(d, "column", cdse_hw_column(hw->key));
                rc |= attr_string(d, "system", job->system[hw->system].name);
            }
            H5Dclose(d);
        }
        H5Sclose(space);
    }
    H5Gclose(g);
    return rc;
}

static hid_t name_type(void);

static int create_layout(cdse_store *s, const cdse_job *job, const cdse_store_meta *meta)
{
    int rc = write_root_attrs(s->file, job, meta);
    rc |= write_root_checksum(s->file, s, 0);
    rc |= write_job_text(s->file, job);
    rc |= write_space(s->file, job);
    hid_t mt = compound_of(&cdse_model_fields), st = compound_of(&cdse_system_fields);
    hid_t ct = count_type(), rt = range_type(CDSE_ST_COUNT);
    rc |= write_fixed_table(s->file, "models", mt, (size_t)job->n_models, job->model);
    rc |= write_fixed_table(s->file, "systems", st, (size_t)job->n_systems, job->system);
    hid_t nt = name_type();
    rc |= write_fixed_table(s->file, "stacks", nt, (size_t)s->n_stack_names, s->stack_name);
    H5Tclose(nt);
    count_row rows[COUNT_ROWS(true)];
    cdse_counts zero;
    memset(&zero, 0, sizeof zero);
    bool pruned = job->objective.prune;
    counts_rows(&zero, CDSE_ST_COUNT, pruned, rows);
    hid_t counts = create_table(s->file, "counts", ct, COUNT_ROWS(true), TABLE_CHECKSUM);
    if (counts < 0 || table_write(counts, ct, 0, COUNT_ROWS(pruned), rows) < 0)
        rc = -1;
    if (counts >= 0)
        H5Dclose(counts);
    hid_t progress = create_table(s->file, "progress", rt, 1024, 0);
    hid_t top = create_table(s->file, "top", s->row_type, STORE_SMALL_CHUNK_ROWS, BEST_FILTERS);
    hid_t pareto =
        create_table(s->file, "pareto", s->row_type, STORE_SMALL_CHUNK_ROWS, BEST_FILTERS);
    hid_t front =
        create_table(s->file, "pareto_cost", s->row_type, STORE_SMALL_CHUNK_ROWS, BEST_FILTERS);
    if (progress < 0 || top < 0 || pareto < 0 || front < 0)
        rc = -1;
    char note[CDSE_PARETO_COST_NOTE_MAX];
    cdse_pareto_cost_note(job, note, sizeof note);
    if (front >= 0)
        rc |= attr_string(front, "note", note);
    H5Dclose(progress);
    H5Dclose(top);
    H5Dclose(pareto);
    H5Dclose(front);
    if (job->objective.store != CDSE_STORE_BEST) {
        s->results =
            create_table(s->file, "results", s->row_type, STORE_RESULTS_CHUNK_ROWS, TABLE_DEFLATE);
        uint64_t zero_rows = 0;
        if (s->results < 0 ||
            attr_write(s->results, "rows_committed", H5T_NATIVE_UINT64, &zero_rows) < 0)
            rc = -1;
    }
    H5Tclose(mt);
    H5Tclose(st);
    H5Tclose(ct);
    H5Tclose(rt);
    return rc;
}

static cdse_store *store_alloc(void)
{
    cdse_store *s = calloc(1, sizeof *s);
    if (s) {
        s->statuses = CDSE_ST_COUNT;
        s->lock_fd = -1;
        s->file = -1;
        s->row_type = -1;
        s->results = -1;
    }
    return s;
}

/* One writer per store: an exclusive flock(2), released when the writer closes or dies (HDF5's
 * own locking is off, see cdse_store_open). Returns the descriptor (open for reading and
 * writing: the writer also takes the readers' exclusion on it) or -1 with errno. */
static int lock_writer(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0 && store__lock_writer(fd) != 0) {
        int err = errno;
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* A flush or a close of the writer's, which writes metadata in place: the readers that have the
 * store open close it first, and new readers wait until it is done (store_lock.h). */
static void writer_exclude(const cdse_store *s)
{
    if (s->writable && s->lock_fd >= 0)
        store__exclude_readers(s->lock_fd);
}

static void writer_admit(const cdse_store *s)
{
    if (s->writable && s->lock_fd >= 0)
        store__admit_readers(s->lock_fd);
}

static herr_t writer_flush(cdse_store *s)
{
    writer_exclude(s);
    herr_t rc = H5Fflush(s->file, H5F_SCOPE_GLOBAL);
    writer_admit(s);
    return rc;
}

static void store_free(cdse_store *s)
{
    if (s == NULL)
        return;
    if (s->results >= 0)
        H5Dclose(s->results);
    if (s->row_type >= 0)
        H5Tclose(s->row_type);
    if (s->file >= 0) {
        writer_exclude(s);
        H5Fclose(s->file);
    }
    if (s->lock_fd >= 0)
        close(s->lock_fd); /* releases every lock */
    free(s);
}

/* What --force may replace: a clusterdse store (one HDF5 cannot open is a damaged store, which
 * --force is there to sweep again), never the job file the sweep reads nor a file that is not a
 * store. CDSE_OK, or CDSE_EINVAL with the reason and what is allowed. Reads the file: called
 * inside the read guard. */
static int replaceable(const char *path, const cdse_job *job, cdse_diag *diag)
{
    struct stat out, in;
    if (stat(path, &out) != 0 || !S_ISREG(out.st_mode)) {
        cdse_diag_set(diag,
                      "%s is not a regular file, not replaced even with --force; allowed: a "
                      "clusterdse store or a new file name",
                      path);
        return CDSE_EINVAL;
    }
    if (stat(job->path, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
        cdse_diag_set(diag,
                      "%s is the job file this sweep reads (%s), not replaced even with --force; "
                      "allowed: another -o",
                      path, job->path);
        return CDSE_EINVAL;
    }
    if (!cdse_store_has_hdf5_signature(path)) {
        cdse_diag_set(diag,
                      "%s is not a clusterdse store (not an HDF5 file), not replaced even with "
                      "--force; allowed: an existing store or a new file name",
                      path);
        return CDSE_EINVAL;
    }
    hid_t fapl = file_access();
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (file < 0)
        return CDSE_OK; /* damaged beyond opening: a damaged store is what --force replaces */
    char format[64] = "";
    bool store = attr_read_string(file, "format", format, sizeof format) == 0 &&
                 strcmp(format, CDSE_STORE_FORMAT) == 0;
    H5Fclose(file);
    if (!store) {
        cdse_diag_set(diag,
                      "%s is an HDF5 file but not a clusterdse store (no format = \"%s\"), not "
                      "replaced even with --force; allowed: an existing store or a new file name",
                      path, CDSE_STORE_FORMAT);
        return CDSE_EINVAL;
    }
    return CDSE_OK;
}

/* Before anything is written: the creators' lock on `tmp` (held by the creator from then on: it
 * becomes the writer's lock once `tmp` is renamed to `path`), then what exists at `path`: a store
 * that a sweep writes is refused, an existing file without --force is refused, and with --force
 * only a store (replaceable) is replaced, its writer's lock held until the rename (`*old_fd`).
 * CDSE_OK with the lock's descriptor in `*fd`; otherwise nothing is held and `tmp` is removed
 * when this creator made it. */
static int claim_output(const char *path, const char *tmp, const cdse_job *job, bool force, int *fd,
                        int *old_fd, cdse_diag *diag)
{
    *fd = *old_fd = -1;
    int lock = store__lock_creator(tmp);
    if (lock < 0) {
        int err = errno;
        if (err == EWOULDBLOCK || err == EAGAIN) {
            cdse_diag_set(diag,
                          "%s is being created by another sweep (it holds the lock on %s); "
                          "allowed: another -o, or wait for that sweep and add --resume",
                          path, tmp);
            return CDSE_EBUSY;
        }
        cdse_diag_set(diag, "cannot create %s: %s", tmp, strerror(err));
        return CDSE_EIO;
    }
    int rc = CDSE_OK;
    struct stat st;
    if (stat(path, &st) == 0) {
        *old_fd = S_ISREG(st.st_mode) ? lock_writer(path) : -1;
        if (S_ISREG(st.st_mode) && *old_fd < 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
            cdse_diag_set(diag,
                          "%s is being written by another sweep (it holds the lock on %s); "
                          "allowed: another -o, or wait for that sweep and add --resume",
                          path, path);
            rc = CDSE_EBUSY;
        } else if (!force) {
            cdse_diag_set(diag, "%s exists: add --resume to continue it or --force to overwrite it",
                          path);
            rc = CDSE_EEXIST;
        } else {
            guard_begin(path);
            rc = replaceable(path, job, diag);
            guard_end();
        }
    }
    if (rc != CDSE_OK) {
        if (*old_fd >= 0)
            close(*old_fd);
        *old_fd = -1;
        remove(tmp); /* this creator's, as it holds its lock */
        close(lock);
        return rc;
    }
    *fd = lock;
    return CDSE_OK;
}

/* Puts the new store in place: over the store it replaces (with --force), or at a name that no
 * file may take meanwhile (renameat2's RENAME_NOREPLACE, where the file system has it; the
 * creators' lock already keeps other sweeps away). */
static int rename_into_place(const char *tmp, const char *path, bool replace)
{
#ifdef RENAME_NOREPLACE
    if (!replace) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno != EINVAL && errno != ENOSYS)
            return -1;
    }
#else
    (void)replace;
#endif
    return rename(tmp, path);
}

static void store_names(cdse_store *s, const cdse_job *job)
{
    s->fingerprint = job->fingerprint;
    s->space_size = job->space.size;
    s->metric = job->objective.metric;
    s->mode = job->objective.store;
    s->n_models = job->n_models;
    s->n_systems = job->n_systems;
    for (int i = 0; i < job->n_models; i++)
        snprintf(s->model_name[i], CDSE_NAME_MAX, "%s", job->model[i].name);
    for (int i = 0; i < job->n_systems; i++)
        snprintf(s->system_name[i], CDSE_NAME_MAX, "%s", job->system[i].name);
    s->n_stack_names = job->n_stacks + 1;
    for (int i = 0; i < job->n_stacks; i++)
        snprintf(s->stack_name[i], CDSE_NAME_MAX, "%s", job->stack[i].name);
    snprintf(s->stack_name[job->n_stacks], CDSE_NAME_MAX, "%s", CDSE_STACK_DEFAULT_LABEL);
}

int cdse_store_create(const char *path, const cdse_job *job, const cdse_store_meta *meta,
                      bool force, cdse_store **out, cdse_diag *diag)
{
    *out = NULL;
    /* The layout is written under a temporary name and renamed into place once flushed, so a
     * kill at any moment leaves either no store or a valid empty one. */
    char tmp[CDSE_PATH_MAX + 16];
    if (strlen(path) >= CDSE_PATH_MAX) {
        cdse_diag_set(diag, "%.200s...: the store's path has %zu bytes; allowed: at most %d", path,
                      strlen(path), CDSE_PATH_MAX - 1);
        return CDSE_EINVAL;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int lock = -1, old = -1;
    int rc = claim_output(path, tmp, job, force, &lock, &old, diag);
    if (rc != CDSE_OK)
        return rc;
    cdse_store *s = store_alloc();
    if (s == NULL) {
        cdse_diag_set(diag, "out of memory");
        remove(tmp);
        close(lock);
        if (old >= 0)
            close(old);
        return CDSE_ENOMEM;
    }
    s->writable = true;
    s->lock_fd = lock;
    snprintf(s->path, sizeof s->path, "%s", path);
    store_names(s, job);

    /* File space is never reused, so bytes the last commit points to are never overwritten. */
    errno = 0;
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_NONE, 0, 1);
    hid_t fapl = file_access();
    s->file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl); /* the creator's own, locked temporary */
    H5Pclose(fapl);
    H5Pclose(fcpl);
    if (s->file < 0) {
        cdse_diag_set(diag, "cannot create %s: %s", tmp, errno ? strerror(errno) : "HDF5 error");
        remove(tmp);
        store_free(s);
        if (old >= 0)
            close(old);
        return CDSE_EIO;
    }
    s->row_type = row_type(s);
    if (hold_metadata_until_flush(s->file) < 0 || create_layout(s, job, meta) != 0 ||
        H5Fflush(s->file, H5F_SCOPE_GLOBAL) < 0 || rename_into_place(tmp, path, old >= 0) != 0) {
        cdse_diag_set(diag, "cannot write the layout of %s: %s", path,
                      errno ? strerror(errno) : "HDF5 error");
        remove(tmp);
        store_free(s);
        if (old >= 0)
            close(old);
        return CDSE_EIO;
    }
    if (old >= 0)
        close(old); /* the replaced store's lock: its name is this store's now */
    *out = s;
    return CDSE_OK;
}

/* ---- open ---------------------------------------------------------------------------------- */

/* A row of a table of names (/stacks; the `name` member of /models and /systems). */
typedef struct name_row {
    char name[CDSE_NAME_MAX];
} name_row;

static hid_t name_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(name_row));
    hid_t st = string_type(CDSE_NAME_MAX);
    H5Tinsert(t, "name", 0, st);
    H5Tclose(st);
    return t;
}

static int read_names(hid_t file, const char *table, char names[][CDSE_NAME_MAX], int max, int *n)
{
    *n = 0;
    if (H5Lexists(file, table, H5P_DEFAULT) <= 0)
        return -1;
    hid_t d = H5Dopen2(file, table, H5P_DEFAULT);
    if (d < 0)
        return -1;
    uint64_t rows = table_rows(d);
    if (rows > (uint64_t)max) {
        H5Dclose(d);
        return -1;
    }
    hid_t t = name_type();
    name_row buf[CDSE_MAX_MODELS > CDSE_MAX_SYSTEMS ? CDSE_MAX_MODELS : CDSE_MAX_SYSTEMS];
    int rc = table_read(d, t, 0, (size_t)rows, buf);
    for (uint64_t i = 0; rc == 0 && i < rows; i++) {
        buf[i].name[CDSE_NAME_MAX - 1] = '\0';
        memcpy(names[i], buf[i].name, CDSE_NAME_MAX);
    }
    H5Tclose(t);
    H5Dclose(d);
    *n = (int)rows;
    return rc;
}

static int parse_store_mode(const char *name)
{
    for (int i = 0; i < CDSE_STORE_MODES; i++)
        if (strcmp(name, cdse_store_mode_names[i]) == 0)
            return i;
    return -1;
}

/* /stacks, the names of the stack column. Stores made before it existed have none, and their
 * rows no stack column: they ran on the built-in stack, the one name of an enumeration that
 * HDF5 needs to be non-empty. */
static int read_stack_names(cdse_store *s)
{
    s->n_stack_names = 1;
    snprintf(s->stack_name[0], CDSE_NAME_MAX, "%s", CDSE_STACK_DEFAULT_LABEL);
    if (H5Lexists(s->file, "stacks", H5P_DEFAULT) <= 0)
        return 0;
    return read_names(s->file, "stacks", s->stack_name, CDSE_MAX_STACKS + 1, &s->n_stack_names);
}

static int open_layout(cdse_store *s, const char *path, cdse_diag *diag)
{
    char format[64], metric[64], mode[32];
    if (attr_read_string(s->file, "format", format, sizeof format) < 0 ||
        strcmp(format, CDSE_STORE_FORMAT) != 0) {
        cdse_diag_set(diag, "%s is an HDF5 file but not a clusterdse store (no format = \"%s\")",
                      path, CDSE_STORE_FORMAT);
        return CDSE_EINVAL;
    }
    int complete = 0;
    if (attr_read(s->file, "fingerprint", H5T_NATIVE_UINT64, &s->fingerprint) < 0 ||
        attr_read(s->file, "space_size", H5T_NATIVE_UINT64, &s->space_size) < 0 ||
        attr_read(s->file, "complete", H5T_NATIVE_INT, &complete) < 0 ||
        attr_read_string(s->file, "metric", metric, sizeof metric) < 0 ||
        attr_read_string(s->file, "store_mode", mode, sizeof mode) < 0 ||
        (s->metric = cdse_metric_parse(metric)) < 0 || (s->mode = parse_store_mode(mode)) < 0 ||
        read_names(s->file, "models", s->model_name, CDSE_MAX_MODELS, &s->n_models) < 0 ||
        read_names(s->file, "systems", s->system_name, CDSE_MAX_SYSTEMS, &s->n_systems) < 0 ||
        read_stack_names(s) < 0) {
        cdse_diag_set(diag,
                      "%s: a damaged clusterdse store (root attributes or /models, "
                      "/systems unreadable)" STORE_DAMAGED_HINT,
                      path);
        return CDSE_EIO;
    }
    s->complete = complete != 0;
    uint64_t sum = 0;
    if (H5Aexists(s->file, "checksum") > 0 &&
        (attr_read(s->file, "checksum", H5T_NATIVE_UINT64, &sum) < 0 ||
         sum != root_checksum(s->fingerprint, s->space_size, s->metric, s->mode, complete))) {
        cdse_diag_set(diag,
                      "%s: a damaged clusterdse store (its root attributes do not match their "
                      "checksum)" STORE_DAMAGED_HINT,
                      path);
        return CDSE_EIO;
    }
    s->statuses = file_statuses(s->file);
    s->row_type = row_type(s);
    hid_t progress = open_table(s->file, "progress");
    hid_t dcpl = progress >= 0 ? H5Dget_create_plist(progress) : -1;
    s->progress_filtered = dcpl >= 0 && H5Pget_nfilters(dcpl) > 0;
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (progress >= 0)
        H5Dclose(progress);
    static const char *const required[] = {"counts", "progress", "top", "pareto", "job"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (H5Lexists(s->file, required[i], H5P_DEFAULT) <= 0) {
            cdse_diag_set(diag, "%s: a damaged clusterdse store (no /%s)" STORE_DAMAGED_HINT, path,
                          required[i]);
            return CDSE_EIO;
        }
    if (H5Lexists(s->file, "results", H5P_DEFAULT) > 0) {
        hid_t dapl = H5Pcreate(H5P_DATASET_ACCESS);
        H5Pset_chunk_cache(dapl, 0, 0, 1.0);
        s->results = H5Dopen2(s->file, "results", dapl);
        H5Pclose(dapl);
        if (s->results < 0) {
            cdse_diag_set(diag, "%s: a damaged store: /results cannot be opened" STORE_DAMAGED_HINT,
                          path);
            return CDSE_EIO;
        }
        s->rows = table_rows(s->results);
    }
    return CDSE_OK;
}

static int unguarded_read_progress(cdse_store *store, cdse_done **done, size_t *n, cdse_diag *diag);

/* Whether a /progress row is one a commit wrote: a range of the space whose configurations
 * its counts add up to (/progress has no checksum; a row torn by a kill, or damaged, is not). */
static bool progress_row_whole(const cdse_store *s, const cdse_done *row)
{
    if (row->begin >= row->end || row->end > s->space_size)
        return false;
    uint64_t sum = row->pruned;
    for (int st = 0; st < s->statuses; st++)
        sum += row->status[st];
    return sum == row->end - row->begin;
}

/* Brings a store back to its last complete commit. Rows of /progress are appended commit after
 * commit with a non-decreasing /results row count, so the longest prefix of /progress whose row
 * counts /results holds is a consistent earlier state (a kill during a commit's flush can leave
 * one dataset's extent newer than another's); later progress rows and rows of /results past
 * that count are dropped, and those ranges are evaluated again. */
/* The last complete commit: the longest prefix of /progress whose row counts /results holds;
 * `keep` receives the length of that prefix, `committed` its /results row count. */
static int last_commit(cdse_store *s, size_t *keep, size_t *total, uint64_t *committed,
                       cdse_diag *diag)
{
    cdse_done *done = NULL;
    size_t n = 0;
    int rc = unguarded_read_progress(s, &done, &n, diag);
    if (rc != 0)
        return rc;
    uint64_t limit = s->results >= 0 ? s->rows : 0;
    *committed = 0;
    *keep = 0;
    while (*keep < n && done[*keep].rows <= limit && done[*keep].rows >= *committed &&
           progress_row_whole(s, &done[*keep]))
        *committed = done[(*keep)++].rows;
    *total = n;
    free(done);
    return CDSE_OK;
}

static int truncate_uncommitted(cdse_store *s, const char *path, cdse_diag *diag)
{
    size_t keep = 0, n = 0;
    uint64_t committed = 0;
    int rc = last_commit(s, &keep, &n, &committed, diag);
    if (rc != 0)
        return rc;
    s->progress_rows = keep;
    if (keep < n) {
        hid_t d = open_table(s->file, "progress");
        hsize_t rows = keep;
        int bad = d < 0 || H5Dset_extent(d, &rows) < 0;
        if (d >= 0)
            H5Dclose(d);
        if (bad) {
            cdse_diag_set(diag, "%s: cannot drop incomplete /progress rows", path);
            return CDSE_EIO;
        }
    }
    bool dropped = keep < n;
    if (s->results >= 0 && committed < s->rows) {
        hsize_t rows = committed;
        if (H5Dset_extent(s->results, &rows) < 0) {
            cdse_diag_set(diag, "%s: cannot drop uncommitted rows", path);
            return CDSE_EIO;
        }
        s->rows = committed;
        dropped = true;
    }
    /* The cut reaches the file now: the next commit writes /progress rows in place of the
     * dropped ones (without a filter, in place), which must not be rows the file still shows. */
    if (dropped && writer_flush(s) < 0) {
        cdse_diag_set(diag, "%s: cannot write the store's cut to its last commit", path);
        return CDSE_EIO;
    }
    return CDSE_OK;
}

bool cdse_store_has_hdf5_signature(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return false;
    bool found = false;
    for (long offset = 0; !found && offset <= (1L << 30); offset = offset ? 2 * offset : 512) {
        unsigned char buf[8];
        if (fseek(f, offset, SEEK_SET) != 0 || fread(buf, 1, sizeof buf, f) != sizeof buf)
            break;
        found = memcmp(buf, sig, sizeof sig) == 0;
    }
    fclose(f);
    return found;
}

int cdse_store_check_path(const char *path, cdse_diag *diag)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        int err = errno;
        cdse_diag_set(diag, "cannot open %s: %s", path, strerror(err));
        /* A path that does not exist or cannot be reached is the user's input; anything else
         * (an I/O error) a runtime failure. */
        return err == ENOENT || err == ENOTDIR || err == EACCES ? CDSE_EINVAL : CDSE_EIO;
    }
    /* HDF5 opens whatever it is given: a FIFO blocks it forever, a directory fails late. */
    if (!S_ISREG(st.st_mode)) {
        cdse_diag_set(
            diag, "%s is %s; allowed: a regular file (an HDF5 file written by clusterdse)", path,
            S_ISDIR(st.st_mode) ? "a directory" : "not a regular file (a FIFO, device or socket)");
        return CDSE_EINVAL;
    }
    return CDSE_OK;
}

int cdse_store_check_file(const char *path, cdse_diag *diag)
{
    int checked = cdse_store_check_path(path, diag);
    if (checked != CDSE_OK)
        return checked;
    if (H5Fis_hdf5(path) <= 0) {
        if (!cdse_store_has_hdf5_signature(path)) { /* not a store at all: bad input */
            cdse_diag_set(diag, "%s is not an HDF5 file", path);
            return CDSE_EINVAL;
        }
        cdse_diag_set(diag, "%s is an HDF5 file damaged beyond reading" STORE_DAMAGED_HINT, path);
        return CDSE_EIO;
    }
    return CDSE_OK;
}

/* Opens `path` with `lock` (lock_fd of the store: the writer's lock, or a reader's hold; -1
 * without one), which it owns from then on. */
static int unguarded_open(const char *path, bool writable, int lock, cdse_store **out,
                          cdse_diag *diag)
{
    *out = NULL;
    int checked = cdse_store_check_file(path, diag);
    if (checked != CDSE_OK) {
        if (lock >= 0)
            close(lock);
        return checked;
    }
    cdse_store *s = store_alloc();
    if (s == NULL) {
        cdse_diag_set(diag, "out of memory");
        if (lock >= 0)
            close(lock);
        return CDSE_ENOMEM;
    }
    s->writable = writable;
    s->lock_fd = lock;
    snprintf(s->path, sizeof s->path, "%s", path);
    hid_t fapl = file_access();
    s->file = H5Fopen(path, writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (s->file < 0) {
        cdse_diag_set(diag,
                      "cannot open %s as HDF5: the file is damaged (cut short or "
                      "overwritten)" STORE_DAMAGED_HINT,
                      path);
        store_free(s);
        return CDSE_EIO;
    }
    /* After a kill the superblock may hold an end-of-allocation older than data the metadata
     * points to (what `h5clear --increment=0` repairs). */
    if (writable)
        H5Fincrement_filesize(s->file, 0);
    int rc = open_layout(s, path, diag);
    /* The staging copies of the last session are written before they are read, but emptying a
     * damaged one can crash HDF5 outside the read guard: they are deleted here, under it, and
     * made again by the first commit. */
    if (rc == 0 && writable && H5Lexists(s->file, STAGING, H5P_DEFAULT) > 0 &&
        H5Ldelete(s->file, STAGING, H5P_DEFAULT) < 0) {
        cdse_diag_set(
            diag, "%s: a damaged store: /" STAGING " cannot be deleted" STORE_DAMAGED_HINT, path);
        rc = CDSE_EIO;
    }
    if (rc == 0 && writable) {
        if (hold_metadata_until_flush(s->file) < 0) {
            cdse_diag_set(diag, "%s: cannot configure the metadata cache", path);
            rc = CDSE_EIO;
        }
        if (rc == 0)
            rc = truncate_uncommitted(s, path, diag);
    } else if (rc == 0 && s->results >= 0) {
        /* Readers see the committed rows only: rows past the last commit (a write that failed
         * or was killed after /results grew) are not results. */
        size_t keep = 0, n = 0;
        uint64_t committed = 0;
        rc = last_commit(s, &keep, &n, &committed, diag);
        if (rc == 0 && committed < s->rows)
            s->rows = committed;
    }
    if (rc != 0) {
        store_free(s);
        return rc;
    }
    *out = s;
    return CDSE_OK;
}

int cdse_store_close(cdse_store *store, cdse_diag *diag)
{
    if (store == NULL)
        return CDSE_OK;
    int rc = CDSE_OK;
    if (store->results >= 0 && H5Dclose(store->results) < 0)
        rc = CDSE_EIO;
    store->results = -1;
    if (store->row_type >= 0)
        H5Tclose(store->row_type);
    store->row_type = -1;
    if (store->file >= 0)
        writer_exclude(store);
    if (store->file >= 0 && H5Fclose(store->file) < 0)
        rc = CDSE_EIO;
    store->file = -1;
    if (store->lock_fd >= 0)
        close(store->lock_fd);
    if (rc != 0)
        cdse_diag_set(diag, "closing the store failed");
    free(store);
    return rc;
}

void cdse_store_abandon(cdse_store *store)
{
    if (store == NULL)
        return;
    if (store->lock_fd >= 0)
        close(store->lock_fd);
    free(store); /* its HDF5 identifiers stay open: the process ends before any use of them */
}

int cdse_store_statuses(const cdse_store *store)
{
    return store->statuses;
}

uint64_t cdse_store_fingerprint(const cdse_store *store)
{
    return store->fingerprint;
}

int cdse_store_metric(const cdse_store *store)
{
    return store->metric;
}

int cdse_store_get_mode(const cdse_store *store)
{
    return store->mode;
}

uint64_t cdse_store_space_size(const cdse_store *store)
{
    return store->space_size;
}

bool cdse_store_complete(const cdse_store *store)
{
    return store->complete;
}

int cdse_store_n_models(const cdse_store *store)
{
    return store->n_models;
}

const char *cdse_store_model_name(const cdse_store *store, int i)
{
    return i >= 0 && i < store->n_models ? store->model_name[i] : "?";
}

int cdse_store_n_systems(const cdse_store *store)
{
    return store->n_systems;
}

const char *cdse_store_system_name(const cdse_store *store, int i)
{
    return i >= 0 && i < store->n_systems ? store->system_name[i] : "?";
}

int cdse_store_n_stacks(const cdse_store *store)
{
    return store->n_stack_names > 0 ? store->n_stack_names - 1 : 0;
}

const char *cdse_store_stack_name(const cdse_store *store, int i)
{
    return i >= 0 && i < store->n_stack_names ? store->stack_name[i] : "?";
}

static int unguarded_job_path(cdse_store *store, char *out, size_t size, cdse_diag *diag)
{
    out[0] = '\0';
    int exists = H5Aexists(store->file, "job_path");
    if (exists == 0)
        return CDSE_OK;
    if (exists < 0 || attr_read_string(store->file, "job_path", out, size) < 0) {
        cdse_diag_set(diag,
                      "%s: a damaged store: the root attribute job_path cannot be "
                      "read" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    return CDSE_OK;
}

static int unguarded_job_text(cdse_store *store, char **text, cdse_diag *diag)
{
    hid_t d = H5Dopen2(store->file, "job", H5P_DEFAULT);
    hsize_t file_size = 0;
    H5Fget_filesize(store->file, &file_size);
    *text = d < 0 ? NULL : read_string(d, false, (size_t)file_size);
    if (d >= 0)
        H5Dclose(d);
    if (*text == NULL) {
        cdse_diag_set(diag, "%s: a damaged store: /job cannot be read" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    return CDSE_OK;
}

/* ---- write --------------------------------------------------------------------------------- */

/* Cuts /results to `first` rows (a multiple of the chunk rows), dropping the chunks from there
 * on. HDF5 writes a chunk again at the address it had when its compressed size is unchanged; a
 * dropped chunk is written anew into new space instead. Its old space is not reused: it never
 * ends the file, as the commit that wrote it put its copies in /staging after it
 * (commit_table). */
static int drop_chunks_from(cdse_store *store, uint64_t first)
{
    hsize_t extent = first;
    if (H5Dset_extent(store->results, &extent) < 0)
        return -1;
    store->rows = first;
    return 0;
}

int cdse_store_write_rows(cdse_store *store, uint64_t start, const void *rows, size_t n,
                          cdse_diag *diag)
{
    if (n == 0)
        return CDSE_OK;
    if (store->results < 0) {
        cdse_diag_set(diag, "this store keeps no /results (store = \"best\")");
        return CDSE_EINVAL;
    }
    /* A chunk that holds rows already (the last, partly filled one) is written again with its
     * old rows and the new ones, into new space (drop_chunks_from). */
    uint64_t first = start - start % STORE_RESULTS_CHUNK_ROWS;
    unsigned char *joined = NULL;
    if (store->rows > first) {
        if (store->rows > start + n) {
            cdse_diag_set(diag, "rows written to /results must reach its end (row %llu)",
                          (unsigned long long)store->rows);
            return CDSE_EINVAL;
        }
        size_t rs = cdse_store_row_size(), before = (size_t)(start - first);
        if (before > 0) {
            joined = malloc((before + n) * rs);
            if (joined == NULL) {
                cdse_diag_set(diag, "out of memory");
                return CDSE_ENOMEM;
            }
            if (table_read(store->results, store->row_type, first, before, joined) < 0) {
                free(joined);
                cdse_diag_set(diag, "%s: rows %llu..%llu of /results cannot be read back",
                              store->path, (unsigned long long)first, (unsigned long long)start);
                return CDSE_EIO;
            }
            memcpy(joined + before * rs, rows, n * rs);
            rows = joined;
            n += before;
            start = first;
        }
        if (drop_chunks_from(store, first) < 0) {
            free(joined);
            cdse_diag_set(diag, "%s: cannot drop the partial chunk of /results", store->path);
            return CDSE_EIO;
        }
    }
    uint64_t end = start + n > store->rows ? start + n : store->rows;
    hsize_t extent = end, offset = start, count = n;
    errno = 0;
    int rc = H5Dset_extent(store->results, &extent) < 0 ? -1 : 0;
    if (rc == 0) {
        hid_t fspace = H5Dget_space(store->results);
        hid_t mspace = H5Screate_simple(1, &count, NULL);
        rc =
            H5Sselect_hyperslab(fspace, H5S_SELECT_SET, &offset, NULL, &count, NULL) < 0 ||
                    H5Dwrite(store->results, store->row_type, mspace, fspace, H5P_DEFAULT, rows) < 0
                ? -1
                : 0;
        H5Sclose(mspace);
        H5Sclose(fspace);
    }
    free(joined);
    if (rc != 0) {
        char cause[160];
        cdse_diag_set(diag, "%s: writing %zu rows to /results failed: %s", store->path, n,
                      io_cause(cause, sizeof cause));
        return CDSE_EIO;
    }
    store->rows = end;
    return CDSE_OK;
}

int cdse_store_append(cdse_store *store, const void *rows, size_t n, cdse_diag *diag)
{
    return cdse_store_write_rows(store, store->rows, rows, n, diag);
}

size_t cdse_store_chunk_rows(void)
{
    return STORE_RESULTS_CHUNK_ROWS;
}

size_t cdse_store_chunk_bound(void)
{
    return (size_t)compressBound((uLong)(STORE_RESULTS_CHUNK_ROWS * cdse_store_row_size()));
}

/* HDF5's shuffle filter (H5Zshuffle.c): byte j of element i goes to j x elements + i, the element
 * being the whole compound row. Its deflate filter (H5Zdeflate.c) is zlib's compress2 at the
 * dataset's level. */
size_t cdse_store_compress_chunk(const void *rows, void *scratch, void *out)
{
    size_t size = cdse_store_row_size(), n = STORE_RESULTS_CHUNK_ROWS;
    const unsigned char *src = rows;
    unsigned char *dst = scratch;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < size; j++)
            dst[j * n + i] = src[i * size + j];
    uLongf out_size = (uLongf)cdse_store_chunk_bound();
    if (compress2(out, &out_size, scratch, (uLong)(n * size), STORE_DEFLATE_LEVEL) != Z_OK)
        return 0;
    return (size_t)out_size;
}

int cdse_store_decompress_chunk(const void *data, size_t size, void *scratch, void *rows)
{
    size_t row_size = cdse_store_row_size(), n = STORE_RESULTS_CHUNK_ROWS;
    uLongf out_size = (uLongf)(n * row_size);
    if (uncompress(scratch, &out_size, data, (uLong)size) != Z_OK || out_size != n * row_size)
        return -1;
    const unsigned char *src = scratch;
    unsigned char *dst = rows;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < row_size; j++)
            dst[i * row_size + j] = src[j * n + i];
    return 0;
}

int cdse_store_write_chunk(cdse_store *store, uint64_t start, const void *data, size_t size,
                           cdse_diag *diag)
{
    if (store->results < 0 || start % STORE_RESULTS_CHUNK_ROWS != 0) {
        cdse_diag_set(diag, "a compressed chunk must start at a multiple of %d rows of /results",
                      STORE_RESULTS_CHUNK_ROWS);
        return CDSE_EINVAL;
    }
    /* The partly filled chunk it replaces is dropped first (drop_chunks_from). */
    if (store->rows > start && store->rows < start + STORE_RESULTS_CHUNK_ROWS &&
        drop_chunks_from(store, start) < 0) {
        cdse_diag_set(diag, "%s: cannot drop the partial chunk of /results", store->path);
        return CDSE_EIO;
    }
    uint64_t end = start + STORE_RESULTS_CHUNK_ROWS;
    if (end < store->rows)
        end = store->rows;
    hsize_t extent = end, offset = start;
    errno = 0;
    if (H5Dset_extent(store->results, &extent) < 0 ||
        H5Dwrite_chunk(store->results, H5P_DEFAULT, 0, &offset, size, data) < 0) {
        char cause[160];
        cdse_diag_set(diag, "%s: writing a chunk to /results failed: %s", store->path,
                      io_cause(cause, sizeof cause));
        return CDSE_EIO;
    }
    store->rows = end;
    return CDSE_OK;
}

static bool table_extendible(hid_t d)
{
    hsize_t dims = 0, maxdims = 0;
    hid_t space = H5Dget_space(d);
    bool ok = space >= 0 && H5Sget_simple_extent_ndims(space) == 1 &&
              H5Sget_simple_extent_dims(space, &dims, &maxdims) == 1 && maxdims == H5S_UNLIMITED;
    if (space >= 0)
        H5Sclose(space);
    return ok;
}

/* Tables a commit rewrites whole (/counts, /top, /pareto, /pareto_cost) are written into a copy
 * in the group /staging and put in place of the table by renaming both links; the old table
 * becomes the copy the commit after next rewrites. A SIGKILL can stop a write(2) part-way, and
 * HDF5 rewrites a chunk at the address it had (when its size is the same, and when it was the
 * last thing in the file, whose end moves back when it is freed): the bytes the last commit made
 * visible are therefore never written, only those of the copy, which nothing reads. Emptying the
 * copy first puts its chunks at the end of the file, after every chunk the commit wrote before
 * (the partial chunk of /results): those are never the last thing in the file when they are
 * freed. */
/* The empty staging copy `path` of table `name`: the one of the last commit but one, or a new one
 * (with the `note` of /pareto_cost) after an open (which deletes /staging), or when the copy is
 * a table that cannot be emptied (the fixed-size /counts of stores made before). */
static hid_t staging_table(cdse_store *store, const char *name, const char *path, hid_t type,
                           hsize_t chunk_rows, int filters)
{
    hid_t file = store->file;
    if (H5Lexists(file, STAGING, H5P_DEFAULT) <= 0) {
        hid_t g = H5Gcreate2(file, STAGING, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (g < 0)
            return -1;
        H5Gclose(g);
    }
    hid_t d = H5Lexists(file, path, H5P_DEFAULT) > 0 ? open_table(file, path) : -1;
    if (d >= 0 && table_extendible(d)) {
        hsize_t zero = 0;
        if (H5Dset_extent(d, &zero) < 0) {
            H5Dclose(d);
            return -1;
        }
        return d;
    }
    if (d >= 0) {
        H5Dclose(d);
        if (H5Ldelete(file, path, H5P_DEFAULT) < 0)
            return -1;
    }
    d = create_table(file, path, type, chunk_rows, filters);
    hid_t committed = d >= 0 ? H5Dopen2(file, name, H5P_DEFAULT) : -1;
    char note[CDSE_PARETO_COST_NOTE_MAX];
    if (committed >= 0 && H5Aexists(committed, "note") > 0 &&
        (attr_read_string(committed, "note", note, sizeof note) < 0 ||
         attr_string(d, "note", note) < 0)) {
        H5Dclose(d);
        d = -1;
    }
    if (committed >= 0)
        H5Dclose(committed);
    return d;
}

/* Writes `n` rows of `type` into the staging copy of table `name` and puts it in its place. */
static int commit_table(cdse_store *store, const char *name, hid_t type, hsize_t chunk_rows,
                        int filters, size_t n, const void *rows)
{
    char staged[64];
    snprintf(staged, sizeof staged, STAGING "/%s", name);
    hid_t d = staging_table(store, name, staged, type, chunk_rows, filters);
    int rc = d < 0 ? -1 : table_write(d, type, 0, n, rows);
    if (d >= 0)
        H5Dclose(d);
    hid_t file = store->file;
    if (rc != 0 || H5Lmove(file, name, file, STAGING "/swap", H5P_DEFAULT, H5P_DEFAULT) < 0)
        return -1;
    /* A store is never left without the table (a failed commit is flushed by the close). */
    if (cdse_fault("store_swap_in") ||
        H5Lmove(file, staged, file, name, H5P_DEFAULT, H5P_DEFAULT) < 0) {
        H5Lmove(file, STAGING "/swap", file, name, H5P_DEFAULT, H5P_DEFAULT);
        return -1;
    }
    if (cdse_fault("store_swap_back") ||
        H5Lmove(file, STAGING "/swap", file, staged, H5P_DEFAULT, H5P_DEFAULT) < 0) {
        /* Left in /staging/swap: the next commit puts it back first (restore_swap). */
        snprintf(store->swapped, sizeof store->swapped, "%s", name);
        return -1;
    }
    return 0;
}

/* The old table a failed commit left in /staging/swap goes back to its staging copy's place. */
static int restore_swap(cdse_store *store)
{
    if (store->swapped[0] == '\0')
        return 0;
    char staged[64];
    snprintf(staged, sizeof staged, STAGING "/%s", store->swapped);
    hid_t file = store->file;
    if (H5Lexists(file, STAGING "/swap", H5P_DEFAULT) > 0 &&
        (H5Lexists(file, staged, H5P_DEFAULT) > 0 ||
         H5Lmove(file, STAGING "/swap", file, staged, H5P_DEFAULT, H5P_DEFAULT) < 0))
        return -1;
    store->swapped[0] = '\0';
    return 0;
}

static int commit_records(cdse_store *store, const char *name, const cdse_record *records, size_t n)
{
    size_t row_size = cdse_store_row_size();
    unsigned char *rows = malloc(n ? n * row_size : 1);
    if (rows == NULL)
        return -1;
    for (size_t i = 0; i < n; i++)
        cdse_store_pack(&records[i], rows + i * row_size);
    int rc =
        commit_table(store, name, store->row_type, STORE_SMALL_CHUNK_ROWS, BEST_FILTERS, n, rows);
    free(rows);
    return rc;
}

int cdse_store_commit(cdse_store *store, cdse_done *done, size_t n_done, const cdse_counts *counts,
                      const cdse_best_rows *best, cdse_diag *diag)
{
    int rc = 0;
    errno = 0;
    for (size_t i = 0; i < n_done; i++)
        done[i].rows = store->results >= 0 ? store->rows : 0;
    hid_t rt = range_type(store->statuses), ct = count_type();
    if (restore_swap(store) < 0)
        rc = -1;
    /* The /progress of stores made before has a checksum, so that adding rows would write its
     * last chunk whole: the first commit moves its rows into a table without filters, as new
     * stores have (commit_table; the old table stays in /staging). */
    if (rc == 0 && store->progress_filtered) {
        cdse_done *rows = calloc(store->progress_rows ? store->progress_rows : 1, sizeof *rows);
        hid_t old = open_table(store->file, "progress");
        if (rows == NULL || old < 0 || table_read(old, rt, 0, store->progress_rows, rows) < 0)
            rc = -1;
        if (old >= 0)
            H5Dclose(old);
        if (rc == 0 && commit_table(store, "progress", rt, 1024, 0, store->progress_rows, rows) < 0)
            rc = -1;
        free(rows);
        if (rc == 0)
            store->progress_filtered = false;
    }
    /* /counts keeps the rows it has (16 in stores made before a status was appended). */
    count_row rows[COUNT_ROWS(true)];
    hid_t d = open_table(store->file, "counts");
    uint64_t n_counts = d >= 0 ? table_rows(d) : 0;
    if (d >= 0)
        H5Dclose(d);
    /* Its own layout: an older store's `pruned` row follows its fewer statuses. */
    memset(rows, 0, sizeof rows);
    bool pruned = n_counts == (uint64_t)(2 + store->statuses + 1);
    counts_rows(counts, store->statuses, pruned, rows);
    if (rc == 0 && (n_counts == 0 || n_counts > COUNT_ROWS(true) ||
                    commit_table(store, "counts", ct, COUNT_ROWS(true), TABLE_CHECKSUM,
                                 (size_t)n_counts, rows) < 0))
        rc = -1;
    H5Tclose(ct);
    if (rc == 0)
        rc = commit_records(store, "top", best->top, best->n_top);
    if (rc == 0)
        rc = commit_records(store, "pareto", best->pareto, best->n_pareto);
    if (rc == 0 && H5Lexists(store->file, "pareto_cost", H5P_DEFAULT) > 0)
        rc = commit_records(store, "pareto_cost", best->pareto_cost, best->n_pareto_cost);
    /* The done ranges last: a commit that fails before them (and is flushed by the close) leaves
     * /progress as the last commit left it, and --resume evaluates the ranges again (the rows of
     * them that a table put in place before the failure holds are not taken as done). */
    d = rc == 0 ? open_table(store->file, "progress") : -1;
    if (d >= 0 && table_write(d, rt, store->progress_rows, n_done, done) == 0 &&
        !cdse_fault("store_progress")) {
        store->progress_rows += n_done;
    } else {
        /* A failed write leaves no row the close would flush (table_write raises the extent
         * first). */
        hsize_t kept = store->progress_rows;
        if (d >= 0)
            H5Dset_extent(d, &kept);
        rc = -1;
    }
    if (d >= 0)
        H5Dclose(d);
    H5Tclose(rt);
    if (rc == 0 && store->results >= 0)
        rc = attr_write(store->results, "rows_committed", H5T_NATIVE_UINT64, &store->rows);
    if (rc == 0 && writer_flush(store) < 0)
        rc = -1;
    if (rc != 0) {
        char cause[160];
        cdse_diag_set(diag, "%s: committing to the store failed: %s", store->path,
                      io_cause(cause, sizeof cause));
        return CDSE_EIO;
    }
    return CDSE_OK;
}

int cdse_store_set_complete(cdse_store *store, cdse_diag *diag)
{
    int complete = 1;
    if (attr_write(store->file, "complete", H5T_NATIVE_INT, &complete) < 0 ||
        write_root_checksum(store->file, store, complete) < 0 || writer_flush(store) < 0) {
        cdse_diag_set(diag, "marking the store complete failed");
        return CDSE_EIO;
    }
    store->complete = true;
    return CDSE_OK;
}

/* ---- read ---------------------------------------------------------------------------------- */

static int unguarded_read_progress(cdse_store *store, cdse_done **done, size_t *n, cdse_diag *diag)
{
    *done = NULL;
    *n = 0;
    hid_t d = open_table(store->file, "progress");
    if (d < 0) {
        cdse_diag_set(diag, "%s: a damaged store: /progress cannot be opened" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    uint64_t rows = 0;
    int checked = checked_rows(store, d, "progress", sizeof(cdse_done), &rows, diag);
    if (checked != CDSE_OK) {
        H5Dclose(d);
        return checked;
    }
    cdse_done *r = calloc(rows ? rows : 1, sizeof *r);
    hid_t rt = range_type(store->statuses);
    int rc = r == NULL ? -1 : table_read(d, rt, 0, (size_t)rows, r);
    H5Tclose(rt);
    H5Dclose(d);
    if (rc < 0) {
        free(r);
        cdse_diag_set(diag, "%s: a damaged store: /progress cannot be read" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    *done = r;
    *n = (size_t)rows;
    return CDSE_OK;
}

void cdse_store_sum_counts(const cdse_done *done, size_t n, cdse_counts *counts)
{
    memset(counts, 0, sizeof *counts);
    for (size_t i = 0; i < n; i++)
        for (int st = 0; st < CDSE_ST_COUNT; st++) {
            counts->status[st] += done[i].status[st];
            counts->evaluated += done[i].status[st];
        }
    for (size_t i = 0; i < n; i++)
        counts->pruned += done[i].pruned;
    counts->feasible = counts->status[CDSE_ST_OK];
}

static int unguarded_read_counts(cdse_store *store, cdse_counts *counts, cdse_diag *diag)
{
    memset(counts, 0, sizeof *counts);
    hid_t d = open_table(store->file, "counts");
    if (d < 0 || table_rows(d) > 64) {
        if (d >= 0)
            H5Dclose(d);
        cdse_diag_set(diag, "%s: a damaged store: /counts cannot be read" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    uint64_t rows = table_rows(d);
    count_row buf[64];
    hid_t ct = count_type();
    int rc = table_read(d, ct, 0, (size_t)rows, buf);
    H5Tclose(ct);
    H5Dclose(d);
    if (rc < 0) {
        cdse_diag_set(diag, "%s: a damaged store: /counts cannot be read" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    for (uint64_t i = 0; i < rows; i++) {
        buf[i].name[STORE_COUNT_NAME_LEN - 1] = '\0';
        int st = cdse_status_parse(buf[i].name);
        if (strcmp(buf[i].name, "evaluated") == 0)
            counts->evaluated = buf[i].count;
        else if (strcmp(buf[i].name, "feasible") == 0)
            counts->feasible = buf[i].count;
        else if (strcmp(buf[i].name, "pruned") == 0)
            counts->pruned = buf[i].count;
        else if (st >= 0 && st < CDSE_ST_COUNT)
            counts->status[st] = buf[i].count;
    }
    return CDSE_OK;
}

void cdse_store_pareto_cost_note(cdse_store *store, char *buf, size_t size)
{
    buf[0] = '\0';
    guard_begin(store->path);
    hid_t d = H5Lexists(store->file, "pareto_cost", H5P_DEFAULT) > 0
                  ? H5Dopen2(store->file, "pareto_cost", H5P_DEFAULT)
                  : -1;
    hid_t a = d >= 0 && H5Aexists(d, "note") > 0 ? H5Aopen(d, "note", H5P_DEFAULT) : -1;
    char *note = a >= 0 ? read_string(a, true, size) : NULL;
    if (note != NULL)
        snprintf(buf, size, "%s", note);
    free(note);
    if (a >= 0)
        H5Aclose(a);
    if (d >= 0)
        H5Dclose(d);
    guard_end();
}

bool cdse_store_has(cdse_store *store, const char *dataset)
{
    if (strcmp(dataset, "results") == 0)
        return store->results >= 0;
    guard_begin(store->path);
    bool has = H5Lexists(store->file, dataset, H5P_DEFAULT) > 0;
    guard_end();
    return has;
}

static int unguarded_rows(cdse_store *store, const char *dataset, uint64_t *n, cdse_diag *diag)
{
    *n = 0;
    if (strcmp(dataset, "results") == 0) {
        *n = store->results >= 0 ? store->rows : 0;
        return CDSE_OK;
    }
    if (H5Lexists(store->file, dataset, H5P_DEFAULT) <= 0)
        return CDSE_OK;
    hid_t d = open_table(store->file, dataset);
    if (d < 0) {
        cdse_diag_set(diag, "%s: a damaged store: /%s cannot be opened" STORE_DAMAGED_HINT,
                      store->path, dataset);
        return CDSE_EIO;
    }
    int rc = checked_rows(store, d, dataset, cdse_store_row_size(), n, diag);
    H5Dclose(d);
    if (rc != CDSE_OK)
        *n = 0;
    return rc;
}

static int unguarded_read_rows(cdse_store *store, const char *dataset, uint64_t start, size_t n,
                               void *rows, cdse_diag *diag)
{
    bool is_results = strcmp(dataset, "results") == 0;
    hid_t d = is_results ? store->results : open_table(store->file, dataset);
    if (d < 0) {
        cdse_diag_set(diag, "%s: a damaged store: /%s cannot be opened" STORE_DAMAGED_HINT,
                      store->path, dataset);
        return CDSE_EIO;
    }
    int rc = table_read(d, store->row_type, start, n, rows);
    if (!is_results)
        H5Dclose(d);
    if (rc < 0) {
        cdse_diag_set(diag,
                      "%s: a damaged store: rows %llu..%llu of /%s cannot be read (a checksum or "
                      "a decompression failed)" STORE_DAMAGED_HINT,
                      store->path, (unsigned long long)start, (unsigned long long)(start + n),
                      dataset);
        return CDSE_EIO;
    }
    return CDSE_OK;
}

/* ---- guarded entry points ------------------------------------------------------------------ */

/* The lock an open takes before it reads anything (outside the read guard, whose time limit is
 * for reads): the writer's (CDSE_EBUSY while another sweep holds it), then the readers'
 * exclusion until the open, which may write (the cut to the last commit), is done; or a
 * reader's hold, which waits at most STORE_READER_WAIT_S for a commit being flushed. */
static int open_lock(const char *path, bool writable, int *lock, cdse_diag *diag)
{
    *lock = -1;
    if (writable) {
        *lock = lock_writer(path);
        if (*lock < 0 && (errno == EWOULDBLOCK || errno == EAGAIN)) {
            cdse_diag_set(diag,
                          "%s is being written by another sweep (it holds the lock on %s); "
                          "allowed: another -o, or wait for that sweep",
                          path, path);
            return CDSE_EBUSY;
        }
        if (*lock < 0) {
            cdse_diag_set(diag, "cannot open %s for writing: %s", path, strerror(errno));
            return errno == EACCES || errno == EROFS ? CDSE_EINVAL : CDSE_EIO;
        }
        store__exclude_readers(*lock);
        return CDSE_OK;
    }
    *lock = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (*lock < 0)
        return CDSE_OK;
    if (store__hold_for_reading(*lock, STORE_READER_WAIT_S) < 0) {
        int err = errno;
        close(*lock);
        *lock = -1;
        if (err == ETIMEDOUT) {
            cdse_diag_set(diag,
                          "%s: the sweep writing it kept it locked for a commit for more than "
                          "%d s (while other commands read it); try again",
                          path, STORE_READER_WAIT_S);
            return CDSE_EIO;
        }
    }
    return CDSE_OK;
}

int cdse_store_open(const char *path, bool writable, cdse_store **out, cdse_diag *diag)
{
    *out = NULL;
    int checked = cdse_store_check_path(path, diag); /* before an open(2): a FIFO would block */
    if (checked != CDSE_OK)
        return checked;
    int lock = -1;
    int rc = open_lock(path, writable, &lock, diag);
    if (rc != CDSE_OK)
        return rc;
    guard_begin(path);
    rc = unguarded_open(path, writable, lock, out, diag);
    guard_end();
    if (rc == CDSE_OK && writable)
        writer_admit(*out);
    return rc;
}

int cdse_store_job_path(cdse_store *store, char *out, size_t size, cdse_diag *diag)
{
    guard_begin(store->path);
    int rc = unguarded_job_path(store, out, size, diag);
    guard_end();
    return rc;
}

int cdse_store_job_text(cdse_store *store, char **text, cdse_diag *diag)
{
    guard_begin(store->path);
    int rc = unguarded_job_text(store, text, diag);
    guard_end();
    return rc;
}

int cdse_store_read_progress(cdse_store *store, cdse_done **done, size_t *n, cdse_diag *diag)
{
    guard_begin(store->path);
    int rc = unguarded_read_progress(store, done, n, diag);
    guard_end();
    return rc;
}

int cdse_store_read_counts(cdse_store *store, cdse_counts *counts, cdse_diag *diag)
{
    guard_begin(store->path);
    int rc = unguarded_read_counts(store, counts, diag);
    guard_end();
    return rc;
}

int cdse_store_rows(cdse_store *store, const char *dataset, uint64_t *n, cdse_diag *diag)
{
    guard_begin(store->path);
    int rc = unguarded_rows(store, dataset, n, diag);
    guard_end();
    return rc;
}

int cdse_store_read_rows(cdse_store *store, const char *dataset, uint64_t start, size_t n,
                         void *rows, cdse_diag *diag)
{
    guard_begin(store->path);
    int rc = unguarded_read_rows(store, dataset, start, n, rows, diag);
    guard_end();
    return rc;
}
