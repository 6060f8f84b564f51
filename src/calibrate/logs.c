/* nccl-tests and OSU micro-benchmark logs read into probe rows (logs.h).
 *
 * nccl-tests (github.com/NVIDIA/nccl-tests, src/util.cu and src/common.cu): a header of
 * "# nThread T nGpus G ..." and one "#  Rank R Group G Pid P on HOST device D [..] NAME" line per
 * rank, then rows "size count type redop root  time algbw busbw #wrong  time algbw busbw #wrong"
 * (out-of-place, then in-place; the column positions are taken from the "# size count type ..."
 * header line, so versions without `root` read too). The size column is
 * max(send bytes, receive bytes) (common.cu): the whole buffer for all_reduce, the gathered
 * buffer for all_gather, the input for reduce_scatter, the send buffer for alltoall, the message
 * for sendrecv (the *GetCollByteCount functions of src/<coll>.cu), i.e. collective.h's bytes.
 *
 * OSU (mvapich.cse.ohio-state.edu/benchmarks, c/util/osu_util_mpi.c print_preamble): "# OSU
 * MPI[-CUDA] <Benchmark> Test vX.Y", for collectives "# Size  Avg Latency(us)" with, under -f,
 * "Min Latency(us)  Max Latency(us)  Iterations" (7.x may add tail-latency columns, read by
 * name), for osu_latency "# Size  Latency (us)", for osu_bw "# Size  Bandwidth (MB/s)". */
#include "clusterdse/calibrate/logs.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "clusterdse/model/collective.h"

#define LOG_LINE_MAX 4096

/* One benchmark each tool can run, and how its size maps to collective.h's bytes. */
typedef struct log_bench {
    const char *name;  /* nccl-tests binary, or the OSU benchmark title */
    const char *tool;  /* the binary */
    int coll;          /* cdse_coll */
    bool size_times_n; /* OSU: size is a per-rank block; bytes = size x n */
    bool bandwidth;    /* OSU osu_bw: the column is MB/s (1e6 bytes/s), not microseconds */
} log_bench;

static const log_bench nccl_benches[] = {
    {"all_reduce_perf", "all_reduce_perf", CDSE_COLL_ALLREDUCE, false, false},
    {"all_gather_perf", "all_gather_perf", CDSE_COLL_ALLGATHER, false, false},
    {"reduce_scatter_perf", "reduce_scatter_perf", CDSE_COLL_REDUCE_SCATTER, false, false},
    {"alltoall_perf", "alltoall_perf", CDSE_COLL_ALLTOALL, false, false},
    {"sendrecv_perf", "sendrecv_perf", CDSE_COLL_SENDRECV, false, false},
};

/* OSU titles (the BENCHMARK macro of each c/mpi/.../osu_*.c). osu_allgather's size is the block
 * each rank sends (MPI_Allgather(sendbuf, num_elements, ...)), osu_alltoall's the block sent to
 * each peer (MPI_Alltoall(sendbuf, num_elements, ...)); osu_reduce_scatter splits `size` bytes
 * into recvcounts of size/numprocs elements (c/mpi/collective/blocking/osu_reduce_scatter.c), so
 * its size is the whole vector; osu_latency's is the one-way message of a ping-pong. */
static const log_bench osu_benches[] = {
    {"Allreduce Latency", "osu_allreduce", CDSE_COLL_ALLREDUCE, false, false},
    {"Allgather Latency", "osu_allgather", CDSE_COLL_ALLGATHER, true, false},
    {"Reduce_scatter Latency", "osu_reduce_scatter", CDSE_COLL_REDUCE_SCATTER, false, false},
    {"All-to-All Personalized Exchange Latency", "osu_alltoall", CDSE_COLL_ALLTOALL, true, false},
    {"Latency", "osu_latency", CDSE_COLL_SENDRECV, false, false},
    {"Bandwidth", "osu_bw", CDSE_COLL_SENDRECV, false, true},
};

