/* The HDF5 store: opening it, reading it back (resume, `top`), and the entry points that
 * guard reads (store_internal.h). */
#define _GNU_SOURCE /* renameat2 (glibc 2.28) */
#include "store_internal.h"

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

void store__guard_begin(const char *path)
{
    if (hdf5_quiet)
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (read_depth++ == 0 && read_guard.begin != NULL)
        read_guard.begin(path, read_guard.ctx);
}

void store__guard_end(void)
{
    if (--read_depth == 0 && read_guard.end != NULL)
        read_guard.end(read_guard.ctx);
}

void cdse_store_guard_begin(const char *path)
{
    store__guard_begin(path);
}

void cdse_store_guard_end(void)
{
    store__guard_end();
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

const char *store__io_cause(char *buf, size_t size)
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

/* ---- open ---------------------------------------------------------------------------------- */

hid_t store__name_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(name_row));
    hid_t st = store__string_type(CDSE_NAME_MAX);
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
    uint64_t rows = store__table_rows(d);
    if (rows > (uint64_t)max) {
        H5Dclose(d);
        return -1;
    }
    hid_t t = store__name_type();
    name_row buf[CDSE_MAX_MODELS > CDSE_MAX_SYSTEMS ? CDSE_MAX_MODELS : CDSE_MAX_SYSTEMS];
    int rc = store__table_read(d, t, 0, (size_t)rows, buf);
    for (uint64_t i = 0; rc == 0 && i < rows; i++) {
        buf[i].name[CDSE_NAME_MAX - 1] = '\0';
        memcpy(names[i], buf[i].name, CDSE_NAME_MAX);
    }
    H5Tclose(t);
    H5Dclose(d);
    *n = (int)rows;
    return rc;
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
    if (store__attr_read_string(s->file, "format", format, sizeof format) < 0 ||
        strcmp(format, CDSE_STORE_FORMAT) != 0) {
        cdse_diag_set(diag, "%s is an HDF5 file but not a clusterdse store (no format = \"%s\")",
                      path, CDSE_STORE_FORMAT);
        return CDSE_EINVAL;
    }
    int complete = 0;
    if (store__attr_read(s->file, "fingerprint", H5T_NATIVE_UINT64, &s->fingerprint) < 0 ||
        store__attr_read(s->file, "space_size", H5T_NATIVE_UINT64, &s->space_size) < 0 ||
        store__attr_read(s->file, "complete", H5T_NATIVE_INT, &complete) < 0 ||
        store__attr_read_string(s->file, "metric", metric, sizeof metric) < 0 ||
        store__attr_read_string(s->file, "store_mode", mode, sizeof mode) < 0 ||
        (s->metric = cdse_names_find(cdse_record_enum_tables.metric, metric)) < 0 ||
        (s->mode = cdse_names_find(cdse_record_enum_tables.store_mode, mode)) < 0 ||
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
        (store__attr_read(s->file, "checksum", H5T_NATIVE_UINT64, &sum) < 0 ||
         sum !=
             store__root_checksum(s->fingerprint, s->space_size, s->metric, s->mode, complete))) {
        cdse_diag_set(diag,
                      "%s: a damaged clusterdse store (its root attributes do not match their "
                      "checksum)" STORE_DAMAGED_HINT,
                      path);
        return CDSE_EIO;
    }
    s->statuses = store__file_statuses(s->file);
    s->row_type = store__row_type(s);
    hid_t progress = store__open_table(s->file, "progress");
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
        s->rows = store__table_rows(s->results);
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
        hid_t d = store__open_table(s->file, "progress");
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
    if (dropped && store__writer_flush(s) < 0) {
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
    cdse_store *s = store__alloc();
    if (s == NULL) {
        cdse_diag_set(diag, "out of memory");
        if (lock >= 0)
            close(lock);
        return CDSE_ENOMEM;
    }
    s->writable = writable;
    s->lock_fd = lock;
    snprintf(s->path, sizeof s->path, "%s", path);
    hid_t fapl = store__file_access();
    s->file = H5Fopen(path, writable ? H5F_ACC_RDWR : H5F_ACC_RDONLY, fapl);
    H5Pclose(fapl);
    if (s->file < 0) {
        cdse_diag_set(diag,
                      "cannot open %s as HDF5: the file is damaged (cut short or "
                      "overwritten)" STORE_DAMAGED_HINT,
                      path);
        store__free(s);
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
        if (store__hold_metadata_until_flush(s->file) < 0) {
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
        store__free(s);
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
        store__writer_exclude(store);
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
    if (exists < 0 || store__attr_read_string(store->file, "job_path", out, size) < 0) {
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
    *text = d < 0 ? NULL : store__read_string(d, false, (size_t)file_size);
    if (d >= 0)
        H5Dclose(d);
    if (*text == NULL) {
        cdse_diag_set(diag, "%s: a damaged store: /job cannot be read" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    return CDSE_OK;
}

/* ---- read ---------------------------------------------------------------------------------- */

static int unguarded_read_progress(cdse_store *store, cdse_done **done, size_t *n, cdse_diag *diag)
{
    *done = NULL;
    *n = 0;
    hid_t d = store__open_table(store->file, "progress");
    if (d < 0) {
        cdse_diag_set(diag, "%s: a damaged store: /progress cannot be opened" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    uint64_t rows = 0;
    int checked = store__checked_rows(store, d, "progress", sizeof(cdse_done), &rows, diag);
    if (checked != CDSE_OK) {
        H5Dclose(d);
        return checked;
    }
    cdse_done *r = calloc(rows ? rows : 1, sizeof *r);
    hid_t rt = store__range_type(store->statuses);
    int rc = r == NULL ? -1 : store__table_read(d, rt, 0, (size_t)rows, r);
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
    hid_t d = store__open_table(store->file, "counts");
    if (d < 0 || store__table_rows(d) > 64) {
        if (d >= 0)
            H5Dclose(d);
        cdse_diag_set(diag, "%s: a damaged store: /counts cannot be read" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    uint64_t rows = store__table_rows(d);
    count_row buf[64];
    hid_t ct = store__count_type();
    int rc = store__table_read(d, ct, 0, (size_t)rows, buf);
    H5Tclose(ct);
    H5Dclose(d);
    if (rc < 0) {
        cdse_diag_set(diag, "%s: a damaged store: /counts cannot be read" STORE_DAMAGED_HINT,
                      store->path);
        return CDSE_EIO;
    }
    for (uint64_t i = 0; i < rows; i++) {
        buf[i].name[STORE_COUNT_NAME_LEN - 1] = '\0';
        int st = cdse_names_find(cdse_record_enum_tables.status->names, buf[i].name);
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
    store__guard_begin(store->path);
    hid_t d = H5Lexists(store->file, "pareto_cost", H5P_DEFAULT) > 0
                  ? H5Dopen2(store->file, "pareto_cost", H5P_DEFAULT)
                  : -1;
    hid_t a = d >= 0 && H5Aexists(d, "note") > 0 ? H5Aopen(d, "note", H5P_DEFAULT) : -1;
    char *note = a >= 0 ? store__read_string(a, true, size) : NULL;
    if (note != NULL)
        snprintf(buf, size, "%s", note);
    free(note);
    if (a >= 0)
        H5Aclose(a);
    if (d >= 0)
        H5Dclose(d);
    store__guard_end();
}

bool cdse_store_has(cdse_store *store, const char *dataset)
{
    if (strcmp(dataset, "results") == 0)
        return store->results >= 0;
    store__guard_begin(store->path);
    bool has = H5Lexists(store->file, dataset, H5P_DEFAULT) > 0;
    store__guard_end();
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
    hid_t d = store__open_table(store->file, dataset);
    if (d < 0) {
        cdse_diag_set(diag, "%s: a damaged store: /%s cannot be opened" STORE_DAMAGED_HINT,
                      store->path, dataset);
        return CDSE_EIO;
    }
    int rc = store__checked_rows(store, d, dataset, cdse_store_row_size(), n, diag);
    H5Dclose(d);
    if (rc != CDSE_OK)
        *n = 0;
    return rc;
}

static int unguarded_read_rows(cdse_store *store, const char *dataset, uint64_t start, size_t n,
                               void *rows, cdse_diag *diag)
{
    bool is_results = strcmp(dataset, "results") == 0;
    hid_t d = is_results ? store->results : store__open_table(store->file, dataset);
    if (d < 0) {
        cdse_diag_set(diag, "%s: a damaged store: /%s cannot be opened" STORE_DAMAGED_HINT,
                      store->path, dataset);
        return CDSE_EIO;
    }
    int rc = store__table_read(d, store->row_type, start, n, rows);
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
        *lock = store__lock_path(path);
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
    store__guard_begin(path);
    rc = unguarded_open(path, writable, lock, out, diag);
    store__guard_end();
    if (rc == CDSE_OK && writable)
        store__writer_admit(*out);
    return rc;
}

int cdse_store_job_path(cdse_store *store, char *out, size_t size, cdse_diag *diag)
{
    store__guard_begin(store->path);
    int rc = unguarded_job_path(store, out, size, diag);
    store__guard_end();
    return rc;
}

int cdse_store_job_text(cdse_store *store, char **text, cdse_diag *diag)
{
    store__guard_begin(store->path);
    int rc = unguarded_job_text(store, text, diag);
    store__guard_end();
    return rc;
}

int cdse_store_read_progress(cdse_store *store, cdse_done **done, size_t *n, cdse_diag *diag)
{
    store__guard_begin(store->path);
    int rc = unguarded_read_progress(store, done, n, diag);
    store__guard_end();
    return rc;
}

int cdse_store_read_counts(cdse_store *store, cdse_counts *counts, cdse_diag *diag)
{
    store__guard_begin(store->path);
    int rc = unguarded_read_counts(store, counts, diag);
    store__guard_end();
    return rc;
}

int cdse_store_rows(cdse_store *store, const char *dataset, uint64_t *n, cdse_diag *diag)
{
    store__guard_begin(store->path);
    int rc = unguarded_rows(store, dataset, n, diag);
    store__guard_end();
    return rc;
}

int cdse_store_read_rows(cdse_store *store, const char *dataset, uint64_t start, size_t n,
                         void *rows, cdse_diag *diag)
{
    store__guard_begin(store->path);
    int rc = unguarded_read_rows(store, dataset, start, n, rows, diag);
    store__guard_end();
    return rc;
}
