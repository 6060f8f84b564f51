/* The HDF5 store's writer: creating a store (claiming the output, the layout) and
 * committing to it (append, flush, the staging copies; store_internal.h). */
#define _GNU_SOURCE /* renameat2 (glibc 2.28) */
#include "store_internal.h"

/* ---- create -------------------------------------------------------------------------------- */

/* A checksum (64-bit FNV-1a) of the root attributes that readers act on: the fingerprint,
 * space size, metric, store mode and completeness. Written with them (the same object header),
 * verified when a store is opened: a damaged attribute is reported as damage instead of being
 * believed ("made by a different job", a wrong space size). Stores without it predate it. */
uint64_t store__root_checksum(uint64_t fingerprint, uint64_t space_size, int metric, int mode,
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
    uint64_t sum =
        store__root_checksum(s->fingerprint, s->space_size, s->metric, s->mode, complete);
    return store__attr_write(file, "checksum", H5T_NATIVE_UINT64, &sum);
}

static int write_root_attrs(hid_t file, const cdse_store_desc *desc, const cdse_store_meta *meta)
{
    char created[32];
    store__iso_time_now(created, sizeof created);
    uint64_t size = desc->space_size, fp = desc->fingerprint;
    int ranks = meta->ranks, top = desc->top, group_by = desc->group_by;
    double tokens = desc->tokens;
    int complete = 0;
    const cdse_names *modes = cdse_record_enum_tables.store_mode;
    int mode = desc->mode >= 0 && desc->mode < modes->n ? desc->mode : 0;
    int rc = 0;
    rc |= store__attr_string(file, "format", CDSE_STORE_FORMAT);
    rc |= store__attr_string(file, "tool_version", CDSE_VERSION);
    rc |= store__attr_string(file, "git_revision", CDSE_GIT_REV);
    rc |= store__attr_string(file, "created", created);
    rc |= store__attr_string(file, "job_name", desc->job_name);
    rc |= store__attr_string(file, "job_path", desc->job_path);
    rc |= store__attr_write(file, "space_size", H5T_NATIVE_UINT64, &size);
    rc |= store__attr_write(file, "ranks", H5T_NATIVE_INT, &ranks);
    rc |= store__attr_string(file, "mpi_library", meta->mpi_library);
    rc |= store__attr_string(file, "hostnames", meta->hostnames);
    rc |= store__attr_string(file, "slurm_job_id", meta->slurm_job_id);
    rc |= store__attr_write(file, "fingerprint", H5T_NATIVE_UINT64, &fp);
    rc |= store__attr_string(file, "metric",
                             cdse_names_name(cdse_record_enum_tables.metric, desc->metric));
    rc |= store__attr_string(file, "store_mode", cdse_names_name(modes, mode));
    rc |= store__attr_write(file, "top", H5T_NATIVE_INT, &top);
    rc |= store__attr_write(file, "group_by", H5T_NATIVE_INT, &group_by);
    rc |= store__attr_write(file, "tokens", H5T_NATIVE_DOUBLE, &tokens);
    rc |= store__attr_write(file, "complete", H5T_NATIVE_INT, &complete);
    int pruned = 1; /* only pruned sweeps have it: other stores keep their layout */
    if (desc->pruned)
        rc |= store__attr_write(file, "pruned", H5T_NATIVE_INT, &pruned);
    return rc;
}