static bool starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The OSU title of a "# OSU MPI[-ACC] <title> Test vX" line, or NULL. */
static const char *osu_title(const char *line, char *title, size_t size)
{
    if (!starts_with(line, "# OSU MPI"))
        return NULL;
    const char *p = line + strlen("# OSU MPI");
    if (*p == '-') /* -CUDA, -ROCM, -OPENACC */
        p += strcspn(p, " ");
    while (*p == ' ')
        p++;
    const char *end = strstr(p, " Test");
    if (end == NULL)
        return NULL;
    snprintf(title, size, "%.*s", (int)(end - p), p);
    return title;
}

int cdse_log_sniff(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return CDSE_LOG_NONE;
    char line[LOG_LINE_MAX], title[128];
    int format = CDSE_LOG_NONE;
    for (int n = 0; format == CDSE_LOG_NONE && n < 200 && fgets(line, sizeof line, f); n++) {
        if (memchr(line, '\0', strlen(line) + 1) != line + strlen(line))
            break;
        if (starts_with(line, "# nccl-tests version") || starts_with(line, "# nThread ") ||
            starts_with(line, "# Collective test starting"))
            format = CDSE_LOG_NCCL_TESTS;
        else if (osu_title(line, title, sizeof title))
            format = CDSE_LOG_OSU;
    }
    fclose(f);
    return format;
}

/* Whitespace-separated tokens of `line` (modified in place); returns the count. */
static int split(char *line, char **tok, int max)
{
    int n = 0;
    for (char *p = strtok(line, " \t\r\n"); p && n < max; p = strtok(NULL, " \t\r\n"))
        tok[n++] = p;
    return n;
}

static bool parse_number(const char *s, double *v)
{
    char *end = NULL;
    errno = 0;
    *v = strtod(s, &end);
    return end != s && *end == '\0' && errno == 0;
}

