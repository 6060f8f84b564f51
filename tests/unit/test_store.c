/* The HDF5 store: packing, round trips, compressed chunks, commits that survive SIGKILL,
 * refusal of foreign and damaged files. Synthetic records; no MPI, no evaluator. */
#include "store_fixtures.h"

static void test_pack_round_trip(void **state)
{
    (void)state;
    size_t size = cdse_store_row_size();
    unsigned char *row = malloc(size);
    cdse_record in, out;
    synthetic(7, &in);
    cdse_store_pack(&in, row);
    cdse_store_unpack(row, &out);
    /* Every column survives: compare through the column table. */
    for (int c = 0; c < cdse_column_count; c++)
        assert_float_equal(cdse_column_value(&cdse_columns[c], &in),
                           cdse_column_value(&cdse_columns[c], &out), 0);
    /* 7 % 4 = 3: tp = 8; 7 % 3 = 1: selective; odd: sequence parallel. */
    assert_int_equal(out.strategy.tp, 8);
    assert_int_equal(out.strategy.recompute, CDSE_RECOMPUTE_SELECTIVE);
    assert_true(out.strategy.sequence_parallel);
    free(row);
}

/* test_write_read's store read back: the rows (across the chunk boundary too), the counts, the
 * progress range, top, pareto, models and the job text. */
static void check_read_back(const char *path, const unsigned char *rows, const cdse_counts *counts,
                            const char *job_text)
{
    size_t rs = cdse_store_row_size(), cr = cdse_store_chunk_rows();
    unsigned char *back = malloc(cr * rs);
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    assert_int_equal(cdse_store_open(path, false, &s, &diag), 0);
    uint64_t n = 0;
    assert_int_equal(cdse_store_rows(s, "results", &n, &diag), 0);
    assert_int_equal(n, cr + 100);
    memset(back, 0, cr * rs);
    assert_int_equal(cdse_store_read_rows(s, "results", 0, cr, back, &diag), 0);
    assert_memory_equal(back, rows, cr * rs);
    assert_int_equal(cdse_store_read_rows(s, "results", cr, 100, back, &diag), 0);
    assert_memory_equal(back, rows + cr * rs, 100 * rs);
    /* Rows across the chunk boundary: the end of the first chunk and the start of the second. */
    assert_int_equal(cdse_store_read_rows(s, "results", cr - 10, 50, back, &diag), 0);
    assert_memory_equal(back, rows + (cr - 10) * rs, 50 * rs);
    cdse_counts c2;
    assert_int_equal(cdse_store_read_counts(s, &c2, &diag), 0);
    assert_memory_equal(&c2, counts, sizeof *counts);
    /* /progress: the range, its counts, and the rows of /results when it was committed. */
    cdse_done *ranges = NULL;
    size_t n_ranges = 0;
    assert_int_equal(cdse_store_read_progress(s, &ranges, &n_ranges, &diag), 0);
    assert_int_equal(n_ranges, 1);
    assert_int_equal(ranges[0].rows, cr + 100);
    cdse_store_sum_counts(ranges, n_ranges, &c2);
    assert_memory_equal(&c2, counts, sizeof *counts);
    free(ranges);
    assert_int_equal(cdse_store_rows(s, "top", &n, &diag), 0);
    assert_int_equal(n, 2);
    assert_int_equal(cdse_store_rows(s, "pareto", &n, &diag), 0);
    assert_int_equal(n, 1);
    assert_int_equal(cdse_store_n_models(s), 2);
    assert_string_equal(cdse_store_model_name(s, 1), "model-b");
    assert_int_equal(cdse_store_fingerprint(s), 0x1234abcdull);
    char *text = NULL;
    assert_int_equal(cdse_store_job_text(s, &text, &diag), 0);
    assert_string_equal(text, job_text);
    free(text);
    cdse_store_close(s, &diag);
    free(back);
}

