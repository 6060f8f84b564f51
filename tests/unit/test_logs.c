/* nccl-tests and OSU logs read into probe rows (src/calibrate/logs.c): the layouts and size
 * conventions of each tool, the level from the rank lines, and the refusals. The log texts are
 * written here in each tool's format (nccl-tests src/util.cu, older versions without the Group
 * and root columns; OSU c/util/osu_util_mpi.c print_preamble), with numbers chosen by hand. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clusterdse/calibrate/logs.h"

/* Writes `text` to a temporary file named after `name` (the benchmark, as users name logs). */
static const char *write_log(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/cdse-test-logs-%d-%s", (int)getpid(), name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static int read_log(const char *name, const char *text, int ranks, int level, cdse_probe_result *r,
                    cdse_log_info *li, cdse_diag *diag)
{
    const char *path = write_log(name, text);
    memset(r, 0, sizeof *r);
    cdse_log_hint hint = {ranks, level};
    int rc = cdse_log_read(path, &hint, r, li, diag);
    unlink(path);
    return rc;
}

/* An older nccl-tests layout (no "Collective test starting" line, no Group, no root column,
 * "error" instead of "#wrong"), one process with -g 8: eight rank lines on one host, so level 0.
 * The benchmark comes from the file name. t_best takes the faster in-place time. */
static void test_nccl_old_layout(void **state)
{
    (void)state;
    const char *text =
        "# nThread 1 nGpus 8 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: "
        "20 validation: 1\n#\n# Using devices\n"
        "#   Rank  0 Pid  12345 on     node01 device  0 [0x07] Tesla V100-SXM2-32GB\n"
        "#   Rank  1 Pid  12345 on     node01 device  1 [0x0a] Tesla V100-SXM2-32GB\n"
        "#   Rank  2 Pid  12345 on     node01 device  2 [0x47] Tesla V100-SXM2-32GB\n"
        "#   Rank  3 Pid  12345 on     node01 device  3 [0x4d] Tesla V100-SXM2-32GB\n"
        "#   Rank  4 Pid  12345 on     node01 device  4 [0x87] Tesla V100-SXM2-32GB\n"
        "#   Rank  5 Pid  12345 on     node01 device  5 [0x8b] Tesla V100-SXM2-32GB\n"
        "#   Rank  6 Pid  12345 on     node01 device  6 [0xb7] Tesla V100-SXM2-32GB\n"
        "#   Rank  7 Pid  12345 on     node01 device  7 [0xbd] Tesla V100-SXM2-32GB\n"
        "#\n"
        "#                                                     out-of-place                       "
        "in-place\n"
        "#       size         count    type   redop     time   algbw   busbw  error     time   "
        "algbw   busbw  error\n"
        "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  "
        "(GB/s)  (GB/s)\n"
        "           8             2   float     sum    42.11    0.00    0.00  0e+00    41.92    "
        "0.00    0.00  0e+00\n"
        "node01:12345:12400 [0] NCCL INFO NCCL_PROTO set by environment to Simple\n"
        "     1048576        262144   float     sum    95.50   10.98   19.22  0e+00    96.00   "
        "10.92   19.11  0e+00\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 9.61\n";
    cdse_probe_result r;
    cdse_log_info li;
    cdse_diag diag = {""};
    assert_int_equal(read_log("all_reduce_perf.log", text, 0, -1, &r, &li, &diag), 0);
    assert_int_equal(li.format, CDSE_LOG_NCCL_TESTS);
    assert_string_equal(li.tool, "all_reduce_perf");
    assert_string_equal(li.device, "Tesla V100-SXM2-32GB");
    assert_string_equal(li.algo, "NCCL_PROTO=Simple");
    assert_int_equal(li.ranks, 8);
    assert_int_equal(li.nodes, 1);
    assert_int_equal(li.level, 0);
    assert_int_equal(r.n_rows, 2);
    assert_string_equal(r.rows[1].collective, "allreduce");
    assert_string_equal(r.rows[1].dtype, "float");
    assert_int_equal(r.rows[1].bytes, 1048576);
    assert_int_equal(r.rows[1].group_size, 8);
    assert_int_equal(r.rows[1].level, 0);
    assert_float_equal(r.rows[1].t_median_us, 95.50, 1e-9);
    assert_float_equal(r.rows[1].t_best_us, 95.50, 1e-9); /* in-place 96.00 is slower */
    assert_float_equal(r.rows[0].t_best_us, 41.92, 1e-9); /* in-place 41.92 is faster */
    /* busbw = 1048576 B / 95.5 us x 2(8-1)/8 = 10.980 GB/s x 1.75 = 19.215 GB/s. */
    assert_float_equal(r.rows[1].busbw_gbs, 1048576 / 95.5e3 * 1.75, 1e-9);
    cdse_probe_result_free(&r);
}