/* nccl-tests type names to the probe's dtype names where they are the same type. */
static void nccl_dtype(const char *type, char *out, size_t size)
{
    static const char *const map[][2] = {{"float", "float"}, {"double", "double"},
                                         {"int32", "int32"}, {"uint8", "uint8"},
                                         {"int", "int32"},   {"char", "uint8"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(type, map[i][0]) == 0) {
            snprintf(out, size, "%s", map[i][1]);
            return;
        }
    snprintf(out, size, "%.7s", type);
}

/* OSU "# Datatype: MPI_CHAR." (7.x) to the probe's dtype names. */
static void osu_dtype(const char *line, char *out, size_t size)
{
    static const char *const map[][2] = {{"MPI_CHAR", "uint8"},    {"MPI_FLOAT", "float"},
                                         {"MPI_DOUBLE", "double"}, {"MPI_INT", "int32"},
                                         {"MPI_BYTE", "uint8"},    {"MPI_UINT8_T", "uint8"}};
    const char *p = line + strlen("# Datatype:");
    while (*p == ' ')
        p++;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (starts_with(p, map[i][0]) && !isalnum((unsigned char)p[strlen(map[i][0])]) &&
            p[strlen(map[i][0])] != '_') {
            snprintf(out, size, "%s", map[i][1]);
            return;
        }
    snprintf(out, size, "%.*s", (int)strcspn(p, ". \r\n"), p);
}

/* The rank lines of a nccl-tests log: each rank's host and Group (the colour of
 * NCCL_TESTS_SPLIT / NCCL_TESTS_SPLIT_MASK, common.cu: MPI_Comm_split(MPI_COMM_WORLD, color, ...);
 * 0 for every rank without a split, and in versions without the column). */
#define LOG_HOST_MAX 64
typedef struct log_rank {
    int group;
    char host[LOG_HOST_MAX];
} log_rank;

typedef struct rank_list {
    log_rank *rank;
    int n, cap;
} rank_list;

static int add_rank(rank_list *rl, int group, const char *host)
{
    if (rl->n == rl->cap) {
        int cap = rl->cap ? 2 * rl->cap : 64;
        log_rank *rank = realloc(rl->rank, sizeof *rank * (size_t)cap);
        if (rank == NULL)
            return CDSE_ENOMEM;
        rl->rank = rank;
        rl->cap = cap;
    }
    rl->rank[rl->n].group = group;
    snprintf(rl->rank[rl->n].host, LOG_HOST_MAX, "%s", host);
    rl->n++;
    return 0;
}

/* Hosts of the ranks in `group` (every rank when group < 0; colours are never negative): how
 * many distinct ones, and the most ranks on one. */
static void count_hosts(const rank_list *rl, int group, int *hosts, int *most)
{
    *hosts = *most = 0;
    for (int i = 0; i < rl->n; i++) {
        if (group >= 0 && rl->rank[i].group != group)
            continue;
        bool first = true;
        int on_host = 0;
        for (int j = 0; j < rl->n; j++) {
            if ((group >= 0 && rl->rank[j].group != group) ||
                strcmp(rl->rank[j].host, rl->rank[i].host) != 0)
                continue;
            first = first && j >= i;
            on_host++;
        }
        *hosts += first;
        *most = on_host > *most ? on_host : *most;
    }
}

/* The layout the rank lines tell: ranks, nodes, ranks per node; the groups (all of one size,
 * else CDSE_EINVAL), and the level of the rows: 0 when every group is on one host, 1 when no
 * group has two ranks on one host, else -1. */
static int rank_layout(const rank_list *rl, cdse_log_info *li, const char *path, cdse_diag *diag)
{
    count_hosts(rl, -1, &li->nodes, &li->ranks_per_node);
    li->ranks = rl->n;
    li->groups = 0;
    bool one_host = true, one_per_host = true;
    int widest = 0;
    for (int i = 0; i < rl->n; i++) {
        int g = rl->rank[i].group, size = 0;
        bool first = true;
        for (int j = 0; j < rl->n; j++)
            if (rl->rank[j].group == g) {
                size++;
                first = first && j >= i;
            }
        if (!first)
            continue;
        if (li->groups > 0 && size != li->group_size) {
            cdse_diag_set(diag,
                          "%s: its rank lines put %d ranks in Group %d and %d in another: "
                          "groups of different sizes (NCCL_TESTS_SPLIT) are not fitted",
                          path, size, g, li->group_size);
            return CDSE_EINVAL;
        }
        int hosts, most;
        count_hosts(rl, g, &hosts, &most);
        one_host = one_host && hosts == 1;
        one_per_host = one_per_host && most == 1;
        widest = hosts > widest ? hosts : widest;
        li->group_size = size;
        li->groups++;
    }
    li->group_nodes = widest;
    li->level = one_host ? 0 : one_per_host ? 1 : -1;
    return 0;
}

/* "#  Rank  3 Group  0 Pid  1234 on HOST device  3 [0000:1b:00] NVIDIA H100 80GB HBM3" (older
 * versions have no Group). Returns 1 for a rank line, 0 for another, CDSE_ENOMEM. */
static int nccl_rank_line(const char *line, rank_list *rl, char *device, size_t size)
{
    if (!starts_with(line, "#") || strstr(line, " Rank ") == NULL || strstr(line, " Pid ") == NULL)
        return 0;
    const char *on = strstr(line, " on ");
    if (on == NULL)
        return 0;
    char host[LOG_HOST_MAX];
    if (sscanf(on + 4, "%63s", host) != 1)
        return 0;
    int group = 0;
    const char *g = strstr(line, " Group ");
    if (g != NULL && g < on)
        sscanf(g + strlen(" Group "), "%d", &group);
    if (add_rank(rl, group, host) != 0)
        return CDSE_ENOMEM;
    const char *bracket = strchr(on, ']');
    if (device[0] == '\0' && bracket != NULL) {
        const char *p = bracket + 1;
        while (*p == ' ')
            p++;
        snprintf(device, size, "%.*s", (int)strcspn(p, "\r\n"), p);
    }
    return 1;
}

/* NCCL_ALGO / NCCL_PROTO when the log shows them: NCCL's "NCCL_ALGO set by environment to Ring"
 * (NCCL_DEBUG=INFO) or a "NCCL_ALGO=Ring" line a job script echoed. */
static void note_algo(const char *line, char *algo, size_t size)
{
    static const char *const vars[] = {"NCCL_ALGO", "NCCL_PROTO"};
    for (int v = 0; v < 2; v++) {
        const char *p = strstr(line, vars[v]);
        if (p == NULL || (p != line && (isalnum((unsigned char)p[-1]) || p[-1] == '_')))
            continue;
        p += strlen(vars[v]);
        const char *value = NULL;
        if (*p == '=')
            value = p + 1;
        else if (starts_with(p, " set by environment to "))
            value = p + strlen(" set by environment to ");
        if (value == NULL || strstr(algo, vars[v]) != NULL)
            continue;
        size_t len = strlen(algo);
        snprintf(algo + len, size - len, "%s%s=%.*s", len ? " " : "", vars[v],
                 (int)strcspn(value, " \t\r\n"), value);
    }
}

static int append_row(cdse_probe_result *r, const cdse_probe_row *row)
{
    if ((r->n_rows & (r->n_rows - 1)) == 0 || r->n_rows == 0) {
        int cap = r->n_rows ? 2 * r->n_rows : 16;
        cdse_probe_row *rows = realloc(r->rows, sizeof *rows * (size_t)cap);
        if (rows == NULL)
            return CDSE_ENOMEM;
        r->rows = rows;
    }
    r->rows[r->n_rows++] = *row;
    return 0;
}

static void base_row(cdse_probe_row *row, int coll, const char *shape, const cdse_log_info *li)
{
    memset(row, 0, sizeof *row);
    snprintf(row->collective, sizeof row->collective, "%s", cdse_coll_name(coll));
    snprintf(row->shape, sizeof row->shape, "%s", shape);
    row->group_size = coll == CDSE_COLL_SENDRECV && li->format == CDSE_LOG_OSU ? 2 : li->group_size;
    row->stride = 1;
    row->n_groups = li->groups;
    row->level = li->level;
    row->n_nodes = li->group_nodes;
    row->check_ok = -1;
}

static void fill_bw(cdse_probe_row *row, int coll)
{
    row->algbw_gbs = row->t_median_us > 0 ? (double)row->bytes / row->t_median_us * 1e-3 : 0;
    row->busbw_gbs = row->algbw_gbs * cdse_coll_volume(coll, row->group_size);
}

/* Column positions from the "# size count type redop root time algbw busbw #wrong ..." line. */
typedef struct nccl_cols {
    int n; /* tokens of a data row */
    int type, time_oop, time_ip;
} nccl_cols;

static bool nccl_header(const char *line, nccl_cols *cols)
{
    char copy[LOG_LINE_MAX], *tok[64];
    snprintf(copy, sizeof copy, "%s", line + 1);
    int n = split(copy, tok, 64);
    if (n < 4 || strcmp(tok[0], "size") != 0 || strcmp(tok[1], "count") != 0)
        return false;
    memset(cols, 0, sizeof *cols);
    cols->type = cols->time_oop = cols->time_ip = -1;
    for (int i = 0; i < n; i++) {
        if (strcmp(tok[i], "type") == 0)
            cols->type = i;
        if (strcmp(tok[i], "time") == 0 || strcmp(tok[i], "cputime") == 0) {
            if (cols->time_oop < 0)
                cols->time_oop = i;
            else if (cols->time_ip < 0)
                cols->time_ip = i;
        }
    }
    cols->n = cols->time_oop + 1;
    return cols->time_oop > 0;
}

/* One row of a nccl-tests table (lines that are not rows are skipped): appended to r. 0, or
 * CDSE_EINVAL with the reason. */
static int nccl_row(char *line, const nccl_cols *cols, const log_bench *bench,
                    const rank_list *ranks, const cdse_log_hint *hint, cdse_probe_result *r,
                    cdse_log_info *li, const char *path, int lineno, cdse_diag *diag)
{
    char *tok[64];
    int n = split(line, tok, 64);
    double size, t_oop, t_ip = 0;
    if (n < cols->n || !parse_number(tok[0], &size))
        return 0; /* NCCL INFO lines and other output between the rows */
    if (bench == NULL) {
        cdse_diag_set(diag,
                      "%s: which nccl-tests benchmark wrote this log? It has no "
                      "'# Collective test starting:' line; name the file after the "
                      "binary (e.g. all_gather_perf.log)",
                      path);
        return CDSE_EINVAL;
    }
    if (!parse_number(tok[cols->time_oop], &t_oop) || !(t_oop > 0) || !(size > 0)) {
        cdse_diag_set(diag, "%s:%d: expected a size and a time in microseconds", path, lineno);
        return CDSE_EINVAL;
    }
    if (cols->time_ip < 0 || cols->time_ip >= n || !parse_number(tok[cols->time_ip], &t_ip))
        t_ip = 0;
    if (li->groups == 0) { /* the first row: the layout of the rank lines above it */
        int rc = ranks->n > 0 ? rank_layout(ranks, li, path, diag) : 0;
        if (rc != 0)
            return rc;
        if (ranks->n == 0) {
            li->ranks = li->group_size = hint->ranks;
            li->groups = 1;
            li->level = -1;
        }
        if (hint->level >= 0)
            li->level = hint->level;
    }
    if (li->group_size < 2 && ranks->n > 0) {
        cdse_diag_set(diag, "%s: its collective ran on groups of %d rank: nothing to fit", path,
                      li->group_size);
        return CDSE_EINVAL;
    }
    if (li->group_size < 2) {
        cdse_diag_set(diag,
                      "%s: no '#  Rank N ... on HOST device' lines: give the ranks with "
                      "--ranks N and the level with --level",
                      path);
        return CDSE_EINVAL;
    }
    cdse_probe_row row;
    base_row(&row, bench->coll, "nccl-tests", li);
    nccl_dtype(cols->type >= 0 && cols->type < n ? tok[cols->type] : "float", row.dtype,
               sizeof row.dtype);
    row.bytes = (int64_t)size;
    row.iterations = 0;
    row.t_min_us = row.t_avg_us = row.t_max_us = row.t_itermax_us = row.t_median_us = t_oop;
    row.t_best_us = t_ip > 0 && t_ip < t_oop ? t_ip : t_oop;
    fill_bw(&row, bench->coll);
    return append_row(r, &row);
}

static int read_nccl(FILE *f, const char *path, const cdse_log_hint *hint, cdse_probe_result *r,
                     cdse_log_info *li, cdse_diag *diag)
{
    char line[LOG_LINE_MAX];
    rank_list ranks = {NULL, 0, 0};
    const log_bench *bench = NULL;
    nccl_cols cols = {0, -1, -1, -1};
    int rc = 0, lineno = 0, first_row = r->n_rows;
    /* The benchmark: "# Collective test starting: all_gather_perf", else the file's name. */
    for (size_t b = 0; b < sizeof nccl_benches / sizeof nccl_benches[0]; b++)
        if (strstr(path, nccl_benches[b].name) != NULL)
            bench = &nccl_benches[b];
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        note_algo(line, li->algo, sizeof li->algo);
        if (starts_with(line, "# Collective test starting:")) {
            char name[64] = "";
            sscanf(line + strlen("# Collective test starting:"), "%63s", name);
            bench = NULL;
            for (size_t b = 0; b < sizeof nccl_benches / sizeof nccl_benches[0]; b++)
                if (strcmp(name, nccl_benches[b].name) == 0)
                    bench = &nccl_benches[b];
            if (bench == NULL) {
                cdse_diag_set(diag,
                              "%s:%d: nccl-tests benchmark '%s' is not one fit reads; allowed: "
                              "all_reduce_perf, all_gather_perf, reduce_scatter_perf, "
                              "alltoall_perf, sendrecv_perf",
                              path, lineno, name);
                rc = CDSE_EINVAL;
            }
        } else if (starts_with(line, "# nThread ")) {
            ranks.n = 0; /* another run's header (logs of several runs in one file) */
            li->groups = 0;
        } else if (starts_with(line, "# nccl-tests version")) {
            char version[32] = "";
            sscanf(line + strlen("# nccl-tests version"), "%31s", version);
            snprintf(li->version, sizeof li->version, "nccl-tests %s", version);
        } else if ((rc = nccl_rank_line(line, &ranks, li->device, sizeof li->device)) != 0) {
            rc = rc == 1 ? 0 : rc;
        } else if (line[0] == '#') {
            nccl_header(line, &cols);
        } else if (cols.n > 0) {
            rc = nccl_row(line, &cols, bench, &ranks, hint, r, li, path, lineno, diag);
        }
    }
    if (rc == 0 && r->n_rows == first_row) {
        cdse_diag_set(diag,
                      "%s: no rows of a nccl-tests table (# size count type ... time algbw "
                      "busbw ...)",
                      path);
        rc = CDSE_EINVAL;
    }
    if (rc == 0)
        snprintf(li->tool, sizeof li->tool, "%s", bench->tool);
    li->rows = r->n_rows - first_row;
    free(ranks.rank);
    return rc;
}

