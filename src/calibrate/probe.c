/* Probes: MPI collectives timed on shaped sub-communicators, the way the OSU micro-benchmarks
 * and nccl-tests time them. Rank 0 collects the rows and writes them with serial HDF5. */
#define _POSIX_C_SOURCE 200809L
#include "clusterdse/calibrate/probe.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clusterdse/model/collective.h"

extern char **environ; /* POSIX; read only */
static MPI_Datatype mpi_type(int dtype)
{
    switch (dtype) {
    case CDSE_PDT_FLOAT:
        return MPI_FLOAT;
    case CDSE_PDT_DOUBLE:
        return MPI_DOUBLE;
    case CDSE_PDT_INT32:
        return MPI_INT32_T;
    default:
        return MPI_UINT8_T;
    }
}

/* Element access for the data check; every value used is a small whole number, exact in every
 * type. uint8 sums wrap modulo 256 as MPI_SUM on MPI_UINT8_T does. */
static void set_elem(void *buf, int dtype, size_t i, double v)
{
    switch (dtype) {
    case CDSE_PDT_FLOAT:
        ((float *)buf)[i] = (float)v;
        break;
    case CDSE_PDT_DOUBLE:
        ((double *)buf)[i] = v;
        break;
    case CDSE_PDT_INT32:
        ((int32_t *)buf)[i] = (int32_t)v;
        break;
    default:
        ((uint8_t *)buf)[i] = (uint8_t)((int64_t)v & 0xff);
        break;
    }
}

static double get_elem(const void *buf, int dtype, size_t i)
{
    switch (dtype) {
    case CDSE_PDT_FLOAT:
        return ((const float *)buf)[i];
    case CDSE_PDT_DOUBLE:
        return ((const double *)buf)[i];
    case CDSE_PDT_INT32:
        return ((const int32_t *)buf)[i];
    default:
        return ((const uint8_t *)buf)[i];
    }
}

static double wrap(int dtype, double v)
{
    return dtype == CDSE_PDT_UINT8 ? (double)((int64_t)v & 0xff) : v;
}

/* Topology of the world communicator. */
typedef struct topo {
    int rank, size;
    int node, n_nodes; /* node index (0..n_nodes-1, by the lowest world rank on it) */
    int local_rank, local_size;
    bool uniform; /* same number of ranks on every node */
    int max_local;
} topo;

static int topo_init(MPI_Comm comm, topo *t)
{
    MPI_Comm node_comm, leaders;
    MPI_Comm_rank(comm, &t->rank);
    MPI_Comm_size(comm, &t->size);
    if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, t->rank, MPI_INFO_NULL, &node_comm))
        return CDSE_EMPI;
    MPI_Comm_rank(node_comm, &t->local_rank);
    MPI_Comm_size(node_comm, &t->local_size);
    MPI_Comm_split(comm, t->local_rank == 0 ? 0 : MPI_UNDEFINED, t->rank, &leaders);
    if (leaders != MPI_COMM_NULL) {
        MPI_Comm_rank(leaders, &t->node);
        MPI_Comm_size(leaders, &t->n_nodes);
        MPI_Comm_free(&leaders);
    }
    MPI_Bcast(&t->node, 1, MPI_INT, 0, node_comm);
    MPI_Bcast(&t->n_nodes, 1, MPI_INT, 0, node_comm);
    MPI_Comm_free(&node_comm);
    int min_local, max_local;
    MPI_Allreduce(&t->local_size, &min_local, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&t->local_size, &max_local, 1, MPI_INT, MPI_MAX, comm);
    t->uniform = min_local == max_local;
    t->max_local = max_local;
    return 0;
}

/* A plan's group or stride on this allocation: "node" is the ranks per node, "world" all. */
static int resolve_count(int value, const topo *t)
{
    return value == CDSE_PLAN_NODE ? t->max_local : value == CDSE_PLAN_WORLD ? t->size : value;
}

/* The sub-communicator of a shape. Collective over comm. *group is MPI_COMM_NULL on ranks that
 * sit out. Returns false (with a reason) when the shape does not apply to this allocation. */
typedef struct shape_comm {
    MPI_Comm group;
    int group_size, stride, n_groups, level, n_nodes;
} shape_comm;

/* Which levels the groups of a shape cross: 0 if every group sits within a node, 1 if every
 * group has one member per node, -1 otherwise; and the most nodes a group spans. Collective over
 * comm. */
