/* Probe rows: the /probes and /reduce_local tables of an HDF5 file (serial API), the table
 * printed while probing, and the bus-bandwidth factor of a row. No MPI. */
#define _POSIX_C_SOURCE 200809L
#include "clusterdse/calibrate/probe_rows.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hdf5.h>

#include "clusterdse/model/collective.h"
#include "clusterdse/sweep/store.h"

double cdse_busbw_factor(int coll, int n)
{
    return cdse_coll_volume(coll, n); /* nccl-tests' factor, from cdse_coll_table */
}

void cdse_probe_table_header(FILE *out)
{
    fprintf(out, "# %-14s %-10s %5s %6s %5s %-6s %12s %6s %11s %11s %11s %11s %11s %10s %10s %5s\n",
            "collective", "shape", "n", "groups", "level", "dtype", "bytes", "iters", "t_avg_us",
            "t_min_us", "t_max_us", "t_itmax_us", "t_med_us", "algbw_GBs", "busbw_GBs", "check");
}

void cdse_probe_table_row(FILE *out, const cdse_probe_row *r)
{
    fprintf(out,
            "  %-14s %-10s %5d %6d %5d %-6s %12lld %6d %11.2f %11.2f %11.2f %11.2f %11.2f %10.3f "
            "%10.3f "
            "%5s\n",
            r->collective, r->shape, r->group_size, r->n_groups, r->level, r->dtype,
            (long long)r->bytes, r->iterations, r->t_avg_us, r->t_min_us, r->t_max_us,
            r->t_itermax_us, r->t_median_us, r->algbw_gbs, r->busbw_gbs,
            r->check_ok < 0 ? "-" : (r->check_ok ? "ok" : "FAIL"));
    fflush(out);
}

void cdse_probe_result_free(cdse_probe_result *result)
{
    free(result->rows);
    free(result->reduce);
    result->rows = NULL;
    result->reduce = NULL;
    result->n_rows = result->n_reduce = 0;
}

/* ---- HDF5: /probes and /reduce_local (serial API, rank 0 only) ---- */

static hid_t str_type(size_t size)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, size);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    return t;
}

static hid_t probe_row_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cdse_probe_row));
    hid_t s16 = str_type(16), s8 = str_type(8);
#define F(name, type) H5Tinsert(t, #name, HOFFSET(cdse_probe_row, name), type)
    F(collective, s16);
    F(shape, s16);
    F(group_size, H5T_NATIVE_INT32);
    F(stride, H5T_NATIVE_INT32);
    F(n_groups, H5T_NATIVE_INT32);
    F(level, H5T_NATIVE_INT32);
    F(n_nodes, H5T_NATIVE_INT32);
    F(dtype, s8);
    F(bytes, H5T_NATIVE_INT64);
    F(iterations, H5T_NATIVE_INT32);
    F(t_min_us, H5T_NATIVE_DOUBLE);
    F(t_avg_us, H5T_NATIVE_DOUBLE);
    F(t_max_us, H5T_NATIVE_DOUBLE);
    F(t_itermax_us, H5T_NATIVE_DOUBLE);
    F(t_median_us, H5T_NATIVE_DOUBLE);
    F(t_best_us, H5T_NATIVE_DOUBLE);
    F(algbw_gbs, H5T_NATIVE_DOUBLE);
    F(busbw_gbs, H5T_NATIVE_DOUBLE);
    F(check_ok, H5T_NATIVE_INT8);
#undef F
    H5Tclose(s16);
    H5Tclose(s8);
    return t;
}

static hid_t reduce_row_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cdse_reduce_row));
    hid_t s8 = str_type(8);
    H5Tinsert(t, "dtype", HOFFSET(cdse_reduce_row, dtype), s8);
    H5Tinsert(t, "bytes", HOFFSET(cdse_reduce_row, bytes), H5T_NATIVE_INT64);
    H5Tinsert(t, "iterations", HOFFSET(cdse_reduce_row, iterations), H5T_NATIVE_INT32);
    H5Tinsert(t, "t_avg_us", HOFFSET(cdse_reduce_row, t_avg_us), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "gbs", HOFFSET(cdse_reduce_row, gbs), H5T_NATIVE_DOUBLE);
    H5Tclose(s8);
    return t;
}

static int write_table(hid_t file, const char *name, hid_t type, const void *data, int n)
{
    hsize_t dims[1] = {(hsize_t)n};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = ds < 0 ? -1 : (n > 0 ? H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) : 0);
    if (ds >= 0)
        H5Dclose(ds);
    H5Sclose(space);
    return st < 0 ? CDSE_EIO : 0;
}