/* OSU columns after "# Size", by name: split on runs of two or more spaces. */
typedef struct osu_cols {
    int avg, min, max, iterations; /* token index in a data row; -1 absent */
} osu_cols;

static bool osu_header(const char *line, osu_cols *cols)
{
    if (!starts_with(line, "# Size"))
        return false;
    *cols = (osu_cols){-1, -1, -1, -1};
    const char *p = line + strlen("# Size");
    for (int col = 1; *p && *p != '\n';) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0' || *p == '\n' || *p == '\r')
            break;
        const char *start = p;
        while (*p && *p != '\n' && *p != '\r' && !(p[0] == ' ' && p[1] == ' ') && *p != '\t')
            p++;
        size_t len = (size_t)(p - start);
        if (starts_with(start, "Avg Latency") || starts_with(start, "Latency") ||
            starts_with(start, "Bandwidth"))
            cols->avg = col;
        else if (starts_with(start, "Min Latency"))
            cols->min = col;
        else if (starts_with(start, "Max Latency"))
            cols->max = col;
        else if (len == strlen("Iterations") && starts_with(start, "Iterations"))
            cols->iterations = col;
        col++;
    }
    return cols->avg > 0;
}

/* One row of an OSU table (an empty line and the 0-byte row are skipped): appended to r. 0, or
 * CDSE_EINVAL with the reason. */