static void shape_levels(const topo *t, MPI_Comm comm, shape_comm *sc)
{
    int code[2] = {INT32_MAX, INT32_MIN}, spanned = 0;
    if (sc->group != MPI_COMM_NULL) {
        int *nodes = malloc(sizeof(int) * (size_t)sc->group_size);
        MPI_Allgather(&t->node, 1, MPI_INT, nodes, 1, MPI_INT, sc->group);
        int distinct = 0, max_per = 0;
        for (int i = 0; i < sc->group_size; i++) {
            int same = 0, first = 1;
            for (int j = 0; j < sc->group_size; j++) {
                same += nodes[j] == nodes[i];
                if (j < i && nodes[j] == nodes[i])
                    first = 0;
            }
            distinct += first;
            max_per = same > max_per ? same : max_per;
        }
        free(nodes);
        int level = distinct == 1 ? 0 : (max_per == 1 ? 1 : -1);
        code[0] = level;
        code[1] = level;
        spanned = distinct;
    }
    int lo, hi;
    MPI_Allreduce(&code[0], &lo, 1, MPI_INT, MPI_MIN, comm);
    MPI_Allreduce(&code[1], &hi, 1, MPI_INT, MPI_MAX, comm);
    MPI_Allreduce(&spanned, &sc->n_nodes, 1, MPI_INT, MPI_MAX, comm);
    sc->level = lo == hi ? lo : -1;
}

static bool shape_make(const cdse_probe_shape *shape, const topo *t, MPI_Comm comm, shape_comm *sc,
                       char *why, size_t why_size)
{
    int color = MPI_UNDEFINED;
    sc->group = MPI_COMM_NULL;
    sc->stride = 1;
    switch (shape->kind) {
    case CDSE_SHAPE_WORLD:
        color = 0;
        sc->group_size = t->size;
        sc->n_groups = 1;
        break;
    case CDSE_SHAPE_NODE:
        if (!t->uniform) {
            snprintf(why, why_size, "nodes hold different numbers of ranks");
            return false;
        }
        color = t->node;
        sc->group_size = t->local_size;
        sc->n_groups = t->n_nodes;
        break;
    case CDSE_SHAPE_PER_NODE:
        color = t->local_rank == 0 ? 0 : MPI_UNDEFINED;
        sc->group_size = t->n_nodes;
        sc->n_groups = 1;
        sc->stride = t->max_local;
        break;
    default: { /* contiguous, strided */
        int g = resolve_count(shape->group, t), s = 1;
        if (shape->kind == CDSE_SHAPE_STRIDED)
            s = shape->stride == 0 && g > 0 ? t->size / g : resolve_count(shape->stride, t);
        if ((shape->group == CDSE_PLAN_NODE || shape->stride == CDSE_PLAN_NODE) && !t->uniform) {
            snprintf(why, why_size, "\"node\": nodes hold different numbers of ranks");
            return false;
        }
        if (g < 2 || s < 1 || (int64_t)g * s > t->size) {
            snprintf(why, why_size, "group %d x stride %d does not fit %d ranks (%d per node)", g,
                     s, t->size, t->max_local);
            return false;
        }
        int block = g * s, blocks = t->size / block;
        if (t->rank < blocks * block)
            color = (t->rank / block) * s + t->rank % s;
        sc->group_size = g;
        sc->stride = s;
        sc->n_groups = blocks * s;
        break;
    }
    }
    if (sc->group_size < 2) {
        snprintf(why, why_size, "a group of %d rank(s)", sc->group_size);
        return false;
    }
    MPI_Comm_split(comm, color, t->rank, &sc->group);
    shape_levels(t, comm, sc);
    return true;
}

/* Elements per call, as the MPI call takes them, for `bytes` of payload on a group of n. */
static int64_t chunk_elems(int coll, int64_t bytes, int elem, int n)
{
    int64_t elems = bytes / elem;
    return cdse_coll_table[coll].split ? elems / n : elems; /* per destination / contribution */
}

/* Actual payload bytes after rounding to whole elements (and whole per-rank chunks). */
static int64_t payload_bytes(int coll, int64_t chunk, int elem, int n)
{
    return cdse_coll_table[coll].split ? chunk * elem * n : chunk * elem;
}

typedef struct call {
    int coll, dtype;
    MPI_Datatype type;
    int64_t chunk; /* elements per MPI argument */
    MPI_Comm group;
    int n, me, partner;
    void *send, *recv;
    const int *counts; /* reduce_scatter: chunk elements for each of the n ranks */
} call;

/* The MPI call of each row of cdse_coll_table, in one place. */
static int mpi_allreduce(const call *c, int cnt)
{
    return MPI_Allreduce(c->send, c->recv, cnt, c->type, MPI_SUM, c->group);
}

static int mpi_allgather(const call *c, int cnt)
{
    return MPI_Allgather(c->send, cnt, c->type, c->recv, cnt, c->type, c->group);
}

/* MPI_Reduce_scatter, not MPI_Reduce_scatter_block: for the _block call Open MPI 4.1 runs a
 * reduce to one rank and a scatter (linear: 5x slower than a ring at 16 MiB here), while for
 * MPI_Reduce_scatter it picks the ring that collective.c costs. */
