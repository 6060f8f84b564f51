/* Verification: which collectives a configuration issues, what the model predicts for them,
 * and the /verify table. The measuring is cdse_probe_measure (probe.c). */
#include "clusterdse/calibrate/verify.h"

#include <string.h>

#include <hdf5.h>

#include "clusterdse/model/perf.h"

/* Microseconds of one call of `coll` on a group of `size` ranks `stride` apart. */
static double predict_us(const cdse_system *system, int coll, int size, int stride, double bytes)
{
    cdse_span span;
    cdse_group_span(system, size, stride, &span);
    return cdse_coll_time(system, coll, &span, bytes) * 1e6;
}

/* Fills the run_* fields: the configuration's group if the allocation holds it, else the
 * largest group that fits (same stride if possible), and the message capped at max_bytes and
 * rounded down to whole floats per rank. */
static void plan_run(const cdse_system *system, int world, int64_t max_bytes, cdse_verify_op *op,
                     int coll)
{
    int g = op->group_size <= world ? op->group_size : world;
    int s = op->stride;
    if ((int64_t)g * s > world) /* members beyond the allocation: pack them closer */
        s = world / g > 0 ? world / g : 1;
    int64_t unit = 4 * (int64_t)g; /* whole floats per rank */
    double b = op->bytes < (double)max_bytes ? op->bytes : (double)max_bytes;
    int64_t run = (int64_t)(b / (double)unit) * unit;
    op->run_group_size = g;
    op->run_stride = s;
    op->run_bytes = run > unit ? run : unit;
    op->scaled = g != op->group_size || s != op->stride || (double)op->run_bytes != op->bytes;
    op->predicted_run_us = predict_us(system, coll, g, s, (double)op->run_bytes);
}

void cdse_verify_plan(const cdse_job *job, uint64_t index, cdse_record *record,
                      cdse_comm_plan *plan)
{
    cdse_study study;
    cdse_job_study(job, &study);
    cdse_record_eval(&study, index, record);
    cdse_result result;
    cdse_system system; /* with the configuration's hardware-axis values */
    cdse_record_system(&study, index, &system);
    cdse_evaluate_plan(&job->model[record->model], &system, &record->strategy, &result, plan);
}

int cdse_verify_ops(const cdse_record *rec, const cdse_comm_plan *plan, const cdse_model *model,
                    const cdse_system *system, int world, int64_t max_bytes, cdse_verify_op *ops)
{
    int n = 0;
    for (int i = 0; i < plan->n && n < CDSE_VERIFY_MAX_OPS; i++) {
        const cdse_comm_op *p = &plan->op[i];
        cdse_verify_op *op = &ops[n++];
        memset(op, 0, sizeof *op);
        op->index = rec->index;
        snprintf(op->model, sizeof op->model, "%s", model->name);
        snprintf(op->system, sizeof op->system, "%s", system->name);
        snprintf(op->comm, sizeof op->comm, "%s", cdse_comm_group_name(p->group));
        snprintf(op->collective, sizeof op->collective, "%s", cdse_coll_name(p->coll));
        op->group_size = p->size;
        op->stride = p->stride;
        op->bytes = p->bytes;
        op->calls = p->calls;
        op->exposed_share = p->exposed_share;
        op->predicted_us = cdse_coll_time(system, p->coll, &p->span, p->bytes) * 1e6;
        if (world >= 2)
            plan_run(system, world, max_bytes, op, p->coll);
    }
    return n;
}

static hid_t verify_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(cdse_verify_op));
    hid_t sname = H5Tcopy(H5T_C_S1), s8 = H5Tcopy(H5T_C_S1), s16 = H5Tcopy(H5T_C_S1);
    H5Tset_size(sname, CDSE_NAME_MAX);
    H5Tset_size(s8, 8);
    H5Tset_size(s16, 16);
#define F(name, type) H5Tinsert(t, #name, HOFFSET(cdse_verify_op, name), type)
    F(top_rank, H5T_NATIVE_INT32);
    F(index, H5T_NATIVE_UINT64);
    F(model, sname);
    F(system, sname);
    F(comm, s8);
    F(collective, s16);
    F(group_size, H5T_NATIVE_INT32);
    F(stride, H5T_NATIVE_INT32);
    F(bytes, H5T_NATIVE_DOUBLE);
    F(calls, H5T_NATIVE_DOUBLE);
    F(exposed_share, H5T_NATIVE_DOUBLE);
    F(predicted_us, H5T_NATIVE_DOUBLE);
    F(run_group_size, H5T_NATIVE_INT32);
    F(run_stride, H5T_NATIVE_INT32);
    F(run_bytes, H5T_NATIVE_INT64);
    F(scaled, H5T_NATIVE_INT8);
    F(predicted_run_us, H5T_NATIVE_DOUBLE);
    F(measured_us, H5T_NATIVE_DOUBLE);
    F(measured_avg_us, H5T_NATIVE_DOUBLE);
    F(measured_best_us, H5T_NATIVE_DOUBLE);
    F(ratio, H5T_NATIVE_DOUBLE);
#undef F
    H5Tclose(sname);
    H5Tclose(s8);
    H5Tclose(s16);
    return t;
}

int cdse_verify_write(const char *path, const cdse_verify_op *ops, int n, cdse_diag *diag)
{
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (file < 0) {
        cdse_diag_set(diag, "%s: cannot open for writing", path);
        return CDSE_EIO;
    }
    if (H5Lexists(file, "verify", H5P_DEFAULT) > 0)
        H5Ldelete(file, "verify", H5P_DEFAULT);
    hid_t type = verify_type();
    hsize_t dims[1] = {(hsize_t)n};
    hid_t space = H5Screate_simple(1, dims, NULL);
    hid_t ds = H5Dcreate2(file, "verify", type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    herr_t st = ds < 0 ? -1 : (n > 0 ? H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ops) : 0);
    if (ds >= 0) {
        hid_t s = H5Screate(H5S_SCALAR);
        const char *what = "predicted (collective model, the configuration's system) vs measured "
                           "(median over iterations of the slowest rank), microseconds per call";
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, strlen(what) + 1);
        hid_t a = H5Acreate2(ds, "description", t, s, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(a, t, what);
        H5Aclose(a);
        H5Tclose(t);
        H5Sclose(s);
        H5Dclose(ds);
    }
    H5Sclose(space);
    H5Tclose(type);
    if (H5Fclose(file) < 0 || st < 0) {
        cdse_diag_set(diag, "%s: writing /verify failed", path);
        return CDSE_EIO;
    }
    return 0;
}

void cdse_verify_table_header(FILE *out)
{
    fprintf(out, "# %4s %-16s %-4s %-14s %5s %6s %12s %12s %5s %6s %12s %12s %12s %12s %7s %s\n",
            "top", "system", "comm", "collective", "n", "stride", "bytes", "pred_us", "run_n",
            "run_st", "run_bytes", "run_pred_us", "measured_us", "best_us", "ratio", "scaled");
}

void cdse_verify_table_row(FILE *out, const cdse_verify_op *op)
{
    fprintf(out,
            "  %4d %-16.16s %-4s %-14s %5d %6d %12.4g %12.2f %5d %6d %12lld %12.2f %12.2f %12.2f "
            "%7.3f %s\n",
            op->top_rank, op->system, op->comm, op->collective, op->group_size, op->stride,
            op->bytes, op->predicted_us, op->run_group_size, op->run_stride,
            (long long)op->run_bytes, op->predicted_run_us, op->measured_us, op->measured_best_us,
            op->ratio, op->scaled ? "yes" : "no");
}