static void attr_str(hid_t loc, const char *name, const char *value)
{
    hid_t t = str_type(strlen(value) + 1);
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(loc, name, t, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, value);
    H5Aclose(a);
    H5Sclose(space);
    H5Tclose(t);
}

static void attr_int(hid_t loc, const char *name, int value)
{
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(loc, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, H5T_NATIVE_INT, &value);
    H5Aclose(a);
    H5Sclose(space);
}

/* Reads a string attribute, fixed-length (as written here) or variable-length (h5py). */
static void read_attr_str(hid_t loc, const char *name, char *out, size_t size)
{
    out[0] = '\0';
    if (H5Aexists(loc, name) <= 0)
        return;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    hid_t ft = H5Aget_type(a);
    if (H5Tget_class(ft) != H5T_STRING) {
        H5Tclose(ft);
        H5Aclose(a);
        return;
    }
    if (H5Tis_variable_str(ft) > 0) {
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        H5Tset_cset(mt, H5Tget_cset(ft));
        char *value = NULL;
        if (H5Aread(a, mt, &value) >= 0 && value) {
            snprintf(out, size, "%s", value);
            H5free_memory(value);
        }
        H5Tclose(mt);
    } else {
        size_t n = H5Tget_size(ft);
        char *buf = calloc(n + 1, 1);
        hid_t mt = str_type(n + 1);
        H5Tset_cset(mt, H5Tget_cset(ft));
        if (buf && H5Aread(a, mt, buf) >= 0)
            snprintf(out, size, "%s", buf);
        free(buf);
        H5Tclose(mt);
    }
    H5Tclose(ft);
    H5Aclose(a);
}

static int read_attr_int(hid_t loc, const char *name)
{
    int v = 0;
    if (H5Aexists(loc, name) <= 0)
        return 0;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    H5Aread(a, H5T_NATIVE_INT, &v);
    H5Aclose(a);
    return v;
}

int cdse_probe_write(const char *path, const cdse_probe_result *result, const char *plan_text,
                     bool force, cdse_diag *diag)
{
    if (!force && access(path, F_OK) == 0) {
        cdse_diag_set(diag, "%s exists; use --force to overwrite it", path);
        return CDSE_EEXIST;
    }
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (file < 0) {
        cdse_diag_set(diag, "%s: cannot create the HDF5 file", path);
        return CDSE_EIO;
    }
    hid_t pt = probe_row_type(), rt = reduce_row_type();
    int rc = write_table(file, "probes", pt, result->rows, result->n_rows);
    if (rc == 0)
        rc = write_table(file, "reduce_local", rt, result->reduce, result->n_reduce);
    if (rc == 0) {
        hid_t ds = H5Dopen2(file, "probes", H5P_DEFAULT);
        const cdse_probe_info *i = &result->info;
        attr_str(ds, "tool", "clusterdse " CDSE_VERSION " (" CDSE_GIT_REV ")");
        attr_str(ds, "mpi_library", i->mpi_library);
        attr_int(ds, "ranks", i->ranks);
        attr_int(ds, "nodes", i->nodes);
        attr_int(ds, "ranks_per_node", i->ranks_per_node);
        attr_str(ds, "hostnames", i->hostnames);
        attr_str(ds, "environment", i->env);
        attr_str(ds, "algorithms", i->algorithms);
        attr_str(ds, "date", i->date);
        attr_str(ds, "plan_name", i->plan_name);
        attr_str(ds, "plan", plan_text ? plan_text : "");
        attr_str(ds, "time_unit", "microseconds per call");
        attr_str(ds, "bandwidth_unit",
                 "GB/s (1e9 bytes/s); algbw = bytes / t_median_us; busbw = algbw x "
                 "nccl-tests factor");
        H5Dclose(ds);
    }
    H5Tclose(pt);
    H5Tclose(rt);
    if (H5Fclose(file) < 0 || rc) {
        cdse_diag_set(diag, "%s: writing the probe tables failed", path);
        return CDSE_EIO;
    }
    return 0;
}

/* A probe table's rows into a new buffer. A row count that the file cannot hold (its size
 * over the row size: probe tables are written unfiltered) is damage, reported before anything
 * is allocated for it. */