static int mpi_reduce_scatter(const call *c, int cnt)
{
    (void)cnt; /* every rank's chunk is in c->counts */
    return MPI_Reduce_scatter(c->send, c->recv, c->counts, c->type, MPI_SUM, c->group);
}

static int mpi_alltoall(const call *c, int cnt)
{
    return MPI_Alltoall(c->send, cnt, c->type, c->recv, cnt, c->type, c->group);
}

static int mpi_sendrecv(const call *c, int cnt)
{
    if (c->partner < 0)
        return MPI_SUCCESS;
    return MPI_Sendrecv(c->send, cnt, c->type, c->partner, 0, c->recv, cnt, c->type, c->partner, 0,
                        c->group, MPI_STATUS_IGNORE);
}

static int (*const mpi_call[CDSE_COLL_COUNT])(const call *c, int cnt) = {
    [CDSE_COLL_ALLREDUCE] = mpi_allreduce,
    [CDSE_COLL_ALLGATHER] = mpi_allgather,
    [CDSE_COLL_REDUCE_SCATTER] = mpi_reduce_scatter,
    [CDSE_COLL_ALLTOALL] = mpi_alltoall,
    [CDSE_COLL_SENDRECV] = mpi_sendrecv,
};

static int run_call(const call *c)
{
    return mpi_call[c->coll](c, (int)c->chunk);
}

/* Data check, from the collective's row of cdse_coll_table. Reductions: rank r contributes
 * (r mod 3) + (i mod 5) at global index i, so the sum is S3(n) + n (i mod 5) with S3(n) = sum
 * of (r mod 3). Data movement: rank r sends (7r + 3d + i) mod 100 to destination d (d = 0 when
 * it sends one block to all or one peer). */
static double s3(int n)
{
    double s = 0;
    for (int r = 0; r < n; r++)
        s += r % 3;
    return s;
}

static void check_fill(const call *c)
{
    const cdse_coll_desc *d = &cdse_coll_table[c->coll];
    int64_t total = d->send_blocks_n ? c->chunk * c->n : c->chunk;
    for (int64_t i = 0; i < total; i++) {
        double v =
            d->reduces ? c->me % 3 + i % 5 : (7 * c->me + 3 * (i / c->chunk) + i % c->chunk) % 100;
        set_elem(c->send, c->dtype, (size_t)i, v);
    }
}