/* Rows written plainly and as compressed chunks read back the same. */
static void test_write_read(void **state)
{
    (void)state;
    char path[512];
    path_of("rw.h5", path, sizeof path);
    cdse_job *job = small_job(5000, CDSE_STORE_ALL);
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    assert_int_equal(create_of_job(path, job, &meta, true, &s, &diag), 0);
    size_t rs = cdse_store_row_size(), cr = cdse_store_chunk_rows();
    /* Rows 0..cr-1 as one compressed chunk, then 100 plain rows. */
    unsigned char *rows = malloc((cr + 100) * rs), *scratch = malloc(cr * rs);
    unsigned char *blob = malloc(cdse_store_chunk_bound());
    for (size_t i = 0; i < cr + 100; i++) {
        cdse_record r;
        synthetic(i, &r);
        cdse_store_pack(&r, rows + i * rs);
    }
    size_t bsize = cdse_store_compress_chunk(rows, scratch, blob);
    assert_true(bsize > 0 && bsize < cr * rs);
    /* Decompressing gives the rows back. */
    unsigned char *back = malloc(cr * rs);
    assert_int_equal(cdse_store_decompress_chunk(blob, bsize, scratch, back), 0);
    assert_memory_equal(back, rows, cr * rs);
    assert_int_equal(cdse_store_write_chunk(s, 0, blob, bsize, &diag), 0);
    assert_int_equal(cdse_store_write_rows(s, cr, rows + cr * rs, 100, &diag), 0);
    /* A chunk must start on a chunk boundary. */
    assert_int_equal(cdse_store_write_chunk(s, 1, blob, bsize, &diag), CDSE_EINVAL);
    cdse_counts counts = {.evaluated = cr + 100, .feasible = 7};
    counts.status[CDSE_ST_OK] = 7;
    counts.status[CDSE_ST_OOM] = cr + 93;
    cdse_done done = {.begin = 0, .end = cr + 100};
    done.status[CDSE_ST_OK] = 7;
    done.status[CDSE_ST_OOM] = cr + 93;
    cdse_record top[2];
    synthetic(3, &top[0]);
    synthetic(4, &top[1]);
    assert_int_equal(
        cdse_store_commit(s, &done, 1, &counts, &(cdse_best_rows){top, 2, top, 1, NULL, 0}, &diag),
        0);
    assert_int_equal(cdse_store_close(s, &diag), 0);

    check_read_back(path, rows, &counts, job->text);
    free(rows);
    free(scratch);
    free(blob);
    free(back);
    free(job);
}

/* An existing file is not overwritten without force. */
static void test_exists(void **state)
{
    (void)state;
    char path[512];
    path_of("exists.h5", path, sizeof path);
    FILE *f = fopen(path, "w");
    fputs("precious", f);
    fclose(f);
    cdse_job *job = small_job(10, CDSE_STORE_ALL);
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    assert_int_equal(create_of_job(path, job, &meta, false, &s, &diag), CDSE_EEXIST);
    assert_non_null(strstr(diag.msg, "--force"));
    f = fopen(path, "r");
    char buf[16] = "";
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "precious");
    free(job);
}

/* Not HDF5, HDF5 but not a store, truncated store: errors with messages. */
static void test_foreign(void **state)
{
    (void)state;
    char path[512];
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    path_of("text.h5", path, sizeof path);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 1000; i++)
        fputs("not an HDF5 file ", f);
    fclose(f);
    /* A file that is not a store is bad input (exit 1), not a runtime failure. */
    assert_int_equal(cdse_store_open(path, false, &s, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "not an HDF5 file"));

    path_of("foreign.h5", path, sizeof path);
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims = 4;
    hid_t space = H5Screate_simple(1, &dims, NULL);
    hid_t d =
        H5Dcreate2(file, "results", H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(space);
    H5Fclose(file);
    assert_int_equal(cdse_store_open(path, true, &s, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "not a clusterdse store"));

    /* A store cut to half its size. */
    char whole[512];
    path_of("rw.h5", whole, sizeof whole);
    path_of("cut.h5", path, sizeof path);
    FILE *in = fopen(whole, "rb"), *out = fopen(path, "wb");
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, 0, SEEK_SET);
    for (long i = 0; i < size / 2; i++)
        fputc(fgetc(in), out);
    fclose(in);
    fclose(out);
    int rc = cdse_store_open(path, false, &s, &diag);
    if (rc == 0) { /* the layout may survive; then reading the rows must fail cleanly */
        unsigned char *rows = malloc(1124 * cdse_store_row_size());
        rc = cdse_store_read_rows(s, "results", 0, 1124, rows, &diag);
        free(rows);
        cdse_store_close(s, &diag);
    }
    assert_true(rc != 0);
    assert_true(strlen(diag.msg) > 0);
}