static int read_table(hid_t file, const char *name, hid_t type, size_t row_size, void **out, int *n)
{
    *out = NULL;
    *n = 0;
    if (H5Lexists(file, name, H5P_DEFAULT) <= 0)
        return 0;
    hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    if (ds < 0)
        return CDSE_EIO;
    hid_t space = H5Dget_space(ds), ftype = H5Dget_type(ds), dcpl = H5Dget_create_plist(ds);
    hssize_t count = space < 0 ? -1 : H5Sget_simple_extent_npoints(space);
    size_t file_row = ftype < 0 ? 0 : H5Tget_size(ftype);
    hsize_t file_size = 0;
    H5Fget_filesize(file, &file_size);
    bool filtered = dcpl < 0 || H5Pget_nfilters(dcpl) != 0;
    int rc = 0;
    if (count < 0 || count > INT_MAX || file_row == 0 ||
        (!filtered && (hsize_t)count > file_size / file_row))
        rc = CDSE_EIO; /* not a probe table this program wrote */
    else if (count > 0) {
        *out = calloc((size_t)count, row_size);
        if (*out == NULL || H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0)
            rc = CDSE_EIO;
        *n = (int)count;
    }
    if (dcpl >= 0)
        H5Pclose(dcpl);
    if (ftype >= 0)
        H5Tclose(ftype);
    if (space >= 0)
        H5Sclose(space);
    H5Dclose(ds);
    return rc;
}

/* What a user can do about a damaged probe store, ending each message that reports one. */
#define PROBE_DAMAGED_HINT "; measure again with clusterdse probe"

static int unguarded_probe_read(const char *path, cdse_probe_result *result, cdse_diag *diag)
{
    int checked = cdse_store_check_file(path, diag);
    if (checked == CDSE_EIO)
        cdse_diag_set(diag, "%s is an HDF5 file damaged beyond reading" PROBE_DAMAGED_HINT, path);
    if (checked != CDSE_OK)
        return checked;
    H5E_auto2_t func;
    void *data;
    H5Eget_auto2(H5E_DEFAULT, &func, &data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, func, data);
    if (file < 0) {
        cdse_diag_set(diag,
                      "%s: a damaged probe store: HDF5 cannot open it (cut short or "
                      "overwritten)" PROBE_DAMAGED_HINT,
                      path);
        return CDSE_EIO;
    }
    htri_t has_probes = H5Lexists(file, "probes", H5P_DEFAULT);
    if (has_probes <= 0) {
        H5Fclose(file);
        if (has_probes == 0) {
            cdse_diag_set(diag, "%s: no /probes table (not written by clusterdse probe)", path);
            return CDSE_EINVAL;
        }
        cdse_diag_set(diag,
                      "%s: a damaged probe store: its root group cannot be read" PROBE_DAMAGED_HINT,
                      path);
        return CDSE_EIO;
    }
    hid_t pt = probe_row_type(), rt = reduce_row_type();
    void *rows_p = NULL, *red_p = NULL;
    int rc = read_table(file, "probes", pt, sizeof(cdse_probe_row), &rows_p, &result->n_rows);
    if (rc == 0)
        rc = read_table(file, "reduce_local", rt, sizeof(cdse_reduce_row), &red_p,
                        &result->n_reduce);
    result->rows = rows_p;
    result->reduce = red_p;
    hid_t ds = rc == 0 ? H5Dopen2(file, "probes", H5P_DEFAULT) : -1;
    if (ds >= 0) {
        cdse_probe_info *i = &result->info;
        read_attr_str(ds, "mpi_library", i->mpi_library, sizeof i->mpi_library);
        read_attr_str(ds, "hostnames", i->hostnames, sizeof i->hostnames);
        read_attr_str(ds, "environment", i->env, sizeof i->env);
        read_attr_str(ds, "algorithms", i->algorithms, sizeof i->algorithms);
        read_attr_str(ds, "date", i->date, sizeof i->date);
        read_attr_str(ds, "plan_name", i->plan_name, sizeof i->plan_name);
        i->ranks = read_attr_int(ds, "ranks");
        i->nodes = read_attr_int(ds, "nodes");
        i->ranks_per_node = read_attr_int(ds, "ranks_per_node");
        H5Dclose(ds);
    } else if (rc == 0) {
        rc = CDSE_EIO;
    }
    H5Tclose(pt);
    H5Tclose(rt);
    H5Fclose(file);
    if (rc) {
        cdse_probe_result_free(result);
        cdse_diag_set(diag,
                      "%s: a damaged probe store: /probes or /reduce_local cannot be "
                      "read" PROBE_DAMAGED_HINT,
                      path);
    }
    return rc;
}

int cdse_probe_read(const char *path, cdse_probe_result *result, cdse_diag *diag)
{
    memset(result, 0, sizeof *result);
    cdse_store_guard_begin(path);
    int rc = unguarded_probe_read(path, result, diag);
    cdse_store_guard_end();
    return rc;
}