static bool check_result(const call *c)
{
    const cdse_coll_desc *d = &cdse_coll_table[c->coll];
    if (d->algo == CDSE_ALGO_P2P && c->partner < 0)
        return true;
    int64_t total = d->recv_blocks_n ? c->chunk * c->n : c->chunk;
    int64_t offset = d->split ? c->me * c->chunk : 0; /* this rank's block of a reduction */
    int to = d->send_blocks_n ? c->me : 0;            /* destination index the sender used */
    double sum_r = s3(c->n);
    for (int64_t i = 0; i < total; i++) {
        double want;
        if (d->reduces) {
            want = wrap(c->dtype, sum_r + c->n * ((offset + i) % 5));
        } else {
            int64_t from = d->recv_blocks_n ? i / c->chunk : c->partner;
            want = (7 * from + 3 * to + i % c->chunk) % 100;
        }
        if (get_elem(c->recv, c->dtype, (size_t)i) != want)
            return false;
    }
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Everything one measurement needs; iteration times live in `times` (iterations_max). */
typedef struct bench {
    const cdse_probe_plan *plan;
    MPI_Comm world;
    int rank;
    double *times, *itermax;
} bench;

/* Whether `flag` is set on any rank of comm. Collective: every rank decides the same way. */
static bool any_rank(MPI_Comm comm, int flag)
{
    int any = 0;
    MPI_Allreduce(&flag, &any, 1, MPI_INT, MPI_LOR, comm);
    return any != 0;
}

#ifdef CDSE_PROBE_FAULT_INJECTION
/* Test builds only (tests/mpi/probe_fault.c): the rank of b->world named by
 * CDSE_PROBE_FAULT_RANK reports every call as failed after running it, as a call would that
 * returned an error under MPI_ERRORS_RETURN. */
static int fault_rank(void)
{
    const char *v = getenv("CDSE_PROBE_FAULT_RANK");
    return v ? atoi(v) : -1;
}
#endif

/* One call of `c`; its MPI return code. */
static int call_checked(const bench *b, const call *c)
{
    int rc = run_call(c);
#ifdef CDSE_PROBE_FAULT_INJECTION
    if (b->rank == fault_rank())
        rc = MPI_ERR_OTHER;
#else
    (void)b;
#endif
    return rc;
}

/* Times `c` (c->group may be MPI_COMM_NULL: the rank only joins the barriers) and fills the
 * timing fields of `row` on rank 0. Collective over b->world: a call that fails on one rank
 * makes every rank return CDSE_EMPI at the same point. */
static int measure(const bench *b, const call *c, cdse_probe_row *row)
{
    bool part = c->group != MPI_COMM_NULL;
    int n_est = b->plan->warmup > 0 ? b->plan->warmup : 1;
    double t_est = 0;
    /* A rank whose call failed makes no further call; every rank learns it at the next
     * synchronisation (an allreduce of the flag serves as the barrier before each call). */
    int failed = 0;
    for (int w = 0; w < n_est; w++) {
        if (any_rank(b->world, failed)) /* the barrier before each call, and the error check */
            return CDSE_EMPI;
        double t0 = MPI_Wtime();
        if (part && call_checked(b, c) != MPI_SUCCESS)
            failed = 1;
        t_est += MPI_Wtime() - t0;
    }
    if (any_rank(b->world, failed))
        return CDSE_EMPI;
    t_est /= n_est;
    double t_max_est = 0;
    MPI_Reduce(&t_est, &t_max_est, 1, MPI_DOUBLE, MPI_MAX, 0, b->world);
    int iters = 0;
    if (b->rank == 0) { /* rank 0 decides, every rank runs the same count */
        double want = b->plan->time_budget_ms * 1e-3 / (t_max_est > 1e-9 ? t_max_est : 1e-9);
        iters = want > b->plan->iterations_max ? b->plan->iterations_max : (int)want;
        if (iters < b->plan->iterations_min)
            iters = b->plan->iterations_min;
    }
    MPI_Bcast(&iters, 1, MPI_INT, 0, b->world);
    int ok = 1;
    double sum = 0;
    for (int it = 0; it < iters; it++) {
        if (b->plan->check && part)
            check_fill(c);
        if (any_rank(b->world, failed))
            return CDSE_EMPI;
        double t0 = MPI_Wtime();
        if (part && call_checked(b, c) != MPI_SUCCESS)
            failed = 1;
        double t = MPI_Wtime() - t0;
        b->times[it] = part ? t : 0;
        sum += b->times[it];
        if (b->plan->check && part && !check_result(c))
            ok = 0;
    }
    if (any_rank(b->world, failed))
        return CDSE_EMPI;
    double mean = sum / iters;
    double in_min = part ? mean : DBL_MAX, in_max = part ? mean : -1, in_cnt = part;
    double r_min, r_max, r_sum, r_cnt;
    int all_ok;
    MPI_Reduce(&in_min, &r_min, 1, MPI_DOUBLE, MPI_MIN, 0, b->world);
    MPI_Reduce(&in_max, &r_max, 1, MPI_DOUBLE, MPI_MAX, 0, b->world);
    MPI_Reduce(part ? &mean : &(double){0}, &r_sum, 1, MPI_DOUBLE, MPI_SUM, 0, b->world);
    MPI_Reduce(&in_cnt, &r_cnt, 1, MPI_DOUBLE, MPI_SUM, 0, b->world);
    MPI_Reduce(b->times, b->itermax, iters, MPI_DOUBLE, MPI_MAX, 0, b->world);
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, 0, b->world);
    if (b->rank == 0) {
        double itermax = 0;
        for (int it = 0; it < iters; it++)
            itermax += b->itermax[it];
        row->iterations = iters;
        row->t_min_us = r_min * 1e6;
        row->t_max_us = r_max * 1e6;
        row->t_avg_us = r_sum / r_cnt * 1e6;
        row->t_itermax_us = itermax / iters * 1e6;
        qsort(b->itermax, (size_t)iters, sizeof(double), cmp_double);
        row->t_median_us =
            1e6 * (iters % 2 ? b->itermax[iters / 2]
                             : 0.5 * (b->itermax[iters / 2 - 1] + b->itermax[iters / 2]));
        row->t_best_us = 1e6 * b->itermax[0];
        row->check_ok = b->plan->check ? (int8_t)all_ok : -1;
    }
    return 0;
}

typedef struct rows {
    int n, cap;
    cdse_probe_row *row;
} rows;

static int rows_push(rows *r, const cdse_probe_row *row)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        cdse_probe_row *p = realloc(r->row, sizeof *p * (size_t)cap);
        if (p == NULL)
            return CDSE_ENOMEM;
        r->row = p;
        r->cap = cap;
    }
    r->row[r->n++] = *row;
    return 0;
}