/* A child process commits, writes more, and is killed with SIGKILL before the next commit (or
 * after `kill_after_commit`): the store reopens with exactly the committed rows and ranges. */
static void kill_child(const char *path, int commits, bool more_after)
{
    cdse_store_quiet_hdf5();
    cdse_job *job = small_job(100000, CDSE_STORE_ALL);
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    if (create_of_job(path, job, &meta, true, &s, &diag) != 0)
        _exit(10);
    size_t rs = cdse_store_row_size();
    unsigned char *rows = malloc(1500 * rs);
    cdse_counts counts;
    memset(&counts, 0, sizeof counts);
    uint64_t next = 0;
    for (int c = 0; c < commits + (more_after ? 1 : 0); c++) {
        /* 1500 rows a round: one whole chunk and a partial one, filled up in the next round. */
        for (int i = 0; i < 1500; i++) {
            cdse_record r;
            synthetic(next + (uint64_t)i, &r);
            cdse_store_pack(&r, rows + (size_t)i * rs);
        }
        if (cdse_store_append(s, rows, 1500, &diag) != 0)
            _exit(11);
        cdse_done done = {.begin = next, .end = next + 1500};
        done.status[CDSE_ST_OK] = 1500;
        next += 1500;
        counts.evaluated = next;
        counts.status[CDSE_ST_OK] = next;
        counts.feasible = next;
        if (c < commits &&
            cdse_store_commit(s, &done, 1, &counts, &(cdse_best_rows){0}, &diag) != 0)
            _exit(12);
    }
    raise(SIGKILL);
    _exit(13);
}

static void test_kill_after_commit(void **state)
{
    (void)state;
    for (int more = 0; more < 2; more++) {
        char path[512];
        path_of("killed.h5", path, sizeof path);
        pid_t pid = fork();
        if (pid == 0)
            kill_child(path, 3, more);
        int status = 0;
        waitpid(pid, &status, 0);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        cdse_store *s = NULL;
        cdse_diag diag = {""};
        int rc = cdse_store_open(path, true, &s, &diag);
        if (rc != 0)
            fail_msg("reopen after SIGKILL: %s", diag.msg);
        /* Three commits of 1500 rows: 4500 rows, 3 ranges, counts of 4500. */
        uint64_t n = 0;
        assert_int_equal(cdse_store_rows(s, "results", &n, &diag), 0);
        assert_int_equal(n, 4500);
        cdse_done *ranges = NULL;
        size_t n_ranges = 0;
        assert_int_equal(cdse_store_read_progress(s, &ranges, &n_ranges, &diag), 0);
        assert_int_equal(n_ranges, 3);
        assert_int_equal(ranges[2].end, 4500);
        assert_int_equal(ranges[2].rows, 4500);
        cdse_counts summed;
        cdse_store_sum_counts(ranges, n_ranges, &summed);
        assert_int_equal(summed.evaluated, 4500);
        free(ranges);
        cdse_counts counts;
        assert_int_equal(cdse_store_read_counts(s, &counts, &diag), 0);
        assert_int_equal(counts.evaluated, 4500);
        size_t rs = cdse_store_row_size();
        unsigned char *rows = malloc(4500 * rs);
        assert_int_equal(cdse_store_read_rows(s, "results", 0, 4500, rows, &diag), 0);
        for (uint64_t i = 0; i < 4500; i++) {
            cdse_record r;
            cdse_store_unpack(rows + i * rs, &r);
            assert_int_equal(r.index, i);
            assert_float_equal(r.result.time_per_iteration_s, 1.0 + (double)i / 1000.0, 0);
        }
        free(rows);
        cdse_store_close(s, &diag);
    }
}

/* The top-level keys of `prefix` ("models[]." or "systems[].") in the parser's key tables, as
 * `--help-keys` prints them, into names[] (at most max); returns their number. */
static int parser_keys(const char *prefix, char names[][64], int max)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    cdse_job_print_keys(out);
    fclose(out);
    int n = 0;
    size_t plen = strlen(prefix);
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (strncmp(line, prefix, plen) != 0)
            continue;
        size_t k = strcspn(line + plen, " .[");
        if (line[plen + k] != ' ' || k == 0 || k >= 64 || n == max)
            continue;
        memcpy(names[n], line + plen, k);
        names[n][k] = '\0';
        n++;
    }
    free(text);
    return n;
}