/* A current layout on 2 hosts x 2 ranks: neither one node nor one rank per node (-1), unless
 * --level names it. */
static void test_nccl_mixed_layout(void **state)
{
    (void)state;
    const char *text =
        "# nccl-tests version 2.13.9 nccl-headers=22103 nccl-library=22103\n"
        "# Collective test starting: alltoall_perf\n"
        "# nThread 1 nGpus 1 minBytes 1024 maxBytes 1024 step: 2(factor) warmup iters: 5 iters: "
        "20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n"
        "#  Rank  0 Group  0 Pid   4001 on      a-001 device  0 [0000:18:00] NVIDIA H100 80GB "
        "HBM3\n"
        "#  Rank  1 Group  0 Pid   4002 on      a-001 device  1 [0000:2a:00] NVIDIA H100 80GB "
        "HBM3\n"
        "#  Rank  2 Group  0 Pid   5001 on      a-002 device  0 [0000:18:00] NVIDIA H100 80GB "
        "HBM3\n"
        "#  Rank  3 Group  0 Pid   5002 on      a-002 device  1 [0000:2a:00] NVIDIA H100 80GB "
        "HBM3\n"
        "#\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong     "
        "time   algbw   busbw  #wrong\n"
        "        1024            64     float    none      -1    20.00    0.05    0.04       0    "
        "21.00    0.05    0.04       0\n";
    cdse_probe_result r;
    cdse_log_info li;
    cdse_diag diag = {""};
    assert_int_equal(read_log("x.log", text, 0, -1, &r, &li, &diag), 0);
    assert_string_equal(li.tool, "alltoall_perf");
    assert_string_equal(li.version, "nccl-tests 2.13.9");
    assert_int_equal(li.ranks, 4);
    assert_int_equal(li.nodes, 2);
    assert_int_equal(li.ranks_per_node, 2);
    assert_int_equal(li.level, -1);
    assert_int_equal(r.rows[0].level, -1);
    assert_int_equal(r.rows[0].bytes, 1024); /* the size column: the whole send buffer */
    cdse_probe_result_free(&r);
    assert_int_equal(read_log("x.log", text, 0, 1, &r, &li, &diag), 0);
    assert_int_equal(r.rows[0].level, 1);
    cdse_probe_result_free(&r);
}

/* osu_alltoall with -f: the size is the block sent to each peer, so bytes = size x n; Min / Max
 * columns by name. osu_bw: MB/s of 1e6 bytes, t = size / MBps us. */
static void test_osu_sizes(void **state)
{
    (void)state;
    const char *alltoall =
        "\n# OSU MPI All-to-All Personalized Exchange Latency Test v7.4\n"
        "# Datatype: MPI_CHAR.\n"
        "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
        "1                       3.50              3.10              3.90        1000\n"
        "4096                   12.25             11.00             13.50        1000\n";
    cdse_probe_result r;
    cdse_log_info li;
    cdse_diag diag = {""};
    assert_int_equal(read_log("a.log", alltoall, 4, 0, &r, &li, &diag), 0);
    assert_int_equal(li.format, CDSE_LOG_OSU);
    assert_string_equal(li.tool, "osu_alltoall");
    assert_string_equal(li.version, "OSU v7.4");
    assert_int_equal(r.n_rows, 2);
    assert_string_equal(r.rows[1].collective, "alltoall");
    assert_string_equal(r.rows[1].dtype, "uint8");
    assert_int_equal(r.rows[1].bytes, 4096 * 4);
    assert_int_equal(r.rows[1].group_size, 4);
    assert_float_equal(r.rows[1].t_avg_us, 12.25, 1e-9);
    assert_float_equal(r.rows[1].t_min_us, 11.00, 1e-9);
    assert_float_equal(r.rows[1].t_max_us, 13.50, 1e-9);
    assert_int_equal(r.rows[1].iterations, 1000);
    cdse_probe_result_free(&r);

    const char *bw = "# OSU MPI-CUDA Bandwidth Test v7.4\n"
                     "# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)\n"
                     "# Size      Bandwidth (MB/s)\n"
                     "1048576             25000.00\n"
                     "4194304             40000.00\n";
    assert_int_equal(read_log("b.log", bw, 0, 1, &r, &li, &diag), 0);
    assert_string_equal(li.tool, "osu_bw");
    assert_string_equal(li.device, "CUDA");
    assert_string_equal(r.rows[0].collective, "sendrecv");
    assert_int_equal(r.rows[0].group_size, 2);
    /* 1048576 B at 25000 MB/s = 1048576 / 25000 us = 41.943 us. */
    assert_float_equal(r.rows[0].t_median_us, 1048576 / 25000.0, 1e-9);
    assert_float_equal(r.rows[1].t_median_us, 4194304 / 40000.0, 1e-9);
    cdse_probe_result_free(&r);
}