static int write_job_text(hid_t file, const cdse_store_desc *desc)
{
    const char *text = desc->job_text ? desc->job_text : "";
    hid_t t = store__fixed_string_type(strlen(text) + 1);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t d = H5Dcreate2(file, "job", t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t rc = d < 0 ? -1 : H5Dwrite(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, text);
    if (d >= 0)
        H5Dclose(d);
    H5Sclose(space);
    H5Tclose(t);
    return rc < 0 ? -1 : 0;
}

static int write_space(hid_t file, const cdse_store_desc *desc)
{
    hid_t g = H5Gcreate2(file, "space", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        return -1;
    int rc = 0;
    uint64_t size = desc->space_size;
    rc |= store__attr_write(g, "size", H5T_NATIVE_UINT64, &size);
    for (int a = 0; a < desc->n_axes && rc == 0; a++) {
        const cdse_store_axis *axis = &desc->axis[a];
        hsize_t n = (hsize_t)axis->n;
        hid_t space = H5Screate_simple(1, &n, NULL);
        /* A hardware axis in use holds its values, the column and the system it applies to. */
        bool hw = axis->reals != NULL;
        hid_t type = hw ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
        const void *values = hw ? (const void *)axis->reals : (const void *)axis->ints;
        hid_t d = H5Dcreate2(g, axis->name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (d < 0 || H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0)
            rc = -1;
        if (d >= 0) {
            rc |= store__attr_write(d, "position", H5T_NATIVE_INT, &a);
            if (hw) {
                rc |= store__attr_string(d, "column", axis->column);
                rc |= store__attr_string(d, "system", axis->system);
            }
            H5Dclose(d);
        }
        H5Sclose(space);
    }
    H5Gclose(g);
    return rc;
}

static int create_layout(cdse_store *s, const cdse_store_desc *desc, const cdse_store_meta *meta)
{
    int rc = write_root_attrs(s->file, desc, meta);
    rc |= write_root_checksum(s->file, s, 0);
    rc |= write_job_text(s->file, desc);
    rc |= write_space(s->file, desc);
    hid_t mt = store__compound_of(desc->models.fields);
    hid_t st = store__compound_of(desc->systems.fields);
    hid_t ct = store__count_type(), rt = store__range_type(CDSE_ST_COUNT);
    rc |= store__write_fixed_table(s->file, "models", mt, desc->models.n, desc->models.rows);
    rc |= store__write_fixed_table(s->file, "systems", st, desc->systems.n, desc->systems.rows);
    hid_t nt = store__name_type();
    rc |= store__write_fixed_table(s->file, "stacks", nt, (size_t)s->n_stack_names, s->stack_name);
    H5Tclose(nt);
    count_row rows[COUNT_ROWS(true)];
    cdse_counts zero;
    memset(&zero, 0, sizeof zero);
    bool pruned = desc->pruned;
    store__counts_rows(&zero, CDSE_ST_COUNT, pruned, rows);
    hid_t counts = store__create_table(s->file, "counts", ct, COUNT_ROWS(true), TABLE_CHECKSUM);
    if (counts < 0 || store__table_write(counts, ct, 0, COUNT_ROWS(pruned), rows) < 0)
        rc = -1;
    if (counts >= 0)
        H5Dclose(counts);
    hid_t progress = store__create_table(s->file, "progress", rt, 1024, 0);
    hid_t top =
        store__create_table(s->file, "top", s->row_type, STORE_SMALL_CHUNK_ROWS, BEST_FILTERS);
    hid_t pareto =
        store__create_table(s->file, "pareto", s->row_type, STORE_SMALL_CHUNK_ROWS, BEST_FILTERS);
    hid_t front = store__create_table(s->file, "pareto_cost", s->row_type, STORE_SMALL_CHUNK_ROWS,
                                      BEST_FILTERS);
    if (progress < 0 || top < 0 || pareto < 0 || front < 0)
        rc = -1;
    if (front >= 0)
        rc |= store__attr_string(front, "note", desc->pareto_cost_note);
    H5Dclose(progress);
    H5Dclose(top);
    H5Dclose(pareto);
    H5Dclose(front);
    if (desc->keep_results) {
        s->results = store__create_table(s->file, "results", s->row_type, STORE_RESULTS_CHUNK_ROWS,
                                         TABLE_DEFLATE);
        uint64_t zero_rows = 0;
        if (s->results < 0 ||
            store__attr_write(s->results, "rows_committed", H5T_NATIVE_UINT64, &zero_rows) < 0)
            rc = -1;
    }
    H5Tclose(mt);
    H5Tclose(st);
    H5Tclose(ct);
    H5Tclose(rt);
    return rc;
}

cdse_store *store__alloc(void)
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
int store__lock_path(const char *path)
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
void store__writer_exclude(const cdse_store *s)
{
    if (s->writable && s->lock_fd >= 0)
        store__exclude_readers(s->lock_fd);
}

void store__writer_admit(const cdse_store *s)
{
    if (s->writable && s->lock_fd >= 0)
        store__admit_readers(s->lock_fd);
}

herr_t store__writer_flush(cdse_store *s)
{
    store__writer_exclude(s);
    herr_t rc = H5Fflush(s->file, H5F_SCOPE_GLOBAL);
    store__writer_admit(s);
    return rc;
}

void store__free(cdse_store *s)
{
    if (s == NULL)
        return;
    if (s->results >= 0)
        H5Dclose(s->results);
    if (s->row_type >= 0)
        H5Tclose(s->row_type);
    if (s->file >= 0) {
        store__writer_exclude(s);
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
static int replaceable(const char *path, const char *job_path, cdse_diag *diag)
{
    struct stat out, in;
    if (stat(path, &out) != 0 || !S_ISREG(out.st_mode)) {
        cdse_diag_set(diag,
                      "%s is not a regular file, not replaced even with --force; allowed: a "
                      "clusterdse store or a new file name",
                      path);
        return CDSE_EINVAL;
    }
    if (stat(job_path, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
        cdse_diag_set(diag,
                      "%s is the job file this sweep reads (%s), not replaced even with --force; "
                      "allowed: another -o",
                      path, job_path);
        return CDSE_EINVAL;
    }
    if (!cdse_store_has_hdf5_signature(path)) {
        cdse_diag_set(diag,
                      "%s is not a clusterdse store (not an HDF5 file), not replaced even with "
                      "--force; allowed: an existing store or a new file name",
                      path);
        return CDSE_EINVAL;
    }
    hid_t fapl = store__file_access();
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (file < 0)
        return CDSE_OK; /* damaged beyond opening: a damaged store is what --force replaces */
    char format[64] = "";
    bool store = store__attr_read_string(file, "format", format, sizeof format) == 0 &&
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
static int claim_output(const char *path, const char *tmp, const char *job_path, bool force,
                        int *fd, int *old_fd, cdse_diag *diag)
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
        *old_fd = S_ISREG(st.st_mode) ? store__lock_path(path) : -1;
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
            store__guard_begin(path);
            rc = replaceable(path, job_path, diag);
            store__guard_end();
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

static void store_names(cdse_store *s, const cdse_store_desc *desc)
{
    s->fingerprint = desc->fingerprint;
    s->space_size = desc->space_size;
    s->metric = desc->metric;
    s->mode = desc->mode;
    s->n_models = (int)desc->models.n;
    s->n_systems = (int)desc->systems.n;
    for (int i = 0; i < s->n_models; i++)
        snprintf(s->model_name[i], CDSE_NAME_MAX, "%s", desc->model_name[i]);
    for (int i = 0; i < s->n_systems; i++)
        snprintf(s->system_name[i], CDSE_NAME_MAX, "%s", desc->system_name[i]);
    s->n_stack_names = desc->n_stacks + 1;
    for (int i = 0; i < desc->n_stacks; i++)
        snprintf(s->stack_name[i], CDSE_NAME_MAX, "%s", desc->stack_name[i]);
    snprintf(s->stack_name[desc->n_stacks], CDSE_NAME_MAX, "%s", CDSE_STACK_DEFAULT_LABEL);
}

int cdse_store_create(const char *path, const cdse_store_desc *desc, const cdse_store_meta *meta,
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
    int rc = claim_output(path, tmp, desc->job_path, force, &lock, &old, diag);
    if (rc != CDSE_OK)
        return rc;
    cdse_store *s = store__alloc();
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
    store_names(s, desc);

    /* File space is never reused, so bytes the last commit points to are never overwritten. */
    errno = 0;
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_NONE, 0, 1);
    hid_t fapl = store__file_access();
    s->file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl); /* the creator's own, locked temporary */
    H5Pclose(fapl);
    H5Pclose(fcpl);
    if (s->file < 0) {
        cdse_diag_set(diag, "cannot create %s: %s", tmp, errno ? strerror(errno) : "HDF5 error");
        remove(tmp);
        store__free(s);
        if (old >= 0)
            close(old);
        return CDSE_EIO;
    }
    s->row_type = store__row_type(s);
    if (store__hold_metadata_until_flush(s->file) < 0 || create_layout(s, desc, meta) != 0 ||
        H5Fflush(s->file, H5F_SCOPE_GLOBAL) < 0 || rename_into_place(tmp, path, old >= 0) != 0) {
        cdse_diag_set(diag, "cannot write the layout of %s: %s", path,
                      errno ? strerror(errno) : "HDF5 error");
        remove(tmp);
        store__free(s);
        if (old >= 0)
            close(old);
        return CDSE_EIO;
    }
    if (old >= 0)
        close(old); /* the replaced store's lock: its name is this store's now */
    *out = s;
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
            if (store__table_read(store->results, store->row_type, first, before, joined) < 0) {
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
                      store__io_cause(cause, sizeof cause));
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
                      store__io_cause(cause, sizeof cause));
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
    hid_t d = H5Lexists(file, path, H5P_DEFAULT) > 0 ? store__open_table(file, path) : -1;
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
    d = store__create_table(file, path, type, chunk_rows, filters);
    hid_t committed = d >= 0 ? H5Dopen2(file, name, H5P_DEFAULT) : -1;
    char note[CDSE_STORE_NOTE_MAX];
    if (committed >= 0 && H5Aexists(committed, "note") > 0 &&
        (store__attr_read_string(committed, "note", note, sizeof note) < 0 ||
         store__attr_string(d, "note", note) < 0)) {
        H5Dclose(d);
        d = -1;
    }
    if (committed >= 0)
        H5Dclose(committed);
    return d;
}

/* Writes `n` rows of `type` into the staging copy of table `name` and puts it in its place. */
int store__commit_table(cdse_store *store, const char *name, hid_t type, hsize_t chunk_rows,
                        int filters, size_t n, const void *rows)
{
    char staged[64];
    snprintf(staged, sizeof staged, STAGING "/%s", name);
    hid_t d = staging_table(store, name, staged, type, chunk_rows, filters);
    int rc = d < 0 ? -1 : store__table_write(d, type, 0, n, rows);
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
    int rc = store__commit_table(store, name, store->row_type, STORE_SMALL_CHUNK_ROWS, BEST_FILTERS,
                                 n, rows);
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
    hid_t rt = store__range_type(store->statuses), ct = store__count_type();
    if (restore_swap(store) < 0)
        rc = -1;
    /* The /progress of stores made before has a checksum, so that adding rows would write its
     * last chunk whole: the first commit moves its rows into a table without filters, as new
     * stores have (commit_table; the old table stays in /staging). */
    if (rc == 0 && store->progress_filtered) {
        cdse_done *rows = calloc(store->progress_rows ? store->progress_rows : 1, sizeof *rows);
        hid_t old = store__open_table(store->file, "progress");
        if (rows == NULL || old < 0 ||
            store__table_read(old, rt, 0, store->progress_rows, rows) < 0)
            rc = -1;
        if (old >= 0)
            H5Dclose(old);
        if (rc == 0 &&
            store__commit_table(store, "progress", rt, 1024, 0, store->progress_rows, rows) < 0)
            rc = -1;
        free(rows);
        if (rc == 0)
            store->progress_filtered = false;
    }
    /* /counts keeps the rows it has (16 in stores made before a status was appended). */
    count_row rows[COUNT_ROWS(true)];
    hid_t d = store__open_table(store->file, "counts");
    uint64_t n_counts = d >= 0 ? store__table_rows(d) : 0;
    if (d >= 0)
        H5Dclose(d);
    /* Its own layout: an older store's `pruned` row follows its fewer statuses. */
    memset(rows, 0, sizeof rows);
    bool pruned = n_counts == (uint64_t)(2 + store->statuses + 1);
    store__counts_rows(counts, store->statuses, pruned, rows);
    if (rc == 0 && (n_counts == 0 || n_counts > COUNT_ROWS(true) ||
                    store__commit_table(store, "counts", ct, COUNT_ROWS(true), TABLE_CHECKSUM,
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
    d = rc == 0 ? store__open_table(store->file, "progress") : -1;
    if (d >= 0 && store__table_write(d, rt, store->progress_rows, n_done, done) == 0 &&
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
        rc = store__attr_write(store->results, "rows_committed", H5T_NATIVE_UINT64, &store->rows);
    if (rc == 0 && store__writer_flush(store) < 0)
        rc = -1;
    if (rc != 0) {
        char cause[160];
        cdse_diag_set(diag, "%s: committing to the store failed: %s", store->path,
                      store__io_cause(cause, sizeof cause));
        return CDSE_EIO;
    }
    return CDSE_OK;
}

int cdse_store_set_complete(cdse_store *store, cdse_diag *diag)
{
    int complete = 1;
    if (store__attr_write(store->file, "complete", H5T_NATIVE_INT, &complete) < 0 ||
        write_root_checksum(store->file, store, complete) < 0 || store__writer_flush(store) < 0) {
        cdse_diag_set(diag, "marking the store complete failed");
        return CDSE_EIO;
    }
    store->complete = true;
    return CDSE_OK;
}