/* Whether the compound type of dataset `table` in `path` has a member named `key` or starting
 * with `key` and '_' (a key stored over several members). */
static bool stored(const char *path, const char *table, const char *key)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, table, H5P_DEFAULT);
    hid_t t = H5Dget_type(d);
    bool found = false;
    size_t klen = strlen(key);
    for (int i = 0; i < H5Tget_nmembers(t) && !found; i++) {
        char *name = H5Tget_member_name(t, (unsigned)i);
        found = strcmp(name, key) == 0 || (strncmp(name, key, klen) == 0 && name[klen] == '_');
        H5free_memory(name);
    }
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);
    return found;
}

/* Every key of the model and system key tables is a column of /models and /systems (keys that
 * only say where values come from excepted), and fields the hand-made schema used to miss
 * (moe_imbalance, first_dense_layers, the histogram, the pool) read back with their values. */
static void test_models_systems_schema(void **state)
{
    (void)state;
    char path[512];
    path_of("schema.h5", path, sizeof path);
    cdse_job *job = small_job(10, CDSE_STORE_BEST);
    job->model[0].moe_imbalance = 1.25;
    job->model[0].first_dense_layers = 3;
    job->model[0].n_seq_bins = 2;
    job->model[0].seq_bin_len[1] = 4096.0;
    job->system[0].pool.n_types = 2;
    job->system[0].pool.gpus[1] = 512;
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    assert_int_equal(create_of_job(path, job, &meta, true, &s, &diag), 0);
    assert_int_equal(cdse_store_close(s, &diag), 0);
    static const char *const not_values[] = {"base", "network_profile"};
    const char *const prefixes[] = {"models[].", "systems[]."}, *const tables[] = {"models",
                                                                                   "systems"};
    for (int p = 0; p < 2; p++) {
        char keys[64][64];
        int n = parser_keys(prefixes[p], keys, 64);
        assert_true(n >= 10);
        for (int i = 0; i < n; i++) {
            if (strcmp(keys[i], not_values[0]) == 0 || strcmp(keys[i], not_values[1]) == 0)
                continue;
            if (!stored(path, tables[p], keys[i]))
                fail_msg("%s%s is not stored in /%s", prefixes[p], keys[i], tables[p]);
        }
    }
    /* The values, through a type of our own with only the members checked. */
    typedef struct {
        double moe_imbalance;
        int first_dense_layers, bins;
        double lengths[CDSE_MAX_SEQ_BINS];
    } model_row;
    hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(model_row));
    hsize_t nbins = CDSE_MAX_SEQ_BINS;
    hid_t lens = H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &nbins);
    H5Tinsert(mt, "moe_imbalance", offsetof(model_row, moe_imbalance), H5T_NATIVE_DOUBLE);
    H5Tinsert(mt, "first_dense_layers", offsetof(model_row, first_dense_layers), H5T_NATIVE_INT);
    H5Tinsert(mt, "seq_len_histogram_bins", offsetof(model_row, bins), H5T_NATIVE_INT);
    H5Tinsert(mt, "seq_len_histogram_length", offsetof(model_row, lengths), lens);
    model_row rows[2];
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "models", H5P_DEFAULT);
    assert_true(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows) >= 0);
    H5Dclose(d);
    assert_float_equal(rows[0].moe_imbalance, 1.25, 0);
    assert_int_equal(rows[0].first_dense_layers, 3);
    assert_int_equal(rows[0].bins, 2);
    assert_float_equal(rows[0].lengths[1], 4096.0, 0);
    typedef struct {
        int types, gpus[CDSE_MAX_POOL_TYPES];
    } pool_row;
    hid_t pt = H5Tcreate(H5T_COMPOUND, sizeof(pool_row));
    hsize_t ntypes = CDSE_MAX_POOL_TYPES;
    hid_t gpus = H5Tarray_create2(H5T_NATIVE_INT, 1, &ntypes);
    H5Tinsert(pt, "types", offsetof(pool_row, types), H5T_NATIVE_INT);
    H5Tinsert(pt, "gpus", offsetof(pool_row, gpus), gpus);
    hid_t st = H5Tcreate(H5T_COMPOUND, sizeof(pool_row));
    H5Tinsert(st, "pool", 0, pt);
    pool_row pool;
    d = H5Dopen2(f, "systems", H5P_DEFAULT);
    assert_true(H5Dread(d, st, H5S_ALL, H5S_ALL, H5P_DEFAULT, &pool) >= 0);
    H5Dclose(d);
    H5Fclose(f);
    assert_int_equal(pool.types, 2);
    assert_int_equal(pool.gpus[1], 512);
    H5Tclose(st);
    H5Tclose(pt);
    H5Tclose(gpus);
    H5Tclose(mt);
    H5Tclose(lens);
    free(job);
}