static int osu_row(char *line, const osu_cols *cols, const log_bench *bench, const char *dtype,
                   const cdse_log_hint *hint, cdse_probe_result *r, cdse_log_info *li,
                   const char *path, int lineno, cdse_diag *diag)
{
    char *tok[64];
    int n = split(line, tok, 64);
    double size, value;
    if (n == 0)
        return 0;
    if (n <= cols->avg || !parse_number(tok[0], &size) || !parse_number(tok[cols->avg], &value) ||
        !(value > 0)) {
        cdse_diag_set(diag, "%s:%d: expected a size and a %s", path, lineno,
                      bench->bandwidth ? "bandwidth in MB/s" : "latency in microseconds");
        return CDSE_EINVAL;
    }
    if (size <= 0)
        return 0; /* osu_latency's 0-byte row */
    int ranks = bench->coll == CDSE_COLL_SENDRECV ? 2 : hint->ranks;
    if (ranks < 2) {
        cdse_diag_set(diag,
                      "%s: an OSU log does not say how many ranks ran it: give --ranks N "
                      "before it",
                      path);
        return CDSE_EINVAL;
    }
    li->ranks = li->group_size = ranks;
    li->groups = 1;
    li->nodes = li->group_nodes = 0;
    li->level = hint->level;
    if (li->level < 0) {
        cdse_diag_set(diag,
                      "%s: an OSU log does not say where its ranks ran: give --level "
                      "NAME (intra_node, inter_node or a --base level) before it",
                      path);
        return CDSE_EINVAL;
    }
    cdse_probe_row row;
    base_row(&row, bench->coll, "osu", li);
    snprintf(row.dtype, sizeof row.dtype, "%s", dtype);
    row.bytes = (int64_t)(bench->size_times_n ? size * ranks : size);
    /* osu_bw: MB/s of 1e6 bytes (osu_bw.c: size / 1e6 x iterations x window / t). */
    double t = bench->bandwidth ? size / value : value;
    double v;
    row.t_avg_us = row.t_median_us = row.t_itermax_us = row.t_best_us = t;
    row.t_min_us = cols->min > 0 && cols->min < n && parse_number(tok[cols->min], &v) ? v : t;
    row.t_max_us = cols->max > 0 && cols->max < n && parse_number(tok[cols->max], &v) ? v : t;
    row.iterations =
        cols->iterations > 0 && cols->iterations < n && parse_number(tok[cols->iterations], &v)
            ? (int32_t)v
            : 0;
    fill_bw(&row, bench->coll);
    return append_row(r, &row);
}