/* Measures one call and fills every field of `row` (on rank 0). */
static int measure_row(const bench *b, const call *c, const cdse_probe_shape *shape,
                       const shape_comm *sc, cdse_probe_row *row)
{
    memset(row, 0, sizeof *row);
    call with_counts = *c;
    int *counts = NULL;
    if (c->coll == CDSE_COLL_REDUCE_SCATTER) {
        counts = malloc(sizeof(int) * (size_t)c->n);
        for (int i = 0; counts && i < c->n; i++)
            counts[i] = (int)c->chunk;
        with_counts.counts = counts;
    }
    if (any_rank(b->world, c->coll == CDSE_COLL_REDUCE_SCATTER && counts == NULL))
        return CDSE_ENOMEM;
    int rc = measure(b, &with_counts, row);
    free(counts);
    if (rc || b->rank != 0)
        return rc;
    snprintf(row->collective, sizeof row->collective, "%s", cdse_coll_name(c->coll));
    snprintf(row->shape, sizeof row->shape, "%s", cdse_shape_name(shape->kind));
    snprintf(row->dtype, sizeof row->dtype, "%s", cdse_probe_dtype_name(c->dtype));
    row->group_size = sc->group_size;
    row->stride = sc->stride;
    row->n_groups = sc->n_groups;
    row->level = sc->level;
    row->n_nodes = sc->n_nodes;
    row->bytes = payload_bytes(c->coll, c->chunk, cdse_probe_dtype_size(c->dtype), sc->group_size);
    /* The median over iterations of the slowest rank: the time fit uses by default. */
    row->algbw_gbs = (double)row->bytes / (row->t_median_us * 1e-6) / 1e9;
    row->busbw_gbs = row->algbw_gbs * cdse_busbw_factor(c->coll, sc->group_size);
    return 0;
}

/* Runs every collective, dtype and size of the plan on one shape. */
static int probe_shape(const bench *b, const cdse_probe_shape *shape, const topo *t, void *send,
                       void *recv, FILE *table, rows *out)
{
    shape_comm sc;
    char why[128];
    if (!shape_make(shape, t, b->world, &sc, why, sizeof why)) {
        if (b->rank == 0 && table)
            fprintf(table, "# shape %s skipped: %s\n", cdse_shape_name(shape->kind), why);
        return 0;
    }
    int rc = 0;
    for (int coll = 0; coll < CDSE_COLL_COUNT && rc == 0; coll++) {
        if (!b->plan->coll[coll])
            continue;
        if (cdse_coll_table[coll].algo == CDSE_ALGO_P2P && sc.group_size % 2 != 0) {
            if (b->rank == 0 && table)
                fprintf(table, "# sendrecv on shape %s skipped: odd group of %d\n",
                        cdse_shape_name(shape->kind), sc.group_size);
            continue;
        }
        for (int dt = 0; dt < CDSE_PDT_COUNT && rc == 0; dt++) {
            if (!b->plan->dtype[dt])
                continue;
            for (int s = 0; s < b->plan->n_sizes && rc == 0; s++) {
                int elem = cdse_probe_dtype_size(dt);
                call c = {coll, dt, mpi_type(dt), 0,    sc.group, sc.group_size,
                          0,    -1, send,         recv, NULL};
                c.chunk = chunk_elems(coll, b->plan->sizes[s], elem, sc.group_size);
                if (c.chunk < 1 || c.chunk > INT32_MAX)
                    continue; /* too small for this group (or too many elements for MPI int) */
                if (sc.group != MPI_COMM_NULL) {
                    MPI_Comm_rank(sc.group, &c.me);
                    c.partner = c.me ^ 1; /* pairs (0,1), (2,3), ... within each group */
                }
                cdse_probe_row row;
                rc = measure_row(b, &c, shape, &sc, &row);
                if (rc)
                    continue; /* measure_row failed on every rank alike */
                int push_failed = 0;
                if (b->rank == 0) {
                    if (table)
                        cdse_probe_table_row(table, &row);
                    push_failed = rows_push(out, &row) != 0;
                }
                if (any_rank(b->world, push_failed)) /* rank 0 out of memory: all stop */
                    rc = CDSE_ENOMEM;
            }
        }
    }
    if (sc.group != MPI_COMM_NULL)
        MPI_Comm_free(&sc.group);
    return rc;
}

/* MPI_Reduce_local on every rank at once: the rate at which a rank adds two buffers. */
static int probe_reduce_local(const bench *b, void *in, void *inout, cdse_probe_result *res)
{
    for (int dt = 0; dt < CDSE_PDT_COUNT; dt++) {
        if (!b->plan->dtype[dt])
            continue;
        for (int s = 0; s < b->plan->n_sizes; s++) {
            int elem = cdse_probe_dtype_size(dt);
            int64_t count = b->plan->sizes[s] / elem;
            if (count < 1 || count > INT32_MAX)
                continue;
            /* Measured like a collective on a world of one-rank groups. */
            double t_sum = 0;
            int iters = b->plan->iterations_min;
            for (int w = 0; w < b->plan->warmup; w++)
                MPI_Reduce_local(in, inout, (int)count, mpi_type(dt), MPI_SUM);
            double t_est = MPI_Wtime();
            MPI_Reduce_local(in, inout, (int)count, mpi_type(dt), MPI_SUM);
            t_est = MPI_Wtime() - t_est;
            double t_max_est;
            MPI_Allreduce(&t_est, &t_max_est, 1, MPI_DOUBLE, MPI_MAX, b->world);
            double want = b->plan->time_budget_ms * 1e-3 / (t_max_est > 1e-9 ? t_max_est : 1e-9);
            if (want > iters)
                iters = want > b->plan->iterations_max ? b->plan->iterations_max : (int)want;
            for (int it = 0; it < iters; it++) {
                MPI_Barrier(b->world);
                double t0 = MPI_Wtime();
                MPI_Reduce_local(in, inout, (int)count, mpi_type(dt), MPI_SUM);
                t_sum += MPI_Wtime() - t0;
            }
            double mean = t_sum / iters, total;
            MPI_Reduce(&mean, &total, 1, MPI_DOUBLE, MPI_SUM, 0, b->world);
            if (b->rank != 0)
                continue;
            int size;
            MPI_Comm_size(b->world, &size);
            cdse_reduce_row *r = &res->reduce[res->n_reduce++];
            memset(r, 0, sizeof *r);
            snprintf(r->dtype, sizeof r->dtype, "%s", cdse_probe_dtype_name(dt));
            r->bytes = count * elem;
            r->iterations = iters;
            r->t_avg_us = total / size * 1e6;
            r->gbs = (double)r->bytes / (r->t_avg_us * 1e-6) / 1e9;
        }
    }
    return 0;
}