/* A root attribute changed behind the store's back (here the fingerprint, which would make
 * --resume speak of "a different job") is reported as damage by the root checksum. */
static void test_root_checksum(void **state)
{
    (void)state;
    char path[512];
    path_of("checksum.h5", path, sizeof path);
    cdse_job *job = small_job(10, CDSE_STORE_BEST);
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    assert_int_equal(create_of_job(path, job, &meta, true, &s, &diag), 0);
    assert_int_equal(cdse_store_close(s, &diag), 0);
    assert_int_equal(cdse_store_open(path, false, &s, &diag), 0);
    assert_int_equal(cdse_store_close(s, &diag), 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t a = H5Aopen(f, "fingerprint", H5P_DEFAULT);
    uint64_t other = 0x1234abceull;
    assert_true(H5Awrite(a, H5T_NATIVE_UINT64, &other) >= 0);
    H5Aclose(a);
    H5Fclose(f);
    assert_int_equal(cdse_store_open(path, false, &s, &diag), CDSE_EIO);
    assert_non_null(strstr(diag.msg, "do not match their checksum"));
    assert_non_null(strstr(diag.msg, "--resume"));
    free(job);
}

/* An extent the file cannot hold (fuzz finding B12: 1.4e17 rows of /progress were allocated)
 * is reported as damage before anything is allocated: here 10^6 rows of /progress, 136 MB, in
 * a file of a few hundred kB. */
static void test_extent_beyond_file(void **state)
{
    (void)state;
    char path[512];
    path_of("extent.h5", path, sizeof path);
    cdse_job *job = small_job(10, CDSE_STORE_BEST);
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    assert_int_equal(create_of_job(path, job, &meta, true, &s, &diag), 0);
    assert_int_equal(cdse_store_close(s, &diag), 0);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, "progress", H5P_DEFAULT);
    hsize_t rows = 1000000;
    assert_true(H5Dset_extent(d, &rows) >= 0);
    H5Dclose(d);
    H5Fclose(f);
    /* Without /results (store = "best") the open reads no progress; reading it fails. */
    assert_int_equal(cdse_store_open(path, false, &s, &diag), 0);
    cdse_done *done = NULL;
    size_t n = 0;
    assert_int_equal(cdse_store_read_progress(s, &done, &n, &diag), CDSE_EIO);
    assert_null(done);
    assert_non_null(strstr(diag.msg, "/progress claims 1000000 rows"));
    assert_int_equal(cdse_store_close(s, &diag), 0);
    free(job);
}

/* Issue 31, M4 and M9: a creator takes the lock on PATH.tmp before it writes anything (another
 * creator that holds it is refused and its temporary left as it is), a store whose writer holds
 * its lock is not replaced, and --force replaces neither the job file nor a file that is not a
 * store. */