static int read_osu(FILE *f, const char *path, const cdse_log_hint *hint, cdse_probe_result *r,
                    cdse_log_info *li, cdse_diag *diag)
{
    char line[LOG_LINE_MAX], title[128];
    const log_bench *bench = NULL;
    osu_cols cols = {-1, -1, -1, -1};
    char dtype[8] = "uint8"; /* OSU's default: MPI_CHAR */
    int rc = 0, lineno = 0, first_row = r->n_rows;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        note_algo(line, li->algo, sizeof li->algo);
        if (osu_title(line, title, sizeof title)) {
            bench = NULL;
            for (size_t b = 0; b < sizeof osu_benches / sizeof osu_benches[0]; b++)
                if (strcmp(title, osu_benches[b].name) == 0)
                    bench = &osu_benches[b];
            if (bench == NULL) {
                cdse_diag_set(diag,
                              "%s:%d: OSU benchmark '%s' is not one fit reads; allowed: "
                              "osu_allreduce, osu_allgather, osu_reduce_scatter, osu_alltoall, "
                              "osu_latency, osu_bw",
                              path, lineno, title);
                rc = CDSE_EINVAL;
                break;
            }
            const char *v = strstr(line, " Test v");
            snprintf(li->version, sizeof li->version, "OSU %.*s", (int)strcspn(v + 6, "\r\n"),
                     v + 6);
            if (strstr(line, "# OSU MPI-") != NULL)
                snprintf(li->device, sizeof li->device, "%.*s",
                         (int)strcspn(line + strlen("# OSU MPI-"), " "),
                         line + strlen("# OSU MPI-"));
        } else if (starts_with(line, "# Datatype:")) {
            osu_dtype(line, dtype, sizeof dtype);
        } else if (osu_header(line, &cols)) {
            continue;
        } else if (line[0] != '#' && bench != NULL && cols.avg > 0) {
            rc = osu_row(line, &cols, bench, dtype, hint, r, li, path, lineno, diag);
        }
    }
    if (rc == 0 && r->n_rows == first_row) {
        cdse_diag_set(diag, "%s: no rows of an OSU table (# Size  Avg Latency(us) ...)", path);
        rc = CDSE_EINVAL;
    }
    if (rc == 0)
        snprintf(li->tool, sizeof li->tool, "%s", bench->tool);
    li->rows = r->n_rows - first_row;
    return rc;
}

int cdse_log_read(const char *path, const cdse_log_hint *hint, cdse_probe_result *result,
                  cdse_log_info *info, cdse_diag *diag)
{
    memset(info, 0, sizeof *info);
    info->format = cdse_log_sniff(path);
    if (info->format == CDSE_LOG_NONE) {
        cdse_diag_set(diag,
                      "%s: not a probe store, nor a nccl-tests or OSU log (no '# nThread' or "
                      "'# OSU MPI ... Test' line in its first 200 lines)",
                      path);
        return CDSE_EINVAL;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        cdse_diag_set(diag, "%s: cannot read it", path);
        return CDSE_EINVAL;
    }
    int rc = info->format == CDSE_LOG_NCCL_TESTS ? read_nccl(f, path, hint, result, info, diag)
                                                 : read_osu(f, path, hint, result, info, diag);
    fclose(f);
    return rc;
}
