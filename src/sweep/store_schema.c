/* The HDF5 store's schema: the row layout, the HDF5 types of its tables and the small
 * HDF5 helpers the rest of the store uses (store_internal.h). */
#define _GNU_SOURCE /* renameat2 (glibc 2.28) */
#include "store_internal.h"

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
                         col == cdse_record_enum_tables.status ? s->statuses : col->names->n);
    default:
        return H5Tcopy(H5T_NATIVE_INT8);
    }
}

/* The packed compound type of a row, with the model and system names of this store. */
hid_t store__row_type(const cdse_store *s)
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

int store__attr_write(hid_t obj, const char *name, hid_t type, const void *value)
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
hid_t store__fixed_string_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size > 0 ? size : 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

int store__attr_string(hid_t obj, const char *name, const char *value)
{
    hid_t t = store__fixed_string_type(strlen(value) + 1);
    int rc = store__attr_write(obj, name, t, value);
    H5Tclose(t);
    return rc;
}

/* A string of either kind (fixed-length, or variable-length in stores of before) from an
 * attribute (is_attr) or a scalar dataset, into a new buffer; NULL if it cannot be read or
 * is longer than max_size. */
char *store__read_string(hid_t obj, bool is_attr, size_t max_size)
{
    hid_t ftype = is_attr ? H5Aget_type(obj) : H5Dget_type(obj);
    char *out = NULL;
    if (ftype >= 0 && H5Tget_class(ftype) == H5T_STRING) {
        bool vlen = H5Tis_variable_str(ftype) > 0;
        size_t size = vlen ? 0 : H5Tget_size(ftype);
        hid_t t = vlen ? vlen_string_type() : store__fixed_string_type(size + 1);
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

int store__attr_read(hid_t obj, const char *name, hid_t type, void *value)
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

int store__attr_read_string(hid_t obj, const char *name, char *out, size_t size)
{
    out[0] = '\0';
    if (H5Aexists(obj, name) <= 0)
        return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return -1;
    char *value = store__read_string(a, true, STORE_STRING_MAX);
    H5Aclose(a);
    if (value == NULL)
        return -1;
    snprintf(out, size, "%s", value);
    free(value);
    return 0;
}

void store__iso_time_now(char *buf, size_t size)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A 1-D chunked, extendible dataset of `type` with the filters of `filters` (TABLE_*). Tables
 * rewritten whole at every commit carry a checksum; /results is written as compressed chunks of
 * our own (H5Dwrite_chunk, below) and goes without; /progress, which grows inside its last chunk
 * commit after commit, goes without filters, so that adding rows writes only their bytes (a
 * filtered chunk is rewritten whole, the committed rows with it; see commit_table). */
hid_t store__create_table(hid_t loc, const char *name, hid_t type, hsize_t chunk_rows, int filters)
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
int store__table_write(hid_t d, hid_t type, uint64_t start, size_t n, const void *data)
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

int store__table_read(hid_t d, hid_t type, uint64_t start, size_t n, void *data)
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

uint64_t store__table_rows(hid_t d)
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
int store__checked_rows(const cdse_store *s, hid_t d, const char *name, size_t row_size,
                        uint64_t *rows, cdse_diag *diag)
{
    *rows = store__table_rows(d);
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
hid_t store__open_table(hid_t loc, const char *name)
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
int store__file_statuses(hid_t file)
{
    int n = CDSE_ST_COUNT;
    hid_t d = store__open_table(file, "progress");
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
hid_t store__file_access(void)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_sieve_buf_size(fapl, 0);
    H5Pset_file_locking(fapl, 0, 1);
    return fapl;
}

/* Dirty metadata stays in memory until H5Fflush, so that the file on disk always holds the last
 * commit (HDF5 User's Guide, "Metadata Caching in HDF5": evictions_enabled). */
int store__hold_metadata_until_flush(hid_t file)
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

hid_t store__string_type(size_t size)
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
        base = store__string_type(field->size);
        break;
    default:
        base = store__compound_of(field->record);
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
hid_t store__compound_of(const cdse_field_table *table)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, table->size);
    for (int i = 0; i < table->n; i++) {
        hid_t member = field_type(&table->fields[i]);
        H5Tinsert(t, table->fields[i].name, table->fields[i].offset, member);
        H5Tclose(member);
    }
    return t;
}

hid_t store__count_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(count_row));
    hid_t name = store__string_type(STORE_COUNT_NAME_LEN);
    INSERT(t, count_row, name, name);
    INSERT(t, count_row, count, H5T_NATIVE_UINT64);
    H5Tclose(name);
    return t;
}

/* A /progress row with the counts of the first `statuses` statuses (the rest of cdse_done.status
 * is not read or written). */
hid_t store__range_type(int statuses)
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

int store__write_fixed_table(hid_t loc, const char *name, hid_t type, size_t n, const void *data)
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

/* The rows of a store that counts `statuses` statuses (fewer than CDSE_ST_COUNT in a store made
 * before a status was appended): `pruned` follows the last of them. */
void store__counts_rows(const cdse_counts *counts, int statuses, bool pruned, count_row *rows)
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
        snprintf(rows[2 + st].name, sizeof rows[2 + st].name, "%s",
                 cdse_names_name(cdse_record_enum_tables.status->names, st));
        rows[2 + st].count = counts->status[st];
    }
}