/* Variables that choose collective algorithms or transports, by prefix. */
static const char *const algo_env_prefixes[] = {
    "OMPI_MCA_coll", "OMPI_MCA_pml",  "OMPI_MCA_btl",
    "OMPI_MCA_osc",  "I_MPI_ADJUST_", "I_MPI_COLL",
    "I_MPI_FABRICS", "MPIR_CVAR_",    "MPICH_",
    "MV2_",          "UCX_",          "UCC_",
    "NCCL_",         "FI_PROVIDER",   "HCOLL_",
    "SLURM_JOB_ID",  "SLURM_NNODES",  "SLURM_CPUS_PER_TASK"};

static void collect_env(char *out, size_t size)
{
    out[0] = '\0';
    for (char **e = environ; e && *e; e++) {
        for (size_t p = 0; p < sizeof algo_env_prefixes / sizeof algo_env_prefixes[0]; p++) {
            if (strncmp(*e, algo_env_prefixes[p], strlen(algo_env_prefixes[p])) == 0) {
                strncat(out, *e, size - strlen(out) - 1);
                strncat(out, "\n", size - strlen(out) - 1);
                break;
            }
        }
    }
}

/* Reads the MPI_T control variable NAME (an int or a bool): its value, and as text its
 * enumeration item's name when it has one. False when the library has no such variable. Local;
 * rank 0 calls it. */
static bool cvar_read(const char *name, int *value, char *out, size_t size)
{
    out[0] = '\0';
    int index, nlen, dlen, verbosity, bind, scope, count;
    char vname[256], desc[1024];
    MPI_Datatype type;
    MPI_T_enum enumtype;
    MPI_T_cvar_handle handle;
    if (MPI_T_cvar_get_index(name, &index) != MPI_SUCCESS)
        return false;
    nlen = sizeof vname;
    dlen = sizeof desc;
    if (MPI_T_cvar_get_info(index, vname, &nlen, &verbosity, &type, &enumtype, desc, &dlen, &bind,
                            &scope) != MPI_SUCCESS ||
        (type != MPI_INT && type != MPI_C_BOOL))
        return false;
    union {
        int as_int;
        bool as_bool;
        char room[16];
    } buf;
    memset(&buf, 0, sizeof buf);
    if (MPI_T_cvar_handle_alloc(index, NULL, &handle, &count) != MPI_SUCCESS)
        return false;
    int rc = MPI_T_cvar_read(handle, &buf);
    MPI_T_cvar_handle_free(&handle);
    if (rc != MPI_SUCCESS)
        return false;
    *value = type == MPI_INT ? buf.as_int : (int)buf.as_bool;
    snprintf(out, size, "%d", *value);
    int items = 0;
    if (enumtype == MPI_T_ENUM_NULL ||
        MPI_T_enum_get_info(enumtype, &items, vname, &(int){sizeof vname}) != MPI_SUCCESS)
        return true;
    for (int i = 0; i < items; i++) {
        int v;
        nlen = sizeof vname;
        if (MPI_T_enum_get_item(enumtype, i, &v, vname, &nlen) == MPI_SUCCESS && v == *value) {
            snprintf(out, size, "%s", vname);
            break;
        }
    }
    return true;
}

/* Which MPI call each collective times and, where MPI says so, which algorithm runs it: Open
 * MPI's coll/tuned takes the algorithm from coll_tuned_<name>_algorithm when
 * coll_tuned_use_dynamic_rules is set (read through MPI_T, so mca-params.conf counts too);
 * otherwise its decision rules choose by size and ranks, which MPI does not expose. */