static void test_create_locks(void **state)
{
    (void)state;
    char path[512], tmp[520];
    path_of("locked.h5", path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cdse_job *job = small_job(10, CDSE_STORE_BEST);
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    int other = open(tmp, O_RDWR | O_CREAT, 0644); /* another creator's temporary, locked */
    assert_int_equal(write(other, "other", 5), 5);
    assert_int_equal(flock(other, LOCK_EX | LOCK_NB), 0);
    assert_int_equal(create_of_job(path, job, &meta, false, &s, &diag), CDSE_EBUSY);
    assert_non_null(strstr(diag.msg, "is being created by another sweep (it holds the lock on"));
    struct stat st;
    assert_int_equal(stat(tmp, &st), 0);
    assert_int_equal(st.st_size, 5); /* neither truncated nor removed */
    assert_int_not_equal(stat(path, &st), 0);
    close(other);
    assert_int_equal(create_of_job(path, job, &meta, false, &s, &diag), 0);
    assert_int_not_equal(stat(tmp, &st), 0); /* renamed into place */
    assert_int_equal(cdse_store_close(s, &diag), 0);

    int writer = open(path, O_RDONLY); /* a sweep writing the store */
    assert_int_equal(flock(writer, LOCK_EX | LOCK_NB), 0);
    assert_int_equal(create_of_job(path, job, &meta, true, &s, &diag), CDSE_EBUSY);
    assert_non_null(strstr(diag.msg, "is being written by another sweep (it holds the lock on"));
    assert_int_equal(cdse_store_open(path, true, &s, &diag), CDSE_EBUSY);
    assert_int_not_equal(stat(tmp, &st), 0);
    close(writer);
    assert_int_equal(create_of_job(path, job, &meta, true, &s, &diag), 0); /* a store */
    assert_int_equal(cdse_store_close(s, &diag), 0);

    char text[512];
    path_of("job.cfg", text, sizeof text);
    FILE *f = fopen(text, "w");
    fputs("name = \"unit\";\n", f);
    fclose(f);
    snprintf(job->path, sizeof job->path, "%s", text);
    assert_int_equal(create_of_job(text, job, &meta, true, &s, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "is the job file this sweep reads"));
    snprintf(job->path, sizeof job->path, "<test>");
    assert_int_equal(create_of_job(text, job, &meta, true, &s, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "not a clusterdse store (not an HDF5 file)"));
    assert_int_equal(stat(text, &st), 0);
    assert_int_equal(st.st_size, 15); /* unchanged */
    free(job);
}

/* Issue 31, M5: a writer does not flush while a reader has the store open. A child opens the
 * store for reading, then (told to) waits 0.3 s, says it is about to close, and closes; the
 * parent's writable open (which flushes its cut to the last commit under the exclusion) returns
 * only after that close, so the child's word is there when it returns. */
static void test_readers_hold_writer(void **state)
{
    (void)state;
    char path[512];
    path_of("held.h5", path, sizeof path);
    cdse_job *job = small_job(3000, CDSE_STORE_ALL);
    cdse_store *s = NULL;
    cdse_diag diag = {""};
    assert_int_equal(create_of_job(path, job, &meta, true, &s, &diag), 0);
    uint64_t next = 0;
    cdse_counts counts;
    memset(&counts, 0, sizeof counts);
    commit_round(s, 0, false, 1500, &next, &counts);
    assert_int_equal(cdse_store_close(s, &diag), 0);
    int to_child[2], from_child[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(from_child), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        cdse_store *r = NULL;
        char go;
        if (cdse_store_open(path, false, &r, &diag) != 0 || write(from_child[1], "o", 1) != 1 ||
            read(to_child[0], &go, 1) != 1)
            _exit(1);
        struct timespec pause = {0, 300000000L};
        nanosleep(&pause, NULL);
        if (write(from_child[1], "c", 1) != 1)
            _exit(1);
        cdse_store_close(r, &diag);
        _exit(0);
    }
    char word = 0;
    assert_int_equal(read(from_child[0], &word, 1), 1);
    assert_int_equal(word, 'o');
    assert_int_equal(write(to_child[1], "g", 1), 1);
    assert_int_equal(cdse_store_open(path, true, &s, &diag), 0);
    fcntl(from_child[0], F_SETFL, O_NONBLOCK);
    assert_int_equal(read(from_child[0], &word, 1), 1); /* the reader closed before */
    assert_int_equal(word, 'c');
    commit_round(s, 1, false, 1500, &next, &counts);
    assert_int_equal(cdse_store_close(s, &diag), 0);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 2; i++) {
        close(to_child[i]);
        close(from_child[i]);
    }
    free(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pack_round_trip),
        cmocka_unit_test(test_write_read),
        cmocka_unit_test(test_exists),
        cmocka_unit_test(test_foreign),
        cmocka_unit_test(test_kill_after_commit),
        cmocka_unit_test(test_models_systems_schema),
        cmocka_unit_test(test_root_checksum),
        cmocka_unit_test(test_extent_beyond_file),
        cmocka_unit_test(test_create_locks),
        cmocka_unit_test(test_readers_hold_writer),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