/* What a log cannot say is asked for; what fit does not read is named. */
static void test_refusals(void **state)
{
    (void)state;
    cdse_probe_result r;
    cdse_log_info li;
    cdse_diag diag = {""};
    const char *allreduce = "# OSU MPI Allreduce Latency Test v7.4\n"
                            "# Size       Avg Latency(us)\n"
                            "4                       1.50\n";
    assert_int_equal(read_log("c.log", allreduce, 0, 0, &r, &li, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "give --ranks N"));
    cdse_probe_result_free(&r);
    assert_int_equal(read_log("c.log", allreduce, 4, -1, &r, &li, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "give --level NAME"));
    cdse_probe_result_free(&r);
    const char *allgatherv = "# OSU MPI Allgatherv Latency Test v7.4\n"
                             "# Size       Avg Latency(us)\n"
                             "4                       1.50\n";
    assert_int_equal(read_log("d.log", allgatherv, 4, 0, &r, &li, &diag), CDSE_EINVAL);
    assert_non_null(
        strstr(diag.msg, ":1: OSU benchmark 'Allgatherv Latency' is not one fit reads"));
    cdse_probe_result_free(&r);
    const char *bcast = "# nccl-tests version 2.13.9 nccl-headers=22103 nccl-library=22103\n"
                        "# Collective test starting: broadcast_perf\n";
    assert_int_equal(read_log("e.log", bcast, 0, -1, &r, &li, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, ":2: nccl-tests benchmark 'broadcast_perf'"));
    cdse_probe_result_free(&r);
    assert_int_equal(read_log("f.log", "size,time\n8,1.0\n", 0, -1, &r, &li, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "not a probe store, nor a nccl-tests or OSU log"));
    cdse_probe_result_free(&r);
}

/* nccl-tests on 4 hosts x 2 GPUs (8 processes, rank r on host r / 2) with NCCL_TESTS_SPLIT
 * (nccl-tests README "Running multiple operations in parallel"; common.cu: color from the
 * process rank, MPI_Comm_split(MPI_COMM_WORLD, color, ...); util.cu prints it as Group). Each
 * Group runs the collective on its own communicator: the row's n is the group's size. `color` is
 * the Group of process p; `threads` rank lines per process (-t). */
static const char *split_log(int procs, int threads, int (*color)(int p))
{
    static char text[8192];
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "# nccl-tests version 2.17.1 nccl-headers=22803 "
                                  "nccl-library=22803\n"
                                  "# Collective test starting: all_reduce_perf\n"
                                  "# nThread %d nGpus 1 minBytes 1048576 maxBytes 1048576 step: "
                                  "2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 "
                                  "graph: 0 unalign: 0\n#\n# Using devices\n",
                                  threads);
    static const char *const hosts[] = {"h-a", "h-b", "h-c", "h-d"};
    for (int p = 0; p < procs; p++)
        for (int t = 0; t < threads; t++)
            len += (size_t)snprintf(text + len, sizeof text - len,
                                    "#  Rank %2d Group %2d Pid %6d on %10s device %2d "
                                    "[0000:%02x:00] NVIDIA H100 80GB HBM3\n",
                                    p * threads + t, color(p), 7000 + p,
                                    hosts[threads > 1 ? p : p / 2], threads > 1 ? t : p % 2,
                                    0x18 + 0x10 * t);
    len += (size_t)snprintf(
        text + len, sizeof text - len,
        "#\n#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "     time   algbw   busbw  #wrong\n"
        "     1048576        262144     float     sum      -1   100.00   10.49   15.73       0"
        "   100.00   10.49   15.73       0\n");
    return text;
}

static int mod2(int p)
{
    return p % 2; /* NCCL_TESTS_SPLIT="MOD 2" */
}

static int div2(int p)
{
    return p / 2; /* NCCL_TESTS_SPLIT="DIV 2" */
}

static int own(int p)
{
    return p; /* NCCL_TESTS_SPLIT="MOD 8" on 8 ranks: a group per rank */
}

static int first_three(int p)
{
    return p < 3 ? 0 : 1; /* groups of 3 and 5 ranks */
}