static void collect_algorithms(char *out, size_t size)
{
    static const char *const call_name[CDSE_COLL_COUNT] = {[CDSE_COLL_ALLREDUCE] = "MPI_Allreduce",
                                                           [CDSE_COLL_ALLGATHER] = "MPI_Allgather",
                                                           [CDSE_COLL_REDUCE_SCATTER] =
                                                               "MPI_Reduce_scatter",
                                                           [CDSE_COLL_ALLTOALL] = "MPI_Alltoall",
                                                           [CDSE_COLL_SENDRECV] = "MPI_Sendrecv"};
    int provided, dynamic = 0;
    char text[256];
    bool mpit = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
    bool tuned = mpit && cvar_read("coll_tuned_use_dynamic_rules", &dynamic, text, sizeof text);
    out[0] = '\0';
    for (int coll = 0; coll < CDSE_COLL_COUNT; coll++) {
        const char *name = cdse_probe_coll_name(coll);
        char var[64], alg[256] = "", line[640];
        int forced = 0;
        snprintf(var, sizeof var, "coll_tuned_%s_algorithm", name);
        bool known =
            tuned && coll != CDSE_COLL_SENDRECV && cvar_read(var, &forced, alg, sizeof alg);
        if (coll == CDSE_COLL_SENDRECV)
            snprintf(line, sizeof line, "%s: %s (point to point)\n", name, call_name[coll]);
        else if (!known)
            snprintf(line, sizeof line, "%s: %s, algorithm not known (no %s in MPI_T)\n", name,
                     call_name[coll], var);
        else if (dynamic && forced)
            snprintf(line, sizeof line, "%s: %s, algorithm %s (forced: %s)\n", name,
                     call_name[coll], alg, var);
        else
            snprintf(line, sizeof line, "%s: %s, algorithm chosen by the library's rules\n", name,
                     call_name[coll]);
        strncat(out, line, size - strlen(out) - 1);
    }
    if (mpit)
        MPI_T_finalize();
}

static void collect_info(MPI_Comm comm, const topo *t, const cdse_probe_plan *plan,
                         cdse_probe_info *info)
{
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    MPI_Get_processor_name(host, &len);
    char *all = t->rank == 0 ? malloc((size_t)t->size * MPI_MAX_PROCESSOR_NAME) : NULL;
    MPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
               comm);
    if (t->rank != 0)
        return;
    memset(info, 0, sizeof *info);
    info->ranks = t->size;
    info->nodes = t->n_nodes;
    info->ranks_per_node = t->max_local;
    snprintf(info->plan_name, sizeof info->plan_name, "%s", plan->name);
    int vlen = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Get_library_version(version, &vlen);
    version[strcspn(version, "\n")] = '\0'; /* first line: Open MPI puts a description after */
    snprintf(info->mpi_library, sizeof info->mpi_library, "%s", version);
    time_t now = time(NULL);
    strftime(info->date, sizeof info->date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    for (int r = 0; r < t->size && all; r++) {
        const char *h = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
        bool seen = false;
        for (int q = 0; q < r && !seen; q++)
            seen = strcmp(h, all + (size_t)q * MPI_MAX_PROCESSOR_NAME) == 0;
        if (seen)
            continue;
        if (strlen(info->hostnames) + strlen(h) + 5 >= sizeof info->hostnames) {
            strcat(info->hostnames, ",...");
            break;
        }
        if (info->hostnames[0])
            strcat(info->hostnames, ",");
        strcat(info->hostnames, h);
    }
    free(all);
    collect_env(info->env, sizeof info->env);
    collect_algorithms(info->algorithms, sizeof info->algorithms);
}