static void test_nccl_split(void **state)
{
    (void)state;
    cdse_probe_result r;
    cdse_log_info li;
    cdse_diag diag = {""};
    /* MOD 2: Group 0 = ranks 0, 2, 4, 6 on h-a .. h-d, one per host: the inter-node level. */
    assert_int_equal(read_log("a.log", split_log(8, 1, mod2), 0, -1, &r, &li, &diag), 0);
    assert_int_equal(li.ranks, 8);
    assert_int_equal(li.nodes, 4);
    assert_int_equal(li.ranks_per_node, 2);
    assert_int_equal(li.groups, 2);
    assert_int_equal(li.group_size, 4);
    assert_int_equal(li.group_nodes, 4);
    assert_int_equal(li.level, 1);
    assert_int_equal(r.n_rows, 1);
    assert_int_equal(r.rows[0].group_size, 4);
    assert_int_equal(r.rows[0].n_groups, 2);
    assert_int_equal(r.rows[0].n_nodes, 4);
    assert_int_equal(r.rows[0].level, 1);
    /* busbw of the group's ring: 1048576 B / 100 us x 2(4-1)/4 = 10.486 x 1.5 = 15.729 GB/s. */
    assert_float_equal(r.rows[0].busbw_gbs, 1048576 / 100e3 * 1.5, 1e-9);
    cdse_probe_result_free(&r);

    /* DIV 2: Group g = the 2 ranks of host g: the intra-node level. The same run twice in one
     * file (a job script appending its runs): the second header starts a new rank list. */
    static char twice[16384];
    const char *once = split_log(8, 1, div2);
    snprintf(twice, sizeof twice, "%s%s", once, once);
    assert_int_equal(read_log("b.log", twice, 0, -1, &r, &li, &diag), 0);
    assert_int_equal(li.ranks, 8);
    assert_int_equal(li.groups, 4);
    assert_int_equal(li.group_size, 2);
    assert_int_equal(li.group_nodes, 1);
    assert_int_equal(li.level, 0);
    assert_int_equal(r.n_rows, 2);
    assert_int_equal(r.rows[1].group_size, 2);
    /* busbw: 10.486 GB/s x 2(2-1)/2 = 10.486 GB/s. */
    assert_float_equal(r.rows[1].busbw_gbs, 1048576 / 100e3 * 1.0, 1e-9);
    cdse_probe_result_free(&r);

    /* -t 2: 4 processes of 2 threads (GPUs), one process per host; MOD 2 by process puts h-a and
     * h-c's 4 ranks in Group 0: 2 hosts with 2 ranks each, neither level (-1) unless --level. */
    assert_int_equal(read_log("c.log", split_log(4, 2, mod2), 0, -1, &r, &li, &diag), 0);
    assert_int_equal(li.ranks, 8);
    assert_int_equal(li.groups, 2);
    assert_int_equal(li.group_size, 4);
    assert_int_equal(li.group_nodes, 2);
    assert_int_equal(li.level, -1);
    assert_int_equal(r.rows[0].level, -1);
    cdse_probe_result_free(&r);

    /* Groups of 3 and 5 ranks: refused, naming the sizes. */
    assert_int_equal(read_log("d.log", split_log(8, 1, first_three), 0, -1, &r, &li, &diag),
                     CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "d.log: its rank lines put 5 ranks in Group 1 and 3 in "
                                     "another: groups of different sizes"));
    cdse_probe_result_free(&r);
    /* A group per rank: no collective to fit. */
    assert_int_equal(read_log("g.log", split_log(8, 1, own), 0, -1, &r, &li, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "g.log: its collective ran on groups of 1 rank"));
    cdse_probe_result_free(&r);
}

/* A row that is not numbers is refused with the file and line. */
static void test_malformed_rows(void **state)
{
    (void)state;
    cdse_probe_result r;
    cdse_log_info li;
    cdse_diag diag = {""};
    static char text[8192];
    snprintf(text, sizeof text, "%s", split_log(8, 1, div2));
    char *row = strstr(text, "   100.00   10.49");
    /* The letter O for zeros in line 16 (3 header lines, "#", "# Using devices", 8 rank lines,
     * "#", the column names, the row). */
    memcpy(row, "   1OO.00", 9);
    assert_int_equal(read_log("e.log", text, 0, -1, &r, &li, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "e.log:16: expected a size and a time in microseconds"));
    cdse_probe_result_free(&r);
    const char *osu = "# OSU MPI Allreduce Latency Test v7.4\n"
                      "# Datatype: MPI_CHAR.\n"
                      "# Size       Avg Latency(us)\n"
                      "4                       1.50\n"
                      "8                       n/a\n";
    assert_int_equal(read_log("f.log", osu, 4, 0, &r, &li, &diag), CDSE_EINVAL);
    assert_non_null(strstr(diag.msg, "f.log:5: expected a size and a latency in microseconds"));
    cdse_probe_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nccl_old_layout), cmocka_unit_test(test_nccl_mixed_layout),
        cmocka_unit_test(test_osu_sizes),       cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_nccl_split),      cmocka_unit_test(test_malformed_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