int cdse_probe_run(const cdse_probe_plan *plan, MPI_Comm comm, FILE *table,
                   cdse_probe_result *result, cdse_diag *diag)
{
    memset(result, 0, sizeof *result);
    topo t;
    if (topo_init(comm, &t)) {
        cdse_diag_set(diag, "MPI_Comm_split_type failed");
        return CDSE_EMPI;
    }
    collect_info(comm, &t, plan, &result->info);
    int64_t max_bytes = plan->sizes[plan->n_sizes - 1];
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *send = NULL, *recv = NULL;
    double *times = malloc(sizeof(double) * (size_t)plan->iterations_max);
    double *itermax = malloc(sizeof(double) * (size_t)plan->iterations_max);
    int bad = posix_memalign(&send, page, (size_t)max_bytes) != 0 ||
              posix_memalign(&recv, page, (size_t)max_bytes) != 0 || !times || !itermax;
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, comm);
    int rc = 0;
    if (any_bad) {
        cdse_diag_set(diag, "cannot allocate 2 x %lld bytes of message buffers",
                      (long long)max_bytes);
        rc = CDSE_ENOMEM;
        goto done;
    }
    memset(send, 1, (size_t)max_bytes); /* touch every page before timing */
    memset(recv, 0, (size_t)max_bytes);
    bench b = {plan, comm, t.rank, times, itermax};
    if (t.rank == 0 && table) {
        fprintf(table, "# clusterdse probe: plan %s, %d ranks on %d node(s) (%d per node), %s\n",
                plan->name, t.size, t.n_nodes, t.max_local, result->info.mpi_library);
        fprintf(table, "# times per call in microseconds; level 0 = within a node, 1 = one rank "
                       "per node, -1 = mixed\n");
        for (const char *line = result->info.algorithms; *line;) {
            size_t len = strcspn(line, "\n");
            fprintf(table, "# %.*s\n", (int)len, line);
            line += len + (line[len] == '\n');
        }
        cdse_probe_table_header(table);
    }
    rows out = {0, 0, NULL};
    for (int s = 0; s < plan->n_shapes && rc == 0; s++)
        rc = probe_shape(&b, &plan->shape[s], &t, send, recv, table, &out);
    result->rows = out.row;
    result->n_rows = out.n;
    if (rc == 0 && plan->reduce_local) {
        result->reduce =
            calloc((size_t)CDSE_PDT_COUNT * (size_t)plan->n_sizes, sizeof *result->reduce);
        if (result->reduce == NULL)
            rc = CDSE_ENOMEM;
        else
            rc = probe_reduce_local(&b, send, recv, result);
        if (rc == 0 && t.rank == 0 && table) {
            fprintf(table, "# local reduction (MPI_Reduce_local, MPI_SUM, all ranks at once)\n");
            fprintf(table, "# %-6s %12s %6s %11s %10s\n", "dtype", "bytes", "iters", "t_avg_us",
                    "GB/s");
            for (int i = 0; i < result->n_reduce; i++) {
                const cdse_reduce_row *r = &result->reduce[i];
                fprintf(table, "  %-6s %12lld %6d %11.2f %10.3f\n", r->dtype, (long long)r->bytes,
                        r->iterations, r->t_avg_us, r->gbs);
            }
        }
    }
    if (rc == CDSE_EMPI)
        cdse_diag_set(diag, "an MPI collective failed");
    else if (rc == CDSE_ENOMEM)
        cdse_diag_set(diag, "out of memory");
done:
    free(send);
    free(recv);
    free(times);
    free(itermax);
    return rc;
}

int cdse_probe_measure(const cdse_probe_plan *plan, MPI_Comm comm, int coll, int dtype,
                       const cdse_probe_shape *shape, int64_t bytes, cdse_probe_row *row,
                       cdse_diag *diag)
{
    topo t;
    if (topo_init(comm, &t)) {
        cdse_diag_set(diag, "MPI_Comm_split_type failed");
        return CDSE_EMPI;
    }
    shape_comm sc;
    char why[128];
    if (!shape_make(shape, &t, comm, &sc, why, sizeof why)) {
        cdse_diag_set(diag, "shape %s cannot run here: %s", cdse_shape_name(shape->kind), why);
        return CDSE_EINVAL;
    }
    int elem = cdse_probe_dtype_size(dtype);
    call c = {coll, dtype, mpi_type(dtype), 0, sc.group, sc.group_size, 0, -1, NULL, NULL, NULL};
    c.chunk = chunk_elems(coll, bytes, elem, sc.group_size);
    int rc = 0;
    if (c.chunk < 1 || c.chunk > INT32_MAX) {
        cdse_diag_set(diag, "%lld bytes cannot be split over %d ranks", (long long)bytes,
                      sc.group_size);
        rc = CDSE_EINVAL;
    }
    if (sc.group != MPI_COMM_NULL) {
        MPI_Comm_rank(sc.group, &c.me);
        c.partner = (c.me ^ 1) < sc.group_size ? c.me ^ 1 : -1;
    }
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t size = (size_t)(bytes > 0 ? bytes : 1);
    double *times = malloc(sizeof(double) * (size_t)plan->iterations_max);
    double *itermax = malloc(sizeof(double) * (size_t)plan->iterations_max);
    int bad = posix_memalign(&c.send, page, size) != 0 ||
              posix_memalign(&c.recv, page, size) != 0 || !times || !itermax;
    int any_bad = 0;
    MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_LOR, comm);
    if (rc == 0 && any_bad) {
        cdse_diag_set(diag, "cannot allocate 2 x %lld bytes", (long long)bytes);
        rc = CDSE_ENOMEM;
    }
    if (rc == 0) {
        memset(c.send, 1, size);
        memset(c.recv, 0, size);
        bench b = {plan, comm, t.rank, times, itermax};
        rc = measure_row(&b, &c, shape, &sc, row);
        if (rc == CDSE_EMPI)
            cdse_diag_set(diag, "an MPI collective failed");
    }
    free(c.send);
    free(c.recv);
    free(times);
    free(itermax);
    if (sc.group != MPI_COMM_NULL)
        MPI_Comm_free(&sc.group);
    return rc;
}
